/*
 * midm_tma_compile.cu - compile-only check of the version-11 epilogue of the v4 swap-AB mid-M kernel
 * (problems/common/kernels/gemm_bf16_sm90_midm.cuh with SF_GEMM_MIDM_TMA=1, GEMM_NOTES_MID_M.md "Version 11"):
 * instantiates NT 64 at one CTA per SM and NT 96 at two (the 80-register cap, the tightest) so that
 * tests/suites/gemm_fragments.sh builds them for sm_90a with every warning an error and ptxas -warn-spills, and
 * counts 4 UTMASTG in the SASS (the unsplit and the cluster store of each). The default build compiles the
 * kernel without this epilogue; the GPU run (tools/gpu_gemm.sh, candidate v11m) checks results.
 */
#define SF_GEMM_MIDM_TMA 1
#include "gemm_bf16_sm90_midm.cuh"
#if SF_GEMM_MIDM_FIT == 2 /* the default since session 15: version 16's token-tile count is one more parameter */
#define SF_MIDM_TT , int
#else
#define SF_MIDM_TT
#endif

template __global__ void sfgemm::gemm_midm_kernel<64, 1>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
							 const __grid_constant__ CUtensorMap, int, __nv_bfloat16 *__restrict__,
							 int, int, int, int SF_MIDM_TT);
template __global__ void sfgemm::gemm_midm_kernel<96, 2>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
							 const __grid_constant__ CUtensorMap, int, __nv_bfloat16 *__restrict__,
							 int, int, int, int SF_MIDM_TT);
