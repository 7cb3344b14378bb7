/*
 * parse.c - the campaign's pure text functions (no database, no processes; unit-tested in
 * tests/unit/test_campaign.c): solforge-tune declarations, code blocks and prose of model replies.
 */
#include "campaign/campaign.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ident_ok(const char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

static int value_ok(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      *s == '.' || *s == '+' || *s == '-'))
			return 0;
	return 1;
}

int sf_tune_parse(const char *text, sf_tune_space *s, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	const char *tag = "solforge-tune:";
	for (const char *p = strstr(text, tag); p; p = strstr(p + 1, tag)) {
		const char *q = p + strlen(tag), *end = q + strcspn(q, "\n");
		char *line = sf_xstrndup(q, (size_t)(end - q)), *save = NULL;
		for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
			if (!strcmp(t, "*/"))
				continue;
			char *eq = strchr(t, '=');
			if (!eq || s->n >= SF_TUNE_MAX_PARAMS) {
				sf_errf(err, errlen, "solforge-tune: '%s' is not NAME=V1,V2,... (at most %d parameters)", t,
					SF_TUNE_MAX_PARAMS);
				free(line);
				return -1;
			}
			*eq = 0;
			if (!ident_ok(t) || strlen(t) >= sizeof s->names[0]) {
				sf_errf(err, errlen, "solforge-tune: '%s' is not a parameter name", t);
				free(line);
				return -1;
			}
			for (int k = 0; k < s->n; k++)
				if (!strcmp(s->names[k], t)) {
					sf_errf(err, errlen, "solforge-tune: parameter %s declared twice", t);
					free(line);
					return -1;
				}
			snprintf(s->names[s->n], sizeof s->names[0], "%s", t);
			char *vsave = NULL;
			for (char *v = strtok_r(eq + 1, ",", &vsave); v; v = strtok_r(NULL, ",", &vsave)) {
				if (!value_ok(v) || strlen(v) >= sizeof s->values[0][0] ||
				    s->n_values[s->n] >= SF_TUNE_MAX_VALUES) {
					sf_errf(err, errlen, "solforge-tune: bad value '%s' of %s (letters, digits, _ . + -; "
							     "at most %d values)", v, t, SF_TUNE_MAX_VALUES);
					free(line);
					return -1;
				}
				snprintf(s->values[s->n][s->n_values[s->n]++], sizeof s->values[0][0], "%s", v);
			}
			if (!s->n_values[s->n]) {
				sf_errf(err, errlen, "solforge-tune: %s has no values", t);
				free(line);
				return -1;
			}
			s->n++;
		}
		free(line);
	}
	return 0;
}

double sf_tune_size(const sf_tune_space *s)
{
	if (!s->n)
		return 0;
	double n = 1;
	for (int i = 0; i < s->n; i++)
		n *= s->n_values[i];
	return n > 1e9 ? 1e9 : n;
}

/* Whether a fence's info string names code we can use (c, cuda, cpp, c++, cu, or nothing). */
static int lang_ok(const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		n--;
	static const char *const ok[] = { "", "c", "cuda", "cpp", "c++", "cu", "C", "CUDA", "cxx" };
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		if (strlen(ok[i]) == n && !strncmp(ok[i], s, n))
			return 1;
	return 0;
}

char *sf_extract_code(const char *reply)
{
	if (!reply)
		return NULL;
	char *best = NULL;
	const char *p = reply;
	while (*p) {
		/* a fence: ``` at the start of a line */
		const char *line = p;
		const char *eol = strchr(line, '\n');
		size_t ll = eol ? (size_t)(eol - line) : strlen(line);
		p = eol ? eol + 1 : line + ll;
		const char *t = line;
		while (t < line + ll && (*t == ' ' || *t == '\t'))
			t++;
		if ((size_t)(line + ll - t) < 3 || strncmp(t, "```", 3))
			continue;
		int usable = lang_ok(t + 3, (size_t)(line + ll - t - 3));
		const char *body = p, *q = p;
		const char *close = NULL;
		while (*q) {
			const char *e2 = strchr(q, '\n');
			size_t l2 = e2 ? (size_t)(e2 - q) : strlen(q);
			const char *u = q;
			while (u < q + l2 && (*u == ' ' || *u == '\t'))
				u++;
			if ((size_t)(q + l2 - u) >= 3 && !strncmp(u, "```", 3)) {
				close = q;
				p = e2 ? e2 + 1 : q + l2;
				break;
			}
			q = e2 ? e2 + 1 : q + l2;
		}
		if (!close)
			break; /* an unterminated block is not taken: the reply was cut */
		if (usable) {
			free(best);
			best = sf_xstrndup(body, (size_t)(close - body));
		}
	}
	return best;
}

/* The reply with its code blocks left out (for NOTES.md). */
char *sf_prose_of(const char *reply)
{
	sf_buf b = { 0 };
	int in = 0;
	for (const char *p = reply; p && *p;) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) + 1 : strlen(p);
		const char *t = p;
		while (*t == ' ' || *t == '\t')
			t++;
		if (!strncmp(t, "```", 3))
			in = !in;
		else if (!in)
			sf_buf_append(&b, p, l);
		p += l;
	}
	return sf_buf_take(&b);
}

