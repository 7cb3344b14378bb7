/* Unit tests of the qk_rmsnorm_h32_kv4_d128 oracle. */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

static void qkn_setup(sf_ocall *c, int64_t T, int64_t HQ, int64_t HK, int64_t D, double eps)
{
	memset(c, 0, sizeof *c);
	ot_input(c, QKN_Q, SF_DT_BF16, 3, (int64_t[]){T, HQ, D});
	ot_input(c, QKN_K, SF_DT_BF16, 3, (int64_t[]){T, HK, D});
	ot_input(c, QKN_QW, SF_DT_BF16, 1, (int64_t[]){D});
	ot_input(c, QKN_KW, SF_DT_BF16, 1, (int64_t[]){D});
	ot_scalar(c, QKN_EPS, eps);
	ot_output(c, 0, SF_DT_F32, 3, (int64_t[]){T, HQ, D});
	ot_output(c, 1, SF_DT_F32, 3, (int64_t[]){T, HK, D});
	c->axis[0] = T;
	c->axis[1] = HQ;
	c->axis[2] = HK;
	c->axis[3] = D;
	c->n_axis = 4;
}

static void qkn_set(sf_ocall *c, int k, int64_t i, double v)
{
	sf_store(c->in[k].data, SF_DT_BF16, i, v);
}

static double qkn_out(const sf_ocall *c, int k, int64_t i)
{
	return sf_load(c->out[k].data, SF_DT_F32, i);
}

SF_TEST(qk_rmsnorm_by_hand)
{
	/* D = 4, eps = 0, T = 1, HQ = 2, HK = 1.
	 * q head 0 = {3, 4, 0, 0}: mean square = 25/4, rms = 2.5 -> n = {1.2, 1.6, 0, 0};
	 *   bf16(1.2) = 1.0011010b = 1.203125, bf16(1.6) = 1.1001101b = 1.6015625;
	 *   q weight {1.5, 2, 1, 1} -> {1.8046875, 3.203125, 0, 0}.
	 * q head 1 = {1, -1, 1, -1}: rms 1 -> n = x -> y = {1.5, -2, 1, -1}.
	 * k head 0 = {2, 0, 0, 0}: mean square = 1 -> n = {2, 0, 0, 0}; k weight {0.5, ...} -> {1, 0, 0, 0}. */
	sf_ocall c;
	qkn_setup(&c, 1, 2, 1, 4, 0.0);
	const double q[8] = {3, 4, 0, 0, 1, -1, 1, -1}, qw[4] = {1.5, 2, 1, 1};
	for (int i = 0; i < 8; i++)
		qkn_set(&c, QKN_Q, i, q[i]);
	for (int i = 0; i < 4; i++) {
		qkn_set(&c, QKN_QW, i, qw[i]);
		qkn_set(&c, QKN_KW, i, 0.5);
	}
	qkn_set(&c, QKN_K, 0, 2);
	ot_run(&c);
	const double yq[8] = {1.8046875, 3.203125, 0, 0, 1.5, -2, 1, -1};
	for (int i = 0; i < 8; i++)
		CHECK_NEAR(qkn_out(&c, 0, i), yq[i], 0);
	CHECK_NEAR(qkn_out(&c, 1, 0), 1.0, 0);
	for (int i = 1; i < 4; i++)
		CHECK_NEAR(qkn_out(&c, 1, i), 0, 0);
	ot_free(&c);
}

SF_TEST(qk_rmsnorm_eps_matters)
{
	/* D = 4, eps = 1e-6, q = {2^-10, 2^-10, 2^-10, 2^-10}: mean square 2^-20 = 9.5367e-7;
	 * + eps = 1.95367e-6; sqrt = 1.397738e-3; n = 2^-10 / 1.397738e-3 = 0.698672
	 * -> bf16 (step 2^-8 in [0.5, 1)): 178.86 steps -> 179/256 = 0.69921875; weight 1.
	 * Without eps n would be exactly 1. An all-zero row gives 0 (eps keeps the rsqrt finite). */
	sf_ocall c;
	qkn_setup(&c, 1, 1, 1, 4, 1e-6);
	for (int i = 0; i < 4; i++) {
		qkn_set(&c, QKN_Q, i, 0.0009765625);
		qkn_set(&c, QKN_QW, i, 1.0);
		qkn_set(&c, QKN_KW, i, 1.0);
	}
	ot_run(&c);
	for (int i = 0; i < 4; i++) {
		CHECK_NEAR(qkn_out(&c, 0, i), 0.69921875, 0);
		CHECK_NEAR(qkn_out(&c, 1, i), 0.0, 0);
	}
	ot_free(&c);
}

