/*
 * fast.cu - the causal GQA paged prefill of problems/common/kernels/gqa_paged_prefill_sm90.cu (one
 * source for page sizes 1 and 16; notes in problems/llama/ATTN_NOTES.md).
 */
#include "../../../common/kernels/gqa_paged_prefill_sm90.cu"
