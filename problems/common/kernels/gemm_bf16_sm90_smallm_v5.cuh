/*
 * gemm_bf16_sm90_smallm_v5.cuh - the version-5 small-M candidate of gemm_bf16_sm90.cu (-DSF_GEMM_SMALLM_V=2):
 * C[M, N] = A[M, K] . B[N, K]^T for M <= 16, a weight-streaming kernel that keeps the weight bytes in
 * flight in a TMA ring of shared memory instead of in registers. Design, floors and prediction:
 * GEMM_NOTES.md, "Version 5".
 *
 * Why (v2, Nsight Compute at 4096^2 M = 16): 512 blocks of 8 rows on 264 slots (1.94 waves, a tail),
 * DRAM at 53% of peak, ~64 KB of B in flight per SM in registers at best. Here every SM has one CTA
 * with a ring of ~170-200 KB filled by 2D TMA copies (no register cost for bytes in flight), the grid
 * is one wave of equal units, and the K split is a thread-block cluster reduced through distributed
 * shared memory (no global scratch, no atomics).
 *
 * Work: tiles of RB = 8 W G weight rows (W consumer warps of G row groups of 8; one TMA box of RB x 64 K
 * elements per stage; the configurations in kSm5Cfgs: RB = 32, 48, 64, 128, 192, 224, 256), grid =
 * tiles * splits, CTA blockIdx.x is tile blockIdx.x / splits and K split blockIdx.x % splits; splits > 1
 * runs as clusters of `splits` CTAs along x. Threads: W consumer warps + 1 producer warp (lane 0 issues
 * the TMA). The plan picks RB so that the tiles fill one wave unsplit where it can (4096 rows: RB 32,
 * 6144: 48, 28672: 224, all 128 CTAs, no cluster); the split path serves narrow weights. Stage s = weight box [RB][64] then activation box [8 MH][64] (rows past M,
 * N and K zero-filled by TMA), both with the 128-byte swizzle (16-byte chunk c of row r at chunk
 * c ^ (r % 8)); full[s] (1 arrival + transaction bytes), empty[s] (W * 32 consumer-thread arrivals, each after its
 * thread's mma and a proxy fence; the producer fences the async proxy again before a refill).
 *
 * Fragments: the K-permutation trick of the v2 kernel (gemm_bf16_sm90_smallm.cuh, smallm_step): lane
 * (g = lane / 4, q = lane % 4) reads the 8 contiguous K elements 8 q .. 8 q + 7 (k-step 0: chunk q,
 * k-step 1: chunk 4 + q) of weight row g of each of its row groups and of activation rows h * 8 + g,
 * from shared memory; the tokens are the m16 operand (MH 8-row halves), the weights the n8 operand.
 * Warp w owns the 8 G consecutive weight rows 8 G w .. of the tile (G groups of 8), so the row of a
 * group has r % 8 == g and the 8 lanes of a q read 8 different chunks: no bank conflicts.
 *
 * Epilogue: splits == 1: bf16 pairs straight from the accumulators (C[m][n], C[m][n + 1]). splits > 1:
 * each CTA writes its fp32 sums into its own idle ring as a slab [16 MT tokens][RB rows], a cluster
 * barrier, rank r sums the float2 pairs [r * share, (r + 1) * share) of the slab over all ranks in rank
 * order (deterministic) with ld.shared::cluster, stores bf16 pairs, and a second cluster barrier keeps
 * the slabs alive until every rank has read.
 *
 * Requirements (checked by the host): M <= 16, K % 8 == 0, A, B, C 16-byte aligned, N % 2 == 0.
 */
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "gemm_bf16_sm90_smallm.cuh"
#include "gemm_bf16_sm90_wgmma.cuh"

#ifndef SF_GEMM_SM5_RING_KB /* stage ring budget in KB (one CTA per SM); candidate sm5r: 96 */
#define SF_GEMM_SM5_RING_KB 200
#endif
#ifndef SF_GEMM_SM5_RELEASE /* how a consumer releases a stage (see the consumer loop): 0 the first, racy order */
#define SF_GEMM_SM5_RELEASE 2
#endif
#ifndef SF_GEMM_SM5_MIN_RB /* smallest weight tile the plan may pick; candidate sm5c: 128 (the cluster plans) */
#define SF_GEMM_SM5_MIN_RB 32
#endif

