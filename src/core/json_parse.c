/*
 * json_parse.c - the strict RFC 8259 parser (see json.h, json_internal.h): errors and positions,
 * whitespace, the structure (values, arrays, objects with duplicate-key detection, literal words)
 * and the entry points; numbers and strings come from json_scalar.c. Also sf_json_free,
 * sf_json_get and sf_json_type_name.
 */
#include "core/json_internal.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sf_json *parse_value(parser *p);

/* Writes "line L col C: <what>" for the given position into p->err; always returns NULL. */
sf_json *json_fail_at(parser *p, long long line, long long col, const char *fmt, ...)
{
	if (!p->err || !p->errlen)
		return NULL;
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	sf_errf(p->err, p->errlen, "line %lld col %lld: %s", line, col, what);
	return NULL;
}

/*
 * Describes the byte at the current position for an error message ("end of input",
 * "character 'x'", "byte 0xNN") into buf of size n.
 */
static void describe_here(const parser *p, char *buf, size_t n)
{
	if (p->pos >= p->len) {
		snprintf(buf, n, "end of input");
		return;
	}
	unsigned c = p->s[p->pos];
	if (c >= 0x20 && c < 0x7f)
		snprintf(buf, n, "character '%c'", (int)c);
	else
		snprintf(buf, n, "byte 0x%02x", c);
}

/* Reports "unexpected <thing here>[, expected <what>]" at the current position. */
sf_json *json_fail_unexpected(parser *p, const char *expected)
{
	char here[32];
	describe_here(p, here, sizeof here);
	if (expected)
		return json_fail_at(p, p->line, p->col, "unexpected %s, expected %s", here, expected);
	return json_fail_at(p, p->line, p->col, "unexpected %s", here);
}

/* Skips JSON whitespace (space, tab, CR, LF), counting lines. */
static void skip_ws(parser *p)
{
	while (p->pos < p->len) {
		unsigned char c = p->s[p->pos];
		if (c == '\n') {
			p->pos++;
			p->line++;
			p->col = 1;
		} else if (c == ' ' || c == '\t' || c == '\r') {
			p->pos++;
			p->col++;
		} else {
			break;
		}
	}
}

/* A zeroed node at (line, col), clamped to INT_MAX for the int fields of sf_json. */
sf_json *json_new_node(sf_json_type t, long long line, long long col)
{
	sf_json *v = sf_xcalloc(1, sizeof *v);
	v->type = t;
	v->line = line > INT_MAX ? INT_MAX : (int)line;
	v->col = col > INT_MAX ? INT_MAX : (int)col;
	return v;
}

static void json_free(sf_json *v, int wipe)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		if (v->items)
			json_free(v->items[i], wipe);
		if (v->keys) {
			if (wipe)
				explicit_bzero(v->keys[i], strlen(v->keys[i]));
			free(v->keys[i]);
		}
	}
	free(v->items);
	free(v->keys);
	if (wipe && v->str)
		explicit_bzero(v->str, strlen(v->str));
	free(v->str);
	if (wipe)
		explicit_bzero(v, sizeof *v);
	free(v);
}

void sf_json_free(sf_json *v)
{
	json_free(v, 0);
}

void sf_json_free_wiped(sf_json *v)
{
	json_free(v, 1);
}
/* Error for a bare word that is not a JSON literal (e.g. True, nan, undefined). */
static sf_json *fail_word(parser *p)
{
	size_t e = p->pos;
	while (e < p->len && e - p->pos < 32 &&
	       ((p->s[e] >= 'a' && p->s[e] <= 'z') || (p->s[e] >= 'A' && p->s[e] <= 'Z') ||
		(p->s[e] >= '0' && p->s[e] <= '9') || p->s[e] == '_'))
		e++;
	if (e == p->pos)
		return json_fail_unexpected(p, "a value");
	const char *w = (const char *)p->s + p->pos;
	int n = (int)(e - p->pos);
	if (!p->allow_nonfinite && ((n == 3 && !memcmp(w, "NaN", 3)) || (n == 8 && !memcmp(w, "Infinity", 8))))
		return json_fail_at(p, p->line, p->col, "non-finite number '%.*s' is not allowed", n, w);
	return json_fail_at(p, p->line, p->col, "invalid literal '%.*s'", n, w);
}

