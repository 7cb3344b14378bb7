/*
 * v3_plan_test.cu - host-side check of the bf16 GEMM's version-3 plan (v3_plan in
 * problems/common/kernels/gemm_bf16_sm90.cu, included whole; no GPU needed): for random shapes (M, N, K
 * in 1..20000 x 8..30000 x 8..20000, K % 8 == 0), random SM counts and random cluster occupancies (a
 * GPU of random GPC sizes: clusters of s resident = sum over GPCs of floor(SMs in it / s)), every plan
 * must have: a supported width; no empty K split; splits 1..8; a cluster only with >= 2 splits, a
 * launchable cluster size and width 128 / 256; large M (tiles of 128 x 256 >= SMs) never split and its
 * width the cheapest by whole waves (brute force); mid M never worse in the plan's own cost than v2's
 * unsplit 128 x 256; with pair_clusters, large M always paired (width 192 / 256), mid M the same plan,
 * paired only when unsplit at width 256 with an even tile-row count.
 * Then prints the plans of the four Llama shapes on an H200-like GPU (132 SMs, GPCs of 16-18 SMs),
 * without and with pairs, for GEMM_NOTES.md. The same for the v4 mid-M plan (sfgemm::midm_plan, in
 * gemm_bf16_sm90_midm.cuh, included through the .cu): token tile, CTAs per SM, split range, no empty
 * split, pinned splits honoured, otherwise one wave, >= 4 K blocks per split and every band's cluster
 * resident; and its plans of the Llama shapes at one and two CTAs per SM. And the v5 small-M plan
 * (sfgemm::sm5_plan, gemm_bf16_sm90_smallm_v5.cuh), smallest tile 32 and 128: one wave, no empty split,
 * clusters resident, the least work per CTA (brute force), the tile table, and the four Llama plans. And the
 * version-16 half-band plan (sfgemm::midm_plan_hb with fit 0 / 1 / 2: instantiated exact-fit tiles, FIT 2's two token
 * tiles; midm_fit_checks). Prints "N passed, M failed"; exit status 1 on a failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#define SF_GEMM_V3 1
#define SF_GEMM_V3_CLUSTER 1 /* the full v3 plan (cluster split-K at mid M, the cheapest width at large M): */
#define SF_GEMM_V3_AUTO 0    /* its invariants; the default build (v3a) only narrows the width choice */
#include "../../problems/common/kernels/gemm_bf16_sm90.cu"
#include "../../problems/common/kernels/gemm_bf16_sm90_midm_sk.cuh" /* version 26's schedule arithmetic (sk_bound, sk_count) */

static int g_gpc[16], g_ngpc;

static int fake_clusters(int bn, int s)
{
	(void)bn;
	int n = 0;
	for (int i = 0; i < g_ngpc; i++)
		n += g_gpc[i] / s;
	return n;
}

static int fake_pairs(int bn)
{
	return fake_clusters(bn, 2);
}

static uint64_t g_rng;

static uint32_t rnd(uint32_t n)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return (uint32_t)(g_rng % n);
}

static int failed, passed;

static void expect(int ok, const char *what, int M, int N, int K, int sms, V3Plan p)
{
	if (ok) {
		passed++;
		return;
	}
	if (failed++ < 20)
		printf("FAIL %s: M %d N %d K %d sms %d -> bn %d splits %d cluster %d\n", what, M, N, K, sms, p.bn, p.splits,
		       p.cluster);
}

/* clusters of s CTAs resident at cps CTAs per SM on the fake GPU (g_gpc) */
static int fake_midm_clusters(int nt, int cps, int s)
{
	(void)nt;
	int n = 0;
	for (int i = 0; i < g_ngpc; i++)
		n += cps * g_gpc[i] / s;
	return n;
}

