/*
 * gemm_bf16_sm90_v6plan.cuh - the version-6 host plan of gemm_bf16_sm90.cu for mid M (129..512 by default,
 * SF_GEMM_V6): a small cost model that picks, per (M, N, K), the tile width (128 x 128, 128 x 192 or
 * 128 x 256) and the schedule among the wgmma kernel's existing modes: persistent and unsplit, one cluster
 * of s CTAs per tile reduced through DSMEM (kWgSplitCluster), or v2's global split-K (launch_wgmma).
 * Version 17 (SF_GEMM_V6_BN96) adds persistent 128 x 96 tiles where they fill one wave (v6_w96_ok). Version 18's
 * candidate route (mw_route, SF_GEMM_MIDM_MW) decides which multi-wave mid-M cases leave this plan for the mid-M path.
 * Plain host C++ (no CUDA types): tests/gemm/v6_plan_test.cpp compiles it with g++ alone.
 * The model, its calibration points and its predictions: GEMM_NOTES.md, "Version 6".
 */
#pragma once

namespace sfgemm {

/* v6 schedules: persistent unsplit tiles, cluster split-K (DSMEM), v2's persistent global split-K */
const int kV6Persistent = 0, kV6Cluster = 1, kV6GlobalSplit = 2;

struct V6Plan {
	int bn;	    /* tile width: 128, 192 or 256 (tiles are 128 rows) */
	int splits; /* K splits per tile (1 for kV6Persistent) */
	int mode;   /* kV6Persistent, kV6Cluster or kV6GlobalSplit */
	int ctas;   /* CTAs launched (grid) */
	double us;  /* the model's predicted device time, microseconds */
};

/* Model constants (GEMM_NOTES.md "Version 6" gives the measured case each one is fitted to). */
const double kV6Rate = 5.8e12;	 /* MMA FLOP/s of one CTA at width 256 (28672x4096 M=1024: 7 rounds in 336 us) */
const double kV6L2 = 12.0e12;	 /* L2 -> SM bytes/s, all SMs together (128 x 128 tiles, 4096x14336 M=512) */
const double kV6Dram = 3.3e12;	 /* DRAM bytes/s with >= 85% of the SMs streaming */
const double kV6Overlap = 0.1;	 /* share of min(MMA, DRAM) time not hidden per round (28672x4096 M=256) */
const double kV6Fixed = 3.0e-6;	 /* launch, prologue, first TMA round trip, last epilogue */
const double kV6ClusterRed = 6.0e-6; /* cluster split-K: slab to shared memory, 2 cluster barriers, DSMEM sum */
const double kV6GlobalRed0 = 3.0e-6, kV6GlobalRedPerSplit = 2.6e-6; /* v2 slabs: fence, atomics, serial sum */
/* Measured / predicted time of the cluster split-K plans on the H200 (session 7, 7 cases of M 200-512:
 * 1.08-1.37, median 1.21; the persistent and v2 plans came within -18..+17% without a bias). Applied to
 * the whole cluster prediction. */
const double kV6ClusterSlow = 1.22;

/* Relative MMA cost per FLOP of a 128 x bn tile (fitted: 192 from 6144x4096 M=1024, 128 from v3n128 / v3c128;
 * v3_width_cost's guess for 128, 1.12, was too high). The L2 traffic of narrow tiles is kV6L2's term. */
static inline double v6_width_cost(int bn)
{
	return bn == 256 ? 1.0 : 1.04;
}

/* The split count v2's launch_wgmma picks for 128 x 256 tiles (kept in step with it): SMs / tiles, at
 * least 4 K blocks per split, no empty split; 1 when the tiles fill the SMs. */
static inline int v6_v2_splits(int M, int N, int K, int sms)
{
	const int tiles = ((M + 127) / 128) * ((N + 255) / 256), kbc = (K + 63) / 64;
	if (tiles >= sms)
		return 1;
	int s = sms / tiles;
	if (s > kbc / 4)
		s = kbc / 4;
	if (s < 1)
		s = 1;
	const int per = (kbc + s - 1) / s;
	return (kbc + per - 1) / per;
}

/*
 * Predicted seconds of one schedule: kV6Fixed + max(tc, td) + kV6Overlap x min(tc, td), where tc is the
 * sum over rounds (a round = the CTAs resident at once: SMs for the persistent modes, resident clusters x
 * s for kV6Cluster; the last one partial) of max(MMA of one CTA's K range, the round's L2 -> SM bytes /
 * kV6L2) and td the unique DRAM bytes 2 (NK + MK + MN) / kV6Dram, scaled down when fewer than 85% of the
 * SMs stream; plus the reduction (kV6ClusterRed per round of clusters, or v2's kV6GlobalRed0 + kV6GlobalRedPerSplit x s). slots: clusters of s
 * resident (kV6Cluster only). Returns a negative value for a schedule that cannot run (no slot, an
 * empty split). ctas receives the grid size.
 */
static inline double v6_cost(int M, int N, int K, int sms, int bn, int s, int mode, int slots, int *ctas)
{
	const int tm = (M + 127) / 128, tiles = tm * ((N + bn - 1) / bn), kbc = (K + 63) / 64;
	const int per = (kbc + s - 1) / s;
	if (s < 1 || (kbc + per - 1) / per != s || sms < 1 || (mode == kV6Cluster && (s < 2 || slots < 1)) ||
	    (mode == kV6Persistent && s != 1))
		return -1.0;
	const double dram = 2.0 * ((double)N * K + (double)M * K + (double)M * N);
	const int units = tiles * s, grid = mode == kV6Cluster ? units : (units < sms ? units : sms);
	/* per round: CTAs running; rounds of whole units */
	const int per_round = mode == kV6Cluster ? slots * s : sms;
	const int rounds = (units + per_round - 1) / per_round;
	const double mma = 2.0 * 128 * bn * per * 64 * v6_width_cost(bn) / kV6Rate;
	const double cta_bytes = (128.0 + bn) * 2 * 64 * per;
	double tc = 0.0; /* MMA or L2 -> SM, whichever binds, round by round */
	for (int r = 0; r < rounds; r++) {
		const int active = r < rounds - 1 ? per_round : units - r * per_round;
		const double tl = active * cta_bytes / kV6L2;
		tc += mma > tl ? mma : tl;
	}
	/* DRAM: the unique bytes once, streamed by the CTAs of a full round (slower below 85% of the SMs) */
	const int streaming = units < per_round ? units : per_round;
	const double td = dram / (kV6Dram * (streaming < 0.85 * sms ? streaming / (0.85 * sms) : 1.0));
	double t = kV6Fixed + (tc > td ? tc : td) + kV6Overlap * (tc < td ? tc : td);
	if (mode == kV6Cluster) /* every round's CTAs reduce before their SMs take the next round */
		t = (t + rounds * kV6ClusterRed) * kV6ClusterSlow;
	else if (mode == kV6GlobalSplit && s > 1)
		t += kV6GlobalRed0 + kV6GlobalRedPerSplit * s;
	if (ctas)
		*ctas = grid;
	return t;
}

/* Version 17 (GEMM_NOTES_MID_M2.md "Version 17"): whether persistent 128 x 96 tiles are a v6 candidate: w96 > 0, their
 * tiles fill one wave to >= 90% of the SMs (0.9 sms <= tiles <= sms: 6144-row weights at M 129-256, 128 CTAs on 132 SMs),
 * and M <= 256 unless w96 is 2. */
static inline bool v6_w96_ok(int M, int N, int sms, int w96)
{
	const long tiles = (long)((M + 127) / 128) * ((N + 95) / 96);
	return w96 > 0 && (w96 == 2 || M <= 256) && tiles <= sms && 10 * tiles >= 9L * sms;
}

/* Version 18 candidate (SF_GEMM_MIDM_MW; GEMM_NOTES_MID_M2.md "Version 18"): which mid-M kernel takes a weight of more
 * 128-row bands than SMs (28672 rows on 132 SMs: the v6 plan runs 224 tiles of 128 tokens x 256 there, 2 rounds, the
 * second token tile 1..64 real rows) at 128 < M <= min(max_m, kMwMaxM). Returns 0 (not taken: the v6 / v10 plan as
 * before), 1 (mw 1: v4's full-band kernel, token tile 192, unsplit, one CTA per band: 25% less MMA per SM at the same
 * wave count) or 2 (mw 2: the same dispatch, v13's half bands with exact-fit token tiles). Above kMwMaxM the swap tile is
 * 256 tokens, the v10 tile's area: no gain. At M <= 128 v4 measured 2% behind v2 (GEMM_NOTES.md "Version 4 measured"). */
const int kMwMaxM = 192;
static inline int mw_route(int M, int N, int sms, int mw, int max_m)
{
	const long bands = ((long)N + 127) / 128;
	if (mw < 1 || mw > 2 || M <= 128 || M > max_m || M > kMwMaxM || bands <= sms)
		return 0;
	return mw;
}

/* Outputs computed per SM (rounds x tile area; MMA work per SM up to the constant 2 K) of `units` equal tiles of rows x cols
 * at one CTA per SM on sms SMs: the measure by which version 18 (mw_route) beats the v6 plan (plan tests only). */
static inline long mw_sm_area(long units, int rows, int cols, int sms)
{
	return (units + sms - 1) / sms * (long)rows * cols;
}

/*
 * The v6 plan: the cheapest schedule by v6_cost over persistent unsplit widths 128 / 192 / 256, cluster
 * split-K widths 128 / 192 / 256 with s = 2..8 (no empty split, clusters resident per max_clusters(bn, s);
 * < 1: not launchable) and v2's global split-K at its own split count (width 256); w96 (version 17,
 * SF_GEMM_V6_BN96; 0: never) adds persistent width 96 where v6_w96_ok allows it. pin_bn (0: any) and
 * pin_mode (-1: any) restrict the choice (candidates that measure one family). Ties keep the earlier
 * candidate: v2's schedule, then widths 256, 192, 128, 96, each with s = 1..8. Always returns a runnable
 * plan: v2's schedule when the pins exclude everything else.
 */
static inline V6Plan v6_plan(int M, int N, int K, int sms, int (*max_clusters)(int bn, int s), int pin_bn, int pin_mode,
			     int w96 = 0)
{
	const int widths[4] = { 256, 192, 128, 96 }; /* not static: a function-local static of an inline function is an
						      * STB_GNU_UNIQUE symbol, shared between libraries (GEMM_NOTES.md, midm anomaly) */
	V6Plan best = { 256, 1, kV6GlobalSplit, 0, -1.0 };
	const int s2 = v6_v2_splits(M, N, K, sms);
	best.splits = s2;
	best.us = v6_cost(M, N, K, sms, 256, s2, kV6GlobalSplit, 0, &best.ctas) * 1e6;
	const bool v2_allowed = (pin_bn == 0 || pin_bn == 256) && (pin_mode < 0 || pin_mode == kV6GlobalSplit);
	bool have = v2_allowed;
	for (int w = 0; w < 4; w++) {
		const int bn = widths[w];
		if ((pin_bn && bn != pin_bn) || (bn == 96 && !v6_w96_ok(M, N, sms, w96)))
			continue;
		for (int s = 1; s <= (bn == 96 ? 1 : 8); s++) { /* width 96: persistent only (no cluster instance) */
			const int mode = s == 1 ? kV6Persistent : kV6Cluster;
			if (pin_mode >= 0 && mode != pin_mode)
				continue;
			const int slots = mode == kV6Cluster && max_clusters ? max_clusters(bn, s) : 0;
			int ctas = 0;
			const double t = v6_cost(M, N, K, sms, bn, s, mode, slots, &ctas);
			if (t < 0.0)
				continue;
			if (!have || t * 1e6 < best.us) {
				best.bn = bn;
				best.splits = s;
				best.mode = mode;
				best.ctas = ctas;
				best.us = t * 1e6;
				have = true;
			}
		}
	}
	return best;
}

} /* namespace sfgemm */
