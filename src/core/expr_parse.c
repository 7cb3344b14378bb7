/*
 * expr_parse.c - the axis expression language's recursive-descent parser (see expr.h): tokens from
 * expr_lex.c into the tree of expr_internal.h, with the nesting and the tree's height capped;
 * sf_expr_parse, sf_expr_free, sf_expr_source.
 */
#include "core/expr_internal.h"
#include "core/util.h"

#include <stdlib.h>
#include <string.h>

/* The functions: name and argument counts, indexed by fn_id. */
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
		expr_perr(p, col0, "expression too deep (more than %d levels)", SF_EXPR_MAX_HEIGHT);
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
		expr_perr(p, p->tok.start, "expression nested too deeply (more than %d levels)", SF_EXPR_MAX_NESTING);
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
		expr_perr(p, name_start, "unknown function '%.*s'", (int)(name_len > 40 ? 40 : name_len),
			  p->src + name_start);
		return NULL;
	}
	nodelist args = { 0 };
	if (enter(p) != 0 || expr_next(p) != 0)
		return NULL;
	if (p->tok.kind != T_RPAREN) {
		for (;;) {
			node *a = parse_or(p);
			if (!a)
				goto bad;
			list_push(&args, a);
			if (p->tok.kind == T_COMMA) {
				if (expr_next(p) != 0)
					goto bad;
				continue;
			}
			if (p->tok.kind == T_RPAREN)
				break;
			expr_unexpected(p, "',' or ')'");
			goto bad;
		}
	}
	if (expr_next(p) != 0)
		goto bad;
	p->nesting--;
	if (args.n < fns[fn].min_args || (fns[fn].max_args >= 0 && args.n > fns[fn].max_args)) {
		if (fns[fn].min_args == fns[fn].max_args)
			expr_perr(p, name_start, "%s() takes %d argument%s, got %d", fns[fn].name, fns[fn].min_args,
				  fns[fn].min_args == 1 ? "" : "s", args.n);
		else
			expr_perr(p, name_start, "%s() takes at least %d arguments, got %d", fns[fn].name,
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
		if (expr_next(p) != 0)
			return NULL;
		node *n = mk(p, N_NUM, t.start, NULL, 0);
		n->val = t.num;
		return n;
	}
	if (t.kind == T_IDENT) {
		if (expr_next(p) != 0)
			return NULL;
		if (p->tok.kind == T_LPAREN)
			return parse_call(p, t.start, t.len);
		node *n = mk(p, N_VAR, t.start, NULL, 0);
		n->name = sf_xstrndup(p->src + t.start, t.len);
		return n;
	}
	if (t.kind == T_LPAREN) {
		if (enter(p) != 0 || expr_next(p) != 0)
			return NULL;
		node *n = parse_or(p);
		if (!n)
			return NULL;
		if (p->tok.kind != T_RPAREN) {
			expr_unexpected(p, "')'");
			free_node(n);
			return NULL;
		}
		if (expr_next(p) != 0) {
			free_node(n);
			return NULL;
		}
		p->nesting--;
		return n;
	}
	expr_unexpected(p, "a number, a name or '('");
	return NULL;
}

/* power: primary ['**' factor]   (right associative; the exponent may carry a unary sign) */
static node *parse_power(parser *p)
{
	node *base = parse_primary(p);
	if (!base || p->tok.kind != T_POW)
		return base;
	size_t col0 = p->tok.start;
	if (enter(p) != 0 || expr_next(p) != 0) {
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
	if (enter(p) != 0 || expr_next(p) != 0)
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
		node *right = expr_next(p) == 0 ? parse_factor(p) : NULL;
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
		node *right = expr_next(p) == 0 ? parse_term(p) : NULL;
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
		node *b = expr_next(p) == 0 ? parse_sum(p) : NULL;
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
	if (enter(p) != 0 || expr_next(p) != 0)
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
		node *right = expr_next(p) == 0 ? parse_not(p) : NULL;
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
		node *right = expr_next(p) == 0 ? parse_and(p) : NULL;
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
	if (expr_next(&p) != 0)
		return NULL;
	node *root = parse_or(&p);
	if (!root)
		return NULL;
	if (p.tok.kind != T_END) {
		expr_unexpected(&p, p.tok.kind == T_RPAREN ? "end of expression (unbalanced ')')" : "an operator");
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
