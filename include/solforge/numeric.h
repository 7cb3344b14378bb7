/*
 * numeric.h - dtypes and bit-exact conversions, shared by host and device code (SF_HD).
 *
 * Used by the evaluator core (host), the runners (host and CUDA device), and oracles. Everything here
 * is header-only and static inline so one source serves gcc and nvcc.
 *
 * Rounding: every narrowing conversion rounds to nearest, ties to even, from the exact double value
 * (no double rounding through float). Out-of-range values: float16 / bfloat16 / float8_e5m2 overflow
 * to +-inf as IEEE does; float8_e4m3fn and float4_e2m1 have no infinity and saturate to their largest
 * finite value (+-448, +-6), as NVIDIA's cvt ... .satfinite and the OCP MX spec's saturating mode do.
 * NaN maps to the format's NaN; float4_e2m1 has no NaN, so NaN maps to the largest magnitude with its
 * sign (callers that care check isnan first).
 * Double arithmetic in the random generator uses SF_DMUL / SF_DADD so that nvcc cannot contract it
 * into FMAs: host and device draws are bit-identical.
 */
#ifndef SOLFORGE_NUMERIC_H
#define SOLFORGE_NUMERIC_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define SF_HD __host__ __device__
#else
#define SF_HD
#endif

#if defined(__CUDA_ARCH__)
#define SF_DMUL(a, b) __dmul_rn((a), (b))
#define SF_DADD(a, b) __dadd_rn((a), (b))
#else
#define SF_DMUL(a, b) ((a) * (b))
#define SF_DADD(a, b) ((a) + (b))
#endif

typedef enum sf_dt {
	SF_DT_INVALID = 0,
	SF_DT_F64, SF_DT_F32, SF_DT_F16, SF_DT_BF16,
	SF_DT_E4M3, SF_DT_E5M2, SF_DT_E2M1,
	SF_DT_I64, SF_DT_I32, SF_DT_I16, SF_DT_I8, SF_DT_U8, SF_DT_BOOL,
	SF_DT_COUNT
} sf_dt;

static SF_HD inline int sf_dt_bits(sf_dt dt)
{
	switch (dt) {
	case SF_DT_F64: case SF_DT_I64: return 64;
	case SF_DT_F32: case SF_DT_I32: return 32;
	case SF_DT_F16: case SF_DT_BF16: case SF_DT_I16: return 16;
	case SF_DT_E4M3: case SF_DT_E5M2: case SF_DT_I8: case SF_DT_U8: case SF_DT_BOOL: return 8;
	case SF_DT_E2M1: return 4;
	default: return 0;
	}
}

static SF_HD inline int sf_dt_is_float(sf_dt dt)
{
	return dt >= SF_DT_F64 && dt <= SF_DT_E2M1;
}

/* Bytes for n elements (float4 packs two per byte, rounding up). */
static SF_HD inline int64_t sf_dt_bytes(sf_dt dt, int64_t n)
{
	return (n * sf_dt_bits(dt) + 7) / 8;
}

static SF_HD inline uint64_t sf_f64_bits(double v)
{
	uint64_t u;
	memcpy(&u, &v, 8);
	return u;
}

static SF_HD inline double sf_bits_f64(uint64_t u)
{
	double v;
	memcpy(&v, &u, 8);
	return v;
}

static SF_HD inline float sf_bits_f32(uint32_t u)
{
	float v;
	memcpy(&v, &u, 4);
	return v;
}

static SF_HD inline uint32_t sf_f32_bits(float v)
{
	uint32_t u;
	memcpy(&u, &v, 4);
	return u;
}

/*
 * Generic encoder: round the double v to a binary float format with `ebits` exponent bits and `mbits`
 * mantissa bits, exponent bias `bias`, largest finite magnitude `maxv`. Returns sign|exp|mantissa as
 * an unsigned integer of 1+ebits+mbits bits. has_inf: overflow gives inf (exp all ones, mantissa 0);
 * otherwise overflow saturates to maxv's code. nan_code: the code for NaN (without sign).
 */
