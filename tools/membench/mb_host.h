/*
 * mb_host.h - host-only parts of the memory-bandwidth dev bench (tools/membench/): bf16 conversion,
 * the CPU references of silu_and_mul and RMSNorm, the tolerance checks, a seeded generator and the
 * median. Plain
 * C++ without CUDA, so tests/suites/membench.sh builds and checks it with g++ in a second; the .cu
 * files of the bench include it.
 */
#ifndef MB_HOST_H
#define MB_HOST_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* bf16 bits -> float (exact) */
static inline float mb_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* float -> bf16 bits, round to nearest even; NaN stays a (quiet) NaN */
static inline uint16_t mb_f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

/* CPU reference of silu_and_mul: out[t, i] = bf16(silu(g) * u), g = x[t, i], u = x[t, I + i],
 * silu(g) = g / (1 + exp(-g)) in double (the definition computes in float32: double is the more exact
 * target; the tolerance covers both). x is [rows, 2I] bf16 bits, out [rows, I]. */
static inline void mb_silu_ref(const uint16_t *x, uint16_t *out, int64_t rows, int64_t I)
{
	for (int64_t t = 0; t < rows; t++)
		for (int64_t i = 0; i < I; i++) {
			const double g = mb_bf16_to_f32(x[t * 2 * I + i]), u = mb_bf16_to_f32(x[t * 2 * I + I + i]);
			out[t * I + i] = mb_f32_to_bf16((float)(g / (1.0 + exp(-g)) * u));
		}
}

/* CPU reference of RMSNorm as the oracle of problems/llama/rmsnorm_h4096 computes it: per row, rstd =
 * 1 / sqrt(sum(x^2) / H + eps) in double (eps a float32), n = bf16(x * rstd) (rounded via float: a
 * double rounding the tolerance covers), out = w * n unrounded (exact in float: a product of two bf16). x [rows, H] and w [H] bf16 bits, out [rows, H] float. */
static inline void mb_rms_ref(const uint16_t *x, const uint16_t *w, float *out, int64_t rows, int64_t H, float eps)
{
	for (int64_t t = 0; t < rows; t++) {
		double ss = 0.0;
		for (int64_t h = 0; h < H; h++) {
			const double v = mb_bf16_to_f32(x[t * H + h]);
			ss += v * v;
		}
		const double rstd = 1.0 / sqrt(ss / (double)H + (double)eps);
		for (int64_t h = 0; h < H; h++) {
			const float n = mb_bf16_to_f32(mb_f32_to_bf16((float)(mb_bf16_to_f32(x[t * H + h]) * rstd)));
			out[t * H + h] = mb_bf16_to_f32(w[h]) * n;
		}
	}
}

/* Number of elements of got (bf16 bits) outside |got - ref| <= atol + rtol |ref| (a NaN in either is
 * a mismatch); *first gets the index of the first one (-1 when none). */
static inline int64_t mb_mismatches(const uint16_t *got, const uint16_t *ref, int64_t n, double atol, double rtol,
				    int64_t *first)
{
	int64_t bad = 0;
	*first = -1;
	for (int64_t k = 0; k < n; k++) {
		const double a = mb_bf16_to_f32(got[k]), b = mb_bf16_to_f32(ref[k]);
		if (!(fabs(a - b) <= atol + rtol * fabs(b))) {
			if (bad == 0)
				*first = k;
			bad++;
		}
	}
	return bad;
}

/* mb_mismatches against an unrounded float reference (the oracle's way: RMSNorm's w * n) */
static inline int64_t mb_mismatches_f(const uint16_t *got, const float *ref, int64_t n, double atol, double rtol,
				      int64_t *first)
{
	int64_t bad = 0;
	*first = -1;
	for (int64_t k = 0; k < n; k++) {
		const double a = mb_bf16_to_f32(got[k]), b = ref[k];
		if (!(fabs(a - b) <= atol + rtol * fabs(b))) {
			if (bad == 0)
				*first = k;
			bad++;
		}
	}
	return bad;
}

/* splitmix64: the seeded generator of the stand-alone bench's inputs */
static inline uint64_t mb_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* n bf16 values ~ N(0, std) (Box-Muller) from seed */
static inline void mb_fill_normal(uint16_t *x, int64_t n, uint64_t seed, double std)
{
	uint64_t s = seed;
	for (int64_t k = 0; k < n; k += 2) {
		const double u1 = ((double)(mb_rand(&s) >> 11) + 1.0) / 9007199254740993.0;
		const double u2 = (double)(mb_rand(&s) >> 11) / 9007199254740992.0;
		const double r = std * sqrt(-2.0 * log(u1));
		x[k] = mb_f32_to_bf16((float)(r * cos(6.283185307179586 * u2)));
		if (k + 1 < n)
			x[k + 1] = mb_f32_to_bf16((float)(r * sin(6.283185307179586 * u2)));
	}
}

static inline int mb_cmp_float(const void *a, const void *b)
{
	const float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* median of v[0..n) (sorts v); 0 when n == 0; the mean of the middle two when n is even */
static inline float mb_median(float *v, int n)
{
	if (n <= 0)
		return 0.0f;
	qsort(v, (size_t)n, sizeof *v, mb_cmp_float);
	return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

#endif
