/*
 * test_json.c - the strict JSON parser: values, escapes, numbers, the position and wording of every
 * error class, depth limit, non-finite literals, locale independence, and seeded random documents
 * (generated, serialized with random whitespace and escapes, reparsed, rewritten, reparsed) plus
 * random mutations of them.
 */
#include "test.h"
#include "core/json.h"

#include <locale.h>
#include <stdlib.h>

static sf_json *parse_s(const char *s, char *err)
{
	return sf_json_parse(s, strlen(s), err, SF_ERRLEN);
}

/* splitmix64: the test's own random stream. */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static size_t rnd_below(uint64_t *s, size_t n)
{
	return (size_t)(rnd(s) % n);
}

SF_TEST(json_scalars)
{
	char err[SF_ERRLEN];
	sf_json *v = parse_s(" null ", err);
	CHECK(v && v->type == SF_JSON_NULL && v->line == 1 && v->col == 2);
	sf_json_free(v);
	v = parse_s("true", err);
	CHECK(v && v->type == SF_JSON_BOOL && v->boolean == 1);
	sf_json_free(v);
	v = parse_s("\n\tfalse", err);
	CHECK(v && v->type == SF_JSON_BOOL && v->boolean == 0 && v->line == 2 && v->col == 2);
	sf_json_free(v);
	v = parse_s("\"hi\"", err);
	CHECK(v && v->type == SF_JSON_STRING && v->len == 2 && !strcmp(v->str, "hi"));
	sf_json_free(v);
	v = parse_s("\"\"", err);
	CHECK(v && v->type == SF_JSON_STRING && v->len == 0 && v->str && v->str[0] == 0);
	sf_json_free(v);
	CHECK_STR(sf_json_type_name(SF_JSON_NULL), "null");
	CHECK_STR(sf_json_type_name(SF_JSON_BOOL), "boolean");
	CHECK_STR(sf_json_type_name(SF_JSON_NUMBER), "number");
	CHECK_STR(sf_json_type_name(SF_JSON_STRING), "string");
	CHECK_STR(sf_json_type_name(SF_JSON_ARRAY), "array");
	CHECK_STR(sf_json_type_name(SF_JSON_OBJECT), "object");
}

SF_TEST(json_numbers)
{
	char err[SF_ERRLEN];
	static const struct {
		const char *text;
		double num;
		int is_int;
		int64_t ival;
	} v[] = {
		{ "0", 0, 1, 0 },
		{ "-0", -0.0, 1, 0 },
		{ "42", 42, 1, 42 },
		{ "-17", -17, 1, -17 },
		{ "1.5", 1.5, 0, 0 },
		{ "-0.25", -0.25, 0, 0 },
		{ "1e3", 1000, 0, 0 },
		{ "1E+3", 1000, 0, 0 },
		{ "25e-1", 2.5, 0, 0 },
		{ "0.0", 0, 0, 0 },
		{ "9223372036854775807", 9223372036854775807.0, 1, INT64_MAX },
		{ "-9223372036854775808", -9223372036854775808.0, 1, INT64_MIN },
		{ "9223372036854775808", 9223372036854775808.0, 0, 0 },
		{ "-9223372036854775809", -9223372036854775809.0, 0, 0 },
		{ "123456789012345678901234567890", 123456789012345678901234567890.0, 0, 0 },
		{ "1e-400", 0, 0, 0 }, /* underflow rounds to zero: fine */
		{ "1.7976931348623157e308", 1.7976931348623157e308, 0, 0 },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		sf_json *j = parse_s(v[i].text, err);
		CHECK(j != NULL);
		if (!j)
			continue;
		CHECK(j->type == SF_JSON_NUMBER);
		CHECK(j->num == v[i].num);
		CHECK_INT(j->is_int, v[i].is_int);
		if (v[i].is_int)
			CHECK_INT(j->ival, v[i].ival);
		sf_json_free(j);
	}
	sf_json *j = parse_s("-0", err);
	CHECK(j && signbit(j->num));
	sf_json_free(j);
	/* a long number goes through the heap copy */
	char big[400];
	memset(big, '7', sizeof big - 1);
	big[sizeof big - 1] = 0;
	big[1] = '.';
	j = parse_s(big, err);
	CHECK(j && j->type == SF_JSON_NUMBER && !j->is_int && fabs(j->num - 7.7777777777777777) < 1e-12);
	sf_json_free(j);
}

