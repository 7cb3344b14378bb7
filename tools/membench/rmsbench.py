#!/usr/bin/env python3
"""rmsbench.py - the rmsnorm mode of the memory-bandwidth dev bench: times the RMSNorm variants of
tools/membench/rmsnorm.cu (built as rmsnorm.so) beside torch.compile, F.rms_norm and the eager
reference at decode sizes, in one process with one timing method (issue 7: why torch.compile's
Triton kernel beats fast.cu at 16 rows; problems/llama/rmsnorm_h4096/solutions/NOTES.md, "Session 8:
the t16 experiment").

Problem: y = bf16(w * bf16(x * rsqrt(mean(x^2) + eps))), x [T, 4096] bf16, w [4096] bf16, eps 1e-5.
Implementations per T: every variant of the .so (ctypes on torch tensors' data_ptr, torch's current
stream); "torch.compile" = torch.compile(dynamic=False) of the definition's reference (the `reference`
source in definition.json: LlamaRMSNorm step by step); "torch.compile norm.py" = the evaluator's
torch.compile baseline (problems/common/baselines/torch/norm.py rmsnorm); "F.rms_norm" = the fused
eager form (norm.py rmsnorm_fused); "torch eager ref" = the reference uncompiled.

Validation first (3 seeds, x ~ N(0, seed), w ~ N(1, 0.1), outputs poisoned with NaN bits): rmsnorm
kinds against the CPU reference (mb_rms_ref_host of the .so: the oracle's steps, unrounded w * n) at
the workloads' tolerance (atol 1e-5, rtol 1.6e-2); copy kinds bit for bit against x; timing-only
kinds (a part of the work left out on purpose) only have to launch. A failing implementation is not
timed.

Columns (all medians, us per call; membench.Timer):
  cupti_us  device busy time (torch.profiler / CUPTI, cut at marker kernels: sf_kspan), L2 flushed
            before each call: the kernel's own time, no launch overhead. THE measure of every row.
  warm_us   the same, but after the flush the implementation runs once on other buffers of the same
            shape (untimed): its code (and constants) are in L2 again, its data cold. A gap that
            closes here is instruction / constant fetch, not data.
  wl2_us    the same, but after the flush only the weight is read back into L2 (an untimed clone of
            it): x cold, w warm. A kernel that loads w after the reduction (Triton's pass 2) gains a
            DRAM round trip here; one that loads it beside x gains ~nothing.
  event_us  CUDA events around one call after the flush and a GPU sleep: device time plus the launch
            latency the events see (not host dispatch).
  graph_us  a CUDA graph of 10 calls on rotating cold buffers, per call: back-to-back kernels, code warm.
  tc/x      torch.compile's cupti_us / the row's (> 1: faster than torch.compile); v7/x likewise against
            v7 (the same-grid copy, the floor of the launch shape).
Timing-only rows and the copies are timed like the rest. After the table, per T, the differences that
answer the question (DELTAS: the gap, over the copy, weight, reduction, stores, ...). Writes OUT/rms.tsv, OUT/rms.jsonl, OUT/rms_short.txt (rewritten after every T) and OUT/rms.log.
"""
import argparse
import ctypes
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import membench  # noqa: E402

H = 4096
EPS = 1e-5
ATOL, RTOL = 1e-5, 1.6e-2  # problems/llama/rmsnorm_h4096/workload.jsonl
KIND_NORM, KIND_COPY, KIND_TIMING = 0, 1, 2  # rmsnorm.cu's MB_RK_*
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEFINITION = os.path.join(ROOT, "problems", "llama", "rmsnorm_h4096", "definition.json")
NORM_PY = os.path.join(ROOT, "problems", "common", "baselines", "torch", "norm.py")


def close_mismatches(np, got_bits, ref, atol=ATOL, rtol=RTOL):
    """number of elements of got (bf16 bits) outside |got - ref| <= atol + rtol |ref|, ref a float
    array (the unrounded reference); a NaN or inf in got is a mismatch"""
    got = membench.bf16_bits_to_f32(np, np.asarray(got_bits, dtype=np.uint16).ravel()).astype(np.float64)
    ref = np.asarray(ref, dtype=np.float64).ravel()
    if got.shape != ref.shape:
        raise ValueError("output has %d elements, the reference %d" % (got.size, ref.size))
    ok = np.abs(got - ref) <= atol + rtol * np.abs(ref)  # False for NaN
    return int(ok.size - np.count_nonzero(ok))


