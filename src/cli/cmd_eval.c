/*
 * cmd_eval.c - `solforge eval PROBLEM SOLUTION`: evaluate one solution on every workload of one
 * problem and print a table (or SOL-ExecBench-compatible JSON lines).
 */
#include "cli/cli.h"
#include "core/calibrate.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_eval_options_help[] =
	"  --backend cpu|cuda   where to run (default: cuda if a GPU is here, else cpu)\n"
	"  --hw NAME            hardware spec for T_sol: H100_SXM, H200_SXM, B200 (default: detected)\n"
	"  --rounds N           correctness rounds with fresh inputs (default 3)\n"
	"  --only TEXT          only workloads whose uuid contains TEXT (=UUID: exactly that one)\n"
	"  --budget-ms MS       timing budget per workload and solution (default 3000)\n"
	"  --target-ci F        stop timing when the median's 95%% CI is within +-F (default 0.01)\n"
	"  --min-iters N, --max-iters N   timed calls (default 10, 2000)\n"
	"  --timeout S          time limit of a candidate's runner process (default 180)\n"
	"  --flush memset|reads how the cache is flushed before each timed call: a memset of twice its size\n"
	"                       (default; leaves that many dirty lines, whose write-back the call shares)\n"
	"                       or a read sweep (clean lines); the trace's l2_flush says which\n"
	"  --no-baseline        do not time baselines\n"
	"  --baseline NAME      time only this baseline of the definition (repeatable; T_b is then the best\n"
	"                       of those named, and each trace's log says so)\n"
	"  --cpu-max-work X     cpu backend: skip workloads above X FLOPs+bytes or X/10 tensor elements (3e8)\n"
	"  --seed N             fixed secret seed (reproducible inputs; weakens the defenses)\n"
	"  --keep               keep the scratch folder of runner jobs and outputs\n"
	"  --no-torch           leave out the PyTorch baselines (backend torch; they need python3 + torch)\n"
	"  --xval               also check the definition's PyTorch reference against the C oracle\n"
	"                       (the PyTorch bridge, docs/bridge.md)\n";

static int need_value(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc) {
		fprintf(stderr, "solforge: %s needs a value\n", argv[*i]);
		return -1;
	}
	(*i)++;
	return 0;
}

int cli_eval_option(int argc, char **argv, int *i, sf_eval_opts *o, const char **backend_name)
{
	const char *a = argv[*i];
	double v;
	int64_t n;
#define NUM(flag, field)                                                                          \
	if (!strcmp(a, flag)) {                                                                   \
		if (need_value(argc, argv, i))                                                    \
			return -1;                                                                \
		if (sf_parse_double(argv[*i], &v) || v < 0) {                                     \
			fprintf(stderr, "solforge: %s: '%s' is not a non-negative number\n", flag, argv[*i]); \
			return -1;                                                                \
		}                                                                                 \
		o->field = v;                                                                     \
		return 1;                                                                         \
	}
#define INT(flag, field)                                                                          \
	if (!strcmp(a, flag)) {                                                                   \
		if (need_value(argc, argv, i))                                                    \
			return -1;                                                                \
		if (sf_parse_i64(argv[*i], &n) || n < 1 || n > 1000000) {                          \
			fprintf(stderr, "solforge: %s: '%s' is not a positive integer\n", flag, argv[*i]); \
			return -1;                                                                \
		}                                                                                 \
		o->field = (int)n;                                                                \
		return 1;                                                                         \
	}
	NUM("--budget-ms", budget_ms)
	NUM("--target-ci", target_rel_ci)
	NUM("--timeout", sol_timeout_s)
	NUM("--cpu-max-work", cpu_max_work)
	if (!strcmp(a, "--rounds")) {
		if (need_value(argc, argv, i))
			return -1;
		if (sf_parse_i64(argv[*i], &n) || n < 1 || n > SF_MAX_ROUNDS) {
			fprintf(stderr, "solforge: --rounds: '%s' is not an integer from 1 to %d\n", argv[*i], SF_MAX_ROUNDS);
			return -1;
		}
		o->rounds = (int)n;
		return 1;
	}
	INT("--min-iters", min_iters)
	INT("--max-iters", max_iters)
#undef NUM
#undef INT
	if (!strcmp(a, "--backend")) {
		if (need_value(argc, argv, i))
			return -1;
		*backend_name = argv[*i];
		return 1;
	}
	if (!strcmp(a, "--hw")) {
		if (need_value(argc, argv, i))
			return -1;
		o->hw_name = argv[*i];
		return 1;
	}
	if (!strcmp(a, "--flush")) {
		if (need_value(argc, argv, i))
			return -1;
		if (strcmp(argv[*i], "memset") && strcmp(argv[*i], "reads")) {
			fprintf(stderr, "solforge: --flush: '%s' is not memset or reads\n", argv[*i]);
			return -1;
		}
		o->flush_reads = !strcmp(argv[*i], "reads");
		return 1;
	}
	if (!strcmp(a, "--only")) {
		if (need_value(argc, argv, i))
			return -1;
		o->only = argv[*i];
		return 1;
	}
	if (!strcmp(a, "--seed")) {
		if (need_value(argc, argv, i))
			return -1;
		char *end;
		o->seed = strtoull(argv[*i], &end, 0);
		if (*end || !*argv[*i]) {
			fprintf(stderr, "solforge: --seed: '%s' is not an integer\n", argv[*i]);
			return -1;
		}
		o->seed_given = 1;
		return 1;
	}
	if (!strcmp(a, "--no-baseline")) {
		o->no_baseline = 1;
		return 1;
	}
	if (!strcmp(a, "--keep")) {
		o->keep = 1;
		return 1;
	}
	if (!strcmp(a, "--no-torch")) {
		o->no_torch = 1;
		return 1;
	}
	if (!strcmp(a, "--xval")) {
		o->xval = 1;
		return 1;
	}
	return 0;
}

