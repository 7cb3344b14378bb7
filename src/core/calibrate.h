/*
 * calibrate.h - measured ceilings (`solforge eval --calibrate`): the copy bandwidth and the bf16
 * matrix rate this device achieves, timed exactly as candidates are, and the second, measured-ceiling
 * T_sol and SOL score they give. Datasheet rates stay the primary T_sol; these say how far the
 * practical limit is from it.
 */
#ifndef SF_CALIBRATE_H
#define SF_CALIBRATE_H

#include "core/eval.h"

typedef struct sf_calibration {
	double copy_bytes_per_s;   /* bytes read + written per second by the calibration copy, 0 if unmeasured */
	double copy_bytes;         /* at this size */
	double bf16_flops_per_s;   /* cuBLASLt bf16 GEMM (cuda only), 0 if unmeasured */
	char note[256];
} sf_calibration;

/* Measures the ceilings on the backend of o (a few seconds; the calibration problems ship in
 * tools/calibration and problems/llama). Returns 0, or -1 with err. */
int sf_calibrate(const sf_eval_opts *o, sf_calibration *cal, char *err, size_t errlen);

/* The measured-ceiling T_sol of a workload: memory at the measured copy bandwidth, bf16/fp16 tensor
 * work at the measured matrix rate, other unit classes at their datasheet rate. Seconds, or NaN. */
double sf_sol_measured(const sf_sol *s, const sf_hw *hw, const sf_calibration *cal);

#endif
