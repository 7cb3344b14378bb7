/*
 * gemm_bf16_sm90_midm_sk.cuh - version-26 candidate of the mid-M path (-DSF_GEMM_MIDM_SK=1, default 0: this header is then
 * not included and the default build's PTX is unchanged; GEMM_NOTES_MID_M3.md "Version 26"): the half-band swap-AB kernel
 * of gemm_bf16_sm90_midm.cuh (64 weight rows as the wgmma M side, NT tokens split over the two consumer warpgroups, one
 * token tile) on a stream-K schedule, for the plans whose half bands leave SMs idle (6144 x 4096: 96 bands on 132 SMs).
 *
 * Work: the U = bands x kbc (band, K block) units in band-major order; CTA i of G (= the SM count, all resident: one CTA per
 * SM) takes units [i U / G, (i + 1) U / G). Its range crosses band edges, so it runs one segment per band it touches and
 * the ring continues across segments. A band is covered by its segments in unit order: the head (the segment that starts
 * at the band's first unit) and, when the band is cut, one or two later parts (at most two as long as U / G > kbc / 2,
 * which the host requires). Per segment, at its last unit: a whole band is stored as bf16; a later part writes its fp32
 * accumulators to its slot of the workspace (ws: bands x 2 slots of 64 x NT floats, register-major: value i of consumer
 * thread j at i * 256 + j, coalesced) and publishes flag[band][slot] = epoch (a named barrier, then one thread's release
 * store; SF_GEMM_MIDM_SK 1 fences in every consumer thread first, as the build measured in session 24 did); the head
 * waits for its band's later parts' flags (one thread polls, then a named barrier), adds their
 * partials in slot order (deterministic) and stores bf16. A later part is either the first segment of its CTA's range or
 * its CTA's only segment, so it never waits itself: no cycle, and with every CTA resident, no deadlock. The epoch (a host
 * counter, one per launch) makes the flags need no reset; the flags are this header's own buffer, zeroed once.
 *
 * A cooperative launch (refused, and the caller falls back, unless all G CTAs are resident). Not for concurrent launches on
 * several streams (one workspace). Requirements (the host's): as the half-band kernel, one token tile (M <= NT), splits 1,
 * bands <= G, 2 U > G kbc (so a band has at most two later parts).
 */
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "gemm_bf16_sm90_midm.cuh"

