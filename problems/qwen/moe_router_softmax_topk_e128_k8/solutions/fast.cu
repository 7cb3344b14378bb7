/*
 * fast.cu - Qwen3 MoE router (moe_router_softmax_topk_e128_k8): softmax over E = 128 bf16 logits,
 * top K (8) renormalized to sum 1, sorted by descending weight, equal weights lower expert first.
 *
 * One warp per token, 4 logits per lane (one 8-byte load: lane l holds experts 4l..4l+3). Ranking by
 * probability is ranking by logit (exp is increasing, the denominator is shared; equal bf16 logits
 * give equal probabilities), so the top-K is K rounds of a warp argmax over (logit, expert) with
 * "larger logit, then lower expert" order, done on the exact bf16 values: the ids and their order
 * match the oracle's strict-'>' upward scan exactly. (logit, expert) packs into one unique 32-bit
 * key (rt_key), so each lane sorts its 4 keys once and each round is a single redux.sync.max plus a
 * pop on the winning lane (~8 instructions per round instead of 5 shuffle-pair steps). The renormalized weight of pick k is
 * p_k / sum_j p_j = e_k / sum_j e_j with e = expf(logit - max): the full softmax denominator cancels,
 * so it is never summed (float32, ~1e-7 relative error against the oracle's double; rtol 1e-5).
 * Each warp handles TPW tokens with all their loads issued first (TPW * 256 bytes in flight).
 * Lanes k < K write pick k: 32 bytes of weights and 32 of ids per token, coalesced.
 * tests/fast/router_fast_test.cu checks the key functions and the round logic on the CPU.
 */
// solforge-tune: TPW=1,2,4 THREADS=64,128,256
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <math.h>
#include <string.h>
#include "solforge/solution.h"

#ifndef TPW
#define TPW 2
#endif
#ifndef THREADS
#define THREADS 128
#endif

#define RT_E 128
#define RT_VPL 4 /* logits per lane */

/*
 * Order key of (logit, expert): the bf16 bits made order-preserving as an unsigned 16-bit number
 * (-0 first turned into +0: equal values must tie), expert index below it inverted, so that a larger
 * key is a larger logit, then a lower expert. Keys are unique (the index is in them), and 0 is below
 * every real key (the smallest, -inf, is 0x007f....), so 0 marks a spent slot.
 */
static __host__ __device__ __forceinline__ uint32_t rt_key(uint32_t h, int idx)
{
	h = (h == 0x8000u) ? 0u : h;
	const uint32_t o = (h & 0x8000u) ? (~h & 0xffffu) : (h | 0x8000u);
	return (o << 16) | (0xffffu - (uint32_t)idx);
}

/* the logit of a key (inverse of rt_key's upper half) */
static __host__ __device__ __forceinline__ float rt_key_value(uint32_t key)
{
	const uint32_t o = key >> 16;
	const uint32_t h = ((o & 0x8000u) ? (o & 0x7fffu) : (~o & 0xffffu)) << 16;
	float f;
	memcpy(&f, &h, 4);
	return f;
}

static __host__ __device__ __forceinline__ void rt_cas(uint32_t &a, uint32_t &b)
{
	const uint32_t hi = a > b ? a : b, lo = a > b ? b : a;
	a = hi;
	b = lo;
}