static SF_HD inline uint32_t sf_encode_minifloat(double v, int ebits, int mbits, int bias, int has_inf,
						 uint32_t max_code, uint32_t nan_code)
{
	uint64_t b = sf_f64_bits(v);
	uint32_t sign = (uint32_t)(b >> 63) << (ebits + mbits);
	uint64_t mag = b & 0x7fffffffffffffffull;
	if (mag > 0x7ff0000000000000ull) /* NaN */
		return sign | nan_code;
	if (mag == 0x7ff0000000000000ull) /* inf */
		return sign | (has_inf ? ((uint32_t)((1u << ebits) - 1) << mbits) : max_code);
	if (mag == 0)
		return sign;
	int e = (int)(mag >> 52) - 1023;         /* unbiased exponent (normal doubles only reach here) */
	uint64_t m = (mag & 0xfffffffffffffull) | (e > -1023 ? (1ull << 52) : 0);
	if (e == -1023) { e = -1022; }           /* double subnormal: tiny, will round to 0 below */
	int emin = 1 - bias;                      /* smallest normal exponent of the target */
	/* number of low bits of m to drop so that the result has mbits fraction bits at exponent
	 * max(e, emin) */
	int shift = 52 - mbits + (e < emin ? emin - e : 0);
	uint64_t q;
	if (shift >= 64) {
		q = 0;
	} else {
		uint64_t rem_mask = (shift > 0) ? ((1ull << shift) - 1) : 0;
		uint64_t rem = m & rem_mask;
		uint64_t half = (shift > 0) ? (1ull << (shift - 1)) : 0;
		q = (shift > 0) ? (m >> shift) : m;
		if (shift > 0 && (rem > half || (rem == half && (q & 1))))
			q++;
	}
	/* q is the significand in units of 2^(max(e,emin) - mbits); rebuild the code */
	int eo = (e < emin) ? emin : e;
	if (q == 0)
		return sign;
	if (q >= (1ull << (mbits + 1))) { /* mantissa overflowed into the next binade */
		q >>= 1;
		eo++;
	}
	uint32_t code;
	if (q < (1ull << mbits)) {        /* subnormal result */
		code = (uint32_t)q;
	} else {
		int be = eo + bias;
		code = ((uint32_t)be << mbits) | (uint32_t)(q & ((1ull << mbits) - 1));
	}
	/* overflow handling */
	uint32_t inf_code = (uint32_t)((1u << ebits) - 1) << mbits;
	if (has_inf) {
		if (code >= inf_code)
			code = inf_code;
	} else if (code > max_code) {
		code = max_code;
	}
	return sign | code;
}

/*
 * Generic decoder for the same formats: the exact double value of `code` (sign bit at ebits+mbits).
 * Built from bits (no loops, no libm): normal codes map to a double with the same exponent and the
 * mantissa shifted up; subnormal codes are m * 2^(1-bias-mbits), one exact multiply. NaN keeps its
 * sign. has_inf: the all-ones exponent is inf (mantissa 0) or NaN; otherwise, with
 * nan_all_ones_mantissa, only the all-ones code (S.1..1.1..1) is NaN and the rest of that binade is
 * finite (float8_e4m3fn).
 */
static SF_HD inline double sf_decode_minifloat(uint32_t code, int ebits, int mbits, int bias, int has_inf,
						int nan_all_ones_mantissa)
{
	uint64_t sign = (uint64_t)((code >> (ebits + mbits)) & 1u) << 63;
	uint32_t emax = (1u << ebits) - 1;
	uint32_t mmax = (1u << mbits) - 1;
	uint32_t e = (code >> mbits) & emax;
	uint32_t m = code & mmax;
	uint64_t mag;
	if (e == emax && has_inf) {
		mag = (m == 0) ? 0x7ff0000000000000ull : 0x7ff8000000000000ull;
	} else if (e == emax && nan_all_ones_mantissa && m == mmax) {
		mag = 0x7ff8000000000000ull;
	} else if (e == 0) {
		/* zero or subnormal: m * 2^(1 - bias - mbits); the scale is a normal double, the product
		 * is exact */
		double scale = sf_bits_f64((uint64_t)(1023 + 1 - bias - mbits) << 52);
		mag = sf_f64_bits((double)m * scale);
	} else {
		mag = ((uint64_t)((int)e - bias + 1023) << 52) | ((uint64_t)m << (52 - mbits));
	}
	return sf_bits_f64(sign | mag);
}

