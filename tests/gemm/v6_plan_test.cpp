/*
 * v6_plan_test.cpp - host-side check of the bf16 GEMM's version-6 mid-M plan (sfgemm::v6_plan in
 * problems/common/kernels/gemm_bf16_sm90_v6plan.cuh, plain C++: built with g++ alone, no CUDA, ~1 s).
 * For random shapes (M 1..1200, N even 8..30000, K % 8 == 0), random SM counts and cluster occupancies (a GPU
 * of random GPC sizes: clusters of s resident = sum over GPCs of floor(SMs in it / s)) and random pins, every
 * plan must: have a supported width (128/192/256) and mode; no empty K split; a cluster plan 2..8 splits
 * with its clusters resident, a persistent plan 1 split, a v2 plan width 256 with launch_wgmma's split
 * count; honour the pins; cost what v6_cost says; and cost no more than any allowed schedule (brute force
 * over widths, modes and splits). v6_cost itself: positive, more work never cheaper (M, K doubled).
 * Version 17 (w96, SF_GEMM_V6_BN96): width 96 only persistent and only where v6_w96_ok allows it, in the brute
 * force too; on the H200-like GPU, w96 1 moves exactly 6144x4096 M 193..256 of the Llama plans (to 96 persistent,
 * 128 CTAs) and w96 2 also 4096-row M 257..384, nothing else.
 * Version 18 (mw_route, SF_GEMM_MIDM_MW): taken exactly at 128 < M <= min(max_m, 192) where the bands outnumber the
 * SMs (random GPUs), on the Llama shapes only 28672 x 4096 M 129..192, with fewer outputs per SM than the v6 plan there.
 * Then prints the model's calibration cases (measured CUPTI times beside the prediction) and the plan with
 * its prediction for the four Llama shapes on an H200-like GPU, for GEMM_NOTES.md "Version 6".
 * Prints "N passed, M failed"; exit status 1 on a failure. Argument: a random seed (optional).
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <math.h>
#include "../../problems/common/kernels/gemm_bf16_sm90_v6plan.cuh"

using namespace sfgemm;

static int g_gpc[16], g_ngpc;
static uint64_t g_rng;
static int passed, failed, g_w96_plans; /* g_w96_plans: random draws planned at width 96 (must be > 0) */

static int fake_clusters(int bn, int s)
{
	(void)bn;
	int n = 0;
	for (int i = 0; i < g_ngpc; i++)
		n += g_gpc[i] / s;
	return n;
}

static uint32_t rnd(uint32_t n)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return (uint32_t)(g_rng % n);
}

static void expect(int ok, const char *what, int M, int N, int K, int sms, V6Plan p)
{
	if (ok) {
		passed++;
		return;
	}
	failed++;
	if (failed <= 20)
		printf("FAIL %s: M %d N %d K %d sms %d -> bn %d splits %d mode %d ctas %d us %.2f\n", what, M, N, K, sms, p.bn,
		       p.splits, p.mode, p.ctas, p.us);
}

