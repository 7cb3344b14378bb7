/*
 * cublaslt_gemm_fp8_blockscale.cu - library baseline for block-scaled fp8 GEMMs in DeepGEMM layout
 * (problems/deepseek/gemm_fp8_blockscale_*): cuBLASLt (12.9+) with 1D 128-element block scaling of the
 * activations (CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F) and 2D 128x128 block scaling of the weights
 * (CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F), which cuBLAS supports on Hopper (sm_90) for e4m3 inputs.
 *
 * Inputs (definition order): A [M, K] e4m3, A_scale [M, K/128] f32, B [N, K] e4m3, B_scale [N/128, K/128]
 * f32; output C [M, N] bf16 with C = sum_kb (A_blk . B_blk^T) * A_scale[m, kb] * B_scale[n/128, kb].
 *
 * cuBLASLt is column-major, so the row-major C [M, N] is computed as C^T = B . A^T ("TN"): cuBLAS's A is our
 * B (stored K x N column-major, transposed), its B is our A (K x M column-major). Scale layouts cuBLASLt
 * wants: for the 128x128 blocks of our B, [N/128][K/128] with K/128 contiguous, which is B_scale as given
 * (K/128 = 16 here, already a multiple of 4); for the 1x128 blocks of our A, [K/128][M] with M contiguous,
 * the transpose of A_scale, which a small kernel writes into a buffer of the baseline's own before the
 * matmul (part of the timed work, as it would be for a caller holding DeepGEMM-layout scales).
 *
 * The handle, the workspace and the transposed-scale buffer live across calls; the matmul plan (layouts,
 * descriptor, algorithm) is cached for the last M seen.
 */
#include <cuda_runtime.h>
#include <cublasLt.h>
#include <stdint.h>
#include "solforge/solution.h"

__global__ void fbg_transpose_scales(const float *__restrict__ in, float *__restrict__ out, int64_t M, int64_t KB)
{
	int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (i >= M * KB)
		return;
	int64_t m = i / KB, kb = i % KB;
	out[kb * M + m] = in[i];
}

typedef struct fbg_plan {
	int64_t M, N, K;
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, lc;
	cublasLtMatmulAlgo_t algo;
	int valid;
} fbg_plan;

static cublasLtHandle_t g_lt;
static void *g_ws;
static const size_t g_ws_size = 64u << 20;
static float *g_as_t;
static size_t g_as_cap;
static fbg_plan g_plan;

static void fbg_plan_free(fbg_plan *p)
{
	if (p->desc) cublasLtMatmulDescDestroy(p->desc);
	if (p->la) cublasLtMatrixLayoutDestroy(p->la);
	if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
	if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
	*p = fbg_plan();
}

/* Builds the descriptor and layouts for (M, N, K) and picks the heuristic's first algorithm. The scale
 * pointers are set per call. Returns 0 on success. */
static int fbg_plan_make(fbg_plan *p, int64_t M, int64_t N, int64_t K)
{
	fbg_plan_free(p);
	p->M = M;
	p->N = N;
	p->K = K;
	cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
	cublasLtMatmulMatrixScale_t sa = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
	cublasLtMatmulMatrixScale_t sb = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
	if (cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS ||
	    cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) != CUBLAS_STATUS_SUCCESS ||
	    cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) != CUBLAS_STATUS_SUCCESS ||
	    cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &sa, sizeof sa) !=
		    CUBLAS_STATUS_SUCCESS ||
	    cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &sb, sizeof sb) !=
		    CUBLAS_STATUS_SUCCESS)
		return -1;
	/* cuBLAS A = our B: K x N column-major (ld K), transposed; cuBLAS B = our A: K x M (ld K);
	 * C = D = our C: N x M column-major (ld N), bf16 */
	if (cublasLtMatrixLayoutCreate(&p->la, CUDA_R_8F_E4M3, (uint64_t)K, (uint64_t)N, K) != CUBLAS_STATUS_SUCCESS ||
	    cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_8F_E4M3, (uint64_t)K, (uint64_t)M, K) != CUBLAS_STATUS_SUCCESS ||
	    cublasLtMatrixLayoutCreate(&p->lc, CUDA_R_16BF, (uint64_t)N, (uint64_t)M, N) != CUBLAS_STATUS_SUCCESS)
		return -1;
	/* the heuristic needs the scale pointers' modes only; any non-null pointer will do for the query */
	cublasLtMatmulPreference_t pref;
	if (cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS)
		return -1;
	cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &g_ws_size,
					     sizeof g_ws_size);
	cublasLtMatmulHeuristicResult_t res;
	int n_res = 0;
	cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(g_lt, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1, &res,
							   &n_res);
	cublasLtMatmulPreferenceDestroy(pref);
	if (st != CUBLAS_STATUS_SUCCESS || n_res == 0)
		return -1;
	p->algo = res.algo;
	p->valid = 1;
	return 0;
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 4 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *A = &call->inputs[0], *As = &call->inputs[1], *B = &call->inputs[2], *Bs = &call->inputs[3];
	const int64_t M = A->shape[0], K = A->shape[1], N = B->shape[0], KB = K / 128;
	if (K % 128 != 0 || N % 128 != 0)
		return SF_ERR_UNSUPPORTED;
	if (M == 0)
		return SF_OK;
	cudaStream_t stream = (cudaStream_t)call->stream;

	if (!g_lt && cublasLtCreate(&g_lt) != CUBLAS_STATUS_SUCCESS)
		return SF_ERR_CUDA;
	if (!g_ws && cudaMalloc(&g_ws, g_ws_size) != cudaSuccess)
		return SF_ERR_CUDA;
	size_t need = (size_t)(M * KB) * sizeof(float);
	if (need > g_as_cap) {
		cudaStreamSynchronize(stream);
		if (g_as_t)
			cudaFree(g_as_t);
		g_as_t = NULL;
		g_as_cap = 0;
		if (cudaMalloc((void **)&g_as_t, need) != cudaSuccess)
			return SF_ERR_CUDA;
		g_as_cap = need;
	}
	if (!g_plan.valid || g_plan.M != M || g_plan.N != N || g_plan.K != K)
		if (fbg_plan_make(&g_plan, M, N, K) != 0) {
			fbg_plan_free(&g_plan);
			return SF_ERR_UNSUPPORTED;
		}

	const int threads = 256;
	fbg_transpose_scales<<<(unsigned)((M * KB + threads - 1) / threads), threads, 0, stream>>>(
		(const float *)As->data, g_as_t, M, KB);
	if (cudaGetLastError() != cudaSuccess)
		return SF_ERR_CUDA;

	const void *a_scale = Bs->data, *b_scale = g_as_t;
	if (cublasLtMatmulDescSetAttribute(g_plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale,
					   sizeof a_scale) != CUBLAS_STATUS_SUCCESS ||
	    cublasLtMatmulDescSetAttribute(g_plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale,
					   sizeof b_scale) != CUBLAS_STATUS_SUCCESS)
		return SF_ERR_CUDA;
	const float alpha = 1.0f, beta = 0.0f;
	cublasStatus_t st = cublasLtMatmul(g_lt, g_plan.desc, &alpha, B->data, g_plan.la, A->data, g_plan.lb, &beta,
					   call->outputs[0].data, g_plan.lc, call->outputs[0].data, g_plan.lc,
					   &g_plan.algo, g_ws, g_ws_size, stream);
	if (st != CUBLAS_STATUS_SUCCESS)
		return SF_ERR_CUDA;
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
