/*
 * smallm16_compile.cu - compile-only check of the M 9..16 kernel of the small-M path
 * (problems/common/kernels/gemm_bf16_sm90_smallm.cuh, SF_GEMM_SM16=1, the default since session 12 where its
 * grid is one wave; GEMM_NOTES_MID_M.md "M 9-16 measured"): instantiates batch depths U = 4 (what launch_small launches with SF_GEMM_SM_U = 8) and U = 2 so
 * that tests/suites/gemm_fragments.sh builds them for sm_90a with every warning an error and ptxas -warn-spills
 * (two blocks per SM: at most 128 registers), U = 2 being an instance the default build does not have; the
 * index math is emulated in tools/gemm_dev/emulate_fragments.py (smallm16) and the GPU run (tools/gpu_gemm.sh,
 * s16 / its control s16o) checks results.
 */
#define SF_GEMM_SM16 1
#include "gemm_bf16_sm90_smallm.cuh"

template __global__ void sfgemm::gemm_smallm16_kernel<4>(const __nv_bfloat16 *__restrict__, const __nv_bfloat16 *__restrict__,
							 __nv_bfloat16 *__restrict__, int, int, int);
template __global__ void sfgemm::gemm_smallm16_kernel<2>(const __nv_bfloat16 *__restrict__, const __nv_bfloat16 *__restrict__,
							 __nv_bfloat16 *__restrict__, int, int, int);
