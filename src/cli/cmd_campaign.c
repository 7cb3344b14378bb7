/*
 * cmd_campaign.c - `solforge campaign [PROBLEM...] --agent SPEC --workers N [...]`: the multi-agent
 * optimization campaign (src/campaign, docs/campaign.md).
 */
#include "cli/cli.h"
#include "cli/discover.h"
#include "core/status.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef SF_NO_SQLITE
#include "campaign/campaign.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: solforge campaign [PROBLEM...] --agent SPEC [options]\n\n"
		"PROBLEM: a problem folder, or a folder searched for problems (default: the bundled problems/).\n"
		"SPEC: tune | cmd:'COMMAND' | openai:MODEL\n\noptions:\n"
		"  --agent SPEC         the agent every attempt uses (required)\n"
		"  --workers N          attempts run at once (default 1)\n"
		"  --gpus LIST          cuda: device ids for CUDA_VISIBLE_DEVICES, e.g. 0,1 (default 0)\n"
		"  --budget TIME        wall time of this run: 90s, 10m, 2h (default: none)\n"
		"  --db FILE            campaign database (default campaign.db); workspaces etc. in FILE.d/\n"
		"  --resume             continue the campaign in --db\n"
		"  --max-attempts N     attempts per problem, the seed attempt included (default: none)\n"
		"  --agent-time TIME    time limit of one cmd:/openai: attempt (default 20m)\n"
		"  --max-tokens N       model tokens over the whole campaign (default: none)\n"
		"  --turns N            openai: evaluation turns per attempt (default 4)\n"
		"  --per-problem N      workers allowed on one problem at once (default 1)\n"
		"  --tune-batch N       variants per tune attempt (default 4)\n"
		"  --tune-max N         tune variants per problem; larger spaces are searched randomly (default 64)\n"
		"  --min-gain F         relative gain that counts as an improvement (default 0.02)\n"
		"  --no-confirm         keep a faster solution without measuring it a second time\n"
		"  --stagnation F       planner: penalty per attempt without improvement (default 0.5)\n"
		"  --explore F          planner: bonus of an untried problem (default 1)\n"
		"  --protocol FILE      the protocol file agents get (default: PROTOCOL.md of the source tree)\n"
		"  --solutions NAMES    only these bundled solutions (comma-separated file names, e.g. naive.cu,tuned.cu)\n"
		"  --seed N             the tuner's random search\n"
		"  --live / --no-live   status table (default on a terminal) / plain log lines\n"
		"evaluation options passed to every `solforge eval`: --backend, --hw, --rounds, --budget-ms (default 1000),\n"
		"  --cpu-max-work, --timeout, --target-ci, --min-iters, --max-iters, --no-baseline, --sample N\n");
}

/* "90", "90s", "10m", "2h", "1d" -> seconds; -1 when malformed. */
static double parse_duration(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || v < 0)
		return -1;
	if (!*end || !strcmp(end, "s"))
		return v;
	if (!strcmp(end, "m"))
		return v * 60;
	if (!strcmp(end, "h"))
		return v * 3600;
	if (!strcmp(end, "d"))
		return v * 86400;
	return -1;
}

static int parse_int(const char *flag, const char *v, int lo, int hi, int *out)
{
	int64_t n;
	if (sf_parse_i64(v, &n) || n < lo || n > hi) {
		fprintf(stderr, "solforge: %s: '%s' is not an integer from %d to %d\n", flag, v, lo, hi);
		return -1;
	}
	*out = (int)n;
	return 0;
}

