/*
 * Oracle of gemma_rmsnorm_h5376: Gemma-3 RMSNorm with (1 + weight) scaling (HF Gemma3RMSNorm).
 *
 * Inputs (definition order): 0 hidden_states [T, H] bfloat16, 1 weight [H] bfloat16, 2 eps (scalar).
 * Output: 0 output [T, H].
 * y[t, j] = x[t, j] / sqrt(mean_j(x[t, j]^2) + eps) * (1 + w[j]), all in double; the reference
 * buffer is float32 and the candidate's single bf16 rounding is what the tolerance allows for.
 * One item per row (token): two passes over the row, nothing buffered.
 */
#include <math.h>
#include "solforge/oracle.h"

SF_ORACLE_AXES("num_tokens", "hidden_size");

SF_ORACLE_ITEMS(c)
{
	return c->axis[0]; /* one row per token */
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t H = c->axis[1];
	const int64_t row = item * H;
	const double eps = c->scalar[2];
	double sumsq = 0.0;
	for (int64_t j = 0; j < H; j++) {
		const double v = sf_in(c, 0, row + j);
		sumsq += v * v;
	}
	const double inv_rms = 1.0 / sqrt(sumsq / (double)H + eps);
	for (int64_t j = 0; j < H; j++)
		sf_out_set(c, 0, row + j, sf_in(c, 0, row + j) * inv_rms * (1.0 + sf_in(c, 1, j)));
}
