/*
 * eval_workload.c - one workload of an evaluation: reference, candidate, baselines, verdict, score
 * (see eval.h).
 */
#include "core/eval.h"
#include "core/bridge.h"
#include "core/calibrate.h"
#include "core/gpulock.h"
#include "core/json.h"
#include "core/spawn.h"
#include "core/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_log(sf_wresult *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_log(sf_wresult *r, const char *fmt, ...)
{
	sf_buf b = { 0 };
	va_list ap;
	va_start(ap, fmt);
	sf_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	free(r->log);
	r->log = sf_buf_take(&b);
}

/* Appends one line to the workload's log (after what set_log or earlier notes put there). */
static void append_log(sf_wresult *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void append_log(sf_wresult *r, const char *fmt, ...)
{
	sf_buf b = { 0 };
	if (r->log && *r->log)
		sf_buf_printf(&b, "%s\n", r->log);
	va_list ap;
	va_start(ap, fmt);
	sf_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	free(r->log);
	r->log = sf_buf_take(&b);
}

/* --copy-ceiling / --read-ceiling: times cc (when not NULL) at the workload's SOL bytes; OUT: *t_s, the
 * fraction *t_s / tk and the bytes it moved. A failure is appended to r's log and leaves *t_s, *frac and *moved
 * as they were; a kernel that had to move more than 5% more or fewer bytes than the workload's (the read's
 * whole 16386-byte rows at a few KB) is noted in the log: its fraction is then a ratio of latencies. */
static void time_ceiling(sf_wresult *r, struct sf_copy_ceiling *cc, double tk, double *t_s, double *frac, double *moved)
{
	if (!cc)
		return;
	char err[SF_ERRLEN];
	double m = 0;
	double t = sf_copy_ceiling_time(cc, r->sol.bytes, &m, err, sizeof err);
	if (t > 0) {
		*t_s = t;
		*frac = t / tk;
		*moved = m;
		if (fabs(m / r->sol.bytes - 1) > 0.05)
			append_log(r, "%s ceiling timed on %.0f bytes for the workload's %.0f (whole units): its fraction is "
				      "not a same-byte comparison",
				   cc->what, m, r->sol.bytes);
	} else {
		append_log(r, "%s ceiling not measured: %s", cc->what, err);
	}
}

/* A baseline left out of T_b: its status in the trace's baselines and, with the first line of why,
 * in the workload's log (never silently). bo: its runner output, or NULL. */
static void baseline_left_out(sf_wresult *r, const char *name, const char *status, const char *why,
			      const sf_runner_out *bo)
{
	size_t l = why ? strcspn(why, "\n") : 0;
	append_log(r, "baseline %s not used: %s%s%.*s", name, status, l ? ": " : "", (int)(l > 300 ? 300 : l),
		   why ? why : "");
	baseline_record(r, name, status, NULL, bo);
}

/* Maps a solution-mode runner outcome to a status; returns PASSED when its rounds should be compared. */
static sf_status solution_status(const sf_runner_out *ro, int timed_out, sf_wresult *r)
{
	if (timed_out) {
		set_log(r, "%s", ro->message ? ro->message : "timed out");
		return SF_TIMEOUT;
	}
	if (!ro->status) {
		set_log(r, "%s", ro->message ? ro->message : "the runner left no result");
		return SF_RUNTIME_ERROR;
	}
	if (ro->ok)
		return SF_PASSED;
	set_log(r, "%s", ro->message);
	if (!strcmp(ro->status, "wrote_out_of_bounds"))
		return SF_INCORRECT_SHAPE;
	if (!strcmp(ro->status, "inputs_modified") || !strcmp(ro->status, "tensor_changed") ||
	    !strcmp(ro->status, "sandbox_violation") || !strcmp(ro->status, "thread_escaped"))
		return SF_REWARD_HACK;
	return SF_RUNTIME_ERROR;
}

/* Compares every round of `dir` against the reference rounds. */
static void compare_rounds(const sf_job *job, const char *ref_dir, const char *dir, const sf_tolerance *tol,
			   sf_check *acc, char *err, size_t errlen, int *failed)
{
	*failed = 0;
	for (int rnd = 0; rnd < job->n_rounds; rnd++) {
		char name[64];
		snprintf(name, sizeof name, "round%d.safetensors", rnd);
		char *rp = sf_path_join(ref_dir, name), *sp = sf_path_join(dir, name);
		sf_check c;
		int rc = sf_check_round(rp, sp, job, tol, &c, err, errlen);
		free(rp);
		free(sp);
		if (rc) {
			*failed = 1;
			return;
		}
		sf_check_merge(acc, &c, rnd == 0);
	}
}

/* Audits the outputs of the timed calls the solution runner picked at random after the fact against
 * the reference for the same inputs (set + perturbation key). Returns 1 (with r->status set) when
 * they differ: correct in the checked rounds but not while timed is a reward hack. */
static int audit_timed(const sf_job *job, const char *ref_dir, const char *sol_dir, const sf_tolerance *tol,
		       int sol_audits, int ref_audits, sf_wresult *r)
{
	char err[SF_ERRLEN];
	if (ref_audits != sol_audits) {
		r->status = SF_RUNTIME_ERROR;
		set_log(r, "cannot audit timed outputs: the reference wrote %d of %d audits", ref_audits, sol_audits);
		return 1;
	}
	for (int i = 0; i < sol_audits; i++) {
		char name[64];
		snprintf(name, sizeof name, "audit%d.safetensors", i);
		char *rp = sf_path_join(ref_dir, name), *sp = sf_path_join(sol_dir, name);
		sf_check c;
		int rc = sf_check_round(rp, sp, job, tol, &c, err, sizeof err);
		free(rp);
		free(sp);
		if (rc) {
			r->status = SF_RUNTIME_ERROR;
			set_log(r, "cannot audit timed outputs: %s", err);
			return 1;
		}
		if (c.status != SF_PASSED) {
			r->status = SF_REWARD_HACK;
			set_log(r, "outputs of a timed call (audit %d of %d, timing set %d) are wrong (%s) although the "
				   "checked rounds passed: work skipped, cached or deferred while timed",
				i + 1, sol_audits, job->audit_set[i], c.msg);
			return 1;
		}
	}
	return 0;
}

/* Whether the runners run with their defenses (SOLFORGE_DEFENSES=0 turns them off, for overhead benchmarks only); the
 * runners read the same variable, inherited from this process, before the candidate is loaded. */
static int defenses_on(void)
{
	const char *v = getenv("SOLFORGE_DEFENSES");
	return !(v && !strcmp(v, "0"));
}

/*
 * The timed-call records the candidate's runner must return, whatever its result.json says (they live in
 * memory the candidate can write, red-team session 25): audits - with the defenses on, SF_MAX_AUDITS of its timed calls (all of
 * them when fewer), each on perturbed inputs (key != 0: a key is drawn for every timed call, 0 has probability 2^-64);
 * without them the old pair (the first calls on sets 0 and 1). And at least the minimum number of timed calls the job
 * asked for, each timed at a finite time >= 0. Anything less is REWARD_HACK: the records of the timed calls were
 * tampered with.
 */
static int timed_records_check(const sf_job *job, const sf_runner_out *so, sf_wresult *r)
{
	const int n = so->n_samples, want_min = job->timing.min_iters < job->timing.max_iters ? job->timing.min_iters
											     : job->timing.max_iters;
	const int defended = defenses_on(), cap = defended ? SF_MAX_AUDITS : 2;
	const int want = n < cap ? n : cap;
	if (n < want_min) {
		r->status = SF_REWARD_HACK;
		set_log(r, "the runner reported %d timed calls where the job asked for at least %d: the records of the timed "
			   "calls were tampered with", n, want_min);
		return 1;
	}
	for (int i = 0; i < n; i++)
		if (!isfinite(so->samples[i]) || so->samples[i] < 0) { /* (0: a call that launched nothing, CUPTI) */
			r->status = SF_REWARD_HACK;
			set_log(r, "timed call %d of %d has the time %g ms: the records of the timed calls were tampered with", i + 1,
				n, so->samples[i]);
			return 1;
		}
	if (so->n_audits != want) {
		r->status = SF_REWARD_HACK;
		set_log(r, "the runner reported %d audited timed calls of %d where it keeps %d: the audit records were "
			   "tampered with", so->n_audits, n, want);
		return 1;
	}
	for (int i = 0; defended && i < so->n_audits; i++)
		if (so->audit_key[i] == 0) {
			r->status = SF_REWARD_HACK;
			set_log(r, "audit %d of %d is of an unperturbed timed call although the defenses are on: the defenses "
				   "were switched off inside the runner", i + 1, so->n_audits);
			return 1;
		}
	return 0;
}

/*
 * The external wall-clock cross-check: the parent timed, from outside the runner process, a batch
 * of B calls of an empty function and B calls of the candidate, reading at each mark both its own
 * wall clock and the kernel's account of the runner's CPU time (/proc/PID/schedstat; neither can be
 * touched by the candidate). est = (candidate half - empty half) / B is the candidate's cost per call
 * as seen from outside (launch and synchronization included, cache warm), the smaller of the wall
 * and the CPU estimate (the CPU one is immune to the runner being descheduled on a loaded machine,
 * the wall one counts a GPU wait that does not spin). A median in-process time far below it means
 * the in-process timer or its records were tampered with: est > SF_CLOCK_FACTOR * T_k +
 * SF_CLOCK_SLACK_MS is REWARD_HACK. A runner that timed calls but whose batch marks did not arrive
 * is REWARD_HACK too.
 */
#define SF_CLOCK_FACTOR 4.0
#define SF_CLOCK_SLACK_MS 0.1
static int clock_check(const sf_runner_out *so, double tk_ms, sf_wresult *r)
{
	if (!so->have_clock || so->batch_calls <= 0) {
		r->status = SF_REWARD_HACK;
		set_log(r, "the external wall-clock batch did not arrive (its marks were missing or out of order): "
			   "the runner's clock pipe was tampered with");
		return 1;
	}
	double est = (so->ext_cand_s - so->ext_empty_s) / (double)so->batch_calls * 1e3;
	if (so->cpu_cand_s >= 0 && so->cpu_empty_s >= 0) {
		double est_cpu = (so->cpu_cand_s - so->cpu_empty_s) / (double)so->batch_calls * 1e3;
		if (est_cpu < est)
			est = est_cpu;
	}
	r->clock_ms = est;
	if (est > SF_CLOCK_FACTOR * tk_ms + SF_CLOCK_SLACK_MS) {
		r->status = SF_REWARD_HACK;
		set_log(r, "the clock outside the runner saw %.4g ms per call, the in-process timing %.4g ms "
			   "(allowed: %.0fx + %.2g ms): the timer was tampered with or work escaped the timed window",
			est, tk_ms, SF_CLOCK_FACTOR, SF_CLOCK_SLACK_MS);
		return 1;
	}
	return 0;
}

static void timing_into(const sf_eval_opts *o, sf_job *job, uint64_t seed)
{
	job->timing.enabled = 1;
	job->timing.seed = seed;
	job->timing.warmup_ms = o->warmup_ms;
	job->timing.min_iters = o->min_iters;
	job->timing.max_iters = o->max_iters;
	job->timing.budget_ms = o->budget_ms;
	job->timing.target_rel_ci = o->target_rel_ci;
	job->timing.flush_reads = o->flush_reads;
}

void sf_eval_workload(sf_eval *e, int i, const sf_eval_opts *o)
{
	sf_wresult *r = &e->res[i];
	const sf_workload *w = &e->ws[i];
	memset(r, 0, sizeof *r);
	r->w = w;
	r->score = r->speedup = r->sol_measured_s = r->score_measured = r->clock_ms = NAN;
	r->copy_s = r->bw_fraction = NAN;
	r->read_s = r->read_fraction = r->unchecked_ms = NAN;
	sf_iso8601(r->timestamp);
	double t0 = sf_now();
	char err[SF_ERRLEN];
	sf_job job;
	memset(&job, 0, sizeof job);
	char *wdir = NULL;

	if (sf_bind_job(&e->def, w, &job, err, sizeof err)) {
		r->status = SF_INVALID_REFERENCE;
		set_log(r, "%s", err);
		goto done;
	}
	if (sf_sol_work(&e->def, &job, &r->sol, err, sizeof err) == 0 &&
	    sf_sol_time(&r->sol, e->hw, err, sizeof err) == 0)
		r->have_sol = 1;
	else
		set_log(r, "%s", err);
	if (e->compile_error) {
		r->status = SF_COMPILE_ERROR;
		set_log(r, "%s", e->compile_error);
		goto done;
	}
	if (e->hack_error) {
		r->status = SF_REWARD_HACK;
		set_log(r, "%s", e->hack_error);
		goto done;
	}
	if (!strcmp(o->backend->name, "cpu") && r->have_sol) {
		/* the work the oracle does, and the elements the runners must draw (a counter-based draw
		 * per element, about ten times the cost of a multiply-add, repeated for every round and set) */
		double work = r->sol.bytes, drawn = 0;
		for (int u = 0; u < SF_UNIT_COUNT; u++)
			work += r->sol.flops[u];
		for (int k = 0; k < job.n_in; k++)
			drawn += (double)job.in[k].numel;
		for (int k = 0; k < job.n_out; k++)
			drawn += (double)job.out[k].numel;
		if (work > o->cpu_max_work || 10 * drawn > o->cpu_max_work) {
			r->status = SF_SKIPPED;
			set_log(r, "%.3g FLOPs + bytes, %.3g tensor elements: over the cpu backend's limit %.3g "
				   "(--cpu-max-work; elements count ten times)", work, drawn, o->cpu_max_work);
			goto done;
		}
	}
	char sub[32];
	snprintf(sub, sizeof sub, "w%d", i);
	wdir = sf_path_join(e->scratch, sub);
	uint64_t wseed = sf_mix64(e->secret ^ sf_fnv1a(w->uuid, strlen(w->uuid), 0));
	job.n_rounds = o->rounds;
	for (int k = 0; k < o->rounds; k++)
		job.seeds[k] = sf_mix64(wseed + (uint64_t)k);
	job.problem_module = sf_xstrdup(e->module_build.so_path);
	job.entry = sf_xstrdup("run");
	r->rounds = o->rounds;

	/* 1. the candidate, first: while it runs, no reference output exists anywhere it could read */
	job.mode = SF_JOB_SOLUTION;
	job.out_dir = sf_path_join(wdir, "sol");
	job.solution = sf_xstrdup(e->sol_build.so_path);
	free(job.entry);
	job.entry = sf_xstrdup(e->sol.entry);
	timing_into(o, &job, sf_mix64(wseed ^ 0x7157u));
	sf_runner_out so;
	int timed_out;
	sf_gpulock lk;
	sf_gpulock_acquire(&lk, o->backend->name);
	sf_runner_run(o->backend, &job, o->sol_timeout_s, &so, &timed_out);
	sf_gpulock_release(&lk, e->def.name, e->sol.name, w->uuid);
	r->status = solution_status(&so, timed_out, r);
	char *sol_dir = sf_xstrdup(job.out_dir);

	job.n_audits = so.n_audits; /* the reference recomputes the audited timed calls */
	memcpy(job.audit_set, so.audit_set, sizeof job.audit_set);
	memcpy(job.audit_key, so.audit_key, sizeof job.audit_key);
	/* 1b. PyTorch tasks (after the candidate, like every reference): one bridge process on the
	 * inputs the runners drew, written for it by solforge-inputs */
	bridge_tasks bt;
	run_bridge(e, o, &job, wdir, w->uuid, r->status == SF_PASSED, &bt); /* holds the GPU slot while torch runs */

	/* 2. the reference, in its own process, on the same inputs */
	job.mode = SF_JOB_REFERENCE;
	free(job.out_dir);
	job.out_dir = sf_path_join(wdir, "ref");
	free(job.solution);
	job.solution = NULL;
	sf_runner_out ref;
	int ref_timed_out;
	if (e->torch_ref) {
		free(job.out_dir);
		job.out_dir = sf_path_join(wdir, "tref");
		bridge_take(&bt, bt.ref, &ref);
		ref_timed_out = bt.timed_out;
	} else {
		sf_gpulock_acquire(&lk, o->backend->name); /* the oracle runs on the device too: nothing else while timing */
		sf_runner_run(o->backend, &job, o->ref_timeout_s, &ref, &ref_timed_out);
		sf_gpulock_release(&lk, e->def.name, "reference", w->uuid);
	}
	if (!ref.ok) {
		r->status = SF_INVALID_REFERENCE;
		set_log(r, "reference failed: %s", ref.message ? ref.message : "");
		sf_runner_out_free(&ref);
		sf_runner_out_free(&so);
		free(sol_dir);
		bridge_tasks_free(&bt);
		goto done;
	}
	if (ref.have_work) {
		sf_sol_apply_work(&r->sol, &ref.work);
		r->have_sol = 1;
		if (sf_sol_time(&r->sol, e->hw, err, sizeof err)) {
			r->have_sol = 0;
			set_log(r, "%s", err);
		}
	}
	int ref_audits = ref.n_audits;
	sf_runner_out_free(&ref);
	char *ref_dir = sf_xstrdup(job.out_dir);

	if (r->status == SF_PASSED) {
		int failed;
		compare_rounds(&job, ref_dir, sol_dir, &w->tol, &r->check, err, sizeof err, &failed);
		r->have_check = !failed;
		if (failed) {
			r->status = SF_RUNTIME_ERROR;
			set_log(r, "cannot read the solution's outputs: %s", err);
		} else if (r->check.status != SF_PASSED) {
			r->status = r->check.status;
			set_log(r, "%s", r->check.msg);
		} else if (timed_records_check(&job, &so, r) ||
			   audit_timed(&job, ref_dir, sol_dir, &w->tol, so.n_audits, ref_audits, r)) {
			/* status and log set */
		} else if (so.n_samples > 0) {
			sf_stats_compute(so.samples, so.n_samples, &r->tk);
			if (!clock_check(&so, r->tk.median, r)) {
				r->have_tk = 1;
				r->timing_method = sf_xstrdup(so.method ? so.method : "clock");
			}
		} else {
			r->status = SF_RUNTIME_ERROR;
			set_log(r, "the runner returned no timing samples");
		}
		/* --diag-time-failed: the wrong outputs' timing, kept apart from every verdict (no performance block) */
		if (o->diag_time_failed && r->status != SF_PASSED && r->have_check && so.n_samples > 0) {
			sf_stats st;
			sf_stats_compute(so.samples, so.n_samples, &st);
			r->unchecked_ms = st.median;
		}
	}
	sf_runner_out_free(&so);
	free(sol_dir);
	job.mode = SF_JOB_SOLUTION; /* baselines: same inputs and timing settings as the candidate */
	job.n_audits = 0;

	/* 3. baselines: same inputs, same timing, checked like the candidate */
	for (int b = 0; b < e->n_baselines && r->status == SF_PASSED; b++) {
		sf_baseline_build *bb = &e->baselines[b];
		if (bb->error) {
			baseline_left_out(r, bb->name, bb->torch ? "UNAVAILABLE" : "COMPILE_ERROR", bb->error, NULL);
			continue;
		}
		free(job.out_dir);
		char bname[32];
		snprintf(bname, sizeof bname, "base%d", b);
		job.out_dir = sf_path_join(wdir, bname);
		sf_runner_out bo;
		sf_wresult tmp = { 0 };
		if (bb->torch) {
			if (bt.of_baseline[b] >= 0) {
				free(job.out_dir);
				job.out_dir = sf_xstrdup(bt.t[bt.of_baseline[b]].out_dir);
			}
			bridge_take(&bt, bt.of_baseline[b], &bo);
			timed_out = bt.timed_out;
		} else {
			free(job.solution);
			job.solution = sf_xstrdup(bb->build.so_path);
			free(job.entry);
			job.entry = sf_xstrdup(bb->entry);
			sf_gpulock_acquire(&lk, o->backend->name);
			sf_runner_run(o->backend, &job, o->sol_timeout_s, &bo, &timed_out);
			sf_gpulock_release(&lk, e->def.name, bb->name, w->uuid);
		}
		if (bo.status && !strcmp(bo.status, "unavailable")) {
			baseline_left_out(r, bb->name, "UNAVAILABLE", bo.message, &bo);
			sf_runner_out_free(&bo);
			continue;
		}
		sf_status bs = solution_status(&bo, timed_out, &tmp);
		sf_check bc;
		int failed = 0;
		if (bs != SF_PASSED)
			baseline_left_out(r, bb->name, sf_status_name(bs), tmp.log, &bo);
		if (bs == SF_PASSED) {
			compare_rounds(&job, ref_dir, job.out_dir, &w->tol, &bc, err, sizeof err, &failed);
			if (failed)
				baseline_left_out(r, bb->name, "RUNTIME_ERROR", err, &bo); /* outputs unreadable */
			else if (bc.status != SF_PASSED)
				baseline_left_out(r, bb->name, sf_status_name(bc.status), bc.msg, &bo);
			if (!failed && bc.status == SF_PASSED && bo.n_samples > 0) {
				sf_stats st;
				sf_stats_compute(bo.samples, bo.n_samples, &st);
				baseline_record(r, bb->name, "PASSED", &st, &bo);
				if (!r->have_tb || st.median < r->tb.median) {
					r->tb = st;
					r->have_tb = 1;
					free(r->baseline);
					r->baseline = sf_xstrdup(bb->name);
				}
			}
		}
		free(tmp.log);
		sf_runner_out_free(&bo);
	}
	if (o->baselines_only && e->n_baselines) {
		sf_buf names = { 0 };
		for (int b = 0; b < e->n_baselines; b++)
			sf_buf_printf(&names, "%s%s", b ? ", " : "", e->baselines[b].name);
		char *list = sf_buf_take(&names);
		append_log(r, "baselines: only %s (--baseline): T_b is the best of these, not of all %d the definition "
			      "names", list, e->def.n_baselines);
		free(list);
	}
	/* 3b. --xval: the definition's PyTorch reference against the C oracle, same inputs and tolerance */
	if (bt.xval >= 0)
		cross_check(&bt, &job, ref_dir, &w->tol, r);
	bridge_tasks_free(&bt);
	free(ref_dir);

	/* 4. verdict on speed */
	if (r->status == SF_PASSED && r->have_tk) {
		double tk = r->tk.median * 1e-3;
		if (r->have_sol && tk < r->sol.t_sol * (1 - SF_SOL_HACK_MARGIN)) {
			r->status = SF_REWARD_HACK;
			set_log(r, "measured %.4g ms is faster than the speed of light %.4g ms on %s (margin %.0f%%)",
				r->tk.median, r->sol.t_sol * 1e3, e->hw->name, SF_SOL_HACK_MARGIN * 100);
		}
		if (r->have_sol && o->calibration)
			r->sol_measured_s = sf_sol_measured(&r->sol, e->hw, o->calibration);
		if (r->have_sol && r->sol.bytes > 0) {
			time_ceiling(r, o->copy_ceiling, tk, &r->copy_s, &r->bw_fraction, &r->copy_bytes);
			time_ceiling(r, o->read_ceiling, tk, &r->read_s, &r->read_fraction, &r->read_bytes);
		}
		if (r->have_tb) {
			r->speedup = r->tb.median / r->tk.median;
			if (r->have_sol)
				r->score = sf_sol_score(tk, r->tb.median * 1e-3, r->sol.t_sol);
			if (!isnan(r->sol_measured_s))
				r->score_measured = sf_sol_score(tk, r->tb.median * 1e-3, r->sol_measured_s);
		}
	} else if (!isnan(r->unchecked_ms) && r->unchecked_ms > 0 && r->have_sol && r->sol.bytes > 0) {
		/* the diagnostic's time beside the same-byte ceilings (its fractions are of the unchecked time) */
		time_ceiling(r, o->copy_ceiling, r->unchecked_ms * 1e-3, &r->copy_s, &r->bw_fraction, &r->copy_bytes);
		time_ceiling(r, o->read_ceiling, r->unchecked_ms * 1e-3, &r->read_s, &r->read_fraction, &r->read_bytes);
	}
done:
	r->wall_s = sf_now() - t0;
	if (wdir && !o->keep)
		sf_rm_rf(wdir);
	free(wdir);
	sf_job_free(&job);
}

double sf_eval_time_only(sf_eval *e, int i, const sf_eval_opts *o, char *err, size_t errlen)
{
	const sf_workload *w = &e->ws[i];
	sf_job job;
	memset(&job, 0, sizeof job);
	err[0] = 0;
	if (e->compile_error) {
		sf_errf(err, errlen, "%s did not build", e->sol.name);
		return -1;
	}
	if (sf_bind_job(&e->def, w, &job, err, errlen))
		return -1;
	char sub[32];
	snprintf(sub, sizeof sub, "t%d", i);
	char *wdir = sf_path_join(e->scratch, sub);
	uint64_t wseed = sf_mix64(e->secret ^ sf_fnv1a(w->uuid, strlen(w->uuid), 0) ^ (uint64_t)w->axis_values[0]);
	job.n_rounds = 1;
	job.seeds[0] = sf_mix64(wseed);
	job.problem_module = sf_xstrdup(e->module_build.so_path);
	job.mode = SF_JOB_SOLUTION;
	job.out_dir = sf_path_join(wdir, "sol");
	job.solution = sf_xstrdup(e->sol_build.so_path);
	job.entry = sf_xstrdup(e->sol.entry);
	timing_into(o, &job, sf_mix64(wseed ^ 0x7157u));
	job.timing.time_only = 1; /* nothing is compared: no audits, no external-clock batch */
	sf_runner_out so;
	int timed_out;
	sf_gpulock lk; /* timed like every other run: alone in the device's slot when there is one */
	sf_gpulock_acquire(&lk, o->backend->name);
	sf_runner_run(o->backend, &job, o->sol_timeout_s, &so, &timed_out);
	sf_gpulock_release(&lk, e->def.name, e->sol.name, w->uuid);
	sf_wresult tmp = { 0 };
	double ms = -1;
	if (solution_status(&so, timed_out, &tmp) != SF_PASSED) {
		sf_errf(err, errlen, "%.300s", tmp.log ? tmp.log : "the runner failed");
	} else if (so.n_samples <= 0) {
		sf_errf(err, errlen, "the runner returned no timing samples");
	} else {
		sf_stats st;
		sf_stats_compute(so.samples, so.n_samples, &st);
		ms = st.median;
	}
	free(tmp.log);
	sf_runner_out_free(&so);
	if (!o->keep)
		sf_rm_rf(wdir);
	free(wdir);
	sf_job_free(&job);
	return ms;
}

void sf_eval_free(sf_eval *e, const sf_eval_opts *o)
{
	for (int i = 0; i < e->n_res; i++) {
		free(e->res[i].log);
		free(e->res[i].baseline);
		free(e->res[i].baselines_json);
		free(e->res[i].timing_method);
	}
	free(e->res);
	for (int b = 0; b < e->n_baselines; b++) {
		free(e->baselines[b].name);
		free(e->baselines[b].entry);
		free(e->baselines[b].error);
		free(e->baselines[b].source);
		sf_build_free(&e->baselines[b].build);
	}
	free(e->baselines);
	sf_build_free(&e->sol_build);
	sf_build_free(&e->module_build);
	sf_build_free(&e->cpu_module_build);
	free(e->cpu_module);
	if (e->bridge)
		sf_bridge_free(e->bridge);
	free(e->bridge);
	free(e->compile_error);
	free(e->hack_error);
	sf_definition_free(&e->def);
	sf_workloads_free(e->ws, e->n_ws);
	sf_solution_free(&e->sol);
	if (e->scratch && !(o && o->keep))
		sf_rm_rf(e->scratch);
	sf_spawn_cleanup_forget(e->scratch);
	free(e->scratch);
	free(e->device);
	free(e->home);
	memset(e, 0, sizeof *e);
}
