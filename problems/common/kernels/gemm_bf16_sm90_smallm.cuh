/*
 * gemm_bf16_sm90_smallm.cuh - the small-M path of gemm_bf16_sm90.cu: C[M, N] = A[M, K] . B[N, K]^T for
 * M <= 64, a weight-streaming kernel (version 2). At these M the GEMM is bound by reading B (the weight)
 * once, so every SM must keep many 16-byte loads of B in flight and nothing else may get in the way.
 *
 * Why version 1 streamed only ~1.55 TB/s (H200 SASS of the v1 kernel): its loads were predicated
 * (`cond ? load : 0`) and ptxas sank them below the mma.sync instructions that used them, so a warp had
 * one K step (4 loads, 2 KB) in flight instead of the 16 the source asked for; and each warp ran only
 * 2 such batches before a block reduction, a fence, an atomic and a last-block reduction (split-K).
 *
 * Version 2, work split: a block of 8 warps owns 8 * RG consecutive rows of B (RG groups of 8); warp w
 * takes row group w % RG and the (w / RG)-th of KS = 8 / RG consecutive K slices. No split across blocks
 * (no scratch, no atomics): grid = ceil(N / (8 RG)) blocks, 2 resident per SM for M <= 16 (launch
 * bounds). The main loop has no predicates: rows of B past N are clamped to row N - 1 and rows of A past M to row M - 1
 * (their products land only in outputs that are never stored), and only whole 32-wide K steps inside K
 * are batched; the last partial step (K % 32 != 0) is loaded with a predicate. Per batch a lane issues U
 * 16-byte loads of B (ld.global.nc.L1::no_allocate: read once) and U * MH of A (L1-cached: every block
 * rereads A) before the first mma: U = 8 puts 8 warps * 2 blocks * 8 * 512 B = 64 KB of B in flight per SM.
 *
 * Fragments (the K permutation trick, unchanged from v1): lane (g = lane / 4, q = lane % 4) loads the 8
 * contiguous elements k0 + 8q .. k0 + 8q + 7 of B row g and of A rows h * 8 + g (h < MH), and feeds
 * elements 0-3 to one m16n8k16 and 4-7 to a second: A and B see the same permutation of k, so the sum is
 * unchanged. MH = ceil(M / 8) 8-row halves of A; tile t of 16 rows uses halves 2t and 2t + 1 (a zero
 * register when 2t + 1 == MH).
 *
 * Candidates (tools/gpu_gemm.sh times them): SF_GEMM_SM_PIPE=1 loads the next batch before this batch's
 * mma.sync (register double buffer); SF_GEMM_SM_ILV=1 deals K batches round-robin to the warps of a row
 * group instead of contiguous K slices (contiguous stretches of each row in flight at once).
 *
 * Reduction, deterministic: each warp adds its two accumulator sets (even / odd K steps of a batch); the
 * KS warps of a row group store their sums to shared memory and the group's first warp adds them in
 * K-slice order and stores bf16 pairs.
 *
 * SF_GEMM_SM16=1 (the default; GEMM_NOTES_MID_M.md "M 9-16 measured"): M 9..16 on gemm_smallm16_kernel below
 * where its grid is one wave (launch_small): each warp feeds its two A halves to two 8-row groups of B, so a lane loads as many A as B bytes
 * (as at M <= 8) instead of twice as many.
 *
 * SF_GEMM_SM_LDPF=n (256 by default since session 17; GEMM_NOTES_MID_M2.md "M <= 16: ramp and tail"): the streaming
 * loads of B carry .L2::<n>B. The L2 prefetch candidates of the same section (SF_GEMM_SM_PF / SF_GEMM_SM_PF_OP: a
 * warp's batch D ahead; SF_GEMM_SM_XPF: one generation of blocks ahead) measured slower than the default in session 17,
 * call 1, and were removed; setting one of their macros stops the build with an #error.
 *
 * Requirements (checked by the host): K % 8 == 0, A and B 16-byte aligned, N % 2 == 0, M >= 1.
 */
#pragma once
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

