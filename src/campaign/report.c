/*
 * report.c - reading a campaign database into a report, and its text form (see report.h).
 */
#include "campaign/report.h"
#include "campaign/db.h"
#include "core/util.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

static double col_d(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static char *col_s(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return sf_xstrdup(t ? (const char *)t : "");
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	if (!n)
		return NAN;
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Progress over time: replay the improving evaluations in finishing order. */
static void progress(sf_db *db, sf_report *r)
{
	int64_t np = sf_db_i64(db, 0, "SELECT max(id) FROM problems", "");
	double *sp = sf_xcalloc((size_t)np + 2, sizeof(double)), *sc = sf_xcalloc((size_t)np + 2, sizeof(double));
	double *tmp = sf_xcalloc((size_t)np + 2, sizeof(double));
	for (int64_t i = 0; i <= np; i++)
		sp[i] = sc[i] = NAN;
	double t0 = sf_db_dbl(db, "SELECT min(started) FROM evaluations", "");
	sqlite3_stmt *st = sf_db_prepare(db, "SELECT problem_id, finished, speedup, score FROM evaluations WHERE improved=1 "
					     "ORDER BY finished", "");
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0);
		if (pid < 0 || pid > np)
			continue;
		sp[pid] = col_d(st, 2);
		sc[pid] = col_d(st, 3);
		double ls = 0;
		int n = 0, ns = 0;
		for (int64_t k = 0; k <= np; k++) {
			if (isfinite(sp[k]) && sp[k] > 0)
				ls += log(sp[k]), n++;
			if (isfinite(sc[k]))
				tmp[ns++] = sc[k];
		}
		r->pts = sf_xrealloc(r->pts, sizeof *r->pts * (size_t)(r->n_pts + 1));
		r->pts[r->n_pts].t = col_d(st, 1) - t0;
		r->pts[r->n_pts].geomean = n ? exp(ls / n) : NAN;
		r->pts[r->n_pts].median_s = median(tmp, ns);
		r->n_pts++;
	}
	sqlite3_finalize(st);
	r->span_s = sf_db_dbl(db, "SELECT max(finished) - min(started) FROM evaluations", "");
	free(sp);
	free(sc);
	free(tmp);
}

