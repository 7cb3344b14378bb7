/*
 * tune.c - the built-in autotuner agent (see campaign.h and docs/campaign.md).
 *
 * A solution declares its parameters in comment lines,
 *     // solforge-tune: BLOCK=64,128,256 UNROLL=1,2,4
 * and must build without them (defaults under #ifndef). A variant is a source with one value per
 * parameter, compiled with -DNAME=VALUE (the defines are part of the compile cache key and of the
 * evaluation key). The space of a problem is every tunable bundled solution's variants. One tune
 * attempt evaluates up to --tune-batch variants not evaluated before: in index order when the space
 * has at most --tune-max points (exhaustive), else half neighbours of the best variant (one parameter
 * one step away: local search) and half random points. Every variant is evaluated officially.
 */
#include "campaign/campaign.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tunable sources of p: bundled solutions with a non-empty space. */
typedef struct tsrc {
	char *path;
	char *text;
	sf_tune_space sp;
	double size;
} tsrc;

static int load_sources(sf_camp *c, sf_camp_problem *p, tsrc **out, char *err, size_t errlen)
{
	char **files = sf_camp_bundled(c, p);
	int n = 0;
	*out = NULL;
	for (int i = 0; files && files[i]; i++) {
		char *text;
		size_t len;
		char e2[256];
		if (sf_read_file(files[i], &text, &len, e2, sizeof e2))
			continue;
		sf_tune_space sp;
		if (sf_tune_parse(text, &sp, e2, sizeof e2)) {
			sf_camp_logf(c, "%s: %s: %s", p->name, sf_basename(files[i]), e2);
			free(text);
			continue;
		}
		if (!sp.n) {
			free(text);
			continue;
		}
		*out = sf_xrealloc(*out, sizeof(tsrc) * (size_t)(n + 1));
		(*out)[n].path = sf_xstrdup(files[i]);
		(*out)[n].text = text;
		(*out)[n].sp = sp;
		(*out)[n].size = sf_tune_size(&sp);
		n++;
	}
	for (int i = 0; files && files[i]; i++)
		free(files[i]);
	free(files);
	(void)err;
	(void)errlen;
	return n;
}

/* The defines of point idx of space sp, into d (d[i] point into storage, NULL-terminated). */
static void point_defines(const sf_tune_space *sp, const int *idx, char storage[][64], const char **d)
{
	for (int i = 0; i < sp->n; i++) {
		snprintf(storage[i], 64, "%s=%s", sp->names[i], sp->values[i][idx[i]]);
		d[i] = storage[i];
	}
	d[sp->n] = NULL;
}

static void index_point(const sf_tune_space *sp, double k, int *idx)
{
	unsigned long long r = (unsigned long long)k;
	for (int i = sp->n - 1; i >= 0; i--) {
		idx[i] = (int)(r % (unsigned long long)sp->n_values[i]);
		r /= (unsigned long long)sp->n_values[i];
	}
}

