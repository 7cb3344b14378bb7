/* Unit tests of flux_rope_3axis_h24_d128's oracle (Flux 3-axis RoPE) and of its ids generator. */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

/* Axes in SF_ORACLE_AXES order: batch_size, num_heads, seq_len, head_dim, txt_len, img_h, img_w. */
static void flux_rope_setup(sf_ocall *c, int64_t B, int64_t H, int64_t txt, int64_t ih, int64_t iw, double theta)
{
	const int64_t S = txt + ih * iw, D = 128;
	ot_input(c, 0, SF_DT_BF16, 4, (int64_t[]){ B, H, S, D });
	ot_input(c, 1, SF_DT_BF16, 4, (int64_t[]){ B, H, S, D });
	ot_input(c, 2, SF_DT_F32, 2, (int64_t[]){ S, 3 });
	ot_scalar(c, 3, theta);
	ot_output(c, 0, SF_DT_F32, 4, (int64_t[]){ B, H, S, D });
	ot_output(c, 1, SF_DT_F32, 4, (int64_t[]){ B, H, S, D });
	const int64_t ax[7] = { B, H, S, D, txt, ih, iw };
	for (int i = 0; i < 7; i++)
		c->axis[i] = ax[i];
	c->n_axis = 7;
}

static int flux_rope_gen(sf_ocall *c, uint64_t seed, sf_gcall *g)
{
	static const char *const names[4] = { "q", "k", "ids", "theta" };
	static const int custom[4] = { 0, 0, 1, 0 };
	memset(g, 0, sizeof *g);
	g->c = *c;
	g->in_names = names;
	g->is_custom = custom;
	g->seed = seed;
	return sf_oracle_gen(g);
}

static double flux_rope_get(const sf_ocall *c, int out, int64_t i)
{
	return sf_load(c->out[out].data, SF_DT_F32, i);
}

