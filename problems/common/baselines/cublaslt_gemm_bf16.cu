/*
 * cublaslt_gemm_bf16.cu - library baseline for the bf16 linear layers: C[M, N] = A[M, K] . B[N, K]^T
 * (nn.Linear without bias: A activations, B the weight [out_features, in_features]) with cuBLASLt,
 * bf16 in and out, fp32 compute and scale. This is what a user calls instead of writing a kernel.
 *
 * Row-major data through column-major cuBLASLt: a row-major [R, S] matrix is a column-major [S, R]
 * one with leading dimension S, so
 *     C^T (column-major N x M, ld N) = B (N x K) . A^T (K x M)
 * where the weight buffer is the column-major K x N matrix B^T (ld K) used with op T, and the
 * activation buffer is the column-major K x M matrix A^T (ld K) used with op N: the "TN" GEMM
 * that cuBLAS is fastest at.
 *
 * The handle and a 32 MiB workspace are created on the first call and reused. The algorithm comes
 * from cublasLtMatmulAlgoGetHeuristic (best of 1) and is cached, with its descriptors, per
 * (M, N, K, operand alignments), so repeated calls of one shape cost no heuristic query. Every
 * cuBLAS / CUDA failure returns SF_ERR_CUDA. All work is enqueued on call->stream.
 */
// solforge-ldflags: -lcublasLt -lcublas
#include <cuda_runtime.h>
#include <cublasLt.h>
#include <stdint.h>
#include "solforge/solution.h"

namespace {

const size_t kWorkspaceBytes = (size_t)32 << 20;
const int kMaxPlans = 64;

struct Plan {
	bool used;
	int64_t M, N, K;
	uint32_t align_a, align_b, align_c;
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t la, lb, lc; /* cuBLASLt's A (the weight), B (the activations), C/D */
	cublasLtMatmulAlgo_t algo;
};

cublasLtHandle_t g_handle = nullptr;
void *g_workspace = nullptr;
Plan g_plans[kMaxPlans];
int g_next_victim = 0;

/* Largest power of two (at most 256) that divides the address: the alignment cuBLASLt may assume. */
uint32_t alignment_of(const void *p)
{
	uintptr_t v = (uintptr_t)p;
	uint32_t a = 256;
	while (a > 2 && (v % a) != 0)
		a >>= 1;
	return a;
}

void plan_destroy(Plan *p)
{
	if (p->lc)
		cublasLtMatrixLayoutDestroy(p->lc);
	if (p->lb)
		cublasLtMatrixLayoutDestroy(p->lb);
	if (p->la)
		cublasLtMatrixLayoutDestroy(p->la);
	if (p->op)
		cublasLtMatmulDescDestroy(p->op);
	*p = Plan();
}

/* Builds descriptors and picks the algorithm for one shape; 0 on success. */
int plan_create(Plan *p, int64_t M, int64_t N, int64_t K, uint32_t align_a, uint32_t align_b, uint32_t align_c)
{
	*p = Plan();
	p->M = M;
	p->N = N;
	p->K = K;
	p->align_a = align_a;
	p->align_b = align_b;
	p->align_c = align_c;
	cublasLtMatmulPreference_t pref = nullptr;
	int ok = 0;
	do {
		if (cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS)
			break;
		const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
		if (cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a) !=
			    CUBLAS_STATUS_SUCCESS ||
		    cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b) !=
			    CUBLAS_STATUS_SUCCESS)
			break;
		/* weight: column-major K x N, ld K; activations: K x M, ld K; output: N x M, ld N */
		if (cublasLtMatrixLayoutCreate(&p->la, CUDA_R_16BF, (uint64_t)K, (uint64_t)N, K) != CUBLAS_STATUS_SUCCESS ||
		    cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_16BF, (uint64_t)K, (uint64_t)M, K) != CUBLAS_STATUS_SUCCESS ||
		    cublasLtMatrixLayoutCreate(&p->lc, CUDA_R_16BF, (uint64_t)N, (uint64_t)M, N) != CUBLAS_STATUS_SUCCESS)
			break;
		if (cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS)
			break;
		const uint64_t ws = kWorkspaceBytes;
		/* cuBLASLt's A is our weight buffer B, its B our activations A */
		if (cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws) !=
			    CUBLAS_STATUS_SUCCESS ||
		    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_b,
							 sizeof align_b) != CUBLAS_STATUS_SUCCESS ||
		    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_a,
							 sizeof align_a) != CUBLAS_STATUS_SUCCESS ||
		    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c,
							 sizeof align_c) != CUBLAS_STATUS_SUCCESS ||
		    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c,
							 sizeof align_c) != CUBLAS_STATUS_SUCCESS)
			break;
		cublasLtMatmulHeuristicResult_t result;
		int returned = 0;
		if (cublasLtMatmulAlgoGetHeuristic(g_handle, p->op, p->la, p->lb, p->lc, p->lc, pref, 1, &result,
						   &returned) != CUBLAS_STATUS_SUCCESS ||
		    returned < 1)
			break;
		p->algo = result.algo;
		p->used = true;
		ok = 1;
	} while (0);
	if (pref)
		cublasLtMatmulPreferenceDestroy(pref);
	if (!ok) {
		plan_destroy(p);
		return -1;
	}
	return 0;
}

/* The cached plan of this shape and alignment, or a new one (evicting round-robin); NULL on failure. */
Plan *plan_get(int64_t M, int64_t N, int64_t K, uint32_t align_a, uint32_t align_b, uint32_t align_c)
{
	for (int i = 0; i < kMaxPlans; i++) {
		Plan *p = &g_plans[i];
		if (p->used && p->M == M && p->N == N && p->K == K && p->align_a == align_a && p->align_b == align_b &&
		    p->align_c == align_c)
			return p;
	}
	Plan *p = nullptr;
	for (int i = 0; i < kMaxPlans && !p; i++)
		if (!g_plans[i].used)
			p = &g_plans[i];
	if (!p) {
		p = &g_plans[g_next_victim];
		g_next_victim = (g_next_victim + 1) % kMaxPlans;
		plan_destroy(p);
	}
	return plan_create(p, M, N, K, align_a, align_b, align_c) == 0 ? p : nullptr;
}

int is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

} /* namespace */

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
	cudaStream_t stream = (cudaStream_t)call->stream;
	if (M == 0 || N == 0)
		return SF_OK;
	if (K == 0) /* an empty sum: C = 0 */
		return cudaMemsetAsync(C->data, 0, (size_t)(M * N) * 2, stream) == cudaSuccess ? SF_OK : SF_ERR_CUDA;

	if (!g_handle && cublasLtCreate(&g_handle) != CUBLAS_STATUS_SUCCESS) {
		g_handle = nullptr;
		return SF_ERR_CUDA;
	}
	if (!g_workspace && cudaMalloc(&g_workspace, kWorkspaceBytes) != cudaSuccess) {
		g_workspace = nullptr;
		return SF_ERR_CUDA;
	}
	Plan *p = plan_get(M, N, K, alignment_of(A->data), alignment_of(B->data), alignment_of(C->data));
	if (!p)
		return SF_ERR_CUDA;
	const float alpha = 1.0f, beta = 0.0f;
	if (cublasLtMatmul(g_handle, p->op, &alpha, B->data, p->la, A->data, p->lb, &beta, C->data, p->lc, C->data,
			   p->lc, &p->algo, g_workspace, kWorkspaceBytes, stream) != CUBLAS_STATUS_SUCCESS)
		return SF_ERR_CUDA;
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
