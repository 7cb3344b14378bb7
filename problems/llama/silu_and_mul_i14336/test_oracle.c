/*
 * Unit tests of the silu_and_mul_i14336 oracle on small shapes (intermediate_size from the axis).
 */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

static void silumul_setup(sf_ocall *c, int64_t T, int64_t I)
{
	memset(c, 0, sizeof *c);
	ot_input(c, 0, SF_DT_BF16, 2, (int64_t[]){ T, 2 * I });
	ot_output(c, 0, SF_DT_F32, 2, (int64_t[]){ T, I });
	c->axis[0] = T;
	c->axis[1] = I;
	c->n_axis = 2;
}

static double silumul_y(const sf_ocall *c, int64_t i)
{
	return sf_load(c->out[0].data, SF_DT_F32, i);
}

SF_TEST(silumul_items_are_outputs)
{
	sf_ocall c;
	silumul_setup(&c, 3, 7);
	CHECK_INT(sf_oracle_items(&c), 21);
	CHECK_STR(sf_oracle_axis_names[0], "num_tokens");
	CHECK_STR(sf_oracle_axis_names[1], "intermediate_size");
	ot_free(&c);
}

SF_TEST(silumul_hand_gate_then_up)
{
	/* T = 2, I = 3; row t of x is [gate_0 gate_1 gate_2 up_0 up_1 up_2].
	 * silu(1)     = 1 / (1 + e^-1)      = 1 / 1.36787944117 = 0.73105857863; * 2    = 1.46211715726
	 * silu(-2)    = -2 / (1 + e^2)      = -2 / 8.38905609893 = -0.23840584404; * 0.5 = -0.11920292202
	 * silu(4)     = 4 / (1 + e^-4)      = 4 / 1.01831563889 = 3.92805516015; * -1   = -3.92805516015
	 * silu(0)     = 0;                                                         * 3    = 0
	 * silu(0.5)   = 0.5 / (1 + e^-0.5)  = 0.5 / 1.60653065971 = 0.31122966560; * 0.25 = 0.07780741640
	 * silu(-0.75) = -0.75 / (1 + e^0.75) = -0.75 / 3.11700001661 = -0.24061597562; * -4 = 0.96246390247
	 * (the reference buffer is float32: compare at float32 precision). */
	static const double x[12] = { 1, -2, 4, 2, 0.5, -1, 0, 0.5, -0.75, 3, 0.25, -4 };
	static const double y[6] = { 1.46211715726, -0.11920292202, -3.92805516015,
				     0,             0.07780741640,  0.96246390247 };
	sf_ocall c;
	silumul_setup(&c, 2, 3);
	for (int i = 0; i < 12; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, x[i]);
	ot_run(&c);
	for (int i = 0; i < 6; i++)
		CHECK_NEAR(silumul_y(&c, i), y[i], 1e-7 * fabs(y[i]) + 1e-10);
	ot_free(&c);
}

SF_TEST(silumul_extremes)
{
	/* gate = -200: silu = -200 / (1 + e^200) ~ -2.8e-85, below float32's range: 0, not NaN.
	 * gate = 100: sigmoid(100) = 1 - 3.7e-44, silu = 100 (in float32); * up = 0.5 -> 50.
	 * gate = -1e30 (bf16 rounds it to -1.0015e30): exp(1e30) = inf in double, silu = -0. */
	static const double x[6] = { -200, 100, -1e30, 1, 0.5, 7 };
	sf_ocall c;
	silumul_setup(&c, 1, 3);
	for (int i = 0; i < 6; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, x[i]);
	ot_run(&c);
	CHECK(!isnan(silumul_y(&c, 0)));
	CHECK_NEAR(silumul_y(&c, 0), 0.0, 0);
	CHECK_NEAR(silumul_y(&c, 1), 50.0, 0);
	CHECK(!isnan(silumul_y(&c, 2)));
	CHECK_NEAR(silumul_y(&c, 2), 0.0, 0);
	ot_free(&c);
}

SF_TEST(silumul_random_vs_sigmoid_form)
{
	/* Random bf16 gate and up (std 1, odd sizes) against g * sigmoid(g) * u in long double,
	 * sigmoid written as e^g / (1 + e^g) -- another form of the same function. */
	const int64_t T = 5, I = 41;
	const uint64_t seed = sf_test_seed();
	sf_ocall c;
	silumul_setup(&c, T, I);
	for (int64_t i = 0; i < T * 2 * I; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, sf_rng_normal(seed, 0, (uint64_t)i));
	ot_run(&c);
	for (int64_t t = 0; t < T; t++) {
		for (int64_t i = 0; i < I; i++) {
			long double g = sf_load(c.in[0].data, SF_DT_BF16, t * 2 * I + i);
			long double u = sf_load(c.in[0].data, SF_DT_BF16, t * 2 * I + I + i);
			long double e = expl(g);
			double want = (double)(g * (e / (1 + e)) * u);
			CHECK_NEAR(silumul_y(&c, t * I + i), want, 1.2e-7 * fabs(want) + 1e-30);
		}
	}
	ot_free(&c);
}
