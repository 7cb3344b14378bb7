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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The process group of the child being waited for, so that an interrupted solforge takes it down too. */
static volatile sig_atomic_t current_pgid;
static char *cleanup_dir;

static void on_fatal_signal(int sig)
{
	if (current_pgid > 0)
		kill(-(pid_t)current_pgid, SIGKILL);
	if (cleanup_dir)
		sf_rm_rf(cleanup_dir); /* not async-signal-safe, but the process ends right after */
	signal(sig, SIG_DFL);
	raise(sig);
}

void sf_spawn_cleanup_on_signal(const char *dir)
{
	static int installed;
	free(cleanup_dir);
	cleanup_dir = dir ? sf_xstrdup(dir) : NULL;
	if (!installed) {
		signal(SIGINT, on_fatal_signal);
		signal(SIGTERM, on_fatal_signal);
		signal(SIGHUP, on_fatal_signal);
		installed = 1;
	}
}

int sf_spawn(char *const argv[], const char *log_path, double timeout_s, char *const *env, sf_proc *p, char *err,
	     size_t errlen)
{
	memset(p, 0, sizeof *p);
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
		return -1;
	}
	double t0 = sf_now();
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
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		if (logfd >= 0) {
			dup2(logfd, 1);
			dup2(logfd, 2);
		}
		for (int i = 0; env && env[i]; i++)
			putenv(env[i]);
		execvp(argv[0], argv);
		int e = errno;
		if (write(errpipe[1], &e, sizeof e) < 0)
			_exit(127);
		_exit(127);
	}
	setpgid(pid, pid);
	current_pgid = pid;
	close(errpipe[1]);
	if (logfd >= 0)
		close(logfd);
	int exec_errno = 0;
	ssize_t got = read(errpipe[0], &exec_errno, sizeof exec_errno);
	close(errpipe[0]);
	if (got == (ssize_t)sizeof exec_errno) {
		waitpid(pid, NULL, 0);
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
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		nanosleep(&ts, NULL);
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
