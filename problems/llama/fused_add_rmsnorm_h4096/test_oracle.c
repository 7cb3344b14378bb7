/*
 * Unit tests of the fused_add_rmsnorm_h4096 oracle on small rows (hidden_size comes from the axis).
 */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

static void farms_setup(sf_ocall *c, int64_t T, int64_t H, double eps)
{
	memset(c, 0, sizeof *c);
	ot_input(c, 0, SF_DT_BF16, 2, (int64_t[]){ T, H });
	ot_input(c, 1, SF_DT_BF16, 2, (int64_t[]){ T, H });
	ot_input(c, 2, SF_DT_BF16, 1, (int64_t[]){ H });
	ot_scalar(c, 3, eps);
	ot_output(c, 0, SF_DT_F32, 2, (int64_t[]){ T, H });
	ot_output(c, 1, SF_DT_F32, 2, (int64_t[]){ T, H });
	c->axis[0] = T;
	c->axis[1] = H;
	c->n_axis = 2;
}

static void farms_fill(sf_ocall *c, const double *x, const double *r, const double *w)
{
	for (int64_t i = 0; i < c->in[0].numel; i++) {
		sf_store(c->in[0].data, SF_DT_BF16, i, x[i]);
		sf_store(c->in[1].data, SF_DT_BF16, i, r[i]);
	}
	for (int64_t i = 0; i < c->in[2].numel; i++)
		sf_store(c->in[2].data, SF_DT_BF16, i, w[i]);
}

static double farms_out(const sf_ocall *c, int k, int64_t i)
{
	return sf_load(c->out[k].data, SF_DT_F32, i);
}

SF_TEST(farmsnorm_items_are_rows)
{
	sf_ocall c;
	farms_setup(&c, 6, 8, 1e-5);
	CHECK_INT(sf_oracle_items(&c), 6);
	CHECK_STR(sf_oracle_axis_names[0], "batch_size");
	CHECK_STR(sf_oracle_axis_names[1], "hidden_size");
	ot_free(&c);
}

SF_TEST(farmsnorm_hand_two_rows)
{
	/* eps = 0, H = 4, w = [1, 2, 0.5, -3].
	 * row 0: x = [1, -3, 0.5, -1], r = [1, 1, 1.5, -1] -> s = [2, -2, 2, -2]; mean(s^2) = 4,
	 *        rstd = 1/2, n = [1, -1, 1, -1], y = [1, -2, 0.5, 3].
	 * row 1: x = [0.25, 0, 1, 2], r = [0.75, 1, 0, -1] -> s = [1, 1, 1, 1]; rstd = 1, y = w. */
	static const double x[8] = { 1, -3, 0.5, -1, 0.25, 0, 1, 2 };
	static const double r[8] = { 1, 1, 1.5, -1, 0.75, 1, 0, -1 };
	static const double w[4] = { 1, 2, 0.5, -3 };
	static const double s[8] = { 2, -2, 2, -2, 1, 1, 1, 1 };
	static const double y[8] = { 1, -2, 0.5, 3, 1, 2, 0.5, -3 };
	sf_ocall c;
	farms_setup(&c, 2, 4, 0.0);
	farms_fill(&c, x, r, w);
	ot_run(&c);
	for (int i = 0; i < 8; i++) {
		CHECK_NEAR(farms_out(&c, 0, i), y[i], 0);
		CHECK_NEAR(farms_out(&c, 1, i), s[i], 0);
	}
	ot_free(&c);
}

