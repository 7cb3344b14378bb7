/*
 * runner_cuda_timing.cu - solforge-runner-cuda's timing phase (solution mode, after the rounds were
 * checked): the plan (timing sets and flush size that fit device memory), the warm-up, the timed
 * calls (fresh perturbed inputs, poisoned outputs, L2 flushed and persisting-L2 state reset before
 * each; CUPTI windows or CUDA events), the audited calls kept at random and written, and the
 * external wall-clock batch. runner_cuda.h has the contracts of what runner_cuda.cu calls.
 */
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_cuda.h"
#include "runner/runner_guard.h"

static int g_l2_note; /* the persisting-L2 note printed once */

__device__ unsigned rcu_flush_sink;
/* The read flush (timing.flush_reads): every 16 bytes of the buffer read past L1 (ld.global.cg), so the L2
 * holds clean lines of the buffer afterwards; the XOR keeps the loads (its store practically never runs). */
static __global__ void rcu_flush_read(const uint4 *p, size_t n)
{
	unsigned acc = 0;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		const uint4 v = __ldcg(p + i);
		acc ^= v.x ^ v.y ^ v.z ^ v.w;
	}
	if (acc == 0x9e3779b9u)
		rcu_flush_sink = acc;
}

/* Before every warm-up and timed call: fresh poison in the set's outputs (a result cached from an
 * earlier call on the same buffers must be written again), the persisting-L2 state reset, the L2
 * flushed (a memset, or with reads the read kernel: the job's timing.flush_reads), everything finished. */
static void prepare_timed_call(dev_set *s, int i, void *flush, size_t flush_n, int reads)
{
	for (int k = 0; k < s->c.n_out && !rcu_diag("nopoison"); k++)
		cu_fault(cudaMemsetAsync(s->c.out[k].data, rc_poison_byte(i), rcu_arg_bytes(&s->c.out[k]), rcu_stream),
			 "poisoning a timed output");
	cudaStreamAttrValue v;
	memset(&v, 0, sizeof v);
	v.accessPolicyWindow.base_ptr = NULL;
	v.accessPolicyWindow.num_bytes = 0;
	v.accessPolicyWindow.hitRatio = 0.0f;
	v.accessPolicyWindow.hitProp = cudaAccessPropertyNormal;
	v.accessPolicyWindow.missProp = cudaAccessPropertyNormal;
	cudaError_t e1 = cudaSuccess, e2 = cudaSuccess;
	if (!rcu_diag("nol2reset")) {
		e1 = cudaStreamSetAttribute(rcu_stream, cudaStreamAttributeAccessPolicyWindow, &v);
		e2 = cudaCtxResetPersistingL2Cache();
	}
	if (e1 != cudaSuccess || e2 != cudaSuccess) {
		cudaGetLastError();
		if (!g_l2_note++)
			fprintf(stderr, PROG ": note: cannot reset the persisting L2 state: %s\n",
				cudaGetErrorName(e1 != cudaSuccess ? e1 : e2));
	}
	if (flush_n && rcu_diag("kflush"))
		rcu_diag_flush(flush, flush_n, (unsigned)i);
	else if (flush_n && (reads || rcu_diag("readflush"))) {
		rcu_flush_read<<<132 * 8, 512, 0, rcu_stream>>>((const uint4 *)flush, flush_n / 16);
		cu_fault(cudaGetLastError(), "flushing the L2 by reads");
	} else if (flush_n)
		cu_fault(cudaMemsetAsync(flush, i & 0xff, flush_n, rcu_stream), "flushing the L2");
	if (rcu_diag("touch"))
		rcu_diag_touch(s);
	cu_fault(cudaDeviceSynchronize(), "before a timed call");
	if (rcu_diag("settle"))
		rcu_diag_settle(50.0);
}

void rcu_append_note(char *msg, size_t n, const char *fmt, ...)
{
	size_t len = strlen(msg);
	if (len + 3 >= n)
		return;
	if (len) {
		memcpy(msg + len, "; ", 3);
		len += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg + len, n - len, fmt, ap);
	va_end(ap);
}