/* float32 / float16 / bfloat16 */
static SF_HD inline uint16_t sf_f64_to_f16(double v) { return (uint16_t)sf_encode_minifloat(v, 5, 10, 15, 1, 0x7bff, 0x7e00); }
static SF_HD inline double sf_f16_to_f64(uint16_t h) { return sf_decode_minifloat(h, 5, 10, 15, 1, 0); }
static SF_HD inline uint16_t sf_f64_to_bf16(double v) { return (uint16_t)sf_encode_minifloat(v, 8, 7, 127, 1, 0x7f7f, 0x7fc0); }
static SF_HD inline double sf_bf16_to_f64(uint16_t h) { return (double)sf_bits_f32((uint32_t)h << 16); }
static SF_HD inline float sf_f64_to_f32(double v) { return (float)v; } /* IEEE RNE */

/* float8_e4m3fn: bias 7, no inf, NaN = S.1111.111, max 448 = 0x7e */
static SF_HD inline uint8_t sf_f64_to_e4m3(double v) { return (uint8_t)sf_encode_minifloat(v, 4, 3, 7, 0, 0x7e, 0x7f); }
static SF_HD inline double sf_e4m3_to_f64(uint8_t c) { return sf_decode_minifloat(c, 4, 3, 7, 0, 1); }
/* float8_e5m2: bias 15, IEEE-like with inf and NaN */
static SF_HD inline uint8_t sf_f64_to_e5m2(double v) { return (uint8_t)sf_encode_minifloat(v, 5, 2, 15, 1, 0x7b, 0x7e); }
static SF_HD inline double sf_e5m2_to_f64(uint8_t c) { return sf_decode_minifloat(c, 5, 2, 15, 1, 0); }
/* float4_e2m1: bias 1, values 0 .5 1 1.5 2 3 4 6, no inf/NaN (NaN -> max magnitude) */
static SF_HD inline uint8_t sf_f64_to_e2m1(double v) { return (uint8_t)sf_encode_minifloat(v, 2, 1, 1, 0, 0x7, 0x7); }
static SF_HD inline double sf_e2m1_to_f64(uint8_t c) { return sf_decode_minifloat(c & 0xf, 2, 1, 1, 0, 0); }

/* Rounding helpers for oracles: the value a quantizer must produce. */
static SF_HD inline double sf_round_bf16(double v) { return sf_bf16_to_f64(sf_f64_to_bf16(v)); }
static SF_HD inline double sf_round_f16(double v) { return sf_f16_to_f64(sf_f64_to_f16(v)); }
static SF_HD inline double sf_round_f32(double v) { return (double)(float)v; }
static SF_HD inline double sf_round_e4m3(double v) { return sf_e4m3_to_f64(sf_f64_to_e4m3(v)); }
static SF_HD inline double sf_round_e5m2(double v) { return sf_e5m2_to_f64(sf_f64_to_e5m2(v)); }
static SF_HD inline double sf_round_e2m1(double v) { return sf_e2m1_to_f64(sf_f64_to_e2m1(v)); }

/*
 * double -> integer in [lo, hi]: truncation toward zero, saturating at the ends of the range, NaN -> 0.
 * This is what CUDA's cvt.rzi.sat conversions do; spelled out so the host (where an out-of-range
 * conversion is undefined behaviour, and x86 gives INT_MIN) agrees with the device bit for bit.
 */
static SF_HD inline int64_t sf_f64_to_int_sat(double v, int64_t lo, int64_t hi)
{
	if (v != v)
		return 0;
	if (v <= (double)lo)
		return lo;
	if (v >= (double)hi) /* (double)INT64_MAX is 2^63: every v below it converts */
		return hi;
	return (int64_t)v;
}

/* Element i of a dense buffer of dtype dt, as a double. */
static SF_HD inline double sf_load(const void *base, sf_dt dt, int64_t i)
{
	const uint8_t *p = (const uint8_t *)base;
	switch (dt) {
	case SF_DT_F64: { double v; memcpy(&v, p + 8 * i, 8); return v; }
	case SF_DT_F32: { float v; memcpy(&v, p + 4 * i, 4); return v; }
	case SF_DT_F16: { uint16_t h; memcpy(&h, p + 2 * i, 2); return sf_f16_to_f64(h); }
	case SF_DT_BF16: { uint16_t h; memcpy(&h, p + 2 * i, 2); return sf_bf16_to_f64(h); }
	case SF_DT_E4M3: return sf_e4m3_to_f64(p[i]);
	case SF_DT_E5M2: return sf_e5m2_to_f64(p[i]);
	case SF_DT_E2M1: return sf_e2m1_to_f64((uint8_t)((p[i >> 1] >> ((i & 1) * 4)) & 0xf));
	case SF_DT_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
	case SF_DT_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); return (double)v; }
	case SF_DT_I16: { int16_t v; memcpy(&v, p + 2 * i, 2); return (double)v; }
	case SF_DT_I8: return (double)(int8_t)p[i];
	case SF_DT_U8: return (double)p[i];
	case SF_DT_BOOL: return p[i] ? 1.0 : 0.0;
	default: return 0.0;
	}
}

