/*
 * evaluate.c - official evaluations for the campaign: a child `solforge eval --json` per candidate
 * (a crashing candidate or evaluator takes down only that child), its traces reduced to a
 * problem-level result, recorded with the best-per-problem update in one transaction (see campaign.h).
 *
 * Problem-level result of one evaluation, over the workloads it evaluated (skipped ones left out):
 *   correct  = at least one PASSED and none failed;
 *   speedup  = geometric mean of T_b/T_k over the PASSED workloads;
 *   score    = median SOL score S over the PASSED workloads;
 *   latency  = geometric mean of T_k;
 *   sol_frac = geometric mean of T_sol/T_k (the fraction of the speed of light reached; needs no
 *              baseline, so it is there for problems without a library baseline on the backend).
 * A correct evaluation becomes the problem's best when its speedup exceeds the best's by more than
 * --min-gain (relative), or, where either has no speedup (no baseline), its latency is lower by it;
 * a would-be new best is measured again first and kept only when that run agrees (docs/campaign.md).
 */
#include "campaign/campaign.h"
#include "core/json.h"
#include "core/sha256.h"
#include "core/spawn.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sf_camp_eval_key(const sf_camp *c, const sf_camp_problem *p, const char *text, const char *const *defines,
		      char key[65])
{
	sf_buf b = { 0 };
	sf_buf_printf(&b, "%s", c->eval_sig);
	sf_buf_append(&b, "", 1);
	sf_buf_printf(&b, "%s", p->name);
	sf_buf_append(&b, "", 1);
	sf_buf_puts(&b, p->content); /* a problem changed between runs is measured afresh */
	sf_buf_append(&b, "", 1);
	sf_buf_puts(&b, text);
	for (int i = 0; defines && defines[i]; i++) {
		sf_buf_append(&b, "", 1);
		sf_buf_puts(&b, defines[i]);
	}
	sf_sha256_hex(b.data, b.len, key);
	sf_buf_free(&b);
}

