/*
 * json.c - strict RFC 8259 JSON parsing and compact writing (see json.h).
 *
 * A recursive-descent parser over a bounded byte range. Recursion happens only for arrays and
 * objects and is capped at SF_JSON_MAX_DEPTH, so hostile input cannot exhaust the stack; the
 * trees it builds are therefore also at most that deep, which bounds sf_json_free and
 * sf_json_write. Positions are tracked incrementally (line, and column in characters).
 */
#include "core/json.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static sf_json *parse_value(parser *p);

/* Writes "line L col C: <what>" for the given position into p->err; always returns NULL. */
static sf_json *fail_at(parser *p, long long line, long long col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static sf_json *fail_at(parser *p, long long line, long long col, const char *fmt, ...)
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
static sf_json *fail_unexpected(parser *p, const char *expected)
{
	char here[32];
	describe_here(p, here, sizeof here);
	if (expected)
		return fail_at(p, p->line, p->col, "unexpected %s, expected %s", here, expected);
	return fail_at(p, p->line, p->col, "unexpected %s", here);
}

/* Advances over n ASCII bytes that are known not to be newlines. */
static void advance(parser *p, size_t n)
{
	p->pos += n;
	p->col += (long long)n;
}

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
static sf_json *new_node(sf_json_type t, long long line, long long col)
{
	sf_json *v = sf_xcalloc(1, sizeof *v);
	v->type = t;
	v->line = line > INT_MAX ? INT_MAX : (int)line;
	v->col = col > INT_MAX ? INT_MAX : (int)col;
	return v;
}

void sf_json_free(sf_json *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		if (v->items)
			sf_json_free(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	free(v);
}

static locale_t c_loc;
static pthread_once_t c_loc_once = PTHREAD_ONCE_INIT;

static void c_loc_init(void)
{
	c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/*
 * Switches this thread to the "C" numeric locale (so '.' is the decimal point for strtod and
 * snprintf whatever setlocale did); returns what to hand to numeric_locale_restore. Thread-safe.
 */
static locale_t numeric_locale_enter(void)
{
	pthread_once(&c_loc_once, c_loc_init);
	return c_loc ? uselocale(c_loc) : (locale_t)0;
}

static void numeric_locale_restore(locale_t old)
{
	if (old)
		uselocale(old);
}

/*
 * strtod on buf[0..n) (ASCII digits, sign, '.', exponent) in the "C" locale, through a bounded
 * NUL-terminated copy (the text need not be terminated). Returns 0 and the value in *out, and
 * *overflow set when the magnitude is too large for a double; -1 if strtod did not consume
 * exactly the copy.
 */
static int c_strtod(const char *buf, size_t n, double *out, int *overflow)
{
	char small[128];
	char *tmp = n < sizeof small ? small : sf_xmalloc(n + 1);
	memcpy(tmp, buf, n);
	tmp[n] = 0;
	char *end;
	locale_t old = numeric_locale_enter();
	errno = 0;
	double v = strtod(tmp, &end);
	int range = errno == ERANGE;
	numeric_locale_restore(old);
	int ok = end == tmp + n;
	*overflow = range && isinf(v);
	if (tmp != small)
		free(tmp);
	*out = v;
	return ok ? 0 : -1;
}

/*
 * Parses a number at the current position per RFC 8259's grammar. Fills num, and is_int/ival
 * when the literal is a plain integer in int64 range.
 */
static sf_json *parse_number(parser *p)
{
	long long line = p->line, col = p->col;
	size_t start = p->pos, i = p->pos;
	const unsigned char *s = p->s;
	int neg = 0, plain = 1;
	if (i < p->len && s[i] == '-') {
		neg = 1;
		i++;
	}
	if (i >= p->len || s[i] < '0' || s[i] > '9') {
		if (neg && p->len - i >= 8 && !memcmp(s + i, "Infinity", 8)) {
			if (!p->allow_nonfinite)
				return fail_at(p, line, col, "non-finite number '-Infinity' is not allowed");
			sf_json *v = new_node(SF_JSON_NUMBER, line, col);
			v->num = -INFINITY;
			advance(p, 9);
			return v;
		}
		advance(p, i - start);
		return fail_unexpected(p, "a digit");
	}
	if (s[i] == '0' && i + 1 < p->len && s[i + 1] >= '0' && s[i + 1] <= '9')
		return fail_at(p, line, col, "leading zero in number");
	size_t int_start = i;
	while (i < p->len && s[i] >= '0' && s[i] <= '9')
		i++;
	size_t int_end = i;
	if (i < p->len && s[i] == '.') {
		plain = 0;
		i++;
		if (i >= p->len || s[i] < '0' || s[i] > '9') {
			advance(p, i - start);
			return fail_unexpected(p, "a digit after '.'");
		}
		while (i < p->len && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
		plain = 0;
		i++;
		if (i < p->len && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= p->len || s[i] < '0' || s[i] > '9') {
			advance(p, i - start);
			return fail_unexpected(p, "a digit in the exponent");
		}
		while (i < p->len && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	double d;
	int overflow;
	if (c_strtod((const char *)s + start, i - start, &d, &overflow) != 0)
		return fail_at(p, line, col, "invalid number");
	if (overflow)
		return fail_at(p, line, col, "number out of range");
	sf_json *v = new_node(SF_JSON_NUMBER, line, col);
	v->num = d;
	if (plain) {
		/* accumulate as a negative magnitude so INT64_MIN fits */
		int64_t acc = 0;
		int fits = 1;
		for (size_t k = int_start; k < int_end && fits; k++) {
			int digit = s[k] - '0';
			if (acc < (INT64_MIN + digit) / 10)
				fits = 0;
			else
				acc = acc * 10 - digit;
		}
		if (fits && !neg && acc == INT64_MIN)
			fits = 0;
		if (fits) {
			v->is_int = 1;
			v->ival = neg ? acc : -acc;
		}
	}
	advance(p, i - start);
	return v;
}

static int hex4(const unsigned char *s, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned c = s[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = v * 16 + d;
	}
	*out = v;
	return 0;
}

static void put_utf8(sf_buf *b, unsigned cp)
{
	unsigned char u[4];
	size_t n;
	if (cp < 0x80) {
		u[0] = (unsigned char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (unsigned char)(0xc0 | (cp >> 6));
		u[1] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (unsigned char)(0xe0 | (cp >> 12));
		u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (unsigned char)(0xf0 | (cp >> 18));
		u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	sf_buf_append(b, u, n);
}

/*
 * Length of the well-formed UTF-8 sequence starting at s[0] (n bytes available), per RFC 3629
 * (no overlongs, no surrogates, nothing above U+10FFFF); 0 if it is not well formed.
 */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t need;
	unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (n < need || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < need; k++)
		if (s[k] < 0x80 || s[k] > 0xbf)
			return 0;
	return need;
}

/*
 * Parses a string literal at the current position (which holds '"') into a NUL-terminated
 * heap string; returns 0 with *out and *outlen set, or -1 with p->err written.
 */
static int parse_string_raw(parser *p, char **out, size_t *outlen)
{
	long long line = p->line, col = p->col;
	const unsigned char *s = p->s;
	sf_buf b = { 0 };
	advance(p, 1);
	for (;;) {
		if (p->pos >= p->len) {
			fail_at(p, line, col, "unterminated string");
			goto bad;
		}
		unsigned c = s[p->pos];
		if (c == '"') {
			advance(p, 1);
			break;
		}
		if (c < 0x20) {
			fail_at(p, p->line, p->col, "control character 0x%02x in string (must be escaped)", c);
			goto bad;
		}
		if (c == '\\') {
			long long eline = p->line, ecol = p->col;
			if (p->pos + 1 >= p->len) {
				fail_at(p, line, col, "unterminated string");
				goto bad;
			}
			unsigned e = s[p->pos + 1];
			const char *simple = NULL;
			switch (e) {
			case '"': simple = "\""; break;
			case '\\': simple = "\\"; break;
			case '/': simple = "/"; break;
			case 'b': simple = "\b"; break;
			case 'f': simple = "\f"; break;
			case 'n': simple = "\n"; break;
			case 'r': simple = "\r"; break;
			case 't': simple = "\t"; break;
			case 'u': break;
			default:
				if (e >= 0x20 && e < 0x7f)
					fail_at(p, eline, ecol, "invalid escape '\\%c' in string", (int)e);
				else
					fail_at(p, eline, ecol, "invalid escape in string");
				goto bad;
			}
			if (simple) {
				sf_buf_append(&b, simple, 1);
				advance(p, 2);
				continue;
			}
			unsigned cp;
			if (p->len - p->pos < 6 || hex4(s + p->pos + 2, &cp) != 0) {
				fail_at(p, eline, ecol, "invalid \\u escape (need 4 hex digits)");
				goto bad;
			}
			if (cp >= 0xdc00 && cp <= 0xdfff) {
				fail_at(p, eline, ecol, "unpaired low surrogate \\u%04x in string", cp);
				goto bad;
			}
			if (cp >= 0xd800 && cp <= 0xdbff) {
				unsigned lo;
				if (p->len - p->pos < 12 || s[p->pos + 6] != '\\' || s[p->pos + 7] != 'u' ||
				    hex4(s + p->pos + 8, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff) {
					fail_at(p, eline, ecol, "unpaired high surrogate \\u%04x in string", cp);
					goto bad;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				advance(p, 6);
			}
			if (cp == 0) {
				fail_at(p, eline, ecol, "\\u0000 is not allowed in strings");
				goto bad;
			}
			put_utf8(&b, cp);
			advance(p, 6);
			continue;
		}
		/* a run of plain bytes: validate UTF-8 and copy */
		size_t run = p->pos;
		while (run < p->len) {
			unsigned d = s[run];
			if (d == '"' || d == '\\' || d < 0x20)
				break;
			size_t k = utf8_seq(s + run, p->len - run);
			if (!k) {
				sf_buf_append(&b, s + p->pos, run - p->pos);
				p->pos = run;
				fail_at(p, p->line, p->col, "invalid utf-8 in string");
				goto bad;
			}
			run += k;
			p->col++;
		}
		sf_buf_append(&b, s + p->pos, run - p->pos);
		p->pos = run;
	}
	*outlen = b.len;
	*out = sf_buf_take(&b);
	return 0;
bad:
	sf_buf_free(&b);
	return -1;
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
		return fail_unexpected(p, "a value");
	const char *w = (const char *)p->s + p->pos;
	int n = (int)(e - p->pos);
	if (!p->allow_nonfinite && ((n == 3 && !memcmp(w, "NaN", 3)) || (n == 8 && !memcmp(w, "Infinity", 8))))
		return fail_at(p, p->line, p->col, "non-finite number '%.*s' is not allowed", n, w);
	return fail_at(p, p->line, p->col, "invalid literal '%.*s'", n, w);
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
	sf_json *v = new_node(SF_JSON_ARRAY, p->line, p->col);
	size_t cap = 0;
	if (++p->depth > SF_JSON_MAX_DEPTH) {
		fail_at(p, p->line, p->col, "nesting deeper than %d", SF_JSON_MAX_DEPTH);
		goto bad;
	}
	advance(p, 1);
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == ']') {
		advance(p, 1);
		p->depth--;
		return v;
	}
	for (;;) {
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ']') {
			fail_at(p, p->line, p->col, "trailing comma in array");
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
			advance(p, 1);
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == ']') {
			advance(p, 1);
			break;
		}
		fail_unexpected(p, "',' or ']'");
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
	sf_json *v = new_node(SF_JSON_OBJECT, p->line, p->col);
	size_t cap = 0;
	keyset ks = { 0 };
	if (++p->depth > SF_JSON_MAX_DEPTH) {
		fail_at(p, p->line, p->col, "nesting deeper than %d", SF_JSON_MAX_DEPTH);
		goto bad;
	}
	advance(p, 1);
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == '}') {
		advance(p, 1);
		p->depth--;
		return v;
	}
	for (;;) {
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == '}') {
			fail_at(p, p->line, p->col, "trailing comma in object");
			goto bad;
		}
		if (p->pos >= p->len || p->s[p->pos] != '"') {
			fail_unexpected(p, "a string key");
			goto bad;
		}
		long long kline = p->line, kcol = p->col;
		char *key;
		size_t klen;
		if (parse_string_raw(p, &key, &klen) != 0)
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
			fail_at(p, kline, kcol, "duplicate key '%s%s'", shown, klen > k ? "..." : "");
			free(key);
			goto bad;
		}
		v->n++; /* the key is owned by v now; its value slot is NULL until parsed */
		skip_ws(p);
		if (p->pos >= p->len || p->s[p->pos] != ':') {
			fail_unexpected(p, "':'");
			goto bad;
		}
		advance(p, 1);
		skip_ws(p);
		sf_json *item = parse_value(p);
		if (!item)
			goto bad;
		v->items[v->n - 1] = item;
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			advance(p, 1);
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == '}') {
			advance(p, 1);
			break;
		}
		fail_unexpected(p, "',' or '}'");
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
		return fail_unexpected(p, "a value");
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
		if (parse_string_raw(p, &str, &len) != 0)
			return NULL;
		sf_json *v = new_node(SF_JSON_STRING, line, col);
		v->str = str;
		v->len = len;
		return v;
	}
	case '-':
	case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		return parse_number(p);
	default:
		break;
	}
	if (at_word(p, "true", 4) || at_word(p, "false", 5)) {
		sf_json *v = new_node(SF_JSON_BOOL, line, col);
		v->boolean = c == 't';
		advance(p, v->boolean ? 4 : 5);
		return v;
	}
	if (at_word(p, "null", 4)) {
		advance(p, 4);
		return new_node(SF_JSON_NULL, line, col);
	}
	if (p->allow_nonfinite && (at_word(p, "NaN", 3) || at_word(p, "Infinity", 8))) {
		sf_json *v = new_node(SF_JSON_NUMBER, line, col);
		v->num = c == 'N' ? NAN : INFINITY;
		advance(p, c == 'N' ? 3 : 8);
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
		return fail_unexpected(&p, "end of input after the value");
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

/* Formats d with %.{prec}g in the "C" locale into out; returns 1 if it reads back exactly. */
static int format_g(char out[64], int prec, double d)
{
	locale_t old = numeric_locale_enter();
	int k = snprintf(out, 64, "%.*g", prec, d); /* at most ~24 bytes for prec <= 17 */
	numeric_locale_restore(old);
	if (k < 0 || k >= 64)
		return 0;
	double back;
	int overflow;
	return c_strtod(out, strlen(out), &back, &overflow) == 0 && back == d;
}

/*
 * Appends a finite non-integer double with the fewest significant digits that read back
 * exactly, '.' as the decimal point whatever the locale, and ".0" added when the digits alone
 * would read back as an integer. If p digits read back, p + 1 do too (rounding to p + 1 digits
 * is at least as close), so the fewest are found by bisection over 1..17. Shortcut for normal
 * numbers: a p-digit decimal that reads back lies within half an ulp of d (< 1.2e-16 relative),
 * closer than half the spacing of 15-digit decimals (> 5e-16 relative), so when any p <= 15
 * works, %.15g (which drops trailing zeros) prints exactly that decimal. Subnormals have fewer
 * bits, so they take the bisection.
 */
static void write_double(sf_buf *b, double d)
{
	char out[64];
	int prec;
	if (fabs(d) >= DBL_MIN) {
		prec = 15;
		while (prec < 17 && !format_g(out, prec, d))
			prec++;
	} else {
		int lo = 1, hi = 17;
		while (lo < hi) {
			int mid = (lo + hi) / 2;
			if (format_g(out, mid, d))
				hi = mid;
			else
				lo = mid + 1;
		}
		prec = lo;
	}
	format_g(out, prec, d);
	sf_buf_puts(b, out);
	if (!strpbrk(out, ".eE"))
		sf_buf_puts(b, ".0");
}

/* Appends s[0..n) as a JSON string literal; control characters and DEL escaped. */
static void write_str(sf_buf *b, const char *s, size_t n)
{
	sf_buf_append(b, "\"", 1);
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = NULL;
		char u[8];
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		default:
			if (c < 0x20 || c == 0x7f) {
				snprintf(u, sizeof u, "\\u%04x", c);
				esc = u;
			}
		}
		if (esc) {
			sf_buf_append(b, s + run, i - run);
			sf_buf_puts(b, esc);
			run = i + 1;
		}
	}
	sf_buf_append(b, s + run, n - run);
	sf_buf_append(b, "\"", 1);
}

void sf_json_write(sf_buf *b, const sf_json *v)
{
	switch (v->type) {
	case SF_JSON_NULL:
		sf_buf_puts(b, "null");
		break;
	case SF_JSON_BOOL:
		sf_buf_puts(b, v->boolean ? "true" : "false");
		break;
	case SF_JSON_NUMBER:
		if (v->is_int) {
			if (v->ival == 0 && signbit(v->num))
				sf_buf_puts(b, "-0");
			else
				sf_buf_printf(b, "%" PRId64, v->ival);
		} else if (isnan(v->num)) {
			sf_buf_puts(b, "NaN");
		} else if (isinf(v->num)) {
			sf_buf_puts(b, v->num > 0 ? "Infinity" : "-Infinity");
		} else {
			write_double(b, v->num);
		}
		break;
	case SF_JSON_STRING:
		write_str(b, v->str ? v->str : "", v->str ? v->len : 0);
		break;
	case SF_JSON_ARRAY:
		sf_buf_puts(b, "[");
		for (size_t i = 0; i < v->n; i++) {
			if (i)
				sf_buf_puts(b, ",");
			sf_json_write(b, v->items[i]);
		}
		sf_buf_puts(b, "]");
		break;
	case SF_JSON_OBJECT:
		sf_buf_puts(b, "{");
		for (size_t i = 0; i < v->n; i++) {
			if (i)
				sf_buf_puts(b, ",");
			write_str(b, v->keys[i], strlen(v->keys[i]));
			sf_buf_puts(b, ":");
			sf_json_write(b, v->items[i]);
		}
		sf_buf_puts(b, "}");
		break;
	}
}