#ifndef SF_GEMM_SM_RG /* row groups of 8 per block: 1, 2, 4 or 8 */
#define SF_GEMM_SM_RG 1
#endif
#ifndef SF_GEMM_SM_U /* K steps (of 32) whose loads are issued together, M <= 16 */
#define SF_GEMM_SM_U 8
#endif
#ifndef SF_GEMM_SM_ILV /* 1: K batches interleaved over the warps of a row group (candidate) */
#define SF_GEMM_SM_ILV 0
#endif
#ifndef SF_GEMM_SM16 /* 1: M 9..16 on gemm_smallm16_kernel where its grid is one wave (launch_small); 0: never */
#define SF_GEMM_SM16 1
#endif
#ifndef SF_GEMM_SM_PIPE /* 1: the next batch's loads are issued before this batch's mma.sync (candidate) */
#define SF_GEMM_SM_PIPE 0
#endif
#if defined(SF_GEMM_SM_PF) || defined(SF_GEMM_SM_PF_OP) || defined(SF_GEMM_SM_XPF) || defined(SF_GEMM_SM_XPF_WAVES) || \
	defined(SF_GEMM_SM_XPF_MB) /* the small-M L2 prefetch candidates, measured slower than the default, removed */
#error "SF_GEMM_SM_PF / _PF_OP / _XPF (small-M L2 prefetch, smpf1 / smpf2 / smpfb / smxpf) were removed in session 17: GEMM_NOTES_MID_M2.md \"Session 17, call 1 measured\"; commit ebf22e4 holds them"
#endif
#ifndef SF_GEMM_SM_LDPF /* 64, 128 or 256: the streaming loads of B carry .L2::<n>B; 0: no prefetch-size qualifier. 256 by
			 * default since session 17 (M <= 16, 20 cases on the 4 shapes: 2.7% faster geomean, none slower by > 0.3%) */
#define SF_GEMM_SM_LDPF 256
#endif

