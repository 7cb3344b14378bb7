/*
 * tuned.cu - a parameterized CUDA solution of rmsnorm_h4096 for the campaign's autotuner
 * (`solforge campaign --agent tune`; docs/campaign.md): output = weight * bf16(x * rsqrt(mean(x^2) + eps)),
 * one block per row.
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
__global__ void __launch_bounds__(THREADS) rms_rows(const __nv_bfloat16 *__restrict__ x, const __nv_bfloat16 *__restrict__ w,
						    __nv_bfloat16 *__restrict__ y, int64_t H, float eps)
{
	__shared__ float shared[33];
	const __nv_bfloat16 *xr = x + (int64_t)blockIdx.x * H;
	__nv_bfloat16 *yr = y + (int64_t)blockIdx.x * H;
	float sumsq = 0.0f;
	for (int64_t h = (int64_t)threadIdx.x * V; h < H; h += (int64_t)THREADS * V) {
		float f[V];
		tv_load<V>(xr + h, f);
#pragma unroll
		for (int i = 0; i < V; i++)
			sumsq += f[i] * f[i];
	}
	const float rstd = rsqrtf(tv_block_sum(sumsq, shared) / (float)H + eps);
	for (int64_t h = (int64_t)threadIdx.x * V; h < H; h += (int64_t)THREADS * V) {
		float f[V], g[V];
		__nv_bfloat16 o[V];
		tv_load<V>(xr + h, f);
		tv_load<V>(w + h, g);
#pragma unroll
		for (int i = 0; i < V; i++)
			o[i] = __float2bfloat16_rn(g[i] * __bfloat162float(__float2bfloat16_rn(f[i] * rstd)));
		tv_store<V>(yr + h, o);
	}
}

static int is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 3 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *w = &call->inputs[1], *y = &call->outputs[0];
	if (x->ndim != 2 || w->ndim != 1 || y->ndim != 2 || !is_bf16(x) || !is_bf16(w) || !is_bf16(y))
		return SF_ERR_UNSUPPORTED;
	const int64_t T = x->shape[0], H = x->shape[1];
	if (w->shape[0] != H || y->shape[0] != T || y->shape[1] != H || T > 2147483647)
		return SF_ERR_UNSUPPORTED;
	if (T == 0 || H == 0)
		return SF_OK;
	const float eps = (float)call->scalars[2];
	cudaStream_t s = (cudaStream_t)call->stream;
	const __nv_bfloat16 *xp = (const __nv_bfloat16 *)x->data, *wp = (const __nv_bfloat16 *)w->data;
	__nv_bfloat16 *yp = (__nv_bfloat16 *)y->data;
	if (tv_ok(VEC, H, xp, wp, yp, yp))
		rms_rows<VEC><<<(unsigned)T, THREADS, 0, s>>>(xp, wp, yp, H, eps);
	else
		rms_rows<1><<<(unsigned)T, THREADS, 0, s>>>(xp, wp, yp, H, eps);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
