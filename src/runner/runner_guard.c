/*
 * runner_guard.c - the runner-side defenses (see runner_guard.h and docs/security.md).
 *
 * The seccomp filter is raw BPF (no libseccomp, no header beyond the kernel's uapi ones) and is
 * written for x86_64; on another architecture the sandbox reports that it is not available and the
 * runner goes on with the other defenses. Landlock is used through its system calls with the
 * structures declared here (stable kernel ABI), so no landlock header is needed either.
 */
#include "runner/runner_guard.h"
#include "core/job.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#define RG_HAVE_SECCOMP 1
#else
#define RG_HAVE_SECCOMP 0
#endif

#ifndef CLONE_THREAD
#define CLONE_THREAD 0x00010000
#endif

static int clock_fd(void);
static volatile sig_atomic_t g_trapped;  /* trapped calls since the last rg_violation */
static volatile sig_atomic_t g_trap_nr;  /* the first one's number */

static int env_off(const char *name)
{
	const char *v = getenv(name);
	return v && !strcmp(v, "0");
}

int rg_defenses_enabled(void)
{
	static int cached = -1;
	if (cached < 0)
		cached = !env_off("SOLFORGE_DEFENSES");
	return cached;
}

/* ---------------------------------------------------------------------------------------------- */
/* seccomp                                                                                         */

#if RG_HAVE_SECCOMP
/* SIGSYS from a trapped call: record it and make the call return -EPERM. Async-signal-safe. */
static void on_sigsys(int sig, siginfo_t *info, void *uc_)
{
	(void)sig;
	ucontext_t *uc = (ucontext_t *)uc_;
	if (!g_trapped)
		g_trap_nr = info->si_syscall;
	g_trapped = g_trapped + 1;
	uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
	static const char m[] = "solforge-runner: sandbox: a forbidden system call was refused\n";
	ssize_t w = write(2, m, sizeof m - 1);
	(void)w;
}

typedef struct bpf_prog {
	struct sock_filter f[160];
	int n;
} bpf_prog;

static void put(bpf_prog *p, uint16_t code, uint32_t k, uint8_t jt, uint8_t jf)
{
	if (p->n < (int)(sizeof p->f / sizeof p->f[0])) {
		p->f[p->n].code = code;
		p->f[p->n].jt = jt;
		p->f[p->n].jf = jf;
		p->f[p->n].k = k;
	}
	p->n++;
}

#define LD_NR(p) put(p, BPF_LD | BPF_W | BPF_ABS, (uint32_t)offsetof(struct seccomp_data, nr), 0, 0)
#define LD_ARG(p, i) put(p, BPF_LD | BPF_W | BPF_ABS, (uint32_t)offsetof(struct seccomp_data, args[i]), 0, 0)
#define RET(p, v) put(p, BPF_RET | BPF_K, (v), 0, 0)
#define TRAP SECCOMP_RET_TRAP
#define ALLOW SECCOMP_RET_ALLOW
#define DENY(e) (SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))

/* nr: trapped unless (arg[i] & mask) != 0 (jset) or arg[i] == val (jeq). Six instructions. */
static void rule_arg(bpf_prog *p, int nr, int arg, int jset, uint32_t v, uint32_t pass, uint32_t fail)
{
	LD_NR(p);
	put(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 4);
	LD_ARG(p, arg);
	put(p, BPF_JMP | (jset ? BPF_JSET : BPF_JEQ) | BPF_K, v, 1, 0);
	RET(p, fail);
	RET(p, pass);
}

