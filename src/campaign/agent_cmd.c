/*
 * agent_cmd.c - the `cmd:'COMMAND'` agent: any coding agent run headless in the attempt's workspace
 * (see campaign.h, docs/campaign.md).
 *
 * COMMAND runs through /bin/sh in the workspace with its own process group, stdin /dev/null, and
 * stdout+stderr captured to agent.log (the CLI's event stream, e.g. claude's stream-json), killed
 * with its group at --agent-time (or when the campaign's budget ends). Its environment names the
 * brief and the tools: SOLFORGE (the solforge executable; its folder is also first on PATH),
 * SOLFORGE_WORKSPACE, SOLFORGE_BRIEF (BRIEF.md), SOLFORGE_PROMPT (PROMPT.md: protocol, task,
 * history and lessons in one file), SOLFORGE_PROBLEM, SOLFORGE_SOLUTION, and SOLFORGE_GPU_LOCKS plus
 * CUDA_VISIBLE_DEVICES so that its own `solforge eval` calls queue for the worker's GPU. Whatever it
 * says, solution.cu (solution.c) is then evaluated officially; an improvement adds NOTES.md to the
 * lessons of the op type.
 */
#include "campaign/campaign.h"
#include "core/spawn.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stores the last 64 KiB of a log file as an agent_logs row. */
static void store_log(sf_camp *c, int64_t attempt, const char *kind, const char *path)
{
	char *tail = sf_log_tail(path, 64 * 1024);
	if (!tail)
		return;
	pthread_mutex_lock(&c->mu);
	sf_db_exec(c->db, "INSERT INTO agent_logs(attempt_id,t,kind,text) VALUES(?,?,?,?)", "idss", attempt, sf_wall_time(),
		   kind, tail);
	pthread_mutex_unlock(&c->mu);
	free(tail);
}

int sf_agent_cmd(sf_camp *c, sf_camp_worker *w, sf_camp_problem *p, int64_t attempt, char *err, size_t errlen)
{
	char *sol = NULL;
	char *ws = sf_camp_workspace(c, p, attempt, &sol, err, errlen);
	if (!ws)
		return -1;
	char *prompt = sf_camp_brief_text(c, p, ws);
	char *pf = sf_path_join(ws, "PROMPT.md");
	char e2[256];
	sf_write_file(pf, prompt, strlen(prompt), e2, sizeof e2);
	free(prompt);
	pthread_mutex_lock(&c->mu);
	sf_db_exec(c->db, "UPDATE attempts SET workspace=? WHERE id=?", "si", ws, attempt);
	snprintf(w->what, sizeof w->what, "agent running");
	pthread_mutex_unlock(&c->mu);

	double limit = c->o.agent_time_s;
	if (c->o.budget_s > 0) {
		double left = c->o.budget_s - (sf_now() - c->t0);
		if (left < limit)
			limit = left > 5 ? left : 5;
	}
	char *selfdir = sf_dirname(c->self);
	const char *path = getenv("PATH");
	sf_buf e_path = { 0 }, e_self = { 0 }, e_ws = { 0 }, e_brief = { 0 }, e_prompt = { 0 }, e_prob = { 0 }, e_sol = { 0 },
	       e_locks = { 0 }, e_cvd = { 0 }, e_cmd = { 0 };
	sf_buf_printf(&e_path, "PATH=%s:%s", selfdir, path ? path : "/usr/bin:/bin");
	sf_buf_printf(&e_self, "SOLFORGE=%s", c->self);
	sf_buf_printf(&e_ws, "SOLFORGE_WORKSPACE=%s", ws);
	sf_buf_printf(&e_brief, "SOLFORGE_BRIEF=%s/BRIEF.md", ws);
	sf_buf_printf(&e_prompt, "SOLFORGE_PROMPT=%s", pf);
	sf_buf_printf(&e_prob, "SOLFORGE_PROBLEM=%s", p->path);
	sf_buf_printf(&e_sol, "SOLFORGE_SOLUTION=%s", sol);
	sf_buf_printf(&e_locks, "SOLFORGE_GPU_LOCKS=%s", c->locks);
	sf_buf_printf(&e_cvd, "CUDA_VISIBLE_DEVICES=%s", w->gpu ? w->gpu : "");
	sf_buf_printf(&e_cmd, "SOLFORGE_AGENT_CMD=%s", c->o.agent_arg);
	char *env[] = { e_path.data, e_self.data, e_ws.data, e_brief.data, e_prompt.data, e_prob.data, e_sol.data,
			e_locks.data, e_cmd.data, w->gpu ? e_cvd.data : NULL, NULL };
	char *argv[] = { "/bin/sh", "-c", "cd \"$SOLFORGE_WORKSPACE\" && eval \"$SOLFORGE_AGENT_CMD\"", NULL };
	char *logp = sf_path_join(ws, "agent.log");
	sf_proc pr;
	int rc = sf_spawn(argv, logp, limit, env, &pr, err, errlen);
	char how[160] = "";
	if (!rc)
		sf_proc_describe(&pr, how, sizeof how);
	sf_camp_logf(c, "worker %d: %s: agent ended: %s", w->id, p->name, rc ? err : how);
	store_log(c, attempt, "stream", logp);
	int ret = 0;
	if (rc) {
		ret = -1;
	} else {
		pthread_mutex_lock(&c->mu);
		snprintf(w->what, sizeof w->what, "official evaluation");
		if (pr.timed_out)
			sf_db_exec(c->db, "UPDATE attempts SET error=? WHERE id=?", "si", how, attempt);
		pthread_mutex_unlock(&c->mu);
		sf_camp_eval ev;
		if (!sf_file_exists(sol)) {
			sf_errf(err, errlen, "the agent left no %s", sf_basename(sol));
			ret = -1;
		} else {
			int er = sf_camp_evaluate(c, w, p, attempt, sol, NULL, &ev, err, errlen);
			if (er < 0) {
				ret = -1;
			} else if (er == 0) {
				if (ev.improved)
					sf_camp_add_lessons(c, p, attempt, ws);
				free(ev.summary);
			} /* er == 1: the same text is being evaluated by another worker; its result will be recorded */
		}
	}
	free(logp);
	free(selfdir);
	sf_buf_free(&e_path);
	sf_buf_free(&e_self);
	sf_buf_free(&e_ws);
	sf_buf_free(&e_brief);
	sf_buf_free(&e_prompt);
	sf_buf_free(&e_prob);
	sf_buf_free(&e_sol);
	sf_buf_free(&e_locks);
	sf_buf_free(&e_cvd);
	sf_buf_free(&e_cmd);
	free(pf);
	free(sol);
	free(ws);
	return ret;
}
