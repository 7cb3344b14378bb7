/*
 * gemm_bf16_sm90.cu - from-scratch bf16 GEMM for Hopper (sm_90a), the "fast" solution of the four
 * Llama-3.1-8B linear problems (problems/llama/gemm_bf16_n..._k.../solutions/fast.cu are symlinks to this
 * file): C[M, N] = A[M, K] . B[N, K]^T, bf16 in and out, fp32 accumulation, C rounded once.
 * No cuBLAS or CUTLASS; design notes, floors and predictions: problems/common/kernels/GEMM_NOTES.md.
 *
 * Paths, by M:
 *   M <= kSmallMaxM   weight-streaming kernel (gemm_bf16_sm90_smallm.cuh, v2), mma.sync, no split-K;
 *                     with SF_GEMM_SMALLM_V == 2 (candidate), M <= 16 on the v5 kernel instead
 *                     (gemm_bf16_sm90_smallm_v5.cuh: weight through a TMA ring, one wave, clusters
 *                     reduced through DSMEM where K is split);
 *   larger M          SF_GEMM_LARGE == 2 (the default since the first H200 run showed it correct and at
 *                     0.85-0.99x cuBLASLt): TMA + mbarrier ring + wgmma, warp-specialized, persistent,
 *                     split-K at mid M (gemm_bf16_sm90_wgmma.cuh);
 *                     with SF_GEMM_V3 == 1 (the default since session 5, as "v3a": SF_GEMM_V3_CLUSTER 0,
 *                     SF_GEMM_V3_AUTO 1) the v3 plan instead (v3_plan below): tile width 128/192/256
 *                     by whole waves, cluster split-K reduced through DSMEM at mid M, optionally
 *                     (SF_GEMM_V3_PAIR) clusters of 2 sharing B by TMA multicast at large M;
 *                     with SF_GEMM_MIDM == 1 (the default, v4), M <= SF_GEMM_MIDM_MAX_M goes to the
 *                     swap-AB wgmma kernel instead (gemm_bf16_sm90_midm.cuh: weight bands of 128 rows x
 *                     all tokens, cluster split-K through DSMEM);
 *                     with SF_GEMM_V6 == 1 (candidate), M in [SF_GEMM_V6_MIN_M, SF_GEMM_V6_MAX_M] (129..512)
 *                     on the v6 plan (gemm_bf16_sm90_v6plan.cuh: tile width 128/192/256 and schedule --
 *                     persistent unsplit, cluster split-K or v2's split-K -- by a cost model);
 *                     with SF_GEMM_PINGPONG == 1 (candidate), M >= SF_GEMM_PP_MIN_M (513) on the ping-pong
 *                     kernel (gemm_bf16_sm90_pingpong.cuh: consumer warpgroups on alternate tiles, one's
 *                     epilogue under the other's K loop; GEMM_NOTES_LARGE_M.md "Version 7");
 *                     with SF_GEMM_MCAST == 1 (candidate), v3a's unsplit large-M plans (M >= 513) on clusters
 *                     of 2 CTAs sharing the W block by TMA multicast (gemm_bf16_sm90_mcast.cuh, "Version 8");
 *                     with SF_GEMM_COOP256 == 1 or 2 (candidate), v3a's unsplit 256-wide plans (M >= 513) on two
 *                     consumers of 128 x 128 issuing two m64n128k16 per k16 step (gemm_bf16_sm90_coop.cuh, "Version 9");
 *                     with SF_GEMM_V10 == 1 (candidate), the unsplit persistent launches (M >= 513) with the epilogue
 *                     through shared memory and TMA stores (gemm_bf16_sm90_v10.cuh, "Version 10"); the candidates'
 *                     includes and host hooks: gemm_bf16_sm90_hooks.cuh;
 *                     SF_GEMM_LARGE == 1: cp.async + ldmatrix + mma.sync (gemm_bf16_sm90_mma.cuh), ~0.4x;
 *                     also taken when a TMA descriptor cannot be encoded;
 *   anything the fast paths cannot take (K % 8 != 0, unaligned pointers, odd N) goes to a plain
 *   tiled kernel, slow but correct for every shape.
 * Tuning macros (tools/gpu_gemm.sh times candidates): SF_GEMM_SM_RG, SF_GEMM_SM_U (small M),
 * SF_GEMM_SMALL_MAX_M, SF_GEMM_WG_SPLITK, SF_GEMM_WG_REDUCE, SF_GEMM_WG_SPLIT_DIV (mid M), SF_GEMM_V3,
 * SF_GEMM_V3_BN, SF_GEMM_V3_CLUSTER, SF_GEMM_V3_SPLIT_BN, SF_GEMM_V3_PAIR (v3, GEMM_NOTES.md "Version 3"),
 * SF_GEMM_V3_AUTO, SF_GEMM_V3_AUTO_PCT (v3's width only past a predicted margin, "v3 width: a margin"),
 * SF_GEMM_MIDM, SF_GEMM_MIDM_MAX_M, SF_GEMM_MIDM_SPLITS, SF_GEMM_MIDM_2CTA (v4, "Version 4 (mid M)"),
 * SF_GEMM_SM16 (1, the default: M 9..16 on gemm_smallm16_kernel where its grid is one wave; 0: never),
 * SF_GEMM_SM_LDPF (256 by default since session 17: the small-M kernels' weight loads carry .L2::256B;
 * GEMM_NOTES_MID_M2.md "M <= 16: ramp and tail"; its L2 prefetch candidates SF_GEMM_SM_PF / _PF_OP / _XPF were
 * removed in session 17),
 * SF_GEMM_SMALLM_V (2: the v5 small-M kernel for M <= 16, gemm_bf16_sm90_smallm_v5.cuh, "Version 5"),
 * SF_GEMM_SM5_RING_KB, SF_GEMM_SM5_MIN_RB, SF_GEMM_SM5_RELEASE (v5; "Version 5: the ring race"), SF_GEMM_V6,
 * SF_GEMM_V6_MIN_M, SF_GEMM_V6_MAX_M, SF_GEMM_V6_PIN_BN, SF_GEMM_V6_PIN_MODE (v6, "Version 6"), SF_GEMM_V6_BN96
 * (default 2 since session 16: 128 x 96 persistent tiles in the v6 plan, GEMM_NOTES_MID_M2.md "Version 17"),
 * SF_GEMM_MIDM_TT_TOP_M (M 193-256 on two token tiles) and SF_GEMM_SM16_MIDM (M 9-16 on 28672-row weights through
 * the mid-M path; both session 16, GEMM_NOTES_MID_M2.md), SF_GEMM_MIDM_MW (1 by default since session 17:
 * 28672-row weights at M 129..192 on the mid-M path, "Version 18"), SF_GEMM_WG_CL_RT,
 * SF_GEMM_WG_PREFETCH (gemm_bf16_sm90_wgmma.cuh), SF_GEMM_PINGPONG, SF_GEMM_PP_WM, SF_GEMM_PP_MIN_M (candidate:
 * M >= SF_GEMM_PP_MIN_M on the ping-pong kernel, gemm_bf16_sm90_pingpong.cuh, "Version 7"), SF_GEMM_MCAST,
 * SF_GEMM_MCAST_MIN_M, SF_GEMM_MCAST_FENCE, SF_GEMM_MCAST_SHARE (candidate: v3a's large-M plan on 2-CTA clusters
 * sharing W by TMA multicast, gemm_bf16_sm90_mcast.cuh, GEMM_NOTES_LARGE_M.md "Version 8"), SF_GEMM_COOP256,
 * SF_GEMM_COOP_MIN_M, SF_GEMM_COOP_ORDER (candidate: cuBLASLt's consumer shape, gemm_bf16_sm90_coop.cuh,
 * "Version 9"), SF_GEMM_V10, SF_GEMM_V10_MIN_M (candidate: TMA-store epilogue, "Version 10"), SF_GEMM_MIDM_MC (candidate: v4's
 * plans on band-pair clusters sharing the activations by TMA multicast, gemm_bf16_sm90_midm_mc.cuh, GEMM_NOTES_MID_M.md
 * "Version 12");
 * SF_GEMM_TAILROWS (candidate: the last token tile's A box is its M % 128 real rows, a second A map, in the wgmma and v10
 * kernels, and v4's activation box M rows outside the half bands: no zero-filled rows past M, "Version 15");
 * their defaults: gemm_bf16_sm90_config.cuh (and the header).
 *
 * State kept between calls (lazily, never pointers to inputs or outputs): the SM count, the wgmma
 * split-K scratch (fp32 slabs and two counters per tile, grown on demand; counters are zero between
 * calls), the resident-cluster counts of the v3 kernels, and the driver's cuTensorMapEncodeTiled entry point. TMA descriptors are encoded on the
 * host on every call (the runner rotates input buffers) and passed as __grid_constant__ parameters;
 * the v5 path alone keeps the last 16 descriptors keyed on (pointer, rows, K, box) (make_map_cached, in
 * gemm_bf16_sm90_hooks.cuh).
 * All work is enqueued on call->stream.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <stdio.h>
#include "solforge/solution.h"
#include "gemm_bf16_sm90_smallm.cuh"
#if defined(SF_GEMM_SM_ASMEM) || defined(SF_GEMM_SM_AS_U) /* measured slower on both multi-wave shapes, removed */
#error "SF_GEMM_SM_ASMEM (A staged in shared memory, M 9-16) was removed in session 16: GEMM_NOTES_MID_M2.md, commit e00e89c holds it"
#endif
#include "gemm_bf16_sm90_mma.cuh"
#include "gemm_bf16_sm90_wgmma.cuh"
#include "gemm_bf16_sm90_midm.cuh"
#include "gemm_bf16_sm90_smallm_v5.cuh"
#include "gemm_bf16_sm90_v6plan.cuh"
#include "gemm_bf16_sm90_config.cuh" /* the tuning macros (SF_GEMM_*) and their defaults */
#include "gemm_bf16_sm90_v3plan.cuh" /* the v3 host plan (needs the config macros) */
#include "gemm_bf16_sm90_hooks.cuh" /* the candidates' kernels and host hooks (none in the default build) */

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
#if SF_GEMM_SM16
	/* 16 rows of B per warp, A:B loads 1:1 (GEMM_NOTES_MID_M.md "M 9-16 measured"): 1.02-1.07x where its grid
	 * fits one wave of two blocks per SM (4096 x 14336, 4096 x 4096), 0.98-1.00x on the 1.5- and 6.8-wave
	 * grids of N 6144 / 28672, which keep the 8-row kernel */
	else if (M <= 16 && (N + kSm16Rows - 1) / kSm16Rows <= 2 * sm_count())
		gemm_smallm16_kernel<(U >= 2 ? U / 2 : 1)><<<(unsigned)((N + kSm16Rows - 1) / kSm16Rows), kSmWarps * 32, 0,
							      stream>>>(A, B, C, M, N, K);