/* True if the literal word w (length n) is at the current position and not followed by more
 * identifier characters. */
static int at_word(const parser *p, const char *w, size_t n)
{
	if (p->len - p->pos < n || memcmp(p->s + p->pos, w, n) != 0)
		return 0;
	if (p->pos + n < p->len) {
		unsigned c = p->s[p->pos + n];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')
			return 0;
	}
	return 1;
}

/* A small open-addressing set of key indices, to find duplicate keys in O(1) per key. */
typedef struct keyset {
	size_t *slot; /* index + 1; 0 = empty */
	size_t cap;
} keyset;

static uint64_t hash_str(const char *s)
{
	return sf_fnv1a(s, strlen(s), 0);
}

/*
 * Inserts keys[idx] into the set (sized for count keys); returns 1 if an equal key was already
 * present.
 */
static int keyset_add(keyset *ks, char **keys, size_t idx)
{
	if ((idx + 1) * 2 > ks->cap) {
		size_t ncap = ks->cap ? ks->cap * 2 : 16;
		free(ks->slot);
		ks->slot = sf_xcalloc(ncap, sizeof *ks->slot);
		ks->cap = ncap;
		for (size_t i = 0; i < idx; i++) {
			size_t h = (size_t)hash_str(keys[i]) & (ncap - 1);
			while (ks->slot[h])
				h = (h + 1) & (ncap - 1);
			ks->slot[h] = i + 1;
		}
	}
	size_t h = (size_t)hash_str(keys[idx]) & (ks->cap - 1);
	while (ks->slot[h]) {
		if (!strcmp(keys[ks->slot[h] - 1], keys[idx]))
			return 1;
		h = (h + 1) & (ks->cap - 1);
	}
	ks->slot[h] = idx + 1;
	return 0;
}

/* Parses '[' ... ']' at the current position. */
static sf_json *parse_array(parser *p)
{
	sf_json *v = json_new_node(SF_JSON_ARRAY, p->line, p->col);
	size_t cap = 0;
	if (++p->depth > SF_JSON_MAX_DEPTH) {
		json_fail_at(p, p->line, p->col, "nesting deeper than %d", SF_JSON_MAX_DEPTH);
		goto bad;
	}
	json_advance(p, 1);
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == ']') {
		json_advance(p, 1);
		p->depth--;
		return v;
	}
	for (;;) {
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ']') {
			json_fail_at(p, p->line, p->col, "trailing comma in array");
			goto bad;
		}
		sf_json *item = parse_value(p);
		if (!item)
			goto bad;
		if (v->n == cap) {
			cap = cap ? cap * 2 : 4;
			v->items = sf_xrealloc(v->items, cap * sizeof *v->items);
		}
		v->items[v->n++] = item;
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			json_advance(p, 1);
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == ']') {
			json_advance(p, 1);
			break;
		}
		json_fail_unexpected(p, "',' or ']'");
		goto bad;
	}
	p->depth--;
	return v;
bad:
	sf_json_free(v);
	return NULL;
}

/* Parses '{' ... '}' at the current position. */
static sf_json *parse_object(parser *p)
{
	sf_json *v = json_new_node(SF_JSON_OBJECT, p->line, p->col);
	size_t cap = 0;
	keyset ks = { 0 };
	if (++p->depth > SF_JSON_MAX_DEPTH) {
		json_fail_at(p, p->line, p->col, "nesting deeper than %d", SF_JSON_MAX_DEPTH);
		goto bad;
	}
	json_advance(p, 1);
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == '}') {
		json_advance(p, 1);
		p->depth--;
		return v;
	}
	for (;;) {
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == '}') {
			json_fail_at(p, p->line, p->col, "trailing comma in object");
			goto bad;
		}
		if (p->pos >= p->len || p->s[p->pos] != '"') {
			json_fail_unexpected(p, "a string key");
			goto bad;
		}
		long long kline = p->line, kcol = p->col;
		char *key;
		size_t klen;
		if (json_parse_string_raw(p, &key, &klen) != 0)
			goto bad;
		if (v->n == cap) {
			cap = cap ? cap * 2 : 4;
			v->items = sf_xrealloc(v->items, cap * sizeof *v->items);
			v->keys = sf_xrealloc(v->keys, cap * sizeof *v->keys);
		}
		v->keys[v->n] = key;
		v->items[v->n] = NULL;
		if (keyset_add(&ks, v->keys, v->n)) {
			/* the key may be long or hold odd characters: show a sanitized prefix */
			char shown[64];
			size_t k = 0;
			for (size_t i = 0; i < klen && k < 40; i++) {
				unsigned char c = (unsigned char)key[i];
				shown[k++] = (char)(c < 0x20 || c == 0x7f ? '?' : c);
			}
			shown[k] = 0;
			json_fail_at(p, kline, kcol, "duplicate key '%s%s'", shown, klen > k ? "..." : "");
			free(key);
			goto bad;
		}
		v->n++; /* the key is owned by v now; its value slot is NULL until parsed */
		skip_ws(p);
		if (p->pos >= p->len || p->s[p->pos] != ':') {
			json_fail_unexpected(p, "':'");
			goto bad;
		}
		json_advance(p, 1);
		skip_ws(p);
		sf_json *item = parse_value(p);
		if (!item)
			goto bad;
		v->items[v->n - 1] = item;
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			json_advance(p, 1);
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == '}') {
			json_advance(p, 1);
			break;
		}
		json_fail_unexpected(p, "',' or '}'");
		goto bad;
	}
	free(ks.slot);
	p->depth--;
	return v;
