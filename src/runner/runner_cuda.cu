/*
 * runner_cuda.cu - the cuda backend's runner: `solforge-runner-cuda JOB.json`.
 *
 * Same protocol and semantics as runner_cpu.c (job.h describes the files it writes), on one GPU:
 *
 * Reference mode: draws each round's inputs on the GPU (the generator kernels of runner_cuda_sets.cu are bit-identical
 * with the host's rc_gen_host; custom inputs come from the oracle's generator on the host, file
 * inputs from their safetensors file), runs the problem module's sf_oracle_gpu_run, copies the
 * reference outputs back and writes them; the SOL work comes from the module's work function on
 * host copies of round 0's inputs.
 *
 * Solution mode: draws every round's inputs and every timing set before the candidate is loaded, wipes
 * the seeds, then loads the candidate and calls it on poisoned outputs wrapped in guard bytes, on a
 * stream of ours; after each call it synchronizes the stream and the device and checks the return
 * code, the guards, the descriptors and a hash of the inputs. A CUDA error after the candidate was
 * loaded (an illegal address is sticky) ends the process with a message on stderr and no result.json.
 *
 * Timing: input sets rotated (fresh content, shifted addresses), an L2 flush (cudaMemsetAsync of
 * flush_bytes) and a reset of the persisting-L2 state before every call; each call's time comes from
 * CUPTI activity records (kernels, memcpys, memsets on any stream) that start inside the call's
 * window: max(end) - min(start). Without CUPTI: CUDA events around the call on its stream.
 *
 * Written as C-style C++17 (nvcc); the core files come from libsolforge.a, built as C. This file has
 * main, the CUDA setup, reference mode, and solution mode's rounds and checked call; the inputs on
 * the device (kernels, sets, drawing) are in runner_cuda_sets.cu, the CUPTI records in
 * runner_cuda_cupti.cu, the timing phase in runner_cuda_timing.cu; runner_cuda.h is what they share.
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/runner_cuda.h"
#include "runner/runner_guard.h"

typedef int (*oracle_gpu_fn)(const sf_ocall *c, void *stream);

int rcu_device;                   /* runner_cuda.h says what these are; cuda_setup sets them */
cudaStream_t rcu_stream;
unsigned long long *rcu_hash_dev;

/* ---------------------------------------------------------------------------------------------- */
/* reference mode                                                                                  */