namespace sfgemm {

const int kSm5MaxSplit = 8;                     /* portable cluster size limit */
const int kSm5RingBytes = SF_GEMM_SM5_RING_KB * 1024; /* stage ring budget (one CTA per SM) */

/* The instantiated tiles: {RB, W, G} with RB = 8 W G, ascending RB (sm5_plan and the launch switch use it). */
const int kSm5NCfg = 7;
const int kSm5Cfgs[kSm5NCfg][3] = { { 32, 4, 1 }, { 48, 6, 1 }, { 64, 8, 1 }, { 128, 8, 2 },
				     { 192, 8, 3 }, { 224, 7, 4 }, { 256, 8, 4 } };

/* Per tile (W consumer warps of G row groups: RB = 8 W G rows) and activation halves MH: threads, stage bytes
 * (multiples of 1024), ring depth and dynamic shared memory (ring, alignment slack, 2 mbarriers per stage). */
template <int W, int G, int MH> struct Sm5Cfg {
	static const int kRB = 8 * W * G;
	static const int kThreads = (W + 1) * 32;
	static const int kWBytes = kRB * 128;
	static const int kXBytes = MH * 8 * 128;
	static const int kStageBytes = kWBytes + kXBytes;
	static const int kStages = kSm5RingBytes / kStageBytes;
	static const int kSmemBytes = kStages * kStageBytes + 1024 + 16 * kStages;
	static_assert(W >= 1 && W <= 8 && kRB <= 256, "at most 8 consumer warps, one TMA box (<= 256 rows)");
	static_assert(MH == 1 || MH == 2, "M <= 16");
	static_assert(kStages >= 2, "at least two stages");
	static_assert(16 * ((MH + 1) / 2) * kRB * 4 <= kStages * kStageBytes, "the reduction slab must fit in the ring");
};

/* The 16 bytes at shared address addr (one swizzled chunk of a stage row). */
__device__ __forceinline__ uint4 lds16(uint32_t addr)
{
	uint4 v;
	asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
	return v;
}

/*
 * One launch: grid tiles * splits, Sm5Cfg<W, G, MH>::kThreads threads and kSmemBytes dynamic shared memory,
 * clusters of `splits` CTAs along x when splits > 1. tm_w: the weight B [N][K], box RB rows; tm_x: the
 * activations A [M][K], box 8 MH rows. Every split has at least one K block (the host makes sure).
 */
template <int W, int G, int MH>
__global__ void __launch_bounds__((W + 1) * 32, 1)
	gemm_smallm5_kernel(const __grid_constant__ CUtensorMap tm_w, const __grid_constant__ CUtensorMap tm_x,
			    __nv_bfloat16 *__restrict__ C, int M, int N, int K, int splits)
{
	typedef Sm5Cfg<W, G, MH> Cfg;
	const int kStages = Cfg::kStages, kStageBytes = Cfg::kStageBytes, kG = G, MT = (MH + 1) / 2, RB = Cfg::kRB;
	extern __shared__ uint8_t smem_raw[];
	const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
	const uint32_t base = (raw + 1023) & ~1023u;
	const uint32_t bar_full = base + kStages * kStageBytes, bar_empty = bar_full + 8 * kStages;
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int tile = (int)blockIdx.x / splits, split = (int)blockIdx.x % splits;
	const int kb_count = (K + 63) / 64, kb_per = (kb_count + splits - 1) / splits;
	const int kb0 = split * kb_per, kb1 = min(kb0 + kb_per, kb_count);

	if (threadIdx.x == 0) {
		asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tm_w) : "memory");
		asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tm_x) : "memory");
		for (int s = 0; s < kStages; s++) {
			sfwg::mbar_init(bar_full + 8 * s, 1);
			sfwg::mbar_init(bar_empty + 8 * s, W * 32);
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();

	if (warp == W) { /* producer */
		if (lane == 0) {
			uint32_t it = 0;
			for (int kb = kb0; kb < kb1; kb++, it++) {
				const uint32_t s = it % kStages, ph = (it / kStages) & 1;
				sfwg::mbar_wait(bar_empty + 8 * s, ph ^ 1);
				/* the consumers' generic-proxy reads of the slot (acquired through empty[s]) before this
				 * async-proxy refill: the PTX ISA's cross-proxy fence (one thread, once per stage) */
				if (SF_GEMM_SM5_RELEASE != 0 && it >= (uint32_t)kStages)
					sfwg::fence_proxy_async();
				const uint32_t sw = base + s * kStageBytes;
				sfwg::mbar_expect_tx(bar_full + 8 * s, kStageBytes);
				tma_load_2d(sw, &tm_w, bar_full + 8 * s, kb * 64, tile * RB);
				tma_load_2d(sw + Cfg::kWBytes, &tm_x, bar_full + 8 * s, kb * 64, 0);
			}
		}
		if (splits > 1) { /* the consumers' two cluster barriers count every thread of the CTA */
			cluster_sync();
			cluster_sync();
		}
		return;
	}

	const int g = lane >> 2, q = lane & 3;
	float acc[kG][2][MT][4]; /* per row group, two sets (k-step 0 / 1): shorter mma chains */
#pragma unroll
	for (int i = 0; i < kG; i++)
#pragma unroll
		for (int j = 0; j < 2; j++)
#pragma unroll
			for (int t = 0; t < MT; t++)
#pragma unroll
				for (int e = 0; e < 4; e++)
					acc[i][j][t][e] = 0.0f;
	/* byte offsets in a stage: weight row 8 G w + 8 i + g, activation row 8 h + g (both r % 8 == g) */
	const uint32_t wrow = (uint32_t)(warp * 8 * G + g) * 128, xrow = (uint32_t)Cfg::kWBytes + g * 128;
	const uint32_t c0 = (uint32_t)(q ^ g) << 4, c1 = (uint32_t)((4 + q) ^ g) << 4; /* swizzled chunks q, 4 + q */
	uint32_t it = 0;
	for (int kb = kb0; kb < kb1; kb++, it++) {
		const uint32_t s = it % kStages, ph = (it / kStages) & 1;
		const uint32_t st = base + s * kStageBytes;
		sfwg::mbar_wait(bar_full + 8 * s, ph);
		uint4 xa[2][MH], wv[kG][2];
#pragma unroll
		for (int h = 0; h < MH; h++) {
			xa[0][h] = lds16(st + xrow + h * 1024 + c0);
			xa[1][h] = lds16(st + xrow + h * 1024 + c1);
		}
#pragma unroll
		for (int i = 0; i < kG; i++) {
			wv[i][0] = lds16(st + wrow + i * 1024 + c0);
			wv[i][1] = lds16(st + wrow + i * 1024 + c1);
		}
		/* The release of the stage (GEMM_NOTES.md, "Version 5: the ring race"): the refill is a TMA write
		 * (async proxy), which the generic-proxy release of the arrive does not order after this thread's
		 * ld.shared; arriving right after the loads (SF_GEMM_SM5_RELEASE 0) corrupted rows of the G >= 3
		 * tiles on the H200. 1: arrive after the mma have consumed every loaded register; 2 (default): and
		 * fence.proxy.async.shared::cta before the arrive (the PTX ISA's cross-proxy fence). */
#if SF_GEMM_SM5_RELEASE == 0
		sfwg::mbar_arrive(bar_empty + 8 * s);
#endif
#pragma unroll
		for (int i = 0; i < kG; i++)
#pragma unroll
			for (int j = 0; j < 2; j++)
				smallm_step<MH>(acc[i][j], xa[j], wv[i][j]);
#if SF_GEMM_SM5_RELEASE == 2
		sfwg::fence_proxy_async();
#endif
#if SF_GEMM_SM5_RELEASE != 0
		sfwg::mbar_arrive(bar_empty + 8 * s);
#endif
	}

	/* lane (g, q), group i, tile t: tokens t * 16 + g (e 0, 1) and + 8 (e 2, 3); weight rows r, r + 1 */
	const int rloc0 = warp * 8 * G + 2 * q;
	if (splits == 1) {
#pragma unroll
		for (int i = 0; i < kG; i++) {
			const int n = tile * RB + rloc0 + 8 * i;
			if (n >= N)
				continue;
#pragma unroll
			for (int t = 0; t < MT; t++) {
				const int m = t * 16 + g;
				if (m < M)
					*(__nv_bfloat162 *)(C + (size_t)m * N + n) =
						__floats2bfloat162_rn(acc[i][0][t][0] + acc[i][1][t][0], acc[i][0][t][1] + acc[i][1][t][1]);
				if (m + 8 < M)
					*(__nv_bfloat162 *)(C + (size_t)(m + 8) * N + n) =
						__floats2bfloat162_rn(acc[i][0][t][2] + acc[i][1][t][2], acc[i][0][t][3] + acc[i][1][t][3]);
			}
		}
		return;
	}

	/* cluster split-K: every TMA load of this CTA has landed and been read (all fulls waited, all consumer
	 * warps past their last stage): the ring is free for the slab [16 MT][RB] of float2 pairs (rows r, r + 1) */
	asm volatile("bar.sync 1, %0;" ::"r"(W * 32) : "memory");
	float2 *slab = (float2 *)(smem_raw + (base - raw));
#pragma unroll
	for (int i = 0; i < kG; i++)
#pragma unroll
		for (int t = 0; t < MT; t++) {
			const int m = t * 16 + g, p = (rloc0 + 8 * i) >> 1;
			slab[m * (RB / 2) + p] = make_float2(acc[i][0][t][0] + acc[i][1][t][0], acc[i][0][t][1] + acc[i][1][t][1]);
			slab[(m + 8) * (RB / 2) + p] =
				make_float2(acc[i][0][t][2] + acc[i][1][t][2], acc[i][0][t][3] + acc[i][1][t][3]);
		}
	cluster_sync();
	const int S = splits, pairs = 16 * MT * (RB / 2), share = (pairs + S - 1) / S, rank = (int)cluster_rank();
	const int p1 = min((rank + 1) * share, pairs);
	for (int p = rank * share + (int)threadIdx.x; p < p1; p += W * 32) {
		const int m = p / (RB / 2), n = tile * RB + 2 * (p % (RB / 2));
		if (m >= M || n >= N)
			continue;
		float2 v[kSm5MaxSplit];
#pragma unroll
		for (int r = 0; r < kSm5MaxSplit; r++)
			if (r < S)
				v[r] = dsmem_ld_f2(base + (uint32_t)p * 8, (uint32_t)r);
		float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
		for (int r = 0; r < kSm5MaxSplit; r++)
			if (r < S) {
				s0 += v[r].x;
				s1 += v[r].y;
			}
		*(__nv_bfloat162 *)(C + (size_t)m * N + n) = __floats2bfloat162_rn(s0, s1);
	}
	cluster_sync();
}

