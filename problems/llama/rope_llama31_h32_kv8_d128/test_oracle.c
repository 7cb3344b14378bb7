/*
 * Unit tests of the rope_llama31_h32_kv8_d128 oracle and of its positions generator. Head counts
 * and head_dim come from the axes: head_dim 4 gives hand-checkable frequencies (i = 0 unscaled,
 * i = 1 in the llama3 smoothing band); head_dim 128 checks the real frequency table.
 */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

static void rope31_setup(sf_ocall *c, int64_t T, int64_t Hq, int64_t Hk, int64_t D)
{
	memset(c, 0, sizeof *c);
	ot_input(c, 0, SF_DT_BF16, 3, (int64_t[]){ T, Hq, D });
	ot_input(c, 1, SF_DT_BF16, 3, (int64_t[]){ T, Hk, D });
	ot_input(c, 2, SF_DT_I64, 1, (int64_t[]){ T });
	ot_output(c, 0, SF_DT_F32, 3, (int64_t[]){ T, Hq, D });
	ot_output(c, 1, SF_DT_F32, 3, (int64_t[]){ T, Hk, D });
	c->axis[0] = T;
	c->axis[1] = Hq;
	c->axis[2] = Hk;
	c->axis[3] = D;
	c->n_axis = 4;
}

static double rope31_out(const sf_ocall *c, int k, int64_t i)
{
	return sf_load(c->out[k].data, SF_DT_F32, i);
}

/* Llama-3.1's scaled frequency i of head_dim D, written independently of the oracle in long
 * double (HF _compute_llama3_parameters: wavelen = 2 pi / f; > 8192: f / 8; < 2048: f; else the
 * smoothed mix with smooth = (8192 / wavelen - 1) / 3). */
static long double rope31_ref_freq(int i, int D)
{
	long double f = powl(500000.0L, -(long double)(2 * i) / D);
	long double wavelen = 2 * 3.14159265358979323846264338327950288L / f;
	if (wavelen > 8192)
		return f / 8;
	if (wavelen < 2048)
		return f;
	long double smooth = (8192 / wavelen - 1) / 3;
	return (1 - smooth) * f / 8 + smooth * f;
}

SF_TEST(rope31_items_are_pairs)
{
	sf_ocall c;
	rope31_setup(&c, 3, 2, 1, 4);
	CHECK_INT(sf_oracle_items(&c), 3 * 3 * 2);
	CHECK_STR(sf_oracle_axis_names[0], "num_tokens");
	CHECK_STR(sf_oracle_axis_names[1], "num_qo_heads");
	CHECK_STR(sf_oracle_axis_names[2], "num_kv_heads");
	CHECK_STR(sf_oracle_axis_names[3], "head_dim");
	ot_free(&c);
}

SF_TEST(rope31_position_zero_is_identity)
{
	/* angle 0: cos 1, sin 0 -> out = x exactly, for every pair of every head. */
	const uint64_t seed = sf_test_seed();
	sf_ocall c;
	rope31_setup(&c, 1, 3, 2, 8);
	for (int64_t i = 0; i < 24; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, sf_rng_normal(seed, 0, (uint64_t)i));
	for (int64_t i = 0; i < 16; i++)
		sf_store(c.in[1].data, SF_DT_BF16, i, sf_rng_normal(seed, 1, (uint64_t)i));
	ot_run(&c);
	for (int64_t i = 0; i < 24; i++)
		CHECK_NEAR(rope31_out(&c, 0, i), sf_load(c.in[0].data, SF_DT_BF16, i), 0);
	for (int64_t i = 0; i < 16; i++)
		CHECK_NEAR(rope31_out(&c, 1, i), sf_load(c.in[1].data, SF_DT_BF16, i), 0);
	ot_free(&c);
}

