/*
 * runner_cpu.c - the cpu backend's runner: `solforge-runner-cpu JOB.json`.
 *
 * Reference mode: draws each round's inputs, runs the problem's oracle (sf_oracle_cpu_run of the
 * problem module), writes the reference outputs. Solution mode: draws the same inputs, loads the
 * candidate shared object, calls it on poisoned outputs wrapped in guard bytes, checks what it must
 * not touch, writes its outputs, then times it: each call after a cache flush, input sets rotated,
 * monotonic clock, until the median is known to target_rel_ci. See job.h for the files it writes.
 */
#include "runner/runner_common.h"
#include "runner/runner_guard.h"
#include "core/util.h"
#include "core/stats.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void (*oracle_run_fn)(const sf_ocall *c);

static volatile uint8_t g_flush_sink; /* the read flush's XOR (timing.flush_reads), kept */

/* A guarded allocation: RC_GUARD_BYTES of RC_GUARD_BYTE on both sides of `bytes` usable bytes. */
static void *guarded_alloc(size_t bytes, size_t shift)
{
	uint8_t *raw = sf_xmalloc(bytes + 2 * RC_GUARD_BYTES + shift + 64);
	memset(raw, RC_GUARD_BYTE, bytes + 2 * RC_GUARD_BYTES + shift + 64);
	return raw + RC_GUARD_BYTES + shift;
}

static uint8_t *guarded_raw(void *p, size_t shift)
{
	return (uint8_t *)p - RC_GUARD_BYTES - shift;
}

static int guards_ok(const void *p, size_t bytes, size_t shift)
{
	const uint8_t *front = (const uint8_t *)p - RC_GUARD_BYTES;
	const uint8_t *back = (const uint8_t *)p + bytes;
	for (size_t i = 0; i < RC_GUARD_BYTES; i++)
		if (front[i] != RC_GUARD_BYTE || back[i] != RC_GUARD_BYTE)
			return 0;
	(void)shift;
	return 1;
}

static size_t arg_bytes(const sf_otensor *t)
{
	return (size_t)sf_dt_bytes((sf_dt)t->dt, t->numel);
}

/* Draws round/set inputs into c->in[k].data (already allocated). */
static int draw_inputs(const sf_job *job, const rc_module *m, sf_ocall *c, uint64_t seed, char *err, size_t errlen)
{
	for (int k = 0; k < job->n_in; k++) {
		const sf_job_arg *a = &job->in[k];
		if (a->gen.kind == SF_GEN_SCALAR || a->gen.kind == SF_GEN_CUSTOM)
			continue;
		if (a->gen.kind == SF_GEN_FILE) {
			if (rc_load_file_input(a, c->in[k].data, err, errlen))
				return -1;
		} else {
			rc_gen_host(a, c->in[k].data, seed, rc_stream(k));
		}
	}
	return rc_gen_custom(job, m, c, seed, err, errlen);
}

static int run_reference(const sf_job *job, const rc_module *m)
{
	rc_result res = { .status = "ok" };
	char err[SF_ERRLEN];
	sf_ocall c;
	if (rc_ocall_layout(job, m, 1, &c, err, sizeof err))
		goto fail;
	for (int k = 0; k < c.n_in; k++)
		c.in[k].data = job->in[k].gen.kind == SF_GEN_SCALAR ? NULL : sf_xcalloc(1, arg_bytes(&c.in[k]));
	for (int k = 0; k < c.n_out; k++)
		c.out[k].data = sf_xcalloc(1, arg_bytes(&c.out[k]));
	for (int r = 0; r < job->n_rounds; r++) {
		if (draw_inputs(job, m, &c, job->seeds[r], err, sizeof err))
			goto fail;
		if (r == 0 && m->work) {
			memset(&res.work, 0, sizeof res.work);
			res.work.bytes = -1;
			m->work(&c, &res.work);
			res.have_work = 1;
		}
		((oracle_run_fn)m->run)(&c);
		if (rc_write_round(job, &c, r, err, sizeof err))
			goto fail;
	}
	/* the timed calls the solution runner audited: their set's inputs with their perturbation */
	for (int i = 0; job->timing.enabled && i < job->n_audits; i++) {
		if (draw_inputs(job, m, &c, rc_set_seed(job, job->audit_set[i]), err, sizeof err))
			goto fail;
		rc_perturb_host(job, &c, job->audit_key[i]);
		((oracle_run_fn)m->run)(&c);
		if (rc_write_audit(job, &c, i, err, sizeof err))
			goto fail;
		res.n_audits = i + 1;
		res.audit_set[i] = job->audit_set[i];
		res.audit_key[i] = job->audit_key[i];
	}
	return rc_write_result(job, &res) ? 1 : 0;
fail:
	res.status = "error";
	snprintf(res.message, sizeof res.message, "%s", err);
	fprintf(stderr, "runner: %s\n", err);
	rc_write_result(job, &res);
	return 1;
}

