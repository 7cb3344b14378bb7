/*
 * cmd_oracle_check.c - `solforge oracle-check PROBLEM...`: the GPU-compiled oracle must agree with
 * the CPU-compiled oracle (same source) on the workloads small enough for the CPU. Both runners draw
 * the same inputs from the same seed; outputs are compared to within one float32 rounding.
 */
#include "cli/cli.h"
#include "core/check.h"
#include "core/dtype.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static int check_problem(const char *path, double max_work, const char *scratch, int *n_ok, int *n_fail)
{
	char err[4096];
	sf_definition d;
	if (sf_definition_load(path, &d, err, sizeof err)) {
		printf("FAIL %s: %s\n", path, err);
		(*n_fail)++;
		return -1;
	}
	char *wl = sf_path_join(d.dir, "workload.jsonl");
	sf_workload *ws = NULL;
	int nw = 0;
	int rc = sf_workloads_load(wl, &d, &ws, &nw, err, sizeof err);
	free(wl);
	char *home = sf_home();
	sf_build mc = { 0 }, mg = { 0 };
	if (rc || !d.oracle || sf_build_module(&sf_backend_cpu, home, d.oracle, 900, &mc, err, sizeof err) ||
	    sf_build_module(&sf_backend_cuda, home, d.oracle, 900, &mg, err, sizeof err)) {
		printf("FAIL %s: %s\n", d.name, rc ? err : !d.oracle ? "no oracle" : err);
		(*n_fail)++;
		goto out;
	}
	uint64_t seed;
	if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed)
		seed = (uint64_t)getpid() * 0x9E3779B97F4A7C15ull;
	/* the workloads under the limit, or else the smallest one */
	int smallest = -1;
	double smallest_work = 0;
	for (int i = 0; i < nw; i++) {
		sf_job job;
		memset(&job, 0, sizeof job);
		sf_sol s;
		if (sf_bind_job(&d, &ws[i], &job, err, sizeof err) == 0 && sf_sol_work(&d, &job, &s, err, sizeof err) == 0) {
			double work = s.bytes;
			for (int u = 0; u < SF_UNIT_COUNT; u++)
				work += s.flops[u];
			if (smallest < 0 || work < smallest_work) {
				smallest = i;
				smallest_work = work;
			}
		}
		sf_job_free(&job);
	}
	if (smallest >= 0 && smallest_work > max_work)
		max_work = smallest_work;
	int checked = 0;
	for (int i = 0; i < nw; i++) {
		sf_job job;
		memset(&job, 0, sizeof job);
		sf_sol s;
		if (sf_bind_job(&d, &ws[i], &job, err, sizeof err) || sf_sol_work(&d, &job, &s, err, sizeof err)) {
			printf("FAIL %s %s: %s\n", d.name, ws[i].uuid, err);
			(*n_fail)++;
			sf_job_free(&job);
			continue;
		}
		double work = s.bytes;
		for (int u = 0; u < SF_UNIT_COUNT; u++)
			work += s.flops[u];
		if (work > max_work) {
			sf_job_free(&job);
			continue;
		}
		job.mode = SF_JOB_REFERENCE;
		job.n_rounds = 2;
		job.seeds[0] = sf_mix64(seed + (uint64_t)i);
		job.seeds[1] = sf_mix64(seed + (uint64_t)i + 1000);
		job.entry = sf_xstrdup("run");
		char sub[64];
		snprintf(sub, sizeof sub, "%s-%d", d.name, i);
		char *base = sf_path_join(scratch, sub);
		char *dirs[2] = { sf_path_join(base, "cpu"), sf_path_join(base, "cuda") };
		const sf_backend *bs[2] = { &sf_backend_cpu, &sf_backend_cuda };
		const sf_build *mods[2] = { &mc, &mg };
		int ok = 1;
		for (int k = 0; k < 2 && ok; k++) {
			free(job.problem_module);
			free(job.out_dir);
			job.problem_module = sf_xstrdup(mods[k]->so_path);
			job.out_dir = sf_xstrdup(dirs[k]);
			sf_runner_out ro;
			int to;
			sf_runner_run(bs[k], &job, 600, &ro, &to);
			if (!ro.ok) {
				printf("FAIL %s %s: %s oracle: %s\n", d.name, ws[i].uuid, bs[k]->name,
				       ro.message ? ro.message : "failed");
				ok = 0;
			}
			sf_runner_out_free(&ro);
		}
		if (ok) {
			/* one float32 rounding apart; integer outputs exact */
			sf_tolerance tol = { .atol = 1e-30, .rtol = 2.5e-7, .matched_ratio = 0.99999, .error_cap = NAN };
			sf_job ref = job;
			for (int k = 0; k < job.n_out; k++)
				ref.out[k].dt = sf_dt_reference(job.out[k].dt);
			for (int r = 0; r < job.n_rounds && ok; r++) {
				char name[64];
				snprintf(name, sizeof name, "round%d.safetensors", r);
				char *a = sf_path_join(dirs[0], name), *b = sf_path_join(dirs[1], name);
				sf_check c;
				if (sf_check_round(a, b, &ref, &tol, &c, err, sizeof err)) {
					printf("FAIL %s %s: %s\n", d.name, ws[i].uuid, err);
					ok = 0;
				} else if (c.status != SF_PASSED) {
					printf("FAIL %s %s: gpu and cpu oracles disagree: %s\n", d.name, ws[i].uuid, c.msg);
					ok = 0;
				} else if (r == 0) {
					printf("ok %s %s (max abs diff %.3g, matched %.7f)\n", d.name, ws[i].uuid, c.max_abs,
					       c.matched_ratio);
				}
				free(a);
				free(b);
			}
		}
		if (ok)
			(*n_ok)++;
		else
			(*n_fail)++;
		checked++;
		sf_rm_rf(base);
		free(base);
		free(dirs[0]);
		free(dirs[1]);
		sf_job_free(&job);
	}
	if (!checked) {
		printf("FAIL %s: no workload under --max-work %.3g to compare\n", d.name, max_work);
		(*n_fail)++;
	}
