/*
 * stats.h - summary statistics of timing samples: median, spread, and the 95% confidence interval of
 * the median from order statistics (distribution-free), used as the runners' stopping rule.
 */
#ifndef SF_STATS_H
#define SF_STATS_H

typedef struct sf_stats {
	int n;
	double median, min, max, mean;
	double p10, p90;
	double ci_lo, ci_hi; /* 95% CI of the median */
	double rel_ci;       /* (ci_hi - ci_lo) / (2 * median) */
} sf_stats;

/* Computes the statistics of x[0..n) (n >= 1; x is not modified). */
void sf_stats_compute(const double *x, int n, sf_stats *out);

#endif
