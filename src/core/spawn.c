/*
 * spawn.c - child processes with time limits (see spawn.h).
 */
#include "core/spawn.h"
#include "core/util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The process group of the child being waited for, so that an interrupted solforge takes it down too. */
static volatile sig_atomic_t current_pgid;
/* The scratch folders of the evaluations alive now (the candidate's and --copy-ceiling / --read-ceiling's,
 * each an sf_eval of its own), removed if a signal ends the process. */
#define SF_CLEANUP_MAX 8
static char *cleanup_dirs[SF_CLEANUP_MAX];

static void on_fatal_signal(int sig)
{
	if (current_pgid > 0)
		kill(-(pid_t)current_pgid, SIGKILL);
	for (int i = 0; i < SF_CLEANUP_MAX; i++)
		if (cleanup_dirs[i])
			sf_rm_rf(cleanup_dirs[i]); /* not async-signal-safe, but the process ends right after */
	signal(sig, SIG_DFL);
	raise(sig);
}

void sf_spawn_cleanup_on_signal(const char *dir)
{
	static int installed, next;
	if (dir) {
		int slot = -1;
		for (int i = 0; i < SF_CLEANUP_MAX && slot < 0; i++)
			if (!cleanup_dirs[i])
				slot = i;
		if (slot < 0) /* all taken: the oldest registration gives way */
			slot = next++ % SF_CLEANUP_MAX;
		char *old = cleanup_dirs[slot]; /* the handler never sees a freed pointer */
		cleanup_dirs[slot] = sf_xstrdup(dir);
		free(old);
	}
	if (!installed) {
		signal(SIGINT, on_fatal_signal);
		signal(SIGTERM, on_fatal_signal);
		signal(SIGHUP, on_fatal_signal);
		installed = 1;
	}
}

void sf_spawn_cleanup_forget(const char *dir)
{
	for (int i = 0; dir && i < SF_CLEANUP_MAX; i++)
		if (cleanup_dirs[i] && !strcmp(cleanup_dirs[i], dir)) {
			char *d = cleanup_dirs[i];
			cleanup_dirs[i] = NULL;
			free(d);
		}
}

static int spawn(char *const argv[], const char *log_path, double timeout_s, char *const *env, int clocked,
		 sf_proc *p, char *err, size_t errlen);

int sf_spawn(char *const argv[], const char *log_path, double timeout_s, char *const *env, sf_proc *p, char *err,
	     size_t errlen)
{
	return spawn(argv, log_path, timeout_s, env, 0, p, err, errlen);
}

int sf_spawn_clocked(char *const argv[], const char *log_path, double timeout_s, char *const *env, sf_proc *p,
		     char *err, size_t errlen)
{
	return spawn(argv, log_path, timeout_s, env, 1, p, err, errlen);
}

/* CPU time of process pid's main thread in seconds (the kernel's account, which the child cannot
 * touch), or -1. */
static double child_cpu_s(pid_t pid)
{
	char path[64], text[128];
	snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, text, sizeof text - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = 0;
	return (double)strtoull(text, NULL, 10) * 1e-9;
}

/* Reads what the child wrote on the (non-blocking) clock pipe, stamping each byte with the wall
 * clock and the child's CPU time. Returns 0 when it read something, 1 when nothing was there, -1 at
 * EOF or on an error. */
static int read_marks(int fd, pid_t pid, sf_proc *p)
{
	char buf[16];
	ssize_t n = read(fd, buf, sizeof buf);
	double t = sf_now(), cpu = n > 0 ? child_cpu_s(pid) : -1;
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : -1;
	if (n == 0)
		return -1;
	for (ssize_t i = 0; i < n && p->n_marks < (int)sizeof p->mark; i++) {
		p->mark[p->n_marks] = buf[i];
		p->mark_cpu[p->n_marks] = cpu;
		p->mark_t[p->n_marks++] = t;
	}
	return 0;
}

