/*
 * runner_cuda.h - what the files of solforge-runner-cuda share (internal to that program; nothing
 * else includes it). The runner is four nvcc translation units linked together (five in the diag runner):
 *   runner_cuda.cu         main, the CUDA setup, reference mode, solution mode's checked calls
 *   runner_cuda_sets.cu    device kernels (draw, perturb, hash), input sets on the device, drawing
 *   runner_cuda_cupti.cu   CUPTI activity records: per-call device time windows
 *   runner_cuda_timing.cu  the timing phase: plan, warm-up, timed calls, audits, wall-clock batch
 *   runner_cuda_diag.cu    timing-parity modes: only in `make diag-runner`'s runner, with -DRCU_DIAG
 * Kernels are launched only from the file that defines them (no relocatable device code).
 * Written as C-style C++17; cross-file functions and globals carry the rcu_ prefix.
 */
#ifndef SF_RUNNER_CUDA_H
#define SF_RUNNER_CUDA_H

#include <cuda_runtime.h>
#include <stdint.h>

/* the core headers have no extern "C" guards of their own (runner_common.h has) */
extern "C" {
#include "core/job.h"
#include "core/util.h"
}
#include "runner/runner_common.h"
#include "runner/cuda_util.h"

#define PROG "solforge-runner-cuda"
#define RCU_ALIGN 256 /* every tensor starts on a 256-byte boundary (cudaMalloc's own alignment) */

/* Set once by cuda_setup (runner_cuda.cu) before anything else runs. */
extern int rcu_device;                    /* the CUDA device of the job */
extern int rcu_sms;                       /* its multiprocessor count (>= 1), sizes the grids */
extern cudaStream_t rcu_stream;           /* the stream the candidate (and the oracle) is called on */
extern unsigned long long *rcu_hash_dev;  /* device scratch of the input hash */

/* One input set on the device: a single allocation holding the inputs (from `shift` on, each
 * 256-aligned) and the outputs, each with RC_GUARD_BYTES of RC_GUARD_BYTE before and after. */
typedef struct dev_set {
	sf_ocall c; /* device data pointers */
	uint8_t *base;
	size_t bytes;
	sf_tensor in_t[SF_MAX_ARGS], out_t[SF_MAX_ARGS];
	int64_t in_s[SF_MAX_ARGS][SF_MAX_DIMS], out_s[SF_MAX_ARGS][SF_MAX_DIMS];
	uint8_t *saved[SF_MAX_ARGS]; /* perturbation undo (device) */
	uint64_t key;                /* the key applied last (active) */
	int active;
} dev_set;

/* Bytes of a tensor's data. */
static inline size_t rcu_arg_bytes(const sf_otensor *t)
{
	return (size_t)sf_dt_bytes((sf_dt)t->dt, t->numel);
}

/* Whether input k is a tensor (scalars have no device buffer). */
static inline int rcu_is_tensor_input(const sf_job *job, int k)
{
	return job->in[k].gen.kind != SF_GEN_SCALAR;
}

/* ---- runner_cuda_sets.cu: input sets on the device, drawing ---------------------------------- */

/* Whether any input comes from the oracle's custom generator. */
int rcu_job_has_custom(const sf_job *job);

/* The allocation size of a set of the layout l with its first input `shift` bytes in. */
size_t rcu_set_size(const sf_job *job, const sf_ocall *l, size_t shift);

/* Allocates set s for layout (device pointers filled in, everything RC_GUARD_BYTE); 0, or -1 with
 * err written (a CUDA failure). */
int rcu_set_alloc(dev_set *s, const sf_job *job, const sf_ocall *layout, size_t shift, char *err, size_t errlen);

/* Frees s's buffers (its perturbation undo too); s may be freed again or reallocated. */
void rcu_set_free(dev_set *s);

/* Perturbs the set's inputs with key u on rcu_stream (undoing the previous key when undo); for the
 * reference (undo 0) nothing is saved. Returns a CUDA error. */
cudaError_t rcu_perturb_set(const sf_job *job, dev_set *s, uint64_t u, int undo);

/* Fills s's ABI descriptors (in_t, out_t and their shapes) from its device pointers. */
void rcu_set_descriptors(dev_set *s);

/* Host buffers for the tensor inputs of h (a copy of a layout); outputs untouched. */
void rcu_host_inputs_alloc(const sf_job *job, sf_ocall *h);

/* Frees what rcu_host_inputs_alloc allocated. */
void rcu_host_inputs_free(sf_ocall *h);

/*
 * Draws the inputs of a round or set with seed into the device buffers of dc: generators on the GPU,
 * files through the host. With h (host buffers for every tensor input), the drawn inputs are also
 * copied into h, the custom generator runs on h (it sees the other inputs drawn) and its inputs are
 * copied up; without h, custom inputs get temporary host buffers. 0, or -1 with err written.
 */
int rcu_draw_inputs(const sf_job *job, const rc_module *m, sf_ocall *dc, sf_ocall *h, uint64_t seed, char *err,
		    size_t errlen);

