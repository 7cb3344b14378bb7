/*
 * gemm_bf16_sm90_midm_mc.cuh - version-12 candidate of the v4 mid-M path (-DSF_GEMM_MIDM_MC=1, default 0: this header
 * is then not included and the default build's PTX is unchanged; GEMM_NOTES_MID_M.md "Version 12"): the swap-AB
 * kernel of gemm_bf16_sm90_midm.cuh (weight band of 128 rows as the wgmma M side, NT tokens as its N side, one unit
 * per CTA, K split over the CTAs of a cluster reduced through DSMEM) with TWO bands per cluster, whose CTAs of the
 * same K split share the activation tile: each loads half of it (NT / 2 token rows) and multicasts it into both.
 * The activation bytes read from L2 halve (v4: bands x NT x K x 2 bytes, as many as the weight at NT 128), and
 * each activation line is requested by half as many SMs at once.
 *
 * Work: grid = ceil(bands / 2) * 2 * splits, clusters of cl = 2 * splits CTAs along x (cl <= 8). Cluster rank r =
 * blockIdx.x % cl: band half bh = r / splits, K split r % splits; band = 2 (blockIdx.x / cl) + bh. With an odd band
 * count the last cluster's second band is a padded band: it loads the weight of the last real band (no box wholly
 * past N), computes, reduces and stores nothing (every column is checked against N). The pair partner of rank r is
 * rank (1 - bh) * splits + split (same K range); the split-K ranks of a band are bh * splits + 0 .. splits - 1.
 *
 * Ring protocol (version 8's, run correct on the H200: GEMM_NOTES_LARGE_M.md "Version 8 measured"), per stage s:
 *   full[s]  1 arrival: the own producer's arrive.expect_tx of the whole stage (own weight 16 KB + both activation
 *            halves); the bytes come from the own weight load, the own half (multicast) and the partner's half
 *            (multicast, possibly before the local expect: the phase cannot complete before the local arrival).
 *   empty[s] 16 arrivals: the 8 consumer warps of both CTAs of the pair (each producer's multicast writes slot s of
 *            both); lane 0 arrives locally, lane 1 on the partner's barrier (mapa + mbarrier.arrive.shared::cluster).
 * The first ring round's weight loads (own CTA, own barriers) are issued before the first cluster barrier, their
 * activation halves after it (a slot of the first round is free in both CTAs: no empty wait).
 * Cluster barriers: after the barrier init (no multicast into an uninitialised partner), then the reduction's two
 * (slabs written / slabs read) or, unsplit, two before exit (no remote arrive on an exited partner).
 * SF_GEMM_MIDM_MC_TRIP (default 4, as v4): output pairs whose DSMEM loads (all the band's ranks) are issued together in
 * the reduction; 8 takes a rank's whole share at NT 128 and 4 splits in one round trip (a diagnostic of whether the
 * reduction is latency-bound).
 * SF_GEMM_MIDM_MC=2 (control): the same clusters, barriers and lockstep, but each CTA loads its whole activation tile
 * itself (no multicast): separates the byte saving from the cost of the pairing.
 *
 * Requirements (checked by the host): K % 8 == 0, A and B 16-byte aligned, M <= NT, M > NT / 2 (no activation
 * half wholly past M), 2 * splits <= 8. tm_x's box: NT / 2 rows (MC 1) or NT (MC 2).
 */
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "gemm_bf16_sm90_midm.cuh"
#include "gemm_bf16_sm90_config.cuh" /* SF_GEMM_MIDM_MC */

