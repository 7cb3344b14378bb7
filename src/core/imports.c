/*
 * imports.c - the static check of a built candidate's ELF file (see imports.h).
 *
 * Reads the section headers of a 64-bit little-endian ELF shared object, its .dynsym (imports:
 * undefined symbols; exports: defined global functions and objects), its .dynamic DT_NEEDED
 * entries, and the bytes of its executable sections.
 */
#include "core/imports.h"
#include "core/util.h"
#include "core/x86len.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Imports a kernel has no use for and a cheat needs. A trailing '*' matches a prefix. */
static const char *const deny_imports[] = {
	/* dynamic loading: finding and calling code the check cannot see */
	"dlopen", "dlmopen", "dlsym", "dlvsym", "dladdr", "dladdr1", "dlinfo", "dl_iterate_phdr", "_dl_*",
	"__libc_dl*", "cuGetProcAddress*", "cudaGetDriverEntryPoint*",
	/* processes, daemons, other processes' memory */
	"fork", "vfork", "_Fork", "__fork", "clone", "clone3", "execve", "execv", "execvp", "execvpe", "execl",
	"execlp", "execle", "fexecve", "execveat", "system", "popen", "posix_spawn", "posix_spawnp", "daemon",
	"setsid", "setpgid", "setpgrp", "kill", "killpg", "ptrace", "process_vm_readv", "process_vm_writev", "prctl",
	"syscall", "seccomp", "unshare", "setns", "pidfd_open", "pidfd_getfd",
	/* changing code or mapping memory in odd ways */
	"mprotect", "pkey_mprotect", "memfd_create", "shm_open", "shmget", "shmat", "mremap",
	/* network */
	"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "getaddrinfo", "gethostbyname*",
	"sendto", "recvfrom", "sendmsg", "recvmsg",
	/* files (the reference, /proc, the runner's files) and raw file descriptors (the clock pipe) */
	"open", "open64", "openat", "openat64", "fdopen", "__open_2", "__open64_2", "__openat_2", "__openat64_2", "fopen",
	"fopen64", "freopen", "freopen64", "creat", "creat64", "opendir", "fdopendir", "readlink", "readlinkat",
	"unlink", "unlinkat", "rename", "renameat", "renameat2", "remove", "truncate", "ftruncate", "write", "writev",
	"pwrite", "pwrite64", "pwritev", "pwritev2", "sendfile", "splice", "vmsplice", "tee", "dup", "dup2", "dup3", "close", "fcntl", "ioctl",
	/* signal handlers and timers that interrupt the runner */
	"signal", "sigaction", "__sysv_signal", "bsd_signal", "sigset", "setitimer", "alarm", "timer_create",
	/* profilers and event timing: the runner's own instruments */
	"cupti*", "cuProfiler*", "cudaProfiler*", "cudaEventElapsedTime*", "cuEventElapsedTime*",
	/* the persisting-L2 window (a reported 4x "HBM" speedup) and the runner's context */
	"cudaStreamSetAttribute*", "cuStreamSetAttribute*", "cudaDeviceSetLimit", "cuCtxSetLimit",
	"cudaGraphKernelNodeSetAttribute*", "cuGraphKernelNodeSetAttribute*", "cudaDeviceReset", "cuCtxDestroy*",
	"cuDevicePrimaryCtxReset*", "cudaSetDeviceFlags", NULL,
};

/* Exports that would shadow a timer, CUPTI, a synchronization or the runner's own functions. */
static const char *const deny_exports[] = {
	"clock_gettime", "gettimeofday", "time", "clock", "getrandom", "cupti*", "cuEvent*", "cudaEvent*",
	"cuStreamSynchronize", "cudaStreamSynchronize", "cudaDeviceSynchronize", "cuCtxSynchronize", "sf_now",
	"rc_*", "rg_*", "dlopen", "dlsym", "__libc_start_main", "write", "open", "openat", NULL,
};

/* Libraries a candidate may need (prefixes of DT_NEEDED names). */
static const char *const allow_needed[] = {
	"libc.so.*", "libm.so.*", "libstdc++.so.*", "libgcc_s.so.*", "ld-linux*", "libpthread.so.*", "librt.so.*",
	"libcudart.so.*", "libcuda.so.*", "libcublas.so.*", "libcublasLt.so.*", NULL,
};

static int match(const char *pat, const char *name)
{
	size_t l = strlen(pat);
	if (l && pat[l - 1] == '*')
		return !strncmp(pat, name, l - 1);
	return !strcmp(pat, name);
}

static const char *listed(const char *const *list, const char *name)
{
	for (int i = 0; list[i]; i++)
		if (match(list[i], name))
			return list[i];
	return NULL;
}

/* The names declared on `solforge-allow:` lines of the sources, space-separated with spaces around
 * (" " when none); caller frees. */