SF_TEST(rope31_hand_head_dim4)
{
	/* head_dim 4, one q head, one k head, position 1. Pairs (0, 2) and (1, 3).
	 * i = 0: inv_freq = 500000^0 = 1, wavelen 2 pi < 2048: unscaled; angle = 1.
	 *        cos 1 = 0.54030230587, sin 1 = 0.84147098481.
	 * i = 1: inv_freq = 500000^(-2/4) = 1/707.10678 = 0.00141421356, wavelen = 2 pi * 707.10678
	 *        = 4442.88 (between 2048 and 8192): smooth = (8192 / 4442.88 - 1) / 3 = 0.28128261,
	 *        f = (1 - 0.28128261) * 0.00141421356 / 8 + 0.28128261 * 0.00141421356
	 *          = 0.00012705 + 0.00039779 = 0.00052484616 -> float32 0.000524846138432622;
	 *        angle = 1 * that; cos = 0.99999986227, sin = 0.00052484611.
	 * q = [1, 2, 3, 4]:
	 *   out0 = 1 cos1 - 3 sin1 = 0.54030231 - 2.52441295 = -1.98411065
	 *   out2 = 3 cos1 + 1 sin1 = 1.62090692 + 0.84147098 =  2.46237790
	 *   out1 = 2 cos  - 4 sin  = 1.99999972 - 0.00209938 =  1.99790034
	 *   out3 = 4 cos  + 2 sin  = 3.99999945 + 0.00104969 =  4.00104914
	 * k = [0.5, -1, 2, 0.25]:
	 *   out0 = 0.5 cos1 - 2 sin1    = 0.27015115 - 1.68294197 = -1.41279082
	 *   out2 = 2 cos1 + 0.5 sin1    = 1.08060461 + 0.42073549 =  1.50134010
	 *   out1 = -1 cos - 0.25 sin    = -0.99999986 - 0.00013121 = -1.00013107
	 *   out3 = 0.25 cos + (-1) sin  = 0.24999997 - 0.00052485 =  0.24947512 */
	static const double q[4] = { 1, 2, 3, 4 }, k[4] = { 0.5, -1, 2, 0.25 };
	static const double qo[4] = { -1.98411065, 1.99790034, 2.46237790, 4.00104914 };
	static const double ko[4] = { -1.41279082, -1.00013107, 1.50134010, 0.24947512 };
	sf_ocall c;
	rope31_setup(&c, 1, 1, 1, 4);
	for (int i = 0; i < 4; i++) {
		sf_store(c.in[0].data, SF_DT_BF16, i, q[i]);
		sf_store(c.in[1].data, SF_DT_BF16, i, k[i]);
	}
	sf_store_int(c.in[2].data, SF_DT_I64, 0, 1);
	CHECK(rope31_inv_freq(1, 4) == 0.000524846138432622f);
	ot_run(&c);
	for (int i = 0; i < 4; i++) {
		/* float32 reference buffer: half an ulp is 2.4e-7 at 4; the values above have 8 decimals */
		CHECK_NEAR(rope31_out(&c, 0, i), qo[i], 3e-7);
		CHECK_NEAR(rope31_out(&c, 1, i), ko[i], 3e-7);
	}
	ot_free(&c);
}

SF_TEST(rope31_inv_freq_table_d128)
{
	/* The 64 frequencies of head_dim 128: bands (wavelen = 2 pi / f vs 2048 and 8192) are
	 * i <= 28 unscaled, 29..34 smoothed, >= 35 divided by 8; e.g.
	 *   i = 28: 500000^(-56/128) = 1/311.26 -> wavelen 1955.8 < 2048 (unscaled)
	 *   i = 29: 500000^(-58/128) = 1/382.38 -> wavelen 2402.6 (smoothed)
	 *   i = 34: 500000^(-68/128) = 1/1064.4 -> wavelen 6687.9 (smoothed)
	 *   i = 35: 500000^(-70/128) = 1/1307.98 -> wavelen 8218.3 > 8192 (divided by 8)
	 * Each float32 value must be the rounding of the long double value, and that value must sit
	 * well away from a float32 rounding tie, so that any double evaluation (CPU, GPU, torch
	 * float64) rounds to the same float32. */
	CHECK(rope31_inv_freq(0, 128) == 1.0f);
	CHECK(rope31_inv_freq(28, 128) == (float)powl(500000.0L, -56.0L / 128));
	CHECK(rope31_inv_freq(35, 128) == (float)(powl(500000.0L, -70.0L / 128) / 8));
	CHECK(rope31_inv_freq(63, 128) == (float)(powl(500000.0L, -126.0L / 128) / 8));
	for (int i = 0; i < 64; i++) {
		long double f = rope31_ref_freq(i, 128);
		float f32 = rope31_inv_freq(i, 128);
		CHECK(f32 == (float)f);
		/* distance to the nearest tie, in float32 ulps of f: must exceed 1e-6 ulp, far above
		 * double's rounding error (~2^-29 ulp) */
		long double ulp = (long double)nextafterf(f32, INFINITY) - f32;
		long double frac = (f - f32) / ulp; /* in [-0.5, 0.5] */
		CHECK(fabsl(fabsl(frac) - 0.5L) > 1e-6L);
	}
}

