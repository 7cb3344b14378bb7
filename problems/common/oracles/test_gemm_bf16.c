/*
 * Unit tests of the shared bf16 linear oracle (gemm_bf16.c) (C = A . B^T) on small hand-checkable shapes: the oracle reads
 * M, N, K from the axes, so a 2x3x4 product exercises exactly the code that runs at every Llama-3.1-8B shape.
 */
#include "../../../tests/oracle/support.h"
#include "gemm_bf16.c"

/* Allocates A [M,K] bf16, B [N,K] bf16 and C [M,N] float32 (the reference dtype) and the axes. */
static void gemm_bf16_setup(sf_ocall *c, int64_t M, int64_t N, int64_t K)
{
	memset(c, 0, sizeof *c);
	ot_input(c, 0, SF_DT_BF16, 2, (int64_t[]){ M, K });
	ot_input(c, 1, SF_DT_BF16, 2, (int64_t[]){ N, K });
	ot_output(c, 0, SF_DT_F32, 2, (int64_t[]){ M, N });
	c->axis[0] = M;
	c->axis[1] = N;
	c->axis[2] = K;
	c->n_axis = 3;
}

static double gemm_bf16_c(const sf_ocall *c, int64_t m, int64_t n)
{
	return sf_load(c->out[0].data, SF_DT_F32, m * c->axis[1] + n);
}

SF_TEST(gemm_bf16_items_are_output_elements)
{
	sf_ocall c;
	gemm_bf16_setup(&c, 3, 5, 7);
	CHECK_INT(sf_oracle_items(&c), 15);
	CHECK_STR(sf_oracle_axis_names[0], "M");
	CHECK_STR(sf_oracle_axis_names[1], "N");
	CHECK_STR(sf_oracle_axis_names[2], "K");
	CHECK(sf_oracle_axis_names[3] == NULL);
	ot_free(&c);
}

SF_TEST(gemm_bf16_hand_2x3x4)
{
	/* A = [[1, 2, 3, 4], [0.5, -1, 0, 2]], B = [[1, 0, 0, 0], [1, 1, 1, 1], [-1, 0.25, 2, -0.5]]
	 * C[0][0] = 1                                  = 1
	 * C[0][1] = 1 + 2 + 3 + 4                      = 10
	 * C[0][2] = -1 + 0.5 + 6 - 2                   = 3.5
	 * C[1][0] = 0.5                                = 0.5
	 * C[1][1] = 0.5 - 1 + 0 + 2                    = 1.5
	 * C[1][2] = -0.5 - 0.25 + 0 - 1                = -1.75 */
	static const double a[8] = { 1, 2, 3, 4, 0.5, -1, 0, 2 };
	static const double b[12] = { 1, 0, 0, 0, 1, 1, 1, 1, -1, 0.25, 2, -0.5 };
	sf_ocall c;
	gemm_bf16_setup(&c, 2, 3, 4);
	for (int i = 0; i < 8; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, a[i]);
	for (int i = 0; i < 12; i++)
		sf_store(c.in[1].data, SF_DT_BF16, i, b[i]);
	ot_run(&c);
	CHECK_NEAR(gemm_bf16_c(&c, 0, 0), 1.0, 0);
	CHECK_NEAR(gemm_bf16_c(&c, 0, 1), 10.0, 0);
	CHECK_NEAR(gemm_bf16_c(&c, 0, 2), 3.5, 0);
	CHECK_NEAR(gemm_bf16_c(&c, 1, 0), 0.5, 0);
	CHECK_NEAR(gemm_bf16_c(&c, 1, 1), 1.5, 0);
	CHECK_NEAR(gemm_bf16_c(&c, 1, 2), -1.75, 0);
	ot_free(&c);
}

SF_TEST(gemm_bf16_accumulates_beyond_float)
{
	/* A = [1, 1, 1], B = [2^24, 1, -2^24] (all exact in bf16).
	 * Exact: 2^24 + 1 - 2^24 = 1. A float32 running sum loses the 1 (2^24 + 1 rounds to 2^24) and
	 * gives 0; the oracle's double sum keeps it. */
	sf_ocall c;
	gemm_bf16_setup(&c, 1, 1, 3);
	for (int i = 0; i < 3; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, 1.0);
	sf_store(c.in[1].data, SF_DT_BF16, 0, 16777216.0);
	sf_store(c.in[1].data, SF_DT_BF16, 1, 1.0);
	sf_store(c.in[1].data, SF_DT_BF16, 2, -16777216.0);
	ot_run(&c);
	CHECK_NEAR(gemm_bf16_c(&c, 0, 0), 1.0, 0);
	ot_free(&c);
}

SF_TEST(gemm_bf16_reference_not_rounded_to_bf16)
{
	/* A = [1, 2^-10], B = [1, 1]: C = 1 + 2^-10 = 1.0009765625, exact in float32 (the reference
	 * dtype) but not in bf16 (whose neighbours of 1 are 1 and 1 + 2^-7). */
	sf_ocall c;
	gemm_bf16_setup(&c, 1, 1, 2);
	sf_store(c.in[0].data, SF_DT_BF16, 0, 1.0);
	sf_store(c.in[0].data, SF_DT_BF16, 1, 0.0009765625);
	sf_store(c.in[1].data, SF_DT_BF16, 0, 1.0);
	sf_store(c.in[1].data, SF_DT_BF16, 1, 1.0);
	ot_run(&c);
	CHECK_NEAR(gemm_bf16_c(&c, 0, 0), 1.0009765625, 0);
	ot_free(&c);
}

SF_TEST(gemm_bf16_random_vs_long_double)
{
	/* Odd sizes, random bf16 inputs (A std 1, B std 1/sqrt(K) as the workloads draw them), against
	 * a long double dot product computed here; the oracle's value is that sum rounded to float32. */
	const int64_t M = 3, N = 5, K = 37;
	const uint64_t seed = sf_test_seed();
	sf_ocall c;
	gemm_bf16_setup(&c, M, N, K);
	for (int64_t i = 0; i < M * K; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, sf_rng_normal(seed, 0, (uint64_t)i));
	for (int64_t i = 0; i < N * K; i++)
		sf_store(c.in[1].data, SF_DT_BF16, i, sf_rng_normal(seed, 1, (uint64_t)i) / sqrt((double)K));
	ot_run(&c);
	for (int64_t m = 0; m < M; m++) {
		for (int64_t n = 0; n < N; n++) {
			long double s = 0;
			for (int64_t k = 0; k < K; k++)
				s += (long double)sf_load(c.in[0].data, SF_DT_BF16, m * K + k) *
				     (long double)sf_load(c.in[1].data, SF_DT_BF16, n * K + k);
			CHECK_NEAR(gemm_bf16_c(&c, m, n), (double)s, 1e-7 * fabs((double)s) + 1e-12);
		}
	}
	ot_free(&c);
}