static char *declared(const char *const *sources)
{
	sf_buf b = { 0 };
	sf_buf_puts(&b, " ");
	for (int f = 0; sources && sources[f]; f++) {
		char *text = NULL, err[SF_ERRLEN];
		size_t len;
		if (sf_read_file(sources[f], &text, &len, err, sizeof err))
			continue;
		for (char *p = text; (p = strstr(p, "solforge-allow:")); ) {
			p += strlen("solforge-allow:");
			size_t n = strcspn(p, "\n");
			for (size_t i = 0; i < n; i++)
				sf_buf_printf(&b, "%c", (p[i] == ',' || p[i] == '\t' || p[i] == '\r') ? ' ' : p[i]);
			sf_buf_puts(&b, " ");
			p += n;
		}
		free(text);
	}
	return sf_buf_take(&b);
}

static int is_declared(const char *decl, const char *name)
{
	char key[300];
	snprintf(key, sizeof key, " %s ", name);
	return strstr(decl, key) != NULL;
}

typedef struct elf_view {
	const uint8_t *d;
	size_t n;
	const Elf64_Shdr *sh;
	int nsh;
} elf_view;

static const Elf64_Shdr *section(const elf_view *v, size_t i)
{
	return i < (size_t)v->nsh ? &v->sh[i] : NULL;
}

static int in_file(const elf_view *v, uint64_t off, uint64_t size)
{
	return off <= v->n && size <= v->n - off;
}

/* The string at offset o of string section s, or NULL. */
static const char *str_at(const elf_view *v, const Elf64_Shdr *s, uint64_t o)
{
	if (!s || o >= s->sh_size || !in_file(v, s->sh_offset, s->sh_size))
		return NULL;
	const char *p = (const char *)v->d + s->sh_offset + o;
	return memchr(p, 0, s->sh_size - o) ? p : NULL;
}

/* Appends one finding to why. */
static void finding(char *why, size_t whylen, int *count, const char *pre, const char *name, const char *post)
{
	if (*count < 6) {
		size_t l = strlen(why);
		if (l + 4 < whylen) {
			if (*count)
				snprintf(why + l, whylen - l, "; ");
			l = strlen(why);
			snprintf(why + l, whylen - l, "%s%s%s", pre, name, post);
		}
	}
	(*count)++;
}

/* Whether sym names a code address worth a sweep start: a function, or an
 * untyped label (objdump restarts at every symbol). */
static int code_symbol(const Elf64_Sym *sym)
{
	int type = ELF64_ST_TYPE(sym->st_info);
	return sym->st_shndx != SHN_UNDEF && sym->st_shndx < SHN_LORESERVE && sym->st_value &&
	       (type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE);
}

/* The raw-system-call check (x86len.h): sweeps the executable PROGBITS sections with the
 * instruction decoder, restarting at every function symbol of .symtab and .dynsym, follows the
 * code pointers that relocations put in data, and adds one finding per system call found.
 * Returns 0, or -1 when memory runs out. */
static int code_scan(const elf_view *v, char *why, size_t whylen, int *count)
{
	sf_x86_region *reg = calloc((size_t)v->nsh + 1, sizeof *reg);
	uint64_t *syms = NULL, *ptrs = NULL;
	size_t nsyms = 0, cap = 0, nptrs = 0, pcap = 0;
	int nr = 0, rc = -1;
	if (!reg)
		return -1;
	for (int i = 0; i < v->nsh; i++) {
		const Elf64_Shdr *s = &v->sh[i];
		if (!in_file(v, s->sh_offset, s->sh_type == SHT_NOBITS ? 0 : s->sh_size))
			continue;
		if ((s->sh_flags & SHF_EXECINSTR) && s->sh_type == SHT_PROGBITS)
			reg[nr++] = (sf_x86_region){ v->d + s->sh_offset, s->sh_size, s->sh_addr, s->sh_offset };
		if ((s->sh_type == SHT_SYMTAB || s->sh_type == SHT_DYNSYM) && s->sh_entsize == sizeof(Elf64_Sym)) {
			const Elf64_Sym *sym = (const Elf64_Sym *)(v->d + s->sh_offset);
			for (size_t j = 1; j < s->sh_size / sizeof(Elf64_Sym); j++) {
				if (!code_symbol(&sym[j]))
					continue;
				if (sf_x86_push(&syms, &nsyms, &cap, sym[j].st_value))
					goto out;
			}
		}
		if (s->sh_type == SHT_RELA && s->sh_entsize == sizeof(Elf64_Rela)) {
			/* code pointers held in data: R_X86_64_RELATIVE / IRELATIVE addends, and
			 * symbol + addend of R_X86_64_64 (a shared object has no other absolute address) */
			const Elf64_Rela *rel = (const Elf64_Rela *)(v->d + s->sh_offset);
			const Elf64_Shdr *symsec = section(v, s->sh_link);
			for (size_t j = 0; j < s->sh_size / sizeof(Elf64_Rela); j++) {
				uint64_t type = ELF64_R_TYPE(rel[j].r_info), si = ELF64_R_SYM(rel[j].r_info), p;
				if (type == R_X86_64_RELATIVE || type == R_X86_64_IRELATIVE)
					p = (uint64_t)rel[j].r_addend;
				else if (type == R_X86_64_64 && symsec && symsec->sh_entsize == sizeof(Elf64_Sym) &&
					 in_file(v, symsec->sh_offset, symsec->sh_size) &&
					 si < symsec->sh_size / sizeof(Elf64_Sym))
					p = ((const Elf64_Sym *)(v->d + symsec->sh_offset))[si].st_value +
					    (uint64_t)rel[j].r_addend;
				else
					continue;
				if (sf_x86_push(&ptrs, &nptrs, &pcap, p))
					goto out;
			}
		}
	}

	sf_x86_finding f[6];
	int n = sf_x86_scan(reg, nr, syms, nsyms, ptrs, nptrs, f, 6);
	if (n < 0)
		goto out;
	for (int k = 0; k < n && k < 6; k++) {
		char where[160];
		if (f[k].kind == SF_X86_MIDDLE)
			snprintf(where, sizeof where, "offset 0x%llx (a branch into the middle of an instruction at offset 0x%llx)",
				 (unsigned long long)f[k].off, (unsigned long long)f[k].where);
		else if (f[k].kind == SF_X86_UNDECODED)
			snprintf(where, sizeof where, "offset 0x%llx (bytes the decoder could not read from offset 0x%llx on)",
				 (unsigned long long)f[k].off, (unsigned long long)f[k].where);
		else
			snprintf(where, sizeof where, "offset 0x%llx", (unsigned long long)f[k].off);
		finding(why, whylen, count, "has a raw system-call instruction at ", where, "");
	}
	rc = 0;
out:
	free(reg);
	free(syms);
	free(ptrs);
	return rc;
}