#endif
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

/* Sets the dynamic shared memory limit of one wgmma kernel instantiation once; 0 on success. */
template <int BN, int kMode> int wg_attr(void)
{
	static bool set = false;
	if (!set) {
		if (cudaFuncSetAttribute(sfgemm::gemm_wgmma_kernel<BN, kMode>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					 sfgemm::WgCfg<BN>::kSmemBytes) != cudaSuccess)
			return -1;
		set = true;
	}
	return 0;
}

/* Persistent launch of the wgmma kernel with tile width BN: grid min(units, SMs). */
template <int BN>
int launch_persistent(const CUtensorMap &ma, const CUtensorMap &mb SF_GEMM_TAIL_P, __nv_bfloat16 *C, int M, int N, int K,
		      int splits, int units, cudaStream_t stream)
{
#if SF_GEMM_V10 /* version 10 (gemm_bf16_sm90_hooks.cuh): the unsplit launches' epilogue through TMA stores (64-column
		* chunks: not at version 17's width 96, which keeps the register stores) */
	if constexpr (BN % 64 == 0)
		if (v10_hook<BN>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, splits, stream))
			return SF_OK;
#endif
	if (wg_attr<BN, sfgemm::kWgPersistent>())
		return SF_ERR_CUDA;
	const int grid = units < sm_count() ? units : sm_count();
	sfgemm::gemm_wgmma_kernel<BN, sfgemm::kWgPersistent>
		<<<grid, sfgemm::kWgThreads, sfgemm::WgCfg<BN>::kSmemBytes, stream>>>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, splits, g_part,
										   g_cnt, 0);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}