int sf_camp_key_known(sf_camp *c, const char *key)
{
	pthread_mutex_lock(&c->mu);
	int known = sf_db_i64(c->db, 0, "SELECT 1 FROM evaluations WHERE key=?", "s", key) == 1;
	for (int i = 0; !known && i < c->n_inflight; i++)
		known = !strcmp(c->inflight[i], key);
	pthread_mutex_unlock(&c->mu);
	return known;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

typedef struct traces_sum {
	int passed, failed, skipped;
	char status[32];
	double speedup, score, latency, baseline, sol_frac;
	int exit_code;
	sf_buf text;
} traces_sum;

static double num_at(const sf_json *o, const char *a, const char *b)
{
	const sf_json *v = sf_json_get(sf_json_get(o, a), b);
	return v && v->type == SF_JSON_NUMBER ? v->num : NAN;
}

/* Reduces the JSON lines of one evaluation to the problem-level result and a short text. */
static void summarize(const char *traces, traces_sum *s)
{
	memset(s, 0, sizeof *s);
	double lsp = 0, llat = 0, lb = 0, lf = 0, scores[1024];
	int nsp = 0, nlat = 0, nb = 0, nsc = 0, nf = 0;
	for (const char *l = traces; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		char jerr[128];
		sf_json *j = sf_json_parse_ex(l, n, 1, jerr, sizeof jerr);
		l = e ? e + 1 : l + n;
		if (!j)
			continue;
		const sf_json *ev = sf_json_get(j, "evaluation"), *st = sf_json_get(ev, "status"),
			      *uu = sf_json_get(sf_json_get(j, "workload"), "uuid"), *lg = sf_json_get(ev, "log");
		const char *status = st && st->type == SF_JSON_STRING ? st->str : "?";
		double lat = num_at(ev, "performance", "latency_ms"), sp = num_at(ev, "performance", "speedup_factor"),
		       ref = num_at(ev, "performance", "reference_latency_ms"), sc = num_at(ev, "solforge", "sol_score"),
		       sol = num_at(ev, "solforge", "sol_ms");
		if (!strcmp(status, "SKIPPED")) {
			s->skipped++;
		} else if (!strcmp(status, "PASSED")) {
			s->passed++;
			if (isfinite(sp) && sp > 0)
				lsp += log(sp), nsp++;
			if (isfinite(lat) && lat > 0)
				llat += log(lat), nlat++;
			if (isfinite(ref) && ref > 0)
				lb += log(ref), nb++;
			if (isfinite(sc) && nsc < 1024)
				scores[nsc++] = sc;
			if (isfinite(sol) && sol > 0 && isfinite(lat) && lat > 0)
				lf += log(sol / lat), nf++;
		} else {
			s->failed++;
			if (!s->status[0])
				snprintf(s->status, sizeof s->status, "%s", status);
		}
		if (strcmp(status, "SKIPPED")) {
			const char *log_s = lg && lg->type == SF_JSON_STRING ? lg->str : "";
			size_t ll = strcspn(log_s, "\n");
			sf_buf_printf(&s->text, "  %-28.28s %-20s latency %9.4g ms  speedup %6.3gx  S %5.3f%s%.*s\n",
				      uu && uu->type == SF_JSON_STRING ? uu->str : "?", status, lat, sp, sc, ll ? "  " : "",
				      (int)(ll > 240 ? 240 : ll), log_s);
		}
		sf_json_free(j);
	}
	s->speedup = nsp ? exp(lsp / nsp) : NAN;
	s->latency = nlat ? exp(llat / nlat) : NAN;
	s->baseline = nb ? exp(lb / nb) : NAN;
	s->sol_frac = nf ? exp(lf / nf) : NAN;
	if (nsc) {
		qsort(scores, (size_t)nsc, sizeof(double), cmp_dbl);
		s->score = nsc % 2 ? scores[nsc / 2] : 0.5 * (scores[nsc / 2 - 1] + scores[nsc / 2]);
	} else {
		s->score = NAN;
	}
	if (!s->status[0])
		snprintf(s->status, sizeof s->status, "%s", s->passed ? "PASSED" : "NO_RESULT");
}

/* Whether (sp, lat) beats (bsp, blat) by more than gain. */
static int better(double sp, double lat, double bsp, double blat, double gain)
{
	if (isfinite(sp) && isfinite(bsp))
		return sp > bsp * (1 + gain);
	if (isfinite(lat) && isfinite(blat))
		return lat * (1 + gain) < blat;
	return 0;
}

/* Fills out from a finished row. */
static void from_row(sf_camp *c, int64_t id, sf_camp_eval *out)
{
	out->id = id;
	char *st = sf_db_text(c->db, "SELECT status FROM evaluations WHERE id=?", "i", id);
	snprintf(out->status, sizeof out->status, "%s", st ? st : "?");
	free(st);
	out->correct = sf_db_i64(c->db, 0, "SELECT passed>0 AND failed=0 FROM evaluations WHERE id=?", "i", id) == 1;
	out->speedup = sf_db_dbl(c->db, "SELECT speedup FROM evaluations WHERE id=?", "i", id);
	out->score = sf_db_dbl(c->db, "SELECT score FROM evaluations WHERE id=?", "i", id);
	out->latency_ms = sf_db_dbl(c->db, "SELECT latency_ms FROM evaluations WHERE id=?", "i", id);
	char *err = sf_db_text(c->db, "SELECT error FROM evaluations WHERE id=?", "i", id);
	sf_buf b = { 0 };
	sf_buf_printf(&b, "evaluation %lld (already evaluated): %s, speedup %.3gx, S %.3f\n%s", (long long)id, out->status,
		      out->speedup, out->score, err ? err : "");
	free(err);
	out->summary = sf_buf_take(&b);
}

void sf_camp_import_timing(sf_camp *c)
{
	char *path = sf_path_join(c->locks, "timing.log");
	char *text = NULL;
	size_t len;
	char err[256];
	if (sf_read_file(path, &text, &len, err, sizeof err)) {
		free(path);
		return;
	}
	free(path);
	pthread_mutex_lock(&c->mu);
	sf_db_begin(c->db);
	char *save = NULL;
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char start[40], slot[64], prob[128], sol[128], what[128];
		long pid;
		double wait_s, held;
		if (sscanf(l, "%39s %63s %ld %lf %lf %127s %127s %127s", start, slot, &pid, &wait_s, &held, prob, sol, what) != 8)
			continue;
		sf_db_exec(c->db,
			   "INSERT OR IGNORE INTO gpu_timing(line,start,slot,pid,wait_s,held_s,problem,solution,what) "
			   "VALUES(?,?,?,?,?,?,?,?,?)", "sssiddsss", l, start, slot, (int64_t)pid, wait_s, held, prob, sol, what);
	}
	sf_db_commit(c->db);
	pthread_mutex_unlock(&c->mu);
	free(text);
}

