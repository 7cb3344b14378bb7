#!/usr/bin/env python3
"""membench.py - times the memory-bound dev-bench variants (tools/membench/*.cu, built as .so) beside
torch.compile's kernel for the same op, in one process with one timing method.

Ops: silu_and_mul (I = 14336: x [T, 2I] bf16 -> out [T, I]) and a plain copy of the same byte count
(43008 T bytes read and as many written). Per op and T: every variant of the .so (ctypes on torch
tensors' data_ptr, launched on torch's current stream), torch eager, torch.compile (dynamic=False, as a
baseline specialised to the shape), and for the copy torch's copy_ (cudaMemcpy).

Validation first, on random inputs (normal, std 1..3, one seed per pass, 3 seeds; at T > 1024 the
first, last and 32 random rows only): each output is poisoned with NaN bits, then compared with the CPU
reference (mb_silu_ref_host in the .so: double-precision silu, bf16 rounding) at the definition's
tolerance (atol 1e-5, rtol 1e-2); the copy bit for bit against its input (on the GPU: the reference of a
copy is the input). A variant failing any check is not timed.

Timing, per implementation and T:
  event: ITERS (>= 30) single calls, each after a 256 MB L2 flush (a buffer written) and a ~50 us GPU
         sleep (so the CPU has enqueued the call before the GPU reaches the start event: a Python or
         dynamo dispatch gap is not timed), CUDA events around the call; the median.
  graph: a CUDA graph of 10 calls on rotating buffer sets (cold in L2: the flush runs before the
         replay, and each call touches buffers no earlier call of the replay touched, as long as 10
         sets fit; at large T two sets, each far larger than L2), events around the replay, median/10:
         the per-call time without launch overhead.
  cupti: device busy time per call (kernels, memcpys) under torch.profiler, each call between two
         marker kernels and cut there by tools/bridge/sf_kspan.py (the method `solforge eval` times
         the PyTorch baselines with, close to the C runner's CUPTI time of a candidate); ITERS calls,
         each after the flush, the median; one profile per op and T. The ranking, TB/s and ratio use
         it (event time where it failed).
Writes OUT/membench.tsv (every row), OUT/membench.jsonl and OUT/membench_short.txt after every size
(the inductor code is in its cache folder: tools/gpu_membw.sh keeps it) and prints the short table last: per op and T, torch.compile,
variant 0 (today's solution) and the 4 best variants by device time; ratio = torch.compile us / us
(> 1: faster than it).
"""
import argparse
import ctypes
import json
import math
import os
import sys
import time

I_SILU = 14336
COPY_BYTES_PER_T = 43008  # silu_and_mul moves 86016 bytes per token: the copy reads and writes half each


def median(v):
    """median of a non-empty list (mean of the middle two when even)"""
    s = sorted(v)
    if not s:
        raise ValueError("median of an empty list")
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def bf16_bits_to_f32(np, bits):
    """numpy uint16 array of bf16 bits -> float32 array (exact)"""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def mismatches(np, got_bits, ref_bits, atol=1e-5, rtol=1e-2):
    """number of elements outside |got - ref| <= atol + rtol |ref| (NaN counts as a mismatch); the
    float comparison runs on the elements whose bits differ only (most are equal: fast at 10^7)"""
    got_bits, ref_bits = np.asarray(got_bits).ravel(), np.asarray(ref_bits).ravel()
    diff = got_bits != ref_bits
    nan_equal = np.count_nonzero(~diff & ((got_bits & 0x7FFF) > 0x7F80))
    a = bf16_bits_to_f32(np, got_bits[diff]).astype(np.float64)
    b = bf16_bits_to_f32(np, ref_bits[diff]).astype(np.float64)
    ok = np.abs(a - b) <= atol + rtol * np.abs(b)
    return int(ok.size - np.count_nonzero(ok)) + int(nan_equal)


def check_rows(T, rng_seed, nmid=32, edge=32, full_max=1024):
    """rows of a [T, ...] output to check: all when T <= full_max, else the first and last `edge` and
    `nmid` random rows (sorted, unique)"""
    if T <= full_max:
        return list(range(T))
    import random
    r = random.Random(rng_seed)
    rows = set(range(edge)) | set(range(T - edge, T)) | set(r.sample(range(edge, T - edge), nmid))
    return sorted(rows)


def best_us(r):
    """a row's ranking time: the device (cupti) time, else the event time, else None"""
    return r.get("cupti_us") if r.get("cupti_us") is not None else r.get("event_us")


def ours(impl):
    """True for a variant that is the default of fast.cu or of the calibration copy (its name says so)."""
    return "(fast.cu" in impl or "(copy.cu" in impl


