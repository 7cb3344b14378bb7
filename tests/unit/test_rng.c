/*
 * test_rng.c - checks of include/solforge/rng.h: Philox4x32-10 against the Random123 known-answer
 * vectors, the counter/key layout of sf_rng_block, determinism, and the statistics of the derived
 * distributions (uniform, normal, integer) over a million draws from a per-run seed.
 */
#include "test.h"
#include "solforge/rng.h"

#include <stdlib.h>

static int u32x4_is(sf_u32x4 r, uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	if (r.v[0] == a && r.v[1] == b && r.v[2] == c && r.v[3] == d)
		return 1;
	fprintf(stderr, "  got %08x %08x %08x %08x, expected %08x %08x %08x %08x\n", r.v[0], r.v[1], r.v[2],
		r.v[3], a, b, c, d);
	return 0;
}

/* Random123's kat_vectors for philox4x32 with 10 rounds: (counter, key) -> output. */
SF_TEST(rng_philox_kat)
{
	CHECK(u32x4_is(sf_philox4x32(0, 0, 0, 0, 0, 0), 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u));
	CHECK(u32x4_is(sf_philox4x32(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu,
				     0xffffffffu),
		       0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu));
	CHECK(u32x4_is(sf_philox4x32(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u,
				     0x299f31d0u),
		       0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u));
}

SF_TEST(rng_block_layout)
{
	/* counter = (index lo, index hi, stream, constant), key = (seed lo, seed hi) */
	uint64_t seed = 0x0123456789abcdefull, index = 0xfedcba9876543210ull;
	uint32_t stream = 77;
	sf_u32x4 a = sf_rng_block(seed, stream, index);
	sf_u32x4 b = sf_philox4x32(0x76543210u, 0xfedcba98u, 77u, 0x5f0f0e5u, 0x89abcdefu, 0x01234567u);
	CHECK(u32x4_is(a, b.v[0], b.v[1], b.v[2], b.v[3]));
	CHECK(sf_rng_u64(seed, stream, index) == (((uint64_t)a.v[0] << 32) | a.v[1]));
	/* every input matters */
	CHECK(sf_rng_u64(seed, stream, index) != sf_rng_u64(seed ^ 1, stream, index));
	CHECK(sf_rng_u64(seed, stream, index) != sf_rng_u64(seed ^ (1ull << 40), stream, index));
	CHECK(sf_rng_u64(seed, stream, index) != sf_rng_u64(seed, stream + 1, index));
	CHECK(sf_rng_u64(seed, stream, index) != sf_rng_u64(seed, stream, index ^ (1ull << 50)));
	/* splitmix64's finalizer: the first output of a splitmix64 generator seeded with 0 */
	CHECK(sf_mix64(0) == 0xe220a8397b1dcdafull);
}

SF_TEST(rng_uniform_stats)
{
	uint64_t seed = sf_test_seed();
	const int n = 1000000;
	double sum = 0, sum2 = 0, lo = 1, hi = 0;
	int buckets[16] = { 0 };
	for (int i = 0; i < n; i++) {
		double u = sf_rng_uniform(seed, 3, (uint64_t)i);
		CHECK(u >= 0.0 && u < 1.0);
		/* 53 random bits: u * 2^53 is an integer */
		double s = u * 9007199254740992.0;
		if (s != floor(s)) {
			CHECK(s == floor(s));
			break;
		}
		sum += u;
		sum2 += (u - 0.5) * (u - 0.5);
		lo = u < lo ? u : lo;
		hi = u > hi ? u : hi;
		buckets[(int)(u * 16)]++;
	}
	double mean = sum / n, var = sum2 / n;
	/* standard error of the mean: sqrt(1/12/n) = 2.9e-4; of the variance about 7.5e-5 */
	CHECK_NEAR(mean, 0.5, 2e-3);
	CHECK_NEAR(var, 1.0 / 12, 5e-4);
	CHECK(lo < 1e-4 && hi > 1 - 1e-4);
	double chi2 = 0;
	for (int b = 0; b < 16; b++)
		chi2 += (buckets[b] - n / 16.0) * (buckets[b] - n / 16.0) / (n / 16.0);
	CHECK(chi2 < 60); /* 15 degrees of freedom: p < 1e-6 above 60 */
	CHECK(sf_rng_uniform(seed, 3, 5) == sf_rng_uniform(seed, 3, 5));
}

SF_TEST(rng_normal_stats)
{
	uint64_t seed = sf_test_seed();
	const int n = 1000000;
	/* the support: four all-zero words give exactly -2 * sqrt(3) (rounded), all-ones words
	 * (2 - 2^-30) * sqrt(3) */
	const double bound = 2 * 1.7320508075688772;
	double sum = 0, sum2 = 0, sum4 = 0, amax = 0;
	int within1 = 0;
	for (int i = 0; i < n; i++) {
		double x = sf_rng_normal(seed, 9, (uint64_t)i);
		sum += x;
		sum2 += x * x;
		sum4 += x * x * x * x;
		amax = fabs(x) > amax ? fabs(x) : amax;
		within1 += fabs(x) < 1.0;
	}
	double mean = sum / n, var = sum2 / n - mean * mean, kurt = sum4 / n;
	/* standard errors: mean 1e-3; variance sqrt((2.7 - 1) / n) = 1.3e-3 */
	CHECK_NEAR(mean, 0.0, 6e-3);
	CHECK_NEAR(var, 1.0, 8e-3);
	/* Irwin-Hall of four: fourth moment 3 - 6/20 = 2.7 */
	CHECK_NEAR(kurt, 2.7, 0.05);
	CHECK(amax <= bound);
	CHECK(amax > 2.5); /* the tails are there */
	/* P(|x| < 1) for the rescaled Irwin-Hall(4) is 0.66928 (0.6827 for a true normal); standard
	 * error 4.7e-4 */
	CHECK_NEAR((double)within1 / n, 0.66928, 3e-3);
	CHECK(sf_rng_normal(seed, 9, 17) == sf_rng_normal(seed, 9, 17));
	CHECK(sf_rng_normal(seed, 9, 17) != sf_rng_normal(seed, 10, 17));
}

SF_TEST(rng_int_range)
{
	uint64_t seed = sf_test_seed();
	const int n = 700000;
	int counts[7] = { 0 };
	int out_of_range = 0;
	for (int i = 0; i < n; i++) {
		int64_t v = sf_rng_int(seed, 4, (uint64_t)i, -3, 4);
		if (v < -3 || v >= 4) {
			out_of_range++;
			continue;
		}
		counts[v + 3]++;
	}
	CHECK_INT(out_of_range, 0);
	double chi2 = 0;
	for (int b = 0; b < 7; b++)
		chi2 += (counts[b] - n / 7.0) * (counts[b] - n / 7.0) / (n / 7.0);
	CHECK(chi2 < 45); /* 6 degrees of freedom */
	/* a span of one always gives lo; large and negative ranges stay in range */
	for (int i = 0; i < 1000; i++) {
		CHECK_INT(sf_rng_int(seed, 5, (uint64_t)i, 42, 43), 42);
		int64_t v = sf_rng_int(seed, 6, (uint64_t)i, -((int64_t)1 << 40), 5);
		CHECK(v >= -((int64_t)1 << 40) && v < 5);
		int64_t w = sf_rng_int(seed, 7, (uint64_t)i, -100, -90);
		CHECK(w >= -100 && w < -90);
	}
}
