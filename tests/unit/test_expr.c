/*
 * test_expr.c - the axis expression language: precedence and associativity, Python's floor
 * division and modulo with negative operands, functions, comparisons and logic, the position and
 * wording of parse errors, evaluation errors, identifier listing, nesting limits, and seeded random
 * expressions checked against a small independent evaluator written here.
 */
#include "test.h"
#include "core/expr.h"
#include "core/util.h"

#include <locale.h>
#include <stdlib.h>

/* Axis values for the tests (A..E are the random tests' axes). */
static int lookup(void *ctx, const char *name, double *out)
{
	(void)ctx;
	static const struct {
		const char *name;
		double v;
	} axes[] = { { "M", 7 }, { "N", -3 }, { "K", 2.5 }, { "Z", 0 }, { "big", 1e300 },
		     { "A", 3 }, { "B", -2 }, { "C", 0.5 }, { "D", 7 }, { "E", 0 }, { "inf_axis", INFINITY } };
	for (size_t i = 0; i < sizeof axes / sizeof axes[0]; i++) {
		if (!strcmp(axes[i].name, name)) {
			*out = axes[i].v;
			return 0;
		}
	}
	return -1;
}

/* Evaluates src; on failure reports the error and returns NAN. */
static double ev(const char *src)
{
	char err[SF_ERRLEN];
	double v;
	if (sf_expr_eval_str(src, lookup, NULL, &v, err, sizeof err) != 0) {
		fprintf(stderr, "  %s: unexpected error: %s\n", src, err);
		return NAN;
	}
	return v;
}

static const struct {
	const char *src;
	double want;
} value_cases[] = {
	/* precedence and associativity */
	{ "1+2*3", 7 },
	{ "(1+2)*3", 9 },
	{ "10-3-2", 5 },
	{ "100/10/5", 2 },
	{ "2*3%4", 2 },
	{ "2**3**2", 512 },
	{ "(2**3)**2", 64 },
	{ "-2**2", -4 },
	{ "(-2)**2", 4 },
	{ "2**-1", 0.5 },
	{ "-2**-2", -0.25 },
	{ "2*-3", -6 },
	{ "--3", 3 },
	{ "-+-3", 3 },
	{ "2**2*3", 12 },
	{ "3*2**2", 12 },
	{ "-3**2+1", -8 },
	{ "1+2 < 4", 1 },
	{ "2*M+N", 11 },
	{ "M*N//2", -11 },
	/* Python division, floor division and modulo */
	{ "7/2", 3.5 },
	{ "7//2", 3 },
	{ "-7//2", -4 },
	{ "7//-2", -4 },
	{ "-7//-2", 3 },
	{ "7%3", 1 },
	{ "-7%3", 2 },
	{ "7%-3", -2 },
	{ "-7%-3", -1 },
	{ "7.5//2", 3 },
	{ "-7.5//2", -4 },
	{ "-7.5%2", 0.5 },
	{ "7.5%-2", -0.5 },
	{ "0.5//0.1", 4 },  /* Python: 4.0 (fmod based), not floor(0.5/0.1) == 5 */
	{ "6%3", 0 },
	{ "-6%3", 0 },
	{ "N%M", 4 },
	{ "N//M", -1 },
	/* functions */
	{ "sqrt(16)", 4 },
	{ "min(3,1,2)", 1 },
	{ "max(3,1,2)", 3 },
	{ "min(M, N)", -3 },
	{ "cdiv(7,2)", 4 },
	{ "cdiv(8,2)", 4 },
	{ "cdiv(-7,2)", -3 },
	{ "cdiv(M, 4)", 2 },
	{ "abs(-3)", 3 },
	{ "ceil(2.1)", 3 },
	{ "ceil(-2.1)", -2 },
	{ "floor(-2.1)", -3 },
	{ "floor(K)", 2 },
	{ "log2(1024)", 10 },
	{ "log2(0.5)", -1 },
	{ "sqrt(M*M)", 7 },
	{ "max(1, 2) ** 2", 4 },
	/* literals */
	{ "1e-5*1e5", 1 },
	{ "0.5+.5", 1 },
	{ "1.", 1 },
	{ "2E3", 2000 },
	{ "1.5e+2", 150 },
	{ "00", 0 },
	/* comparisons and logic */
	{ "1 == 1.0", 1 },
	{ "2 != 2", 0 },
	{ "1 < 2 < 3", 1 },
	{ "3 > 2 > 1", 1 },
	{ "1 < 3 > 2", 1 },
	{ "1 < 2 > 3", 0 },
	{ "2 <= 2 >= 1", 1 },
	{ "4 >= 4 and 3 <= 2", 0 },
	{ "not 0", 1 },
	{ "not 5", 0 },
	{ "not 1 + 1", 0 },
	{ "not 1 == 2", 1 },
	{ "not not 3", 1 },
	{ "0 or 7", 7 },
	{ "3 and 5", 5 },
	{ "0 and 5", 0 },
	{ "0 or 0", 0 },
	{ "1 or 0 and 0", 1 },
	{ "(1 or 0) and 0", 0 },
	{ "M > 0 and M % 7 == 0", 1 },
	/* short-circuit: the unevaluated side may divide by zero or name unknown axes */
	{ "0 and 1/0", 0 },
	{ "1 or unknown_axis", 1 },
	{ "Z != 0 and 5/Z > 1", 0 },
	{ "1 > 2 > 1/0", 0 },
	/* whitespace */
	{ " \t( M\n+ 1 )\r", 8 },
};