/* The v5 plan: tile configuration (index into kSm5Cfgs, its rows) and K split count. */
struct Sm5Plan {
	int cfg, rb, splits;
};

/*
 * sm5_plan: over the tiles of kSm5Cfgs with RB >= min_rb and s in 1..kSm5MaxSplit with tiles(RB) * s <= sms
 * (one wave, one CTA per SM), no empty split (ceil(kb / ceil(kb / s)) == s) and max_clusters(rb, s) >=
 * tiles (null: not consulted), the least work per CTA RB * ceil(kb / s), ties to the fewer splits, then
 * the smaller RB. Returns rb 0 when nothing fits (more than 256 * sms rows: the caller takes v2).
 */
inline Sm5Plan sm5_plan(int N, int K, int sms, int min_rb, int (*max_clusters)(int rb, int s))
{
	Sm5Plan best = { -1, 0, 0 };
	long best_work = 0;
	const int kb = (K + 63) / 64;
	for (int s = 1; s <= kSm5MaxSplit && s <= kb; s++) {
		const int per = (kb + s - 1) / s;
		if ((kb + per - 1) / per != s)
			continue;
		for (int c = 0; c < kSm5NCfg; c++) {
			const int rb = kSm5Cfgs[c][0], tiles = (N + rb - 1) / rb;
			if (rb < min_rb || tiles * s > sms || (s > 1 && max_clusters && max_clusters(rb, s) < tiles))
				continue;
			const long work = (long)rb * per;
			if (best.rb == 0 || work < best_work) {
				best.cfg = c;
				best.rb = rb;
				best.splits = s;
				best_work = work;
			}
		}
	}
	return best;
}

