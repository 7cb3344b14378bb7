/*
 * Unit tests of the rmsnorm_h4096 oracle on small rows (hidden_size comes from the axis).
 */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

static void rmsnorm_setup(sf_ocall *c, int64_t T, int64_t H, double eps)
{
	memset(c, 0, sizeof *c);
	ot_input(c, 0, SF_DT_BF16, 2, (int64_t[]){ T, H });
	ot_input(c, 1, SF_DT_BF16, 1, (int64_t[]){ H });
	ot_scalar(c, 2, eps);
	ot_output(c, 0, SF_DT_F32, 2, (int64_t[]){ T, H });
	c->axis[0] = T;
	c->axis[1] = H;
	c->n_axis = 2;
}

static void rmsnorm_fill(sf_ocall *c, const double *x, const double *w)
{
	for (int64_t i = 0; i < c->in[0].numel; i++)
		sf_store(c->in[0].data, SF_DT_BF16, i, x[i]);
	for (int64_t i = 0; i < c->in[1].numel; i++)
		sf_store(c->in[1].data, SF_DT_BF16, i, w[i]);
}

static double rmsnorm_y(const sf_ocall *c, int64_t i)
{
	return sf_load(c->out[0].data, SF_DT_F32, i);
}

SF_TEST(rmsnorm_items_are_rows)
{
	sf_ocall c;
	rmsnorm_setup(&c, 5, 8, 1e-5);
	CHECK_INT(sf_oracle_items(&c), 5);
	CHECK_STR(sf_oracle_axis_names[0], "batch_size");
	CHECK_STR(sf_oracle_axis_names[1], "hidden_size");
	CHECK(sf_oracle_axis_names[2] == NULL);
	ot_free(&c);
}

SF_TEST(rmsnorm_hand_two_rows)
{
	/* eps = 0, H = 4, w = [1, 2, 0.5, -3].
	 * row 0: x = [2, -2, 2, -2]: mean(x^2) = 4, rstd = 1/2, n = [1, -1, 1, -1],
	 *        y = w * n = [1, -2, 0.5, 3].
	 * row 1: x = [1, 1, 1, 1]: mean(x^2) = 1, rstd = 1, n = [1, 1, 1, 1], y = w = [1, 2, 0.5, -3]. */
	static const double x[8] = { 2, -2, 2, -2, 1, 1, 1, 1 };
	static const double w[4] = { 1, 2, 0.5, -3 };
	static const double y[8] = { 1, -2, 0.5, 3, 1, 2, 0.5, -3 };
	sf_ocall c;
	rmsnorm_setup(&c, 2, 4, 0.0);
	rmsnorm_fill(&c, x, w);
	ot_run(&c);
	for (int i = 0; i < 8; i++)
		CHECK_NEAR(rmsnorm_y(&c, i), y[i], 0);
	ot_free(&c);
}

SF_TEST(rmsnorm_rounds_normalized_to_bf16_before_weight)
{
	/* eps = 0, x = [3, 4, 0, 0]: mean(x^2) = 25/4, rstd = 1/2.5 = 0.4, x * rstd = [1.2, 1.6, 0, 0].
	 * bf16 has 7 fraction bits:
	 *   1.2 = 1.0011001 1001...b -> rounds up to 1.0011010b = 1 + 26/128 = 1.203125
	 *   1.6 = 1.1001100 1100...b -> rounds up to 1.1001101b = 1 + 77/128 = 1.6015625
	 * w = [1.5, 1, 1, 1]: y = [1.5 * 1.203125, 1.6015625, 0, 0] = [1.8046875, 1.6015625, 0, 0]
	 * (without the intermediate rounding y[0] would be 1.8). */
	static const double x[4] = { 3, 4, 0, 0 };
	static const double w[4] = { 1.5, 1, 1, 1 };
	sf_ocall c;
	rmsnorm_setup(&c, 1, 4, 0.0);
	rmsnorm_fill(&c, x, w);
	ot_run(&c);
	CHECK_NEAR(rmsnorm_y(&c, 0), 1.8046875, 0);
	CHECK_NEAR(rmsnorm_y(&c, 1), 1.6015625, 0);
	CHECK_NEAR(rmsnorm_y(&c, 2), 0.0, 0);
	CHECK_NEAR(rmsnorm_y(&c, 3), 0.0, 0);
	ot_free(&c);
}

SF_TEST(rmsnorm_eps_inside_the_root)
{
	/* eps = 3, x = [1, 1, 1, 1]: mean(x^2) + eps = 4, rstd = 1/2, n = 0.5, y = w * 0.5 with
	 * w = [1, -1, 4, 0.25] -> [0.5, -0.5, 2, 0.125].
	 * All-zero row with eps = 3: rstd = 1/sqrt(3), n = 0, y = 0 (no NaN). */
	static const double x[8] = { 1, 1, 1, 1, 0, 0, 0, 0 };
	static const double w[4] = { 1, -1, 4, 0.25 };
	static const double y[8] = { 0.5, -0.5, 2, 0.125, 0, 0, 0, 0 };
	sf_ocall c;
	rmsnorm_setup(&c, 2, 4, 3.0);
	rmsnorm_fill(&c, x, w);
	ot_run(&c);
	for (int i = 0; i < 8; i++)
		CHECK_NEAR(rmsnorm_y(&c, i), y[i], 0);
	ot_free(&c);
}

SF_TEST(rmsnorm_random_vs_long_double)
{
	/* Random rows (x std 1, w mean 1 std 0.1, eps 1e-5) of an odd width, against a long double
	 * computation here: y / w must be a bf16 value (the rounded normalized activation) within
	 * half a bf16 ulp (2^-8 relative) of the exact x * rstd. */
	const int64_t T = 3, H = 67;
	const uint64_t seed = sf_test_seed();
	sf_ocall c;
	rmsnorm_setup(&c, T, H, 1e-5);
	for (int64_t i = 0; i < T * H; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, sf_rng_normal(seed, 0, (uint64_t)i));
	for (int64_t i = 0; i < H; i++)
		sf_store(c.in[1].data, SF_DT_BF16, i, 1.0 + 0.1 * sf_rng_normal(seed, 1, (uint64_t)i));
	ot_run(&c);
	for (int64_t t = 0; t < T; t++) {
		long double ss = 0;
		for (int64_t h = 0; h < H; h++) {
			long double x = sf_load(c.in[0].data, SF_DT_BF16, t * H + h);
			ss += x * x;
		}
		long double rstd = 1.0L / sqrtl(ss / H + (long double)(float)1e-5);
		for (int64_t h = 0; h < H; h++) {
			double w = sf_load(c.in[1].data, SF_DT_BF16, h);
			double n_exact = (double)(sf_load(c.in[0].data, SF_DT_BF16, t * H + h) * rstd);
			double y = rmsnorm_y(&c, t * H + h);
			double n = y / w; /* exact: y = w * n is exact in float32 */
			CHECK(sf_round_bf16(n) == n);
			CHECK_NEAR(n, n_exact, fabs(n_exact) * 0.00390625 * (1 + 1e-6));
		}
	}
	ot_free(&c);
}
