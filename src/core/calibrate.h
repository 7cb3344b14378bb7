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

/* The copy ceiling of `solforge eval --copy-ceiling`: the calibration copy (tools/calibration/copy,
 * copy.cu on cuda, copy.c on cpu) timed at each workload's own byte count, in the same run and with
 * the same timing settings as the candidate, so that bytes / time can be read as a fraction of what a
 * plain copy of those bytes achieves here. The read ceiling of `--read-ceiling` is the same object
 * over the calibration read (tools/calibration/read: the maximum of each 16 KiB row, read.cu / read.c),
 * whose bytes are all read: the ceiling of read-dominated kernels (small-M GEMM weight streaming). */
typedef struct sf_copy_ceiling {
	sf_eval e;          /* the calibration problem, prepared once (builds cached) */
	sf_eval_opts o;     /* the candidate's options, without baselines or a ceiling of its own */
	double unit_bytes;  /* SOL bytes per unit of the problem's axis: 4 per copied element (read + write),
			     * 16386 per row of the read (16384 read, 2 written) */
	const char *what, *unit; /* "copy" / "elements", "read" / "rows": for messages */
	int ready;
} sf_copy_ceiling;

/* Prepares the copy (builds it) with the timing settings of o. Returns 0, or -1 with err. */
int sf_copy_ceiling_open(sf_copy_ceiling *cc, const sf_eval_opts *o, char *err, size_t errlen);

/* Prepares the read the same way. Returns 0, or -1 with err. */
int sf_read_ceiling_open(sf_copy_ceiling *cc, const sf_eval_opts *o, char *err, size_t errlen);

/* Median seconds of the ceiling's kernel on `bytes` SOL bytes, rounded to whole units (at least one;
 * *moved = the bytes of those units: 4 per element for the copy, 16386 per row for the read), timed
 * like a candidate (timed only: its outputs are not compared; the kernels are checked by the emulation and the
 * end-to-end tests). Returns -1 with err when it did not run. */
double sf_copy_ceiling_time(sf_copy_ceiling *cc, double bytes, double *moved, char *err, size_t errlen);

void sf_copy_ceiling_close(sf_copy_ceiling *cc);

#endif
