#!/usr/bin/env python3
"""rmsbench_py_test.py - checks of the non-GPU parts of the rmsnorm mode of the dev bench
(tools/membench/rmsbench.py and rmsnorm.cu): the CPU reference reached through ctypes (argv[2]: the
host-only build of tests/membench/mb_rms_ref_so.cpp) against an independent numpy evaluation; the
validation (a float32 evaluation passes, a missing weight, a wrong eps, swapped rows, an unwritten
vector and a flipped copy bit fail; timing-only variants are not validated); the ratios, the short
table and the differences; membench.Timer.cupti's warm hook (a fake span timer); the definition's reference source;
rmsnorm.cu's variant table (ids, kinds, the variants the
experiment needs, v0 = fast.cu's shape at small T). Inputs drawn from the seed argv[1]. Prints ok/FAIL
per check and "N passed, M failed".
"""
import ctypes
import os
import random
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tally import check, summary  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tools", "membench"))
import rmsbench  # noqa: E402


def bf16(np, a):
    """bf16 bits (uint16) of a float array, round to nearest even via float32"""
    u = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def f32(np, bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def gpu_like(np, x_bits, w_bits, eps, rows_order=None):
    """what a correct kernel computes: float32 sum (pairwise, numpy's order), rsqrt in float32, n rounded
    to bf16, w * n rounded to bf16; bits [rows, H]"""
    x = f32(np, x_bits)
    ss = (x * x).sum(axis=1, dtype=np.float32)
    rstd = (np.float32(1) / np.sqrt(ss / np.float32(x.shape[1]) + np.float32(eps))).astype(np.float32)
    n = f32(np, bf16(np, x * rstd[:, None]))
    return bf16(np, f32(np, w_bits)[None, :] * n)


def variant_rows(path):
    """the X(id, "name", kind, kernel, threads, vpt, vw, flags) rows of rmsnorm.cu"""
    rows = []
    for m in re.finditer(r'X\((\d+),\s*"([^"]+)",\s*(\w+),\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+),\s*([^)]*)\)',
                         open(path).read()):
        rows.append(dict(id=int(m.group(1)), name=m.group(2), kind=m.group(3), kern=int(m.group(4)),
                         th=int(m.group(5)), vpt=int(m.group(6)), vw=int(m.group(7)), flags=m.group(8).strip()))
    return rows


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    rnd = random.Random(seed)
    print("seed %d" % seed)
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is None or len(sys.argv) < 3:
        print("skip: numpy or the reference library missing (reference and validation checks)")
    else:
        lib = rmsbench.set_ref_types(ctypes.CDLL(sys.argv[2]))
        g = np.random.default_rng(seed)
        H, T = 4096, rnd.randrange(2, 9)
        std = rnd.choice([0.5, 1.0, 2.0, 3.0])
        x = bf16(np, g.normal(0, std, (T, H)))
        w = bf16(np, 1 + 0.1 * g.normal(0, 1, H))
        ref = rmsbench.c_reference(np, lib, x, w)
        # independent evaluation in float64 (numpy), the oracle's steps
        xd = f32(np, x).astype(np.float64)
        rstd = 1 / np.sqrt((xd * xd).sum(axis=1) / H + float(np.float32(1e-5)))
        n = f32(np, bf16(np, (xd * rstd[:, None]).astype(np.float32)))
        alt = f32(np, w)[None, :].astype(np.float64) * n
        same = np.count_nonzero(alt.astype(np.float32) == ref)
        check(ref.shape == (T, H) and same >= ref.size - 4, "C reference = numpy float64 evaluation (%d of %d equal)"
              % (same, ref.size))
        ok = True
        for s in range(3):
            xs = bf16(np, g.normal(0, 1 + s, (T, H)))
            ws = bf16(np, 1 + 0.1 * g.normal(0, 1, H))
            ok = ok and rmsbench.validate(np, rmsbench.KIND_NORM, gpu_like(np, xs, ws, 1e-5), xs,
                                          rmsbench.c_reference(np, lib, xs, ws)) == 0
        check(ok, "validate: a float32 evaluation passes (3 seeds, std 1-3)")
        good = gpu_like(np, x, w, 1e-5)
        no_w = gpu_like(np, x, bf16(np, np.ones(H)), 1e-5)
        check(rmsbench.validate(np, rmsbench.KIND_NORM, no_w, x, ref) > H * T // 2, "validate: missing weight fails")
        big_eps = gpu_like(np, x, w, 0.25 * std * std)
        check(rmsbench.validate(np, rmsbench.KIND_NORM, big_eps, x, ref) > H * T // 2, "validate: a wrong eps fails")
        swapped = good.copy()
        swapped[[0, 1]] = swapped[[1, 0]]
        check(rmsbench.validate(np, rmsbench.KIND_NORM, swapped, x, ref) > H, "validate: two rows swapped fail")
        hole = good.copy()
        k = rnd.randrange(T * H // 8)
        hole.reshape(-1)[8 * k:8 * k + 8] = 0xFFFF  # one 16-byte vector left as the NaN poison
        check(rmsbench.validate(np, rmsbench.KIND_NORM, hole, x, ref) == 8, "validate: one unwritten vector = 8 mismatches")
        check(rmsbench.validate(np, rmsbench.KIND_COPY, x.copy(), x, None) == 0, "validate: an exact copy passes")
        flip = x.copy()
        flip.reshape(-1)[rnd.randrange(T * H)] ^= 1
        check(rmsbench.validate(np, rmsbench.KIND_COPY, flip, x, None) == 1, "validate: one flipped bit of a copy fails")
        check(rmsbench.validate(np, rmsbench.KIND_TIMING, no_w, x, ref) is None, "validate: timing-only is not validated")
        try:
            rmsbench.validate(np, rmsbench.KIND_NORM, good[:1], x, ref)
            check(False, "validate: a short output raises")
        except ValueError:
            check(True, "validate: a short output raises")

    rows = []
    for T in (1, 16):
        for impl in ("v0 fast", "v7 copy", "v2 x [timing]", "torch.compile", "F.rms_norm"):
            rows.append(dict(T=T, impl=impl, status="PASSED", cupti_us=rnd.uniform(1, 3), warm_us=rnd.uniform(1, 3),
                             event_us=rnd.uniform(2, 5), graph_us=None))
        rows.append(dict(T=T, impl="v5 broken", status="FAIL", cupti_us=None))
    rows.append(dict(T=64, impl="v0 fast", status="PASSED", cupti_us=2.0))  # no torch.compile / v7 at 64
    rmsbench.add_ratios(rows)
    ok = True
    for T in (1, 16):
        tc = [r for r in rows if r["T"] == T and r["impl"] == "torch.compile"][0]["cupti_us"]
        v7 = [r for r in rows if r["T"] == T and r["impl"] == "v7 copy"][0]["cupti_us"]
        for r in rows:
            if r["T"] == T and r["status"] == "PASSED":
                ok = ok and abs(r["tc_x"] - tc / r["cupti_us"]) < 1e-12 and abs(r["v7_x"] - v7 / r["cupti_us"]) < 1e-12
    ok = ok and all(r.get("tc_x") is None for r in rows if r["status"] == "FAIL")
    ok = ok and rows[-1]["tc_x"] is None and rows[-1]["v7_x"] is None
    check(ok, "add_ratios: torch.compile / row and v7 / row per T; none for failures or a T without them")
    lines = rmsbench.short_table(rows)
    check(len(lines) == 1 + len(rows) and sum("FAIL" in l for l in lines) == 2
          and all(l.split()[-1] == "-" for l in lines if l.startswith("v0 fast") and " 64 " in l),
          "short table: one line per row, failures say FAIL, missing ratios print -")

    # membench.Timer.cupti's warm hook: after each flush, before the marked call, the warm fn of the
    # implementation about to be timed (the calls come ITERS per implementation, in order)
    sys.path.insert(0, os.path.join(ROOT, "tools", "bridge"))
    import membench
    import sf_kspan
    log = []

    class FakeSpanTimer:
        def __init__(self, torch, flush):
            self.flush = flush

        def time_batch(self, fn, args_list):
            out = []
            for a in args_list:
                self.flush()
                log.append(("call", a[0]))
                out.append((0.001 * (1 + len(log)), fn(*a)))
            return out

    class FakeBuf:
        def fill_(self, v):
            log.append(("flush", v))

    real = sf_kspan.KernelSpanTimer
    sf_kspan.KernelSpanTimer = FakeSpanTimer
    try:
        tm = object.__new__(membench.Timer)
        tm.torch, tm.iters, tm.flush = None, rnd.randrange(2, 6), FakeBuf()
        names = ["a", "b", "c"]
        impls = {n: (lambda n: lambda k: log.append(("run", n, k)))(n) for n in names}
        warm = {n: (lambda n: lambda: log.append(("warm", n)))(n) for n in names}
        got = tm.cupti(impls, warm=warm)
        want = []
        for i, n in enumerate(names):
            for j in range(tm.iters):
                want += [("flush", (i * tm.iters + j) & 0x7f), ("warm", n), ("call", n), ("run", n, 0)]
        ok = log == want and sorted(got) == names
        log.clear()
        tm.cupti(impls)
        ok = ok and not any(e[0] == "warm" for e in log) and len(log) == 3 * 3 * tm.iters
    finally:
        sf_kspan.KernelSpanTimer = real
    check(ok, "Timer.cupti: each call's warm fn runs after its flush and before it, in order; none without warm")

    drows = [dict(T=16, impl="v0 fast", status="PASSED", cupti_us=1.95, warm_us=1.8, wl2_us=None),
             dict(T=16, impl="torch.compile", status="PASSED", cupti_us=1.5, warm_us=1.7, wl2_us=1.4),
             dict(T=16, impl="v10 x", status="PASSED", cupti_us=1.0, warm_us=1.0, wl2_us=1.0),
             dict(T=16, impl="v1 y", status="FAIL", cupti_us=None)]
    dl = rmsbench.deltas(drows)
    gap = [l for l in dl if "the gap" in l]
    check(len(dl) == 1 + len(rmsbench.DELTAS) and len(gap) == 1 and gap[0].split()[-5:] == ["+0.45", "/", "+0.10", "/", "-"]
          and rmsbench.find_row(drows, 16, "v1") is None and rmsbench.find_row(drows, 16, "v10")["impl"] == "v10 x",
          "deltas: a - b per column, '-' where a value or a passing row is missing; v1 does not match v10")

    src = rmsbench.reference_source()
    compile(src, "definition", "exec")
    check("def run(hidden_states, weight, eps)" in src and "rsqrt" in src, "the definition's reference source compiles")

    vr = variant_rows(os.path.join(ROOT, "tools", "membench", "rmsnorm.cu"))
    by = {r["id"]: r for r in vr}
    check([r["id"] for r in vr] == list(range(len(vr))) and len({r["name"] for r in vr}) == len(vr) and len(vr) >= 8,
          "rmsnorm variants: ids 0..n-1, names unique")
    check(all(("[timing]" in r["name"]) == (r["kind"] == "MB_RK_TIMING") for r in vr),
          "rmsnorm variants: exactly the timing-only ones say [timing]")
    check(all(r["kind"] != "MB_RK_TIMING" for r in vr if "(fast.cu" in r["name"] or r["id"] in (0, 1, 4, 5, 8)),
          "rmsnorm variants: fast.cu's, Triton's, t1024, atomic and the control are validated")
    fast = open(os.path.join(ROOT, "problems/llama/rmsnorm_h4096/solutions/fast.cu")).read()
    small_t = int(re.search(r"#define RMS_SMALL_T (\d+)", fast).group(1))
    max_th = int(re.search(r"#define RMS_MAX_THREADS (\d+)", fast).group(1))
    v0 = by.get(0, {})
    check(v0.get("kern") == 0 and v0.get("th") == max_th == 512 and v0.get("vpt") == 1 and small_t >= 256
          and "cand_wide[] = { 1," in fast,
          "v0 = fast.cu's rms_vec<1> x RMS_MAX_THREADS, its shape at T <= RMS_SMALL_T (>= 256, the sizes timed)")
    want = {1: (2, "MB_RK_NORM"), 2: (1, "MB_RK_TIMING"), 3: (1, "MB_RK_TIMING"), 4: (1, "MB_RK_NORM"),
            5: (1, "MB_RK_NORM"), 6: (1, "MB_RK_TIMING"), 7: (1, "MB_RK_COPY"), 8: (1, "MB_RK_NORM")}
    check(all(i in by and (by[i]["kern"], by[i]["kind"]) == want[i] for i in want)
          and by[4]["th"] == 1024 and by[4]["vw"] == 2 and by[1]["vpt"] == 2048 and by[8]["flags"] == "0"
          and "MB_F_NOW" in by[2]["flags"] and "MB_F_WARPRED" in by[3]["flags"] and "MB_F_ATOMIC" in by[5]["flags"]
          and "MB_F_NOST" in by[6]["flags"] and by[7]["flags"] == "MB_F_COPY",
          "v1-v8 are the brief's experiment (Triton 2-pass, no weight, warp-only, t1024 x 8B, atomic, no stores, copy, control)")
    check(all(r["th"] * r["vpt"] * r["vw"] * 2 == 4096 for r in vr if r["kern"] in (0, 1)),
          "rmsnorm variants: each row fills its block exactly (threads x vectors x words x 2 = 4096)")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
