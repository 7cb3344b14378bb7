/*
 * workspace.c - an attempt's workspace and brief, bundled solutions, lessons (see campaign.h).
 *
 * Workspace <db>.d/ws/<problem>-a<attempt>/:
 *   problem/      a read-only copy of the problem folder (definition.json, workload.jsonl, oracle.c, solutions/)
 *   solution.cu   (solution.c on cpu) the best solution so far, with its tune defines written in as a
 *                 "// solforge-cflags:" line; the agent edits this file; it is what gets evaluated
 *   HISTORY.md    the problem's evaluations so far: solution, defines, status, speedup, S, errors
 *   PROTOCOL.md   the protocol (output format, ABI, rules, what counts as cheating, NOTES.md)
 *   LESSONS.md    NOTES of earlier improving attempts on the same op type
 *   BRIEF.md      the task: problem, backend, current best, how to evaluate
 *   NOTES.md      for the agent to fill in
 */
#include "campaign/campaign.h"
#include "core/util.h"

#include <dirent.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **sf_camp_bundled(sf_camp *c, const sf_camp_problem *p)
{
	const char *ext = !strcmp(c->backend, "cuda") ? ".cu" : ".c";
	char *dir = sf_path_join(p->path, "solutions");
	DIR *d = opendir(dir);
	char **out = sf_xcalloc(1, sizeof(char *));
	int n = 0;
	if (d) {
		for (struct dirent *e; (e = readdir(d));) {
			size_t l = strlen(e->d_name), el = strlen(ext);
			if (l <= el || strcmp(e->d_name + l - el, ext) || e->d_name[0] == '.')
				continue;
			if (c->o.solutions) {
				/* only the names listed in --solutions */
				int listed = 0;
				for (const char *q = c->o.solutions; *q && !listed;) {
					size_t k = strcspn(q, ",");
					listed = k == l && !strncmp(q, e->d_name, k);
					q += k + (q[k] == ',');
				}
				if (!listed)
					continue;
			}
			out = sf_xrealloc(out, sizeof(char *) * (size_t)(n + 2));
			out[n++] = sf_path_join(dir, e->d_name);
			out[n] = NULL;
		}
		closedir(d);
	}
	qsort(out, (size_t)n, sizeof(char *), cmp_str);
	free(dir);
	return out;
}

/* The best solution's text with its defines written in, or NULL when there is no best yet. */
static char *best_text(sf_camp *c, const sf_camp_problem *p)
{
	pthread_mutex_lock(&c->mu);
	char *src = sf_db_text(c->db, "SELECT e.source FROM problems p JOIN evaluations e ON e.id=p.best_eval WHERE p.id=?",
			       "i", p->id);
	char *defs = sf_db_text(c->db, "SELECT e.defines FROM problems p JOIN evaluations e ON e.id=p.best_eval WHERE p.id=?",
				"i", p->id);
	pthread_mutex_unlock(&c->mu);
	if (!src) {
		free(defs);
		return NULL;
	}
	sf_buf b = { 0 };
	if (defs && *defs) {
		sf_buf_puts(&b, "// solforge-cflags:");
		char *save = NULL;
		for (char *t = strtok_r(defs, " ", &save); t; t = strtok_r(NULL, " ", &save))
			sf_buf_printf(&b, " -D%s", t);
		sf_buf_puts(&b, "\n");
	}
	sf_buf_puts(&b, src);
	free(src);
	free(defs);
	return sf_buf_take(&b);
}

/*
 * A copy of text in which every line `#include "REL"` whose REL is a relative path that names a file
 * from dir (the folder the text came from: the problem's solutions/) reads `#include "ABS"` with the
 * file's absolute path instead, so that the solution still compiles from the workspace (the bundled
 * solutions share kernels through relative includes, e.g. ../../../common/kernels/). Other lines are
 * kept byte for byte. The caller frees the result.
 */
char *sf_camp_absolute_includes(const char *text, const char *dir)
{
	sf_buf b = { 0 };
	for (const char *line = text; *line;) {
		const char *nl = strchr(line, '\n');
		const size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);
		const char *q = line;
		while (*q == ' ' || *q == '\t')
			q++;
		char *abs = NULL;
		const char *open = NULL, *close = NULL;
		if (!strncmp(q, "#include", 8)) {
			open = q + 8;
			while (*open == ' ' || *open == '\t')
				open++;
			close = *open == '"' ? strchr(open + 1, '"') : NULL;
			if (close && close < line + len && close > open + 1 && open[1] != '/') {
				char *rel = sf_xstrndup(open + 1, (size_t)(close - open - 1));
				char *joined = sf_path_join(dir, rel);
				abs = realpath(joined, NULL);
				free(rel);
				free(joined);
			}
		}
		if (abs) {
			sf_buf_printf(&b, "%.*s\"%s%.*s", (int)(open - line), line, abs, (int)(line + len - close), close);
			free(abs);
		} else {
			sf_buf_printf(&b, "%.*s", (int)len, line);
		}
		line += len;
	}
	return b.data ? sf_buf_take(&b) : sf_xstrdup("");
}

