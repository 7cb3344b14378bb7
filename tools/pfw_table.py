#!/usr/bin/env python3
"""pfw_table.py - side-by-side table of tools/gpu_pfw.sh: variants of the paged prefill (v1 mma.sync,
v2 wgmma, v2o wgmma with the overlapped tile order, v3pp two warpgroups with ping-pong, ... v6 with a
producer warpgroup, v7 persistent, v8 v6 with the consumers' ping-pong) from `solforge eval --json` traces.

usage: pfw_table.py [--ratio A/B] --col LABEL TRACES.jsonl... [--col LABEL TRACES.jsonl...]...

The first column is the reference (v1, live or recorded). One row per workload (matched by uuid;
first-seen order, then the workloads of killed evals that never got a trace): T_k of each column in us
(median; the status instead when not PASSED, '-' when not run), then for the fastest passing
non-reference column: its label, its speedup over the reference, its rate in TFLOP/s of the causal bf16
tensor FLOPs the oracle counted, and T_sol / T_k (the definitions name no baseline, so the traces carry
no sol_score; T_sol / T_k is that score's limit for a slow baseline).

A hung or killed workload shows as "hang/timeout": the runner's own TIMEOUT status (gpu_pfw.sh gives
every candidate runner `--timeout`), or, for an eval killed from outside (gpu_pfw.sh's cap; its exit
status 124 or 137 in TRACES.rc beside TRACES.jsonl), the first workload of its workload list (the path
in TRACES.wl) without a complete trace; the workloads after it show '-'. When TRACES.end says when the
eval ended and the runner's --timeout, and the last complete trace's timestamp shows the killed
workload had run for less than that timeout, it shows as "cut (Ns)" instead: the cap cut it before the
runner could have called it a hang (session 9: a "hang/timeout" that had been in progress 4 s). Still
not a pass: a hang that began less than a timeout before the cap looks the same. A line cut mid-JSON (an eval
killed while writing it, or a solforge older than the per-line flush, whose block-buffered stdout kept
only its first 4 KiB when killed) is tolerated and shows as "trace cut": that workload had FINISHED (its
trace was being written), so the hang, if any, is in a later one - reading the cut line as the hung
workload is how a slow eval was once taken for a hang at q1000. Last lines: pass counts per column.
--ratio A/B (two column labels, e.g. v8/v6 from gpu_pfw.sh's first two variants) adds, after the table,
T_k(A) / T_k(B) per workload that both passed and their geometric mean (below 1: A is faster); a
label that is no column is a usage error (exit 2).
Exit status 1 when a non-reference workload that ran did not pass (hang/timeout and trace cut
included) or a non-reference column has no traces at all.
"""
import json
import re
import sys

HANG = "hang/timeout"
CUT = "trace cut"
CAPCUT = "cut (%ds)"


