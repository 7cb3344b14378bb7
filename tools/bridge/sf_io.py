"""sf_io.py - the PyTorch bridge's I/O layer: safetensors files and low-precision dtypes, numpy only.

The bridge (solforge_bridge.py) exchanges tensors with the C evaluator through safetensors files
(docs/bridge.md). This module reads and writes them without torch, and converts the dtypes numpy
lacks (bfloat16, float8 e4m3fn / e5m2, float4 e2m1 packed two per byte) to and from float32 with
the same rounding as include/solforge/numeric.h (round to nearest even; fp8/fp4 saturate to the
largest finite value, as the C side does). CI tests this layer with numpy alone.
"""
import json
import mmap
import os
import struct

import numpy as np

# safetensors dtype string -> (definition dtype name, numpy storage dtype, bits per element)
ST_DTYPES = {
    "F64": ("float64", np.float64, 64),
    "F32": ("float32", np.float32, 32),
    "F16": ("float16", np.float16, 16),
    "BF16": ("bfloat16", np.uint16, 16),
    "F8_E4M3": ("float8_e4m3fn", np.uint8, 8),
    "F8_E5M2": ("float8_e5m2", np.uint8, 8),
    "F4": ("float4_e2m1", np.uint8, 4),
    "I64": ("int64", np.int64, 64),
    "I32": ("int32", np.int32, 32),
    "I16": ("int16", np.int16, 16),
    "I8": ("int8", np.int8, 8),
    "U8": ("uint8", np.uint8, 8),
    "BOOL": ("bool", np.uint8, 8),
}
DEF_TO_ST = {v[0]: k for k, v in ST_DTYPES.items()}
DEF_TO_ST["float4_e2m1fn_x2"] = "F4"
FLOAT_DTYPES = {"float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1"}


class IOError_(Exception):
    """A malformed file or a tensor that does not match what the job says."""


def nbytes_of(st_dtype, shape):
    """Bytes of a tensor of st_dtype and shape (float4: two per byte, rounded up)."""
    n = 1
    for d in shape:
        n *= int(d)
    bits = ST_DTYPES[st_dtype][2]
    return (n * bits + 7) // 8


