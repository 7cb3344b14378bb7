/*
 * problem.h - a problem: its definition (definition.json), its workloads (workload.jsonl), and the
 * binding of one workload to concrete axes, shapes and input generators (a runner job).
 *
 * Loading validates everything a later step relies on; every error is one line naming the file and
 * the field or token ("problems/x/definition.json: inputs.x.dtype: unknown dtype 'bf16'").
 * Ownership: sf_definition and sf_workload own all their strings; free with *_free.
 */
#ifndef SF_PROBLEM_H
#define SF_PROBLEM_H

#include <stddef.h>
#include <stdint.h>
#include "solforge/oracle.h"
#include "core/job.h"

enum { SF_AXIS_CONST = 0, SF_AXIS_VAR = 1, SF_AXIS_EXPR = 2 };

typedef struct sf_axis {
	char *name;
	int kind;            /* SF_AXIS_* */
	int64_t value;       /* const */
	char *expr;          /* expr */
	char *description;
} sf_axis;

typedef struct sf_tspec {
	char *name;
	sf_dt dt;
	int is_scalar;       /* shape null */
	int ndim;
	char **dims;         /* axis names, or integer literals as text */
	char *description;
	/* generator (solforge.inputs), inputs only */
	int gen;             /* sf_gen_kind; SF_GEN_NORMAL when unspecified for floats */
	char *gen_a, *gen_b; /* expressions (mean/std, low/high, value) */
} sf_tspec;

typedef struct sf_baseline_spec {
	char *name;
	char *backend;       /* "cuda", "cpu", or "torch" (the PyTorch bridge, docs/bridge.md) */
	char *source;        /* absolute path */
	char *entry;         /* torch: the function to call (default "run") */
	int compile;         /* torch: torch.compile it (compile time excluded and reported) */
	char **ldflags;
	int n_ldflags;
} sf_baseline_spec;

typedef struct sf_definition {
	char *dir;           /* folder of definition.json (absolute) */
	char *file;          /* path of definition.json */
	char *name, *op_type, *description;
	char *model, *family, *layer;
	char **tags;
	int n_tags;
	sf_axis *axes;
	int n_axes;
	sf_tspec *in, *out;
	int n_in, n_out;
	char **constraints;
	int n_constraints;
	char *reference;     /* PyTorch source, may be NULL */
	char *custom_inputs_entrypoint;
	char *oracle;        /* absolute path of oracle.c, NULL when the problem has none */
	char *sol_flops[SF_UNIT_COUNT]; /* expressions or NULL */
	char *sol_bytes;     /* expression or NULL (default: inputs + outputs once) */
	sf_baseline_spec *baselines;
	int n_baselines;
} sf_definition;

typedef struct sf_tolerance {
	double atol, rtol, matched_ratio;
	double error_cap;    /* NAN: none */
	int allow_negative_inf;
} sf_tolerance;

enum { SF_WIN_RANDOM = 0, SF_WIN_SCALAR, SF_WIN_SAFETENSORS, SF_WIN_CUSTOM };

typedef struct sf_winput {
	char *name;
	int type;            /* SF_WIN_* */
	double value;        /* scalar */
	char *path, *key;    /* safetensors (path absolute) */
} sf_winput;

typedef struct sf_workload {
	char *uuid;
	int line;            /* line in workload.jsonl */
	int n_axes;
	char **axis_names;
	int64_t *axis_values;
	int n_inputs;
	sf_winput *inputs;
	sf_tolerance tol;
	char *note;
} sf_workload;

/* Unit class names ("fp64", "fp32", "tf32_tensor", "bf16_tensor", ...) in sf_work index order. */
const char *sf_unit_name(int unit);
int sf_unit_from_name(const char *name);

/* Loads DIR/definition.json (or a definition.json path). */
int sf_definition_load(const char *path, sf_definition *d, char *err, size_t errlen);
void sf_definition_free(sf_definition *d);

/* Loads every workload of a workload.jsonl and validates it against d. */
int sf_workloads_load(const char *path, const sf_definition *d, sf_workload **out, int *n, char *err, size_t errlen);
void sf_workloads_free(sf_workload *w, int n);

/* The axes of a workload, all bound: const, var (from the workload) and expr (evaluated in
 * dependency order). Constraints are checked. values[i] is axis d->axes[i]. */
int sf_bind_axes(const sf_definition *d, const sf_workload *w, int64_t *values, char *err, size_t errlen);

/* Fills a job's axes, inputs and outputs (shapes, dtypes, generators) for a workload. The caller
 * sets mode, paths, seeds and timing. */
int sf_bind_job(const sf_definition *d, const sf_workload *w, sf_job *job, char *err, size_t errlen);

/* Evaluates an expression over a workload's bound axes. */
int sf_eval_axes_expr(const sf_definition *d, const int64_t *values, const char *src, double *out, char *err,
		      size_t errlen);

#endif
