/*
 * gemm_bf16_sm90_smallm_as.cuh - candidate (SF_GEMM_SM_ASMEM=1, default 0: not included) of the small-M path of
 * gemm_bf16_sm90.cu for M 9..16 on the multi-wave grids (6144 x 4096, 28672 x 4096), where the default runs
 * gemm_smallm_kernel<2, 8> (gemm_bf16_sm90_smallm.cuh): A staged ONCE PER SM in shared memory, B streamed as before.
 *
 * Why (GEMM_NOTES_MID_M2.md "M 9-16: A staged in shared memory (candidate)"): under Nsight Compute only the M 16
 * kernel stalls on lg_throttle: per 32-wide K step a lane issues 1 B and 2 A global loads (the LSU's global queue),
 * and every one of the 3584 (28672 rows) 8-row blocks re-reads all of A. A block reads each A element only once,
 * so staging per block would move, not remove, the global loads; they go only if A is shared across the tiles an
 * SM runs. Hence a persistent kernel: one block of kAsWarps = 16 warps per SM (the 16 warps per SM of today's two
 * 8-warp blocks), which first copies A's 16 rows (clamped to M - 1) x the whole K into shared memory (cp.async,
 * 16 B each; 16 x as_ld(K) x 2 B = 132 KB at K 4096), then runs 8-row tiles of B exactly as gemm_smallm_kernel<2, U>
 * does (warp group grp = warp / 8 of the block takes tiles 2 blockIdx + grp, + 2 gridDim, ...; warp ks = warp % 8
 * its K slice of every tile), taking A fragments with ld.shared.v4 (the MIO queue, not the global one). Per K step
 * a lane issues one global load (B) instead of three; B bytes in flight per SM as today (16 warps x U x 512 B).
 *
 * Staging: warp (grp, ks) copies rows 8 grp .. 8 grp + 7 of its own K slice; it and its partner (the other group's
 * warp of slice ks, the only other reader of that slice) meet at named barrier 3 + ks (64 threads) once, right
 * after issuing their first batch of B loads (so A's latency hides under B's), or at the end if they had no step.
 * Row stride as_ld(K) elements (K rounded up to 64, + 32): 64 bytes mod 128, so rows g and g + 1 of a quarter-warp's
 * ld.shared.v4 fall in opposite bank halves (conflict-free; emulate_fragments.py checks the banks).
 *
 * Reduction per tile, deterministic as gemm_smallm_kernel: the 8 warps of a group store their sums to red[grp][b],
 * meet at named barrier 1 + grp (256 threads), and warp ks 0 adds them in slice order and stores bf16 pairs.
 * b alternates per tile: tile i + 2 rewrites red[grp][b] only after barrier i + 1, which warp 0 reaches after
 * reading tile i's sums, so one barrier per tile suffices.
 *
 * Requirements (the host): K % 8 == 0, A and B 16-byte aligned, N % 2 == 0, 1 <= M <= 16,
 * asmem_bytes(K) <= kAsMaxDyn (K <= 6720), grid <= ceil(ceil(N / 8) / 2).
 */
#pragma once
#include "gemm_bf16_sm90_smallm.cuh"

#ifndef SF_GEMM_SM_AS_U /* K steps per batch of B loads: SF_GEMM_SM_U (8) keeps today's 64 KB of B in flight per SM */
#define SF_GEMM_SM_AS_U SF_GEMM_SM_U
#endif

