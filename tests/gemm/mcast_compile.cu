/*
 * mcast_compile.cu - compile-only check of the version-8 clustered GEMM kernel (problems/common/kernels/
 * gemm_bf16_sm90_mcast.cuh, candidate SF_GEMM_MCAST=1): instantiates both tile widths (128 x 256 and
 * 128 x 192) so that tests/suites/gemm_fragments.sh can build them for sm_90a with every warning an error
 * and ptxas -warn-spills, without the whole gemm_bf16_sm90.cu. The default build never compiles this
 * kernel; the GPU run (tools/gpu_gemm.sh, candidates mc / mcr / mcn) checks results.
 */
#include "gemm_bf16_sm90_mcast.cuh"

template __global__ void sfgemm::gemm_mcast_kernel<256>(const __grid_constant__ CUtensorMap,
							const __grid_constant__ CUtensorMap,
							__nv_bfloat16 *__restrict__, int, int, int);
template __global__ void sfgemm::gemm_mcast_kernel<192>(const __grid_constant__ CUtensorMap,
							const __grid_constant__ CUtensorMap,
							__nv_bfloat16 *__restrict__, int, int, int);
