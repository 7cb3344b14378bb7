/*
 * json_internal.h - what the files of the JSON reader and writer share (only json_parse.c,
 * json_scalar.c and json_write.c include it; the interface is core/json.h): the parser state, the
 * error and position helpers of json_parse.c, the literal parsers of json_scalar.c, and its
 * "C"-locale number conversions the writer uses too.
 *
 * The parser is recursive descent over a bounded byte range. Recursion happens only for arrays and
 * objects and is capped at SF_JSON_MAX_DEPTH, so hostile input cannot exhaust the stack; the trees
 * it builds are therefore also at most that deep, which bounds sf_json_free and sf_json_write.
 * Positions are tracked incrementally (line, and column in characters).
 */
#ifndef SF_JSON_INTERNAL_H
#define SF_JSON_INTERNAL_H

#include <locale.h>
#include <stddef.h>

#include "core/json.h"

typedef struct parser {
	const unsigned char *s;
	size_t len;
	size_t pos;
	long long line, col; /* position of s[pos] (wide: a line may be longer than INT_MAX) */
	int depth;
	int allow_nonfinite;
	char *err;
	size_t errlen;
} parser;

/* Internal: never in a dynamic symbol table (solforge-inputs is linked with -rdynamic). */
#pragma GCC visibility push(hidden)

/* Advances over n ASCII bytes that are known not to be newlines. */
static inline void json_advance(parser *p, size_t n)
{
	p->pos += n;
	p->col += (long long)n;
}

/* ---- json_parse.c --------------------------------------------------------------------------- */

/* Writes "line L col C: <what>" for the given position into p->err; always returns NULL. */
sf_json *json_fail_at(parser *p, long long line, long long col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Reports "unexpected <thing here>[, expected <what>]" at the current position; returns NULL. */
sf_json *json_fail_unexpected(parser *p, const char *expected);

/* A zeroed node at (line, col), clamped to INT_MAX for the int fields of sf_json. */
sf_json *json_new_node(sf_json_type t, long long line, long long col);

/* ---- json_scalar.c -------------------------------------------------------------------------- */

/*
 * Parses a number at the current position per RFC 8259's grammar (-Infinity too when
 * p->allow_nonfinite). Fills num, and is_int/ival when the literal is a plain integer in int64
 * range. NULL with p->err written on an error.
 */
sf_json *json_parse_number(parser *p);

/*
 * Parses a string literal at the current position (which holds '"') into a NUL-terminated
 * heap string; returns 0 with *out and *outlen set, or -1 with p->err written.
 */
int json_parse_string_raw(parser *p, char **out, size_t *outlen);

/*
 * Switches this thread to the "C" numeric locale (so '.' is the decimal point for strtod and
 * snprintf whatever setlocale did); returns what to hand to json_numeric_locale_restore. Thread-safe.
 */
locale_t json_numeric_locale_enter(void);

/* Switches this thread back to the locale json_numeric_locale_enter returned. */
void json_numeric_locale_restore(locale_t old);

/*
 * strtod on buf[0..n) (ASCII digits, sign, '.', exponent) in the "C" locale, through a bounded
 * NUL-terminated copy (the text need not be terminated). Returns 0 and the value in *out, and
 * *overflow set when the magnitude is too large for a double; -1 if strtod did not consume
 * exactly the copy.
 */
int json_c_strtod(const char *buf, size_t n, double *out, int *overflow);

#pragma GCC visibility pop

#endif