/* Sets the dynamic shared memory limit of gemm_smallm5_kernel<W, G, MH> once; 0 on success. `static`: see
 * midm_attr (a function-local static of an external template is process-wide across loaded libraries). */
template <int W, int G, int MH> static int sm5_attr(void)
{
	static bool set = false;
	if (!set) {
		if (cudaFuncSetAttribute(gemm_smallm5_kernel<W, G, MH>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					 Sm5Cfg<W, G, MH>::kSmemBytes) != cudaSuccess)
			return -1;
		set = true;
	}
	return 0;
}

/* Clusters of s CTAs of gemm_smallm5_kernel<W, G, 2> resident at once (cached; 0: not launchable). */
template <int W, int G> static int sm5_max_clusters_cfg(int s, int sms)
{
	typedef Sm5Cfg<W, G, 2> Cfg;
	static int cache[kSm5MaxSplit + 1];
	if (s < 1 || s > kSm5MaxSplit)
		return 0;
	if (s == 1)
		return sms;
	if (cache[s] == 0) {
		cache[s] = -1;
		if (!sm5_attr<W, G, 2>()) {
			cudaLaunchAttribute at[1];
			const cudaLaunchConfig_t cfg = cluster_launch_config(at, s * sms, Cfg::kThreads, Cfg::kSmemBytes, s, 0);
			int n = 0;
			if (cudaOccupancyMaxActiveClusters(&n, (void *)gemm_smallm5_kernel<W, G, 2>, &cfg) == cudaSuccess && n > 0)
				cache[s] = n;
			else
				(void)cudaGetLastError();
		}
	}
	return cache[s] > 0 ? cache[s] : 0;
}