/* v2's K split count for 128 x 256 tiles of C[M][N] (K): split K when the tiles alone leave SMs idle (mid M),
 * keeping >= 4 K blocks per split and no split empty; 1 when the tiles fill the SMs. Used by launch_wgmma
 * and by the version-9 decision (SF_GEMM_COOP256: v2's unsplit plans are the coop kernel's too). */
int v2_splits(int M, int N, int K)
{
	const int tiles = ((M + sfgemm::kWgBM - 1) / sfgemm::kWgBM) * ((N + 255) / 256), kbc = (K + sfgemm::kWgBK - 1) / sfgemm::kWgBK;
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
	return splits;
}

/* The wgmma path (or the mma.sync one when a TMA descriptor cannot be made). */
int launch_wgmma(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K,
		 cudaStream_t stream)
{
	using namespace sfgemm;
	const int kWgBN = 256;
	if (wg_attr<kWgBN, kWgPersistent>())
		return SF_ERR_CUDA;
	CUtensorMap ma, mb SF_GEMM_TAIL_A;
	if (SF_MAKE_A(A, M, K) || make_map(&mb, B, N, K, kWgBN))
		return launch_mma(A, B, C, M, N, K, stream); /* no TMA descriptor: the mma.sync path instead */
	const int tiles = ((M + kWgBM - 1) / kWgBM) * ((N + kWgBN - 1) / kWgBN), splits = v2_splits(M, N, K);
	if (splits > 1 && scratch_reserve((size_t)tiles * splits * 128 * 256, (size_t)tiles * 2))
		return SF_ERR_CUDA;
	const int units = tiles * splits;
	const int grid = units < sm_count() ? units : sm_count();
	if (SF_GEMM_WG_REDUCE && splits > 1 && units <= grid) {
		/* spread reduction: needs every unit resident at once, which a cooperative launch guarantees */
		int spread = 1, Mi = M, Ni = N, Ki = K, si = splits;
		float *part = g_part;
		int *cnt = g_cnt;
#if SF_GEMM_TAILROWS
		void *args[] = { &ma, &mb, &mat, &C, &Mi, &Ni, &Ki, &si, &part, &cnt, &spread };
#else
		void *args[] = { &ma, &mb, &C, &Mi, &Ni, &Ki, &si, &part, &cnt, &spread };
#endif
		if (cudaLaunchCooperativeKernel((const void *)gemm_wgmma_kernel<kWgBN, kWgPersistent>, dim3(grid), dim3(kWgThreads),
						args, WgCfg<kWgBN>::kSmemBytes, stream) == cudaSuccess)
			return SF_OK;
		(void)cudaGetLastError(); /* not launchable cooperatively: the last-unit reduction instead */
	}
	return launch_persistent<kWgBN>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, splits, units, stream);
}

