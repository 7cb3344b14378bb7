/*
 * fast.cu - from-scratch Hopper (sm_90a) solution of gemm_bf16_n4096_k14336: the shared GEMM of the four Llama-3.1-8B
 * linear problems, problems/common/kernels/gemm_bf16_sm90.cu (shape-generic; no shape is hard-coded).
 * Weight-streaming split-K kernel for M <= 64; above, cp.async + mma.sync (v1 default) or TMA + wgmma
 * warp-specialized persistent (-DSF_GEMM_LARGE=2).
 * The solution loader keys the compile cache on the included files too (src/core/solution.c).
 */
#include "../../../common/kernels/gemm_bf16_sm90.cu"
