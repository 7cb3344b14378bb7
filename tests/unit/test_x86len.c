/*
 * test_x86len.c - the x86-64 instruction-length decoder and the raw-system-call scan (x86len.h):
 * lengths and targets of hand-assembled instructions (checked against objdump when written), and
 * random code built from them, where system-call byte patterns inside immediates and displacements
 * must not be flagged while a real syscall, a restart at a symbol, a branch and a code pointer into
 * the middle of an instruction must be. tests/suites/x86len.sh compares the sweep with objdump on real binaries.
 */
#include "test.h"
#include "core/x86len.h"

#include <stdlib.h>

/* Instructions with their encodings; several hold 0F 05, 0F 34 or CD 80 in an immediate or a
 * displacement (the false positives of the old byte scan), at the given byte index (-1: none). */
static const struct {
	const char *hex;
	int pattern; /* index of a system-call byte pattern inside the instruction, or -1 */
} pool[] = {
	{ "48 89 c5", -1 },                      /* mov rbp, rax */
	{ "48 8b 44 24 08", -1 },                /* mov rax, [rsp+8] */
	{ "0f 1f 44 00 00", -1 },                /* nopl */
	{ "66 0f 1f 84 00 00 00 00 00", -1 },    /* nopw */
	{ "c5 f9 6f 04 07", -1 },                /* vmovdqa xmm0, [rdi+rax] (VEX2) */
	{ "62 f1 7c 48 28 44 24 01", -1 },       /* vmovaps zmm0, [rsp+0x40] (EVEX, disp8*N) */
	{ "48 b8 11 22 33 44 55 66 77 88", -1 }, /* movabs rax, imm64 */
	{ "83 7f 04 04", -1 },                   /* cmp dword [rdi+4], 4 */
	{ "41 ff d4", -1 },                      /* call r12 */
	{ "f7 c1 0f 05 00 00", 2 },              /* test ecx, 0x50f */
	{ "66 81 c1 0f 05", 3 },                 /* add cx, 0x50f */
	{ "c4 e3 79 0f c1 08", -1 },             /* vpalignr (VEX3 map 0F3A, imm8) */
	{ "b8 0f 05 00 00", 1 },                 /* mov eax, 0x50f: the bug's case */
	{ "48 8d 80 0f 34 00 00", 3 },           /* lea rax, [rax+0x340f] */
	{ "48 69 c0 cd 80 00 00", 3 },           /* imul rax, rax, 0x80cd */
	{ "66 b8 0f 05", 2 },                    /* mov ax, 0x50f */
	{ "48 b8 00 0f 05 00 0f 34 cd 80", 2 },  /* movabs rax, 0x80cd340f00050f00 */
	{ "c7 44 24 08 0f 05 0f 34", 4 },        /* mov dword [rsp+8], 0x340f050f */
	{ "8b 0f", -1 },                         /* mov ecx, [rdi] (0F is a ModRM byte) */
	{ "05 0f 05 00 00", 1 },                 /* add eax, 0x50f */
	{ "f6 c1 0f", -1 },                      /* test cl, 0xf */
	{ "f6 d1", -1 },                         /* not cl (F6 /2: no immediate) */
	{ "f7 d1", -1 },                         /* not ecx */
	{ "c8 0f 05 00", 1 },                    /* enter 0x50f, 0 */
	{ "0f 0f c1 b4", -1 },                   /* pfmul mm0, mm1 (3DNow!, imm8 suffix) */
	{ "a1 0f 05 00 00 00 00 00 00", 1 },     /* mov eax, [moffs64] */
	{ "67 a1 0f 05 00 00", 2 },              /* mov eax, [moffs32] */
	{ "66 0f 3a 0f c1 0f", -1 },             /* palignr xmm0, xmm1, 15 */
	{ "f3 0f 1e fa", -1 },                   /* endbr64 */
	{ "8b 04 25 0f 05 00 00", 3 },           /* mov eax, [0x50f] (SIB, no base) */
	{ "c5 fc 77", -1 },                      /* vzeroall (no ModRM) */
	{ "f0 48 0f b1 0f", -1 },                /* lock cmpxchg [rdi], rcx */
	{ "65 48 8b 04 25 28 00 00 00", -1 },    /* mov rax, gs:[0x28] */
	{ "48 6b c0 0f", -1 },                   /* imul rax, rax, 15 */
	{ "68 0f 05 00 00", 1 },                 /* push 0x50f */
	{ "66 68 0f 05", 2 },                    /* push word 0x50f */
	{ "0f ba e0 05", -1 },                   /* bt eax, 5 */
	{ "62 f3 7d 48 1f 44 24 01 05", -1 },    /* vpcmpd k0, zmm0, [rsp+0x40], 5 (EVEX map 0F3A) */
	{ "f2 0f 38 f1 c1", -1 },                /* crc32 eax, ecx */
	{ "c4 e2 fd 91 04 c8", -1 },             /* vpgatherqq (VEX3 map 0F38, SIB) */
	{ "cd 0f", -1 },                         /* int 0x0f */
};
enum { NPOOL = sizeof pool / sizeof pool[0] };