/* The version-3 host plan (struct V3Plan, v3_width_cost, v3_plan): gemm_bf16_sm90_v3plan.cuh. */

/* Clusters of s CTAs of gemm_wgmma_kernel<BN, sfgemm::kWgSplitCluster> resident at once (cached; 0: not launchable). */
template <int BN> int v3_max_clusters_bn(int s)
{
	static int cache[sfgemm::kWgMaxCluster + 1];
	if (s < 2 || s > sfgemm::kWgMaxCluster)
		return 0;
	if (cache[s] == 0) {
		cache[s] = -1;
		if (!wg_attr<BN, sfgemm::kWgSplitCluster>()) {
			cudaLaunchAttribute at[1];
			const cudaLaunchConfig_t cfg = sfgemm::cluster_launch_config(at, s * sm_count(), sfgemm::kWgThreads,
										   sfgemm::WgCfg<BN>::kSmemBytes, s, 0);
			int n = 0;
			if (cudaOccupancyMaxActiveClusters(&n, (void *)sfgemm::gemm_wgmma_kernel<BN, sfgemm::kWgSplitCluster>, &cfg) == cudaSuccess &&
			    n > 0)
				cache[s] = n;
			else
				(void)cudaGetLastError();
		}
	}
	return cache[s] > 0 ? cache[s] : 0;
}

/* Clusters of 2 of gemm_wgmma_kernel<BN, kWgPairMulticast> resident at once (cached; 0: not launchable). */
template <int BN> int v3_pair_clusters_bn(void)
{
	static int cache;
	if (cache == 0) {
		cache = -1;
		if (!wg_attr<BN, sfgemm::kWgPairMulticast>()) {
			cudaLaunchAttribute at[1];
			const cudaLaunchConfig_t cfg = sfgemm::cluster_launch_config(at, 2 * sm_count(), sfgemm::kWgThreads,
										   sfgemm::WgCfg<BN>::kSmemBytes, 2, 0);
			int n = 0;
			if (cudaOccupancyMaxActiveClusters(&n, (void *)sfgemm::gemm_wgmma_kernel<BN, sfgemm::kWgPairMulticast>, &cfg) ==
				    cudaSuccess &&
			    n > 0)
				cache = n;
			else
				(void)cudaGetLastError();
		}
	}
	return cache > 0 ? cache : 0;
}