template <bool VEC>
static __global__ void __launch_bounds__(THREADS) rt_kernel(const uint16_t *__restrict__ logits, float *__restrict__ w_out,
							   int32_t *__restrict__ id_out, int64_t T, int K)
{
	const int lane = threadIdx.x & 31;
	const int64_t warp = ((int64_t)blockIdx.x * THREADS + threadIdx.x) >> 5;
	const int64_t t0 = warp * TPW;
	if (t0 >= T) /* warp-uniform */
		return;
	uint32_t lo[TPW], hi[TPW];
#pragma unroll
	for (int r = 0; r < TPW; r++) {
		const int64_t t = t0 + r;
		if (t < T) {
			const uint16_t *row = logits + t * RT_E + lane * RT_VPL;
			if (VEC) {
				const uint2 p = __ldcs(reinterpret_cast<const uint2 *>(row));
				lo[r] = p.x;
				hi[r] = p.y;
			} else {
				lo[r] = (uint32_t)row[0] | ((uint32_t)row[1] << 16);
				hi[r] = (uint32_t)row[2] | ((uint32_t)row[3] << 16);
			}
		}
	}
#pragma unroll
	for (int r = 0; r < TPW; r++) {
		const int64_t t = t0 + r;
		if (t >= T) /* warp-uniform */
			break;
		/* this lane's 4 keys, sorted descending (5 compare-exchanges) */
		uint32_t k0 = rt_key(lo[r] & 0xffffu, lane * RT_VPL), k1 = rt_key(lo[r] >> 16, lane * RT_VPL + 1);
		uint32_t k2 = rt_key(hi[r] & 0xffffu, lane * RT_VPL + 2), k3 = rt_key(hi[r] >> 16, lane * RT_VPL + 3);
		rt_cas(k0, k1);
		rt_cas(k2, k3);
		rt_cas(k0, k2);
		rt_cas(k1, k3);
		rt_cas(k1, k2);
		/* K rounds: the warp's largest head is the next pick (one redux.sync); its lane pops it */
		uint32_t mine = 0, first = 0; /* lane k < K: the k-th pick's key */
		for (int k = 0; k < K; k++) {
			const uint32_t w = __reduce_max_sync(0xffffffffu, k0);
			if (k == 0)
				first = w;
			if (lane == k)
				mine = w;
			if (k0 == w) {
				k0 = k1;
				k1 = k2;
				k2 = k3;
				k3 = 0;
			}
		}
		const float e = lane < K ? expf(rt_key_value(mine) - rt_key_value(first)) : 0.0f;
		float sum = e;
#pragma unroll
		for (int off = 16; off > 0; off >>= 1)
			sum += __shfl_xor_sync(0xffffffffu, sum, off);
		if (lane < K) {
			w_out[t * K + lane] = e / sum;
			id_out[t * K + lane] = (int32_t)(0xffffu - (mine & 0xffffu));
		}
	}
}

/* The entry point: checks dtypes and shapes (SF_ERR_UNSUPPORTED for anything the definition does not
 * allow), takes the vector kernel when alignment and shape permit, else the scalar one, and launches
 * on call->stream; SF_ERR_CUDA if the launch failed. */
SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 1 || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *w = &call->outputs[0], *ids = &call->outputs[1];
	if (x->ndim != 2 || w->ndim != 2 || ids->ndim != 2 || x->dtype.code != SF_CODE_BFLOAT || x->dtype.bits != 16 ||
	    w->dtype.code != SF_CODE_FLOAT || w->dtype.bits != 32 || ids->dtype.code != SF_CODE_INT ||
	    ids->dtype.bits != 32)
		return SF_ERR_UNSUPPORTED;
	const int64_t T = x->shape[0];
	const int64_t K = w->shape[1];
	if (x->shape[1] != RT_E || K < 1 || K > 32 || w->shape[0] != T || ids->shape[0] != T || ids->shape[1] != K)
		return SF_ERR_UNSUPPORTED;
	if (T == 0)
		return SF_OK;
	const int64_t warps = (T + TPW - 1) / TPW;
	const int64_t blocks = (warps * 32 + THREADS - 1) / THREADS;
	cudaStream_t st = (cudaStream_t)call->stream;
	if ((uintptr_t)x->data % 8 == 0)
		rt_kernel<true><<<(unsigned)blocks, THREADS, 0, st>>>((const uint16_t *)x->data, (float *)w->data,
								      (int32_t *)ids->data, T, (int)K);
	else
		rt_kernel<false><<<(unsigned)blocks, THREADS, 0, st>>>((const uint16_t *)x->data, (float *)w->data,
								       (int32_t *)ids->data, T, (int)K);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
