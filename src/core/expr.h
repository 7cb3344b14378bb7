/*
 * expr.h - the axis expression language of definitions: parse once, evaluate with axis values.
 *
 * Syntax and semantics follow Python on doubles (SOL-ExecBench's `+ - * / // % **`, parentheses,
 * unary + and -), plus comparisons `== != < <= > >=` (chained as in Python: a < b < c means
 * a < b and b < c; each yields 1 or 0), `and` / `or` (short-circuit, yielding an operand as in
 * Python), `not`, numeric literals (1, 0.5, .5, 1e-5), identifiers [A-Za-z_][A-Za-z0-9_]* (axis
 * names) and the functions sqrt(x) min(a,...) max(a,...) cdiv(a,b) abs(x) ceil(x) floor(x) log2(x).
 * Precedence, lowest first: or; and; not; comparisons; + -; * / // %; unary + -; ** (right
 * associative, so -2**2 == -4 and 2**-1 == 0.5).
 *
 * `/` is true division, `//` floor division and `%` takes the sign of the divisor, both computed
 * as Python does for floats. Evaluation errors (one line, naming the expression): division or
 * modulo by zero, an unknown axis, sqrt of a negative number, log2 of a non-positive number, 0 to
 * a negative power, a negative number to a fractional power, and any result that is not finite
 * (overflow). Expressions come from untrusted files: nesting is limited (an error, never a crash).
 */
#ifndef SF_EXPR_H
#define SF_EXPR_H

#include <stddef.h>

/* Limits: nesting of parentheses/unary operators/calls while parsing, and height of the tree. */
#define SF_EXPR_MAX_NESTING 200
#define SF_EXPR_MAX_HEIGHT 1000

typedef struct sf_expr sf_expr;

/* Looks up an axis value: returns 0 and writes *out when `name` is known, non-zero otherwise. */
typedef int (*sf_expr_lookup)(void *ctx, const char *name, double *out);

/*
 * Parses src into an expression the caller frees with sf_expr_free. Returns NULL on a syntax
 * error with err = "in 'SRC': at column C: <what>" (C is a 1-based byte column in src).
 */
sf_expr *sf_expr_parse(const char *src, char *err, size_t errlen);

/*
 * Evaluates e, looking identifiers up with lookup(ctx, name, &v) (lookup may be NULL when the
 * expression has no identifiers). Returns 0 with *out set, or -1 with a one-line error, e.g.
 * "unknown axis 'X' in 'SRC'" or "division by zero in 'SRC'".
 */
int sf_expr_eval(const sf_expr *e, sf_expr_lookup lookup, void *ctx, double *out, char *err, size_t errlen);

/* sf_expr_parse + sf_expr_eval + sf_expr_free. */
int sf_expr_eval_str(const char *src, sf_expr_lookup lookup, void *ctx, double *out, char *err, size_t errlen);

/*
 * The identifiers e uses (function names excluded), each once, in first-use (source) order.
 * Writes a heap array of *n heap strings to *names (NULL when *n == 0); the caller frees each
 * string and the array. Returns 0.
 */
int sf_expr_idents(const sf_expr *e, char ***names, int *n);

/* The source text e was parsed from (owned by e). */
const char *sf_expr_source(const sf_expr *e);

/* Frees e; NULL is fine. */
void sf_expr_free(sf_expr *e);

#endif
