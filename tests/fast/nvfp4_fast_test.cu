/*
 * nvfp4_fast_test.cu - host-side check of the NVFP4 fast solution's block quantizer
 * (problems/qwen/nvfp4_quantize_h2048/solutions/fast.cu, included whole) against numeric.h's
 * encoders, which the oracle uses. Runs on the CPU (nvcc host code, no GPU needed):
 *  1. nvq_e2m1_code against sf_f64_to_e2m1 on every float32 in [0, 16) whose low 8 mantissa bits are
 *     one of {00, 01, 7f, 80, 81, ff} (covers every rounding boundary and its neighbours), both signs,
 *     plus zero, the largest floats and infinity; with a second argument "full", on every float32 of
 *     both signs below 16 (2.2e9 values, about a minute);
 *  2. nvq_block against the oracle's recipe (float32 steps, sf_round_e4m3, sf_round_e2m1) on random
 *     bf16 blocks drawn with a varying seed, block magnitudes spanning 2^-30 .. 2^30 and several global
 *     scales, including all-zero blocks and blocks whose scale saturates at 448.
 * Prints "FAIL ..." per mismatch (at most 20) and "N passed, M failed"; exit status 1 on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include "solforge/numeric.h"
#include "../../problems/qwen/nvfp4_quantize_h2048/solutions/fast.cu"

static long long n_fail, n_pass;

static void check(int ok, const char *what, double a, double b)
{
	if (ok) {
		n_pass++;
		return;
	}
	if (n_fail++ < 20)
		printf("FAIL %s: %.9g vs %.9g\n", what, a, b);
}

/* the oracle's recipe for one block (oracle.c of nvfp4_quantize_h2048), returning codes and scale */
static void ref_block(const uint16_t *x, float gs, uint8_t codes[16], uint8_t *scale_code)
{
	double amax = 0.0;
	for (int i = 0; i < 16; i++) {
		double v = fabs(sf_bf16_to_f64(x[i]));
		if (v > amax)
			amax = v;
	}
	const double g = (double)gs, rcp6 = (double)(float)(1.0 / 6.0);
	const double s = (double)(float)(g * (double)(float)(amax * rcp6));
	*scale_code = sf_f64_to_e4m3(s);
	const double scale = sf_e4m3_to_f64(*scale_code);
	const double inv_gs = (double)(float)(1.0 / g);
	const double out_scale = scale == 0.0 ? 0.0 : (double)(float)(1.0 / (double)(float)(scale * inv_gs));
	for (int i = 0; i < 16; i++)
		codes[i] = sf_f64_to_e2m1((double)(float)(sf_bf16_to_f64(x[i]) * out_scale));
}

static uint64_t xs64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x9e3779b97f4a7c15ull;
	if (seed == 0)
		seed = 1;
	/* 1. the code map */
	const int full = argc > 2 && !strcmp(argv[2], "full");
	uint32_t lows[256] = {0x00, 0x01, 0x7f, 0x80, 0x81, 0xff};
	const int nlows = full ? 256 : 6;
	if (full)
		for (uint32_t l = 0; l < 256; l++)
			lows[l] = l;
	for (uint32_t hi = 0; hi < (0x41800000u >> 8); hi++)
		for (int l = 0; l < nlows; l++)
			for (uint32_t sign = 0; sign < 2; sign++) {
				const uint32_t b = (sign << 31) | (hi << 8) | lows[l];
				float f;
				memcpy(&f, &b, 4);
				const uint32_t got = nvq_e2m1_code(f), want = sf_f64_to_e2m1((double)f);
				check(got == want, "e2m1 code", (double)f, (double)got);
			}
	const float specials[5] = {0.0f, -0.0f, 3.4028235e38f, -3.4028235e38f, INFINITY};
	for (int i = 0; i < 5; i++)
		check(nvq_e2m1_code(specials[i]) == sf_f64_to_e2m1((double)specials[i]), "e2m1 special",
		      (double)specials[i], 0);
	/* 2. whole blocks */
	const float gss[5] = {448.0f, 768.0f, 640.0f, 1.0f, 2688.0f / 3.7f};
	for (int it = 0; it < 400000; it++) {
		uint16_t x[16];
		uint32_t w[8];
		const int e = (int)(xs64(&seed) % 61) - 30; /* block magnitude 2^e */
		const int kind = (int)(xs64(&seed) % 16);
		for (int i = 0; i < 16; i++) {
			/* roughly normal-ish: sum of uniforms, scaled by 2^e */
			double u = 0;
			for (int k = 0; k < 4; k++)
				u += (double)(xs64(&seed) >> 11) * 0x1p-53 - 0.5;
			x[i] = kind == 0 ? (uint16_t)(xs64(&seed) & 0x8000u) : sf_f64_to_bf16(ldexp(u, e));
		}
		for (int j = 0; j < 8; j++)
			w[j] = (uint32_t)x[2 * j] | ((uint32_t)x[2 * j + 1] << 16);
		const float gs = gss[it % 5];
		uint8_t sc, sc_ref, codes[16];
		const uint64_t got = nvq_block(w, gs, 1.0f / gs, &sc);
		ref_block(x, gs, codes, &sc_ref);
		int ok = sc == sc_ref;
		for (int i = 0; i < 16; i++)
			ok &= ((got >> (4 * i)) & 0xf) == codes[i];
		check(ok, "block", ldexp(1.0, e), (double)gs);
	}
	printf("%lld passed, %lld failed\n", n_pass, n_fail);
	return n_fail != 0;
}
