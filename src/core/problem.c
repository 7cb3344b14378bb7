/*
 * problem.c - loading and validating definitions and workloads, binding axes (see problem.h).
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

static const char *const unit_names[SF_UNIT_COUNT] = {
	"fp64", "fp32", "tf32_tensor", "bf16_tensor", "fp16_tensor", "fp8_tensor", "fp4_tensor", "int8_tensor", "sfu",
};

const char *sf_unit_name(int unit)
{
	return (unit >= 0 && unit < SF_UNIT_COUNT) ? unit_names[unit] : "unknown";
}

int sf_unit_from_name(const char *name)
{
	for (int i = 0; i < SF_UNIT_COUNT; i++)
		if (!strcmp(unit_names[i], name))
			return i;
	return -1;
}

/* Error helper: "FILE: FIELD: message". */
#define FAIL(...)                                               \
	do {                                                    \
		char m_[SF_ERRLEN];                             \
		snprintf(m_, sizeof m_, __VA_ARGS__);           \
		sf_errf(err, errlen, "%s: %s", d->file, m_);   \
		goto fail;                                      \
	} while (0)

static char *opt_str(const sf_json *o, const char *key)
{
	const sf_json *v = sf_json_get(o, key);
	return (v && v->type == SF_JSON_STRING) ? sf_xstrdup(v->str) : NULL;
}

/* A number or an expression string, as text (numbers printed exactly). */
static char *num_or_expr(const sf_json *v)
{
	if (!v)
		return NULL;
	if (v->type == SF_JSON_STRING)
		return sf_xstrdup(v->str);
	if (v->type == SF_JSON_NUMBER) {
		char tmp[64];
		if (v->is_int)
			snprintf(tmp, sizeof tmp, "%lld", (long long)v->ival);
		else
			snprintf(tmp, sizeof tmp, "%.17g", v->num);
		return sf_xstrdup(tmp);
	}
	return NULL;
}

static int find_axis(const sf_definition *d, const char *name)
{
	for (int i = 0; i < d->n_axes; i++)
		if (!strcmp(d->axes[i].name, name))
			return i;
	return -1;
}

static int parse_tensors(sf_definition *d, const sf_json *obj, const char *field, sf_tspec **out, int *n,
			 char *err, size_t errlen)
{
	if (!obj || obj->type != SF_JSON_OBJECT)
		FAIL("%s: missing or not an object", field);
	if (obj->n > SF_MAX_ARGS)
		FAIL("%s: at most %d tensors are supported", field, SF_MAX_ARGS);
	*n = (int)obj->n;
	*out = sf_xcalloc(obj->n + 1, sizeof(sf_tspec));
	for (size_t i = 0; i < obj->n; i++) {
		sf_tspec *t = &(*out)[i];
		const sf_json *v = obj->items[i];
		t->name = sf_xstrdup(obj->keys[i]);
		if (v->type != SF_JSON_OBJECT)
			FAIL("%s.%s: not an object", field, t->name);
		const sf_json *dt = sf_json_get(v, "dtype");
		if (!dt || dt->type != SF_JSON_STRING)
			FAIL("%s.%s.dtype: missing or not a string", field, t->name);
		t->dt = sf_dt_from_name(dt->str);
		if (t->dt == SF_DT_INVALID)
			FAIL("%s.%s.dtype: unknown dtype '%s'", field, t->name, dt->str);
		t->description = opt_str(v, "description");
		const sf_json *sh = sf_json_get(v, "shape");
		if (!sh)
			FAIL("%s.%s.shape: missing (use null for a scalar)", field, t->name);
		if (sh->type == SF_JSON_NULL) {
			t->is_scalar = 1;
			continue;
		}
		if (sh->type != SF_JSON_ARRAY)
			FAIL("%s.%s.shape: must be an array of axis names or null", field, t->name);
		if (sh->n > SF_MAX_DIMS)
			FAIL("%s.%s.shape: more than %d dimensions", field, t->name, SF_MAX_DIMS);
		t->ndim = (int)sh->n;
		t->dims = sf_xcalloc(sh->n + 1, sizeof(char *));
		for (size_t k = 0; k < sh->n; k++) {
			const sf_json *e = sh->items[k];
			if (e->type == SF_JSON_NUMBER && e->is_int && e->ival >= 0) {
				char tmp[32];
				snprintf(tmp, sizeof tmp, "%lld", (long long)e->ival);
				t->dims[k] = sf_xstrdup(tmp);
			} else if (e->type == SF_JSON_STRING) {
				t->dims[k] = sf_xstrdup(e->str);
				if (find_axis(d, e->str) < 0)
					FAIL("%s.%s.shape[%zu]: unknown axis '%s'", field, t->name, k, e->str);
			} else {
				FAIL("%s.%s.shape[%zu]: must be an axis name", field, t->name, k);
			}
		}
		if (t->dt == SF_DT_E2M1 && t->ndim == 0)
			FAIL("%s.%s: a float4 tensor needs at least one dimension", field, t->name);
	}
	return 0;
fail:
	return -1;
}

