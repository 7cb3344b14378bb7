/*
 * fast.cu - bandwidth-bound causal depthwise conv1d (width 4) + SiLU (causal_conv1d_silu_d4_mamba2):
 * y[b, d, t] = silu(bias[d] + sum_k w[d, k] * x[b, d, t - 3 + k]), x = 0 before t = 0, float32
 * accumulation and SiLU (__expf, __fdividef), one rounding to bf16. x, y [B, D, L] channel-first.
 *
 * Vector path (L % 8 == 0, x and y 16-byte aligned): 2D grid, rows (b, d) x 16-byte vectors of the
 * row (no integer division per element; CTAs as wide as the row up to THREADS); a thread loads
 * its 8 inputs with one 16-byte load and takes the 3 inputs before them from the previous vector,
 * which the neighbouring lane holds (__shfl_up of two words); lane 0 reads those 3 from global
 * memory (an L1/L2 hit: the previous warp loads them), a row's first vector uses zeros. So x is read
 * from DRAM once and y written once: the byte floor. Weights (8 bytes) and bias per row come through
 * the read-only cache (D * 10 bytes, L2-resident).
 * Flat path (version 2, CC_FLAT; any L, x and y 16-byte aligned): x and y as one flat array of
 * 16-byte vectors; a warp takes 32 * CC_U consecutive vectors (lane + 32 j: coalesced), so the 3 inputs
 * before a vector are the previous vector's, held by lane - 1 (or by lane 31 for the previous j);
 * only lane 0 of j = 0 reads them from global memory. Each input whose position in its row is < 3 - k
 * is masked for tap k (it belongs to the previous row), so rows, even several of them inside one
 * vector (L < 8), need no alignment. One division per thread (the first vector's row), positions
 * advanced by additions after that (the version-1 kernel paid a 64-bit modulo per 8 outputs).
 * Any other shape (misaligned pointers; with CC_FLAT 0 also L % 8 != 0) takes the scalar kernel:
 * one output per thread.
 */
// solforge-tune: THREADS=128,256,512 CC_FLAT=0,1,2 CC_U=1,2,4 CC_VU=1,2,4 CC_FTZ=0,1 CC_FLAT_MAXL=0,4096 CC_ROWS=0,1
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"

#ifndef THREADS
#define THREADS 256
#endif

#ifndef CC_FLAT
#define CC_FLAT 1 /* 0: version 1 (vector kernel at L % 8 == 0, else scalar); 1: the flat kernel where version 1
		     ran the scalar one (L % 8 != 0, aligned); 2: the flat kernel for every aligned shape */
#endif
#ifndef CC_U
#define CC_U 2 /* the flat kernel's vectors per thread (16 bytes each): 1, 2 or 4 */
#endif
#ifndef CC_SMALL_NV
#define CC_SMALL_NV 135168 /* the flat kernel runs U = 1 below this many vectors (more, shorter threads on small calls;
			      * session 14 call 1: U 1 b8-l4 2.46 / b2-l37 3.01 us vs U 2 3.62 / 3.71) */
#endif
#ifndef CC_VU
#define CC_VU 4 /* the row kernel's vectors per thread: 1 (version 1), 2 or 4 (default since session 14 call 2: b8-l8192
		 * 415.06 -> 336.90 us, 0.79 -> 0.97 of the copy; b8-l512 / b8-l4 / b2-l37 within 1%) */
#endif
#ifndef CC_ROWS
#define CC_ROWS 1 /* 1 (default since session 15): rows shorter than THREADS * CC_VU / 4 vectors share a CTA (2-D blocks;
                    * b8-l512 0.79 -> 0.93 of the copy); 0: one row per CTA (warp-sized CTAs at L 512) */
#endif
#ifndef CC_FLAT_MAXL
#define CC_FLAT_MAXL 0 /* aligned rows of L % 8 == 0 up to this length take the flat kernel instead of the row kernel (whose
			* CTAs are lv / CC_VU threads wide: 16 at L 512, 43008 CTAs at b8-l512) */
