/*
 * rng.h - the counter-based random generator (Philox4x32-10) shared by host and device.
 *
 * A draw is a pure function of (seed, stream, index): the CPU and the GPU produce identical inputs,
 * in any order and in parallel. `stream` separates independent tensors (input index, round, set);
 * `index` is the element. Distributions are built from uniform integers with exactly-rounded double
 * arithmetic (SF_DMUL / SF_DADD), never with libm, so no platform difference can creep in.
 */
#ifndef SOLFORGE_RNG_H
#define SOLFORGE_RNG_H

#include <stdint.h>
#include "numeric.h"

typedef struct sf_u32x4 { uint32_t v[4]; } sf_u32x4;

static SF_HD inline uint32_t sf_mulhilo32(uint32_t a, uint32_t b, uint32_t *hi)
{
	uint64_t p = (uint64_t)a * (uint64_t)b;
	*hi = (uint32_t)(p >> 32);
	return (uint32_t)p;
}

/* Philox4x32 with 10 rounds (Salmon et al., SC'11). */
static SF_HD inline sf_u32x4 sf_philox4x32(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
					   uint32_t k1)
{
	for (int r = 0; r < 10; r++) {
		uint32_t hi0, hi1;
		uint32_t lo0 = sf_mulhilo32(0xD2511F53u, c0, &hi0);
		uint32_t lo1 = sf_mulhilo32(0xCD9E8D57u, c2, &hi1);
		uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
		c0 = n0; c1 = n1; c2 = n2; c3 = n3;
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
	sf_u32x4 out = { { c0, c1, c2, c3 } };
	return out;
}

static SF_HD inline sf_u32x4 sf_rng_block(uint64_t seed, uint32_t stream, uint64_t index)
{
	return sf_philox4x32((uint32_t)index, (uint32_t)(index >> 32), stream, 0x5f0f0e5u, (uint32_t)seed,
			     (uint32_t)(seed >> 32));
}

/* 64 uniform random bits. */
static SF_HD inline uint64_t sf_rng_u64(uint64_t seed, uint32_t stream, uint64_t index)
{
	sf_u32x4 r = sf_rng_block(seed, stream, index);
	return ((uint64_t)r.v[0] << 32) | r.v[1];
}

/* Uniform in [0, 1) with 53 random bits (exact). */
static SF_HD inline double sf_rng_uniform(uint64_t seed, uint32_t stream, uint64_t index)
{
	return (double)(sf_rng_u64(seed, stream, index) >> 11) * (1.0 / 9007199254740992.0);
}

/* Approximately standard normal: Irwin-Hall of four 32-bit uniforms, rescaled to unit variance
 * (support +-2*sqrt(3)). The sum is exact in double; one rounded multiply follows. */
static SF_HD inline double sf_rng_normal(uint64_t seed, uint32_t stream, uint64_t index)
{
	sf_u32x4 r = sf_rng_block(seed, stream, index);
	const double u = 1.0 / 4294967296.0;
	double s = ((double)r.v[0] + (double)r.v[1]) + ((double)r.v[2] + (double)r.v[3]); /* exact */
	s = SF_DMUL(s, u);                                                                /* exact */
	return SF_DMUL(SF_DADD(s, -2.0), 1.7320508075688772);
}

/* Uniform integer in [lo, hi) (hi > lo); modulo bias is below 2^-32 for the ranges used. */
static SF_HD inline int64_t sf_rng_int(uint64_t seed, uint32_t stream, uint64_t index, int64_t lo, int64_t hi)
{
	uint64_t span = (uint64_t)(hi - lo);
	return lo + (int64_t)(sf_rng_u64(seed, stream, index) % span);
}

/* A 64-bit mix (splitmix64 finalizer) to derive seeds: round seeds, set seeds, stream ids. */
static SF_HD inline uint64_t sf_mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

#endif /* SOLFORGE_RNG_H */
