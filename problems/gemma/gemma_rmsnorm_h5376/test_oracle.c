/* Unit tests of gemma_rmsnorm_h5376's oracle (Gemma-3 RMSNorm with (1 + weight)). */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

/* T rows of H: inputs x [T, H] bf16, weight [H] bf16, eps; output [T, H] float32. */
static void gemma_rmsnorm_setup(sf_ocall *c, int64_t T, int64_t H, double eps)
{
	ot_input(c, 0, SF_DT_BF16, 2, (int64_t[]){ T, H });
	ot_input(c, 1, SF_DT_BF16, 1, (int64_t[]){ H });
	ot_scalar(c, 2, eps);
	ot_output(c, 0, SF_DT_F32, 2, (int64_t[]){ T, H });
	c->axis[0] = T;
	c->axis[1] = H;
	c->n_axis = 2;
}

static double gemma_rmsnorm_out(const sf_ocall *c, int64_t i)
{
	return sf_load(c->out[0].data, SF_DT_F32, i);
}

SF_TEST(gemma_rmsnorm_unit_rms_scales_by_one_plus_w)
{
	/* x = [1, -1, 1, -1]: mean(x^2) = 1, eps = 0 -> 1/rms = 1.
	 * w = [0, 1, -0.5, 0.25] -> 1 + w = [1, 2, 0.5, 1.25]
	 * y = x * (1 + w) = [1, -2, 0.5, -1.25] */
	sf_ocall c = { 0 };
	gemma_rmsnorm_setup(&c, 1, 4, 0.0);
	const double x[4] = { 1, -1, 1, -1 }, w[4] = { 0, 1, -0.5, 0.25 }, y[4] = { 1, -2, 0.5, -1.25 };
	for (int j = 0; j < 4; j++) {
		sf_store(c.in[0].data, SF_DT_BF16, j, x[j]);
		sf_store(c.in[1].data, SF_DT_BF16, j, w[j]);
	}
	CHECK_INT(sf_oracle_items(&c), 1);
	ot_run(&c);
	for (int j = 0; j < 4; j++)
		CHECK_NEAR(gemma_rmsnorm_out(&c, j), y[j], 1e-7);
	ot_free(&c);
}

SF_TEST(gemma_rmsnorm_eps_and_rows)
{
	/* Row 0: x = [1, 1, 1, 1], eps = 3: mean(x^2) + eps = 4 -> 1/rms = 0.5; w = 0 -> y = 0.5 each.
	 * Row 1: x = [2, 0, 0, 0]: mean(x^2) = 4/4 = 1, + 3 = 4 -> 1/rms = 0.5 -> y = [1, 0, 0, 0].
	 * Row 2: x = [3, 4, 0, 0]: mean(x^2) = 25/4 = 6.25, + 3 = 9.25 -> 1/rms = 1/sqrt(9.25)
	 *        = 0.32879797461071458 -> y = [0.98639392383214375, 1.3151918984428583, 0, 0].
	 * Rows are independent: row 0 does not see row 2's larger values. */
	sf_ocall c = { 0 };
	gemma_rmsnorm_setup(&c, 3, 4, 3.0);
	const double x[12] = { 1, 1, 1, 1, 2, 0, 0, 0, 3, 4, 0, 0 };
	const double y[12] = { 0.5, 0.5, 0.5, 0.5, 1, 0, 0, 0, 0.98639392383214375, 1.3151918984428583, 0, 0 };
	for (int i = 0; i < 12; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, x[i]);
	CHECK_INT(sf_oracle_items(&c), 3);
	ot_run(&c);
	for (int i = 0; i < 12; i++)
		CHECK_NEAR(gemma_rmsnorm_out(&c, i), y[i], 1e-7);
	ot_free(&c);
}

SF_TEST(gemma_rmsnorm_weight_is_an_offset_from_one)
{
	/* Gemma stores w with the scale (1 + w): w = -1 zeroes the channel, w = 0 keeps it.
	 * x = [2, 2] -> mean(x^2) = 4, eps = 0 -> 1/rms = 0.5 -> x/rms = [1, 1]; w = [-1, 0] -> y = [0, 1]. */
	sf_ocall c = { 0 };
	gemma_rmsnorm_setup(&c, 1, 2, 0.0);
	sf_store(c.in[0].data, SF_DT_BF16, 0, 2.0);
	sf_store(c.in[0].data, SF_DT_BF16, 1, 2.0);
	sf_store(c.in[1].data, SF_DT_BF16, 0, -1.0);
	sf_store(c.in[1].data, SF_DT_BF16, 1, 0.0);
	ot_run(&c);
	CHECK_NEAR(gemma_rmsnorm_out(&c, 0), 0.0, 1e-12);
	CHECK_NEAR(gemma_rmsnorm_out(&c, 1), 1.0, 1e-7);
	ot_free(&c);
}

SF_TEST(gemma_rmsnorm_random_vs_direct)
{
	/* Random bf16 rows (odd width), compared with y = x * (1 + w) / sqrt(sum(x^2)/H + eps)
	 * written as a division by the rms. */
	const int64_t T = 5, H = 77;
	const double eps = 1e-6;
	const uint64_t seed = sf_test_seed();
	sf_ocall c = { 0 };
	gemma_rmsnorm_setup(&c, T, H, eps);
	for (int64_t i = 0; i < T * H; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, sf_rng_normal(seed, 1, (uint64_t)i));
	for (int64_t j = 0; j < H; j++)
		sf_store(c.in[1].data, SF_DT_BF16, j, 0.1 * sf_rng_normal(seed, 2, (uint64_t)j));
	ot_run(&c);
	for (int64_t t = 0; t < T; t++) {
		double ms = 0.0;
		for (int64_t j = 0; j < H; j++) {
			const double v = sf_load(c.in[0].data, SF_DT_BF16, t * H + j);
			ms += v * v / (double)H;
		}
		const double rms = sqrt(ms + eps);
		for (int64_t j = 0; j < H; j++) {
			const double v = sf_load(c.in[0].data, SF_DT_BF16, t * H + j);
			const double w = sf_load(c.in[1].data, SF_DT_BF16, j);
			const double want = (double)(float)(v / rms * (1.0 + w));
			CHECK_NEAR(gemma_rmsnorm_out(&c, t * H + j), want, 1e-6 * fabs(want) + 1e-12);
		}
	}
	ot_free(&c);
}
