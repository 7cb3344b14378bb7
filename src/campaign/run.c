/*
 * run.c - the campaign's main loop: set-up, resume, worker threads, budgets, live status (see
 * campaign.h).
 *
 * Each worker is a thread that asks the planner for a problem (under c->mu), runs one attempt with
 * the agent without holding the lock (the agent's evaluations are child processes), records the
 * attempt's end and asks again; a finishing worker wakes the others, so the planner rebalances at
 * every finish. The first attempt on a problem seeds it: every bundled solution for the backend is
 * evaluated, the best of them is the starting point. Worker i runs on GPU gpus[i % n] (its child
 * processes get CUDA_VISIBLE_DEVICES); timing on a GPU is exclusive through the gpulock files.
 */
#include "campaign/campaign.h"
#include "core/backend.h"
#include "core/compile.h"
#include "core/problem.h"
#include "core/status.h"
#include "core/util.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>

static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static volatile sig_atomic_t interrupted;

static void on_int(int sig)
{
	interrupted = 1;
	signal(sig, SIG_DFL); /* a second one ends the process */
}

void sf_camp_logf(sf_camp *c, const char *fmt, ...)
{
	sf_buf b = { 0 };
	va_list ap;
	va_start(ap, fmt);
	sf_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	char ts[32];
	sf_iso8601(ts);
	pthread_mutex_lock(&c->mu);
	if (c->log) {
		fprintf(c->log, "%s +%.0fs %s\n", ts, sf_now() - c->t0, b.data);
		fflush(c->log);
	}
	if (!c->o.live)
		fprintf(stderr, "[%6.0fs] %s\n", sf_now() - c->t0, b.data);
	pthread_mutex_unlock(&c->mu);
	sf_buf_free(&b);
}

int sf_camp_stopping(sf_camp *c)
{
	if (interrupted)
		c->stop = 1;
	if (c->o.budget_s > 0 && sf_now() - c->t0 > c->o.budget_s)
		c->stop = 1;
	return c->stop;
}

/* The seed attempt: every bundled solution evaluated as it is. */
static int seed_attempt(sf_camp *c, sf_camp_worker *w, sf_camp_problem *p, int64_t attempt, char *err, size_t errlen)
{
	char **files = sf_camp_bundled(c, p);
	int n = 0;
	for (int i = 0; files[i]; i++) {
		if (sf_camp_stopping(c))
			break;
		pthread_mutex_lock(&c->mu);
		snprintf(w->what, sizeof w->what, "seed %s", sf_basename(files[i]));
		pthread_mutex_unlock(&c->mu);
		sf_camp_eval ev;
		char e2[512];
		int er = sf_camp_evaluate(c, w, p, attempt, files[i], NULL, &ev, e2, sizeof e2);
		if (er < 0)
			sf_camp_logf(c, "worker %d: %s: %s", w->id, p->name, e2);
		else if (er == 0)
			free(ev.summary);
		n++;
	}
	for (int i = 0; files[i]; i++)
		free(files[i]);
	free(files);
	if (!n && !c->stop) {
		sf_errf(err, errlen, "%s has no bundled %s solution to start from", p->name, c->backend);
		return -1;
	}
	return 0;
}

/* Kills every process of this user whose environment names ws as its SOLFORGE_WORKSPACE: what an agent the last run
 * left running started and that outlived it (the agent's first process dies with the campaign, PR_SET_PDEATHSIG, but
 * not what that one started). Returns how many were killed. */
static int kill_leftovers(const char *ws)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	sf_buf want = { 0 };
	sf_buf_printf(&want, "SOLFORGE_WORKSPACE=%s", ws);
	int killed = 0;
	for (struct dirent *e; (e = readdir(d));) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 1 || pid == (long)getpid())
			continue;
		char path[64], *env = NULL;
		size_t len = 0;
		char err[128];
		snprintf(path, sizeof path, "/proc/%ld/environ", pid);
		if (sf_read_file(path, &env, &len, err, sizeof err))
			continue;
		int match = 0;
		for (size_t i = 0; i < len && !match; i += strlen(env + i) + 1)
			match = !strcmp(env + i, want.data);
		free(env);
		if (match && kill((pid_t)pid, SIGKILL) == 0)
			killed++;
	}
	closedir(d);
	sf_buf_free(&want);
	return killed;
}

