/*
 * openai.c - the OpenAI-compatible chat-completions client (see openai.h): the request body, the
 * server-sent-events reader, error classification and the retry loop. Without SF_HAVE_CURL (the
 * Makefile defines it when <curl/curl.h> is found) only the curl-free parts are built and
 * sf_openai_chat fails with a clear error.
 */
#include "agent/openai.h"
#include "core/json.h"
#include "core/util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NO_CURL_MSG "solforge was built without libcurl; install libcurl dev headers and rebuild"

void sf_chat_reply_release(sf_chat_reply *reply)
{
	if (!reply)
		return;
	free(reply->content);
	reply->content = NULL;
}

/* Reads a double from environment variable `name` into *out (unchanged when unset or empty). */
static int env_double(const char *name, double *out, char *err, size_t errlen)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return 0;
	if (sf_parse_double(s, out) != 0) {
		sf_errf(err, errlen, "%s is not a number: %s", name, s);
		return -1;
	}
	return 0;
}

int sf_openai_cfg_from_env(sf_openai_cfg *cfg, const char *model, char *err, size_t errlen)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->timeout_s = 600;
	cfg->max_retries = 5;
	cfg->temperature = -1;
	cfg->max_tokens = 0;
	if (!model || !*model) {
		sf_errf(err, errlen, "no model name given (openai:MODEL)");
		return -1;
	}
	cfg->model = model;
	const char *base = getenv("OPENAI_BASE_URL");
	cfg->base_url = base && *base ? base : "https://api.openai.com/v1";
	if (strncasecmp(cfg->base_url, "http://", 7) != 0 && strncasecmp(cfg->base_url, "https://", 8) != 0) {
		sf_errf(err, errlen, "OPENAI_BASE_URL must start with http:// or https://: %s", cfg->base_url);
		return -1;
	}
	const char *key = getenv("OPENAI_API_KEY");
	cfg->api_key = key && *key ? key : NULL;
	if (!cfg->api_key && strstr(cfg->base_url, "://api.openai.com")) {
		sf_errf(err, errlen, "OPENAI_API_KEY is not set (needed for %s)", cfg->base_url);
		return -1;
	}
	double retries = cfg->max_retries, max_tokens = 0;
	if (env_double("SOLFORGE_OPENAI_TIMEOUT", &cfg->timeout_s, err, errlen) != 0 ||
	    env_double("SOLFORGE_OPENAI_RETRIES", &retries, err, errlen) != 0 ||
	    env_double("SOLFORGE_OPENAI_TEMPERATURE", &cfg->temperature, err, errlen) != 0 ||
	    env_double("SOLFORGE_OPENAI_MAX_TOKENS", &max_tokens, err, errlen) != 0)
		return -1;
	if (retries < 0 || retries > 100 || retries != (int)retries) {
		sf_errf(err, errlen, "SOLFORGE_OPENAI_RETRIES must be an integer in 0..100");
		return -1;
	}
	cfg->max_retries = (int)retries;
	cfg->max_tokens = (long)max_tokens;
	return 0;
}

#ifndef SF_HAVE_CURL

int sf_openai_available(void)
{
	return 0;
}

int sf_openai_chat(const sf_openai_cfg *cfg, const sf_chat_msg *msgs, size_t n, sf_chat_reply *reply)
{
	memset(reply, 0, sizeof *reply);
	reply->prompt_tokens = reply->completion_tokens = -1;
	sf_errf(reply->err, sizeof reply->err, "%s", NO_CURL_MSG);
	return -1;
}

#else /* SF_HAVE_CURL */

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <time.h>

#define MAX_REPLY (64u << 20)   /* bytes of reply kept before giving up */
#define MAX_ERROR_BODY (1u << 16) /* bytes of an error body kept */
#define MAX_RETRY_AFTER 300.0     /* a longer Retry-After fails the call instead of sleeping */

int sf_openai_available(void)
{
	return 1;
}

/* ---- request body ---- */

/*
 * Length of the well-formed UTF-8 sequence at p[0..n), or 0 when it is not one; *bad gets the length
 * of the maximal ill-formed prefix to replace by one U+FFFD (Unicode's "maximal subpart" practice,
 * which Python's 'replace' decoder also follows).
 */
