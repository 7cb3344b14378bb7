/*
 * read.c - the calibration read for the cpu backend: y[b] = max of row b (16-bit patterns compared
 * as bf16 floats, -inf to start, a NaN never taken). Used by `solforge eval --read-ceiling --backend cpu`.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "solforge/solution.h"

/* bf16 bits -> float (exact) */
static float bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 1 || call->n_outputs != 1 || call->inputs[0].ndim != 2 ||
	    call->outputs[0].ndim != 1 || call->outputs[0].shape[0] != call->inputs[0].shape[0])
		return SF_ERR_UNSUPPORTED;
	const int64_t B = call->inputs[0].shape[0], R = call->inputs[0].shape[1];
	const uint16_t *x = (const uint16_t *)call->inputs[0].data;
	uint16_t *y = (uint16_t *)call->outputs[0].data;
	for (int64_t b = 0; b < B; b++) {
		float m = -INFINITY;
		uint16_t mb = 0xFF80; /* -inf */
		for (int64_t r = 0; r < R; r++) {
			const float v = bf16_to_f32(x[b * R + r]);
			if (v > m) {
				m = v;
				mb = x[b * R + r];
			}
		}
		y[b] = mb;
	}
	return SF_OK;
}
