#!/usr/bin/env python3
"""check_safetensors.py - the Python side of the safetensors interop check.

    check_safetensors.py check PATH PRODUCER   read PATH (written by solforge's sf_st_write) with the
                                               `safetensors` package and check every tensor value
    check_safetensors.py write PATH            write the same tensor set with the `safetensors`
                                               package, for tests/interop/st_interop.c to check

The tensor set mirrors tests/interop/st_interop.c: one 4x4 tensor per dtype, named by its solforge
definition name, element i holding value(dtype, i); a 0-d float32 "scalar" (2.5); an empty int32
"empty" of shape [0, 3]; metadata {"producer": ..., "note": NOTE}. float8 and float4 are decoded
here from their bit fields, independently of solforge's numeric.h. Exit status 0 on success.
"""
import json
import math
import sys

import numpy as np
import safetensors
from safetensors import TensorSpec, deserialize, safe_open, serialize_file

VALS = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -1, -1.5, -2, -3, -4, -6, -0.0]
NOTE = "h\u00e9llo \"quoted\" \\ tab\t"

# solforge name -> (safetensors dtype string, TensorSpec dtype name, bits)
DTYPES = {
    "float64": ("F64", "float64", 64),
    "float32": ("F32", "float32", 32),
    "float16": ("F16", "float16", 16),
    "bfloat16": ("BF16", "bfloat16", 16),
    "float8_e4m3fn": ("F8_E4M3", "float8_e4m3fn", 8),
    "float8_e5m2": ("F8_E5M2", "float8_e5m2", 8),
    "float4_e2m1": ("F4", "float4_e2m1fn_x2", 4),
    "int64": ("I64", "int64", 64),
    "int32": ("I32", "int32", 32),
    "int16": ("I16", "int16", 16),
    "int8": ("I8", "int8", 8),
    "uint8": ("U8", "uint8", 8),
    "bool": ("BOOL", "bool", 8),
}
NUMPY = {"float64": np.float64, "float32": np.float32, "float16": np.float16, "int64": np.int64,
         "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}
# (exponent bits, mantissa bits, bias, kind): kind "ieee" has inf/NaN, "fn" only S.1111.111 NaN,
# "none" neither
MINI = {"float8_e4m3fn": (4, 3, 7, "fn"), "float8_e5m2": (5, 2, 15, "ieee"), "float4_e2m1": (2, 1, 1, "none")}


def value(name, i):
    if name.startswith("float") or name == "bfloat16":
        return VALS[i]
    if name == "uint8":
        return i * 13 + 7
    if name == "bool":
        return i % 3 == 0
    return i * 7 - 50


def decode_mini(code, ebits, mbits, bias, kind):
    sign = -1.0 if (code >> (ebits + mbits)) & 1 else 1.0
    e = (code >> mbits) & ((1 << ebits) - 1)
    m = code & ((1 << mbits) - 1)
    if kind == "ieee" and e == (1 << ebits) - 1:
        return sign * math.inf if m == 0 else math.nan
    if kind == "fn" and e == (1 << ebits) - 1 and m == (1 << mbits) - 1:
        return math.nan
    if e == 0:
        return sign * math.ldexp(m, 1 - bias - mbits)
    return sign * math.ldexp((1 << mbits) + m, e - bias - mbits)


def encode_mini(v, ebits, mbits, bias, kind):
    """The code of an exactly representable value (sign of zero kept)."""
    for code in range(1 << (1 + ebits + mbits)):
        d = decode_mini(code, ebits, mbits, bias, kind)
        if d == v and math.copysign(1, d) == math.copysign(1, v):
            return code
    raise ValueError(f"{v} not representable")


def decode(name, raw):
    """List of 16 Python values from the raw bytes of a solforge-named tensor."""
    if name in NUMPY:
        return [x.item() for x in np.frombuffer(raw, dtype=NUMPY[name])]
    if name == "bfloat16":
        u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return [float(x) for x in u.view(np.float32)]
    ebits, mbits, bias, kind = MINI[name]
    if name == "float4_e2m1":
        codes = []
        for b in raw:  # element 2k in the low nibble of byte k
            codes += [b & 0xF, b >> 4]
    else:
        codes = list(raw)
    return [decode_mini(c, ebits, mbits, bias, kind) for c in codes]


def same(a, b):
    if isinstance(b, bool) or isinstance(a, bool):
        return bool(a) == bool(b)
    if isinstance(a, float) or isinstance(b, float):
        return float(a) == float(b) and math.copysign(1, float(a)) == math.copysign(1, float(b))
    return a == b


def check(path, producer):
    with open(path, "rb") as f:
        blob = f.read()
    # deserialize runs the reference validation: header length, offsets tiling the data, sizes
    tensors = dict(deserialize(blob))
    expected = set(DTYPES) | {"scalar", "empty"}
    bad = []
    if set(tensors) != expected:
        bad.append(f"tensor names {sorted(tensors)} != {sorted(expected)}")
    for name, (st, _, bits) in DTYPES.items():
        t = tensors.get(name)
        if t is None:
            continue
        if t["dtype"] != st or list(t["shape"]) != [4, 4]:
            bad.append(f"{name}: dtype {t['dtype']} shape {t['shape']}")
            continue
        got = decode(name, bytes(t["data"]))
        want = [value(name, i) for i in range(16)]
        for i, (g, w) in enumerate(zip(got, want)):
            if not same(g, w):
                bad.append(f"{name}[{i}] = {g}, expected {w}")
    s = tensors.get("scalar")
    if not s or s["dtype"] != "F32" or list(s["shape"]) != [] or \
            np.frombuffer(bytes(s["data"]), dtype="<f4")[0] != 2.5:
        bad.append("scalar wrong")
    e = tensors.get("empty")
    if not e or e["dtype"] != "I32" or list(e["shape"]) != [0, 3] or len(bytes(e["data"])) != 0:
        bad.append("empty wrong")
    # the numpy loader too, for the dtypes numpy has, and the metadata
    with safe_open(path, framework="numpy") as f:
        md = f.metadata() or {}
        for name in NUMPY:
            arr = f.get_tensor(name)
            if arr.dtype != NUMPY[name] or arr.shape != (4, 4):
                bad.append(f"numpy {name}: {arr.dtype} {arr.shape}")
            elif not all(same(a.item(), value(name, i)) for i, a in enumerate(arr.reshape(-1))):
                bad.append(f"numpy {name}: values differ")
    if md != {"producer": producer, "note": NOTE}:
        bad.append(f"metadata {md}")
    # alignment: every tensor starts at a multiple of its element size in the file
    hlen = int.from_bytes(blob[:8], "little")
    if hlen % 8:
        bad.append(f"header length {hlen} not a multiple of 8")
    header = json.loads(blob[8:8 + hlen])
    for name, (_, _, bits) in DTYPES.items():
        ent = header.get(name)
        if ent is not None and bits >= 8 and ent["data_offsets"][0] % (bits // 8):
            bad.append(f"{name} at data offset {ent['data_offsets'][0]}: not aligned to {bits // 8}")
    for msg in bad:
        print("check_safetensors:", msg, file=sys.stderr)
    return 1 if bad else 0


def write(path):
    keep = []
    specs = {}
    for name, (_, spec_dtype, _) in DTYPES.items():
        vals = [value(name, i) for i in range(16)]
        if name in NUMPY:
            arr = np.array(vals, dtype=NUMPY[name]).reshape(4, 4)
            shape = [4, 4]
        elif name == "bfloat16":
            f = np.array(vals, dtype=np.float32)
            arr = (f.view(np.uint32) >> 16).astype("<u2")  # exact: every value fits bfloat16
            shape = [4, 4]
        elif name == "float4_e2m1":
            codes = [encode_mini(v, *MINI[name]) for v in vals]
            arr = np.array([codes[2 * k] | (codes[2 * k + 1] << 4) for k in range(8)], dtype=np.uint8)
            shape = [4, 2]  # torch float4_e2m1fn_x2 storage shape: TensorSpec doubles the last dim
        else:
            arr = np.array([encode_mini(v, *MINI[name]) for v in vals], dtype=np.uint8)
            shape = [4, 4]
        arr = np.ascontiguousarray(arr)
        keep.append(arr)
        specs[name] = TensorSpec(dtype=spec_dtype, shape=shape, data_ptr=arr.ctypes.data, data_len=arr.nbytes)
    sc = np.array(2.5, dtype=np.float32)
    em = np.zeros((0, 3), dtype=np.int32)
    keep += [sc, em]
    specs["scalar"] = TensorSpec(dtype="float32", shape=[], data_ptr=sc.ctypes.data, data_len=4)
    specs["empty"] = TensorSpec(dtype="int32", shape=[0, 3], data_ptr=em.ctypes.data, data_len=0)
    serialize_file(specs, path, metadata={"producer": "python", "note": NOTE})
    return 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        return check(sys.argv[2], sys.argv[3])
    if len(sys.argv) == 3 and sys.argv[1] == "write":
        return write(sys.argv[2])
    print("usage: check_safetensors.py check PATH PRODUCER | write PATH", file=sys.stderr)
    return 2


if __name__ == "__main__":
    print(f"check_safetensors: safetensors {safetensors.__version__}, numpy {np.__version__}", file=sys.stderr)
    sys.exit(main())