static void midm_expect(int ok, const char *what, int M, int N, int K, int sms, int pin, int two, sfgemm::MidmPlan p)
{
	if (ok) {
		passed++;
		return;
	}
	if (failed++ < 20)
		printf("FAIL midm %s: M %d N %d K %d sms %d pin %d 2cta %d -> nt %d cps %d splits %d\n", what, M, N, K, sms, pin,
		       two, p.nt, p.cps, p.splits);
}

/* The v4 plan (sfgemm::midm_plan, gemm_bf16_sm90_midm.cuh) on random shapes and GPUs, then the Llama plans. */
static void midm_checks(void)
{
	for (int iter = 0; iter < 20000; iter++) {
		g_ngpc = 4 + (int)rnd(5);
		int sms = 0;
		for (int i = 0; i < g_ngpc; i++)
			sms += g_gpc[i] = 8 + (int)rnd(11);
		const int M = 1 + (int)rnd(256), N = 8 + 2 * (int)rnd(15000), K = 8 * (1 + (int)rnd(2500));
		const int pin = iter % 3 ? 0 : 1 + (int)rnd(10), two = (int)rnd(2);
		const sfgemm::MidmPlan p = sfgemm::midm_plan(M, N, K, sms, pin, two, fake_midm_clusters);
		const int kb = (K + 63) / 64, bands = (N + 127) / 128;
		const int want_nt = M <= 32 ? 32 : M <= 64 ? 64 : M <= 96 ? 96 : M <= 128 ? 128 : M <= 192 ? 192 : 256;
		midm_expect(p.nt == want_nt, "token tile", M, N, K, sms, pin, two, p);
		midm_expect(p.cps == (two && p.nt <= 96 ? 2 : 1), "CTAs per SM", M, N, K, sms, pin, two, p);
		midm_expect(p.splits >= 1 && p.splits <= 8 && p.splits <= kb, "split range", M, N, K, sms, pin, two, p);
		if (p.splits >= 1) {
			const int per = (kb + p.splits - 1) / p.splits;
			midm_expect((kb + per - 1) / per == p.splits, "no empty split", M, N, K, sms, pin, two, p);
		}
		if (pin > 0) {
			midm_expect(p.splits <= pin, "pinned splits", M, N, K, sms, pin, two, p);
		} else if (p.splits > 1) {
			midm_expect(bands * p.splits <= p.cps * sms, "one wave", M, N, K, sms, pin, two, p);
			midm_expect(kb / p.splits >= 4, ">= 4 K blocks per split", M, N, K, sms, pin, two, p);
			midm_expect(fake_midm_clusters(p.nt, p.cps, p.splits) >= bands, "clusters fit", M, N, K, sms, pin, two, p);
		}
	}
	const int h200[8] = { 16, 16, 16, 16, 16, 16, 18, 18 };
	g_ngpc = 8;
	for (int i = 0; i < 8; i++)
		g_gpc[i] = h200[i];
	const int shapes[4][2] = { { 6144, 4096 }, { 4096, 4096 }, { 28672, 4096 }, { 4096, 14336 } };
	const int want[4][2] = { { 2, 5 }, { 4, 8 }, { 1, 1 }, { 4, 8 } }; /* splits at 1 and 2 CTAs per SM */
	const int ms[] = { 17, 32, 33, 64, 77, 96, 128, 200, 256 };
	printf("v4 mid-M plans on 132 SMs (nt x splits, * = two CTAs per SM with SF_GEMM_MIDM_2CTA):\n%-11s", "M");
	for (unsigned i = 0; i < sizeof ms / sizeof ms[0]; i++)
		printf(" %7d", ms[i]);
	printf("\n");
	for (int two = 0; two < 2; two++)
		for (int sh = 0; sh < 4; sh++) {
			printf("%5dx%-5d", shapes[sh][0], shapes[sh][1]);
			for (unsigned i = 0; i < sizeof ms / sizeof ms[0]; i++) {
				const sfgemm::MidmPlan p = sfgemm::midm_plan(ms[i], shapes[sh][0], shapes[sh][1], 132, 0, two,
									     fake_midm_clusters);
				printf(" %3dx%d%s ", p.nt, p.splits, p.cps == 2 ? "*" : " ");
				midm_expect(p.splits == want[sh][p.cps - 1], "Llama plan", ms[i], shapes[sh][0], shapes[sh][1], 132, 0,
					    two, p);
			}
			printf("\n");
		}
}