int sf_report_load(const char *db_path, sf_report *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	if (!sf_file_exists(db_path)) {
		sf_errf(err, errlen, "no campaign database %s", db_path);
		return -1;
	}
	sf_db *db = sf_db_open(db_path, 1, err, errlen);
	if (!db)
		return -1;
	if (sf_db_i64(db, -1, "SELECT count(*) FROM sqlite_master WHERE name='evaluations'", "") != 1) {
		sf_errf(err, errlen, "%s is not a campaign database", db_path);
		sf_db_close(db);
		return -1;
	}
	r->db = sf_xstrdup(db_path);
	r->agent = sf_db_text(db, "SELECT value FROM meta WHERE key='agent'", "");
	r->backend = sf_db_text(db, "SELECT value FROM meta WHERE key='backend'", "");
	r->started = sf_db_text(db, "SELECT value FROM meta WHERE key='started'", "");
	r->evaluations = sf_db_i64(db, 0, "SELECT count(*) FROM evaluations", "");
	r->failed_evals = sf_db_i64(db, 0, "SELECT count(*) FROM evaluations WHERE NOT (passed>0 AND failed=0 AND status='PASSED')", "");
	r->attempts = sf_db_i64(db, 0, "SELECT count(*) FROM attempts", "");
	sqlite3_stmt *st = sf_db_prepare(
		db,
		"SELECT p.name, p.op_type, p.attempts, (SELECT count(*) FROM evaluations x WHERE x.problem_id=p.id),"
		" b.id, b.baseline_ms, f.latency_ms, b.latency_ms, f.speedup, b.speedup, b.score,"
		" a.agent, a.id, a.worker, b.solution, b.defines, b.sol_frac"
		" FROM problems p LEFT JOIN evaluations b ON b.id=p.best_eval LEFT JOIN evaluations f ON f.id=p.first_eval"
		" LEFT JOIN attempts a ON a.id=b.attempt_id ORDER BY p.name", "");
	double ls = 0, lvf = 0, *scores = NULL, *fracs = NULL;
	int ns = 0, nvf = 0, nfr = 0;
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		r->p = sf_xrealloc(r->p, sizeof *r->p * (size_t)(r->n + 1));
		sf_rep_problem *p = &r->p[r->n++];
		memset(p, 0, sizeof *p);
		p->name = col_s(st, 0);
		p->op_type = col_s(st, 1);
		p->attempts = sqlite3_column_int64(st, 2);
		p->evals = sqlite3_column_int64(st, 3);
		p->has_best = sqlite3_column_type(st, 4) != SQLITE_NULL;
		p->baseline_ms = col_d(st, 5);
		p->first_ms = col_d(st, 6);
		p->best_ms = col_d(st, 7);
		p->first_speedup = col_d(st, 8);
		p->speedup = col_d(st, 9);
		p->score = col_d(st, 10);
		p->sol_frac = col_d(st, 16);
		p->vs_first = isfinite(p->first_ms) && isfinite(p->best_ms) && p->best_ms > 0 ? p->first_ms / p->best_ms : NAN;
		if (p->has_best) {
			sf_buf b = { 0 };
			char *ag = col_s(st, 11);
			sf_buf_printf(&b, "%s (attempt %lld, worker %d)", ag, (long long)sqlite3_column_int64(st, 12),
				      sqlite3_column_int(st, 13));
			free(ag);
			p->found_by = sf_buf_take(&b);
			char *sol = col_s(st, 14), *defs = col_s(st, 15);
			sf_buf_printf(&b, "%s%s%s", sf_basename(sol), *defs ? " " : "", defs);
			p->solution = sf_buf_take(&b);
			free(sol);
			free(defs);
			r->n_best++;
			if (isfinite(p->speedup) && p->speedup > 0) {
				ls += log(p->speedup);
				r->beat += p->speedup > 1;
				r->over2 += p->speedup > 2;
			}
			if (isfinite(p->score)) {
				scores = sf_xrealloc(scores, sizeof(double) * (size_t)(ns + 1));
				scores[ns++] = p->score;
				int bin = (int)floor(p->score * 10);
				r->hist[bin < 0 ? 0 : bin > 9 ? 9 : bin]++;
			}
			if (isfinite(p->vs_first))
				lvf += log(p->vs_first), nvf++;
			if (isfinite(p->sol_frac)) {
				fracs = sf_xrealloc(fracs, sizeof(double) * (size_t)(nfr + 1));
				fracs[nfr++] = p->sol_frac;
			}
			int better_ms = isfinite(p->first_ms) && isfinite(p->best_ms) && p->best_ms < p->first_ms;
			r->improved_over_first += better_ms || (isfinite(p->first_speedup) && p->speedup > p->first_speedup);
		} else {
			p->found_by = sf_xstrdup("-");
			p->solution = sf_xstrdup("no correct solution");
		}
	}
	sqlite3_finalize(st);
	for (int i = 0; i < r->n; i++) {
		if (r->p[i].has_best)
			continue;
		/* why not: the last attempt's error, e.g. no bundled solution for the backend */
		char *why = sf_db_text(db, "SELECT a.error FROM attempts a JOIN problems p ON p.id=a.problem_id WHERE p.name=? "
					   "AND a.error IS NOT NULL ORDER BY a.id DESC LIMIT 1", "s", r->p[i].name);
		if (why) {
			size_t l = strcspn(why, "\n");
			free(r->p[i].solution);
			r->p[i].solution = sf_xstrndup(why, l > 100 ? 100 : l);
			free(why);
		}
	}
	int nsp = 0;
	for (int i = 0; i < r->n; i++)
		nsp += r->p[i].has_best && isfinite(r->p[i].speedup) && r->p[i].speedup > 0;
	r->geomean = nsp ? exp(ls / nsp) : NAN;
	r->median_s = median(scores, ns);
	free(scores);
	r->geomean_vs_first = nvf ? exp(lvf / nvf) : NAN;
	r->median_sol_frac = median(fracs, nfr);
	free(fracs);
	progress(db, r);
	st = sf_db_prepare(db, "SELECT d.id, d.worker, d.explain FROM decisions d ORDER BY d.id DESC LIMIT 200", "");
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		r->decisions = sf_xrealloc(r->decisions, sizeof(char *) * (size_t)(r->n_decisions + 1));
		sf_buf b = { 0 };
		sf_buf_printf(&b, "#%lld worker %d -> %s", (long long)sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1),
			      (const char *)sqlite3_column_text(st, 2));
		r->decisions[r->n_decisions++] = sf_buf_take(&b);
	}
	sqlite3_finalize(st);
	st = sf_db_prepare(db, "SELECT slot, count(*), sum(held_s), sum(wait_s), "
			       "strftime('%Y-%m-%dT%H:%M:%SZ', min(CAST(start AS REAL)), 'unixepoch'), "
			       "strftime('%Y-%m-%dT%H:%M:%SZ', max(CAST(start AS REAL) + held_s), 'unixepoch') FROM gpu_timing "
			       "GROUP BY slot ORDER BY slot", "");
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		r->slots = sf_xrealloc(r->slots, sizeof(char *) * (size_t)(r->n_slots + 1));
		sf_buf b = { 0 };
		sf_buf_printf(&b, "%s: %d runner holds, %.1f s held, %.1f s waited, %s .. %s", (const char *)sqlite3_column_text(st, 0),
			      sqlite3_column_int(st, 1), sqlite3_column_double(st, 2), sqlite3_column_double(st, 3),
			      (const char *)sqlite3_column_text(st, 4), (const char *)sqlite3_column_text(st, 5));
		r->slots[r->n_slots++] = sf_buf_take(&b);
	}
	sqlite3_finalize(st);
	sf_db_close(db);
	return 0;
}