int cmd_campaign(int argc, char **argv)
{
	sf_camp_opts o;
	memset(&o, 0, sizeof o);
	o.workers = 1;
	o.per_problem = 1;
	o.turns = 4;
	o.tune_batch = 4;
	o.tune_max = 64;
	o.min_gain = 0.02;
	o.confirm = 1;
	o.stagnation = 0.5;
	o.explore = 1;
	o.agent_time_s = 1200;
	o.db_path = "campaign.db";
	o.live = isatty(2);
	o.seed = 0x5eed;
	char **pos = sf_xcalloc((size_t)argc + 1, sizeof(char *));
	int npos = 0, have_budget_ms = 0;
	static char gpu_store[1024];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED()                                                                  \
	do {                                                                    \
		if (!v) {                                                       \
			fprintf(stderr, "solforge: %s needs a value\n", a);     \
			return SF_EXIT_USAGE;                                   \
		}                                                               \
		i++;                                                            \
	} while (0)
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return SF_EXIT_OK;
		} else if (!strcmp(a, "--agent")) {
			NEED();
			o.agent_spec = v;
		} else if (!strcmp(a, "--workers")) {
			NEED();
			if (parse_int(a, v, 1, SF_CAMP_MAX_WORKERS, &o.workers))
				return SF_EXIT_USAGE;
		} else if (!strcmp(a, "--gpus")) {
			NEED();
			snprintf(gpu_store, sizeof gpu_store, "%s", v);
			char *save = NULL;
			for (char *t = strtok_r(gpu_store, ",", &save); t && o.n_gpus < 64; t = strtok_r(NULL, ",", &save))
				o.gpus[o.n_gpus++] = t;
			if (!o.n_gpus) {
				fprintf(stderr, "solforge: --gpus: '%s' names no device\n", v);
				return SF_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--budget") || !strcmp(a, "--agent-time")) {
			NEED();
			double d = parse_duration(v);
			if (d <= 0) {
				fprintf(stderr, "solforge: %s: '%s' is not a duration (90s, 10m, 2h)\n", a, v);
				return SF_EXIT_USAGE;
			}
			*(!strcmp(a, "--budget") ? &o.budget_s : &o.agent_time_s) = d;
		} else if (!strcmp(a, "--db")) {
			NEED();
			o.db_path = v;
		} else if (!strcmp(a, "--resume")) {
			o.resume = 1;
		} else if (!strcmp(a, "--max-attempts")) {
			NEED();
			if (parse_int(a, v, 1, 1000000, &o.max_attempts))
				return SF_EXIT_USAGE;
		} else if (!strcmp(a, "--max-tokens")) {
			NEED();
			int64_t n;
			if (sf_parse_i64(v, &n) || n < 1) {
				fprintf(stderr, "solforge: --max-tokens: '%s' is not a positive integer\n", v);
				return SF_EXIT_USAGE;
			}
			o.max_tokens = (long)n;
		} else if (!strcmp(a, "--turns")) {
			NEED();
			if (parse_int(a, v, 1, 100, &o.turns))
				return SF_EXIT_USAGE;
		} else if (!strcmp(a, "--per-problem")) {
			NEED();
			if (parse_int(a, v, 1, SF_CAMP_MAX_WORKERS, &o.per_problem))
				return SF_EXIT_USAGE;
		} else if (!strcmp(a, "--tune-batch")) {
			NEED();
			if (parse_int(a, v, 1, 10000, &o.tune_batch))
				return SF_EXIT_USAGE;
		} else if (!strcmp(a, "--tune-max")) {
			NEED();
			if (parse_int(a, v, 1, 1000000, &o.tune_max))
				return SF_EXIT_USAGE;
		} else if (!strcmp(a, "--min-gain") || !strcmp(a, "--stagnation") || !strcmp(a, "--explore")) {
			NEED();
			double d;
			if (sf_parse_double(v, &d) || d < 0 || d > 100) {
				fprintf(stderr, "solforge: %s: '%s' is not a number from 0 to 100\n", a, v);
				return SF_EXIT_USAGE;
			}
			*(!strcmp(a, "--min-gain") ? &o.min_gain : !strcmp(a, "--stagnation") ? &o.stagnation : &o.explore) = d;
		} else if (!strcmp(a, "--protocol")) {
			NEED();
			if (!sf_file_exists(v)) {
				fprintf(stderr, "solforge: --protocol: no file %s\n", v);
				return SF_EXIT_USAGE;
			}
			o.protocol = v;
		} else if (!strcmp(a, "--solutions")) {
			NEED();
			o.solutions = v;
		} else if (!strcmp(a, "--seed")) {
			NEED();
			o.seed = strtoull(v, NULL, 0);
		} else if (!strcmp(a, "--no-confirm")) {
			o.confirm = 0;
		} else if (!strcmp(a, "--live")) {
			o.live = 1;
		} else if (!strcmp(a, "--no-live")) {
			o.live = 0;
		} else if (!strcmp(a, "--backend")) {
			NEED();
			o.backend = v;
		} else if (!strcmp(a, "--no-baseline") || !strcmp(a, "--no-torch")) {
			if (o.n_eval_args + 1 > 30) {
				fprintf(stderr, "solforge: campaign: too many evaluation options\n");
				return SF_EXIT_USAGE;
			}
			o.eval_args[o.n_eval_args++] = a;
		} else if (!strcmp(a, "--hw") || !strcmp(a, "--rounds") || !strcmp(a, "--budget-ms") ||
			   !strcmp(a, "--cpu-max-work") || !strcmp(a, "--timeout") || !strcmp(a, "--target-ci") ||
			   !strcmp(a, "--min-iters") || !strcmp(a, "--max-iters") || !strcmp(a, "--sample")) {
			NEED();
			if (o.n_eval_args + 2 > 30) {
				fprintf(stderr, "solforge: too many evaluation options\n");
				return SF_EXIT_USAGE;
			}
			have_budget_ms |= !strcmp(a, "--budget-ms");
			o.eval_args[o.n_eval_args++] = a;
			o.eval_args[o.n_eval_args++] = v;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "solforge: campaign: unknown option '%s'\n", a);
			usage(stderr);
			return SF_EXIT_USAGE;
		} else {
			pos[npos++] = argv[i];
		}
