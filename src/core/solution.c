/*
 * solution.c - loading bare-file and manifest solutions (see solution.h).
 */
#include "core/solution.h"
#include "core/compile.h"
#include "core/json.h"
#include "core/sha256.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void list_add(char ***list, const char *s)
{
	int n = 0;
	while (*list && (*list)[n])
		n++;
	*list = sf_xrealloc(*list, sizeof(char *) * (size_t)(n + 2));
	(*list)[n] = sf_xstrdup(s);
	(*list)[n + 1] = NULL;
}

static void list_free(char **l)
{
	for (int i = 0; l && l[i]; i++)
		free(l[i]);
	free(l);
}

/* Reads "// solforge-ldflags: ..." style lines of a source file. */
static void scan_flags(const char *text, const char *tag, char ***out)
{
	for (const char *p = strstr(text, tag); p; p = strstr(p + 1, tag)) {
		const char *q = p + strlen(tag);
		const char *end = q + strcspn(q, "\n");
		char *line = sf_xstrndup(q, (size_t)(end - q));
		char *save = NULL;
		for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save))
			list_add(out, t);
		free(line);
	}
}

/* True when the list already holds s. */
static int list_has(char **l, const char *s)
{
	for (int i = 0; l && l[i]; i++)
		if (!strcmp(l[i], s))
			return 1;
	return 0;
}

/*
 * Adds to *keys every file a source pulls in with #include "relative/path" (resolved against the
 * including file's folder, as the compiler does, and followed up to depth levels), so that a change to
 * a shared header invalidates the compile cache. Includes that do not resolve to a file are skipped
 * (they come from -I paths, which are part of the command line and so of the key already).
 */
static void add_local_includes(const char *file, const char *text, char ***keys, int depth)
{
	if (depth <= 0)
		return;
	char *dir = sf_dirname(file);
	for (const char *p = strstr(text, "#include"); p; p = strstr(p + 1, "#include")) {
		const char *q = p + strlen("#include");
		while (*q == ' ' || *q == '\t')
			q++;
		if (*q != '"')
			continue;
		const char *end = strchr(q + 1, '"');
		const char *nl = strchr(q + 1, '\n');
		if (!end || (nl && nl < end) || end == q + 1)
			continue;
		char *rel = sf_xstrndup(q + 1, (size_t)(end - q - 1));
		char *joined = rel[0] == '/' ? sf_xstrdup(rel) : sf_path_join(dir, rel);
		char *abs = realpath(joined, NULL);
		free(rel);
		free(joined);
		if (!abs)
			continue;
		if (!list_has(*keys, abs)) {
			char *sub;
			size_t len;
			char e[SF_ERRLEN];
			list_add(keys, abs);
			if (!sf_read_file(abs, &sub, &len, e, sizeof e)) {
				add_local_includes(abs, sub, keys, depth - 1);
				free(sub);
			}
		}
		free(abs);
	}
	free(dir);
}

static const char *ext_language(const char *path)
{
	size_t n = strlen(path);
	if (n > 3 && !strcmp(path + n - 3, ".cu"))
		return "cuda";
	if (n > 2 && !strcmp(path + n - 2, ".c"))
		return "c";
	return NULL;
}

static int load_bare(const char *path, sf_solution *s, char *err, size_t errlen)
{
	const char *lang = ext_language(path);
	if (!lang) {
		sf_errf(err, errlen, "%s: a solution is a .c or .cu file, or a solution.json manifest", path);
		return -1;
	}
	char *abs = realpath(path, NULL);
	if (!abs) {
		sf_errf(err, errlen, "%s: no such solution file", path);
		return -1;
	}
	char *text;
	size_t len;
	if (sf_read_file(abs, &text, &len, err, errlen)) {
		free(abs);
		return -1;
	}
	s->name = sf_xstrdup(sf_basename(abs));
	s->language = sf_xstrdup(lang);
	s->source = abs;
	s->entry = sf_xstrdup("run");
	scan_flags(text, "solforge-ldflags:", &s->ldflags);
	scan_flags(text, "solforge-cflags:", &s->cflags);
	list_add(&s->key_files, abs);
	add_local_includes(abs, text, &s->key_files, 8);
	free(text);
	return 0;
}