void sf_report_free(sf_report *r)
{
	for (int i = 0; i < r->n; i++) {
		free(r->p[i].name);
		free(r->p[i].op_type);
		free(r->p[i].found_by);
		free(r->p[i].solution);
	}
	free(r->p);
	free(r->pts);
	for (int i = 0; i < r->n_decisions; i++)
		free(r->decisions[i]);
	free(r->decisions);
	for (int i = 0; i < r->n_slots; i++)
		free(r->slots[i]);
	free(r->slots);
	free(r->db);
	free(r->agent);
	free(r->backend);
	free(r->started);
	memset(r, 0, sizeof *r);
}

static void ms(char *out, size_t n, double v)
{
	if (!isfinite(v))
		snprintf(out, n, "-");
	else if (v < 1)
		snprintf(out, n, "%.2f us", v * 1e3);
	else
		snprintf(out, n, "%.3f ms", v);
}

/* v with `prec` decimals and a suffix, or "-" when not finite. */
static void fmt(char *out, size_t n, int prec, const char *suffix, double v)
{
	if (isfinite(v))
		snprintf(out, n, "%.*f%s", prec, v, suffix);
	else
		snprintf(out, n, "-");
}

void sf_report_text(const sf_report *r, FILE *f)
{
	fprintf(f, "campaign %s: agent %s, backend %s, started %s; %lld attempts, %lld evaluations (%lld not correct)\n\n",
		r->db, r->agent ? r->agent : "?", r->backend ? r->backend : "?", r->started ? r->started : "?",
		(long long)r->attempts, (long long)r->evaluations, (long long)r->failed_evals);
	fprintf(f, "%-40s %11s %11s %11s %8s %9s %6s %7s %5s  %s\n", "problem", "baseline", "first", "best", "vs first",
		"speedup", "SOL", "Tsol/T", "att", "found by / solution");
	for (int i = 0; i < r->n; i++) {
		const sf_rep_problem *p = &r->p[i];
		char b[32], fi[32], be[32];
		ms(b, sizeof b, p->baseline_ms);
		ms(fi, sizeof fi, p->first_ms);
		ms(be, sizeof be, p->best_ms);
		char vf[32], sp[32], sc[32], fr[32];
		fmt(vf, sizeof vf, 3, "x", p->vs_first);
		fmt(sp, sizeof sp, 3, "x", p->speedup);
		fmt(sc, sizeof sc, 3, "", p->score);
		fmt(fr, sizeof fr, 3, "", p->sol_frac);
		fprintf(f, "%-40.40s %11s %11s %11s %8s %9s %6s %7s %5lld  %s: %s\n", p->name, b, fi, be, vf, sp, sc, fr,
			(long long)p->attempts, p->found_by, p->solution);
	}
	char g[32], ms[32], gf[32], mf[32];
	fmt(g, sizeof g, 3, "x", r->geomean);
	fmt(ms, sizeof ms, 3, "", r->median_s);
	fmt(gf, sizeof gf, 3, "x", r->geomean_vs_first);
	fmt(mf, sizeof mf, 3, "", r->median_sol_frac);
	/* "-": unknown (no baseline or no SOL score on this backend), never "nan" */
	fprintf(f, "\ntotals: %d problems with a correct solution of %d; geomean speedup %s over the baselines; median SOL "
		   "%s; %d beat the baseline; %d over 2x; %d improved over their first solution (geomean %s); median "
		   "T_sol/T %s\n",
		r->n_best, r->n, g, ms, r->beat, r->over2, r->improved_over_first, gf, mf);
	fprintf(f, "SOL distribution:");
	for (int i = 0; i < 10; i++)
		fprintf(f, " [%.1f,%.1f%c %d", i / 10.0, (i + 1) / 10.0, i == 9 ? ']' : ')', r->hist[i]);
	fprintf(f, "\nprogress (improvements over time):\n");
	int step = r->n_pts > 12 ? r->n_pts / 12 : 1;
	for (int i = 0; i < r->n_pts; i += step) {
		fmt(g, sizeof g, 3, "x", r->pts[i].geomean);
		fmt(ms, sizeof ms, 3, "", r->pts[i].median_s);
		fprintf(f, "  +%7.1f s  geomean %s  median SOL %s\n", r->pts[i].t, g, ms);
	}
	if (r->n_pts && (r->n_pts - 1) % step) {
		fmt(g, sizeof g, 3, "x", r->pts[r->n_pts - 1].geomean);
		fmt(ms, sizeof ms, 3, "", r->pts[r->n_pts - 1].median_s);
		fprintf(f, "  +%7.1f s  geomean %s  median SOL %s\n", r->pts[r->n_pts - 1].t, g, ms);
	}
	if (r->n_slots) {
		fprintf(f, "timing slots:\n");
		for (int i = 0; i < r->n_slots; i++)
			fprintf(f, "  %s\n", r->slots[i]);
	}
	fprintf(f, "planner decisions (newest %d of %d):\n", r->n_decisions < 8 ? r->n_decisions : 8, r->n_decisions);
	for (int i = 0; i < r->n_decisions && i < 8; i++)
		fprintf(f, "  %s\n", r->decisions[i]);
}