/* One input set for the solution: host buffers at shifted addresses, guarded outputs. */
typedef struct cpu_set {
	sf_ocall c;
	size_t shift;
	sf_tensor in_t[SF_MAX_ARGS], out_t[SF_MAX_ARGS];
	int64_t in_s[SF_MAX_ARGS][SF_MAX_DIMS], out_s[SF_MAX_ARGS][SF_MAX_DIMS];
} cpu_set;

static void set_alloc(cpu_set *s, const sf_job *job, const sf_ocall *layout, size_t shift)
{
	s->c = *layout;
	s->shift = shift;
	for (int k = 0; k < s->c.n_in; k++)
		s->c.in[k].data = job->in[k].gen.kind == SF_GEN_SCALAR
					  ? NULL
					  : guarded_alloc(arg_bytes(&layout->in[k]), shift);
	for (int k = 0; k < s->c.n_out; k++)
		s->c.out[k].data = guarded_alloc(arg_bytes(&layout->out[k]), shift);
}

static void set_free(cpu_set *s)
{
	for (int k = 0; k < s->c.n_in; k++)
		if (s->c.in[k].data)
			free(guarded_raw(s->c.in[k].data, s->shift));
	for (int k = 0; k < s->c.n_out; k++)
		free(guarded_raw(s->c.out[k].data, s->shift));
}

static void set_descriptors(cpu_set *s)
{
	rc_abi_tensors(s->c.in, s->c.n_in, s->in_t, s->in_s, SF_DEVICE_CPU, 0);
	rc_abi_tensors(s->c.out, s->c.n_out, s->out_t, s->out_s, SF_DEVICE_CPU, 0);
}

static uint64_t inputs_hash(const sf_ocall *c)
{
	uint64_t h = 0;
	for (int k = 0; k < c->n_in; k++)
		if (c->in[k].data)
			h = sf_fnv1a(c->in[k].data, arg_bytes(&c->in[k]), h);
	return h;
}

/* After a call (or its constructors): no trapped system call, no thread left behind. 0 or -1 with
 * res->status set. */
static int guard_check(rc_result *res)
{
	if (rg_violation(res->message, sizeof res->message)) {
		res->status = "sandbox_violation";
		return -1;
	}
	if (rg_threads_new(NULL, res->message, sizeof res->message)) {
		res->status = "thread_escaped";
		return -1;
	}
	return 0;
}

/* Calls the candidate once on set s and checks what it must not change. Returns 0, or -1 with
 * res->status / message set. */
