/*
 * fuzz_json.c - libFuzzer entry point for the JSON parser: every input is parsed strictly and
 * with non-finite literals allowed; whatever parses must write back (sf_json_write) to text that
 * parses to an equal tree, and every error must be one "line L col C: ..." line. Any violation
 * aborts, which libFuzzer reports as a crash.
 *
 * Sources: tests/fuzz/fuzz_json.c src/core/json_parse.c src/core/json_scalar.c src/core/json_write.c
 * src/core/util.c.
 * Build and run: tools/fuzz.sh SECONDS json
 */
#include "core/json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Deep equality ignoring positions; NaN equals NaN. */
static int equal(const sf_json *a, const sf_json *b)
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
		return a->len == b->len && !memcmp(a->str, b->str, a->len) && strlen(a->str) == a->len;
	case SF_JSON_ARRAY:
	case SF_JSON_OBJECT:
		for (size_t i = 0; i < a->n; i++) {
			if (a->type == SF_JSON_OBJECT && strcmp(a->keys[i], b->keys[i]) != 0)
				return 0;
			if (!equal(a->items[i], b->items[i]))
				return 0;
		}
		return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[SF_ERRLEN];
	for (int ex = 0; ex < 2; ex++) {
		err[0] = 0;
		sf_json *v = sf_json_parse_ex((const char *)data, size, ex, err, sizeof err);
		if (!v) {
			if (strncmp(err, "line ", 5) != 0 || !strstr(err, " col ") || strchr(err, '\n')) {
				fprintf(stderr, "bad error message: %s\n", err);
				abort();
			}
			continue;
		}
		sf_buf b = { 0 };
		sf_json_write(&b, v);
		sf_json *again = sf_json_parse_ex(b.data, b.len, 1, err, sizeof err);
		if (!again || !equal(v, again)) {
			fprintf(stderr, "round trip failed (%s): %s\n", again ? "different tree" : err, b.data);
			abort();
		}
		if (v->type == SF_JSON_OBJECT && v->n && sf_json_get(v, v->keys[v->n - 1]) != v->items[v->n - 1])
			abort();
		sf_json_free(again);
		sf_buf_free(&b);
		sf_json_free(v);
	}
	return 0;
}