/* Worker w evaluates the workspace solution of every agent attempt the last run left running (c->recover, taken one
 * at a time under c->mu), as an official evaluation of that attempt. */
static void recover_interrupted(sf_camp *c, sf_camp_worker *w)
{
	for (;;) {
		pthread_mutex_lock(&c->mu);
		int64_t attempt = c->n_recover ? c->recover[--c->n_recover] : 0;
		int64_t pid = attempt ? sf_db_i64(c->db, 0, "SELECT problem_id FROM attempts WHERE id=?", "i", attempt) : 0;
		sf_camp_problem *p = NULL;
		for (int i = 0; i < c->n_probs && !p; i++)
			if (c->probs[i].id == pid)
				p = &c->probs[i];
		pthread_mutex_unlock(&c->mu);
		if (!attempt)
			return;
		if (!p || sf_camp_stopping(c))
			continue;
		sf_buf b = { 0 };
		sf_buf_printf(&b, "%s/ws/%s-a%lld", c->dir, p->name, (long long)attempt);
		char *ws = sf_buf_take(&b);
		const int left = kill_leftovers(ws);
		if (left)
			sf_camp_logf(c, "worker %d: %s: killed %d process(es) left running in the workspace of attempt %lld", w->id,
				     p->name, left, (long long)attempt);
		char *sol = sf_path_join(ws, !strcmp(c->backend, "cuda") ? "solution.cu" : "solution.c");
		free(ws);
		if (sf_file_exists(sol)) {
			sf_camp_logf(c, "worker %d: %s: evaluating the workspace of interrupted attempt %lld", w->id, p->name,
				     (long long)attempt);
			sf_camp_eval ev;
			char err[1024];
			int er = sf_camp_evaluate(c, w, p, attempt, sol, NULL, &ev, err, sizeof err);
			if (er < 0)
				sf_camp_logf(c, "worker %d: %s: attempt %lld: %s", w->id, p->name, (long long)attempt, err);
			else if (er == 0)
				free(ev.summary);
		}
		free(sol);
	}
}