static int seccomp_install(int cuda, char *err, size_t errlen)
{
	static const int trapped[] = {
		SYS_fork, SYS_vfork, SYS_execve, SYS_execveat, SYS_ptrace, SYS_process_vm_readv,
		SYS_process_vm_writev, SYS_socket, SYS_socketpair, SYS_connect, SYS_bind, SYS_listen, SYS_accept,
		SYS_accept4, SYS_setsid, SYS_setpgid, SYS_memfd_create, SYS_unshare, SYS_setns, SYS_tkill,
		SYS_io_uring_setup, SYS_bpf, SYS_perf_event_open, SYS_pidfd_getfd, SYS_pidfd_open,
		SYS_userfaultfd, SYS_kexec_load, SYS_mount, SYS_chroot, SYS_seccomp,
	};
	bpf_prog p = { .n = 0 };
	put(&p, BPF_LD | BPF_W | BPF_ABS, (uint32_t)offsetof(struct seccomp_data, arch), 0, 0);
	put(&p, BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	RET(&p, TRAP); /* i386 / int 0x80 system calls */
	LD_NR(&p);
	put(&p, BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
	RET(&p, TRAP); /* x32 */
	for (size_t i = 0; i < sizeof trapped / sizeof trapped[0]; i++) {
		put(&p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)trapped[i], 0, 1);
		RET(&p, TRAP);
	}
	put(&p, BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1);
	RET(&p, DENY(ENOSYS)); /* glibc falls back to clone, whose flags we can read */
	uint32_t pid = (uint32_t)getpid();
	rule_arg(&p, SYS_clone, 0, 1, CLONE_THREAD, ALLOW, TRAP);  /* threads only */
	rule_arg(&p, SYS_kill, 0, 0, pid, ALLOW, TRAP);            /* only this process */
	rule_arg(&p, SYS_tgkill, 0, 0, pid, ALLOW, TRAP);
	rule_arg(&p, SYS_rt_sigaction, 0, 0, SIGSYS, DENY(EPERM), ALLOW); /* keep our SIGSYS handler */
	/* no code made or changed: trapped on cpu; refused quietly on cuda, where the driver might
	 * probe (the write into code then faults, which ends the run) */
	uint32_t code_change = cuda ? DENY(EPERM) : TRAP;
	rule_arg(&p, SYS_mprotect, 2, 1, PROT_EXEC, code_change, ALLOW);
	rule_arg(&p, SYS_pkey_mprotect, 2, 1, PROT_EXEC, code_change, ALLOW);
	/* the clock pipe takes the runner's marks through writev only: a plain write there is forged */
	if (clock_fd() >= 0)
		rule_arg(&p, SYS_write, 0, 0, (uint32_t)clock_fd(), TRAP, ALLOW);
	/* mmap: writable and executable at once */
	LD_NR(&p);
	put(&p, BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 0, 5);
	LD_ARG(&p, 2);
	put(&p, BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC, 0, 0);
	put(&p, BPF_JMP | BPF_JEQ | BPF_K, PROT_WRITE | PROT_EXEC, 0, 1);
	RET(&p, code_change);
	RET(&p, ALLOW);
	RET(&p, ALLOW); /* everything else */
	if (p.n > (int)(sizeof p.f / sizeof p.f[0])) {
		snprintf(err, errlen, "seccomp filter too long (%d instructions)", p.n);
		return -1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL)) {
		snprintf(err, errlen, "cannot install the SIGSYS handler: %s", strerror(errno));
		return -1;
	}
	struct sock_fprog fp = { .len = (unsigned short)p.n, .filter = p.f };
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp, 0, 0)) {
		snprintf(err, errlen, "cannot install the seccomp filter: %s", strerror(errno));
		return -1;
	}
	return 0;
}
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Landlock                                                                                        */

#define LL_CREATE_RULESET 444
#define LL_ADD_RULE 445
#define LL_RESTRICT_SELF 446
#define LL_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_WRITE_FILE (1ull << 1)
#define LL_REMOVE_DIR (1ull << 4)
#define LL_REMOVE_FILE (1ull << 5)
#define LL_MAKE_ALL (0x7full << 6) /* char, dir, reg, sock, fifo, block, sym */
#define LL_REFER (1ull << 13)
#define LL_TRUNCATE (1ull << 14)
#define LL_NET_BIND_TCP (1ull << 0)
#define LL_NET_CONNECT_TCP (1ull << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ull << 0)
#define LL_SCOPE_SIGNAL (1ull << 1)

struct ll_ruleset_attr {
	uint64_t handled_access_fs, handled_access_net, scoped;
};
struct ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

static int ll_allow(int ruleset, const char *path, uint64_t access)
{
	int fd = open(path, O_PATH | O_CLOEXEC | O_DIRECTORY);
	if (fd < 0)
		return -1;
	struct ll_path_beneath pb = { .allowed_access = access, .parent_fd = fd };
	long rc = syscall(LL_ADD_RULE, ruleset, LL_RULE_PATH_BENEATH, &pb, 0);
	close(fd);
	return rc ? -1 : 0;
}

/* Writes only beneath write_dir (everything) and /dev (device files, /dev/shm). Returns the ABI
 * version used, 0 when the kernel has no Landlock, -1 on failure. */