int v3_pair_clusters(int bn)
{
	return bn == 256 ? v3_pair_clusters_bn<256>() : (bn == 192 ? v3_pair_clusters_bn<192>() : 0);
}

/* Persistent clusters of 2 CTAs sharing B (gemm_wgmma_kernel<BN, kWgPairMulticast>); mb's box is BN / 2 rows. */
template <int BN>
int launch_pair(const CUtensorMap &ma, const CUtensorMap &mb SF_GEMM_TAIL_P, __nv_bfloat16 *C, int M, int N, int K,
		cudaStream_t stream)
{
	const int pu = ((M + 127) / 128 + 1) / 2 * ((N + BN - 1) / BN), slots = v3_pair_clusters(BN);
	if (slots < 1 || wg_attr<BN, sfgemm::kWgPairMulticast>())
		return SF_ERR_CUDA;
	cudaLaunchAttribute at[1];
	const cudaLaunchConfig_t cfg = sfgemm::cluster_launch_config(at, 2 * (pu < slots ? pu : slots), sfgemm::kWgThreads,
								   sfgemm::WgCfg<BN>::kSmemBytes, 2, stream);
	float *no_part = nullptr;
	int *no_cnt = nullptr;
	if (cudaLaunchKernelEx(&cfg, sfgemm::gemm_wgmma_kernel<BN, sfgemm::kWgPairMulticast>, ma, mb SF_GEMM_TAIL_A, C, M, N, K, 1, no_part,
			       no_cnt, 0) != cudaSuccess) {
		(void)cudaGetLastError();
		return SF_ERR_CUDA;
	}
	return SF_OK;
}

int v3_max_clusters(int bn, int s)
{
#if SF_GEMM_V6 /* v6 also plans 128 x 192 clusters (v3_plan never asks for them) */
	if (bn == 192)
		return v3_max_clusters_bn<192>(s);
#endif
	return bn == 256 ? v3_max_clusters_bn<256>(s) : (bn == 128 ? v3_max_clusters_bn<128>(s) : 0);
}

/* One cluster of `splits` CTAs per 128 x BN tile (gemm_wgmma_kernel<BN, sfgemm::kWgSplitCluster>); SF_OK or an error. */
template <int BN>
int launch_cluster(const CUtensorMap &ma, const CUtensorMap &mb SF_GEMM_TAIL_P, __nv_bfloat16 *C, int M, int N, int K,
		   int splits, cudaStream_t stream)
{
	if (wg_attr<BN, sfgemm::kWgSplitCluster>())
		return SF_ERR_CUDA;
	const int tiles = ((M + 127) / 128) * ((N + BN - 1) / BN);
	cudaLaunchAttribute at[1];
	const cudaLaunchConfig_t cfg = sfgemm::cluster_launch_config(at, tiles * splits, sfgemm::kWgThreads,
								   sfgemm::WgCfg<BN>::kSmemBytes, splits, stream);
	float *no_part = nullptr;
	int *no_cnt = nullptr;
	if (cudaLaunchKernelEx(&cfg, sfgemm::gemm_wgmma_kernel<BN, sfgemm::kWgSplitCluster>, ma, mb SF_GEMM_TAIL_A, C, M, N, K, splits,
			       no_part, no_cnt, 0) !=
	    cudaSuccess) {
		(void)cudaGetLastError();
		return SF_ERR_CUDA;
	}
	return SF_OK;
}

/* The v3 wgmma path: v3_plan, then the persistent or the cluster kernel of the planned width; v2's
 * launch where the plan says so or a cluster launch is refused. */
/* SF_GEMM_V3_TRACE (dev builds of tools/gpu_gemm.sh only): one stderr line per new (M, N, K) saying which
 * plan ran, so that a silent fallback to v2 shows in the log. */
