/*
 * json_write.c - the compact JSON writer (see json.h): doubles with the fewest digits that read
 * back exactly ('.' as the decimal point whatever the locale), strings with control characters
 * escaped, containers without whitespace.
 */
#include "core/json_internal.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Formats d with %.{prec}g in the "C" locale into out; returns 1 if it reads back exactly. */
static int format_g(char out[64], int prec, double d)
{
	locale_t old = json_numeric_locale_enter();
	int k = snprintf(out, 64, "%.*g", prec, d); /* at most ~24 bytes for prec <= 17 */
	json_numeric_locale_restore(old);
	if (k < 0 || k >= 64)
		return 0;
	double back;
	int overflow;
	return json_c_strtod(out, strlen(out), &back, &overflow) == 0 && back == d;
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
