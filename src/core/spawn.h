/*
 * spawn.h - running a child program with a time limit, its output captured to a file.
 *
 * The child gets its own process group; on timeout, and after it exits, the whole group is killed
 * (SIGKILL), so nothing a candidate started outlives its evaluation.
 */
#ifndef SF_SPAWN_H
#define SF_SPAWN_H

#include <stddef.h>

typedef struct sf_proc {
	int exited;      /* exited normally; exit_code valid */
	int exit_code;
	int signaled;    /* killed by a signal; sig valid */
	int sig;
	int timed_out;   /* we killed it at the time limit */
	double wall_s;
	int n_marks;     /* bytes the child wrote on its clock pipe (sf_spawn_clocked) */
	char mark[16];
	double mark_t[16]; /* when the parent read each, sf_now() seconds */
	double mark_cpu[16]; /* the child's main-thread CPU time then (/proc/PID/schedstat), seconds; -1 unknown */
} sf_proc;

/* Runs argv (argv[0] a path or a name on PATH) with stdin from /dev/null and stdout+stderr appended
 * to log_path (NULL: inherit). timeout_s <= 0: no limit. Returns 0 when the child ran (whatever its
 * status, in *p), -1 when it could not be started. env: extra "NAME=VALUE" entries or NULL. */
int sf_spawn(char *const argv[], const char *log_path, double timeout_s, char *const *env, sf_proc *p, char *err,
	     size_t errlen);

/* As sf_spawn, and the child gets the write end of a pipe as file descriptor SF_CLOCK_FD_NUM (its
 * number in the environment variable SF_CLOCK_FD): each byte it writes there is read by the parent
 * at once (poll) and stamped with the parent's clock (p->mark, p->mark_t): the external wall clock
 * the runner's in-process times are checked against. */
#define SF_CLOCK_FD_NUM 9
int sf_spawn_clocked(char *const argv[], const char *log_path, double timeout_s, char *const *env, sf_proc *p,
		     char *err, size_t errlen);

/* Installs SIGINT/SIGTERM/SIGHUP handlers (once) that kill the child being waited for and remove
 * dir (may be NULL) before the process dies of the signal. Each call adds its dir (up to 8 at once, the
 * oldest giving way beyond: an eval and its copy / read ceilings are alive together); sf_spawn_cleanup_forget
 * removes one again (sf_eval_free, after the folder is gone). */
void sf_spawn_cleanup_on_signal(const char *dir);
void sf_spawn_cleanup_forget(const char *dir);

/* "exit 3", "killed by SIGSEGV", "timed out after 12.0 s". */
void sf_proc_describe(const sf_proc *p, char *out, size_t len);

/* The last max_bytes of a log file (for error reports), NUL-terminated; caller frees. */
char *sf_log_tail(const char *path, size_t max_bytes);

/* A growable argv. */
typedef struct sf_argv {
	char **v;
	int n, cap;
} sf_argv;
void sf_argv_add(sf_argv *a, const char *s);
void sf_argv_addf(sf_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sf_argv_free(sf_argv *a);
/* Space-joined, for logs. Caller frees. */
char *sf_argv_join(const sf_argv *a);

#endif