SF_TEST(flux_rope_hand_pairs)
{
	/* One head, two tokens, theta 10000. Token 0 has ids (0, 1, 2), token 1 is text (0, 0, 0).
	 * Pair p of token 0 (elements 2p, 2p+1), out = [[cos a, -sin a], [sin a, cos a]] (x0, x1):
	 *  p = 0  (axis 0, pos 0): a = 0, identity: q (1, 0.5) -> (1, 0.5)
	 *  p = 8  (axis 1, j = 0, omega = 1, pos 1): a = 1, cos 1 = 0.54030231, sin 1 = 0.84147098
	 *         q (1, 0) -> (0.54030231, 0.84147098)
	 *         k (2, -1) -> (2cos1 + sin1, 2sin1 - cos1) = (1.92207560, 1.14263966)
	 *  p = 9  (axis 1, j = 1): omega = 10000^(-2/56) = e^(-9.21034/28) = 0.71968567, a = 0.71968567
	 *         q (0, 1) -> (-sin a, cos a) = (-0.65914833, 0.75201295)
	 *  p = 36 (axis 2, j = 0, omega 1, pos 2): a = 2, cos 2 = -0.41614684, sin 2 = 0.90929743
	 *         q (0.5, -2) -> (0.5cos2 + 2sin2, 0.5sin2 - 2cos2) = (1.61052144, 1.28694239)
	 *  p = 63 (axis 2, j = 27): omega = 10000^(-54/56) = 1.3895e-4, a = 2.7790e-4
	 *         q (1, 1) -> (cos a - sin a, sin a + cos a) = (0.99972206, 1.00027786)
	 * Token 1 (text): a = 0 for every pair, output = input. */
	sf_ocall c = { 0 };
	flux_rope_setup(&c, 1, 1, 1, 1, 1, 10000.0);
	/* ids by hand: token 0 = (0, 1, 2), token 1 = (0, 0, 0) */
	sf_store(c.in[2].data, SF_DT_F32, 1, 1.0);
	sf_store(c.in[2].data, SF_DT_F32, 2, 2.0);
	const struct { int p; double q0, q1, e0, e1; } qv[5] = {
		{ 0, 1, 0.5, 1, 0.5 },
		{ 8, 1, 0, 0.54030230586813977, 0.8414709848078965 },
		{ 9, 0, 1, -0.6591483265627224, 0.7520129544027567 },
		{ 36, 0.5, -2, 1.6105214354, 1.2869423865 },
		{ 63, 1, 1, 0.9997220622907479, 1.0002778604813434 },
	};
	for (int i = 0; i < 5; i++) {
		sf_store(c.in[0].data, SF_DT_BF16, 2 * qv[i].p, qv[i].q0);
		sf_store(c.in[0].data, SF_DT_BF16, 2 * qv[i].p + 1, qv[i].q1);
		/* token 1 holds the same values: text tokens are not rotated */
		sf_store(c.in[0].data, SF_DT_BF16, 128 + 2 * qv[i].p, qv[i].q0);
		sf_store(c.in[0].data, SF_DT_BF16, 128 + 2 * qv[i].p + 1, qv[i].q1);
	}
	sf_store(c.in[1].data, SF_DT_BF16, 16, 2.0);
	sf_store(c.in[1].data, SF_DT_BF16, 17, -1.0);
	CHECK_INT(sf_oracle_items(&c), 2 * 64);
	ot_run(&c);
	for (int i = 0; i < 5; i++) {
		CHECK_NEAR(flux_rope_get(&c, 0, 2 * qv[i].p), qv[i].e0, 1e-6);
		CHECK_NEAR(flux_rope_get(&c, 0, 2 * qv[i].p + 1), qv[i].e1, 1e-6);
		CHECK_NEAR(flux_rope_get(&c, 0, 128 + 2 * qv[i].p), qv[i].q0, 0.0);
		CHECK_NEAR(flux_rope_get(&c, 0, 128 + 2 * qv[i].p + 1), qv[i].q1, 0.0);
	}
	CHECK_NEAR(flux_rope_get(&c, 1, 16), 1.922075596544176, 1e-6);
	CHECK_NEAR(flux_rope_get(&c, 1, 17), 1.1426396637476532, 1e-6);
	/* k is zero elsewhere and stays zero */
	CHECK_NEAR(flux_rope_get(&c, 1, 18), 0.0, 0.0);
	ot_free(&c);
}

SF_TEST(flux_rope_theta_is_used)
{
	/* theta = 100, pair 9 (axis 1, j = 1) at row 1: omega = 100^(-2/56) = e^(-4.60517/28)
	 * = 0.84834290, q (0, 1) -> (-sin a, cos a) = (-0.75018571, 0.66122719). */
	sf_ocall c = { 0 };
	flux_rope_setup(&c, 1, 1, 1, 0, 0, 100.0);
	sf_store(c.in[2].data, SF_DT_F32, 1, 1.0);
	sf_store(c.in[0].data, SF_DT_BF16, 19, 1.0);
	ot_run(&c);
	CHECK_NEAR(flux_rope_get(&c, 0, 18), -0.7501857149083052, 1e-6);
	CHECK_NEAR(flux_rope_get(&c, 0, 19), 0.6612271872416583, 1e-6);
	ot_free(&c);
}

SF_TEST(flux_rope_gen_ids_text_then_image_grid)
{
	/* txt_len 2, image 2 x 3: S = 8; tokens 0-1 text (0,0,0); tokens 2..7 = (0, r, c) row-major:
	 * (0,0,0) (0,0,1) (0,0,2) (0,1,0) (0,1,1) (0,1,2). The same for any seed. */
	const double want[8][3] = { { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 1 },
				    { 0, 0, 2 }, { 0, 1, 0 }, { 0, 1, 1 }, { 0, 1, 2 } };
	for (uint64_t seed = 1; seed <= 3; seed++) {
		sf_ocall c = { 0 };
		sf_gcall g;
		flux_rope_setup(&c, 1, 1, 2, 2, 3, 10000.0);
		for (int i = 0; i < 24; i++) /* garbage the generator must overwrite */
			sf_store(c.in[2].data, SF_DT_F32, i, -7.0);
		CHECK_INT(flux_rope_gen(&c, sf_mix64(seed ^ sf_test_seed()), &g), 0);
		for (int s = 0; s < 8; s++)
			for (int a = 0; a < 3; a++)
				CHECK_NEAR(sf_load(c.in[2].data, SF_DT_F32, s * 3 + a), want[s][a], 0.0);
		ot_free(&c);
	}
}