static int parse_gen(sf_definition *d, const sf_json *inputs_ext, char *err, size_t errlen)
{
	for (int k = 0; k < d->n_in; k++) {
		sf_tspec *t = &d->in[k];
		const sf_json *g = sf_json_get(inputs_ext, t->name);
		if (t->is_scalar) {
			t->gen = SF_GEN_SCALAR;
			if (g)
				FAIL("solforge.inputs.%s: a scalar input takes its value from the workload", t->name);
			continue;
		}
		if (!g) {
			if (!sf_dt_is_float(t->dt))
				FAIL("solforge.inputs.%s: integer input needs a generator (int, const or custom)",
				     t->name);
			t->gen = SF_GEN_NORMAL;
			t->gen_a = sf_xstrdup("0");
			t->gen_b = sf_xstrdup("1");
			continue;
		}
		if (g->type != SF_JSON_OBJECT)
			FAIL("solforge.inputs.%s: must be an object", t->name);
		const sf_json *kind = sf_json_get(g, "gen");
		if (!kind || kind->type != SF_JSON_STRING)
			FAIL("solforge.inputs.%s.gen: missing (normal, uniform, int, const or custom)", t->name);
		t->gen = sf_gen_kind_from_name(kind->str);
		switch (t->gen) {
		case SF_GEN_NORMAL:
			t->gen_a = num_or_expr(sf_json_get(g, "mean"));
			t->gen_b = num_or_expr(sf_json_get(g, "std"));
			if (!t->gen_a)
				t->gen_a = sf_xstrdup("0");
			if (!t->gen_b)
				t->gen_b = sf_xstrdup("1");
			break;
		case SF_GEN_UNIFORM:
		case SF_GEN_INT:
			t->gen_a = num_or_expr(sf_json_get(g, "low"));
			t->gen_b = num_or_expr(sf_json_get(g, "high"));
			if (!t->gen_a || !t->gen_b)
				FAIL("solforge.inputs.%s: %s needs low and high", t->name, kind->str);
			break;
		case SF_GEN_CONST:
			t->gen_a = num_or_expr(sf_json_get(g, "value"));
			if (!t->gen_a)
				FAIL("solforge.inputs.%s: const needs value", t->name);
			break;
		case SF_GEN_CUSTOM:
			break;
		default:
			FAIL("solforge.inputs.%s.gen: unknown generator '%s'", t->name, kind->str);
		}
	}
	for (size_t i = 0; inputs_ext && i < inputs_ext->n; i++) {
		int found = 0;
		for (int k = 0; k < d->n_in; k++)
			found |= !strcmp(d->in[k].name, inputs_ext->keys[i]);
		if (!found)
			FAIL("solforge.inputs: '%s' is not an input of the definition", inputs_ext->keys[i]);
	}
	return 0;
fail:
	return -1;
}