/* Fingerprint of the n bytes at device address p (0 bytes: 0); a CUDA error ends the process. */
uint64_t rcu_dev_hash(const void *p, size_t n);

/* Launches one tiny kernel on the default stream (not synchronized), so that the driver's own
 * threads exist before the thread snapshot. */
void rcu_touch_device(void);

/* ---- runner_cuda_cupti.cu: CUPTI per-call device time ---------------------------------------- */

/* Registers the buffers and enables the record kinds; 0 or -1 with the reason in why. */
int rcu_cupti_init(char *why, size_t whylen);

/* Delivers the records so far (and ignores those outside any window). */
void rcu_cupti_flush(void);

/* Delivers the records so far, then makes room for cap windows (none open). */
void rcu_cupti_windows_begin(int cap);

/* CUPTI's clock now (0 when it cannot be read). */
uint64_t rcu_cupti_now(void);

/* Opens the next window at t0 (a call starts); -1 when all cap windows are used. */
int rcu_cupti_window_open(uint64_t t0);

/* Closes window i at t1 (its call and all its work finished). */
void rcu_cupti_window_close(int i, uint64_t t1);

/* Delivers the records so far, then window i's time in ms: the span of the records that started in
 * it, or the whole window when none did. */
double rcu_cupti_window_ms(int i);

/* Stops the records (flushing all), then rewrites samples[0..n) with the final window times (records
 * delivered late still count). Returns how many windows had no records; *dropped / *untimed: records
 * CUPTI dropped, records without timestamps. */
int rcu_cupti_finish(double *samples, int n, uint64_t *dropped, uint64_t *untimed);

/* ---- runner_cuda.cu: the checked call ---------------------------------------------------------- */

/* Fills the ABI call for set s (descriptors from rcu_set_descriptors, the job's scalars, rcu_stream). */
void rcu_make_call(sf_call *call, dev_set *s);

/* After the candidate returns: its device again (it may have switched), then all its work, on any
 * stream, finished; a CUDA error here is the candidate's (sticky) fault and ends the process. */
void rcu_sync_after_call(const char *where);

/* After a call (or the candidate's constructors): no trapped system call, no thread of the
 * candidate left running. 0 or -1 with res->status set. */
int rcu_guard_check(rc_result *res);

/* Calls the candidate once on set s and checks what it must not change (return code, guards,
 * descriptors, inputs). Returns 0, or -1 with res->status / message set. */
int rcu_call_checked(sf_entry_fn fn, const sf_job *job, dev_set *s, rc_result *res);

/* ---- runner_cuda_timing.cu: the timing phase ---------------------------------------------------- */

typedef struct timing_plan {
	int nsets;
	int lazy;               /* rounds drawn one at a time (not enough device memory for all) */
	size_t flush_n;
	size_t round_bytes, set_bytes;
} timing_plan;

/* Appends "; " (when msg is not empty) and the formatted note to msg (size n), if it fits. */
void rcu_append_note(char *msg, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* How many timing sets, whether all rounds fit at once, the flush size (notes on what device memory
 * forced appended to note). 0, or -1 with err written. */
int rcu_make_plan(const sf_job *job, const sf_ocall *layout, timing_plan *p, char *note, size_t notelen, char *err,
		  size_t errlen);

/* Warm-up, timed calls on the p->nsets sets until rc_timing_done, the audits written, the external
 * wall-clock batch; fills res's timing fields (samples: *samples_out, the caller frees). Returns 0, or
 * -1 when the candidate failed (res->status set). */
int rcu_timing_phase(sf_entry_fn fn, sf_job *job, dev_set *sets, const timing_plan *p, void *flush, int use_cupti,
		     rc_result *res, char *note, size_t notelen, double **samples_out);

/* Timing-parity experiments (runner_cuda_diag.cu; only in the runner built with -DRCU_DIAG, the
 * `diag-runner` make target): rcu_diag(mode) is 1 when SF_RUNNER_DIAG lists mode;
 * rcu_diag_primer_start launches the primer kernel and returns once it runs (0) or -1;
 * rcu_diag_settle busy-waits us microseconds; rcu_diag_flush stores v over n bytes at p (the flush as a
 * kernel); rcu_diag_touch reads one byte per 64 KiB of set s. All launch on rcu_stream. Without
 * RCU_DIAG they are constants and no-ops, so the real runner compiles no diagnostic code. */
#ifdef RCU_DIAG
int rcu_diag(const char *mode);
int rcu_diag_primer_start(void);
void rcu_diag_settle(double us);
void rcu_diag_flush(void *p, size_t n, unsigned v);
void rcu_diag_touch(const dev_set *s);
#else
#define rcu_diag(mode) 0
#define rcu_diag_primer_start() 0
#define rcu_diag_settle(us) ((void)0)
#define rcu_diag_flush(p, n, v) ((void)0)
#define rcu_diag_touch(s) ((void)0)
#endif

#endif
