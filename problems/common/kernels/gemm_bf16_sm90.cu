/*
 * gemm_bf16_sm90.cu - from-scratch bf16 GEMM for Hopper (sm_90a), the "fast" solution of the four
 * Llama-3.1-8B linear problems (problems/llama/gemm_bf16_n..._k.../solutions/fast.cu are symlinks to this
 * file): C[M, N] = A[M, K] . B[N, K]^T, bf16 in and out, fp32 accumulation, C rounded once.
 * No cuBLAS or CUTLASS; design notes, floors and predictions: problems/common/kernels/GEMM_NOTES.md.
 *
 * Paths, by M:
 *   M <= kSmallMaxM   weight-streaming kernel (gemm_bf16_sm90_smallm.cuh, v2), mma.sync, no split-K;
 *   larger M          SF_GEMM_LARGE == 2 (the default since the first H200 run showed it correct and at
 *                     0.85-0.99x cuBLASLt): TMA + mbarrier ring + wgmma, warp-specialized, persistent,
 *                     split-K at mid M (gemm_bf16_sm90_wgmma.cuh);
 *                     SF_GEMM_LARGE == 1: cp.async + ldmatrix + mma.sync (gemm_bf16_sm90_mma.cuh), ~0.4x;
 *                     also taken when a TMA descriptor cannot be encoded;
 *   anything the fast paths cannot take (K % 8 != 0, unaligned pointers, odd N) goes to a plain
 *   tiled kernel, slow but correct for every shape.
 * Tuning macros (tools/gpu_gemm.sh times candidates): SF_GEMM_SM_RG, SF_GEMM_SM_U (small M),
 * SF_GEMM_SMALL_MAX_M, SF_GEMM_WG_SPLITK, SF_GEMM_WG_REDUCE, SF_GEMM_WG_SPLIT_DIV (mid M).
 *
 * State kept between calls (lazily, never pointers to inputs or outputs): the SM count, the wgmma
 * split-K scratch (fp32 slabs and two counters per tile, grown on demand; counters are zero between
 * calls), and the driver's cuTensorMapEncodeTiled entry point. TMA descriptors are encoded on the
 * host on every call (the runner rotates input buffers) and passed as __grid_constant__ parameters.
 * All work is enqueued on call->stream.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"
#include "gemm_bf16_sm90_smallm.cuh"
#include "gemm_bf16_sm90_mma.cuh"
#include "gemm_bf16_sm90_wgmma.cuh"

#ifndef SF_GEMM_LARGE
#define SF_GEMM_LARGE 2
#endif
#ifndef SF_GEMM_WG_SPLITK /* 0: the wgmma path never splits K */
#define SF_GEMM_WG_SPLITK 1
#endif
#ifndef SF_GEMM_WG_REDUCE /* 1: split-K slabs reduced by all units of a tile (cooperative launch) */
#define SF_GEMM_WG_REDUCE 0
#endif
#ifndef SF_GEMM_WG_SPLIT_DIV /* split-K count = SMs / tiles / this */
#define SF_GEMM_WG_SPLIT_DIV 1
#endif
#ifndef SF_GEMM_SMALL_MAX_M /* 16: M 17..64 go to wgmma (see GEMM_NOTES.md, version 2) */
#define SF_GEMM_SMALL_MAX_M 16
#endif

