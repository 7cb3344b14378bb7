/*
 * gemm_bf16_sm90_mcast.cuh - candidate large-M kernel of gemm_bf16_sm90.cu (-DSF_GEMM_MCAST=1, default 0: this
 * header is then not included and the default build's PTX is unchanged; GEMM_NOTES_LARGE_M.md "Version 8"):
 * the warp-specialized TMA + wgmma GEMM of gemm_bf16_sm90_wgmma.cuh (128 x BN tiles, BN = 256 or 192, two
 * consumer warpgroups on the 64-row halves, one producer thread, the same ring of WgCfg<BN>) run as
 * persistent thread-block clusters of 2 CTAs whose tiles share the W (B) block, which each CTA loads only
 * half of and multicasts into both CTAs' rings.
 *
 * Schedule: grid 2 x G (G clusters of 2 along x, all resident); cluster k takes pair units k, k + G, ...;
 * pair unit u is (pm, tn) through the grouped raster of gemm_wgmma_kernel over pair rows (kWgGroupM pair
 * rows per group), and CTA rank r of the cluster computes tile (2 pm + r, tn). With an odd tile-row count
 * the last pair row's rank-1 tile is a padded row: it loads A of the last real tile row, computes, and
 * stores nothing (every stored row is checked against M), so both CTAs always walk the same stages.
 *
 * Ring protocol (stage counter it: slot it % kStages, phase (it / kStages) & 1, as the default kernel):
 *   full[s]  1 arrival: the own producer's arrive.expect_tx of the whole stage (own A 16 KB + both W
 *            halves); the bytes come from the own A load, the own W half (multicast) and the peer's W half
 *            (multicast). The peer's half may land before the local expect (the tx-count goes negative
 *            for a while): the phase cannot complete before the local arrival.
 *   empty[s] 16 arrivals: each of the 8 consumer warps of BOTH CTAs, because each producer's multicast
 *            overwrites slot s in both CTAs. A warp releases after wgmma.wait_group retired its reads:
 *            lane 0 arrives on the local barrier, lane 1 on the peer's (mapa + mbarrier.arrive
 *            .shared::cluster, CUTLASS's ClusterBarrier::arrive form: no fence, a bare SYNCS.ARRIVE in
 *            SASS). SF_GEMM_MCAST_FENCE=1 writes it as v3p did (.release.cluster: MEMBAR.ALL.GPU before
 *            every remote arrive), a diagnostic candidate.
 * The peer's multicast into my slot s for phase k + 1 needs my 8 warps' releases of phase k, which follow
 * my consumers' wait on my full[s] phase k: no byte lands in a phase that has not completed.
 * SF_GEMM_MCAST_SHARE=0 (diagnostic): the same cluster, schedule and barriers, but each CTA loads both W
 * halves itself without multicast (the cost of the lockstep alone).
 * Cluster barriers: after the barrier init (no multicast into an uninitialized peer) and before exit (no
 * remote arrive on an exited peer; every multicast into a CTA is for a stage that CTA consumes).
 * tools/gemm_dev/emulate_mcast.py checks this protocol over all interleavings of small cases.
 */
#pragma once
#include "gemm_bf16_sm90_wgmma.cuh"
#include "gemm_bf16_sm90_config.cuh" /* SF_GEMM_MCAST_FENCE, SF_GEMM_MCAST_SHARE */

namespace sfgemm {

/* Arrive on the empty barrier at CTA-local address bar of the peer CTA (cluster rank peer). */
__device__ __forceinline__ void mc_arrive_peer(uint32_t bar, uint32_t peer)
{
	uint32_t remote;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(peer));
#if SF_GEMM_MCAST_FENCE
	asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
#else
	asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
#endif
}

/* Pair unit u of a pairs_m x tiles_n grid -> (pair row pm, tile column tn): the default kernel's raster. */
__device__ __forceinline__ void mc_unit(int u, int pairs_m, int tiles_n, int &pm, int &tn)
{
	wg_raster(u, pairs_m, tiles_n, kWgGroupM, pm, tn);
}

