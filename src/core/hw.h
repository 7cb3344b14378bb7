/*
 * hw.h - the hardware spec table: dense datasheet rates per unit class, HBM bandwidth, L2 and SMs,
 * with sources; picked by the detected device name or --hw. T_sol is computed against these
 * (sol.h); `--calibrate` adds measured ceilings beside them.
 */
#ifndef SF_HW_H
#define SF_HW_H

#include "solforge/oracle.h"

typedef struct sf_hw {
	const char *name;          /* e.g. "H200_SXM" */
	const char *match;         /* substring of the CUDA device name that selects it */
	int sms;
	double l2_bytes;
	double hbm_bytes_per_s;
	double rate[SF_UNIT_COUNT]; /* dense FLOP/s (ops/s for sfu); 0 = the chip has no such unit */
	const char *source;
} sf_hw;

/* The table, terminated by an entry with name NULL. */
extern const sf_hw sf_hw_table[];

/* By exact name (case-insensitive) or NULL. */
const sf_hw *sf_hw_by_name(const char *name);
/* By a CUDA device name ("NVIDIA H200", "NVIDIA H100 80GB HBM3") or NULL. */
const sf_hw *sf_hw_by_device(const char *device_name);
/* The spec used when nothing is detected (the cpu backend): a nominal H200, stated as such. */
const sf_hw *sf_hw_default(void);

#endif
