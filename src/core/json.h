/*
 * json.h - a strict RFC 8259 JSON parser into an owned tree, plus a compact writer.
 *
 * Strict means: one value with optional whitespace around it and nothing else; no comments,
 * trailing commas, leading zeros, single quotes, raw control characters or invalid UTF-8;
 * duplicate object keys and "\u0000" are errors; containers nest at most SF_JSON_MAX_DEPTH deep.
 * Numbers are read locale-independently ('.' is always the decimal point); a number whose
 * magnitude overflows a double is an error. Error messages are one lowercase line of the form
 * "line L col C: <what>", where L and C are 1-based and C counts characters (UTF-8 sequences) of
 * that line, a tab counting as one.
 */
#ifndef SF_JSON_H
#define SF_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "core/util.h"

#define SF_JSON_MAX_DEPTH 256

typedef enum sf_json_type {
	SF_JSON_NULL,
	SF_JSON_BOOL,
	SF_JSON_NUMBER,
	SF_JSON_STRING,
	SF_JSON_ARRAY,
	SF_JSON_OBJECT
} sf_json_type;

typedef struct sf_json {
	sf_json_type type;
	int line, col;          /* 1-based position of the value's first character, for error messages */
	int boolean;
	double num;             /* numbers */
	int is_int;             /* number literal had no fraction/exponent and fits int64 */
	int64_t ival;           /* exact value when is_int */
	char *str;              /* strings: UTF-8, NUL-terminated, never containing NUL; else NULL */
	size_t len;             /* strings: byte length without the terminator */
	struct sf_json **items; /* array items or object values, source order */
	char **keys;            /* object keys, source order (NUL-terminated UTF-8) */
	size_t n;               /* number of items (and of keys, for objects) */
} sf_json;

/*
 * Parses text[0..len) (need not be NUL-terminated) into a tree the caller frees with
 * sf_json_free. Returns NULL and writes "line L col C: <what>" into err on any error.
 */
sf_json *sf_json_parse(const char *text, size_t len, char *err, size_t errlen);

/*
 * As sf_json_parse; when allow_nonfinite is non-zero the bare literals NaN, Infinity and
 * -Infinity are also accepted as numbers (SOL-ExecBench traces may contain them). They parse to
 * SF_JSON_NUMBER nodes with is_int == 0.
 */
sf_json *sf_json_parse_ex(const char *text, size_t len, int allow_nonfinite, char *err, size_t errlen);

/* Frees a tree from sf_json_parse*; NULL is fine. */
void sf_json_free(sf_json *v);
/* sf_json_free that first zeroes every string, key and node (a tree that held secrets: the runner's job, whose seeds
 * must not stay in freed heap the candidate can read). */
void sf_json_free_wiped(sf_json *v);

/* The value of `key` in an object; NULL if obj is NULL, not an object, or has no such key. */
const sf_json *sf_json_get(const sf_json *obj, const char *key);

/* "null", "boolean", "number", "string", "array", "object" ("unknown" for anything else). */
const char *sf_json_type_name(sf_json_type t);

/*
 * Appends v to b as compact JSON that sf_json_parse_ex reads back to an equal tree: integers
 * (is_int) exactly, other finite numbers with the shortest round-tripping digits and always a
 * '.' or an exponent (so they stay non-integers), non-finite numbers as the bare literals NaN,
 * Infinity, -Infinity (only readable with allow_nonfinite). Keys keep their order.
 */
void sf_json_write(sf_buf *b, const sf_json *v);

#endif