static size_t utf8_seq(const unsigned char *p, size_t n, size_t *bad)
{
	unsigned char c = p[0];
	size_t need;
	unsigned char lo = 0x80, hi = 0xbf;
	*bad = 1;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		need = 3;
		if (c == 0xe0)
			lo = 0xa0;
		if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 4;
		if (c == 0xf0)
			lo = 0x90;
		if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	size_t i = 1;
	for (; i < need && i < n; i++) {
		unsigned char lo_i = i == 1 ? lo : 0x80, hi_i = i == 1 ? hi : 0xbf;
		if (p[i] < lo_i || p[i] > hi_i)
			break;
	}
	if (i == need)
		return need;
	*bad = i;
	return 0;
}

/* Appends s as a JSON string literal; control characters escaped, invalid UTF-8 as U+FFFD. */
static void json_str(sf_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	sf_buf_append(b, "\"", 1);
	for (size_t i = 0; i < n;) {
		unsigned char c = p[i];
		size_t bad, k = utf8_seq(p + i, n - i, &bad);
		if (k == 0) {
			sf_buf_puts(b, "\\ufffd");
			i += bad;
			continue;
		}
		if (c == '"' || c == '\\') {
			sf_buf_append(b, "\\", 1);
			sf_buf_append(b, p + i, 1);
		} else if (c == '\n') {
			sf_buf_puts(b, "\\n");
		} else if (c == '\t') {
			sf_buf_puts(b, "\\t");
		} else if (c < 0x20 || c == 0x7f) {
			sf_buf_printf(b, "\\u%04x", c);
		} else {
			sf_buf_append(b, p + i, k);
		}
		i += k;
	}
	sf_buf_append(b, "\"", 1);
}

/* The request body: model, messages, stream with usage, optional temperature and max_tokens. */
static char *build_body(const sf_openai_cfg *cfg, const sf_chat_msg *msgs, size_t n)
{
	sf_buf b = {0};
	sf_buf_puts(&b, "{\"model\":");
	json_str(&b, cfg->model);
	sf_buf_puts(&b, ",\"messages\":[");
	for (size_t i = 0; i < n; i++) {
		sf_buf_puts(&b, i ? ",{\"role\":" : "{\"role\":");
		json_str(&b, msgs[i].role);
		sf_buf_puts(&b, ",\"content\":");
		json_str(&b, msgs[i].content);
		sf_buf_puts(&b, "}");
	}
	sf_buf_puts(&b, "],\"stream\":true,\"stream_options\":{\"include_usage\":true}");
	if (cfg->temperature >= 0 && isfinite(cfg->temperature))
		sf_buf_printf(&b, ",\"temperature\":%.17g", cfg->temperature);
	if (cfg->max_tokens > 0)
		sf_buf_printf(&b, ",\"max_tokens\":%ld", cfg->max_tokens);
	sf_buf_puts(&b, "}");
	return sf_buf_take(&b);
}

/* ---- one request ---- */

enum { MODE_UNKNOWN, MODE_SSE, MODE_RAW };

typedef struct attempt {
	CURL *curl;
	int mode;
	sf_buf line;    /* the current, unfinished SSE line */
	sf_buf data;    /* the data lines of the current event, joined by '\n' */
	int ndata;      /* data lines in `data` */
	sf_buf content; /* choice 0's text so far */
	sf_buf raw;     /* a non-SSE body: an error, or a non-streamed completion */
	int done;       /* "data: [DONE]" seen */
	long prompt_tokens, completion_tokens;
	double retry_after; /* seconds the server asked to wait; < 0 none */
	double last_rx;     /* sf_now() when bytes last came in (or the request started) */
	double idle_s;      /* give up after this long without bytes */
	char err[200];      /* what went wrong inside the stream */
	int fatal;          /* the write callback aborted for a reason retrying cannot fix */
} attempt;

/* Reads a chunk's usage object into a. */
static void read_usage(attempt *a, const sf_json *usage)
{
	const sf_json *p = sf_json_get(usage, "prompt_tokens"), *c = sf_json_get(usage, "completion_tokens");
	if (p && p->type == SF_JSON_NUMBER && p->is_int)
		a->prompt_tokens = (long)p->ival;
	if (c && c->type == SF_JSON_NUMBER && c->is_int)
		a->completion_tokens = (long)c->ival;
}

