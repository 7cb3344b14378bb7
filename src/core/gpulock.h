/*
 * gpulock.h - the exclusive timing slot of a device, shared by every solforge process on the machine.
 *
 * When $SOLFORGE_GPU_LOCKS names a folder, an evaluation holds an flock(2) on
 * <folder>/<backend>-<device>.lock while any runner process runs (candidate and baselines: the timed
 * part; the reference: device work that would disturb another process's timing; the PyTorch bridge
 * takes the same lock itself once torch has started, tools/bridge/solforge_bridge.py GpuSlot); the
 * device is the first entry of $CUDA_VISIBLE_DEVICES for cuda ("0" when unset) and "host" for cpu.
 * Compiling and comparing outputs go on unlocked, in parallel. Every hold is appended as one line to
 * <folder>/timing.log: "START SLOT PID WAIT_S HELD_S PROBLEM SOLUTION WHAT"
 * (START: seconds since the epoch when the slot was granted). The campaign sets
 * the variable for its own evaluations and for the agents it starts, so the `solforge eval` calls an
 * agent makes in its workspace queue for the same slot. Without the variable nothing is locked.
 */
#ifndef SF_GPULOCK_H
#define SF_GPULOCK_H

#include <stddef.h>

typedef struct sf_gpulock {
	int fd;              /* -1 when nothing is held */
	double t_req, t_got; /* monotonic times of the request and the grant */
	char slot[64];
	char start[32];      /* epoch seconds of the grant, as text */
} sf_gpulock;

/* Takes the slot of backend `backend` (blocks until free). Without $SOLFORGE_GPU_LOCKS, or when the
 * lock file cannot be opened, returns with l->fd == -1 (nothing held; never fails the evaluation). */
void sf_gpulock_acquire(sf_gpulock *l, const char *backend);
/* Releases the slot and appends the hold to timing.log with the problem, solution and what ran. */
void sf_gpulock_release(sf_gpulock *l, const char *problem, const char *solution, const char *what);
/* Where the slot of `backend` lives when $SOLFORGE_GPU_LOCKS is set: the lock file and the timing log
 * (OUT: lock, log, slot; each a caller buffer of its stated size). Returns 0, or -1 when nothing is
 * locked (no variable) or a path does not fit. For a process that takes the slot itself (the PyTorch
 * bridge: it waits for the slot only after its start-up, see docs/bridge.md). */
int sf_gpulock_paths(const char *backend, char *lock, size_t lock_len, char *log, size_t log_len, char *slot,
		     size_t slot_len);
/* The slot name the current environment maps to (e.g. "cuda-1", "cpu-host"). */
void sf_gpulock_slot(const char *backend, char *out, size_t len);

#endif