static int reference_rounds(const sf_job *job, const rc_module *m, rc_result *res, char *err, size_t errlen)
{
	sf_ocall layout;
	if (rc_ocall_layout(job, m, 1, &layout, err, errlen))
		return -1;
	dev_set d;
	if (rcu_set_alloc(&d, job, &layout, 0, err, errlen))
		return -1;
	for (int k = 0; k < d.c.n_out; k++)
		CU(cudaMemset(d.c.out[k].data, 0, rcu_arg_bytes(&d.c.out[k])));
	/* host side: the outputs (written to the round files) and, where the generator or the work
	 * function needs them, the inputs */
	sf_ocall h = layout;
	for (int k = 0; k < h.n_out; k++)
		h.out[k].data = sf_xcalloc(1, rcu_arg_bytes(&h.out[k]) + 1);
	int custom = rcu_job_has_custom(job);
	int host_in = custom || m->work;
	if (host_in)
		rcu_host_inputs_alloc(job, &h);
	int rc = 0;
	/* the rounds, then the timed calls the solution runner audited (their set, their perturbation) */
	int n_audits = job->timing.enabled ? job->n_audits : 0;
	for (int r = 0; r < job->n_rounds + n_audits && !rc; r++) {
		int audit = r - job->n_rounds; /* >= 0: audit number */
		sf_ocall *hp = (custom || (r == 0 && m->work)) ? &h : NULL;
		uint64_t seed = audit < 0 ? job->seeds[r] : rc_set_seed(job, job->audit_set[audit]);
		if (rcu_draw_inputs(job, m, &d.c, hp, seed, err, errlen)) {
			rc = -1;
			break;
		}
		/* key 0: an audit of an unperturbed call (SOLFORGE_DEFENSES=0), nothing to redo */
		if (audit >= 0 && job->audit_key[audit] &&
		    (cu_fail(rcu_perturb_set(job, &d, job->audit_key[audit], 0), "perturbing audit inputs", err,
					   errlen) ||
				   cu_fail(cudaDeviceSynchronize(), "perturbing audit inputs", err, errlen))) {
			rc = -1;
			break;
		}
		if (r == 0 && m->work) {
			memset(&res->work, 0, sizeof res->work);
			res->work.bytes = -1;
			m->work(&h, &res->work);
			res->have_work = 1;
		}
		oracle_gpu_fn run;
		memcpy(&run, &m->run, sizeof run);
		int e = run(&d.c, (void *)rcu_stream);
		if (e) {
			sf_errf(err, errlen, "the oracle failed on the GPU: %s (%s)", cudaGetErrorName((cudaError_t)e),
				cudaGetErrorString((cudaError_t)e));
			rc = -1;
			break;
		}
		if (cu_fail(cudaDeviceSynchronize(), "running the oracle", err, errlen)) {
			rc = -1;
			break;
		}
		for (int k = 0; k < h.n_out && !rc; k++)
			rc = cu_fail(cudaMemcpy(h.out[k].data, d.c.out[k].data, rcu_arg_bytes(&h.out[k]),
						cudaMemcpyDeviceToHost),
				     "copying a reference output back", err, errlen);
		if (!rc && audit < 0)
			rc = rc_write_round(job, &h, r, err, errlen);
		if (!rc && audit >= 0) {
			rc = rc_write_audit(job, &h, audit, err, errlen);
			res->n_audits = audit + 1;
			res->audit_set[audit] = job->audit_set[audit];
			res->audit_key[audit] = job->audit_key[audit];
		}
	}
	for (int k = 0; k < h.n_out; k++)
		free(h.out[k].data);
	if (host_in)
		rcu_host_inputs_free(&h);
	rcu_set_free(&d);
	return rc;
}

