/*
 * runner_common.h - what the cpu and cuda runners share: the problem module, the layout of oracle
 * calls, host-side input drawing, poison and guard patterns, output files and result.json.
 *
 * The runners are the untrusted side's host process: the candidate is loaded into them. Nothing here
 * decides a verdict; the parent compares the files a runner writes with the reference files written
 * by another runner process that never loaded the candidate.
 */
#ifndef SF_RUNNER_COMMON_H
#define SF_RUNNER_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include "core/job.h"
#include "solforge/solution.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The compiled problem module (oracle + optional generator and work function). */
typedef struct rc_module {
	void *handle;
	const char *const *axis_names;           /* SF_ORACLE_AXES */
	int (*gen)(sf_gcall *g);                 /* SF_ORACLE_GEN or NULL */
	void (*work)(const sf_ocall *c, sf_work *w); /* SF_ORACLE_WORK or NULL */
	void *run;                               /* sf_oracle_cpu_run or sf_oracle_gpu_run */
} rc_module;

/* Opens the module and resolves its symbols; run_symbol names the oracle driver. */
int rc_module_open(const char *path, const char *run_symbol, rc_module *m, char *err, size_t errlen);

/* Fills c's layout (dt, ndim, shape, numel; data NULL), its scalars, and its axes in the module's
 * order. reference != 0: output dtypes are the reference dtypes (float32 for floats). */
int rc_ocall_layout(const sf_job *job, const rc_module *m, int reference, sf_ocall *c, char *err, size_t errlen);

/* Stream id of input k in round/set draws. */
uint32_t rc_stream(int k);

/* Draws input a (normal/uniform/int/const) into host buffer buf. */
void rc_gen_host(const sf_job_arg *a, void *buf, uint64_t seed, uint32_t stream);

/* Fills the custom inputs: c->in[k].data must point to host buffers for every custom input (others
 * may be NULL); calls the module's generator. Error if the job has custom inputs and no generator. */
int rc_gen_custom(const sf_job *job, const rc_module *m, sf_ocall *c, uint64_t seed, char *err, size_t errlen);

/* Copies a file input (safetensors) into buf, checking dtype and shape. */
int rc_load_file_input(const sf_job_arg *a, void *buf, char *err, size_t errlen);

/* Byte pattern unwritten outputs keep in round r (alternates so no value survives two rounds). */
uint8_t rc_poison_byte(int round);

#define RC_GUARD_BYTES 4096 /* before and after every output buffer */
#define RC_GUARD_BYTE 0xA5

/* Writes OUT_DIR/round<r>.safetensors with the outputs' host buffers (dtypes from c->out). */
int rc_write_round(const sf_job *job, const sf_ocall *c, int round, char *err, size_t errlen);
/* Writes OUT_DIR/audit<i>.safetensors: the outputs of audited timed call i (solution mode) or the
 * reference for its inputs (reference mode). */
int rc_write_audit(const sf_job *job, const sf_ocall *c, int i, char *err, size_t errlen);

/* Seed of timing set s's inputs (the reference draws them too). */
uint64_t rc_set_seed(const sf_job *job, int s);

/* Applies the perturbation of key u (perturb.h) to the host inputs of c, without saving what it
 * overwrites (reference mode). key 0: nothing. */
void rc_perturb_host(const sf_job *job, sf_ocall *c, uint64_t u);

/* Perturbation of one input set on the host with undo (solution mode, cpu runner). */
typedef struct rc_undo {
	uint8_t *saved[SF_MAX_ARGS]; /* RC_PERTURB_ELEM bytes per changed unit */
	uint64_t key; /* the key applied last */
	int active;
} rc_undo;
/* Restores what the last rc_perturb_apply on these buffers changed (if anything), then applies key u. */
void rc_perturb_apply(const sf_job *job, sf_ocall *c, rc_undo *undo, uint64_t u);
void rc_undo_free(rc_undo *undo);


typedef struct rc_result {
	const char *status;       /* "ok", "solution_error", "wrote_out_of_bounds", "tensor_changed",
				     "inputs_modified", "error" */
	char message[1024];
	int have_work;
	sf_work work;
	int n_samples;
	const double *samples_ms; /* per-call times */
	const char *timing_method; /* "cupti", "events", "clock" */
	double timing_wall_ms;    /* wall time of the timing phase */
	int sets;
	int64_t flush_bytes;
	int64_t timed_calls;
	double timed_wall_ms;     /* host wall time of the timed calls only (sync'd), for cross-checks */
	int n_audits;             /* audit<i>.safetensors written for i < n_audits */
	int audit_set[SF_MAX_AUDITS];
	uint64_t audit_key[SF_MAX_AUDITS];
	int64_t batch_calls;      /* calls of each half of the external wall-clock batch (0: none) */
	const char *sandbox;      /* "seccomp+landlock", "seccomp", "off", ... */
} rc_result;

/* Writes OUT_DIR/result.json atomically. */
int rc_write_result(const sf_job *job, const rc_result *r);

/* Fills sf_tensor descriptors for the ABI from c (shape arrays provided by the caller: shapes[k] has
 * room for SF_MAX_DIMS). device: SF_DEVICE_CPU or SF_DEVICE_CUDA. */
void rc_abi_tensors(const sf_otensor *ts, int n, sf_tensor *out, int64_t (*shapes)[SF_MAX_DIMS], int device,
		    int device_id);

/* 0 when the candidate left the descriptors and shape arrays exactly as given. */
int rc_abi_unchanged(const sf_tensor *a, const sf_tensor *b, int n, int64_t (*sa)[SF_MAX_DIMS],
		     int64_t (*sb)[SF_MAX_DIMS]);

/* Stopping rule of the timing loop: 1 when enough samples (see sf_job_timing). */
int rc_timing_done(const sf_job_timing *t, const double *samples, int n, double elapsed_ms);

/* Reads the job named on the command line; prints a message and exits 2 on failure. */
void rc_load_job_or_die(int argc, char **argv, const char *prog, sf_job *job);

#ifdef __cplusplus
}
#endif

#endif
