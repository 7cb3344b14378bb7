#!/usr/bin/env python3
"""gemm_check.py - dev harness for the bf16 GEMM solutions (problems/common/kernels/gemm_bf16_sm90.cu).

Loads compiled solution libraries (.so files exporting the solforge ABI `run(const sf_call *)`) with
ctypes, calls them on torch CUDA tensors, checks every output against an fp32 torch reference (TF32
off) with the problems' tolerance (|d| <= 1e-3 + 1e-2 |ref|), and times them with CUDA events
(L2 flushed before every repetition, median) beside a reference library (the cuBLASLt baseline .so).

    gemm_check.py --ref NAME=PATH.so --sol NAME=PATH.so[@MAXM|@MINM-[MAXM]] [--sol ...] [--shapes N:K,...]
                  [--ms 1,3,...] [--reps N] [--no-time [--ref-once]]

A solution given as NAME=PATH.so@MAXM is checked and timed only for M <= MAXM (candidate variants that
differ from the default only at small M); NAME=PATH.so@MINM- only for M >= MINM, @MINM-MAXM for both.

The output C is pre-filled with NaN (an output that is not written fails) and followed by a canary
region (a write past the end fails). Inputs are random normal (A std 1, B std 1/sqrt(K)) with a fresh
seed per shape and M. One line per (shape, M, solution) is printed and flushed as soon as it is known,
so that a hang (killed by the caller's timeout) still shows how far it got. Exit status 1 when any
check failed.
"""
import argparse
import ctypes
import math
import random
import sys

import torch


class Dev(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", Dev), ("ndim", ctypes.c_int32), ("dtype", DType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class Call(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32), ("n_inputs", ctypes.c_int32), ("inputs", ctypes.POINTER(Tensor)),
                ("scalars", ctypes.POINTER(ctypes.c_double)), ("n_outputs", ctypes.c_int32),
                ("outputs", ctypes.POINTER(Tensor)), ("stream", ctypes.c_void_p)]


def make_tensor(t, keep):
    """sf_tensor describing the 2D bf16 CUDA tensor t; keep holds the shape array alive."""
    shape = (ctypes.c_int64 * 2)(*t.shape)
    keep.append(shape)
    return Tensor(ctypes.c_void_p(t.data_ptr()), Dev(2, t.device.index or 0), 2, DType(4, 16, 1), shape, None, 0)


class Lib:
    """One solution library and a prepared call for (A, B, C)."""

    def __init__(self, name, path):
        self.name = name
        self.min_m = self.max_m = None
        if "@" in path:
            path, m = path.rsplit("@", 1)
            if "-" in m:
                lo, hi = m.split("-", 1)
                self.min_m = int(lo)
                self.max_m = int(hi) if hi else None
            else:
                self.max_m = int(m)
        self.lib = ctypes.CDLL(path)
        self.lib.run.argtypes = [ctypes.POINTER(Call)]
        self.lib.run.restype = ctypes.c_int

    def call(self, A, B, C):
        keep = []
        ins = (Tensor * 2)(make_tensor(A, keep), make_tensor(B, keep))
        outs = (Tensor * 1)(make_tensor(C, keep))
        sc = (ctypes.c_double * 2)(math.nan, math.nan)
        stream = torch.cuda.current_stream().cuda_stream
        c = Call(1, 2, ctypes.cast(ins, ctypes.POINTER(Tensor)), ctypes.cast(sc, ctypes.POINTER(ctypes.c_double)), 1,
                 ctypes.cast(outs, ctypes.POINTER(Tensor)), ctypes.c_void_p(stream))
        keep += [ins, outs, sc]
        rc = self.lib.run(ctypes.byref(c))
        return rc