/* The message of an {"error": {"message": ...}} / {"error": "..."} / {"message": ...} object, or NULL. */
static const char *error_message(const sf_json *v)
{
	const sf_json *e = sf_json_get(v, "error");
	if (e && e->type == SF_JSON_STRING)
		return e->str;
	const sf_json *m = sf_json_get(e ? e : v, "message");
	if (m && m->type == SF_JSON_STRING)
		return m->str;
	if (e && e->type != SF_JSON_NULL)
		return "(error without a message)";
	return NULL;
}

/* Appends the text of choice 0 (delta.content when streamed, message.content when not) to a->content. */
static int add_choices(attempt *a, const sf_json *choices, const char *part)
{
	if (!choices || choices->type != SF_JSON_ARRAY)
		return 0;
	for (size_t i = 0; i < choices->n; i++) {
		const sf_json *ch = choices->items[i], *idx = sf_json_get(ch, "index");
		if (idx && !(idx->type == SF_JSON_NUMBER && idx->is_int && idx->ival == 0))
			continue;
		const sf_json *t = sf_json_get(sf_json_get(ch, part), "content");
		if (t && t->type == SF_JSON_STRING) {
			if (a->content.len + t->len > MAX_REPLY) {
				sf_errf(a->err, sizeof a->err, "reply exceeds %u MiB", MAX_REPLY >> 20);
				a->fatal = 1;
				return -1;
			}
			sf_buf_append(&a->content, t->str, t->len);
		}
	}
	return 0;
}

/* Handles one complete SSE event's data; -1 stops the transfer (a->err, a->fatal set). */
static int on_event(attempt *a)
{
	const char *d = a->data.data ? a->data.data : "";
	size_t n = a->data.len;
	a->ndata = 0;
	if (a->done || n == 0)
		goto out;
	if (n == 6 && memcmp(d, "[DONE]", 6) == 0) {
		a->done = 1;
		goto out;
	}
	char jerr[128];
	sf_json *v = sf_json_parse(d, n, jerr, sizeof jerr);
	if (!v || v->type != SF_JSON_OBJECT) {
		sf_errf(a->err, sizeof a->err, "unreadable stream chunk: %s", v ? "not an object" : jerr);
		sf_json_free(v);
		return -1;
	}
	const char *msg = error_message(v);
	if (msg) {
		sf_errf(a->err, sizeof a->err, "error inside the stream: %.150s", msg);
		sf_json_free(v);
		return -1;
	}
	int rc = add_choices(a, sf_json_get(v, "choices"), "delta");
	const sf_json *usage = sf_json_get(v, "usage");
	if (usage && usage->type == SF_JSON_OBJECT)
		read_usage(a, usage);
	sf_json_free(v);
	if (rc != 0)
		return -1;
out:
	a->data.len = 0;
	return 0;
}

/* Handles one SSE line (without its end of line); -1 stops the transfer. */
static int on_line(attempt *a, const char *s, size_t n)
{
	if (n && s[n - 1] == '\r')
		n--;
	if (n == 0)
		return a->ndata ? on_event(a) : 0;
	if (s[0] == ':' || n < 5 || memcmp(s, "data:", 5) != 0)
		return 0; /* comments, event:, id:, retry: */
	s += 5, n -= 5;
	if (n && s[0] == ' ')
		s++, n--;
	if (a->ndata++)
		sf_buf_append(&a->data, "\n", 1);
	if (a->data.len + n > MAX_REPLY) {
		sf_errf(a->err, sizeof a->err, "stream event exceeds %u MiB", MAX_REPLY >> 20);
		a->fatal = 1;
		return -1;
	}
	sf_buf_append(&a->data, s, n);
	return 0;
}

/* curl write callback: SSE bytes are split into lines as they come; anything else is kept whole. */
static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
	attempt *a = ud;
	size_t n = size * nmemb;
	a->last_rx = sf_now();
	if (a->mode == MODE_UNKNOWN && n) {
		long status = 0;
		curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &status);
		a->mode = status == 200 && p[0] != '{' ? MODE_SSE : MODE_RAW;
	}
	if (a->mode == MODE_RAW) {
		long status = 0;
		curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &status);
		size_t cap = status == 200 ? MAX_REPLY : MAX_ERROR_BODY;
		if (a->raw.len < cap)
			sf_buf_append(&a->raw, p, n < cap - a->raw.len ? n : cap - a->raw.len);
		else if (status == 200) {
			sf_errf(a->err, sizeof a->err, "reply exceeds %u MiB", MAX_REPLY >> 20);
			a->fatal = 1;
			return 0;
		}
		return n;
	}
	size_t start = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '\n')
			continue;
		int rc;
		if (a->line.len) {
			sf_buf_append(&a->line, p + start, i - start);
			rc = on_line(a, a->line.data, a->line.len);
			a->line.len = 0;
		} else {
			rc = on_line(a, p + start, i - start);
		}
		if (rc != 0)
			return 0;
		start = i + 1;
	}
	if (a->line.len + (n - start) > MAX_REPLY) {
		sf_errf(a->err, sizeof a->err, "stream line exceeds %u MiB", MAX_REPLY >> 20);
		a->fatal = 1;
		return 0;
	}
	sf_buf_append(&a->line, p + start, n - start);
	return n;
}

