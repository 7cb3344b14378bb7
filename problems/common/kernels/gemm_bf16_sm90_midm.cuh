/*
 * gemm_bf16_sm90_midm.cuh - the mid-M candidate path of gemm_bf16_sm90.cu (version 4, -DSF_GEMM_MIDM=1):
 * C[M, N] = A[M, K] . B[N, K]^T for 17 <= M <= 256 as a swapped-operand ("swap-AB") wgmma GEMM,
 * C^T[N, M] = B . A^T. The weight B is the wgmma M-side operand (64 rows per consumer warpgroup, 128
 * rows = one band per CTA) and the activations A are the wgmma N-side operand, NT = M rounded up to
 * 32, 64, 96, 128, 192 or 256 tokens: no 128-row padding of M (v2/v3 compute 128 rows at M = 17) and
 * the tile's accumulators hold all tokens of a band, so each weight byte is read from DRAM once and
 * used for every token. Design, floors and predictions: GEMM_NOTES.md, "Version 4 (mid M)".
 *
 * Work: grid = bands * splits (bands = ceil(N / 128)), one unit per CTA (no persistent loop): CTA
 * blockIdx.x is band blockIdx.x / splits, K split blockIdx.x % splits. splits > 1 runs as thread-block
 * clusters of `splits` CTAs along x (the K splits of one band), reduced through distributed shared
 * memory as in gemm_wgmma_kernel's kWgSplitCluster mode (v3, run correct on the H200): each CTA writes
 * its fp32 accumulators into its own idle stage ring (pair p of consumer thread j at (p * 256 + j) * 8
 * bytes), a cluster barrier, rank r sums pairs [r * share, (r + 1) * share) over all ranks in rank order
 * (deterministic; the loads of kMidmPairsPerTrip pairs of all ranks in flight at once), stores, and a
 * second cluster barrier keeps the slabs alive until every rank has read.
 *
 * Pipeline (as gemm_wgmma_kernel): one producer warpgroup (one thread issues TMA, setmaxnreg 40), two
 * consumer warpgroups (setmaxnreg 232); a ring of MidmCfg<NT>::kStages stages, each the weight tile
 * [128][64] (16 KB) then the activation tile [NT][64], both K-major with the 128-byte swizzle TMA writes;
 * full[s] (1 arrival + transaction bytes) and empty[s] (8 consumer-warp arrivals) mbarriers; consumers
 * keep one wgmma batch in flight. TMA zero-fills weight rows past N, token rows past M and K past K.
 *
 * Accumulator layout (wgmma m64nNTk16 D): register 4 j + e of lane (g, q) of warp w in consumer c is
 * weight row c * 64 + 16 w + g + 8 (e >= 2) of the band and token 8 j + 2 q + (e & 1): the store is
 * transposed (C[token][band * 128 + row], 2-byte stores; C is at most 256 x N, a few % of the bytes).
 *
 * Version 11 candidate (-DSF_GEMM_MIDM_TMA=1, GEMM_NOTES_MID_M.md; default 0: not compiled): when the host passes
 * tma_epi = 1, the stores go through shared memory instead: consumer c's outputs are C[tokens][64 columns band * 128
 * + 64 c ..], one 128-byte row per token, staged transposed (st.shared.b16, 128-byte swizzle: conflict-free) as a
 * [R][64] chunk and written by one TMA store (box 64 columns x R tokens, clipped at M and N). Unsplit: R = NT, the
 * chunk in the idle ring; cluster split-K: rank r's share of pairs [p0, p1) is tokens [4 p0, 4 p0 + R), R = 4 share
 * (the host takes this path only for an even share, so a rank owns whole 8-token groups), its chunk after its slab
 * (which the other ranks still read). Needs N % 8 == 0 (C's TMA row stride).
 *
 * Version 16 (-DSF_GEMM_MIDM_FIT, GEMM_NOTES_MID_M2.md "Version 16"; default 2 since session 15, 0: version 13's
 * tiles): half-band token tiles NT = any multiple of 16 in [64, 256] (each consumer a wgmma n of NT / 2, a multiple
 * of 8; consumer 1's activation offset NT / 2 x 128 bytes a multiple of the 1024-byte swizzle atom; stages 8 KB + NT
 * x 128 B, multiples of 1 KB); midm_plan_hb picks M rounded up to 16 (1), and FIT 2 also replaces a K split by two
 * token tiles of NT >= M / 2 tokens (the whole K per CTA, no cluster): tile 1's box starts at row M - NT (in bounds:
 * no zero fill) and it stores only tokens >= NT (tile 0's), so the tiles overlap by 2 NT - M tokens, computed twice,
 * stored once.
 *
 * Version 24 (GEMM_NOTES_MID_M3.md; SF_GEMM_MIDM_TT_SMALL, default 1 since session 24, with SF_GEMM_MIDM_TT_MIN_M 16): FIT 2's two token tiles
 * also below 64 tokens (NT 16 / 32 / 48: consumer widths 8 / 16 / 24; at most 16 stages, the barriers' 256 bytes).
 * (Version 25, the two token tiles as a weight-multicasting cluster pair, measured 1.15-1.26x slower and removed in
 * session 25: GEMM_NOTES_MID_M3.md "Version 25".)
 *
 * Requirements (checked by the host): K % 8 == 0, A and B 16-byte aligned (TMA), M <= 256.
 */
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "gemm_bf16_sm90_wgmma.cuh"
#include "gemm_bf16_sm90_config.cuh" /* SF_GEMM_MIDM_TMA */

