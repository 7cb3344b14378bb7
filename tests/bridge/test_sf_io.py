#!/usr/bin/env python3
"""test_sf_io.py - the PyTorch bridge's I/O layer (tools/bridge/sf_io.py) with numpy alone.

Checks the low-precision codecs against values worked out by hand from the formats' definitions
(not from the code under test), round trips of every code, round-to-nearest-even ties, saturation,
safetensors round trips of random tensors with several seeds, and that malformed files are refused.
Prints `ok NAME` / `FAIL NAME: why` and exits non-zero when anything failed.
"""
import os
import struct
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bridge"))
import sf_io  # noqa: E402

failed = 0


def check(name, cond, why=""):
    global failed
    if cond:
        print(f"ok {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {why}")


# bf16: hand-computed encodings (sign | 8-bit exponent | 7-bit mantissa)
check("bf16_one", sf_io.f32_to_bf16(np.float32(1.0)) == 0x3F80)
check("bf16_minus_two", sf_io.f32_to_bf16(np.float32(-2.0)) == 0xC000)
# 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (mantissa 0) -> 1.0
check("bf16_tie_even_down", sf_io.f32_to_bf16(np.float32(1 + 2 ** -8)) == 0x3F80)
# 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even) -> 1 + 2^-6 = 0x3F82
check("bf16_tie_even_up", sf_io.f32_to_bf16(np.float32(1 + 3 * 2 ** -8)) == 0x3F82)
check("bf16_above_tie", sf_io.f32_to_bf16(np.float32(1 + 2 ** -8 + 2 ** -12)) == 0x3F81)
check("bf16_nan", np.isnan(sf_io.bf16_to_f32(sf_io.f32_to_bf16(np.float32(np.nan)))))

# e4m3fn: max 448 (0x7E), 0x7F is NaN, smallest subnormal 2^-9 (0x01)
check("e4m3_max", sf_io.E4M3[0x7E] == 448.0)
check("e4m3_nan", np.isnan(sf_io.E4M3[0x7F]))
check("e4m3_subnormal", sf_io.E4M3[0x01] == 2.0 ** -9)
check("e4m3_one", sf_io.E4M3[0x38] == 1.0)
check("e4m3_saturate", sf_io.encode("F8_E4M3", np.array([1000.0, -1000.0])).tolist() == [0x7E, 0xFE])
# 1.0625 lies halfway between 1.0 (0x38, even) and 1.125 (0x39): ties to even -> 0x38
check("e4m3_tie_even", sf_io.encode("F8_E4M3", np.array([1.0625])).tolist() == [0x38])
# e5m2: max 57344 (0x7B), 0x7C is inf
check("e5m2_max", sf_io.E5M2[0x7B] == 57344.0)
check("e5m2_inf", np.isinf(sf_io.E5M2[0x7C]))
# e2m1: the eight magnitudes
check("e2m1_values", sf_io.E2M1[:8].tolist() == [0, 0.5, 1, 1.5, 2, 3, 4, 6])
check("e2m1_pack", sf_io.encode("F4", np.array([1.0, -6.0, 0.5])).tolist() == [0x2 | (0xF << 4), 0x1])
check("e2m1_unpack", sf_io.decode("F4", (3,), np.array([0xF2, 0x01], np.uint8)).tolist() == [1.0, -6.0, 0.5])

# every finite code round-trips
for st, table in (("F8_E4M3", sf_io.E4M3), ("F8_E5M2", sf_io.E5M2)):
    codes = np.array([c for c in range(256) if np.isfinite(table[c])], np.uint8)
    back = sf_io.encode(st, sf_io.decode(st, codes.shape, codes))
    neg_zero = codes == 0x80
    check(f"{st}_roundtrip", np.array_equal(back[~neg_zero], codes[~neg_zero]))

# random safetensors round trips, several seeds and dtypes
with tempfile.TemporaryDirectory() as d:
    for seed in (1, 7, 2026):
        rng = np.random.default_rng(seed)
        shape = (int(rng.integers(1, 9)), int(rng.integers(1, 17)) * 2)
        vals = rng.normal(0, 3, size=shape).astype(np.float32)
        ints = rng.integers(-1000, 1000, size=shape).astype(np.int32)
        ts = [("a", "BF16", shape, sf_io.encode("BF16", vals)), ("b", "F32", shape, sf_io.encode("F32", vals)),
              ("c", "I32", shape, sf_io.encode("I32", ints)), ("d", "F4", shape, sf_io.encode("F4", vals)),
              ("e", "F8_E4M3", shape, sf_io.encode("F8_E4M3", vals))]
        p = os.path.join(d, f"t{seed}.safetensors")
        sf_io.write_safetensors(p, ts)
        got = sf_io.read_safetensors(p)
        ok = set(got) == {"a", "b", "c", "d", "e"}
        ok &= np.array_equal(sf_io.decode(*got["b"]), vals)
        ok &= np.array_equal(sf_io.decode(*got["c"]), ints)
        bf = sf_io.decode(*got["a"])
        ok &= bool(np.all(np.abs(bf - vals) <= np.abs(vals) * 2.0 ** -8))
        f4 = sf_io.decode(*got["d"])
        ok &= bool(np.all(np.isin(np.abs(f4), sf_io.E2M1[:8])))
        e4 = sf_io.decode(*got["e"])
        ok &= bool(np.all(np.abs(e4 - vals) <= np.abs(vals) * 2.0 ** -4 + 2.0 ** -10))
        check(f"safetensors_roundtrip_seed{seed}", ok)

    def refused(name, blob):
        p = os.path.join(d, name)
        with open(p, "wb") as f:
            f.write(blob)
        try:
            sf_io.read_safetensors(p)
        except sf_io.IOError_:
            return True
        return False

    hdr = b'{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}'
    check("refuse_short", refused("short", b"\x01\x02"))
    check("refuse_header_beyond", refused("beyond", struct.pack("<Q", 999) + hdr))
    check("refuse_not_json", refused("notjson", struct.pack("<Q", 4) + b"{{{{"))
    check("refuse_data_short", refused("datashort", struct.pack("<Q", len(hdr)) + hdr + b"\0" * 8))
    bad_dt = hdr.replace(b"F32", b"Q99")
    check("refuse_dtype", refused("dtype", struct.pack("<Q", len(bad_dt)) + bad_dt + b"\0" * 16))
    check("accept_good", not refused("good", struct.pack("<Q", len(hdr)) + hdr + b"\0" * 16))

print(f"sf_io: {failed} failed")
sys.exit(1 if failed else 0)
