/*
 * fuzz_expr.c - libFuzzer entry point for the axis expression language: any input (cut at its
 * first NUL) is parsed; what parses is evaluated with every identifier bound to a value derived
 * from its name, its identifiers are listed, and the result must not depend on parsing once or
 * via sf_expr_eval_str. Errors must be single lines. Violations abort.
 *
 * Sources: tests/fuzz/fuzz_expr.c src/core/expr_lex.c src/core/expr_parse.c src/core/expr_eval.c
 * src/core/util.c.
 * Build and run: tools/fuzz.sh SECONDS expr
 */
#include "core/expr.h"
#include "core/util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Binds every name to a small value from its first byte; names starting with 'u' are unknown. */
static int lookup(void *ctx, const char *name, double *out)
{
	(void)ctx;
	if (name[0] == 'u')
		return -1;
	*out = (double)((unsigned char)name[0] % 11) - 3.0;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *src = sf_xstrndup((const char *)data, size); /* stops at an embedded NUL for the parser */
	char err[SF_ERRLEN] = "";
	sf_expr *e = sf_expr_parse(src, err, sizeof err);
	if (!e) {
		if (strncmp(err, "in '", 4) != 0 || !strstr(err, "at column ") || strchr(err, '\n'))
			abort();
		free(src);
		return 0;
	}
	double a = 0, b = 0;
	char err2[SF_ERRLEN] = "";
	int ra = sf_expr_eval(e, lookup, NULL, &a, err, sizeof err);
	int rb = sf_expr_eval_str(src, lookup, NULL, &b, err2, sizeof err2);
	if (ra != rb || (ra == 0 && !(a == b)) || (ra != 0 && strcmp(err, err2) != 0))
		abort();
	if (ra != 0 && strchr(err, '\n'))
		abort();
	char **names;
	int n;
	sf_expr_idents(e, &names, &n);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(names[i], names[j]))
				abort();
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	sf_expr_free(e);
	free(src);
	return 0;
}
