/*
 * midm_mc_compile.cu - compile-only check of the version-12 candidate kernel of the mid-M path
 * (problems/common/kernels/gemm_bf16_sm90_midm_mc.cuh, SF_GEMM_MIDM_MC=1, GEMM_NOTES_MID_M.md "Version 12"): band-pair
 * clusters sharing the activation tile by TMA multicast. Instantiates NT 64 and NT 128 (the launched token tiles of
 * the 4096 x 4096 M 64 / 128 plans) so that tests/suites/gemm_fragments.sh builds them for sm_90a with every warning an
 * error and ptxas -warn-spills, and counts 2 UTMALDG.2D.MULTICAST in the SASS (one activation half per stage in each).
 * The default build does not compile this kernel; the GPU run (tools/gpu_gemm.sh, candidate v12) checks results.
 */
#define SF_GEMM_MIDM_MC 1
#include "gemm_bf16_sm90_midm_mc.cuh"

template __global__ void sfgemm::gemm_midm_mc_kernel<64>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
							 __nv_bfloat16 *__restrict__, int, int, int, int);
template __global__ void sfgemm::gemm_midm_mc_kernel<128>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
							  __nv_bfloat16 *__restrict__, int, int, int, int);