void v3_trace(int M, int N, int K, V3Plan p, const char *what)
{
#if SF_GEMM_V3_TRACE
	static int last[3];
	if (!trace_new_shape(last, M, N, K))
		return;
	fprintf(stderr, "v3 plan %dx%d M=%d: bn %d splits %d cluster %d pair %d: %s\n", N, K, M, p.bn, p.splits, p.cluster,
		p.pair, what);
#else
	(void)M, (void)N, (void)K, (void)p, (void)what;
#endif
}

int launch_v3(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K,
	      cudaStream_t stream)
{
	const V3Plan p = v3_plan(M, N, K, sm_count(), v3_max_clusters, SF_GEMM_V3_BN, SF_GEMM_V3_SPLIT_BN,
				 SF_GEMM_V3_CLUSTER, SF_GEMM_V3_PAIR ? v3_pair_clusters : nullptr);
#if SF_GEMM_COOP256 /* version 9 (gemm_bf16_sm90_hooks.cuh) */
	if (coop_hook(A, B, C, M, N, K, p, stream))
		return SF_OK;
#endif
	if (p.splits == 0) {
		v3_trace(M, N, K, p, "v2 split-K");
		return launch_wgmma(A, B, C, M, N, K, stream);
	}
	CUtensorMap ma, mb SF_GEMM_TAIL_A;
	if (SF_MAKE_A(A, M, K) || make_map(&mb, B, N, K, p.pair ? p.bn / 2 : p.bn)) {
		v3_trace(M, N, K, p, "FALLBACK mma.sync (no TMA map)");
		return launch_mma(A, B, C, M, N, K, stream);
	}
#if SF_GEMM_MCAST /* version 8 (gemm_bf16_sm90_hooks.cuh) */
	if (mcast_hook(ma, B, C, M, N, K, p, stream))
		return SF_OK;
#endif
	if (p.pair || p.cluster) {
		int rc;
		if (p.pair)
			rc = p.bn == 256 ? launch_pair<256>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, stream)
					 : launch_pair<192>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, stream);
		else
			rc = p.bn == 256 ? launch_cluster<256>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, p.splits, stream)
					 : launch_cluster<128>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, p.splits, stream);
		v3_trace(M, N, K, p, rc == SF_OK ? "launched" : "FALLBACK v2 (cluster launch refused)");
		return rc == SF_OK ? SF_OK : launch_wgmma(A, B, C, M, N, K, stream);
	}
	v3_trace(M, N, K, p, "launched");
	const int units = ((M + 127) / 128) * ((N + p.bn - 1) / p.bn);
	if (p.bn == 256)
		return launch_persistent<256>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, 1, units, stream);
	if (p.bn == 192)
		return launch_persistent<192>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, 1, units, stream);
	return launch_persistent<128>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, 1, units, stream);
}


#if SF_GEMM_V6
/* The v6 mid-M path (GEMM_NOTES.md "Version 6"): v6_plan, then the persistent (unsplit) or the cluster
 * split-K wgmma kernel of the planned width, or v2's launch when the plan says so, a TMA descriptor cannot
 * be made or a cluster launch is refused (SF_GEMM_V6_TRACE says which ran and the predicted time). */
int launch_v6(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K,
	      cudaStream_t stream)
{
	using namespace sfgemm;
	/* the last 8 plans, keyed on the shape: the plan is host work that an idle GPU waits for */
	static struct {
		int M, N, K;
		V6Plan p;
	} cache[8];
	static int used = 0, next = 0;
	int hit = -1;
	for (int i = 0; i < used && hit < 0; i++)
		if (cache[i].M == M && cache[i].N == N && cache[i].K == K)
			hit = i;
	if (hit < 0) {
		hit = next;
		cache[hit].M = M;
		cache[hit].N = N;
		cache[hit].K = K;
		cache[hit].p = v6_plan(M, N, K, sm_count(), v3_max_clusters, SF_GEMM_V6_PIN_BN, SF_GEMM_V6_PIN_MODE,
				       SF_GEMM_V6_BN96);
		next = (next + 1) % 8;
		used = used < 8 ? used + 1 : 8;
	}
	const V6Plan p = cache[hit].p;
	int rc = -1;
	CUtensorMap ma, mb SF_GEMM_TAIL_A;
	if (p.mode != kV6GlobalSplit && !SF_MAKE_A(A, M, K) && !make_map(&mb, B, N, K, p.bn)) {
		const int tiles = ((M + 127) / 128) * ((N + p.bn - 1) / p.bn);
#if SF_GEMM_V6_BN96 /* version 17: 128 x 96 persistent tiles (GEMM_NOTES_MID_M2.md "Version 17") */
		if (p.mode == kV6Persistent && p.bn == 96)
			rc = launch_persistent<96>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, 1, tiles, stream);
		else
#endif
		if (p.mode == kV6Persistent)
			rc = p.bn == 256   ? launch_persistent<256>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, 1, tiles, stream)
			     : p.bn == 192 ? launch_persistent<192>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, 1, tiles, stream)
					   : launch_persistent<128>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, 1, tiles, stream);
		else
			rc = p.bn == 256   ? launch_cluster<256>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, p.splits, stream)
			     : p.bn == 192 ? launch_cluster<192>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, p.splits, stream)
					   : launch_cluster<128>(ma, mb SF_GEMM_TAIL_A, C, M, N, K, p.splits, stream);
	}
