/*
 * backend.h - the interface every backend implements: a small table of functions (ggml style).
 *
 * A backend builds the shared objects a runner loads — the candidate solution, and the problem
 * module (the oracle compiled for that backend) — and names the runner executable that evaluates
 * them. Everything else (jobs, comparing, scoring) is shared. The evaluator core never includes a
 * CUDA header: the cuda backend only assembles nvcc commands and starts solforge-runner-cuda.
 */
#ifndef SF_BACKEND_H
#define SF_BACKEND_H

#include <stddef.h>
#include "core/spawn.h"

typedef struct sf_backend {
	const char *name;        /* "cpu", "cuda" */
	const char *runner;      /* runner executable, looked up beside the solforge executable */
	const char *source_ext;  /* the solution language it builds: ".c" or ".cu" */

	/* 1 when usable on this machine; else 0 and the reason in why. */
	int (*available)(char *why, size_t len);

	/* 1 when solutions and problem modules can be compiled here (no device needed: --prepare-only
	 * fills the compile cache on a machine without a GPU); else 0 and the reason in why. */
	int (*buildable)(char *why, size_t len);

	/* Appends the compiler command that builds solution source `src` into the shared object "@OUT@",
	 * with extra compiler flags and linker flags (NULL-terminated lists, may be NULL). */
	void (*solution_cmd)(const char *home, const char *src, const char *const *cflags, const char *const *ldflags,
			     sf_argv *cmd);

	/* Appends the command that builds the problem module from the oracle source. */
	void (*module_cmd)(const char *home, const char *oracle, sf_argv *cmd);

	/* The name of the device the runner times on ("NVIDIA H200"), or NULL (caller frees). */
	char *(*device_name)(void);
} sf_backend;

extern const sf_backend sf_backend_cpu;
extern const sf_backend sf_backend_cuda;

/* By name, or NULL. */
const sf_backend *sf_backend_get(const char *name);
/* cuda when available, else cpu. */
const sf_backend *sf_backend_best(void);
/* Path of the backend's runner executable (caller frees). */
char *sf_backend_runner_path(const sf_backend *b);

#endif
