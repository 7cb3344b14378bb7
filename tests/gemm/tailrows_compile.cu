/*
 * tailrows_compile.cu - compile-only check of the version-15 candidate (SF_GEMM_TAILROWS=1, GEMM_NOTES_MID_M.md
 * "Version 15"): the wgmma kernel (problems/common/kernels/gemm_bf16_sm90_wgmma.cuh) in each mode -- persistent
 * (v2 / v6, split or not) at width 256, cluster split-K at 128, pair multicast at 192 -- the version-10 kernel at 128
 * and v4's two-CTA mid-M kernel at NT 96 (80-register cap), each with the last token tile's A map (or the M-row
 * activation box), so that tests/suites/gemm_fragments.sh builds them for sm_90a with every warning an error and ptxas
 * -warn-spills, and counts 10 UTMALDG in the SASS: two per kernel as in the default build (the tail map is chosen by
 * address at the A load, not by a second TMA instruction). The default build compiles none of this; the GPU run
 * (tools/gpu_gemm.sh, candidate v15) checks results.
 */
#define SF_GEMM_TAILROWS 1
#include "gemm_bf16_sm90_v10.cuh"
#include "gemm_bf16_sm90_midm.cuh"
#if SF_GEMM_MIDM_FIT == 2 /* the default since session 15: version 16's token-tile count is one more parameter */
#define SF_MIDM_TT , int
#else
#define SF_MIDM_TT
#endif

#define SF_TR_MAP const __grid_constant__ CUtensorMap
template __global__ void sfgemm::gemm_wgmma_kernel<256, sfgemm::kWgPersistent>(SF_TR_MAP, SF_TR_MAP, SF_TR_MAP,
									     __nv_bfloat16 *__restrict__, int, int, int, int,
									     float *, int *, int);
template __global__ void sfgemm::gemm_wgmma_kernel<128, sfgemm::kWgSplitCluster>(SF_TR_MAP, SF_TR_MAP, SF_TR_MAP,
									       __nv_bfloat16 *__restrict__, int, int, int, int,
									       float *, int *, int);
template __global__ void sfgemm::gemm_wgmma_kernel<192, sfgemm::kWgPairMulticast>(SF_TR_MAP, SF_TR_MAP, SF_TR_MAP,
										__nv_bfloat16 *__restrict__, int, int, int, int,
										float *, int *, int);
template __global__ void sfgemm::gemm_v10_kernel<128>(SF_TR_MAP, SF_TR_MAP, SF_TR_MAP, SF_TR_MAP, __nv_bfloat16 *__restrict__,
						      int, int, int);
template __global__ void sfgemm::gemm_midm_kernel<96, 2>(SF_TR_MAP, SF_TR_MAP,
#if SF_GEMM_MIDM_TMA
							 SF_TR_MAP, int,
#endif
							 __nv_bfloat16 *__restrict__, int, int, int, int SF_MIDM_TT);