#endif
#ifndef CC_SCALAR_N
#define CC_SCALAR_N 150000 /* aligned calls of fewer elements than this run on the scalar kernel (one output per thread;
			   * session 14 call 3: scalar / flat held-out b1-l5 (26880 elements) 1.82 / 2.53 us, b3-l7 (112896)
			   * 2.21 / 2.50; b8-l4 (172032) 2.43 / 2.46, b2-l37 (397824) 3.84 / 3.39) */
#endif
#ifndef CC_FTZ
#define CC_FTZ 0 /* 1: silu through ex2.approx.ftz / rcp.approx.ftz (inline PTX), no denormal fix-ups */
#endif
#ifndef CC_IDX32
#define CC_IDX32 1 /* 1: 32-bit division and modulo where the values fit (0: version 1's 64-bit ones) */
#endif

#define CC_W 4

static __device__ __forceinline__ float cc_bf(uint16_t h)
{
	return __uint_as_float((uint32_t)h << 16);
}

/* silu with the MUFU-based __expf and __fdividef (a few ulp; the tolerance is rtol 1e-2, atol 1e-3):
 * the IEEE forms cost ~25 instructions per element, enough to make the issue rate the limit.
 * a < -88.7: __expf(-a) = inf and __fdividef(a, inf) = a * 0 = -0, the limit. */
static __device__ __forceinline__ float cc_silu(float a)
{
#if CC_FTZ && defined(__CUDA_ARCH__) /* (the CPU emulation runs the intrinsics) */
	/* the same two MUFU ops without the non-ftz range fix-ups (FSETP + two FMULs per element in the SASS):
	 * a * rcp(1 + 2^(-a log2 e)); a < -88.7: 2^(..) = inf, rcp = 0, a * 0 = -0 (the limit) */
	float e, r;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(a * -1.4426950408889634f));
	asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + e));
	return a * r;
#else
	return __fdividef(a, 1.0f + __expf(-a));
#endif
}

/* channel d's four taps and bias (OUT: w0..w3, b), through the read-only cache */
static __device__ __forceinline__ void cc_load_w(const uint16_t *__restrict__ w, const uint16_t *__restrict__ bias, int64_t d,
						 float &w0, float &w1, float &w2, float &w3, float &b)
{
	w0 = cc_bf(__ldg(w + d * CC_W));
	w1 = cc_bf(__ldg(w + d * CC_W + 1));
	w2 = cc_bf(__ldg(w + d * CC_W + 2));
	w3 = cc_bf(__ldg(w + d * CC_W + 3));
	b = cc_bf(__ldg(bias + d));
}

/* the 8 outputs of a vector from xs[i + 3] = x[e + i] (i = -3..7) with every tap live (an interior vector):
 * y = silu(b + w0 x[e+i-3] + ... + w3 x[e+i]), packed as 8 bf16 */
static __device__ __forceinline__ uint4 cc_out8(const float (&xs)[8 + CC_W - 1], float w0, float w1, float w2, float w3,
						float b)
{
	uint32_t ow[4];
#pragma unroll
	for (int q = 0; q < 4; q++) {
		float o[2];
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int i = 2 * q + h;
			float acc = b;
			acc = fmaf(w0, xs[i], acc);
			acc = fmaf(w1, xs[i + 1], acc);
			acc = fmaf(w2, xs[i + 2], acc);
			acc = fmaf(w3, xs[i + 3], acc);
			o[h] = cc_silu(acc);
		}
		__nv_bfloat162 pk = __floats2bfloat162_rn(o[0], o[1]);
		ow[q] = *reinterpret_cast<uint32_t *>(&pk);
	}
	return make_uint4(ow[0], ow[1], ow[2], ow[3]);
}

/* xs[0..2] from the previous vector's words z, w (its elements 5, 6, 7), xs[3..10] from cur */
static __device__ __forceinline__ void cc_unpack(float (&xs)[8 + CC_W - 1], uint32_t pz, uint32_t pw, const uint4 &cur)
{
	xs[0] = __uint_as_float(pz & 0xffff0000u);
	xs[1] = __uint_as_float(pw << 16);
	xs[2] = __uint_as_float(pw & 0xffff0000u);
	const uint32_t cw[4] = {cur.x, cur.y, cur.z, cur.w};
#pragma unroll
	for (int q = 0; q < 4; q++) {
		xs[3 + 2 * q] = __uint_as_float(cw[q] << 16);
		xs[4 + 2 * q] = __uint_as_float(cw[q] & 0xffff0000u);
	}
}

