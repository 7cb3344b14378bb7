/* Unit tests of geglu_tanh_h5376_i21504's oracle (y = bf16(gelu_tanh(gate)) * up). */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

/* T tokens, I outputs per token: input x [T, 2I] bf16, output y [T, I] float32. */
static void geglu_setup(sf_ocall *c, int64_t T, int64_t I)
{
	ot_input(c, 0, SF_DT_BF16, 2, (int64_t[]){ T, 2 * I });
	ot_output(c, 0, SF_DT_F32, 2, (int64_t[]){ T, I });
	c->axis[0] = T;
	c->axis[1] = I;
	c->n_axis = 2;
}

SF_TEST(geglu_tanh_hand_values_and_layout)
{
	/* gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))), then rounded to bf16
	 * (8 significant bits):
	 *  g = 1:   inner = 0.79788456*1.044715 = 0.83356197, tanh = 0.68238398,
	 *           gelu = 0.5*1.68238398 = 0.84119199; in [0.5,1) the bf16 step is 2^-8:
	 *           0.84119199*256 = 215.35 -> 215/256 = 0.83984375
	 *  g = -1:  gelu = -1 + 0.84119199 = -0.15880801 (gelu(g) - gelu(-g) = g); step 2^-10:
	 *           162.62 -> -163/1024 = -0.1591796875
	 *  g = 3:   inner = 0.79788456*(3 + 1.207305) = 3.3569437, tanh = 0.99757507,
	 *           gelu = 1.5*1.99757507 = 2.9963626; step 2^-6: 191.77 -> 192/64 = 3
	 *  g = 0.5: inner = 0.79788456*0.50558938 = 0.40340196, tanh = 0.38285604,
	 *           gelu = 0.25*1.38285604 = 0.34571401; step 2^-9: 177.006 -> 177/512 = 0.345703125
	 *  g = -2:  inner = -0.79788456*2.35772 = -1.88118839, tanh = -0.95459769,
	 *           gelu = -1*0.04540231 = -0.04540231; step 2^-12: 185.97 -> -186/4096 = -0.04541015625
	 *  g = 0:   0
	 * x row 0 = gate [1, -1, 3 | up 2, -0.5, 0.25], row 1 = gate [0.5, -2, 0 | up 4, 1, 7]
	 * y row 0 = [0.83984375*2, -0.1591796875*-0.5, 3*0.25] = [1.6796875, 0.07958984375, 0.75]
	 * y row 1 = [0.345703125*4, -0.04541015625*1, 0*7] = [1.3828125, -0.04541015625, 0]
	 * (each product is exact in float32: no tolerance needed.) */
	sf_ocall c = { 0 };
	geglu_setup(&c, 2, 3);
	const double x[12] = { 1, -1, 3, 2, -0.5, 0.25, 0.5, -2, 0, 4, 1, 7 };
	const double y[6] = { 1.6796875, 0.07958984375, 0.75, 1.3828125, -0.04541015625, 0 };
	for (int i = 0; i < 12; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, x[i]);
	CHECK_INT(sf_oracle_items(&c), 6);
	ot_run(&c);
	for (int i = 0; i < 6; i++)
		CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, i), y[i], 0.0);
	ot_free(&c);
}

SF_TEST(geglu_tanh_activation_is_rounded_to_bf16)
{
	/* The unrounded product would be 0.84119199*2 = 1.68238398; the model rounds the activation
	 * to bf16 first, giving 1.6796875 (see above): the two differ by 2.7e-3. */
	sf_ocall c = { 0 };
	geglu_setup(&c, 1, 1);
	sf_store(c.in[0].data, SF_DT_BF16, 0, 1.0);
	sf_store(c.in[0].data, SF_DT_BF16, 1, 2.0);
	ot_run(&c);
	const double got = sf_load(c.out[0].data, SF_DT_F32, 0);
	CHECK_NEAR(got, 1.6796875, 0.0);
	CHECK(fabs(got - 1.68238398) > 2e-3);
	ot_free(&c);
}

SF_TEST(geglu_tanh_random_vs_sigmoid_form)
{
	/* 0.5 g (1 + tanh(u)) == g / (1 + exp(-2u)): an independent formula for the activation. */
	const int64_t T = 3, I = 41;
	const uint64_t seed = sf_test_seed();
	sf_ocall c = { 0 };
	geglu_setup(&c, T, I);
	for (int64_t i = 0; i < T * 2 * I; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, 1.5 * sf_rng_normal(seed, 7, (uint64_t)i));
	ot_run(&c);
	for (int64_t t = 0; t < T; t++) {
		for (int64_t j = 0; j < I; j++) {
			const double g = sf_load(c.in[0].data, SF_DT_BF16, t * 2 * I + j);
			const double up = sf_load(c.in[0].data, SF_DT_BF16, t * 2 * I + I + j);
			const double u = 0.7978845608028654 * (g + 0.044715 * g * g * g);
			const double act = sf_round_bf16(g / (1.0 + exp(-2.0 * u)));
			const double want = (double)(float)(act * up);
			CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, t * I + j), want, 1e-12);
		}
	}
	ot_free(&c);
}