def read_safetensors(path):
    """Returns {name: (st_dtype, shape tuple, raw uint8 array)}; raises IOError_ on a malformed file.
    The raw arrays are read-only views of a read-only memory map of the file, not a copy of it: the inputs
    live in /dev/shm (host memory), and a read() of a multi-GB KV cache doubled what each bridge held
    (session 18: four decode evals of 3-5 GB inputs side by side had their bridges killed by signal 9)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            raise IOError_(f"{path}: shorter than a safetensors header")
        blob = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    (hlen,) = struct.unpack("<Q", blob[:8])
    if hlen > len(blob) - 8 or hlen > 100_000_000:
        raise IOError_(f"{path}: header length {hlen} beyond the file")
    try:
        header = json.loads(blob[8:8 + hlen].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise IOError_(f"{path}: header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise IOError_(f"{path}: header is not an object")
    data = np.frombuffer(blob, dtype=np.uint8, offset=8 + hlen)
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        try:
            dt, shape, (a, b) = t["dtype"], tuple(int(x) for x in t["shape"]), t["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise IOError_(f"{path}: tensor '{name}': needs dtype, shape and data_offsets") from None
        if dt not in ST_DTYPES:
            raise IOError_(f"{path}: tensor '{name}': unknown dtype '{dt}'")
        if any(d < 0 for d in shape):
            raise IOError_(f"{path}: tensor '{name}': negative dimension")
        if not (0 <= a <= b <= len(data)) or b - a != nbytes_of(dt, shape):
            raise IOError_(f"{path}: tensor '{name}': data_offsets [{a}, {b}) do not fit its shape or the file")
        out[name] = (dt, shape, data[a:b])
    return out


def write_safetensors(path, tensors):
    """Writes [(name, st_dtype, shape, raw bytes-like)] atomically (a temporary file, then rename)."""
    header, off, blobs = {}, 0, []
    for name, dt, shape, raw in tensors:
        raw = np.ascontiguousarray(np.frombuffer(bytes(raw), dtype=np.uint8))
        want = nbytes_of(dt, shape)
        if raw.size != want:
            raise IOError_(f"tensor '{name}': {raw.size} bytes for {dt} {list(shape)} (expected {want})")
        header[name] = {"dtype": dt, "shape": [int(d) for d in shape], "data_offsets": [off, off + want]}
        off += want
        blobs.append(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b.tobytes())
    os.replace(tmp, path)


# --- low-precision float codecs --------------------------------------------------------------------

def _minifloat_table(ebits, mbits, bias, finite_only_nan):
    """Float32 values of every code of a small float format (index = code)."""
    n = 1 << (1 + ebits + mbits)
    vals = np.zeros(n, dtype=np.float64)
    for code in range(n):
        s = -1.0 if code >> (ebits + mbits) else 1.0
        e = (code >> mbits) & ((1 << ebits) - 1)
        m = code & ((1 << mbits) - 1)
        if e == 0:
            v = m / (1 << mbits) * 2.0 ** (1 - bias)
        else:
            v = (1 + m / (1 << mbits)) * 2.0 ** (e - bias)
        if finite_only_nan == "e4m3" and e == (1 << ebits) - 1 and m == (1 << mbits) - 1:
            v = np.nan
        if finite_only_nan == "e5m2" and e == (1 << ebits) - 1:
            v = np.inf if m == 0 else np.nan
        vals[code] = s * v
    return vals


E4M3 = _minifloat_table(4, 3, 7, "e4m3")
E5M2 = _minifloat_table(5, 2, 15, "e5m2")
E2M1 = _minifloat_table(2, 1, 1, None)


def _encode_table(x, table):
    """Nearest finite code of `table` for each value (ties to the even code), saturating; NaN -> a NaN code
    when the format has one, else the largest value."""
    x = np.asarray(x, dtype=np.float64).ravel()
    finite = np.isfinite(table)
    pos = np.where(finite & (np.signbit(table) == 0))[0]
    pv = table[pos]
    order = np.argsort(pv, kind="stable")
    pos, pv = pos[order], pv[order]
    mag = np.minimum(np.abs(np.nan_to_num(x, nan=0.0, posinf=np.inf, neginf=np.inf)), pv[-1])
    i = np.clip(np.searchsorted(pv, mag), 1, len(pv) - 1)
    lo, hi = pv[i - 1], pv[i]
    pick_hi = (mag - lo > hi - mag) | ((mag - lo == hi - mag) & (pos[i] % 2 == 0))
    idx = np.where(mag <= pv[0], 0, np.where(pick_hi, i, i - 1))
    codes = pos[idx].astype(np.uint8)
    sign_bit = np.uint8(1 << (int(np.log2(len(table))) - 1))
    codes = np.where(np.signbit(x), codes | sign_bit, codes).astype(np.uint8)
    nan_codes = np.where(np.isnan(table))[0]
    if len(nan_codes):
        codes = np.where(np.isnan(x), np.uint8(nan_codes[0] & (sign_bit - 1)), codes).astype(np.uint8)
    return codes


def bf16_to_f32(u16):
    return (np.asarray(u16, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x):
    """Round to nearest even; NaN stays NaN."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(nan, np.uint16(0x7FC0), r).astype(np.uint16)


def decode(st_dtype, shape, raw):
    """A float32 (float formats), or integer, numpy array of the tensor's values."""
    raw = np.asarray(raw, dtype=np.uint8)
    n = 1
    for d in shape:
        n *= int(d)
    if st_dtype == "BF16":
        return bf16_to_f32(raw.view(np.uint16)).reshape(shape)
    if st_dtype == "F8_E4M3":
        return E4M3[raw].astype(np.float32).reshape(shape)
    if st_dtype == "F8_E5M2":
        return E5M2[raw].astype(np.float32).reshape(shape)
    if st_dtype == "F4":
        codes = np.empty(raw.size * 2, dtype=np.uint8)
        codes[0::2] = raw & 0xF
        codes[1::2] = raw >> 4
        return E2M1[codes[:n]].astype(np.float32).reshape(shape)
    if st_dtype == "BOOL":
        return (raw != 0).reshape(shape)
    return raw.view(ST_DTYPES[st_dtype][1]).reshape(shape)


def encode(st_dtype, values):
    """Raw bytes (uint8 array) of `values` stored as st_dtype, rounded as numeric.h rounds."""
    v = np.asarray(values)
    if st_dtype == "BF16":
        return f32_to_bf16(v.astype(np.float32)).view(np.uint8).ravel()
    if st_dtype == "F8_E4M3":
        return _encode_table(v, E4M3)
    if st_dtype == "F8_E5M2":
        return _encode_table(v, E5M2)
    if st_dtype == "F4":
        codes = _encode_table(v, E2M1)
        if codes.size % 2:
            codes = np.concatenate([codes, np.zeros(1, np.uint8)])
        return (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8)
    if st_dtype == "BOOL":
        return (v.ravel() != 0).astype(np.uint8)
    return np.ascontiguousarray(v.astype(ST_DTYPES[st_dtype][1])).view(np.uint8).ravel()
