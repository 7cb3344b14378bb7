/*
 * expr_lex.c - the axis expression language's tokenizer (see expr.h): numbers (read in the "C"
 * locale whatever setlocale did), identifiers and the keywords and / or / not, operators; and the
 * one-line syntax errors ("in 'SRC': at column C: <what>") the parser reports through it.
 */
#include "core/expr_internal.h"
#include "core/util.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Quotes src for a one-line message into out (expr_internal.h). */
void expr_quote_src(const char *src, char *out, size_t n)
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
void expr_perr(parser *p, size_t col0, const char *fmt, ...)
{
	if (p->failed)
		return;
	p->failed = 1;
	char what[200], q[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	expr_quote_src(p->src, q, sizeof q);
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
			expr_perr(p, start, "invalid number '%.*s'", (int)(i - start), s + start);
			return -1;
		}
		while (is_digit(s[i]))
			i++;
	}
	if (is_ident_char(s[i]) || s[i] == '.') {
		size_t j = i;
		while (is_ident_char(s[j]) || s[j] == '.')
			j++;
		expr_perr(p, start, "invalid number '%.*s'", (int)(j - start > 40 ? 40 : j - start), s + start);
		return -1;
	}
	if (!fraction && s[start] == '0' && int_end - start > 1) {
		for (size_t k = start; k < int_end; k++) {
			if (s[k] != '0') {
				expr_perr(p, start, "leading zeros in number '%.*s'",
					  (int)(i - start > 40 ? 40 : i - start), s + start);
				return -1;
			}
		}
	}
	double v;
	if (c_strtod(s + start, i - start, &v) != 0) {
		expr_perr(p, start, "invalid number");
		return -1;
	}
	if (!isfinite(v)) {
		expr_perr(p, start, "number out of range");
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
int expr_next(parser *p)
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
			expr_perr(p, i, "unexpected character '=' (comparison is '==')");
			return -1;
		}
		k = T_EQ;
		break;
	case '!':
		if (d != '=') {
			expr_perr(p, i, "unexpected character '!' (use 'not')");
			return -1;
		}
		k = T_NE;
		break;
	default:
		if (c >= 0x20 && c < 0x7f)
			expr_perr(p, i, "unexpected character '%c'", c);
		else
			expr_perr(p, i, "unexpected byte 0x%02x", c);
		return -1;
	}
	p->tok.kind = k;
	if (k == T_POW || k == T_DSLASH || k == T_LE || k == T_GE || k == T_EQ || k == T_NE)
		p->tok.len = 2;
	p->pos = i + p->tok.len;
	return 0;
}

/* Reports that the current token is not what the grammar allows here. */
void expr_unexpected(parser *p, const char *expected)
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
		expr_perr(p, p->tok.start, "%s, expected %s", what, expected);
	else
		expr_perr(p, p->tok.start, "%s", what);
}
