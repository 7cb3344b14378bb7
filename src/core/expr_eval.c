/*
 * expr_eval.c - the axis expression language's evaluator (see expr.h): a walk over the parsed tree
 * with Python's float semantics (floor division, modulo, chained comparisons, short-circuit
 * and / or), every result checked finite; sf_expr_eval, sf_expr_eval_str and sf_expr_idents.
 */
#include "core/expr_internal.h"
#include "core/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct evalctx {
	const char *src;
	sf_expr_lookup lookup;
	void *ctx;
	char *err;
	size_t errlen;
} evalctx;

/* Writes "<what> in 'SRC'" into the error buffer; returns -1. */
static int eerr(const evalctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int eerr(const evalctx *c, const char *fmt, ...)
{
	char what[200], q[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	expr_quote_src(c->src, q, sizeof q);
	sf_errf(c->err, c->errlen, "%s in '%s'", what, q);
	return -1;
}

/*
 * Python's float floor division and modulo (b != 0): the remainder takes b's sign and
 * q * b + r == a as closely as doubles allow, with q an integer.
 */
static void py_divmod(double a, double b, double *q, double *r)
{
	double rem = fmod(a, b);
	double quo = (a - rem) / b; /* an integer up to rounding */
	if (rem != 0 && ((rem < 0) != (b < 0))) {
		rem += b;
		quo -= 1;
	}
	if (rem == 0)
		rem = copysign(0.0, b);
	double fq;
	if (quo == 0) {
		fq = copysign(0.0, a / b);
	} else {
		fq = floor(quo);
		if (quo - fq > 0.5) /* quo was just below an integer because of rounding */
			fq += 1;
	}
	*q = fq;
	*r = rem;
}

static int eval_node(const evalctx *c, const node *n, double *out);

/* Evaluates a call node. */
static int eval_call(const evalctx *c, const node *n, double *out)
{
	double a, b;
	if (eval_node(c, n->kid[0], &a) != 0)
		return -1;
	switch (n->fn) {
	case F_SQRT:
		if (a < 0)
			return eerr(c, "sqrt of a negative number");
		*out = sqrt(a);
		return 0;
	case F_MIN:
	case F_MAX:
		for (int i = 1; i < n->nkid; i++) {
			if (eval_node(c, n->kid[i], &b) != 0)
				return -1;
			if (n->fn == F_MIN ? b < a : b > a)
				a = b;
		}
		*out = a;
		return 0;
	case F_CDIV: {
		if (eval_node(c, n->kid[1], &b) != 0)
			return -1;
		if (b == 0)
			return eerr(c, "division by zero");
		double q, r;
		py_divmod(-a, b, &q, &r);
		*out = -q + 0.0; /* no -0 */
		return 0;
	}
	case F_ABS:
		*out = fabs(a);
		return 0;
	case F_CEIL:
		*out = ceil(a);
		return 0;
	case F_FLOOR:
		*out = floor(a);
		return 0;
	case F_LOG2:
		if (a <= 0)
			return eerr(c, "log2 of a non-positive number");
		*out = log2(a);
		return 0;
	}
	return eerr(c, "internal error: bad function");
}

static int compare(tok_kind op, double a, double b)
{
	switch (op) {
	case T_EQ: return a == b;
	case T_NE: return a != b;
	case T_LT: return a < b;
	case T_LE: return a <= b;
	case T_GT: return a > b;
	case T_GE: return a >= b;
	default: return 0;
	}
}

/* Evaluates n into *out; every value it produces is finite (else an error). */
static int eval_node(const evalctx *c, const node *n, double *out)
{
	double a = 0, b = 0, r = 0;
	switch (n->kind) {
	case N_NUM:
		*out = n->val;
		return 0;
	case N_VAR:
		if (!c->lookup || c->lookup(c->ctx, n->name, &r) != 0)
			return eerr(c, "unknown axis '%.60s'", n->name);
		if (!isfinite(r))
			return eerr(c, "axis '%.60s' is not finite", n->name);
		*out = r;
		return 0;
	case N_AND:
	case N_OR:
		if (eval_node(c, n->kid[0], &a) != 0)
			return -1;
		if ((n->kind == N_AND) == (a == 0)) {
			*out = a;
			return 0;
		}
		return eval_node(c, n->kid[1], out);
	case N_CMP:
		if (eval_node(c, n->kid[0], &a) != 0)
			return -1;
		for (int i = 1; i < n->nkid; i++) {
			if (eval_node(c, n->kid[i], &b) != 0)
				return -1;
			if (!compare(n->cmp[i - 1], a, b)) {
				*out = 0;
				return 0;
			}
			a = b;
		}
		*out = 1;
		return 0;
	case N_CALL:
		if (eval_call(c, n, &r) != 0)
			return -1;
		break;
	case N_NEG:
	case N_POS:
	case N_NOT:
		if (eval_node(c, n->kid[0], &a) != 0)
			return -1;
		r = n->kind == N_NEG ? -a : n->kind == N_POS ? a : (a == 0 ? 1 : 0);
		break;
	default:
		if (eval_node(c, n->kid[0], &a) != 0 || eval_node(c, n->kid[1], &b) != 0)
			return -1;
		switch (n->kind) {
		case N_ADD: r = a + b; break;
		case N_SUB: r = a - b; break;
		case N_MUL: r = a * b; break;
		case N_DIV:
			if (b == 0)
				return eerr(c, "division by zero");
			r = a / b;
			break;
		case N_FLOORDIV:
		case N_MOD: {
			if (b == 0)
				return eerr(c, n->kind == N_MOD ? "modulo by zero" : "division by zero");
			double q, m;
			py_divmod(a, b, &q, &m);
			r = n->kind == N_MOD ? m : q;
			break;
		}
		case N_POW:
			if (a == 0 && b < 0)
				return eerr(c, "zero to a negative power");
			if (a < 0 && b != floor(b))
				return eerr(c, "negative number to a fractional power");
			r = pow(a, b);
			break;
		default:
			return eerr(c, "internal error: bad node");
		}
	}
	if (!isfinite(r))
		return eerr(c, "numeric overflow");
	*out = r;
	return 0;
}

int sf_expr_eval(const sf_expr *e, sf_expr_lookup lookup, void *ctx, double *out, char *err, size_t errlen)
{
	evalctx c = { e->src, lookup, ctx, err, errlen };
	double v;
	if (eval_node(&c, e->root, &v) != 0)
		return -1;
	*out = v;
	return 0;
}

int sf_expr_eval_str(const char *src, sf_expr_lookup lookup, void *ctx, double *out, char *err, size_t errlen)
{
	sf_expr *e = sf_expr_parse(src, err, errlen);
	if (!e)
		return -1;
	int rc = sf_expr_eval(e, lookup, ctx, out, err, errlen);
	sf_expr_free(e);
	return rc;
}

/* Appends the identifiers under n not yet in *names, in source order. */
static void collect(const node *n, char ***names, int *count, int *cap)
{
	if (n->kind == N_VAR) {
		for (int i = 0; i < *count; i++)
			if (!strcmp((*names)[i], n->name))
				return;
		if (*count == *cap) {
			*cap = *cap ? *cap * 2 : 8;
			*names = sf_xrealloc(*names, (size_t)*cap * sizeof **names);
		}
		(*names)[(*count)++] = sf_xstrdup(n->name);
		return;
	}
	for (int i = 0; i < n->nkid; i++)
		collect(n->kid[i], names, count, cap);
}

int sf_expr_idents(const sf_expr *e, char ***names, int *n)
{
	int count = 0, cap = 0;
	char **v = NULL;
	collect(e->root, &v, &count, &cap);
	*names = v;
	*n = count;
	return 0;
}