def validate(np, kind, got_bits, x_bits, ref):
    """mismatch count of one output: KIND_NORM against ref (close_mismatches), KIND_COPY bit for bit
    against x; None for KIND_TIMING (not validated)"""
    if kind == KIND_TIMING:
        return None
    if kind == KIND_COPY:
        g, x = np.asarray(got_bits, dtype=np.uint16).ravel(), np.asarray(x_bits, dtype=np.uint16).ravel()
        if g.shape != x.shape:
            raise ValueError("copy output has %d elements, the input %d" % (g.size, x.size))
        return int(np.count_nonzero(g != x))
    if kind == KIND_NORM:
        return close_mismatches(np, got_bits, ref)
    raise ValueError("unknown variant kind %r" % (kind,))


def reference_source(path=DEFINITION):
    """the definition's `reference` (python source defining run(hidden_states, weight, eps))"""
    with open(path) as f:
        src = json.load(f)["reference"]
    if "def run(" not in src:
        raise ValueError("%s: the reference defines no run()" % path)
    return src


def load_module_fn(src, name, filename):
    """function `name` of python source src (executed in a fresh namespace)"""
    ns = {"__name__": "rmsbench_" + name}
    exec(compile(src, filename, "exec"), ns)
    return ns[name]


def add_ratios(rows):
    """sets tc_x (torch.compile's cupti_us / the row's) and v7_x (v7's / the row's) on the PASSED rows
    of each T that has those rows timed; leaves None elsewhere"""
    for T in sorted({r["T"] for r in rows}):
        grp = [r for r in rows if r["T"] == T and r["status"] == "PASSED" and r.get("cupti_us")]
        base = {}
        for r in grp:
            if r["impl"] == "torch.compile":
                base["tc"] = r["cupti_us"]
            elif r["impl"].startswith("v7 "):
                base["v7"] = r["cupti_us"]
        for r in grp:
            r["tc_x"] = base["tc"] / r["cupti_us"] if "tc" in base else None
            r["v7_x"] = base["v7"] / r["cupti_us"] if "v7" in base else None


def short_table(rows):
    """lines of the short table: per T every row (variant order as run), device time columns and the
    two ratios; failed rows say FAIL, timing-only rows carry [timing] in their names"""
    out = ["%-50s %5s %7s %7s %7s %7s %7s %6s %6s" % ("variant", "T", "cupti", "warm", "wl2", "event", "graph", "tc/x",
                                                    "v7/x")]
    f = membench.fmt_us
    r3 = lambda v: "-" if v is None else "%.3f" % v
    for r in rows:
        if r["status"] != "PASSED":
            out.append("%-50.50s %5d %7s" % (r["impl"], r["T"], "FAIL"))
            continue
        out.append("%-50.50s %5d %7s %7s %7s %7s %7s %6s %6s" % (
            r["impl"], r["T"], f(r.get("cupti_us")), f(r.get("warm_us")), f(r.get("wl2_us")), f(r.get("event_us")),
            f(r.get("graph_us")), r3(r.get("tc_x")), r3(r.get("v7_x"))))
    return out


# the differences that answer the t16 question (NOTES.md): (label, row a, row b) -> a - b
DELTAS = [("v0 - torch.compile (the gap)", "v0", "torch.compile"), ("v0 - v7 (over the same-grid copy)", "v0", "v7"),
          ("v8 - v0 (replica; ~0)", "v8", "v0"), ("v8 - v2 (the weight load)", "v8", "v2"),
          ("v8 - v3 (block reduction)", "v8", "v3"), ("v8 - v6 (the stores)", "v8", "v6"),
          ("v13 - v8 (weight after the sum)", "v13", "v8"), ("v16 - v7 (one barrier)", "v16", "v7"),
          ("v8 - v12 (the fp32 division)", "v8", "v12"), ("v8 - v15 (fix candidate)", "v8", "v15"),
          ("v1 - torch.compile (our Triton copy)", "v1", "torch.compile")]


def find_row(rows, T, key):
    """the PASSED row of T named key ("vN": the variant N; else the exact impl name), or None"""
    for r in rows:
        if r["T"] == T and r["status"] == "PASSED" and (r["impl"] == key or r["impl"].startswith(key + " ")):
            return r
    return None


def deltas(rows):
    """lines: per T, each DELTAS difference in the cupti / warm / wl2 columns (us; '-' where missing)"""
    out = []
    for T in sorted({r["T"] for r in rows}):
        out.append("T=%d differences, us (cupti / warm / wl2):" % T)
        for label, a, b in DELTAS:
            ra, rb_ = find_row(rows, T, a), find_row(rows, T, b)
            vals = []
            for c in ("cupti_us", "warm_us", "wl2_us"):
                x, y = (ra or {}).get(c), (rb_ or {}).get(c)
                vals.append("-" if x is None or y is None else "%+.2f" % (x - y))
            out.append("  %-40s %s" % (label, " / ".join(vals)))
    return out


