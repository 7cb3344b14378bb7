/*
 * runner_guard.h - the runner-side defenses against a cheating candidate (docs/security.md):
 *
 *   - the OS sandbox, installed before the candidate is loaded (its constructors run inside it):
 *     resource limits, no_new_privs, a seccomp filter (raw BPF, x86_64) that traps fork, vfork,
 *     clone without CLONE_THREAD, execve, ptrace, process_vm_*, sockets, setsid/setpgid, memfd,
 *     kill of another process and SIGSYS handlers, and refuses executable mprotect and writable
 *     executable mmap; a Landlock ruleset (where the kernel has it) that allows file writes only
 *     beneath the runner's output folder and /dev;
 *   - a record of trapped system calls (a violation is a reward hack);
 *   - the threads of the process before the candidate is loaded, compared after each call;
 *   - fresh random keys (getrandom) for input perturbation and after-the-fact audit picks;
 *   - marks on the parent's clock pipe (SF_CLOCK_FD) around the external wall-clock batch.
 *
 * SOLFORGE_SANDBOX=0 in the runner's environment (set by whoever starts solforge, never by the
 * candidate, which is not loaded yet) turns the sandbox off: for the overhead benchmark only.
 */
#ifndef SF_RUNNER_GUARD_H
#define SF_RUNNER_GUARD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Installs the sandbox; cuda != 0 leaves what the CUDA driver needs. write_dir: the one folder
 * (besides /dev) files may be written beneath. Returns 0, or -1 with a reason in err (the runner
 * then refuses to load the candidate). note gets what could not be applied (e.g. no Landlock). */
int rg_sandbox_install(int cuda, const char *write_dir, char *note, size_t notelen, char *err, size_t errlen);

/* 1 when the candidate made a trapped system call since the last call (msg says which). */
int rg_violation(char *msg, size_t msglen);

/* Remembers the threads of this process (call right before loading the candidate). */
void rg_threads_snapshot(void);
/* Number of threads alive now that were not in the snapshot, ignoring threads whose name starts with
 * one of the '|'-separated prefixes in allow_prefix (NULL: none ignored); msg names the first one. */
int rg_threads_new(const char *allow_prefix, char *msg, size_t msglen);

/* A fresh non-zero 64-bit random number from the OS. */
uint64_t rg_random(void);

/* Monotonic seconds read with a direct system call (not through libc's clock_gettime or the vDSO,
 * which a candidate could patch): drives the runners' loops (warm-up, timing budget, the external
 * batch), so that a patched clock cannot stretch or shrink them. The timed samples themselves keep
 * the fast clock (and CUPTI on cuda). */
double rg_raw_now(void);

/* Writes mark byte c on the parent's clock pipe (a no-op without SF_CLOCK_FD). 0 or -1. */
int rg_clock_mark(char c);
/* 1 when the parent listens on a clock pipe. */
int rg_clock_enabled(void);
/* The external wall-clock batch (core/job.h SF_CLOCK_PAIRS, docs/security.md "External clock"):
 * SF_CLOCK_PAIRS pairs of halves, marks 'c' .. 'd' around B calls call(ctx, 1, i) (the candidate),
 * then 'a' .. 'b' around B calls call(ctx, 0, i) (an empty function); B is what fits in the first
 * candidate half, target_s / SF_CLOCK_PAIRS of rg_raw_now (2 at least, max_calls at most), and
 * every other half makes B calls. call returns 0 or non-zero (a failed call). Returns B; 0 when the
 * parent does not listen or a mark could not be written; -1 when a call failed. */
int64_t rg_clock_batch(int (*call)(void *ctx, int cand, int64_t i), void *ctx, double target_s, int64_t max_calls);

/* Whether the defenses added by issue 4 that run between timed calls (perturbation, random audits)
 * are on: SOLFORGE_DEFENSES=0 turns them off, for the overhead benchmark only. */
int rg_defenses_enabled(void);

/* Audits: after-the-fact uniform picks of RC_AUDITS timed calls (reservoir sampling). */
#define RC_AUDITS 4
typedef struct rg_reservoir {
	int64_t seen;              /* timed calls offered */
	int n;                     /* slots filled */
	int set[RC_AUDITS];        /* timing set of the call in each slot */
	uint64_t key[RC_AUDITS];   /* its perturbation key (0: none) */
	int64_t call[RC_AUDITS];   /* its index among the timed calls */
} rg_reservoir;
/* Offers timed call `call`; returns the slot its outputs must be copied into, or -1. */
int rg_reservoir_offer(rg_reservoir *r, int64_t call, int set, uint64_t key);

#ifdef __cplusplus
}
#endif

#endif
