/*
 * tests/x86/imports_check.c - runs the static import check (src/core/imports.c) on one built
 * solution, for tests/suites/x86len.sh.
 *
 * Usage: imports_check SO [SOURCE ...]. Prints "RC WHY" (RC: 0 clean, 1 a rule broken, -1 not an
 * ELF file; WHY: the findings) and exits 0.
 */
#include "core/imports.h"

#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: imports_check SO [SOURCE ...]\n");
		return 2;
	}
	char why[8192];
	int rc = sf_imports_check(argv[1], (const char *const *)(argv + 2), why, sizeof why);
	printf("%d %s\n", rc, why);
	return 0;
}