/* row r's channel r % D (CC_IDX32: 32-bit when r and D fit, ~5x fewer instructions than the 64-bit subroutine) */
static __device__ __forceinline__ int64_t cc_chan(int64_t r, int64_t D)
{
	if (CC_IDX32 && ((uint64_t)r | (uint64_t)D) <= 0xffffffffull)
		return (int64_t)((uint32_t)r % (uint32_t)D);
	return r % D;
}

/* element e's position t in its row and its channel d (e = row * L + t) */
static __device__ __forceinline__ void cc_locate(int64_t e, int64_t L, int64_t D, int64_t &t, int64_t &d)
{
	int64_t row;
	if (CC_IDX32 && ((uint64_t)e | (uint64_t)L) <= 0xffffffffull)
		row = (int64_t)((uint32_t)e / (uint32_t)L);
	else
		row = e / L;
	t = e - row * L;
	d = cc_chan(row, D);
}

/* Version 1's row kernel, U vectors per thread (CC_VU): grid.x covers a row's lv = L / 8 vectors in chunks of
 * blockDim.x * U (vector c = chunk + threadIdx.x + k * blockDim.x), grid.y the rows b * D + d (grid-stride past
 * 65535 rows; R: blockDim.y rows per CTA). Every load of the row is issued before the first output is computed. */
template <int U, bool R>
static __global__ void __launch_bounds__(THREADS) cc_vec_kernel(const uint4 *__restrict__ x, const uint16_t *__restrict__ w,
								const uint16_t *__restrict__ bias, uint4 *__restrict__ y,
								int64_t rows, int64_t lv, int64_t D)
{
	const int64_t c0 = (int64_t)blockIdx.x * blockDim.x * U + threadIdx.x; /* the thread's first vector in the row */
	const int lane = threadIdx.x & 31;
	/* R: blockDim.y rows per CTA (CC_ROWS: short rows; blockDim.x is then a multiple of 32, so a warp stays in one row) */
	const int64_t row0 = R ? (int64_t)blockIdx.y * blockDim.y + threadIdx.y : (int64_t)blockIdx.y;
	const int64_t rstep = R ? (int64_t)gridDim.y * blockDim.y : (int64_t)gridDim.y;
	for (int64_t row = row0; row < rows; row += rstep) {
		const uint4 *xr = x + row * lv;
		uint4 cur[U];
#pragma unroll
		for (int k = 0; k < U; k++) {
			const int64_t c = c0 + (int64_t)k * blockDim.x;
			cur[k] = c < lv ? __ldg(xr + c) : make_uint4(0, 0, 0, 0); /* cached: lane 0 of the next warp re-reads 6 bytes */
		}
		const int64_t d = cc_chan(row, D);
		float w0, w1, w2, w3, b;
		cc_load_w(w, bias, d, w0, w1, w2, w3, b);
#pragma unroll
		for (int k = 0; k < U; k++) {
			const int64_t c = c0 + (int64_t)k * blockDim.x;
			/* elements 5, 6, 7 of the previous vector (c - 1): words z (hi half) and w of lane - 1 */
			uint32_t pz = __shfl_up_sync(0xffffffffu, cur[k].z, 1);
			uint32_t pw = __shfl_up_sync(0xffffffffu, cur[k].w, 1);
			if (c >= lv)
				continue;
			if (c == 0) {
				pz = pw = 0;
			} else if (lane == 0) {
				const uint32_t *p = reinterpret_cast<const uint32_t *>(xr + c);
				pz = __ldg(p - 2);
				pw = __ldg(p - 1);
			}
			float xs[8 + CC_W - 1];
			cc_unpack(xs, pz, pw, cur[k]);
			__stcs(y + row * lv + c, cc_out8(xs, w0, w1, w2, w3, b));
		}
	}
}

