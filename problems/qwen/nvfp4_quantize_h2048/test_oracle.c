/* Unit tests of the nvfp4_quantize_h2048 oracle. */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

static void nvq_setup(sf_ocall *c, int64_t T, int64_t H, double gs)
{
	memset(c, 0, sizeof *c);
	ot_input(c, 0, SF_DT_BF16, 2, (int64_t[]){T, H});
	ot_scalar(c, 1, gs);
	ot_output(c, 0, SF_DT_F32, 2, (int64_t[]){T, H});
	ot_output(c, 1, SF_DT_F32, 2, (int64_t[]){T, H / 16});
	c->axis[0] = T;
	c->axis[1] = H;
	c->n_axis = 2;
}

static double nvq_q(const sf_ocall *c, int64_t i)
{
	return sf_load(c->out[0].data, SF_DT_F32, i);
}

static double nvq_s(const sf_ocall *c, int64_t i)
{
	return sf_load(c->out[1].data, SF_DT_F32, i);
}

SF_TEST(nvfp4_quant_identity_scale)
{
	/* gs = 1, block amax 6: s = f32(1 * f32(6 * f32(1/6))); f32(1/6) = 0.16666667163372040,
	 * 6 * that = 1.0000000298 which rounds to 1.0f (half ulp of 1 is 5.96e-8) -> scale e4m3(1) = 1,
	 * out_scale = 1/(1*1) = 1: every value is simply rounded to e2m1, ties to even:
	 *   0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4 (ties),
	 *   0.2578125 -> 0.5, -2.75 -> -3, 6 -> 6, -0.1 -> -0 (== 0), 1.5 -> 1.5, 0.5 -> 0.5, 0 -> 0, 4.5 -> 4, 5.5 -> 6 */
	const double x[16] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 0.2578125, -2.75, 6, -0.1, 1.5, 0.5, 0, 4.5, 5.5};
	const double q[16] = {0, 1, 1, 2, 2, 4, 4, 0.5, -3, 6, 0, 1.5, 0.5, 0, 4, 6};
	sf_ocall c;
	nvq_setup(&c, 1, 16, 1.0);
	for (int i = 0; i < 16; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, x[i]);
	ot_run(&c);
	CHECK_NEAR(nvq_s(&c, 0), 1.0, 0);
	for (int i = 0; i < 16; i++)
		CHECK_NEAR(nvq_q(&c, i), q[i], 0);
	ot_free(&c);
}

SF_TEST(nvfp4_quant_global_scale_224)
{
	/* gs = 224 = 448*6/12, block amax 12: f32(12 * f32(1/6)) = f32(2.0000000596) = 2.0f, s = 224*2 = 448
	 * -> scale e4m3 448 (0x7e). f32(1/224) = 0.004464285913854837; 448 * that = 2.0000000894 -> 2.0f;
	 * out_scale = 1/2 = 0.5. q = e2m1(x/2):
	 *   12 -> 6, 5 -> 2.5 -> 2 (tie to even), -2.59375 (bf16 of -2.6) -> -1.296875 -> -1.5,
	 *   1 -> 0.5, 0.30078125 (bf16 of 0.3) -> 0.150390625 -> 0, -7 -> -3.5 -> -4 (tie to even),
	 *   3 -> 1.5, 2.5 -> 1.25 -> 1 (tie to even), rest 0 */
	const double x[6] = {12, 5, -2.6, 1, 0.3, -7};
	const double q[6] = {6, 2, -1.5, 0.5, 0, -4};
	sf_ocall c;
	nvq_setup(&c, 1, 32, 224.0);
	for (int i = 0; i < 6; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, x[i]);
	/* second block: {3, 2.5}, amax 3: s = f32(224 * f32(3 * f32(1/6))) = f32(224 * 0.5) = 112 -> e4m3 112;
	 * out_scale = 1/f32(112 * f32(1/224)) = 1/0.5 = 2 -> 3*2 = 6, 2.5*2 = 5 -> 4 (tie to even) */
	sf_store(c.in[0].data, SF_DT_BF16, 16, 3);
	sf_store(c.in[0].data, SF_DT_BF16, 17, 2.5);
	ot_run(&c);
	CHECK_NEAR(nvq_s(&c, 0), 448, 0);
	for (int i = 0; i < 6; i++)
		CHECK_NEAR(nvq_q(&c, i), q[i], 0);
	for (int i = 6; i < 16; i++)
		CHECK_NEAR(nvq_q(&c, i), 0, 0);
	CHECK_NEAR(nvq_s(&c, 1), 112, 0);
	CHECK_NEAR(nvq_q(&c, 16), 6, 0);
	CHECK_NEAR(nvq_q(&c, 17), 4, 0);
	ot_free(&c);
}