int cli_pick_backend(const char *name, sf_eval_opts *o)
{
	if (!name) {
		o->backend = sf_backend_best();
	} else {
		o->backend = sf_backend_get(name);
		if (!o->backend) {
			fprintf(stderr, "solforge: unknown backend '%s' (cpu or cuda)\n", name);
			return SF_EXIT_USAGE;
		}
	}
	if (o->min_iters > o->max_iters) {
		fprintf(stderr, "solforge: --min-iters exceeds --max-iters\n");
		return SF_EXIT_USAGE;
	}
	char why[SF_ERRLEN];
	if (o->build_only ? !o->backend->buildable(why, sizeof why) : !o->backend->available(why, sizeof why)) {
		fprintf(stderr, "solforge: the %s backend is not available: %s\n", o->backend->name, why);
		return SF_EXIT_NO_BACKEND;
	}
	return 0;
}

static void fmt_ms(char *out, size_t n, double ms, int have)
{
	if (!have || isnan(ms))
		snprintf(out, n, "-");
	else if (ms < 1)
		snprintf(out, n, "%.2f us", ms * 1e3);
	else
		snprintf(out, n, "%.3f ms", ms);
}

/* A ceiling's two table columns: its time (t_s seconds) and T_k's fraction of its speed, "-" when NaN. */
static void print_ceiling_cols(FILE *f, double t_s, double frac)
{
	char t[32], fr[32];
	fmt_ms(t, sizeof t, t_s * 1e3, !isnan(t_s));
	if (isnan(frac))
		snprintf(fr, sizeof fr, "-");
	else
		snprintf(fr, sizeof fr, "%.3f", frac);
	fprintf(f, " %11s %7s", t, fr);
}

