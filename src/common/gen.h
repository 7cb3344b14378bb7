/*
 * gen.h - drawing one input element from its generator, identically on the host and the device.
 *
 * An input tensor of a workload is filled by a generator (normal, uniform, int, const) from
 * (seed, stream, element index): the cpu runner loops, the cuda runner launches one thread per
 * element (per byte for float4, whose two nibbles share a byte). Custom and file inputs are filled
 * elsewhere (SF_ORACLE_GEN, safetensors).
 */
#ifndef SF_COMMON_GEN_H
#define SF_COMMON_GEN_H

#include "solforge/numeric.h"
#include "solforge/rng.h"

typedef enum sf_gen_kind {
	SF_GEN_NORMAL = 0, /* a + b * N(0,1) */
	SF_GEN_UNIFORM,    /* uniform in [a, b) */
	SF_GEN_INT,        /* integer uniform in [a, b) */
	SF_GEN_CONST,      /* a */
	SF_GEN_CUSTOM,     /* the oracle's SF_ORACLE_GEN */
	SF_GEN_FILE,       /* a safetensors file */
	SF_GEN_SCALAR      /* a scalar input: no tensor */
} sf_gen_kind;

typedef struct sf_genspec {
	int kind;
	double a, b;
} sf_genspec;

/* The value of element i (before rounding to the tensor's dtype). */
static SF_HD inline double sf_gen_value(const sf_genspec *g, uint64_t seed, uint32_t stream, uint64_t i)
{
	switch (g->kind) {
	case SF_GEN_NORMAL:
		return SF_DADD(g->a, SF_DMUL(g->b, sf_rng_normal(seed, stream, i)));
	case SF_GEN_UNIFORM:
		return SF_DADD(g->a, SF_DMUL(SF_DADD(g->b, -g->a), sf_rng_uniform(seed, stream, i)));
	case SF_GEN_INT:
		return (double)sf_rng_int(seed, stream, i, (int64_t)g->a, (int64_t)g->b);
	case SF_GEN_CONST:
		return g->a;
	default:
		return 0.0;
	}
}

/* Stores element i of a tensor of dtype dt (not for float4: use sf_gen_store_e2m1_byte). */
static SF_HD inline void sf_gen_store(void *buf, sf_dt dt, const sf_genspec *g, uint64_t seed, uint32_t stream,
				      int64_t i)
{
	if (g->kind == SF_GEN_INT && !sf_dt_is_float(dt))
		sf_store_int(buf, dt, i, sf_rng_int(seed, stream, (uint64_t)i, (int64_t)g->a, (int64_t)g->b));
	else
		sf_store(buf, dt, i, sf_gen_value(g, seed, stream, (uint64_t)i));
}

/* Stores both elements of byte `byte` of a float4 tensor of numel elements. */
static SF_HD inline void sf_gen_store_e2m1_byte(uint8_t *buf, const sf_genspec *g, uint64_t seed, uint32_t stream,
						int64_t byte, int64_t numel)
{
	int64_t i = 2 * byte;
	uint8_t lo = sf_f64_to_e2m1(sf_gen_value(g, seed, stream, (uint64_t)i));
	uint8_t hi = (i + 1 < numel) ? sf_f64_to_e2m1(sf_gen_value(g, seed, stream, (uint64_t)(i + 1))) : 0;
	buf[byte] = (uint8_t)(lo | (hi << 4));
}

#endif