/*
 * Version 16 (GEMM_NOTES_MID_M2.md): the half-band plan (sfgemm::midm_plan_hb) with fit 0 / 1 / 2 on random shapes and
 * GPUs: fit 0 the version-13 tiles (64 / 128 / 192 / 256); fit 1 a tile of the ten an SF_GEMM_MIDM_FIT build
 * instantiates, covering M, within 16 of M at M 65-192; fit 2 fit 1's plan unless that splits K in two at M > 64, then
 * two token tiles (splits 1) of nt < M <= 2 nt, nt >= 64 a multiple of 16 within 16 of ceil(M / 2) (or 64); then the
 * Llama plans on the H200's GPCs.
 */
static void midm_fit_checks(void)
{
	const int inst[10] = { 64, 80, 96, 112, 128, 144, 160, 176, 192, 256 };
	for (int iter = 0; iter < 20000; iter++) {
		g_ngpc = 4 + (int)rnd(5);
		int sms = 0;
		for (int i = 0; i < g_ngpc; i++)
			sms += g_gpc[i] = 8 + (int)rnd(11);
		const int M = 17 + (int)rnd(240), N = 8 + 2 * (int)rnd(15000), K = 8 * (1 + (int)rnd(2500));
		const int pin = iter % 3 ? 0 : 1 + (int)rnd(10);
		const sfgemm::MidmPlan p0 = sfgemm::midm_plan_hb(M, N, K, sms, pin, fake_midm_clusters, 0);
		const sfgemm::MidmPlan p1 = sfgemm::midm_plan_hb(M, N, K, sms, pin, fake_midm_clusters, 1);
		const sfgemm::MidmPlan p2 = sfgemm::midm_plan_hb(M, N, K, sms, pin, fake_midm_clusters, 2);
		const sfgemm::MidmPlan def = sfgemm::midm_plan_hb(M, N, K, sms, pin, fake_midm_clusters);
		/* fit 2 with drawn limits (the default build's SF_GEMM_MIDM_TT_MIN_M / _TT_MAX_K are 128 / 4096) */
		const int tmin = 64 + 16 * (int)rnd(9), tmaxk = 8 * (1 + (int)rnd(2500));
		const sfgemm::MidmPlan pl = sfgemm::midm_plan_hb(M, N, K, sms, pin, fake_midm_clusters, 2, tmin, tmaxk);
		const bool tt = p1.splits == 2 && M > tmin && K <= tmaxk;
		midm_expect(tt ? (pl.ttiles == 2 && pl.splits == 1 && pl.nt == p2.nt)
			       : (pl.ttiles == 1 && pl.nt == p1.nt && pl.splits == p1.splits),
			    "fit 2 with limits: token tiles only above the M floor and up to the K cap", M, N, K, sms, pin, 2, pl);
		int known = 0;
		for (int i = 0; i < 10; i++)
			known += p1.nt == inst[i];
		midm_expect(p0.nt == (M <= 64 ? 64 : M <= 128 ? 128 : M <= 192 ? 192 : 256) && p0.ttiles == 1 &&
				    p0.nt == def.nt && p0.splits == def.splits && def.ttiles == 1,
			    "fit 0: the version-13 plan", M, N, K, sms, pin, 0, p0);
		midm_expect(known == 1 && p1.nt >= M && p1.ttiles == 1 && (M <= 64 || M > 192 || p1.nt - M < 16),
			    "fit 1: an instantiated tile within 16 of M", M, N, K, sms, pin, 0, p1);
		/* version 24 (SF_GEMM_MIDM_TT_SMALL): with tt_small and a floor below 64, the two tiles of ceil(M / 2) rounded
		 * up to 16 (16, 32, 48 or 64) wherever fit 1 splits K in two at M > floor; everything else as without it */
		const int sfloor = 16 + 16 * (int)rnd(8);
		const sfgemm::MidmPlan ps = sfgemm::midm_plan_hb(M, N, K, sms, pin, fake_midm_clusters, 2, sfloor, 1 << 30, 1);
		const sfgemm::MidmPlan pn = sfgemm::midm_plan_hb(M, N, K, sms, pin, fake_midm_clusters, 2, sfloor, 1 << 30, 0);
		if (p1.splits == 2 && M > sfloor && (M + 1) / 2 <= 64)
			midm_expect(ps.ttiles == 2 && ps.splits == 1 && ps.nt == ((M + 1) / 2 + 15) / 16 * 16 && ps.nt < M &&
					    M <= 2 * ps.nt && 2 * ps.nt - M < 32,
				    "tt_small: two narrow token tiles", M, N, K, sms, pin, 2, ps);
		else
			midm_expect(ps.nt == pn.nt && ps.splits == pn.splits && ps.ttiles == pn.ttiles,
				    "tt_small: the plan without it", M, N, K, sms, pin, 2, ps);
		if (p1.splits == 2 && M > 64) {
			int k2 = 0;
			for (int i = 0; i < 10; i++)
				k2 += p2.nt == inst[i];
			midm_expect(k2 == 1 && p2.ttiles == 2 && p2.splits == 1 && p2.nt < M && M <= 2 * p2.nt && p2.nt % 16 == 0 &&
					    (p2.nt == 64 || p2.nt - (M + 1) / 2 < 16),
				    "fit 2: two token tiles", M, N, K, sms, pin, 0, p2);
		} else {
			midm_expect(p2.nt == p1.nt && p2.splits == p1.splits && p2.ttiles == 1, "fit 2: fit 1's plan", M, N, K, sms,
				    pin, 0, p2);
		}
	}
	const int h200[8] = { 16, 16, 16, 16, 16, 16, 18, 18 };
	g_ngpc = 8;
	for (int i = 0; i < 8; i++)
		g_gpc[i] = h200[i];
	/* the default build's rule (FIT 2, token tiles at M > 16 with the narrow tiles of version 24, K <= 4096): 4096^2 M
	 * 100 / 129 / 192 token tiles, 4096 x 14336 the fit-1 plan; above M 192 (SF_GEMM_MIDM_TT_TOP_M, session 16) the run() dispatch takes the
	 * half bands only where this plan has two token tiles: 4096^2 M 200 / 256 yes, 6144 x 4096 and 4096 x 14336 at
	 * M 256 no (nt / splits -1: not checked) */
	const int dwant[8][6] = { { 4096, 4096, 129, 80, 1, 2 },   { 4096, 4096, 192, 96, 1, 2 },
				  { 4096, 4096, 100, 64, 1, 2 } ,  { 4096, 14336, 176, 176, 2, 1 },
				  { 4096, 4096, 200, 112, 1, 2 },  { 4096, 4096, 256, 128, 1, 2 },
				  { 6144, 4096, 256, -1, -1, 1 },  { 4096, 14336, 256, -1, -1, 1 } };
	for (int i = 0; i < 8; i++) {
		const sfgemm::MidmPlan p =
			sfgemm::midm_plan_hb(dwant[i][2], dwant[i][0], dwant[i][1], 132, 0, fake_midm_clusters, 2,
					     SF_GEMM_MIDM_TT_MIN_M, SF_GEMM_MIDM_TT_MAX_K, SF_GEMM_MIDM_TT_SMALL);
		midm_expect((dwant[i][3] < 0 || p.nt == dwant[i][3]) && (dwant[i][4] < 0 || p.splits == dwant[i][4]) &&
				    p.ttiles == dwant[i][5],
			    "default Llama plan", dwant[i][2], dwant[i][0], dwant[i][1], 132, 0, 2, p);
	}
	/* version 24 on the H200 (tt_small, floor 16): 4096^2 M 32 / 64 / 77 / 128 two tiles of 16 / 32 / 48 / 64; 6144 x 4096
	 * M 64 unsplit (no K split to replace) */
	const int swant[5][5] = { { 4096, 32, 16, 1, 2 }, { 4096, 64, 32, 1, 2 }, { 4096, 77, 48, 1, 2 },
				  { 4096, 128, 64, 1, 2 }, { 6144, 64, 64, 1, 1 } };
	for (int i = 0; i < 5; i++) {
		const sfgemm::MidmPlan p =
			sfgemm::midm_plan_hb(swant[i][1], swant[i][0], 4096, 132, 0, fake_midm_clusters, 2, 16, 4096, 1);
		midm_expect(p.nt == swant[i][2] && p.splits == swant[i][3] && p.ttiles == swant[i][4], "tt_small Llama plan",
			    swant[i][1], swant[i][0], 4096, 132, 0, 2, p);
	}
	/* N, K, M, fit -> nt, splits, ttiles */
	const int want[8][7] = { { 4096, 4096, 129, 1, 144, 2, 1 },  { 4096, 4096, 129, 2, 80, 1, 2 },
				 { 6144, 4096, 129, 1, 144, 1, 1 },  { 6144, 4096, 129, 2, 144, 1, 1 },
				 { 4096, 14336, 176, 1, 176, 2, 1 }, { 4096, 14336, 176, 2, 96, 1, 2 },
				 { 4096, 4096, 192, 1, 192, 2, 1 },  { 4096, 4096, 100, 2, 64, 1, 2 } };
	for (int i = 0; i < 8; i++) {
		const sfgemm::MidmPlan p =
			sfgemm::midm_plan_hb(want[i][2], want[i][0], want[i][1], 132, 0, fake_midm_clusters, want[i][3]);
		midm_expect(p.nt == want[i][4] && p.splits == want[i][5] && p.ttiles == want[i][6], "v16 Llama plan", want[i][2],
			    want[i][0], want[i][1], 132, 0, want[i][3], p);
	}
}

