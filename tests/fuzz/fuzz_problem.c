/*
 * fuzz_problem.c - libFuzzer entry point for the problem loaders (definition.json and workload.jsonl, what
 * `solforge import` brings in from public suites): an input is a definition, a line "---", then a workload file
 * (no separator: the whole input is the definition and the workload file is empty). Both are written to a private
 * folder and loaded as `solforge eval` loads them; every workload that loads is bound to its axes and to a job.
 * Every failure must leave a one-line, non-empty error; nothing may crash, leak or read out of bounds (ASan, UBSan).
 * Violations abort.
 *
 * Sources: tests/fuzz/fuzz_problem.c src/core/problem.c src/core/workload.c src/core/job.c src/core/json_parse.c
 * src/core/json_scalar.c src/core/json_write.c src/core/expr_lex.c src/core/expr_parse.c src/core/expr_eval.c
 * src/core/dtype.c src/core/util.c.
 * Build and run: tools/fuzz.sh SECONDS problem
 */
#include "core/problem.h"
#include "core/job.h"
#include "core/util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* a failure's message: present and one line */
static void check_err(const char *what, const char *err)
{
	if (!err[0] || strchr(err, '\n')) {
		fprintf(stderr, "fuzz_problem: %s failed with a bad message: '%s'\n", what, err);
		abort();
	}
}

static void write_all(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f)) {
		fprintf(stderr, "fuzz_problem: cannot write %s\n", path);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[64];
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "/tmp/fuzz_problem.XXXXXX");
		if (!mkdtemp(dir))
			abort();
	}
	const uint8_t *sep = NULL;
	for (size_t i = 0; i + 5 <= size && !sep; i++)
		if (!memcmp(data + i, "\n---\n", 5))
			sep = data + i;
	const size_t dlen = sep ? (size_t)(sep - data) : size;
	char dpath[128], wpath[128];
	snprintf(dpath, sizeof dpath, "%s/definition.json", dir);
	snprintf(wpath, sizeof wpath, "%s/workload.jsonl", dir);
	write_all(dpath, data, dlen);
	write_all(wpath, sep ? sep + 5 : data, sep ? size - dlen - 5 : 0);

	char err[SF_ERRLEN] = "";
	sf_definition d;
	if (sf_definition_load(dir, &d, err, sizeof err)) {
		check_err("sf_definition_load", err);
		sf_definition_free(&d);
		return 0;
	}
	sf_workload *ws = NULL;
	int n = 0;
	err[0] = 0;
	if (sf_workloads_load(wpath, &d, &ws, &n, err, sizeof err)) {
		check_err("sf_workloads_load", err);
	} else {
		for (int i = 0; i < n; i++) {
			int64_t *vals = sf_xcalloc((size_t)(d.n_axes + 1), sizeof *vals);
			err[0] = 0;
			if (sf_bind_axes(&d, &ws[i], vals, err, sizeof err))
				check_err("sf_bind_axes", err);
			free(vals);
			sf_job job;
			memset(&job, 0, sizeof job);
			err[0] = 0;
			if (sf_bind_job(&d, &ws[i], &job, err, sizeof err))
				check_err("sf_bind_job", err);
			sf_job_free(&job);
		}
		sf_workloads_free(ws, n);
	}
	sf_definition_free(&d);
	return 0;
}