static void random_checks(void)
{
	static const int pins_bn[5] = { 0, 128, 192, 256, 96 };
	for (int iter = 0; iter < 20000; iter++) {
		g_ngpc = 4 + (int)rnd(5);
		int sms = 0;
		for (int i = 0; i < g_ngpc; i++)
			sms += g_gpc[i] = 3 + (int)rnd(16); /* GPCs of 3..18 SMs: clusters of 4..8 sometimes not resident */
		const int M = 1 + (int)rnd(1200), N = 8 + 2 * (int)rnd(15000), K = 8 * (1 + (int)rnd(2500));
		const int pin_bn = iter % 3 ? 0 : pins_bn[rnd(5)], pin_mode = iter % 5 ? -1 : (int)rnd(3);
		const int w96 = (int)rnd(3); /* version 17 off / M <= 256 / any M: a third of the draws each */
		const V6Plan p = v6_plan(M, N, K, sms, fake_clusters, pin_bn, pin_mode, w96);
		g_w96_plans += p.bn == 96;
		/* width 96 has no cluster instance: pinned to it and to clusters, the plan must fall back to v2's */
		const V6Plan pc = v6_plan(M, N, K, sms, fake_clusters, 96, kV6Cluster, w96);
		expect(pc.bn != 96, "no width-96 cluster plan", M, N, K, sms, pc);
		const int kbc = (K + 63) / 64;
		expect(p.bn == 128 || p.bn == 192 || p.bn == 256 ||
			       (p.bn == 96 && p.mode == kV6Persistent && v6_w96_ok(M, N, sms, w96)),
		       "width", M, N, K, sms, p);
		expect(p.mode >= kV6Persistent && p.mode <= kV6GlobalSplit, "mode", M, N, K, sms, p);
		expect(p.splits >= 1 && (p.mode == kV6GlobalSplit || p.splits <= 8) && p.splits <= kbc, "split range", M, N, K,
		       sms, p);
		const int per = (kbc + p.splits - 1) / p.splits;
		expect((kbc + per - 1) / per == p.splits, "no empty split", M, N, K, sms, p);
		if (p.mode == kV6Cluster)
			expect(p.splits >= 2 && fake_clusters(p.bn, p.splits) >= 1 &&
				       p.ctas == ((M + 127) / 128) * ((N + p.bn - 1) / p.bn) * p.splits,
			       "cluster plan", M, N, K, sms, p);
		if (p.mode == kV6Persistent)
			expect(p.splits == 1 && p.ctas <= sms, "persistent plan", M, N, K, sms, p);
		if (p.mode == kV6GlobalSplit)
			expect(p.bn == 256 && p.splits == v6_v2_splits(M, N, K, sms), "v2 plan", M, N, K, sms, p);
		/* the pins, unless nothing they allow exists (then v2's schedule) */
		const bool v2_allowed = (!pin_bn || pin_bn == 256) && (pin_mode < 0 || pin_mode == kV6GlobalSplit);
		if (p.mode != kV6GlobalSplit || v2_allowed) {
			expect(!pin_bn || p.bn == pin_bn, "pinned width", M, N, K, sms, p);
			expect(pin_mode < 0 || p.mode == pin_mode, "pinned mode", M, N, K, sms, p);
		}
		const int slots = p.mode == kV6Cluster ? fake_clusters(p.bn, p.splits) : 0;
		int ctas = 0;
		const double c = v6_cost(M, N, K, sms, p.bn, p.splits, p.mode, slots, &ctas);
		expect(c > 0.0 && fabs(c * 1e6 - p.us) < 1e-9 && ctas == p.ctas, "cost as v6_cost", M, N, K, sms, p);
		/* brute force: nothing allowed is cheaper */
		double best = 1e300;
		for (int bn = 64; bn <= 256; bn += 32)
			for (int s = 1; s <= 8; s++)
				for (int mode = 0; mode < 3; mode++) {
					if ((pin_bn && bn != pin_bn) || (pin_mode >= 0 && mode != pin_mode))
						continue;
					if (bn != 128 && bn != 192 && bn != 256 &&
					    (bn != 96 || mode != kV6Persistent || !v6_w96_ok(M, N, sms, w96)))
						continue; /* widths 128 / 192 / 256, and 96 where version 17 allows it */
					if (mode == kV6GlobalSplit && (bn != 256 || s != v6_v2_splits(M, N, K, sms)))
						continue;
					const double t = v6_cost(M, N, K, sms, bn, s, mode,
								 mode == kV6Cluster ? fake_clusters(bn, s) : 0, nullptr);
					if (t > 0.0 && t < best)
						best = t;
				}
		if (best < 1e300)
			expect(p.us <= best * 1e6 + 1e-9, "cheapest allowed schedule", M, N, K, sms, p);
		/* monotone: twice the tokens (when the SMs are already all busy: fewer CTAs stream DRAM slower, so
		 * below that more tiles can be cheaper) or twice the K never cheaper, same schedule */
		if (p.mode == kV6Persistent && p.ctas == sms) {
			const double c2 = v6_cost(2 * M, N, K, sms, p.bn, 1, p.mode, 0, nullptr);
			expect(c2 >= c, "more tokens not cheaper", M, N, K, sms, p);
		}
		expect(v6_cost(M, N, K, sms, p.bn, 2, kV6Cluster, 0, nullptr) < 0.0, "no cluster schedule without a resident cluster",
		       M, N, K, sms, p);
		const double ck = v6_cost(M, N, 2 * K, sms, p.bn, p.splits, p.mode, slots, nullptr);
		expect(ck < 0.0 || ck >= c, "more K not cheaper", M, N, K, sms, p);
	}
}