namespace sfgemm {

const int kMidmRows = 128;  /* weight rows per CTA (a band): 2 consumer warpgroups x 64 */
const int kMidmMaxSplit = 8; /* portable cluster size limit */
const int kMidmPairsPerTrip = 4; /* reduction: output pairs whose DSMEM loads (all ranks) are issued together
				  * (at one CTA per SM; 2 at two) */

/* Per token tile NT and CTAs per SM CPS (1, or 2 for NT <= 96): stage bytes (weight 16 KB + activations
 * NT x 128 B, a multiple of 1024), as many stages as fit in ~200 KB / CPS (CPS 1: 10, 8, 7, 6, 5, 4 for
 * NT = 32 .. 256; CPS 2: 5, 4, 3 for NT = 32, 64, 96) and the dynamic shared memory. At CPS 2 ptxas
 * compiles every warp under the 80-register cap of two 384-thread CTAs (setmaxnreg moves registers at
 * run time but does not raise what ptxas may allocate), which the NT = 128 accumulators do not fit. */
template <int NT, int CPS, int HB = 0> struct MidmCfg {
	static const int kRows = HB ? kMidmRows / 2 : kMidmRows; /* weight rows per CTA (v13 half bands: 64) */
	static const int kWBytes = kRows * kWgBK * 2;
	static const int kXBytes = NT * kWgBK * 2;
	static const int kStageBytes = kWBytes + kXBytes;
	/* as many stages as fit, at most 16: the barriers' 256 bytes hold 16 (full, empty) pairs (only the version-24
	 * tiles NT 16 of 10 KB stages reach the cap; every other instance has <= 14 stages) */
	static const int kStagesFit = (200 * 1024 / CPS) / kStageBytes;
	static const int kStages = kStagesFit > 16 ? 16 : kStagesFit;
	static const int kSmemBytes = kStages * kStageBytes + 1024 /* alignment slack */ + 256 /* barriers */;
	static_assert(CPS == 1 || (CPS == 2 && NT <= 96), "two CTAs per SM only for NT <= 96 (registers)");
	static_assert(!HB || (CPS == 1 && NT % 16 == 0 && NT >= (SF_GEMM_MIDM_TT_SMALL ? 16 : 64) && NT <= 256),
		      "half bands: one CTA per SM, NT / 2 a multiple of 8 (a wgmma width of the ops header); below 64 only "
		      "the version-24 token tiles");
	static_assert(16 * kStages <= 256, "the full / empty barriers of every stage fit in their 256 bytes");
	/* consumer 1's activation rows start NT / 2 x 128 bytes into the tile: on the 1024-byte 128B-swizzle atom */
	static_assert(!HB || (NT / 2 * 128) % 1024 == 0, "half bands: consumer 1's token offset off the swizzle atom");
	static_assert(kWBytes % 1024 == 0 && kXBytes % 1024 == 0, "stage parts: multiples of the 1024-byte swizzle atom");
	static_assert(NT * 512 <= kStages * kStageBytes, "the reduction slab must fit in the stage ring");
	/* v11: the slab and the stage of a share (2 x R x 128 bytes, R <= NT / 2 when split) fit too */
	static_assert(NT * 512 + NT * 128 <= kStages * kStageBytes, "the slab and the store stage must fit in the ring");
};

/* Arrive on the mbarrier at CTA-local address bar of cluster CTA rank peer, without a fence (version 8's form, run on the
 * H200: the .release.cluster form compiles to MEMBAR.ALL.GPU per arrival, which cost v3p 31% and version 25's first run
 * 3-4x; what a consumer's release orders is its wgmma reads, retired by the wait before it). Used by gemm_bf16_sm90_midm_mc.cuh. */
__device__ __forceinline__ void midm_arrive_peer(uint32_t bar, uint32_t peer)
{
	uint32_t remote;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(peer));
	asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

#if SF_GEMM_MIDM_TMA /* version 11 candidate: compiled only in its build (the default PTX is unchanged) */
/* Output (token lr of the stage, column cc of the consumer's 64) of value v into the [R][64] bf16 stage at chunk
 * (1024-aligned): row lr at 128 lr, 16-byte group cc / 8 swizzled by lr % 8 (what a 128B-swizzled TMA box reads). */
__device__ __forceinline__ void midm_stage(uint32_t chunk, int lr, int cc, float v)
{
	const uint32_t a = chunk + (uint32_t)(lr * 128 + ((((cc >> 3) ^ (lr & 7)) << 4) | ((cc & 7) * 2)));
	const __nv_bfloat16 b = __float2bfloat16_rn(v);
	asm volatile("st.shared.b16 [%0], %1;" ::"r"(a), "h"(*(const unsigned short *)&b) : "memory");
}

/* The consumer warpgroup c's stage written (all 128 threads call it): visible to the TMA, then one thread stores the
 * box at (column col, token row) and waits until the store has read the stage (the CTA may exit after). */
__device__ __forceinline__ void midm_tma_flush(const CUtensorMap *map, uint32_t chunk, int col, int row, int c, int tid)
{
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
	asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
	if (tid == 0) {
		asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"((uint64_t)map),
			     "r"(chunk), "r"(col), "r"(row)
			     : "memory");
		asm volatile("cp.async.bulk.commit_group;" ::: "memory");
		asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
	}
}
#endif

