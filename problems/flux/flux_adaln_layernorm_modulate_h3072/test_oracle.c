/* Unit tests of flux_adaln_layernorm_modulate_h3072's oracle (LayerNorm * (1 + scale) + shift). */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

/* Axes in SF_ORACLE_AXES order: batch_size, seq_len, hidden_size. */
static void flux_adaln_setup(sf_ocall *c, int64_t B, int64_t S, int64_t H, double eps)
{
	ot_input(c, 0, SF_DT_BF16, 3, (int64_t[]){ B, S, H });
	ot_input(c, 1, SF_DT_BF16, 2, (int64_t[]){ B, H });
	ot_input(c, 2, SF_DT_BF16, 2, (int64_t[]){ B, H });
	ot_scalar(c, 3, eps);
	ot_output(c, 0, SF_DT_F32, 3, (int64_t[]){ B, S, H });
	c->axis[0] = B;
	c->axis[1] = S;
	c->axis[2] = H;
	c->n_axis = 3;
}

static void flux_adaln_fill(sf_ocall *c, int k, const double *v, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		sf_store(c->in[k].data, SF_DT_BF16, i, v[i]);
}

SF_TEST(flux_adaln_hand_row)
{
	/* x = [1, 2, 3, 4], eps 0: mean 2.5, var = (2.25 + 0.25 + 0.25 + 2.25)/4 = 1.25,
	 * rstd = 1/sqrt(1.25) = 0.89442719 -> xn = [-1.34164079, -0.44721360, 0.44721360, 1.34164079]
	 * scale = [0, 1, -1, 0.5], shift = [0.5, 0, 0, -1]:
	 * y = xn * (1 + scale) + shift = [-1.34164079 + 0.5, -0.44721360*2, 0, 1.34164079*1.5 - 1]
	 *   = [-0.84164079, -0.89442719, 0, 1.01246118] */
	sf_ocall c = { 0 };
	flux_adaln_setup(&c, 1, 1, 4, 0.0);
	const double x[4] = { 1, 2, 3, 4 }, scale[4] = { 0, 1, -1, 0.5 }, shift[4] = { 0.5, 0, 0, -1 };
	const double y[4] = { -0.8416407864998738, -0.8944271909999159, 0, 1.0124611797498106 };
	flux_adaln_fill(&c, 0, x, 4);
	flux_adaln_fill(&c, 1, shift, 4);
	flux_adaln_fill(&c, 2, scale, 4);
	CHECK_INT(sf_oracle_items(&c), 1);
	ot_run(&c);
	for (int i = 0; i < 4; i++)
		CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, i), y[i], 1e-7);
	ot_free(&c);
}

SF_TEST(flux_adaln_per_sample_modulation_and_eps)
{
	/* B=2, S=2, H=2, eps 3. Every row has var 1 (values m-1, m+1 or m+1, m-1), so
	 * rstd = 1/sqrt(1 + 3) = 0.5 and xn = [-0.5, 0.5] or [0.5, -0.5].
	 * sample 0: scale [1, 0], shift [0, 0.25]; sample 1: scale [-0.5, 3], shift [1, -1]
	 *  b0 s0 x [1, 3]   xn [-0.5, 0.5] -> [-0.5*2, 0.5*1 + 0.25]      = [-1, 0.75]
	 *  b0 s1 x [3, 1]   xn [0.5, -0.5] -> [0.5*2, -0.5 + 0.25]        = [1, -0.25]
	 *  b1 s0 x [-1, 1]  xn [-0.5, 0.5] -> [-0.5*0.5 + 1, 0.5*4 - 1]   = [0.75, 1]
	 *  b1 s1 x [10, 12] xn [-0.5, 0.5] -> same                         = [0.75, 1] */
	sf_ocall c = { 0 };
	flux_adaln_setup(&c, 2, 2, 2, 3.0);
	const double x[8] = { 1, 3, 3, 1, -1, 1, 10, 12 };
	const double shift[4] = { 0, 0.25, 1, -1 }, scale[4] = { 1, 0, -0.5, 3 };
	const double y[8] = { -1, 0.75, 1, -0.25, 0.75, 1, 0.75, 1 };
	flux_adaln_fill(&c, 0, x, 8);
	flux_adaln_fill(&c, 1, shift, 4);
	flux_adaln_fill(&c, 2, scale, 4);
	CHECK_INT(sf_oracle_items(&c), 4);
	ot_run(&c);
	for (int i = 0; i < 8; i++)
		CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, i), y[i], 1e-7);
	ot_free(&c);
}

SF_TEST(flux_adaln_random_vs_one_pass_moments)
{
	/* Random rows with an offset mean; independent check from sum(x) and sum(x^2). */
	const int64_t B = 2, S = 3, H = 50;
	const double eps = 1e-6;
	const uint64_t seed = sf_test_seed();
	sf_ocall c = { 0 };
	flux_adaln_setup(&c, B, S, H, eps);
	for (int64_t i = 0; i < B * S * H; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, 3.0 + 2.0 * sf_rng_normal(seed, 1, (uint64_t)i));
	for (int64_t i = 0; i < B * H; i++) {
		sf_store(c.in[1].data, SF_DT_BF16, i, sf_rng_normal(seed, 2, (uint64_t)i));
		sf_store(c.in[2].data, SF_DT_BF16, i, sf_rng_normal(seed, 3, (uint64_t)i));
	}
	ot_run(&c);
	for (int64_t b = 0; b < B; b++) {
		for (int64_t s = 0; s < S; s++) {
			const int64_t row = (b * S + s) * H;
			double s1 = 0, s2 = 0;
			for (int64_t j = 0; j < H; j++) {
				const double v = sf_load(c.in[0].data, SF_DT_BF16, row + j);
				s1 += v;
				s2 += v * v;
			}
			const double mean = s1 / H, var = s2 / H - mean * mean;
			for (int64_t j = 0; j < H; j++) {
				const double v = sf_load(c.in[0].data, SF_DT_BF16, row + j);
				const double sh = sf_load(c.in[1].data, SF_DT_BF16, b * H + j);
				const double sc = sf_load(c.in[2].data, SF_DT_BF16, b * H + j);
				const double want = (v - mean) / sqrt(var + eps) * (1.0 + sc) + sh;
				CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, row + j), want, 1e-6 * (1 + fabs(want)));
			}
		}
	}
	ot_free(&c);
}
