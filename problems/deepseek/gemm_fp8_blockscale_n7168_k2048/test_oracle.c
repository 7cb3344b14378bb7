/* Unit tests of the gemm_fp8_blockscale_n7168_k2048 oracle. */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

static void fbg_setup(sf_ocall *c, int64_t M, int64_t N, int64_t K)
{
	memset(c, 0, sizeof *c);
	ot_input(c, FBG_A, SF_DT_E4M3, 2, (int64_t[]){M, K});
	ot_input(c, FBG_AS, SF_DT_F32, 2, (int64_t[]){M, K / 128});
	ot_input(c, FBG_B, SF_DT_E4M3, 2, (int64_t[]){N, K});
	ot_input(c, FBG_BS, SF_DT_F32, 2, (int64_t[]){N / 128, K / 128});
	ot_output(c, 0, SF_DT_F32, 2, (int64_t[]){M, N});
	c->axis[0] = M;
	c->axis[1] = N;
	c->axis[2] = K;
	c->n_axis = 3;
}

static void fbg_set(sf_ocall *c, int k, int64_t i, double v)
{
	sf_store(c->in[k].data, (sf_dt)c->in[k].dt, i, v);
}

SF_TEST(fp8_blockscale_gemm_by_hand)
{
	/* M = 2, N = 256 (two 128-row weight blocks), K = 256 (two k-blocks).
	 * A row 0: 1 in k-block 0, 2 in k-block 1; A_scale row 0 = {0.25, 0.125}.
	 * A row 1: 0.5 everywhere; A_scale row 1 = {1, 1}.
	 * B: 0.5 everywhere; B_scale block row 0 = {2, 4}, block row 1 = {1, 3}.
	 * C[0, n<128]  = 128*1*0.5*0.25*2 + 128*2*0.5*0.125*4 = 32 + 64 = 96
	 * C[0, n>=128] = 128*1*0.5*0.25*1 + 128*2*0.5*0.125*3 = 16 + 48 = 64
	 * C[1, n<128]  = 128*0.25*1*2 + 128*0.25*1*4 = 64 + 128 = 192
	 * C[1, n>=128] = 128*0.25*1*1 + 128*0.25*1*3 = 32 + 96 = 128 */
	sf_ocall c;
	fbg_setup(&c, 2, 256, 256);
	for (int k = 0; k < 256; k++) {
		fbg_set(&c, FBG_A, k, k < 128 ? 1.0 : 2.0);
		fbg_set(&c, FBG_A, 256 + k, 0.5);
	}
	for (int64_t i = 0; i < 256 * 256; i++)
		fbg_set(&c, FBG_B, i, 0.5);
	const double as[4] = {0.25, 0.125, 1, 1}, bs[4] = {2, 4, 1, 3};
	for (int i = 0; i < 4; i++) {
		fbg_set(&c, FBG_AS, i, as[i]);
		fbg_set(&c, FBG_BS, i, bs[i]);
	}
	ot_run(&c);
	for (int n = 0; n < 256; n++) {
		CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, n), n < 128 ? 96 : 64, 0);
		CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, 256 + n), n < 128 ? 192 : 128, 0);
	}
	ot_free(&c);
}

SF_TEST(fp8_blockscale_gemm_signs_and_single_terms)
{
	/* M = 1, N = 128, K = 128: A = e_3 * 448 (the e4m3 maximum), B row n = -(n % 2 ? 0.015625 : 2)
	 * at k = 3 only; scales 0.5 and 0.25 -> C[n] = 448 * B[n,3] * 0.125 = -112 (even n), -0.875 (odd n) */
	sf_ocall c;
	fbg_setup(&c, 1, 128, 128);
	fbg_set(&c, FBG_A, 3, 448);
	for (int n = 0; n < 128; n++)
		fbg_set(&c, FBG_B, n * 128 + 3, n % 2 ? -0.015625 : -2.0);
	fbg_set(&c, FBG_AS, 0, 0.5);
	fbg_set(&c, FBG_BS, 0, 0.25);
	ot_run(&c);
	for (int n = 0; n < 128; n++)
		CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, n), n % 2 ? -0.875 : -112, 0);
	ot_free(&c);
}

SF_TEST(fp8_blockscale_gemm_random_vs_dequantized)
{
	/* Independent path: dequantize A and B elementwise (value * its block scale), then a plain dot product */
	uint64_t seed = sf_test_seed();
	const int64_t M = 3, N = 256, K = 384, KB = 3;
	sf_ocall c;
	fbg_setup(&c, M, N, K);
	for (int64_t i = 0; i < M * K; i++)
		fbg_set(&c, FBG_A, i, 128.0 * sf_rng_normal(seed, 51, (uint64_t)i));
	for (int64_t i = 0; i < N * K; i++)
		fbg_set(&c, FBG_B, i, 112.0 * sf_rng_normal(seed, 52, (uint64_t)i));
	for (int64_t i = 0; i < M * KB; i++)
		fbg_set(&c, FBG_AS, i, 0.006 + 0.0015 * sf_rng_normal(seed, 53, (uint64_t)i));
	for (int64_t i = 0; i < 2 * KB; i++)
		fbg_set(&c, FBG_BS, i, 2e-4 + 4e-5 * sf_rng_normal(seed, 54, (uint64_t)i));
	ot_run(&c);
	int bad = 0;
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			double ref = 0;
			for (int64_t k = 0; k < K; k++) {
				double a = sf_load(c.in[FBG_A].data, SF_DT_E4M3, m * K + k) *
					   sf_load(c.in[FBG_AS].data, SF_DT_F32, m * KB + k / 128);
				double b = sf_load(c.in[FBG_B].data, SF_DT_E4M3, n * K + k) *
					   sf_load(c.in[FBG_BS].data, SF_DT_F32, (n / 128) * KB + k / 128);
				ref += a * b;
			}
			double got = sf_load(c.out[0].data, SF_DT_F32, m * N + n);
			bad += fabs(got - ref) > 1e-6 * fabs(ref) + 1e-9;
		}
	CHECK_INT(bad, 0);
	ot_free(&c);
}
