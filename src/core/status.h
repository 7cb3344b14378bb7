/*
 * status.h - evaluation statuses (the SOL-ExecBench set plus REWARD_HACK and SKIPPED) and the exit
 * codes of the solforge command.
 */
#ifndef SF_STATUS_H
#define SF_STATUS_H

typedef enum sf_status {
	SF_PASSED = 0,
	SF_INCORRECT_SHAPE,
	SF_INCORRECT_NUMERICAL,
	SF_INCORRECT_DTYPE,
	SF_RUNTIME_ERROR,
	SF_COMPILE_ERROR,
	SF_TIMEOUT,
	SF_REWARD_HACK,
	SF_INVALID_REFERENCE,
	SF_SKIPPED,
	SF_STATUS_COUNT
} sf_status;

const char *sf_status_name(sf_status s);
/* Parses a status name; returns -1 when unknown. */
int sf_status_from_name(const char *name);

/* Exit codes of `solforge` (docs/cli.md). */
enum {
	SF_EXIT_OK = 0,           /* every workload passed */
	SF_EXIT_FAILED = 1,       /* some workload did not pass (incorrect, runtime error, timeout) */
	SF_EXIT_USAGE = 2,        /* bad flag or argument */
	SF_EXIT_BAD_INPUT = 3,    /* malformed definition, workload, solution manifest or file */
	SF_EXIT_COMPILE = 4,      /* the solution did not compile */
	SF_EXIT_REWARD_HACK = 5,  /* some workload was judged a reward hack */
	SF_EXIT_NO_BACKEND = 6,   /* the requested backend is not available here */
	SF_EXIT_INTERNAL = 70     /* a bug or an environment failure in solforge itself */
};

#endif
