/*
 * naive.cu - a plain, untuned solution of flux_rope_3axis_h24_d128 (Flux 3-axis RoPE on q and k).
 *
 * One thread per (b, h, s, pair) (grid-stride loop, 64-bit indices), doing that pair of q and of k.
 * Like Flux's rope(): omega = 1 / theta^(2j / dim) for pair j of its axis, angle = pos * omega, cos
 * and sin in float64, rounded to float32; then (x0, x1) -> (cos x0 - sin x1, sin x0 + cos x1) in
 * float32, rounded to bf16. Pairs 0-7 use ids[s, 0] (dim 16), 8-35 ids[s, 1] (dim 56), 36-63
 * ids[s, 2] (dim 56).
 * Inputs: 0 q [B, H, S, 128] bf16, 1 k (same), 2 ids [S, 3] float32, 3 theta (scalar).
 * Outputs: 0 q_out, 1 k_out [B, H, S, 128] bf16.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include "solforge/solution.h"

#define ROPE_HEAD_DIM 128
#define ROPE_PAIRS 64

static __global__ void flux_rope_kernel(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k,
					const float *__restrict__ ids, __nv_bfloat16 *__restrict__ q_out,
					__nv_bfloat16 *__restrict__ k_out, int64_t n_pairs, int64_t S, double theta)
{
	const int64_t stride = (int64_t)gridDim.x * blockDim.x;
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_pairs; i += stride) {
		const int p = (int)(i % ROPE_PAIRS);
		const int64_t s = (i / ROPE_PAIRS) % S;
		int axis, j, dim;
		if (p < 8) {
			axis = 0; j = p; dim = 16;
		} else if (p < 36) {
			axis = 1; j = p - 8; dim = 56;
		} else {
			axis = 2; j = p - 36; dim = 56;
		}
		const double omega = 1.0 / pow(theta, (double)(2 * j) / (double)dim);
		const double angle = (double)ids[s * 3 + axis] * omega;
		const float c = (float)cos(angle), sn = (float)sin(angle);
		const int64_t e = i * 2; /* element index of x0 in [B, H, S, 128] */
		const float q0 = __bfloat162float(q[e]), q1 = __bfloat162float(q[e + 1]);
		const float k0 = __bfloat162float(k[e]), k1 = __bfloat162float(k[e + 1]);
		q_out[e] = __float2bfloat16(c * q0 - sn * q1);
		q_out[e + 1] = __float2bfloat16(sn * q0 + c * q1);
		k_out[e] = __float2bfloat16(c * k0 - sn * k1);
		k_out[e + 1] = __float2bfloat16(sn * k0 + c * k1);
	}
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 4 || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *q = &call->inputs[0], *k = &call->inputs[1], *ids = &call->inputs[2];
	const sf_tensor *qo = &call->outputs[0], *ko = &call->outputs[1];
	if (q->ndim != 4 || k->ndim != 4 || ids->ndim != 2 || qo->ndim != 4 || ko->ndim != 4)
		return SF_ERR_UNSUPPORTED;
	if (q->dtype.code != SF_CODE_BFLOAT || k->dtype.code != SF_CODE_BFLOAT || qo->dtype.code != SF_CODE_BFLOAT ||
	    ko->dtype.code != SF_CODE_BFLOAT || ids->dtype.code != SF_CODE_FLOAT || ids->dtype.bits != 32)
		return SF_ERR_UNSUPPORTED;
	const int64_t S = q->shape[2];
	if (q->shape[3] != ROPE_HEAD_DIM || ids->shape[0] != S || ids->shape[1] != 3 || sf_numel(k) != sf_numel(q) ||
	    sf_numel(qo) != sf_numel(q) || sf_numel(ko) != sf_numel(q))
		return SF_ERR_UNSUPPORTED;
	const int64_t n_pairs = sf_numel(q) / 2;
	if (n_pairs == 0)
		return SF_OK;
	const int threads = 256;
	const int64_t want = (n_pairs + threads - 1) / threads;
	const unsigned blocks = (unsigned)(want < 65536 ? want : 65536);
	flux_rope_kernel<<<blocks, threads, 0, (cudaStream_t)call->stream>>>(
		(const __nv_bfloat16 *)q->data, (const __nv_bfloat16 *)k->data, (const float *)ids->data,
		(__nv_bfloat16 *)qo->data, (__nv_bfloat16 *)ko->data, n_pairs, S, call->scalars[3]);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