static void *worker_main(void *arg)
{
	sf_camp_worker *w = arg;
	sf_camp *c = (sf_camp *)((char *)(w - w->id) - offsetof(sf_camp, workers));
	recover_interrupted(c, w);
	pthread_mutex_lock(&c->mu);
	for (;;) {
		if (sf_camp_stopping(c))
			break;
		int64_t attempt = 0;
		sf_camp_problem *p = sf_camp_plan(c, w, &attempt);
		if (!p) {
			int busy = 0;
			for (int i = 0; i < c->o.workers; i++)
				busy += c->workers[i].attempt != 0;
			if (!busy)
				break; /* nothing left for anyone */
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&wake, &c->mu, &ts);
			continue;
		}
		char *agent = sf_db_text(c->db, "SELECT agent FROM attempts WHERE id=?", "i", attempt);
		int seed = agent && !strcmp(agent, "seed");
		free(agent);
		w->attempt = attempt;
		w->problem = p->name;
		w->since = sf_now();
		snprintf(w->what, sizeof w->what, "%s", seed ? "seeding" : "starting");
		pthread_mutex_unlock(&c->mu);
		sf_camp_logf(c, "worker %d%s%s: attempt %lld on %s (%s)", w->id, w->gpu ? " gpu " : "", w->gpu ? w->gpu : "",
			     (long long)attempt, p->name, seed ? "seed" : c->o.agent_spec);
		char err[1024] = "";
		int rc;
		if (seed)
			rc = seed_attempt(c, w, p, attempt, err, sizeof err);
		else if (c->o.agent == SF_AGENT_TUNE)
			rc = sf_agent_tune(c, w, p, attempt, err, sizeof err);
		else if (c->o.agent == SF_AGENT_CMD)
			rc = sf_agent_cmd(c, w, p, attempt, err, sizeof err);
		else
			rc = sf_agent_openai(c, w, p, attempt, err, sizeof err);
		if (rc)
			sf_camp_logf(c, "worker %d: attempt %lld on %s failed: %s", w->id, (long long)attempt, p->name, err);
		pthread_mutex_lock(&c->mu);
		int improved = sf_db_i64(c->db, 0, "SELECT count(*) FROM evaluations WHERE attempt_id=? AND improved=1", "i",
					 attempt) > 0;
		sf_db_begin(c->db);
		sf_db_exec(c->db, "UPDATE attempts SET state=?, finished=?, improved=?, error=COALESCE(?,error) WHERE id=?", "sdisi",
			   rc ? "failed" : c->stop ? "stopped" : "done", sf_wall_time(), (int64_t)improved, rc ? err : NULL,
			   attempt);
		if (seed) /* the first solution the report compares with: the best bundled one, not the first evaluated */
			sf_db_exec(c->db, "UPDATE problems SET seeded=1, first_eval=COALESCE(best_eval,first_eval) WHERE id=?", "i",
				   p->id);
		else if (improved)
			sf_db_exec(c->db, "UPDATE problems SET since_improve=0 WHERE id=?", "i", p->id);
		else
			sf_db_exec(c->db, "UPDATE problems SET since_improve=since_improve+1 WHERE id=?", "i", p->id);
		sf_db_commit(c->db);
		p->busy--;
		w->attempt = 0;
		w->problem = NULL;
		snprintf(w->what, sizeof w->what, "idle");
		pthread_cond_broadcast(&wake);
	}
	pthread_cond_broadcast(&wake);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* The live status table (terminal): workers, then problems by best speedup. c->mu held. */
static void draw(sf_camp *c)
{
	double el = sf_now() - c->t0;
	int64_t ne = sf_db_i64(c->db, 0, "SELECT count(*) FROM evaluations", ""),
		ni = sf_db_i64(c->db, 0, "SELECT count(*) FROM evaluations WHERE improved=1", "");
	fprintf(stderr, "\033[H\033[J");
	fprintf(stderr, "solforge campaign  %s  agent %s  backend %s  elapsed %.0fs", c->o.db_path, c->o.agent_spec, c->backend, el);
	if (c->o.budget_s > 0)
		fprintf(stderr, " / %.0fs", c->o.budget_s);
	fprintf(stderr, "  evaluations %lld  improvements %lld%s\n\n", (long long)ne, (long long)ni,
		c->stop ? "  (stopping: finishing running attempts)" : "");
	fprintf(stderr, "%-7s %-8s %-38s %8s  %s\n", "worker", "gpu", "problem", "for", "doing");
	for (int i = 0; i < c->o.workers; i++) {
		sf_camp_worker *w = &c->workers[i];
		fprintf(stderr, "%-7d %-8s %-38.38s %7.0fs  %.60s\n", w->id, w->gpu ? w->gpu : c->backend,
			w->problem ? w->problem : "-", w->attempt ? sf_now() - w->since : 0.0, w->what);
	}
	fprintf(stderr, "\n%-40s %8s %10s %7s\n", "problem", "attempts", "speedup", "SOL");
	for (int i = 0; i < c->n_probs && i < 30; i++) {
		sf_camp_problem *p = &c->probs[i];
		fprintf(stderr, "%-40.40s %8lld %9.3fx %7.3f\n", p->name,
			(long long)sf_db_i64(c->db, 0, "SELECT attempts FROM problems WHERE id=?", "i", p->id),
			sf_db_dbl(c->db, "SELECT e.speedup FROM problems p JOIN evaluations e ON e.id=p.best_eval WHERE p.id=?",
				  "i", p->id),
			sf_db_dbl(c->db, "SELECT e.score FROM problems p JOIN evaluations e ON e.id=p.best_eval WHERE p.id=?",
				  "i", p->id));
	}
	fflush(stderr);
}

