/*
 * compile.c - the compile cache (see compile.h).
 */
#include "core/compile.h"
#include "core/sha256.h"
#include "core/util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *sf_cache_dir(void)
{
	const char *e = getenv("SOLFORGE_CACHE");
	if (e && *e)
		return sf_xstrdup(e);
	e = getenv("XDG_CACHE_HOME");
	if (e && *e)
		return sf_path_join(e, "solforge");
	e = getenv("HOME");
	char *c = sf_path_join(e && *e ? e : "/tmp", ".cache");
	char *r = sf_path_join(c, "solforge");
	free(c);
	return r;
}

char *sf_home(void)
{
	const char *e = getenv("SOLFORGE_HOME");
	if (e && *e)
		return sf_xstrdup(e);
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return sf_xstrdup(".");
	exe[n] = 0;
	/* build/solforge -> the folder above build/ */
	char *bin = sf_dirname(exe);
	char *top = sf_dirname(bin);
	free(bin);
	char *probe = sf_path_join(top, "include/solforge/solution.h");
	int ok = sf_file_exists(probe);
	free(probe);
	if (ok)
		return top;
	free(top);
	return sf_xstrdup(".");
}

/* The compiler's version text, memoized per compiler name (part of the cache key). */
static const char *toolchain_id(const char *compiler)
{
	static char names[8][256];
	static char *ids[8];
	static int n;
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], compiler))
			return ids[i];
	char tmpl[] = "/tmp/solforge-tc-XXXXXX";
	int fd = mkstemp(tmpl);
	if (fd >= 0)
		close(fd);
	sf_argv a = { 0 };
	sf_argv_add(&a, compiler);
	sf_argv_add(&a, "--version");
	sf_proc p;
	char err[SF_ERRLEN];
	char *id = NULL;
	if (fd >= 0 && sf_spawn(a.v, tmpl, 30, NULL, &p, err, sizeof err) == 0 && p.exited && p.exit_code == 0)
		id = sf_log_tail(tmpl, 4096);
	sf_argv_free(&a);
	if (fd >= 0)
		unlink(tmpl);
	if (!id)
		id = sf_xstrdup(compiler);
	if (n < 8) {
		snprintf(names[n], sizeof names[n], "%s", compiler);
		ids[n++] = id;
	}
	return id;
}

/* Hashes s with every occurrence of the checkout's absolute path (the solforge home) and of the
 * working folder replaced by a fixed token, so that the same sources built from another checkout
 * location (a CI clone, the GPU machine's copy of the tree) find the same cache entries. */
static void hash_relocatable(sf_sha256 *h, const char *s)
{
	static char roots[2][4096];
	static size_t lens[2];
	static int init;
	if (!init) {
		init = 1;
		char *home = sf_home();
		if (!realpath(home, roots[0]))
			roots[0][0] = 0;
		free(home);
		if (!getcwd(roots[1], sizeof roots[1]))
			roots[1][0] = 0;
		for (int i = 0; i < 2; i++)
			lens[i] = strlen(roots[i]) > 1 ? strlen(roots[i]) : 0; /* never rewrite "/" */
	}
	while (*s) {
		int hit = -1;
		for (int i = 0; i < 2 && hit < 0; i++)
			if (lens[i] && !strncmp(s, roots[i], lens[i]) && (s[lens[i]] == '/' || s[lens[i]] == 0))
				hit = i;
		if (hit >= 0) {
			sf_sha256_update(h, hit ? "@CWD@" : "@HOME@", hit ? 5 : 6);
			s += lens[hit];
		} else {
			sf_sha256_update(h, s, 1);
			s++;
		}
	}
	sf_sha256_update(h, "", 1);
}

int sf_build_cached(const char *kind, const sf_argv *cmd, const char *const *key_files, double timeout_s, sf_build *b,
		    char *err, size_t errlen)
{
	memset(b, 0, sizeof *b);
	sf_sha256 h;
	sf_sha256_init(&h);
	sf_sha256_update(&h, kind, strlen(kind) + 1);
	for (int i = 0; i < cmd->n; i++)
		if (strcmp(cmd->v[i], "@OUT@"))
			hash_relocatable(&h, cmd->v[i]);
	const char *tc = toolchain_id(cmd->v[0]);
	sf_sha256_update(&h, tc, strlen(tc) + 1);
	for (int i = 0; key_files && key_files[i]; i++) {
		char *text;
		size_t len;
		if (sf_read_file(key_files[i], &text, &len, err, errlen))
			return -1;
		hash_relocatable(&h, key_files[i]);
		sf_sha256_update(&h, text, len);
		free(text);
	}
	uint8_t dig[32];
	sf_sha256_final(&h, dig);
	char hex[65];
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", dig[i]);
	char *dir = sf_cache_dir();
	if (sf_mkdir_p(dir, err, errlen)) {
		free(dir);
		return -1;
	}
	sf_buf name = { 0 };
	sf_buf_printf(&name, "%s-%.40s.so", kind, hex);
	b->so_path = sf_path_join(dir, name.data);
	sf_buf_free(&name);
	sf_buf logname = { 0 };
	sf_buf_printf(&logname, "%s-%.40s.log", kind, hex);
	char *log_path = sf_path_join(dir, logname.data);
	sf_buf_free(&logname);
	if (sf_file_exists(b->so_path)) {
		b->cached = 1;
		b->log = sf_log_tail(log_path, 1 << 16);
		free(log_path);
		free(dir);
		return 0;
	}
	sf_buf tmp = { 0 };
	sf_buf_printf(&tmp, "%s.tmp.%ld", b->so_path, (long)getpid());
	sf_argv run = { 0 };
	for (int i = 0; i < cmd->n; i++)
		sf_argv_add(&run, strcmp(cmd->v[i], "@OUT@") ? cmd->v[i] : tmp.data);
	unlink(log_path);
	char *cmdline = sf_argv_join(&run);
	FILE *lf = fopen(log_path, "w");
	if (lf) {
		fprintf(lf, "$ %s\n", cmdline);
		fclose(lf);
	}
	free(cmdline);
	sf_proc p;
	double t0 = sf_now();
	int rc = sf_spawn(run.v, log_path, timeout_s, NULL, &p, err, errlen);
	sf_argv_free(&run);
	b->seconds = sf_now() - t0;
	b->log = sf_log_tail(log_path, 1 << 16);
	if (rc == 0 && !(p.exited && p.exit_code == 0)) {
		char how[128];
		sf_proc_describe(&p, how, sizeof how);
		sf_errf(err, errlen, "%s build failed (%s)", kind, how);
		rc = -1;
	}
	if (rc == 0 && rename(tmp.data, b->so_path) != 0) {
		sf_errf(err, errlen, "cannot move %s into the cache", tmp.data);
		rc = -1;
	}
	if (rc)
		unlink(tmp.data);
	sf_buf_free(&tmp);
	free(log_path);
	free(dir);
	return rc;
}

void sf_build_free(sf_build *b)
{
	free(b->so_path);
	free(b->log);
	memset(b, 0, sizeof *b);
}
