/*
 * mb_host_test.cpp - checks of the host-only parts of the memory-bandwidth dev bench
 * (tools/membench/mb_host.h): bf16 conversion, the CPU references of silu_and_mul and RMSNorm, the
 * tolerance checks, the seeded normal generator and the median, on inputs drawn from the seed given as argv[1].
 * Prints one ok/FAIL line per check and "N passed, M failed"; exits 1 when anything failed.
 * Build: g++ -std=c++17 -O1 -Itools/membench tests/membench/mb_host_test.cpp
 */
#include <stdio.h>
#include "mb_host.h"

static int n_pass, n_fail;

static void check(int ok, const char *what)
{
	printf("%s %s\n", ok ? "ok" : "FAIL", what);
	if (ok)
		n_pass++;
	else
		n_fail++;
}

/* bf16 nearest-even rounding of f computed independently: the two bf16 neighbours of f and the
 * distance to each (in double) */
static uint16_t slow_round(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	const uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
	const double dl = fabs((double)f - mb_bf16_to_f32(lo)), dh = fabs((double)f - mb_bf16_to_f32(hi));
	if (dl < dh)
		return lo;
	if (dh < dl)
		return hi;
	return (lo & 1) ? hi : lo;
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
	printf("seed %llu\n", (unsigned long long)seed);

	/* bf16: every non-NaN pattern survives the round trip; random floats round to nearest even */
	int bad = 0;
	for (uint32_t h = 0; h < 65536; h++) {
		const float f = mb_bf16_to_f32((uint16_t)h);
		if (f == f && mb_f32_to_bf16(f) != h)
			bad++;
	}
	check(bad == 0, "bf16 round trip of all 65536 patterns");
	bad = 0;
	uint64_t s = seed;
	for (int k = 0; k < 200000; k++) {
		uint32_t u = (uint32_t)mb_rand(&s);
		if (k % 4 == 0)
			u = (u & 0xffff0000u) | 0x8000u; /* exact ties */
		float f;
		memcpy(&f, &u, sizeof f);
		if (f != f || isinf(f) || fabsf(f) > 3.0e38f)
			continue;
		if (mb_f32_to_bf16(f) != slow_round(f))
			bad++;
	}
	check(bad == 0, "float -> bf16 is round to nearest even (ties included)");
	check((mb_f32_to_bf16(NAN) & 0x7f80) == 0x7f80 && (mb_f32_to_bf16(NAN) & 0x7f), "NaN stays NaN");

	/* silu reference: exact cases, then against an independent float evaluation on random inputs */
	const int64_t I = 4096, rows = 3;
	uint16_t *x = (uint16_t *)malloc(sizeof(uint16_t) * 2 * I * rows), *out = (uint16_t *)malloc(sizeof(uint16_t) * I * rows);
	uint16_t *alt = (uint16_t *)malloc(sizeof(uint16_t) * I * rows);
	for (int64_t k = 0; k < 2 * I * rows; k++)
		x[k] = mb_f32_to_bf16(1.0f);
	x[0] = mb_f32_to_bf16(0.0f);     /* silu(0) = 0 */
	x[1] = mb_f32_to_bf16(20.0f);    /* silu(20) = 20 (to bf16) */
	x[2] = mb_f32_to_bf16(-100.0f);  /* silu(-100) = -0 */
	x[I + 3] = mb_f32_to_bf16(-3.0f); /* silu(1) * -3 */
	mb_silu_ref(x, out, 1, I);
	const float s1 = (float)(1.0 / (1.0 + exp(-1.0)));
	check(mb_bf16_to_f32(out[0]) == 0.0f && mb_bf16_to_f32(out[1]) == 20.0f && mb_bf16_to_f32(out[2]) == 0.0f &&
		      out[3] == mb_f32_to_bf16(-3.0f * s1) && out[4] == mb_f32_to_bf16(s1),
	      "silu reference: silu(0), silu(20), silu(-100), silu(1) * -3, silu(1)");
	mb_fill_normal(x, 2 * I * rows, seed, 3.0);
	mb_silu_ref(x, out, rows, I);
	for (int64_t t = 0; t < rows; t++)
		for (int64_t i = 0; i < I; i++) {
			const float g = mb_bf16_to_f32(x[t * 2 * I + i]), u = mb_bf16_to_f32(x[t * 2 * I + I + i]);
			alt[t * I + i] = mb_f32_to_bf16(g / (1.0f + expf(-g)) * u);
		}
	int64_t first;
	check(mb_mismatches(alt, out, rows * I, 1e-5, 1e-2, &first) == 0 && first == -1,
	      "silu reference = float32 evaluation within the tolerance (random rows)");
	/* the check must catch a real error: gate and up swapped in one row, one NaN, one element off by 2% */
	for (int64_t i = 0; i < I; i++) {
		const float g = mb_bf16_to_f32(x[I + i]), u = mb_bf16_to_f32(x[i]);
		alt[i] = mb_f32_to_bf16(g / (1.0f + expf(-g)) * u);
	}
	check(mb_mismatches(alt, out, I, 1e-5, 1e-2, &first) > I / 4 && first >= 0 && first < I,
	      "tolerance check flags a swapped gate/up row");
	memcpy(alt, out, sizeof(uint16_t) * I * rows);
	alt[I + 7] = 0xffff;
	const int64_t far = 2 * I + (int64_t)(mb_rand(&s) % (uint64_t)I);
	int64_t pick = far;
	while (fabsf(mb_bf16_to_f32(out[pick])) < 0.5f)
		pick = 2 * I + (pick + 1) % I;
	alt[pick] = mb_f32_to_bf16(mb_bf16_to_f32(out[pick]) * 1.03f);
	check(mb_mismatches(alt, out, rows * I, 1e-5, 1e-2, &first) == 2 && first == I + 7,
	      "tolerance check flags one NaN and one element 3% off, first index right");

	/* RMSNorm reference: a constant row (n = +-1 after rounding), power-of-two scaling invariance at
	 * eps 0 (exact in double), row independence, and the float-reference check catching errors */
	{
		const int64_t Hr = 4096, nr = 3;
		uint16_t *rx = (uint16_t *)malloc(sizeof(uint16_t) * Hr * nr), *rx2 = (uint16_t *)malloc(sizeof(uint16_t) * Hr * nr);
		uint16_t *rw = (uint16_t *)malloc(sizeof(uint16_t) * Hr), *rg = (uint16_t *)malloc(sizeof(uint16_t) * Hr * nr);
		float *ro = (float *)malloc(sizeof(float) * Hr * nr), *ro2 = (float *)malloc(sizeof(float) * Hr * nr);
		mb_fill_normal(rw, Hr, seed + 7, 0.1);
		for (int64_t h = 0; h < Hr; h++)
			rw[h] = mb_f32_to_bf16(mb_bf16_to_f32(rw[h]) + 1.0f);
		const float c = (float)(1 + mb_rand(&s) % 8) * ((mb_rand(&s) & 1) ? 0.5f : -0.25f);
		for (int64_t h = 0; h < Hr; h++)
			rx[h] = mb_f32_to_bf16(c);
		mb_rms_ref(rx, rw, ro, 1, Hr, 1e-5f);
		int okc = 1;
		const float nc = mb_bf16_to_f32(mb_f32_to_bf16((float)(c / sqrt((double)c * c + 1e-5f))));
		for (int64_t h = 0; h < Hr; h++)
			okc &= ro[h] == mb_bf16_to_f32(rw[h]) * nc;
		check(okc && fabsf(fabsf(nc) - 1.0f) < 0.01f, "rmsnorm reference: constant row gives w * bf16(+-1)");
		mb_fill_normal(rx, Hr * nr, seed + 11, 1.0 + (double)(seed % 3));
		for (int64_t k = 0; k < Hr * nr; k++)
			rx2[k] = mb_f32_to_bf16(mb_bf16_to_f32(rx[k]) * 4.0f); /* exact: no bf16 overflow at these sizes */
		mb_rms_ref(rx, rw, ro, nr, Hr, 0.0f);
		mb_rms_ref(rx2, rw, ro2, nr, Hr, 0.0f);
		check(memcmp(ro, ro2, sizeof(float) * Hr * nr) == 0, "rmsnorm reference: x and 4x give the same output (eps 0)");
		mb_rms_ref(rx, rw, ro, nr, Hr, 1e-5f);
		mb_rms_ref(rx + Hr, rw, ro2, 1, Hr, 1e-5f);
		check(memcmp(ro + Hr, ro2, sizeof(float) * Hr) == 0, "rmsnorm reference: a row alone = the same row among others");
		/* a float32 evaluation (fp32 sum, rsqrtf, bf16 output) passes the check; wrong ones fail */
		for (int64_t t = 0; t < nr; t++) {
			float ss = 0.0f;
			for (int64_t h = 0; h < Hr; h++)
				ss += mb_bf16_to_f32(rx[t * Hr + h]) * mb_bf16_to_f32(rx[t * Hr + h]);
			const float rs = 1.0f / sqrtf(ss / (float)Hr + 1e-5f);
			for (int64_t h = 0; h < Hr; h++)
				rg[t * Hr + h] = mb_f32_to_bf16(
					mb_bf16_to_f32(rw[h]) * mb_bf16_to_f32(mb_f32_to_bf16(mb_bf16_to_f32(rx[t * Hr + h]) * rs)));
		}
		check(mb_mismatches_f(rg, ro, Hr * nr, 1e-5, 1.6e-2, &first) == 0 && first == -1,
		      "rmsnorm check: a float32 evaluation passes (random rows)");
		rg[Hr + 5] = 0xffff;
		check(mb_mismatches_f(rg, ro, Hr * nr, 1e-5, 1.6e-2, &first) == 1 && first == Hr + 5,
		      "rmsnorm check: one NaN flagged at its index");
		for (int64_t h = 0; h < Hr; h++) /* row 0 without the weight (w ~ N(1, 0.1)) */
			rg[h] = mb_f32_to_bf16(mb_bf16_to_f32(rg[h]) / mb_bf16_to_f32(rw[h]));
		check(mb_mismatches_f(rg, ro, Hr, 1e-5, 1.6e-2, &first) > Hr / 2, "rmsnorm check: a missing weight flagged");
		free(rx);
		free(rx2);
		free(rw);
		free(rg);
		free(ro);
		free(ro2);
	}

	/* generator: mean ~ 0 and std ~ the given one; a different seed gives different values */
	const int64_t n = 200000;
	uint16_t *v = (uint16_t *)malloc(sizeof(uint16_t) * n), *w = (uint16_t *)malloc(sizeof(uint16_t) * n);
	const double sd = 0.5 + (double)(seed % 4);
	mb_fill_normal(v, n, seed, sd);
	mb_fill_normal(w, n, seed + 1, sd);
	double sum = 0, sq = 0;
	int64_t same = 0;
	for (int64_t k = 0; k < n; k++) {
		const double f = mb_bf16_to_f32(v[k]);
		sum += f;
		sq += f * f;
		same += v[k] == w[k];
	}
	const double mean = sum / n, std = sqrt(sq / n - mean * mean);
	check(fabs(mean) < 0.02 * sd && fabs(std / sd - 1.0) < 0.02, "normal generator: mean and std");
	check(same < n / 20, "normal generator: seeds differ");

	/* median: odd and even counts against a sort by hand */
	float a[7], b[8];
	for (int k = 0; k < 7; k++)
		a[k] = (float)(mb_rand(&s) % 1000);
	for (int k = 0; k < 8; k++)
		b[k] = (float)(mb_rand(&s) % 1000);
	float sa[7], sb[8];
	memcpy(sa, a, sizeof a);
	memcpy(sb, b, sizeof b);
	for (int i = 0; i < 7; i++)
		for (int j = i + 1; j < 7; j++)
			if (sa[j] < sa[i]) {
				const float t = sa[i];
				sa[i] = sa[j];
				sa[j] = t;
			}
	for (int i = 0; i < 8; i++)
		for (int j = i + 1; j < 8; j++)
			if (sb[j] < sb[i]) {
				const float t = sb[i];
				sb[i] = sb[j];
				sb[j] = t;
			}
	check(mb_median(a, 7) == sa[3] && mb_median(b, 8) == 0.5f * (sb[3] + sb[4]) && mb_median(a, 0) == 0.0f,
	      "median of odd, even and empty arrays");
	free(x);
	free(out);
	free(alt);
	free(v);
	free(w);
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
