/*
 * json_scalar.c - the JSON parser's literals (see json.h, json_internal.h): numbers (RFC 8259's
 * grammar, read with strtod in the "C" locale whatever setlocale did, exact int64 when plain) and
 * strings (escapes, surrogate pairs, UTF-8 validated per RFC 3629); the locale switch and strtod
 * wrapper the writer uses too.
 */
#include "core/json_internal.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static locale_t c_loc;
static pthread_once_t c_loc_once = PTHREAD_ONCE_INIT;

static void c_loc_init(void)
{
	c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/*
 * Switches this thread to the "C" numeric locale (so '.' is the decimal point for strtod and
 * snprintf whatever setlocale did); returns what to hand to json_numeric_locale_restore. Thread-safe.
 */
locale_t json_numeric_locale_enter(void)
{
	pthread_once(&c_loc_once, c_loc_init);
	return c_loc ? uselocale(c_loc) : (locale_t)0;
}

/* Switches this thread back to the locale json_numeric_locale_enter returned. */
void json_numeric_locale_restore(locale_t old)
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
int json_c_strtod(const char *buf, size_t n, double *out, int *overflow)
{
	char small[128];
	char *tmp = n < sizeof small ? small : sf_xmalloc(n + 1);
	memcpy(tmp, buf, n);
	tmp[n] = 0;
	char *end;
	locale_t old = json_numeric_locale_enter();
	errno = 0;
	double v = strtod(tmp, &end);
	int range = errno == ERANGE;
	json_numeric_locale_restore(old);
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
sf_json *json_parse_number(parser *p)
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
				return json_fail_at(p, line, col, "non-finite number '-Infinity' is not allowed");
			sf_json *v = json_new_node(SF_JSON_NUMBER, line, col);
			v->num = -INFINITY;
			json_advance(p, 9);
			return v;
		}
		json_advance(p, i - start);
		return json_fail_unexpected(p, "a digit");
	}
	if (s[i] == '0' && i + 1 < p->len && s[i + 1] >= '0' && s[i + 1] <= '9')
		return json_fail_at(p, line, col, "leading zero in number");
	size_t int_start = i;
	while (i < p->len && s[i] >= '0' && s[i] <= '9')
		i++;
	size_t int_end = i;
	if (i < p->len && s[i] == '.') {
		plain = 0;
		i++;
		if (i >= p->len || s[i] < '0' || s[i] > '9') {
			json_advance(p, i - start);
			return json_fail_unexpected(p, "a digit after '.'");
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
			json_advance(p, i - start);
			return json_fail_unexpected(p, "a digit in the exponent");
		}
		while (i < p->len && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	double d;
	int overflow;
	if (json_c_strtod((const char *)s + start, i - start, &d, &overflow) != 0)
		return json_fail_at(p, line, col, "invalid number");
	if (overflow)
		return json_fail_at(p, line, col, "number out of range");
	sf_json *v = json_new_node(SF_JSON_NUMBER, line, col);
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
	json_advance(p, i - start);
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
int json_parse_string_raw(parser *p, char **out, size_t *outlen)
{
	long long line = p->line, col = p->col;
	const unsigned char *s = p->s;
	sf_buf b = { 0 };
	json_advance(p, 1);
	for (;;) {
		if (p->pos >= p->len) {
			json_fail_at(p, line, col, "unterminated string");
			goto bad;
		}
		unsigned c = s[p->pos];
		if (c == '"') {
			json_advance(p, 1);
			break;
		}
		if (c < 0x20) {
			json_fail_at(p, p->line, p->col, "control character 0x%02x in string (must be escaped)", c);
			goto bad;
		}
		if (c == '\\') {
			long long eline = p->line, ecol = p->col;
			if (p->pos + 1 >= p->len) {
				json_fail_at(p, line, col, "unterminated string");
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
					json_fail_at(p, eline, ecol, "invalid escape '\\%c' in string", (int)e);
				else
					json_fail_at(p, eline, ecol, "invalid escape in string");
				goto bad;
			}
			if (simple) {
				sf_buf_append(&b, simple, 1);
				json_advance(p, 2);
				continue;
			}
			unsigned cp;
			if (p->len - p->pos < 6 || hex4(s + p->pos + 2, &cp) != 0) {
				json_fail_at(p, eline, ecol, "invalid \\u escape (need 4 hex digits)");
				goto bad;
			}
			if (cp >= 0xdc00 && cp <= 0xdfff) {
				json_fail_at(p, eline, ecol, "unpaired low surrogate \\u%04x in string", cp);
				goto bad;
			}
			if (cp >= 0xd800 && cp <= 0xdbff) {
				unsigned lo;
				if (p->len - p->pos < 12 || s[p->pos + 6] != '\\' || s[p->pos + 7] != 'u' ||
				    hex4(s + p->pos + 8, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff) {
					json_fail_at(p, eline, ecol, "unpaired high surrogate \\u%04x in string", cp);
					goto bad;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				json_advance(p, 6);
			}
			if (cp == 0) {
				json_fail_at(p, eline, ecol, "\\u0000 is not allowed in strings");
				goto bad;
			}
			put_utf8(&b, cp);
			json_advance(p, 6);
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
				json_fail_at(p, p->line, p->col, "invalid utf-8 in string");
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