namespace sfgemm {

const int kAsWarps = 2 * kSmWarps; /* two groups of 8 warps, one block per SM */
/* staged A row stride in bf16 elements: K rounded up to 64, plus 32 (64 bytes mod 128: see above) */
__host__ __device__ __forceinline__ int as_ld(int K)
{
	return (K + 63) / 64 * 64 + 32;
}
const int kAsRedBytes = 2 * 2 * kSmWarps * 4 * 32 * 4; /* red[group][buffer][warp][e][lane], floats: 16 KB */
const int kAsMaxDyn = 232448 - kAsRedBytes; /* the H200's 227 KB per block (opt-in) less the static reduction */

/* dynamic shared memory of gemm_smallm_as_kernel: 16 rows of A x as_ld(K) bf16 */
inline size_t asmem_bytes(int K)
{
	return (size_t)16 * (size_t)as_ld(K) * 2;
}

__device__ __forceinline__ void as_cp_async16(void *smem, const void *gmem)
{
	const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}

__device__ __forceinline__ void as_bar_sync(int id, int threads)
{
	asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

/*
 * grid <= ceil(ceil(N / 8) / 2) blocks (one per SM), kAsWarps * 32 threads, asmem_bytes(K) dynamic shared memory.
 * U: K steps (of 32) per batch of B loads. C[m][n] for m < M, n < N, each stored once by warp ks 0 of the group
 * that owns tile n / 8.
 */
template <int U>
__global__ void __launch_bounds__(kAsWarps * 32, 1)
	gemm_smallm_as_kernel(const __nv_bfloat16 *__restrict__ A, const __nv_bfloat16 *__restrict__ B,
			      __nv_bfloat16 *__restrict__ C, int M, int N, int K)
{
	extern __shared__ uint4 as_dyn[];
	__shared__ float red[2][2][kSmWarps][4][32];
	__nv_bfloat16 *const as = (__nv_bfloat16 *)as_dyn;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int g = lane >> 2, q = lane & 3;
	const int grp = warp / kSmWarps, ks = warp % kSmWarps;
	const int ld = as_ld(K);
	const int steps = (K + 31) / 32, full = K / 32, per = (steps + kSmWarps - 1) / kSmWarps;
	const int s0 = ks * per, rend = min(s0 + per, steps), lim = min(rend, full);

	/* stage rows 8 grp .. 8 grp + 7 (A rows clamped to M - 1) over this slice's K [s0 * 32, min(rend * 32, K)) */
	{
		const int k0 = s0 * 32, nv = max(min(rend * 32, K) - k0, 0) / 8;
		for (int i = lane; i < 8 * nv; i += 32) {
			const int r = 8 * grp + i / nv, k = k0 + i % nv * 8;
			as_cp_async16(as + (size_t)r * ld + k, A + (size_t)min(r, M - 1) * K + k);
		}
	}
	bool staged = false; /* this warp has met its partner at barrier 3 + ks (once) */
#define SF_AS_SYNC()                                                  \
	do {                                                          \
		if (!staged) {                                        \
			asm volatile("cp.async.wait_all;" ::: "memory"); \
			as_bar_sync(3 + ks, 64);                      \
			staged = true;                                \
		}                                                     \
	} while (0)

	const __nv_bfloat16 *const alo = as + (size_t)g * ld + q * 8, *const ahi = alo + (size_t)8 * ld;
	const int tiles = (N + 7) / 8;
	int buf = 0;
	for (int t = blockIdx.x * 2 + grp; t < tiles; t += gridDim.x * 2, buf ^= 1) {
		const int n0 = t * 8;
		const __nv_bfloat16 *brow = B + (size_t)min(n0 + g, N - 1) * K + q * 8;
		float acc[2][1][4]; /* even / odd K steps: two shorter mma dependency chains */
#pragma unroll
		for (int i = 0; i < 2; i++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				acc[i][0][e] = 0.0f;
		int st = s0;
#pragma unroll 1
		for (; st + U <= lim; st += U) {
			uint4 bv[U];
#pragma unroll
			for (int u = 0; u < U; u++)
				bv[u] = ld_stream16(brow + (size_t)(st + u) * 32);
			SF_AS_SYNC();
#pragma unroll
			for (int u = 0; u < U; u++) {
				const uint4 av[2] = { *(const uint4 *)(alo + (st + u) * 32), *(const uint4 *)(ahi + (st + u) * 32) };
				smallm_step<2>(acc[u & 1], av, bv[u]);
			}
		}
		for (; st < rend; st++) { /* fewer than U steps left, or the partial last step */
			const bool ok = st * 32 + q * 8 < K;
			const uint4 bv = ok ? ld_stream16(brow + (size_t)st * 32) : make_uint4(0, 0, 0, 0);
			SF_AS_SYNC();
			uint4 av[2] = { make_uint4(0, 0, 0, 0), make_uint4(0, 0, 0, 0) };
			if (ok) {
				av[0] = *(const uint4 *)(alo + st * 32);
				av[1] = *(const uint4 *)(ahi + st * 32);
			}
			smallm_step<2>(acc[0], av, bv);
		}
#pragma unroll
		for (int e = 0; e < 4; e++)
			red[grp][buf][ks][e][lane] = acc[0][0][e] + acc[1][0][e];
		as_bar_sync(1 + grp, kSmWarps * 32);
		const int n = n0 + 2 * q;
		if (ks == 0 && n < N) {
			float s[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
#pragma unroll
			for (int j = 0; j < kSmWarps; j++)
#pragma unroll
				for (int e = 0; e < 4; e++)
					s[e] += red[grp][buf][j][e][lane];
			if (g < M)
				*(__nv_bfloat162 *)(C + (size_t)g * N + n) = __floats2bfloat162_rn(s[0], s[1]);
			if (g + 8 < M)
				*(__nv_bfloat162 *)(C + (size_t)(g + 8) * N + n) = __floats2bfloat162_rn(s[2], s[3]);
		}
	}
	SF_AS_SYNC(); /* a warp that ran no K step still meets its partner (who may be waiting on it) */
#undef SF_AS_SYNC
}

} /* namespace sfgemm */