namespace {

const int kSmallMaxM = SF_GEMM_SMALL_MAX_M; /* at most 64: the small path's MH is 1, 2, 4 or 8 */

/* Plain fallback: one thread per output, 16 x 16 tiles of A and B staged through shared memory. */
__global__ void gemm_generic_kernel(const __nv_bfloat16 *__restrict__ A, const __nv_bfloat16 *__restrict__ B,
				    __nv_bfloat16 *__restrict__ C, int64_t M, int64_t N, int64_t K)
{
	__shared__ float As[16][17], Bs[16][17];
	const int tx = threadIdx.x, ty = threadIdx.y;
	const int64_t m = (int64_t)blockIdx.x * 16 + ty, n = (int64_t)blockIdx.y * 16 + tx;
	const int64_t nb = (int64_t)blockIdx.y * 16 + ty;
	float acc = 0.0f;
	for (int64_t k0 = 0; k0 < K; k0 += 16) {
		const int64_t k = k0 + tx;
		As[ty][tx] = (m < M && k < K) ? __bfloat162float(A[m * K + k]) : 0.0f;
		Bs[ty][tx] = (nb < N && k < K) ? __bfloat162float(B[nb * K + k]) : 0.0f;
		__syncthreads();
		for (int kk = 0; kk < 16; kk++)
			acc += As[ty][kk] * Bs[tx][kk];
		__syncthreads();
	}
	if (m < M && n < N)
		C[m * N + n] = __float2bfloat16_rn(acc);
}

int g_sms = 0;
float *g_part = nullptr;
size_t g_part_floats = 0;
int *g_cnt = nullptr;
size_t g_cnt_ints = 0;

int sm_count(void)
{
	if (!g_sms) {
		int dev = 0;
		if (cudaGetDevice(&dev) != cudaSuccess ||
		    cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || g_sms < 1)
			g_sms = 132;
	}
	return g_sms;
}

/* Makes the split-K scratch at least this big (counters zeroed); 0 on success. */
int scratch_reserve(size_t floats, size_t ints)
{
	if (floats > g_part_floats) {
		if (g_part)
			cudaFree(g_part);
		g_part = nullptr;
		g_part_floats = 0;
		if (cudaMalloc(&g_part, floats * sizeof(float)) != cudaSuccess)
			return -1;
		g_part_floats = floats;
	}
	if (ints > g_cnt_ints) {
		if (g_cnt)
			cudaFree(g_cnt);
		g_cnt = nullptr;
		g_cnt_ints = 0;
		if (cudaMalloc(&g_cnt, ints * sizeof(int)) != cudaSuccess || cudaMemset(g_cnt, 0, ints * sizeof(int)) != cudaSuccess ||
		    cudaDeviceSynchronize() != cudaSuccess)
			return -1;
		g_cnt_ints = ints;
	}
	return 0;
}

/*
 * Small-M launch: one block per kSmRows rows of B, no split-K (see gemm_bf16_sm90_smallm.cuh). MH, the
 * 8-row halves of A, is the smallest of 1, 2, 4, 8 that covers M; the batch depth U (SF_GEMM_SM_U for
 * M <= 16) is halved for M <= 32 and quartered above so that the A fragments fit in 255 registers without spilling.
 */
int launch_small(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K,
		 cudaStream_t stream)
{
	using namespace sfgemm;
	const unsigned grid = (unsigned)((N + kSmRows - 1) / kSmRows);
	const int U = SF_GEMM_SM_U;
	if (M <= 8)
		gemm_smallm_kernel<1, U><<<grid, kSmWarps * 32, 0, stream>>>(A, B, C, M, N, K);
	else if (M <= 16)
		gemm_smallm_kernel<2, U><<<grid, kSmWarps * 32, 0, stream>>>(A, B, C, M, N, K);
	else if (M <= 32)
		gemm_smallm_kernel<4, (U >= 2 ? U / 2 : U)><<<grid, kSmWarps * 32, 0, stream>>>(A, B, C, M, N, K);
	else
		gemm_smallm_kernel<8, (U >= 4 ? U / 4 : U)><<<grid, kSmWarps * 32, 0, stream>>>(A, B, C, M, N, K);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}

/* The mma.sync path: one 128 x 128 tile per block. */
int launch_mma(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K,
	       cudaStream_t stream)
{
	using namespace sfgemm;
	static bool attr_set = false;
	if (!attr_set) {
		if (cudaFuncSetAttribute(gemm_mma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMmaSmemBytes) !=
		    cudaSuccess)
			return SF_ERR_CUDA;
		attr_set = true;
	}
	dim3 grid((unsigned)((N + kMmaBN - 1) / kMmaBN), (unsigned)((M + kMmaBM - 1) / kMmaBM));
	gemm_mma_kernel<<<grid, kMmaThreads, kMmaSmemBytes, stream>>>(A, B, C, M, N, K);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}

typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
				    const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
				    CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

/* The driver's TMA encoder without linking libcuda: an entry-point lookup, which the static import
 * check (docs/security.md) denies unless declared: */
// solforge-allow: cudaGetDriverEntryPointByVersion
encode_tiled_fn encoder(void)
{
	static encode_tiled_fn fn = nullptr;
	if (!fn) {
		void *p = nullptr;
		cudaDriverEntryPointQueryResult q;
		if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) ==
			    cudaSuccess &&
		    q == cudaDriverEntryPointSuccess)
			fn = (encode_tiled_fn)p;
	}
	return fn;
}

/* TMA descriptor of a row-major [rows][K] bf16 matrix, box [box_rows][64], 128-byte swizzle; 0 on success. */
int make_map(CUtensorMap *map, const void *ptr, int rows, int K, int box_rows)
{
	encode_tiled_fn fn = encoder();
	if (!fn)
		return -1;
	const cuuint64_t dims[2] = { (cuuint64_t)K, (cuuint64_t)rows };
	const cuuint64_t strides[1] = { (cuuint64_t)K * 2 };
	const cuuint32_t box[2] = { (cuuint32_t)sfgemm::kWgBK, (cuuint32_t)box_rows };
	const cuuint32_t estr[2] = { 1, 1 };
	return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(ptr), dims, strides, box, estr,
		  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
		  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS
		       ? 0
		       : -1;
}