bad:
	free(ks.slot);
	sf_json_free(v);
	return NULL;
}

/* Parses one value at the current position (whitespace already skipped). */
static sf_json *parse_value(parser *p)
{
	if (p->pos >= p->len)
		return json_fail_unexpected(p, "a value");
	long long line = p->line, col = p->col;
	unsigned c = p->s[p->pos];
	switch (c) {
	case '{':
		return parse_object(p);
	case '[':
		return parse_array(p);
	case '"': {
		char *str;
		size_t len;
		if (json_parse_string_raw(p, &str, &len) != 0)
			return NULL;
		sf_json *v = json_new_node(SF_JSON_STRING, line, col);
		v->str = str;
		v->len = len;
		return v;
	}
	case '-':
	case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		return json_parse_number(p);
	default:
		break;
	}
	if (at_word(p, "true", 4) || at_word(p, "false", 5)) {
		sf_json *v = json_new_node(SF_JSON_BOOL, line, col);
		v->boolean = c == 't';
		json_advance(p, v->boolean ? 4 : 5);
		return v;
	}
	if (at_word(p, "null", 4)) {
		json_advance(p, 4);
		return json_new_node(SF_JSON_NULL, line, col);
	}
	if (p->allow_nonfinite && (at_word(p, "NaN", 3) || at_word(p, "Infinity", 8))) {
		sf_json *v = json_new_node(SF_JSON_NUMBER, line, col);
		v->num = c == 'N' ? NAN : INFINITY;
		json_advance(p, c == 'N' ? 3 : 8);
		return v;
	}
	return fail_word(p);
}

sf_json *sf_json_parse_ex(const char *text, size_t len, int allow_nonfinite, char *err, size_t errlen)
{
	parser p = { (const unsigned char *)text, len, 0, 1, 1, 0, allow_nonfinite, err, errlen };
	if (!text && len) {
		sf_errf(err, errlen, "line 1 col 1: no input");
		return NULL;
	}
	if (!text)
		p.s = (const unsigned char *)"";
	skip_ws(&p);
	sf_json *v = parse_value(&p);
	if (!v)
		return NULL;
	skip_ws(&p);
	if (p.pos < p.len) {
		sf_json_free(v);
		return json_fail_unexpected(&p, "end of input after the value");
	}
	return v;
}

sf_json *sf_json_parse(const char *text, size_t len, char *err, size_t errlen)
{
	return sf_json_parse_ex(text, len, 0, err, errlen);
}

const sf_json *sf_json_get(const sf_json *obj, const char *key)
{
	if (!obj || obj->type != SF_JSON_OBJECT || !key)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (!strcmp(obj->keys[i], key))
			return obj->items[i];
	return NULL;
}

const char *sf_json_type_name(sf_json_type t)
{
	switch (t) {
	case SF_JSON_NULL: return "null";
	case SF_JSON_BOOL: return "boolean";
	case SF_JSON_NUMBER: return "number";
	case SF_JSON_STRING: return "string";
	case SF_JSON_ARRAY: return "array";
	case SF_JSON_OBJECT: return "object";
	}
	return "unknown";
}