/*
 * One launch: grid bands * splits, kWgThreads threads, MidmCfg<NT, CPS>::kSmemBytes dynamic shared memory,
 * clusters of `splits` CTAs along x when splits > 1 (none otherwise). tm_w: the weight B [N][K], box 128
 * rows; tm_x: the activations A [M][K], box NT rows (NT >= M; M rows with SF_GEMM_MIDM_XROWS on half bands, with
 * SF_GEMM_TAILROWS otherwise). Every split has at least one K block (the host makes sure). C [M][N] row-major.
 */
template <int NT, int CPS, int HB = 0>
__global__ void __launch_bounds__(kWgThreads, CPS)
	gemm_midm_kernel(const __grid_constant__ CUtensorMap tm_w, const __grid_constant__ CUtensorMap tm_x,
#if SF_GEMM_MIDM_TMA
			 const __grid_constant__ CUtensorMap tm_c, int tma_epi,
#endif
			 __nv_bfloat16 *__restrict__ C, int M, int N, int K, int splits
#if SF_GEMM_MIDM_FIT == 2
			 ,
			 int ttiles
#endif
)
{
	typedef MidmCfg<NT, CPS, HB> Cfg;
	/* HB: consumer c multiplies the CTA's 64 weight rows by tokens [c NT / 2, (c + 1) NT / 2) (wgmma N = NT / 2);
	 * else by all NT tokens, its own 64 of the 128 rows */
	const int kNC = HB ? NT / 2 : NT, kNR = kNC / 2;
	const int kStages = Cfg::kStages, kStageBytes = Cfg::kStageBytes;
	/* SF_GEMM_MIDM_XROWS (half bands) and SF_GEMM_TAILROWS (version 15: the other plans, v4's two-CTA ones among them):
	 * the activation box is M rows, not NT (no rows past M to zero-fill; the stage's rows M..NT - 1 keep stale values,
	 * which reach only the accumulators of tokens >= M: never stored, and the cluster reduction sums one token's
	 * partial sums only) */
#if SF_GEMM_MIDM_FIT == 2 /* version 16t: two token tiles load an NT-row box each (NT < M); one tile an M-row box */
	const uint32_t kTxBytes =
		(HB ? SF_GEMM_MIDM_XROWS : SF_GEMM_TAILROWS) ? Cfg::kWBytes + min(M, NT) * (kWgBK * 2) : kStageBytes;
#else
	const uint32_t kTxBytes = (HB ? SF_GEMM_MIDM_XROWS : SF_GEMM_TAILROWS) ? Cfg::kWBytes + M * (kWgBK * 2) : kStageBytes;
#endif
	extern __shared__ uint8_t smem_raw[];
	const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
	const uint32_t base = (raw + 1023) & ~1023u;
	const uint32_t bar_full = base + kStages * kStageBytes, bar_empty = bar_full + 8 * kStages;
	const int wg = threadIdx.x / 128;
#if SF_GEMM_MIDM_FIT == 2 /* version 16t: ttiles > 1 (splits 1): CTA x is token tile x % ttiles of band x / ttiles; tile 1's
			  * rows start at M - NT and it stores tokens >= NT (mlo) only */
	const bool tsplit = HB && ttiles > 1;
	const int tt = tsplit ? (int)blockIdx.x % ttiles : 0;
	const int band = (int)blockIdx.x / (tsplit ? ttiles : splits), split = tsplit ? 0 : (int)blockIdx.x % splits;
	const int row0 = tt ? M - NT : 0, mlo = tt ? NT : 0;
#else
	const int band = (int)blockIdx.x / splits, split = (int)blockIdx.x % splits;
	const int row0 = 0;
#endif
	const int kb_count = (K + kWgBK - 1) / kWgBK, kb_per = (kb_count + splits - 1) / splits;
	const int kb0 = split * kb_per, kb1 = min(kb0 + kb_per, kb_count);

	if (threadIdx.x == 0) {
		/* start fetching both TMA descriptors while the barriers are set up (the first copies wait on them) */
		asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tm_w) : "memory");
		asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tm_x) : "memory");
		for (int s = 0; s < kStages; s++) {
			mbar_init(bar_full + 8 * s, 1);
			mbar_init(bar_empty + 8 * s, 8);
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();

	if (wg == 0) {
		if (CPS == 1)
			asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
		if (threadIdx.x == 0) {
			uint32_t it = 0;
			for (int kb = kb0; kb < kb1; kb++, it++) {
				const uint32_t s = it % kStages, ph = (it / kStages) & 1;
				const uint32_t sw = base + s * kStageBytes;
				mbar_wait(bar_empty + 8 * s, ph ^ 1);
				mbar_expect_tx(bar_full + 8 * s, kTxBytes);
				tma_load_2d(sw, &tm_w, bar_full + 8 * s, kb * kWgBK, band * Cfg::kRows);
				tma_load_2d(sw + Cfg::kWBytes, &tm_x, bar_full + 8 * s, kb * kWgBK, row0);
			}
		}
		if (splits > 1) { /* the consumers' two cluster barriers count every thread of the CTA */
			cluster_sync();
			cluster_sync();
		}
		return;
	}

	if (CPS == 1)
		asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
	const int c = wg - 1; /* weight rows 64 c .. 64 c + 63 of the band (HB: tokens c NT / 2 ..) */
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
		const uint32_t sw = base + s * kStageBytes + (HB ? 0 : c * (64 * 128));
		const uint32_t sx = base + s * kStageBytes + Cfg::kWBytes + (HB ? c * (NT / 2) * 128 : 0);
		wgmma_fence();
#pragma unroll
		for (int kk = 0; kk < kWgBK / 16; kk++)
			wgmma_m64k16<kNC>(d, wg_desc(sw + kk * 32), wg_desc(sx + kk * 32));
		wgmma_commit();
		if (kb > kb0) {
			wgmma_wait<1>();
			if (lane == 0)
				mbar_arrive(bar_empty + 8 * prev);
		}
		prev = s;
	}
	wgmma_wait<0>();
	if (kb1 > kb0 && lane == 0)
		mbar_arrive(bar_empty + 8 * prev);

	/* weight row of this thread's registers 4 j + e: n_b (+ 8 for e >= 2); token t0 + 8 j + 2 q + (e & 1) */
	const int n_b = band * Cfg::kRows + (HB ? 0 : c * 64) + warp * 16 + g, t0 = row0 + (HB ? c * (NT / 2) : 0);
	if (splits == 1) {
#if SF_GEMM_MIDM_TMA
		if (!HB && tma_epi) { /* stage [NT][64] per consumer at the ring's start (free once both are past their wgmma) */
			const uint32_t chunk = base + (uint32_t)(c * NT * 128);
			asm volatile("bar.sync 1, 256;" ::: "memory");
#pragma unroll
			for (int j = 0; j < kNC / 8; j++)
#pragma unroll
				for (int e = 0; e < 4; e++)
					midm_stage(chunk, 8 * j + 2 * q + (e & 1), 16 * warp + g + (e >= 2 ? 8 : 0), d[4 * j + e]);
			midm_tma_flush(&tm_c, chunk, band * kMidmRows + 64 * c, 0, c, tid);
			return;
		}
#endif
#pragma unroll
		for (int j = 0; j < kNC / 8; j++) {
			const int m = t0 + 8 * j + 2 * q;
#pragma unroll
			for (int e = 0; e < 4; e++) {
				const int n = n_b + (e >= 2 ? 8 : 0), mm = m + (e & 1);
#if SF_GEMM_MIDM_FIT == 2 /* token tile 1: the tokens below NT are tile 0's */
				if (n < N && mm < M && mm >= mlo)
#else
				if (n < N && mm < M)
#endif
					C[(size_t)mm * N + n] = __float2bfloat16_rn(d[4 * j + e]);
			}
		}
		return;
	}

	/* cluster split-K: slab in the own (idle) ring, then a share of the pairs summed over all ranks */
	const int j = tid + 128 * c;
	/* both consumer warpgroups are past their last wgmma and every TMA load has landed: the ring is free */
	asm volatile("bar.sync 1, 256;" ::: "memory");
	float2 *slab = (float2 *)(smem_raw + (base - raw));