/* clusters of s CTAs of the v5 small-M kernel (one CTA per SM) resident on the fake GPU */
static int fake_sm5_clusters(int rb, int s)
{
	(void)rb;
	int n = 0;
	for (int i = 0; i < g_ngpc; i++)
		n += g_gpc[i] / s;
	return n;
}

static void sm5_expect(int ok, const char *what, int N, int K, int sms, sfgemm::Sm5Plan p)
{
	if (ok) {
		passed++;
		return;
	}
	if (failed++ < 20)
		printf("FAIL sm5 %s: N %d K %d sms %d -> cfg %d rb %d splits %d\n", what, N, K, sms, p.cfg, p.rb, p.splits);
}

/* The v5 small-M plan (sfgemm::sm5_plan, gemm_bf16_sm90_smallm_v5.cuh), with the smallest tile 32 (the
 * default) and 128 (candidate sm5c): one wave, no empty split, clusters resident, the least work per CTA
 * among all feasible (tile, s) (brute force here); then the Llama plans of both. */
static void sm5_checks(void)
{
	for (int iter = 0; iter < 20000; iter++) {
		g_ngpc = 4 + (int)rnd(5);
		int sms = 0;
		for (int i = 0; i < g_ngpc; i++)
			sms += g_gpc[i] = 8 + (int)rnd(11);
		const int N = 2 + 2 * (int)rnd(20000), K = 8 * (1 + (int)rnd(2500)), kb = (K + 63) / 64;
		const int min_rb = iter & 1 ? 128 : 32;
		const sfgemm::Sm5Plan p = sfgemm::sm5_plan(N, K, sms, min_rb, fake_sm5_clusters);
		long best = 0;
		for (int s = 1; s <= 8 && s <= kb; s++)
			for (int c = 0; c < sfgemm::kSm5NCfg; c++) {
				const int rb = sfgemm::kSm5Cfgs[c][0], per = (kb + s - 1) / s, tiles = (N + rb - 1) / rb;
				if (rb >= min_rb && (kb + per - 1) / per == s && tiles * s <= sms &&
				    (s == 1 || fake_sm5_clusters(rb, s) >= tiles) && (best == 0 || (long)rb * per < best))
					best = (long)rb * per;
			}
		if (p.rb == 0) {
			sm5_expect(best == 0, "no plan although one fits", N, K, sms, p);
			continue;
		}
		const int per = (kb + p.splits - 1) / p.splits, tiles = (N + p.rb - 1) / p.rb;
		sm5_expect(p.cfg >= 0 && p.cfg < sfgemm::kSm5NCfg && sfgemm::kSm5Cfgs[p.cfg][0] == p.rb && p.rb >= min_rb,
			   "tile configuration", N, K, sms, p);
		sm5_expect(p.splits >= 1 && p.splits <= 8 && p.splits <= kb, "split range", N, K, sms, p);
		sm5_expect((kb + per - 1) / per == p.splits, "no empty split", N, K, sms, p);
		sm5_expect(tiles * p.splits <= sms, "one wave", N, K, sms, p);
		sm5_expect(p.splits == 1 || fake_sm5_clusters(p.rb, p.splits) >= tiles, "clusters fit", N, K, sms, p);
		sm5_expect((long)p.rb * per == best, "least work per CTA", N, K, sms, p);
	}
	for (int c = 0; c < sfgemm::kSm5NCfg; c++)
		sm5_expect(sfgemm::kSm5Cfgs[c][0] == 8 * sfgemm::kSm5Cfgs[c][1] * sfgemm::kSm5Cfgs[c][2] &&
				   (c == 0 || sfgemm::kSm5Cfgs[c][0] > sfgemm::kSm5Cfgs[c - 1][0]),
			   "configuration table (RB = 8 W G, ascending)", 0, 0, 0, sfgemm::Sm5Plan{ c, sfgemm::kSm5Cfgs[c][0], 1 });
	const int h200[8] = { 16, 16, 16, 16, 16, 16, 18, 18 };
	g_ngpc = 8;
	for (int i = 0; i < 8; i++)
		g_gpc[i] = h200[i];
	/* N, K, then rb x splits with min_rb 32 and with min_rb 128 */
	const int shapes[4][6] = { { 6144, 4096, 48, 1, 192, 4 }, { 4096, 4096, 32, 1, 128, 4 }, { 28672, 4096, 224, 1, 224, 1 },
				   { 4096, 14336, 32, 1, 128, 4 } };
	printf("v5 small-M plans on 132 SMs (rb x splits; smallest tile 32 / 128):");
	for (int i = 0; i < 4; i++) {
		const sfgemm::Sm5Plan p = sfgemm::sm5_plan(shapes[i][0], shapes[i][1], 132, 32, fake_sm5_clusters);
		const sfgemm::Sm5Plan q = sfgemm::sm5_plan(shapes[i][0], shapes[i][1], 132, 128, fake_sm5_clusters);
		printf(" %dx%d %dx%d / %dx%d;", shapes[i][0], shapes[i][1], p.rb, p.splits, q.rb, q.splits);
		sm5_expect(p.rb == shapes[i][2] && p.splits == shapes[i][3], "Llama plan", shapes[i][0], shapes[i][1], 132, p);
		sm5_expect(q.rb == shapes[i][4] && q.splits == shapes[i][5], "Llama plan (min 128)", shapes[i][0], shapes[i][1], 132, q);
	}
	printf("\n");
}