out:
	sf_build_free(&mc);
	sf_build_free(&mg);
	free(home);
	sf_workloads_free(ws, nw);
	sf_definition_free(&d);
	return 0;
}

int cmd_oracle_check(int argc, char **argv)
{
	double max_work = 3e8;
	int n = 0;
	const char *paths[512];
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--max-work") && i + 1 < argc) {
			if (sf_parse_double(argv[++i], &max_work)) {
				fprintf(stderr, "solforge: --max-work: not a number\n");
				return SF_EXIT_USAGE;
			}
		} else if (!strcmp(argv[i], "--help")) {
			printf("usage: solforge oracle-check PROBLEM... [--max-work X]\n"
			       "  runs the CPU- and GPU-compiled oracles on the same inputs and compares them\n");
			return SF_EXIT_OK;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "solforge: oracle-check: unknown option '%s'\n", argv[i]);
			return SF_EXIT_USAGE;
		} else if (n < 512) {
			paths[n++] = argv[i];
		}
	}
	char why[SF_ERRLEN];
	if (!sf_backend_cuda.available(why, sizeof why) || !sf_backend_cpu.available(why, sizeof why)) {
		fprintf(stderr, "solforge: oracle-check needs both backends: %s\n", why);
		return SF_EXIT_NO_BACKEND;
	}
	char tmpl[] = "/tmp/solforge-oc-XXXXXX";
	if (!mkdtemp(tmpl)) {
		fprintf(stderr, "solforge: cannot create a scratch folder\n");
		return SF_EXIT_INTERNAL;
	}
	int ok = 0, fail = 0;
	for (int i = 0; i < n; i++)
		check_problem(paths[i], max_work, tmpl, &ok, &fail);
	sf_rm_rf(tmpl);
	printf("%d passed, %d failed\n", ok, fail);
	return fail ? SF_EXIT_FAILED : SF_EXIT_OK;
}