#pragma unroll
	for (int p = 0; p < kNR / 2; p++)
		slab[p * 256 + j] = make_float2(d[2 * p], d[2 * p + 1]);
	cluster_sync();
	const int S = splits, share = (kNR / 2 + S - 1) / S, rank = (int)cluster_rank();
	const int p0 = rank * share, p1 = min(p0 + share, kNR / 2);
	const int kTrip = CPS == 1 ? kMidmPairsPerTrip : 2; /* 80 registers at CPS 2: 2 pairs per trip */
#if SF_GEMM_MIDM_TMA /* the share's stage after the slab: tokens [4 p0, 4 p0 + 4 share) (p0 even: the host's rule) */
	const uint32_t chunk = base + (uint32_t)(NT * 512 + c * (4 * share) * 128);
#endif
	for (int p = p0; p < p1; p += kTrip) { /* kTrip * S DSMEM loads in flight */
		float2 v[kTrip][kMidmMaxSplit];
#pragma unroll
		for (int h = 0; h < kTrip; h++)
#pragma unroll
			for (int r2 = 0; r2 < kMidmMaxSplit; r2++)
				if (r2 < S && p + h < p1)
					v[h][r2] = dsmem_ld_f2(base + (uint32_t)((p + h) * 256 + j) * 8, (uint32_t)r2);
#pragma unroll
		for (int h = 0; h < kTrip; h++) {
			float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
			for (int r2 = 0; r2 < kMidmMaxSplit; r2++)
				if (r2 < S && p + h < p1) {
					s0 += v[h][r2].x;
					s1 += v[h][r2].y;
				}
			/* pair ph = registers (2 ph, 2 ph + 1): j = ph / 2, e = 2 (ph % 2) and 2 (ph % 2) + 1 */
			const int ph = p + h, n = n_b + ((ph & 1) ? 8 : 0), m = t0 + (ph >> 1) * 8 + 2 * q;
#if SF_GEMM_MIDM_TMA
			if (!HB && tma_epi) {
				if (ph < p1) {
					const int cc = 16 * warp + g + ((ph & 1) ? 8 : 0);
					midm_stage(chunk, m - 4 * p0, cc, s0);
					midm_stage(chunk, m + 1 - 4 * p0, cc, s1);
				}
				continue;
			}
#endif
			if (ph < p1 && n < N) {
				if (m < M)
					C[(size_t)m * N + n] = __float2bfloat16_rn(s0);
				if (m + 1 < M)
					C[(size_t)(m + 1) * N + n] = __float2bfloat16_rn(s1);
			}
		}
	}