SF_TEST(farmsnorm_norm_reads_rounded_residual)
{
	/* eps = 0, H = 2, w = [1, 1].
	 * row 0: x = [1, 0], r = [2^-8, 0]: the exact sum 1 + 2^-8 is the midpoint of bf16's 1 and
	 *        1 + 2^-7; ties-to-even gives 1, so residual_out = [1, 0].
	 * row 1: x = [1, 1], r = [3 * 2^-8, 0]: 1 + 3 * 2^-8 = 1.01171875 is the midpoint of 1.0078125
	 *        and 1.015625; ties-to-even gives 1.015625, so residual_out = [1.015625, 1].
	 *        The norm of the rounded s: mean = (1.015625^2 + 1) / 2 = 1.0157470703125,
	 *        rstd = 0.99221825..., s * rstd = [1.00772166..., 0.99221825...]
	 *        -> bf16 [1.0078125 (1 + 1/128), 0.9921875 (254/256)].
	 *        (On the unrounded sum it would be rstd = 0.99415789..., and 0.99415789 is above the
	 *        midpoint 0.994140625 of 0.9921875 and 0.99609375: y[1] would be 0.99609375.) */
	static const double x[4] = { 1, 0, 1, 1 };
	static const double r[4] = { 0.00390625, 0, 0.01171875, 0 };
	static const double w[2] = { 1, 1 };
	sf_ocall c;
	farms_setup(&c, 2, 2, 0.0);
	farms_fill(&c, x, r, w);
	ot_run(&c);
	CHECK_NEAR(farms_out(&c, 1, 0), 1.0, 0);
	CHECK_NEAR(farms_out(&c, 1, 1), 0.0, 0);
	CHECK_NEAR(farms_out(&c, 1, 2), 1.015625, 0);
	CHECK_NEAR(farms_out(&c, 1, 3), 1.0, 0);
	CHECK_NEAR(farms_out(&c, 0, 2), 1.0078125, 0);
	CHECK_NEAR(farms_out(&c, 0, 3), 0.9921875, 0);
	ot_free(&c);
}

SF_TEST(farmsnorm_eps)
{
	/* eps = 3, x + r = [1, 1, 1, 1] (x = 0.5, r = 0.5): mean + eps = 4, rstd = 1/2,
	 * y = 0.5 * w with w = [2, -2, 1, 0.5] -> [1, -1, 0.5, 0.25]. */
	static const double x[4] = { 0.5, 0.5, 0.5, 0.5 };
	static const double r[4] = { 0.5, 0.5, 0.5, 0.5 };
	static const double w[4] = { 2, -2, 1, 0.5 };
	static const double y[4] = { 1, -1, 0.5, 0.25 };
	sf_ocall c;
	farms_setup(&c, 1, 4, 3.0);
	farms_fill(&c, x, r, w);
	ot_run(&c);
	for (int i = 0; i < 4; i++) {
		CHECK_NEAR(farms_out(&c, 0, i), y[i], 0);
		CHECK_NEAR(farms_out(&c, 1, i), 1.0, 0);
	}
	ot_free(&c);
}

SF_TEST(farmsnorm_random_vs_long_double)
{
	/* Random rows of an odd width against a long double computation here: residual_out is the
	 * sum rounded to bf16 (exactly: it is within half an ulp of x + r and a bf16 value), and
	 * output / w is a bf16 value within half an ulp of s * rstd. */
	const int64_t T = 4, H = 53;
	const uint64_t seed = sf_test_seed();
	sf_ocall c;
	farms_setup(&c, T, H, 1e-5);
	for (int64_t i = 0; i < T * H; i++) {
		sf_store(c.in[0].data, SF_DT_BF16, i, sf_rng_normal(seed, 0, (uint64_t)i));
		sf_store(c.in[1].data, SF_DT_BF16, i, sf_rng_normal(seed, 1, (uint64_t)i));
	}
	for (int64_t i = 0; i < H; i++)
		sf_store(c.in[2].data, SF_DT_BF16, i, 1.0 + 0.1 * sf_rng_normal(seed, 2, (uint64_t)i));
	ot_run(&c);
	for (int64_t t = 0; t < T; t++) {
		long double ss = 0;
		for (int64_t h = 0; h < H; h++) {
			long double e = (long double)sf_load(c.in[0].data, SF_DT_BF16, t * H + h) +
					sf_load(c.in[1].data, SF_DT_BF16, t * H + h);
			double s = farms_out(&c, 1, t * H + h);
			CHECK(sf_round_bf16(s) == s);
			CHECK_NEAR(s, (double)e, fabsl(e) * 0.00390625L);
			ss += (long double)s * s;
		}
		long double rstd = 1.0L / sqrtl(ss / H + (long double)(float)1e-5);
		for (int64_t h = 0; h < H; h++) {
			double w = sf_load(c.in[2].data, SF_DT_BF16, h);
			double n_exact = (double)(farms_out(&c, 1, t * H + h) * rstd);
			double n = farms_out(&c, 0, t * H + h) / w;
			CHECK(sf_round_bf16(n) == n);
			CHECK_NEAR(n, n_exact, fabs(n_exact) * 0.00390625 * (1 + 1e-6));
		}
	}
	ot_free(&c);
}
