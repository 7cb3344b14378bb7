/* Unit tests of the moe_nvfp4_gated_linear_e128_k8_h2048_i768 oracle. */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

typedef struct mog_dims {
	int64_t T, E, TOPK, H, I;
} mog_dims;

/* Allocates every input and output (zeroed) for the given (small) sizes; the global scales are set by
 * the caller (w_global_scale defaults to 1). */
static void mog_setup(sf_ocall *c, mog_dims d, double x_gs, double out_gs)
{
	memset(c, 0, sizeof *c);
	const int64_t HB = d.H / 16, IB = d.I / 16, I2 = 2 * d.I;
	ot_input(c, MOG_X, SF_DT_E2M1, 2, (int64_t[]){d.T, d.H});
	ot_input(c, MOG_XS, SF_DT_E4M3, 2, (int64_t[]){d.T, HB});
	ot_scalar(c, MOG_XGS, x_gs);
	ot_input(c, MOG_IDS, SF_DT_I32, 2, (int64_t[]){d.T, d.TOPK});
	ot_input(c, MOG_W, SF_DT_E2M1, 3, (int64_t[]){d.E, I2, d.H});
	ot_input(c, MOG_WS, SF_DT_E4M3, 3, (int64_t[]){d.E, I2, HB});
	ot_input(c, MOG_WGS, SF_DT_F32, 1, (int64_t[]){d.E});
	ot_scalar(c, MOG_OGS, out_gs);
	ot_output(c, 0, SF_DT_F32, 3, (int64_t[]){d.T, d.TOPK, d.I});
	ot_output(c, 1, SF_DT_F32, 3, (int64_t[]){d.T, d.TOPK, IB});
	for (int64_t e = 0; e < d.E; e++)
		sf_store(c->in[MOG_WGS].data, SF_DT_F32, e, 1.0);
	c->axis[0] = d.T;
	c->axis[1] = d.E;
	c->axis[2] = d.TOPK;
	c->axis[3] = d.H;
	c->axis[4] = d.I;
	c->n_axis = 5;
}

static void mog_set(sf_ocall *c, int k, int64_t i, double v)
{
	sf_store(c->in[k].data, (sf_dt)c->in[k].dt, i, v);
}

static double mog_q(const sf_ocall *c, int64_t i)
{
	return sf_load(c->out[0].data, SF_DT_F32, i);
}

static double mog_s(const sf_ocall *c, int64_t i)
{
	return sf_load(c->out[1].data, SF_DT_F32, i);
}

SF_TEST(moe_nvfp4_gl_silu_and_quant_by_hand)
{
	/* T=1, E=2, TOPK=1 (expert 1), H=16, I=16, all scales 1. x codes all 1.0; expert 1 has a single
	 * non-zero weight per row, at k=0: gate rows g = {2, 1, -1, 2, 0...}, up rows u = {3, 1, 2, -1, 0...},
	 * so gate_i = g_i, up_i = u_i (sum over k of 1 * w[i,k]).
	 *   h0 = silu(2)*3 = 1.7615941559557646*3 = 5.2847824679, h1 = silu(1)*1 = 0.7310585786,
	 *   h2 = silu(-1)*2 = -0.2689414214*2 = -0.5378828427, h3 = silu(2)*-1 = -1.7615941560, rest 0.
	 * Quantization, gs = 1: s = f32(5.2847825 * f32(1/6)) = 0.88079709 -> e4m3 neighbours 0.875, 0.9375
	 *   -> 0.875; out_scale = 1/0.875 = 1.1428571;
	 *   q0 = 6.0397 -> 6, q1 = 0.835496 -> 1, q2 = -0.614723 -> -0.5, q3 = -2.013250 -> -2.
	 * Expert 0 is filled with code 6 everywhere: using it would give different values. */
	mog_dims d = {1, 2, 1, 16, 16};
	sf_ocall c;
	mog_setup(&c, d, 1.0, 1.0);
	for (int k = 0; k < 16; k++)
		mog_set(&c, MOG_X, k, 1.0);
	mog_set(&c, MOG_XS, 0, 1.0);
	mog_set(&c, MOG_IDS, 0, 1);
	for (int64_t i = 0; i < 32 * 16; i++) /* expert 0 (rows 0..31): all codes 6 */
		mog_set(&c, MOG_W, i, 6.0);
	for (int64_t i = 0; i < 2 * 32; i++)
		mog_set(&c, MOG_WS, i, 1.0);
	const double g[4] = {2, 1, -1, 2}, u[4] = {3, 1, 2, -1};
	const int64_t w1 = 32 * 16; /* start of expert 1 */
	for (int i = 0; i < 4; i++) {
		mog_set(&c, MOG_W, w1 + i * 16, g[i]);        /* gate row i, k = 0 */
		mog_set(&c, MOG_W, w1 + (16 + i) * 16, u[i]); /* up row i, k = 0 */
	}
	ot_run(&c);
	CHECK_NEAR(mog_s(&c, 0), 0.875, 0);
	const double q[4] = {6, 1, -0.5, -2};
	for (int i = 0; i < 4; i++)
		CHECK_NEAR(mog_q(&c, i), q[i], 0);
	for (int i = 4; i < 16; i++)
		CHECK_NEAR(mog_q(&c, i), 0, 0);
	ot_free(&c);
}

