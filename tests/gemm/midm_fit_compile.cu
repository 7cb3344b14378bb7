/*
 * midm_fit_compile.cu - compile-only check of the version-16 candidate (SF_GEMM_MIDM_FIT=2, GEMM_NOTES_MID_M2.md
 * "Version 16"): the half-band mid-M kernel (problems/common/kernels/gemm_bf16_sm90_midm.cuh) at two exact-fit token
 * tiles, NT 144 (each consumer a wgmma m64n72k16: FIT 1's tile at M 129-144) and NT 80 (m64n40k16: FIT 2's token-tile
 * plan at M 129-160), with FIT 2's token-tile parameter, so that tests/suites/gemm_fragments.sh builds them for sm_90a
 * with every warning an error and ptxas -warn-spills (both reported, no spill, no wgmma serialization warning C7520; no
 * SASS count: none was available to check one against when this was written). FIT 2 is the default since session 15
 * (GEMM_NOTES_MID_M2.md "Version 16 measured"); the GPU run (tools/gpu_gemm.sh) checks results.
 */
#define SF_GEMM_MIDM_FIT 2
#include "gemm_bf16_sm90_midm.cuh"

#define SF_FIT_MAP const __grid_constant__ CUtensorMap
#if SF_GEMM_MIDM_TMA
#define SF_FIT_TMA SF_FIT_MAP, int,
#else
#define SF_FIT_TMA
#endif
template __global__ void sfgemm::gemm_midm_kernel<144, 1, 1>(SF_FIT_MAP, SF_FIT_MAP, SF_FIT_TMA __nv_bfloat16 *__restrict__,
							     int, int, int, int, int);
template __global__ void sfgemm::gemm_midm_kernel<80, 1, 1>(SF_FIT_MAP, SF_FIT_MAP, SF_FIT_TMA __nv_bfloat16 *__restrict__,
							    int, int, int, int, int);
