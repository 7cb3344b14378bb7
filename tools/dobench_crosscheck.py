#!/usr/bin/env python3
"""dobench_crosscheck.py - solforge's timing of a solution against triton.testing.do_bench timing the
very same call (the same shared object's `run` through the C ABI, same shapes), L2 flushed by both.

Usage: dobench_crosscheck.py SOLFORGE PROBLEM SOLUTION_SO WORKLOAD_UUID SHAPES_JSON
Prints one JSON line: solforge median (ms, from `solforge eval --json`), do_bench median (ms), ratio.
SHAPES_JSON: {"inputs": [[shape, dtype], ...], "outputs": [[shape, dtype], ...]}.
"""
import ctypes
import json
import subprocess
import sys

import torch
import triton.testing

DT = {"bfloat16": (torch.bfloat16, 4, 16), "float32": (torch.float32, 2, 32)}


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class Call(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32), ("n_inputs", ctypes.c_int32), ("inputs", ctypes.POINTER(Tensor)),
                ("scalars", ctypes.POINTER(ctypes.c_double)), ("n_outputs", ctypes.c_int32),
                ("outputs", ctypes.POINTER(Tensor)), ("stream", ctypes.c_void_p)]


def describe(tensors):
    arr = (Tensor * len(tensors))()
    keep = []
    for i, t in enumerate(tensors):
        shape = (ctypes.c_int64 * t.dim())(*t.shape)
        keep.append(shape)
        _, code, bits = DT[str(t.dtype).replace("torch.", "")]
        arr[i] = Tensor(t.data_ptr(), 2, 0, t.dim(), code, bits, 1, shape, None, 0)
    return arr, keep


def main():
    solforge, problem, so, uuid, shapes = sys.argv[1:6]
    src = so
    out = subprocess.run([solforge, "eval", problem, src, "--backend", "cuda", "--only", uuid, "--json",
                          "--no-baseline", "--target-ci", "0.005", "--budget-ms", "5000"],
                         capture_output=True, text=True)
    lines = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    line = [l for l in lines if l["workload"]["uuid"] == uuid]
    if not line or line[0]["evaluation"]["status"] != "PASSED":
        print(json.dumps({"error": "solforge eval failed", "stdout": out.stdout[-2000:], "stderr": out.stderr[-2000:]}))
        return 1
    sf_ms = line[0]["evaluation"]["performance"]["latency_ms"]
    # the same shared object, called the same way
    lib_path = sys.argv[6]
    lib = ctypes.CDLL(lib_path)
    spec = json.loads(shapes)
    ins = [torch.randn(s, device="cuda").to(getattr(torch, d)) for s, d in spec["inputs"]]
    outs = [torch.empty(s, device="cuda", dtype=getattr(torch, d)) for s, d in spec["outputs"]]
    ia, k1 = describe(ins)
    oa, k2 = describe(outs)
    scal = (ctypes.c_double * len(ins))(*([float("nan")] * len(ins)))
    stream = torch.cuda.current_stream().cuda_stream
    call = Call(1, len(ins), ia, scal, len(outs), oa, stream)
    run = lib.run
    run.argtypes = [ctypes.POINTER(Call)]

    def fn():
        if run(ctypes.byref(call)) != 0:
            raise RuntimeError("run failed")

    fn()
    torch.cuda.synchronize()
    db_ms = triton.testing.do_bench(fn, warmup=100, rep=2000, return_mode="median")
    print(json.dumps({"problem": problem, "workload": uuid, "solforge_ms": sf_ms, "do_bench_ms": db_ms,
                      "ratio": sf_ms / db_ms, "method": line[0]["evaluation"]["solforge"].get("timing_method")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