static int parse_ext(sf_definition *d, const sf_json *ext, char *err, size_t errlen)
{
	if (!ext) {
		/* a plain SOL-ExecBench definition: default generators */
		return parse_gen(d, NULL, err, errlen);
	}
	if (ext->type != SF_JSON_OBJECT)
		FAIL("solforge: must be an object");
	d->model = opt_str(ext, "model");
	d->family = opt_str(ext, "family");
	d->layer = opt_str(ext, "layer");
	char *oracle = opt_str(ext, "oracle");
	if (oracle) {
		d->oracle = sf_path_join(d->dir, oracle);
		free(oracle);
		if (!sf_file_exists(d->oracle))
			FAIL("solforge.oracle: no file %s", d->oracle);
	}
	const sf_json *inputs = sf_json_get(ext, "inputs");
	if (inputs && inputs->type != SF_JSON_OBJECT)
		FAIL("solforge.inputs: must be an object");
	if (parse_gen(d, inputs, err, errlen))
		return -1;
	const sf_json *sol = sf_json_get(ext, "sol");
	if (sol) {
		const sf_json *fl = sf_json_get(sol, "flops");
		if (fl && fl->type != SF_JSON_OBJECT)
			FAIL("solforge.sol.flops: must be an object of unit class -> expression");
		for (size_t i = 0; fl && i < fl->n; i++) {
			int u = sf_unit_from_name(fl->keys[i]);
			if (u < 0)
				FAIL("solforge.sol.flops: unknown unit class '%s'", fl->keys[i]);
			d->sol_flops[u] = num_or_expr(fl->items[i]);
			if (!d->sol_flops[u])
				FAIL("solforge.sol.flops.%s: must be a number or an expression", fl->keys[i]);
		}
		const sf_json *by = sf_json_get(sol, "bytes");
		if (by) {
			d->sol_bytes = num_or_expr(by);
			if (!d->sol_bytes)
				FAIL("solforge.sol.bytes: must be a number or an expression");
		}
	}
	const sf_json *bl = sf_json_get(ext, "baselines");
	if (bl) {
		if (bl->type != SF_JSON_ARRAY)
			FAIL("solforge.baselines: must be an array");
		d->n_baselines = (int)bl->n;
		d->baselines = sf_xcalloc(bl->n + 1, sizeof(sf_baseline_spec));
		for (size_t i = 0; i < bl->n; i++) {
			sf_baseline_spec *b = &d->baselines[i];
			b->name = opt_str(bl->items[i], "name");
			b->backend = opt_str(bl->items[i], "backend");
			char *src = opt_str(bl->items[i], "source");
			if (!b->name || !b->backend || !src) {
				free(src);
				FAIL("solforge.baselines[%zu]: needs name, backend and source", i);
			}
			b->source = sf_path_join(d->dir, src);
			free(src);
			b->entry = opt_str(bl->items[i], "entry");
			const sf_json *cmp = sf_json_get(bl->items[i], "compile");
			if (cmp && cmp->type != SF_JSON_BOOL)
				FAIL("solforge.baselines[%zu].compile: must be true or false", i);
			b->compile = cmp && cmp->boolean;
			if (!sf_file_exists(b->source))
				FAIL("solforge.baselines[%zu].source: no file %s", i, b->source);
			const sf_json *lf = sf_json_get(bl->items[i], "ldflags");
			if (lf && lf->type == SF_JSON_ARRAY) {
				b->ldflags = sf_xcalloc(lf->n + 1, sizeof(char *));
				for (size_t k = 0; k < lf->n; k++) {
					if (lf->items[k]->type != SF_JSON_STRING)
						FAIL("solforge.baselines[%zu].ldflags: strings only", i);
					b->ldflags[k] = sf_xstrdup(lf->items[k]->str);
				}
				b->n_ldflags = (int)lf->n;
			}
		}
	}
	return 0;
fail:
	return -1;
}

