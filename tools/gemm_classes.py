#!/usr/bin/env python3
"""gemm_classes.py - issue 8's verdict from `solforge eval` traces of the bf16 GEMM problems.

    python3 tools/gemm_classes.py TRACES.jsonl ...       (e.g. gpu_memtable.sh's memtable_logs/*.jsonl)

Per M class, from each PASSED workload's T_k and its best PASSED baseline's median (cuBLASLt: both CUPTI
device time in the same eval), against the targets of issue 8:
  M >= 1024      geomean of T_b / T_k per shape >= 0.97
  64 <= M <= 512 every workload T_b / T_k >= 1.0
  M <= 16        geomean over all shapes >= 1.2 and every shape's geomean >= 1.0; weight bytes / time >= 0.90 of
                 the same-byte read (eval --read-ceiling's bw_fraction_of_read) where the trace carries it
Workloads outside the classes (16 < M < 64) are listed but judged by nothing. A workload that did not pass,
or has no passing baseline, fails its class. Exit status: 0 every class met, 1 some missed, 2 no usable trace.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mem_table import gmean, rows_of  # noqa: E402  (the traces' reader and the geomean, shared)


def load(paths):
    """{(shape, M): (status, speedup over the best passing baseline or None, read fraction or None)}; later lines win."""
    rows = {}
    for r in rows_of(paths):
        if not isinstance(r["m"], int):
            print(f"gemm_classes: {r['workload']}: no integer axis M", file=sys.stderr)
            continue
        rows[(r["problem"], r["m"])] = (r["status"], r["speedup"] if r["status"] == "PASSED" else None, r["rfrac"])
    return rows


def geo(xs):
    return gmean(xs) if xs else float("nan")


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    rows = load(argv[1:])
    if not rows:
        print("gemm_classes: no usable trace", file=sys.stderr)
        return 2
    shapes = sorted({s for s, _ in rows})
    met = True
    bad = [f"{s} M {m}: {st}" for (s, m), (st, sp, _) in sorted(rows.items()) if sp is None]
    for b in bad:
        print(f"not judged (no pass or no passing baseline): {b}")
    met = not bad

    def cls(lo, hi):
        return {s: [(m, sp, rf) for (s2, m), (_, sp, rf) in sorted(rows.items()) if s2 == s and lo <= m <= hi and sp]
                for s in shapes}

    big = cls(1024, 1 << 30)
    for s in shapes:
        if big[s]:
            g = geo([sp for _, sp, _ in big[s]])
            met &= g >= 0.97
            print(f"M >= 1024   {s}: geomean {g:.3f} over {len(big[s])} [>= 0.97] {'met' if g >= 0.97 else 'MISSED'}")
    mid = cls(64, 512)
    miss = [(s, m, sp) for s in shapes for m, sp, _ in mid[s] if sp < 1.0]
    n_mid = sum(len(v) for v in mid.values())
    if n_mid:
        met &= not miss
        print(f"64..512     {n_mid - len(miss)} / {n_mid} at >= 1.0, geomean {geo([sp for v in mid.values() for _, sp, _ in v]):.3f}"
              f" [each >= 1.0] {'met' if not miss else 'MISSED: ' + ', '.join(f'{s} M {m} {sp:.2f}' for s, m, sp in miss)}")
    small = cls(1, 16)
    allsp = [sp for v in small.values() for _, sp, _ in v]
    if allsp:
        per = {s: geo([sp for _, sp, _ in small[s]]) for s in shapes if small[s]}
        g = geo(allsp)
        ok = g >= 1.2 and min(per.values()) >= 1.0
        met &= ok
        print(f"M <= 16     geomean {g:.3f} over {len(allsp)} [>= 1.2, each shape >= 1.0] {'met' if ok else 'MISSED'}; per shape: "
              + ", ".join(f"{s} {v:.3f}" for s, v in per.items()))
        rfs = [(s, m, rf) for s in shapes for m, _, rf in small[s] if rf is not None]
        if rfs:
            low = [(s, m, rf) for s, m, rf in rfs if rf < 0.90]
            met &= not low
            print(f"M <= 16     of the same-byte read: {len(rfs) - len(low)} / {len(rfs)} at >= 0.90, min {min(r for _, _, r in rfs):.2f}"
                  f" [>= 0.90] {'met' if not low else 'MISSED: ' + ', '.join(f'{s} M {m} {r:.2f}' for s, m, r in low)}")
    other = [(s, m) for (s, m), (_, sp, _) in rows.items() if sp and 16 < m < 64]
    if other:
        print(f"not in a class (16 < M < 64): {len(other)} workloads")
    print("issue 8's targets: " + ("all met" if met else "not all met"))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