/* How many timing sets, whether all rounds fit at once, the flush size. */
int rcu_make_plan(const sf_job *job, const sf_ocall *layout, timing_plan *p, char *note, size_t notelen, char *err,
		  size_t errlen)
{
	memset(p, 0, sizeof *p);
	int nr = job->n_rounds;
	p->round_bytes = rcu_set_size(job, layout, (size_t)RCU_ALIGN * (size_t)nr);
	size_t free_b = 0, total_b = 0;
	CU(cudaMemGetInfo(&free_b, &total_b));
	size_t avail = free_b / 10 * 8;
	if (!job->timing.enabled) {
		p->lazy = (size_t)nr * p->round_bytes > avail;
		return 0;
	}
	int l2 = 0;
	CU(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, rcu_device));
	p->flush_n = job->timing.flush_bytes > 0 ? (size_t)job->timing.flush_bytes : 2 * (size_t)l2;
	if (rcu_diag("noflush"))
		p->flush_n = 0;
	size_t per = 0;
	for (int k = 0; k < layout->n_in; k++)
		if (rcu_is_tensor_input(job, k))
			per += rcu_arg_bytes(&layout->in[k]);
	for (int k = 0; k < layout->n_out; k++)
		per += rcu_arg_bytes(&layout->out[k]);
	int want = job->timing.sets > 0 ? job->timing.sets : (int)(2 * (size_t)l2 / (per + 1)) + 1;
	if (want < 2)
		want = 2;
	if (want > 8)
		want = 8;
	if (rcu_diag("sets1"))
		want = 1;
	p->set_bytes = rcu_set_size(job, layout, 4096 + 768 * 8);
	p->lazy = (size_t)nr * p->round_bytes + p->flush_n + 2 * p->set_bytes > avail;
	size_t used = (p->lazy ? 1 : (size_t)nr) * p->round_bytes + p->flush_n;
	p->nsets = want;
	while (p->nsets > 1 && used + (size_t)p->nsets * p->set_bytes > avail)
		p->nsets--;
	if (p->nsets < want)
		rcu_append_note(note, notelen, "%d timing sets instead of %d (device memory)", p->nsets, want);
	if (p->lazy)
		rcu_append_note(note, notelen, "rounds drawn one at a time (device memory)");
	return 0;
}

static int noop_entry(const sf_call *call)
{
	(void)call;
	return SF_OK;
}

/* One call of the external wall-clock batch (rg_clock_batch): the candidate (cand) or an empty
 * function on the timing sets in turn, followed by the same synchronization as a timed call. */
struct batch_ctx {
	sf_entry_fn fn;
	dev_set *sets;
	int nsets;
};
static int batch_call(void *ctx, int cand, int64_t i)
{
	const batch_ctx *b = (const batch_ctx *)ctx;
	sf_call call;
	rcu_make_call(&call, &b->sets[i % b->nsets]);
	int rc = (cand ? b->fn : noop_entry)(&call);
	rcu_sync_after_call("in the wall-clock batch");
	return rc != SF_OK;
}

/* The external wall-clock batch (rg_clock_batch; no flush between its calls): B, 0 without a
 * clock, or -1 with res set when the candidate failed. */
static int64_t external_batch(sf_entry_fn fn, dev_set *sets, int nsets, double target_s, rc_result *res)
{
	batch_ctx b = { fn, sets, nsets };
	int64_t calls = rg_clock_batch(batch_call, &b, target_s, 100000);
	if (calls < 0) {
		res->status = "solution_error";
		snprintf(res->message, sizeof res->message, "the solution failed in the wall-clock batch");
		return -1;
	}
	return rcu_guard_check(res) ? -1 : calls;
}

/* Warm-up, then timed calls until rc_timing_done. Returns 0, or -1 when the candidate failed
 * (res->status set). */
