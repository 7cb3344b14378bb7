/*
 * planner.c - which problem an idle worker takes next (see campaign.h).
 *
 * Expected gain of problem p:
 *     gain = weight * gap / (1 + stagnation * since_improve) / (1 + busy) + explore * [no attempt yet]
 * gap = 1 - S_best (S_best: median SOL score of the best evaluation; where the backend has no
 * baseline for the problem, the fraction of the speed of light T_sol/T_k instead; 0.5 before any),
 * since_improve = attempts since the last improvement, busy = workers on p now. A problem is left
 * out when it reached --max-attempts, has --per-problem workers already, or the agent cannot work on
 * it (tune: no tunable source, or every variant evaluated). Every pick is a row of `decisions` with
 * the winner's terms and the runners-up, so the report can explain it.
 */
#include "campaign/campaign.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cand {
	sf_camp_problem *p;
	double gain, gap, s_best;
	int64_t attempts, stagnant;
	int seeded;
} cand;

static int cmp_cand(const void *a, const void *b)
{
	const cand *x = a, *y = b;
	if (x->gain != y->gain)
		return x->gain > y->gain ? -1 : 1;
	return strcmp(x->p->name, y->p->name);
}

sf_camp_problem *sf_camp_plan(sf_camp *c, sf_camp_worker *w, int64_t *attempt_out)
{
	cand *cs = sf_xcalloc((size_t)c->n_probs + 1, sizeof *cs);
	int n = 0;
	for (int i = 0; i < c->n_probs; i++) {
		sf_camp_problem *p = &c->probs[i];
		int64_t attempts = sf_db_i64(c->db, 0, "SELECT attempts FROM problems WHERE id=?", "i", p->id);
		int seeded = sf_db_i64(c->db, 0, "SELECT seeded FROM problems WHERE id=?", "i", p->id) == 1;
		if (c->o.max_attempts > 0 && attempts >= c->o.max_attempts)
			continue;
		if (p->busy >= c->o.per_problem)
			continue;
		/* an unseeded problem is seeded by one worker only; the agent's own limits after that */
		if (!seeded && p->busy)
			continue;
		if (seeded && c->o.agent == SF_AGENT_TUNE && p->tune_state < 0)
			continue;
		cand *k = &cs[n++];
		k->p = p;
		k->attempts = attempts;
		k->seeded = seeded;
		k->stagnant = sf_db_i64(c->db, 0, "SELECT since_improve FROM problems WHERE id=?", "i", p->id);
		k->s_best = sf_db_dbl(c->db,
				      "SELECT COALESCE(e.score, e.sol_frac) FROM problems p JOIN evaluations e ON e.id=p.best_eval "
				      "WHERE p.id=?", "i", p->id);
		double s = isfinite(k->s_best) ? k->s_best : 0.5;
		k->gap = s >= 1 ? 0 : 1 - s;
		k->gain = p->weight * k->gap / (1 + c->o.stagnation * (double)k->stagnant) / (1 + p->busy) +
			  (attempts == 0 ? c->o.explore : 0);
	}
	if (!n) {
		free(cs);
		return NULL;
	}
	qsort(cs, (size_t)n, sizeof *cs, cmp_cand);
	cand *k = &cs[0];
	sf_buf ex = { 0 };
	sf_buf_printf(&ex, "%s: gain %.3f = weight %.2f x gap %.3f (best S %s) / (1 + %.2f x %lld stagnant) / (1 + %d busy)",
		      k->p->name, k->gain, k->p->weight, k->gap, isfinite(k->s_best) ? "" : "none yet, 0.5 assumed",
		      c->o.stagnation, (long long)k->stagnant, k->p->busy);
	if (isfinite(k->s_best)) {
		/* put the measured S into the parenthesis */
		sf_buf_free(&ex);
		sf_buf_printf(&ex, "%s: gain %.3f = weight %.2f x gap %.3f (best S %.3f) / (1 + %.2f x %lld stagnant) / (1 + %d busy)",
			      k->p->name, k->gain, k->p->weight, k->gap, k->s_best, c->o.stagnation,
			      (long long)k->stagnant, k->p->busy);
	}
	if (k->attempts == 0)
		sf_buf_printf(&ex, " + explore %.2f (untried)", c->o.explore);
	if (!k->seeded)
		sf_buf_puts(&ex, "; first attempt seeds it with its bundled solutions");
	if (n > 1) {
		sf_buf_puts(&ex, "; next:");
		for (int i = 1; i < n && i < 4; i++)
			sf_buf_printf(&ex, " %s %.3f%s", cs[i].p->name, cs[i].gain, i + 1 < n && i < 3 ? "," : "");
	}
	const char *agent = k->seeded ? c->o.agent_spec : "seed";
	sf_db_begin(c->db);
	sf_db_exec(c->db, "INSERT INTO attempts(problem_id,worker,agent,state,started,gpu) VALUES(?,?,?,'running',?,?)",
		   "iisds", k->p->id, (int64_t)w->id, agent, sf_wall_time(), w->gpu ? w->gpu : c->backend);
	int64_t a = sf_db_last_id(c->db);
	sf_db_exec(c->db, "UPDATE problems SET attempts=attempts+1 WHERE id=?", "i", k->p->id);
	sf_db_exec(c->db, "INSERT INTO decisions(t,worker,problem_id,attempt_id,gain,explain) VALUES(?,?,?,?,?,?)",
		   "diiids", sf_wall_time(), (int64_t)w->id, k->p->id, a, k->gain, ex.data);
	sf_db_commit(c->db);
	sf_buf_free(&ex);
	sf_camp_problem *p = k->p;
	p->busy++;
	free(cs);
	*attempt_out = a;
	return p;
}
