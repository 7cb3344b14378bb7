/*
 * workload.c - reading workload.jsonl and binding a workload to axes, shapes and generators
 * (see problem.h).
 */
#include "core/problem.h"
#include "core/json.h"
#include "core/expr.h"
#include "core/dtype.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WFAIL(...)                                                        \
	do {                                                              \
		char m_[SF_ERRLEN];                                       \
		snprintf(m_, sizeof m_, __VA_ARGS__);                     \
		sf_errf(err, errlen, "%s:%d: %s", path, line, m_);        \
		goto fail;                                                \
	} while (0)

static int get_tol(const sf_json *o, const char *key, double *out, double dflt)
{
	const sf_json *v = sf_json_get(o, key);
	if (!v) {
		*out = dflt;
		return 0;
	}
	if (v->type == SF_JSON_NULL) {
		*out = NAN;
		return 0;
	}
	if (v->type != SF_JSON_NUMBER || v->num < 0)
		return -1;
	*out = v->num;
	return 0;
}

static int tspec_index(const sf_definition *d, const char *name)
{
	for (int k = 0; k < d->n_in; k++)
		if (!strcmp(d->in[k].name, name))
			return k;
	return -1;
}

static int parse_workload(const sf_definition *d, const sf_json *o, sf_workload *w, const char *path, int line,
			  const char *dir, char *err, size_t errlen)
{
	if (o->type != SF_JSON_OBJECT)
		WFAIL("a workload must be a JSON object");
	/* a FlashInfer-Bench trace line wraps the workload: {"definition":..., "workload": {...}} */
	const sf_json *inner = sf_json_get(o, "workload");
	if (inner && inner->type == SF_JSON_OBJECT)
		o = inner;
	w->line = line;
	const sf_json *uuid = sf_json_get(o, "uuid");
	if (!uuid || uuid->type != SF_JSON_STRING || !*uuid->str)
		WFAIL("uuid: missing or empty");
	w->uuid = sf_xstrdup(uuid->str);
	const sf_json *axes = sf_json_get(o, "axes");
	if (!axes || axes->type != SF_JSON_OBJECT)
		WFAIL("%s: axes: missing or not an object", w->uuid);
	w->n_axes = (int)axes->n;
	w->axis_names = sf_xcalloc(axes->n + 1, sizeof(char *));
	w->axis_values = sf_xcalloc(axes->n + 1, sizeof(int64_t));
	for (size_t i = 0; i < axes->n; i++) {
		const sf_json *v = axes->items[i];
		w->axis_names[i] = sf_xstrdup(axes->keys[i]);
		if (v->type != SF_JSON_NUMBER || !v->is_int || v->ival < 0)
			WFAIL("%s: axes.%s: must be a non-negative integer", w->uuid, axes->keys[i]);
		w->axis_values[i] = v->ival;
		int found = 0;
		for (int a = 0; a < d->n_axes; a++)
			if (!strcmp(d->axes[a].name, axes->keys[i])) {
				found = 1;
				if (d->axes[a].kind != SF_AXIS_VAR)
					WFAIL("%s: axes.%s: not a var axis of the definition", w->uuid, axes->keys[i]);
			}
		if (!found)
			WFAIL("%s: axes.%s: the definition has no such axis", w->uuid, axes->keys[i]);
	}
	for (int a = 0; a < d->n_axes; a++) {
		if (d->axes[a].kind != SF_AXIS_VAR)
			continue;
		int found = 0;
		for (int i = 0; i < w->n_axes; i++)
			found |= !strcmp(w->axis_names[i], d->axes[a].name);
		if (!found)
			WFAIL("%s: axes: var axis '%s' is not bound", w->uuid, d->axes[a].name);
	}
	const sf_json *ins = sf_json_get(o, "inputs");
	if (!ins || ins->type != SF_JSON_OBJECT)
		WFAIL("%s: inputs: missing or not an object", w->uuid);
	w->n_inputs = (int)ins->n;
	w->inputs = sf_xcalloc(ins->n + 1, sizeof(sf_winput));
	for (size_t i = 0; i < ins->n; i++) {
		sf_winput *in = &w->inputs[i];
		in->name = sf_xstrdup(ins->keys[i]);
		int k = tspec_index(d, in->name);
		if (k < 0)
			WFAIL("%s: inputs.%s: not an input of the definition", w->uuid, in->name);
		const sf_json *v = ins->items[i];
		const sf_json *type = sf_json_get(v, "type");
		if (!type || type->type != SF_JSON_STRING)
			WFAIL("%s: inputs.%s.type: missing", w->uuid, in->name);
		if (!strcmp(type->str, "random")) {
			in->type = SF_WIN_RANDOM;
		} else if (!strcmp(type->str, "custom")) {
			in->type = SF_WIN_CUSTOM;
		} else if (!strcmp(type->str, "scalar")) {
			in->type = SF_WIN_SCALAR;
			const sf_json *val = sf_json_get(v, "value");
			if (!val || (val->type != SF_JSON_NUMBER && val->type != SF_JSON_BOOL))
				WFAIL("%s: inputs.%s.value: a scalar needs a number", w->uuid, in->name);
			in->value = val->type == SF_JSON_BOOL ? val->boolean : val->num;
			if (!d->in[k].is_scalar)
				WFAIL("%s: inputs.%s: scalar value for a tensor input", w->uuid, in->name);
		} else if (!strcmp(type->str, "safetensors")) {
			in->type = SF_WIN_SAFETENSORS;
			const sf_json *p = sf_json_get(v, "path"), *key = sf_json_get(v, "tensor_key");
			if (!p || p->type != SF_JSON_STRING || !key || key->type != SF_JSON_STRING)
				WFAIL("%s: inputs.%s: safetensors needs path and tensor_key", w->uuid, in->name);
			in->path = sf_path_join(dir, p->str);
			in->key = sf_xstrdup(key->str);
		} else {
			WFAIL("%s: inputs.%s.type: unknown input type '%s'", w->uuid, in->name, type->str);
		}
		if (d->in[k].is_scalar && in->type != SF_WIN_SCALAR)
			WFAIL("%s: inputs.%s: a scalar input needs {\"type\": \"scalar\", \"value\": ...}", w->uuid,
			      in->name);
	}
	for (int k = 0; k < d->n_in; k++) {
		int found = 0;
		for (int i = 0; i < w->n_inputs; i++)
			found |= !strcmp(w->inputs[i].name, d->in[k].name);
		if (!found && d->in[k].is_scalar)
			WFAIL("%s: inputs.%s: scalar input has no value", w->uuid, d->in[k].name);
	}
	const sf_json *tol = sf_json_get(o, "correctness");
	if (!tol)
		tol = sf_json_get(o, "tolerance");
	if (tol && tol->type != SF_JSON_OBJECT)
		WFAIL("%s: correctness: must be an object", w->uuid);
	if (get_tol(tol, "max_atol", &w->tol.atol, 1e-2) || get_tol(tol, "max_rtol", &w->tol.rtol, 1e-2) ||
	    get_tol(tol, "required_matched_ratio", &w->tol.matched_ratio, 1.0) ||
	    get_tol(tol, "max_error_cap", &w->tol.error_cap, NAN))
		WFAIL("%s: correctness: tolerances must be non-negative numbers", w->uuid);
	if (isnan(w->tol.atol) || isnan(w->tol.rtol) || isnan(w->tol.matched_ratio) || w->tol.matched_ratio > 1)
		WFAIL("%s: correctness: max_atol, max_rtol and required_matched_ratio (<= 1) must be numbers", w->uuid);
	const sf_json *ninf = sf_json_get(tol, "allow_negative_inf");
	w->tol.allow_negative_inf = ninf && ninf->type == SF_JSON_BOOL && ninf->boolean;
	const sf_json *ext = sf_json_get(o, "solforge");
	if (ext) {
		const sf_json *note = sf_json_get(ext, "note");
		if (note && note->type == SF_JSON_STRING)
			w->note = sf_xstrdup(note->str);
	}
	return 0;
fail:
	return -1;
}

