/*
 * Naive CUDA solution of gemm_bf16_n6144_k4096 (Llama-3.1-8B self_attn.qkv_proj): C[M, N] = A[M, K] . B[N, K]^T,
 * bf16 in, fp32 accumulation, bf16 out (round to nearest even).
 *
 * A plain shared-memory tiled kernel, not tuned: each 16x16 thread block computes a 16x16 tile of C,
 * staging 16x16 tiles of A and B (converted to fp32) through shared memory along K. Every size is
 * handled (partial tiles are masked; M may be any value up to 2^31 tiles); indices are 64-bit.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"

#define GEMM_TILE 16

__global__ void gemm_bf16_nt_tiled(const __nv_bfloat16 *__restrict__ A, const __nv_bfloat16 *__restrict__ B,
				   __nv_bfloat16 *__restrict__ C, int64_t M, int64_t N, int64_t K)
{
	__shared__ float As[GEMM_TILE][GEMM_TILE + 1]; /* As[r][k]: A[m0 + r][k0 + k] */
	__shared__ float Bs[GEMM_TILE][GEMM_TILE + 1]; /* Bs[r][k]: B[n0 + r][k0 + k] */
	const int tx = threadIdx.x, ty = threadIdx.y;
	const int64_t m0 = (int64_t)blockIdx.x * GEMM_TILE, n0 = (int64_t)blockIdx.y * GEMM_TILE;
	const int64_t m = m0 + ty, n = n0 + tx; /* the output element of this thread */
	float acc = 0.0f;
	for (int64_t k0 = 0; k0 < K; k0 += GEMM_TILE) {
		const int64_t k = k0 + tx;
		const int64_t nb = n0 + ty; /* row of B this thread loads */
		As[ty][tx] = (m < M && k < K) ? __bfloat162float(A[m * K + k]) : 0.0f;
		Bs[ty][tx] = (nb < N && k < K) ? __bfloat162float(B[nb * K + k]) : 0.0f;
		__syncthreads();
		for (int kk = 0; kk < GEMM_TILE; kk++)
			acc += As[ty][kk] * Bs[tx][kk];
		__syncthreads();
	}
	if (m < M && n < N)
		C[m * N + n] = __float2bfloat16_rn(acc);
}

static int is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 2 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *A = &call->inputs[0], *B = &call->inputs[1], *C = &call->outputs[0];
	if (A->ndim != 2 || B->ndim != 2 || C->ndim != 2 || !is_bf16(A) || !is_bf16(B) || !is_bf16(C))
		return SF_ERR_UNSUPPORTED;
	const int64_t M = A->shape[0], K = A->shape[1], N = B->shape[0];
	if (B->shape[1] != K || C->shape[0] != M || C->shape[1] != N)
		return SF_ERR_UNSUPPORTED;
	if (M == 0 || N == 0)
		return SF_OK;
	const int64_t tiles_m = (M + GEMM_TILE - 1) / GEMM_TILE, tiles_n = (N + GEMM_TILE - 1) / GEMM_TILE;
	if (tiles_m > 2147483647 || tiles_n > 65535)
		return SF_ERR_UNSUPPORTED;
	cudaStream_t stream = (cudaStream_t)call->stream;
	dim3 block(GEMM_TILE, GEMM_TILE);
	dim3 grid((unsigned)tiles_m, (unsigned)tiles_n);
	gemm_bf16_nt_tiled<<<grid, block, 0, stream>>>((const __nv_bfloat16 *)A->data, (const __nv_bfloat16 *)B->data,
						       (__nv_bfloat16 *)C->data, M, N, K);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
