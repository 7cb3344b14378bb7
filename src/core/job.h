/*
 * job.h - one runner job: what the trusted parent asks a runner process to do for one workload.
 *
 * The parent (solforge) writes the job as JSON into a scratch folder and starts a runner
 * (solforge-runner-cpu or solforge-runner-cuda) on it. Mode "reference": load the problem module,
 * draw the inputs of every round, run the oracle, write the reference outputs. Mode "solution": load
 * the problem module (for custom inputs) and the candidate, draw the same inputs, run the candidate
 * on poisoned, guarded outputs, write its outputs, then time it. The runner writes
 *   OUT_DIR/round<r>.safetensors   outputs of round r (reference dtype in reference mode)
 *   OUT_DIR/result.json            status, checks, SOL work (reference mode), timing samples
 * and exits 0 when it could write result.json; anything else is a crash of the candidate.
 * docs/runner.md describes the protocol field by field.
 */
#ifndef SF_JOB_H
#define SF_JOB_H

#include <stddef.h>
#include <stdint.h>
#include "solforge/oracle.h"
#include "common/gen.h"

#define SF_MAX_ROUNDS 8
#define SF_MAX_AUDITS 4   /* timed calls audited (runner_guard.h RC_AUDITS) */
/* The external wall-clock batch (docs/security.md "External clock"): the runner times this many
 * pairs of halves, each marked "cdab" on the clock pipe (B candidate calls between 'c' and 'd', B
 * empty calls between 'a' and 'b'; B set by the first candidate half, reused by every other half);
 * the parent keeps the pair with the smallest estimate: a one-off stall of the machine lands in one
 * pair, while work that escapes the timed window slows every pair. */
#define SF_CLOCK_PAIRS 3

typedef enum sf_job_mode { SF_JOB_REFERENCE = 0, SF_JOB_SOLUTION = 1 } sf_job_mode;

typedef struct sf_job_arg {
	char *name;
	sf_dt dt;                     /* the definition's dtype */
	int ndim;
	int64_t shape[SF_MAX_DIMS];
	int64_t numel;
	sf_genspec gen;               /* kind SF_GEN_SCALAR: a scalar input, value in gen.a */
	char *file_path, *file_key;   /* SF_GEN_FILE */
} sf_job_arg;

typedef struct sf_job_timing {
	int enabled;
	uint64_t seed;                /* timing input sets are drawn from sf_mix64(seed + set) */
	double warmup_ms;             /* at least this much warm-up, and at least 3 calls */
	int min_iters, max_iters;     /* min_iters is a floor: the budget stops timing only after it */
	double budget_ms;             /* stop timing after this much wall time */
	double target_rel_ci;         /* stop when the 95% CI of the median is within +-this */
	int64_t flush_bytes;          /* cache flush buffer; 0 = twice the last-level cache */
	int flush_reads;              /* 1: the flush reads the buffer (the cache left holding clean lines);
					 0: it writes it (a memset: up to its size in dirty lines, the default) */
	int sets;                     /* input sets rotated (fresh content, shifted addresses); 0 = auto */
	int time_only;                /* a trusted solution timed only (the copy ceiling): no audits, no
					 external-clock batch */
} sf_job_timing;

typedef struct sf_job {
	sf_job_mode mode;
	char *problem_module;         /* shared object: the compiled oracle (+ generator, work) */
	char *solution;               /* shared object of the candidate (solution mode) */
	char *entry;                  /* its entry point, default "run" */
	int n_axes;
	char **axis_names;
	int64_t *axis_values;
	int n_in, n_out;
	sf_job_arg in[SF_MAX_ARGS], out[SF_MAX_ARGS];
	int n_rounds;
	uint64_t seeds[SF_MAX_ROUNDS];
	sf_job_timing timing;
	/* reference mode: the timed calls the solution runner audited: inputs of timing set
	 * audit_set[i] perturbed with key audit_key[i] (0: unperturbed); outputs -> audit<i>.safetensors */
	int n_audits;
	int audit_set[SF_MAX_AUDITS];
	uint64_t audit_key[SF_MAX_AUDITS];
	char *out_dir;
	int device;                   /* CUDA device ordinal */
} sf_job;

/* Parses a job; on error returns -1 with a message naming the field. */
int sf_job_parse(const char *text, size_t len, sf_job *job, char *err, size_t errlen);
/* Serializes a job to JSON (caller frees). */
char *sf_job_to_json(const sf_job *job);
void sf_job_free(sf_job *job);
/* Name <-> kind of generators ("normal", "uniform", "int", "const", "custom", "file", "scalar"). */
const char *sf_gen_kind_name(int kind);
int sf_gen_kind_from_name(const char *name);
/* Value of axis `name`, or -1 with *found = 0. */
int64_t sf_job_axis(const sf_job *job, const char *name, int *found);

#endif