/* curl header callback: a new response (status line) resets Retry-After; reads Retry-After[-ms]. */
static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
	attempt *a = ud;
	size_t n = size * nmemb;
	a->last_rx = sf_now();
	char h[256];
	size_t k = n < sizeof h - 1 ? n : sizeof h - 1;
	memcpy(h, p, k);
	h[k] = 0;
	while (k && (h[k - 1] == '\r' || h[k - 1] == '\n' || h[k - 1] == ' '))
		h[--k] = 0;
	if (strncmp(h, "HTTP/", 5) == 0) {
		a->retry_after = -1;
		return n;
	}
	const char *v = strchr(h, ':');
	if (!v)
		return n;
	size_t name = (size_t)(v - h);
	for (v++; *v == ' ' || *v == '\t'; v++)
		;
	double secs;
	if (name == 14 && strncasecmp(h, "retry-after-ms", 14) == 0 && sf_parse_double(v, &secs) == 0 &&
	    secs >= 0) {
		a->retry_after = secs / 1000; /* more precise than retry-after: wins */
	} else if (name == 11 && strncasecmp(h, "retry-after", 11) == 0 && a->retry_after < 0) {
		if (sf_parse_double(v, &secs) == 0 && secs >= 0) {
			a->retry_after = secs;
		} else {
			time_t t = curl_getdate(v, NULL); /* an HTTP date */
			if (t != -1) {
				double d = difftime(t, time(NULL));
				a->retry_after = d > 0 ? d : 0;
			}
		}
	}
	return n;
}

/* curl progress callback (about once a second while idle): stops a request that received nothing for
 * the idle limit. curl's own low-speed limit averages over several seconds; this is exact to ~1 s. */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	attempt *a = ud;
	double quiet = sf_now() - a->last_rx;
	if (quiet < a->idle_s)
		return 0;
	sf_errf(a->err, sizeof a->err, "request failed: nothing received for %.1f s (idle limit %g s)", quiet, a->idle_s);
	return 1;
}

/* Writes text[0..n) into out as one printable line (no control characters), at most outlen-1 bytes,
 * cut at a character boundary. */
static void one_line(char *out, size_t outlen, const char *text, size_t n)
{
	size_t j = 0;
	for (size_t i = 0; i < n && j + 1 < outlen; i++) {
		unsigned char c = (unsigned char)text[i];
		out[j++] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
	}
	if (j < n && ((unsigned char)text[j] & 0xc0) == 0x80) { /* cut inside a UTF-8 sequence: drop it */
		while (j && ((unsigned char)out[j - 1] & 0xc0) == 0x80)
			j--;
		if (j)
			j--;
	}
	while (j && out[j - 1] == ' ')
		j--;
	out[j] = 0;
}

/* The server's error message of a non-200 body (JSON error object, else the body's text). */
static void body_message(const attempt *a, char *out, size_t outlen)
{
	char jerr[64];
	sf_json *v = a->raw.len ? sf_json_parse(a->raw.data, a->raw.len, jerr, sizeof jerr) : NULL;
	const char *m = v ? error_message(v) : NULL;
	if (m)
		one_line(out, outlen, m, strlen(m));
	else if (a->raw.len)
		one_line(out, outlen, a->raw.data, a->raw.len);
	else
		sf_errf(out, outlen, "(empty body)");
	sf_json_free(v);
}

enum { RES_OK, RES_RETRY, RES_FATAL };

/*
 * Makes one request and classifies its outcome: RES_OK (content and tokens in reply), RES_RETRY or
 * RES_FATAL (message in reply->err). *retry_after gets the server's requested wait (< 0: none).
 */