#if SF_GEMM_MIDM_TMA
	if (!HB && tma_epi && p0 < p1 && 4 * p0 < M) /* an empty share, or one of tokens >= M only (NT > M), stores nothing */
		midm_tma_flush(&tm_c, chunk, band * kMidmRows + 64 * c, 4 * p0, c, tid);
#endif
	cluster_sync();
}

/* Version 11 (SF_GEMM_MIDM_TMA): the token rows R of one TMA store of the plan (nt tokens, s K splits): nt unsplit, 4 x
 * a rank's share of the nt / 4 output pairs when that share is even (whole 8-token groups); 0: the register stores.
 * Plain host code (emulate_wgmma.py mirrors it). */
inline int midm_tma_rows(int nt, int s)
{
	const int share = (nt / 4 + s - 1) / s;
	return s == 1 ? nt : (share % 2 == 0 ? 4 * share : 0);
}

/* The v4 mid-M plan: token tile nt and K split count (version 16t, half bands: ttiles token tiles per band, 1 unless
 * SF_GEMM_MIDM_FIT 2 replaced a K split by two token tiles; splits is 1 then). */
struct MidmPlan {
	int nt, cps, splits, ttiles;
};

/*
 * midm_splits: the K split count of `bands` weight bands of kb K blocks at token tile nt, cps CTAs per SM: unless
 * pinned (pin > 0, clamped to what K allows), the largest s <= kMidmMaxSplit with bands * s <= cps * sms (one wave
 * of resident units) and >= 4 K blocks per split, at least 1; max_clusters(nt, cps, s) (null: not consulted) is how
 * many clusters of s CTAs are resident at once, and s shrinks until all bands' clusters fit; finally s is lowered
 * until no split is empty: ceil(kb / ceil(kb / s)) == s.
 */
