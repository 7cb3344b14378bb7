/*
 * Oracle of flux_adaln_layernorm_modulate_h3072: FLUX.1-dev AdaLN-Zero modulation
 * y = LayerNorm(x) * (1 + scale) + shift (LayerNorm without affine).
 *
 * Inputs (definition order): 0 x [B, S, H] bfloat16, 1 shift [B, H] bfloat16, 2 scale [B, H]
 * bfloat16, 3 eps (scalar). Output: 0 y [B, S, H].
 * Per token: mean and biased variance over H (two passes, double), then
 * y = (x - mean) / sqrt(var + eps) * (1 + scale[b]) + shift[b] in double; the reference buffer is
 * float32 and the candidate's bf16 rounding is what the tolerance allows for. One item per token row.
 */
#include <math.h>
#include "solforge/oracle.h"

SF_ORACLE_AXES("batch_size", "seq_len", "hidden_size");

SF_ORACLE_ITEMS(c)
{
	return c->axis[0] * c->axis[1]; /* B * S token rows */
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t S = c->axis[1], H = c->axis[2];
	const int64_t b = item / S;
	const int64_t row = item * H;
	const double eps = c->scalar[3];
	double sum = 0.0;
	for (int64_t j = 0; j < H; j++)
		sum += sf_in(c, 0, row + j);
	const double mean = sum / (double)H;
	double sq = 0.0;
	for (int64_t j = 0; j < H; j++) {
		const double d = sf_in(c, 0, row + j) - mean;
		sq += d * d;
	}
	const double rstd = 1.0 / sqrt(sq / (double)H + eps);
	for (int64_t j = 0; j < H; j++) {
		const double xn = (sf_in(c, 0, row + j) - mean) * rstd;
		sf_out_set(c, 0, row + j, xn * (1.0 + sf_in(c, 2, b * H + j)) + sf_in(c, 1, b * H + j));
	}
}