namespace sfgemm {

const int kSmWarps = 8; /* warps per block */
const int kSmRG = SF_GEMM_SM_RG;
const int kSmRows = 8 * kSmRG; /* rows of B per block */

#if SF_GEMM_SM_LDPF == 0
#define SF_GEMM_SM_LD "ld.global.nc.L1::no_allocate.v4.u32"
#elif SF_GEMM_SM_LDPF == 64
#define SF_GEMM_SM_LD "ld.global.nc.L1::no_allocate.L2::64B.v4.u32"
#elif SF_GEMM_SM_LDPF == 128
#define SF_GEMM_SM_LD "ld.global.nc.L1::no_allocate.L2::128B.v4.u32"
#elif SF_GEMM_SM_LDPF == 256
#define SF_GEMM_SM_LD "ld.global.nc.L1::no_allocate.L2::256B.v4.u32"
#else
#error "SF_GEMM_SM_LDPF must be 0, 64, 128 or 256"
#endif

__device__ __forceinline__ uint4 ld_stream16(const void *p)
{
	uint4 v;
	asm volatile(SF_GEMM_SM_LD " {%0, %1, %2, %3}, [%4];"
		     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
		     : "l"(p));
	return v;
}

__device__ __forceinline__ void mma_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
					  uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
		     "{%8, %9}, {%0, %1, %2, %3};"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
		     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* acc[t] += the two m16n8k16 of one 32-wide K step (8 elements per lane of B and of each A half) */
template <int MH>
__device__ __forceinline__ void smallm_step(float (&acc)[(MH + 1) / 2][4], const uint4 (&av)[MH], const uint4 &bv)
{
#pragma unroll
	for (int t = 0; t < (MH + 1) / 2; t++) {
		const uint4 lo = av[2 * t], hi = 2 * t + 1 < MH ? av[(2 * t + 1) % MH] : make_uint4(0, 0, 0, 0);
		mma_16816(acc[t], lo.x, hi.x, lo.y, hi.y, bv.x, bv.y);
		mma_16816(acc[t], lo.z, hi.z, lo.w, hi.w, bv.z, bv.w);
	}
}

/* the loads of one batch: U K steps from step st, B streamed, A through L1 (no predicates) */
template <int MH, int U>
__device__ __forceinline__ void smallm_load(uint4 (&bv)[U], uint4 (&av)[U][MH], const __nv_bfloat16 *brow,
					    const __nv_bfloat16 *const (&arow)[MH], int st)
{
#pragma unroll
	for (int u = 0; u < U; u++)
		bv[u] = ld_stream16(brow + (size_t)(st + u) * 32);
#pragma unroll
	for (int u = 0; u < U; u++)
#pragma unroll
		for (int h = 0; h < MH; h++)
			av[u][h] = __ldg((const uint4 *)(arow[h] + (size_t)(st + u) * 32));
}

/*
 * One launch of the small-M GEMM: grid ceil(N / kSmRows), kSmWarps * 32 threads. MH: 8-row halves of A
 * (M <= 8 MH); U: K steps per batch of loads. Two blocks per SM (128 registers) for MH <= 2, one above
 * (the A fragments of M > 16 need up to 255 registers).
 */
template <int MH, int U>
__global__ void __launch_bounds__(kSmWarps * 32, MH <= 2 ? 2 : 1)
	gemm_smallm_kernel(const __nv_bfloat16 *__restrict__ A, const __nv_bfloat16 *__restrict__ B,
			   __nv_bfloat16 *__restrict__ C, int M, int N, int K)
{
	constexpr int KS = kSmWarps / kSmRG, MT = (MH + 1) / 2;
	__shared__ float red[kSmWarps][MT][4][32];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int g = lane >> 2, q = lane & 3;
	const int rg = warp % kSmRG, ks = warp / kSmRG;
	const int n0 = blockIdx.x * kSmRows + rg * 8; /* first row of this warp's group */
	const int steps = (K + 31) / 32, full = K / 32;
	/* batches of U whole steps: st, st + stride, ... while st + U <= lim; then single steps r, r + rstep, ...
	 * below rend (predicated). Contiguous: warp ks owns steps [ks * per, ...) of K. Interleaved
	 * (SF_GEMM_SM_ILV): batch b of the row goes to warp b % KS, so the KS warps read one contiguous
	 * KS * U * 64-byte stretch of each row at a time. */
#if SF_GEMM_SM_ILV
	const int stride = KS * U, lim = full / U * U, rstep = KS, rend = steps;
	int st = ks * U;
#else
	const int per = (steps + KS - 1) / KS;
	const int s0 = ks * per, rend = min(s0 + per, steps), lim = min(rend, full), stride = U, rstep = 1;
	int st = s0;
#endif

	float acc[2][MT][4]; /* two sets (even and odd K steps): two shorter mma dependency chains */
#pragma unroll
	for (int i = 0; i < 2; i++)
#pragma unroll
		for (int t = 0; t < MT; t++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				acc[i][t][e] = 0.0f;

	const __nv_bfloat16 *brow = B + (size_t)min(n0 + g, N - 1) * K + q * 8;
	const __nv_bfloat16 *arow[MH];
#pragma unroll
	for (int h = 0; h < MH; h++)
		arow[h] = A + (size_t)min(h * 8 + g, M - 1) * K + q * 8;

#if SF_GEMM_SM_PIPE
	/* register double buffer: batch st + U is loaded before batch st's mma.sync run */
	if (st + U <= lim) {
		uint4 bv[U], av[U][MH];
		smallm_load<MH, U>(bv, av, brow, arow, st);
		for (;;) {
			const bool more = st + stride + U <= lim;
			uint4 bn[U], an[U][MH];
			if (more)
				smallm_load<MH, U>(bn, an, brow, arow, st + stride);
#pragma unroll
			for (int u = 0; u < U; u++)
				smallm_step<MH>(acc[u & 1], av[u], bv[u]);
			st += stride;
			if (!more)
				break;
#pragma unroll
			for (int u = 0; u < U; u++) {
				bv[u] = bn[u];
#pragma unroll
				for (int h = 0; h < MH; h++)
					av[u][h] = an[u][h];
			}
		}
	}
#else
	for (; st + U <= lim; st += stride) {
		uint4 bv[U], av[U][MH];
		smallm_load<MH, U>(bv, av, brow, arow, st);
#pragma unroll
		for (int u = 0; u < U; u++)
			smallm_step<MH>(acc[u & 1], av[u], bv[u]);
	}
#endif
#if SF_GEMM_SM_ILV
	st = lim + ks;
#endif
	for (; st < rend; st += rstep) { /* fewer than U steps left, or the partial last step */
		const bool ok = st * 32 + q * 8 < K;
		uint4 av[MH];
		const uint4 bv = ok ? ld_stream16(brow + (size_t)st * 32) : make_uint4(0, 0, 0, 0);
#pragma unroll
		for (int h = 0; h < MH; h++)
			av[h] = ok ? __ldg((const uint4 *)(arow[h] + (size_t)st * 32)) : make_uint4(0, 0, 0, 0);
		smallm_step<MH>(acc[0], av, bv);
	}

#pragma unroll
	for (int t = 0; t < MT; t++)
#pragma unroll
		for (int e = 0; e < 4; e++)
			red[warp][t][e][lane] = acc[0][t][e] + acc[1][t][e];
	__syncthreads();
	if (ks != 0)
		return;
	/* the group's first warp: lane (g, q) owns rows t * 16 + g (+ 8) and columns n0 + 2q, n0 + 2q + 1 */
	const int n = n0 + 2 * q;
	if (n >= N)
		return;
#pragma unroll
	for (int t = 0; t < MT; t++) {
		float s[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
#pragma unroll
		for (int j = 0; j < KS; j++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				s[e] += red[rg + j * kSmRG][t][e][lane];
		const int m = t * 16 + g;
		if (m < M)
			*(__nv_bfloat162 *)(C + (size_t)m * N + n) = __floats2bfloat162_rn(s[0], s[1]);
		if (m + 8 < M)
			*(__nv_bfloat162 *)(C + (size_t)(m + 8) * N + n) = __floats2bfloat162_rn(s[2], s[3]);
	}
}

#if SF_GEMM_SM16
const int kSm16Rows = 16; /* rows of B per block of gemm_smallm16_kernel: two 8-row groups, every warp both */

/*
 * M 9..16 (SF_GEMM_SM16=1, when ceil(N / 16) <= 2 x SMs): grid ceil(N / 16), kSmWarps * 32 threads, two blocks per SM. Block b
 * owns rows 16 b .. 16 b + 15 of B; warp w takes the w-th of kSmWarps contiguous K slices and, per 32-wide K
 * step, loads both A halves (rows g and 8 + g, the K permutation trick of the kernel above) and both row groups
 * of B (rows 16 b + g and 16 b + 8 + g), then issues 2 m16n8k16 per row group with the same A registers. Per
 * batch of U steps a lane issues 2 U loads of B and 2 U of A: with U = SF_GEMM_SM_U / 2 the same bytes of B in
 * flight, and the same load count and registers, as gemm_smallm_kernel<1, SF_GEMM_SM_U> (M <= 8), whose A:B
 * load ratio is 1:1 (gemm_smallm_kernel<2, U>: 2:1). Rows of A past M clamp to M - 1, rows of B past N to
 * N - 1 (never stored); the last partial K step is predicated. Reduction as above, deterministic: warps 0 and
 * 1 add row group 0 / 1 over the K slices in slice order and store bf16 pairs.
 */
template <int U>
__global__ void __launch_bounds__(kSmWarps * 32, 2)
	gemm_smallm16_kernel(const __nv_bfloat16 *__restrict__ A, const __nv_bfloat16 *__restrict__ B,
			     __nv_bfloat16 *__restrict__ C, int M, int N, int K)
{
	__shared__ float red[kSmWarps][2][4][32];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int g = lane >> 2, q = lane & 3;
	const int n0 = blockIdx.x * kSm16Rows;
	const int steps = (K + 31) / 32, full = K / 32, per = (steps + kSmWarps - 1) / kSmWarps;
	const int s0 = warp * per, rend = min(s0 + per, steps), lim = min(rend, full);

	float acc[2][2][4]; /* [even / odd K step][row group][fragment] */
#pragma unroll
	for (int i = 0; i < 2; i++)
#pragma unroll
		for (int r = 0; r < 2; r++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				acc[i][r][e] = 0.0f;

	const __nv_bfloat16 *brow[2], *arow[2];
#pragma unroll
	for (int h = 0; h < 2; h++) {
		brow[h] = B + (size_t)min(n0 + h * 8 + g, N - 1) * K + q * 8;
		arow[h] = A + (size_t)min(h * 8 + g, M - 1) * K + q * 8;
	}

	int st = s0;
	/* not unrolled: ptxas would otherwise (at the 128-register cap) overlap two batches and issue the first
	 * mma.sync after 12 of the batch's 16 loads (SASS of an unpinned build), fewer bytes in flight */
#pragma unroll 1
	for (; st + U <= lim; st += U) {
		uint4 bv[U][2], av[U][2];
#pragma unroll
		for (int u = 0; u < U; u++)
#pragma unroll
			for (int h = 0; h < 2; h++)
				bv[u][h] = ld_stream16(brow[h] + (size_t)(st + u) * 32);
#pragma unroll
		for (int u = 0; u < U; u++)
#pragma unroll
			for (int h = 0; h < 2; h++)
				av[u][h] = __ldg((const uint4 *)(arow[h] + (size_t)(st + u) * 32));
#pragma unroll
		for (int u = 0; u < U; u++)
#pragma unroll
			for (int r = 0; r < 2; r++) {
				mma_16816(acc[u & 1][r], av[u][0].x, av[u][1].x, av[u][0].y, av[u][1].y, bv[u][r].x, bv[u][r].y);
				mma_16816(acc[u & 1][r], av[u][0].z, av[u][1].z, av[u][0].w, av[u][1].w, bv[u][r].z, bv[u][r].w);
			}
	}
	for (; st < rend; st++) { /* fewer than U steps left, or the partial last step */
		const bool ok = st * 32 + q * 8 < K;
		uint4 bv[2], av[2];
#pragma unroll
		for (int h = 0; h < 2; h++) {
			bv[h] = ok ? ld_stream16(brow[h] + (size_t)st * 32) : make_uint4(0, 0, 0, 0);
			av[h] = ok ? __ldg((const uint4 *)(arow[h] + (size_t)st * 32)) : make_uint4(0, 0, 0, 0);
		}
#pragma unroll
		for (int r = 0; r < 2; r++) {
			mma_16816(acc[0][r], av[0].x, av[1].x, av[0].y, av[1].y, bv[r].x, bv[r].y);
			mma_16816(acc[0][r], av[0].z, av[1].z, av[0].w, av[1].w, bv[r].z, bv[r].w);
		}
	}

#pragma unroll
	for (int r = 0; r < 2; r++)
#pragma unroll
		for (int e = 0; e < 4; e++)
			red[warp][r][e][lane] = acc[0][r][e] + acc[1][r][e];
	__syncthreads();
	if (warp >= 2)
		return;
	/* warp r: row group r; lane (g, q) owns rows g, g + 8 and columns n, n + 1 (n + 1 < N: N is even) */
	const int n = n0 + warp * 8 + 2 * q;
	if (n >= N)
		return;
	float s[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
#pragma unroll
	for (int j = 0; j < kSmWarps; j++)
#pragma unroll
		for (int e = 0; e < 4; e++)
			s[e] += red[j][warp][e][lane];
	if (g < M)
		*(__nv_bfloat162 *)(C + (size_t)g * N + n) = __floats2bfloat162_rn(s[0], s[1]);
	if (g + 8 < M)
		*(__nv_bfloat162 *)(C + (size_t)(g + 8) * N + n) = __floats2bfloat162_rn(s[2], s[3]);
}
#endif

} /* namespace sfgemm */