int rcu_timing_phase(sf_entry_fn fn, sf_job *job, dev_set *sets, const timing_plan *p, void *flush, int use_cupti,
		     rc_result *res, char *note, size_t notelen, double **samples_out)
{
	const sf_job_timing *t = &job->timing;
	int nsets = p->nsets;
	for (int s = 0; s < nsets; s++)
		rcu_set_descriptors(&sets[s]);
	double t_start = rg_raw_now();
	/* warm-up: the same conditions as a timed call, every check of a checked call */
	for (int i = 0; i < 3 || (rg_raw_now() - t_start) * 1e3 < t->warmup_ms; i++) {
		prepare_timed_call(&sets[i % nsets], i, flush, p->flush_n, t->flush_reads);
		if (rcu_call_checked(fn, job, &sets[i % nsets], res))
			return -1;
		if (i > 1000)
			break;
	}
	double *samples = (double *)sf_xmalloc(sizeof(double) * (size_t)t->max_iters);
	*samples_out = samples;
	cudaEvent_t e0 = NULL, e1 = NULL;
	if (use_cupti) {
		rcu_cupti_windows_begin(t->max_iters);
	} else {
		cu_fault(cudaEventCreate(&e0), "creating a timing event");
		cu_fault(cudaEventCreate(&e1), "creating a timing event");
	}
	int n = 0;
	double t_timing = rg_raw_now(), timed_wall = 0;
	sf_call call;
	int defenses = rg_defenses_enabled();
	rg_reservoir audits;
	memset(&audits, 0, sizeof audits);
	void *audit_out[RC_AUDITS][SF_MAX_ARGS];
	for (int i = 0; i < RC_AUDITS; i++)
		for (int k = 0; k < sets[0].c.n_out; k++)
			audit_out[i][k] = sf_xmalloc(rcu_arg_bytes(&sets[0].c.out[k]) + 1);
	while (!rc_timing_done(t, samples, n, (rg_raw_now() - t_timing) * 1e3)) {
		int si = n % nsets;
		dev_set *s = &sets[si];
		/* fresh inputs: a new random sample of elements redrawn (the last one undone) */
		uint64_t key = 0;
		if (defenses) {
			key = rg_random();
			cu_fault(rcu_perturb_set(job, s, key, 1), "perturbing a timed call's inputs");
		}
		prepare_timed_call(s, n + 1, flush, p->flush_n, t->flush_reads);
		rcu_make_call(&call, s);
		if (rcu_diag("stream0"))
			call.stream = NULL;
		double w0, w1;
		int rc;
		if (use_cupti) {
			/* window n; rc_timing_done stops at max_iters, so all windows used cannot happen */
			if (rcu_diag("primer") && rcu_diag_primer_start())
				cu_fault(cudaErrorLaunchFailure, "starting the diagnostic primer kernel");
			if (rcu_cupti_window_open(rcu_cupti_now()))
				break;
			w0 = sf_now();
			rc = fn(&call);
			rcu_sync_after_call("after a timed call");
			uint64_t t1 = rcu_cupti_now();
			w1 = sf_now();
			rcu_cupti_window_close(n, t1);
		} else {
			cu_fault(cudaEventRecord(e0, rcu_stream), "recording a timing event");
			w0 = sf_now();
			rc = fn(&call);
			cu_fault(cudaSetDevice(rcu_device), "after a timed call");
			cu_fault(cudaEventRecord(e1, rcu_stream), "recording a timing event");
			rcu_sync_after_call("after a timed call");
			w1 = sf_now();
		}
		if (rcu_guard_check(res))
			return -1;
		if (rc != SF_OK) {
			res->status = "solution_error";
			snprintf(res->message, sizeof res->message, "the solution returned %d while timed", rc);
			return -1;
		}
		/* audit: kept or not is decided after the call, at random */
		int slot = t->time_only ? -1 : defenses ? rg_reservoir_offer(&audits, n, si, key) : (n < 2 ? n : -1);
		if (slot >= 0) {
			if (!defenses) { /* the old audit: the first timed call on sets 0 and 1, unperturbed */
				audits.set[slot] = si;
				audits.key[slot] = 0;
				audits.n = slot + 1;
			}
			for (int k = 0; k < s->c.n_out; k++)
				cu_fault(cudaMemcpy(audit_out[slot][k], s->c.out[k].data, rcu_arg_bytes(&s->c.out[k]),
						    cudaMemcpyDeviceToHost),
					 "copying an audited output back");
		}
		if (use_cupti) {
			samples[n] = rcu_cupti_window_ms(n);
		} else {
			float ms = 0;
			cu_fault(cudaEventElapsedTime(&ms, e0, e1), "reading a timing event");
			samples[n] = ms;
		}
		timed_wall += (w1 - w0) * 1e3;
		n++;
	}
	if (use_cupti) {
		/* final values: records delivered late still count */
		uint64_t dropped = 0, untimed = 0;
		int empty_calls = rcu_cupti_finish(samples, n, &dropped, &untimed);
		if (empty_calls)
			rcu_append_note(note, notelen,
					"%d of %d timed calls had no device activity (timed by their host window)",
					empty_calls, n);
		if (dropped)
			rcu_append_note(note, notelen, "CUPTI dropped %llu activity records",
					(unsigned long long)dropped);
		if (untimed)
			rcu_append_note(note, notelen, "%llu CUPTI records without timestamps",
					(unsigned long long)untimed);
	} else {
		cudaEventDestroy(e0);
		cudaEventDestroy(e1);
	}
	char err[SF_ERRLEN];
	for (int i = 0; i < audits.n; i++) {
		sf_ocall ac = sets[0].c;
		for (int k = 0; k < ac.n_out; k++)
			ac.out[k].data = audit_out[i][k];
		if (rc_write_audit(job, &ac, i, err, sizeof err)) {
			res->status = "error";
			snprintf(res->message, sizeof res->message, "%s", err);
			return -1;
		}
		res->audit_set[i] = audits.set[i];
		res->audit_key[i] = audits.key[i];
		res->n_audits = i + 1;
	}
	for (int i = 0; i < RC_AUDITS; i++)
		for (int k = 0; k < sets[0].c.n_out; k++)
			free(audit_out[i][k]);
	/* about 100 ms of candidate calls (a quarter of the budget when that is smaller), 2 at least */
	double target_s = t->budget_ms / 4000 < 0.1 ? t->budget_ms / 4000 : 0.1;
	res->batch_calls = t->time_only ? 0 : external_batch(fn, sets, nsets, target_s, res);
	if (res->batch_calls < 0)
		return -1;
	res->n_samples = n;
	res->samples_ms = samples;
	res->timing_method = use_cupti ? "cupti" : "events";
	res->timing_wall_ms = (rg_raw_now() - t_start) * 1e3;
	res->timed_wall_ms = timed_wall;
	res->timed_calls = n;
	res->sets = nsets;
	res->flush_bytes = (int64_t)p->flush_n;
	return 0;
}