static int run_reference(const sf_job *job, const rc_module *m)
{
	rc_result res;
	memset(&res, 0, sizeof res);
	res.status = "ok";
	char err[SF_ERRLEN] = "";
	if (reference_rounds(job, m, &res, err, sizeof err)) {
		res.status = "error";
		snprintf(res.message, sizeof res.message, "%s", err);
		fprintf(stderr, PROG ": %s\n", err);
		rc_write_result(job, &res);
		return 1;
	}
	return rc_write_result(job, &res) ? 1 : 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* solution mode                                                                                   */

static double g_scal[SF_MAX_ARGS]; /* the job's scalars (NaN for tensor inputs), every call's */

/* Whether the RC_GUARD_BYTES before and after the output of `bytes` at device address out are
 * intact; a CUDA error ends the process. */
static int guards_ok(const void *out, size_t bytes)
{
	static uint8_t g[2][RC_GUARD_BYTES];
	const uint8_t *p = (const uint8_t *)out;
	cu_fault(cudaMemcpy(g[0], p - RC_GUARD_BYTES, RC_GUARD_BYTES, cudaMemcpyDeviceToHost), "reading a guard");
	cu_fault(cudaMemcpy(g[1], p + bytes, RC_GUARD_BYTES, cudaMemcpyDeviceToHost), "reading a guard");
	for (int i = 0; i < RC_GUARD_BYTES; i++)
		if (g[0][i] != RC_GUARD_BYTE || g[1][i] != RC_GUARD_BYTE)
			return 0;
	return 1;
}

void rcu_make_call(sf_call *call, dev_set *s)
{
	memset(call, 0, sizeof *call);
	call->abi_version = SF_ABI_VERSION;
	call->n_inputs = s->c.n_in;
	call->inputs = s->in_t;
	call->scalars = g_scal;
	call->n_outputs = s->c.n_out;
	call->outputs = s->out_t;
	call->stream = (void *)rcu_stream;
}

/* After the candidate returns: its device again (it may have switched), then all its work, on any
 * stream, finished; a CUDA error here is the candidate's (sticky) fault. */
void rcu_sync_after_call(const char *where)
{
	cu_fault(cudaSetDevice(rcu_device), where);
	cu_fault(cudaStreamSynchronize(rcu_stream), where);
	cu_fault(cudaDeviceSynchronize(), where);
	cudaError_t e = cudaGetLastError(); /* a non-sticky error of a runtime call: not ours to judge */
	if (e != cudaSuccess)
		fprintf(stderr, PROG ": note: the solution left a CUDA error pending: %s\n", cudaGetErrorName(e));
}

/* Threads the CUDA driver and CUPTI may start on their own after the candidate is loaded. */
#define CUDA_THREAD_NAMES "cuda|CUPTI|cupti"

/* After a call (or the candidate's constructors): no trapped system call, no thread of the
 * candidate left running. 0 or -1 with res->status set. */
int rcu_guard_check(rc_result *res)
{
	if (rg_violation(res->message, sizeof res->message)) {
		res->status = "sandbox_violation";
		return -1;
	}
	if (rg_threads_new(CUDA_THREAD_NAMES, res->message, sizeof res->message)) {
		res->status = "thread_escaped";
		return -1;
	}
	return 0;
}

/* Calls the candidate once on set s and checks what it must not change (as runner_cpu.c's
 * call_checked). Returns 0, or -1 with res->status / message set. */
int rcu_call_checked(sf_entry_fn fn, const sf_job *job, dev_set *s, rc_result *res)
{
	sf_tensor in_copy[SF_MAX_ARGS], out_copy[SF_MAX_ARGS];
	int64_t in_sc[SF_MAX_ARGS][SF_MAX_DIMS], out_sc[SF_MAX_ARGS][SF_MAX_DIMS];
	memcpy(in_copy, s->in_t, sizeof in_copy);
	memcpy(out_copy, s->out_t, sizeof out_copy);
	memcpy(in_sc, s->in_s, sizeof in_sc);
	memcpy(out_sc, s->out_s, sizeof out_sc);
	uint64_t before[SF_MAX_ARGS];
	for (int k = 0; k < s->c.n_in; k++)
		before[k] = rcu_dev_hash(s->c.in[k].data, s->c.in[k].data ? rcu_arg_bytes(&s->c.in[k]) : 0);
	sf_call call;
	rcu_make_call(&call, s);
	int rc = fn(&call);
	rcu_sync_after_call("after the solution's call");
	if (rcu_guard_check(res)) /* a refused system call first: a cheat may fail because of it */
		return -1;
	if (rc != SF_OK) {
		res->status = "solution_error";
		snprintf(res->message, sizeof res->message, "the solution returned %d", rc);
		return -1;
	}
	for (int k = 0; k < s->c.n_out; k++) {
		if (!guards_ok(s->c.out[k].data, rcu_arg_bytes(&s->c.out[k]))) {
			res->status = "wrote_out_of_bounds";
			snprintf(res->message, sizeof res->message, "the solution wrote outside output '%s'",
				 job->out[k].name);
			return -1;
		}
	}
	if (rc_abi_unchanged(in_copy, s->in_t, s->c.n_in, in_sc, s->in_s) ||
	    rc_abi_unchanged(out_copy, s->out_t, s->c.n_out, out_sc, s->out_s)) {
		res->status = "tensor_changed";
		snprintf(res->message, sizeof res->message, "the solution changed a tensor descriptor");
		return -1;
	}
	for (int k = 0; k < s->c.n_in; k++) {
		if (rcu_dev_hash(s->c.in[k].data, s->c.in[k].data ? rcu_arg_bytes(&s->c.in[k]) : 0) != before[k]) {
			res->status = "inputs_modified";
			snprintf(res->message, sizeof res->message, "the solution modified its input '%s'",
				 job->in[k].name);
			return -1;
		}
	}
	return 0;
}

/* Returns 0 (res->status says how the candidate did) or -1: the harness failed (err). */
static int solution(sf_job *job, const rc_module *m, rc_result *res, double **samples_out, char *err, size_t errlen)
{
	char note[sizeof res->message] = "";
	sf_ocall layout;
	if (rc_ocall_layout(job, m, 0, &layout, err, errlen))
		return -1;
	for (int k = 0; k < job->n_in; k++)
		g_scal[k] = job->in[k].gen.kind == SF_GEN_SCALAR ? job->in[k].gen.a : NAN;
	timing_plan p;
	if (rcu_make_plan(job, &layout, &p, note, sizeof note, err, errlen))
		return -1;
	int nr = job->n_rounds;

	/* rounds and timing sets drawn before the candidate is loaded */
	dev_set rounds[SF_MAX_ROUNDS];
	memset(rounds, 0, sizeof rounds);
	for (int r = 0; r < (p.lazy ? 0 : nr); r++) {
		if (rcu_set_alloc(&rounds[r], job, &layout, (size_t)RCU_ALIGN * (size_t)r, err, errlen) ||
		    rcu_draw_inputs(job, m, &rounds[r].c, NULL, job->seeds[r], err, errlen))
			return -1;
	}
	dev_set *sets = NULL;
	void *flush = NULL;
	if (job->timing.enabled) {
		sets = (dev_set *)sf_xcalloc((size_t)p.nsets, sizeof *sets);
		for (int s = 0; s < p.nsets; s++) {
			if (rcu_set_alloc(&sets[s], job, &layout, 4096 + 768 * (size_t)s, err, errlen) ||
			    rcu_draw_inputs(job, m, &sets[s].c, NULL, sf_mix64(job->timing.seed + (uint64_t)s), err,
					    errlen))
				return -1;
		}
		if (p.flush_n)
			CU(cudaMalloc(&flush, p.flush_n));
	}
	/* the candidate never sees the seeds (lazily drawn rounds: once the last one is drawn) */
	if (!p.lazy)
		memset(job->seeds, 0, sizeof job->seeds);
	job->timing.seed = 0;
	int use_cupti = 0;
	if (job->timing.enabled) {
		char why[256] = "";
		/* SF_RUNNER_NO_CUPTI (set by whoever starts the runner; the candidate is not loaded yet)
		 * forces the CUDA-event fallback, to test it */
		const char *no_cupti = getenv("SF_RUNNER_NO_CUPTI");
		if (no_cupti && *no_cupti && strcmp(no_cupti, "0"))
			snprintf(why, sizeof why, "disabled by SF_RUNNER_NO_CUPTI");
		else
			use_cupti = rcu_cupti_init(why, sizeof why) == 0;
		if (!use_cupti) {
			fprintf(stderr, PROG ": note: CUPTI unavailable (%s); timing with CUDA events\n", why);
			rcu_append_note(note, sizeof note,
					"CUPTI unavailable (%s): timed with CUDA events on the call's stream, work on "
					"other streams not counted",
					why);
		}
	}

	/* the driver's and CUPTI's own threads exist by now (a kernel, a flush): then the snapshot of
	 * threads, the sandbox, and the candidate, whose constructors run inside it */
	rcu_touch_device();
	CU(cudaDeviceSynchronize());
	if (use_cupti)
		rcu_cupti_flush();
	rg_threads_snapshot();
	static char sandbox_note[256];
	if (rg_sandbox_install(1, job->out_dir, sandbox_note, sizeof sandbox_note, err, errlen))
		return -1;
	res->sandbox = sandbox_note[0] ? sandbox_note : "on";
	void *h = dlopen(job->solution, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		sf_errf(err, errlen, "cannot load the solution: %s", dlerror());
		return -1;
	}
	sf_entry_fn fn;
	void *sym = dlsym(h, job->entry);
	if (!sym) {
		sf_errf(err, errlen, "the solution has no entry point '%s'", job->entry);
		return -1;
	}
	memcpy(&fn, &sym, sizeof fn);
	if (rcu_guard_check(res))
		return 0;

	void *hout[SF_MAX_ARGS];
	for (int k = 0; k < layout.n_out; k++)
		hout[k] = sf_xmalloc(rcu_arg_bytes(&layout.out[k]) + 1);
	for (int r = 0; r < nr; r++) {
		dev_set *s = &rounds[p.lazy ? 0 : r];
		if (p.lazy) {
			rcu_set_free(s);
			if (rcu_set_alloc(s, job, &layout, (size_t)RCU_ALIGN * (size_t)r, err, errlen) ||
			    rcu_draw_inputs(job, m, &s->c, NULL, job->seeds[r], err, errlen))
				return -1;
			if (r == nr - 1)
				memset(job->seeds, 0, sizeof job->seeds);
		}
		for (int k = 0; k < s->c.n_out; k++)
			cu_fault(cudaMemset(s->c.out[k].data, rc_poison_byte(r), rcu_arg_bytes(&s->c.out[k])),
				 "poisoning an output");
		cu_fault(cudaDeviceSynchronize(), "before the solution's call");
		rcu_set_descriptors(s);
		if (rcu_call_checked(fn, job, s, res))
			return 0;
		sf_ocall hc = s->c;
		for (int k = 0; k < hc.n_out; k++) {
			cu_fault(cudaMemcpy(hout[k], s->c.out[k].data, rcu_arg_bytes(&s->c.out[k]),
					    cudaMemcpyDeviceToHost),
				 "copying an output back");
			hc.out[k].data = hout[k];
		}
		if (rc_write_round(job, &hc, r, err, errlen))
			return -1;
		if (p.lazy)
			rcu_set_free(s);
	}
	for (int k = 0; k < layout.n_out; k++)
		free(hout[k]);
	if (!p.lazy)
		for (int r = 0; r < nr; r++)
			rcu_set_free(&rounds[r]);

	if (job->timing.enabled) {
		if (rcu_timing_phase(fn, job, sets, &p, flush, use_cupti, res, note, sizeof note, samples_out))
			return 0;
		for (int s = 0; s < p.nsets; s++)
			rcu_set_free(&sets[s]);
		free(sets);
		cudaFree(flush);
	}
	if (note[0] && !strcmp(res->status, "ok"))
		snprintf(res->message, sizeof res->message, "%s", note);
	return 0;
}

static int run_solution(sf_job *job, const rc_module *m)
{
	rc_result res;
	memset(&res, 0, sizeof res);
	res.status = "ok";
	char err[SF_ERRLEN] = "";
	double *samples = NULL;
	if (solution(job, m, &res, &samples, err, sizeof err)) {
		res.status = "error";
		res.n_samples = 0;
		snprintf(res.message, sizeof res.message, "%s", err);
		fprintf(stderr, PROG ": %s\n", err);
		rc_write_result(job, &res);
		return 1;
	}
	int rc = rc_write_result(job, &res) ? 1 : 0;
	free(samples);
	return rc;
}

/* ---------------------------------------------------------------------------------------------- */

/* The job's device, its context, the call stream and the hash scratch; 0, or -1 with err written. */
static int cuda_setup(const sf_job *job, char *err, size_t errlen)
{
	rcu_device = job->device;
	CU(cudaSetDevice(rcu_device));
	CU(cudaFree(0)); /* creates the context */
	CU(cudaDeviceGetAttribute(&rcu_sms, cudaDevAttrMultiProcessorCount, rcu_device));
	if (rcu_sms < 1)
		rcu_sms = 1;
	CU(cudaStreamCreateWithFlags(&rcu_stream, cudaStreamNonBlocking));
	void *p = NULL;
	CU(cudaMalloc(&p, sizeof *rcu_hash_dev));
	rcu_hash_dev = (unsigned long long *)p;
	return 0;
}

int main(int argc, char **argv)
{
	sf_job job;
	rc_load_job_or_die(argc, argv, PROG, &job);
	char err[SF_ERRLEN] = "";
	rc_module m;
	int rc;
	if (cuda_setup(&job, err, sizeof err) ||
	    rc_module_open(job.problem_module, "sf_oracle_gpu_run", &m, err, sizeof err)) {
		fprintf(stderr, PROG ": %s\n", err);
		rc_result res;
		memset(&res, 0, sizeof res);
		res.status = "error";
		snprintf(res.message, sizeof res.message, "%s", err);
		rc_write_result(&job, &res);
		rc = 1;
	} else {
		rc = job.mode == SF_JOB_REFERENCE ? run_reference(&job, &m) : run_solution(&job, &m);
	}
	sf_job_free(&job);
	/* No teardown: a candidate may have left the context (or CUPTI) in a state whose destruction
	 * hangs or crashes, and result.json is already written. */
	fflush(stdout);
	fflush(stderr);
	_exit(rc);
}
