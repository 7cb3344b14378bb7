/*
 * solution.h - a candidate solution as the evaluator sees it: a bare source file (.c for the cpu
 * backend, .cu for cuda) or a SOL-ExecBench-style manifest (solution.json: name, definition,
 * author, spec{language, entry_point "file::function", compile_options}, sources[{path, content}]).
 *
 * A bare source may carry its build flags in comment lines:
 *     // solforge-ldflags: -lcublasLt -lcublas
 *     // solforge-cflags: -DBLOCK=128
 * The special name "@oracle" selects the problem's oracle compiled as a cpu solution.
 */
#ifndef SF_SOLUTION_H
#define SF_SOLUTION_H

#include <stddef.h>

typedef struct sf_solution {
	char *name;          /* manifest name or the file name */
	char *author;
	char *definition;    /* definition it claims to solve, or NULL */
	char *language;      /* "c" or "cuda" */
	char *source;        /* path of the file holding the entry point */
	char *entry;         /* entry function (default "run") */
	char **cflags;       /* NULL-terminated */
	char **ldflags;      /* NULL-terminated */
	char **key_files;    /* every source file (hash key), NULL-terminated */
	int is_oracle;       /* "@oracle" */
} sf_solution;

/* Loads a solution. Manifest sources are written under the cache folder. */
int sf_solution_load(const char *path, sf_solution *s, char *err, size_t errlen);
void sf_solution_free(sf_solution *s);

#endif
