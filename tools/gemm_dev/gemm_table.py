#!/usr/bin/env python3
"""gemm_table.py - summary table of a gemm_check.py log (tools/gpu_gemm.sh prints it last).

    gemm_table.py CHECK.log [--default NAME] [--side]

Prints, for the default variant, one line per (shape, M): time, cuBLASLt time, speedup, weight bytes per
second (2NK / time) and TFLOP/s, and the fastest variant of that case with its speedup; then per M class (M <= 16, 16 < M <= 512, M > 512) the geomean and
minimum speedup over cuBLASLt of every variant, beside the issue-8 targets; then, per class, each
candidate's geomean time ratio to the default on the cases both ran (> 1: the candidate is faster).
With --side, first a side-by-side table of the cases where a candidate ran: each variant's time (µs) and,
in brackets, its speedup over cuBLASLt, one row per (shape, M), geomean speedups per variant under it.
Failed checks are listed and counted. Exit status 0 (it reports; gemm_check's own status says pass/fail).
"""
import argparse
import math

TARGETS = {"M<=16": "geo >= 1.2", "16<M<=512": "each >= 1.0", "M>512": "each >= 0.97 at M >= 1024"}


def cls(m):
    return "M<=16" if m <= 16 else ("16<M<=512" if m <= 512 else "M>512")


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def side(rows, variants, d):
    """time and speedup over cuBLASLt of every variant, per case where any candidate ran"""
    cases = sorted({(k[1], k[2]) for k in rows if k[0] != d}, key=lambda c: (c[0], c[1]))
    if not cases:
        return
    print("side by side: us (speedup over cuBLASLt), cases where a candidate ran")
    print("%-11s %4s %7s  %s" % ("shape", "M", "cublas", "  ".join("%-14s" % v for v in variants)))
    sp = {v: [] for v in variants}
    for (shape, M) in cases:
        ref = next(rows[k][1] for k in rows if k[1] == shape and k[2] == M)
        cells = []
        for v in variants:
            if (v, shape, M) in rows:
                us = rows[(v, shape, M)][0]
                sp[v].append(ref / us)
                cells.append("%-14s" % ("%.1f (%.2f)" % (us, ref / us)))
            else:
                cells.append("%-14s" % "-")
        print("%-11s %4d %7.1f  %s" % (shape, M, ref, "  ".join(cells)))
    print("%-11s %4s %7s  %s\n" % ("geomean", "", "", "  ".join("%-14s" % ("%.3f (%d)" % (geo(sp[v]), len(sp[v])))
                                                              for v in variants)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--default", default="v2")
    ap.add_argument("--side", action="store_true")
    a = ap.parse_args()
    rows = {}  # (variant, shape, M) -> (us, ref_us)
    fails = []
    for line in open(a.log):
        p = line.split()
        if len(p) >= 4 and p[3].startswith("FAIL"):
            fails.append(" ".join(p[:4]))
            continue
        if len(p) != 10 or p[3] != "ok":
            continue
        try:
            us, ref = float(p[5]), float(p[6])
            M = int(p[1])
        except ValueError:
            continue
        if us == us and ref == ref:
            rows[(p[2], p[0], M)] = (us, ref)
    variants = sorted({k[0] for k in rows}, key=lambda v: (v != a.default, v))
    d = a.default
    if a.side:
        side(rows, variants, d)
    print("default variant %s vs cuBLASLt (CUDA events, L2 flushed, median)" % d)
    print("%-11s %5s %9s %9s %7s %7s %6s  %s" % ("shape", "M", "ours_us", "cublas", "speedup", "W_TB/s", "TF/s",
                                                 "fastest variant"))
    for (v, shape, M) in sorted((k for k in rows if k[0] == d), key=lambda k: (k[1], k[2])):
        us, ref = rows[(v, shape, M)]
        n, k = (int(x) for x in shape.split("x"))
        best = min((rows[q][0], q[0]) for q in rows if q[1] == shape and q[2] == M)
        print("%-11s %5d %9.1f %9.1f %7.3f %7.2f %6.0f  %s %.3f" % (shape, M, us, ref, ref / us, 2 * n * k / us / 1e6,
                                                                   2.0 * M * n * k / us / 1e6, best[1], ref / best[0]))
    print("\ngeomean / min speedup over cuBLASLt per M class (target in brackets)")
    for c in TARGETS:
        parts = []
        for v in variants:
            sp = [rows[k][1] / rows[k][0] for k in rows if k[0] == v and cls(k[2]) == c]
            if sp:
                parts.append("%s %.3f/%.3f" % (v, geo(sp), min(sp)))
        print("%-10s [%s]  %s" % (c, TARGETS[c], "  ".join(parts)))
    print("\ncandidates vs the default per class (geomean of default_time / candidate_time, common cases)")
    for c in TARGETS:
        parts = []
        for v in variants:
            if v == d:
                continue
            r = [rows[(d, k[1], k[2])][0] / rows[k][0] for k in rows
                 if k[0] == v and cls(k[2]) == c and (d, k[1], k[2]) in rows]
            if r:
                parts.append("%s %.3f (%d)" % (v, geo(r), len(r)))
        if parts:
            print("%-10s %s" % (c, "  ".join(parts)))
    print("\nfailed checks: %d%s" % (len(fails), "".join("\n  " + f for f in fails[:10])))
    return 0


if __name__ == "__main__":
    main()