/* Checks that expression axes parse and name only known axes, without cycles. */
static int check_axis_exprs(sf_definition *d, char *err, size_t errlen)
{
	for (int i = 0; i < d->n_axes; i++) {
		if (d->axes[i].kind != SF_AXIS_EXPR)
			continue;
		char e2[SF_ERRLEN];
		sf_expr *e = sf_expr_parse(d->axes[i].expr, e2, sizeof e2);
		if (!e)
			FAIL("axes.%s.expression: %s", d->axes[i].name, e2);
		char **names;
		int n;
		sf_expr_idents(e, &names, &n);
		int bad = -1;
		for (int k = 0; k < n; k++)
			if (bad < 0 && find_axis(d, names[k]) < 0)
				bad = k;
		if (bad >= 0) {
			char tmp[256];
			snprintf(tmp, sizeof tmp, "%s", names[bad]);
			for (int k = 0; k < n; k++)
				free(names[k]);
			free(names);
			sf_expr_free(e);
			FAIL("axes.%s.expression: unknown axis '%s'", d->axes[i].name, tmp);
		}
		for (int k = 0; k < n; k++)
			free(names[k]);
		free(names);
		sf_expr_free(e);
	}
	return 0;
fail:
	return -1;
}

int sf_definition_load(const char *path, sf_definition *d, char *err, size_t errlen)
{
	memset(d, 0, sizeof *d);
	char *file = NULL;
	size_t plen = strlen(path);
	if (plen >= 5 && !strcmp(path + plen - 5, ".json"))
		file = sf_xstrdup(path);
	else
		file = sf_path_join(path, "definition.json");
	char *abs = realpath(file, NULL);
	if (!abs) {
		sf_errf(err, errlen, "%s: no such definition file", file);
		free(file);
		return -1;
	}
	free(file);
	d->file = abs;
	d->dir = sf_dirname(abs);
	char *text = NULL;
	size_t len;
	sf_json *root = NULL;
	if (sf_read_file(d->file, &text, &len, err, errlen))
		goto fail_quiet;
	char jerr[SF_ERRLEN];
	root = sf_json_parse(text, len, jerr, sizeof jerr);
	if (!root)
		FAIL("%s", jerr);
	if (root->type != SF_JSON_OBJECT)
		FAIL("not a JSON object");
	d->name = opt_str(root, "name");
	if (!d->name || !*d->name)
		FAIL("name: missing or empty");
	d->op_type = opt_str(root, "op_type");
	if (!d->op_type)
		d->op_type = opt_str(root, "type");
	d->description = opt_str(root, "description");
	d->reference = opt_str(root, "reference");
	d->custom_inputs_entrypoint = opt_str(root, "custom_inputs_entrypoint");
	const sf_json *tags = sf_json_get(root, "tags");
	if (tags && tags->type == SF_JSON_ARRAY) {
		d->tags = sf_xcalloc(tags->n + 1, sizeof(char *));
		for (size_t i = 0; i < tags->n; i++)
			if (tags->items[i]->type == SF_JSON_STRING)
				d->tags[d->n_tags++] = sf_xstrdup(tags->items[i]->str);
	}
	const sf_json *axes = sf_json_get(root, "axes");
	if (!axes || axes->type != SF_JSON_OBJECT)
		FAIL("axes: missing or not an object");
	d->n_axes = (int)axes->n;
	d->axes = sf_xcalloc(axes->n + 1, sizeof(sf_axis));
	for (size_t i = 0; i < axes->n; i++) {
		sf_axis *a = &d->axes[i];
		a->name = sf_xstrdup(axes->keys[i]);
		const sf_json *v = axes->items[i];
		if (v->type != SF_JSON_OBJECT)
			FAIL("axes.%s: not an object", a->name);
		const sf_json *type = sf_json_get(v, "type");
		if (!type || type->type != SF_JSON_STRING)
			FAIL("axes.%s.type: missing (const, var or expr)", a->name);
		a->description = opt_str(v, "description");
		if (!strcmp(type->str, "const")) {
			const sf_json *val = sf_json_get(v, "value");
			if (!val || val->type != SF_JSON_NUMBER || !val->is_int || val->ival < 0)
				FAIL("axes.%s.value: must be a non-negative integer", a->name);
			a->kind = SF_AXIS_CONST;
			a->value = val->ival;
		} else if (!strcmp(type->str, "var")) {
			a->kind = SF_AXIS_VAR;
		} else if (!strcmp(type->str, "expr")) {
			a->kind = SF_AXIS_EXPR;
			a->expr = opt_str(v, "expression");
			if (!a->expr)
				FAIL("axes.%s.expression: missing", a->name);
		} else {
			FAIL("axes.%s.type: unknown axis type '%s'", a->name, type->str);
		}
	}
	if (check_axis_exprs(d, err, errlen))
		goto fail_quiet;
	if (parse_tensors(d, sf_json_get(root, "inputs"), "inputs", &d->in, &d->n_in, err, errlen) ||
	    parse_tensors(d, sf_json_get(root, "outputs"), "outputs", &d->out, &d->n_out, err, errlen))
		goto fail_quiet;
	if (d->n_out == 0)
		FAIL("outputs: a definition needs at least one output");
	for (int i = 0; i < d->n_out; i++)
		if (d->out[i].is_scalar)
			FAIL("outputs.%s: scalar outputs are not supported by the C ABI", d->out[i].name);
	const sf_json *cons = sf_json_get(root, "constraints");
	if (cons && cons->type == SF_JSON_ARRAY) {
		d->constraints = sf_xcalloc(cons->n + 1, sizeof(char *));
		for (size_t i = 0; i < cons->n; i++) {
			if (cons->items[i]->type != SF_JSON_STRING)
				FAIL("constraints[%zu]: must be a string", i);
			char e2[SF_ERRLEN];
			sf_expr *e = sf_expr_parse(cons->items[i]->str, e2, sizeof e2);
			if (!e)
				FAIL("constraints[%zu]: %s", i, e2);
			sf_expr_free(e);
			d->constraints[d->n_constraints++] = sf_xstrdup(cons->items[i]->str);
		}
	}
	if (parse_ext(d, sf_json_get(root, "solforge"), err, errlen))
		goto fail_quiet;
	sf_json_free(root);
	free(text);
	return 0;
fail:
fail_quiet:
	sf_json_free(root);
	free(text);
	sf_definition_free(d);
	return sf_err_oneline(err, -1); /* names quoted from the file may hold newlines */
}

