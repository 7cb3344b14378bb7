/*
 * runner_io.c - starting a runner process on a job and reading what it left (see eval.h).
 */
#include "core/eval.h"
#include "core/json.h"
#include "core/spawn.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void sf_runner_out_free(sf_runner_out *r)
{
	free(r->status);
	free(r->message);
	free(r->samples);
	free(r->method);
	memset(r, 0, sizeof *r);
}

int sf_runner_read_result(const char *dir, sf_runner_out *r)
{
	char *path = sf_path_join(dir, "result.json");
	char *text;
	size_t len;
	char err[SF_ERRLEN];
	int rc = sf_read_file(path, &text, &len, err, sizeof err);
	free(path);
	if (rc)
		return -1;
	sf_json *root = sf_json_parse(text, len, err, sizeof err);
	free(text);
	if (!root)
		return -1;
	const sf_json *st = sf_json_get(root, "status"), *msg = sf_json_get(root, "message");
	if (!st || st->type != SF_JSON_STRING) {
		sf_json_free(root);
		return -1;
	}
	r->status = sf_xstrdup(st->str);
	r->message = sf_xstrdup(msg && msg->type == SF_JSON_STRING ? msg->str : "");
	r->ok = !strcmp(r->status, "ok");
	const sf_json *au = sf_json_get(root, "audits");
	for (size_t i = 0; au && au->type == SF_JSON_ARRAY && i < au->n && i < SF_MAX_AUDITS; i++) {
		const sf_json *s = sf_json_get(au->items[i], "set"), *k = sf_json_get(au->items[i], "key");
		if (!s || s->type != SF_JSON_NUMBER || !s->is_int || s->ival < 0 || s->ival > 64 || !k ||
		    k->type != SF_JSON_STRING)
			break;
		r->audit_set[i] = (int)s->ival;
		r->audit_key[i] = strtoull(k->str, NULL, 10);
		r->n_audits = (int)i + 1;
	}
	const sf_json *bc = sf_json_get(root, "batch_calls");
	if (bc && bc->type == SF_JSON_NUMBER && bc->is_int && bc->ival > 0)
		r->batch_calls = bc->ival;
	const sf_json *w = sf_json_get(root, "work");
	if (w) {
		const sf_json *fl = sf_json_get(w, "flops"), *by = sf_json_get(w, "bytes");
		if (fl && fl->type == SF_JSON_ARRAY && fl->n == SF_UNIT_COUNT && by && by->type == SF_JSON_NUMBER) {
			for (int u = 0; u < SF_UNIT_COUNT; u++)
				r->work.flops[u] = fl->items[u]->type == SF_JSON_NUMBER ? fl->items[u]->num : 0;
			r->work.bytes = by->num;
			r->have_work = 1;
		}
	}
	const sf_json *t = sf_json_get(root, "timing");
	if (t) {
		const sf_json *s = sf_json_get(t, "samples_ms"), *m = sf_json_get(t, "method"),
			      *tw = sf_json_get(t, "timed_wall_ms");
		if (s && s->type == SF_JSON_ARRAY && s->n) {
			r->samples = sf_xcalloc(s->n, sizeof(double));
			for (size_t i = 0; i < s->n; i++)
				if (s->items[i]->type == SF_JSON_NUMBER)
					r->samples[r->n_samples++] = s->items[i]->num;
		}
		if (m && m->type == SF_JSON_STRING)
			r->method = sf_xstrdup(m->str);
		if (tw && tw->type == SF_JSON_NUMBER)
			r->timed_wall_ms = tw->num;
		const sf_json *cs = sf_json_get(t, "compile_s"); /* the PyTorch bridge's torch.compile time */
		if (cs && cs->type == SF_JSON_NUMBER) {
			r->compile_s = cs->num;
			r->have_compile = 1;
		}
	}
	sf_json_free(root);
	return 0;
}

/* The external batch (core/job.h SF_CLOCK_PAIRS): SF_CLOCK_PAIRS groups "cdab" ('c' candidate calls
 * 'd', then 'a' as many empty calls 'b'), all present and in order, or no clock at all (have_clock 0:
 * REWARD_HACK in the evaluation). Of the pairs, the one with the smallest estimate goes into r: the
 * smaller of its wall and CPU differences (the evaluation's est, eval_workload.c clock_check). */
void sf_runner_clock_pairs(const sf_proc *p, sf_runner_out *r)
{
	if (p->n_marks != 4 * SF_CLOCK_PAIRS)
		return;
	double best = 0;
	for (int k = 0; k < SF_CLOCK_PAIRS; k++)
		if (memcmp(p->mark + 4 * k, "cdab", 4))
			return;
	for (int k = 0; k < SF_CLOCK_PAIRS; k++) {
		const double *t = p->mark_t + 4 * k, *c = p->mark_cpu + 4 * k;
		const double cand = t[1] - t[0], empty = t[3] - t[2];
		const int cpu_ok = c[0] >= 0 && c[1] >= 0 && c[2] >= 0 && c[3] >= 0;
		double est = cand - empty;
		if (cpu_ok && c[1] - c[0] - (c[3] - c[2]) < est)
			est = c[1] - c[0] - (c[3] - c[2]);
		if (k == 0 || est < best) {
			best = est;
			r->ext_cand_s = cand;
			r->ext_empty_s = empty;
			r->cpu_cand_s = cpu_ok ? c[1] - c[0] : -1;
			r->cpu_empty_s = cpu_ok ? c[3] - c[2] : -1;
		}
	}
	r->have_clock = 1;
}

void sf_runner_run(const sf_backend *be, const sf_job *job, double timeout_s, sf_runner_out *r, int *timed_out)
{
	memset(r, 0, sizeof *r);
	*timed_out = 0;
	char err[SF_ERRLEN];
	if (sf_mkdir_p(job->out_dir, err, sizeof err)) {
		r->message = sf_xstrdup(err);
		return;
	}
	char *jpath = sf_path_join(job->out_dir, "job.json");
	char *logp = sf_path_join(job->out_dir, "runner.log");
	char *json = sf_job_to_json(job);
	sf_write_file(jpath, json, strlen(json), err, sizeof err);
	free(json);
	char *runner = sf_backend_runner_path(be);
	char *argv[] = { runner, jpath, NULL };
	sf_proc p;
	/* solution mode: the external wall clock listens (the runner marks its wall-clock batch) */
	int rc = job->mode == SF_JOB_SOLUTION ? sf_spawn_clocked(argv, logp, timeout_s, NULL, &p, err, sizeof err)
					      : sf_spawn(argv, logp, timeout_s, NULL, &p, err, sizeof err);
	if (rc) {
		r->message = sf_xstrdup(err);
	} else {
		*timed_out = p.timed_out;
		int have = !p.timed_out && sf_runner_read_result(job->out_dir, r) == 0;
		if (have)
			sf_runner_clock_pairs(&p, r);
		if (!have || !(p.exited && (p.exit_code == 0 || !r->ok))) {
			char how[160];
			sf_proc_describe(&p, how, sizeof how);
			char *tail = sf_log_tail(logp, 3000);
			sf_buf b = { 0 };
			sf_buf_printf(&b, "runner %s%s%s\n%s", how, have ? ": " : " without a result",
				      have && r->message ? r->message : "", tail);
			free(tail);
			free(r->message);
			r->message = sf_buf_take(&b);
			if (!have || r->ok) {
				free(r->status);
				r->status = NULL;
				r->ok = 0;
			}
		}
	}
	free(runner);
	free(jpath);
	free(logp);
}

