/*
 * expr_internal.h - what the files of the axis expression language share (only expr_lex.c,
 * expr_parse.c and expr_eval.c include it; the interface is core/expr.h): the token and tree types,
 * the parser state, and the lexer's functions the parser calls. expr_lex.c tokenizes and reports syntax errors, expr_parse.c builds
 * the tree, expr_eval.c evaluates it and lists its identifiers.
 *
 * Safety against hostile input: the parser counts its nesting (parentheses, unary operators,
 * exponents, calls) and every node records its height, both capped, so parsing, evaluation,
 * identifier listing and freeing all recurse a bounded number of levels.
 */
#ifndef SF_EXPR_INTERNAL_H
#define SF_EXPR_INTERNAL_H

#include <stddef.h>

#include "core/expr.h"

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

/* Internal: never in a dynamic symbol table (solforge-inputs is linked with -rdynamic). */
#pragma GCC visibility push(hidden)

/*
 * Copies src into out (size n >= 8) for quoting in a one-line message: control characters become
 * '?', and text beyond ~120 bytes is cut with "...".
 */
void expr_quote_src(const char *src, char *out, size_t n);

/* Writes "in 'SRC': at column C: <what>" into p->err; marks the parse failed (first error wins). */
void expr_perr(parser *p, size_t col0, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Advances p->tok to the next token; returns 0, or -1 on a lexical error (written to p->err). Once
 * the parse failed, returns -1 at once. */
int expr_next(parser *p);

/* Reports that the current token is not what the grammar allows here ("unexpected ..., expected
 * <expected>"; expected may be NULL). */
void expr_unexpected(parser *p, const char *expected);

#pragma GCC visibility pop

#endif
