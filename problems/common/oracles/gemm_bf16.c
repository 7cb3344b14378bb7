/*
 * gemm_bf16.c - the oracle of every bf16 linear problem y = x . W^T (problems/llama/gemm_bf16_*: the
 * Llama-3.1-8B qkv_proj, o_proj, gate_up_proj and down_proj shapes). N and K come from the axes, so one
 * source serves every shape.
 *
 * A [M, K] bfloat16 (activations), B [N, K] bfloat16 (the nn.Linear weight, out_features x
 * in_features), C [M, N]. One item per output element: the dot product of row m of A and row n of B,
 * accumulated in double (exact products of bf16 values, one rounding per add at 2^-53). The
 * reference buffer is float32, so the value kept is that sum rounded once to float32; the
 * candidate's bf16 rounding is what the workload tolerance allows for.
 */
#include "solforge/oracle.h"

SF_ORACLE_AXES("M", "N", "K");

SF_ORACLE_ITEMS(c)
{
	return c->axis[0] * c->axis[1]; /* M * N outputs */
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t N = c->axis[1], K = c->axis[2];
	const int64_t m = item / N, n = item % N;
	double acc = 0.0;
	for (int64_t k = 0; k < K; k++)
		acc += sf_in(c, 0, m * K + k) * sf_in(c, 1, n * K + k);
	sf_out_set(c, 0, item, acc);
}