SF_TEST(moe_nvfp4_gl_global_scales_and_slots)
{
	/* T=1, E=2, TOPK=2, ids {1, 0}; H=16, I=16. x_global_scale 2, w_global_scale {1, 4}.
	 * x: code 2 at k=0 with block scale 4 -> xd[0] = 2*4/2 = 4.
	 * expert 1: gate row 0 code 1 at k=0 (scale 1) -> wd = 1/4; up row 0 code 4 at k=0 (scale 0.5)
	 *   -> wd = 4*0.5/4 = 0.5; gate = 4*0.25 = 1, up = 4*0.5 = 2 -> h0 = silu(1)*2 = 1.4621171573.
	 *   out gs 16: s = f32(16 * f32(1.4621172 * f32(1/6))) = 16*0.24368619 = 3.898979 -> e4m3 step 0.25
	 *   in [2,4): 3.75 or 4; 3.899 is nearer 4 -> scale 4; out_scale = 1/f32(4 * f32(1/16)) = 4;
	 *   q0 = 5.848 -> 6; the other 15 values are 0.
	 * slot 1 -> expert 0, all weights zero -> h = 0 -> scale 0, codes 0. */
	mog_dims d = {1, 2, 2, 16, 16};
	sf_ocall c;
	mog_setup(&c, d, 2.0, 16.0);
	mog_set(&c, MOG_X, 0, 2.0);
	mog_set(&c, MOG_XS, 0, 4.0);
	mog_set(&c, MOG_IDS, 0, 1);
	mog_set(&c, MOG_IDS, 1, 0);
	mog_set(&c, MOG_WGS, 1, 4.0);
	const int64_t w1 = 32 * 16, s1 = 32;
	mog_set(&c, MOG_W, w1 + 0, 1.0);
	mog_set(&c, MOG_WS, s1 + 0, 1.0);
	mog_set(&c, MOG_W, w1 + 16 * 16, 4.0);
	mog_set(&c, MOG_WS, s1 + 16, 0.5);
	ot_run(&c);
	CHECK_NEAR(mog_s(&c, 0), 4, 0);
	CHECK_NEAR(mog_q(&c, 0), 6, 0);
	for (int i = 1; i < 16; i++)
		CHECK_NEAR(mog_q(&c, i), 0, 0);
	CHECK_NEAR(mog_s(&c, 1), 0, 0);
	for (int i = 16; i < 32; i++)
		CHECK_NEAR(mog_q(&c, i), 0, 0);
	ot_free(&c);
}

SF_TEST(moe_nvfp4_gl_block_scales_along_k)
{
	/* H=32 (two 16-element blocks). x codes 1 everywhere, x block scales {1, 2}.
	 * gate row 0: codes 0.5 everywhere, w block scales {1, 0.25}
	 *   -> gate = 16*1*0.5*1*1 + 16*1*0.5*2*0.25 = 8 + 4 = 12.
	 * up row 0: codes 1 in block 0 only, scale 1 -> up = 16.
	 * h0 = silu(12)*16 = 12/(1+e^-12)*16 = 191.99882; gs 1: s = f32(191.99882*f32(1/6)) = 31.99980
	 *   -> e4m3 32 (32 is the nearest: the step is 2 below 32); out_scale = 1/32; q0 = 5.99996 -> 6. */
	mog_dims d = {1, 1, 1, 32, 16};
	sf_ocall c;
	mog_setup(&c, d, 1.0, 1.0);
	for (int k = 0; k < 32; k++) {
		mog_set(&c, MOG_X, k, 1.0);
		mog_set(&c, MOG_W, k, 0.5);
	}
	mog_set(&c, MOG_XS, 0, 1.0);
	mog_set(&c, MOG_XS, 1, 2.0);
	mog_set(&c, MOG_WS, 0, 1.0);
	mog_set(&c, MOG_WS, 1, 0.25);
	for (int k = 0; k < 16; k++)
		mog_set(&c, MOG_W, 16 * 32 + k, 1.0); /* up row 0 = row I = 16 */
	mog_set(&c, MOG_WS, 16 * 2, 1.0);
	ot_run(&c);
	CHECK_NEAR(mog_s(&c, 0), 32, 0);
	CHECK_NEAR(mog_q(&c, 0), 6, 0);
	ot_free(&c);
}

