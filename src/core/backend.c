/*
 * backend.c - choosing a backend, and the cpu backend (the host compiler; solforge-runner-cpu).
 */
#include "core/backend.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *sf_backend_runner_path(const sf_backend *b)
{
	const char *dir = getenv("SOLFORGE_RUNNER_DIR");
	if (dir && *dir)
		return sf_path_join(dir, b->runner);
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return sf_xstrdup(b->runner);
	exe[n] = 0;
	char *d = sf_dirname(exe);
	char *p = sf_path_join(d, b->runner);
	free(d);
	return p;
}

static const char *host_cc(void)
{
	const char *cc = getenv("CC");
	return cc && *cc ? cc : "cc";
}

static int cpu_available(char *why, size_t len)
{
	char *r = sf_backend_runner_path(&sf_backend_cpu);
	int ok = access(r, X_OK) == 0;
	if (!ok)
		sf_errf(why, len, "no cpu runner at %s (run make)", r);
	free(r);
	return ok;
}

static int cpu_buildable(char *why, size_t len)
{
	return 1; /* cc; a missing compiler shows as a compile error naming it */
}

static void add_list(sf_argv *cmd, const char *const *l)
{
	for (int i = 0; l && l[i]; i++)
		sf_argv_add(cmd, l[i]);
}

static void cpu_solution_cmd(const char *home, const char *src, const char *const *cflags, const char *const *ldflags,
			     sf_argv *cmd)
{
	sf_argv_add(cmd, host_cc());
	sf_argv_add(cmd, "-std=c11");
	sf_argv_add(cmd, "-O2");
	sf_argv_add(cmd, "-fPIC");
	sf_argv_add(cmd, "-shared");
	sf_argv_addf(cmd, "-I%s/include", home);
	add_list(cmd, cflags);
	sf_argv_add(cmd, src);
	sf_argv_add(cmd, "-o");
	sf_argv_add(cmd, "@OUT@");
	add_list(cmd, ldflags);
	sf_argv_add(cmd, "-lm");
}

static void cpu_module_cmd(const char *home, const char *oracle, sf_argv *cmd)
{
	sf_argv_add(cmd, host_cc());
	sf_argv_add(cmd, "-std=c11");
	sf_argv_add(cmd, "-O2");
	sf_argv_add(cmd, "-ffp-contract=off");
	sf_argv_add(cmd, "-fPIC");
	sf_argv_add(cmd, "-shared");
	sf_argv_addf(cmd, "-I%s/include", home);
	sf_argv_addf(cmd, "-I%s/src", home);
	sf_argv_addf(cmd, "-DSF_ORACLE_SOURCE=\"%s\"", oracle);
	sf_argv_addf(cmd, "%s/src/runner/oracle_cpu.c", home);
	sf_argv_add(cmd, "-o");
	sf_argv_add(cmd, "@OUT@");
	sf_argv_add(cmd, "-lm");
}

static char *cpu_device_name(void)
{
	char *text;
	size_t len;
	char err[SF_ERRLEN];
	if (sf_read_file("/proc/cpuinfo", &text, &len, err, sizeof err))
		return sf_xstrdup("cpu");
	char *m = strstr(text, "model name");
	char *r = NULL;
	if (m && (m = strchr(m, ':'))) {
		m++;
		while (*m == ' ')
			m++;
		r = sf_xstrndup(m, strcspn(m, "\n"));
	}
	free(text);
	return r ? r : sf_xstrdup("cpu");
}

const sf_backend sf_backend_cpu = {
	.name = "cpu",
	.runner = "solforge-runner-cpu",
	.source_ext = ".c",
	.available = cpu_available,
	.buildable = cpu_buildable,
	.solution_cmd = cpu_solution_cmd,
	.module_cmd = cpu_module_cmd,
	.device_name = cpu_device_name,
};

const sf_backend *sf_backend_get(const char *name)
{
	if (!strcmp(name, "cpu"))
		return &sf_backend_cpu;
	if (!strcmp(name, "cuda"))
		return &sf_backend_cuda;
	return NULL;
}

const sf_backend *sf_backend_best(void)
{
	char why[SF_ERRLEN];
	return sf_backend_cuda.available(why, sizeof why) ? &sf_backend_cuda : &sf_backend_cpu;
}
