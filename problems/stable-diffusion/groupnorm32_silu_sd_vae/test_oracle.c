/* Unit tests of groupnorm32_silu_sd_vae's oracle (GroupNorm + SiLU, float16 NCHW). */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

/* Axes in SF_ORACLE_AXES order: batch_size, num_channels, height, width, num_groups. */
static void sdvae_gn_setup(sf_ocall *c, int64_t N, int64_t C, int64_t H, int64_t W, int64_t G, double eps)
{
	ot_input(c, 0, SF_DT_F16, 4, (int64_t[]){ N, C, H, W });
	ot_input(c, 1, SF_DT_F16, 1, (int64_t[]){ C });
	ot_input(c, 2, SF_DT_F16, 1, (int64_t[]){ C });
	ot_scalar(c, 3, eps);
	ot_output(c, 0, SF_DT_F32, 4, (int64_t[]){ N, C, H, W });
	const int64_t ax[5] = { N, C, H, W, G };
	for (int i = 0; i < 5; i++)
		c->axis[i] = ax[i];
	c->n_axis = 5;
}

static void sdvae_gn_fill(sf_ocall *c, int k, const double *v, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		sf_store(c->in[k].data, SF_DT_F16, i, v[i]);
}

SF_TEST(sdvae_gnsilu_one_group_affine)
{
	/* N=1, C=2, one group, 1x2 plane: x = ch0 [0, 2], ch1 [0, 2].
	 * mean = 4/4 = 1, var = (1+1+1+1)/4 = 1, eps = 0 -> rstd = 1 -> xn = [-1, 1, -1, 1]
	 * gamma = [1, 0.5], beta = [0, 0.25] -> h = [-1, 1, -0.25, 0.75] (exact in float16)
	 * silu(h) = h / (1 + e^-h): [-1/(1+e) = -0.26894142, 1/(1+1/e) = 0.73105858,
	 *   -0.25/(1+e^0.25) = -0.10945587, 0.75/(1+e^-0.75) = 0.50938402] */
	sf_ocall c = { 0 };
	sdvae_gn_setup(&c, 1, 2, 1, 2, 1, 0.0);
	const double x[4] = { 0, 2, 0, 2 }, gamma[2] = { 1, 0.5 }, beta[2] = { 0, 0.25 };
	const double y[4] = { -0.2689414213699951, 0.7310585786300049, -0.10945587477855048, 0.5093840243815447 };
	sdvae_gn_fill(&c, 0, x, 4);
	sdvae_gn_fill(&c, 1, gamma, 2);
	sdvae_gn_fill(&c, 2, beta, 2);
	CHECK_INT(sf_oracle_items(&c), 2);
	ot_run(&c);
	for (int i = 0; i < 4; i++)
		CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, i), y[i], 1e-7);
	ot_free(&c);
}

SF_TEST(sdvae_gnsilu_groups_samples_and_eps)
{
	/* N=2, C=4, G=2 (2 channels a group), 1x2 planes, eps = 3, gamma = 1, beta = [0, 0.5, -0.5, 0.375].
	 * Sample 0 group 0 = ch0 [0, 2], ch1 [0, 2]: mean 1, var 1, rstd = 1/sqrt(1+3) = 0.5
	 *   -> xn = [-0.5, 0.5 | -0.5, 0.5] -> h = [-0.5, 0.5 | 0, 1]
	 * Sample 0 group 1 = ch2 [5, 7], ch3 [5, 7]: mean 6, var 1, rstd 0.5
	 *   -> xn = [-0.5, 0.5 | -0.5, 0.5] -> h = [-1, 0 | -0.125, 0.875]
	 * Sample 1: every value of a group equal (-3, then 100): var 0, xn = 0 -> h = beta per channel
	 *   -> h = [0, 0 | 0.5, 0.5 | -0.5, -0.5 | 0.375, 0.375]
	 * silu: -0.5 -> -0.18877033, 0.5 -> 0.31122967, 1 -> 0.73105858, -1 -> -0.26894142,
	 *       -0.125 -> -0.05859883, 0.875 -> 0.61756190, 0.375 -> 0.22224997, 0 -> 0 */
	sf_ocall c = { 0 };
	sdvae_gn_setup(&c, 2, 4, 1, 2, 2, 3.0);
	const double x[16] = { 0, 2, 0, 2, 5, 7, 5, 7, -3, -3, -3, -3, 100, 100, 100, 100 };
	const double gamma[4] = { 1, 1, 1, 1 }, beta[4] = { 0, 0.5, -0.5, 0.375 };
	const double a = -0.1887703343990727, b = 0.3112296656009273, one = 0.7310585786300049;
	const double m1 = -0.2689414213699951, m8 = -0.05859882832828047, p78 = 0.6175618993573848;
	const double p38 = 0.22224997498277613;
	const double y[16] = { a, b, 0, one, m1, 0, m8, p78, 0, 0, b, b, a, a, p38, p38 };
	sdvae_gn_fill(&c, 0, x, 16);
	sdvae_gn_fill(&c, 1, gamma, 4);
	sdvae_gn_fill(&c, 2, beta, 4);
	CHECK_INT(sf_oracle_items(&c), 8);
	ot_run(&c);
	for (int i = 0; i < 16; i++)
		CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, i), y[i], 1e-7);
	ot_free(&c);
}

