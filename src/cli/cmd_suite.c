/*
 * cmd_suite.c - `solforge suite [DIR]`: the default job. Evaluates the bundled solutions of every
 * problem on the best backend present (cuda: the .cu files of solutions/; cpu: its .c files and the oracle as a
 * solution) and prints one row per problem and solution, then totals.
 */
#include "cli/cli.h"
#include "cli/discover.h"
#include "core/status.h"
#include "core/util.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Solutions of a problem for a backend: files of the backend's extension under solutions/. */
static int solutions_for(const char *problem, const sf_backend *b, char ***out)
{
	int n = 0;
	*out = NULL;
	char *dir = sf_path_join(problem, "solutions");
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		size_t el = strlen(b->source_ext);
		while ((e = readdir(d))) {
			size_t l = strlen(e->d_name);
			if (l > el && !strcmp(e->d_name + l - el, b->source_ext)) {
				*out = sf_xrealloc(*out, sizeof(char *) * (size_t)(n + 2));
				(*out)[n++] = sf_path_join(dir, e->d_name);
			}
		}
		closedir(d);
	}
	free(dir);
	if (n)
		qsort(*out, (size_t)n, sizeof(char *), cmp_str);
	if (!strcmp(b->name, "cpu")) {
		*out = sf_xrealloc(*out, sizeof(char *) * (size_t)(n + 2));
		(*out)[n++] = sf_xstrdup("@oracle");
	}
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int cmd_suite(int argc, char **argv)
{
	sf_eval_opts o;
	sf_eval_opts_default(&o);
	o.budget_ms = 1000;
	const char *backend = NULL, *dir = NULL, *out = NULL;
	for (int i = 1; i < argc; i++) {
		int r = cli_eval_option(argc, argv, &i, &o, &backend);
		if (r < 0)
			return SF_EXIT_USAGE;
		if (r)
			continue;
		if (!strcmp(argv[i], "--help")) {
			printf("usage: solforge suite [DIR] [options] [-o TRACES.jsonl]\n"
			       "  evaluates the bundled solutions of every problem under DIR (default problems/)\n%s",
			       cli_eval_options_help);
			return SF_EXIT_OK;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "solforge: suite: unknown option '%s'\n", argv[i]);
			return SF_EXIT_USAGE;
		} else {
			dir = argv[i];
		}
	}
	int pick = cli_pick_backend(backend, &o);
	if (pick)
		return pick;
	char **problems;
	int np;
	char err[4096];
	if (sf_discover_problems(dir, &problems, &np, err, sizeof err)) {
		fprintf(stderr, "solforge: %s\n", err);
		return SF_EXIT_BAD_INPUT;
	}
	FILE *of = NULL;
	if (out && !(of = fopen(out, "w"))) {
		fprintf(stderr, "solforge: cannot write %s\n", out);
		sf_discover_free(problems, np);
		return SF_EXIT_USAGE;
	}
	fprintf(stderr, "solforge suite: %d problems on the %s backend\n", np, o.backend->name);
	sf_buf table = { 0 };
	sf_buf_printf(&table, "%-44s %-22s %6s %6s %7s %9s %8s\n", "problem", "solution", "passed", "failed", "skipped",
		      "speedup", "med SOL");
	int exit_code = SF_EXIT_OK, total_pass = 0, total_fail = 0, total_skip = 0;
	for (int p = 0; p < np; p++) {
		char **sols;
		int ns = solutions_for(problems[p], o.backend, &sols);
		for (int s = 0; s < ns; s++) {
			sf_eval e;
			int code;
			if (sf_eval_prepare(&e, problems[p], sols[s], &o, &code, err, sizeof err)) {
				fprintf(stderr, "solforge: %s: %s\n", problems[p], err);
				sf_buf_printf(&table, "%-44.44s %-22.22s %s\n", sf_basename(problems[p]), sf_basename(sols[s]),
					      "could not be evaluated (see above)");
				sf_eval_free(&e, &o);
				exit_code = SF_EXIT_FAILED;
				continue;
			}
			int pass = 0, fail = 0, skip = 0, nsp = 0, nsc = 0;
			double logsum = 0, *scores = sf_xcalloc((size_t)e.n_ws + 1, sizeof(double));
			for (int i = 0; i < e.n_ws; i++) {
				if (!sf_eval_selected(&o, e.ws[i].uuid))
					continue;
				sf_eval_workload(&e, i, &o);
				const sf_wresult *r = &e.res[i];
				fprintf(stderr, "  %s %s %s %s\n", e.def.name, e.sol.name, r->w->uuid, sf_status_name(r->status));
				if (r->status != SF_PASSED && r->status != SF_SKIPPED && r->log)
					fprintf(stderr, "    %.300s\n", r->log);
				if (r->status == SF_PASSED)
					pass++;
				else if (r->status == SF_SKIPPED)
					skip++;
				else
					fail++;
				if (r->status == SF_PASSED && !isnan(r->speedup)) {
					logsum += log(r->speedup);
					nsp++;
				}
				if (r->status == SF_PASSED && !isnan(r->score))
					scores[nsc++] = r->score;
				if (of) {
					sf_buf line = { 0 };
					sf_trace_line(&e, r, o.backend->name, &line);
					fputs(line.data, of);
					sf_buf_free(&line);
				}
			}
			char sp[32] = "-", sc[32] = "-";
			if (nsp)
				snprintf(sp, sizeof sp, "%.2fx", exp(logsum / nsp));
			if (nsc) {
				qsort(scores, (size_t)nsc, sizeof(double), cmp_double);
				snprintf(sc, sizeof sc, "%.3f", nsc % 2 ? scores[nsc / 2] : 0.5 * (scores[nsc / 2 - 1] + scores[nsc / 2]));
			}
			free(scores);
			sf_buf_printf(&table, "%-44.44s %-22.22s %6d %6d %7d %9s %8s\n", e.def.name, e.sol.name, pass, fail,
				      skip, sp, sc);
			total_pass += pass;
			total_fail += fail;
			total_skip += skip;
			if (fail)
				exit_code = SF_EXIT_FAILED;
			sf_eval_free(&e, &o);
		}
		for (int s = 0; s < ns; s++)
			free(sols[s]);
		free(sols);
	}
	fputs(table.data, stdout);
	printf("total: %d workloads passed, %d failed, %d skipped (backend %s)\n", total_pass, total_fail, total_skip,
	       o.backend->name);
	sf_buf_free(&table);
	if (of)
		fclose(of);
	sf_discover_free(problems, np);
	return exit_code;
}
