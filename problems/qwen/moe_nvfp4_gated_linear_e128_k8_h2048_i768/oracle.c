/*
 * oracle.c - moe_nvfp4_gated_linear_e128_k8_h2048_i768: Qwen3-30B-A3B MoE gate/up projection with SiLU
 * gating on NVFP4 operands, the intermediate re-quantized to NVFP4 for the down projection.
 *
 * Dequantization (all global scales are quantization-side scales, 448*6/amax, as FlashInfer passes them):
 *     xd[t, k]    = e2m1(x_fp4[t, k]) * e4m3(x_scale[t, k/16]) / x_global_scale
 *     wd[e, n, k] = e2m1(w_fp4[e, n, k]) * e4m3(w_scale[e, n, k/16]) / w_global_scale[e]
 * For token t, slot j, expert e = topk_ids[t, j], output column i < I:
 *     gate = sum_k xd[t, k] * wd[e, i, k],  up = sum_k xd[t, k] * wd[e, I + i, k]   (rows: gate, then up)
 *     h    = f32(silu(gate) * up),          silu(g) = g / (1 + exp(-g))
 * then h is quantized in 16-element blocks along i with out_global_scale, by the float32 recipe of
 * nvfp4_quantize_h2048 (s = gs*(amax*f32(1/6)), e4m3 RNE satfinite, out_scale = 1/(scale*(1/gs)),
 * e2m1 RNE satfinite).
 * One item per output block (t, j, b): 16 gate and 16 up dot products of length H, then one quantized
 * block. Dot products accumulate in double; the block sum of 16 e2m1 products is exact, as is its product
 * with the two e4m3 scales.
 */
#include <math.h>
#include <stdio.h>
#include "solforge/oracle.h"

SF_ORACLE_AXES("T", "E", "TOPK", "H", "I");

enum { MOG_X = 0, MOG_XS, MOG_XGS, MOG_IDS, MOG_W, MOG_WS, MOG_WGS, MOG_OGS };

SF_ORACLE_ITEMS(c)
{
	return c->axis[0] * c->axis[2] * (c->axis[4] / 16);
}

static SF_HD inline double mog_f32(double v)
{
	return (double)(float)v;
}

/* sum_k x_code*x_scale * w_code*w_scale over row `wrow` of expert e (without the global scales) */
static SF_HD inline double mog_dot(const sf_ocall *c, int64_t t, int64_t e, int64_t wrow)
{
	const int64_t H = c->axis[3], HB = H / 16, I2 = 2 * c->axis[4];
	const int64_t xrow = t * H, wr = (e * I2 + wrow) * H;
	double acc = 0.0;
	for (int64_t kb = 0; kb < HB; kb++) {
		double blk = 0.0;
		for (int64_t k = kb * 16; k < kb * 16 + 16; k++)
			blk += sf_in(c, MOG_X, xrow + k) * sf_in(c, MOG_W, wr + k);
		acc += blk * sf_in(c, MOG_XS, t * HB + kb) * sf_in(c, MOG_WS, (e * I2 + wrow) * HB + kb);
	}
	return acc;
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t E = c->axis[1], TOPK = c->axis[2], I = c->axis[4], IB = I / 16;
	const int64_t t = item / (TOPK * IB), j = (item / IB) % TOPK, b = item % IB;
	const int64_t orow = (t * TOPK + j) * I + b * 16;
	const int64_t e = (int64_t)sf_in(c, MOG_IDS, t * TOPK + j);
	if (e < 0 || e >= E) { /* invalid routing: make the reference unmistakably unusable */
		double nan = sf_bits_f64(0x7ff8000000000000ull);
		for (int i = 0; i < 16; i++)
			sf_out_set(c, 0, orow + i, nan);
		sf_out_set(c, 1, (t * TOPK + j) * IB + b, nan);
		return;
	}
	const double deq = mog_f32(c->scalar[MOG_XGS]) * sf_in(c, MOG_WGS, e);

	double h[16];
	double amax = 0.0;
	for (int i = 0; i < 16; i++) {
		double gate = mog_dot(c, t, e, b * 16 + i) / deq;
		double up = mog_dot(c, t, e, I + b * 16 + i) / deq;
		h[i] = mog_f32(gate / (1.0 + exp(-gate)) * up);
		double a = h[i] < 0 ? -h[i] : h[i];
		if (a > amax)
			amax = a;
	}

	/* NVFP4 quantization of the block, float32 recipe (see nvfp4_quantize_h2048) */
	const double gs = mog_f32(c->scalar[MOG_OGS]);
	double s = mog_f32(gs * mog_f32(amax * mog_f32(1.0 / 6.0)));
	double scale = sf_round_e4m3(s);
	double out_scale = scale == 0.0 ? 0.0 : mog_f32(1.0 / mog_f32(scale * mog_f32(1.0 / gs)));
	sf_out_set(c, 1, (t * TOPK + j) * IB + b, scale);
	for (int i = 0; i < 16; i++)
		sf_out_set(c, 0, orow + i, sf_round_e2m1(mog_f32(h[i] * out_scale)));
}

