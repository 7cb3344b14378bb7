/*
 * v10_compile.cu - compile-only check of the version-10 GEMM kernel (problems/common/kernels/gemm_bf16_sm90_v10.cuh,
 * candidate SF_GEMM_V10=1): instantiates the widths 256 (double-buffered epilogue, 4 TMA stores per tile) and 192
 * (single-buffered, 3) so that tests/suites/gemm_fragments.sh can build them for sm_90a with every warning an error
 * and ptxas -warn-spills, without the whole gemm_bf16_sm90.cu, and count 7 UTMASTG in the SASS. The default build
 * never compiles this kernel; the GPU run (tools/gpu_gemm.sh, candidates v10 / v10r) checks results.
 */
/* the parameter list of before version 15 (no tail map): version 15's (the default since session 14) is tailrows_compile.cu's */
#define SF_GEMM_TAILROWS 0
#include "gemm_bf16_sm90_v10.cuh"

template __global__ void sfgemm::gemm_v10_kernel<256>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
						      const __grid_constant__ CUtensorMap, __nv_bfloat16 *__restrict__, int,
						      int, int);
template __global__ void sfgemm::gemm_v10_kernel<192>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
						      const __grid_constant__ CUtensorMap, __nv_bfloat16 *__restrict__, int,
						      int, int);
