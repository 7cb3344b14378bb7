/*
 * Oracle of fused_add_rmsnorm_h4096: Llama-3.1-8B's residual add followed by LlamaRMSNorm on
 * hidden_size 4096 (the decoder layer's `residual + hidden_states` then post_attention_layernorm, or
 * the next layer's input_layernorm), destination-passing like vLLM's / FlashInfer's
 * fused_add_rmsnorm but with separate outputs instead of updating in place:
 *
 *     residual_out = bf16(hidden_states + residual)   the bf16 add of the model (one rounding)
 *     variance     = mean(residual_out^2)             (HF: float32; here double)
 *     n            = bf16(residual_out * rsqrt(variance + eps))
 *     output       = weight * n
 *
 * The norm reads the rounded residual_out, as the model does (the bf16 residual stream is what the
 * next layer adds to). residual_out is stored rounded: it is the exact value a correct kernel
 * writes. weight * n (two bf16 values) is exact in float32 and kept unrounded.
 *
 * One item per row (token), two passes: sum of squares, then the outputs (the sum is recomputed
 * rather than buffered). Inputs: 0 hidden_states [batch_size, hidden_size] bf16, 1 residual
 * [batch_size, hidden_size] bf16, 2 weight [hidden_size] bf16, 3 eps (float32 scalar).
 * Outputs: 0 output [batch_size, hidden_size], 1 residual_out [batch_size, hidden_size].
 */
#include <math.h>
#include "solforge/oracle.h"

SF_ORACLE_AXES("batch_size", "hidden_size");

SF_ORACLE_ITEMS(c)
{
	return c->axis[0];
}

/* residual_out element i: the sum of two bf16 values rounded once to bf16. */
static SF_HD double farms_sum(const sf_ocall *c, int64_t i)
{
	return sf_round_bf16(sf_in(c, 0, i) + sf_in(c, 1, i));
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t H = c->axis[1];
	const int64_t row = item * H;
	const double eps = sf_round_f32(c->scalar[3]); /* eps is a float32 input */
	double sumsq = 0.0;
	for (int64_t h = 0; h < H; h++) {
		const double s = farms_sum(c, row + h);
		sumsq += s * s;
	}
	const double rstd = 1.0 / sqrt(sumsq / (double)H + eps);
	for (int64_t h = 0; h < H; h++) {
		const double s = farms_sum(c, row + h);
		const double n = sf_round_bf16(s * rstd);
		sf_out_set(c, 0, row + h, sf_in(c, 2, h) * n);
		sf_out_set(c, 1, row + h, s);
	}
}