/* One launch of gemm_smallm5_kernel<W, G, MH>: grid tiles * splits, clusters of splits when > 1; 0 on success. */
template <int W, int G, int MH>
static int sm5_launch(const CUtensorMap &mw, const CUtensorMap &mx, __nv_bfloat16 *C, int M, int N, int K, int splits,
		      cudaStream_t stream)
{
	typedef Sm5Cfg<W, G, MH> Cfg;
	if (sm5_attr<W, G, MH>())
		return -1;
	cudaLaunchAttribute at[1];
	const cudaLaunchConfig_t cfg =
		cluster_launch_config(at, (N + Cfg::kRB - 1) / Cfg::kRB * splits, Cfg::kThreads, Cfg::kSmemBytes, splits, stream);
	if (cudaLaunchKernelEx(&cfg, gemm_smallm5_kernel<W, G, MH>, mw, mx, C, M, N, K, splits) != cudaSuccess) {
		(void)cudaGetLastError();
		return -1;
	}
	return 0;
}

/* sm5_launch of configuration cfg (an index into kSm5Cfgs) with MH halves of A (1 or 2). */
template <int MH>
int sm5_launch_cfg(int cfg, const CUtensorMap &mw, const CUtensorMap &mx, __nv_bfloat16 *C, int M, int N, int K,
		   int splits, cudaStream_t stream)
{
	switch (cfg) {
	case 0: return sm5_launch<4, 1, MH>(mw, mx, C, M, N, K, splits, stream);
	case 1: return sm5_launch<6, 1, MH>(mw, mx, C, M, N, K, splits, stream);
	case 2: return sm5_launch<8, 1, MH>(mw, mx, C, M, N, K, splits, stream);
	case 3: return sm5_launch<8, 2, MH>(mw, mx, C, M, N, K, splits, stream);
	case 4: return sm5_launch<8, 3, MH>(mw, mx, C, M, N, K, splits, stream);
	case 5: return sm5_launch<7, 4, MH>(mw, mx, C, M, N, K, splits, stream);
	default: return sm5_launch<8, 4, MH>(mw, mx, C, M, N, K, splits, stream);
	}
}

} /* namespace sfgemm */
