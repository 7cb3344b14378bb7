/*
 * cmd_list.c - `solforge list [DIR]` and `solforge sol PROBLEM`: what problems there are, and what
 * the speed of light of each workload is.
 */
#include "cli/cli.h"
#include "cli/discover.h"
#include "core/compile.h"
#include "core/hw.h"
#include "core/problem.h"
#include "core/sol.h"
#include "core/status.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_list(int argc, char **argv)
{
	const char *dir = NULL;
	int verbose = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v"))
			verbose = 1;
		else if (!strcmp(argv[i], "--help")) {
			printf("usage: solforge list [-v] [DIR]\n  lists the problems under DIR (default: the bundled "
			       "problems/)\n");
			return SF_EXIT_OK;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "solforge: list: unknown option '%s'\n", argv[i]);
			return SF_EXIT_USAGE;
		} else
			dir = argv[i];
	}
	char **paths;
	int n;
	char err[SF_ERRLEN];
	if (sf_discover_problems(dir, &paths, &n, err, sizeof err)) {
		fprintf(stderr, "solforge: %s\n", err);
		return SF_EXIT_BAD_INPUT;
	}
	int bad = 0, families = 0, loaded = 0;
	char *seen[256];
	printf("%-46s %-22s %-18s %-16s %s\n", "problem", "op_type", "model", "family", "workloads");
	for (int i = 0; i < n; i++) {
		sf_definition d;
		if (sf_definition_load(paths[i], &d, err, sizeof err)) {
			fprintf(stderr, "solforge: %s\n", err);
			bad = 1;
			continue;
		}
		char *wl = sf_path_join(d.dir, "workload.jsonl");
		sf_workload *ws;
		int nw = 0;
		if (sf_workloads_load(wl, &d, &ws, &nw, err, sizeof err)) {
			fprintf(stderr, "solforge: %s\n", err);
			bad = 1;
			nw = -1;
		} else {
			sf_workloads_free(ws, nw);
		}
		free(wl);
		loaded++;
		const char *fam = d.family ? d.family : "-";
		int known = 0;
		for (int f = 0; f < families; f++)
			known |= !strcmp(seen[f], fam);
		if (!known && families < 256)
			seen[families++] = sf_xstrdup(fam);
		printf("%-46s %-22s %-18s %-16s %d\n", d.name, d.op_type ? d.op_type : "-", d.model ? d.model : "-", fam,
		       nw);
		if (verbose && d.description)
			printf("    %s\n", d.description);
		sf_definition_free(&d);
	}
	printf("%d problems from %d model families", loaded, families);
	if (loaded < n)
		printf(" (%d more could not be loaded)", n - loaded);
	printf("\n");
	for (int f = 0; f < families; f++)
		free(seen[f]);
	sf_discover_free(paths, n);
	return bad ? SF_EXIT_BAD_INPUT : SF_EXIT_OK;
}

int cmd_sol(int argc, char **argv)
{
	const char *problem = NULL, *hwname = NULL;
	int json = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--hw") && i + 1 < argc) {
			hwname = argv[++i];
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--list-hw")) {
			for (const sf_hw *h = sf_hw_table; h->name; h++)
				printf("%-10s %3d SMs  HBM %.2f TB/s  bf16 %.0f TF  fp8 %.0f TF  (%s)\n", h->name, h->sms,
				       h->hbm_bytes_per_s / 1e12, h->rate[SF_UNIT_BF16_TENSOR] / 1e12,
				       h->rate[SF_UNIT_FP8_TENSOR] / 1e12, h->source);
			return SF_EXIT_OK;
		} else if (!strcmp(argv[i], "--help")) {
			printf("usage: solforge sol PROBLEM [--hw NAME] [--json] | solforge sol --list-hw\n"
			       "  FLOPs per unit class, bytes, T_sol and the binding unit of every workload, from the\n"
			       "  definition's expressions (data-dependent work is counted by the oracle during eval)\n");
			return SF_EXIT_OK;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "solforge: sol: unknown option '%s'\n", argv[i]);
			return SF_EXIT_USAGE;
		} else {
			problem = argv[i];
		}
	}
	if (!problem) {
		fprintf(stderr, "usage: solforge sol PROBLEM [--hw NAME] [--json]\n");
		return SF_EXIT_USAGE;
	}
	const sf_hw *hw = hwname ? sf_hw_by_name(hwname) : sf_hw_default();
	if (!hw) {
		fprintf(stderr, "solforge: unknown --hw '%s' (solforge sol --list-hw)\n", hwname);
		return SF_EXIT_USAGE;
	}
	sf_definition d;
	char err[SF_ERRLEN];
	if (sf_definition_load(problem, &d, err, sizeof err)) {
		fprintf(stderr, "solforge: %s\n", err);
		return SF_EXIT_BAD_INPUT;
	}
	char *wl = sf_path_join(d.dir, "workload.jsonl");
	sf_workload *ws;
	int nw;
	int rc = sf_workloads_load(wl, &d, &ws, &nw, err, sizeof err);
	free(wl);
	if (rc) {
		fprintf(stderr, "solforge: %s\n", err);
		sf_definition_free(&d);
		return SF_EXIT_BAD_INPUT;
	}
	int code = SF_EXIT_OK;
	if (!json)
		printf("%s on %s\n%-34s %14s %14s %12s %s\n", d.name, hw->name, "workload", "FLOPs", "bytes", "T_sol",
		       "bound by");
	for (int i = 0; i < nw; i++) {
		sf_job job;
		memset(&job, 0, sizeof job);
		sf_sol s;
		if (sf_bind_job(&d, &ws[i], &job, err, sizeof err) || sf_sol_work(&d, &job, &s, err, sizeof err) ||
		    sf_sol_time(&s, hw, err, sizeof err)) {
			fprintf(stderr, "solforge: %s\n", err);
			code = SF_EXIT_BAD_INPUT;
			sf_job_free(&job);
			continue;
		}
		double total = 0;
		for (int u = 0; u < SF_UNIT_COUNT; u++)
			total += s.flops[u];
		if (json) {
			sf_buf b = { 0 };
			sf_buf_puts(&b, "{\"workload\":");
			sf_buf_json_str(&b, ws[i].uuid);
			sf_buf_puts(&b, ",\"flops\":{");
			int first = 1;
			for (int u = 0; u < SF_UNIT_COUNT; u++) {
				if (s.flops[u] <= 0)
					continue;
				sf_buf_printf(&b, "%s\"%s\":", first ? "" : ",", sf_unit_name(u));
				sf_buf_json_num(&b, s.flops[u]);
				first = 0;
			}
			sf_buf_puts(&b, "},\"bytes\":");
			sf_buf_json_num(&b, s.bytes);
			sf_buf_puts(&b, ",\"sol_ms\":");
			sf_buf_json_num(&b, s.t_sol * 1e3);
			sf_buf_printf(&b, ",\"bound_by\":\"%s\"}\n", sf_sol_binding_name(&s));
			fputs(b.data, stdout);
			sf_buf_free(&b);
		} else {
			printf("%-34.34s %14.4g %14.4g %9.3f us %s\n", ws[i].uuid, total, s.bytes, s.t_sol * 1e6,
			       sf_sol_binding_name(&s));
		}
		sf_job_free(&job);
	}
	sf_workloads_free(ws, nw);
	sf_definition_free(&d);
	return code;
}
