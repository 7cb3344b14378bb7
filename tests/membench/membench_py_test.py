#!/usr/bin/env python3
"""membench_py_test.py - checks of the non-GPU parts of tools/membench/: membench.py's median, row
selection, tolerance check and short table, and the variant tables of silu_mul.cu / copy.cu (ids
0..n-1, unique names, sane launch shapes, variant 0 = the defaults of fast.cu / the calibration copy).
Inputs drawn from the seed given as argv[1]. Prints ok/FAIL per check and "N passed, M failed".
"""
import os
import random
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tally import check, summary  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tools", "membench"))
import membench  # noqa: E402


def defines(path):
    """the #define NAME VALUE defaults of a source (first definition of each name)"""
    d = {}
    for m in re.finditer(r"^#define\s+(\w+)\s+(\S+)\s*$", open(path).read(), re.M):
        d.setdefault(m.group(1), m.group(2))
    return d


def variants(path, nfields):
    """the X(id, "name", ...) rows of a bench source's variant table"""
    rows = []
    for m in re.finditer(r'X\((\d+),\s*"([^"]+)",\s*([^)]*)\)', open(path).read()):
        rows.append((int(m.group(1)), m.group(2), [f.strip() for f in m.group(3).split(",")]))
    return [r for r in rows if len(r[2]) == nfields]


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    rnd = random.Random(seed)
    print("seed %d" % seed)

    v = [rnd.random() for _ in range(rnd.randrange(1, 60))]
    s = sorted(v)
    want = s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2
    check(membench.median(v) == want and membench.median([4.0, 1.0]) == 2.5, "median (odd / even)")
    try:
        membench.median([])
        check(False, "median of nothing raises")
    except ValueError:
        check(True, "median of nothing raises")

    T = rnd.randrange(1100, 50000)
    rows = membench.check_rows(T, seed)
    check(rows == sorted(set(rows)) and rows[0] == 0 and rows[-1] == T - 1 and len(rows) == 96
          and all(0 <= r < T for r in rows), "check_rows at T > 1024: edges + 32 random, unique, in range")
    small = rnd.randrange(1, 1025)
    check(membench.check_rows(small, seed) == list(range(small)), "check_rows at T <= 1024: every row")

    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None:
        ref = np.array([membench_bits(np, x) for x in (1.0, -2.0, 0.5, 3.0)], dtype=np.uint16)
        got = ref.copy()
        check(membench.mismatches(np, got, ref) == 0, "mismatches: identical outputs")
        got[1] = 0xFFFF  # NaN
        got[3] = membench_bits(np, 3.0 * 1.05)
        check(membench.mismatches(np, got, ref) == 2, "mismatches: one NaN and one 5% off")
        big = np.array([membench_bits(np, rnd.uniform(-4, 4)) for _ in range(2000)], dtype=np.uint16)
        near = big.copy()
        near[::7] += 1  # one bf16 ulp (2^-8 relative at most: inside rtol 1e-2 unless near zero)
        want = sum(1 for g, r in zip(near.tolist(), big.tolist())
                   if not abs(f32(g) - f32(r)) <= 1e-5 + 1e-2 * abs(f32(r)))
        both_nan = np.array([0x7FC0, membench_bits(np, 1.0)], dtype=np.uint16)
        check(membench.mismatches(np, near, big) == want and membench.mismatches(np, both_nan, both_nan) == 1,
              "mismatches: one-ulp changes as the element-wise rule says; a NaN equal to the reference still counts")
    else:
        print("skip: numpy not installed (mismatches)")

    recs = []
    for T_ in (1, 16384):
        for name in ["torch.compile", "torch eager", "v0 2d_t256_v2_cs (v1 default)", "v14 flat (fast.cu, triton)"] + \
                ["v%d x" % k for k in range(1, 9)]:
            recs.append(dict(op="silu", T=T_, impl=name, cupti_us=rnd.uniform(1, 100), event_us=rnd.uniform(1, 100),
                             graph_us=None, tbps=1.0, ratio=1.0, status="PASSED"))
    recs.append(dict(op="silu", T=1, impl="v9 failed", cupti_us=None, event_us=None, graph_us=None, tbps=0.0,
                     ratio=None, status="FAIL"))
    lines = membench.short_table(recs, best=3)
    body = lines[1:]
    ok = len(body) == 2 * 5
    for T_ in (1, 16384):
        got = [l for l in body if l.split()[1] == str(T_)]
        names = [" ".join(l.split()[2:-5]) for l in got]
        grp = sorted([r for r in recs if r["T"] == T_ and r["cupti_us"] is not None], key=lambda r: r["cupti_us"])
        others = [r["impl"] for r in grp if r["impl"] != "torch.compile" and "(fast.cu" not in r["impl"]][:3]
        ok = ok and "torch.compile" in names and "v14 flat (fast.cu, triton)" in names
        ok = ok and all(o in names for o in others) and "v9 failed" not in names
        us = [float(l.split()[-5]) for l in got]
        ok = ok and us == sorted(us)
    check(ok, "short table: torch.compile, the (fast.cu row and the 3 fastest others per T (device time), sorted, failures left out")
    membench.set_ratios(recs, "silu", 1)
    tc = [r for r in recs if r["T"] == 1 and r["impl"] == "torch.compile"][0]
    some = [r for r in recs if r["T"] == 1 and r["status"] == "PASSED"]
    ok = all(abs(r["ratio"] - tc["cupti_us"] / r["cupti_us"]) < 1e-12 and
             abs(r["ratio_event"] - tc["event_us"] / r["event_us"]) < 1e-12 for r in some)
    ok = ok and [r for r in recs if r["impl"] == "v9 failed"][0]["ratio"] is None
    ok = ok and all(r["ratio"] == 1.0 for r in recs if r["T"] == 16384)  # other T untouched
    check(ok, "set_ratios: torch.compile time / the row's, per T, failures left without one")

    fast = defines(os.path.join(ROOT, "problems/llama/silu_and_mul_i14336/solutions/fast.cu"))
    sv = variants(os.path.join(ROOT, "tools/membench/silu_mul.cu"), 6)
    check([r[0] for r in sv] == list(range(len(sv))) and len({r[1] for r in sv}) == len(sv) and len(sv) >= 20,
          "silu variants: ids 0..n-1, names unique")
    check(all(r[2][0] in ("64", "128", "256", "512") and r[2][1] in ("1", "2", "4") for r in sv),
          "silu variants: CTA sizes 64-512, 1/2/4 vectors per thread")
    mine = [r[2] for r in sv if "(fast.cu" in r[1]]
    hint = {"MB_H_NONE": "0", "MB_H_CS": "1", "MB_H_NC": "2", "MB_H_EF": "3", "MB_H_CSST": "4", "MB_H_CSLD": "5"}
    grid = {"MB_G_2D": "0", "MB_G_FLAT": "1", "MB_G_PERSIST": "2"}
    check(len(mine) == 1 and mine[0][0] == fast.get("THREADS") and mine[0][1] == fast.get("UNROLL")
          and hint.get(mine[0][2]) == fast.get("SM_HINT") and grid.get(mine[0][3]) == fast.get("SM_GRID"),
          "the one silu variant named (fast.cu = fast.cu's defaults (THREADS, UNROLL, SM_HINT, SM_GRID)")
    copy = defines(os.path.join(ROOT, "tools/calibration/copy/solutions/copy.cu"))
    cv = variants(os.path.join(ROOT, "tools/membench/copy.cu"), 5)
    check([r[0] for r in cv] == list(range(len(cv))) and len({r[1] for r in cv}) == len(cv) and len(cv) >= 10,
          "copy variants: ids 0..n-1, names unique")
    big = [r[2] for r in cv if "(copy.cu >=" in r[1]]
    small = [r[2] for r in cv if "(copy.cu <" in r[1]]
    cut = "%dM" % (int(copy.get("COPY_SMALL_BYTES", "-1048576")) >> 20)
    check(len(big) == 1 and len(small) == 1 and all(
          c[0] == copy.get("COPY_THREADS") and c[2] == "MB_H_NONE" and c[3] == "MB_G_FLAT" for c in big + small)
          and big[0][1] == copy.get("COPY_UNROLL") and small[0][1] == copy.get("COPY_SMALL_UNROLL")
          and copy.get("COPY_BPS") == "0" and copy.get("COPY_NC") == "0" and copy.get("COPY_ST_CS") == "0"
          and all(cut in r[1] for r in cv if "(copy.cu" in r[1]),
          "the copy variants named (copy.cu >= / < SIZE = the calibration copy's defaults above and below COPY_SMALL_BYTES")
    check_call_checked(rnd)
    return summary()


