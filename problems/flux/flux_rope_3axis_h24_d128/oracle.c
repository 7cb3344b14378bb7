/*
 * Oracle of flux_rope_3axis_h24_d128: FLUX.1-dev 3-axis RoPE on q and k (apply_rope with the pe of
 * EmbedND(theta, axes_dim (16, 56, 56))).
 *
 * Inputs (definition order): 0 q [B, H, S, D] bfloat16, 1 k [B, H, S, D] bfloat16, 2 ids [S, 3]
 * float32, 3 theta (scalar). Outputs: 0 q_out, 1 k_out [B, H, S, D].
 * D = 128 = 64 interleaved pairs (x[2p], x[2p+1]). Pairs 0..7 belong to axis 0 (dim 16), 8..35 to
 * axis 1 (dim 56), 36..63 to axis 2 (dim 56); pair j of an axis of dim d has omega = 1 / theta^(2j/d)
 * and angle = ids[s, axis] * omega, all in double (Flux computes them in float64). The pair is
 * multiplied by [[cos, -sin], [sin, cos]]. One item per (b, h, s, pair): it writes that pair of
 * q_out and of k_out.
 *
 * SF_ORACLE_GEN fills ids: the txt_len text tokens first with (0, 0, 0), then the img_h x img_w
 * image tokens in row-major order with (0, row, col), as the Flux pipelines build txt_ids and
 * img_ids and concatenate them. It is deterministic (no draw), so every seed gives valid ids.
 */
#include <math.h>
#include <stdio.h>
#include "solforge/oracle.h"

SF_ORACLE_AXES("batch_size", "num_heads", "seq_len", "head_dim", "txt_len", "img_h", "img_w");

/* Which position axis (0, 1, 2) rotates pair p, and that pair's omega = 1 / theta^(2j / dim). */
static SF_HD inline int flux_rope_axis_of_pair(int64_t p)
{
	return p < 8 ? 0 : (p < 36 ? 1 : 2);
}

static SF_HD inline double flux_rope_omega(int64_t p, double theta)
{
	int64_t j, dim;
	if (p < 8) {
		j = p;
		dim = 16;
	} else if (p < 36) {
		j = p - 8;
		dim = 56;
	} else {
		j = p - 36;
		dim = 56;
	}
	return 1.0 / pow(theta, (double)(2 * j) / (double)dim);
}

SF_ORACLE_ITEMS(c)
{
	return c->axis[0] * c->axis[1] * c->axis[2] * (c->axis[3] / 2); /* B * H * S * pairs */
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t S = c->axis[2], P = c->axis[3] / 2;
	const int64_t p = item % P;
	const int64_t row = item / P; /* (b * H + h) * S + s */
	const int64_t s = row % S;
	const double pos = sf_in(c, 2, s * 3 + flux_rope_axis_of_pair(p));
	const double angle = pos * flux_rope_omega(p, c->scalar[3]);
	const double cs = cos(angle), sn = sin(angle);
	const int64_t i0 = item * 2; /* == row * D + 2 * p */
	for (int k = 0; k < 2; k++) {
		const double x0 = sf_in(c, k, i0), x1 = sf_in(c, k, i0 + 1);
		sf_out_set(c, k, i0, cs * x0 - sn * x1);
		sf_out_set(c, k, i0 + 1, sn * x0 + cs * x1);
	}
}

SF_ORACLE_GEN(g)
{
	if (!g->is_custom[2])
		return 0;
	const int64_t S = g->c.axis[2], txt = g->c.axis[4], ih = g->c.axis[5], iw = g->c.axis[6];
	if (txt < 0 || ih < 0 || iw < 0 || txt + ih * iw != S || g->c.in[2].numel != S * 3) {
		snprintf(g->err, sizeof g->err,
			 "ids: seq_len %lld must equal txt_len %lld + img_h %lld * img_w %lld and ids hold seq_len*3 (%lld)",
			 (long long)S, (long long)txt, (long long)ih, (long long)iw, (long long)g->c.in[2].numel);
		return -1;
	}
	void *ids = g->c.in[2].data;
	const sf_dt dt = (sf_dt)g->c.in[2].dt;
	for (int64_t s = 0; s < S; s++) {
		double row = 0.0, col = 0.0;
		if (s >= txt) {
			row = (double)((s - txt) / iw);
			col = (double)((s - txt) % iw);
		}
		sf_store(ids, dt, s * 3 + 0, 0.0);
		sf_store(ids, dt, s * 3 + 1, row);
		sf_store(ids, dt, s * 3 + 2, col);
	}
	return 0;
}
