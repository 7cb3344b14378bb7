/*
 * Oracle of causal_conv1d_silu_d4_mamba2: causal_conv1d_fn(x, weight, bias, activation="silu") with
 * no initial state, Mamba-2 2.7B (conv_dim 5376, d_conv 4).
 *
 * Inputs (definition order): 0 x [B, D, L] bfloat16, 1 weight [D, W] bfloat16, 2 bias [D] bfloat16.
 * Output: 0 y [B, D, L].
 * y[b, d, t] = silu(bias[d] + sum_{k<W} weight[d, k] * x[b, d, t - (W-1) + k]), x = 0 before t = 0,
 * in double; the reference buffer is float32 and the candidate's single bf16 rounding is what the
 * tolerance allows for. One item per output element.
 */
#include <math.h>
#include "solforge/oracle.h"

SF_ORACLE_AXES("batch_size", "conv_dim", "seq_len", "d_conv");

SF_ORACLE_ITEMS(c)
{
	return c->axis[0] * c->axis[1] * c->axis[2]; /* B * D * L outputs */
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t D = c->axis[1], L = c->axis[2], W = c->axis[3];
	const int64_t t = item % L;
	const int64_t row = item / L; /* b * D + d: start of the (b, d) sequence is row * L */
	const int64_t d = row % D;
	double acc = sf_in(c, 2, d);
	for (int64_t k = 0; k < W; k++) {
		const int64_t src = t - (W - 1) + k;
		if (src >= 0)
			acc += sf_in(c, 1, d * W + k) * sf_in(c, 0, row * L + src);
	}
	sf_out_set(c, 0, item, acc / (1.0 + exp(-acc)));
}