inline int midm_splits(int bands, int kb, int nt, int cps, int sms, int pin, int (*max_clusters)(int nt, int cps, int s))
{
	int s = pin > 0 ? pin : cps * sms / bands;
	if (pin <= 0 && s > kb / 4)
		s = kb / 4;
	s = s < 1 ? 1 : (s > kMidmMaxSplit ? kMidmMaxSplit : s);
	s = s > kb ? kb : s;
	while (pin <= 0 && s > 1 && max_clusters && max_clusters(nt, cps, s) < bands)
		s--;
	while (s > 1 && (kb + (kb + s - 1) / s - 1) / ((kb + s - 1) / s) != s)
		s--;
	return s;
}

/*
 * midm_plan: nt is the smallest of 32, 64, 96, 128, 192, 256 that covers M (M <= 256); cps (CTAs per SM)
 * is 2 when two_cta and nt <= 96, else 1; splits by midm_splits over ceil(N / 128) bands.
 */
inline MidmPlan midm_plan(int M, int N, int K, int sms, int pin, int two_cta, int (*max_clusters)(int nt, int cps, int s))
{
	MidmPlan p;
	p.ttiles = 1;
	p.nt = M <= 32 ? 32 : M <= 64 ? 64 : M <= 96 ? 96 : M <= 128 ? 128 : M <= 192 ? 192 : 256;
	p.cps = two_cta && p.nt <= 96 ? 2 : 1;
	p.splits = midm_splits((N + kMidmRows - 1) / kMidmRows, (K + kWgBK - 1) / kWgBK, p.nt, p.cps, sms, pin, max_clusters);
	return p;
}