/* Integer element i (exact for 64-bit integers, which sf_load is not above 2^53). */
static SF_HD inline int64_t sf_load_int(const void *base, sf_dt dt, int64_t i)
{
	const uint8_t *p = (const uint8_t *)base;
	switch (dt) {
	case SF_DT_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); return v; }
	case SF_DT_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
	case SF_DT_I16: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
	case SF_DT_I8: return (int8_t)p[i];
	case SF_DT_U8: return p[i];
	case SF_DT_BOOL: return p[i] ? 1 : 0;
	default: return sf_f64_to_int_sat(sf_load(base, dt, i), INT64_MIN, INT64_MAX); /* floats: truncated */
	}
}

/* Store v into element i, rounding as described above. Integers: truncation toward zero, saturated
 * to the dtype's range, NaN -> 0 (sf_f64_to_int_sat; callers normally store integral in-range values).
 * bool: v != 0 (NaN is true). float4: read-modify-write of the nibble, so two threads must not store
 * the two halves of one byte concurrently. */
static SF_HD inline void sf_store(void *base, sf_dt dt, int64_t i, double v)
{
	uint8_t *p = (uint8_t *)base;
	switch (dt) {
	case SF_DT_F64: memcpy(p + 8 * i, &v, 8); break;
	case SF_DT_F32: { float f = (float)v; memcpy(p + 4 * i, &f, 4); break; }
	case SF_DT_F16: { uint16_t h = sf_f64_to_f16(v); memcpy(p + 2 * i, &h, 2); break; }
	case SF_DT_BF16: { uint16_t h = sf_f64_to_bf16(v); memcpy(p + 2 * i, &h, 2); break; }
	case SF_DT_E4M3: p[i] = sf_f64_to_e4m3(v); break;
	case SF_DT_E5M2: p[i] = sf_f64_to_e5m2(v); break;
	case SF_DT_E2M1: {
		uint8_t c = sf_f64_to_e2m1(v), sh = (uint8_t)((i & 1) * 4);
		p[i >> 1] = (uint8_t)((p[i >> 1] & ~(0xf << sh)) | (c << sh));
		break;
	}
	case SF_DT_I64: { int64_t x = sf_f64_to_int_sat(v, INT64_MIN, INT64_MAX); memcpy(p + 8 * i, &x, 8); break; }
	case SF_DT_I32: { int32_t x = (int32_t)sf_f64_to_int_sat(v, INT32_MIN, INT32_MAX); memcpy(p + 4 * i, &x, 4); break; }
	case SF_DT_I16: { int16_t x = (int16_t)sf_f64_to_int_sat(v, INT16_MIN, INT16_MAX); memcpy(p + 2 * i, &x, 2); break; }
	case SF_DT_I8: p[i] = (uint8_t)(int8_t)sf_f64_to_int_sat(v, INT8_MIN, INT8_MAX); break;
	case SF_DT_U8: p[i] = (uint8_t)sf_f64_to_int_sat(v, 0, UINT8_MAX); break;
	case SF_DT_BOOL: p[i] = v != 0.0; break;
	default: break;
	}
}

/* Store an integer exactly (int64 beyond 2^53 too). Narrower integer dtypes keep the low bits of an
 * out-of-range x (two's complement wrap); float dtypes round (double)x as sf_store does. */
static SF_HD inline void sf_store_int(void *base, sf_dt dt, int64_t i, int64_t x)
{
	uint8_t *p = (uint8_t *)base;
	switch (dt) {
	case SF_DT_I64: memcpy(p + 8 * i, &x, 8); break;
	case SF_DT_I32: { int32_t y = (int32_t)x; memcpy(p + 4 * i, &y, 4); break; }
	case SF_DT_I16: { int16_t y = (int16_t)x; memcpy(p + 2 * i, &y, 2); break; }
	case SF_DT_I8: case SF_DT_U8: p[i] = (uint8_t)x; break;
	case SF_DT_BOOL: p[i] = x != 0; break;
	default: sf_store(base, dt, i, (double)x); break;
	}
}

#endif /* SOLFORGE_NUMERIC_H */