def short_table(rows, best=4):
    """rows: dicts with op, T, impl, cupti_us, event_us, graph_us, tbps, ratio. Returns the lines of the
    short table: per (op, T), torch.compile, the rows of the solution's own defaults (ours(): the impl
    names "(fast.cu" or "(copy.cu") and the `best` fastest others by best_us, each once, fastest first."""
    out = ["%-5s %6s %-40s %9s %9s %9s %7s %7s" % ("op", "T", "variant", "cupti_us", "event_us", "graph_us", "TB/s",
                                                   "ratio")]
    keys = []
    for r in rows:
        if (r["op"], r["T"]) not in keys:
            keys.append((r["op"], r["T"]))
    for op, T in keys:
        grp = [r for r in rows if r["op"] == op and r["T"] == T and best_us(r) is not None]
        grp.sort(key=best_us)
        pick = [r for r in grp if r["impl"] == "torch.compile" or ours(r["impl"])]
        for r in grp:
            if len([p for p in pick if p["impl"] != "torch.compile" and not ours(p["impl"])]) >= best:
                break
            if r not in pick:
                pick.append(r)
        pick.sort(key=best_us)
        for r in pick:
            out.append("%-5s %6d %-40.40s %9s %9s %9s %7.3f %7s" % (
                op, T, r["impl"], fmt_us(r.get("cupti_us")), fmt_us(r["event_us"]), fmt_us(r["graph_us"]),
                r["tbps"], "-" if r["ratio"] is None else "%.3f" % r["ratio"]))
    return out


def fmt_us(v):
    """'-' for None, else two decimals"""
    return "-" if v is None else "%.2f" % v


def load_lib(path, prefix):
    """the ctypes handle of a bench .so with the argtypes of its mb_<prefix>_* functions"""
    lib = ctypes.CDLL(path)
    getattr(lib, "mb_%s_count" % prefix).restype = ctypes.c_int
    getattr(lib, "mb_%s_name" % prefix).restype = ctypes.c_char_p
    getattr(lib, "mb_%s_name" % prefix).argtypes = [ctypes.c_int]
    run = getattr(lib, "mb_%s_run" % prefix)
    run.restype = ctypes.c_int
    if prefix == "silu":
        run.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
        lib.mb_silu_ref_host.restype = None
        lib.mb_silu_ref_host.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    else:
        run.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
    return lib


def set_ratios(rows, op, T):
    """ratio = torch.compile's time / the row's (best_us; only when both have the same kind of time)
    and ratio_event (event times), for the rows of (op, T) that passed"""
    tc = [r for r in rows if r["op"] == op and r["T"] == T and r["impl"] == "torch.compile" and r["status"] == "PASSED"]
    if not tc:
        return
    for r in rows:
        if r["op"] != op or r["T"] != T or r["status"] != "PASSED":
            continue
        if best_us(r) and best_us(tc[0]) and (r.get("cupti_us") is None) == (tc[0].get("cupti_us") is None):
            r["ratio"] = best_us(tc[0]) / best_us(r)
        if r["event_us"] and tc[0]["event_us"]:
            r["ratio_event"] = tc[0]["event_us"] / r["event_us"]