namespace sfgemm {

/* The stream-K range boundary j of G over U units (CTA j starts there). Plain arithmetic, shared with the host. */
__host__ __device__ __forceinline__ int sk_bound(int j, int U, int G)
{
	return (int)((int64_t)j * U / G);
}

/* The range boundaries x_j (0 < j < G) with b kbc < x_j <= hi: with hi a later part's first unit, that part's slot (1 or
 * 2); with hi = (b + 1) kbc - 1, the band's count of later parts. x_j > L <=> j >= ceil((L + 1) G / U) and x_j <= hi <=>
 * j <= ceil((hi + 1) G / U) - 1. Plain arithmetic, shared with the host and mirrored by tools/gemm_dev/emulate_sk.py. */
__host__ __device__ __forceinline__ int sk_count(int b, int kbc, int hi, int U, int G)
{
	const int64_t lo = (int64_t)b * kbc;
	const int64_t j0 = ((lo + 1) * G + U - 1) / U, j1 = (((int64_t)hi + 1) * G + U - 1) / U - 1;
	const int64_t n = (j1 < G - 1 ? j1 : G - 1) - j0 + 1;
	return n > 0 ? (int)n : 0;
}

template <int NT>
__global__ void __launch_bounds__(kWgThreads, 1)
	gemm_midm_sk_kernel(const __grid_constant__ CUtensorMap tm_w, const __grid_constant__ CUtensorMap tm_x,
			    __nv_bfloat16 *__restrict__ C, int M, int N, int K, float *__restrict__ ws, int *flags, int epoch)
{
	typedef MidmCfg<NT, 1, 1> Cfg;
	const int kNC = NT / 2, kNR = kNC / 2; /* each consumer: 64 rows x NT / 2 tokens */
	const int kStages = Cfg::kStages, kStageBytes = Cfg::kStageBytes;
	const uint32_t kTxBytes = Cfg::kWBytes + min(M, NT) * (kWgBK * 2); /* the activation box is min(M, NT) rows */
	extern __shared__ uint8_t smem_raw[];
	const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
	const uint32_t base = (raw + 1023) & ~1023u;
	const uint32_t bar_full = base + kStages * kStageBytes, bar_empty = bar_full + 8 * kStages;
	const int wg = threadIdx.x / 128;
	const int bands = (N + Cfg::kRows - 1) / Cfg::kRows, kbc = (K + kWgBK - 1) / kWgBK;
	const int U = bands * kbc, G = (int)gridDim.x;
	const int u0 = sk_bound((int)blockIdx.x, U, G), u1 = sk_bound((int)blockIdx.x + 1, U, G);

	if (threadIdx.x == 0) {
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
		asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
		if (threadIdx.x == 0) {
			uint32_t it = 0;
			for (int u = u0; u < u1; u++, it++) {
				const uint32_t s = it % kStages, ph = (it / kStages) & 1;
				mbar_wait(bar_empty + 8 * s, ph ^ 1);
				const uint32_t sw = base + s * kStageBytes;
				mbar_expect_tx(bar_full + 8 * s, kTxBytes);
				tma_load_2d(sw, &tm_w, bar_full + 8 * s, (u % kbc) * kWgBK, (u / kbc) * Cfg::kRows);
				tma_load_2d(sw + Cfg::kWBytes, &tm_x, bar_full + 8 * s, (u % kbc) * kWgBK, 0);
			}
		}
		return;
	}

	asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
	const int c = wg - 1; /* tokens c NT / 2 .. of the band's 64 rows */
	const int tid = threadIdx.x - 128 * wg, warp = tid >> 5, lane = tid & 31;
	const int g = lane >> 2, q = lane & 3, j = tid + 128 * c;
	float d[kNR]; /* zeroed at each segment's start */
	uint32_t it = 0; /* the ring position: units consumed so far */
	/* one segment per band the range touches (at most 3), each a K loop shaped as the half-band kernel's (one wgmma batch
	 * in flight, the previous stage released after it retires) and its epilogue after the loop: no accumulator is touched
	 * between two wgmma of a loop (ptxas otherwise serializes them, C7520; the first build of this kernel did) */
	for (int seg0 = u0; seg0 < u1;) {
		const int b = seg0 / kbc, seg1 = min(u1, (b + 1) * kbc);
#pragma unroll
		for (int i = 0; i < kNR; i++)
			d[i] = 0.0f;
		uint32_t prev = 0;
		for (int u = seg0; u < seg1; u++, it++) {
			const uint32_t s = it % kStages, ph = (it / kStages) & 1;
			mbar_wait(bar_full + 8 * s, ph);
			const uint32_t sw = base + s * kStageBytes, sx = base + s * kStageBytes + Cfg::kWBytes + c * (NT / 2) * 128;
			wgmma_fence();
#pragma unroll
			for (int kk = 0; kk < kWgBK / 16; kk++)
				wgmma_m64k16<kNC>(d, wg_desc(sw + kk * 32), wg_desc(sx + kk * 32));
			wgmma_commit();
			if (u > seg0) {
				wgmma_wait<1>();
				if (lane == 0)
					mbar_arrive(bar_empty + 8 * prev);
			}
			prev = s;
		}
		wgmma_wait<0>();
		if (lane == 0)
			mbar_arrive(bar_empty + 8 * prev);
		/* the segment [seg0, seg1) of band b is complete */
		const bool head = seg0 == b * kbc, whole = head && seg1 == (b + 1) * kbc;
		if (!head) { /* a later part: publish the partial */
			const int slot = sk_count(b, kbc, seg0, U, G);
			float *p = ws + (size_t)(b * 2 + slot - 1) * (64 * NT);
#pragma unroll
			for (int i = 0; i < kNR; i++)
				p[i * 256 + j] = d[i];
#if SF_GEMM_MIDM_SK == 1 /* a GPU-scope fence in every consumer thread, as session 24's measured build (call 5) had */
			__threadfence();
#endif
			/* SF_GEMM_MIDM_SK 2: the barrier orders every consumer thread's partial stores before the publishing thread's
			 * release (cumulative at GPU scope), so one fence-free release suffices */
			asm volatile("bar.sync 1, 256;" ::: "memory");
			if (j == 0)
				asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(flags + b * 2 + slot - 1), "r"(epoch) : "memory");
		} else {
			if (!whole) { /* the head of a cut band: the later parts' partials, in slot order */
				const int parts = sk_count(b, kbc, (b + 1) * kbc - 1, U, G);
				if (j == 0)
					for (int sl = 0; sl < parts; sl++)
						while (ld_acquire(flags + b * 2 + sl) != epoch)
							__nanosleep(64);
				asm volatile("bar.sync 1, 256;" ::: "memory");
				for (int sl = 0; sl < parts; sl++) {
					const float *p = ws + (size_t)(b * 2 + sl) * (64 * NT);
#pragma unroll
					for (int i = 0; i < kNR; i++)
						d[i] += __ldcg(p + i * 256 + j);
				}
			}
			/* weight row of register 4 jj + e: band row warp * 16 + g (+ 8 for e >= 2); token c NT / 2 + 8 jj + 2 q + (e & 1) */
			const int n_b = b * Cfg::kRows + warp * 16 + g, t0 = c * (NT / 2);
#pragma unroll
			for (int jj = 0; jj < kNC / 8; jj++) {
				const int m = t0 + 8 * jj + 2 * q;
#pragma unroll
				for (int e = 0; e < 4; e++) {
					const int n = n_b + (e >= 2 ? 8 : 0), mm = m + (e & 1);
					if (n < N && mm < M)
						C[(size_t)mm * N + n] = __float2bfloat16_rn(d[4 * jj + e]);
				}
			}
		}
		seg0 = seg1;
	}
}