#undef NEED
	}
	if (!have_budget_ms) {
		o.eval_args[o.n_eval_args++] = "--budget-ms";
		o.eval_args[o.n_eval_args++] = "1000";
	}
	if (!o.agent_spec) {
		fprintf(stderr, "solforge: campaign: --agent is required (tune, cmd:'COMMAND' or openai:MODEL)\n");
		return SF_EXIT_USAGE;
	}
	if (!strcmp(o.agent_spec, "tune")) {
		o.agent = SF_AGENT_TUNE;
	} else if (!strncmp(o.agent_spec, "cmd:", 4) && o.agent_spec[4]) {
		o.agent = SF_AGENT_CMD;
		o.agent_arg = o.agent_spec + 4;
	} else if (!strncmp(o.agent_spec, "openai:", 7) && o.agent_spec[7]) {
		o.agent = SF_AGENT_OPENAI;
		o.agent_arg = o.agent_spec + 7;
	} else {
		fprintf(stderr, "solforge: --agent '%s': expected tune, cmd:'COMMAND' or openai:MODEL\n", o.agent_spec);
		return SF_EXIT_USAGE;
	}
	if (!o.n_gpus) {
		o.gpus[0] = "0";
		o.n_gpus = 1;
	}
	/* problem folders: given ones (a folder without definition.json is searched), else the bundled set */
	char **paths = NULL;
	int np = 0;
	char err[1024];
	if (!npos && !o.resume) {
		if (sf_discover_problems(NULL, &paths, &np, err, sizeof err)) {
			fprintf(stderr, "solforge: %s\n", err);
			return SF_EXIT_BAD_INPUT;
		}
	}
	for (int i = 0; i < npos; i++) {
		char *def = sf_path_join(pos[i], "definition.json");
		int is_problem = sf_file_exists(def);
		free(def);
		if (is_problem) {
			paths = sf_xrealloc(paths, sizeof(char *) * (size_t)(np + 1));
			paths[np++] = sf_xstrdup(pos[i]);
			continue;
		}
		char **found;
		int nf;
		if (sf_discover_problems(pos[i], &found, &nf, err, sizeof err)) {
			fprintf(stderr, "solforge: %s\n", err);
			return SF_EXIT_BAD_INPUT;
		}
		paths = sf_xrealloc(paths, sizeof(char *) * (size_t)(np + nf + 1));
		for (int k = 0; k < nf; k++)
			paths[np++] = sf_xstrdup(found[k]);
		sf_discover_free(found, nf);
	}
	free(pos);
	int rc = sf_campaign_run(&o, paths, np);
	for (int i = 0; i < np; i++)
		free(paths[i]);
	free(paths);
	return rc;
}

#else
int cmd_campaign(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "solforge: campaign: this solforge was built without SQLite (see tools/devdeps.sh)\n");
	return SF_EXIT_NO_BACKEND;
}
#endif