/*
 * The clustered GEMM: C[M][N] = A[M][K] . B[N][K]^T. kWgThreads threads, WgCfg<BN>::kSmemBytes dynamic shared
 * memory, grid 2 x clusters launched with clusters of 2 along x, clusters <= the pair units and all
 * resident. tm_a: A with box [128][64]; tm_b: B with box [BN / 2][64]; both 128-byte swizzled.
 * Requirements (checked by the host): K % 8 == 0, K >= 1, A and B 16-byte aligned, N % 2 == 0.
 */
template <int BN>
__global__ void __launch_bounds__(kWgThreads, 1)
	gemm_mcast_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
			  __nv_bfloat16 *__restrict__ C, int M, int N, int K)
{
	typedef WgCfg<BN> Cfg;
	const int kStages = Cfg::kStages, kStageBytes = Cfg::kStageBytes, kNR = BN / 2, kHalf = Cfg::kBBytes / 2;
	static_assert((Cfg::kBBytes / 2) % 1024 == 0, "each W half starts on a 1024-byte swizzle atom");
	extern __shared__ uint8_t smem_raw[];
	const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
	const uint32_t base = (raw + 1023) & ~1023u;
	const uint32_t bar_full = base + kStages * kStageBytes, bar_empty = bar_full + 8 * kStages;
	const int wg = threadIdx.x / 128;
	const int tiles_m = (M + kWgBM - 1) / kWgBM, pairs_m = (tiles_m + 1) / 2, tiles_n = (N + BN - 1) / BN;
	const int units = pairs_m * tiles_n, kb_count = (K + kWgBK - 1) / kWgBK;
	const uint32_t rank = cluster_rank();
	const int u_first = (int)(blockIdx.x >> 1), u_step = (int)(gridDim.x >> 1); /* clusters of 2 along x */

	if (threadIdx.x == 0) {
		for (int s = 0; s < kStages; s++) {
			mbar_init(bar_full + 8 * s, 1);
			mbar_init(bar_empty + 8 * s, 16);
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	cluster_sync(); /* the peer's barriers are initialized before any multicast or remote arrive */

	if (wg == 0) {
		asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
		if (threadIdx.x == 0) {
			uint32_t it = 0;
			for (int u = u_first; u < units; u += u_step) {
				int pm, tn;
				mc_unit(u, pairs_m, tiles_n, pm, tn);
				const int arow = min(2 * pm + (int)rank, tiles_m - 1) * kWgBM; /* padded row: the last real one */
				for (int kb = 0; kb < kb_count; kb++, it++) {
					const uint32_t s = it % kStages, ph = (it / kStages) & 1;
					mbar_wait(bar_empty + 8 * s, ph ^ 1);
					const uint32_t sa = base + s * kStageBytes, full = bar_full + 8 * s;
					mbar_expect_tx(full, kStageBytes);
					tma_load_2d(sa, &tm_a, full, kb * kWgBK, arow);
#if SF_GEMM_MCAST_SHARE
					tma_load_2d_mc(sa + kWgABytes + rank * kHalf, &tm_b, full, kb * kWgBK, tn * BN + (int)rank * (BN / 2),
						       3);
#else
					tma_load_2d(sa + kWgABytes, &tm_b, full, kb * kWgBK, tn * BN);
					tma_load_2d(sa + kWgABytes + kHalf, &tm_b, full, kb * kWgBK, tn * BN + BN / 2);
#endif
				}
			}
		}
		cluster_sync(); /* the consumers' exit barrier */
		return;
	}

	asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
	const int c = wg - 1; /* rows 64 c .. 64 c + 63 of the tile */
	const int tid = threadIdx.x - 128 * wg, warp = tid >> 5, lane = tid & 31;
	const uint32_t peer = rank ^ 1u;
	uint32_t it = 0;
	float d[kNR];
	for (int u = u_first; u < units; u += u_step) {
		int pm, tn;
		mc_unit(u, pairs_m, tiles_n, pm, tn);
		const int tm = 2 * pm + (int)rank;
#pragma unroll
		for (int i = 0; i < kNR; i++)
			d[i] = 0.0f;
		uint32_t prev = 0;
		for (int kb = 0; kb < kb_count; kb++, it++) {
			const uint32_t s = it % kStages, ph = (it / kStages) & 1;
			mbar_wait(bar_full + 8 * s, ph);
			const uint32_t sa = base + s * kStageBytes + c * (64 * 128), sb = base + s * kStageBytes + kWgABytes;
			wgmma_fence();
#pragma unroll
			for (int kk = 0; kk < kWgBK / 16; kk++)
				wgmma_m64k16<BN>(d, wg_desc(sa + kk * 32), wg_desc(sb + kk * 32));
			wgmma_commit();
			if (kb > 0) {
				wgmma_wait<1>(); /* the batch of stage prev has retired: its slot is free in both CTAs */
				if (lane == 0)
					mbar_arrive(bar_empty + 8 * prev);
				else if (lane == 1)
					mc_arrive_peer(bar_empty + 8 * prev, peer);
			}
			prev = s;
		}
		wgmma_wait<0>();
		if (lane == 0)
			mbar_arrive(bar_empty + 8 * prev);
		else if (lane == 1)
			mc_arrive_peer(bar_empty + 8 * prev, peer);

		const int g = lane >> 2, q = lane & 3;
		const int row0 = tm * kWgBM + c * 64 + warp * 16 + g; /* >= M on a padded row: nothing stored */
		const int col0 = tn * BN + q * 2;
		wg_store_rows<BN>(C, d, row0, col0, M, N);
	}
	cluster_sync(); /* no CTA exits while its peer may still arrive on its barriers */
}

namespace { /* internal linkage: a function-local static of an external template would be an STB_GNU_UNIQUE
	     * symbol shared by every library of one process (GEMM_NOTES.md, the midm_s1/s2/s4 anomaly) */

/* Host: clusters of 2 of gemm_mcast_kernel<BN> resident at once (cached; 0: not launchable). Sets the
 * kernel's dynamic shared memory limit on first use. */
template <int BN> int mc_max_clusters(int sms)
{
	static int cache;
	if (cache == 0) {
		cache = -1;
		int n = 0;
		cudaLaunchAttribute at[1];
		const cudaLaunchConfig_t cfg = cluster_launch_config(at, 2 * sms, kWgThreads, WgCfg<BN>::kSmemBytes, 2, 0);
		if (cudaFuncSetAttribute(gemm_mcast_kernel<BN>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					 WgCfg<BN>::kSmemBytes) == cudaSuccess &&
		    cudaOccupancyMaxActiveClusters(&n, (void *)gemm_mcast_kernel<BN>, &cfg) == cudaSuccess && n > 0)
			cache = n;
		else
			(void)cudaGetLastError();
	}
	return cache > 0 ? cache : 0;
}

/* Host: the launch decision and launch of gemm_mcast_kernel<BN> on sms SMs. Returns kMcNotTaken when the
 * pair schedule would need more waves than the plain one (ceil(pair units / resident clusters) >
 * ceil(tiles / SMs): the padded row of an odd tile-row count, or fewer resident clusters than SMs / 2),
 * 0 when launched, -1 when the cluster launch is refused (the caller falls back). tm_b: box [BN / 2][64]. */
const int kMcNotTaken = 1;
template <int BN>
int mc_launch(const CUtensorMap &ma, const CUtensorMap &mb, __nv_bfloat16 *C, int M, int N, int K, int sms,
	      cudaStream_t stream)
{
	const int tiles_m = (M + kWgBM - 1) / kWgBM, tiles_n = (N + BN - 1) / BN;
	const int pu = (tiles_m + 1) / 2 * tiles_n, tiles = tiles_m * tiles_n, slots = mc_max_clusters<BN>(sms);
	if (slots < 1)
		return -1;
	if ((pu + slots - 1) / slots > (tiles + sms - 1) / sms)
		return kMcNotTaken;
	cudaLaunchAttribute at[1];
	const cudaLaunchConfig_t cfg =
		cluster_launch_config(at, 2 * (pu < slots ? pu : slots), kWgThreads, WgCfg<BN>::kSmemBytes, 2, stream);
	if (cudaLaunchKernelEx(&cfg, gemm_mcast_kernel<BN>, ma, mb, C, M, N, K) != cudaSuccess) {
		(void)cudaGetLastError();
		return -1;
	}
	return 0;
}

} /* namespace */
} /* namespace sfgemm */