/* The wgmma path (or the mma.sync one when a TMA descriptor cannot be made). */
int launch_wgmma(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K,
		 cudaStream_t stream)
{
	using namespace sfgemm;
	static bool attr_set = false;
	if (!attr_set) {
		if (cudaFuncSetAttribute(gemm_wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kWgSmemBytes) !=
		    cudaSuccess)
			return SF_ERR_CUDA;
		attr_set = true;
	}
	CUtensorMap ma, mb;
	if (make_map(&ma, A, M, K, kWgBM) || make_map(&mb, B, N, K, kWgBN))
		return launch_mma(A, B, C, M, N, K, stream); /* no TMA descriptor: the mma.sync path instead */
	/* split K when the tiles alone leave SMs idle (mid M), keeping >= 4 K blocks per split */
	const int tiles = ((M + kWgBM - 1) / kWgBM) * ((N + kWgBN - 1) / kWgBN), kbc = (K + kWgBK - 1) / kWgBK;
	int splits = 1;
	if (SF_GEMM_WG_SPLITK && tiles < sm_count()) {
		splits = sm_count() / tiles / SF_GEMM_WG_SPLIT_DIV;
		if (splits > kbc / 4)
			splits = kbc / 4;
		if (splits < 1)
			splits = 1;
		const int per = (kbc + splits - 1) / splits;
		splits = (kbc + per - 1) / per; /* no empty split */
	}
	if (splits > 1 && scratch_reserve((size_t)tiles * splits * 128 * 256, (size_t)tiles * 2))
		return SF_ERR_CUDA;
	const int units = tiles * splits;
	const int grid = units < sm_count() ? units : sm_count();
	if (SF_GEMM_WG_REDUCE && splits > 1 && units <= grid) {
		/* spread reduction: needs every unit resident at once, which a cooperative launch guarantees */
		int spread = 1, Mi = M, Ni = N, Ki = K, si = splits;
		float *part = g_part;
		int *cnt = g_cnt;
		void *args[] = { &ma, &mb, &C, &Mi, &Ni, &Ki, &si, &part, &cnt, &spread };
		if (cudaLaunchCooperativeKernel((const void *)gemm_wgmma_kernel, dim3(grid), dim3(kWgThreads), args,
						kWgSmemBytes, stream) == cudaSuccess)
			return SF_OK;
		(void)cudaGetLastError(); /* not launchable cooperatively: the last-unit reduction instead */
	}
	gemm_wgmma_kernel<<<grid, kWgThreads, kWgSmemBytes, stream>>>(ma, mb, C, M, N, K, splits, g_part, g_cnt, 0);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}

int is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

bool aligned16(const void *p)
{
	return ((uintptr_t)p & 15) == 0;
}

} /* namespace */

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 2 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *At = &call->inputs[0], *Bt = &call->inputs[1], *Ct = &call->outputs[0];
	if (At->ndim != 2 || Bt->ndim != 2 || Ct->ndim != 2 || !is_bf16(At) || !is_bf16(Bt) || !is_bf16(Ct))
		return SF_ERR_UNSUPPORTED;
	const int64_t M = At->shape[0], K = At->shape[1], N = Bt->shape[0];
	if (Bt->shape[1] != K || Ct->shape[0] != M || Ct->shape[1] != N)
		return SF_ERR_UNSUPPORTED;
	cudaStream_t stream = (cudaStream_t)call->stream;
	if (M == 0 || N == 0)
		return SF_OK;
	if (K == 0)
		return cudaMemsetAsync(Ct->data, 0, (size_t)(M * N) * 2, stream) == cudaSuccess ? SF_OK : SF_ERR_CUDA;
	const __nv_bfloat16 *A = (const __nv_bfloat16 *)At->data, *B = (const __nv_bfloat16 *)Bt->data;
	__nv_bfloat16 *C = (__nv_bfloat16 *)Ct->data;

	const bool fast = K % 8 == 0 && N % 2 == 0 && aligned16(A) && aligned16(B) && aligned16(C) && M < (1 << 30) &&
			  N < (1 << 30) && K < (1 << 30) && M * K < ((int64_t)1 << 40);
	if (fast && M <= kSmallMaxM && M <= 64)
		return launch_small(A, B, C, (int)M, (int)N, (int)K, stream);
	if (fast && SF_GEMM_LARGE == 2)
		return launch_wgmma(A, B, C, (int)M, (int)N, (int)K, stream);
	if (fast && SF_GEMM_LARGE == 1)
		return launch_mma(A, B, C, (int)M, (int)N, (int)K, stream);
	const int64_t tm = (M + 15) / 16, tn = (N + 15) / 16;
	if (tm > 2147483647 || tn > 65535)
		return SF_ERR_UNSUPPORTED;
	gemm_generic_kernel<<<dim3((unsigned)tm, (unsigned)tn), dim3(16, 16), 0, stream>>>(A, B, C, M, N, K);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