/* Drops a key from the evaluations running now. */
static void inflight_done(sf_camp *c, const char *key)
{
	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < c->n_inflight; i++)
		if (!strcmp(c->inflight[i], key)) {
			free(c->inflight[i]);
			c->inflight[i] = c->inflight[--c->n_inflight];
			break;
		}
	pthread_mutex_unlock(&c->mu);
}

/* One child `solforge eval --json` of sol (with defines) for worker w: its traces reduced into *s,
 * the traces text in *traces (caller frees), how the process ended in describe. `suffix` names the
 * files under <dir>/evals ("" for the evaluation, "-confirm" for its confirmation run). */
static void run_child(sf_camp *c, sf_camp_worker *w, sf_camp_problem *p, int64_t attempt, const char *sol,
		      const char *const *defines, const char *key, const char *suffix, traces_sum *s, char **traces,
		      char *describe, size_t dlen)
{
	char tag[80], err[256];
	snprintf(tag, sizeof tag, "eval-%d-%lld-%.12s%s", w->id, (long long)attempt, key, suffix);
	char *evdir = sf_path_join(c->dir, "evals");
	sf_mkdir_p(evdir, err, sizeof err);
	sf_buf tp = { 0 }, lp = { 0 };
	sf_buf_printf(&tp, "%s/%s.jsonl", evdir, tag);
	sf_buf_printf(&lp, "%s/%s.log", evdir, tag);
	unlink(tp.data);
	unlink(lp.data);
	sf_argv av = { 0 };
	sf_argv_add(&av, c->self);
	sf_argv_add(&av, "eval");
	sf_argv_add(&av, p->path);
	sf_argv_add(&av, sol);
	sf_argv_add(&av, "--json");
	sf_argv_add(&av, "-o");
	sf_argv_add(&av, tp.data);
	sf_argv_add(&av, "--backend");
	sf_argv_add(&av, c->backend);
	for (int i = 0; i < c->o.n_eval_args; i++)
		sf_argv_add(&av, c->o.eval_args[i]);
	for (int i = 0; defines && defines[i]; i++)
		sf_argv_addf(&av, "-D%s", defines[i]);
	char e_locks[4096], e_cvd[128];
	snprintf(e_locks, sizeof e_locks, "SOLFORGE_GPU_LOCKS=%s", c->locks);
	snprintf(e_cvd, sizeof e_cvd, "CUDA_VISIBLE_DEVICES=%s", w->gpu ? w->gpu : "");
	char *env[] = { e_locks, w->gpu ? e_cvd : NULL, NULL };
	sf_proc pr;
	char serr[512];
	int rc = sf_spawn(av.v, lp.data, 3600, env, &pr, serr, sizeof serr);
	sf_argv_free(&av);
	size_t tl = 0;
	if (sf_read_file(tp.data, traces, &tl, err, sizeof err))
		*traces = NULL;
	summarize(*traces, s);
	char *tail = sf_log_tail(lp.data, 3000);
	if (rc) {
		snprintf(s->status, sizeof s->status, "ERROR");
	} else if (!*traces || !**traces) {
		/* no trace at all: compile error of the whole solution, bad input, crash of the evaluator */
		snprintf(s->status, sizeof s->status, "%s",
			 pr.exited && pr.exit_code == 4 ? "COMPILE_ERROR" : pr.exited && pr.exit_code == 3 ? "BAD_INPUT" : "ERROR");
	}
	if (strcmp(s->status, "PASSED") && tail && *tail)
		sf_buf_printf(&s->text, "evaluator output (tail):\n%s\n", tail);
	if (rc)
		snprintf(describe, dlen, "%s", serr);
	else
		sf_proc_describe(&pr, describe, dlen);
	s->exit_code = pr.exited ? pr.exit_code : -1;
	free(tail);
	free(evdir);
	sf_buf_free(&tp);
	sf_buf_free(&lp);
}

/* Writes the solution text read from sol to <dir>/evals/<key>-<name> (its relative includes made absolute to sol's
 * folder, so that it compiles from there) and returns that path (caller frees); NULL with err. */