static int landlock_install(const char *write_dir, int cuda)
{
	long abi = syscall(LL_CREATE_RULESET, NULL, 0, LL_VERSION);
	if (abi <= 0)
		return 0;
	struct ll_ruleset_attr a = { 0, 0, 0 };
	a.handled_access_fs = LL_WRITE_FILE | LL_REMOVE_DIR | LL_REMOVE_FILE | LL_MAKE_ALL;
	if (abi >= 2)
		a.handled_access_fs |= LL_REFER;
	if (abi >= 3)
		a.handled_access_fs |= LL_TRUNCATE;
	size_t size = sizeof a.handled_access_fs;
	if (abi >= 4) {
		a.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
		size = 2 * sizeof(uint64_t);
	}
	if (abi >= 6) {
		/* no signals to processes outside the sandbox (the parent); the CUDA driver may use
		 * abstract unix sockets, so those stay unscoped there */
		a.scoped = LL_SCOPE_SIGNAL | (cuda ? 0 : LL_SCOPE_ABSTRACT_UNIX);
		size = sizeof a;
	}
	int rs = (int)syscall(LL_CREATE_RULESET, &a, size, 0);
	if (rs < 0)
		return -1;
	uint64_t dev = LL_WRITE_FILE | (abi >= 3 ? LL_TRUNCATE : 0) | LL_REMOVE_FILE | (1ull << 8);
	int rc = ll_allow(rs, write_dir, a.handled_access_fs);
	if (!rc)
		ll_allow(rs, "/dev", dev); /* may not exist in odd containers: not fatal */
	if (!rc)
		rc = syscall(LL_RESTRICT_SELF, rs, 0) ? -1 : 0;
	close(rs);
	return rc ? -1 : (int)abi;
}

int rg_sandbox_install(int cuda, const char *write_dir, char *note, size_t notelen, char *err, size_t errlen)
{
	if (notelen)
		note[0] = 0;
	/* every switch read from the environment is read now, before the candidate loads: its constructors could
	 * setenv("SOLFORGE_DEFENSES", "0") (red-team session 25: the first read used to come after dlopen) */
	(void)rg_defenses_enabled();
	(void)clock_fd();
	if (env_off("SOLFORGE_SANDBOX")) {
		snprintf(note, notelen, "sandbox off (SOLFORGE_SANDBOX=0)");
		return 0;
	}
	struct rlimit core = { 0, 0 };
	setrlimit(RLIMIT_CORE, &core);
	struct rlimit fsz = { (rlim_t)64 << 30, (rlim_t)64 << 30 }; /* no single file over 64 GiB */
	setrlimit(RLIMIT_FSIZE, &fsz);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		snprintf(err, errlen, "cannot set no_new_privs: %s", strerror(errno));
		return -1;
	}
	int ll = landlock_install(write_dir, cuda);
	if (ll < 0) {
		snprintf(err, errlen, "cannot install the Landlock file-write rules for %s: %s", write_dir,
			 strerror(errno));
		return -1;
	}
	if (ll == 0)
		snprintf(note, notelen, "no Landlock in this kernel: file writes are not confined");
#if RG_HAVE_SECCOMP
	return seccomp_install(cuda, err, errlen);
#else
	size_t l = strlen(note);
	snprintf(note + l, notelen - l, "%sno seccomp filter for this architecture", l ? "; " : "");
	return 0;
#endif
}

static const char *syscall_name(int nr)
{
	switch (nr) {
	case SYS_write: return "write (on the clock pipe)";
	case SYS_mmap: return "mmap (writable and executable)";
	case SYS_mprotect: return "mprotect (executable)";
	case SYS_clone: return "clone (a process)";
	case SYS_fork: return "fork";
	case SYS_vfork: return "vfork";
	case SYS_execve: return "execve";
	case SYS_ptrace: return "ptrace";
	case SYS_socket: return "socket";
	case SYS_connect: return "connect";
	case SYS_kill: return "kill";
	case SYS_setsid: return "setsid";
	case SYS_memfd_create: return "memfd_create";
	default: return "system call";
	}
}

int rg_violation(char *msg, size_t msglen)
{
	if (!g_trapped)
		return 0;
	snprintf(msg, msglen, "the solution made a forbidden system call: %s (number %d; %d refused by the sandbox)",
		 syscall_name((int)g_trap_nr), (int)g_trap_nr, (int)g_trapped);
	g_trapped = 0;
	return 1;
}

/* ---------------------------------------------------------------------------------------------- */
/* threads                                                                                         */

#define RG_MAX_TIDS 1024
static long g_tids[RG_MAX_TIDS];
static int g_ntids;

