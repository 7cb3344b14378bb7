/*
 * expr.c - the axis expression language (see expr.h): a tokenizer, a recursive-descent parser
 * into a small tree, and a tree-walking evaluator with Python's float semantics.
 *
 * Safety against hostile input: the parser counts its nesting (parentheses, unary operators,
 * exponents, calls) and every node records its height, both capped, so parsing, evaluation,
 * identifier listing and freeing all recurse a bounded number of levels.
 */
#include "core/expr.h"
#include "core/util.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum node_kind {
	N_NUM,
	N_VAR,
	N_NEG,
	N_POS,
	N_NOT,
	N_ADD,
	N_SUB,
	N_MUL,
	N_DIV,
	N_FLOORDIV,
	N_MOD,
	N_POW,
	N_AND,
	N_OR,
	N_CMP, /* a chain: kid[0] op[0] kid[1] op[1] kid[2] ... */
	N_CALL
} node_kind;

typedef enum tok_kind {
	T_END,
	T_NUM,
	T_IDENT,
	T_LPAREN,
	T_RPAREN,
	T_COMMA,
	T_PLUS,
	T_MINUS,
	T_STAR,
	T_SLASH,
	T_DSLASH,
	T_PERCENT,
	T_POW,
	T_EQ,
	T_NE,
	T_LT,
	T_LE,
	T_GT,
	T_GE,
	T_AND,
	T_OR,
	T_NOT
} tok_kind;

typedef enum fn_id { F_SQRT, F_MIN, F_MAX, F_CDIV, F_ABS, F_CEIL, F_FLOOR, F_LOG2 } fn_id;

static const struct {
	const char *name;
	int min_args, max_args; /* max_args -1: unbounded */
} fns[] = {
	[F_SQRT] = { "sqrt", 1, 1 },
	[F_MIN] = { "min", 2, -1 },
	[F_MAX] = { "max", 2, -1 },
	[F_CDIV] = { "cdiv", 2, 2 },
	[F_ABS] = { "abs", 1, 1 },
	[F_CEIL] = { "ceil", 1, 1 },
	[F_FLOOR] = { "floor", 1, 1 },
	[F_LOG2] = { "log2", 1, 1 },
};

typedef struct node {
	node_kind kind;
	int height;       /* 1 for leaves */
	double val;       /* N_NUM */
	char *name;       /* N_VAR */
	fn_id fn;         /* N_CALL */
	struct node **kid;
	int nkid;
	tok_kind *cmp;    /* N_CMP: nkid - 1 operators */
} node;

struct sf_expr {
	char *src;
	node *root;
};

typedef struct token {
	tok_kind kind;
	size_t start, len; /* the token's bytes in src */
	double num;        /* T_NUM */
} token;

typedef struct parser {
	const char *src;
	size_t pos;   /* next byte to tokenize */
	token tok;    /* current token */
	int nesting;
	int failed;
	char *err;
	size_t errlen;
} parser;

/*
 * Copies src into out (size n >= 8) for quoting in a one-line message: control characters become
 * '?', and text beyond ~120 bytes is cut with "...".
 */
static void quote_src(const char *src, char *out, size_t n)
{
	size_t k = 0, i = 0, limit = n - 4 < 120 ? n - 4 : 120;
	for (; src[i] && k < limit; i++) {
		unsigned char c = (unsigned char)src[i];
		out[k++] = (char)(c < 0x20 || c == 0x7f ? '?' : c);
	}
	if (src[i]) {
		memcpy(out + k, "...", 3);
		k += 3;
	}
	out[k] = 0;
}

