/*
 * fast.cu - the split-KV GQA paged decode of problems/common/kernels/gqa_paged_decode_sm90.cu (one
 * source for page sizes 1 and 16; notes in problems/llama/DECODE_NOTES.md, measurements in ATTN_NOTES.md).
 */
#include "../../../common/kernels/gqa_paged_decode_sm90.cu"
