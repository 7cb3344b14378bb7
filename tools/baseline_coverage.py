#!/usr/bin/env python3
"""baseline_coverage.py - which workloads of a problem have been compared against their baselines on a GPU, from the
traces kept in results/ (what the next device call should measure):

    baseline_coverage.py PROBLEM_DIR... [--traces GLOB]     (default GLOB: results/h200/*/**/*.jsonl)

For every workload of each problem's workload.jsonl: the latest session (results/.../<date>-sNN, by NN within a date)
holding a PASSED trace of it with at least one PASSED baseline; which of the definition's baselines PASSED there
(across that session's traces of the workload: a per-baseline eval, `eval --baseline`, counts), the ones that ran and
failed with their status, and the smallest T_b / T_k of those traces (each trace's best baseline against its own
candidate time, side by side). A workload with no such trace is "NEVER". The last line counts the workloads compared
against every baseline, against some, and never. Exits 0 (2 on a usage error).
"""
import glob
import json
import os
import re
import sys


def session_key(path):
    """(date, session number) of a results path (.../2026-12-02-s20/...), or ("", -1) when it names none."""
    m = re.search(r"(\d{4}-\d{2}-\d{2})-s(\d+)", path)
    return (m.group(1), int(m.group(2))) if m else ("", -1)


def load_traces(paths):
    """{uuid: [(session key, trace dict)]} of every readable trace line."""
    out = {}
    for p in paths:
        try:
            lines = open(p, encoding="utf-8").read().splitlines()
        except OSError:
            continue
        for ln in lines:
            try:
                t = json.loads(ln)
            except json.JSONDecodeError:
                continue
            if not isinstance(t, dict):
                continue
            w = t.get("workload")
            u = w.get("uuid") if isinstance(w, dict) else None
            if isinstance(u, str) and isinstance(t.get("evaluation"), dict):
                out.setdefault(u, []).append((session_key(p), t))
    return out


def coverage(uuid, names, traces):
    """The row of one workload: (status word, text); status word in {"all", "some", "never"}."""
    compared = []
    for key, t in traces.get(uuid, []):
        ev = t.get("evaluation", {})
        bs = ev.get("solforge", {}).get("baselines", [])
        if ev.get("status") == "PASSED" and any(b.get("status") == "PASSED" for b in bs):
            compared.append((key, t))
    if not compared:
        return "never", "NEVER"
    latest = max(k for k, _ in compared)
    passed, failed, ratio = set(), {}, None
    for key, t in traces[uuid]:
        if key != latest:
            continue
        ev = t.get("evaluation", {})
        tk = (ev.get("performance") or {}).get("latency_ms")
        best = None
        for b in ev.get("solforge", {}).get("baselines", []):
            if b.get("status") == "PASSED":
                passed.add(b.get("name"))
                if b.get("median_ms") and (best is None or b["median_ms"] < best):
                    best = b["median_ms"]
            else:
                failed.setdefault(b.get("name"), b.get("status", "?"))
        if ev.get("status") == "PASSED" and best and tk:
            ratio = best / tk if ratio is None else min(ratio, best / tk)
    missing = [n for n in names if n not in passed]
    why = ", ".join(f"{n}: {failed.get(n, 'not run')}" for n in missing)
    word = "all" if not missing else "some"
    text = (f"{latest[0]}-s{latest[1]}: {len(names) - len(missing)}/{len(names)} baselines"
            + (f" (missing {why})" if missing else "") + (f", T_b/T_k {ratio:.2f}" if ratio else ""))
    return word, text


def main(argv):
    args, pattern = [], "results/h200/*/**/*.jsonl"
    i = 1
    while i < len(argv):
        if argv[i] == "--traces" and i + 1 < len(argv):
            pattern = argv[i + 1]
            i += 2
            continue
        args.append(argv[i])
        i += 1
    if not args:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    traces = load_traces(sorted(glob.glob(pattern, recursive=True)))
    counts = {"all": 0, "some": 0, "never": 0}
    for d in args:
        try:
            definition = json.load(open(os.path.join(d, "definition.json")))
            uuids = [json.loads(ln)["uuid"] for ln in open(os.path.join(d, "workload.jsonl")) if ln.strip()]
        except (OSError, ValueError, KeyError) as e:
            print(f"baseline_coverage: {d}: {e}", file=sys.stderr)
            return 2
        names = [b["name"] for b in definition.get("solforge", {}).get("baselines", [])]
        print(f"{definition.get('name', d)} ({len(names)} baselines: {', '.join(names)})")
        for u in uuids:
            word, text = coverage(u, names, traces)
            counts[word] += 1
            print(f"  {u}: {text}")
    print(f"workloads: {sum(counts.values())}; against every baseline {counts['all']}, against some {counts['some']}, "
          f"never {counts['never']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