/* Parses a hex string into out; returns the byte count. */
static int unhex(const char *s, uint8_t *out)
{
	int n = 0;
	while (*s) {
		if (*s == ' ') {
			s++;
			continue;
		}
		unsigned v;
		sscanf(s, "%2x", &v);
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

SF_TEST(x86len_pool_lengths_and_truncation)
{
	for (int k = 0; k < NPOOL; k++) {
		uint8_t b[16];
		int n = unhex(pool[k].hex, b);
		sf_x86_insn in;
		int got = sf_x86_decode(b, (size_t)n, 0x1000, &in);
		if (got != n)
			fprintf(stderr, "  decoding %s\n", pool[k].hex);
		CHECK_INT(got, n);
		CHECK_INT(in.syscall, 0);
		/* one byte short: not a complete instruction */
		CHECK_INT(sf_x86_decode(b, (size_t)n - 1, 0x1000, &in), 0);
	}
}

SF_TEST(x86len_targets_and_syscalls)
{
	struct {
		const char *hex;
		int has_target;
		int64_t rel; /* target - address */
		int syscall;
	} t[] = {
		{ "e8 00 00 00 00", 1, 5, 0 },          /* call next */
		{ "e9 fb ff ff ff", 1, 0, 0 },          /* jmp self */
		{ "74 fe", 1, 0, 0 },                   /* je self */
		{ "eb 10", 1, 0x12, 0 },                /* jmp +16 */
		{ "e3 80", 1, 2 - 128, 0 },             /* jrcxz -128 */
		{ "0f 85 00 01 00 00", 1, 0x106, 0 },   /* jne rel32 */
		{ "48 8d 05 0f 05 00 00", 2, 7 + 0x50f, 0 }, /* lea rax, [rip+0x50f] */
		{ "c6 05 f0 ff ff ff cd", 2, 7 - 16, 0 },    /* mov byte [rip-16], 0xcd: imm after disp */
		{ "62 f2 7d 48 18 05 0f 05 00 00", 2, 10 + 0x50f, 0 }, /* EVEX RIP-relative */
		{ "c7 f8 00 02 00 00", 1, 0x206, 0 },   /* xbegin */
		{ "0f 05", 0, 0, 1 },                   /* syscall */
		{ "0f 34", 0, 0, 1 },                   /* sysenter */
		{ "cd 80", 0, 0, 1 },                   /* int 0x80 */
		{ "66 0f 05", 0, 0, 1 },                /* a prefixed syscall is one too */
		{ "48 0f 05", 0, 0, 1 },                /* REX.W syscall */
	};
	for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
		uint8_t b[16];
		int n = unhex(t[k].hex, b);
		sf_x86_insn in;
		uint64_t addr = 0x400000 + 0x10 * k;
		CHECK_INT(sf_x86_decode(b, (size_t)n, addr, &in), n);
		CHECK_INT(in.has_target, t[k].has_target);
		if (t[k].has_target)
			CHECK_INT((int64_t)(in.target - addr), t[k].rel);
		CHECK_INT(in.syscall, t[k].syscall);
	}
	/* invalid in 64-bit mode, or outside the tables: a failure, never a guess */
	const char *bad[] = { "06", "27", "9a 00 00 00 00 00 00", "d4 0a", "0f 04", "c4 e8 78 00 c0", "8f e9 78 e1 c0" };
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		uint8_t b[16];
		sf_x86_insn in;
		int n = unhex(bad[k], b);
		CHECK_INT(sf_x86_decode(b, (size_t)n, 0, &in), 0);
	}
}

/* Random code from the pool: writes up to cap bytes to buf, the instruction starts to starts[]
 * (1 at each), and returns the length. Always includes `mov eax, 0x50f` (the bug's case). */
static size_t random_code(uint64_t *s, uint8_t *buf, size_t cap, uint8_t *starts, int *n_insn, size_t *mov_at)
{
	size_t len = 0;
	int n = 20 + (int)(rnd(s) % 100), mov_k = (int)(rnd(s) % (uint64_t)n);
	memset(starts, 0, cap);
	for (int k = 0; k < n && len + 16 <= cap; k++) {
		int pick = k == mov_k ? 12 : (int)(rnd(s) % NPOOL);
		starts[len] = 1;
		if (k == mov_k)
			*mov_at = len;
		len += (size_t)unhex(pool[pick].hex, buf + len);
	}
	*n_insn = n;
	return len;
}

