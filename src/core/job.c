/*
 * job.c - reading and writing runner jobs (see job.h).
 */
#include "core/job.h"
#include "core/json.h"
#include "core/util.h"
#include "core/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const gen_names[] = { "normal", "uniform", "int", "const", "custom", "file", "scalar" };

const char *sf_gen_kind_name(int kind)
{
	if (kind < 0 || kind >= (int)(sizeof gen_names / sizeof gen_names[0]))
		return "unknown";
	return gen_names[kind];
}

int sf_gen_kind_from_name(const char *name)
{
	for (int i = 0; i < (int)(sizeof gen_names / sizeof gen_names[0]); i++)
		if (!strcmp(gen_names[i], name))
			return i;
	return -1;
}

int64_t sf_job_axis(const sf_job *job, const char *name, int *found)
{
	for (int i = 0; i < job->n_axes; i++) {
		if (!strcmp(job->axis_names[i], name)) {
			if (found)
				*found = 1;
			return job->axis_values[i];
		}
	}
	if (found)
		*found = 0;
	return -1;
}

/* u64 values travel as decimal strings (JSON numbers lose precision above 2^53). */
static int get_u64(const sf_json *o, const char *key, uint64_t *out, char *err, size_t errlen)
{
	const sf_json *v = sf_json_get(o, key);
	if (!v || v->type != SF_JSON_STRING) {
		sf_errf(err, errlen, "job: '%s' must be a decimal string", key);
		return -1;
	}
	char *end;
	*out = strtoull(v->str, &end, 10);
	if (*end || !*v->str) {
		sf_errf(err, errlen, "job: '%s' is not a decimal integer", key);
		return -1;
	}
	return 0;
}

static int get_num(const sf_json *o, const char *key, double *out, int required, char *err, size_t errlen)
{
	const sf_json *v = sf_json_get(o, key);
	if (!v) {
		if (required) {
			sf_errf(err, errlen, "job: missing '%s'", key);
			return -1;
		}
		return 0;
	}
	if (v->type != SF_JSON_NUMBER) {
		sf_errf(err, errlen, "job: '%s' must be a number", key);
		return -1;
	}
	*out = v->num;
	return 0;
}

static char *get_str(const sf_json *o, const char *key)
{
	const sf_json *v = sf_json_get(o, key);
	return (v && v->type == SF_JSON_STRING) ? sf_xstrdup(v->str) : NULL;
}

static int parse_arg(const sf_json *a, sf_job_arg *arg, char *err, size_t errlen)
{
	if (a->type != SF_JSON_OBJECT) {
		sf_errf(err, errlen, "job: argument is not an object");
		return -1;
	}
	arg->name = get_str(a, "name");
	char *dt = get_str(a, "dtype");
	char *gen = get_str(a, "gen");
	if (!arg->name || !dt || !gen) {
		free(dt);
		free(gen);
		sf_errf(err, errlen, "job: argument needs name, dtype and gen");
		return -1;
	}
	arg->dt = sf_dt_from_name(dt);
	arg->gen.kind = sf_gen_kind_from_name(gen);
	free(dt);
	free(gen);
	if (arg->dt == SF_DT_INVALID || arg->gen.kind < 0) {
		sf_errf(err, errlen, "job: argument '%s' has a bad dtype or gen", arg->name);
		return -1;
	}
	if (get_num(a, "a", &arg->gen.a, 0, err, errlen) || get_num(a, "b", &arg->gen.b, 0, err, errlen))
		return -1;
	arg->numel = 1;
	if (arg->gen.kind != SF_GEN_SCALAR) {
		const sf_json *sh = sf_json_get(a, "shape");
		if (!sh || sh->type != SF_JSON_ARRAY || sh->n > SF_MAX_DIMS) {
			sf_errf(err, errlen, "job: argument '%s' needs a shape of at most %d dims", arg->name,
				SF_MAX_DIMS);
			return -1;
		}
		arg->ndim = (int)sh->n;
		for (size_t d = 0; d < sh->n; d++) {
			if (sh->items[d]->type != SF_JSON_NUMBER || !sh->items[d]->is_int || sh->items[d]->ival < 0) {
				sf_errf(err, errlen, "job: argument '%s' has a bad dimension", arg->name);
				return -1;
			}
			arg->shape[d] = sh->items[d]->ival;
			arg->numel *= arg->shape[d];
		}
	}
	if (arg->gen.kind == SF_GEN_FILE) {
		arg->file_path = get_str(a, "path");
		arg->file_key = get_str(a, "key");
		if (!arg->file_path || !arg->file_key) {
			sf_errf(err, errlen, "job: file argument '%s' needs path and key", arg->name);
			return -1;
		}
	}
	return 0;
}

