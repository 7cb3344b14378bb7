/*
 * stats.c - order statistics of timing samples (see stats.h).
 */
#include "core/stats.h"
#include "core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double quantile(const double *s, int n, double q)
{
	double pos = q * (n - 1);
	int i = (int)floor(pos);
	if (i >= n - 1)
		return s[n - 1];
	double f = pos - i;
	return s[i] * (1 - f) + s[i + 1] * f;
}

void sf_stats_compute(const double *x, int n, sf_stats *o)
{
	memset(o, 0, sizeof *o);
	if (n <= 0)
		return;
	double *s = sf_xmalloc(sizeof(double) * (size_t)n);
	memcpy(s, x, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), cmp_double);
	o->n = n;
	o->min = s[0];
	o->max = s[n - 1];
	o->median = quantile(s, n, 0.5);
	o->p10 = quantile(s, n, 0.1);
	o->p90 = quantile(s, n, 0.9);
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += s[i];
	o->mean = sum / n;
	/* The ranks j, k with P(x_(j) <= median <= x_(k)) ~ 95% (normal approximation to the binomial). */
	double h = 0.98 * sqrt((double)n);
	int j = (int)floor(n / 2.0 - h);
	int k = (int)ceil(n / 2.0 + 1 + h) - 1;
	if (j < 0)
		j = 0;
	if (k > n - 1)
		k = n - 1;
	o->ci_lo = s[j];
	o->ci_hi = s[k];
	o->rel_ci = o->median > 0 ? (o->ci_hi - o->ci_lo) / (2 * o->median) : INFINITY;
	if (n < 6)
		o->rel_ci = INFINITY; /* too few samples to claim anything */
	free(s);
}