SF_TEST(expr_values)
{
	for (size_t i = 0; i < sizeof value_cases / sizeof value_cases[0]; i++) {
		double v = ev(value_cases[i].src);
		if (!(v == value_cases[i].want)) {
			fprintf(stderr, "  %s == %.17g, expected %.17g\n", value_cases[i].src, v, value_cases[i].want);
			sf_test_failed_checks++;
		}
	}
	/* no lookup needed for constant expressions */
	char err[SF_ERRLEN];
	double v = 0;
	CHECK(sf_expr_eval_str("2**10", NULL, NULL, &v, err, sizeof err) == 0 && v == 1024);
}

SF_TEST(expr_parse_errors)
{
	static const struct {
		const char *src;
		int col;
		const char *what;
	} v[] = {
		{ "", 1, "unexpected end of expression" },
		{ "   ", 4, "unexpected end of expression" },
		{ "1 +", 4, "unexpected end of expression" },
		{ "1 $ 2", 3, "unexpected character '$'" },
		{ "(1+2", 5, "expected ')'" },
		{ "((M)", 5, "expected ')'" },
		{ "1)", 2, "unexpected ')'" },
		{ "1 2", 3, "unexpected number '2'" },
		{ "M N", 3, "unexpected 'N'" },
		{ "foo(1)", 1, "unknown function 'foo'" },
		{ "2*bar(1, 2)", 3, "unknown function 'bar'" },
		{ "cdiv(1)", 1, "cdiv() takes 2 arguments, got 1" },
		{ "1 + sqrt(1, 2)", 5, "sqrt() takes 1 argument, got 2" },
		{ "min(1)", 1, "min() takes at least 2 arguments" },
		{ "max()", 1, "max() takes at least 2 arguments, got 0" },
		{ "min(1,)", 7, "unexpected ')'" },
		{ "min(1 2)", 7, "expected ',' or ')'" },
		{ "1 = 2", 3, "unexpected character '='" },
		{ "!1", 1, "unexpected character '!'" },
		{ "1 + not 0", 5, "unexpected 'not'" },
		{ "-not 1", 2, "unexpected 'not'" },
		{ "1 and", 6, "unexpected end of expression" },
		{ "M *", 4, "unexpected end of expression" },
		{ "* 2", 1, "unexpected '*'" },
		{ "2 *** 3", 5, "unexpected '*'" },
		{ "1e", 1, "invalid number '1e'" },
		{ "2 + 3K", 5, "invalid number '3K'" },
		{ "1.2.3", 1, "invalid number" },
		{ "007", 1, "leading zeros" },
		{ "1e999", 1, "number out of range" },
		{ "M\x01", 2, "unexpected byte 0x01" },
		{ "x \xc3\xa9", 3, "unexpected byte 0xc3" },
		{ "()", 2, "unexpected ')'" },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		char err[SF_ERRLEN] = "";
		sf_expr *e = sf_expr_parse(v[i].src, err, sizeof err);
		CHECK(e == NULL);
		sf_expr_free(e);
		char pos[64], head[300];
		snprintf(pos, sizeof pos, ": at column %d: ", v[i].col);
		snprintf(head, sizeof head, "in '%s': ", v[i].src);
		int head_ok = strchr(v[i].src, '\x01') ? 1 : !strncmp(err, head, strlen(head));
		if (!head_ok || !strstr(err, pos) || !strstr(err, v[i].what)) {
			fprintf(stderr, "  case %zu: got \"%s\", expected column %d and \"%s\"\n", i, err, v[i].col,
				v[i].what);
			sf_test_failed_checks++;
		}
		/* one line, control characters of the source not echoed */
		CHECK(strchr(err, '\n') == NULL && strchr(err, '\x01') == NULL);
	}
	/* NULL source */
	char err[SF_ERRLEN];
	CHECK(sf_expr_parse(NULL, err, sizeof err) == NULL);
	CHECK(sf_expr_parse("(", NULL, 0) == NULL); /* err may be NULL */
}