static void h200(void)
{
	static const int g[8] = { 16, 16, 16, 16, 16, 16, 18, 18 };
	g_ngpc = 8;
	for (int i = 0; i < 8; i++)
		g_gpc[i] = g[i];
}

static const char *mode_name(int m)
{
	return m == kV6Persistent ? "p" : (m == kV6Cluster ? "c" : "g");
}

/* The calibration cases: measured CUPTI device time (solforge eval, GEMM_NOTES.md "Version 6") beside v6_cost
 * of the schedule that ran. */
static void calibration(void)
{
	struct Case {
		int n, k, m, bn, s, mode;
		double measured;
	};
	static const Case cases[] = {
		{ 28672, 4096, 1024, 256, 1, kV6Persistent, 336.4 }, { 4096, 4096, 1024, 256, 1, kV6Persistent, 50.88 },
		{ 6144, 4096, 1024, 192, 1, kV6Persistent, 75.09 },  { 28672, 4096, 512, 192, 1, kV6Persistent, 186.54 },
		{ 28672, 4096, 256, 256, 1, kV6Persistent, 106.72 }, { 6144, 4096, 512, 256, 1, kV6GlobalSplit, 47.71 },
		{ 4096, 4096, 512, 256, 2, kV6GlobalSplit, 35.17 },  { 4096, 4096, 256, 256, 4, kV6GlobalSplit, 28.19 },
		{ 6144, 4096, 256, 256, 5, kV6GlobalSplit, 35.73 },
		/* event-timed runs (session 3: v3c128, v3), minus the ~4.4 us events add: less certain */
		{ 4096, 4096, 512, 128, 1, kV6Persistent, 28.8 },    { 4096, 14336, 512, 128, 1, kV6Persistent, 81.5 },
		{ 4096, 4096, 128, 128, 4, kV6Cluster, 21.6 },	     { 4096, 14336, 128, 128, 4, kV6Cluster, 43.4 },
		{ 4096, 4096, 256, 256, 4, kV6Cluster, 22.8 },
	};
	printf("v6 model calibration (132 SMs; measured = CUPTI device time of the schedule that ran):\n");
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const Case &c = cases[i];
		const double t = v6_cost(c.m, c.n, c.k, 132, c.bn, c.s, c.mode, fake_clusters(c.bn, c.s), nullptr) * 1e6;
		printf("  %5dx%-5d M=%-4d %3dx%d%s predicted %7.2f us measured %7.2f (%+.1f%%)\n", c.n, c.k, c.m, c.bn, c.s,
		       mode_name(c.mode), t, c.measured, 100.0 * (t - c.measured) / c.measured);
	}
}

