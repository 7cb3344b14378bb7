/*
 * Oracle of rmsnorm_h4096: Llama-3.1-8B's LlamaRMSNorm (input_layernorm, post_attention_layernorm,
 * model.norm) on hidden_size 4096, following the definition's reference step by step:
 *
 *     variance = mean(x^2)                    (HF: float32; here double)
 *     n        = bf16(x * rsqrt(variance + eps))   HF casts the normalized value back to bf16 ...
 *     output   = weight * n                   ... before multiplying by the bf16 weight
 *
 * One item per row (token), two passes over it: the sum of squares, then the outputs. The product
 * weight * n of two bf16 values is exact in float32, so the reference keeps it unrounded; the
 * candidate's final bf16 rounding (and an intermediate rounding that lands on the other side of a
 * tie-point) is what the workload tolerance allows for.
 *
 * Inputs: 0 hidden_states [batch_size, hidden_size] bf16, 1 weight [hidden_size] bf16, 2 eps
 * (float32 scalar). Output: 0 output [batch_size, hidden_size].
 */
#include <math.h>
#include "solforge/oracle.h"

SF_ORACLE_AXES("batch_size", "hidden_size");

SF_ORACLE_ITEMS(c)
{
	return c->axis[0];
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t H = c->axis[1];
	const int64_t row = item * H;
	const double eps = sf_round_f32(c->scalar[2]); /* eps is a float32 input */
	double sumsq = 0.0;
	for (int64_t h = 0; h < H; h++) {
		const double x = sf_in(c, 0, row + h);
		sumsq += x * x;
	}
	const double rstd = 1.0 / sqrt(sumsq / (double)H + eps);
	for (int64_t h = 0; h < H; h++) {
		const double n = sf_round_bf16(sf_in(c, 0, row + h) * rstd);
		sf_out_set(c, 0, row + h, sf_in(c, 1, h) * n);
	}
}