void cli_print_table(FILE *f, const sf_eval *e)
{
	fprintf(f, "%s  (%s; T_sol on %s; device %s)\n", e->def.name, e->sol.name, e->hw->name,
		e->device ? e->device : "?");
	int copy_cols = 0, read_cols = 0; /* --copy-ceiling / --read-ceiling: the same-size kernel's time and
					   * bytes/T_k as a fraction of its bytes/time */
	for (int i = 0; i < e->n_res; i++) {
		if (e->res[i].w && !isnan(e->res[i].copy_s))
			copy_cols = 1;
		if (e->res[i].w && !isnan(e->res[i].read_s))
			read_cols = 1;
	}
	const int extra = copy_cols || read_cols;
	fprintf(f, extra ? "%-34s %-20s %11s %11s %-10s %8s %11s %7s %-8s" : "%-34s %-20s %11s %11s %-10s %8s %11s %7s %s",
		"workload", "status", "time", "baseline", "by", "speedup", "T_sol", "SOL", "bound");
	if (copy_cols)
		fprintf(f, " %11s %7s", "copy", "of copy");
	if (read_cols)
		fprintf(f, " %11s %7s", "read", "of read");
	fprintf(f, "\n");
	for (int i = 0; i < e->n_res; i++) {
		const sf_wresult *r = &e->res[i];
		if (!r->w)
			continue;
		char tk[32], tb[32], ts[32], sp[32], sc[32];
		fmt_ms(tk, sizeof tk, r->tk.median, r->have_tk && r->status == SF_PASSED);
		fmt_ms(tb, sizeof tb, r->tb.median, r->have_tb);
		fmt_ms(ts, sizeof ts, r->sol.t_sol * 1e3, r->have_sol);
		if (isnan(r->speedup))
			snprintf(sp, sizeof sp, "-");
		else
			snprintf(sp, sizeof sp, "%.2fx", r->speedup);
		if (isnan(r->score))
			snprintf(sc, sizeof sc, "-");
		else
			snprintf(sc, sizeof sc, "%.3f", r->score);
		fprintf(f, extra ? "%-34.34s %-20s %11s %11s %-10.10s %8s %11s %7s %-8s" : "%-34.34s %-20s %11s %11s %-10.10s %8s %11s %7s %s",
			r->w->uuid, sf_status_name(r->status), tk, tb, r->baseline ? r->baseline : "-", sp, ts, sc,
			r->have_sol ? sf_sol_binding_name(&r->sol) : "-");
		if (copy_cols)
			print_ceiling_cols(f, r->copy_s, r->bw_fraction);
		if (read_cols)
			print_ceiling_cols(f, r->read_s, r->read_fraction);
		fprintf(f, "\n");
		if (r->status != SF_SKIPPED && r->log && *r->log) {
			/* first line of the reason, indented */
			size_t l = strcspn(r->log, "\n");
			fprintf(f, "    %.*s\n", (int)(l > 200 ? 200 : l), r->log);
		}
	}
}

/* Whether "NAME=VALUE" (or "NAME") is a define solforge passes on: NAME an identifier, VALUE made of
 * letters, digits and _ . + - only (no quoting, no second flag hidden in it). */
int cli_define_ok(const char *d)
{
	if (!((*d >= 'A' && *d <= 'Z') || (*d >= 'a' && *d <= 'z') || *d == '_'))
		return 0;
	const char *p = d;
	while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')
		p++;
	if (!*p)
		return 1;
	if (*p++ != '=')
		return 0;
	for (; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		      *p == '.' || *p == '+' || *p == '-'))
			return 0;
	return 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: solforge eval PROBLEM SOLUTION [options]\n\n"
		   "PROBLEM is a folder with definition.json and workload.jsonl; SOLUTION is a .cu (cuda), .c (cpu)\n"
		   "or solution.json manifest, or @oracle (the problem's oracle as a cpu solution).\n\noptions:\n%s"
		   "  --json               print one trace per workload as JSON lines instead of the table\n"
		   "  -o FILE              also write the JSON lines to FILE\n"
		   "  --sample N           evaluate only N of the (selected) workloads, evenly spread over the file\n"
		   "  -D NAME=VALUE        compile the solution with this define (repeatable; part of the cache key)\n"
		   "  --prepare-only       build the oracle module, the solution and the baselines, then stop\n"
		   "  --calibrate          first measure the copy bandwidth and bf16 GEMM rate here, and add a\n"
		   "                       measured-ceiling T_sol and SOL score to every trace\n"
		   "  --copy-ceiling       also time the calibration copy at each workload's own byte count (read +\n"
		   "                       write = the SOL bytes) in the same run: copy_ms and bw_fraction_of_copy\n"
		   "  --read-ceiling       also time the calibration read (the maximum of each 16 KiB row) at each\n"
		   "                       workload's SOL bytes, all read: read_ms and bw_fraction_of_read\n"
		   "  --diag-time-failed   diagnostic builds whose outputs are wrong by design: keep the failing\n"
		   "                       status, and report the timed calls' median as diag_unchecked_latency_ms\n"
		   "                       (and the ceilings beside it); never a performance result\n",
		cli_eval_options_help);
}

