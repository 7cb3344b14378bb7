/*
 * tuned.c - a parameterized C solution of rmsnorm_h4096 for the cpu backend and the campaign's autotuner
 * (`solforge campaign --agent tune`; docs/campaign.md): output = weight * bf16(x * rsqrt(mean(x^2) + eps)).
 * The sum of squares runs in fp32 over ACC independent partial sums (more instruction-level
 * parallelism; the summation order changes within the tolerance), the output loop is unrolled UNROLL
 * times. The defaults are the straightforward loop.
 */
// solforge-tune: ACC=1,2,4,8 UNROLL=1,4
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "solforge/solution.h"

#ifndef ACC
#define ACC 1
#endif
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
	if (call->n_inputs != 3 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *xt = &call->inputs[0], *wt = &call->inputs[1], *yt = &call->outputs[0];
	if (xt->ndim != 2 || wt->ndim != 1 || yt->ndim != 2 || xt->dtype.code != SF_CODE_BFLOAT ||
	    wt->dtype.code != SF_CODE_BFLOAT || yt->dtype.code != SF_CODE_BFLOAT || xt->dtype.bits != 16 ||
	    wt->dtype.bits != 16 || yt->dtype.bits != 16)
		return SF_ERR_UNSUPPORTED;
	const int64_t T = xt->shape[0], H = xt->shape[1];
	if (wt->shape[0] != H || yt->shape[0] != T || yt->shape[1] != H)
		return SF_ERR_UNSUPPORTED;
	const float eps = (float)call->scalars[2];
	const uint16_t *x = (const uint16_t *)xt->data, *w = (const uint16_t *)wt->data;
	uint16_t *y = (uint16_t *)yt->data;
	for (int64_t t = 0; t < T; t++) {
		const uint16_t *xr = x + t * H;
		uint16_t *yr = y + t * H;
		float part[ACC];
		for (int a = 0; a < ACC; a++)
			part[a] = 0.0f;
		int64_t h = 0;
		for (; h + ACC <= H; h += ACC)
			for (int a = 0; a < ACC; a++) {
				const float v = bf16_to_f32(xr[h + a]);
				part[a] += v * v;
			}
		for (; h < H; h++) {
			const float v = bf16_to_f32(xr[h]);
			part[0] += v * v;
		}
		float sumsq = 0.0f;
		for (int a = 0; a < ACC; a++)
			sumsq += part[a];
		const float rstd = 1.0f / sqrtf(sumsq / (float)H + eps);
		h = 0;
		for (; h + UNROLL <= H; h += UNROLL)
			for (int u = 0; u < UNROLL; u++) {
				const float v = bf16_to_f32(xr[h + u]), g = bf16_to_f32(w[h + u]);
				yr[h + u] = f32_to_bf16(g * bf16_to_f32(f32_to_bf16(v * rstd)));
			}
		for (; h < H; h++) {
			const int u = 0;
			const float v = bf16_to_f32(xr[h + u]), g = bf16_to_f32(w[h + u]);
			yr[h + u] = f32_to_bf16(g * bf16_to_f32(f32_to_bf16(v * rstd)));
		}
	}
	return SF_OK;
}