int sf_imports_check(const char *so_path, const char *const *sources, char *why, size_t whylen)
{
	why[0] = 0;
	char *text;
	size_t len;
	char err[SF_ERRLEN];
	if (sf_read_file(so_path, &text, &len, err, sizeof err)) {
		snprintf(why, whylen, "cannot read the built solution for the import check: %s", err);
		return -1;
	}
	elf_view v = { (const uint8_t *)text, len, NULL, 0 };
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)v.d;
	if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    !in_file(&v, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr))) {
		snprintf(why, whylen, "%s is not a 64-bit little-endian ELF file with section headers", so_path);
		free(text);
		return -1;
	}
	v.sh = (const Elf64_Shdr *)(v.d + eh->e_shoff);
	v.nsh = eh->e_shnum;
	char *decl = declared(sources);
	int count = 0;
	for (int i = 0; i < v.nsh; i++) {
		const Elf64_Shdr *s = &v.sh[i];
		if (!in_file(&v, s->sh_offset, s->sh_type == SHT_NOBITS ? 0 : s->sh_size))
			continue;
		if (s->sh_type == SHT_DYNSYM && s->sh_entsize == sizeof(Elf64_Sym)) {
			const Elf64_Shdr *strs = section(&v, s->sh_link);
			const Elf64_Sym *sym = (const Elf64_Sym *)(v.d + s->sh_offset);
			size_t ns = s->sh_size / sizeof(Elf64_Sym);
			for (size_t j = 1; j < ns; j++) {
				const char *name = str_at(&v, strs, sym[j].st_name);
				if (!name || !*name || is_declared(decl, name))
					continue;
				int bind = ELF64_ST_BIND(sym[j].st_info), type = ELF64_ST_TYPE(sym[j].st_info);
				if (sym[j].st_shndx == SHN_UNDEF) {
					if (listed(deny_imports, name))
						finding(why, whylen, &count, "imports ", name, "");
				} else if ((bind == STB_GLOBAL || bind == STB_WEAK) &&
					   (type == STT_FUNC || type == STT_OBJECT || type == STT_GNU_IFUNC) &&
					   listed(deny_exports, name)) {
					finding(why, whylen, &count, "defines ", name, " (would shadow a timer or the runner)");
				}
			}
		} else if (s->sh_type == SHT_DYNAMIC && s->sh_entsize == sizeof(Elf64_Dyn)) {
			const Elf64_Shdr *strs = section(&v, s->sh_link);
			const Elf64_Dyn *dyn = (const Elf64_Dyn *)(v.d + s->sh_offset);
			for (size_t j = 0; j < s->sh_size / sizeof(Elf64_Dyn) && dyn[j].d_tag != DT_NULL; j++) {
				if (dyn[j].d_tag != DT_NEEDED)
					continue;
				const char *name = str_at(&v, strs, dyn[j].d_un.d_val);
				char key[300];
				snprintf(key, sizeof key, "lib:%s", name ? name : "?");
				if (!name || listed(allow_needed, name) || is_declared(decl, key))
					continue;
				finding(why, whylen, &count, "needs the library ", name, " (not on the allow-list)");
			}
		}
	}
	if (!is_declared(decl, "syscall-instruction") && code_scan(&v, why, whylen, &count) < 0) {
		snprintf(why, whylen, "out of memory in the code scan of %s", so_path);
		free(decl);
		free(text);
		return -1;
	}
	free(decl);
	free(text);
	if (count) {
		size_t l = strlen(why);
		snprintf(why + l, whylen - l,
			 "%s (static import check, docs/security.md; declare a real need with a `// solforge-allow: "
			 "NAME` comment in the solution)",
			 count > 6 ? "; ..." : "");
		return 1;
	}
	return 0;
}