SF_TEST(sdvae_gnsilu_norm_output_rounded_to_f16)
{
	/* x = [0, 2] (xn = [-1, 1], eps 0), gamma 1, beta = 3*2^-13 = 0.0003662109375 (a float16).
	 * h = [-1 + 0.000366, 1 + 0.000366]. float16 steps: 2^-11 below 1, 2^-10 above 1:
	 *   -0.9996338 is 0.75 step from -1 and 0.25 step from -(1 - 2^-11) -> -0.99951171875
	 *   1.0003662 is 0.375 step above 1 -> 1
	 * y = [silu(-0.99951171875), silu(1)] = [-0.26890607, 0.73105858]; without the rounding
	 * y[1] would be silu(1.0003662) = 0.73139832. */
	sf_ocall c = { 0 };
	sdvae_gn_setup(&c, 1, 1, 2, 1, 1, 0.0);
	const double x[2] = { 0, 2 }, gamma[1] = { 1 }, beta[1] = { 0.0003662109375 };
	sdvae_gn_fill(&c, 0, x, 2);
	sdvae_gn_fill(&c, 1, gamma, 1);
	sdvae_gn_fill(&c, 2, beta, 1);
	CHECK_NEAR(sf_load(c.in[2].data, SF_DT_F16, 0), 0.0003662109375, 0.0);
	ot_run(&c);
	CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, 0), -0.26890606818629564, 1e-7);
	CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, 1), 0.7310585786300049, 1e-7);
	ot_free(&c);
}

SF_TEST(sdvae_gnsilu_random_vs_one_pass_moments)
{
	/* Random float16 maps; independent check from the moments sum(x), sum(x^2) of each group
	 * (var = E[x^2] - mean^2) and silu(h) = h/2 * (1 + tanh(h/2)). */
	const int64_t N = 2, C = 8, H = 3, W = 5, G = 4, HW = H * W, cpg = C / G;
	const double eps = 1e-6;
	const uint64_t seed = sf_test_seed();
	sf_ocall c = { 0 };
	sdvae_gn_setup(&c, N, C, H, W, G, eps);
	for (int64_t i = 0; i < N * C * HW; i++)
		sf_store(c.in[0].data, SF_DT_F16, i, 0.5 + 2.0 * sf_rng_normal(seed, 1, (uint64_t)i));
	for (int64_t i = 0; i < C; i++) {
		sf_store(c.in[1].data, SF_DT_F16, i, 1.0 + 0.1 * sf_rng_normal(seed, 2, (uint64_t)i));
		sf_store(c.in[2].data, SF_DT_F16, i, 0.1 * sf_rng_normal(seed, 3, (uint64_t)i));
	}
	CHECK_INT(sf_oracle_items(&c), N * C);
	ot_run(&c);
	for (int64_t n = 0; n < N; n++) {
		for (int64_t grp = 0; grp < G; grp++) {
			const int64_t base = (n * C + grp * cpg) * HW, cnt = cpg * HW;
			double s1 = 0, s2 = 0;
			for (int64_t i = 0; i < cnt; i++) {
				const double v = sf_load(c.in[0].data, SF_DT_F16, base + i);
				s1 += v;
				s2 += v * v;
			}
			const double mean = s1 / cnt, var = s2 / cnt - mean * mean;
			for (int64_t i = 0; i < cnt; i++) {
				const int64_t ch = grp * cpg + i / HW;
				const double v = sf_load(c.in[0].data, SF_DT_F16, base + i);
				const double h = sf_round_f16((v - mean) / sqrt(var + eps) * sf_load(c.in[1].data, SF_DT_F16, ch) +
							      sf_load(c.in[2].data, SF_DT_F16, ch));
				const double want = 0.5 * h * (1.0 + tanh(0.5 * h));
				CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, base + i), want, 1e-6 * (1 + fabs(want)));
			}
		}
	}
	ot_free(&c);
}