static void put(const char *dir, const char *name, const char *text)
{
	char *f = sf_path_join(dir, name);
	char err[256];
	if (sf_write_file(f, text, strlen(text), err, sizeof err))
		fprintf(stderr, "solforge: %s\n", err);
	free(f);
}

static char *history_text(sf_camp *c, const sf_camp_problem *p)
{
	sf_buf b = { 0 };
	sf_buf_printf(&b, "# History of %s\n\nEvery official evaluation so far, newest first (at most 30).\n\n", p->name);
	pthread_mutex_lock(&c->mu);
	sqlite3_stmt *st = sf_db_prepare(c->db,
					 "SELECT e.id, e.solution, e.defines, e.status, e.speedup, e.score, e.improved, a.agent, "
					 "e.error FROM evaluations e LEFT JOIN attempts a ON a.id=e.attempt_id "
					 "WHERE e.problem_id=? ORDER BY e.id DESC LIMIT 30", "i", p->id);
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		const char *sol = (const char *)sqlite3_column_text(st, 1), *defs = (const char *)sqlite3_column_text(st, 2),
			   *status = (const char *)sqlite3_column_text(st, 3), *agent = (const char *)sqlite3_column_text(st, 7),
			   *er = (const char *)sqlite3_column_text(st, 8);
		sf_buf_printf(&b, "- eval %lld by %s: %s %s -> %s, speedup %.4gx, S %.3f%s\n", (long long)sqlite3_column_int64(st, 0),
			      agent ? agent : "?", sol ? sf_basename(sol) : "?", defs ? defs : "", status ? status : "?",
			      sqlite3_column_type(st, 4) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 4),
			      sqlite3_column_type(st, 5) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 5),
			      sqlite3_column_int(st, 6) ? "  (new best)" : "");
		if (er && *er)
			sf_buf_printf(&b, "  ```\n  %.600s\n  ```\n", er);
	}
	sqlite3_finalize(st);
	pthread_mutex_unlock(&c->mu);
	return sf_buf_take(&b);
}

static char *lessons_text(sf_camp *c, const sf_camp_problem *p)
{
	sf_buf b = { 0 };
	sf_buf_printf(&b, "# Lessons for op type %s\n\nNOTES of earlier attempts that improved a problem of this op type.\n\n",
		      p->op_type ? p->op_type : "?");
	pthread_mutex_lock(&c->mu);
	sqlite3_stmt *st = sf_db_prepare(c->db,
					 "SELECT l.attempt_id, pr.name, l.text FROM lessons l JOIN problems pr ON pr.id=l.problem_id "
					 "WHERE l.op_type=? ORDER BY l.id DESC LIMIT 20", "s", p->op_type ? p->op_type : "");
	while (st && sqlite3_step(st) == SQLITE_ROW)
		sf_buf_printf(&b, "## attempt %lld on %s\n\n%s\n\n", (long long)sqlite3_column_int64(st, 0),
			      (const char *)sqlite3_column_text(st, 1), (const char *)sqlite3_column_text(st, 2));
	sqlite3_finalize(st);
	pthread_mutex_unlock(&c->mu);
	return sf_buf_take(&b);
}

static char *protocol_text(sf_camp *c)
{
	char *path = c->o.protocol ? sf_xstrdup(c->o.protocol) : sf_path_join(c->home, "PROTOCOL.md");
	char *text = NULL;
	size_t len;
	char err[256];
	if (sf_read_file(path, &text, &len, err, sizeof err))
		text = sf_xstrdup("(no protocol file found: write solution.cu / solution.c against "
				  "include/solforge/solution.h)\n");
	free(path);
	return text;
}

