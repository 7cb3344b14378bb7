/*
 * oracle.c - gemm_fp8_blockscale_n7168_k2048: DeepSeek-V3 shared-expert down projection as a block-scaled
 * fp8 GEMM (DeepGEMM semantics, 1x128 activation scales, 128x128 weight scales):
 *     C[m, n] = sum_kb (sum_{k in block kb} A[m, k] * B[n, k]) * A_scale[m, kb] * B_scale[n / 128, kb]
 * One item per output element, accumulated in double; the reference keeps C unrounded (float32 buffer).
 */
#include "solforge/oracle.h"

SF_ORACLE_AXES("M", "N", "K");

enum { FBG_A = 0, FBG_AS, FBG_B, FBG_BS };

SF_ORACLE_ITEMS(c)
{
	return c->axis[0] * c->axis[1];
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t N = c->axis[1], K = c->axis[2], KB = K / 128;
	const int64_t m = item / N, n = item % N;
	double acc = 0.0;
	for (int64_t kb = 0; kb < KB; kb++) {
		double blk = 0.0; /* exact: 128 products of two e4m3 values fit in double */
		for (int64_t k = kb * 128; k < kb * 128 + 128; k++)
			blk += sf_in(c, FBG_A, m * K + k) * sf_in(c, FBG_B, n * K + k);
		acc += blk * sf_in(c, FBG_AS, m * KB + kb) * sf_in(c, FBG_BS, (n / 128) * KB + kb);
	}
	sf_out_set(c, 0, item, acc);
}