SF_TEST(expr_eval_errors)
{
	static const struct {
		const char *src;
		const char *msg; /* the whole message */
	} v[] = {
		{ "M/(N+3)", "division by zero in 'M/(N+3)'" },
		{ "1/0", "division by zero in '1/0'" },
		{ "5 // Z", "division by zero in '5 // Z'" },
		{ "5 % Z", "modulo by zero in '5 % Z'" },
		{ "-5.5 % 0.0", "modulo by zero in '-5.5 % 0.0'" },
		{ "cdiv(M, Z)", "division by zero in 'cdiv(M, Z)'" },
		{ "M*Q", "unknown axis 'Q' in 'M*Q'" },
		{ "M + undefined_thing", "unknown axis 'undefined_thing' in 'M + undefined_thing'" },
		{ "sqrt(N)", "sqrt of a negative number in 'sqrt(N)'" },
		{ "log2(Z)", "log2 of a non-positive number in 'log2(Z)'" },
		{ "0**-1", "zero to a negative power in '0**-1'" },
		{ "N**0.5", "negative number to a fractional power in 'N**0.5'" },
		{ "big*big", "numeric overflow in 'big*big'" },
		{ "10**400", "numeric overflow in '10**400'" },
		{ "big*1e10 - big*1e10", "numeric overflow in 'big*1e10 - big*1e10'" },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		char err[SF_ERRLEN] = "";
		double out = 12345;
		int rc = sf_expr_eval_str(v[i].src, lookup, NULL, &out, err, sizeof err);
		CHECK_INT(rc, -1);
		CHECK_STR(err, v[i].msg);
		CHECK(out == 12345); /* untouched on error */
	}
	/* unknown axis when there is no lookup at all */
	char err[SF_ERRLEN];
	double out;
	CHECK(sf_expr_eval_str("2*K", NULL, NULL, &out, err, sizeof err) == -1);
	CHECK_STR(err, "unknown axis 'K' in '2*K'");
	/* a long source is cut in the message, which stays one line */
	sf_buf b = { 0 };
	sf_buf_puts(&b, "1/0");
	for (int i = 0; i < 200; i++)
		sf_buf_puts(&b, " + M");
	CHECK(sf_expr_eval_str(b.data, lookup, NULL, &out, err, sizeof err) == -1);
	CHECK(!strncmp(err, "division by zero in '1/0 + M + M", 32) && strstr(err, "...'"));
	sf_buf_free(&b);
	/* an axis value that is not finite */
	CHECK(sf_expr_eval_str("1 + inf_axis", lookup, NULL, &out, err, sizeof err) == -1);
	CHECK_STR(err, "axis 'inf_axis' is not finite in '1 + inf_axis'");
}