SF_TEST(json_strings_and_escapes)
{
	char err[SF_ERRLEN];
	sf_json *v = parse_s("\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\"", err);
	CHECK(v && !strcmp(v->str, "a\"b\\c/d\be\ff\ng\rh\ti") && v->len == 17);
	sf_json_free(v);
	/* \u escapes: 1, 2 and 3 byte UTF-8, and a surrogate pair (U+1F600) */
	v = parse_s("\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\"", err);
	CHECK(v && v->len == 1 + 2 + 3 + 4 && !strcmp(v->str, "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
	sf_json_free(v);
	/* U+10FFFF, the largest code point */
	v = parse_s("\"\\uDBFF\\uDFFF\"", err);
	CHECK(v && !strcmp(v->str, "\xf4\x8f\xbf\xbf"));
	sf_json_free(v);
	/* raw UTF-8 passes through */
	v = parse_s("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \x7f\"", err);
	CHECK(v && !strcmp(v->str, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \x7f"));
	sf_json_free(v);
}

SF_TEST(json_containers_and_get)
{
	char err[SF_ERRLEN];
	const char *text = "{\n  \"b\": [1, 2, {\"x\": null}],\n  \"a\": {},\n  \"c\": []\n}";
	sf_json *v = parse_s(text, err);
	CHECK(v != NULL);
	if (!v)
		return;
	CHECK(v->type == SF_JSON_OBJECT && v->n == 3);
	CHECK_STR(v->keys[0], "b");
	CHECK_STR(v->keys[1], "a");
	CHECK_STR(v->keys[2], "c");
	const sf_json *b = sf_json_get(v, "b");
	CHECK(b && b->type == SF_JSON_ARRAY && b->n == 3);
	CHECK(b && b->line == 2 && b->col == 8);
	if (b && b->n == 3) {
		CHECK(b->items[1]->is_int && b->items[1]->ival == 2 && b->items[1]->col == 12);
		CHECK(sf_json_get(b->items[2], "x") && sf_json_get(b->items[2], "x")->type == SF_JSON_NULL);
		CHECK(sf_json_get(b->items[2], "y") == NULL);
	}
	const sf_json *a = sf_json_get(v, "a");
	CHECK(a && a->type == SF_JSON_OBJECT && a->n == 0 && a->line == 3);
	const sf_json *c = sf_json_get(v, "c");
	CHECK(c && c->type == SF_JSON_ARRAY && c->n == 0);
	CHECK(sf_json_get(v, "missing") == NULL);
	CHECK(sf_json_get(b, "b") == NULL); /* not an object */
	CHECK(sf_json_get(NULL, "b") == NULL);
	sf_json_free(v);
	sf_json_free(NULL);
}

/* Each error class: the message names the right position and says what went wrong. */
SF_TEST(json_error_positions)
{
	static const struct {
		const char *text;
		size_t len; /* 0: strlen */
		const char *pos;
		const char *what;
	} v[] = {
		{ "", 0, "line 1 col 1:", "unexpected end of input" },
		{ "  \n  ", 0, "line 2 col 3:", "unexpected end of input" },
		{ "[1,]", 0, "line 1 col 4:", "trailing comma in array" },
		{ "{\"a\":1,}", 0, "line 1 col 8:", "trailing comma in object" },
		{ "[1,\n ]", 0, "line 2 col 2:", "trailing comma in array" },
		{ "01", 0, "line 1 col 1:", "leading zero" },
		{ "[-012]", 0, "line 1 col 2:", "leading zero" },
		{ "[1, 2] x", 0, "line 1 col 8:", "unexpected character 'x'" },
		{ "{} {}", 0, "line 1 col 4:", "expected end of input" },
		{ "{\"a\" 1}", 0, "line 1 col 6:", "expected ':'" },
		{ "{1:2}", 0, "line 1 col 2:", "expected a string key" },
		{ "{\"a\":1 \"b\":2}", 0, "line 1 col 8:", "expected ',' or '}'" },
		{ "[1 2]", 0, "line 1 col 4:", "expected ',' or ']'" },
		{ "[1", 0, "line 1 col 3:", "unexpected end of input" },
		{ "\"abc", 0, "line 1 col 1:", "unterminated string" },
		{ "[\n  \"abc\\", 0, "line 2 col 3:", "unterminated string" },
		{ "\"a\tb\"", 0, "line 1 col 3:", "control character 0x09" },
		{ "\"a\nb\"", 0, "line 1 col 3:", "control character 0x0a" },
		{ "\"\\x\"", 0, "line 1 col 2:", "invalid escape '\\x'" },
		{ "\"ab\\u12g4\"", 0, "line 1 col 4:", "invalid \\u escape" },
		{ "\"\\u12", 0, "line 1 col 2:", "invalid \\u escape" },
		{ "\"\\ud800\"", 0, "line 1 col 2:", "unpaired high surrogate" },
		{ "[\"\\ud83d\\u0041\"]", 0, "line 1 col 3:", "unpaired high surrogate" },
		{ "\"\\udc00\"", 0, "line 1 col 2:", "unpaired low surrogate" },
		{ "\"x\\u0000\"", 0, "line 1 col 3:", "\\u0000 is not allowed" },
		{ "\"\xff\"", 0, "line 1 col 2:", "invalid utf-8" },
		{ "\"\xc0\xaf\"", 0, "line 1 col 2:", "invalid utf-8" },         /* overlong '/' */
		{ "\"\xe0\x80\xaf\"", 0, "line 1 col 2:", "invalid utf-8" },     /* overlong, 3 bytes */
		{ "\"\xed\xa0\x80\"", 0, "line 1 col 2:", "invalid utf-8" },     /* UTF-16 surrogate */
		{ "\"\xf4\x90\x80\x80\"", 0, "line 1 col 2:", "invalid utf-8" }, /* above U+10FFFF */
		{ "\"\xe2\x82\"", 0, "line 1 col 2:", "invalid utf-8" },         /* truncated */
		{ "\"\xc3\xa9\xe2\x82\xac\xff\"", 0, "line 1 col 4:", "invalid utf-8" }, /* columns count chars */
		{ "\xef\xbb\xbf{}", 0, "line 1 col 1:", "unexpected byte 0xef" }, /* no BOM */
		{ "tru", 0, "line 1 col 1:", "invalid literal 'tru'" },
		{ "[truex]", 0, "line 1 col 2:", "invalid literal 'truex'" },
		{ "True", 0, "line 1 col 1:", "invalid literal 'True'" },
		{ "NaN", 0, "line 1 col 1:", "non-finite number 'NaN'" },
		{ "[1, Infinity]", 0, "line 1 col 5:", "non-finite number 'Infinity'" },
		{ "-Infinity", 0, "line 1 col 1:", "non-finite number '-Infinity'" },
		{ "-", 0, "line 1 col 2:", "expected a digit" },
		{ "-x", 0, "line 1 col 2:", "unexpected character 'x', expected a digit" },
		{ "1.", 0, "line 1 col 3:", "a digit after '.'" },
		{ ".5", 0, "line 1 col 1:", "unexpected character '.'" },
		{ "1e+", 0, "line 1 col 4:", "a digit in the exponent" },
		{ "+1", 0, "line 1 col 1:", "unexpected character '+'" },
		{ "1e400", 0, "line 1 col 1:", "number out of range" },
		{ "[-1e999]", 0, "line 1 col 2:", "number out of range" },
		{ "{\n  \"a\": [1,\n    2,,\n  ]\n}", 0, "line 3 col 7:", "unexpected character ','" },
		{ "'a'", 0, "line 1 col 1:", "unexpected character '''" },
		{ "[1] // c", 0, "line 1 col 5:", "unexpected character '/'" },
		{ "[1]\0", 4, "line 1 col 4:", "unexpected byte 0x00" },
		{ "\"a\0b\"", 5, "line 1 col 3:", "control character 0x00" },
		{ "{\"k\xc3\xa9y\": 1, \"k\xc3\xa9y\": 2}", 0, "line 1 col 12:", "duplicate key 'k\xc3\xa9y'" },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		char err[SF_ERRLEN] = "";
		size_t len = v[i].len ? v[i].len : strlen(v[i].text);
		sf_json *j = sf_json_parse(v[i].text, len, err, sizeof err);
		CHECK(j == NULL);
		sf_json_free(j);
		if (!strstr(err, v[i].pos) || !strstr(err, v[i].what) || strncmp(err, "line ", 5) != 0) {
			fprintf(stderr, "  case %zu: got \"%s\", expected \"%s ... %s\"\n", i, err, v[i].pos, v[i].what);
			sf_test_failed_checks++;
		}
		CHECK(strchr(err, '\n') == NULL);
	}
}

SF_TEST(json_duplicate_keys)
{
	char err[SF_ERRLEN] = "";
	sf_json *v = parse_s("{\n\"name\": 1,\n \"other\": {\"name\": 3},\n \"name\": 2}", err);
	CHECK(v == NULL);
	CHECK(strstr(err, "line 4 col 2: duplicate key 'name'") != NULL);
	/* many keys (the hashed path): the duplicate is the last one */
	sf_buf b = { 0 };
	for (int i = 0; i < 5000; i++)
		sf_buf_printf(&b, "%s\"k%d\":%d", i ? "," : "{", i, i);
	sf_buf ok = { 0 };
	sf_buf_puts(&ok, b.data);
	sf_buf_puts(&ok, "}");
	sf_buf_puts(&b, ",\"k1234\":0}");
	v = sf_json_parse(b.data, b.len, err, sizeof err);
	CHECK(v == NULL);
	CHECK(strstr(err, "duplicate key 'k1234'") != NULL);
	/* without the duplicate it parses, in order */
	v = sf_json_parse(ok.data, ok.len, err, sizeof err);
	CHECK(v != NULL);
	if (v) {
		CHECK_INT(v->n, 5000);
		CHECK_STR(v->keys[4999], "k4999");
		CHECK(sf_json_get(v, "k4321") && sf_json_get(v, "k4321")->ival == 4321);
	}
	sf_json_free(v);
	sf_buf_free(&b);
	sf_buf_free(&ok);
	/* keys that differ only after an escape are different */
	v = parse_s("{\"a\\u0062\": 1, \"ab\\n\": 2}", err);
	CHECK(v && v->n == 2);
	sf_json_free(v);
	v = parse_s("{\"a\\u0062\": 1, \"ab\": 2}", err);
	CHECK(v == NULL && strstr(err, "duplicate key 'ab'"));
}

SF_TEST(json_depth_limit)
{
	char err[SF_ERRLEN] = "";
	int depth = SF_JSON_MAX_DEPTH;
	sf_buf b = { 0 };
	for (int i = 0; i < depth; i++)
		sf_buf_puts(&b, i % 2 ? "{\"k\":" : "[");
	sf_buf_puts(&b, "0");
	for (int i = depth - 1; i >= 0; i--)
		sf_buf_puts(&b, i % 2 ? "}" : "]");
	sf_json *v = sf_json_parse(b.data, b.len, err, sizeof err);
	CHECK(v != NULL);
	sf_json_free(v);
	sf_buf_free(&b);
	/* one more is an error at the innermost opening bracket */
	for (int i = 0; i <= depth; i++)
		sf_buf_puts(&b, "[");
	for (int i = 0; i <= depth; i++)
		sf_buf_puts(&b, "]");
	v = sf_json_parse(b.data, b.len, err, sizeof err);
	CHECK(v == NULL);
	CHECK(strstr(err, "line 1 col 257: nesting deeper than 256") != NULL);
	sf_buf_free(&b);
	/* a huge unbalanced document is an error, not a stack overflow */
	size_t n = 1000000;
	char *deep = malloc(n);
	memset(deep, '[', n);
	v = sf_json_parse(deep, n, err, sizeof err);
	CHECK(v == NULL && strstr(err, "nesting deeper"));
	for (size_t i = 0; i < n; i++)
		deep[i] = i % 2 ? '[' : '{';
	v = sf_json_parse(deep, n, err, sizeof err);
	CHECK(v == NULL);
	free(deep);
}

SF_TEST(json_nonfinite)
{
	char err[SF_ERRLEN] = "";
	const char *t = "[NaN, Infinity, -Infinity, 1]";
	sf_json *v = sf_json_parse(t, strlen(t), err, sizeof err);
	CHECK(v == NULL && strstr(err, "line 1 col 2: non-finite number 'NaN'"));
	v = sf_json_parse_ex(t, strlen(t), 1, err, sizeof err);
	CHECK(v && v->n == 4);
	if (v && v->n == 4) {
		CHECK(v->items[0]->type == SF_JSON_NUMBER && isnan(v->items[0]->num) && !v->items[0]->is_int);
		CHECK(isinf(v->items[1]->num) && v->items[1]->num > 0);
		CHECK(isinf(v->items[2]->num) && v->items[2]->num < 0 && v->items[2]->col == 17);
		CHECK(v->items[3]->is_int);
		sf_buf b = { 0 };
		sf_json_write(&b, v);
		CHECK_STR(b.data, "[NaN,Infinity,-Infinity,1]");
		sf_buf_free(&b);
	}
	sf_json_free(v);
	/* still strict about everything else */
	static const char *bad[] = { "nan", "-NaN", "+Infinity", "Infinityx", "inf", "NaN1", "-Inf" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		v = sf_json_parse_ex(bad[i], strlen(bad[i]), 1, err, sizeof err);
		CHECK(v == NULL);
		if (v)
			fprintf(stderr, "  accepted %s\n", bad[i]);
		sf_json_free(v);
	}
}

SF_TEST(json_bounded_input)
{
	/* the parser must never read past len: exact-size heap copies let ASan see overreads */
	static const char *docs[] = { "123", "-1.5e7", "\"abc\"", "true", "null", "[1,2]", "{\"a\":1}",
				      "\"\\u00e9\"", "1e", "\"\\u", "tr", "-", "\"\xe2\x82" };
	char err[SF_ERRLEN];
	for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
		for (size_t cut = 0; cut <= strlen(docs[i]); cut++) {
			char *p = malloc(cut ? cut : 1);
			memcpy(p, docs[i], cut);
			sf_json *v = sf_json_parse(p, cut, err, sizeof err);
			sf_json_free(v);
			free(p);
		}
	}
	/* a prefix of a longer text: only len bytes count */
	sf_json *v = sf_json_parse("12345", 2, err, sizeof err);
	CHECK(v && v->ival == 12);
	sf_json_free(v);
	/* NULL text with len 0 is an empty document */
	v = sf_json_parse(NULL, 0, err, sizeof err);
	CHECK(v == NULL && strstr(err, "line 1 col 1"));
	/* err may be NULL */
	CHECK(sf_json_parse("[", 1, NULL, 0) == NULL);
}

SF_TEST(json_locale_independent)
{
	static const char *names[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8", "ru_RU.UTF-8" };
	const char *old = setlocale(LC_NUMERIC, NULL);
	char *saved = old ? strdup(old) : NULL;
	int switched = 0;
	for (size_t i = 0; i < sizeof names / sizeof names[0] && !switched; i++)
		switched = setlocale(LC_NUMERIC, names[i]) != NULL;
	/* run the checks either way: under "C" they hold trivially, under a comma locale they matter */
	char err[SF_ERRLEN];
	sf_json *v = parse_s("[1.5, -2.25e1, 0.1]", err);
	CHECK(v && v->n == 3);
	if (v && v->n == 3) {
		CHECK(v->items[0]->num == 1.5);
		CHECK(v->items[1]->num == -22.5);
		CHECK(v->items[2]->num == 0.1);
		sf_buf b = { 0 };
		sf_json_write(&b, v);
		CHECK_STR(b.data, "[1.5,-22.5,0.1]");
		sf_buf_free(&b);
	}
	sf_json_free(v);
	setlocale(LC_NUMERIC, saved ? saved : "C");
	free(saved);
}

SF_TEST(json_write_format)
{
	char err[SF_ERRLEN];
	const char *t = "{\"a\" : [1.0, -0, -0.0, 1e300, 5e-324, 12345678901234567890, 0.1, true, null],"
			" \"s\\u0001\" : \"q\\\"\\\\\\n\\t\\u007f\\ud83d\\ude00/\"}";
	sf_json *v = parse_s(t, err);
	CHECK(v != NULL);
	if (!v)
		return;
	sf_buf b = { 0 };
	sf_json_write(&b, v);
	CHECK_STR(b.data, "{\"a\":[1.0,-0,-0.0,1e+300,5e-324,1.2345678901234567e+19,0.1,true,null],"
			  "\"s\\u0001\":\"q\\\"\\\\\\n\\t\\u007f\xf0\x9f\x98\x80/\"}");
	sf_buf_free(&b);
	sf_json_free(v);
}

/* ---- random documents ---- */

/* Deep equality of two trees, ignoring positions. */
static int json_equal(const sf_json *a, const sf_json *b)
{
	if (a->type != b->type || a->n != b->n)
		return 0;
	switch (a->type) {
	case SF_JSON_NULL:
		return 1;
	case SF_JSON_BOOL:
		return a->boolean == b->boolean;
	case SF_JSON_NUMBER:
		if (a->is_int != b->is_int || (a->is_int && a->ival != b->ival))
			return 0;
		if (isnan(a->num) || isnan(b->num))
			return isnan(a->num) && isnan(b->num);
		return a->num == b->num && signbit(a->num) == signbit(b->num);
	case SF_JSON_STRING:
		return a->len == b->len && !memcmp(a->str, b->str, a->len) && a->str[a->len] == 0;
	case SF_JSON_ARRAY:
	case SF_JSON_OBJECT:
		for (size_t i = 0; i < a->n; i++) {
			if (a->type == SF_JSON_OBJECT && strcmp(a->keys[i], b->keys[i]) != 0)
				return 0;
			if (!json_equal(a->items[i], b->items[i]))
				return 0;
		}
		return 1;
	}
	return 0;
}

/* Appends code point cp as UTF-8. */
static void utf8(sf_buf *b, uint32_t cp)
{
	char u[4];
	size_t n;
	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	sf_buf_append(b, u, n);
}

static uint32_t rnd_codepoint(uint64_t *r)
{
	switch (rnd_below(r, 6)) {
	case 0: return 1 + (uint32_t)rnd_below(r, 0x1f); /* control */
	case 1: return 0x80 + (uint32_t)rnd_below(r, 0x780);
	case 2: {
		uint32_t cp = 0x800 + (uint32_t)rnd_below(r, 0xf800);
		return (cp >= 0xd800 && cp <= 0xdfff) ? 0xfffd : cp;
	}
	case 3: return 0x10000 + (uint32_t)rnd_below(r, 0x100000);
	case 4: return "\"\\/"[rnd_below(r, 3)];
	default: return 0x20 + (uint32_t)rnd_below(r, 0x5f);
	}
}

/* A random string of code points (never NUL), as a NUL-terminated UTF-8 heap string. */
static char *rnd_string(uint64_t *r, size_t *len)
{
	sf_buf b = { 0 };
	size_t n = rnd_below(r, 4) ? rnd_below(r, 8) : rnd_below(r, 40);
	for (size_t i = 0; i < n; i++)
		utf8(&b, rnd_codepoint(r));
	*len = b.len;
	return sf_buf_take(&b);
}

static sf_json *rnd_value(uint64_t *r, int depth)
{
	sf_json *v = sf_xcalloc(1, sizeof *v);
	int kind = (int)rnd_below(r, depth > 0 ? 8 : 5);
	switch (kind) {
	case 0:
		v->type = SF_JSON_NULL;
		break;
	case 1:
		v->type = SF_JSON_BOOL;
		v->boolean = (int)rnd_below(r, 2);
		break;
	case 2: {
		v->type = SF_JSON_NUMBER;
		v->is_int = 1;
		switch (rnd_below(r, 4)) {
		case 0: v->ival = (int64_t)rnd_below(r, 100) - 50; break;
		case 1: v->ival = INT64_MAX - (int64_t)rnd_below(r, 3); break;
		case 2: v->ival = INT64_MIN + (int64_t)rnd_below(r, 3); break;
		default: v->ival = (int64_t)rnd(r); break;
		}
		v->num = (double)v->ival;
		break;
	}
	case 3: {
		v->type = SF_JSON_NUMBER;
		double d;
		do {
			uint64_t bits = rnd(r);
			if (rnd_below(r, 2)) /* often a "human" number instead of random bits */
				d = (double)((int64_t)rnd_below(r, 2000000) - 1000000) / (double)(1 + rnd_below(r, 1000));
			else
				memcpy(&d, &bits, sizeof d);
		} while (!isfinite(d));
		v->num = d;
		break;
	}
	case 4:
		v->type = SF_JSON_STRING;
		v->str = rnd_string(r, &v->len);
		break;
	case 5:
	case 6: {
		v->type = SF_JSON_ARRAY;
		v->n = rnd_below(r, 5);
		v->items = sf_xcalloc(v->n, sizeof *v->items);
		for (size_t i = 0; i < v->n; i++)
			v->items[i] = rnd_value(r, depth - 1);
		break;
	}
	default: {
		v->type = SF_JSON_OBJECT;
		v->n = rnd_below(r, 5);
		v->items = sf_xcalloc(v->n, sizeof *v->items);
		v->keys = sf_xcalloc(v->n, sizeof *v->keys);
		for (size_t i = 0; i < v->n; i++) {
			size_t len;
			char *k = rnd_string(r, &len);
			sf_buf kb = { 0 };
			sf_buf_puts(&kb, k);
			sf_buf_printf(&kb, "#%zu", i); /* unique */
			free(k);
			v->keys[i] = sf_buf_take(&kb);
			v->items[i] = rnd_value(r, depth - 1);
		}
		break;
	}
	}
	return v;
}

static void rnd_ws(sf_buf *b, uint64_t *r)
{
	if (rnd_below(r, 3))
		return;
	size_t n = 1 + rnd_below(r, 3);
	for (size_t i = 0; i < n; i++)
		sf_buf_append(b, &" \t\r\n"[rnd_below(r, 4)], 1);
}

/* Serializes a UTF-8 string choosing randomly between raw bytes and the escape forms. */
static void ser_string(sf_buf *b, uint64_t *r, const char *s, size_t len)
{
	sf_buf_puts(b, "\"");
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		uint32_t cp;
		size_t n;
		if (p[i] < 0x80) {
			cp = p[i];
			n = 1;
		} else if (p[i] < 0xe0) {
			cp = (uint32_t)(p[i] & 0x1f) << 6 | (p[i + 1] & 0x3f);
			n = 2;
		} else if (p[i] < 0xf0) {
			cp = (uint32_t)(p[i] & 0x0f) << 12 | (uint32_t)(p[i + 1] & 0x3f) << 6 | (p[i + 2] & 0x3f);
			n = 3;
		} else {
			cp = (uint32_t)(p[i] & 0x07) << 18 | (uint32_t)(p[i + 1] & 0x3f) << 12 |
			     (uint32_t)(p[i + 2] & 0x3f) << 6 | (p[i + 3] & 0x3f);
			n = 4;
		}
		const char *hexd = rnd_below(r, 2) ? "0123456789abcdef" : "0123456789ABCDEF";
		int must = cp < 0x20 || cp == '"' || cp == '\\';
		int mode = (int)rnd_below(r, 3); /* 0 raw, 1 \u, 2 short escape where one exists */
		const char *shortesc = NULL;
		switch (cp) {
		case '"': shortesc = "\\\""; break;
		case '\\': shortesc = "\\\\"; break;
		case '/': shortesc = "\\/"; break;
		case '\b': shortesc = "\\b"; break;
		case '\f': shortesc = "\\f"; break;
		case '\n': shortesc = "\\n"; break;
		case '\r': shortesc = "\\r"; break;
		case '\t': shortesc = "\\t"; break;
		}
		if (mode == 0 && must)
			mode = shortesc ? 2 : 1;
		if (mode == 2 && !shortesc)
			mode = 1;
		if (mode == 0) {
			sf_buf_append(b, p + i, n);
		} else if (mode == 2) {
			sf_buf_puts(b, shortesc);
		} else {
			uint32_t units[2];
			int nu = 1;
			if (cp >= 0x10000) {
				units[0] = 0xd800 + ((cp - 0x10000) >> 10);
				units[1] = 0xdc00 + ((cp - 0x10000) & 0x3ff);
				nu = 2;
			} else {
				units[0] = cp;
			}
			for (int k = 0; k < nu; k++) {
				char e[7] = { '\\', 'u', hexd[units[k] >> 12], hexd[(units[k] >> 8) & 15],
					      hexd[(units[k] >> 4) & 15], hexd[units[k] & 15], 0 };
				sf_buf_puts(b, e);
			}
		}
		i += n;
	}
	sf_buf_puts(b, "\"");
}

/* The test's own serializer: random whitespace, random escapes, numbers via printf. */
static void ser(sf_buf *b, uint64_t *r, const sf_json *v)
{
	switch (v->type) {
	case SF_JSON_NULL: sf_buf_puts(b, "null"); break;
	case SF_JSON_BOOL: sf_buf_puts(b, v->boolean ? "true" : "false"); break;
	case SF_JSON_NUMBER:
		if (v->is_int) {
			sf_buf_printf(b, "%lld", (long long)v->ival);
		} else {
			char tmp[40];
			snprintf(tmp, sizeof tmp, rnd_below(r, 2) ? "%.17g" : "%.17e", v->num);
			sf_buf_puts(b, tmp);
			if (!strpbrk(tmp, ".eE"))
				sf_buf_puts(b, ".0");
		}
		break;
	case SF_JSON_STRING: ser_string(b, r, v->str, v->len); break;
	case SF_JSON_ARRAY:
	case SF_JSON_OBJECT:
		sf_buf_puts(b, v->type == SF_JSON_ARRAY ? "[" : "{");
		rnd_ws(b, r);
		for (size_t i = 0; i < v->n; i++) {
			if (i) {
				sf_buf_puts(b, ",");
				rnd_ws(b, r);
			}
			if (v->type == SF_JSON_OBJECT) {
				ser_string(b, r, v->keys[i], strlen(v->keys[i]));
				rnd_ws(b, r);
				sf_buf_puts(b, ":");
				rnd_ws(b, r);
			}
			ser(b, r, v->items[i]);
			rnd_ws(b, r);
		}
		sf_buf_puts(b, v->type == SF_JSON_ARRAY ? "]" : "}");
		break;
	}
}

SF_TEST(json_random_roundtrip)
{
	uint64_t r = sf_test_seed() ^ 0x4a534f4e00000001ull;
	char err[SF_ERRLEN];
	for (int iter = 0; iter < 400; iter++) {
		sf_json *doc = rnd_value(&r, (int)rnd_below(&r, 6));
		sf_buf text = { 0 };
		rnd_ws(&text, &r);
		ser(&text, &r, doc);
		rnd_ws(&text, &r);
		/* exact-size copy, not NUL-terminated */
		char *exact = malloc(text.len ? text.len : 1);
		memcpy(exact, text.data, text.len);
		sf_json *back = sf_json_parse(exact, text.len, err, sizeof err);
		free(exact);
		CHECK(back != NULL);
		if (!back) {
			fprintf(stderr, "  iteration %d: %s\n  text: %.300s\n", iter, err, text.data);
		} else {
			CHECK(json_equal(doc, back));
			/* the library's writer reads back to the same tree too */
			sf_buf w = { 0 };
			sf_json_write(&w, back);
			sf_json *again = sf_json_parse(w.data, w.len, err, sizeof err);
			CHECK(again && json_equal(doc, again));
			sf_json_free(again);
			sf_buf_free(&w);
		}
		sf_json_free(back);
		sf_json_free(doc);
		sf_buf_free(&text);
	}
}

SF_TEST(json_random_mutations)
{
	uint64_t r = sf_test_seed() ^ 0x4a534f4e00000002ull;
	char err[SF_ERRLEN];
	static const char junk[] = "[]{}\",:\\-+.0123456789eEtfnuNaI \t\n\x80\xbf\xc3\xed\xf0\xff";
	int accepted = 0;
	for (int iter = 0; iter < 3000; iter++) {
		sf_json *doc = rnd_value(&r, 3);
		sf_buf text = { 0 };
		ser(&text, &r, doc);
		sf_json_free(doc);
		size_t nmut = 1 + rnd_below(&r, 3);
		for (size_t m = 0; m < nmut && text.len; m++) {
			size_t at = rnd_below(&r, text.len);
			char c = junk[rnd_below(&r, sizeof junk - 1)];
			switch (rnd_below(&r, 3)) {
			case 0:
				text.data[at] = c;
				break;
			case 1:
				memmove(text.data + at, text.data + at + 1, text.len - at);
				text.len--;
				break;
			default:
				sf_buf_append(&text, "", 1); /* grow by one */
				memmove(text.data + at + 1, text.data + at, text.len - at - 1);
				text.data[at] = c;
				break;
			}
		}
		char *exact = malloc(text.len ? text.len : 1);
		memcpy(exact, text.data, text.len);
		for (int ex = 0; ex < 2; ex++) {
			err[0] = 0;
			sf_json *v = sf_json_parse_ex(exact, text.len, ex, err, sizeof err);
			if (v) {
				accepted++;
				sf_buf w = { 0 };
				sf_json_write(&w, v);
				sf_json *again = sf_json_parse_ex(w.data, w.len, 1, err, sizeof err);
				CHECK(again && json_equal(v, again));
				sf_json_free(again);
				sf_buf_free(&w);
			} else {
				CHECK(!strncmp(err, "line ", 5) && strstr(err, " col ") && !strchr(err, '\n'));
			}
			sf_json_free(v);
		}
		free(exact);
		sf_buf_free(&text);
	}
	CHECK(accepted > 0);
}