SF_TEST(rope31_angle_is_float32_product)
{
	/* position 131071, head_dim 128, pair i = 1: inv_freq = float32(500000^(-2/128))
	 * = 0.81462 (unscaled). The exact product 131071 * f is not a float32; the oracle rotates
	 * by float32(131071 * f = 106772.7...), up to half an ulp (2^-8 rad) from the exact product,
	 * which moves cos and sin by up to ~4e-3. x = unit vector on element 1:
	 * out1 = cos(angle32), out65 = sin(angle32). */
	sf_ocall c;
	rope31_setup(&c, 1, 1, 1, 128);
	sf_store(c.in[0].data, SF_DT_BF16, 1, 1.0);
	sf_store_int(c.in[2].data, SF_DT_I64, 0, 131071);
	ot_run(&c);
	float f = rope31_inv_freq(1, 128);
	float a32 = (float)131071 * f;
	double a64 = 131071.0 * (double)f;
	CHECK(a32 != a64);
	CHECK_NEAR(rope31_out(&c, 0, 1), cos((double)a32), 1e-7);
	CHECK_NEAR(rope31_out(&c, 0, 65), sin((double)a32), 1e-7);
	CHECK(fabs(cos((double)a32) - cos(a64)) > 1e-5 || fabs(sin((double)a32) - sin(a64)) > 1e-5);
	ot_free(&c);
}

SF_TEST(rope31_random_vs_complex_rotation)
{
	/* Random q, k and positions; each pair (x[i], x[i + 64]) as the complex number x1 + i x2 is
	 * multiplied by e^(i angle) with the long double frequency of rope31_ref_freq. */
	const int64_t T = 3, Hq = 2, Hk = 1, D = 128;
	const uint64_t seed = sf_test_seed();
	sf_ocall c;
	rope31_setup(&c, T, Hq, Hk, D);
	for (int64_t i = 0; i < T * Hq * D; i++)
		sf_store(c.in[0].data, SF_DT_BF16, i, sf_rng_normal(seed, 0, (uint64_t)i));
	for (int64_t i = 0; i < T * Hk * D; i++)
		sf_store(c.in[1].data, SF_DT_BF16, i, sf_rng_normal(seed, 1, (uint64_t)i));
	for (int64_t t = 0; t < T; t++)
		sf_store_int(c.in[2].data, SF_DT_I64, t, sf_rng_int(seed, 2, (uint64_t)t, 0, 131072));
	ot_run(&c);
	for (int64_t t = 0; t < T; t++) {
		long long pos = (long long)sf_load_int(c.in[2].data, SF_DT_I64, t);
		for (int64_t h = 0; h < Hq + Hk; h++) {
			int k = h < Hq ? 0 : 1;
			int64_t base = h < Hq ? (t * Hq + h) * D : (t * Hk + h - Hq) * D;
			for (int64_t i = 0; i < D / 2; i++) {
				float a = (float)pos * (float)rope31_ref_freq((int)i, (int)D);
				long double x1 = sf_load(c.in[k].data, SF_DT_BF16, base + i);
				long double x2 = sf_load(c.in[k].data, SF_DT_BF16, base + D / 2 + i);
				long double re = x1 * cosl(a) - x2 * sinl(a), im = x1 * sinl(a) + x2 * cosl(a);
				CHECK_NEAR(rope31_out(&c, k, base + i), (double)re, 1e-6);
				CHECK_NEAR(rope31_out(&c, k, base + D / 2 + i), (double)im, 1e-6);
			}
		}
	}
	ot_free(&c);
}