int cmd_eval(int argc, char **argv)
{
	sf_eval_opts o;
	sf_eval_opts_default(&o);
	const char *backend = NULL, *out = NULL, *pos[2] = { NULL, NULL };
	int npos = 0, json = 0, prepare_only = 0, calibrate = 0, copy_ceiling = 0, read_ceiling = 0, n_def = 0,
	    sample = 0;
	const char *defs[65] = { NULL }, *only_base[17] = { NULL };
	int n_base = 0;
	for (int i = 1; i < argc; i++) {
		int r = cli_eval_option(argc, argv, &i, &o, &backend);
		if (r < 0)
			return SF_EXIT_USAGE;
		if (r)
			continue;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return SF_EXIT_OK;
		} else if (!strncmp(argv[i], "-D", 2)) {
			const char *d = argv[i][2] ? argv[i] + 2 : (i + 1 < argc ? argv[++i] : "");
			if (!cli_define_ok(d) || n_def >= 64) {
				fprintf(stderr, "solforge: -D '%s': a define is NAME or NAME=VALUE (letters, digits, _ . + -; "
						"at most 64)\n", d);
				return SF_EXIT_USAGE;
			}
			defs[n_def++] = d;
			o.defines = defs;
		} else if (!strcmp(argv[i], "--baseline")) {
			if (i + 1 >= argc || !argv[i + 1][0] || n_base >= 16) {
				fprintf(stderr, "solforge: --baseline needs a baseline's name (at most 16 of them)\n");
				return SF_EXIT_USAGE;
			}
			only_base[n_base++] = argv[++i];
			o.baselines_only = only_base;
		} else if (!strcmp(argv[i], "--sample")) {
			int64_t n;
			if (i + 1 >= argc || sf_parse_i64(argv[i + 1], &n) || n < 1 || n > 1000000) {
				fprintf(stderr, "solforge: --sample needs a positive integer\n");
				return SF_EXIT_USAGE;
			}
			sample = (int)n;
			i++;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--calibrate")) {
			calibrate = 1;
		} else if (!strcmp(argv[i], "--copy-ceiling")) {
			copy_ceiling = 1;
		} else if (!strcmp(argv[i], "--read-ceiling")) {
			read_ceiling = 1;
		} else if (!strcmp(argv[i], "--diag-time-failed")) {
			o.diag_time_failed = 1;
		} else if (!strcmp(argv[i], "--prepare-only")) {
			prepare_only = 1;
		} else if (!strcmp(argv[i], "-o")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "solforge: -o needs a file\n");
				return SF_EXIT_USAGE;
			}
			out = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "solforge: eval: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return SF_EXIT_USAGE;
		} else if (npos < 2) {
			pos[npos++] = argv[i];
		} else {
			fprintf(stderr, "solforge: eval: unexpected argument '%s'\n", argv[i]);
			return SF_EXIT_USAGE;
		}
	}
	if (npos != 2) {
		usage(stderr);
		return SF_EXIT_USAGE;
	}
	o.build_only = prepare_only;
	int pick = cli_pick_backend(backend, &o);
	if (pick)
		return pick;
	o.progress = json ? NULL : stderr;
	sf_eval e;
	char err[4096];
	int code;
	sf_calibration cal;
	if (calibrate) {
		if (sf_calibrate(&o, &cal, err, sizeof err)) {
			fprintf(stderr, "solforge: calibration failed: %s\n", err);
			return SF_EXIT_INTERNAL;
		}
		fprintf(json ? stderr : stdout, "calibration: %s\n", cal.note);
		o.calibration = &cal;
	}
	sf_copy_ceiling cc;
	if (copy_ceiling && !prepare_only) {
		if (sf_copy_ceiling_open(&cc, &o, err, sizeof err)) {
			fprintf(stderr, "solforge: copy ceiling: %s\n", err);
			return SF_EXIT_INTERNAL;
		}
		o.copy_ceiling = &cc;
	}
	sf_copy_ceiling rc_read;
	if (read_ceiling && !prepare_only) {
		if (sf_read_ceiling_open(&rc_read, &o, err, sizeof err)) {
			fprintf(stderr, "solforge: read ceiling: %s\n", err);
			if (o.copy_ceiling)
				sf_copy_ceiling_close(&cc);
			return SF_EXIT_INTERNAL;
		}
		o.read_ceiling = &rc_read;
	}
	if (sf_eval_prepare(&e, pos[0], pos[1], &o, &code, err, sizeof err)) {
		fprintf(stderr, "solforge: %s\n", err);
		sf_eval_free(&e, &o);
		if (o.copy_ceiling)
			sf_copy_ceiling_close(&cc);
		if (o.read_ceiling)
			sf_copy_ceiling_close(&rc_read);
		return code;
	}
	if (prepare_only) {
		/* builds only: report what was compiled and what came from the cache */
		printf("module     %s %s (%.2f s)\n", e.module_build.cached ? "cached  " : "compiled",
		       e.module_build.so_path, e.module_build.seconds);
		if (e.compile_error)
			printf("solution   FAILED\n%s\n", e.compile_error);
		else
			printf("solution   %s %s (%.2f s)\n", e.sol_build.cached ? "cached  " : "compiled",
			       e.sol_build.so_path, e.sol_build.seconds);
		for (int b = 0; b < e.n_baselines; b++)
			printf("baseline   %s %s %s\n", e.baselines[b].name,
			       e.baselines[b].error ? "FAILED" : e.baselines[b].build.cached ? "cached" : "compiled",
			       e.baselines[b].error ? e.baselines[b].error : e.baselines[b].build.so_path);
		code = e.compile_error ? SF_EXIT_COMPILE : SF_EXIT_OK;
		sf_eval_free(&e, &o);
		return code;
	}
	FILE *of = NULL;
	if (out && !(of = fopen(out, "w"))) {
		fprintf(stderr, "solforge: cannot write %s\n", out);
		sf_eval_free(&e, &o);
		if (o.copy_ceiling)
			sf_copy_ceiling_close(&cc);
		if (o.read_ceiling)
			sf_copy_ceiling_close(&rc_read);
		return SF_EXIT_USAGE;
	}
	int exit_code = SF_EXIT_OK, any = 0, n_sel = 0, k_sel = 0;
	for (int i = 0; i < e.n_ws; i++)
		n_sel += sf_eval_selected(&o, e.ws[i].uuid);
	for (int i = 0; i < e.n_ws; i++) {
		if (!sf_eval_selected(&o, e.ws[i].uuid))
			continue;
		if (sample && n_sel > sample) {
			/* --sample: `sample` of the selected workloads, evenly spread, the first and last included */
			int k = k_sel++, hit = 0;
			for (int j = 0; j < sample && !hit; j++)
				hit = k == (sample == 1 ? 0 : (int)((double)j * (n_sel - 1) / (sample - 1) + 0.5));
			if (!hit)
				continue;
		}
		any = 1;
		sf_eval_workload(&e, i, &o);
		const sf_wresult *r = &e.res[i];
		if (o.progress)
			fprintf(o.progress, "  [%d/%d] %s %s (%.1f s)\n", i + 1, e.n_ws, r->w->uuid,
				sf_status_name(r->status), r->wall_s);
		sf_buf line = { 0 };
		sf_trace_line(&e, r, o.backend->name, &line);
		/* one complete line per finished workload, flushed at once: a reader of a pipe or file (or an
		 * evaluation killed from outside) never sees a trace cut at a stdio buffer boundary */
		if (json) {
			fputs(line.data, stdout);
			fflush(stdout);
		}
		if (of) {
			fputs(line.data, of);
			fflush(of);
		}
		sf_buf_free(&line);
		if (r->status == SF_COMPILE_ERROR)
			exit_code = SF_EXIT_COMPILE;
		else if (r->status == SF_REWARD_HACK && exit_code != SF_EXIT_COMPILE)
			exit_code = SF_EXIT_REWARD_HACK;
		else if (r->status != SF_PASSED && r->status != SF_SKIPPED && exit_code == SF_EXIT_OK)
			exit_code = SF_EXIT_FAILED;
	}
	if (!any) {
		fprintf(stderr, "solforge: no workload matches --only '%s'\n", o.only);
		exit_code = SF_EXIT_USAGE;
	}
	if (!json)
		cli_print_table(stdout, &e);
	if (e.compile_error && !json)
		fprintf(stdout, "\ncompile error:\n%s\n", e.compile_error);
	if (of)
		fclose(of);
	sf_eval_free(&e, &o);
	if (o.copy_ceiling)
		sf_copy_ceiling_close(&cc);
	if (o.read_ceiling)
		sf_copy_ceiling_close(&rc_read);
	return exit_code;
}
