/*
 * router_fast_test.cu - host-side check of the Qwen MoE router fast solution
 * (problems/qwen/moe_router_softmax_topk_e128_k8/solutions/fast.cu, included whole): its order keys
 * (rt_key, rt_key_value, rt_cas) driven by a CPU emulation of the kernel's warp rounds (32 lanes of 4
 * sorted keys, redux.sync.max = max over lanes, the winner pops) against the oracle's selection (K
 * passes of a strict-'>' upward argmax over exp(x - max) / denom in double) on random bf16 rows:
 * normal draws, rows drawn from a few values (many ties, +0 and -0 together), rows with -inf and
 * large values (up to ~2^8: exp(x - max) must not underflow in double, where the oracle's ranking
 * by probability stops being the ranking by logit that every float32 kernel uses). Ids must match exactly, weights within 1e-6 relative of the oracle's double values.
 * The weights: the kernel's xor-butterfly sum, in its tree order (not a serial sum).
 * Prints "FAIL ..." per mismatch (at most 20) and "N passed, M failed"; exit status 1 on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include "solforge/numeric.h"
#include "../../problems/qwen/moe_router_softmax_topk_e128_k8/solutions/fast.cu"

static uint64_t xs64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* the kernel's algorithm for one row, lanes emulated */
static void emulate(const uint16_t *row, int K, int *ids, double *w)
{
	uint32_t k[32][4];
	for (int l = 0; l < 32; l++) {
		for (int j = 0; j < 4; j++)
			k[l][j] = rt_key(row[4 * l + j], 4 * l + j);
		rt_cas(k[l][0], k[l][1]);
		rt_cas(k[l][2], k[l][3]);
		rt_cas(k[l][0], k[l][2]);
		rt_cas(k[l][1], k[l][3]);
		rt_cas(k[l][1], k[l][2]);
	}
	uint32_t picks[32], first = 0;
	for (int r = 0; r < K; r++) {
		uint32_t m = 0;
		for (int l = 0; l < 32; l++)
			m = k[l][0] > m ? k[l][0] : m;
		if (r == 0)
			first = m;
		picks[r] = m;
		for (int l = 0; l < 32; l++)
			if (k[l][0] == m) {
				k[l][0] = k[l][1];
				k[l][1] = k[l][2];
				k[l][2] = k[l][3];
				k[l][3] = 0;
			}
	}
	/* lane r < K holds e_r, the others 0; the kernel's xor butterfly (offsets 16, 8, 4, 2, 1) sums
	 * them pairwise, each lane computing s_l + s_(l^off): commutative, so every lane ends with the same
	 * float32 sum, in this tree order (a serial sum would drop terms below half an ulp of 1.0 one by one) */
	float e[32], s[32], t[32];
	for (int l = 0; l < 32; l++)
		s[l] = e[l] = l < K ? expf(rt_key_value(picks[l]) - rt_key_value(first)) : 0.0f;
	for (int off = 16; off > 0; off >>= 1) {
		for (int l = 0; l < 32; l++)
			t[l] = s[l] + s[l ^ off];
		for (int l = 0; l < 32; l++)
			s[l] = t[l];
	}
	for (int r = 0; r < K; r++) {
		ids[r] = (int)(0xffffu - (picks[r] & 0xffffu));
		w[r] = e[r] / s[r];
	}
}

static void oracle(const uint16_t *row, int K, int *ids, double *w)
{
	double m = sf_bf16_to_f64(row[0]), denom = 0.0, p[32], psum = 0.0;
	for (int e = 1; e < 128; e++)
		if (sf_bf16_to_f64(row[e]) > m)
			m = sf_bf16_to_f64(row[e]);
	for (int e = 0; e < 128; e++)
		denom += exp(sf_bf16_to_f64(row[e]) - m);
	for (int k = 0; k < K; k++) {
		int best = -1;
		double bp = 0.0;
		for (int e = 0; e < 128; e++) {
			int taken = 0;
			for (int j = 0; j < k; j++)
				taken |= ids[j] == e;
			if (taken)
				continue;
			double pe = exp(sf_bf16_to_f64(row[e]) - m) / denom;
			if (best < 0 || pe > bp) {
				best = e;
				bp = pe;
			}
		}
		ids[k] = best;
		p[k] = bp;
		psum += bp;
	}
	for (int k = 0; k < K; k++)
		w[k] = p[k] / psum;
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x2545f4914f6cdd1dull;
	if (seed == 0)
		seed = 1;
	int pass = 0, fail = 0;
	const double pool[4] = {0.0, -0.0, -1.5, -0.0};
	for (int it = 0; it < 50000; it++) {
		uint16_t row[128];
		const int kind = it % 4, K = (it % 5 == 0) ? 1 + (int)(xs64(&seed) % 32) : 8;
		for (int e = 0; e < 128; e++) {
			double u = 0;
			for (int j = 0; j < 4; j++)
				u += (double)(xs64(&seed) >> 11) * 0x1p-53 - 0.5;
			double v = 1.7 * u;
			if (kind == 1)
				v = (xs64(&seed) % 32 == 0) ? 0.75 : pool[xs64(&seed) % 4]; /* the top K: a few 0.75, then +-0 */
			else if (kind == 2)
				v = (double)(int)(4 * u); /* integers around 0: ties everywhere, -0 and +0 */
			else if (kind == 3 && xs64(&seed) % 16 == 0)
				v = (xs64(&seed) & 1) ? -INFINITY : ldexp(u, 7);
			row[e] = sf_f64_to_bf16(v);
		}
		int gi[32], ri[32];
		double gw[32], rw[32];
		emulate(row, K, gi, gw);
		oracle(row, K, ri, rw);
		int ok = 1;
		for (int k = 0; k < K; k++)
			ok &= gi[k] == ri[k] && fabs(gw[k] - rw[k]) <= 1e-6 * fabs(rw[k]) + 1e-12;
		if (ok) {
			pass++;
		} else if (fail++ < 20) {
			printf("FAIL row %d (kind %d, K %d):", it, kind, K);
			for (int k = 0; k < K; k++)
				printf(" %d/%d %.9g/%.9g", gi[k], ri[k], gw[k], rw[k]);
			printf("\n");
		}
	}
	printf("%d passed, %d failed\n", pass, fail);
	return fail != 0;
}