static char *snapshot_solution(sf_camp *c, const char *sol, const char *text, const char *key, char *err, size_t errlen)
{
	char *evdir = sf_path_join(c->dir, "evals");
	if (sf_mkdir_p(evdir, err, errlen)) {
		free(evdir);
		return NULL;
	}
	sf_buf name = { 0 };
	sf_buf_printf(&name, "%s/%.16s-%s", evdir, key, sf_basename(sol));
	char *solpath = realpath(sol, NULL), *dir = solpath ? sf_dirname(solpath) : NULL;
	char *fixed = dir ? sf_camp_absolute_includes(text, dir) : NULL;
	char *path = sf_buf_take(&name);
	if (!fixed) {
		sf_errf(err, errlen, "cannot resolve the folder of %s", sol);
	} else if (!sf_write_file(path, fixed, strlen(fixed), err, errlen)) {
		free(fixed);
		free(dir);
		free(solpath);
		free(evdir);
		return path;
	}
	free(fixed);
	free(dir);
	free(solpath);
	free(evdir);
	free(path);
	return NULL;
}

/* Whether s beats the problem's best by --min-gain (also when there is no best yet). c->mu held. */
static int beats_best(sf_camp *c, const sf_camp_problem *p, const traces_sum *s)
{
	int64_t best = sf_db_i64(c->db, 0, "SELECT best_eval FROM problems WHERE id=?", "i", p->id);
	if (!best)
		return 1;
	double bsp = sf_db_dbl(c->db, "SELECT speedup FROM evaluations WHERE id=?", "i", best),
	       blat = sf_db_dbl(c->db, "SELECT latency_ms FROM evaluations WHERE id=?", "i", best);
	return better(s->speedup, s->latency, bsp, blat, c->o.min_gain);
}

