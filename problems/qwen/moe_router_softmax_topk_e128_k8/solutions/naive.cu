/*
 * naive.cu - moe_router_softmax_topk_e128_k8, first correct version: one thread per token.
 *
 * softmax in float32 over the E logits, top-K by logit (the same order as by probability: exp is
 * increasing and the denominator is shared) with the lower index first among equal logits, then the K
 * probabilities renormalized to sum 1.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <math.h>
#include "solforge/solution.h"

#define ROUTER_TOPK_MAX 32

__global__ void router_softmax_topk_kernel(const __nv_bfloat16 *__restrict__ logits, float *__restrict__ weights,
					   int32_t *__restrict__ ids, int64_t T, int E, int K)
{
	int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (t >= T)
		return;
	const __nv_bfloat16 *row = logits + t * (int64_t)E;

	float m = -INFINITY;
	for (int e = 0; e < E; e++)
		m = fmaxf(m, __bfloat162float(row[e]));
	float denom = 0.0f;
	for (int e = 0; e < E; e++)
		denom += expf(__bfloat162float(row[e]) - m);

	int chosen[ROUTER_TOPK_MAX];
	float p[ROUTER_TOPK_MAX];
	float psum = 0.0f;
	for (int k = 0; k < K; k++) {
		int best = -1;
		float bestl = 0.0f;
		for (int e = 0; e < E; e++) {
			bool taken = false;
			for (int j = 0; j < k; j++)
				taken = taken || chosen[j] == e;
			if (taken)
				continue;
			float l = __bfloat162float(row[e]);
			if (best < 0 || l > bestl) { /* strict: the lower index wins a tie */
				best = e;
				bestl = l;
			}
		}
		chosen[k] = best;
		p[k] = expf(bestl - m) / denom;
		psum += p[k];
	}
	for (int k = 0; k < K; k++) {
		weights[t * K + k] = p[k] / psum;
		ids[t * K + k] = chosen[k];
	}
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 1 || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0];
	int64_t T = x->shape[0];
	int E = (int)x->shape[1];
	int K = (int)call->outputs[0].shape[1];
	if (K > ROUTER_TOPK_MAX || K > E)
		return SF_ERR_UNSUPPORTED;
	if (T == 0)
		return SF_OK;
	cudaStream_t stream = (cudaStream_t)call->stream;
	const int threads = 128;
	int64_t blocks = (T + threads - 1) / threads;
	router_softmax_topk_kernel<<<(unsigned)blocks, threads, 0, stream>>>(
		(const __nv_bfloat16 *)x->data, (float *)call->outputs[0].data, (int32_t *)call->outputs[1].data, T, E,
		K);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
