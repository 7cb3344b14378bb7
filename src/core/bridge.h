/*
 * bridge.h - the C side of the PyTorch bridge (docs/bridge.md): probing for torch, writing a
 * workload's inputs for it, starting tools/bridge/solforge_bridge.py on a list of tasks with a time
 * limit, and reading what each task left (the runner protocol's files).
 *
 * The evaluator core needs no Python: the bridge is started only when a problem asks for PyTorch (a
 * baseline with backend "torch", a problem without a C oracle but with a `reference`, or --xval).
 * Without python3 or torch every such task gets the status "unavailable" with the reason; nothing
 * hangs (every child runs under a time limit) and nothing falls back silently.
 */
#ifndef SF_BRIDGE_H
#define SF_BRIDGE_H

#include <stddef.h>
#include "core/eval.h"

typedef struct sf_bridge {
	int probed;
	int usable;            /* python3 and torch (and the device) are there */
	char *why;             /* why not usable */
	char *torch_version;   /* from the probe */
} sf_bridge;

typedef struct sf_bridge_task {
	const char *role;      /* "reference" (the definition's run(), float32 outputs) or "baseline" */
	const char *name;
	const char *source;    /* a .py file, or "@reference" */
	const char *entry;     /* default "run" */
	int compile;           /* torch.compile it (compile time excluded, reported) */
	int time;              /* time it like a candidate */
	char *out_dir;         /* owned by the caller */
} sf_bridge_task;

/* The device slot the bridge takes itself (gpulock.h) once torch is imported, so that its start-up
 * (python, `import torch`, CUDA context: seconds) does not hold the slot; NULL lock = none. */
typedef struct sf_bridge_slot {
	const char *lock, *log, *slot; /* gpulock paths and slot name */
	const char *problem, *what;    /* (problem, workload) for the timing log line, and BRIDGE.json's
					* top-level "problem" / "what" (the progress trail) with or without a lock */
} sf_bridge_slot;

/* The Python interpreter (SOLFORGE_PYTHON or python3) and the bridge script (SOLFORGE_BRIDGE or
 * HOME/tools/bridge/solforge_bridge.py). Caller frees. */
char *sf_bridge_python(void);
char *sf_bridge_script(const char *home);

/* Runs the bridge's --probe once (time limit timeout_s); sets usable / why. */
void sf_bridge_probe(sf_bridge *br, const char *home, const char *device, double timeout_s);
void sf_bridge_free(sf_bridge *br);

/* Writes the inputs of every round and audit set of `job` (same seeds, same draws as the runners)
 * into dir/in_round<r>.safetensors, dir/in_set<s>.safetensors with solforge-inputs; cpu_module is the
 * problem module compiled for the cpu (for custom inputs) or NULL. 0, or -1 with a message. */
int sf_bridge_write_inputs(const sf_job *job, const char *cpu_module, const char *dir, double timeout_s, char *err,
			   size_t errlen);

/* Runs the bridge once on tasks[0..n) for `job` (inputs in inputs_dir, written by
 * sf_bridge_write_inputs), limit timeout_s for the whole process. outs[i] gets what task i left
 * (sf_runner_out; status "unavailable" when torch is missing). *timed_out when the limit killed it.
 * slot (may be NULL) is the device slot the bridge waits for after its start-up and holds until it
 * exits, logging the hold like sf_gpulock_release. */
void sf_bridge_run(const char *home, const sf_job *job, const char *definition, const char *device,
		   const char *inputs_dir, const char *work_dir, const sf_bridge_task *tasks, int n, double timeout_s,
		   const sf_bridge_slot *slot, sf_runner_out *outs, int *timed_out);

#endif

/* --- the bridge inside one workload's evaluation (eval_bridge.c) -------------------------------- */

/* The PyTorch tasks of one workload, run by one bridge process; outputs moved out by bridge_take. */
typedef struct bridge_tasks {
	sf_bridge_task *t;
	sf_runner_out *out;
	int n;
	int ref;                      /* task index of the PyTorch reference (no C oracle), or -1 */
	int xval;                     /* task index of the --xval cross-check, or -1 */
	int *of_baseline;             /* task index of e->baselines[b], or -1 */
	int timed_out;
} bridge_tasks;

/* Collects and runs the workload's PyTorch tasks (torch baselines only when with_baselines), after
 * writing the inputs the runners drew for `job` into wdir/inputs. Nothing to do: bt->n == 0. */
void run_bridge(const sf_eval *e, const sf_eval_opts *o, const sf_job *job, const char *wdir, const char *uuid,
		int with_baselines, bridge_tasks *bt);
/* Moves what task i left into *out (i < 0: an empty result saying there was no such task). */
void bridge_take(bridge_tasks *bt, int i, sf_runner_out *out);
void bridge_tasks_free(bridge_tasks *bt);

/* Appends baseline `name`'s outcome (status name; timing when st != NULL) to r->baselines_json. */
void baseline_record(sf_wresult *r, const char *name, const char *status, const sf_stats *st,
		     const sf_runner_out *bo);

/* Compares the --xval task's rounds (the PyTorch reference, in the definition's dtypes) with the C
 * oracle's reference rounds in ref_dir under the workload's tolerance; notes the verdict in r's log
 * and baselines_json ("role": "xval"). Never changes r->status. */
void cross_check(bridge_tasks *bt, const sf_job *job, const char *ref_dir, const sf_tolerance *tol, sf_wresult *r);
