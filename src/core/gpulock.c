/*
 * gpulock.c - the exclusive per-device timing slot (see gpulock.h).
 */
#include "core/gpulock.h"
#include "core/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

void sf_gpulock_slot(const char *backend, char *out, size_t len)
{
	if (strcmp(backend, "cuda")) {
		snprintf(out, len, "%s-host", backend);
		return;
	}
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	char dev[32] = "0";
	if (cvd && *cvd) {
		size_t n = strcspn(cvd, ",");
		if (n >= sizeof dev)
			n = sizeof dev - 1;
		memcpy(dev, cvd, n);
		dev[n] = 0;
		for (char *p = dev; *p; p++)
			if (*p == '/' || *p == ' ')
				*p = '_';
	}
	snprintf(out, len, "cuda-%s", dev);
}

int sf_gpulock_paths(const char *backend, char *lock, size_t lock_len, char *log, size_t log_len, char *slot,
		     size_t slot_len)
{
	const char *dir = getenv("SOLFORGE_GPU_LOCKS");
	if (!dir || !*dir)
		return -1;
	sf_gpulock_slot(backend, slot, slot_len);
	int a = snprintf(lock, lock_len, "%s/%s.lock", dir, slot);
	int b = snprintf(log, log_len, "%s/timing.log", dir);
	return a < 0 || (size_t)a >= lock_len || b < 0 || (size_t)b >= log_len ? -1 : 0;
}

void sf_gpulock_acquire(sf_gpulock *l, const char *backend)
{
	memset(l, 0, sizeof *l);
	l->fd = -1;
	const char *dir = getenv("SOLFORGE_GPU_LOCKS");
	if (!dir || !*dir)
		return;
	sf_gpulock_slot(backend, l->slot, sizeof l->slot);
	sf_buf p = { 0 };
	sf_buf_printf(&p, "%s/%s.lock", dir, l->slot);
	l->fd = open(p.data, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	sf_buf_free(&p);
	if (l->fd < 0)
		return;
	l->t_req = sf_now();
	while (flock(l->fd, LOCK_EX) != 0) {
		/* EINTR: try again; anything else: give up holding nothing */
		if (sf_now() - l->t_req > 24 * 3600) {
			close(l->fd);
			l->fd = -1;
			return;
		}
	}
	l->t_got = sf_now();
	snprintf(l->start, sizeof l->start, "%.3f", sf_wall_time());
}

void sf_gpulock_release(sf_gpulock *l, const char *problem, const char *solution, const char *what)
{
	if (l->fd < 0)
		return;
	double held = sf_now() - l->t_got;
	const char *dir = getenv("SOLFORGE_GPU_LOCKS");
	if (dir) {
		sf_buf p = { 0 }, line = { 0 };
		sf_buf_printf(&p, "%s/timing.log", dir);
		sf_buf_printf(&line, "%s %s %ld %.3f %.3f %s %s %s\n", l->start, l->slot, (long)getpid(), l->t_got - l->t_req,
			      held, problem ? problem : "-", solution ? solution : "-", what ? what : "-");
		int fd = open(p.data, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0) {
			/* one write(2) of a short line on O_APPEND: lines of concurrent processes do not interleave */
			ssize_t w = write(fd, line.data, line.len);
			(void)w;
			close(fd);
		}
		sf_buf_free(&p);
		sf_buf_free(&line);
	}
	flock(l->fd, LOCK_UN);
	close(l->fd);
	l->fd = -1;
}
