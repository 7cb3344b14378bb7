/*
 * midm_tp_compile.cu - compile-only check of the version-14 candidate kernel of the mid-M path
 * (problems/common/kernels/gemm_bf16_sm90_midm_tp.cuh, SF_GEMM_MIDM_TP=1, GEMM_NOTES_MID_M.md "Version 14"): token
 * pairs, clusters of 2 CTAs per 64-row weight half band sharing the weight tile by TMA multicast, each CTA one token
 * half and the whole K. Instantiates its one token tile (NT 128) so that tests/suites/gemm_fragments.sh builds it for
 * sm_90a with every warning an error and ptxas -warn-spills, and counts 1 UTMALDG.2D.MULTICAST in the SASS (the own
 * weight half of each stage; the activation load is not multicast). The default build does not compile this kernel;
 * the GPU run (tools/gpu_gemm.sh, candidate v14) checks results.
 */
#define SF_GEMM_MIDM_TP 1
#include "gemm_bf16_sm90_midm_tp.cuh"

/* with SF_GEMM_MIDM_XROWS (the default since session 13) the kernel takes rank 1's activation map as well */
template __global__ void sfgemm::gemm_midm_tp_kernel<128>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
#if SF_GEMM_MIDM_XROWS
							  const __grid_constant__ CUtensorMap,
#endif
							  __nv_bfloat16 *__restrict__, int, int, int);