/* Writes "in 'SRC': at column C: <what>"; marks the parse failed (first error wins). */
static void perr(parser *p, size_t col0, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void perr(parser *p, size_t col0, const char *fmt, ...)
{
	if (p->failed)
		return;
	p->failed = 1;
	char what[200], q[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	quote_src(p->src, q, sizeof q);
	sf_errf(p->err, p->errlen, "in '%s': at column %zu: %s", q, col0 + 1, what);
}

static int is_ident_start(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int is_ident_char(int c)
{
	return is_ident_start(c) || is_digit(c);
}

static locale_t c_loc;
static pthread_once_t c_loc_once = PTHREAD_ONCE_INIT;

static void c_loc_init(void)
{
	c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/*
 * strtod on s[0..n) (digits, '.', exponent) in the "C" numeric locale whatever setlocale did
 * (a per-thread uselocale switch, so thread-safe). Returns 0, or -1 if not all of it is a number.
 */
static int c_strtod(const char *s, size_t n, double *out)
{
	char *tmp = sf_xstrndup(s, n);
	char *end;
	pthread_once(&c_loc_once, c_loc_init);
	locale_t old = c_loc ? uselocale(c_loc) : (locale_t)0;
	*out = strtod(tmp, &end);
	if (old)
		uselocale(old);
	int ok = end == tmp + n;
	free(tmp);
	return ok ? 0 : -1;
}

/* Reads a number literal at p->pos into p->tok; returns 0 or -1 (error written). */
static int lex_number(parser *p)
{
	const char *s = p->src;
	size_t start = p->pos, i = p->pos;
	int fraction = 0;
	while (is_digit(s[i]))
		i++;
	size_t int_end = i;
	if (s[i] == '.') {
		fraction = 1;
		i++;
		while (is_digit(s[i]))
			i++;
	}
	if (s[i] == 'e' || s[i] == 'E') {
		fraction = 1;
		i++;
		if (s[i] == '+' || s[i] == '-')
			i++;
		if (!is_digit(s[i])) {
			perr(p, start, "invalid number '%.*s'", (int)(i - start), s + start);
			return -1;
		}
		while (is_digit(s[i]))
			i++;
	}
	if (is_ident_char(s[i]) || s[i] == '.') {
		size_t j = i;
		while (is_ident_char(s[j]) || s[j] == '.')
			j++;
		perr(p, start, "invalid number '%.*s'", (int)(j - start > 40 ? 40 : j - start), s + start);
		return -1;
	}
	if (!fraction && s[start] == '0' && int_end - start > 1) {
		for (size_t k = start; k < int_end; k++) {
			if (s[k] != '0') {
				perr(p, start, "leading zeros in number '%.*s'", (int)(i - start > 40 ? 40 : i - start),
				     s + start);
				return -1;
			}
		}
	}
	double v;
	if (c_strtod(s + start, i - start, &v) != 0) {
		perr(p, start, "invalid number");
		return -1;
	}
	if (!isfinite(v)) {
		perr(p, start, "number out of range");
		return -1;
	}
	p->tok.kind = T_NUM;
	p->tok.num = v;
	p->tok.start = start;
	p->tok.len = i - start;
	p->pos = i;
	return 0;
}

/* Advances to the next token; returns 0, or -1 on a lexical error (written to p->err). */
static int next(parser *p)
{
	const char *s = p->src;
	if (p->failed)
		return -1;
	while (s[p->pos] == ' ' || s[p->pos] == '\t' || s[p->pos] == '\n' || s[p->pos] == '\r')
		p->pos++;
	size_t i = p->pos;
	unsigned char c = (unsigned char)s[i];
	p->tok.start = i;
	p->tok.len = 1;
	if (c == 0) {
		p->tok.kind = T_END;
		p->tok.len = 0;
		return 0;
	}
	if (is_digit(c) || (c == '.' && is_digit(s[i + 1])))
		return lex_number(p);
	if (is_ident_start(c)) {
		size_t j = i;
		while (is_ident_char(s[j]))
			j++;
		p->tok.len = j - i;
		p->tok.kind = T_IDENT;
		if (j - i == 3 && !memcmp(s + i, "and", 3))
			p->tok.kind = T_AND;
		else if (j - i == 2 && !memcmp(s + i, "or", 2))
			p->tok.kind = T_OR;
		else if (j - i == 3 && !memcmp(s + i, "not", 3))
			p->tok.kind = T_NOT;
		p->pos = j;
		return 0;
	}
	char d = s[i + 1];
	tok_kind k;
	switch (c) {
	case '(': k = T_LPAREN; break;
	case ')': k = T_RPAREN; break;
	case ',': k = T_COMMA; break;
	case '+': k = T_PLUS; break;
	case '-': k = T_MINUS; break;
	case '%': k = T_PERCENT; break;
	case '*':
		k = d == '*' ? T_POW : T_STAR;
		break;
	case '/':
		k = d == '/' ? T_DSLASH : T_SLASH;
		break;
	case '<':
		k = d == '=' ? T_LE : T_LT;
		break;
	case '>':
		k = d == '=' ? T_GE : T_GT;
		break;
	case '=':
		if (d != '=') {
			perr(p, i, "unexpected character '=' (comparison is '==')");
			return -1;
		}
		k = T_EQ;
		break;
	case '!':
		if (d != '=') {
			perr(p, i, "unexpected character '!' (use 'not')");
			return -1;
		}
		k = T_NE;
		break;
	default:
		if (c >= 0x20 && c < 0x7f)
			perr(p, i, "unexpected character '%c'", c);
		else
			perr(p, i, "unexpected byte 0x%02x", c);
		return -1;
	}
	p->tok.kind = k;
	if (k == T_POW || k == T_DSLASH || k == T_LE || k == T_GE || k == T_EQ || k == T_NE)
		p->tok.len = 2;
	p->pos = i + p->tok.len;
	return 0;
}

/* Reports that the current token is not what the grammar allows here. */
static void unexpected(parser *p, const char *expected)
{
	char what[80];
	if (p->tok.kind == T_END)
		snprintf(what, sizeof what, "unexpected end of expression");
	else if (p->tok.kind == T_NUM)
		snprintf(what, sizeof what, "unexpected number '%.*s'", (int)(p->tok.len > 30 ? 30 : p->tok.len),
			 p->src + p->tok.start);
	else
		snprintf(what, sizeof what, "unexpected '%.*s'", (int)(p->tok.len > 30 ? 30 : p->tok.len),
			 p->src + p->tok.start);
	if (expected)
		perr(p, p->tok.start, "%s, expected %s", what, expected);
	else
		perr(p, p->tok.start, "%s", what);
}

static void free_node(node *n)
{
	if (!n)
		return;
	for (int i = 0; i < n->nkid; i++)
		free_node(n->kid[i]);
	free(n->kid);
	free(n->cmp);
	free(n->name);
	free(n);
}

/*
 * Makes a node with the given kids (ownership moves to the node). Fails (frees the kids, returns
 * NULL, writes the error) when the tree would grow taller than SF_EXPR_MAX_HEIGHT.
 */
static node *mk(parser *p, node_kind kind, size_t col0, node **kids, int nkid)
{
	int h = 0;
	for (int i = 0; i < nkid; i++)
		if (kids[i]->height > h)
			h = kids[i]->height;
	if (h + 1 > SF_EXPR_MAX_HEIGHT) {
		perr(p, col0, "expression too deep (more than %d levels)", SF_EXPR_MAX_HEIGHT);
		for (int i = 0; i < nkid; i++)
			free_node(kids[i]);
		return NULL;
	}
	node *n = sf_xcalloc(1, sizeof *n);
	n->kind = kind;
	n->height = h + 1;
	if (nkid) {
		n->kid = sf_xmalloc((size_t)nkid * sizeof *n->kid);
		memcpy(n->kid, kids, (size_t)nkid * sizeof *n->kid);
	}
	n->nkid = nkid;
	return n;
}

static node *mk2(parser *p, node_kind kind, size_t col0, node *a, node *b)
{
	node *k[2] = { a, b };
	return mk(p, kind, col0, k, b ? 2 : 1);
}

/* Enters one level of syntactic nesting; -1 (error written) past SF_EXPR_MAX_NESTING. */
static int enter(parser *p)
{
	if (++p->nesting > SF_EXPR_MAX_NESTING) {
		perr(p, p->tok.start, "expression nested too deeply (more than %d levels)", SF_EXPR_MAX_NESTING);
		return -1;
	}
	return 0;
}

static node *parse_or(parser *p);
static node *parse_factor(parser *p);

/* A growable list of nodes for call arguments and comparison chains. */
typedef struct nodelist {
	node **v;
	int n, cap;
} nodelist;

static void list_push(nodelist *l, node *n)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 4;
		l->v = sf_xrealloc(l->v, (size_t)l->cap * sizeof *l->v);
	}
	l->v[l->n++] = n;
}

static void list_free(nodelist *l)
{
	for (int i = 0; i < l->n; i++)
		free_node(l->v[i]);
	free(l->v);
}

/* Parses a call's arguments after the function name (current token is '('). */
static node *parse_call(parser *p, size_t name_start, size_t name_len)
{
	int fn = -1;
	for (int i = 0; i < (int)(sizeof fns / sizeof fns[0]); i++)
		if (strlen(fns[i].name) == name_len && !memcmp(fns[i].name, p->src + name_start, name_len))
			fn = i;
	if (fn < 0) {
		perr(p, name_start, "unknown function '%.*s'", (int)(name_len > 40 ? 40 : name_len),
		     p->src + name_start);
		return NULL;
	}
	nodelist args = { 0 };
	if (enter(p) != 0 || next(p) != 0)
		return NULL;
	if (p->tok.kind != T_RPAREN) {
		for (;;) {
			node *a = parse_or(p);
			if (!a)
				goto bad;
			list_push(&args, a);
			if (p->tok.kind == T_COMMA) {
				if (next(p) != 0)
					goto bad;
				continue;
			}
			if (p->tok.kind == T_RPAREN)
				break;
			unexpected(p, "',' or ')'");
			goto bad;
		}
	}
	if (next(p) != 0)
		goto bad;
	p->nesting--;
	if (args.n < fns[fn].min_args || (fns[fn].max_args >= 0 && args.n > fns[fn].max_args)) {
		if (fns[fn].min_args == fns[fn].max_args)
			perr(p, name_start, "%s() takes %d argument%s, got %d", fns[fn].name, fns[fn].min_args,
			     fns[fn].min_args == 1 ? "" : "s", args.n);
		else
			perr(p, name_start, "%s() takes at least %d arguments, got %d", fns[fn].name,
			     fns[fn].min_args, args.n);
		goto bad;
	}
	node *n = mk(p, N_CALL, name_start, args.v, args.n);
	free(args.v);
	if (n)
		n->fn = (fn_id)fn;
	return n;
bad:
	list_free(&args);
	return NULL;
}

/* primary: number | identifier | identifier '(' args ')' | '(' or_expr ')' */
static node *parse_primary(parser *p)
{
	token t = p->tok;
	if (t.kind == T_NUM) {
		if (next(p) != 0)
			return NULL;
		node *n = mk(p, N_NUM, t.start, NULL, 0);
		n->val = t.num;
		return n;
	}
	if (t.kind == T_IDENT) {
		if (next(p) != 0)
			return NULL;
		if (p->tok.kind == T_LPAREN)
			return parse_call(p, t.start, t.len);
		node *n = mk(p, N_VAR, t.start, NULL, 0);
		n->name = sf_xstrndup(p->src + t.start, t.len);
		return n;
	}
	if (t.kind == T_LPAREN) {
		if (enter(p) != 0 || next(p) != 0)
			return NULL;
		node *n = parse_or(p);
		if (!n)
			return NULL;
		if (p->tok.kind != T_RPAREN) {
			unexpected(p, "')'");
			free_node(n);
			return NULL;
		}
		if (next(p) != 0) {
			free_node(n);
			return NULL;
		}
		p->nesting--;
		return n;
	}
	unexpected(p, "a number, a name or '('");
	return NULL;
}

/* power: primary ['**' factor]   (right associative; the exponent may carry a unary sign) */
static node *parse_power(parser *p)
{
	node *base = parse_primary(p);
	if (!base || p->tok.kind != T_POW)
		return base;
	size_t col0 = p->tok.start;
	if (enter(p) != 0 || next(p) != 0) {
		free_node(base);
		return NULL;
	}
	node *ex = parse_factor(p);
	if (!ex) {
		free_node(base);
		return NULL;
	}
	p->nesting--;
	return mk2(p, N_POW, col0, base, ex);
}

/* factor: ('+' | '-') factor | power */
static node *parse_factor(parser *p)
{
	if (p->tok.kind != T_PLUS && p->tok.kind != T_MINUS)
		return parse_power(p);
	node_kind k = p->tok.kind == T_PLUS ? N_POS : N_NEG;
	size_t col0 = p->tok.start;
	if (enter(p) != 0 || next(p) != 0)
		return NULL;
	node *a = parse_factor(p);
	if (!a)
		return NULL;
	p->nesting--;
	return mk2(p, k, col0, a, NULL);
}

/* term: factor (('*' | '/' | '//' | '%') factor)* */
static node *parse_term(parser *p)
{
	node *left = parse_factor(p);
	while (left) {
		node_kind k;
		switch (p->tok.kind) {
		case T_STAR: k = N_MUL; break;
		case T_SLASH: k = N_DIV; break;
		case T_DSLASH: k = N_FLOORDIV; break;
		case T_PERCENT: k = N_MOD; break;
		default: return left;
		}
		size_t col0 = p->tok.start;
		node *right = next(p) == 0 ? parse_factor(p) : NULL;
		if (!right) {
			free_node(left);
			return NULL;
		}
		left = mk2(p, k, col0, left, right);
	}
	return NULL;
}

/* sum: term (('+' | '-') term)* */
static node *parse_sum(parser *p)
{
	node *left = parse_term(p);
	while (left && (p->tok.kind == T_PLUS || p->tok.kind == T_MINUS)) {
		node_kind k = p->tok.kind == T_PLUS ? N_ADD : N_SUB;
		size_t col0 = p->tok.start;
		node *right = next(p) == 0 ? parse_term(p) : NULL;
		if (!right) {
			free_node(left);
			return NULL;
		}
		left = mk2(p, k, col0, left, right);
	}
	return left;
}

static int is_cmp(tok_kind k)
{
	return k == T_EQ || k == T_NE || k == T_LT || k == T_LE || k == T_GT || k == T_GE;
}

/* comparison: sum (cmp_op sum)*   (a chain, as in Python) */
static node *parse_cmp(parser *p)
{
	node *first = parse_sum(p);
	if (!first || !is_cmp(p->tok.kind))
		return first;
	size_t col0 = p->tok.start;
	nodelist kids = { 0 };
	tok_kind *ops = NULL;
	int nops = 0, opcap = 0;
	list_push(&kids, first);
	while (is_cmp(p->tok.kind)) {
		if (nops == opcap) {
			opcap = opcap ? opcap * 2 : 4;
			ops = sf_xrealloc(ops, (size_t)opcap * sizeof *ops);
		}
		ops[nops++] = p->tok.kind;
		node *b = next(p) == 0 ? parse_sum(p) : NULL;
		if (!b) {
			list_free(&kids);
			free(ops);
			return NULL;
		}
		list_push(&kids, b);
	}
	node *n = mk(p, N_CMP, col0, kids.v, kids.n);
	free(kids.v);
	if (!n) {
		free(ops);
		return NULL;
	}
	n->cmp = ops;
	return n;
}

/* not_expr: 'not' not_expr | comparison */
static node *parse_not(parser *p)
{
	if (p->tok.kind != T_NOT)
		return parse_cmp(p);
	size_t col0 = p->tok.start;
	if (enter(p) != 0 || next(p) != 0)
		return NULL;
	node *a = parse_not(p);
	if (!a)
		return NULL;
	p->nesting--;
	return mk2(p, N_NOT, col0, a, NULL);
}

/* and_expr: not_expr ('and' not_expr)* */
static node *parse_and(parser *p)
{
	node *left = parse_not(p);
	while (left && p->tok.kind == T_AND) {
		size_t col0 = p->tok.start;
		node *right = next(p) == 0 ? parse_not(p) : NULL;
		if (!right) {
			free_node(left);
			return NULL;
		}
		left = mk2(p, N_AND, col0, left, right);
	}
	return left;
}

/* or_expr: and_expr ('or' and_expr)* */
static node *parse_or(parser *p)
{
	node *left = parse_and(p);
	while (left && p->tok.kind == T_OR) {
		size_t col0 = p->tok.start;
		node *right = next(p) == 0 ? parse_and(p) : NULL;
		if (!right) {
			free_node(left);
			return NULL;
		}
		left = mk2(p, N_OR, col0, left, right);
	}
	return left;
}

sf_expr *sf_expr_parse(const char *src, char *err, size_t errlen)
{
	if (!src) {
		sf_errf(err, errlen, "in '': at column 1: no expression");
		return NULL;
	}
	parser p = { 0 };
	p.src = src;
	p.err = err;
	p.errlen = errlen;
	if (next(&p) != 0)
		return NULL;
	node *root = parse_or(&p);
	if (!root)
		return NULL;
	if (p.tok.kind != T_END) {
		unexpected(&p, p.tok.kind == T_RPAREN ? "end of expression (unbalanced ')')" : "an operator");
		free_node(root);
		return NULL;
	}
	sf_expr *e = sf_xcalloc(1, sizeof *e);
	e->src = sf_xstrdup(src);
	e->root = root;
	return e;
}

void sf_expr_free(sf_expr *e)
{
	if (!e)
		return;
	free_node(e->root);
	free(e->src);
	free(e);
}

const char *sf_expr_source(const sf_expr *e)
{
	return e->src;
}

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
	quote_src(c->src, q, sizeof q);
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
