/*
 * x86len.h - an x86-64 instruction-length decoder and the code scan built on it (docs/security.md,
 * "raw system calls").
 *
 * sf_x86_decode finds the length of one 64-bit-mode instruction (legacy prefixes, REX, VEX, EVEX,
 * the 1-byte, 0F, 0F38 and 0F3A opcode maps, ModRM/SIB/displacement, immediates), whether it is a
 * system call (syscall, sysenter, int 0x80), and the address a direct branch or a RIP-relative
 * operand names. It does not name the instruction; it only needs to know where the next one starts.
 *
 * sf_x86_scan sweeps executable regions linearly (from each region's start and from every extra
 * start address, e.g. function symbols, as objdump does) and reports system calls that are
 * instructions, plus direct-branch / RIP-relative targets (and code pointers held in data) that
 * land inside an instruction whose bytes from there decode to a system call. Where the decoder fails, the rest of the region is
 * scanned byte by byte for the system-call patterns (never a silent pass).
 */
#ifndef SF_X86LEN_H
#define SF_X86LEN_H

#include <stddef.h>
#include <stdint.h>

typedef struct sf_x86_insn {
	int len;          /* bytes, 1..15 */
	int syscall;      /* 1: syscall (0F 05), sysenter (0F 34) or int 0x80 (CD 80) */
	int has_target;   /* 1: direct branch (rel8/rel32), 2: RIP-relative memory operand or LEA */
	uint64_t target;  /* the address it names (valid when has_target) */
} sf_x86_insn;

/* Decodes the instruction at p (avail bytes readable) located at address addr. Returns its length
 * (1..15) and fills *out, or 0 when the bytes are not a complete instruction this decoder knows
 * (an invalid or unknown opcode, or the end of the buffer inside the instruction). */
int sf_x86_decode(const uint8_t *p, size_t avail, uint64_t addr, sf_x86_insn *out);

/* One executable region: its bytes, its virtual address and its file offset (for messages). */
typedef struct sf_x86_region {
	const uint8_t *bytes;
	size_t size;
	uint64_t addr;
	uint64_t file_off;
} sf_x86_region;

enum {
	SF_X86_SYSCALL = 1,   /* a system call decoded at an instruction boundary */
	SF_X86_UNDECODED = 2, /* the pattern in bytes after a decoder failure (where = the failure) */
	SF_X86_MIDDLE = 3,    /* a branch/RIP-relative target inside an instruction leads to one */
};

typedef struct sf_x86_finding {
	int kind;       /* SF_X86_* */
	uint64_t off;   /* file offset of the system-call bytes */
	uint64_t where; /* UNDECODED: file offset where decoding failed; MIDDLE: of the target */
} sf_x86_finding;

/* Marks instruction starts of region r in starts_out (r->size bytes: 1 an instruction start, 2 a
 * byte where the decoder failed, 0 otherwise) by a linear
 * sweep from the region start and from each address of extra[0..nextra) inside it; each sweep runs
 * until the next start point; where the decoder fails it goes on at the next byte, as objdump does.
 * Returns the offset in the region where decoding first failed, or r->size when it never failed. */
size_t sf_x86_sweep(const sf_x86_region *r, const uint64_t *extra, size_t nextra, uint8_t *starts_out);

/* Scans regions r[0..nr) as described atop; extra start addresses as for sf_x86_sweep. ptrs[0..nptrs)
 * are further addresses control may reach that no instruction names (code pointers stored in
 * data: relocation addends); they are checked like branch targets. Writes at most maxf findings to
 * f (at most one of each kind per region) and returns how many it found (possibly more than maxf),
 * or -1 when memory runs out. */
int sf_x86_scan(const sf_x86_region *r, int nr, const uint64_t *extra, size_t nextra, const uint64_t *ptrs,
		size_t nptrs, sf_x86_finding *f, int maxf);

/* Appends v to the growing address list *a (*n used, *cap allocated; *a NULL and both 0 to start, the
 * caller frees *a). Returns 0, or -1 without memory (the list is left as it was). */
int sf_x86_push(uint64_t **a, size_t *n, size_t *cap, uint64_t v);

#endif
