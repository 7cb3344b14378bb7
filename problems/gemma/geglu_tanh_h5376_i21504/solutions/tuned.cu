/*
 * tuned.cu - a parameterized CUDA solution of geglu_tanh_h5376_i21504 for the campaign's autotuner
 * (`solforge campaign --agent tune`; docs/campaign.md): y = bf16(bf16(gelu_tanh(g)) * up), g and up the
 * two halves of each row;
 * VEC consecutive outputs per thread in a grid-stride loop over vectors.
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

template <int V>
__global__ void __launch_bounds__(THREADS) gated_vec(const __nv_bfloat16 *__restrict__ x, __nv_bfloat16 *__restrict__ out,
						     int64_t T, int64_t I)
{
	const int64_t per_row = I / V, total = T * per_row;
	for (int64_t e = (int64_t)blockIdx.x * THREADS + threadIdx.x; e < total; e += (int64_t)gridDim.x * THREADS) {
		const int64_t t = e / per_row, i = (e - t * per_row) * V;
		float g[V], u[V];
		__nv_bfloat16 o[V];
		tv_load<V>(x + t * 2 * I + i, g);
		tv_load<V>(x + t * 2 * I + I + i, u);
#pragma unroll
		for (int k = 0; k < V; k++) {
			const float gk = g[k];
			o[k] = __float2bfloat16(__bfloat162float(__float2bfloat16(0.5f * gk * (1.0f + tanhf(0.7978845608028654f * (gk + 0.044715f * gk * gk * gk))))) * u[k]);
		}
		tv_store<V>(out + t * I + i, o);
	}
}

static int is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 1 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *out = &call->outputs[0];
	if (x->ndim != 2 || out->ndim != 2 || !is_bf16(x) || !is_bf16(out))
		return SF_ERR_UNSUPPORTED;
	const int64_t T = x->shape[0], I = out->shape[1];
	if (x->shape[1] != 2 * I || out->shape[0] != T)
		return SF_ERR_UNSUPPORTED;
	if (T * I == 0)
		return SF_OK;
	cudaStream_t s = (cudaStream_t)call->stream;
	const __nv_bfloat16 *xp = (const __nv_bfloat16 *)x->data;
	__nv_bfloat16 *op = (__nv_bfloat16 *)out->data;
	const int v = tv_ok(VEC, I, xp, op, op, op) ? VEC : 1;
	int64_t blocks = (T * (I / v) + THREADS - 1) / THREADS;
	if (blocks > (int64_t)1 << 20)
		blocks = (int64_t)1 << 20; /* the grid-stride loop covers the rest */
	if (v == VEC)
		gated_vec<VEC><<<(unsigned)blocks, THREADS, 0, s>>>(xp, op, T, I);
	else
		gated_vec<1><<<(unsigned)blocks, THREADS, 0, s>>>(xp, op, T, I);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