def time_ms(fn, flush, reps):
    """Median time of fn() in ms over reps repetitions, L2 flushed before each (CUDA events)."""
    ts = []
    for _ in range(reps):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", required=True)
    ap.add_argument("--sol", action="append", required=True)
    ap.add_argument("--shapes", default="6144:4096,4096:4096,28672:4096,4096:14336")
    ap.add_argument("--ms", default="1,2,3,4,8,16,32,64,77,128,256,512,1000,1024,2048,4096,5000,8192")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--no-time", action="store_true")
    ap.add_argument("--ref-once", action="store_true",
                    help="with --no-time: still call the reference library once per case (for a profiler)")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    ref = Lib(*a.ref.split("=", 1))
    sols = [Lib(*s.split("=", 1)) for s in a.sol]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    shapes = [tuple(int(v) for v in s.split(":")) for s in a.shapes.split(",")]
    ms = [int(v) for v in a.ms.split(",")]
    failed = 0
    canary = 4096
    seeder = random.SystemRandom()
    print("shape M sol status max_abs_err us ref_us speedup tflops weight_TBps", flush=True)
    for (N, K) in shapes:
        gen = torch.Generator(device="cuda")
        for M in ms:
            gen.manual_seed(seeder.randrange(1 << 62))
            A = torch.randn(M, K, device="cuda", generator=gen).to(torch.bfloat16)
            B = (torch.randn(N, K, device="cuda", generator=gen) / math.sqrt(K)).to(torch.bfloat16)
            want = (A.float() @ B.float().t())
            ref_us = float("nan")
            if a.no_time and a.ref_once:
                Cr = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
                ref.call(A, B, Cr)
            if not a.no_time:
                Cr = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
                ref.call(A, B, Cr)
                ref_us = 1000 * time_ms(lambda: ref.call(A, B, Cr), flush, a.reps)
            for s in sols:
                if (s.max_m is not None and M > s.max_m) or (s.min_m is not None and M < s.min_m):
                    continue
                buf = torch.full((M * N + canary,), float("nan"), dtype=torch.bfloat16, device="cuda")
                buf[M * N:] = 7.0
                C = buf[:M * N].view(M, N)
                rc = s.call(A, B, C)
                try:
                    torch.cuda.synchronize()
                except RuntimeError as e:  # a fault kills the context: nothing after it can run
                    print("%dx%d %d %s FAIL(fault) %s" % (N, K, M, s.name, str(e).splitlines()[0]), flush=True)
                    print("gemm_check: aborted after a device fault", flush=True)
                    return 1
                got = C.float()
                err = (got - want).abs()
                ok = rc == 0 and bool(torch.isfinite(got).all()) and bool((err <= 1e-3 + 1e-2 * want.abs()).all())
                ok = ok and bool((buf[M * N:] == 7.0).all())
                maxerr = float(err.nan_to_num(float("inf")).max())
                us = float("nan")
                if ok and not a.no_time:
                    us = 1000 * time_ms(lambda: s.call(A, B, C), flush, a.reps)
                failed += 0 if ok else 1
                detail = None
                if not ok:  # where it went wrong, to tell an indexing slip from a race or a hang
                    bad = ~(err <= 1e-3 + 1e-2 * want.abs())
                    idx = bad.nonzero()
                    first = tuple(idx[0].tolist()) if idx.numel() else None
                    detail = ("  detail: rc %d, bad %d of %d, first bad (m, n) %s, canary %s" %
                              (rc, int(bad.sum()), M * N, first, bool((buf[M * N:] == 7.0).all())))
                tf = 2.0 * M * N * K / (us * 1e-6) / 1e12 if us == us else float("nan")
                bw = N * K * 2 / (us * 1e-6) / 1e12 if us == us else float("nan")
                print("%dx%d %d %s %s %.2e %.1f %.1f %.3f %.0f %.2f" %
                      (N, K, M, s.name, "ok" if ok else "FAIL(rc=%d)" % rc, maxerr, us, ref_us,
                       ref_us / us if us == us else float("nan"), tf, bw), flush=True)
                if detail:
                    print(detail, flush=True)
    print("gemm_check: %d failed" % failed, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
