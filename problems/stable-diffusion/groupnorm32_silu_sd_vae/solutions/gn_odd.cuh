/*
 * gn_odd.cuh - groupnorm32_silu_sd_vae, the one-launch path for small groups that the 16-byte kernels
 * cannot take (v6, GN_ODD=1; NOTES.md "Version 6"): cnt % 8 != 0 (odd H*W, e.g. 7x9 or 13x17, where a
 * group starts at any 2-byte offset) or unaligned pointers. Without it such shapes take the scalar split
 * path: two launches of 32 * N blocks with the statistics read through a serial merge (~9-10 us for 16-40
 * KB on the H200). Here one block per group holds its values in registers (2-byte loads, coalesced: the
 * group is one contiguous run), exact two-pass statistics from the registers, one read, one launch; the
 * (gamma, beta) of every held value is loaded at the start, beside x, so no global load sits between the
 * statistics and the stores. Included by fast.cu after the shared helpers (gn_block_sum, gn_rcp);
 * not a standalone header.
 */
#ifndef GN_ODD_CUH
#define GN_ODD_CUH

#ifndef GN_ODD
#define GN_ODD 1 /* 1 (default since session 13: held-out 7x9 9.70 -> 2.02 us, 13x17 10.66 -> 2.62): small groups with
		  * cnt % 8 != 0 or unaligned pointers in one launch (gn_odd); 0: the scalar split path */
#endif
#define GN_ODD_THREADS 1024 /* most threads of a gn_odd block */
#define GN_ODD_MAX (GN_ODD_THREADS * 8) /* largest group gn_odd holds (VPT 8) */

/* y of one value: h = fp16(x * a + c), y = h / (1 + e^-h) (the oracle's order; one rcp.approx) */
static __device__ __forceinline__ float gn_odd_one(float x, float a, float c)
{
	const float h = __half2float(__float2half_rn(x * a + c));
	return h * gn_rcp(1.0f + fminf(__expf(-h), 0x1p60f));
}

/* One block of blockDim.x threads per group (blockIdx.x = n * 32 + g) of cnt values (cpg channels of hw),
 * thread t holding values t, t + T, ..., t + (VPT - 1) T of the group; VPT * T >= cnt. Any alignment. */
template <int VPT>
__global__ void __launch_bounds__(GN_ODD_THREADS)
	gn_odd(const __half *__restrict__ x, const __half *__restrict__ gamma, const __half *__restrict__ beta,
	       __half *__restrict__ y, int cnt, int cpg, int hw, float eps)
{
	GN_SHARED(float, red1, 32, 4001);
	GN_SHARED(float, red2, 32, 4002);
	const int64_t base = (int64_t)blockIdx.x * cnt;
	const int cb = (int)(blockIdx.x % GN_GROUPS) * cpg, T = (int)blockDim.x;
	float v[VPT];
	unsigned short g[VPT], b[VPT];
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const int i = (int)threadIdx.x + k * T;
		v[k] = 0.0f;
		g[k] = 0;
		b[k] = 0;
		if (i < cnt) {
			const int c = cb + i / hw;
			v[k] = __half2float(__ldg(x + base + i));
			g[k] = __ldg((const unsigned short *)gamma + c);
			b[k] = __ldg((const unsigned short *)beta + c);
		}
	}
	float s = 0.0f;
#pragma unroll
	for (int k = 0; k < VPT; k++)
		s += v[k]; /* idle slots hold +0 */
	const float n = (float)cnt, mean = gn_block_sum(s, red1) / n;
	float m2 = 0.0f;
#pragma unroll
	for (int k = 0; k < VPT; k++)
		if ((int)threadIdx.x + k * T < cnt)
			m2 = fmaf(v[k] - mean, v[k] - mean, m2);
	const float rstd = rsqrtf(gn_block_sum(m2, red2) / n + eps);
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const int i = (int)threadIdx.x + k * T;
		if (i < cnt) {
			const float a = rstd * __half2float(__ushort_as_half(g[k]));
			const float c = __half2float(__ushort_as_half(b[k])) - mean * a;
			y[base + i] = __float2half_rn(gn_odd_one(v[k], a, c));
		}
	}
}

/* Values per thread (1, 2, 4, 8) and block size for a group of cnt values: the fewest idle slots, ties
 * to the most threads (the per-thread chain is the latency). 0: the group is over GN_ODD_MAX. */
static int gn_pick_odd(int64_t cnt, int *threads)
{
	int best = 0;
	int64_t waste = INT64_MAX;
	for (int v = 1; v <= 8; v *= 2) {
		const int64_t t = ((cnt + v - 1) / v + 31) / 32 * 32;
		if (t <= GN_ODD_THREADS && t * v - cnt < waste) {
			best = v;
			waste = t * v - cnt;
			*threads = (int)t;
		}
	}
	return best;
}

/* Launches gn_odd for groups groups of cnt values when the plan holds them; the launch's error, or
 * cudaErrorNotSupported when no plan does (the caller takes another path). */
static cudaError_t gn_odd_launch(const __half *x, const __half *gamma, const __half *beta, __half *y, int64_t cnt,
				 int64_t groups, int64_t cpg, int64_t hw, float eps, cudaStream_t s)
{
	int t = 0;
	const int vpt = cnt <= GN_ODD_MAX && groups <= 2147483647 ? gn_pick_odd(cnt, &t) : 0;
	const unsigned g = (unsigned)groups;
#ifdef SF_EMU_H /* (the emulation rewrites launches in fast.cu only) */
#define GN_ODD_GO(V) emu_launch(g, t, gn_odd<V>, x, gamma, beta, y, (int)cnt, (int)cpg, (int)hw, eps)
	(void)s;
#else
#define GN_ODD_GO(V) gn_odd<V><<<g, t, 0, s>>>(x, gamma, beta, y, (int)cnt, (int)cpg, (int)hw, eps)
#endif
	switch (vpt) {
	case 1: GN_ODD_GO(1); break;
	case 2: GN_ODD_GO(2); break;
	case 4: GN_ODD_GO(4); break;
	case 8: GN_ODD_GO(8); break;
	default: return cudaErrorNotSupported;
	}
#undef GN_ODD_GO
	return cudaGetLastError();
}

#endif
