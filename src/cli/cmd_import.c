/*
 * cmd_import.c - `solforge import DIR [-o OUT]`: reads SOL-ExecBench and FlashInfer-Bench problem
 * folders and says, problem by problem, whether solforge can evaluate our-ABI solutions on them.
 *
 * Layouts (docs/bridge.md): SOL-ExecBench, a folder per problem with definition.json and
 * workload.jsonl (DIR itself, or folders below it); FlashInfer-Bench, DIR/definitions/<op>/<name>.json
 * with DIR/workloads/<op>/<name>.jsonl (trace lines wrapping each workload). Each problem is loaded
 * and validated like `eval` does; the report names its oracle (the C oracle, or the PyTorch
 * `reference` run by the bridge), its workloads, and what is not supported (Python custom-input
 * entrypoints, safetensors blobs that are absent). With -o OUT, FlashInfer-Bench problems are written
 * as SOL-ExecBench folders OUT/<name>/{definition.json, workload.jsonl} that `eval` takes directly.
 */
#include "cli/cli.h"
#include "cli/discover.h"
#include "core/problem.h"
#include "core/util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct found {
	char *def;        /* definition file */
	char *wl;         /* workload file */
	const char *layout;
} found;

static void add(found **f, int *n, char *def, char *wl, const char *layout)
{
	*f = sf_xrealloc(*f, sizeof **f * (size_t)(*n + 1));
	(*f)[*n].def = def;
	(*f)[*n].wl = wl;
	(*f)[*n].layout = layout;
	(*n)++;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* FlashInfer-Bench: every defs/REL.json with its wls/REL.jsonl, depth <= 3. */
static void walk_fib(const char *defs, const char *wls, int depth, found **f, int *n)
{
	DIR *d = opendir(defs);
	if (!d)
		return;
	struct dirent *de;
	char **names = NULL;
	int nn = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		names = sf_xrealloc(names, sizeof(char *) * (size_t)(nn + 1));
		names[nn++] = sf_xstrdup(de->d_name);
	}
	closedir(d);
	qsort(names, (size_t)nn, sizeof(char *), cmp_str);
	for (int i = 0; i < nn; i++) {
		char *p = sf_path_join(defs, names[i]);
		size_t l = strlen(names[i]);
		if (is_dir(p) && depth < 3) {
			char *w = sf_path_join(wls, names[i]);
			walk_fib(p, w, depth + 1, f, n);
			free(w);
			free(p);
		} else if (l > 5 && !strcmp(names[i] + l - 5, ".json")) {
			sf_buf b = { 0 };
			sf_buf_printf(&b, "%s/%.*sjsonl", wls, (int)(l - 4), names[i]);
			add(f, n, p, sf_buf_take(&b), "flashinfer-bench");
		} else {
			free(p);
		}
		free(names[i]);
	}
	free(names);
}

/* Writes OUT/<name>/definition.json and workload.jsonl (copies; workload lines stay as they are). */
static int write_copy(const char *out, const sf_definition *d, const char *wl, char *err, size_t errlen)
{
	char *dir = sf_path_join(out, d->name);
	char *text = NULL, *wtext = NULL;
	size_t len, wlen;
	int rc = sf_mkdir_p(dir, err, errlen);
	if (rc == 0)
		rc = sf_read_file(d->file, &text, &len, err, errlen);
	if (rc == 0)
		rc = sf_read_file(wl, &wtext, &wlen, err, errlen);
	char *dp = sf_path_join(dir, "definition.json"), *wp = sf_path_join(dir, "workload.jsonl");
	if (rc == 0)
		rc = sf_write_file(dp, text, len, err, errlen);
	if (rc == 0)
		rc = sf_write_file(wp, wtext, wlen, err, errlen);
	free(dp);
	free(wp);
	free(text);
	free(wtext);
	free(dir);
	return rc;
}