/* Version 16 (SF_GEMM_MIDM_FIT >= 1): the half-band token tile of t tokens: 64 up to 64, t rounded up to 16 up to 192 (NT
 * 80, 96, 112, 128, 144, 160, 176, 192: the instantiated fits), 256 above; fit 0: the smallest of 64, 128, 192, 256. */
inline int midm_hb_nt(int t, int fit)
{
	if (fit && t > 64 && t <= 192)
		return (t + 15) / 16 * 16;
	return t <= 64 ? 64 : t <= 128 ? 128 : t <= 192 ? 192 : 256;
}

/*
 * midm_plan_hb: the version-13 plan (half bands, GEMM_NOTES_MID_M.md "Version 13"): 64-row weight bands, one CTA per
 * SM, nt the smallest of 64, 128, 192, 256 that covers M (each consumer takes nt / 2 tokens: a width of the wgmma ops
 * header), splits by midm_splits over ceil(N / 64) bands; max_clusters(nt, 1, s) is the half-band kernel's.
 * fit (version 16, SF_GEMM_MIDM_FIT): 1 nt = midm_hb_nt(M, 1) (M rounded up to 16 at M 65-192); 2 as 1, and where that
 * plan splits K in two (splits == 2: 4096-row weights on 132 SMs) and M > 64, two token tiles of
 * nt = midm_hb_nt(ceil(M / 2), 1) tokens (>= 64) instead, the whole K per CTA (ttiles 2, splits 1: the same CTA count,
 * no cluster, no reduction; cuBLASLt's plan at 4096^2 M 129: 64 x 72 tiles, 2 token tiles, 128 CTAs), where also
 * M > tt_min_m and K <= tt_max_k (the default build's SF_GEMM_MIDM_TT_MIN_M 128 / SF_GEMM_MIDM_TT_MAX_K 4096: measured
 * faster at 4096^2 M 129-192, slower at 4096 x 14336; the defaults here, 64 / any K, are candidate v16t's rule).
 * tt_small (version 24, SF_GEMM_MIDM_TT_SMALL): those tiles are ceil(M / 2) rounded up to 16 also below 64 tokens (NT 16,
 * 32, 48; M > tt_min_m still applies, so the candidate lowers SF_GEMM_MIDM_TT_MIN_M with it).
 */
inline MidmPlan midm_plan_hb(int M, int N, int K, int sms, int pin, int (*max_clusters)(int nt, int cps, int s),
			     int fit = 0, int tt_min_m = 64, int tt_max_k = 1 << 30, int tt_small = 0)
{
	MidmPlan p;
	p.nt = midm_hb_nt(M, fit);
	p.cps = 1;
	p.ttiles = 1;
	p.splits = midm_splits((N + kMidmRows / 2 - 1) / (kMidmRows / 2), (K + kWgBK - 1) / kWgBK, p.nt, 1, sms, pin,
			       max_clusters);
	if (fit == 2 && p.splits == 2 && M > tt_min_m && K <= tt_max_k) {
		const int t = (M + 1) / 2;
		p.nt = tt_small && t <= 64 ? (t + 15) / 16 * 16 : midm_hb_nt(t, 1);
		p.splits = 1;
		p.ttiles = 2;
	}
	return p;
}