static int parse_args(const sf_json *arr, const char *key, sf_job_arg *args, int *n, char *err, size_t errlen)
{
	if (!arr || arr->type != SF_JSON_ARRAY || arr->n > SF_MAX_ARGS) {
		sf_errf(err, errlen, "job: '%s' must be an array of at most %d arguments", key, SF_MAX_ARGS);
		return -1;
	}
	*n = (int)arr->n;
	for (size_t i = 0; i < arr->n; i++)
		if (parse_arg(arr->items[i], &args[i], err, errlen))
			return -1;
	return 0;
}

int sf_job_parse(const char *text, size_t len, sf_job *job, char *err, size_t errlen)
{
	memset(job, 0, sizeof *job);
	sf_json *root = sf_json_parse(text, len, err, errlen);
	if (!root)
		return -1;
	int rc = -1;
	if (root->type != SF_JSON_OBJECT) {
		sf_errf(err, errlen, "job: not a JSON object");
		goto out;
	}
	char *mode = get_str(root, "mode");
	if (!mode || (strcmp(mode, "reference") && strcmp(mode, "solution"))) {
		free(mode);
		sf_errf(err, errlen, "job: 'mode' must be \"reference\" or \"solution\"");
		goto out;
	}
	job->mode = strcmp(mode, "reference") ? SF_JOB_SOLUTION : SF_JOB_REFERENCE;
	free(mode);
	job->problem_module = get_str(root, "problem_module");
	job->solution = get_str(root, "solution");
	job->entry = get_str(root, "entry");
	job->out_dir = get_str(root, "out_dir");
	if (!job->problem_module || !job->out_dir || (job->mode == SF_JOB_SOLUTION && !job->solution)) {
		sf_errf(err, errlen, "job: missing problem_module, solution or out_dir");
		goto out;
	}
	if (!job->entry)
		job->entry = sf_xstrdup("run");
	double dev = 0;
	if (get_num(root, "device", &dev, 0, err, errlen))
		goto out;
	job->device = (int)dev;
	const sf_json *axes = sf_json_get(root, "axes");
	if (!axes || axes->type != SF_JSON_OBJECT) {
		sf_errf(err, errlen, "job: 'axes' must be an object");
		goto out;
	}
	job->n_axes = (int)axes->n;
	job->axis_names = sf_xcalloc(axes->n + 1, sizeof(char *));
	job->axis_values = sf_xcalloc(axes->n + 1, sizeof(int64_t));
	for (size_t i = 0; i < axes->n; i++) {
		if (axes->items[i]->type != SF_JSON_NUMBER || !axes->items[i]->is_int) {
			sf_errf(err, errlen, "job: axis '%s' must be an integer", axes->keys[i]);
			goto out;
		}
		job->axis_names[i] = sf_xstrdup(axes->keys[i]);
		job->axis_values[i] = axes->items[i]->ival;
	}
	if (parse_args(sf_json_get(root, "inputs"), "inputs", job->in, &job->n_in, err, errlen) ||
	    parse_args(sf_json_get(root, "outputs"), "outputs", job->out, &job->n_out, err, errlen))
		goto out;
	const sf_json *seeds = sf_json_get(root, "seeds");
	if (!seeds || seeds->type != SF_JSON_ARRAY || seeds->n < 1 || seeds->n > SF_MAX_ROUNDS) {
		sf_errf(err, errlen, "job: 'seeds' must list 1 to %d rounds", SF_MAX_ROUNDS);
		goto out;
	}
	job->n_rounds = (int)seeds->n;
	for (size_t i = 0; i < seeds->n; i++) {
		char *end;
		if (seeds->items[i]->type != SF_JSON_STRING) {
			sf_errf(err, errlen, "job: seeds must be decimal strings");
			goto out;
		}
		job->seeds[i] = strtoull(seeds->items[i]->str, &end, 10);
		if (*end) {
			sf_errf(err, errlen, "job: bad seed '%s'", seeds->items[i]->str);
			goto out;
		}
	}
	const sf_json *t = sf_json_get(root, "timing");
	if (t && t->type == SF_JSON_OBJECT) {
		sf_job_timing *tm = &job->timing;
		double v;
		tm->enabled = 1;
		if (get_u64(t, "seed", &tm->seed, err, errlen))
			goto out;
		tm->warmup_ms = 25;
		tm->min_iters = 10;
		tm->max_iters = 1000;
		tm->budget_ms = 3000;
		tm->target_rel_ci = 0.01;
		if (get_num(t, "warmup_ms", &tm->warmup_ms, 0, err, errlen) ||
		    get_num(t, "budget_ms", &tm->budget_ms, 0, err, errlen) ||
		    get_num(t, "target_rel_ci", &tm->target_rel_ci, 0, err, errlen))
			goto out;
		v = tm->min_iters;
		if (get_num(t, "min_iters", &v, 0, err, errlen))
			goto out;
		tm->min_iters = (int)v;
		v = tm->max_iters;
		if (get_num(t, "max_iters", &v, 0, err, errlen))
			goto out;
		tm->max_iters = (int)v;
		v = 0;
		if (get_num(t, "flush_bytes", &v, 0, err, errlen))
			goto out;
		tm->flush_bytes = (int64_t)v;
		v = 0;
		if (get_num(t, "flush_reads", &v, 0, err, errlen))
			goto out;
		tm->flush_reads = v != 0;
		v = 0;
		if (get_num(t, "sets", &v, 0, err, errlen))
			goto out;
		tm->sets = (int)v;
		v = 0;
		if (get_num(t, "time_only", &v, 0, err, errlen))
			goto out;
		tm->time_only = v != 0;
		if (tm->min_iters < 1 || tm->max_iters < tm->min_iters) {
			sf_errf(err, errlen, "job: timing needs 1 <= min_iters <= max_iters");
			goto out;
		}
	}
	const sf_json *au = sf_json_get(root, "audits");
	if (au && (au->type != SF_JSON_ARRAY || au->n > SF_MAX_AUDITS)) {
		sf_errf(err, errlen, "job: 'audits' must list at most %d calls", SF_MAX_AUDITS);
		goto out;
	}
	for (size_t i = 0; au && i < au->n; i++) {
		const sf_json *a = au->items[i], *s = sf_json_get(a, "set");
		if (!s || s->type != SF_JSON_NUMBER || !s->is_int || s->ival < 0 || s->ival > 64 ||
		    get_u64(a, "key", &job->audit_key[i], err, errlen)) {
			sf_errf(err, errlen, "job: audits[%zu] needs a set (0..64) and a key", i);
			goto out;
		}
		job->audit_set[i] = (int)s->ival;
		job->n_audits = (int)i + 1;
	}
	rc = 0;
out:
	sf_json_free_wiped(root); /* the tree held the seeds */
	if (rc)
		sf_job_free(job);
	return rc;
}

