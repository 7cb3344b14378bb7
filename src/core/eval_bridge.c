/*
 * eval_bridge.c - the PyTorch bridge inside one workload's evaluation: which tasks it runs, their
 * outcomes in the trace, and the --xval cross-check of a C oracle against a PyTorch reference
 * (see bridge.h, docs/bridge.md).
 */
#include "core/bridge.h"
#include "core/gpulock.h"
#include "core/check.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_task(bridge_tasks *bt, const char *wdir, const char *dirname, const char *role, const char *name,
		    const char *source, const char *entry, int compile, int timed)
{
	sf_bridge_task *t = &bt->t[bt->n];
	t->role = role;
	t->name = name;
	t->source = source;
	t->entry = entry;
	t->compile = compile;
	t->time = timed;
	t->out_dir = sf_path_join(wdir, dirname);
	return bt->n++;
}

void run_bridge(const sf_eval *e, const sf_eval_opts *o, const sf_job *job, const char *wdir, const char *uuid,
		int with_baselines, bridge_tasks *bt)
{
	memset(bt, 0, sizeof *bt);
	bt->ref = bt->xval = -1;
	bt->of_baseline = sf_xcalloc((size_t)e->n_baselines + 1, sizeof(int));
	for (int b = 0; b < e->n_baselines; b++)
		bt->of_baseline[b] = -1;
	if (!e->bridge || !e->bridge->usable)
		return;
	bt->t = sf_xcalloc((size_t)e->n_baselines + 3, sizeof *bt->t);
	bt->out = sf_xcalloc((size_t)e->n_baselines + 3, sizeof *bt->out);
	if (e->torch_ref)
		bt->ref = add_task(bt, wdir, "tref", "reference", "pytorch-reference", "@reference", "run", 0, 0);
	for (int b = 0; with_baselines && b < e->n_baselines; b++) {
		const sf_baseline_build *bb = &e->baselines[b];
		if (!bb->torch || bb->error)
			continue;
		char name[32];
		snprintf(name, sizeof name, "tb%d", b);
		bt->of_baseline[b] = add_task(bt, wdir, name, "baseline", bb->name, bb->source, bb->entry, bb->compile, 1);
	}
	if (o->xval && !e->torch_ref && e->def.reference)
		bt->xval = add_task(bt, wdir, "xval", "baseline", "pytorch-reference", "@reference", "run", 0, 0);
	if (bt->n == 0)
		return;
	char err[SF_ERRLEN];
	char *inputs = sf_path_join(wdir, "inputs"), *work = sf_path_join(wdir, "bridge");
	if (sf_bridge_write_inputs(job, e->cpu_module, inputs, o->ref_timeout_s, err, sizeof err)) {
		for (int i = 0; i < bt->n; i++)
			bt->out[i].message = sf_xstrdup(err);
	} else {
		double limit = o->sol_timeout_s * (bt->n + 1); /* torch.compile may take minutes */
		const char *lim = getenv("SOLFORGE_BRIDGE_TIMEOUT");
		if (lim && atof(lim) > 0)
			limit = atof(lim);
		/* the device slot only while torch runs (and times) on the device: the inputs were written
		 * without it, and the bridge itself waits for the slot after python and torch have started */
		char lock[1024], log[1024], slot_name[64];
		sf_bridge_slot slot = { 0 };
		slot.problem = e->def.name; /* (named to the bridge with or without a lock: its logs say whose they are) */
		slot.what = uuid;
		if (sf_gpulock_paths(o->backend->name, lock, sizeof lock, log, sizeof log, slot_name, sizeof slot_name) == 0) {
			slot.lock = lock;
			slot.log = log;
			slot.slot = slot_name;
		}
		sf_bridge_run(e->home, job, e->def.file, !strcmp(o->backend->name, "cuda") ? "cuda" : "cpu", inputs, work,
			      bt->t, bt->n, limit, &slot, bt->out, &bt->timed_out);
	}
	free(inputs);
	free(work);
}

void bridge_take(bridge_tasks *bt, int i, sf_runner_out *out)
{
	if (i < 0 || i >= bt->n) {
		memset(out, 0, sizeof *out);
		out->message = sf_xstrdup("the PyTorch bridge did not run this task");
		return;
	}
	*out = bt->out[i];
	memset(&bt->out[i], 0, sizeof bt->out[i]);
}

void bridge_tasks_free(bridge_tasks *bt)
{
	for (int i = 0; i < bt->n; i++) {
		free(bt->t[i].out_dir);
		sf_runner_out_free(&bt->out[i]);
	}
	free(bt->t);
	free(bt->out);
	free(bt->of_baseline);
	memset(bt, 0, sizeof *bt);
}

