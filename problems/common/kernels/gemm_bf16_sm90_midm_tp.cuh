/*
 * gemm_bf16_sm90_midm_tp.cuh - version-14 candidate of the mid-M path, "token pairs" (-DSF_GEMM_MIDM_TP=1, default 0:
 * this header is then not included and the default build's PTX is unchanged; GEMM_NOTES_MID_M.md "Version 14"):
 * C[M, N] = A[M, K] . B[N, K]^T for 65 <= M <= 128 as the swap-AB wgmma GEMM of gemm_bf16_sm90_midm.cuh (the weight B
 * the wgmma M side, the tokens its N side) on clusters of 2 CTAs per 64-row weight "half band" (v13's band height),
 * each CTA one token half and the WHOLE K: no split, no reduction. The two CTAs of a cluster share the weight tile by
 * TMA multicast, each loading half of it (the mirror image of version 12, whose band pairs shared the activations);
 * cuBLASLt's plan at 4096 x 4096 M 128 (nvjet_sm90_tst_64x64_64x13_2x1: 64 x 64 tiles, clusters of 2 along the
 * tokens, unsplit K, a 13-stage ring).
 *
 * Work: grid 2 * ceil(N / 64), clusters of 2 CTAs along x. Cluster rank r = blockIdx.x % 2, half band hb =
 * blockIdx.x / 2 (weight rows hb * 64 ..), tokens [r * NT / 2, (r + 1) * NT / 2). Per K block kb, stage s holds
 *   weight tile [64][64] (8 KB) at 0: rank r loads rows hb * 64 + 32 r .. + 31 (box 32 rows) into byte 4096 r of
 *            BOTH CTAs (multicast, mask 0b11); a half wholly past N (a last half band of N % 64 in 1..32) loads the
 *            last 32-row block holding real rows instead (no box wholly out of bounds; its rows reach only
 *            accumulators of weight rows >= N, never stored); rows past N inside a box are zero-filled by TMA;
 *   activation tile [NT / 2][64] at 8 KB: the CTA's own token rows r * NT / 2 .. (box NT / 2 rows, no multicast;
 *            rows past M zero-filled).
 * Consumer warpgroup c multiplies the whole 64-row weight tile by tokens c * NT / 4 .. of the CTA's half (wgmma
 * m64 n(NT / 4) k16; NT 128: n32): activation offset c * NT / 4 * 128 bytes, a multiple of the 1024-byte swizzle atom.
 * SF_GEMM_MIDM_TP_KC=1 (diagnostic): consumer c takes k16 steps 2c, 2c + 1 of every stage for all NT / 2 tokens (two
 * m64n64k16 per stage instead of four m64n32k16: shared-memory operand reads per stage 16 KB instead of 24 KB, the
 * weight tile no longer read by both), and the two K-halves are summed at the end through the idle ring (each
 * consumer writes the 16 accumulators of the other's tokens, a named barrier, then adds the other's 16 to its own);
 * the ring protocol is unchanged (both consumers still wait on and release every stage).
 *
 * Ring protocol (version 12's / version 8's, run correct on the H200), per stage s:
 *   full[s]  1 arrival: the own producer's arrive.expect_tx of the whole stage (8 KB weight = both halves + own
 *            activations); the bytes come from the own activation load, the own weight half (multicast) and the
 *            partner's weight half (multicast, possibly before the local expect: the phase cannot complete before the
 *            local arrival).
 *   empty[s] 16 arrivals: the 8 consumer warps of both CTAs (each producer's multicast writes slot s of both); lane 0
 *            arrives locally, lane 1 on the partner's barrier (midm_mc_arrive_peer: mapa + remote arrive).
 * The first ring round's activation loads (own CTA, own barriers: expect_tx then the load) are issued before the first
 * cluster barrier, the weight halves (multicast into the partner) after it (version 12 did the same with its own,
 * non-shared operand, the weight). With SF_GEMM_MIDM_TP_PRE=1 (diagnostic) the first round's weight is also loaded
 * before that barrier, both halves by each CTA into itself (no multicast: the DRAM round trip of the first stages
 * starts before the barrier; 13 x 4 KB more L2 -> SM bytes per CTA); from the second round on, as above.
 * Cluster barriers: after the barrier init (no multicast or remote arrive into an uninitialised partner), and one
 * before exit (no remote arrive on an exited partner), split: every thread arrives (release) as soon as its last
 * remote arrive is issued, the consumers store their outputs, and only then wait.
 *
 * Accumulators (wgmma m64n(NT / 4)k16 D): register 4 j + e of lane (g, q) of warp w in consumer c is weight row
 * hb * 64 + 16 w + g + 8 (e >= 2) and token r * NT / 2 + c * NT / 4 + 8 j + 2 q + (e & 1); the store is transposed
 * (2-byte stores into C [M][N], checked against M and N).
 *
 * SF_GEMM_MIDM_XROWS=1 (diagnostic, as version 13's): rank 1 loads its M - NT / 2 real token rows only (a second map
 * tm_x1, box M - NT / 2 rows; its expect_tx counts those bytes): no zero-filled rows past M; the stage's rows past them
 * keep stale values, which reach only the accumulators of tokens >= M (D column t depends on token row t alone), never
 * stored.
 *
 * Requirements (checked by the host): K % 8 == 0, A and B 16-byte aligned (TMA), NT / 2 < M <= NT (no token half
 * wholly past M), 2 * ceil(N / 64) CTAs in one wave. tm_w: box 32 rows; tm_x: box NT / 2 rows (XROWS: tm_x1 box
 * M - NT / 2 rows, rank 1's).
 */
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "gemm_bf16_sm90_midm_mc.cuh" /* midm_mc_arrive_peer, and through it the v4 / v13 helpers */
#include "gemm_bf16_sm90_config.cuh"  /* SF_GEMM_MIDM_TP, SF_GEMM_MIDM_TP_STAGES, SF_GEMM_MIDM_TP_PRE */