static void arg_to_json(sf_buf *b, const sf_job_arg *a)
{
	sf_buf_puts(b, "{\"name\":");
	sf_buf_json_str(b, a->name);
	sf_buf_printf(b, ",\"dtype\":\"%s\",\"gen\":\"%s\",\"a\":", sf_dt_name(a->dt), sf_gen_kind_name(a->gen.kind));
	sf_buf_json_num(b, a->gen.a);
	sf_buf_puts(b, ",\"b\":");
	sf_buf_json_num(b, a->gen.b);
	if (a->gen.kind != SF_GEN_SCALAR) {
		sf_buf_puts(b, ",\"shape\":[");
		for (int d = 0; d < a->ndim; d++)
			sf_buf_printf(b, "%s%lld", d ? "," : "", (long long)a->shape[d]);
		sf_buf_puts(b, "]");
	}
	if (a->gen.kind == SF_GEN_FILE) {
		sf_buf_puts(b, ",\"path\":");
		sf_buf_json_str(b, a->file_path);
		sf_buf_puts(b, ",\"key\":");
		sf_buf_json_str(b, a->file_key);
	}
	sf_buf_puts(b, "}");
}

char *sf_job_to_json(const sf_job *job)
{
	sf_buf b = { 0 };
	sf_buf_printf(&b, "{\"mode\":\"%s\",\"problem_module\":", job->mode == SF_JOB_REFERENCE ? "reference" : "solution");
	sf_buf_json_str(&b, job->problem_module);
	if (job->solution) {
		sf_buf_puts(&b, ",\"solution\":");
		sf_buf_json_str(&b, job->solution);
	}
	sf_buf_puts(&b, ",\"entry\":");
	sf_buf_json_str(&b, job->entry ? job->entry : "run");
	sf_buf_puts(&b, ",\"out_dir\":");
	sf_buf_json_str(&b, job->out_dir);
	sf_buf_printf(&b, ",\"device\":%d,\"axes\":{", job->device);
	for (int i = 0; i < job->n_axes; i++) {
		if (i)
			sf_buf_puts(&b, ",");
		sf_buf_json_str(&b, job->axis_names[i]);
		sf_buf_printf(&b, ":%lld", (long long)job->axis_values[i]);
	}
	sf_buf_puts(&b, "},\"inputs\":[");
	for (int i = 0; i < job->n_in; i++) {
		if (i)
			sf_buf_puts(&b, ",");
		arg_to_json(&b, &job->in[i]);
	}
	sf_buf_puts(&b, "],\"outputs\":[");
	for (int i = 0; i < job->n_out; i++) {
		if (i)
			sf_buf_puts(&b, ",");
		arg_to_json(&b, &job->out[i]);
	}
	sf_buf_puts(&b, "],\"seeds\":[");
	for (int i = 0; i < job->n_rounds; i++)
		sf_buf_printf(&b, "%s\"%llu\"", i ? "," : "", (unsigned long long)job->seeds[i]);
	sf_buf_puts(&b, "]");
	if (job->timing.enabled) {
		const sf_job_timing *t = &job->timing;
		sf_buf_printf(&b,
			      ",\"timing\":{\"seed\":\"%llu\",\"warmup_ms\":%g,\"min_iters\":%d,\"max_iters\":%d,"
			      "\"budget_ms\":%g,\"target_rel_ci\":%g,\"flush_bytes\":%lld,\"flush_reads\":%d,\"sets\":%d,"
			      "\"time_only\":%d}",
			      (unsigned long long)t->seed, t->warmup_ms, t->min_iters, t->max_iters, t->budget_ms,
			      t->target_rel_ci, (long long)t->flush_bytes, t->flush_reads, t->sets, t->time_only);
	}
	if (job->n_audits > 0) {
		sf_buf_puts(&b, ",\"audits\":[");
		for (int i = 0; i < job->n_audits; i++)
			sf_buf_printf(&b, "%s{\"set\":%d,\"key\":\"%llu\"}", i ? "," : "", job->audit_set[i],
				      (unsigned long long)job->audit_key[i]);
		sf_buf_puts(&b, "]");
	}
	sf_buf_puts(&b, "}\n");
	return sf_buf_take(&b);
}

void sf_job_free(sf_job *job)
{
	free(job->problem_module);
	free(job->solution);
	free(job->entry);
	free(job->out_dir);
	for (int i = 0; i < job->n_axes; i++)
		free(job->axis_names[i]);
	free(job->axis_names);
	free(job->axis_values);
	for (int i = 0; i < job->n_in; i++) {
		free(job->in[i].name);
		free(job->in[i].file_path);
		free(job->in[i].file_key);
	}
	for (int i = 0; i < job->n_out; i++)
		free(job->out[i].name);
	memset(job, 0, sizeof *job);
}
