/*
 * naive.cu - moe_grouped_topk_routing_e256_g8_k8, first correct version: one thread per token, float32.
 * sigmoid scores, + e_score_correction_bias for the choice, group score = sum of the group's two best
 * choices, keep the 4 best of 8 groups, the 8 best choices among the kept groups (ties: lower index), weights
 * = sigmoid scores of the chosen experts normalized to sum 1, times routed_scaling_factor.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include "solforge/solution.h"

#define DSR_N_GROUP 8    /* n_group (not visible in any tensor shape) */
#define DSR_TOPK_GROUP 4 /* topk_group */
#define DSR_TOPK_MAX 32

__device__ __forceinline__ float dsr_sigmoid(float x)
{
	return 1.0f / (1.0f + expf(-x));
}

__global__ void grouped_topk_kernel(const float *__restrict__ logits, const float *__restrict__ bias, float rsf,
				    float *__restrict__ weights, int32_t *__restrict__ ids, int64_t T, int E, int K)
{
	int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (t >= T)
		return;
	const float *l = logits + t * E;
	const int GS = E / DSR_N_GROUP;

	float gscore[DSR_N_GROUP];
	bool kept[DSR_N_GROUP];
	for (int g = 0; g < DSR_N_GROUP; g++) {
		float top1 = -INFINITY, top2 = -INFINITY;
		for (int e = g * GS; e < (g + 1) * GS; e++) {
			float c = dsr_sigmoid(l[e]) + bias[e];
			if (c > top1) {
				top2 = top1;
				top1 = c;
			} else if (c > top2) {
				top2 = c;
			}
		}
		gscore[g] = top1 + top2;
		kept[g] = false;
	}
	for (int r = 0; r < DSR_TOPK_GROUP; r++) {
		int best = -1;
		for (int g = 0; g < DSR_N_GROUP; g++)
			if (!kept[g] && (best < 0 || gscore[g] > gscore[best]))
				best = g;
		kept[best] = true;
	}

	int chosen[DSR_TOPK_MAX];
	float s[DSR_TOPK_MAX];
	float sum = 0.0f;
	for (int k = 0; k < K; k++) {
		int best = -1;
		float bestc = 0.0f;
		for (int e = 0; e < E; e++) {
			if (!kept[e / GS])
				continue;
			bool taken = false;
			for (int j = 0; j < k; j++)
				taken = taken || chosen[j] == e;
			if (taken)
				continue;
			float c = dsr_sigmoid(l[e]) + bias[e];
			if (best < 0 || c > bestc) {
				best = e;
				bestc = c;
			}
		}
		chosen[k] = best;
		s[k] = dsr_sigmoid(l[best]);
		sum += s[k];
	}
	for (int k = 0; k < K; k++) {
		weights[t * K + k] = s[k] / sum * rsf;
		ids[t * K + k] = chosen[k];
	}
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 3 || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0];
	const int64_t T = x->shape[0];
	const int E = (int)x->shape[1];
	const int K = (int)call->outputs[0].shape[1];
	if (E % DSR_N_GROUP != 0 || K > DSR_TOPK_MAX || K > DSR_TOPK_GROUP * (E / DSR_N_GROUP))
		return SF_ERR_UNSUPPORTED;
	if (T == 0)
		return SF_OK;
	cudaStream_t stream = (cudaStream_t)call->stream;
	const int threads = 128;
	const int64_t grid = (T + threads - 1) / threads;
	grouped_topk_kernel<<<(unsigned)grid, threads, 0, stream>>>(
		(const float *)x->data, (const float *)call->inputs[1].data, (float)call->scalars[2],
		(float *)call->outputs[0].data, (int32_t *)call->outputs[1].data, T, E, K);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
