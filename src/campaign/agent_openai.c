/*
 * agent_openai.c - the `openai:MODEL` agent: a chat model writes the solution, the official
 * evaluation's result goes back as the next message, for at most --turns turns (see campaign.h).
 *
 * The client is src/agent/openai.h (base URL from $OPENAI_BASE_URL, default
 * https://api.openai.com/v1; key from $OPENAI_API_KEY). Messages: system = the protocol file; user =
 * task, history, lessons and the current best solution. The last fenced code block of each reply
 * becomes solution.cu (solution.c), the text outside it NOTES.md. Tokens are counted per attempt and
 * against --max-tokens for the whole campaign.
 */
#include "agent/openai.h"
#include "campaign/campaign.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void log_msg(sf_camp *c, int64_t attempt, const char *kind, const char *text)
{
	pthread_mutex_lock(&c->mu);
	sf_db_exec(c->db, "INSERT INTO agent_logs(attempt_id,t,kind,text) VALUES(?,?,?,?)", "idss", attempt, sf_wall_time(), kind,
		   text);
	pthread_mutex_unlock(&c->mu);
}

int sf_agent_openai(sf_camp *c, sf_camp_worker *w, sf_camp_problem *p, int64_t attempt, char *err, size_t errlen)
{
	if (!sf_openai_available()) {
		sf_errf(err, errlen, "openai: this solforge was built without the http client (libcurl)");
		return -1;
	}
	char *sol = NULL;
	char *ws = sf_camp_workspace(c, p, attempt, &sol, err, errlen);
	if (!ws)
		return -1;
	char *cur = NULL;
	size_t len;
	if (sf_read_file(sol, &cur, &len, err, errlen)) {
		free(sol);
		free(ws);
		return -1;
	}
	char *brief = sf_camp_brief_text(c, p, ws);
	const char *lang = !strcmp(c->backend, "cuda") ? "cuda" : "c";
	sf_buf first = { 0 };
	sf_buf_printf(&first, "%s\n\n# Current solution\n\n```%s\n%s```\n\nReply with the complete new solution file in one "
			      "fenced ```%s code block, followed by your notes (what you tried, what you learned).\n",
		      brief, lang, cur, lang);
	free(brief);
	free(cur);
	const char *base = getenv("OPENAI_BASE_URL");
	sf_openai_cfg cfg = { base && *base ? base : "https://api.openai.com/v1", getenv("OPENAI_API_KEY"), c->o.agent_arg,
			      c->o.agent_time_s, 5, -1, 0 };
	/* messages: user/assistant pairs after the first user message */
	int cap = 2 * c->o.turns + 2, nm = 0;
	sf_chat_msg *msgs = sf_xcalloc((size_t)cap, sizeof *msgs);
	char **owned = sf_xcalloc((size_t)cap, sizeof(char *));
	owned[nm] = sf_buf_take(&first);
	msgs[nm].role = "user";
	msgs[nm].content = owned[nm];
	nm++;
	int ret = 0;
	double t_start = sf_now();
	for (int turn = 0; turn < c->o.turns && !sf_camp_stopping(c); turn++) {
		if (sf_now() - t_start > c->o.agent_time_s)
			break;
		pthread_mutex_lock(&c->mu);
		int over = c->o.max_tokens > 0 && c->tokens_used >= c->o.max_tokens;
		snprintf(w->what, sizeof w->what, "model turn %d", turn + 1);
		pthread_mutex_unlock(&c->mu);
		if (over) {
			sf_camp_logf(c, "worker %d: token budget spent (%ld)", w->id, c->o.max_tokens);
			break;
		}
		sf_chat_reply r;
		memset(&r, 0, sizeof r);
		r.prompt_tokens = r.completion_tokens = -1;
		int rc = sf_openai_chat(&cfg, msgs, (size_t)nm, &r);
		long pt = r.prompt_tokens > 0 ? r.prompt_tokens : 0, ct = r.completion_tokens > 0 ? r.completion_tokens : 0;
		pthread_mutex_lock(&c->mu);
		c->tokens_used += pt + ct;
		sf_db_exec(c->db, "UPDATE attempts SET prompt_tokens=prompt_tokens+?, completion_tokens=completion_tokens+? WHERE id=?",
			   "iii", (int64_t)pt, (int64_t)ct, attempt);
		pthread_mutex_unlock(&c->mu);
		if (rc) {
			sf_errf(err, errlen, "openai: %s (http %d after %d requests)", r.err, r.http_status, r.attempts);
			sf_chat_reply_release(&r);
			ret = -1;
			break;
		}
		log_msg(c, attempt, "reply", r.content ? r.content : "");
		char *code = sf_extract_code(r.content);
		owned[nm] = r.content ? r.content : sf_xstrdup("");
		r.content = NULL;
		msgs[nm].role = "assistant";
		msgs[nm].content = owned[nm];
		nm++;
		sf_chat_reply_release(&r);
		sf_buf next = { 0 };
		if (!code) {
			sf_buf_puts(&next, "Your reply had no complete fenced code block; nothing was evaluated. Reply with the whole "
					   "solution file in one fenced code block.\n");
		} else {
			char e2[256];
			char *notes = sf_prose_of(msgs[nm - 1].content), *nf = sf_path_join(ws, "NOTES.md");
			sf_write_file(nf, notes, strlen(notes), e2, sizeof e2);
			free(notes);
			free(nf);
			sf_write_file(sol, code, strlen(code), e2, sizeof e2);
			free(code);
			sf_camp_eval ev;
			pthread_mutex_lock(&c->mu);
			snprintf(w->what, sizeof w->what, "evaluating turn %d", turn + 1);
			pthread_mutex_unlock(&c->mu);
			int er = sf_camp_evaluate(c, w, p, attempt, sol, NULL, &ev, err, errlen);
			if (er < 0) {
				ret = -1;
				sf_buf_free(&next);
				break;
			}
			if (er == 1)
				ev.summary = sf_xstrdup("(another worker is evaluating exactly this solution right now)\n");
			if (ev.improved)
				sf_camp_add_lessons(c, p, attempt, ws);
			sf_buf_printf(&next, "Official evaluation of your solution:\n%s\n%s", ev.summary,
				      ev.improved ? "This is the new best. Improve it further.\n"
						  : "Not better than the best so far. Try something else.\n");
			free(ev.summary);
		}
		if (nm + 1 >= cap) {
			sf_buf_free(&next);
			break;
		}
		owned[nm] = sf_buf_take(&next);
		msgs[nm].role = "user";
		msgs[nm].content = owned[nm];
		nm++;
	}
	for (int i = 0; i < nm; i++)
		free(owned[i]);
	free(owned);
	free(msgs);
	free(sol);
	free(ws);
	return ret;
}
