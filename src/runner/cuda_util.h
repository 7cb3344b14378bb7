/*
 * cuda_util.h - error handling of the cuda runner.
 *
 * Two regimes:
 *   - before the candidate is loaded, a failing CUDA call is the harness's own problem: CU() writes
 *     "what: name (description)" into the caller's `err` / `errlen` and returns -1 from the caller,
 *     which ends in a result.json with status "error";
 *   - once the candidate is loaded, a failing CUDA call means the candidate broke the context (an
 *     illegal address is sticky: every later call fails too). cu_fault() prints the error to stderr
 *     and leaves at once with SF_RUNNER_EXIT_CUDA and no result.json; the parent reports a
 *     RUNTIME_ERROR with that stderr.
 */
#ifndef SF_CUDA_UTIL_H
#define SF_CUDA_UTIL_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <unistd.h>

#define SF_RUNNER_EXIT_CUDA 3

static inline int cu_fail(cudaError_t e, const char *what, char *err, size_t errlen)
{
	if (e == cudaSuccess)
		return 0;
	snprintf(err, errlen, "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
	return -1;
}

/* In a function with `char *err, size_t errlen` in scope that returns int. */
#define CU(call)                                                   \
	do {                                                       \
		if (cu_fail((call), #call, err, errlen))           \
			return -1;                                 \
	} while (0)

static inline void cu_fault(cudaError_t e, const char *where)
{
	if (e == cudaSuccess)
		return;
	fprintf(stderr, "solforge-runner-cuda: CUDA error %s (%s) %s\n", cudaGetErrorName(e), cudaGetErrorString(e),
		where);
	fflush(stderr);
	_exit(SF_RUNNER_EXIT_CUDA);
}

#endif