/*
 * Version 26 (SF_GEMM_MIDM_SK, gemm_bf16_sm90_midm_sk.cuh): sk_count (the later parts of a band on the stream-K schedule
 * and the slot of each) against a brute force over the range boundaries, on random (bands, K blocks, CTAs) that meet the
 * host's rule (bands <= G, 2 U > G (kbc + 2)); under that rule a band has at most two later parts, and the slots of a
 * band's later parts are 1..parts in unit order.
 */
static void sk_expect(int ok, const char *what, int bands, int kbc, int G, int b)
{
	if (ok) {
		passed++;
		return;
	}
	if (failed++ < 20)
		printf("FAIL %s: bands %d K blocks %d CTAs %d band %d\n", what, bands, kbc, G, b);
}

static void sk_checks(void)
{
	for (int iter = 0; iter < 4000; iter++) {
		const int G = 2 + (int)rnd(200), kbc = 1 + (int)rnd(300), bands = 1 + (int)rnd(G);
		const int U = bands * kbc;
		if (!(2 * (int64_t)U > (int64_t)G * (kbc + 2)))
			continue;
		for (int b = 0; b < bands; b++) {
			int inner = 0;
			for (int j = 1; j < G; j++) {
				const int x = sfgemm::sk_bound(j, U, G);
				if (x > b * kbc && x < (b + 1) * kbc) {
					inner++;
					sk_expect(sfgemm::sk_count(b, kbc, x, U, G) == inner, "sk slot = rank of the part's start", bands, kbc, G,
					       b);
				}
			}
			sk_expect(sfgemm::sk_count(b, kbc, (b + 1) * kbc - 1, U, G) == inner, "sk later parts of a band", bands, kbc,
			       G, b);
			sk_expect(inner <= 2, "sk at most two later parts", bands, kbc, G, b);
		}
	}
}