namespace sfgemm {

const int kTpRows = 64; /* weight rows per cluster (a half band); each CTA loads kTpRows / 2 of them */

/* Per token tile NT: stage bytes (weight 8 KB + activations NT / 2 x 128 B), ring depth and dynamic shared memory. */
template <int NT> struct MidmTpCfg {
	static const int kWBytes = kTpRows * kWgBK * 2;
	static const int kWHalf = kWBytes / 2;
	static const int kXBytes = NT / 2 * kWgBK * 2;
	static const int kStageBytes = kWBytes + kXBytes;
	static const int kStages = SF_GEMM_MIDM_TP_STAGES;
	static const int kSmemBytes = kStages * kStageBytes + 1024 /* alignment slack */ + 256 /* barriers */;
	static_assert(NT == 128, "token pairs: NT 128 (each consumer n32; n16 has no wrapper in the ops header)");
	static_assert(kWHalf % 1024 == 0 && (NT / 4 * 128) % 1024 == 0 && kStageBytes % 1024 == 0,
		      "weight halves, consumer token blocks and stages start on 1024-byte swizzle atoms");
	static_assert(kStages >= 2 && 16 * kStages <= 256, "the ring's barriers fit in their 256 bytes");
	static_assert(kSmemBytes <= 227 * 1024, "the ring fits in the opt-in shared memory of an sm_90 CTA");
};

/* barrier.cluster split in its two halves (not .aligned: warps may reach them divergently); every thread of both CTAs
 * arrives once, then waits. */
__device__ __forceinline__ void midm_tp_cluster_arrive()
{
	asm volatile("barrier.cluster.arrive.release;" ::: "memory");
}
__device__ __forceinline__ void midm_tp_cluster_wait()
{
	asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}

/*
 * One launch: grid 2 * ceil(N / 64), kWgThreads threads, MidmTpCfg<NT>::kSmemBytes dynamic shared memory, clusters of
 * 2 CTAs along x. tm_w: the weight B [N][K], box 32 rows; tm_x: the activations A [M][K], box NT / 2 rows. C [M][N].
 */
template <int NT>
__global__ void __launch_bounds__(kWgThreads, 1)
	gemm_midm_tp_kernel(const __grid_constant__ CUtensorMap tm_w, const __grid_constant__ CUtensorMap tm_x,
#if SF_GEMM_MIDM_XROWS
			    const __grid_constant__ CUtensorMap tm_x1,
#endif
			    __nv_bfloat16 *__restrict__ C, int M, int N, int K)
{
	typedef MidmTpCfg<NT> Cfg;
	const int kStages = Cfg::kStages, kStageBytes = Cfg::kStageBytes, kNC = NT / 4;
	const int kNR = SF_GEMM_MIDM_TP_KC ? NT / 4 : NT / 8; /* accumulators per thread (KC: m64n64, both token quarters) */
	extern __shared__ uint8_t smem_raw[];
	const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
	const uint32_t base = (raw + 1023) & ~1023u;
	const uint32_t bar_full = base + kStages * kStageBytes, bar_empty = bar_full + 8 * kStages;
	const int wg = threadIdx.x / 128;
	const int r = (int)blockIdx.x & 1, hb = (int)blockIdx.x >> 1; /* cluster rank (clusters of 2 along x), half band */
	const uint32_t peer = (uint32_t)(r ^ 1);
	/* the own weight half: rows hb * 64 + 32 r, or (wholly past N) the last 32-row block holding real rows */
	const int wrow = min(hb * kTpRows + r * (kTpRows / 2), (N - 1) / (kTpRows / 2) * (kTpRows / 2));
	const int kb_count = (K + kWgBK - 1) / kWgBK;
	const int npre = min(kb_count, kStages);
#if SF_GEMM_MIDM_XROWS /* rank 1: its M - NT / 2 real rows only */
	const CUtensorMap *mx = r ? &tm_x1 : &tm_x;
	const uint32_t kTxBytes = Cfg::kWBytes + (r ? M - NT / 2 : NT / 2) * (kWgBK * 2);
#else
	const CUtensorMap *mx = &tm_x;
	const uint32_t kTxBytes = kStageBytes;
#endif

	if (threadIdx.x == 0) {
		asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tm_w) : "memory");
		asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)mx) : "memory");
		for (int s = 0; s < kStages; s++) {
			mbar_init(bar_full + 8 * s, 1);
			mbar_init(bar_empty + 8 * s, 16);
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	/* the first ring round's own loads (own barriers, slots free in this CTA) go out before the cluster barrier */
	if (threadIdx.x == 0)
		for (int i = 0; i < npre; i++) {
			const uint32_t sw = base + i * kStageBytes;
			mbar_expect_tx(bar_full + 8 * i, kTxBytes);
			tma_load_2d(sw + Cfg::kWBytes, mx, bar_full + 8 * i, i * kWgBK, r * (NT / 2));
#if SF_GEMM_MIDM_TP_PRE
			/* both weight halves into this CTA alone (the partner loads its own copy of the first round) */
			const int w0 = hb * kTpRows, w1 = min(w0 + kTpRows / 2, (N - 1) / (kTpRows / 2) * (kTpRows / 2));
			tma_load_2d(sw, &tm_w, bar_full + 8 * i, i * kWgBK, w0);
			tma_load_2d(sw + Cfg::kWHalf, &tm_w, bar_full + 8 * i, i * kWgBK, w1);
#endif
		}
	cluster_sync(); /* the partner's barriers are initialised before any multicast or remote arrive */

	if (wg == 0) {
		asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
		if (threadIdx.x == 0) {
			uint32_t it = 0;
			for (int kb = 0; kb < kb_count; kb++, it++) {
				const uint32_t s = it % kStages, ph = (it / kStages) & 1;
				const uint32_t sw = base + s * kStageBytes;
				if ((int)it >= npre) { /* the first round's activation loads went out before the cluster barrier */
					mbar_wait(bar_empty + 8 * s, ph ^ 1);
					mbar_expect_tx(bar_full + 8 * s, kTxBytes);
					tma_load_2d(sw + Cfg::kWBytes, mx, bar_full + 8 * s, kb * kWgBK, r * (NT / 2));
				} else if (SF_GEMM_MIDM_TP_PRE) {
					continue; /* the first round's weight is in already (both halves, no multicast) */
				}
				tma_load_2d_mc(sw + r * Cfg::kWHalf, &tm_w, bar_full + 8 * s, kb * kWgBK, wrow, (uint16_t)3);
			}
		}
		midm_tp_cluster_arrive(); /* the producer warpgroup issues no remote arrive: at once */
		midm_tp_cluster_wait();
		return;
	}

	asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
	const int c = wg - 1; /* tokens c * NT / 4 .. of the CTA's half */
	const int tid = threadIdx.x - 128 * wg, warp = tid >> 5, lane = tid & 31;
	const int g = lane >> 2, q = lane & 3;
	float d[kNR];
#pragma unroll
	for (int i = 0; i < kNR; i++)
		d[i] = 0.0f;
	uint32_t it = 0, prev = 0;
	for (int kb = 0; kb < kb_count; kb++, it++) {
		const uint32_t s = it % kStages, ph = (it / kStages) & 1;
		mbar_wait(bar_full + 8 * s, ph);
		const uint32_t sw = base + s * kStageBytes;
		wgmma_fence();
#if SF_GEMM_MIDM_TP_KC /* k16 steps 2c, 2c + 1 for all the CTA's tokens */
		const uint32_t sx = sw + Cfg::kWBytes;
#pragma unroll
		for (int kk = 0; kk < 2; kk++)
			wgmma_m64k16<NT / 2>(d, wg_desc(sw + (2 * c + kk) * 32), wg_desc(sx + (2 * c + kk) * 32));
#else
		const uint32_t sx = sw + Cfg::kWBytes + c * (kNC * 128);
#pragma unroll
		for (int kk = 0; kk < kWgBK / 16; kk++)
			wgmma_m64k16<kNC>(d, wg_desc(sw + kk * 32), wg_desc(sx + kk * 32));
#endif
		wgmma_commit();
		if (kb > 0) {
			wgmma_wait<1>(); /* the batch of stage prev has retired: its slot is free in both CTAs */
			if (lane == 0)
				mbar_arrive(bar_empty + 8 * prev);
			else if (lane == 1)
				midm_mc_arrive_peer(bar_empty + 8 * prev, peer);
		}
		prev = s;
	}
	wgmma_wait<0>();
	if (kb_count > 0) {
		if (lane == 0)
			mbar_arrive(bar_empty + 8 * prev);
		else if (lane == 1)
			midm_mc_arrive_peer(bar_empty + 8 * prev, peer);
	}
	midm_tp_cluster_arrive(); /* after this thread's last remote arrive; the wait comes after the stores */
#if SF_GEMM_MIDM_TP_KC
	{ /* sum the two consumers' K halves: consumer c keeps tokens c * NT / 4 .. (registers 16 c .. 16 c + 15 of m64n64) */
		static_assert(NT / 4 == 32 && kNR == 32, "KC: m64n64 accumulators, 16 per token quarter");
		/* both consumers are past their last wgmma and every load into this ring (own and partner's) has landed: each
		 * was for a stage this CTA's full barrier completed; slab x[owner][i][tid], 16 KB at the ring's start */
		float *x = (float *)(smem_raw + (base - raw));
		asm volatile("bar.sync 1, 256;" ::: "memory");
#pragma unroll
		for (int i = 0; i < 16; i++)
			x[((1 - c) * 16 + i) * 128 + tid] = c == 0 ? d[16 + i] : d[i];
		asm volatile("bar.sync 1, 256;" ::: "memory");
#pragma unroll
		for (int i = 0; i < 16; i++)
			d[i] = (c == 0 ? d[i] : d[16 + i]) + x[(c * 16 + i) * 128 + tid];
	}
#endif

	/* weight row of register 4 j + e: n_b (+ 8 for e >= 2); token t0 + 8 j + 2 q + (e & 1) */
	const int n_b = hb * kTpRows + warp * 16 + g, t0 = r * (NT / 2) + c * kNC;
#pragma unroll
	for (int j = 0; j < kNC / 8; j++) {
		const int m = t0 + 8 * j + 2 * q;
#pragma unroll
		for (int e = 0; e < 4; e++) {
			const int n = n_b + (e >= 2 ? 8 : 0), mm = m + (e & 1);
			if (n < N && mm < M)
				C[(size_t)mm * N + n] = __float2bfloat16_rn(d[4 * j + e]);
		}
	}
	midm_tp_cluster_wait(); /* the partner's last arrives on this CTA's barriers have landed: it may exit */
}