static char *task_text(sf_camp *c, const sf_camp_problem *p, const char *ws)
{
	const char *ext = !strcmp(c->backend, "cuda") ? "cu" : "c";
	pthread_mutex_lock(&c->mu);
	double sp = sf_db_dbl(c->db, "SELECT e.speedup FROM problems p JOIN evaluations e ON e.id=p.best_eval WHERE p.id=?", "i",
			      p->id);
	double sc = sf_db_dbl(c->db, "SELECT e.score FROM problems p JOIN evaluations e ON e.id=p.best_eval WHERE p.id=?", "i",
			      p->id);
	pthread_mutex_unlock(&c->mu);
	sf_buf b = { 0 };
	sf_buf_printf(&b,
		      "# Task\n\nMake `solution.%s` in this folder faster on problem **%s** (op type %s), keeping it correct.\n"
		      "The problem is in `problem/` (definition.json, workload.jsonl, oracle.c: the reference).\n"
		      "Backend: %s. Best so far: speedup %.4gx over the baseline (geomean), SOL score %.3f (median; 1.0 is "
		      "the hardware limit).\n\n"
		      "Evaluate while you work (quick, unofficial):\n\n    %s eval problem solution.%s --budget-ms 300 --backend %s\n\n"
		      "When you stop, solution.%s is evaluated officially; what you report is not trusted. Write what you "
		      "learned to NOTES.md (see PROTOCOL.md). HISTORY.md lists earlier evaluations, LESSONS.md what worked "
		      "on this op type. Workspace: %s\n",
		      ext, p->name, p->op_type ? p->op_type : "?", c->backend, sp, sc, c->self, ext, c->backend, ext, ws);
	return sf_buf_take(&b);
}

char *sf_camp_brief_text(sf_camp *c, sf_camp_problem *p, const char *ws)
{
	char *proto = protocol_text(c), *task = task_text(c, p, ws), *hist = history_text(c, p), *less = lessons_text(c, p);
	sf_buf b = { 0 };
	sf_buf_printf(&b, "%s\n\n%s\n\n%s\n\n%s", proto, task, hist, less);
	free(proto);
	free(task);
	free(hist);
	free(less);
	return sf_buf_take(&b);
}

char *sf_camp_workspace(sf_camp *c, sf_camp_problem *p, int64_t attempt, char **sol_path, char *err, size_t errlen)
{
	sf_buf sub = { 0 };
	sf_buf_printf(&sub, "ws/%s-a%lld", p->name, (long long)attempt);
	char *ws = sf_path_join(c->dir, sub.data);
	sf_buf_free(&sub);
	sf_rm_rf(ws);
	if (sf_mkdir_p(ws, err, errlen)) {
		free(ws);
		return NULL;
	}
	/* a read-only copy of the problem, not a link: what the agent edits there is its own (the official evaluation
	 * reads the suite's folder, whose content hash is checked before every evaluation: evaluate.c) */
	char *pcopy = sf_path_join(ws, "problem");
	if (sf_camp_tree_copy(p->path, pcopy, err, errlen)) {
		free(pcopy);
		free(ws);
		return NULL;
	}
	free(pcopy);
	char *sol = best_text(c, p);
	if (!sol) {
		char **b = sf_camp_bundled(c, p);
		size_t len;
		char e2[256];
		if (!b[0] || sf_read_file(b[0], &sol, &len, e2, sizeof e2))
			sol = sf_xstrdup("/* write the solution here: see PROTOCOL.md and include/solforge/solution.h */\n");
		for (int i = 0; b[i]; i++)
			free(b[i]);
		free(b);
	}
	const char *name = !strcmp(c->backend, "cuda") ? "solution.cu" : "solution.c";
	char *sdir = sf_path_join(p->path, "solutions");
	char *fixed = sf_camp_absolute_includes(sol, sdir);
	put(ws, name, fixed);
	free(fixed);
	free(sdir);
	free(sol);
	*sol_path = sf_path_join(ws, name);
	char *t = history_text(c, p);
	put(ws, "HISTORY.md", t);
	free(t);
	t = lessons_text(c, p);
	put(ws, "LESSONS.md", t);
	free(t);
	t = protocol_text(c);
	put(ws, "PROTOCOL.md", t);
	free(t);
	t = task_text(c, p, ws);
	put(ws, "BRIEF.md", t);
	free(t);
	put(ws, "NOTES.md", "");
	return ws;
}

void sf_camp_add_lessons(sf_camp *c, sf_camp_problem *p, int64_t attempt, const char *ws)
{
	char *f = sf_path_join(ws, "NOTES.md"), *text = NULL;
	size_t len;
	char err[256];
	if (!sf_read_file(f, &text, &len, err, sizeof err) && len > 0) {
		if (len > 8000)
			text[8000] = 0;
		pthread_mutex_lock(&c->mu);
		sf_db_exec(c->db, "INSERT INTO lessons(op_type,problem_id,attempt_id,t,text) VALUES(?,?,?,?,?)", "siids",
			   p->op_type ? p->op_type : "", p->id, attempt, sf_wall_time(), text);
		pthread_mutex_unlock(&c->mu);
	}
	free(text);
	free(f);
}
