/*
 * tuned.c - a parameterized C solution of silu_and_mul_i14336 for the cpu backend and the campaign's
 * autotuner (`solforge campaign --agent tune`; docs/campaign.md):
 * out[t, i] = bf16(silu(x[t, i]) * x[t, I + i]), silu(g) = g / (1 + expf(-g)) in fp32. The inner
 * loop is unrolled UNROLL times; the default is the plain loop.
 */
// solforge-tune: UNROLL=1,2,4,8
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "solforge/solution.h"

#ifndef UNROLL
#define UNROLL 1
#endif

/* bf16 <-> fp32 by bit manipulation; fp32 -> bf16 rounds to nearest even, NaN stays a quiet NaN. */
static inline float bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static inline uint16_t f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 1 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *xt = &call->inputs[0], *yt = &call->outputs[0];
	if (xt->ndim != 2 || yt->ndim != 2 || xt->dtype.code != SF_CODE_BFLOAT || yt->dtype.code != SF_CODE_BFLOAT ||
	    yt->shape[0] != xt->shape[0] || xt->shape[1] != 2 * yt->shape[1])
		return SF_ERR_UNSUPPORTED;
	const int64_t T = yt->shape[0], I = yt->shape[1];
	const uint16_t *x = (const uint16_t *)xt->data;
	uint16_t *y = (uint16_t *)yt->data;
	for (int64_t t = 0; t < T; t++) {
		const uint16_t *gate = x + t * 2 * I, *up = gate + I;
		uint16_t *yr = y + t * I;
		int64_t i = 0;
		for (; i + UNROLL <= I; i += UNROLL)
			for (int u = 0; u < UNROLL; u++) {
				const float g = bf16_to_f32(gate[i + u]);
				yr[i + u] = f32_to_bf16(g / (1.0f + expf(-g)) * bf16_to_f32(up[i + u]));
			}
		for (; i < I; i++) {
			const float g = bf16_to_f32(gate[i]);
			yr[i] = f32_to_bf16(g / (1.0f + expf(-g)) * bf16_to_f32(up[i]));
		}
	}
	return SF_OK;
}
