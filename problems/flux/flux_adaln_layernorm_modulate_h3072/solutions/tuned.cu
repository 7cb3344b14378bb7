/*
 * tuned.cu - a parameterized CUDA solution of flux_adaln_layernorm_modulate_h3072 for the campaign's autotuner
 * (`solforge campaign --agent tune`; docs/campaign.md): y = LN(x) * (1 + scale[b]) + shift[b],
 * one block per row (grid-stride over rows), float32 statistics.
 * THREADS is the block size, VEC the bf16 elements one thread loads at once (8: 16-byte loads);
 * when a tensor is not aligned for VEC the same kernel runs with VEC = 1. The defaults are the naive
 * solution's configuration; the tuner compiles the variants with -DTHREADS=... -DVEC=...
 */
// solforge-tune: THREADS=128,256,512,1024 VEC=1,2,8
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"

#ifndef THREADS
#define THREADS 256
#endif
#ifndef VEC
#define VEC 1
#endif

/* V consecutive bf16 values in one load (V = 8: 16 bytes, V = 2: 4 bytes); p aligned to V * 2 bytes. */
template <int V> struct tv_raw;
template <> struct tv_raw<1> { __nv_bfloat16 u; };
template <> struct tv_raw<2> { unsigned int u; };
template <> struct tv_raw<4> { uint2 u; };
template <> struct tv_raw<8> { uint4 u; };

template <int V> __device__ __forceinline__ void tv_load(const __nv_bfloat16 *p, float *f)
{
	tv_raw<V> r;
	r.u = *reinterpret_cast<const decltype(r.u) *>(p);
	const __nv_bfloat16 *b = reinterpret_cast<const __nv_bfloat16 *>(&r.u);
#pragma unroll
	for (int i = 0; i < V; i++)
		f[i] = __bfloat162float(b[i]);
}

template <int V> __device__ __forceinline__ void tv_store(__nv_bfloat16 *p, const __nv_bfloat16 *b)
{
	tv_raw<V> r;
	__nv_bfloat16 *d = reinterpret_cast<__nv_bfloat16 *>(&r.u);
#pragma unroll
	for (int i = 0; i < V; i++)
		d[i] = b[i];
	*reinterpret_cast<decltype(r.u) *>(p) = r.u;
}

/* Whether every pointer is aligned for V-wide accesses and rows of length n keep that alignment. */
static int tv_ok(int v, int64_t n, const void *a, const void *b, const void *c, const void *d)
{
	const uintptr_t m = (uintptr_t)(2 * v - 1);
	return n % v == 0 && !((uintptr_t)a & m) && !((uintptr_t)b & m) && !((uintptr_t)c & m) && !((uintptr_t)d & m);
}

/* Sum of v over the block; every thread gets it. blockDim.x is a multiple of 32, at most 1024. */
static __device__ float tv_block_sum(float v, float *shared)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	if (lane == 0)
		shared[warp] = v;
	__syncthreads();
	if (warp == 0) {
		float s = lane < (int)(blockDim.x >> 5) ? shared[lane] : 0.0f;
		for (int o = 16; o > 0; o >>= 1)
			s += __shfl_xor_sync(0xffffffffu, s, o);
		if (lane == 0)
			shared[32] = s;
	}
	__syncthreads();
	const float total = shared[32];
	__syncthreads();
	return total;
}

template <int V>
__global__ void __launch_bounds__(THREADS) adaln_rows(const __nv_bfloat16 *__restrict__ x, const __nv_bfloat16 *__restrict__ shift,
						      const __nv_bfloat16 *__restrict__ scale, __nv_bfloat16 *__restrict__ y,
						      int64_t rows, int64_t S, int64_t H, float eps)
{
	__shared__ float shared[33];
	for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
		const int64_t b = row / S;
		const __nv_bfloat16 *xr = x + row * H, *sh = shift + b * H, *sc = scale + b * H;
		__nv_bfloat16 *yr = y + row * H;
		float s = 0.0f;
		for (int64_t h = (int64_t)threadIdx.x * V; h < H; h += (int64_t)THREADS * V) {
			float f[V];
			tv_load<V>(xr + h, f);
#pragma unroll
			for (int i = 0; i < V; i++)
				s += f[i];
		}
		const float mean = tv_block_sum(s, shared) / (float)H;
		float sq = 0.0f;
		for (int64_t h = (int64_t)threadIdx.x * V; h < H; h += (int64_t)THREADS * V) {
			float f[V];
			tv_load<V>(xr + h, f);
#pragma unroll
			for (int i = 0; i < V; i++)
				sq += (f[i] - mean) * (f[i] - mean);
		}
		const float rstd = rsqrtf(tv_block_sum(sq, shared) / (float)H + eps);
		for (int64_t h = (int64_t)threadIdx.x * V; h < H; h += (int64_t)THREADS * V) {
			float f[V], a[V], c[V];
			__nv_bfloat16 o[V];
			tv_load<V>(xr + h, f);
			tv_load<V>(sc + h, c);
			tv_load<V>(sh + h, a);
#pragma unroll
			for (int i = 0; i < V; i++)
				o[i] = __float2bfloat16((f[i] - mean) * rstd * (1.0f + c[i]) + a[i]);
			tv_store<V>(yr + h, o);
		}
	}
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 4 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *shift = &call->inputs[1], *scale = &call->inputs[2];
	const sf_tensor *y = &call->outputs[0];
	if (x->ndim != 3 || shift->ndim != 2 || scale->ndim != 2 || y->ndim != 3 || x->dtype.code != SF_CODE_BFLOAT ||
	    shift->dtype.code != SF_CODE_BFLOAT || scale->dtype.code != SF_CODE_BFLOAT ||
	    y->dtype.code != SF_CODE_BFLOAT)
		return SF_ERR_UNSUPPORTED;
	const int64_t B = x->shape[0], S = x->shape[1], H = x->shape[2];
	if (shift->shape[0] != B || shift->shape[1] != H || scale->shape[0] != B || scale->shape[1] != H ||
	    sf_numel(y) != sf_numel(x))
		return SF_ERR_UNSUPPORTED;
	const int64_t rows = B * S;
	if (rows == 0 || H == 0)
		return SF_OK;
	const float eps = (float)call->scalars[3];
	const unsigned blocks = (unsigned)(rows < 65536 ? rows : 65536);
	cudaStream_t st = (cudaStream_t)call->stream;
	const __nv_bfloat16 *xp = (const __nv_bfloat16 *)x->data, *shp = (const __nv_bfloat16 *)shift->data,
			    *scp = (const __nv_bfloat16 *)scale->data;
	__nv_bfloat16 *yp = (__nv_bfloat16 *)y->data;
	if (tv_ok(VEC, H, xp, shp, scp, yp))
		adaln_rows<VEC><<<blocks, THREADS, 0, st>>>(xp, shp, scp, yp, rows, S, H, eps);
	else
		adaln_rows<1><<<blocks, THREADS, 0, st>>>(xp, shp, scp, yp, rows, S, H, eps);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