#if SF_GEMM_V6_TRACE
	static int last[3];
	if (trace_new_shape(last, M, N, K)) {
		fprintf(stderr, "v6 plan %dx%d M=%d: bn %d splits %d mode %s ctas %d predicted %.1f us: %s\n", N, K, M, p.bn,
			p.splits, p.mode == kV6Persistent ? "persistent" : (p.mode == kV6Cluster ? "cluster" : "v2"), p.ctas, p.us,
			p.mode == kV6GlobalSplit ? "v2 split-K" : (rc == SF_OK ? "launched" : "FALLBACK v2"));
	}
#endif
	return rc == SF_OK ? SF_OK : launch_wgmma(A, B, C, M, N, K, stream);
}
#endif

#include "gemm_bf16_sm90_midm_host.cuh" /* the mid-M paths' host code (v4, v13 half bands, launch_midm) */

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
#if SF_GEMM_SMALLM_V == 2 /* version 5 (launch_small5: gemm_bf16_sm90_hooks.cuh) */
	if (fast && M <= 16 && M <= kSmallMaxM)
		return launch_small5(A, B, C, (int)M, (int)N, (int)K, stream);
#endif
#if SF_GEMM_MIDM && SF_GEMM_SM16_MIDM
	/* session 16 (default since its third call): M 9..16 on the multi-wave weights (more 128-row bands than SMs:
	 * 28672 x 4096) through the mid-M path (v4's two-CTA plan, 32-token tile, M-row activation box) instead of
	 * gemm_smallm_kernel<2, U>, whose A reloads throttle the LSU there (GEMM_NOTES_MID_M2.md "M 9-16 on the mid-M
	 * path") */
	if (fast && SF_GEMM_LARGE == 2 && M > 8 && M <= 16 && M <= kSmallMaxM && midm_bands((int)N) > sm_count())
		return launch_midm(A, B, C, (int)M, (int)N, (int)K, stream);
#endif
	if (fast && M <= kSmallMaxM && M <= 64)
		return launch_small(A, B, C, (int)M, (int)N, (int)K, stream);
#if SF_GEMM_MIDM
	if (fast && SF_GEMM_LARGE == 2 && midm_takes((int)M, (int)N))
		return launch_midm(A, B, C, (int)M, (int)N, (int)K, stream);
#if SF_GEMM_MIDM_HB
	if (fast && SF_GEMM_LARGE == 2 && midm_tt_top_takes((int)M, (int)N, (int)K))
		return launch_midm(A, B, C, (int)M, (int)N, (int)K, stream);
#endif
#endif
#if SF_GEMM_V6
	if (fast && SF_GEMM_LARGE == 2 && M >= SF_GEMM_V6_MIN_M && M <= SF_GEMM_V6_MAX_M)
		return launch_v6(A, B, C, (int)M, (int)N, (int)K, stream);
#endif
#if SF_GEMM_PINGPONG
	if (fast && SF_GEMM_LARGE == 2 && M >= SF_GEMM_PP_MIN_M)
		return launch_pp<SF_GEMM_PP_WM>(A, B, C, (int)M, (int)N, (int)K, stream);
#endif
	if (fast && SF_GEMM_LARGE == 2 && SF_GEMM_V3)
		return launch_v3(A, B, C, (int)M, (int)N, (int)K, stream);
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