/* Frees the campaign and everything it owns (the database is closed by the caller). */
static void camp_free(sf_camp *c)
{
	for (int i = 0; i < c->n_probs; i++) {
		free(c->probs[i].name);
		free(c->probs[i].path);
		free(c->probs[i].op_type);
	}
	free(c->probs);
	for (int i = 0; i < c->n_inflight; i++)
		free(c->inflight[i]);
	free(c->inflight);
	free(c->recover);
	if (c->log)
		fclose(c->log);
	free(c->self);
	free(c->home);
	free(c->dir);
	free(c->locks);
	free(c->eval_sig);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* Registers the problem folders given, then loads every problem of the database into c->probs. */
static int load_problems(sf_camp *c, char **paths, int n, char *err, size_t errlen)
{
	for (int i = 0; i < n; i++) {
		sf_definition d;
		if (sf_definition_load(paths[i], &d, err, errlen))
			return -1;
		sf_db_exec(c->db, "INSERT INTO problems(name,path,op_type) VALUES(?,?,?) ON CONFLICT(name) DO UPDATE SET path=excluded.path",
			   "sss", d.name, d.dir, d.op_type);
		sf_definition_free(&d);
	}
	struct sqlite3_stmt *st = NULL;
	int64_t count = sf_db_i64(c->db, 0, "SELECT count(*) FROM problems", "");
	c->probs = sf_xcalloc((size_t)count + 1, sizeof *c->probs);
	for (int64_t id = 1, k = 0; k < count; id++) {
		char *name = sf_db_text(c->db, "SELECT name FROM problems WHERE id=?", "i", id);
		if (!name)
			continue;
		sf_camp_problem *p = &c->probs[c->n_probs++];
		p->id = id;
		p->name = name;
		p->path = sf_db_text(c->db, "SELECT path FROM problems WHERE id=?", "i", id);
		p->op_type = sf_db_text(c->db, "SELECT op_type FROM problems WHERE id=?", "i", id);
		p->weight = sf_db_dbl(c->db, "SELECT weight FROM problems WHERE id=?", "i", id);
		if (!isfinite(p->weight))
			p->weight = 1;
		k++;
		/* the content every evaluation of this run is checked against (and keyed by) */
		if (!p->path || sf_camp_tree_hash(p->path, p->content, err, errlen))
			return -1;
	}
	(void)st;
	if (!c->n_probs) {
		sf_errf(err, errlen, "no problems: name problem folders (or --resume a database that has them)");
		return -1;
	}
	return 0;
}

int sf_campaign_run(sf_camp_opts *o, char **problems, int n_problems)
{
	sf_camp *c = sf_xcalloc(1, sizeof *c);
	c->o = *o;
	pthread_mutex_init(&c->mu, NULL);
	c->t0 = sf_now();
	char err[2048];
	int code = SF_EXIT_INTERNAL;
	const sf_backend *be = o->backend ? sf_backend_get(o->backend) : sf_backend_best();
	if (!be) {
		fprintf(stderr, "solforge: unknown backend '%s' (cpu or cuda)\n", o->backend);
		camp_free(c);
		return SF_EXIT_USAGE;
	}
	if (!be->available(err, sizeof err)) {
		fprintf(stderr, "solforge: the %s backend is not available: %s\n", be->name, err);
		camp_free(c);
		return SF_EXIT_NO_BACKEND;
	}
	c->backend = be->name;
	c->self = realpath("/proc/self/exe", NULL);
	c->home = sf_home();
	sf_buf b = { 0 };
	/* absolute: the workspace, brief and lock paths handed to the agents must mean the same from their folders */
	char cwd[4096];
	if (o->db_path[0] != '/' && getcwd(cwd, sizeof cwd))
		sf_buf_printf(&b, "%s/%s.d", cwd, o->db_path);
	else
		sf_buf_printf(&b, "%s.d", o->db_path);
	c->dir = sf_buf_take(&b);
	const char *locks = getenv("SOLFORGE_GPU_LOCKS");
	c->locks = locks && *locks ? sf_xstrdup(locks) : sf_path_join(c->dir, "locks");
	if (sf_mkdir_p(c->dir, err, sizeof err) || sf_mkdir_p(c->locks, err, sizeof err)) {
		fprintf(stderr, "solforge: %s\n", err);
		camp_free(c);
		return SF_EXIT_INTERNAL;
	}
	sf_buf_printf(&b, "backend=%s", c->backend);
	for (int i = 0; i < o->n_eval_args; i++)
		sf_buf_printf(&b, " %s", o->eval_args[i]);
	c->eval_sig = sf_buf_take(&b);
	char *logp = sf_path_join(c->dir, "campaign.log");
	c->log = fopen(logp, "a");
	free(logp);
	c->db = sf_db_open(o->db_path, 0, err, sizeof err);
	if (!c->db) {
		fprintf(stderr, "solforge: %s\n", err);
		camp_free(c);
		return SF_EXIT_INTERNAL;
	}
	int64_t prior = sf_db_i64(c->db, 0, "SELECT count(*) FROM attempts", "");
	if (prior && !o->resume) {
		fprintf(stderr, "solforge: %s already holds a campaign (%lld attempts): pass --resume to continue it, or "
				"another --db\n", o->db_path, (long long)prior);
		sf_db_close(c->db);
		camp_free(c);
		return SF_EXIT_USAGE;
	}
	/* --max-tokens counts the whole campaign, earlier runs included (it restarted at 0 on every --resume) */
	c->tokens_used = sf_db_i64(c->db, 0, "SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM attempts", "");
	/* attempts that were running when the last run died: closed; their finished evaluations stay, and an agent's
	 * workspace is evaluated before anything else (its work may have been done when the run died) */
	int64_t n_running = sf_db_i64(c->db, 0, "SELECT count(*) FROM attempts WHERE state='running'", "");
	c->recover = sf_xcalloc((size_t)n_running + 1, sizeof *c->recover);
	for (int64_t id = 0; c->n_recover < n_running;) {
		id = sf_db_i64(c->db, 0, "SELECT COALESCE(MIN(id),0) FROM attempts WHERE state='running' AND id>? AND "
					 "(agent LIKE 'cmd:%' OR agent LIKE 'openai:%')", "i", id);
		if (!id)
			break;
		c->recover[c->n_recover++] = id;
	}
	sf_db_exec(c->db, "UPDATE attempts SET state='interrupted', finished=COALESCE(finished,?) WHERE state='running'", "d",
		   sf_wall_time());
	char *prev_sig = sf_db_text(c->db, "SELECT value FROM meta WHERE key='eval_sig'", "");
	if (prev_sig && strcmp(prev_sig, c->eval_sig))
		fprintf(stderr, "solforge: note: evaluation settings differ from the database's (%s); earlier evaluations "
				"are kept but not reused\n", prev_sig);
	free(prev_sig);
	sf_db_exec(c->db, "INSERT OR REPLACE INTO meta(key,value) VALUES('eval_sig',?)", "s", c->eval_sig);
	sf_db_exec(c->db, "INSERT OR REPLACE INTO meta(key,value) VALUES('agent',?)", "s", o->agent_spec);
	sf_db_exec(c->db, "INSERT OR REPLACE INTO meta(key,value) VALUES('backend',?)", "s", c->backend);
	sf_db_exec(c->db, "INSERT OR IGNORE INTO meta(key,value) VALUES('started',?)", "s", "");
	char iso[32];
	sf_iso8601(iso);
	sf_db_exec(c->db, "UPDATE meta SET value=? WHERE key='started' AND value=''", "s", iso);
	sf_db_exec(c->db, "INSERT INTO meta(key,value) VALUES('run:' || (SELECT count(*) FROM meta WHERE key LIKE 'run:%'), ?)",
		   "s", iso);
	if (load_problems(c, problems, n_problems, err, sizeof err)) {
		fprintf(stderr, "solforge: %s\n", err);
		sf_db_close(c->db);
		camp_free(c);
		return SF_EXIT_BAD_INPUT;
	}
	if (o->agent == SF_AGENT_TUNE) {
		for (int i = 0; i < c->n_probs; i++) {
			/* tunable when some bundled solution declares parameters */
			char **files = sf_camp_bundled(c, &c->probs[i]);
			c->probs[i].tune_state = -1;
			for (int k = 0; files[k]; k++) {
				char *text;
				size_t len;
				sf_tune_space sp;
				char e2[256];
				if (!sf_read_file(files[k], &text, &len, e2, sizeof e2)) {
					if (!sf_tune_parse(text, &sp, e2, sizeof e2) && sp.n)
						c->probs[i].tune_state = 1;
					free(text);
				}
				free(files[k]);
			}
			free(files);
		}
	}
	sf_camp_logf(c, "campaign %s: %d problems, agent %s, %d workers, backend %s%s", o->db_path, c->n_probs, o->agent_spec,
		     o->workers, c->backend, o->resume ? " (resumed)" : "");
	signal(SIGINT, on_int);
	signal(SIGTERM, on_int);
	pthread_t th[SF_CAMP_MAX_WORKERS];
	int joined[SF_CAMP_MAX_WORKERS] = { 0 };
	for (int i = 0; i < o->workers; i++) {
		c->workers[i].id = i;
		c->workers[i].gpu = !strcmp(c->backend, "cuda") && o->n_gpus ? o->gpus[i % o->n_gpus] : NULL;
		snprintf(c->workers[i].what, sizeof c->workers[i].what, "idle");
		if (pthread_create(&th[i], NULL, worker_main, &c->workers[i])) {
			fprintf(stderr, "solforge: cannot start worker %d: %s\n", i, strerror(errno));
			o->workers = i;
			c->o.workers = i;
			break;
		}
	}
	/* the main thread watches the budget and draws */
	for (;;) {
		pthread_mutex_lock(&c->mu);
		sf_camp_stopping(c);
		int busy = 0;
		for (int i = 0; i < c->o.workers; i++)
			busy += c->workers[i].attempt != 0;
		if (o->live)
			draw(c);
		pthread_mutex_unlock(&c->mu);
		struct timespec ts = { 0, 500 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&c->mu);
		/* done when every worker thread has left its loop: they leave when nothing is left or on stop */
		int done = 1;
		for (int i = 0; i < c->o.workers; i++) {
			if (!joined[i] && pthread_tryjoin_np(th[i], NULL) == 0)
				joined[i] = 1;
			done &= joined[i];
		}
		pthread_mutex_unlock(&c->mu);
		(void)busy;
		if (done)
			break;
	}
	sf_camp_import_timing(c);
	if (c->o.live)
		draw(c); /* the final state stays on the screen; the closing line below goes under it */
	c->o.live = 0;
	int64_t ne = sf_db_i64(c->db, 0, "SELECT count(*) FROM evaluations", ""),
		ni = sf_db_i64(c->db, 0, "SELECT count(*) FROM evaluations WHERE improved=1 AND attempt_id IN "
					 "(SELECT id FROM attempts WHERE agent<>'seed')", "");
	sf_camp_logf(c, "campaign %s: %s after %.0f s: %lld evaluations, %lld improvements over the seeds", o->db_path,
		     interrupted ? "interrupted" : c->stop ? "budget spent" : "finished", sf_now() - c->t0, (long long)ne,
		     (long long)ni);
	code = interrupted ? 130 : SF_EXIT_OK;
	sf_db_close(c->db);
	camp_free(c);
	return code;
}