static int one_request(const sf_openai_cfg *cfg, const char *url, const char *body, struct curl_slist *headers,
		       double idle_s, sf_chat_reply *reply, double *retry_after)
{
	attempt a;
	memset(&a, 0, sizeof a);
	a.prompt_tokens = a.completion_tokens = -1;
	a.retry_after = -1;
	a.idle_s = idle_s;
	a.last_rx = sf_now();
	a.curl = curl_easy_init();
	if (!a.curl) {
		sf_errf(reply->err, sizeof reply->err, "curl_easy_init failed");
		return RES_FATAL;
	}
	char cerr[CURL_ERROR_SIZE] = "";
	CURL *c = a.curl;
	double timeout = cfg->timeout_s > 0 ? cfg->timeout_s : 600;
	if (timeout > 86400)
		timeout = 86400; /* a day; keeps the milliseconds in a long */
	curl_easy_setopt(c, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	curl_easy_setopt(c, CURLOPT_USERAGENT, "solforge-openai/1");
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000));
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)((timeout < 30 ? timeout : 30) * 1000));
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, &a);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &a);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	CURLcode res = curl_easy_perform(c);
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	reply->http_status = (int)status;
	*retry_after = a.retry_after;
	int out = RES_RETRY;
	char msg[200];
	if (res == CURLE_OK && a.mode == MODE_SSE && a.line.len)
		on_line(&a, a.line.data, a.line.len); /* a last line without its end of line */
	if (res == CURLE_OK && a.mode == MODE_SSE && a.ndata)
		on_event(&a);

	if (a.fatal) {
		sf_errf(reply->err, sizeof reply->err, "%s", a.err);
		out = RES_FATAL;
	} else if (res != CURLE_OK && a.err[0]) {
		sf_errf(reply->err, sizeof reply->err, "%s", a.err); /* our callback stopped the transfer */
	} else if (res != CURLE_OK) {
		const char *why = cerr[0] ? cerr : curl_easy_strerror(res);
		one_line(msg, sizeof msg, why, strlen(why));
		for (char *q = msg; *q; q++)
			*q = (char)tolower((unsigned char)*q);
		sf_errf(reply->err, sizeof reply->err, "request failed: %s", msg);
		if (res == CURLE_URL_MALFORMAT || res == CURLE_UNSUPPORTED_PROTOCOL || res == CURLE_OUT_OF_MEMORY ||
		    res == CURLE_PEER_FAILED_VERIFICATION || res == CURLE_SSL_CACERT_BADFILE)
			out = RES_FATAL;
	} else if (status != 200) {
		body_message(&a, msg, sizeof msg);
		sf_errf(reply->err, sizeof reply->err, "http %ld: %s", status, msg);
		if (!(status == 408 || status == 429 || status >= 500))
			out = RES_FATAL;
	} else if (a.mode == MODE_SSE) {
		if (a.err[0])
			sf_errf(reply->err, sizeof reply->err, "%s", a.err);
		else if (!a.done)
			sf_errf(reply->err, sizeof reply->err, "the stream broke off before its end marker (%zu bytes of text)",
				a.content.len);
		else
			out = RES_OK;
	} else { /* a 200 that is one JSON completion (the server ignored "stream") */
		char jerr[128];
		sf_json *v = sf_json_parse(a.raw.data ? a.raw.data : "", a.raw.len, jerr, sizeof jerr);
		const char *m = v ? error_message(v) : NULL;
		if (!v)
			sf_errf(reply->err, sizeof reply->err, "unreadable reply: %s", jerr);
		else if (m)
			sf_errf(reply->err, sizeof reply->err, "error in the reply: %.150s", m);
		else if (add_choices(&a, sf_json_get(v, "choices"), "message") != 0)
			sf_errf(reply->err, sizeof reply->err, "%s", a.err), out = RES_FATAL;
		else {
			read_usage(&a, sf_json_get(v, "usage"));
			out = RES_OK;
		}
		sf_json_free(v);
	}
	if (out == RES_OK) {
		reply->content = sf_buf_take(&a.content);
		reply->prompt_tokens = a.prompt_tokens;
		reply->completion_tokens = a.completion_tokens;
	}
	sf_buf_free(&a.line);
	sf_buf_free(&a.data);
	sf_buf_free(&a.content);
	sf_buf_free(&a.raw);
	curl_easy_cleanup(c);
	return out;
}