/* Sets the dynamic shared memory limit of gemm_midm_kernel<NT, CPS> once; 0 on success. `static` (internal
 * linkage) on purpose, as midm_max_clusters_nt: the function-local statics of an external template are
 * STB_GNU_UNIQUE symbols, which the dynamic linker binds process-wide even across RTLD_LOCAL libraries, so
 * two builds of this file in one process (gemm_check.py loads v2, v4 and candidates side by side) shared
 * one `set` flag: the second library skipped the attribute for its own kernel, its launch was refused and
 * it fell back to v2 (GEMM_NOTES.md "Version 4 measured", the midm_s1/s2/s4 anomaly). */
template <int NT, int CPS, int HB = 0> static int midm_attr(void)
{
	static bool set = false;
	if (!set) {
		if (cudaFuncSetAttribute(gemm_midm_kernel<NT, CPS, HB>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					 MidmCfg<NT, CPS, HB>::kSmemBytes) != cudaSuccess)
			return -1;
		set = true;
	}
	return 0;
}

/* Clusters of s CTAs of gemm_midm_kernel<NT, CPS> resident at once (cached; s == 1: CPS * sms CTAs; 0: not
 * launchable). */
template <int NT, int CPS, int HB = 0> static int midm_max_clusters_nt(int s, int sms)
{
	static int cache[kMidmMaxSplit + 1];
	if (s < 1 || s > kMidmMaxSplit)
		return 0;
	if (s == 1)
		return CPS * sms;
	if (cache[s] == 0) {
		cache[s] = -1;
		if (!midm_attr<NT, CPS, HB>()) {
			cudaLaunchAttribute at[1];
			const cudaLaunchConfig_t cfg =
				cluster_launch_config(at, s * CPS * sms, kWgThreads, MidmCfg<NT, CPS, HB>::kSmemBytes, s, 0);
			int n = 0;
			if (cudaOccupancyMaxActiveClusters(&n, (void *)gemm_midm_kernel<NT, CPS, HB>, &cfg) == cudaSuccess && n > 0)
				cache[s] = n;
			else
				(void)cudaGetLastError();
		}
	}
	return cache[s] > 0 ? cache[s] : 0;
}

/* One launch of gemm_midm_kernel<NT, CPS, HB>: grid bands * splits (bands of MidmCfg::kRows weight rows), clusters of
 * splits along x when > 1; 0 on success. */
template <int NT, int CPS, int HB = 0>
int midm_launch_nt(const CUtensorMap &mw, const CUtensorMap &mx,
#if SF_GEMM_MIDM_TMA /* version 11: C's map (box 64 columns x midm_tma_rows tokens) and whether to use it */
		   const CUtensorMap &mc, int tma_epi,
#endif
		   __nv_bfloat16 *C, int M, int N, int K, int splits, cudaStream_t stream
#if SF_GEMM_MIDM_FIT == 2 /* version 16t: token tiles per band (> 1: splits must be 1, half bands only) */
		   ,
		   int ttiles = 1
#endif
)
{
	if (midm_attr<NT, CPS, HB>())
		return -1;
	const int bands = (N + MidmCfg<NT, CPS, HB>::kRows - 1) / MidmCfg<NT, CPS, HB>::kRows;
#if SF_GEMM_MIDM_FIT == 2
	if (ttiles > 1 && (splits != 1 || !HB))
		return -1;
	const int units = bands * (ttiles > 1 ? ttiles : splits);
#else
	const int units = bands * splits;
#endif
	const int cl = splits; /* clusters: the K splits of a band */
	cudaLaunchAttribute at[1];
	const cudaLaunchConfig_t cfg =
		cluster_launch_config(at, units, kWgThreads, MidmCfg<NT, CPS, HB>::kSmemBytes, cl, stream);
	if (cudaLaunchKernelEx(&cfg, gemm_midm_kernel<NT, CPS, HB>, mw, mx,
#if SF_GEMM_MIDM_TMA
			       mc, tma_epi,
#endif
			       C, M, N, K, splits
#if SF_GEMM_MIDM_FIT == 2
			       ,
			       ttiles
#endif
			       ) != cudaSuccess) {
		(void)cudaGetLastError();
		return -1;
	}
	return 0;
}

} /* namespace sfgemm */