int sf_camp_evaluate(sf_camp *c, sf_camp_worker *w, sf_camp_problem *p, int64_t attempt, const char *sol,
		     const char *const *defines, sf_camp_eval *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	out->speedup = out->score = out->latency_ms = NAN;
	char *text;
	if (sf_camp_read_solution(sol, &text, err, errlen))
		return -1;
	/* the suite's problem as the run found it: a worker that edited it (its workspace holds a copy; the folder itself
	 * is reachable by path) gets no evaluation, and the campaign says so */
	char now[65], herr[256];
	if (sf_camp_tree_hash(p->path, now, herr, sizeof herr) || strcmp(now, p->content)) {
		sf_errf(err, errlen, "the problem folder %s changed during the campaign (%s): not evaluated; restore it, or "
				     "start a campaign on the new content",
			p->path, strcmp(now, p->content) ? "its content hash differs" : herr);
		sf_camp_logf(c, "worker %d: %s: %s", w->id, p->name, err);
		free(text);
		return -1;
	}
	char key[65];
	sf_camp_eval_key(c, p, text, defines, key);
	pthread_mutex_lock(&c->mu);
	int64_t done = sf_db_i64(c->db, 0, "SELECT id FROM evaluations WHERE key=?", "s", key);
	int busy = 0;
	for (int i = 0; !done && i < c->n_inflight; i++)
		busy |= !strcmp(c->inflight[i], key);
	if (done) {
		from_row(c, done, out);
		out->reused = 1;
	} else if (!busy) {
		/* claimed under the same lock as the lookup: no two workers evaluate one key */
		c->inflight = sf_xrealloc(c->inflight, sizeof(char *) * (size_t)(c->n_inflight + 1));
		c->inflight[c->n_inflight++] = sf_xstrdup(key);
	}
	pthread_mutex_unlock(&c->mu);
	if (done || busy) {
		free(text);
		if (busy)
			snprintf(out->status, sizeof out->status, "IN_FLIGHT");
		return busy ? 1 : 0;
	}
	sf_buf dj = { 0 };
	for (int i = 0; defines && defines[i]; i++)
		sf_buf_printf(&dj, "%s%s", i ? " " : "", defines[i]);
	char *def_text = sf_buf_take(&dj);

	/* the child evaluation; a would-be new best is measured again and kept only when both runs beat
	 * the best, with the less favourable of the two runs (timing noise does not make a best) */
	double t_start = sf_wall_time();
	traces_sum s;
	char *traces = NULL, describe[160] = "";
	/* the bytes read above, not the file again (a worker may still change it): evals/<key>-<name>, its includes made
	 * absolute to the folder the solution came from */
	char *snap = snapshot_solution(c, sol, text, key, err, errlen);
	if (!snap) {
		inflight_done(c, key);
		free(def_text);
		free(text);
		return -1;
	}
	run_child(c, w, p, attempt, snap, defines, key, "", &s, &traces, describe, sizeof describe);
	int correct = s.passed > 0 && s.failed == 0 && !strcmp(s.status, "PASSED");
	pthread_mutex_lock(&c->mu);
	int has_best = sf_db_i64(c->db, 0, "SELECT best_eval FROM problems WHERE id=?", "i", p->id) != 0;
	int wins = correct && beats_best(c, p, &s);
	pthread_mutex_unlock(&c->mu);
	int confirmed = 1;
	if (wins && has_best && c->o.confirm) {
		traces_sum s2;
		char *tr2 = NULL, d2[160];
		run_child(c, w, p, attempt, snap, defines, key, "-confirm", &s2, &tr2, d2, sizeof d2);
		int ok2 = s2.passed > 0 && s2.failed == 0 && !strcmp(s2.status, "PASSED");
		if (ok2 && isfinite(s2.speedup) && !(s2.speedup >= s.speedup)) {
			/* the less favourable run, whole (its speedup, score, latency, baseline and traces belong together) */
			s.speedup = s2.speedup;
			s.score = s2.score;
			s.latency = s2.latency;
			s.baseline = s2.baseline;
			s.sol_frac = s2.sol_frac;
			free(traces);
			traces = tr2;
			tr2 = NULL;
		}
		pthread_mutex_lock(&c->mu);
		confirmed = ok2 && beats_best(c, p, &s);
		pthread_mutex_unlock(&c->mu);
		sf_buf_printf(&s.text, "confirmation run: %s, latency %.4g ms, speedup %.4gx, S %.3f: %s\n", s2.status, s2.latency,
			      s2.speedup, s2.score, confirmed ? "confirmed" : "not confirmed, not the new best");
		sf_buf_free(&s2.text);
		free(tr2);
	}
	sf_buf sum = { 0 };
	sf_buf_printf(&sum, "%s: %d passed, %d failed, %d skipped; latency %.4g ms, speedup %.4gx (geomeans), S %.3f (median), "
			    "T_sol/T %.3f\n%s", s.status, s.passed, s.failed, s.skipped, s.latency, s.speedup, s.score, s.sol_frac,
		      s.text.data ? s.text.data : "");

	/* record: the row and the best update, one transaction */
	pthread_mutex_lock(&c->mu);
	sf_db_begin(c->db);
	sf_db_exec(c->db,
		   "INSERT OR IGNORE INTO evaluations(problem_id,attempt_id,key,solution,defines,source,status,exit_code,"
		   "passed,failed,skipped,speedup,score,latency_ms,baseline_ms,sol_frac,started,finished,gpu,error,traces) "
		   "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
		   "iisssssiiiidddddddsss", p->id, attempt, key, sol, def_text, text, s.status, (int64_t)s.exit_code,
		   (int64_t)s.passed, (int64_t)s.failed, (int64_t)s.skipped, s.speedup, s.score, s.latency, s.baseline,
		   s.sol_frac, t_start, sf_wall_time(), w->gpu ? w->gpu : c->backend, correct && confirmed ? NULL : sum.data,
		   traces ? traces : "");
	int64_t id = sf_db_i64(c->db, 0, "SELECT id FROM evaluations WHERE key=?", "s", key);
	/* judged again under this lock: another worker may have set a better best meanwhile */
	int improved = correct && confirmed && beats_best(c, p, &s);
	if (improved) {
		sf_db_exec(c->db, "UPDATE problems SET best_eval=?, first_eval=COALESCE(first_eval,?) WHERE id=?", "iii", id, id,
			   p->id);
		sf_db_exec(c->db, "UPDATE evaluations SET improved=1 WHERE id=?", "i", id);
	}
	sf_db_exec(c->db, "UPDATE attempts SET evals=evals+1 WHERE id=?", "i", attempt);
	sf_db_commit(c->db);
	pthread_mutex_unlock(&c->mu);
	inflight_done(c, key);
	sf_camp_logf(c, "worker %d: %s %s%s%s: %s %.4g ms speedup %.3gx S %.3f T_sol/T %.3f (%s)%s", w->id, p->name,
		     sf_basename(sol), *def_text ? " " : "", def_text, s.status, s.latency, s.speedup, s.score, s.sol_frac, describe,
		     improved ? "  ** new best **" : wins && !confirmed ? "  (faster once, not confirmed)" : "");

	out->id = id;
	out->correct = correct;
	out->improved = improved;
	snprintf(out->status, sizeof out->status, "%s", s.status);
	out->speedup = s.speedup;
	out->score = s.score;
	out->latency_ms = s.latency;
	out->summary = sf_buf_take(&sum);
	sf_buf_free(&s.text);
	free(traces);
	free(def_text);
	free(text);
	free(snap);
	sf_camp_import_timing(c);
	return 0;
}