SF_TEST(expr_idents_and_reuse)
{
	char err[SF_ERRLEN];
	sf_expr *e = sf_expr_parse("M*N + K*M + sqrt(K) + max(K, D) + cdiv(head_dim, 2)", err, sizeof err);
	CHECK(e != NULL);
	if (!e)
		return;
	CHECK_STR(sf_expr_source(e), "M*N + K*M + sqrt(K) + max(K, D) + cdiv(head_dim, 2)");
	char **names;
	int n;
	CHECK(sf_expr_idents(e, &names, &n) == 0);
	CHECK_INT(n, 5);
	if (n == 5) {
		CHECK_STR(names[0], "M");
		CHECK_STR(names[1], "N");
		CHECK_STR(names[2], "K");
		CHECK_STR(names[3], "D");
		CHECK_STR(names[4], "head_dim");
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	/* unknown axis until we can supply it */
	double v;
	CHECK(sf_expr_eval(e, lookup, NULL, &v, err, sizeof err) == -1);
	CHECK(strstr(err, "unknown axis 'head_dim'") != NULL);
	sf_expr_free(e);

	e = sf_expr_parse("2 ** 10", err, sizeof err);
	CHECK(e && sf_expr_idents(e, &names, &n) == 0 && n == 0 && names == NULL);
	/* evaluating twice gives the same */
	double a = 0, b = 1;
	CHECK(e && sf_expr_eval(e, NULL, NULL, &a, err, sizeof err) == 0);
	CHECK(e && sf_expr_eval(e, NULL, NULL, &b, err, sizeof err) == 0);
	CHECK(a == 1024 && b == 1024);
	sf_expr_free(e);
	sf_expr_free(NULL);

	/* an axis may share a function's name when it is not called */
	e = sf_expr_parse("min + 1", err, sizeof err);
	CHECK(e && sf_expr_idents(e, &names, &n) == 0 && n == 1 && !strcmp(names[0], "min"));
	if (e && n == 1) {
		free(names[0]);
		free(names);
	}
	sf_expr_free(e);
}

SF_TEST(expr_locale_independent)
{
	/* under a locale whose decimal point is ',' (when one is installed) literals still use '.' */
	static const char *names[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8", "ru_RU.UTF-8" };
	const char *old = setlocale(LC_NUMERIC, NULL);
	char *saved = old ? strdup(old) : NULL;
	int switched = 0;
	for (size_t i = 0; i < sizeof names / sizeof names[0] && !switched; i++)
		switched = setlocale(LC_NUMERIC, names[i]) != NULL;
	CHECK(ev("0.5 + 2.25e1 * .1") == 0.5 + 2.25);
	setlocale(LC_NUMERIC, saved ? saved : "C");
	free(saved);
}

/* Builds "<prefix><rep times unit><suffix>" */
static char *repeat(const char *prefix, const char *unit, int times, const char *suffix)
{
	sf_buf b = { 0 };
	sf_buf_puts(&b, prefix);
	for (int i = 0; i < times; i++)
		sf_buf_puts(&b, unit);
	sf_buf_puts(&b, suffix);
	return sf_buf_take(&b);
}

SF_TEST(expr_nesting_limits)
{
	char err[SF_ERRLEN];
	double v;
	/* modest nesting is fine */
	char *s = repeat("", "(", 50, "1");
	char *t = repeat(s, ")", 50, "");
	CHECK(sf_expr_eval_str(t, NULL, NULL, &v, err, sizeof err) == 0 && v == 1);
	free(s);
	free(t);
	s = repeat("", "1+", 500, "1");
	CHECK(sf_expr_eval_str(s, NULL, NULL, &v, err, sizeof err) == 0 && v == 501);
	free(s);
	/* hostile nesting is an error, never a crash */
	static const struct {
		const char *prefix, *unit, *suffix;
		int times;
	} v2[] = {
		{ "", "(", "1", 100000 },
		{ "", "-", "1", 100000 },
		{ "", "not ", "1", 100000 },
		{ "", "2**", "1", 100000 },
		{ "", "min(1,", "1", 100000 },
		{ "1", "+1", "", 100000 },
		{ "1", "*1", "", 100000 },
		{ "1", " or 1", "", 100000 },
		{ "1", " < 1", "", 100000 },
	};
	for (size_t i = 0; i < sizeof v2 / sizeof v2[0]; i++) {
		s = repeat(v2[i].prefix, v2[i].unit, v2[i].times, v2[i].suffix);
		err[0] = 0;
		sf_expr *e = sf_expr_parse(s, err, sizeof err);
		if (i == sizeof v2 / sizeof v2[0] - 1) {
			/* a comparison chain is one flat node: fine however long */
			CHECK(e != NULL);
		} else {
			CHECK(e == NULL);
			CHECK(strstr(err, "too deep") || strstr(err, "nested too deeply"));
		}
		sf_expr_free(e);
		free(s);
	}
}

/* ---- random expressions against an independent evaluator ---- */

enum { P_OR = 1, P_AND, P_NOT, P_CMP, P_SUM, P_TERM, P_UNARY, P_POW, P_ATOM };

enum { R_LIT, R_VAR, R_NEG, R_POS, R_NOT, R_ADD, R_SUB, R_MUL, R_DIV, R_FDIV, R_MOD, R_POW, R_AND, R_OR,
       R_CMP, R_CALL };

typedef struct rnode {
	int op;
	const char *text; /* R_LIT: the literal; R_VAR: the name; R_CALL: the function */
	double val;
	int n;
	struct rnode *k[3];
	int cmp[2]; /* R_CMP: 0 ==, 1 !=, 2 <, 3 <=, 4 >, 5 >= */
} rnode;

static uint64_t xrand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int below(uint64_t *s, int n)
{
	return (int)(xrand(s) % (uint64_t)n);
}

static rnode *rgen(uint64_t *r, int depth)
{
	static const struct {
		const char *text;
		double val;
	} lits[] = { { "0", 0 }, { "1", 1 }, { "2", 2 }, { "3", 3 }, { "5", 5 }, { "9", 9 },
		     { "0.5", 0.5 }, { ".25", 0.25 }, { "2.5", 2.5 }, { "1e1", 10 }, { "3.", 3 } };
	static const char *vars[] = { "A", "B", "C", "D", "E" };
	static const double varv[] = { 3, -2, 0.5, 7, 0 };
	static const char *fn[] = { "sqrt", "min", "max", "cdiv", "abs", "ceil", "floor", "log2" };
	rnode *n = sf_xcalloc(1, sizeof *n);
	int choice = depth <= 0 ? below(r, 2) : below(r, 16);
	switch (choice) {
	case 0: {
		int i = below(r, (int)(sizeof lits / sizeof lits[0]));
		n->op = R_LIT;
		n->text = lits[i].text;
		n->val = lits[i].val;
		return n;
	}
	case 1: {
		int i = below(r, 5);
		n->op = R_VAR;
		n->text = vars[i];
		n->val = varv[i];
		return n;
	}
	case 2: n->op = R_NEG; n->n = 1; break;
	case 3: n->op = below(r, 3) ? R_NEG : R_POS; n->n = 1; break;
	case 4: n->op = R_NOT; n->n = 1; break;
	case 5: n->op = R_ADD; n->n = 2; break;
	case 6: n->op = R_SUB; n->n = 2; break;
	case 7: n->op = R_MUL; n->n = 2; break;
	case 8: n->op = R_DIV; n->n = 2; break;
	case 9: n->op = R_FDIV; n->n = 2; break;
	case 10: n->op = R_MOD; n->n = 2; break;
	case 11: n->op = R_POW; n->n = 2; break;
	case 12: n->op = below(r, 2) ? R_AND : R_OR; n->n = 2; break;
	case 13:
		n->op = R_CMP;
		n->n = 2 + below(r, 2);
		n->cmp[0] = below(r, 6);
		n->cmp[1] = below(r, 6);
		break;
	default: {
		int f = below(r, 8);
		n->op = R_CALL;
		n->text = fn[f];
		n->n = f == 3 ? 2 : (f == 1 || f == 2) ? 2 + below(r, 2) : 1;
		break;
	}
	}
	for (int i = 0; i < n->n; i++)
		n->k[i] = rgen(r, depth - 1);
	return n;
}

static void rfree(rnode *n)
{
	for (int i = 0; i < n->n; i++)
		rfree(n->k[i]);
	free(n);
}

static int rprec(const rnode *n)
{
	switch (n->op) {
	case R_NEG: case R_POS: return P_UNARY;
	case R_NOT: return P_NOT;
	case R_ADD: case R_SUB: return P_SUM;
	case R_MUL: case R_DIV: case R_FDIV: case R_MOD: return P_TERM;
	case R_POW: return P_POW;
	case R_AND: return P_AND;
	case R_OR: return P_OR;
	case R_CMP: return P_CMP;
	default: return P_ATOM;
	}
}

static void rspace(sf_buf *b, uint64_t *r)
{
	if (!below(r, 3))
		sf_buf_puts(b, " ");
}

static void render(sf_buf *b, uint64_t *r, const rnode *n);

/* Renders child c, parenthesized when required (or, sometimes, just because). */
static void render_child(sf_buf *b, uint64_t *r, const rnode *c, int need)
{
	if (need || !below(r, 12)) {
		sf_buf_puts(b, "(");
		rspace(b, r);
		render(b, r, c);
		rspace(b, r);
		sf_buf_puts(b, ")");
	} else {
		render(b, r, c);
	}
}

/* Renders with the fewest parentheses Python's grammar needs to keep the tree's shape. */
static void render(sf_buf *b, uint64_t *r, const rnode *n)
{
	static const char *cmps[] = { "==", "!=", "<", "<=", ">", ">=" };
	static const char *bins[] = { [R_ADD] = "+", [R_SUB] = "-", [R_MUL] = "*", [R_DIV] = "/",
				      [R_FDIV] = "//", [R_MOD] = "%", [R_POW] = "**", [R_AND] = " and ",
				      [R_OR] = " or " };
	int p = rprec(n);
	switch (n->op) {
	case R_LIT:
	case R_VAR:
		sf_buf_puts(b, n->text);
		return;
	case R_NEG:
	case R_POS:
		sf_buf_puts(b, n->op == R_NEG ? "-" : "+");
		rspace(b, r);
		render_child(b, r, n->k[0], rprec(n->k[0]) < P_UNARY);
		return;
	case R_NOT:
		sf_buf_puts(b, "not ");
		render_child(b, r, n->k[0], rprec(n->k[0]) < P_NOT);
		return;
	case R_CMP:
		for (int i = 0; i < n->n; i++) {
			if (i) {
				rspace(b, r);
				sf_buf_puts(b, cmps[n->cmp[i - 1]]);
				rspace(b, r);
			}
			render_child(b, r, n->k[i], rprec(n->k[i]) <= P_CMP);
		}
		return;
	case R_CALL:
		sf_buf_puts(b, n->text);
		sf_buf_puts(b, "(");
		for (int i = 0; i < n->n; i++) {
			if (i)
				sf_buf_puts(b, ",");
			rspace(b, r);
			render_child(b, r, n->k[i], 0);
		}
		sf_buf_puts(b, ")");
		return;
	case R_POW:
		render_child(b, r, n->k[0], rprec(n->k[0]) <= P_POW);
		rspace(b, r);
		sf_buf_puts(b, "**");
		rspace(b, r);
		render_child(b, r, n->k[1], rprec(n->k[1]) < P_UNARY);
		return;
	default: /* left-associative binary operators */
		render_child(b, r, n->k[0], rprec(n->k[0]) < p);
		rspace(b, r);
		sf_buf_puts(b, bins[n->op]);
		rspace(b, r);
		render_child(b, r, n->k[1], rprec(n->k[1]) <= p);
		return;
	}
}

/* Python's float floor division and modulo, derived here from fmod independently of expr.c. */
static void ref_divmod(double a, double b, double *q, double *m)
{
	double rem = fmod(a, b);
	if (rem != 0 && (rem < 0) != (b < 0))
		rem += b;
	*m = rem;
	*q = round((a - rem) / b);
}

/* The reference evaluator: 0 and *out, or -1 for any error the language defines. */
static int reval(const rnode *n, double *out)
{
	double a = 0, b = 0, v = 0;
	switch (n->op) {
	case R_LIT:
	case R_VAR:
		*out = n->val;
		return 0;
	case R_AND:
	case R_OR:
		if (reval(n->k[0], &a))
			return -1;
		if (n->op == R_AND ? a == 0 : a != 0) {
			*out = a;
			return 0;
		}
		return reval(n->k[1], out);
	case R_CMP:
		if (reval(n->k[0], &a))
			return -1;
		for (int i = 1; i < n->n; i++) {
			if (reval(n->k[i], &b))
				return -1;
			int ok;
			switch (n->cmp[i - 1]) {
			case 0: ok = a == b; break;
			case 1: ok = a != b; break;
			case 2: ok = a < b; break;
			case 3: ok = a <= b; break;
			case 4: ok = a > b; break;
			default: ok = a >= b; break;
			}
			if (!ok) {
				*out = 0;
				return 0;
			}
			a = b;
		}
		*out = 1;
		return 0;
	default:
		break;
	}
	double k[3] = { 0, 0, 0 };
	for (int i = 0; i < n->n; i++)
		if (reval(n->k[i], &k[i]))
			return -1;
	a = k[0];
	b = n->n > 1 ? k[1] : 0;
	double q, m;
	switch (n->op) {
	case R_NEG: v = -a; break;
	case R_POS: v = a; break;
	case R_NOT: v = a == 0; break;
	case R_ADD: v = a + b; break;
	case R_SUB: v = a - b; break;
	case R_MUL: v = a * b; break;
	case R_DIV:
		if (b == 0)
			return -1;
		v = a / b;
		break;
	case R_FDIV:
	case R_MOD:
		if (b == 0)
			return -1;
		ref_divmod(a, b, &q, &m);
		v = n->op == R_FDIV ? q : m;
		break;
	case R_POW:
		if ((a == 0 && b < 0) || (a < 0 && b != floor(b)))
			return -1;
		v = pow(a, b);
		break;
	case R_CALL:
		if (!strcmp(n->text, "sqrt")) {
			if (a < 0)
				return -1;
			v = sqrt(a);
		} else if (!strcmp(n->text, "min") || !strcmp(n->text, "max")) {
			v = a;
			for (int i = 1; i < n->n; i++)
				if (n->text[1] == 'i' ? k[i] < v : k[i] > v)
					v = k[i];
		} else if (!strcmp(n->text, "cdiv")) {
			if (b == 0)
				return -1;
			ref_divmod(-a, b, &q, &m);
			v = -q;
		} else if (!strcmp(n->text, "abs")) {
			v = fabs(a);
		} else if (!strcmp(n->text, "ceil")) {
			v = ceil(a);
		} else if (!strcmp(n->text, "floor")) {
			v = floor(a);
		} else {
			if (a <= 0)
				return -1;
			v = log2(a);
		}
		break;
	default:
		return -1;
	}
	if (!isfinite(v))
		return -1;
	*out = v;
	return 0;
}

/* Identifiers of the tree in source order, each once, joined with ','. */
static void ridents(const rnode *n, sf_buf *b)
{
	if (n->op == R_VAR) {
		char key[8];
		snprintf(key, sizeof key, ",%s,", n->text);
		sf_buf tmp = { 0 };
		sf_buf_printf(&tmp, ",%s", b->data ? b->data : "");
		int seen = strstr(tmp.data, key) != NULL;
		sf_buf_free(&tmp);
		if (!seen)
			sf_buf_printf(b, "%s,", n->text);
		return;
	}
	for (int i = 0; i < n->n; i++)
		ridents(n->k[i], b);
}

SF_TEST(expr_random_vs_reference)
{
	uint64_t r = sf_test_seed() ^ 0x45585052ull;
	int ok_count = 0, err_count = 0;
	for (int iter = 0; iter < 4000; iter++) {
		rnode *t = rgen(&r, below(&r, 6));
		sf_buf src = { 0 };
		rspace(&src, &r);
		render(&src, &r, t);
		rspace(&src, &r);
		char err[SF_ERRLEN];
		sf_expr *e = sf_expr_parse(src.data, err, sizeof err);
		CHECK(e != NULL);
		if (!e) {
			fprintf(stderr, "  %s\n", err);
		} else {
			double want = 0, got = 0;
			int rw = reval(t, &want);
			int rg = sf_expr_eval(e, lookup, NULL, &got, err, sizeof err);
			int same = rw == rg &&
				   (rw != 0 || got == want || fabs(got - want) <= 1e-12 * fmax(fabs(got), fabs(want)));
			if (!same) {
				fprintf(stderr, "  %s: got %s%.17g, reference %s%.17g\n", src.data, rg ? "error " : "",
					rg ? 0.0 : got, rw ? "error " : "", rw ? 0.0 : want);
				if (rg)
					fprintf(stderr, "  (%s)\n", err);
				sf_test_failed_checks++;
			}
			if (rw == 0)
				ok_count++;
			else
				err_count++;
			/* identifiers in first-use order */
			sf_buf want_ids = { 0 }, got_ids = { 0 };
			ridents(t, &want_ids);
			char **names;
			int n;
			sf_expr_idents(e, &names, &n);
			for (int i = 0; i < n; i++) {
				sf_buf_printf(&got_ids, "%s,", names[i]);
				free(names[i]);
			}
			free(names);
			CHECK_STR(got_ids.data ? got_ids.data : "", want_ids.data ? want_ids.data : "");
			sf_buf_free(&want_ids);
			sf_buf_free(&got_ids);
		}
		sf_expr_free(e);
		sf_buf_free(&src);
		rfree(t);
	}
	/* the generator exercises both outcomes */
	CHECK(ok_count > 1000);
	CHECK(err_count > 10);
}
