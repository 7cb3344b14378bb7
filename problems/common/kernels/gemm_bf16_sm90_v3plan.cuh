/*
 * gemm_bf16_sm90_v3plan.cuh - the version-3 host plan of gemm_bf16_sm90.cu (tile width, K splits, DSMEM
 * clusters, pair multicast per (M, N, K)): plain host C++, moved out of the .cu to keep it readable.
 * Included by gemm_bf16_sm90.cu after gemm_bf16_sm90_wgmma.cuh (sfgemm::kWgMaxCluster) and
 * gemm_bf16_sm90_config.cuh (SF_GEMM_V3_AUTO, SF_GEMM_V3_AUTO_PCT); tests/gemm/v3_plan_test.cu checks it.
 * Internal linkage (an anonymous namespace, as the rest of the .cu): every solution .so keeps its own copy.
 */
#pragma once

namespace {

/*
 * Version 3 host plan (SF_GEMM_V3=1; GEMM_NOTES.md, "Version 3"). A plan is a tile width bn (128, 192,
 * 256; tile 128 x bn) and a K split count; cluster != 0 means the splits run as one thread-block cluster
 * per tile and are reduced through distributed shared memory (gemm_wgmma_kernel<bn, kWgSplitCluster>);
 * pair != 0 means persistent clusters of 2 CTAs sharing B by TMA multicast (<bn, kWgPairMulticast>).
 */
struct V3Plan {
	int bn, splits, cluster, pair;
};

/* Relative cost of one 128 x bn tile-column per unit of N at tile width bn (the narrower wgmma reads A
 * from shared memory more often per output): used to compare tile widths. */
double v3_width_cost(int bn)
{
	return bn == 256 ? 1.0 : (bn == 192 ? 1.04 : 1.12);
}

/*
 * The v3 plan for C[M, N] = A[M, K] B[N, K]^T on sms SMs. max_clusters(bn, s) is how many clusters of s
 * CTAs of the kernel with width bn can be resident at once (< 1: not launchable). force_bn (large M) /
 * split_bn (mid M), when non-zero, pin the tile width; use_cluster = 0 keeps mid M on the v2
 * split-K (returned as {256, 0, 0, 0}: the caller runs v2's launch); pair_clusters (null: no pairs) is
 * how many clusters of 2 of the pair-multicast kernel of width bn (256 or 192) can be resident. Rules:
 *   - tiles of 128 x 256 >= sms (large M): persistent, no split; bn minimizing
 *     ceil(tiles(bn) / sms) * bn * v3_width_cost(bn) (SF_GEMM_V3_AUTO: 256 unless that beats 256's by
 *     the margin) (whole waves of equal tiles: 6144 x 4096 at M = 1024 is 2 waves of 128 x 192 instead
 *     of 1.45 -> 2 waves of 128 x 256); with pair_clusters, the same over pair units (ceil(tiles_m / 2)
 *     x tiles_n) and resident clusters of 2, widths 256 / 192 (and an unsplit 128 x 256 mid-M plan with
 *     an even tile-row count runs paired if no wave is added);
 *   - otherwise (mid M): bn in {256, 128} and s in 1..8 (no empty split) minimizing
 *     the sum over waves (ceil(tiles / clusters resident), the last one partial) of
 *     max(flops per CTA * width cost / 5.5 TF, bytes per CTA / 120 GB/s, the wave's DRAM bytes / bw)
 *     + (s > 1: 1 us + a 128 x bn fp32 slab at 100 GB/s of DSMEM), bw = 3.3 TB/s scaled down by the
 *     CTAs of the wave when they are fewer than 85% of the SMs.
 * Every returned split count leaves no split empty: ceil(kb / ceil(kb / s)) == s for kb = ceil(K / 64).
 */
V3Plan v3_plan(int M, int N, int K, int sms, int (*max_clusters)(int bn, int s), int force_bn, int split_bn,
	       int use_cluster, int (*pair_clusters)(int bn))
{
	const int tm = (M + 127) / 128, kbc = (K + 63) / 64;
	const int tiles256 = tm * ((N + 255) / 256);
	V3Plan best = { 256, 1, 0, 0 };
	if (tiles256 >= sms && pair_clusters) {
		double best_cost = 0.0;
		for (int bn = 256; bn >= 192; bn -= 64) {
			const int slots = pair_clusters(bn), pu = (tm + 1) / 2 * ((N + bn - 1) / bn);
			if ((force_bn && bn != force_bn) || slots < 1)
				continue;
			const double cost = (double)((pu + slots - 1) / slots) * bn * v3_width_cost(bn);
			if (best_cost == 0.0 || cost < best_cost) {
				best_cost = cost;
				best.bn = bn;
				best.pair = 1;
			}
		}
		if (best.pair)
			return best;
	}
	if (tiles256 >= sms) {
		static const int widths[3] = { 256, 192, 128 };
		double best_cost = 0.0;
		for (int w = 0; w < 3; w++) {
			const int bn = widths[w];
			if (force_bn && bn != force_bn)
				continue;
			const int tiles = tm * ((N + bn - 1) / bn);
			const double cost = (double)((tiles + sms - 1) / sms) * bn * v3_width_cost(bn);
			if (best_cost == 0.0 || cost < best_cost) {
				best_cost = cost;
				best.bn = bn;
			}
		}
		if (SF_GEMM_V3_AUTO && !force_bn && best.bn != 256) { /* a margin for the width-cost model's error */
			const double cost256 = (double)((tm * ((N + 255) / 256) + sms - 1) / sms) * 256 * v3_width_cost(256);
			if (best_cost > cost256 * (1.0 - SF_GEMM_V3_AUTO_PCT / 100.0))
				best.bn = 256;
		}
		return best;
	}
	if (!use_cluster) {
		best.splits = 0; /* v2's split-K */
		return best;
	}
	const double dram = 2.0 * ((double)N * K + (double)M * K + (double)M * N);
	double best_t = 0.0;
	for (int bn = 256; bn >= 128; bn -= 128) {
		if (split_bn && bn != split_bn)
			continue;
		const int tiles = tm * ((N + bn - 1) / bn);
		for (int s = 1; s <= sfgemm::kWgMaxCluster && s <= kbc; s++) {
			const int per = (kbc + s - 1) / s;
			if ((kbc + per - 1) / per != s)
				continue;
			/* resident at once: CTAs (s == 1, persistent) or clusters of s */
			const int slots = s == 1 ? sms : max_clusters(bn, s);
			if (slots < 1)
				continue;
			const int waves = (tiles + slots - 1) / slots, last = tiles - (waves - 1) * slots;
			const double flops = 2.0 * 128 * bn * per * 64 * v3_width_cost(bn) / 5.5e12;
			const double bytes = (128.0 + bn) * 2 * per * 64 / 120e9;
			double t = s > 1 ? 1e-6 + 128.0 * bn * 4 / 100e9 : 0.0;
			for (int w = 0; w < 2; w++) { /* the full waves, then the last one */
				const int n_w = w == 0 ? waves - 1 : 1, tiles_w = w == 0 ? slots : last;
				if (n_w < 1)
					continue;
				/* fewer CTAs than ~85% of the SMs draw less than the full DRAM bandwidth */
				const double active = (double)tiles_w * s;
				const double bw = 3.3e12 * (active < 0.85 * sms ? active / (0.85 * sms) : 1.0);
				double tw = dram * tiles_w / tiles / bw;
				tw = tw > flops ? tw : flops;
				tw = tw > bytes ? tw : bytes;
				t += n_w * tw;
			}
			if (best_t == 0.0 || t < best_t) {
				best_t = t;
				best.bn = bn;
				best.splits = s;
				best.cluster = s > 1;
			}
		}
	}
	/* an unsplit mid-M plan (e.g. 4096 x 4096 at M = 1024: 128 tiles) runs paired when the tile rows pair up
	 * evenly and the pairs fit the same number of waves */
	if (pair_clusters && best.splits == 1 && best.bn == 256 && tm % 2 == 0) {
		const int slots = pair_clusters(256), pu = tm / 2 * ((N + 255) / 256), tiles = tm * ((N + 255) / 256);
		if (slots >= 1 && (pu + slots - 1) / slots <= (tiles + sms - 1) / sms)
			best.pair = 1;
	}
	return best;
}

} /* namespace */