static int call_checked(sf_entry_fn fn, const sf_job *job, cpu_set *s, rc_result *res)
{
	sf_tensor in_copy[SF_MAX_ARGS], out_copy[SF_MAX_ARGS];
	int64_t in_sc[SF_MAX_ARGS][SF_MAX_DIMS], out_sc[SF_MAX_ARGS][SF_MAX_DIMS];
	memcpy(in_copy, s->in_t, sizeof in_copy);
	memcpy(out_copy, s->out_t, sizeof out_copy);
	memcpy(in_sc, s->in_s, sizeof in_sc);
	memcpy(out_sc, s->out_s, sizeof out_sc);
	uint64_t before = inputs_hash(&s->c);
	sf_call call = { .abi_version = SF_ABI_VERSION,
			 .n_inputs = s->c.n_in,
			 .inputs = s->in_t,
			 .scalars = NULL,
			 .n_outputs = s->c.n_out,
			 .outputs = s->out_t,
			 .stream = NULL };
	double scal[SF_MAX_ARGS];
	for (int k = 0; k < s->c.n_in; k++)
		scal[k] = job->in[k].gen.kind == SF_GEN_SCALAR ? job->in[k].gen.a : NAN;
	call.scalars = scal;
	int rc = fn(&call);
	if (guard_check(res)) /* a refused system call first: a cheat may fail because of it */
		return -1;
	if (rc != SF_OK) {
		res->status = "solution_error";
		snprintf(res->message, sizeof res->message, "the solution returned %d", rc);
		return -1;
	}
	for (int k = 0; k < s->c.n_out; k++) {
		if (!guards_ok(s->c.out[k].data, arg_bytes(&s->c.out[k]), s->shift)) {
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
	if (inputs_hash(&s->c) != before) {
		res->status = "inputs_modified";
		snprintf(res->message, sizeof res->message, "the solution modified its inputs");
		return -1;
	}
	return 0;
}

static size_t llc_bytes(void)
{
	long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
	if (l3 <= 0)
		l3 = sysconf(_SC_LEVEL2_CACHE_SIZE);
	if (l3 <= 0)
		l3 = 32 << 20;
	return (size_t)l3;
}

static int noop_entry(const sf_call *call)
{
	(void)call;
	return SF_OK;
}

/* One call as timed: returns the candidate's code; *ms its clock time. */
static int timed_call(sf_entry_fn fn, sf_call *call, cpu_set *s, double *scal, double *ms)
{
	call->n_inputs = s->c.n_in;
	call->inputs = s->in_t;
	call->scalars = scal;
	call->n_outputs = s->c.n_out;
	call->outputs = s->out_t;
	double t0 = sf_now();
	int rc = fn(call);
	*ms = (sf_now() - t0) * 1e3;
	return rc;
}

/* One call of the external wall-clock batch (rg_clock_batch): the candidate (cand) or an empty
 * function on the input sets in turn. */
typedef struct {
	sf_entry_fn fn;
	cpu_set *sets;
	int nsets;
	double *scal;
	sf_call call;
} batch_ctx;
static int batch_call(void *ctx, int cand, int64_t i)
{
	batch_ctx *b = ctx;
	double ms;
	return timed_call(cand ? b->fn : noop_entry, &b->call, &b->sets[i % b->nsets], b->scal, &ms) != SF_OK;
}

/*
 * The external wall-clock batch (rg_clock_batch): the parent compares the candidate's time per call,
 * measured from outside this process, with the median the timed calls reported. B, 0 without a
 * clock, or -1 with res set when the candidate failed.
 */
static int64_t external_batch(sf_entry_fn fn, cpu_set *sets, int nsets, double *scal, double target_s,
			      rc_result *res)
{
	batch_ctx b = { .fn = fn, .sets = sets, .nsets = nsets, .scal = scal,
			.call = { .abi_version = SF_ABI_VERSION } };
	int64_t calls = rg_clock_batch(batch_call, &b, target_s, 1000000);
	if (calls < 0) {
		res->status = "solution_error";
		snprintf(res->message, sizeof res->message, "the solution failed in the wall-clock batch");
		return -1;
	}
	return guard_check(res) ? -1 : calls;
}

static int run_solution(sf_job *job, const rc_module *m)
{
	rc_result res = { .status = "ok" };
	char err[SF_ERRLEN];
	sf_ocall layout;
	if (rc_ocall_layout(job, m, 0, &layout, err, sizeof err))
		goto fail;

	/* rounds: inputs drawn before the candidate is loaded */
	int nr = job->n_rounds;
	cpu_set *rounds = sf_xcalloc((size_t)nr, sizeof *rounds);
	for (int r = 0; r < nr; r++) {
		set_alloc(&rounds[r], job, &layout, (size_t)(64 * r));
		if (draw_inputs(job, m, &rounds[r].c, job->seeds[r], err, sizeof err))
			goto fail;
	}
	/* timing sets, drawn from the timing seed */
	int nsets = 0;
	cpu_set *sets = NULL;
	if (job->timing.enabled) {
		size_t per = 0;
		for (int k = 0; k < layout.n_in; k++)
			per += arg_bytes(&layout.in[k]);
		for (int k = 0; k < layout.n_out; k++)
			per += arg_bytes(&layout.out[k]);
		nsets = job->timing.sets > 0 ? job->timing.sets : (int)(2 * llc_bytes() / (per + 1)) + 1;
		if (nsets < 2)
			nsets = 2;
		if (nsets > 4) /* the cache is flushed before every call anyway; sets defeat address-keyed reuse */
			nsets = 4;
		sets = sf_xcalloc((size_t)nsets, sizeof *sets);
		for (int s = 0; s < nsets; s++) {
			set_alloc(&sets[s], job, &layout, (size_t)(4096 + 192 * s));
			if (draw_inputs(job, m, &sets[s].c, rc_set_seed(job, s), err, sizeof err))
				goto fail;
		}
	}
	/* the candidate never sees the seeds */
	memset(job->seeds, 0, sizeof job->seeds);
	job->timing.seed = 0;
	size_t flush_n = job->timing.flush_bytes > 0 ? (size_t)job->timing.flush_bytes : 2 * llc_bytes();
	volatile uint8_t *flush = job->timing.enabled ? sf_xmalloc(flush_n) : NULL;
	if (flush) /* written once, so the pages exist (a read flush of untouched pages reads one zero page) */
		memset((void *)flush, 0x5a, flush_n);
	void *audit_out[RC_AUDITS][SF_MAX_ARGS];
	memset(audit_out, 0, sizeof audit_out);
	for (int i = 0; job->timing.enabled && i < RC_AUDITS; i++)
		for (int k = 0; k < layout.n_out; k++)
			audit_out[i][k] = sf_xmalloc(arg_bytes(&layout.out[k]) + 1);

	/* the sandbox, then the candidate: its constructors run inside it */
	rg_threads_snapshot();
	char note[256];
	if (rg_sandbox_install(0, job->out_dir, note, sizeof note, err, sizeof err))
		goto fail;
	res.sandbox = note[0] ? note : "on";
	void *h = dlopen(job->solution, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, sizeof err, "cannot load the solution: %s", dlerror());
		goto fail;
	}
	sf_entry_fn fn;
	*(void **)&fn = dlsym(h, job->entry);
	if (!fn) {
		snprintf(err, sizeof err, "the solution has no entry point '%s'", job->entry);
		goto fail;
	}
	if (guard_check(&res))
		return rc_write_result(job, &res) ? 1 : 0;

	for (int r = 0; r < nr; r++) {
		cpu_set *s = &rounds[r];
		for (int k = 0; k < s->c.n_out; k++)
			memset(s->c.out[k].data, rc_poison_byte(r), arg_bytes(&s->c.out[k]));
		set_descriptors(s);
		if (call_checked(fn, job, s, &res))
			return rc_write_result(job, &res) ? 1 : 0;
		if (rc_write_round(job, &s->c, r, err, sizeof err))
			goto fail;
	}

	double *samples = NULL;
	if (job->timing.enabled) {
		int defenses = rg_defenses_enabled();
		rc_undo *undo = sf_xcalloc((size_t)nsets, sizeof *undo);
		rg_reservoir audits = { 0 };
		for (int s = 0; s < nsets; s++)
			set_descriptors(&sets[s]);
		double t_start = rg_raw_now();
		/* warm-up */
		for (int i = 0; i < 3 || (rg_raw_now() - t_start) * 1e3 < job->timing.warmup_ms; i++) {
			if (call_checked(fn, job, &sets[i % nsets], &res))
				return rc_write_result(job, &res) ? 1 : 0;
			if (i > 1000)
				break;
		}
		samples = sf_xmalloc(sizeof(double) * (size_t)job->timing.max_iters);
		int n = 0;
		double t_timing = rg_raw_now(), timed_wall = 0;
		sf_call call = { .abi_version = SF_ABI_VERSION };
		double scal[SF_MAX_ARGS];
		for (int k = 0; k < layout.n_in; k++)
			scal[k] = job->in[k].gen.kind == SF_GEN_SCALAR ? job->in[k].gen.a : NAN;
		while (!rc_timing_done(&job->timing, samples, n, (rg_raw_now() - t_timing) * 1e3)) {
			int si = n % nsets;
			cpu_set *s = &sets[si];
			/* fresh inputs: a new random sample of elements redrawn (the last one undone) */
			uint64_t key = 0;
			if (defenses) {
				key = rg_random();
				rc_perturb_apply(job, &s->c, &undo[si], key);
			}
			/* fresh poison: a call must write its outputs again, not leave an earlier call's */
			for (int k = 0; k < s->c.n_out; k++)
				memset(s->c.out[k].data, rc_poison_byte(n), arg_bytes(&s->c.out[k]));
			if (job->timing.flush_reads) { /* eval --flush reads: one load per line, no line dirtied */
				uint8_t acc = 0;
				for (size_t i = 0; i < flush_n; i += 64)
					acc ^= flush[i];
				g_flush_sink = acc;
			} else {
				for (size_t i = 0; i < flush_n; i += 64)
					flush[i] = (uint8_t)(flush[i] + 1);
			}
			double ms;
			int rc = timed_call(fn, &call, s, scal, &ms);
			if (guard_check(&res))
				return rc_write_result(job, &res) ? 1 : 0;
			if (rc != SF_OK) {
				res.status = "solution_error";
				snprintf(res.message, sizeof res.message, "the solution returned %d while timed", rc);
				return rc_write_result(job, &res) ? 1 : 0;
			}
			samples[n++] = ms;
			timed_wall += ms;
			/* audit: kept or not is decided after the call, at random */
			int slot = job->timing.time_only ? -1
				   : defenses	     ? rg_reservoir_offer(&audits, n - 1, si, key)
						     : (n <= 2 ? n - 1 : -1);
			if (slot >= 0) {
				if (!defenses) { /* the old audit: the first call on sets 0 and 1, unperturbed */
					audits.set[slot] = si;
					audits.key[slot] = 0;
					audits.n = slot + 1;
				}
				for (int k = 0; k < s->c.n_out; k++)
					memcpy(audit_out[slot][k], s->c.out[k].data, arg_bytes(&s->c.out[k]));
			}
		}
		for (int i = 0; i < audits.n; i++) {
			sf_ocall ac = layout;
			for (int k = 0; k < ac.n_out; k++)
				ac.out[k].data = audit_out[i][k];
			if (rc_write_audit(job, &ac, i, err, sizeof err))
				goto fail;
			res.audit_set[i] = audits.set[i];
			res.audit_key[i] = audits.key[i];
			res.n_audits = i + 1;
		}
		/* about 100 ms of candidate calls (a quarter of the budget when that is smaller), 2 at least */
		double target_s = job->timing.budget_ms / 4000 < 0.1 ? job->timing.budget_ms / 4000 : 0.1;
		res.batch_calls = job->timing.time_only ? 0 : external_batch(fn, sets, nsets, scal, target_s, &res);
		if (res.batch_calls < 0)
			return rc_write_result(job, &res) ? 1 : 0;
		res.n_samples = n;
		res.samples_ms = samples;
		res.timing_method = "clock";
		res.timing_wall_ms = (rg_raw_now() - t_start) * 1e3;
		res.timed_wall_ms = timed_wall;
		res.timed_calls = n;
		res.sets = nsets;
		res.flush_bytes = (int64_t)flush_n;
		for (int s = 0; s < nsets; s++)
			rc_undo_free(&undo[s]);
		free(undo);
	}
	int rc = rc_write_result(job, &res) ? 1 : 0;
	free(samples);
	free((void *)flush);
	for (int i = 0; i < RC_AUDITS; i++)
		for (int k = 0; k < layout.n_out; k++)
			free(audit_out[i][k]);
	for (int r = 0; r < nr; r++)
		set_free(&rounds[r]);
	for (int s = 0; s < nsets; s++)
		set_free(&sets[s]);
	free(rounds);
	free(sets);
	return rc;
fail:
	res.status = "error";
	snprintf(res.message, sizeof res.message, "%s", err);
	fprintf(stderr, "runner: %s\n", err);
	rc_write_result(job, &res);
	return 1;
}

int main(int argc, char **argv)
{
	sf_job job;
	rc_load_job_or_die(argc, argv, "solforge-runner-cpu", &job);
	char err[SF_ERRLEN];
	rc_module m;
	if (rc_module_open(job.problem_module, "sf_oracle_cpu_run", &m, err, sizeof err)) {
		fprintf(stderr, "solforge-runner-cpu: %s\n", err);
		rc_result res = { .status = "error" };
		snprintf(res.message, sizeof res.message, "%s", err);
		rc_write_result(&job, &res);
		return 1;
	}
	int rc = job.mode == SF_JOB_REFERENCE ? run_reference(&job, &m) : run_solution(&job, &m);
	sf_job_free(&job);
	return rc;
}
