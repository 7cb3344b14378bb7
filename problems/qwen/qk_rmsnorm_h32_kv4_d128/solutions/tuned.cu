/*
 * tuned.cu - a parameterized CUDA solution of qk_rmsnorm_h32_kv4_d128 for the campaign's autotuner
 * (`solforge campaign --agent tune`; docs/campaign.md): per head row of q and k,
 * y = bf16(w * bf16(x / sqrt(mean(x^2) + eps))). One warp per row (the naive solution gives a row to
 * one thread); WARPS rows per block; each lane loads VEC consecutive bf16 values at once. Needs
 * D % (32 * VEC) == 0 (else the VEC = 1 kernel, else D % 32 == 0, else unsupported).
 */
// solforge-tune: WARPS=1,2,4,8 VEC=1,2,4
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"

#ifndef WARPS
#define WARPS 4
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
__global__ void __launch_bounds__(WARPS * 32) qk_rows(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k,
						      const __nv_bfloat16 *__restrict__ qw, const __nv_bfloat16 *__restrict__ kw,
						      float eps, __nv_bfloat16 *__restrict__ qo, __nv_bfloat16 *__restrict__ ko,
						      int64_t q_rows, int64_t k_rows, int D)
{
	const int64_t row = (int64_t)blockIdx.x * WARPS + (threadIdx.x >> 5);
	const int lane = threadIdx.x & 31;
	if (row >= q_rows + k_rows)
		return; /* a whole warp leaves together: the shuffles below see full warps */
	const bool is_q = row < q_rows;
	const int64_t r = is_q ? row : row - q_rows;
	const __nv_bfloat16 *x = (is_q ? q : k) + r * D, *w = is_q ? qw : kw;
	__nv_bfloat16 *y = (is_q ? qo : ko) + r * D;
	float ss = 0.0f;
	for (int d = lane * V; d < D; d += 32 * V) {
		float f[V];
		tv_load<V>(x + d, f);
#pragma unroll
		for (int i = 0; i < V; i++)
			ss += f[i] * f[i];
	}
	for (int o = 16; o > 0; o >>= 1)
		ss += __shfl_xor_sync(0xffffffffu, ss, o);
	const float inv = 1.0f / sqrtf(ss / (float)D + eps);
	for (int d = lane * V; d < D; d += 32 * V) {
		float f[V], g[V];
		__nv_bfloat16 o[V];
		tv_load<V>(x + d, f);
		tv_load<V>(w + d, g);
#pragma unroll
		for (int i = 0; i < V; i++)
			o[i] = __float2bfloat16_rn(g[i] * __bfloat162float(__float2bfloat16_rn(f[i] * inv)));
		tv_store<V>(y + d, o);
	}
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 5 || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *q = &call->inputs[0], *k = &call->inputs[1];
	if (q->ndim != 3 || k->ndim != 3 || q->dtype.code != SF_CODE_BFLOAT || k->dtype.code != SF_CODE_BFLOAT)
		return SF_ERR_UNSUPPORTED;
	const int64_t q_rows = q->shape[0] * q->shape[1], k_rows = k->shape[0] * k->shape[1];
	const int D = (int)q->shape[2];
	if (k->shape[2] != D || D % 32 != 0)
		return SF_ERR_UNSUPPORTED;
	const int64_t rows = q_rows + k_rows;
	if (rows == 0)
		return SF_OK;
	cudaStream_t s = (cudaStream_t)call->stream;
	const __nv_bfloat16 *qp = (const __nv_bfloat16 *)q->data, *kp = (const __nv_bfloat16 *)k->data,
			    *qwp = (const __nv_bfloat16 *)call->inputs[2].data, *kwp = (const __nv_bfloat16 *)call->inputs[3].data;
	__nv_bfloat16 *qop = (__nv_bfloat16 *)call->outputs[0].data, *kop = (__nv_bfloat16 *)call->outputs[1].data;
	const unsigned grid = (unsigned)((rows + WARPS - 1) / WARPS);
	const float eps = (float)call->scalars[4];
	if (D % (32 * VEC) == 0 && tv_ok(VEC, D, qp, kp, qwp, kwp) && tv_ok(VEC, D, qop, kop, qop, kop))
		qk_rows<VEC><<<grid, WARPS * 32, 0, s>>>(qp, kp, qwp, kwp, eps, qop, kop, q_rows, k_rows, D);
	else
		qk_rows<1><<<grid, WARPS * 32, 0, s>>>(qp, kp, qwp, kwp, eps, qop, kop, q_rows, k_rows, D);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
