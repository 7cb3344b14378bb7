/*
 * tuned.cu - a parameterized CUDA solution of rope_llama31_h32_kv8_d128 for the campaign's autotuner
 * (`solforge campaign --agent tune`; docs/campaign.md): the naive solution's Llama-3.1 RoPE (same
 * frequencies, same double-precision rotation), with THREADS threads per block and PAIRS consecutive
 * rotation pairs of one head per thread (the index arithmetic and the position load shared by them).
 * Needs (D / 2) % PAIRS == 0.
 */
// solforge-tune: THREADS=64,128,256,512,1024 PAIRS=1,2,4
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"

#ifndef THREADS
#define THREADS 256
#endif
#ifndef PAIRS
#define PAIRS 1
#endif

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

__global__ void __launch_bounds__(THREADS) rope_llama31_pairs(const __nv_bfloat16 *__restrict__ q,
								const __nv_bfloat16 *__restrict__ k,
								const int64_t *__restrict__ positions,
								__nv_bfloat16 *__restrict__ q_out, __nv_bfloat16 *__restrict__ k_out,
								int64_t T, int64_t Hq, int64_t Hk, int64_t D)
{
	const int64_t half = D / 2, groups = half / PAIRS, per_token = (Hq + Hk) * groups, total = T * per_token;
	for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
	     e += (int64_t)gridDim.x * blockDim.x) {
		const int64_t t = e / per_token, rem = e % per_token;
		const int64_t h = rem / groups, i0 = (rem % groups) * PAIRS;
		const float pos = (float)positions[t];
		const __nv_bfloat16 *src;
		__nv_bfloat16 *dst;
		if (h < Hq) {
			src = q + (t * Hq + h) * D;
			dst = q_out + (t * Hq + h) * D;
		} else {
			src = k + (t * Hk + (h - Hq)) * D;
			dst = k_out + (t * Hk + (h - Hq)) * D;
		}
#pragma unroll
		for (int p = 0; p < PAIRS; p++) {
			const int64_t i = i0 + p;
			const float angle = __fmul_rn(pos, llama31_inv_freq(i, D));
			double sn, cs;
			sincos((double)angle, &sn, &cs);
			const double x1 = (double)__bfloat162float(src[i]), x2 = (double)__bfloat162float(src[i + half]);
			dst[i] = __double2bfloat16(x1 * cs - x2 * sn);
			dst[i + half] = __double2bfloat16(x2 * cs + x1 * sn);
		}
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
	if ((D / 2) % PAIRS != 0)
		return SF_ERR_UNSUPPORTED;
	const int threads = THREADS;
	int64_t blocks = (total / PAIRS + threads - 1) / threads;
	if (blocks > (int64_t)1 << 20)
		blocks = (int64_t)1 << 20; /* the grid-stride loop covers the rest */
	rope_llama31_pairs<<<(unsigned)blocks, threads, 0, (cudaStream_t)call->stream>>>(
		(const __nv_bfloat16 *)q->data, (const __nv_bfloat16 *)k->data, (const int64_t *)pos->data,
		(__nv_bfloat16 *)q_out->data, (__nv_bfloat16 *)k_out->data, T, Hq, Hk, D);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