def cap_seconds(path, traces):
    """Seconds the killed eval of path had been in its unfinished workload (TRACES.end's epoch minus
    the last complete trace's timestamp) and the runner's --timeout, or None when unknown."""
    import datetime
    end = (side(path, ".end") or "").split()
    stamps = [t.get("evaluation", {}).get("timestamp") for t in traces]
    stamps = [x for x in stamps if x]
    if len(end) != 2 or not stamps:
        return None
    try:
        last = datetime.datetime.strptime(max(stamps), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
        return int(end[0]) - last.timestamp(), float(end[1])
    except ValueError:
        return None


def side(path, ext):
    """Contents of the sidecar file PATH-without-.jsonl + ext (stripped), None when absent."""
    base = path[:-len(".jsonl")] if path.endswith(".jsonl") else path
    try:
        return open(base + ext).read().strip()
    except OSError:
        return None


def workload_list(wl):
    """uuids of a workload.jsonl in file order ([] when unreadable)."""
    out = []
    try:
        for line in open(wl):
            m = re.search(r'"uuid"\s*:\s*"([^"]+)"', line)
            if m:
                out.append(m.group(1))
    except OSError:
        pass
    return out


def load(paths):
    """uuid -> trace (a dict; a synthetic {"hang": True, ...} for a hung/killed workload) in file order,
    and the list of (path, reason) for files without complete traces."""
    got, bad = {}, []
    for path in paths:
        try:
            lines = [x.strip() for x in open(path).read().splitlines() if x.strip().startswith("{")]
        except OSError as e:
            bad.append((path, str(e)))
            continue
        rc = side(path, ".rc")
        killed = rc in ("124", "137")
        cut = None
        n_ok = 0
        for line in lines:
            try:
                tr = json.loads(line)
            except json.JSONDecodeError:
                m = re.search(r'"uuid"\s*:\s*"([^"]+)"', line)
                cut = m.group(1) if m else "?"
                continue
            got[tr["workload"]["uuid"]] = tr
            n_ok += 1
        hung = None
        if killed or cut:
            if cut and cut != "?":
                got[cut] = {"cut": True, "workload": {"uuid": cut}}
            only = side(path, ".only")  # the eval's --only TEXT: the workloads whose uuid contains it
            todo = [u for u in workload_list(side(path, ".wl") or "") if u not in got and (not only or only in u)]
            if killed and todo:
                hung = todo[0]
                got[hung] = {"hang": True, "workload": {"uuid": hung}}
                cs = cap_seconds(path, [t for t in got.values() if "evaluation" in t])
                if cs and cs[0] < cs[1]:
                    got[hung] = {"capcut": int(cs[0]), "workload": {"uuid": hung}}
                for u in todo[1:]:
                    got[u] = {"notrun": True, "workload": {"uuid": u}}
        if not n_ok:
            why = "no complete traces"
            errs = [x for x in (side(path, ".err") or "").splitlines() if x.strip()]
            why += f" ({errs[-1][:120]})" if errs else ""
            why += f"; killed by the cap (exit {rc})" if killed else ""
            bad.append((path, why))
        elif killed:
            bad.append((path, f"killed by the cap (exit {rc}) after {n_ok} traces; "
                              f"in progress: {hung or 'unknown (no workload list)'}"))
        if cut:
            bad.append((path, f"last line cut mid-JSON (workload {cut}: finished, trace lost); "
                              "the eval was killed after it"))
    return got, bad


def fields(tr):
    """(status, T_k ms when PASSED, bf16 tensor FLOPs, T_sol ms); status HANG for a hung workload,
    None for a workload a killed eval never reached."""
    if tr.get("hang"):
        return HANG, None, None, None
    if "capcut" in tr:
        return CAPCUT % tr["capcut"], None, None, None
    if tr.get("cut"):
        return CUT, None, None, None
    if tr.get("notrun"):
        return None, None, None, None
    ev = tr["evaluation"]
    perf = ev.get("performance") or {}
    sf = ev.get("solforge", tr.get("solforge", {}))
    t = perf.get("latency_ms") if ev["status"] == "PASSED" else None
    st = HANG if ev["status"] == "TIMEOUT" else ev["status"]
    return st, t, (sf.get("flops") or {}).get("bf16_tensor"), sf.get("sol_ms")


def print_ratio(data, keys, a, b):
    """T_k(a) / T_k(b) for every workload both columns passed, then their geometric mean."""
    got = {label: g for label, g, _ in data}
    rs = []
    for k in keys:
        ta = fields(got[a][k])[1] if k in got[a] else None
        tb = fields(got[b][k])[1] if k in got[b] else None
        if ta and tb:
            rs.append(ta / tb)
            print(f"{a}/{b} {k.replace('gqa_paged_prefill_causal_h32_kv8_d128_', ''):40.40s} {ta / tb:.3f}")
    if rs:
        gm = 1.0
        for r in rs:
            gm *= r ** (1.0 / len(rs))
        print(f"{a}/{b} geometric mean over {len(rs)} workloads: {gm:.3f}")
    else:
        print(f"{a}/{b}: no workload passed in both")


def main():
    argv = sys.argv[1:]
    cols, ratio = [], None
    if len(argv) >= 2 and argv[0] == "--ratio":
        ratio, argv = argv[1].split("/"), argv[2:]
    for a in argv:
        if a == "--col":
            cols.append([None, []])
        elif cols and cols[-1][0] is None:
            cols[-1][0] = a
        elif cols:
            cols[-1][1].append(a)
    if len(cols) < 2 or any(c[0] is None for c in cols):
        print("usage: pfw_table.py [--ratio A/B] --col LABEL TRACES.jsonl... --col LABEL TRACES.jsonl...")
        return 2
    if ratio and (len(ratio) != 2 or any(r not in [c[0] for c in cols] for r in ratio)):
        print(f"pfw_table.py: --ratio {'/'.join(ratio)}: two column labels A/B, from {[c[0] for c in cols]}")
        return 2
    data = [(label,) + load(paths) for label, paths in cols]
    keys = []
    for _, got, _ in data:
        keys += [k for k in got if k not in keys]
    head = f"{'workload':40s}" + "".join(f" {label + ' us':>12s}" for label, _, _ in data)
    print(head + f" {'best':>6s} {'x ref':>6s} {'TF/s':>5s} {'SOL':>6s}")
    bad_run = 0
    for k in keys:
        row = f"{k.replace('gqa_paged_prefill_causal_h32_kv8_d128_', ''):40.40s}"
        ref_t, best = None, None
        for i, (label, got, _) in enumerate(data):
            st = fields(got[k])[0] if k in got else None
            if st is None:
                row += f" {'-':>12s}"
                continue
            st, t, fl, ts = fields(got[k])
            row += f" {t * 1e3:12.2f}" if t else f" {st[:12]:>12s}"
            if i == 0:
                ref_t = t
            elif st not in ("PASSED", "SKIPPED"):
                bad_run += 1
            elif t and (best is None or t < best[1]):
                best = (label, t, fl, ts)
        if best:
            label, t, fl, ts = best
            row += f" {label:>6.6s} {f'{ref_t / t:.2f}' if ref_t else '-':>6s} "
            row += f"{f'{fl / (t * 1e-3) / 1e12:.0f}' if fl else '-':>5s} {f'{ts / t:.3f}' if ts else '-':>6s}"
        print(row)
        for label, got, _ in data[1:]:
            ev = got[k].get("evaluation") if k in got else None
            if ev and ev["status"] not in ("PASSED", "SKIPPED") and ev.get("log"):
                print(f"    {label}: " + ev["log"].splitlines()[0][:160])
    if ratio:
        print_ratio(data, keys, *ratio)
    empty = 0
    for i, (label, got, bad) in enumerate(data):
        for path, why in bad:
            print(f"{label}: {path}: {why}")
        run = [k for k in got if fields(got[k])[0] is not None]
        ok = sum(fields(got[k])[0] in ("PASSED", "SKIPPED") for k in run)
        print(f"{label}: {ok} of {len(run)} workloads passed")
        empty += i > 0 and not any("evaluation" in got[k] for k in got)
    return 1 if bad_run or empty else 0


if __name__ == "__main__":
    sys.exit(main())