static int workloads_load_impl(const char *path, const sf_definition *d, sf_workload **out, int *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	char *text;
	size_t len;
	if (sf_read_file(path, &text, &len, err, errlen))
		return -1;
	char *dir = sf_dirname(path);
	int cap = 16, count = 0, line = 0;
	sf_workload *ws = sf_xcalloc((size_t)cap, sizeof *ws);
	char *p = text;
	while (p < text + len) {
		char *nl = memchr(p, '\n', (size_t)(text + len - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(text + len - p);
		line++;
		size_t s = 0;
		while (s < l && (p[s] == ' ' || p[s] == '\t' || p[s] == '\r'))
			s++;
		if (s < l) {
			char jerr[SF_ERRLEN];
			sf_json *o = sf_json_parse(p, l, jerr, sizeof jerr);
			if (!o)
				WFAIL("%s", jerr);
			if (count == cap) {
				cap *= 2;
				ws = sf_xrealloc(ws, sizeof *ws * (size_t)cap);
				memset(ws + count, 0, sizeof *ws * (size_t)(cap - count));
			}
			int rc = parse_workload(d, o, &ws[count], path, line, dir, err, errlen);
			sf_json_free(o);
			count++;
			if (rc)
				goto fail_quiet;
			for (int i = 0; i < count - 1; i++)
				if (!strcmp(ws[i].uuid, ws[count - 1].uuid))
					WFAIL("uuid '%s' repeats line %d", ws[i].uuid, ws[i].line);
		}
		p += l + 1;
	}
	if (!count)
		WFAIL("no workloads");
	free(text);
	free(dir);
	*out = ws;
	*n = count;
	return 0;
fail:
fail_quiet:
	free(text);
	free(dir);
	sf_workloads_free(ws, count);
	return -1;
}

void sf_workloads_free(sf_workload *w, int n)
{
	for (int i = 0; w && i < n; i++) {
		free(w[i].uuid);
		for (int a = 0; a < w[i].n_axes; a++)
			free(w[i].axis_names[a]);
		free(w[i].axis_names);
		free(w[i].axis_values);
		for (int k = 0; k < w[i].n_inputs; k++) {
			free(w[i].inputs[k].name);
			free(w[i].inputs[k].path);
			free(w[i].inputs[k].key);
		}
		free(w[i].inputs);
		free(w[i].note);
	}
	free(w);
}

/* Lookup context over partially bound axes. */
typedef struct axis_ctx {
	const sf_definition *d;
	const int64_t *values;
	const int *bound;
} axis_ctx;

static int axis_lookup(void *vctx, const char *name, double *out)
{
	axis_ctx *c = vctx;
	for (int i = 0; i < c->d->n_axes; i++) {
		if (!strcmp(c->d->axes[i].name, name) && (!c->bound || c->bound[i])) {
			*out = (double)c->values[i];
			return 0;
		}
	}
	return -1;
}

int sf_eval_axes_expr(const sf_definition *d, const int64_t *values, const char *src, double *out, char *err,
		      size_t errlen)
{
	axis_ctx ctx = { d, values, NULL };
	return sf_expr_eval_str(src, axis_lookup, &ctx, out, err, errlen);
}

static int bind_axes_impl(const sf_definition *d, const sf_workload *w, int64_t *values, char *err, size_t errlen)
{
	int *bound = sf_xcalloc((size_t)d->n_axes + 1, sizeof(int));
	int pending = 0;
	for (int i = 0; i < d->n_axes; i++) {
		const sf_axis *a = &d->axes[i];
		if (a->kind == SF_AXIS_CONST) {
			values[i] = a->value;
			bound[i] = 1;
		} else if (a->kind == SF_AXIS_VAR) {
			for (int k = 0; k < w->n_axes; k++)
				if (!strcmp(w->axis_names[k], a->name)) {
					values[i] = w->axis_values[k];
					bound[i] = 1;
				}
			if (!bound[i]) {
				sf_errf(err, errlen, "%s: workload %s does not bind var axis '%s'", d->name, w->uuid,
					a->name);
				free(bound);
				return -1;
			}
		} else {
			pending++;
		}
	}
	/* expression axes, in dependency order: evaluate those whose identifiers are all bound */
	axis_ctx ctx = { d, values, bound };
	while (pending) {
		int progress = 0;
		for (int i = 0; i < d->n_axes; i++) {
			if (bound[i])
				continue;
			double v;
			char e2[SF_ERRLEN];
			if (sf_expr_eval_str(d->axes[i].expr, axis_lookup, &ctx, &v, e2, sizeof e2))
				continue; /* an identifier not bound yet, or a real error reported below */
			if (v < 0 || v != floor(v) || v > 9.0e15) {
				sf_errf(err, errlen, "%s: workload %s: axis '%s' = %s evaluates to %g, not a non-negative integer",
					d->name, w->uuid, d->axes[i].name, d->axes[i].expr, v);
				free(bound);
				return -1;
			}
			values[i] = (int64_t)v;
			bound[i] = 1;
			pending--;
			progress = 1;
		}
		if (!progress) {
			for (int i = 0; i < d->n_axes; i++) {
				if (bound[i])
					continue;
				double v;
				char e2[SF_ERRLEN];
				sf_expr_eval_str(d->axes[i].expr, axis_lookup, &ctx, &v, e2, sizeof e2);
				sf_errf(err, errlen, "%s: workload %s: axis '%s': %s (or a cycle among expr axes)",
					d->name, w->uuid, d->axes[i].name, e2);
				break;
			}
			free(bound);
			return -1;
		}
	}
	free(bound);
	for (int c = 0; c < d->n_constraints; c++) {
		double v;
		char e2[SF_ERRLEN];
		if (sf_eval_axes_expr(d, values, d->constraints[c], &v, e2, sizeof e2)) {
			sf_errf(err, errlen, "%s: workload %s: constraint: %s", d->name, w->uuid, e2);
			return -1;
		}
		if (v == 0) {
			sf_errf(err, errlen, "%s: workload %s violates constraint '%s'", d->name, w->uuid,
				d->constraints[c]);
			return -1;
		}
	}
	return 0;
}

static int bind_shape(const sf_definition *d, const int64_t *values, const sf_tspec *t, sf_job_arg *a, char *err,
		      size_t errlen)
{
	a->ndim = t->ndim;
	a->numel = 1;
	for (int k = 0; k < t->ndim; k++) {
		int64_t v = -1;
		if (t->dims[k][0] >= '0' && t->dims[k][0] <= '9') {
			v = strtoll(t->dims[k], NULL, 10);
		} else {
			for (int i = 0; i < d->n_axes; i++)
				if (!strcmp(d->axes[i].name, t->dims[k]))
					v = values[i];
		}
		a->shape[k] = v;
		if (v > 0 && a->numel > INT64_MAX / 16 / v) {
			sf_errf(err, errlen, "%s: tensor '%s' is too large", d->name, t->name);
			return -1;
		}
		a->numel *= v;
	}
	if (t->dt == SF_DT_E2M1 && t->ndim > 0 && (a->shape[t->ndim - 1] & 1)) {
		sf_errf(err, errlen, "%s: float4 tensor '%s' needs an even last dimension", d->name, t->name);
		return -1;
	}
	return 0;
}

static int bind_job_impl(const sf_definition *d, const sf_workload *w, sf_job *job, char *err, size_t errlen)
{
	int64_t *values = sf_xcalloc((size_t)d->n_axes + 1, sizeof(int64_t));
	if (sf_bind_axes(d, w, values, err, errlen)) {
		free(values);
		return -1;
	}
	job->n_axes = d->n_axes;
	job->axis_names = sf_xcalloc((size_t)d->n_axes + 1, sizeof(char *));
	job->axis_values = values;
	for (int i = 0; i < d->n_axes; i++)
		job->axis_names[i] = sf_xstrdup(d->axes[i].name);
	job->n_in = d->n_in;
	job->n_out = d->n_out;
	for (int k = 0; k < d->n_in; k++) {
		const sf_tspec *t = &d->in[k];
		sf_job_arg *a = &job->in[k];
		a->name = sf_xstrdup(t->name);
		a->dt = t->dt;
		const sf_winput *wi = NULL;
		for (int i = 0; i < w->n_inputs; i++)
			if (!strcmp(w->inputs[i].name, t->name))
				wi = &w->inputs[i];
		if (t->is_scalar) {
			a->gen.kind = SF_GEN_SCALAR;
			a->gen.a = wi->value;
			a->numel = 1;
			continue;
		}
		if (bind_shape(d, values, t, a, err, errlen))
			return -1;
		if (wi && wi->type == SF_WIN_SAFETENSORS) {
			a->gen.kind = SF_GEN_FILE;
			a->file_path = sf_xstrdup(wi->path);
			a->file_key = sf_xstrdup(wi->key);
			continue;
		}
		a->gen.kind = t->gen;
		if (wi && wi->type == SF_WIN_CUSTOM && t->gen != SF_GEN_CUSTOM) {
			sf_errf(err, errlen, "%s: workload %s: input '%s' is custom but the definition gives it a %s generator",
				d->name, w->uuid, t->name, sf_gen_kind_name(t->gen));
			return -1;
		}
		char e2[SF_ERRLEN];
		if (t->gen_a && sf_eval_axes_expr(d, values, t->gen_a, &a->gen.a, e2, sizeof e2)) {
			sf_errf(err, errlen, "%s: solforge.inputs.%s: %s", d->name, t->name, e2);
			return -1;
		}
		if (t->gen_b && sf_eval_axes_expr(d, values, t->gen_b, &a->gen.b, e2, sizeof e2)) {
			sf_errf(err, errlen, "%s: solforge.inputs.%s: %s", d->name, t->name, e2);
			return -1;
		}
		if (t->gen == SF_GEN_INT && !(a->gen.b > a->gen.a)) {
			sf_errf(err, errlen, "%s: workload %s: input '%s': int generator needs low < high (got %g, %g)",
				d->name, w->uuid, t->name, a->gen.a, a->gen.b);
			return -1;
		}
	}
	for (int k = 0; k < d->n_out; k++) {
		sf_job_arg *a = &job->out[k];
		a->name = sf_xstrdup(d->out[k].name);
		a->dt = d->out[k].dt;
		a->gen.kind = SF_GEN_CONST;
		if (bind_shape(d, values, &d->out[k], a, err, errlen))
			return -1;
	}
	return 0;
}

int sf_workloads_load(const char *path, const sf_definition *d, sf_workload **out, int *n, char *err, size_t errlen)
{
	return sf_err_oneline(err, workloads_load_impl(path, d, out, n, err, errlen));
}

int sf_bind_axes(const sf_definition *d, const sf_workload *w, int64_t *values, char *err, size_t errlen)
{
	return sf_err_oneline(err, bind_axes_impl(d, w, values, err, errlen));
}

int sf_bind_job(const sf_definition *d, const sf_workload *w, sf_job *job, char *err, size_t errlen)
{
	return sf_err_oneline(err, bind_job_impl(d, w, job, err, errlen));
}
