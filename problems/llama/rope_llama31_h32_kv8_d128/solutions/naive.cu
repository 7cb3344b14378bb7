/*
 * Naive CUDA solution of rope_llama31_h32_kv8_d128 (Llama-3.1-8B rotary embedding, llama3 scaling,
 * rotate_half pairing): one thread per (token, head of q then k, i < head_dim / 2) in a grid-stride
 * loop, rotating the pair (x[i], x[i + head_dim/2]).
 *
 * As the definition pins down: inv_freq[i] is the llama3-scaled theta^(-2i/head_dim) evaluated in
 * double and rounded once to float32 (recomputed by every thread: simple, not fast), the angle is
 * one float32 multiply float32(position) * inv_freq[i], cos/sin of that angle and the rotation are
 * evaluated in double, and the result is rounded once to bf16. Not tuned.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"

__device__ float llama31_inv_freq(int64_t i, int64_t head_dim)
{
	const double theta = 500000.0, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0;
	const double old_context_len = 8192.0, pi = 3.14159265358979323846;
	const double inv_freq = 1.0 / pow(theta, (double)(2 * i) / (double)head_dim);
	const double wavelen = 2.0 * pi / inv_freq;
	double f;
	if (wavelen < old_context_len / high_freq_factor) {
		f = inv_freq;
	} else if (wavelen > old_context_len / low_freq_factor) {
		f = inv_freq / factor;
	} else {
		const double smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
		f = (1.0 - smooth) * inv_freq / factor + smooth * inv_freq;
	}
	return (float)f;
}

__global__ void rope_llama31_pairs(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k,
				   const int64_t *__restrict__ positions, __nv_bfloat16 *__restrict__ q_out,
				   __nv_bfloat16 *__restrict__ k_out, int64_t T, int64_t Hq, int64_t Hk, int64_t D)
{
	const int64_t half = D / 2, per_token = (Hq + Hk) * half, total = T * per_token;
	for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
	     e += (int64_t)gridDim.x * blockDim.x) {
		const int64_t t = e / per_token, rem = e % per_token;
		const int64_t h = rem / half, i = rem % half;
		const float angle = __fmul_rn((float)positions[t], llama31_inv_freq(i, D));
		double sn, cs;
		sincos((double)angle, &sn, &cs);
		const __nv_bfloat16 *src;
		__nv_bfloat16 *dst;
		if (h < Hq) {
			src = q + (t * Hq + h) * D;
			dst = q_out + (t * Hq + h) * D;
		} else {
			src = k + (t * Hk + (h - Hq)) * D;
			dst = k_out + (t * Hk + (h - Hq)) * D;
		}
		const double x1 = (double)__bfloat162float(src[i]), x2 = (double)__bfloat162float(src[i + half]);
		dst[i] = __double2bfloat16(x1 * cs - x2 * sn);
		dst[i + half] = __double2bfloat16(x2 * cs + x1 * sn);
	}
}

static int is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 3 || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *q = &call->inputs[0], *k = &call->inputs[1], *pos = &call->inputs[2];
	const sf_tensor *q_out = &call->outputs[0], *k_out = &call->outputs[1];
	if (q->ndim != 3 || k->ndim != 3 || pos->ndim != 1 || q_out->ndim != 3 || k_out->ndim != 3 || !is_bf16(q) ||
	    !is_bf16(k) || !is_bf16(q_out) || !is_bf16(k_out) || pos->dtype.code != SF_CODE_INT || pos->dtype.bits != 64)
		return SF_ERR_UNSUPPORTED;
	const int64_t T = q->shape[0], Hq = q->shape[1], D = q->shape[2], Hk = k->shape[1];
	if (k->shape[0] != T || k->shape[2] != D || pos->shape[0] != T || D % 2 != 0)
		return SF_ERR_UNSUPPORTED;
	for (int d = 0; d < 3; d++)
		if (q_out->shape[d] != q->shape[d] || k_out->shape[d] != k->shape[d])
			return SF_ERR_UNSUPPORTED;
	const int64_t total = T * (Hq + Hk) * (D / 2);
	if (total == 0)
		return SF_OK;
	const int threads = 256;
	int64_t blocks = (total + threads - 1) / threads;
	if (blocks > (int64_t)1 << 20)
		blocks = (int64_t)1 << 20; /* the grid-stride loop covers the rest */
	rope_llama31_pairs<<<(unsigned)blocks, threads, 0, (cudaStream_t)call->stream>>>(
		(const __nv_bfloat16 *)q->data, (const __nv_bfloat16 *)k->data, (const int64_t *)pos->data,
		(__nv_bfloat16 *)q_out->data, (__nv_bfloat16 *)k_out->data, T, Hq, Hk, D);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