static uint64_t rng_next(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	uint64_t z = *s;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Parses "A=1 B=2" of the best variant back to indices of sp; 0 when every parameter matched. */
static int parse_point(const sf_tune_space *sp, const char *defs, int *idx)
{
	int found = 0;
	for (int i = 0; i < sp->n; i++) {
		idx[i] = 0;
		char pat[40];
		snprintf(pat, sizeof pat, "%s=", sp->names[i]);
		for (const char *q = defs ? strstr(defs, pat) : NULL; q; q = strstr(q + 1, pat)) {
			if (q != defs && q[-1] != ' ')
				continue;
			const char *v = q + strlen(pat);
			size_t l = strcspn(v, " ");
			for (int k = 0; k < sp->n_values[i]; k++)
				if (strlen(sp->values[i][k]) == l && !strncmp(sp->values[i][k], v, l)) {
					idx[i] = k;
					found++;
				}
			break;
		}
	}
	return found == sp->n ? 0 : -1;
}

int sf_agent_tune(sf_camp *c, sf_camp_worker *w, sf_camp_problem *p, int64_t attempt, char *err, size_t errlen)
{
	tsrc *ts;
	int n = load_sources(c, p, &ts, err, errlen);
	if (!n) {
		pthread_mutex_lock(&c->mu);
		p->tune_state = -1;
		pthread_mutex_unlock(&c->mu);
		sf_errf(err, errlen, "no bundled %s solution of %s declares solforge-tune parameters", c->backend, p->name);
		return -1;
	}
	double total = 0;
	for (int i = 0; i < n; i++)
		total += ts[i].size;
	int exhaustive = total <= c->o.tune_max;
	/* the best variant so far, for the local search */
	pthread_mutex_lock(&c->mu);
	char *best_sol = sf_db_text(c->db, "SELECT e.solution FROM problems p JOIN evaluations e ON e.id=p.best_eval WHERE p.id=?",
				    "i", p->id);
	char *best_defs = sf_db_text(c->db, "SELECT e.defines FROM problems p JOIN evaluations e ON e.id=p.best_eval WHERE p.id=?",
				     "i", p->id);
	int64_t tried = sf_db_i64(c->db, 0, "SELECT count(*) FROM evaluations e JOIN attempts a ON a.id=e.attempt_id "
					    "WHERE e.problem_id=? AND a.agent='tune'", "i", p->id);
	pthread_mutex_unlock(&c->mu);
	uint64_t rs = c->o.seed ^ ((uint64_t)p->id << 32) ^ (uint64_t)attempt * 0x2545f4914f6cdd1dull;
	int evaluated = 0, improved = 0, proposals = 0;
	char storage[SF_TUNE_MAX_PARAMS][64];
	const char *defs[SF_TUNE_MAX_PARAMS + 1];
	int idx[SF_TUNE_MAX_PARAMS];
	double next_index = 0;
	while (evaluated < c->o.tune_batch && tried + evaluated < c->o.tune_max && !sf_camp_stopping(c)) {
		int si = 0;
		if (exhaustive) {
			/* the first point in index order not evaluated yet */
			if (next_index >= total)
				break;
			double k = next_index++;
			while (si < n - 1 && k >= ts[si].size)
				k -= ts[si++].size;
			index_point(&ts[si].sp, k, idx);
		} else {
			if (++proposals > 400)
				break;
			int local = 0;
			for (int i = 0; best_sol && i < n; i++)
				if (!strcmp(ts[i].path, best_sol) && !parse_point(&ts[i].sp, best_defs, idx) && (proposals % 2)) {
					/* neighbour: one parameter one step */
					si = i;
					int pi = (int)(rng_next(&rs) % (uint64_t)ts[i].sp.n);
					int step = rng_next(&rs) & 1 ? 1 : -1;
					idx[pi] += step;
					if (idx[pi] < 0 || idx[pi] >= ts[i].sp.n_values[pi])
						idx[pi] -= 2 * step;
					if (idx[pi] < 0 || idx[pi] >= ts[i].sp.n_values[pi])
						idx[pi] = 0;
					local = 1;
				}
			if (!local) {
				double k = (double)(rng_next(&rs) % (uint64_t)total);
				while (si < n - 1 && k >= ts[si].size)
					k -= ts[si++].size;
				index_point(&ts[si].sp, k, idx);
			}
		}
		point_defines(&ts[si].sp, idx, storage, defs);
		char key[65];
		sf_camp_eval_key(c, p, ts[si].text, defs, key);
		if (sf_camp_key_known(c, key))
			continue;
		pthread_mutex_lock(&c->mu);
		snprintf(w->what, sizeof w->what, "tune %s %s%s%s", sf_basename(ts[si].path), defs[0] ? defs[0] : "",
			 defs[0] && defs[1] ? " " : "", defs[0] && defs[1] ? defs[1] : "");
		pthread_mutex_unlock(&c->mu);
		sf_camp_eval ev;
		char e2[512];
		int er = sf_camp_evaluate(c, w, p, attempt, ts[si].path, defs, &ev, e2, sizeof e2);
		if (er < 0) {
			sf_camp_logf(c, "worker %d: %s: %s", w->id, p->name, e2);
			break;
		}
		if (er == 1)
			continue; /* another worker took this variant between the check and the claim */
		evaluated++;
		improved |= ev.improved;
		free(ev.summary);
	}
	if (!evaluated) {
		/* nothing left to try for this problem */
		pthread_mutex_lock(&c->mu);
		p->tune_state = -1;
		pthread_mutex_unlock(&c->mu);
		sf_camp_logf(c, "worker %d: %s: tune space done (%.0f points, %lld evaluated)", w->id, p->name, total,
			     (long long)tried);
	}
	for (int i = 0; i < n; i++) {
		free(ts[i].path);
		free(ts[i].text);
	}
	free(ts);
	free(best_sol);
	free(best_defs);
	return 0;
}
