/*
 * coop_compile.cu - compile-only check of the version-9 GEMM kernel (problems/common/kernels/
 * gemm_bf16_sm90_coop.cuh, candidate SF_GEMM_COOP256=1 or 2): instantiates both tile shapes (256 x 128 and
 * 128 x 256, two m64n128k16 per consumer k16 step) so that tests/suites/gemm_fragments.sh can build them for
 * sm_90a with every warning an error and ptxas -warn-spills, without the whole gemm_bf16_sm90.cu. The
 * default build never compiles this kernel; the GPU run (tools/gpu_gemm.sh, candidates c256 / c256n)
 * checks results.
 */
#include "gemm_bf16_sm90_coop.cuh"

template __global__ void sfgemm::gemm_coop_kernel<256>(const __grid_constant__ CUtensorMap,
						       const __grid_constant__ CUtensorMap,
						       __nv_bfloat16 *__restrict__, int, int, int);
template __global__ void sfgemm::gemm_coop_kernel<128>(const __grid_constant__ CUtensorMap,
						       const __grid_constant__ CUtensorMap,
						       __nv_bfloat16 *__restrict__, int, int, int);
