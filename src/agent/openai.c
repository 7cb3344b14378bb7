/*
 * openai.c - PLACEHOLDER ON THE campaign BRANCH ONLY, TO BE REPLACED by the `openai` branch's client
 * (libcurl, streaming, retries). It fails every call with a clear error so that the campaign's
 * openai: worker links and says why it cannot run.
 */
#include "agent/openai.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sf_openai_chat(const sf_openai_cfg *cfg, const sf_chat_msg *msgs, size_t n, sf_chat_reply *reply)
{
	(void)cfg;
	(void)msgs;
	(void)n;
	memset(reply, 0, sizeof *reply);
	reply->prompt_tokens = reply->completion_tokens = -1;
	snprintf(reply->err, sizeof reply->err, "this build has no openai client (placeholder of the campaign branch)");
	return -1;
}

void sf_chat_reply_release(sf_chat_reply *reply)
{
	free(reply->content);
	reply->content = NULL;
}

int sf_openai_available(void)
{
	return 0;
}
