/*
 * smallm16_compile.cu - compile-only check of the M 9..16 candidate kernel of the small-M path
 * (problems/common/kernels/gemm_bf16_sm90_smallm.cuh with SF_GEMM_SM16=1, GEMM_NOTES_MID_M.md "M 9-16
 * candidate"): instantiates batch depths U = 4 (what launch_small launches with SF_GEMM_SM_U = 8) and U = 2 so
 * that tests/suites/gemm_fragments.sh builds them for sm_90a with every warning an error and ptxas -warn-spills
 * (two blocks per SM: at most 128 registers). The default build does not compile this kernel; the index math is
 * emulated in tools/gemm_dev/emulate_fragments.py (smallm16) and the GPU run (tools/gpu_gemm.sh, candidate s16)
 * checks results.
 */
#define SF_GEMM_SM16 1
#include "gemm_bf16_sm90_smallm.cuh"

template __global__ void sfgemm::gemm_smallm16_kernel<4>(const __nv_bfloat16 *__restrict__, const __nv_bfloat16 *__restrict__,
							 __nv_bfloat16 *__restrict__, int, int, int);
template __global__ void sfgemm::gemm_smallm16_kernel<2>(const __nv_bfloat16 *__restrict__, const __nv_bfloat16 *__restrict__,
							 __nv_bfloat16 *__restrict__, int, int, int);
