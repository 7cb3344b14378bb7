/*
 * openai.h - an OpenAI-compatible chat-completions client over libcurl (streaming, retries with
 * backoff, token accounting).
 *
 * OWNED BY THE `openai` BRANCH: this copy of the declarations only keeps the campaign's openai:
 * worker compiling until that branch is merged; the lead keeps the openai branch's version.
 */
#ifndef SF_OPENAI_H
#define SF_OPENAI_H

#include <stddef.h>

typedef struct sf_chat_msg {
	const char *role;
	const char *content;
} sf_chat_msg;

typedef struct sf_openai_cfg {
	const char *base_url; /* e.g. https://api.openai.com/v1 ; from $OPENAI_BASE_URL */
	const char *api_key;  /* from $OPENAI_API_KEY; may be NULL for local servers */
	const char *model;
	double timeout_s;     /* whole request */
	int max_retries;      /* on 429 / 5xx / transport errors, exponential backoff with jitter, Retry-After honoured */
	double temperature;   /* < 0: not sent */
	long max_tokens;      /* <= 0: not sent */
} sf_openai_cfg;

typedef struct sf_chat_reply {
	char *content;                         /* owned; the assistant's whole streamed text */
	long prompt_tokens, completion_tokens; /* from the usage chunk; -1 unknown */
	int http_status;                       /* last HTTP status */
	int attempts;                          /* requests made */
	char err[256];                         /* lowercase message when the call failed */
} sf_chat_reply;

/* streams one chat completion; 0 on success, -1 on failure (reply->err says why). */
int sf_openai_chat(const sf_openai_cfg *cfg, const sf_chat_msg *msgs, size_t n, sf_chat_reply *reply);
void sf_chat_reply_release(sf_chat_reply *reply);
int sf_openai_available(void); /* 0 when built without libcurl (then sf_openai_chat fails with a clear error) */

#endif
