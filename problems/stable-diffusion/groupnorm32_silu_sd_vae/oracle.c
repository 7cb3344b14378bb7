/*
 * Oracle of groupnorm32_silu_sd_vae: GroupNorm(32, eps, affine) then SiLU, NCHW float16, as in the
 * SD 1.5 / SDXL VAE decoder (nn.GroupNorm followed by nn.SiLU, both on float16 tensors).
 *
 * Inputs (definition order): 0 x [N, C, H, W] float16, 1 gamma [C], 2 beta [C], 3 eps (scalar).
 * Output: 0 y [N, C, H, W].
 * Group g of sample n holds channels [g*C/G, (g+1)*C/G): mean and biased variance over its
 * C/G*H*W values (two passes, double). h = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c] is
 * rounded to float16 (GroupNorm's output tensor), then y = h * sigmoid(h) in double; the reference
 * buffer is float32 and the candidate's final float16 rounding is what the tolerance allows for.
 *
 * Item = one (n, c) channel plane: it recomputes its group's statistics (C/G times redundant work
 * across the group's channels) and writes the H*W outputs of that channel. That gives N*C
 * independent items (128..1024 GPU threads per sample) instead of N*32; threads of one warp read
 * the same group values at the same time, so the redundancy costs little memory traffic.
 */
#include <math.h>
#include "solforge/oracle.h"

SF_ORACLE_AXES("batch_size", "num_channels", "height", "width", "num_groups");

SF_ORACLE_ITEMS(c)
{
	return c->axis[0] * c->axis[1]; /* N * C channel planes */
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t C = c->axis[1], HW = c->axis[2] * c->axis[3], G = c->axis[4];
	const int64_t n = item / C, ch = item % C;
	const int64_t cpg = C / G;                /* channels per group */
	const int64_t grp_base = (n * C + (ch / cpg) * cpg) * HW;
	const int64_t cnt = cpg * HW;
	const double eps = c->scalar[3];

	double sum = 0.0;
	for (int64_t i = 0; i < cnt; i++)
		sum += sf_in(c, 0, grp_base + i);
	const double mean = sum / (double)cnt;
	double sq = 0.0;
	for (int64_t i = 0; i < cnt; i++) {
		const double d = sf_in(c, 0, grp_base + i) - mean;
		sq += d * d;
	}
	const double rstd = 1.0 / sqrt(sq / (double)cnt + eps);

	const double gamma = sf_in(c, 1, ch), beta = sf_in(c, 2, ch);
	const int64_t base = (n * C + ch) * HW;
	for (int64_t i = 0; i < HW; i++) {
		const double h = sf_round_f16((sf_in(c, 0, base + i) - mean) * rstd * gamma + beta);
		sf_out_set(c, 0, base + i, h / (1.0 + exp(-h)));
	}
}
