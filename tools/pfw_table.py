#!/usr/bin/env python3
"""pfw_table.py - side-by-side table of tools/gpu_pfw.sh: variants of the paged prefill (v1 mma.sync,
v2 wgmma, v2o wgmma with the overlapped tile order) from `solforge eval --json` traces.

usage: pfw_table.py --col LABEL TRACES.jsonl... [--col LABEL TRACES.jsonl...]...

The first column is the reference (v1). One row per workload (matched by uuid; first-seen order): T_k
of each column in us (median; the status instead when not PASSED, '-' when not run), then for the
fastest passing non-reference column: its label, its speedup over the reference, its rate in TFLOP/s
of the causal bf16 tensor FLOPs the oracle counted, and T_sol / T_k (the definitions name no
baseline, so the traces carry no sol_score; T_sol / T_k is that score's limit for a slow baseline).
Last lines: pass counts per column. Exit status 1 when a non-reference workload that ran did not pass
or a non-reference column has no traces at all.
"""
import json
import sys


def load(paths):
    """uuid -> trace in file order, and the list of (path, reason) for files without traces."""
    got, bad = {}, []
    for path in paths:
        try:
            lines = [x.strip() for x in open(path).read().splitlines() if x.strip().startswith("{")]
        except OSError as e:
            bad.append((path, str(e)))
            continue
        if not lines:
            why = "no traces"
            try:
                errs = [x for x in open(path[:-len(".jsonl")] + ".err").read().splitlines() if x.strip()]
                why += f" ({errs[-1][:120]})" if errs else ""
            except OSError:
                pass
            bad.append((path, why))
        for line in lines:
            tr = json.loads(line)
            got[tr["workload"]["uuid"]] = tr
    return got, bad


def fields(tr):
    """(status, T_k ms when PASSED, bf16 tensor FLOPs, T_sol ms)."""
    ev = tr["evaluation"]
    perf = ev.get("performance") or {}
    sf = ev.get("solforge", tr.get("solforge", {}))
    t = perf.get("latency_ms") if ev["status"] == "PASSED" else None
    return ev["status"], t, (sf.get("flops") or {}).get("bf16_tensor"), sf.get("sol_ms")


def main():
    argv = sys.argv[1:]
    cols = []
    for a in argv:
        if a == "--col":
            cols.append([None, []])
        elif cols and cols[-1][0] is None:
            cols[-1][0] = a
        elif cols:
            cols[-1][1].append(a)
    if len(cols) < 2 or any(c[0] is None for c in cols):
        print("usage: pfw_table.py --col LABEL TRACES.jsonl... --col LABEL TRACES.jsonl...")
        return 2
    data = [(label,) + load(paths) for label, paths in cols]
    keys = []
    for _, got, _ in data:
        keys += [k for k in got if k not in keys]
    head = f"{'workload':40s}" + "".join(f" {label + ' us':>10s}" for label, _, _ in data)
    print(head + f" {'best':>5s} {'x ref':>6s} {'TF/s':>5s} {'SOL':>6s}")
    bad_run = 0
    for k in keys:
        row = f"{k.replace('gqa_paged_prefill_causal_h32_kv8_d128_', ''):40.40s}"
        ref_t, best = None, None
        for i, (label, got, _) in enumerate(data):
            if k not in got:
                row += f" {'-':>10s}"
                continue
            st, t, fl, ts = fields(got[k])
            row += f" {t * 1e3:10.2f}" if t else f" {st[:10]:>10s}"
            if i == 0:
                ref_t = t
            elif st not in ("PASSED", "SKIPPED"):
                bad_run += 1
            elif t and (best is None or t < best[1]):
                best = (label, t, fl, ts)
        if best:
            label, t, fl, ts = best
            row += f" {label:>5.5s} {f'{ref_t / t:.2f}' if ref_t else '-':>6s} "
            row += f"{f'{fl / (t * 1e-3) / 1e12:.0f}' if fl else '-':>5s} {f'{ts / t:.3f}' if ts else '-':>6s}"
        print(row)
        for label, got, _ in data[1:]:
            ev = got[k]["evaluation"] if k in got else None
            if ev and ev["status"] not in ("PASSED", "SKIPPED") and ev.get("log"):
                print(f"    {label}: " + ev["log"].splitlines()[0][:160])
    empty = 0
    for i, (label, got, bad) in enumerate(data):
        for path, why in bad:
            print(f"{label}: {path}: {why}")
        n = len(got)
        ok = sum(got[k]["evaluation"]["status"] in ("PASSED", "SKIPPED") for k in got)
        print(f"{label}: {ok} of {n} workloads passed")
        empty += i > 0 and n == 0
    return 1 if bad_run or empty else 0


if __name__ == "__main__":
    sys.exit(main())