class Timer:
    """event and graph timing with an L2 flush (see the module doc)"""

    def __init__(self, torch, iters):
        self.torch = torch
        self.iters = iters
        self.flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")

    def _pre(self, k):
        self.flush.fill_(k & 0x7f)
        self.torch.cuda._sleep(100000)  # ~50 us at 1.98 GHz

    def event(self, fn):
        torch = self.torch
        for _ in range(3):
            fn(0)
        torch.cuda.synchronize()
        ev = []
        for k in range(self.iters):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self._pre(k)
            a.record()
            fn(0)
            b.record()
            ev.append((a, b))
        torch.cuda.synchronize()
        return median([a.elapsed_time(b) * 1e3 for a, b in ev])

    def cupti(self, impls, warm=None):
        """{name: median device busy time (us)} of ITERS flushed calls of every fn in impls (a dict),
        all in one torch.profiler session cut at marker kernels (tools/bridge/sf_kspan.py); None for
        every name when the trace cannot be cut. warm: {name: fn} called after each flush, before the
        call's first marker (untimed: e.g. the same kernel on other buffers, so that its code is in
        L2 again while its data stays cold)"""
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bridge"))
        import sf_kspan
        names = list(impls)
        n_flush = [0]

        def flush():  # a different fill per call, as the event timing's flush
            self.flush.fill_(n_flush[0] & 0x7f)
            if warm is not None:  # the calls come in order: ITERS of names[0], then names[1], ...
                warm[names[n_flush[0] // self.iters]]()
            n_flush[0] += 1

        timer = sf_kspan.KernelSpanTimer(self.torch, flush)
        try:
            got = timer.time_batch(lambda name: impls[name](0), [(name,) for name in names for _ in range(self.iters)])
        except sf_kspan.SpanError:
            return {name: None for name in names}
        spans = [ms for ms, _ in got]
        return {name: median(spans[i * self.iters:(i + 1) * self.iters]) * 1e3 for i, name in enumerate(names)}

    def graph(self, fn, nbuf, calls=10):
        torch = self.torch
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for k in range(calls):
                fn(k % nbuf)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for k in range(calls):
                fn(k % nbuf)
        g.replay()
        torch.cuda.synchronize()
        ev = []
        for k in range(max(10, self.iters // 2)):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self._pre(k)
            a.record()
            g.replay()
            b.record()
            ev.append((a, b))
        torch.cuda.synchronize()
        return median([a.elapsed_time(b) * 1e3 for a, b in ev]) / calls


def silu_eager(torch, x):
    """the problem's torch baseline (problems/common/baselines/torch/act.py)"""
    F = torch.nn.functional
    n = x.shape[-1] // 2
    return (F.silu(x[:, :n].float()) * x[:, n:].float()).to(torch.bfloat16)


def write_outputs(out, rows):
    """OUT/membench.tsv, OUT/membench.jsonl and OUT/membench_short.txt (the short table) from the rows
    so far: rewritten after every size, so a run cut short by a timeout leaves what it measured"""
    with open(os.path.join(out, "membench.tsv"), "w") as f:
        f.write("op\tT\timpl\tstatus\tcupti_us\tevent_us\tgraph_us\tTB/s\tratio_to_torch.compile\tratio_event\n")
        for r in rows:
            f.write("%s\t%d\t%s\t%s\t%s\t%s\t%s\t%.3f\t%s\t%s\n" % (
                r["op"], r["T"], r["impl"], r["status"], fmt_us(r["cupti_us"]), fmt_us(r["event_us"]),
                fmt_us(r["graph_us"]), r["tbps"], "-" if r["ratio"] is None else "%.4f" % r["ratio"],
                "-" if r["ratio_event"] is None else "%.4f" % r["ratio_event"]))
    with open(os.path.join(out, "membench.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    with open(os.path.join(out, "membench_short.txt"), "w") as f:
        f.write("\n".join(short_table(rows)) + "\n")


def call_checked(torch, fn, name, failed):
    """One validation call of implementation `name`: fn(0), synchronized. Returns (True, what fn
    returned), or (False, None) after recording in failed[name] why it could not run (it raised, or a
    launch returned an error code): a baseline that cannot run is reported, not fatal."""
    try:
        r = fn(0)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        failed[name] = "raised %s" % e
        return False, None
    if isinstance(r, int) and r != 0:
        failed[name] = "launch returned %d" % r
        return False, None
    return True, r

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib-dir", required=True, help="folder with silu_mul.so and copy.so")
    ap.add_argument("--sizes", default="1,16,256,1024,16384")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--ops", default="silu,copy")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.iters < 30:
        sys.exit("membench: --iters must be >= 30")
    import numpy as np
    import torch
    os.makedirs(args.out, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    ops = args.ops.split(",")
    timer = Timer(torch, args.iters)
    rows = []
    t_start = time.time()
    log = open(os.path.join(args.out, "membench.log"), "a")

    def say(msg):
        print(msg, file=log, flush=True)

    say("torch %s, %s, %d SMs" % (torch.__version__, torch.cuda.get_device_name(),
                                  torch.cuda.get_device_properties(0).multi_processor_count))
    libs = {}
    if "silu" in ops:
        libs["silu"] = load_lib(os.path.join(args.lib_dir, "silu_mul.so"), "silu")
    if "copy" in ops:
        libs["copy"] = load_lib(os.path.join(args.lib_dir, "copy.so"), "copy")
    stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    for op in ops:
        lib = libs[op]
        nvar = getattr(lib, "mb_%s_count" % op)()
        names = [getattr(lib, "mb_%s_name" % op)(v).decode() for v in range(nvar)]
        def run_size(T):
            nbytes = 86016 * T
            nbuf = 10 if nbytes * 10 <= (4 << 30) else 2
            if op == "silu":
                xs = [torch.randn(T, 2 * I_SILU, device="cuda", dtype=torch.bfloat16) for _ in range(nbuf)]
                outs = [torch.empty(T, I_SILU, device="cuda", dtype=torch.bfloat16) for _ in range(nbuf)]
                comp = torch.compile(lambda x: silu_eager(torch, x), dynamic=False)
                impls = {"v%d %s" % (v, names[v]): (lambda v: lambda k: lib.mb_silu_run(
                    v, xs[k].data_ptr(), outs[k].data_ptr(), T, I_SILU, stream()))(v) for v in range(nvar)}
                impls["torch eager"] = lambda k: silu_eager(torch, xs[k])
                impls["torch.compile"] = lambda k: comp(xs[k])
            else:
                n = COPY_BYTES_PER_T * T // 2
                xs = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(nbuf)]
                outs = [torch.empty(n, device="cuda", dtype=torch.bfloat16) for _ in range(nbuf)]
                comp = torch.compile(lambda x: x.clone(), dynamic=False)
                impls = {"v%d %s" % (v, names[v]): (lambda v: lambda k: lib.mb_copy_run(
                    v, xs[k].data_ptr(), outs[k].data_ptr(), n // 8, stream()))(v) for v in range(nvar)}
                impls["torch copy_"] = lambda k: outs[k].copy_(xs[k])
                impls["torch.compile"] = lambda k: comp(xs[k])
            # validation (3 seeds) before any timing
            failed = {}
            for seed in (1, 2, 3):
                g = torch.Generator(device="cuda").manual_seed(seed * 1000 + T)
                xs[0].copy_(torch.randn(xs[0].shape, device="cuda", generator=g) * (seed))
                if op == "silu":
                    rws = check_rows(T, seed)
                    rws_t = torch.tensor(rws, device="cuda")
                    hsub = np.ascontiguousarray(xs[0].index_select(0, rws_t).view(torch.int16).cpu().numpy().view(np.uint16))
                    ref = np.empty((len(rws), I_SILU), dtype=np.uint16)
                    lib.mb_silu_ref_host(hsub.ctypes.data, ref.ctypes.data, len(rws), I_SILU)
                for name, fn in impls.items():
                    if name in failed:
                        continue
                    outs[0].view(torch.int16).fill_(-1)  # 0xffff: NaN bits
                    ran, r = call_checked(torch, fn, name, failed)
                    if not ran:
                        continue
                    res = r if isinstance(r, torch.Tensor) and name != "torch copy_" else outs[0]
                    if op == "silu":
                        hb = res.index_select(0, rws_t).view(torch.int16).cpu().numpy().view(np.uint16)
                        bad = mismatches(np, hb, ref)
                    else:  # the reference of a copy is its input, bit for bit (compared where it lives)
                        bad = int((res.view(torch.int16) != xs[0].view(torch.int16)).sum().item())
                    if bad:
                        failed[name] = "seed %d: %d mismatches" % (seed, bad)
            for name, why in failed.items():
                say("FAIL %s %s T=%d: %s" % (op, name, T, why))
            good = {name: fn for name, fn in impls.items() if name not in failed}
            try:
                cupti = timer.cupti(good)
                if good and all(v is None for v in cupti.values()):
                    say("cupti timing of %s T=%d: the trace could not be cut at the markers" % (op, T))
            except Exception as e:
                say("cupti timing of %s T=%d failed: %s" % (op, T, e))
                cupti = {}
            for name, fn in impls.items():
                if name in failed:
                    rows.append(dict(op=op, T=T, impl=name, cupti_us=None, event_us=None, graph_us=None, tbps=0.0,
                                     ratio=None, ratio_event=None, status="FAIL"))
                    continue
                ev_us = timer.event(fn)
                try:
                    gr_us = timer.graph(fn, nbuf)
                except Exception as e:
                    say("graph of %s %s T=%d failed: %s" % (op, name, T, e))
                    gr_us = None
                r = dict(op=op, T=T, impl=name, cupti_us=cupti.get(name), event_us=ev_us, graph_us=gr_us, ratio=None,
                         ratio_event=None, status="PASSED")
                r["tbps"] = nbytes / best_us(r) * 1e-6
                rows.append(r)
            set_ratios(rows, op, T)
            say("%s T=%d done (%.0f s)" % (op, T, time.time() - t_start))

        for T in sizes:
            try:
                run_size(T)
            except Exception:  # one size failing (memory, a compile) leaves the others' rows
                import traceback
                say("ERROR %s T=%d:\n%s" % (op, T, traceback.format_exc()))
                rows.append(dict(op=op, T=T, impl="(error: see membench.log)", cupti_us=None, event_us=None,
                                 graph_us=None, tbps=0.0, ratio=None, ratio_event=None, status="FAIL"))
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            write_outputs(args.out, rows)

    write_outputs(args.out, rows)
    nfail = sum(r["status"] != "PASSED" for r in rows)
    print("\n".join(short_table(rows)))
    print("membench: %d rows, %d failed validation (%.0f s)" % (len(rows), nfail, time.time() - t_start))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