SF_TEST(x86scan_patterns_inside_instructions_are_not_syscalls)
{
	uint64_t s = sf_test_seed() ^ 0x783836ull;
	for (int trial = 0; trial < 300; trial++) {
		/* under 1200 bytes: the RIP-relative pool entries (disp 0x50f) point past the end */
		uint8_t buf[1200], starts[1200], got[1200];
		size_t mov_at = 0;
		int n;
		size_t len = random_code(&s, buf, sizeof buf, starts, &n, &mov_at);
		sf_x86_region r = { buf, len, 0x10000, 0x2000 };
		CHECK(sf_x86_sweep(&r, NULL, 0, got) == len);
		CHECK(memcmp(got, starts, len) == 0);
		/* the old byte scan would flag this buffer: the mov holds 0F 05 */
		CHECK(buf[mov_at + 1] == 0x0f && buf[mov_at + 2] == 0x05);
		sf_x86_finding f[4];
		CHECK_INT(sf_x86_scan(&r, 1, NULL, 0, NULL, 0, f, 4), 0);

		/* a real syscall between two instructions: flagged at its offset */
		size_t at;
		do
			at = (size_t)(rnd(&s) % len);
		while (!starts[at]);
		uint8_t b2[1204];
		memcpy(b2, buf, at);
		b2[at] = 0x0f;
		b2[at + 1] = 0x05;
		memcpy(b2 + at + 2, buf + at, len - at);
		sf_x86_region r2 = { b2, len + 2, 0x10000, 0x2000 };
		CHECK_INT(sf_x86_scan(&r2, 1, NULL, 0, NULL, 0, f, 4), 1);
		CHECK_INT(f[0].kind, SF_X86_SYSCALL);
		CHECK_INT(f[0].off, 0x2000 + at);

		/* a symbol inside the mov (objdump-style restart): its bytes decode as a syscall */
		uint64_t sym = 0x10000 + mov_at + 1;
		CHECK_INT(sf_x86_scan(&r, 1, &sym, 1, NULL, 0, f, 4), 1);
		CHECK_INT(f[0].kind, SF_X86_SYSCALL);
		CHECK_INT(f[0].off, 0x2000 + mov_at + 1);

		/* a code pointer held in data (a relocation addend) into the mov: flagged; to it: not */
		uint64_t ptr = 0x10000 + mov_at + 1;
		CHECK_INT(sf_x86_scan(&r, 1, NULL, 0, &ptr, 1, f, 4), 1);
		CHECK_INT(f[0].kind, SF_X86_MIDDLE);
		CHECK_INT(f[0].where, 0x2000 + mov_at + 1);
		ptr = 0x10000 + mov_at;
		CHECK_INT(sf_x86_scan(&r, 1, NULL, 0, &ptr, 1, f, 4), 0);
	}
}

SF_TEST(x86scan_branch_into_an_instruction)
{
	uint64_t s = sf_test_seed() ^ 0x6a6d70ull;
	for (int trial = 0; trial < 300; trial++) {
		uint8_t buf[1300], starts[1300];
		size_t mov_at = 0;
		int n;
		size_t len = random_code(&s, buf, 1200, starts, &n, &mov_at);
		/* append a jmp rel32 / jcc rel32 / lea [rip+d] to the 0F 05 inside the mov, or, as the
		 * control, to the mov itself */
		int form = (int)(rnd(&s) % 3), into = (int)(rnd(&s) % 2);
		size_t j = len, tail = form == 2 ? 7 : form == 1 ? 6 : 5;
		if (form == 0)
			buf[j++] = 0xe9;
		else if (form == 1) {
			buf[j++] = 0x0f;
			buf[j++] = (uint8_t)(0x80 + rnd(&s) % 16);
		} else {
			buf[j++] = 0x48;
			buf[j++] = 0x8d;
			buf[j++] = 0x05;
		}
		int32_t rel = (int32_t)((int64_t)(mov_at + (size_t)into) - (int64_t)(len + tail));
		for (int b = 0; b < 4; b++)
			buf[j++] = (uint8_t)((uint32_t)rel >> (8 * b));
		sf_x86_region r = { buf, j, 0x7000, 0x500 };
		sf_x86_finding f[4];
		int got = sf_x86_scan(&r, 1, NULL, 0, NULL, 0, f, 4);
		CHECK_INT(got, into);
		if (into && got == 1) {
			CHECK_INT(f[0].kind, SF_X86_MIDDLE);
			CHECK_INT(f[0].off, 0x500 + mov_at + 1);
			CHECK_INT(f[0].where, 0x500 + mov_at + 1);
		}
	}
}