static void llama_plans(void)
{
	const int shapes[4][2] = { { 4096, 4096 }, { 6144, 4096 }, { 28672, 4096 }, { 4096, 14336 } };
	const int ms[] = { 64, 128, 200, 256, 333, 384, 511, 512, 1000 };
	printf("v6 plans on 132 SMs (bn x splits, p = persistent, c = cluster, g = v2 global split; predicted us; "
	       "v2's schedule beside):\n");
	for (int sh = 0; sh < 4; sh++)
		for (unsigned i = 0; i < sizeof ms / sizeof ms[0]; i++) {
			const int M = ms[i], N = shapes[sh][0], K = shapes[sh][1];
			const V6Plan p = v6_plan(M, N, K, 132, fake_clusters, 0, -1);
			const V6Plan q = v6_plan(M, N, K, 132, fake_clusters, 0, kV6Persistent);
			const V6Plan r = v6_plan(M, N, K, 132, fake_clusters, 0, kV6Cluster);
			const V6Plan g = v6_plan(M, N, K, 132, fake_clusters, 256, kV6GlobalSplit);
			printf("  %5dx%-5d M=%-4d v6 %3dx%d%s %6.1f | best persistent %3dx%d %6.1f | best cluster %3dx%d%s %6.1f | "
			       "v2 256x%d %6.1f\n",
			       N, K, M, p.bn, p.splits, mode_name(p.mode), p.us, q.bn, q.splits, q.us, r.bn, r.splits,
			       mode_name(r.mode), r.us, g.splits, g.us);
		}
	/* fixed expectations that GEMM_NOTES.md states */
	h200();
	const V6Plan a = v6_plan(512, 4096, 4096, 132, fake_clusters, 0, -1);
	expect(a.mode == kV6Persistent && a.bn == 128, "4096^2 M=512: 128 x 128 unsplit", 512, 4096, 4096, 132, a);
	const V6Plan b = v6_plan(512, 6144, 4096, 132, fake_clusters, 0, -1);
	expect(b.mode == kV6Persistent && b.bn == 192, "6144x4096 M=512: 128 x 192 unsplit", 512, 6144, 4096, 132, b);
	/* version 17 (GEMM_NOTES_MID_M2.md): w96 1 moves 6144x4096 M 193..256 (the v6 range below 257 that half bands leave)
	 * to 96 persistent, 128 CTAs, and no other Llama plan at M 129..512; w96 2 also the 4096-row shapes at M 257..384 */
	for (int sh = 0; sh < 4; sh++)
		for (int M = 129; M <= 512; M++)
			for (int w96 = 1; w96 <= 2; w96++) {
				const int N = shapes[sh][0], K = shapes[sh][1];
				const V6Plan p0 = v6_plan(M, N, K, 132, fake_clusters, 0, -1);
				const V6Plan p1 = v6_plan(M, N, K, 132, fake_clusters, 0, -1, w96);
				const bool want96 = (N == 6144 && M <= 256) || (w96 == 2 && N == 4096 && M > 256 && M <= 384);
				if (want96)
					expect(p1.bn == 96 && p1.mode == kV6Persistent && p1.splits == 1 &&
						       p1.ctas == ((M + 127) / 128) * ((N + 95) / 96),
					       "version 17: width 96 persistent", M, N, K, 132, p1);
				else
					expect(p1.bn == p0.bn && p1.mode == p0.mode && p1.splits == p0.splits,
					       "version 17: plan unchanged", M, N, K, 132, p1);
			}
	const V6Plan c = v6_plan(256, 6144, 4096, 132, fake_clusters, 0, -1, 1);
	printf("version 17 plan 6144x4096 M=256 (w96 1): %dx%d%s %d CTAs, predicted %.1f us (w96 0: %.1f)\n", c.bn, c.splits,
	       mode_name(c.mode), c.ctas, c.us, v6_plan(256, 6144, 4096, 132, fake_clusters, 0, -1).us);
}

/* Version 18 (SF_GEMM_MIDM_MW, mw_route): the route is taken exactly at 128 < M <= min(max_m, 192) on weights of more
 * 128-row bands than SMs, with mw 1 or 2, and gives mw; where mw 1 takes a case, v4's full-band tiles (the token tile
 * midm_plan picks: 192 up to M 192, else 256) compute at most 0.75x the outputs per SM of v10's 128 x 256 tiles (the v6
 * plan there); on the H200-like GPU it moves exactly 28672 x 4096 M 129..192 of the Llama shapes, at <= 0.8x the v6 plan's
 * outputs per SM (mw 1) and <= 1.0x (mw 2: half bands, 64 x M rounded up to 16). */