/* ---- the retry loop ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* A uniform double in [0, 1) from a per-thread xorshift generator seeded by the clock and thread. */
static double jitter(void)
{
	static _Thread_local uint64_t s;
	if (!s) {
		uintptr_t where = (uintptr_t)&s; /* differs per thread */
		s = sf_fnv1a(&where, sizeof where, (uint64_t)(sf_wall_time() * 1e9)) | 1;
	}
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return (double)(s >> 11) / 9007199254740992.0;
}

/* Sleeps for secs seconds (through signals). */
static void sleep_s(double secs)
{
	if (secs <= 0)
		return;
	struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* A positive environment number, or def. */
static double env_pos(const char *name, double def)
{
	const char *s = getenv(name);
	double v;
	return s && sf_parse_double(s, &v) == 0 && v >= 0 ? v : def;
}

int sf_openai_chat(const sf_openai_cfg *cfg, const sf_chat_msg *msgs, size_t n, sf_chat_reply *reply)
{
	memset(reply, 0, sizeof *reply);
	reply->prompt_tokens = reply->completion_tokens = -1;
	if (!cfg || !cfg->base_url || !*cfg->base_url || !cfg->model || !*cfg->model) {
		sf_errf(reply->err, sizeof reply->err, "no base url or model given");
		return -1;
	}
	if (n == 0) {
		sf_errf(reply->err, sizeof reply->err, "no messages to send");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (!msgs[i].role || !*msgs[i].role || !msgs[i].content) {
			sf_errf(reply->err, sizeof reply->err, "message %zu has no role or no content", i);
			return -1;
		}
	}
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK) {
		sf_errf(reply->err, sizeof reply->err, "curl_global_init failed: %s", curl_easy_strerror(curl_init_rc));
		return -1;
	}
	double timeout = cfg->timeout_s > 0 ? cfg->timeout_s : 600;
	double idle = env_pos("SOLFORGE_OPENAI_IDLE_S", 120);
	if (idle >= timeout)
		idle = INFINITY; /* the whole-request limit comes first */
	double base = env_pos("SOLFORGE_OPENAI_BACKOFF_S", 1), cap = env_pos("SOLFORGE_OPENAI_BACKOFF_MAX_S", 60);

	size_t ul = strlen(cfg->base_url);
	while (ul && cfg->base_url[ul - 1] == '/')
		ul--;
	sf_buf url = {0};
	sf_buf_append(&url, cfg->base_url, ul);
	sf_buf_puts(&url, "/chat/completions");
	char *body = build_body(cfg, msgs, n);
	struct curl_slist *headers = NULL, *h;
	int rc = -1;
	const char *fixed[] = {"Content-Type: application/json", "Accept: text/event-stream", "Expect:"};
	for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
		if (!(h = curl_slist_append(headers, fixed[i])))
			goto nomem;
		headers = h;
	}
	if (cfg->api_key && *cfg->api_key) {
		sf_buf auth = {0};
		sf_buf_printf(&auth, "Authorization: Bearer %s", cfg->api_key);
		h = curl_slist_append(headers, auth.data);
		memset(auth.data, 0, auth.len);
		sf_buf_free(&auth);
		if (!h)
			goto nomem;
		headers = h;
	}
	for (int k = 1;; k++) {
		double retry_after;
		reply->attempts = k;
		reply->err[0] = 0;
		int r = one_request(cfg, url.data, body, headers, idle, reply, &retry_after);
		if (r == RES_OK) {
			rc = 0;
			break;
		}
		if (r == RES_FATAL)
			break;
		if (k > cfg->max_retries) {
			if (k > 1) {
				char e[sizeof reply->err];
				memcpy(e, reply->err, sizeof e);
				sf_errf(reply->err, sizeof reply->err, "%s (gave up after %d attempts)", e, k);
			}
			break;
		}
		if (retry_after > MAX_RETRY_AFTER) {
			char e[sizeof reply->err];
			memcpy(e, reply->err, sizeof e);
			sf_errf(reply->err, sizeof reply->err, "%s (the server asks to wait %.0f s; not waiting)", e,
				retry_after);
			break;
		}
		double d = base * pow(2, k - 1);
		if (d > cap)
			d = cap;
		d *= 0.5 + 0.5 * jitter();
		sleep_s(retry_after > d ? retry_after : d);
	}
	goto out;
nomem:
	sf_errf(reply->err, sizeof reply->err, "out of memory building the request headers");
out:
	curl_slist_free_all(headers);
	free(body);
	sf_buf_free(&url);
	return rc;
}

#endif /* SF_HAVE_CURL */
