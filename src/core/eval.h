/*
 * eval.h - evaluating one solution on one problem: the orchestration of `solforge eval`.
 *
 * For every workload: bind axes and shapes, count the SOL work, run the reference in one runner
 * process, the candidate in another (never holding the reference), each baseline in its own, compare
 * every round's outputs here in the trusted parent, and score: T_k (candidate median), T_b (fastest
 * correct baseline, same run, same device, same method), T_sol (sol.h), S and speedup.
 * Secret seeds come from the OS unless opts->seed is given (reproducible, but a candidate that knew
 * the seed could precompute: use only for debugging).
 */
#ifndef SF_EVAL_H
#define SF_EVAL_H

#include <stdint.h>
#include <stdio.h>
#include "core/backend.h"
#include "core/check.h"
#include "core/compile.h"
#include "core/hw.h"
#include "core/problem.h"
#include "core/sol.h"
#include "core/solution.h"
#include "core/stats.h"
#include "core/util.h"
#include "core/status.h"

typedef struct sf_eval_opts {
	const sf_backend *backend;
	const char *hw_name;          /* NULL: detect from the device */
	int rounds;                   /* correctness rounds with fresh inputs (default 3) */
	uint64_t seed;
	int seed_given;
	double ref_timeout_s, sol_timeout_s, compile_timeout_s;
	double budget_ms, target_rel_ci, warmup_ms;
	int min_iters, max_iters;
	int flush_reads;              /* --flush reads: the cache flushed by a read sweep before each timed call (clean lines
				       * left), not a memset (up to the buffer's size in dirty lines, whose write-back the timed
				       * call shares); the candidate, its baselines and the ceilings alike (docs/runner.md) */
	int no_baseline;
	const char *const *baselines_only; /* --baseline NAME...: time only the baselines named here (the definition's
					    * names, or "oracle-c" for the cpu backend's implicit one), NULL-terminated;
					    * NULL: all of them. sf_eval_prepare fails (SF_EXIT_USAGE) on a name the
					    * definition lacks. T_b is then the best of this subset, and the log says so. */
	int build_only;           /* only compiling (--prepare-only): the backend need not be able to run */
	double cpu_max_work;          /* cpu backend: workloads with more FLOPs + bytes are SKIPPED */
	const char *only;             /* only workloads whose uuid contains this */
	int keep;                     /* keep the scratch folder */
	FILE *progress;               /* one line per finished workload, or NULL */
	const struct sf_calibration *calibration; /* measured ceilings (calibrate.h), or NULL */
	struct sf_copy_ceiling *copy_ceiling;     /* time a same-size copy per workload (calibrate.h), or NULL */
	struct sf_copy_ceiling *read_ceiling;     /* time a same-size read per workload (calibrate.h), or NULL */
	const char *const *defines;   /* "NAME=VALUE" compiler defines for the candidate (-D), NULL-terminated or NULL */
	int no_torch;                 /* leave the PyTorch baselines out (--no-torch) */
	int xval;                     /* also run the definition's PyTorch reference through the bridge and
				         check it against the C oracle (docs/bridge.md) */
	int diag_time_failed;         /* --diag-time-failed (diagnostic builds only): a candidate whose outputs are
				         wrong keeps its failing status, and its timed calls' median is reported
				         as solforge.diag_unchecked_latency_ms (with the copy / read ceilings) */
} sf_eval_opts;

void sf_eval_opts_default(sf_eval_opts *o);
/* Whether --only selects a workload: its uuid contains o->only, or equals what follows a leading '='. */
int sf_eval_selected(const sf_eval_opts *o, const char *uuid);

typedef struct sf_wresult {
	const sf_workload *w;
	sf_status status;
	char *log;                    /* what went wrong, or notes */
	sf_check check;
	int have_check;
	sf_sol sol;
	int have_sol;
	sf_stats tk, tb;
	int have_tk, have_tb;
	char *baseline;               /* name of the fastest correct baseline */
	char *baselines_json;         /* every baseline's outcome: JSON array items, or NULL */
	char *timing_method;
	double score, speedup;
	double sol_measured_s;        /* T_sol at the measured ceilings (NaN without --calibrate) */
	double clock_ms;             /* the external clock's time per call (eval_workload.c clock_check), or NAN */
	double score_measured;        /* S against that T_sol */
	double copy_s;                /* the calibration copy of the workload's SOL bytes, same run (NaN without --copy-ceiling) */
	double bw_fraction;           /* (bytes / T_k) / (bytes / copy_s) = copy_s / T_k, or NaN */
	double copy_bytes;            /* bytes the copy moved (the SOL bytes rounded to 4), 0 without it */
	double read_s;                /* the calibration read of the workload's SOL bytes, same run (NaN without --read-ceiling) */
	double read_fraction;         /* (bytes / T_k) / (bytes / read_s) = read_s / T_k, or NaN */
	double read_bytes;            /* bytes the read took in (the SOL bytes rounded to 16386-byte rows), 0 without it */
	double unchecked_ms;          /* --diag-time-failed: median time of a candidate whose outputs were wrong, or NaN */
	double wall_s;                /* evaluation wall time of this workload */
	int rounds;                   /* correctness rounds run */
	char timestamp[32];
} sf_wresult;