namespace sfgemm {


/*
 * One launch: grid ceil(bands / 2) * 2 * splits, kWgThreads threads, MidmCfg<NT, 1>::kSmemBytes dynamic shared
 * memory, clusters of 2 * splits CTAs along x. tm_w: the weight B [N][K], box 128 rows; tm_x: the activations A
 * [M][K], box NT / 2 rows (SF_GEMM_MIDM_MC 1) or NT (2). C [M][N] row-major.
 */
template <int NT>
__global__ void __launch_bounds__(kWgThreads, 1)
	gemm_midm_mc_kernel(const __grid_constant__ CUtensorMap tm_w, const __grid_constant__ CUtensorMap tm_x,
			    __nv_bfloat16 *__restrict__ C, int M, int N, int K, int splits)
{
	typedef MidmCfg<NT, 1> Cfg;
	const int kStages = Cfg::kStages, kStageBytes = Cfg::kStageBytes, kNR = NT / 2, kXHalf = Cfg::kXBytes / 2;
	static_assert(kXHalf % 1024 == 0, "each activation half starts on a 1024-byte swizzle atom");
	extern __shared__ uint8_t smem_raw[];
	const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
	const uint32_t base = (raw + 1023) & ~1023u;
	const uint32_t bar_full = base + kStages * kStageBytes, bar_empty = bar_full + 8 * kStages;
	const int wg = threadIdx.x / 128;
	const int cl = 2 * splits, r = (int)blockIdx.x % cl; /* r: the cluster rank (clusters of cl along x) */
	const int bh = r / splits, split = r % splits, band = (int)blockIdx.x / cl * 2 + bh;
	const int wrow = min(band, (N + kMidmRows - 1) / kMidmRows - 1) * kMidmRows; /* a padded band: the last real one */
	const uint32_t peer = (uint32_t)((1 - bh) * splits + split);
	const int kb_count = (K + kWgBK - 1) / kWgBK, kb_per = (kb_count + splits - 1) / splits;
	const int kb0 = split * kb_per, kb1 = min(kb0 + kb_per, kb_count);

	if (threadIdx.x == 0) {
		asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tm_w) : "memory");
		asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tm_x) : "memory");
		for (int s = 0; s < kStages; s++) {
			mbar_init(bar_full + 8 * s, 1);
			mbar_init(bar_empty + 8 * s, 16);
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	/* the first ring round of weight loads (own CTA only) goes out before the cluster barrier: the DRAM round trip
	 * starts as early as in v4; the activation halves (multicast, L2-resident) wait for the partner's init */
	const int npre = min(kb1 - kb0, kStages);
	if (threadIdx.x == 0)
		for (int i = 0; i < npre; i++) {
			mbar_expect_tx(bar_full + 8 * i, kStageBytes);
			tma_load_2d(base + i * kStageBytes, &tm_w, bar_full + 8 * i, (kb0 + i) * kWgBK, wrow);
		}
	cluster_sync(); /* the partner's barriers are initialised before any multicast or remote arrive */

	if (wg == 0) {
		asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
		if (threadIdx.x == 0) {
#if SF_GEMM_MIDM_MC == 1
			const uint16_t mask = (uint16_t)((1u << split) | (1u << (splits + split)));
#endif
			uint32_t it = 0;
			for (int kb = kb0; kb < kb1; kb++, it++) {
				const uint32_t s = it % kStages, ph = (it / kStages) & 1;
				const uint32_t sw = base + s * kStageBytes;
				if ((int)it >= npre) { /* the first round's weight loads went out before the cluster barrier */
					mbar_wait(bar_empty + 8 * s, ph ^ 1);
					mbar_expect_tx(bar_full + 8 * s, kStageBytes);
					tma_load_2d(sw, &tm_w, bar_full + 8 * s, kb * kWgBK, wrow);
				}
#if SF_GEMM_MIDM_MC == 1
				tma_load_2d_mc(sw + Cfg::kWBytes + bh * kXHalf, &tm_x, bar_full + 8 * s, kb * kWgBK, bh * (NT / 2), mask);
#else
				tma_load_2d(sw + Cfg::kWBytes, &tm_x, bar_full + 8 * s, kb * kWgBK, 0);
#endif
			}
		}
		cluster_sync(); /* the consumers' two cluster barriers count every thread of the CTA */
		cluster_sync();
		return;
	}

	asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
	const int c = wg - 1; /* weight rows 64 c .. 64 c + 63 of the band */
	const int tid = threadIdx.x - 128 * wg, warp = tid >> 5, lane = tid & 31;
	const int g = lane >> 2, q = lane & 3;
	float d[kNR];
#pragma unroll
	for (int i = 0; i < kNR; i++)
		d[i] = 0.0f;
	uint32_t it = 0, prev = 0;
	for (int kb = kb0; kb < kb1; kb++, it++) {
		const uint32_t s = it % kStages, ph = (it / kStages) & 1;
		mbar_wait(bar_full + 8 * s, ph);
		const uint32_t sw = base + s * kStageBytes + c * (64 * 128), sx = base + s * kStageBytes + Cfg::kWBytes;
		wgmma_fence();
#pragma unroll
		for (int kk = 0; kk < kWgBK / 16; kk++)
			wgmma_m64k16<NT>(d, wg_desc(sw + kk * 32), wg_desc(sx + kk * 32));
		wgmma_commit();
		if (kb > kb0) {
			wgmma_wait<1>(); /* the batch of stage prev has retired: its slot is free in both CTAs */
			if (lane == 0)
				mbar_arrive(bar_empty + 8 * prev);
			else if (lane == 1)
				midm_arrive_peer(bar_empty + 8 * prev, peer);
		}
		prev = s;
	}
	wgmma_wait<0>();
	if (kb1 > kb0) {
		if (lane == 0)
			mbar_arrive(bar_empty + 8 * prev);
		else if (lane == 1)
			midm_arrive_peer(bar_empty + 8 * prev, peer);
	}

	/* weight row of this thread's registers 4 j + e: n_b (+ 8 for e >= 2); token 8 j + 2 q + (e & 1) */
	const int n_b = band * kMidmRows + c * 64 + warp * 16 + g;
	if (splits == 1) {
#pragma unroll
		for (int j = 0; j < NT / 8; j++) {
			const int m = 8 * j + 2 * q;
#pragma unroll
			for (int e = 0; e < 4; e++) {
				const int n = n_b + (e >= 2 ? 8 : 0), mm = m + (e & 1);
				if (n < N && mm < M)
					C[(size_t)mm * N + n] = __float2bfloat16_rn(d[4 * j + e]);
			}
		}
		cluster_sync(); /* as the producer's two: no CTA exits while its partner may still arrive on its barriers */
		cluster_sync();
		return;
	}

	/* cluster split-K: slab in the own (idle) ring, then a share of the pairs summed over the band's ranks */
	const int j = tid + 128 * c;
	/* both consumer warpgroups are past their last wgmma and every load into this ring (own and partner's) has
	 * landed: each was for a stage this CTA's full barrier completed */
	asm volatile("bar.sync 1, 256;" ::: "memory");
	float2 *slab = (float2 *)(smem_raw + (base - raw));
#pragma unroll
	for (int p = 0; p < kNR / 2; p++)
		slab[p * 256 + j] = make_float2(d[2 * p], d[2 * p + 1]);
	cluster_sync();
	const int S = splits, share = (kNR / 2 + S - 1) / S, rb = bh * S; /* rb: cluster rank of the band's split 0 */
	const int p0 = split * share, p1 = min(p0 + share, kNR / 2);
	const int kTrip = SF_GEMM_MIDM_MC_TRIP;
	for (int p = p0; p < p1; p += kTrip) { /* kTrip * S DSMEM loads in flight */
		float2 v[kTrip][kMidmMaxSplit / 2];
#pragma unroll
		for (int h = 0; h < kTrip; h++)
#pragma unroll
			for (int r2 = 0; r2 < kMidmMaxSplit / 2; r2++)
				if (r2 < S && p + h < p1)
					v[h][r2] = dsmem_ld_f2(base + (uint32_t)((p + h) * 256 + j) * 8, (uint32_t)(rb + r2));
#pragma unroll
		for (int h = 0; h < kTrip; h++) {
			float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
			for (int r2 = 0; r2 < kMidmMaxSplit / 2; r2++)
				if (r2 < S && p + h < p1) {
					s0 += v[h][r2].x;
					s1 += v[h][r2].y;
				}
			/* pair ph = registers (2 ph, 2 ph + 1): j = ph / 2, e = 2 (ph % 2) and 2 (ph % 2) + 1 */
			const int ph = p + h, n = n_b + ((ph & 1) ? 8 : 0), m = (ph >> 1) * 8 + 2 * q;
			if (ph < p1 && n < N) {
				if (m < M)
					C[(size_t)m * N + n] = __float2bfloat16_rn(s0);
				if (m + 1 < M)
					C[(size_t)(m + 1) * N + n] = __float2bfloat16_rn(s1);
			}
		}
	}
	cluster_sync();
}

