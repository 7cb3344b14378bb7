/*
 * x86scan.c - the system-call scan of executable code (see x86len.h): a linear sweep with the
 * instruction-length decoder of x86len.c, the check of branch targets that land inside an
 * instruction, and the byte-pattern fallback where the decoder fails.
 */
#include "core/x86len.h"

#include <stdlib.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The offset of the first syscall/sysenter/int 0x80 byte pattern in p[from, to), or to. */
static size_t pattern_at(const uint8_t *p, size_t size, size_t from, size_t to)
{
	for (size_t j = from; j < to && j + 1 < size; j++)
		if ((p[j] == 0x0f && (p[j + 1] == 0x05 || p[j + 1] == 0x34)) || (p[j] == 0xcd && p[j + 1] == 0x80))
			return j;
	return to;
}

size_t sf_x86_sweep(const sf_x86_region *r, const uint64_t *extra, size_t nextra, uint8_t *starts_out)
{
	for (size_t j = 0; j < r->size; j++)
		starts_out[j] = 0;
	/* the start points: the region start and the extra addresses inside it, sorted, distinct */
	uint64_t *s = malloc((nextra + 1) * sizeof *s);
	size_t ns = 0, fail = r->size;
	if (!s)
		return 0; /* no memory: report a failure at offset 0 (the caller byte-scans everything) */
	s[ns++] = 0;
	for (size_t k = 0; k < nextra; k++)
		if (extra[k] > r->addr && extra[k] - r->addr < r->size)
			s[ns++] = extra[k] - r->addr;
	qsort(s, ns, sizeof *s, cmp_u64);
	size_t nu = 0;
	for (size_t k = 0; k < ns; k++)
		if (!nu || s[k] != s[nu - 1])
			s[nu++] = s[k];
	ns = nu;
	for (size_t k = 0; k < ns; k++) {
		size_t end = k + 1 < ns ? (size_t)s[k + 1] : r->size;
		for (size_t pos = (size_t)s[k]; pos < end;) {
			sf_x86_insn in;
			int len = sf_x86_decode(r->bytes + pos, r->size - pos, r->addr + pos, &in);
			if (!len) { /* as objdump: skip one byte (the caller byte-scans from the first failure) */
				if (pos < fail)
					fail = pos;
				starts_out[pos++] = 2;
				continue;
			}
			starts_out[pos] = 1;
			pos += (size_t)len;
		}
	}
	free(s);
	return fail;
}

typedef struct scan_state {
	sf_x86_finding *f;
	int maxf, count;
} scan_state;

static void add(scan_state *st, int kind, uint64_t off, uint64_t where)
{
	if (st->count < st->maxf)
		st->f[st->count] = (sf_x86_finding){ kind, off, where };
	st->count++;
}

/* Whether code entered at offset off of r (not an instruction start of the sweep) reaches a
 * system call within a few instructions before it joins the sweep (an instruction start) or the
 * decoder fails (then the next 16 bytes are searched for the byte patterns). Sets *at to the
 * offset of the system call. */
static int middle_syscall(const sf_x86_region *r, const uint8_t *starts, size_t off, size_t *at)
{
	size_t pos = off;
	for (int n = 0; n < 16 && pos < r->size && (pos == off || starts[pos] != 1); n++) {
		sf_x86_insn in;
		int len = sf_x86_decode(r->bytes + pos, r->size - pos, r->addr + pos, &in);
		if (!len) {
			size_t to = pos + 16 < r->size ? pos + 16 : r->size;
			*at = pattern_at(r->bytes, r->size, pos, to);
			return *at < to;
		}
		if (in.syscall) {
			*at = pos;
			return 1;
		}
		pos += (size_t)len;
	}
	return 0;
}

int sf_x86_push(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 1024;
		uint64_t *t = realloc(*a, nc * sizeof *t);
		if (!t)
			return -1;
		*a = t;
		*cap = nc;
	}
	(*a)[(*n)++] = v;
	return 0;
}

int sf_x86_scan(const sf_x86_region *r, int nr, const uint64_t *extra, size_t nextra, const uint64_t *ptrs,
		size_t nptrs, sf_x86_finding *f, int maxf)
{
	scan_state st = { f, maxf, 0 };
	uint8_t **starts = calloc((size_t)(nr > 0 ? nr : 1), sizeof *starts);
	size_t *fail = calloc((size_t)(nr > 0 ? nr : 1), sizeof *fail);
	uint64_t *tg = NULL;
	size_t ntg = 0, cap = 0;
	int rc = 0;
	if (!starts || !fail) {
		rc = -1;
		goto out;
	}
	for (int i = 0; i < nr; i++) {
		starts[i] = malloc(r[i].size ? r[i].size : 1);
		if (!starts[i]) {
			rc = -1;
			goto out;
		}
		fail[i] = sf_x86_sweep(&r[i], extra, nextra, starts[i]);
		/* system calls before the first failure (the byte scan below covers the rest); targets
		 * from the whole sweep (a jump after a failure may lead back into decoded code) */
		int seen = 0;
		for (size_t pos = 0; pos < r[i].size; pos++) {
			if (starts[i][pos] != 1)
				continue;
			sf_x86_insn in;
			if (!sf_x86_decode(r[i].bytes + pos, r[i].size - pos, r[i].addr + pos, &in))
				continue;
			if (in.syscall && pos < fail[i] && !seen++)
				add(&st, SF_X86_SYSCALL, r[i].file_off + pos, r[i].file_off + pos);
			if (in.has_target && sf_x86_push(&tg, &ntg, &cap, in.target)) {
				rc = -1;
				goto out;
			}
		}
		/* the decoder failed: every byte pattern from there on counts, as before the decoder */
		size_t at = pattern_at(r[i].bytes, r[i].size, fail[i], r[i].size);
		if (at < r[i].size)
			add(&st, SF_X86_UNDECODED, r[i].file_off + at, r[i].file_off + fail[i]);
	}
	/* targets of direct branches, RIP-relative operands and data-held pointers inside an
	 * instruction of the sweep */
	for (size_t k = 0; k < nptrs; k++)
		if (sf_x86_push(&tg, &ntg, &cap, ptrs[k])) {
			rc = -1;
			goto out;
		}
	if (ntg)
		qsort(tg, ntg, sizeof *tg, cmp_u64);
	for (int i = 0; i < nr; i++) {
		for (size_t k = 0; k < ntg; k++) {
			if (k && tg[k] == tg[k - 1])
				continue;
			if (tg[k] < r[i].addr || tg[k] - r[i].addr >= fail[i])
				continue; /* elsewhere, or where the byte scan already looked */
			size_t off = (size_t)(tg[k] - r[i].addr), at;
			if (starts[i][off] != 1 && middle_syscall(&r[i], starts[i], off, &at)) {
				add(&st, SF_X86_MIDDLE, r[i].file_off + at, r[i].file_off + off);
				break;
			}
		}
	}
	rc = st.count;
out:
	for (int i = 0; starts && i < nr; i++)
		free(starts[i]);
	free(starts);
	free(fail);
	free(tg);
	return rc;
}