static int load_manifest(const char *path, sf_solution *s, char *err, size_t errlen)
{
	char *text;
	size_t len;
	if (sf_read_file(path, &text, &len, err, errlen))
		return -1;
	char jerr[SF_ERRLEN];
	sf_json *root = sf_json_parse(text, len, jerr, sizeof jerr);
	free(text);
	if (!root) {
		sf_errf(err, errlen, "%s: %s", path, jerr);
		return -1;
	}
	int rc = -1;
	char *dir = NULL;
	const sf_json *name = sf_json_get(root, "name"), *spec = sf_json_get(root, "spec"),
		      *sources = sf_json_get(root, "sources");
	if (!name || name->type != SF_JSON_STRING || !spec || spec->type != SF_JSON_OBJECT || !sources ||
	    sources->type != SF_JSON_ARRAY || !sources->n) {
		sf_errf(err, errlen, "%s: a solution manifest needs name, spec and sources", path);
		goto out;
	}
	s->name = sf_xstrdup(name->str);
	const sf_json *v = sf_json_get(root, "author");
	if (v && v->type == SF_JSON_STRING)
		s->author = sf_xstrdup(v->str);
	v = sf_json_get(root, "definition");
	if (v && v->type == SF_JSON_STRING)
		s->definition = sf_xstrdup(v->str);
	const sf_json *lang = sf_json_get(spec, "language");
	if (!lang) {
		const sf_json *langs = sf_json_get(spec, "languages");
		if (langs && langs->type == SF_JSON_ARRAY && langs->n)
			lang = langs->items[0];
	}
	if (!lang || lang->type != SF_JSON_STRING || (strcmp(lang->str, "cuda") && strcmp(lang->str, "c"))) {
		sf_errf(err, errlen, "%s: spec.language must be \"cuda\" or \"c\" (python/triton/torch-bound solutions "
				     "are not C-ABI solutions; see docs/formats.md)", path);
		goto out;
	}
	s->language = sf_xstrdup(lang->str);
	const sf_json *ep = sf_json_get(spec, "entry_point");
	if (!ep || ep->type != SF_JSON_STRING || !strstr(ep->str, "::")) {
		sf_errf(err, errlen, "%s: spec.entry_point must be \"file::function\"", path);
		goto out;
	}
	const char *sep = strstr(ep->str, "::");
	char *entry_file = sf_xstrndup(ep->str, (size_t)(sep - ep->str));
	s->entry = sf_xstrdup(sep + 2);
	const sf_json *b = sf_json_get(spec, "binding");
	if (b && b->type == SF_JSON_STRING && !strcmp(b->str, "torch")) {
		sf_errf(err, errlen, "%s: torch-bound solutions need the PyTorch bridge; solforge's C ABI takes "
				     "spec.binding \"solforge\" or none", path);
		free(entry_file);
		goto out;
	}
	const sf_json *co = sf_json_get(spec, "compile_options");
	const char *cf_key = !strcmp(s->language, "cuda") ? "cuda_cflags" : "cflags";
	const sf_json *cf = sf_json_get(co, cf_key), *lf = sf_json_get(co, "ld_flags");
	for (size_t i = 0; cf && cf->type == SF_JSON_ARRAY && i < cf->n; i++)
		if (cf->items[i]->type == SF_JSON_STRING)
			list_add(&s->cflags, cf->items[i]->str);
	for (size_t i = 0; lf && lf->type == SF_JSON_ARRAY && i < lf->n; i++)
		if (lf->items[i]->type == SF_JSON_STRING)
			list_add(&s->ldflags, lf->items[i]->str);
	/* write the sources into a folder named by their hash */
	sf_sha256 h;
	sf_sha256_init(&h);
	for (size_t i = 0; i < sources->n; i++) {
		const sf_json *p = sf_json_get(sources->items[i], "path"), *c = sf_json_get(sources->items[i], "content");
		if (!p || p->type != SF_JSON_STRING || !c || c->type != SF_JSON_STRING || strstr(p->str, "..") ||
		    p->str[0] == '/') {
			sf_errf(err, errlen, "%s: sources[%zu] needs a relative path (no '..') and content", path, i);
			free(entry_file);
			goto out;
		}
		sf_sha256_update(&h, p->str, p->len + 1);
		sf_sha256_update(&h, c->str, c->len + 1);
	}
	uint8_t dig[32];
	sf_sha256_final(&h, dig);
	char hex[17];
	for (int i = 0; i < 8; i++)
		snprintf(hex + 2 * i, 3, "%02x", dig[i]);
	char *cache = sf_cache_dir();
	sf_buf sub = { 0 };
	sf_buf_printf(&sub, "src-%s", hex);
	dir = sf_path_join(cache, sub.data);
	free(cache);
	sf_buf_free(&sub);
	for (size_t i = 0; i < sources->n; i++) {
		const sf_json *p = sf_json_get(sources->items[i], "path"), *c = sf_json_get(sources->items[i], "content");
		char *file = sf_path_join(dir, p->str);
		char *fdir = sf_dirname(file);
		if (sf_mkdir_p(fdir, err, errlen) || sf_write_file(file, c->str, c->len, err, errlen)) {
			free(file);
			free(fdir);
			free(entry_file);
			goto out;
		}
		list_add(&s->key_files, file);
		if (!strcmp(p->str, entry_file))
			s->source = sf_xstrdup(file);
		free(file);
		free(fdir);
	}
	if (!s->source) {
		sf_errf(err, errlen, "%s: entry_point file '%s' is not among the sources", path, entry_file);
		free(entry_file);
		goto out;
	}
	free(entry_file);
	rc = 0;
out:
	free(dir);
	sf_json_free(root);
	return rc;
}

int sf_solution_load(const char *path, sf_solution *s, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	int rc;
	if (!strcmp(path, "@oracle")) {
		s->name = sf_xstrdup("@oracle");
		s->language = sf_xstrdup("c");
		s->entry = sf_xstrdup("run");
		s->is_oracle = 1;
		return 0;
	}
	size_t n = strlen(path);
	if (n > 5 && !strcmp(path + n - 5, ".json"))
		rc = load_manifest(path, s, err, errlen);
	else
		rc = load_bare(path, s, err, errlen);
	if (rc)
		sf_solution_free(s);
	return rc;
}

void sf_solution_free(sf_solution *s)
{
	free(s->name);
	free(s->author);
	free(s->definition);
	free(s->language);
	free(s->source);
	free(s->entry);
	list_free(s->cflags);
	list_free(s->ldflags);
	list_free(s->key_files);
	memset(s, 0, sizeof *s);
}