namespace { /* internal linkage: function-local statics of an external template would be STB_GNU_UNIQUE (GEMM_NOTES.md) */

float *g_sk_ws = nullptr;
int *g_sk_flags = nullptr;
size_t g_sk_ws_floats = 0, g_sk_flag_ints = 0;
int g_sk_epoch = 1 << 24; /* far from 0, the flags' initial value */

/* Grows the device buffer *p (*have elements of size bytes each) to at least n elements, zeroed when zero; 0 on success. */
template <typename T> int sk_grow(T **p, size_t *have, size_t n, bool zero)
{
	if (n <= *have)
		return 0;
	if (*p)
		cudaFree(*p);
	*p = nullptr;
	*have = 0;
	if (cudaMalloc(p, n * sizeof(T)) != cudaSuccess ||
	    (zero && (cudaMemset(*p, 0, n * sizeof(T)) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess)))
		return -1;
	*have = n;
	return 0;
}

/* Makes the workspace (floats) and the flags (ints, zeroed when allocated) at least this big; 0 on success. */
int sk_reserve(size_t floats, size_t ints)
{
	return sk_grow(&g_sk_ws, &g_sk_ws_floats, floats, false) || sk_grow(&g_sk_flags, &g_sk_flag_ints, ints, true) ? -1 : 0;
}

/* Sets the dynamic shared memory limit of gemm_midm_sk_kernel<NT> once; 0 on success. */
template <int NT> int midm_sk_attr(void)
{
	static bool set = false;
	if (!set) {
		if (cudaFuncSetAttribute(gemm_midm_sk_kernel<NT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					 MidmCfg<NT, 1, 1>::kSmemBytes) != cudaSuccess)
			return -1;
		set = true;
	}
	return 0;
}

/* One launch of gemm_midm_sk_kernel<NT> over G CTAs; 0 on success, -1 when refused (nothing launched). */
template <int NT>
int midm_sk_launch(const CUtensorMap &mw, const CUtensorMap &mx, __nv_bfloat16 *C, int M, int N, int K, int G,
		   cudaStream_t stream)
{
	const int bands = (N + kMidmRows / 2 - 1) / (kMidmRows / 2);
	if (midm_sk_attr<NT>() || sk_reserve((size_t)bands * 2 * 64 * NT, (size_t)bands * 2))
		return -1;
	const int epoch = ++g_sk_epoch;
	/* cooperative: refused unless all G CTAs are resident at once, which the heads' waits on later CTAs need */
	cudaLaunchAttribute at[1];
	cudaLaunchConfig_t cfg = cluster_launch_config(at, G, kWgThreads, MidmCfg<NT, 1, 1>::kSmemBytes, 1, stream);
	at[0].id = cudaLaunchAttributeCooperative; /* no cluster: the one attribute slot holds the cooperative flag */
	at[0].val.cooperative = 1;
	cfg.numAttrs = 1;
	if (cudaLaunchKernelEx(&cfg, gemm_midm_sk_kernel<NT>, mw, mx, C, M, N, K, g_sk_ws, g_sk_flags, epoch) != cudaSuccess) {
		(void)cudaGetLastError();
		return -1;
	}
	return 0;
}

} /* namespace */
} /* namespace sfgemm */