/* The flat kernel (CC_FLAT): vectors v = base + lane + 32 j (j < U) of the flat x / y, nv of them (16-byte
 * aligned, n = 8 nv elements: the caller runs the n % 8 tail on the scalar kernel). grid.x * blockDim.x / 32
 * warps, each one chunk of 32 U vectors (the caller sizes the grid to cover nv; no grid stride). Contract:
 * y[e] = silu(bias[d] + sum_k w[d, k] x[e - 3 + k]) for every e < 8 nv, the taps with t(e) - 3 + k < 0
 * (t the position in the row, d = row % D) dropped. A vector wholly inside a row at t >= 3 (interior) takes
 * version 1's math (no per-element position test); the others step element by element. */
template <int U>
static __global__ void __launch_bounds__(THREADS) cc_flat_kernel(const uint4 *__restrict__ x, const uint16_t *__restrict__ w,
								 const uint16_t *__restrict__ bias, uint4 *__restrict__ y,
								 int64_t nv, int64_t L, int64_t D)
{
	const int lane = threadIdx.x & 31;
	const int64_t base = ((int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * 32 * U;
	if (base >= nv) /* warp-uniform */
		return;
	uint4 cur[U];
#pragma unroll
	for (int j = 0; j < U; j++) {
		const int64_t v = base + lane + 32 * j;
		cur[j] = v < nv ? __ldg(x + v) : make_uint4(0, 0, 0, 0);
	}
	/* words z and w of the vector before the chunk (lane 0's predecessor at j = 0) */
	uint32_t hz = 0, hw = 0;
	if (lane == 0 && base > 0) {
		const uint32_t *p = reinterpret_cast<const uint32_t *>(x + base);
		hz = __ldg(p - 2);
		hw = __ldg(p - 1);
	}
	/* position and channel of this thread's first element: the one division */
	int64_t e = 8 * (base + lane), t, d;
	cc_locate(e, L, D, t, d);
	int64_t wd = d; /* the channel whose weights are loaded */
	float w0, w1, w2, w3, b;
	cc_load_w(w, bias, wd, w0, w1, w2, w3, b);
#pragma unroll
	for (int j = 0; j < U; j++) {
		/* every lane shuffles (full mask) before any lane leaves */
		const uint32_t uz = __shfl_up_sync(0xffffffffu, cur[j].z, 1), uw = __shfl_up_sync(0xffffffffu, cur[j].w, 1);
		const uint32_t lz = __shfl_sync(0xffffffffu, cur[j > 0 ? j - 1 : 0].z, 31);
		const uint32_t lw = __shfl_sync(0xffffffffu, cur[j > 0 ? j - 1 : 0].w, 31);
		const int64_t v = base + lane + 32 * j;
		if (j > 0) { /* e += 256: the position and channel follow by additions (by a division when L < 256) */
			e += 256;
			if (L >= 256) {
				t += 256;
				if (t >= L) {
					t -= L;
					d = d + 1 == D ? 0 : d + 1;
				}
			} else {
				cc_locate(e, L, D, t, d);
			}
		}
		if (v >= nv)
			continue;
		const uint32_t pz = lane ? uz : (j ? lz : hz), pw = lane ? uw : (j ? lw : hw);
		float xs[8 + CC_W - 1]; /* xs[i + 3] = x[e + i], i = -3..7 (flat: the previous row's where t < 3) */
		cc_unpack(xs, pz, pw, cur[j]);
		if (d != wd) {
			wd = d;
			cc_load_w(w, bias, wd, w0, w1, w2, w3, b);
		}
		if (t >= CC_W - 1 && t + 8 <= L) { /* interior */
			__stcs(y + v, cc_out8(xs, w0, w1, w2, w3, b));
			continue;
		}
		int64_t tt = t, dd = d;
		uint32_t ow[4];
#pragma unroll
		for (int q = 0; q < 4; q++) {
			float o[2];
#pragma unroll
			for (int h = 0; h < 2; h++) {
				const int i = 2 * q + h;
				if (i > 0 && ++tt == L) { /* the next row starts inside the vector */
					tt = 0;
					dd = dd + 1 == D ? 0 : dd + 1;
				}
				if (dd != wd) {
					wd = dd;
					cc_load_w(w, bias, dd, w0, w1, w2, w3, b);
				}
				float acc = b;
				acc = fmaf(w0, tt >= 3 ? xs[i] : 0.0f, acc);
				acc = fmaf(w1, tt >= 2 ? xs[i + 1] : 0.0f, acc);
				acc = fmaf(w2, tt >= 1 ? xs[i + 2] : 0.0f, acc);
				acc = fmaf(w3, xs[i + 3], acc);
				o[h] = cc_silu(acc);
			}
			__nv_bfloat162 pk = __floats2bfloat162_rn(o[0], o[1]);
			ow[q] = *reinterpret_cast<uint32_t *>(&pk);
		}
		__stcs(y + v, make_uint4(ow[0], ow[1], ow[2], ow[3]));
	}
}

/* any shape: one output per thread, elements e0 .. n - 1 */
static __global__ void cc_scalar_kernel(const uint16_t *__restrict__ x, const uint16_t *__restrict__ w,
					const uint16_t *__restrict__ bias, __nv_bfloat16 *__restrict__ y, int64_t e0, int64_t n,
					int64_t L, int64_t D)
{
	for (int64_t e = e0 + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
		const int64_t t = e % L, row = e / L, d = row % D;
		float acc = cc_bf(bias[d]);
		for (int k = 0; k < CC_W; k++) {
			const int64_t src = t - (CC_W - 1) + k;
			if (src >= 0)
				acc = fmaf(cc_bf(w[d * CC_W + k]), cc_bf(x[row * L + src]), acc);
		}
		y[e] = __float2bfloat16_rn(cc_silu(acc));
	}
}

/* the row kernel's arguments (a launch helper's) */
struct x_args {
	const uint4 *x;
	const uint16_t *w, *bias;
	uint4 *y;
	int64_t rows, lv, D;
};

/* version 1's launch of cc_vec_kernel<U>: one row per CTA row of the grid, CTAs as wide as the row's vectors over U
 * (rounded up to a warp, at most THREADS) */
template <int U> static void cc_launch_vec(const x_args &a, cudaStream_t st)
{
	const int64_t per = (a.lv + U - 1) / U, threads = per >= THREADS ? THREADS : (per + 31) / 32 * 32;
	const dim3 grid((unsigned)((a.lv + threads * U - 1) / (threads * U)), (unsigned)(a.rows < 65535 ? a.rows : 65535));
	void (*const k)(const uint4 *, const uint16_t *, const uint16_t *, uint4 *, int64_t, int64_t, int64_t) =
		cc_vec_kernel<U, false>; /* (a name without a comma: the CPU emulation rewrites `k<<<...>>>`) */
	k<<<grid, (unsigned)threads, 0, st>>>(a.x, a.w, a.bias, a.y, a.rows, a.lv, a.D);
}

#if CC_ROWS
/* CC_ROWS (short rows, lv < THREADS * CC_VU / 4, i.e. one row fills under a quarter of the row kernel's CTA): the largest U of 4 / 2 / 1 (at most CC_VU) that leaves a whole warp of
 * vectors per row (U 1 below 32 vectors), the row's threads rounded up to a warp, THREADS / that many rows per CTA */
static void cc_launch_rows(const x_args &a, cudaStream_t st)
{
	const int u = CC_VU >= 4 && a.lv >= 128 ? 4 : (CC_VU >= 2 && a.lv >= 64 ? 2 : 1);
	const int64_t tx = ((a.lv + u - 1) / u + 31) / 32 * 32, ty = THREADS / tx > 0 ? THREADS / tx : 1;
	const int64_t gy = (a.rows + ty - 1) / ty;
	const dim3 block((unsigned)tx, (unsigned)ty), grid((unsigned)((a.lv + tx * u - 1) / (tx * u)), (unsigned)(gy < 65535 ? gy : 65535));
	void (*const k)(const uint4 *, const uint16_t *, const uint16_t *, uint4 *, int64_t, int64_t, int64_t) =
		u == 4 ? cc_vec_kernel<4, true> : (u == 2 ? cc_vec_kernel<2, true> : cc_vec_kernel<1, true>);
	k<<<grid, block, 0, st>>>(a.x, a.w, a.bias, a.y, a.rows, a.lv, a.D);
}
#endif

/* The entry point: checks dtypes and shapes (SF_ERR_UNSUPPORTED for anything the definition does not
 * allow), takes the vector kernel when alignment and shape permit, else the scalar one, and launches
 * on call->stream; SF_ERR_CUDA if the launch failed. */
SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 3 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *w = &call->inputs[1], *bias = &call->inputs[2], *y = &call->outputs[0];
	if (x->ndim != 3 || w->ndim != 2 || bias->ndim != 1 || y->ndim != 3 || x->dtype.code != SF_CODE_BFLOAT ||
	    w->dtype.code != SF_CODE_BFLOAT || bias->dtype.code != SF_CODE_BFLOAT || y->dtype.code != SF_CODE_BFLOAT ||
	    x->dtype.bits != 16 || w->dtype.bits != 16 || bias->dtype.bits != 16 || y->dtype.bits != 16)
		return SF_ERR_UNSUPPORTED;
	const int64_t B = x->shape[0], D = x->shape[1], L = x->shape[2];
	if (w->shape[0] != D || w->shape[1] != CC_W || bias->shape[0] != D || y->shape[0] != B || y->shape[1] != D ||
	    y->shape[2] != L)
		return SF_ERR_UNSUPPORTED;
	const int64_t n = B * D * L;
	if (n == 0)
		return SF_OK;
	cudaStream_t st = (cudaStream_t)call->stream;
	const bool aligned = ((uintptr_t)x->data | (uintptr_t)y->data) % 16 == 0 && n >= CC_SCALAR_N;
	int64_t e0 = 0; /* the scalar kernel's first element */
	if (aligned && L % 8 == 0 && CC_FLAT < 2 && L > CC_FLAT_MAXL) {
		const int64_t lv = L / 8, rows = B * D;
		const x_args a = {(const uint4 *)x->data, (const uint16_t *)w->data, (const uint16_t *)bias->data,
				  (uint4 *)y->data, rows, lv, D};
#if CC_ROWS
		if (lv < (int64_t)THREADS * CC_VU / 4) /* short rows: several per CTA (L 2048 measured equal either way) */
			cc_launch_rows(a, st);
		else
#endif
			cc_launch_vec<CC_VU>(a, st);
		e0 = n;
	} else if (aligned && CC_FLAT >= 1 && n >= 8) {
		const int64_t nv = n / 8;
		const bool small = nv < CC_SMALL_NV;
		const int64_t per_block = (int64_t)THREADS * (small ? 1 : CC_U), blocks = (nv + per_block - 1) / per_block;
		if (blocks > 2147483647)
			return SF_ERR_UNSUPPORTED;
		if (small)
			cc_flat_kernel<1><<<(unsigned)blocks, THREADS, 0, st>>>((const uint4 *)x->data, (const uint16_t *)w->data,
										(const uint16_t *)bias->data, (uint4 *)y->data, nv, L, D);
		else
			cc_flat_kernel<CC_U><<<(unsigned)blocks, THREADS, 0, st>>>((const uint4 *)x->data, (const uint16_t *)w->data,
										   (const uint16_t *)bias->data, (uint4 *)y->data, nv, L, D);
		e0 = 8 * nv;
	}
	if (e0 < n) {
		int64_t blocks = (n - e0 + 255) / 256;
		if (blocks > 65536)
			blocks = 65536;
		cc_scalar_kernel<<<(unsigned)blocks, 256, 0, st>>>((const uint16_t *)x->data, (const uint16_t *)w->data,
								   (const uint16_t *)bias->data,
								   (__nv_bfloat16 *)y->data, e0, n, L, D);
	}
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
