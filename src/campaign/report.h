/*
 * report.h - `solforge report DB [--html FILE]`: what a campaign found, from its database.
 *
 * Per problem: baseline time, first and best solution time, the gain over the first solution,
 * speedup over the baseline, SOL score, fraction of the speed of light T_sol/T_k,
 * attempts, who found the best (agent, attempt, worker, solution and defines). Totals: geometric
 * mean speedup, median SOL score, problems that beat the baseline, problems over 2x, the SOL
 * distribution, progress over time, GPU timing holds, the planner's decisions. The HTML form is one
 * self-contained file with inline SVG charts (no script, no external resource).
 */
#ifndef SF_CAMP_REPORT_H
#define SF_CAMP_REPORT_H

#include <stdint.h>
#include <stdio.h>

typedef struct sf_rep_problem {
	char *name, *op_type, *found_by, *solution;
	int64_t attempts, evals;
	int has_best;
	double baseline_ms, first_ms, best_ms, first_speedup, speedup, score;
	double sol_frac;   /* T_sol / T_k of the best (geomean over workloads) */
	double vs_first;   /* first_ms / best_ms: what the campaign gained over the first correct solution */
} sf_rep_problem;

typedef struct sf_rep_point {
	double t;          /* seconds since the campaign's first evaluation started */
	double geomean;    /* geomean best speedup over problems with a best */
	double median_s;   /* median best SOL score */
} sf_rep_point;

typedef struct sf_report {
	char *db, *agent, *backend, *started;
	sf_rep_problem *p;
	int n;
	sf_rep_point *pts;
	int n_pts;
	double geomean, median_s;
	double geomean_vs_first, median_sol_frac;
	int n_best, beat, over2, improved_over_first;
	int hist[10];      /* SOL score distribution in tenths */
	int64_t evaluations, attempts, failed_evals;
	char **decisions;  /* newest first */
	int n_decisions;
	char **slots;      /* "cuda-0: 120 holds, 300.1 s timed, 12.0 s waited" */
	int n_slots;
	double span_s;
} sf_report;

/* Reads the report of a campaign database. 0, or -1 with err. */
int sf_report_load(const char *db_path, sf_report *r, char *err, size_t errlen);
void sf_report_free(sf_report *r);
/* The text form. */
void sf_report_text(const sf_report *r, FILE *f);
/* The HTML form (report_html.c). 0, or -1 with err. */
int sf_report_html(const sf_report *r, const char *path, char *err, size_t errlen);

#endif