typedef struct sf_baseline_build {
	char *name;
	char *entry;
	sf_build build;
	char *error;                  /* NULL when it built (torch: when the bridge is usable) */
	int torch, compile;           /* a PyTorch baseline run by the bridge (docs/bridge.md) */
	char *source;
} sf_baseline_build;

typedef struct sf_eval {
	sf_definition def;
	sf_workload *ws;
	int n_ws;
	sf_solution sol;
	sf_build sol_build, module_build;
	char *compile_error;          /* the candidate did not build: its log */
	char *hack_error;             /* the built candidate failed the static import check (imports.h) */
	sf_baseline_build *baselines;
	int n_baselines;
	const sf_hw *hw;
	char *device;
	char *home, *scratch;
	uint64_t secret;
	sf_wresult *res;
	int n_res;
	struct sf_bridge *bridge;     /* the PyTorch bridge, when a task needs it (bridge.h), else NULL */
	int torch_ref;                /* no C oracle: the definition's PyTorch reference is the oracle */
	char *cpu_module;             /* the problem module built for the cpu (custom inputs for the bridge) */
	int flush_reads;              /* the options' flush_reads, for the trace */
	sf_build cpu_module_build;
} sf_eval;

/* Loads the problem and solution, builds everything once. On a compile failure of the candidate it
 * returns 0 with e->sol_build failed and every workload COMPILE_ERROR (see sf_eval_workload);
 * other failures return -1 with *exit_code and a message. */
int sf_eval_prepare(sf_eval *e, const char *problem, const char *solution, const sf_eval_opts *o, int *exit_code,
		    char *err, size_t errlen);

/* Builds (or finds in the cache) a problem module: the oracle compiled for backend b with its wrapper.
 * Every evaluation and oracle-check goes through here, so they share cache entries. */
int sf_build_module(const sf_backend *b, const char *home, const char *oracle, double timeout_s, sf_build *out,
		    char *err, size_t errlen);

/* Evaluates workload i into e->res[i]. */
void sf_eval_workload(sf_eval *e, int i, const sf_eval_opts *o);

/* Times the solution on workload i without a reference or a comparison (for calibration kernels
 * tested elsewhere, such as the copy of --copy-ceiling): one runner in solution mode, one round, the
 * usual checks of return code, guards and inputs, the timing settings of o. Returns the median in
 * milliseconds, or -1 with err. */
double sf_eval_time_only(sf_eval *e, int i, const sf_eval_opts *o, char *err, size_t errlen);

void sf_eval_free(sf_eval *e, const sf_eval_opts *o);

/* What a runner process left behind (result.json, or how it ended). */
typedef struct sf_runner_out {
	int ok;              /* result.json read and status "ok" */
	char *status;        /* result.json status, or NULL when there was none */
	char *message;       /* result.json message, or how the process ended + log tail */
	int have_work;
	sf_work work;
	double *samples;
	int n_samples;
	char *method;
	double timed_wall_ms;
	int n_audits;        /* audited timed calls (audit<i>.safetensors) */
	int audit_set[SF_MAX_AUDITS];
	uint64_t audit_key[SF_MAX_AUDITS];
	int64_t batch_calls; /* calls per half of the external wall-clock batch */
	int have_clock;      /* the parent saw all four batch marks: */
	double ext_empty_s, ext_cand_s; /* wall time of the empty half and of the candidate's half */
	double cpu_empty_s, cpu_cand_s; /* the runner's CPU time in each half (-1: unknown) */
	int have_compile;    /* the PyTorch bridge compiled it (torch.compile): compile_s seconds, untimed */
	double compile_s;
} sf_runner_out;

/* Writes job->out_dir/job.json, runs the backend's runner on it with a time limit, reads what it
 * left into *r (free with sf_runner_out_free). */
void sf_runner_run(const sf_backend *be, const sf_job *job, double timeout_s, sf_runner_out *r, int *timed_out);
void sf_runner_out_free(sf_runner_out *r);
/* The external batch's marks of a finished runner p (core/job.h SF_CLOCK_PAIRS groups "cdab", all
 * present and in order) into r: have_clock 1 and the wall / CPU halves of the pair with the smallest
 * estimate (min of its wall and CPU differences); anything else leaves have_clock 0. */
struct sf_proc;
void sf_runner_clock_pairs(const struct sf_proc *p, sf_runner_out *r);
/* Reads dir/result.json into *r (0), or -1 when it is missing or malformed. */
int sf_runner_read_result(const char *dir, sf_runner_out *r);

/* Appends one SOL-ExecBench-compatible trace line (plus solforge fields) for result r. */
void sf_trace_line(const sf_eval *e, const sf_wresult *r, const char *backend, sf_buf *b);

#endif