SF_TEST(x86scan_undecodable_bytes_fall_back_to_the_byte_scan)
{
	uint64_t s = sf_test_seed() ^ 0x756e64ull;
	for (int trial = 0; trial < 100; trial++) {
		uint8_t buf[1300], starts[1300];
		size_t mov_at = 0;
		int n;
		size_t len = random_code(&s, buf, 1200, starts, &n, &mov_at);
		/* an invalid opcode (06: push es) at a random instruction start before the mov: the
		 * mov's 0F 05 after it is flagged by the byte scan; after the mov: nothing is flagged
		 * unless the rest holds a pattern */
		size_t at;
		do
			at = (size_t)(rnd(&s) % len);
		while (!starts[at]);
		buf[at] = 0x06;
		sf_x86_region r = { buf, len, 0x7000, 0x500 };
		uint8_t got[1300];
		CHECK(sf_x86_sweep(&r, NULL, 0, got) == at);
		sf_x86_finding f[4];
		int c = sf_x86_scan(&r, 1, NULL, 0, NULL, 0, f, 4);
		/* the first byte pattern at or after the failure, if any, is the first finding; the bytes
		 * decoded after the failure may name branch targets too (garbage, but followed: further
		 * findings can only be branches into an instruction) */
		size_t first = len;
		for (size_t k = at; k + 1 < len && first == len; k++)
			if ((buf[k] == 0x0f && (buf[k + 1] == 0x05 || buf[k + 1] == 0x34)) ||
			    (buf[k] == 0xcd && buf[k + 1] == 0x80))
				first = k;
		if (at < mov_at)
			CHECK(first < len);
		if (first < len) {
			CHECK(c >= 1);
			CHECK_INT(f[0].kind, SF_X86_UNDECODED);
			CHECK_INT(f[0].off, 0x500 + first);
			CHECK_INT(f[0].where, 0x500 + at);
		}
		for (int k = first < len; k < c && k < 4; k++)
			CHECK_INT(f[k].kind, SF_X86_MIDDLE);
	}
}

SF_TEST(x86scan_branch_after_a_decoder_failure_is_followed)
{
	/* undecodable bytes, then a jump back into the mov's 0F 05: the byte scan covers only what
	 * follows the failure, so the jump's target must still be followed */
	uint64_t s = sf_test_seed() ^ 0x616674ull;
	for (int trial = 0; trial < 100; trial++) {
		uint8_t buf[1300], starts[1300];
		size_t mov_at = 0;
		int n;
		size_t len = random_code(&s, buf, 1200, starts, &n, &mov_at);
		size_t j = len;
		buf[j++] = 0x06; /* push es: invalid in 64-bit mode */
		buf[j++] = 0xe9;
		int32_t rel = (int32_t)((int64_t)mov_at + 1 - (int64_t)(j + 4));
		for (int b = 0; b < 4; b++)
			buf[j++] = (uint8_t)((uint32_t)rel >> (8 * b));
		sf_x86_region r = { buf, j, 0x9000, 0x40 };
		sf_x86_finding f[4];
		int c = sf_x86_scan(&r, 1, NULL, 0, NULL, 0, f, 4), middle = 0;
		for (int k = 0; k < c && k < 4; k++)
			middle |= f[k].kind == SF_X86_MIDDLE && f[k].off == 0x40 + mov_at + 1;
		CHECK(middle);
	}
}

SF_TEST(x86len_random_bytes_stay_in_bounds)
{
	/* garbage: each decode reads only its avail bytes (exact-size buffers: the sanitizer build
	 * sees any over-read) and returns 0 or a length within them; the scan of garbage ends */
	uint64_t s = sf_test_seed() ^ 0x726e64ull;
	for (int trial = 0; trial < 3000; trial++) {
		size_t n = 1 + (size_t)(rnd(&s) % 24);
		uint8_t *b = malloc(n);
		if (!b)
			return;
		for (size_t k = 0; k < n; k++) /* bias to prefixes and escapes now and then */
			b[k] = (uint8_t)(rnd(&s) % 4 ? rnd(&s) : (uint64_t)"\x0f\x66\x48\xc4\xc5\x62\x9b\xf3"[rnd(&s) % 8]);
		for (size_t k = 0; k < n; k++) {
			sf_x86_insn in;
			int l = sf_x86_decode(b + k, n - k, k, &in);
			CHECK(l >= 0 && (size_t)l <= n - k && l <= 15);
			CHECK(l > 0 || in.len == 0);
		}
		free(b);
	}
	enum { G = 8192 };
	uint8_t *g = malloc(G);
	if (!g)
		return;
	for (size_t k = 0; k < G; k++)
		g[k] = (uint8_t)rnd(&s);
	sf_x86_region r = { g, G, 0x100000, 0 };
	sf_x86_finding f[4];
	uint64_t ptr = 0x100000 + rnd(&s) % G;
	CHECK(sf_x86_scan(&r, 1, &ptr, 1, &ptr, 1, f, 4) >= 0);
	free(g);
}
