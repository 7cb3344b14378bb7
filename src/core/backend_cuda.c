/*
 * backend_cuda.c - the cuda backend: nvcc builds solutions and the GPU oracle; solforge-runner-cuda
 * runs them. Nothing here links CUDA: solforge itself starts on machines without a GPU driver.
 *
 * The target is sm_90a unless $SOLFORGE_CUDA_ARCH gives another -gencode value
 * (e.g. "arch=compute_100a,code=sm_100a").
 */
#include "core/backend.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *nvcc(void)
{
	const char *n = getenv("NVCC");
	return n && *n ? n : "nvcc";
}

static const char *gencode(void)
{
	const char *a = getenv("SOLFORGE_CUDA_ARCH");
	return a && *a ? a : "arch=compute_90a,code=sm_90a";
}

static int on_path(const char *prog)
{
	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0;
	const char *path = getenv("PATH");
	if (!path)
		return 0;
	char *copy = sf_xstrdup(path), *save = NULL;
	int found = 0;
	for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
		char *p = sf_path_join(d, prog);
		found = access(p, X_OK) == 0;
		free(p);
	}
	free(copy);
	return found;
}

static int cuda_available(char *why, size_t len)
{
	if (access("/dev/nvidiactl", F_OK) != 0 && access("/dev/nvidia0", F_OK) != 0) {
		sf_errf(why, len, "no NVIDIA GPU device on this machine");
		return 0;
	}
	if (!on_path(nvcc())) {
		sf_errf(why, len, "nvcc is not on PATH");
		return 0;
	}
	char *r = sf_backend_runner_path(&sf_backend_cuda);
	int ok = access(r, X_OK) == 0;
	if (!ok)
		sf_errf(why, len, "no cuda runner at %s (run make where nvcc exists)", r);
	free(r);
	return ok;
}

static int cuda_buildable(char *why, size_t len)
{
	if (!on_path(nvcc())) {
		sf_errf(why, len, "nvcc is not on PATH");
		return 0;
	}
	return 1;
}

static void add_list(sf_argv *cmd, const char *const *l)
{
	for (int i = 0; l && l[i]; i++)
		sf_argv_add(cmd, l[i]);
}

static void common(const char *home, sf_argv *cmd)
{
	sf_argv_add(cmd, nvcc());
	sf_argv_add(cmd, "-std=c++17");
	sf_argv_add(cmd, "-O3");
	sf_argv_addf(cmd, "-gencode=%s", gencode());
	sf_argv_add(cmd, "-Xcompiler");
	sf_argv_add(cmd, "-fPIC");
	sf_argv_add(cmd, "-shared");
	sf_argv_addf(cmd, "-I%s/include", home);
}

static void cuda_solution_cmd(const char *home, const char *src, const char *const *cflags, const char *const *ldflags,
			      sf_argv *cmd)
{
	common(home, cmd);
	/* the runner's own CUDA runtime, not a static copy inside the candidate: the static runtime
	 * imports dlopen, sockets, fork and more, which would blind the import check (imports.h) */
	sf_argv_add(cmd, "-cudart");
	sf_argv_add(cmd, "shared");
	add_list(cmd, cflags);
	sf_argv_add(cmd, src);
	sf_argv_add(cmd, "-o");
	sf_argv_add(cmd, "@OUT@");
	add_list(cmd, ldflags);
}

static void cuda_module_cmd(const char *home, const char *oracle, sf_argv *cmd)
{
	common(home, cmd);
	sf_argv_add(cmd, "--fmad=false");
	sf_argv_addf(cmd, "-I%s/src", home);
	sf_argv_addf(cmd, "-DSF_ORACLE_SOURCE=\"%s\"", oracle);
	sf_argv_addf(cmd, "%s/src/runner/oracle_gpu.cu", home);
	sf_argv_add(cmd, "-o");
	sf_argv_add(cmd, "@OUT@");
}

static char *cuda_device_name(void)
{
	char tmpl[] = "/tmp/solforge-smi-XXXXXX";
	int fd = mkstemp(tmpl);
	if (fd < 0)
		return NULL;
	close(fd);
	char *argv[] = { "nvidia-smi", "--query-gpu=name", "--format=csv,noheader", NULL };
	sf_proc p;
	char err[SF_ERRLEN];
	char *r = NULL;
	if (sf_spawn(argv, tmpl, 30, NULL, &p, err, sizeof err) == 0 && p.exited && p.exit_code == 0) {
		char *t = sf_log_tail(tmpl, 4096);
		r = sf_xstrndup(t, strcspn(t, "\n"));
		free(t);
	}
	unlink(tmpl);
	return r;
}

const sf_backend sf_backend_cuda = {
	.name = "cuda",
	.runner = "solforge-runner-cuda",
	.source_ext = ".cu",
	.available = cuda_available,
	.buildable = cuda_buildable,
	.solution_cmd = cuda_solution_cmd,
	.module_cmd = cuda_module_cmd,
	.device_name = cuda_device_name,
};
