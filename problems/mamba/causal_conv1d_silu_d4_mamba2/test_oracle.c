/* Unit tests of causal_conv1d_silu_d4_mamba2's oracle (causal depthwise conv1d + SiLU). */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

/* Axes in SF_ORACLE_AXES order: batch_size, conv_dim, seq_len, d_conv. */
static void mamba2_conv_setup(sf_ocall *c, int64_t B, int64_t D, int64_t L, int64_t W)
{
	ot_input(c, 0, SF_DT_BF16, 3, (int64_t[]){ B, D, L });
	ot_input(c, 1, SF_DT_BF16, 2, (int64_t[]){ D, W });
	ot_input(c, 2, SF_DT_BF16, 1, (int64_t[]){ D });
	ot_output(c, 0, SF_DT_F32, 3, (int64_t[]){ B, D, L });
	const int64_t ax[4] = { B, D, L, W };
	for (int i = 0; i < 4; i++)
		c->axis[i] = ax[i];
	c->n_axis = 4;
}

static void mamba2_conv_fill(sf_ocall *c, int k, const double *v, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		sf_store(c->in[k].data, SF_DT_BF16, i, v[i]);
}

SF_TEST(mamba2_conv_hand_window)
{
	/* One channel, x = [1, 2, 3, 4, 5], weight = [0.5, 0.25, -1, 2] (w[3] on the current token),
	 * bias 0.25; x = 0 before t = 0:
	 *  t=0: 0.25 + 2*1                              = 2.25
	 *  t=1: 0.25 - 1*1 + 2*2                        = 3.25
	 *  t=2: 0.25 + 0.25*1 - 1*2 + 2*3               = 4.5
	 *  t=3: 0.25 + 0.5*1 + 0.25*2 - 1*3 + 2*4       = 6.25
	 *  t=4: 0.25 + 0.5*2 + 0.25*3 - 1*4 + 2*5       = 8
	 * silu(v) = v / (1 + e^-v): 2.03546370, 3.12868762, 4.45055876, 6.23795791, 7.99731720 */
	sf_ocall c = { 0 };
	mamba2_conv_setup(&c, 1, 1, 5, 4);
	const double x[5] = { 1, 2, 3, 4, 5 }, w[4] = { 0.5, 0.25, -1, 2 }, bias[1] = { 0.25 };
	const double y[5] = { 2.035463703977004, 3.1286876161315793, 4.450558758162331, 6.237957908354203,
			      7.997317198956269 };
	mamba2_conv_fill(&c, 0, x, 5);
	mamba2_conv_fill(&c, 1, w, 4);
	mamba2_conv_fill(&c, 2, bias, 1);
	CHECK_INT(sf_oracle_items(&c), 5);
	ot_run(&c);
	for (int i = 0; i < 5; i++)
		CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, i), y[i], 1e-6);
	ot_free(&c);
}

SF_TEST(mamba2_conv_rows_start_from_zero_state)
{
	/* B=2, D=2, L=3. Channel 0: weight [1, 1, 1, 1], bias 0 (sum of the last 4 tokens);
	 * channel 1: weight [0, 0, 1, 0], bias -0.5 (previous token only).
	 *  b0 d0: x [1, 2, -4]   -> [1, 3, -1]        -> silu [0.73105858, 2.85772238, -0.26894142]
	 *  b0 d1: x [0.5, 1, 2]  -> [-0.5, 0, 0.5]    -> silu [-0.18877033, 0, 0.31122967]
	 *  b1 d0: x [-1, .25, .25] -> [-1, -0.75, -0.5] -> silu [-0.26894142, -0.24061598, -0.18877033]
	 *  b1 d1: x [4, 8, 16]   -> [-0.5, 3.5, 7.5]  -> silu [-0.18877033, 3.39740719, 7.49585416]
	 * Each (b, d) sequence starts from zeros: b1 d0 at t=0 does not see b0 d1's last token. */
	sf_ocall c = { 0 };
	mamba2_conv_setup(&c, 2, 2, 3, 4);
	const double x[12] = { 1, 2, -4, 0.5, 1, 2, -1, 0.25, 0.25, 4, 8, 16 };
	const double w[8] = { 1, 1, 1, 1, 0, 0, 1, 0 }, bias[2] = { 0, -0.5 };
	const double y[12] = { 0.7310585786300049, 2.8577223804672998, -0.2689414213699951,
			       -0.1887703343990727, 0, 0.3112296656009273,
			       -0.2689414213699951, -0.24061597561845527, -0.1887703343990727,
			       -0.1887703343990727, 3.3974071923702525, 7.4958541602230735 };
	mamba2_conv_fill(&c, 0, x, 12);
	mamba2_conv_fill(&c, 1, w, 8);
	mamba2_conv_fill(&c, 2, bias, 2);
	ot_run(&c);
	for (int i = 0; i < 12; i++)
		CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, i), y[i], 1e-6);
	ot_free(&c);
}

SF_TEST(mamba2_conv_random_vs_padded_sequence)
{
	/* Random data with L = 2 < d_conv and L = 9; independent check: copy each sequence after
	 * d_conv - 1 explicit zeros and slide the window over the padded copy. */
	const int64_t B = 3, D = 5, W = 4;
	const int64_t lens[2] = { 2, 9 };
	const uint64_t seed = sf_test_seed();
	for (int li = 0; li < 2; li++) {
		const int64_t L = lens[li];
		sf_ocall c = { 0 };
		mamba2_conv_setup(&c, B, D, L, W);
		for (int64_t i = 0; i < B * D * L; i++)
			sf_store(c.in[0].data, SF_DT_BF16, i, sf_rng_normal(seed, 1, (uint64_t)i));
		for (int64_t i = 0; i < D * W; i++)
			sf_store(c.in[1].data, SF_DT_BF16, i, 0.5 * sf_rng_normal(seed, 2, (uint64_t)i));
		for (int64_t i = 0; i < D; i++)
			sf_store(c.in[2].data, SF_DT_BF16, i, 0.1 * sf_rng_normal(seed, 3, (uint64_t)i));
		ot_run(&c);
		double pad[3 + 9];
		for (int64_t b = 0; b < B; b++) {
			for (int64_t d = 0; d < D; d++) {
				for (int64_t i = 0; i < W - 1; i++)
					pad[i] = 0.0;
				for (int64_t t = 0; t < L; t++)
					pad[W - 1 + t] = sf_load(c.in[0].data, SF_DT_BF16, (b * D + d) * L + t);
				for (int64_t t = 0; t < L; t++) {
					double v = sf_load(c.in[2].data, SF_DT_BF16, d);
					for (int64_t k = 0; k < W; k++)
						v += sf_load(c.in[1].data, SF_DT_BF16, d * W + k) * pad[t + k];
					const double want = v * 0.5 * (1.0 + tanh(0.5 * v));
					CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, (b * D + d) * L + t), want,
						   1e-6 * (1 + fabs(want)));
				}
			}
		}
		ot_free(&c);
	}
}