int cmd_import(int argc, char **argv)
{
	const char *dir = NULL, *out = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: solforge import DIR [-o OUT]\n"
			       "  reads SOL-ExecBench (definition.json + workload.jsonl per folder) and FlashInfer-Bench\n"
			       "  (definitions/ + workloads/) problems below DIR and reports which solforge can evaluate;\n"
			       "  -o OUT writes FlashInfer-Bench problems as SOL-ExecBench folders under OUT\n");
			return SF_EXIT_OK;
		} else if (argv[i][0] == '-' || dir) {
			fprintf(stderr, "solforge import: unexpected argument '%s' (usage: solforge import DIR [-o OUT])\n",
				argv[i]);
			return SF_EXIT_USAGE;
		} else {
			dir = argv[i];
		}
	}
	if (!dir) {
		fprintf(stderr, "solforge import: usage: solforge import DIR [-o OUT]\n");
		return SF_EXIT_USAGE;
	}
	char err[SF_ERRLEN];
	found *f = NULL;
	int n = 0;
	char *defs = sf_path_join(dir, "definitions"), *wls = sf_path_join(dir, "workloads");
	if (is_dir(defs))
		walk_fib(defs, wls, 0, &f, &n);
	free(defs);
	free(wls);
	char **paths = NULL;
	int np = 0;
	if (sf_discover_problems(dir, &paths, &np, err, sizeof err) == 0) {
		for (int i = 0; i < np; i++)
			add(&f, &n, sf_path_join(paths[i], "definition.json"), sf_path_join(paths[i], "workload.jsonl"),
			    "sol-execbench");
		sf_discover_free(paths, np);
	}
	if (n == 0) {
		fprintf(stderr, "solforge import: no problems under %s (neither */definition.json nor definitions/)\n",
			dir);
		return SF_EXIT_BAD_INPUT;
	}
	int n_ok = 0;
	printf("%-44s %-17s %-9s %9s  %s\n", "problem", "layout", "oracle", "workloads", "evaluable");
	for (int i = 0; i < n; i++) {
		sf_definition d;
		sf_workload *ws = NULL;
		int nw = 0;
		sf_buf notes = { 0 };
		const char *oracle = "-";
		int ok = 0;
		if (sf_definition_load(f[i].def, &d, err, sizeof err)) {
			sf_buf_printf(&notes, "no: %s", err);
			printf("%-44s %-17s %-9s %9s  %s\n", f[i].def, f[i].layout, oracle, "-", notes.data);
			sf_buf_free(&notes);
			continue;
		}
		oracle = d.oracle ? "C" : d.reference ? "pytorch" : "none";
		if (sf_workloads_load(f[i].wl, &d, &ws, &nw, err, sizeof err)) {
			sf_buf_printf(&notes, "no: %s", err);
		} else if (!d.oracle && !d.reference) {
			sf_buf_puts(&notes, "no: neither a C oracle nor a PyTorch reference");
		} else if (d.custom_inputs_entrypoint && !d.oracle) {
			sf_buf_printf(&notes, "no: custom inputs come from Python (%s); the runners draw inputs in C",
				      d.custom_inputs_entrypoint);
		} else {
			int missing = 0;
			for (int w = 0; w < nw; w++)
				for (int k = 0; k < ws[w].n_inputs; k++)
					missing += ws[w].inputs[k].type == SF_WIN_SAFETENSORS && !sf_file_exists(ws[w].inputs[k].path);
			if (missing) {
				sf_buf_printf(&notes, "no: %d safetensors input blob(s) absent", missing);
			} else {
				ok = 1;
				sf_buf_puts(&notes, d.oracle ? "yes" : "yes (PyTorch reference through the bridge: needs torch)");
			}
		}
		if (ok && out && !strcmp(f[i].layout, "flashinfer-bench")) {
			if (write_copy(out, &d, f[i].wl, err, sizeof err)) {
				sf_buf_printf(&notes, "; not written: %s", err);
				ok = 0;
			} else {
				sf_buf_printf(&notes, "; written to %s/%s", out, d.name);
			}
		}
		n_ok += ok;
		printf("%-44s %-17s %-9s %9d  %s\n", d.name, f[i].layout, oracle, nw, notes.data);
		sf_buf_free(&notes);
		sf_workloads_free(ws, nw);
		sf_definition_free(&d);
	}
	printf("%d of %d problems evaluable\n", n_ok, n);
	for (int i = 0; i < n; i++) {
		free(f[i].def);
		free(f[i].wl);
	}
	free(f);
	return n_ok == n ? SF_EXIT_OK : SF_EXIT_FAILED;
}