SF_TEST(flux_rope_gen_rejects_inconsistent_axes)
{
	sf_ocall c = { 0 };
	sf_gcall g;
	flux_rope_setup(&c, 1, 1, 2, 2, 3, 10000.0);
	c.axis[2] = 9; /* seq_len != txt_len + img_h * img_w */
	CHECK_INT(flux_rope_gen(&c, 1, &g), -1);
	CHECK(g.err[0] != '\0');
	ot_free(&c);
}

SF_TEST(flux_rope_gen_leaves_non_custom_ids_alone)
{
	sf_ocall c = { 0 };
	sf_gcall g;
	static const char *const names[4] = { "q", "k", "ids", "theta" };
	static const int none[4] = { 0, 0, 0, 0 };
	flux_rope_setup(&c, 1, 1, 1, 1, 2, 10000.0);
	sf_store(c.in[2].data, SF_DT_F32, 4, 5.0);
	memset(&g, 0, sizeof g);
	g.c = c;
	g.in_names = names;
	g.is_custom = none;
	CHECK_INT(sf_oracle_gen(&g), 0);
	CHECK_NEAR(sf_load(c.in[2].data, SF_DT_F32, 4), 5.0, 0.0);
	ot_free(&c);
}

SF_TEST(flux_rope_random_vs_complex_multiply)
{
	/* Random q, k; ids from the generator. Independent check: pair (x0, x1) as x0 + i*x1 times
	 * e^(i*a), with omega computed as exp(-log(theta) * 2j / dim). */
	const int64_t B = 2, H = 3, txt = 3, ih = 2, iw = 4, S = txt + ih * iw;
	const uint64_t seed = sf_test_seed();
	sf_ocall c = { 0 };
	sf_gcall g;
	flux_rope_setup(&c, B, H, txt, ih, iw, 10000.0);
	CHECK_INT(flux_rope_gen(&c, seed, &g), 0);
	for (int k = 0; k < 2; k++)
		for (int64_t i = 0; i < c.in[k].numel; i++)
			sf_store(c.in[k].data, SF_DT_BF16, i, sf_rng_normal(seed, 10 + (uint32_t)k, (uint64_t)i));
	CHECK_INT(sf_oracle_items(&c), B * H * S * 64);
	ot_run(&c);
	const int dims[3] = { 16, 56, 56 };
	for (int k = 0; k < 2; k++) {
		for (int64_t bh = 0; bh < B * H; bh++) {
			for (int64_t s = 0; s < S; s++) {
				int p = 0;
				for (int a = 0; a < 3; a++) {
					const double pos = sf_load(c.in[2].data, SF_DT_F32, s * 3 + a);
					for (int j = 0; j < dims[a] / 2; j++, p++) {
						const double ang = pos * exp(-log(10000.0) * 2.0 * j / dims[a]);
						const int64_t i0 = (bh * S + s) * 128 + 2 * p;
						const double re = sf_load(c.in[k].data, SF_DT_BF16, i0);
						const double im = sf_load(c.in[k].data, SF_DT_BF16, i0 + 1);
						const double e0 = re * cos(ang) - im * sin(ang);
						const double e1 = re * sin(ang) + im * cos(ang);
						CHECK_NEAR(flux_rope_get(&c, k, i0), e0, 1e-6 * (1 + fabs(e0)));
						CHECK_NEAR(flux_rope_get(&c, k, i0 + 1), e1, 1e-6 * (1 + fabs(e1)));
					}
				}
			}
		}
	}
	ot_free(&c);
}