static void tspec_free(sf_tspec *t, int n)
{
	for (int i = 0; t && i < n; i++) {
		free(t[i].name);
		free(t[i].description);
		for (int k = 0; k < t[i].ndim; k++)
			free(t[i].dims[k]);
		free(t[i].dims);
		free(t[i].gen_a);
		free(t[i].gen_b);
	}
	free(t);
}

void sf_definition_free(sf_definition *d)
{
	free(d->dir);
	free(d->file);
	free(d->name);
	free(d->op_type);
	free(d->description);
	free(d->model);
	free(d->family);
	free(d->layer);
	for (int i = 0; i < d->n_tags; i++)
		free(d->tags[i]);
	free(d->tags);
	for (int i = 0; d->axes && i < d->n_axes; i++) {
		free(d->axes[i].name);
		free(d->axes[i].expr);
		free(d->axes[i].description);
	}
	free(d->axes);
	tspec_free(d->in, d->n_in);
	tspec_free(d->out, d->n_out);
	for (int i = 0; i < d->n_constraints; i++)
		free(d->constraints[i]);
	free(d->constraints);
	free(d->reference);
	free(d->custom_inputs_entrypoint);
	free(d->oracle);
	for (int u = 0; u < SF_UNIT_COUNT; u++)
		free(d->sol_flops[u]);
	free(d->sol_bytes);
	for (int i = 0; i < d->n_baselines; i++) {
		free(d->baselines[i].name);
		free(d->baselines[i].backend);
		free(d->baselines[i].source);
		free(d->baselines[i].entry);
		for (int k = 0; k < d->baselines[i].n_ldflags; k++)
			free(d->baselines[i].ldflags[k]);
		free(d->baselines[i].ldflags);
	}
	free(d->baselines);
	memset(d, 0, sizeof *d);
}