static void mw_checks(void)
{
	for (int iter = 0; iter < 20000; iter++) {
		const int M = 1 + (int)rnd(600), N = 8 + 2 * (int)rnd(30000), sms = 16 + (int)rnd(185);
		const int mw = (int)rnd(4), max_m = 96 + (int)rnd(161);
		const int r = mw_route(M, N, sms, mw, max_m);
		const long bands = (N + 127) / 128;
		const bool want = (mw == 1 || mw == 2) && M > 128 && M <= max_m && M <= 192 && bands > sms;
		const V6Plan none = { 0, 0, 0, 0, 0.0 };
		expect(r == (want ? mw : 0), "version 18: route exactly where allowed", M, N, mw, sms, none);
		if (r == 1) {
			const int nt = M <= 192 ? 192 : 256; /* midm_plan's token tile above 128 */
			const long a4 = mw_sm_area(bands, 128, nt, sms), a10 = mw_sm_area(2L * ((N + 255) / 256), 128, 256, sms);
			expect(4 * a4 <= 3 * a10, "version 18: v4 full bands <= 0.75x v10's outputs per SM", M, N, mw, sms, none);
		}
	}
	h200();
	const int shapes[4][2] = { { 4096, 4096 }, { 6144, 4096 }, { 28672, 4096 }, { 4096, 14336 } };
	for (int sh = 0; sh < 4; sh++)
		for (int M = 1; M <= 512; M++)
			for (int mw = 0; mw <= 2; mw++) {
				const int N = shapes[sh][0], K = shapes[sh][1];
				const int want = mw && N == 28672 && M > 128 && M <= 192 ? mw : 0;
				const V6Plan p = v6_plan(M, N, K, 132, fake_clusters, 0, -1, 2); /* the default build's plan */
				const int r192 = mw_route(M, N, 132, mw, 192), r256 = mw_route(M, N, 132, mw, 256);
				expect(r192 == want && r256 == want, "version 18: Llama routes (MIDM_MAX_M 192 / 256)", M, N, K, 132, p);
				if (!want)
					continue;
				const long tiles = (long)((M + 127) / 128) * ((N + p.bn - 1) / p.bn) * p.splits;
				const long a6 = mw_sm_area(tiles, 128, p.bn, 132);
				const long a = mw == 1 ? mw_sm_area((N + 127) / 128, 128, 192, 132)
						       : mw_sm_area((N + 63) / 64, 64, (M + 15) / 16 * 16, 132);
				expect(mw == 1 ? 5 * a <= 4 * a6 : a <= a6, "version 18: fewer outputs per SM than the v6 plan", M, N,
				       K, 132, p);
				if (mw == 1 && (M == 129 || M == 192))
					printf("version 18 plan %dx%d M=%d: v4 192 x %d CTAs, %ld outputs per SM vs v6 %dx%d%s %ld "
					       "(%d CTAs, predicted %.1f us)\n",
					       N, K, M, (N + 127) / 128, a, p.bn, p.splits, mode_name(p.mode), a6, p.ctas, p.us);
			}
}

int main(int argc, char **argv)
{
	g_rng = argc > 1 ? strtoull(argv[1], 0, 10) | 1 : 88172645463325252ull;
	random_checks();
	h200();
	calibration();
	llama_plans();
	mw_checks();
	expect(g_w96_plans > 0, "random draws reach width 96", 0, 0, 0, 0, V6Plan{ 0, 0, 0, 0, 0.0 });
	printf("%d passed, %d failed (%d random plans at width 96)\n", passed, failed, g_w96_plans);
	return failed ? 1 : 0;
}