/* topk_ids: TOPK distinct experts per token, uniformly at random (partial Fisher-Yates shuffle). */
SF_ORACLE_GEN(g)
{
	const int64_t T = g->c.axis[0], E = g->c.axis[1], TOPK = g->c.axis[2];
	if (!g->is_custom[MOG_IDS])
		return 0;
	if (E > 4096 || TOPK > E) {
		snprintf(g->err, sizeof g->err, "topk_ids: need TOPK <= E <= 4096 (E=%lld, TOPK=%lld)", (long long)E,
			 (long long)TOPK);
		return -1;
	}
	int32_t perm[4096];
	const sf_otensor *ids = &g->c.in[MOG_IDS];
	for (int64_t t = 0; t < T; t++) {
		for (int64_t e = 0; e < E; e++)
			perm[e] = (int32_t)e;
		for (int64_t j = 0; j < TOPK; j++) {
			int64_t r = sf_rng_int(g->seed, 0x70e1d5u, (uint64_t)(t * TOPK + j), j, E);
			int32_t tmp = perm[j];
			perm[j] = perm[r];
			perm[r] = tmp;
			sf_store_int(ids->data, (sf_dt)ids->dt, t * TOPK + j, perm[j]);
		}
	}
	return 0;
}

/* Bytes: only the experts that some token selected are read (their fp4 weights, block scales and
 * global scale); FLOPs as in the definition. */
SF_ORACLE_WORK(c, w)
{
	const int64_t T = c->axis[0], E = c->axis[1], TOPK = c->axis[2], H = c->axis[3], I = c->axis[4];
	const int64_t HB = H / 16, IB = I / 16, I2 = 2 * I;
	unsigned char seen[4096];
	int64_t distinct = 0;
	for (int64_t e = 0; e < E && e < 4096; e++)
		seen[e] = 0;
	for (int64_t i = 0; i < T * TOPK; i++) {
		int64_t e = sf_load_int(c->in[MOG_IDS].data, (sf_dt)c->in[MOG_IDS].dt, i);
		if (e >= 0 && e < E && e < 4096 && !seen[e]) {
			seen[e] = 1;
			distinct++;
		}
	}
	for (int u = 0; u < SF_UNIT_COUNT; u++)
		w->flops[u] = 0.0;
	w->flops[SF_UNIT_FP8_TENSOR] = 2.0 * (double)T * (double)TOPK * (double)I2 * (double)H;
	w->flops[SF_UNIT_SFU] = (double)T * (double)TOPK * (double)I;
	w->flops[SF_UNIT_FP32] = 5.0 * (double)T * (double)TOPK * (double)I;
	w->bytes = (double)(T * H / 2 + T * HB + T * TOPK * 4)                   /* x_fp4, x_scale, topk_ids */
		   + (double)distinct * (double)(I2 * H / 2 + I2 * HB + 4)        /* selected experts */
		   + (double)(T * TOPK * I / 2 + T * TOPK * IB);                  /* out_fp4, out_scale */
}
