/*
 * openai.h - a client for OpenAI-compatible chat-completions servers (api.openai.com, vLLM, llama.cpp,
 * SGLang, ...) over libcurl: one streamed completion per call, retried with exponential backoff on
 * rate limits, server errors and broken connections, with token accounting. The campaign's `openai:`
 * worker builds its conversations on it (docs/openai.md).
 *
 * Built without libcurl (no curl headers at build time), sf_openai_available() returns 0 and
 * sf_openai_chat fails with "solforge was built without libcurl; install libcurl dev headers and
 * rebuild".
 *
 * Thread safety: sf_openai_chat may run in several threads at once (one curl handle per request;
 * curl's global state is set up once). It never raises signals (CURLOPT_NOSIGNAL).
 */
#ifndef SF_AGENT_OPENAI_H
#define SF_AGENT_OPENAI_H

#include <stddef.h>

typedef struct sf_chat_msg {
	const char *role;    /* "system", "user" or "assistant" */
	const char *content; /* any bytes but NUL; invalid UTF-8 is sent as U+FFFD */
} sf_chat_msg;

typedef struct sf_openai_cfg {
	const char *base_url; /* e.g. https://api.openai.com/v1 ; from $OPENAI_BASE_URL */
	const char *api_key;  /* from $OPENAI_API_KEY; may be NULL for local servers */
	const char *model;
	double timeout_s;     /* whole request (one attempt); <= 0: 600 s */
	int max_retries;      /* on 429 / 5xx / transport errors, exponential backoff with jitter, Retry-After honoured */
	double temperature;   /* < 0: not sent */
	long max_tokens;      /* <= 0: not sent */
} sf_openai_cfg;

typedef struct sf_chat_reply {
	char *content;                         /* owned; the assistant's whole streamed text; NULL on failure */
	long prompt_tokens, completion_tokens; /* from the usage chunk; -1 unknown */
	int http_status;                       /* last HTTP status (0: no response) */
	int attempts;                          /* requests made */
	char err[256];                         /* lowercase message when the call failed */
} sf_chat_reply;

/*
 * Streams one chat completion of msgs[0..n) from cfg->base_url + "/chat/completions" ("stream": true,
 * "stream_options": {"include_usage": true}) and returns the text of choice 0 in reply->content.
 * reply is overwritten, not released: release a previous reply first.
 *
 * Retried (up to cfg->max_retries more requests, waiting base * 2^(k-1) seconds, jittered to 50-100%,
 * at most the cap, and never less than the server's Retry-After / retry-after-ms): HTTP 408, 429 and
 * 5xx, transport errors (refused connection, reset, timeout, too slow), a stream that ends before
 * "data: [DONE]", an unreadable chunk, and an error event inside the stream. Not retried: any other
 * HTTP status (the error names the status and the server's error message), bad URLs, a Retry-After
 * above 300 s, and a reply above 64 MiB.
 *
 * Time limits per request: cfg->timeout_s for the whole request; connecting at most 30 s; and a
 * request that receives nothing for the idle limit (120 s; checked about once a second, and only when
 * shorter than timeout_s) is abandoned. So one call ends within about
 * (max_retries + 1) * timeout_s plus its waits (each at most 300 s).
 * Environment overrides (for tests and slow servers): SOLFORGE_OPENAI_IDLE_S (idle limit),
 * SOLFORGE_OPENAI_BACKOFF_S (backoff base, default 1), SOLFORGE_OPENAI_BACKOFF_MAX_S (cap, default 60).
 *
 * Returns 0 on success, -1 on failure (reply->err says why; tokens are -1, content NULL).
 */
int sf_openai_chat(const sf_openai_cfg *cfg, const sf_chat_msg *msgs, size_t n, sf_chat_reply *reply);

/* Frees reply->content and sets it to NULL; NULL reply is fine. */
void sf_chat_reply_release(sf_chat_reply *reply);

/* 1 when built with libcurl; 0 when not (then sf_openai_chat fails with a clear error). */
int sf_openai_available(void);

/*
 * Fills cfg for `model` from the environment: base_url from OPENAI_BASE_URL (default
 * https://api.openai.com/v1), api_key from OPENAI_API_KEY (NULL when unset or empty), timeout_s from
 * SOLFORGE_OPENAI_TIMEOUT (default 600), max_retries from SOLFORGE_OPENAI_RETRIES (default 5),
 * temperature from SOLFORGE_OPENAI_TEMPERATURE (default -1: not sent), max_tokens from
 * SOLFORGE_OPENAI_MAX_TOKENS (default 0: not sent). The strings point into the environment and into
 * `model`, so they live as long as those do. Fails (0 / -1, message in err) when model is empty, a
 * number does not parse, the base URL is not http(s)://, or the base URL is api.openai.com and no key
 * is set.
 */
int sf_openai_cfg_from_env(sf_openai_cfg *cfg, const char *model, char *err, size_t errlen);

#endif