def check_call_checked(rnd):
    """membench.call_checked on a stand-in torch: a call that raises or returns a non-zero code is
    recorded in failed and reported as not run; one that returns 0, None or a value is run (None is a
    legitimate result of an in-place implementation, not a failure)"""
    class Cuda:
        syncs = 0

        def synchronize(self):
            Cuda.syncs += 1

    class Torch:
        cuda = Cuda()

    code = rnd.randrange(1, 1000)
    value = object()

    def boom(i):
        raise RuntimeError("no kernel %d" % code)
    cases = [("raises", boom, False), ("code", lambda i: code, False), ("zero", lambda i: 0, True),
             ("none", lambda i: None, True), ("value", lambda i: value, True)]
    rnd.shuffle(cases)
    failed = {}
    for name, fn, want in cases:
        ran, r = membench.call_checked(Torch(), fn, name, failed)
        check(ran == want and (name in failed) != want, "call_checked %s: ran %s" % (name, ran))
        if name == "value":
            check(r is value, "call_checked returns the implementation's result")
    check(str(code) in failed.get("raises", "") and failed.get("code") == "launch returned %d" % code,
          "call_checked records why: %s" % failed)


def f32(bits):
    """float value of bf16 bits (pure python)"""
    import struct
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def membench_bits(np, f):
    """bf16 bits of float f (round to nearest even, via float32)"""
    u = int(np.array([f], dtype=np.float32).view(np.uint32)[0])
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


if __name__ == "__main__":
    sys.exit(main())