/* Runs the generator on a positions tensor of T entries (q and k of one head of dim 2 filled with
 * a pattern that it must leave alone). */
static void rope31_gen(sf_gcall *g, int64_t T, uint64_t seed, const int *is_custom)
{
	static const char *const names[3] = { "q", "k", "positions" };
	memset(g, 0, sizeof *g);
	rope31_setup(&g->c, T, 1, 1, 2);
	for (int64_t i = 0; i < 2 * T; i++) {
		sf_store(g->c.in[0].data, SF_DT_BF16, i, 3.0);
		sf_store(g->c.in[1].data, SF_DT_BF16, i, -5.0);
	}
	for (int64_t t = 0; t < T; t++)
		sf_store_int(g->c.in[2].data, SF_DT_I64, t, -1);
	g->in_names = names;
	g->is_custom = is_custom;
	g->seed = seed;
}

SF_TEST(rope31_gen_positions_valid_for_any_seed)
{
	/* For many seeds and sizes: num_tokens positions in [0, 131072), made of runs of consecutive
	 * positions; the same seed gives the same positions; q and k untouched; a prefill-sized batch
	 * has prefill chunks (some runs longer than 1) and decode tokens. */
	static const int custom[3] = { 0, 0, 1 };
	static const int64_t sizes[] = { 1, 2, 3, 8, 100, 1000, 5000 };
	const uint64_t base_seed = sf_test_seed();
	for (int s = 0; s < 20; s++) {
		for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
			const int64_t T = sizes[z];
			const uint64_t seed = sf_mix64(base_seed + (uint64_t)s);
			sf_gcall g, h;
			rope31_gen(&g, T, seed, custom);
			rope31_gen(&h, T, seed, custom);
			CHECK_INT(sf_oracle_gen(&g), 0);
			CHECK_INT(sf_oracle_gen(&h), 0);
			int64_t runs = 0, longest = 0, cur = 0;
			for (int64_t t = 0; t < T; t++) {
				int64_t p = sf_load_int(g.c.in[2].data, SF_DT_I64, t);
				CHECK(p >= 0 && p < 131072);
				CHECK_INT(p, sf_load_int(h.c.in[2].data, SF_DT_I64, t));
				if (t > 0 && p == sf_load_int(g.c.in[2].data, SF_DT_I64, t - 1) + 1) {
					cur++;
				} else {
					runs++;
					cur = 1;
				}
				if (cur > longest)
					longest = cur;
			}
			/* (two runs may abut by chance, so a run length is not checked against its cap) */
			if (T >= 1000)
				CHECK(longest > 1 && runs > 1);
			for (int64_t i = 0; i < 2 * T; i++) {
				CHECK_NEAR(sf_load(g.c.in[0].data, SF_DT_BF16, i), 3.0, 0);
				CHECK_NEAR(sf_load(g.c.in[1].data, SF_DT_BF16, i), -5.0, 0);
			}
			ot_free(&g.c);
			ot_free(&h.c);
		}
	}
}

SF_TEST(rope31_gen_only_when_custom)
{
	/* positions not flagged custom (a workload that supplies them from a file): left alone.
	 * A float positions tensor is refused with a message. */
	static const int none[3] = { 0, 0, 0 }, custom[3] = { 0, 0, 1 };
	sf_gcall g;
	rope31_gen(&g, 16, 7, none);
	CHECK_INT(sf_oracle_gen(&g), 0);
	for (int64_t t = 0; t < 16; t++)
		CHECK_INT(sf_load_int(g.c.in[2].data, SF_DT_I64, t), -1);
	ot_free(&g.c);
	rope31_gen(&g, 4, 7, custom);
	free(g.c.in[2].data);
	ot_tensor(&g.c.in[2], SF_DT_F32, 1, (int64_t[]){ 4 });
	CHECK_INT(sf_oracle_gen(&g), -1);
	CHECK(strstr(g.err, "positions") != NULL);
	ot_free(&g.c);
}