static void num(sf_buf *b, const char *key, double v)
{
	sf_buf_printf(b, ",\"%s\":", key);
	sf_buf_json_num(b, v);
}

void baseline_record(sf_wresult *r, const char *name, const char *status, const sf_stats *st,
		     const sf_runner_out *bo)
{
	sf_buf b = { 0 };
	if (r->baselines_json)
		sf_buf_printf(&b, "%s,", r->baselines_json);
	sf_buf_puts(&b, "{\"name\":");
	sf_buf_json_str(&b, name);
	sf_buf_puts(&b, ",\"status\":");
	sf_buf_json_str(&b, status);
	if (st) {
		num(&b, "median_ms", st->median);
		num(&b, "min_ms", st->min);
		num(&b, "rel_ci", st->rel_ci);
		sf_buf_printf(&b, ",\"timed_calls\":%d", st->n);
	}
	if (bo && bo->method) {
		sf_buf_puts(&b, ",\"timing_method\":");
		sf_buf_json_str(&b, bo->method);
	}
	if (bo && bo->have_compile)
		num(&b, "compile_s", bo->compile_s);
	sf_buf_puts(&b, "}");
	free(r->baselines_json);
	r->baselines_json = sf_buf_take(&b);
}

/* Appends a line to r's log. */
static void add_log(sf_wresult *r, const char *line)
{
	sf_buf b = { 0 };
	if (r->log && *r->log)
		sf_buf_printf(&b, "%s\n", r->log);
	sf_buf_puts(&b, line);
	free(r->log);
	r->log = sf_buf_take(&b);
}

void cross_check(bridge_tasks *bt, const sf_job *job, const char *ref_dir, const sf_tolerance *tol, sf_wresult *r)
{
	sf_runner_out xo;
	const char *dir = bt->t[bt->xval].out_dir;
	bridge_take(bt, bt->xval, &xo);
	sf_buf line = { 0 };
	sf_buf rec = { 0 };
	const char *verdict = "ERROR";
	sf_check acc;
	memset(&acc, 0, sizeof acc);
	int compared = 0;
	if (!xo.ok) {
		verdict = xo.status && !strcmp(xo.status, "unavailable") ? "UNAVAILABLE" : "ERROR";
		size_t l = xo.message ? strcspn(xo.message, "\n") : 0;
		sf_buf_printf(&line, "xval: the PyTorch reference did not run (%s): %.*s", verdict, (int)(l > 300 ? 300 : l),
			      xo.message ? xo.message : "");
	} else {
		char err[SF_ERRLEN] = "";
		int failed = 0;
		for (int rnd = 0; rnd < job->n_rounds && !failed; rnd++) {
			char name[64];
			snprintf(name, sizeof name, "round%d.safetensors", rnd);
			char *rp = sf_path_join(ref_dir, name), *xp = sf_path_join(dir, name);
			sf_check c;
			failed = sf_check_round(rp, xp, job, tol, &c, err, sizeof err) != 0;
			if (!failed)
				sf_check_merge(&acc, &c, rnd == 0);
			free(rp);
			free(xp);
		}
		if (failed) {
			sf_buf_printf(&line, "xval: cannot compare the PyTorch reference's outputs: %s", err);
		} else {
			compared = 1;
			verdict = acc.status == SF_PASSED ? "AGREE" : "DISAGREE";
			sf_buf_printf(&line, "xval: PyTorch reference vs C oracle: %s on %d rounds (max abs err %.3g, max rel err %.3g)%s%s",
				      verdict, job->n_rounds, acc.max_abs, acc.max_rel, acc.status == SF_PASSED ? "" : ": ",
				      acc.status == SF_PASSED ? "" : acc.msg);
		}
	}
	add_log(r, line.data);
	if (r->baselines_json)
		sf_buf_printf(&rec, "%s,", r->baselines_json);
	sf_buf_puts(&rec, "{\"name\":\"pytorch-reference\",\"role\":\"xval\",\"status\":");
	sf_buf_json_str(&rec, verdict);
	if (compared) {
		num(&rec, "max_abs_err", acc.max_abs);
		num(&rec, "max_rel_err", acc.max_rel);
	}
	sf_buf_puts(&rec, "}");
	free(r->baselines_json);
	r->baselines_json = sf_buf_take(&rec);
	sf_buf_free(&line);
	sf_runner_out_free(&xo);
}