/* Version 14 host rule (plain host code; emulate_midm_tp.py mirrors it): whether an M x N problem runs as token pairs:
 * NT / 2 < M <= NT for NT 128 (M 65..128), the 2 * ceil(N / 64) CTAs within one wave of sms, and `resident`
 * (cudaOccupancyMaxActiveClusters of 2-CTA clusters; < 0: not consulted) holding all ceil(N / 64) clusters at once. */
inline bool midm_tp_take(int M, int N, int sms, int resident)
{
	const int hbands = (N + kTpRows - 1) / kTpRows;
	return M > 64 && M <= 128 && 2 * hbands <= sms && (resident < 0 || resident >= hbands);
}

namespace { /* internal linkage: a function-local static of an external template would be an STB_GNU_UNIQUE symbol
	     * shared by every library of one process (GEMM_NOTES.md, the midm_s1/s2/s4 anomaly) */

/* Sets the dynamic shared memory limit of gemm_midm_tp_kernel<NT> once; 0 on success. */
template <int NT> int midm_tp_attr(void)
{
	static bool set = false;
	if (!set) {
		if (cudaFuncSetAttribute(gemm_midm_tp_kernel<NT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					 MidmTpCfg<NT>::kSmemBytes) != cudaSuccess)
			return -1;
		set = true;
	}
	return 0;
}

/* 2-CTA clusters of gemm_midm_tp_kernel<NT> resident at once (cached; 0: not launchable). */
template <int NT> int midm_tp_resident(int sms)
{
	static int cache = 0;
	if (cache == 0) {
		cache = -1;
		if (!midm_tp_attr<NT>()) {
			cudaLaunchAttribute at[1];
			const cudaLaunchConfig_t cfg = cluster_launch_config(at, 2 * sms, kWgThreads, MidmTpCfg<NT>::kSmemBytes, 2, 0);
			int n = 0;
			if (cudaOccupancyMaxActiveClusters(&n, (void *)gemm_midm_tp_kernel<NT>, &cfg) == cudaSuccess && n > 0)
				cache = n;
			else
				(void)cudaGetLastError();
		}
	}
	return cache > 0 ? cache : 0;
}

/* One launch of gemm_midm_tp_kernel<NT> (XROWS: mx1, rank 1's activation map): 0 on success, -1 when refused. */
template <int NT>
int midm_tp_launch(const CUtensorMap &mw, const CUtensorMap &mx,
#if SF_GEMM_MIDM_XROWS
		   const CUtensorMap &mx1,
#endif
		   __nv_bfloat16 *C, int M, int N, int K, cudaStream_t stream)
{
	if (midm_tp_attr<NT>())
		return -1;
	const int hbands = (N + kTpRows - 1) / kTpRows;
	cudaLaunchAttribute at[1];
	const cudaLaunchConfig_t cfg = cluster_launch_config(at, 2 * hbands, kWgThreads, MidmTpCfg<NT>::kSmemBytes, 2, stream);
	if (cudaLaunchKernelEx(&cfg, gemm_midm_tp_kernel<NT>, mw, mx,
#if SF_GEMM_MIDM_XROWS
			       mx1,
#endif
			       C, M, N, K) != cudaSuccess) {
		(void)cudaGetLastError();
		return -1;
	}
	return 0;
}

} /* namespace */
} /* namespace sfgemm */