static int spawn(char *const argv[], const char *log_path, double timeout_s, char *const *env, int clocked,
		 sf_proc *p, char *err, size_t errlen)
{
	memset(p, 0, sizeof *p);
	/* a candidate's process must not read this one's memory (the secret seed) through /proc */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	int clk[2] = { -1, -1 };
	if (clocked && pipe2(clk, O_CLOEXEC | O_NONBLOCK) != 0) {
		sf_errf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	int logfd = -1;
	if (log_path) {
		logfd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (logfd < 0) {
			sf_errf(err, errlen, "cannot open log %s: %s", log_path, strerror(errno));
			return -1;
		}
	}
	int errpipe[2];
	if (pipe2(errpipe, O_CLOEXEC) != 0) {
		sf_errf(err, errlen, "pipe: %s", strerror(errno));
		if (logfd >= 0)
			close(logfd);
		if (clocked) {
			close(clk[0]);
			close(clk[1]);
		}
		return -1;
	}
	double t0 = sf_now();
	const pid_t self = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		sf_errf(err, errlen, "fork: %s", strerror(errno));
		close(errpipe[0]);
		close(errpipe[1]);
		if (logfd >= 0)
			close(logfd);
		return -1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		/* the child (own process group, so a kill of ours does not reach it) dies with the thread that waits for it:
		 * a campaign or eval killed with -9 leaves no runner, evaluator or agent behind (its own daemons excepted) */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != self)
			_exit(127);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		if (logfd >= 0) {
			dup2(logfd, 1);
			dup2(logfd, 2);
		}
		for (int i = 0; env && env[i]; i++)
			putenv(env[i]);
		if (clocked) {
			char v[16];
			snprintf(v, sizeof v, "%d", SF_CLOCK_FD_NUM);
			if (dup2(clk[1], SF_CLOCK_FD_NUM) < 0 || setenv("SF_CLOCK_FD", v, 1))
				_exit(127);
		} else {
			unsetenv("SF_CLOCK_FD");
		}
		execvp(argv[0], argv);
		int e = errno;
		if (write(errpipe[1], &e, sizeof e) < 0)
			_exit(127);
		_exit(127);
	}
	setpgid(pid, pid);
	current_pgid = pid;
	close(errpipe[1]);
	if (clocked)
		close(clk[1]);
	if (logfd >= 0)
		close(logfd);
	int exec_errno = 0;
	ssize_t got = read(errpipe[0], &exec_errno, sizeof exec_errno);
	close(errpipe[0]);
	if (got == (ssize_t)sizeof exec_errno) {
		waitpid(pid, NULL, 0);
		if (clk[0] >= 0)
			close(clk[0]);
		sf_errf(err, errlen, "cannot run %s: %s", argv[0], strerror(exec_errno));
		return -1;
	}
	int status = 0;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			sf_errf(err, errlen, "waitpid: %s", strerror(errno));
			kill(-pid, SIGKILL);
			return -1;
		}
		if (timeout_s > 0 && sf_now() - t0 > timeout_s) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			p->timed_out = 1;
			break;
		}
		if (clk[0] >= 0) {
			struct pollfd pf = { .fd = clk[0], .events = POLLIN };
			if (poll(&pf, 1, 2) > 0 && read_marks(clk[0], pid, p) < 0) {
				close(clk[0]);
				clk[0] = -1;
			}
		} else {
			struct timespec ts = { 0, 2 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	if (clk[0] >= 0) {
		while (p->n_marks < (int)sizeof p->mark && read_marks(clk[0], pid, p) == 0) {
		}
		close(clk[0]);
	}
	kill(-pid, SIGKILL); /* anything the child left behind in its group */
	current_pgid = 0;
	p->wall_s = sf_now() - t0;
	if (WIFEXITED(status)) {
		p->exited = 1;
		p->exit_code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		p->signaled = 1;
		p->sig = WTERMSIG(status);
	}
	return 0;
}

void sf_proc_describe(const sf_proc *p, char *out, size_t len)
{
	if (p->timed_out)
		snprintf(out, len, "timed out after %.1f s", p->wall_s);
	else if (p->signaled)
		snprintf(out, len, "killed by signal %d (%s)", p->sig, strsignal(p->sig));
	else
		snprintf(out, len, "exit %d", p->exit_code);
}

char *sf_log_tail(const char *path, size_t max_bytes)
{
	char *text;
	size_t len;
	char err[SF_ERRLEN];
	if (sf_read_file(path, &text, &len, err, sizeof err))
		return sf_xstrdup("");
	if (len <= max_bytes)
		return text;
	char *tail = sf_xstrdup(text + len - max_bytes);
	free(text);
	return tail;
}

void sf_argv_add(sf_argv *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? 2 * a->cap : 16;
		a->v = sf_xrealloc(a->v, sizeof(char *) * (size_t)a->cap);
	}
	a->v[a->n++] = sf_xstrdup(s);
	a->v[a->n] = NULL;
}

void sf_argv_addf(sf_argv *a, const char *fmt, ...)
{
	sf_buf b = { 0 };
	va_list ap;
	va_start(ap, fmt);
	sf_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	sf_argv_add(a, b.data ? b.data : "");
	sf_buf_free(&b);
}

void sf_argv_free(sf_argv *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof *a);
}

char *sf_argv_join(const sf_argv *a)
{
	sf_buf b = { 0 };
	for (int i = 0; i < a->n; i++) {
		if (i)
			sf_buf_puts(&b, " ");
		sf_buf_puts(&b, a->v[i]);
	}
	return sf_buf_take(&b);
}
