/*
 * perturb.h - fresh input content for every timed call, identically on the host and the device.
 *
 * Before each timed call the runner restores the elements it changed before the previous call on
 * the same timing set and redraws a new sample of elements from a fresh 64-bit key u (getrandom,
 * drawn right before the call): element j*step + (mix(u, stream, j) mod step) of every input whose
 * generator is normal, uniform or int, for j < m (one element per block of `step`, so the positions
 * are distinct), with the value its generator gives for seed u at that position (same distribution).
 * No two timed calls see the same inputs, so a cache keyed on an input fingerprint cannot hit with
 * a correct answer; a sampled fingerprint that hits returns stale outputs, which the audits (calls
 * picked at random after the fact, recomputed by the reference from (set, u)) catch.
 *
 * Float4 inputs are perturbed per byte (two elements). Custom, file and const inputs are left as
 * they are (their content may have structure a redraw would break).
 */
#ifndef SF_RUNNER_PERTURB_H
#define SF_RUNNER_PERTURB_H

#include "common/gen.h"

#define RC_PERTURB_DIV 256     /* about one element in 256 changes */
#define RC_PERTURB_MAX 65536   /* at most this many per input */
#define RC_PERTURB_ELEM 8      /* bytes saved per changed element (the widest dtype) */

/* Whether input generator kind `kind` is perturbed. */
static SF_HD inline int rc_perturbed_kind(int kind)
{
	return kind == SF_GEN_NORMAL || kind == SF_GEN_UNIFORM || kind == SF_GEN_INT;
}

/* Units an input is perturbed in: elements, or bytes for float4. */
static SF_HD inline int64_t rc_perturb_units(sf_dt dt, int64_t numel)
{
	return dt == SF_DT_E2M1 ? (numel + 1) / 2 : numel;
}

/* Number of units changed in an input of n units. */
static SF_HD inline int64_t rc_perturb_count(int64_t n)
{
	if (n <= 0)
		return 0;
	int64_t m = n / RC_PERTURB_DIV;
	if (m < 1)
		m = 1;
	if (m > RC_PERTURB_MAX)
		m = RC_PERTURB_MAX;
	return m;
}

/* Unit index of change j (of m) in an input of n units. */
static SF_HD inline int64_t rc_perturb_pos(int64_t n, int64_t m, uint64_t u, uint32_t stream, int64_t j)
{
	int64_t step = n / m;
	uint64_t h = sf_mix64(u ^ ((uint64_t)stream << 40) ^ sf_mix64((uint64_t)j + 0x9e37u));
	return j * step + (int64_t)(h % (uint64_t)step);
}

/* Bytes of one unit. */
static SF_HD inline int rc_perturb_unit_bytes(sf_dt dt)
{
	return dt == SF_DT_E2M1 ? 1 : (int)sf_dt_bytes(dt, 1);
}

/* Writes unit pos of an input (numel elements, generator g) with its value for key u. */
static SF_HD inline void rc_perturb_store(void *buf, sf_dt dt, const sf_genspec *g, uint64_t u, uint32_t stream,
					  int64_t pos, int64_t numel)
{
	if (dt == SF_DT_E2M1)
		sf_gen_store_e2m1_byte((uint8_t *)buf, g, u, stream, pos, numel);
	else
		sf_gen_store(buf, dt, g, u, stream, pos);
}

#endif
