/*
 * openai_test.c - drives sf_openai_chat from the command line and prints what came back as one JSON
 * line, for tests/agent/openai_cases.py (which checks it against tests/agent/fake_openai.py) and for
 * trying a real server by hand.
 *
 * Usage: openai_test [--base URL] [--model M] [--key K] [--env] [--timeout S] [--retries N]
 *                    [--temperature T] [--max-tokens N] [--threads N] [--text] (--msg ROLE FILE)...
 *   --env      fill the configuration with sf_openai_cfg_from_env (OPENAI_BASE_URL, OPENAI_API_KEY, ...)
 *              and then apply the other options
 *   --threads  make N calls at once from N threads, the i-th with model M + "#i"
 *   --text     print only the reply's text (manual use)
 * A message's content is FILE's raw bytes. Output per call: {"rc", "available", "content",
 * "prompt_tokens", "completion_tokens", "http_status", "attempts", "err", "elapsed", "model"}.
 * Exit status: 0 when every call succeeded, 1 when one failed, 2 on usage errors.
 */
#include "agent/openai.h"
#include "core/util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MSGS 64
#define MAX_THREADS 32

typedef struct call {
	sf_openai_cfg cfg;
	const sf_chat_msg *msgs;
	size_t n;
	sf_chat_reply reply;
	int rc;
	double elapsed;
	char model[512];
} call;

/* Runs one call (a thread's body). */
static void *run_call(void *p)
{
	call *c = p;
	double t0 = sf_now();
	c->rc = sf_openai_chat(&c->cfg, c->msgs, c->n, &c->reply);
	c->elapsed = sf_now() - t0;
	return NULL;
}

/* Prints one call's result as a JSON line. */
static void print_call(const call *c)
{
	sf_buf b = {0};
	sf_buf_printf(&b, "{\"rc\":%d,\"available\":%d,\"content\":", c->rc, sf_openai_available());
	if (c->reply.content)
		sf_buf_json_str(&b, c->reply.content);
	else
		sf_buf_puts(&b, "null");
	sf_buf_printf(&b, ",\"prompt_tokens\":%ld,\"completion_tokens\":%ld,\"http_status\":%d,\"attempts\":%d,\"err\":",
		      c->reply.prompt_tokens, c->reply.completion_tokens, c->reply.http_status, c->reply.attempts);
	sf_buf_json_str(&b, c->reply.err);
	sf_buf_printf(&b, ",\"elapsed\":%.4f,\"model\":", c->elapsed);
	sf_buf_json_str(&b, c->cfg.model ? c->cfg.model : "");
	sf_buf_puts(&b, "}\n");
	fwrite(b.data, 1, b.len, stdout);
	sf_buf_free(&b);
}

static int usage(void)
{
	fputs("usage: openai_test [--base URL] [--model M] [--key K] [--env] [--timeout S] [--retries N]\n"
	      "                   [--temperature T] [--max-tokens N] [--threads N] [--text] (--msg ROLE FILE)...\n",
	      stderr);
	return 2;
}

int main(int argc, char **argv)
{
	sf_openai_cfg cfg = {.timeout_s = 60, .max_retries = 3, .temperature = -1, .max_tokens = 0};
	sf_chat_msg msgs[MAX_MSGS];
	char *texts[MAX_MSGS];
	size_t n = 0;
	int threads = 1, text_only = 0, use_env = 0;
	char err[SF_ERRLEN];
	/* --env first, so that the other options override what it read */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--env") == 0)
			use_env = 1;
	if (use_env) {
		const char *model = NULL;
		for (int i = 1; i + 1 < argc; i++)
			if (strcmp(argv[i], "--model") == 0)
				model = argv[i + 1];
		if (sf_openai_cfg_from_env(&cfg, model, err, sizeof err) != 0) {
			printf("{\"rc\":-1,\"env_err\":");
			sf_buf b = {0};
			sf_buf_json_str(&b, err);
			printf("%s}\n", b.data);
			sf_buf_free(&b);
			return 1;
		}
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int has1 = i + 1 < argc;
		double d;
		if (strcmp(a, "--env") == 0) {
			continue;
		} else if (strcmp(a, "--text") == 0) {
			text_only = 1;
		} else if (!has1) {
			return usage();
		} else if (strcmp(a, "--base") == 0) {
			cfg.base_url = argv[++i];
		} else if (strcmp(a, "--model") == 0) {
			cfg.model = argv[++i];
		} else if (strcmp(a, "--key") == 0) {
			cfg.api_key = argv[++i];
		} else if (strcmp(a, "--timeout") == 0 && sf_parse_double(argv[i + 1], &d) == 0) {
			cfg.timeout_s = d, i++;
		} else if (strcmp(a, "--retries") == 0 && sf_parse_double(argv[i + 1], &d) == 0) {
			cfg.max_retries = (int)d, i++;
		} else if (strcmp(a, "--temperature") == 0 && sf_parse_double(argv[i + 1], &d) == 0) {
			cfg.temperature = d, i++;
		} else if (strcmp(a, "--max-tokens") == 0 && sf_parse_double(argv[i + 1], &d) == 0) {
			cfg.max_tokens = (long)d, i++;
		} else if (strcmp(a, "--threads") == 0 && sf_parse_double(argv[i + 1], &d) == 0 && d >= 1 &&
			   d <= MAX_THREADS) {
			threads = (int)d, i++;
		} else if (strcmp(a, "--msg") == 0 && i + 2 < argc && n < MAX_MSGS) {
			size_t len;
			if (sf_read_file(argv[i + 2], &texts[n], &len, err, sizeof err) != 0) {
				fprintf(stderr, "openai_test: %s\n", err);
				return 2;
			}
			msgs[n].role = argv[i + 1];
			msgs[n].content = texts[n];
			n++;
			i += 2;
		} else {
			return usage();
		}
	}
	call *calls = sf_xcalloc((size_t)threads, sizeof *calls);
	pthread_t tid[MAX_THREADS];
	for (int t = 0; t < threads; t++) {
		calls[t].cfg = cfg;
		calls[t].msgs = msgs;
		calls[t].n = n;
		if (threads > 1 && cfg.model) {
			snprintf(calls[t].model, sizeof calls[t].model, "%s#%d", cfg.model, t);
			calls[t].cfg.model = calls[t].model;
		}
	}
	if (threads == 1) {
		run_call(&calls[0]);
	} else {
		for (int t = 0; t < threads; t++)
			if (pthread_create(&tid[t], NULL, run_call, &calls[t]) != 0) {
				fprintf(stderr, "openai_test: pthread_create failed\n");
				return 2;
			}
		for (int t = 0; t < threads; t++)
			pthread_join(tid[t], NULL);
	}
	int status = 0;
	for (int t = 0; t < threads; t++) {
		if (text_only && calls[t].rc == 0)
			fputs(calls[t].reply.content, stdout);
		else if (text_only)
			fprintf(stderr, "openai_test: %s\n", calls[t].reply.err);
		else
			print_call(&calls[t]);
		if (calls[t].rc != 0)
			status = 1;
		sf_chat_reply_release(&calls[t].reply);
	}
	free(calls);
	for (size_t i = 0; i < n; i++)
		free(texts[i]);
	return status;
}