int main(int argc, char **argv)
{
	g_rng = argc > 1 ? strtoull(argv[1], 0, 10) | 1 : 88172645463325252ull;
	for (int iter = 0; iter < 20000; iter++) {
		g_ngpc = 4 + (int)rnd(5);
		int sms = 0;
		for (int i = 0; i < g_ngpc; i++)
			sms += g_gpc[i] = 8 + (int)rnd(11);
		const int M = 1 + (int)rnd(iter & 1 ? 600 : 20000), N = 8 + 2 * (int)rnd(15000), K = 8 * (1 + (int)rnd(2500));
		const V3Plan p = v3_plan(M, N, K, sms, fake_clusters, 0, 0, 1, nullptr);
		const int kbc = (K + 63) / 64, tm = (M + 127) / 128;
		expect(p.bn == 128 || p.bn == 192 || p.bn == 256, "width", M, N, K, sms, p);
		expect(p.splits >= 1 && p.splits <= 8 && p.splits <= kbc, "split range", M, N, K, sms, p);
		if (p.splits >= 1) {
			const int per = (kbc + p.splits - 1) / p.splits;
			expect((kbc + per - 1) / per == p.splits, "no empty split", M, N, K, sms, p);
		}
		expect(!p.cluster || (p.splits >= 2 && p.bn != 192 && fake_clusters(p.bn, p.splits) >= 1), "cluster", M, N, K,
		       sms, p);
		const int tiles256 = tm * ((N + 255) / 256);
		if (tiles256 >= sms) {
			expect(p.splits == 1 && !p.cluster, "large M unsplit", M, N, K, sms, p);
			double best = 1e300;
			for (int bn = 128; bn <= 256; bn += 64) {
				const double c = (double)((tm * ((N + bn - 1) / bn) + sms - 1) / sms) * bn * v3_width_cost(bn);
				best = c < best ? c : best;
			}
			const double got = (double)((tm * ((N + p.bn - 1) / p.bn) + sms - 1) / sms) * p.bn * v3_width_cost(p.bn);
			expect(got <= best, "large M cheapest width", M, N, K, sms, p);
		} else {
			expect(p.bn != 192, "mid M width", M, N, K, sms, p);
		}
		const V3Plan v2like = v3_plan(M, N, K, sms, fake_clusters, 0, 0, 0, nullptr);
		expect(tiles256 >= sms ? v2like.splits == 1 : v2like.splits == 0, "use_cluster 0 defers to v2", M, N, K, sms,
		       v2like);
		const V3Plan pinned = v3_plan(M, N, K, sms, fake_clusters, 128, 128, 1, nullptr);
		expect(pinned.bn == 128, "pinned width", M, N, K, sms, pinned);
		expect(!p.pair && !v2like.pair && !pinned.pair, "no pair without pair_clusters", M, N, K, sms, p);
		const V3Plan pp = v3_plan(M, N, K, sms, fake_clusters, 0, 0, 1, fake_pairs);
		if (tiles256 >= sms) {
			expect(pp.pair && pp.splits == 1 && !pp.cluster && (pp.bn == 256 || pp.bn == 192), "large M pair plan", M, N,
			       K, sms, pp);
		} else {
			expect(pp.bn == p.bn && pp.splits == p.splits && pp.cluster == p.cluster &&
				       (!pp.pair || (pp.splits == 1 && pp.bn == 256 && tm % 2 == 0)),
			       "mid M: the same plan, paired only unsplit with even tile rows", M, N, K, sms, pp);
		}
	}
	/* H200-like: 132 SMs in GPCs of 16-18 */
	const int h200[8] = { 16, 16, 16, 16, 16, 16, 18, 18 };
	g_ngpc = 8;
	for (int i = 0; i < 8; i++)
		g_gpc[i] = h200[i];
	const int shapes[4][2] = { { 6144, 4096 }, { 4096, 4096 }, { 28672, 4096 }, { 4096, 14336 } };
	const int ms[] = { 17, 32, 64, 77, 128, 256, 512, 1000, 1024, 2048, 4096, 5000, 8192 };
	for (int pairs = 0; pairs < 2; pairs++) {
		printf("plans on 132 SMs%s (bn x splits, c = cluster split-K, p = pair multicast):\n%-11s",
		       pairs ? " with pairs (SF_GEMM_V3_PAIR=1)" : "", "M");
		for (unsigned i = 0; i < sizeof ms / sizeof ms[0]; i++)
			printf(" %6d", ms[i]);
		printf("\n");
		for (int s = 0; s < 4; s++) {
			printf("%5dx%-5d", shapes[s][0], shapes[s][1]);
			for (unsigned i = 0; i < sizeof ms / sizeof ms[0]; i++) {
				const V3Plan p = v3_plan(ms[i], shapes[s][0], shapes[s][1], 132, fake_clusters, 0, 0, 1,
							 pairs ? fake_pairs : nullptr);
				printf(" %3dx%d%s", p.bn, p.splits, p.cluster ? "c" : (p.pair ? "p" : " "));
			}
			printf("\n");
		}
	}
	const V3Plan q = v3_plan(1024, 6144, 4096, 132, fake_clusters, 0, 0, 1, nullptr);
	expect(q.bn == 192 && q.splits == 1, "6144x4096 M=1024 plan (2 waves of 128 x 192)", 1024, 6144, 4096, 132, q);
	const V3Plan r = v3_plan(128, 4096, 4096, 132, fake_clusters, 0, 0, 1, nullptr);
	expect(r.cluster && r.splits * ((r.bn == 256) ? 16 : 32) <= 132, "4096^2 M=128 plan (one wave of clusters)", 128, 4096,
	       4096, 132, r);
	midm_checks();
	midm_fit_checks();
	sk_checks();
	sm5_checks();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