def write_outputs(out, rows):
    """OUT/rms.tsv, OUT/rms.jsonl, OUT/rms_short.txt from the rows so far"""
    add_ratios(rows)
    cols = ["T", "impl", "kind", "status", "cupti_us", "warm_us", "wl2_us", "event_us", "graph_us", "tc_x", "v7_x"]
    with open(os.path.join(out, "rms.tsv"), "w") as f:
        f.write("\t".join(cols) + "\n")
        for r in rows:
            f.write("\t".join("-" if r.get(c) is None else (("%.4f" % r[c]) if isinstance(r[c], float) else str(r[c]))
                              for c in cols) + "\n")
    with open(os.path.join(out, "rms.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    with open(os.path.join(out, "rms_short.txt"), "w") as f:
        f.write("\n".join(short_table(rows) + deltas(rows)) + "\n")


def load_lib(path):
    """ctypes handle of rmsnorm.so with its argtypes"""
    lib = ctypes.CDLL(path)
    lib.mb_rms_count.restype = ctypes.c_int
    lib.mb_rms_name.restype = ctypes.c_char_p
    lib.mb_rms_name.argtypes = [ctypes.c_int]
    lib.mb_rms_kind.restype = ctypes.c_int
    lib.mb_rms_kind.argtypes = [ctypes.c_int]
    lib.mb_rms_run.restype = ctypes.c_int
    lib.mb_rms_run.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                               ctypes.c_int64, ctypes.c_float, ctypes.c_void_p]
    return set_ref_types(lib)


def set_ref_types(lib):
    """sets the argtypes of lib's mb_rms_ref_host (rmsnorm.so, or the host-only test build); returns lib"""
    lib.mb_rms_ref_host.restype = None
    lib.mb_rms_ref_host.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                    ctypes.c_float]
    return lib


