/*
 * pingpong_compile.cu - compile-only check of the ping-pong GEMM kernel (problems/common/kernels/
 * gemm_bf16_sm90_pingpong.cuh, candidate SF_GEMM_PINGPONG=1): instantiates both consumer tile heights
 * (128 x 128 and 64 x 256) so that tests/suites/gemm_fragments.sh can build them for sm_90a with every
 * warning an error and ptxas -warn-spills, in ~2 s, without the whole gemm_bf16_sm90.cu. The default
 * build never compiles this kernel; the GPU run (tools/gpu_gemm.sh, candidates pp / pp64) checks results.
 */
#include "gemm_bf16_sm90_pingpong.cuh"

template __global__ void sfgemm::gemm_pingpong_kernel<128>(const __grid_constant__ CUtensorMap,
							   const __grid_constant__ CUtensorMap,
							   __nv_bfloat16 *__restrict__, int, int, int);
template __global__ void sfgemm::gemm_pingpong_kernel<64>(const __grid_constant__ CUtensorMap,
							  const __grid_constant__ CUtensorMap,
							  __nv_bfloat16 *__restrict__, int, int, int);