/* Version 12 host rule (plain host code; emulate_fragments.py mirrors it): whether the v4 plan (nt, cps, s) of an
 * M x N problem runs as band pairs: one CTA per SM, M > nt / 2, clusters of 2 s <= 8 CTAs of which
 * `resident` (cudaOccupancyMaxActiveClusters; < 0: not consulted) hold all ceil(bands / 2) pairs at once, and the
 * padded band of an odd count keeps the grid within one wave of sms. */
inline bool midm_mc_take(int M, int N, int nt, int cps, int s, int sms, int resident)
{
	const int bands = (N + kMidmRows - 1) / kMidmRows, pairs = (bands + 1) / 2;
	return cps == 1 && 2 * M > nt && 2 * s <= kMidmMaxSplit && pairs * 2 * s <= sms &&
	       (resident < 0 || resident >= pairs);
}

namespace { /* internal linkage: a function-local static of an external template would be an STB_GNU_UNIQUE symbol
	     * shared by every library of one process (GEMM_NOTES.md, the midm_s1/s2/s4 anomaly) */

/* Sets the dynamic shared memory limit of gemm_midm_mc_kernel<NT> once; 0 on success. */
template <int NT> int midm_mc_attr(void)
{
	static bool set = false;
	if (!set) {
		if (cudaFuncSetAttribute(gemm_midm_mc_kernel<NT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					 MidmCfg<NT, 1>::kSmemBytes) != cudaSuccess)
			return -1;
		set = true;
	}
	return 0;
}

/* Clusters of cl CTAs (2, 4, 6, 8) of gemm_midm_mc_kernel<NT> resident at once (cached; 0: not launchable). */
template <int NT> int midm_mc_resident(int cl, int sms)
{
	static int cache[kMidmMaxSplit + 1];
	if (cl < 2 || cl > kMidmMaxSplit)
		return 0;
	if (cache[cl] == 0) {
		cache[cl] = -1;
		if (!midm_mc_attr<NT>()) {
			cudaLaunchAttribute at[1];
			const cudaLaunchConfig_t cfg = cluster_launch_config(at, cl * sms, kWgThreads, MidmCfg<NT, 1>::kSmemBytes, cl, 0);
			int n = 0;
			if (cudaOccupancyMaxActiveClusters(&n, (void *)gemm_midm_mc_kernel<NT>, &cfg) == cudaSuccess && n > 0)
				cache[cl] = n;
			else
				(void)cudaGetLastError();
		}
	}
	return cache[cl] > 0 ? cache[cl] : 0;
}

/* One launch of gemm_midm_mc_kernel<NT> (splits s): 0 on success, -1 when refused. */
template <int NT>
int midm_mc_launch(const CUtensorMap &mw, const CUtensorMap &mx, __nv_bfloat16 *C, int M, int N, int K, int s,
		   cudaStream_t stream)
{
	if (midm_mc_attr<NT>())
		return -1;
	const int pairs = ((N + kMidmRows - 1) / kMidmRows + 1) / 2;
	cudaLaunchAttribute at[1];
	const cudaLaunchConfig_t cfg =
		cluster_launch_config(at, pairs * 2 * s, kWgThreads, MidmCfg<NT, 1>::kSmemBytes, 2 * s, stream);
	if (cudaLaunchKernelEx(&cfg, gemm_midm_mc_kernel<NT>, mw, mx, C, M, N, K, s) != cudaSuccess) {
		(void)cudaGetLastError();
		return -1;
	}
	return 0;
}

} /* namespace */
} /* namespace sfgemm */
