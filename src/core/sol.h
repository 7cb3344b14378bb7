/*
 * sol.h - speed-of-light work and time of a workload, and the SOL score.
 *
 * Work: FLOPs per unit class from the definition's `solforge.sol.flops` expressions (or the oracle's
 * SF_ORACLE_WORK when the count depends on the data), bytes from `solforge.sol.bytes` or, by default,
 * every input read once and every output written once. T_sol = the largest of work_u / rate_u over
 * the unit classes and bytes / HBM bandwidth: units run concurrently, so the slowest one binds.
 * S = 1 / (1 + (T_k - T_sol) / (T_b - T_sol)): 0.5 at the baseline's time, 1.0 at the limit,
 * unclamped (a candidate slower than the baseline scores below 0.5).
 */
#ifndef SF_SOL_H
#define SF_SOL_H

#include "core/hw.h"
#include "core/problem.h"

typedef struct sf_sol {
	double flops[SF_UNIT_COUNT];
	double bytes;
	double t_unit[SF_UNIT_COUNT]; /* seconds per unit class */
	double t_mem;                 /* seconds */
	double t_sol;                 /* seconds */
	int binding;                  /* unit index, or -1 when memory binds */
	int data_dependent;           /* work came from the oracle's SF_ORACLE_WORK */
} sf_sol;

/* Work from the definition for a bound job (job->axis_values in definition axis order). */
int sf_sol_work(const sf_definition *d, const sf_job *job, sf_sol *s, char *err, size_t errlen);
/* Replaces the work with what the oracle counted (bytes < 0 keeps the definition's bytes). */
void sf_sol_apply_work(sf_sol *s, const sf_work *w);
/* Computes the times on hw; -1 with a message if a unit with work has no rate on hw. */
int sf_sol_time(sf_sol *s, const sf_hw *hw, char *err, size_t errlen);
/* SOL score; NaN when T_b <= T_sol (no room between baseline and limit). */
double sf_sol_score(double t_k, double t_b, double t_sol);
/* A time below T_sol by more than this fraction is a reward hack (docs/security.md). */
#define SF_SOL_HACK_MARGIN 0.10
const char *sf_sol_binding_name(const sf_sol *s);

#endif
