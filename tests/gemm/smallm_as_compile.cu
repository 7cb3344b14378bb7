/*
 * smallm_as_compile.cu - compile-only check of the M 9..16 candidate with A staged in shared memory
 * (problems/common/kernels/gemm_bf16_sm90_smallm_as.cuh, SF_GEMM_SM_ASMEM=1, default 0; GEMM_NOTES_MID_M2.md
 * "M 9-16: A staged in shared memory (candidate)"): instantiates batch depths U = 8 (what launch_small launches with
 * SF_GEMM_SM_U = 8) and U = 16 (SF_GEMM_SM_AS_U=16, 128 KB of B in flight per SM) so that tests/suites/gemm_fragments.sh
 * builds them for sm_90a with every warning an error and ptxas -warn-spills (one 512-thread block per SM: at most
 * 128 registers); the index math (staging, bank halves, tiles, reduction) is emulated in
 * tools/gemm_dev/emulate_fragments.py (smallm_as), and the GPU run (tools/gpu_gemm.sh, sm16a) checks results.
 */
#include "gemm_bf16_sm90_smallm_as.cuh"

template __global__ void sfgemm::gemm_smallm_as_kernel<8>(const __nv_bfloat16 *__restrict__, const __nv_bfloat16 *__restrict__,
							  __nv_bfloat16 *__restrict__, int, int, int);
template __global__ void sfgemm::gemm_smallm_as_kernel<16>(const __nv_bfloat16 *__restrict__, const __nv_bfloat16 *__restrict__,
							   __nv_bfloat16 *__restrict__, int, int, int);