SF_TEST(nvfp4_quant_saturation_zero_and_underflow)
{
	/* block 0: gs = 1000, amax 6 -> s = 1000 -> e4m3 saturates to 448; f32(1/1000) = 0.0010000000474974513,
	 *   448 * that = 0.44800002128 -> f32 0.4480000138282776; out_scale = f32(1/0.44800001) = 2.2321427;
	 *   x = 6 -> 13.39 -> 6 (saturates), 1 -> 2.2321 -> 2, 0.5 -> 1.116 -> 1, -1.25 -> -2.79 -> -3.
	 * block 1: all zero -> amax 0 -> scale 0 -> out_scale 0 -> q 0.
	 * block 2: amax 2^-20 -> s = 1000 * 2^-20 / 6 = 1.59e-4, below half the smallest e4m3 subnormal
	 *   2^-9 = 1.95e-3 -> scale 0 -> out_scale 0 -> q 0 (not inf or NaN). */
	sf_ocall c;
	nvq_setup(&c, 1, 48, 1000.0);
	const double x[4] = {6, 1, 0.5, -1.25};
	const double q[4] = {6, 2, 1, -3};
	for (int i = 0; i < 4; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, x[i]);
	sf_store(c.in[0].data, SF_DT_BF16, 32, 0.00000095367431640625);
	sf_store(c.in[0].data, SF_DT_BF16, 33, -0.00000095367431640625);
	ot_run(&c);
	CHECK_NEAR(nvq_s(&c, 0), 448, 0);
	for (int i = 0; i < 4; i++)
		CHECK_NEAR(nvq_q(&c, i), q[i], 0);
	CHECK_NEAR(nvq_s(&c, 1), 0, 0);
	CHECK_NEAR(nvq_s(&c, 2), 0, 0);
	for (int i = 16; i < 48; i++)
		CHECK_NEAR(nvq_q(&c, i), 0, 0);
	ot_free(&c);
}

SF_TEST(nvfp4_quant_subnormal_scale)
{
	/* gs = 1, amax 0.0234375 (= 3/128, exact in bf16): f32(0.0234375 * f32(1/6)) = 0.00390625 (2^-8:
	 * 3/128/6 = 1/256, and f32(1/6)*3/128 rounds back to 2^-8) -> e4m3 subnormal 2^-8 = 2 * 2^-9;
	 * out_scale = 1/(2^-8 * 1) = 256; x = 3/128 -> 6, 1/128 -> 2, -1/256 -> -1 */
	sf_ocall c;
	nvq_setup(&c, 1, 16, 1.0);
	sf_store(c.in[0].data, SF_DT_BF16, 0, 0.0234375);
	sf_store(c.in[0].data, SF_DT_BF16, 1, 0.0078125);
	sf_store(c.in[0].data, SF_DT_BF16, 2, -0.00390625);
	ot_run(&c);
	CHECK_NEAR(nvq_s(&c, 0), 0.00390625, 0);
	CHECK_NEAR(nvq_q(&c, 0), 6, 0);
	CHECK_NEAR(nvq_q(&c, 1), 2, 0);
	CHECK_NEAR(nvq_q(&c, 2), -1, 0);
	ot_free(&c);
}

/* e2m1 by the threshold table of the NVFP4 recipe (FlashInfer's cast_to_fp4), independent of numeric.h */
static float nvq_e2m1_table(float v)
{
	float a = v < 0 ? -v : v, r;
	if (a <= 0.25f) r = 0.0f;
	else if (a < 0.75f) r = 0.5f;
	else if (a <= 1.25f) r = 1.0f;
	else if (a < 1.75f) r = 1.5f;
	else if (a <= 2.5f) r = 2.0f;
	else if (a < 3.5f) r = 3.0f;
	else if (a <= 5.0f) r = 4.0f;
	else r = 6.0f;
	return v < 0 ? -r : r;
}

SF_TEST(nvfp4_quant_random_vs_float_arithmetic)
{
	/* Independent computation in float arithmetic (compiled with -ffp-contract=off: every operation is
	 * a rounded float32 operation, the semantics the oracle emulates in double) */
	uint64_t seed = sf_test_seed();
	const int64_t T = 5, H = 2048;
	for (int round = 0; round < 4; round++) {
		float gs = (float)(100.0 + 2000.0 * sf_rng_uniform(seed, 21, (uint64_t)round));
		sf_ocall c;
		nvq_setup(&c, T, H, gs);
		double std = round == 3 ? 0.02 : 1.0 + round;
		for (int64_t i = 0; i < T * H; i++)
			sf_store(c.in[0].data, SF_DT_BF16, i, std * sf_rng_normal(seed, 22 + round, (uint64_t)i));
		ot_run(&c);
		int bad = 0;
		for (int64_t blk = 0; blk < T * H / 16; blk++) {
			float x[16], amax = 0.0f;
			for (int i = 0; i < 16; i++) {
				x[i] = (float)sf_load(c.in[0].data, SF_DT_BF16, blk * 16 + i);
				amax = fmaxf(amax, fabsf(x[i]));
			}
			float s = gs * (amax * (1.0f / 6.0f));
			float scale = (float)sf_e4m3_to_f64(sf_f64_to_e4m3(s));
			float out_scale = scale == 0.0f ? 0.0f : 1.0f / (scale * (1.0f / gs));
			if (nvq_s(&c, blk) != scale)
				bad++;
			for (int i = 0; i < 16; i++)
				if (nvq_q(&c, blk * 16 + i) != nvq_e2m1_table(x[i] * out_scale))
					bad++;
		}
		CHECK_INT(bad, 0);
		ot_free(&c);
	}
}