def c_reference(np, lib, x_bits, w_bits, eps=EPS):
    """the CPU reference (float32 [rows, H]) of host bf16 bits x [rows, H], w [H] via the .so"""
    x_bits = np.ascontiguousarray(x_bits, dtype=np.uint16)
    w_bits = np.ascontiguousarray(w_bits, dtype=np.uint16)
    rows = x_bits.size // w_bits.size
    out = np.empty(x_bits.shape, dtype=np.float32)
    lib.mb_rms_ref_host(x_bits.ctypes.data, w_bits.ctypes.data, out.ctypes.data, rows, w_bits.size, eps)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True, help="rmsnorm.so")
    ap.add_argument("--sizes", default="1,16,64,256")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--no-normpy", action="store_true", help="leave out torch.compile of norm.py (one compile per T less)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.iters < 30:
        sys.exit("rmsbench: --iters must be >= 30")
    import numpy as np
    import torch
    os.makedirs(args.out, exist_ok=True)
    lib = load_lib(args.lib)
    nvar = lib.mb_rms_count()
    names = [lib.mb_rms_name(v).decode() for v in range(nvar)]
    kinds = [lib.mb_rms_kind(v) for v in range(nvar)]
    timer = membench.Timer(torch, args.iters)
    log = open(os.path.join(args.out, "rms.log"), "a")
    t_start = time.time()

    def say(msg):
        print(msg, file=log, flush=True)

    say("torch %s, %s, %d SMs" % (torch.__version__, torch.cuda.get_device_name(),
                                  torch.cuda.get_device_properties(0).multi_processor_count))
    ref_run = load_module_fn(reference_source(), "run", DEFINITION)
    with open(NORM_PY) as f:
        norm_src = f.read()
    normpy_rmsnorm = load_module_fn(norm_src, "rmsnorm", NORM_PY)
    normpy_fused = load_module_fn(norm_src, "rmsnorm_fused", NORM_PY)
    stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    rows = []

    def run_size(T):
        nbuf = 10
        xs = [torch.randn(T, H, device="cuda").to(torch.bfloat16) for _ in range(nbuf)]
        ws = [(1 + 0.1 * torch.randn(H, device="cuda")).to(torch.bfloat16) for _ in range(nbuf)]
        ys = [torch.empty(T, H, device="cuda", dtype=torch.bfloat16) for _ in range(nbuf)]
        # the warm-up set of warm_us: views into large tensors (their own allocations, not the 2 MB
        # segments the timed buffers share) with fresh values
        big = [torch.randn(max(T * H, 8 << 20), device="cuda").to(torch.bfloat16) for _ in range(2)]
        xw, yw = big[0][:T * H].view(T, H), big[1][:T * H].view(T, H)
        ww = (1 + 0.1 * torch.randn(2 << 20, device="cuda")).to(torch.bfloat16)[:H]
        comp = torch.compile(ref_run, dynamic=False)
        comp_np = torch.compile(normpy_rmsnorm, dynamic=False)
        impls, kind_of = {}, {}
        for v in range(nvar):
            name = "v%d %s" % (v, names[v])
            impls[name] = (lambda v: lambda k: lib.mb_rms_run(v, xs[k].data_ptr(), ws[k].data_ptr(), ys[k].data_ptr(),
                                                              T, H, EPS, stream()))(v)
            kind_of[name] = kinds[v]
        impls["torch.compile"] = lambda k: comp(xs[k], ws[k], EPS)
        if not args.no_normpy:
            impls["torch.compile norm.py"] = lambda k: comp_np(xs[k], ws[k], EPS)
        impls["F.rms_norm"] = lambda k: normpy_fused(xs[k], ws[k], EPS)
        impls["torch eager ref"] = lambda k: ref_run(xs[k], ws[k], EPS)
        kept = []  # the warm calls' outputs, alive until the timing ends (the timed call's output is
        # then a different allocator block)

        def warm_of(name):
            if name in kind_of:
                v = int(name.split()[0][1:])
                return lambda: lib.mb_rms_run(v, xw.data_ptr(), ww.data_ptr(), yw.data_ptr(), T, H, EPS, stream())
            f = {"torch.compile": comp, "torch.compile norm.py": comp_np, "F.rms_norm": normpy_fused,
                 "torch eager ref": ref_run}[name]
            return lambda: kept.append(f(xw, ww, EPS))

        failed = {}
        for seed in (1, 2, 3):
            g = torch.Generator(device="cuda").manual_seed(seed * 1000 + T)
            xs[0].copy_(torch.randn(xs[0].shape, device="cuda", generator=g) * seed)
            ws[0].copy_(1 + 0.1 * torch.randn(H, device="cuda", generator=g))
            hx = xs[0].view(torch.int16).cpu().numpy().view(np.uint16)
            hw = ws[0].view(torch.int16).cpu().numpy().view(np.uint16)
            ref = c_reference(np, lib, hx, hw)
            for name, fn in impls.items():
                if name in failed:
                    continue
                ys[0].view(torch.int16).fill_(-1)  # NaN bits
                ran, r = membench.call_checked(torch, fn, name, failed)
                if not ran:
                    continue
                res = r if isinstance(r, torch.Tensor) else ys[0]
                bad = validate(np, kind_of.get(name, KIND_NORM), res.view(torch.int16).cpu().numpy().view(np.uint16),
                               hx, ref)
                if bad:
                    failed[name] = "seed %d: %d mismatches" % (seed, bad)
        for name, why in failed.items():
            say("FAIL T=%d %s: %s" % (T, name, why))
        good = {name: fn for name, fn in impls.items() if name not in failed}
        cupti, warm, wl2 = {}, {}, {}
        touch_w = lambda: kept.append(ws[0].clone())  # reads w (set 0: the one the timed calls use)
        try:
            cupti = timer.cupti(good)
            warm = timer.cupti(good, warm={name: warm_of(name) for name in good})
            wl2 = timer.cupti(good, warm={name: touch_w for name in good})
        except Exception as e:
            say("cupti timing at T=%d failed: %s" % (T, e))
        kept.clear()
        for name, fn in impls.items():
            r = dict(T=T, impl=name, kind=kind_of.get(name, "torch"), cupti_us=None, warm_us=None, wl2_us=None,
                     event_us=None, graph_us=None, tc_x=None, v7_x=None, status="FAIL" if name in failed else "PASSED")
            if name not in failed:
                r["cupti_us"], r["warm_us"], r["wl2_us"] = cupti.get(name), warm.get(name), wl2.get(name)
                r["event_us"] = timer.event(fn)
                try:
                    r["graph_us"] = timer.graph(fn, nbuf)
                except Exception as e:
                    say("graph of %s T=%d failed: %s" % (name, T, e))
            rows.append(r)
        say("T=%d done (%.0f s)" % (T, time.time() - t_start))

    for T in [int(s) for s in args.sizes.split(",")]:
        try:
            run_size(T)
        except Exception:  # one size failing leaves the others' rows
            import traceback
            say("ERROR T=%d:\n%s" % (T, traceback.format_exc()))
            rows.append(dict(T=T, impl="(error: see rms.log)", kind=None, status="FAIL"))
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        write_outputs(args.out, rows)
    write_outputs(args.out, rows)
    nfail = sum(r["status"] != "PASSED" for r in rows)
    print("\n".join(short_table(rows) + deltas(rows)))
    print("rmsbench: %d rows, %d failed validation (%.0f s)" % (len(rows), nfail, time.time() - t_start))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