/* e2m1 by threshold table, independent of numeric.h */
static float mog_e2m1_table(float v)
{
	float a = v < 0 ? -v : v, r;
	if (a <= 0.25f) r = 0.0f;
	else if (a < 0.75f) r = 0.5f;
	else if (a <= 1.25f) r = 1.0f;
	else if (a < 1.75f) r = 1.5f;
	else if (a <= 2.5f) r = 2.0f;
	else if (a < 3.5f) r = 3.0f;
	else if (a <= 5.0f) r = 4.0f;
	else r = 6.0f;
	return v < 0 ? -r : r;
}

SF_TEST(moe_nvfp4_gl_random_vs_dequantized_matmul)
{
	/* Independent path: dequantize x and the selected weights to doubles (codes through a lookup table),
	 * plain dot products, silu, then the quantization recipe in float arithmetic. */
	static const double lut[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
	uint64_t seed = sf_test_seed();
	mog_dims d = {3, 4, 2, 64, 32};
	const int64_t HB = 4, IB = 2, I2 = 64;
	const float x_gs = 256.0f, o_gs = 640.0f;
	sf_ocall c;
	mog_setup(&c, d, x_gs, o_gs);
	for (int64_t i = 0; i < d.T * d.H; i++)
		mog_set(&c, MOG_X, i, 2.0 * sf_rng_normal(seed, 31, (uint64_t)i));
	for (int64_t i = 0; i < d.T * HB; i++)
		mog_set(&c, MOG_XS, i, 112.0 + 24.0 * sf_rng_normal(seed, 32, (uint64_t)i));
	for (int64_t i = 0; i < d.E * I2 * d.H; i++)
		mog_set(&c, MOG_W, i, 2.0 * sf_rng_normal(seed, 33, (uint64_t)i));
	for (int64_t i = 0; i < d.E * I2 * HB; i++)
		mog_set(&c, MOG_WS, i, 112.0 + 24.0 * sf_rng_normal(seed, 34, (uint64_t)i));
	for (int64_t e = 0; e < d.E; e++)
		mog_set(&c, MOG_WGS, e, 12800.0 + 1000.0 * sf_rng_normal(seed, 35, (uint64_t)e));
	const int ids[6] = {3, 0, 1, 2, 2, 3};
	for (int i = 0; i < 6; i++)
		mog_set(&c, MOG_IDS, i, ids[i]);
	ot_run(&c);

	const uint8_t *xb = (const uint8_t *)c.in[MOG_X].data, *wb = (const uint8_t *)c.in[MOG_W].data;
	int bad = 0, nonzero = 0;
	for (int64_t t = 0; t < d.T; t++)
		for (int64_t j = 0; j < d.TOPK; j++) {
			int64_t e = ids[t * d.TOPK + j];
			double wgs = sf_load(c.in[MOG_WGS].data, SF_DT_F32, e);
			float h[32];
			for (int64_t i = 0; i < d.I; i++) {
				double gu[2];
				for (int half = 0; half < 2; half++) {
					int64_t row = e * I2 + half * d.I + i;
					double acc = 0;
					for (int64_t k = 0; k < d.H; k++) {
						int64_t xi = t * d.H + k, wi = row * d.H + k;
						double xd = lut[(xb[xi / 2] >> (4 * (xi % 2))) & 15] *
							    sf_load(c.in[MOG_XS].data, SF_DT_E4M3, t * HB + k / 16) / x_gs;
						double wd = lut[(wb[wi / 2] >> (4 * (wi % 2))) & 15] *
							    sf_load(c.in[MOG_WS].data, SF_DT_E4M3, row * HB + k / 16) / wgs;
						acc += xd * wd;
					}
					gu[half] = acc;
				}
				h[i] = (float)(gu[0] / (1.0 + exp(-gu[0])) * gu[1]);
			}
			for (int64_t b = 0; b < IB; b++) {
				float amax = 0.0f;
				for (int i = 0; i < 16; i++)
					amax = fmaxf(amax, fabsf(h[b * 16 + i]));
				float s = o_gs * (amax * (1.0f / 6.0f));
				float scale = (float)sf_e4m3_to_f64(sf_f64_to_e4m3(s));
				float os = scale == 0.0f ? 0.0f : 1.0f / (scale * (1.0f / o_gs));
				int64_t o = (t * d.TOPK + j) * IB + b;
				bad += mog_s(&c, o) != scale;
				for (int i = 0; i < 16; i++) {
					float q = mog_e2m1_table(h[b * 16 + i] * os);
					bad += mog_q(&c, o * 16 + i) != q;
					nonzero += q != 0.0f;
				}
			}
		}
	CHECK_INT(bad, 0);
	CHECK(nonzero > 0);
	ot_free(&c);
}

static void mog_gen_call(sf_gcall *g, sf_ocall *c, int *is_custom, uint64_t seed)
{
	memset(g, 0, sizeof *g);
	g->c = *c;
	g->is_custom = is_custom;
	g->seed = seed;
}

SF_TEST(moe_nvfp4_gl_gen_topk_ids_distinct)
{
	/* the generator must give TOPK distinct in-range experts per token, reproducibly from the seed */
	mog_dims d = {300, 128, 8, 16, 16};
	sf_ocall c;
	memset(&c, 0, sizeof c);
	ot_input(&c, MOG_IDS, SF_DT_I32, 2, (int64_t[]){d.T, d.TOPK});
	c.n_in = 8;
	c.axis[0] = d.T;
	c.axis[1] = d.E;
	c.axis[2] = d.TOPK;
	c.axis[3] = d.H;
	c.axis[4] = d.I;
	c.n_axis = 5;
	int is_custom[8] = {0, 0, 0, 1, 0, 0, 0, 0};
	uint64_t seed = sf_test_seed();
	sf_gcall g;
	mog_gen_call(&g, &c, is_custom, seed);
	CHECK_INT(sf_oracle_gen(&g), 0);
	int bad = 0, hist[128] = {0};
	int32_t first[300 * 8];
	memcpy(first, c.in[MOG_IDS].data, sizeof first);
	for (int64_t t = 0; t < d.T; t++)
		for (int64_t j = 0; j < d.TOPK; j++) {
			int32_t e = first[t * d.TOPK + j];
			bad += e < 0 || e >= 128;
			if (e >= 0 && e < 128)
				hist[e]++;
			for (int64_t k = 0; k < j; k++)
				bad += first[t * d.TOPK + k] == e;
		}
	CHECK_INT(bad, 0);
	int unused = 0;
	for (int e = 0; e < 128; e++)
		unused += hist[e] == 0;
	CHECK(unused < 4); /* 2400 uniform draws over 128 experts: each is used with overwhelming odds */
	memset(c.in[MOG_IDS].data, 0, sizeof first);
	mog_gen_call(&g, &c, is_custom, seed);
	CHECK_INT(sf_oracle_gen(&g), 0);
	CHECK(memcmp(first, c.in[MOG_IDS].data, sizeof first) == 0);
	mog_gen_call(&g, &c, is_custom, seed + 1);
	CHECK_INT(sf_oracle_gen(&g), 0);
	CHECK(memcmp(first, c.in[MOG_IDS].data, sizeof first) != 0);
	ot_free(&c);
}

SF_TEST(moe_nvfp4_gl_work_counts_selected_experts)
{
	/* T=2, TOPK=2, ids {{1,3},{3,0}}: 3 distinct experts of E=4; H=32, I=16 (HB=2, IB=1, I2=32).
	 * bytes = x_fp4 2*32/2=32 + x_scale 2*2=4 + ids 2*2*4=16
	 *       + 3 * (w_fp4 32*32/2=512 + w_scale 32*2=64 + w_gs 4) = 3*580 = 1740
	 *       + out_fp4 2*2*16/2=32 + out_scale 2*2*1=4  -> 1828
	 * fp8_tensor = 2*T*TOPK*I2*H = 2*2*2*32*32 = 8192; sfu = T*TOPK*I = 64; fp32 = 5*64 = 320 */
	mog_dims d = {2, 4, 2, 32, 16};
	sf_ocall c;
	mog_setup(&c, d, 1.0, 1.0);
	const int ids[4] = {1, 3, 3, 0};
	for (int i = 0; i < 4; i++)
		mog_set(&c, MOG_IDS, i, ids[i]);
	sf_work w;
	memset(&w, 0, sizeof w);
	sf_oracle_work(&c, &w);
	CHECK_NEAR(w.bytes, 1828, 0);
	CHECK_NEAR(w.flops[SF_UNIT_FP8_TENSOR], 8192, 0);
	CHECK_NEAR(w.flops[SF_UNIT_SFU], 64, 0);
	CHECK_NEAR(w.flops[SF_UNIT_FP32], 320, 0);
	CHECK_NEAR(w.flops[SF_UNIT_BF16_TENSOR], 0, 0);
	ot_free(&c);
}