static int list_tids(long *out, int max)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		if (n < max)
			out[n] = strtol(e->d_name, NULL, 10);
		n++;
	}
	closedir(d);
	return n;
}

void rg_threads_snapshot(void)
{
	g_ntids = list_tids(g_tids, RG_MAX_TIDS);
	if (g_ntids > RG_MAX_TIDS)
		g_ntids = RG_MAX_TIDS;
}

int rg_threads_new(const char *allow_prefix, char *msg, size_t msglen)
{
	static long now[RG_MAX_TIDS];
	int n = list_tids(now, RG_MAX_TIDS);
	if (n < 0 || g_ntids < 0)
		return 0;
	if (n > RG_MAX_TIDS)
		n = RG_MAX_TIDS;
	int fresh = 0;
	for (int i = 0; i < n; i++) {
		int known = 0;
		for (int j = 0; j < g_ntids && !known; j++)
			known = g_tids[j] == now[i];
		if (known)
			continue;
		char path[64], name[32] = "";
		snprintf(path, sizeof path, "/proc/self/task/%ld/comm", now[i]);
		FILE *f = fopen(path, "r");
		if (f) {
			if (!fgets(name, sizeof name, f))
				name[0] = 0;
			fclose(f);
			name[strcspn(name, "\n")] = 0;
		}
		int allowed = 0;
		for (const char *a = allow_prefix; a && *a && !allowed;) { /* '|'-separated prefixes */
			size_t l = strcspn(a, "|");
			allowed = l && !strncmp(name, a, l);
			a += l + (a[l] == '|');
		}
		if (allowed)
			continue;
		if (!fresh)
			snprintf(msg, msglen,
				 "the solution left a thread running after its call returned (tid %ld, '%s'): work "
				 "outside the timed window",
				 now[i], name);
		fresh++;
	}
	return fresh;
}

/* ---------------------------------------------------------------------------------------------- */

uint64_t rg_random(void)
{
	uint64_t v = 0;
	while (v == 0) {
		if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
			/* no getrandom: a clock-derived value (weaker, still unknown in advance) */
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			v = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec;
		}
	}
	return v;
}

int rg_reservoir_offer(rg_reservoir *r, int64_t call, int set, uint64_t key)
{
	r->seen++;
	int slot = -1;
	if (r->n < RC_AUDITS) {
		slot = r->n++;
	} else {
		uint64_t j = rg_random() % (uint64_t)r->seen;
		if (j < RC_AUDITS)
			slot = (int)j;
	}
	if (slot >= 0) {
		r->set[slot] = set;
		r->key[slot] = key;
		r->call[slot] = call;
	}
	return slot;
}

/* ---------------------------------------------------------------------------------------------- */
/* the parent's clock pipe                                                                         */

static int clock_fd(void)
{
	static int fd = -2;
	if (fd == -2) {
		const char *v = getenv("SF_CLOCK_FD");
		fd = v && *v ? atoi(v) : -1;
		if (fd >= 0 && fcntl(fd, F_GETFD) < 0)
			fd = -1;
		if (fd >= 0)
			fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	return fd;
}

double rg_raw_now(void)
{
	struct timespec ts = { 0, 0 };
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int rg_clock_enabled(void)
{
	return clock_fd() >= 0;
}

int rg_clock_mark(char c)
{
	int fd = clock_fd();
	if (fd < 0)
		return 0;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	return writev(fd, &iov, 1) == 1 ? 0 : -1;
}

int64_t rg_clock_batch(int (*call)(void *ctx, int cand, int64_t i), void *ctx, double target_s, int64_t max_calls)
{
	if (!rg_clock_enabled())
		return 0;
	int64_t calls = 0;
	const double first_s = target_s / SF_CLOCK_PAIRS;
	for (int pair = 0; pair < SF_CLOCK_PAIRS; pair++)
		for (int cand = 1; cand >= 0; cand--) {
			const int by_time = cand && pair == 0; /* the first candidate half sets B */
			if (rg_clock_mark(cand ? 'c' : 'a'))
				return 0;
			const double t0 = rg_raw_now();
			for (int64_t i = 0; by_time ? (i < 2 || (rg_raw_now() - t0 < first_s && i < max_calls)) : i < calls;
			     i++) {
				if (call(ctx, cand, i))
					return -1;
				if (by_time)
					calls = i + 1;
			}
			if (rg_clock_mark(cand ? 'd' : 'b'))
				return 0;
		}
	return calls;
}