SF_TEST(qk_rmsnorm_head_layout)
{
	/* T = 2, HQ = 3, HK = 2, D = 4: row r of q (token r/3, head r%3) is filled with r+1 in element 0
	 * only -> mean square (r+1)^2/4, rms (r+1)/2 -> n = {2, 0, 0, 0} for every row; weights q {1,..},
	 * k {0.25, ..} -> q_out element 0 = 2, k_out element 0 = 0.5, and the rows do not mix. */
	sf_ocall c;
	qkn_setup(&c, 2, 3, 2, 4, 0.0);
	for (int r = 0; r < 6; r++)
		qkn_set(&c, QKN_Q, r * 4, r + 1);
	for (int r = 0; r < 4; r++)
		qkn_set(&c, QKN_K, r * 4, -(r + 1));
	for (int i = 0; i < 4; i++) {
		qkn_set(&c, QKN_QW, i, 1.0);
		qkn_set(&c, QKN_KW, i, 0.25);
	}
	ot_run(&c);
	for (int r = 0; r < 6; r++) {
		CHECK_NEAR(qkn_out(&c, 0, r * 4), 2.0, 0);
		CHECK_NEAR(qkn_out(&c, 0, r * 4 + 1), 0.0, 0);
	}
	for (int r = 0; r < 4; r++)
		CHECK_NEAR(qkn_out(&c, 1, r * 4), -0.5, 0);
	ot_free(&c);
}

SF_TEST(qk_rmsnorm_random_vs_two_pass)
{
	/* Full Qwen3 head geometry; independent computation with the mean of squares summed backwards
	 * and the norm as x / rms (instead of x * (1/rms)): equal to the oracle up to double rounding,
	 * so the bf16 results agree except on an exact bf16 tie, checked to within one bf16 ulp. */
	uint64_t seed = sf_test_seed();
	const int64_t T = 3, HQ = 32, HK = 4, D = 128;
	sf_ocall c;
	qkn_setup(&c, T, HQ, HK, D, 1e-6);
	for (int64_t i = 0; i < T * HQ * D; i++)
		qkn_set(&c, QKN_Q, i, sf_rng_normal(seed, 41, (uint64_t)i));
	for (int64_t i = 0; i < T * HK * D; i++)
		qkn_set(&c, QKN_K, i, 3.0 * sf_rng_normal(seed, 42, (uint64_t)i));
	for (int64_t d = 0; d < D; d++) {
		qkn_set(&c, QKN_QW, d, 1.0 + 0.1 * sf_rng_normal(seed, 43, (uint64_t)d));
		qkn_set(&c, QKN_KW, d, 1.0 + 0.1 * sf_rng_normal(seed, 44, (uint64_t)d));
	}
	ot_run(&c);
	int bad = 0, exact = 0, n = 0;
	for (int which = 0; which < 2; which++) {
		int64_t rows = T * (which ? HK : HQ);
		for (int64_t r = 0; r < rows; r++) {
			double ss = 0;
			for (int64_t d = D - 1; d >= 0; d--) {
				double v = sf_load(c.in[which].data, SF_DT_BF16, r * D + d);
				ss += v * v;
			}
			double rms = sqrt(ss / D + 1e-6);
			for (int64_t d = 0; d < D; d++) {
				double v = sf_load(c.in[which].data, SF_DT_BF16, r * D + d);
				double y = sf_load(c.in[2 + which].data, SF_DT_BF16, d) * sf_round_bf16(v / rms);
				double o = qkn_out(&c, which, r * D + d);
				bad += fabs(o - y) > fabs(y) * (1.0 / 64);
				exact += o == y;
				n++;
			}
		}
	}
	CHECK_INT(bad, 0);
	CHECK(exact >= n - 2);
	ot_free(&c);
}
