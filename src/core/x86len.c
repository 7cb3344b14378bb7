/*
 * x86len.c - the x86-64 instruction-length decoder (see x86len.h). The code scan that uses it is in
 * x86scan.c.
 *
 * An instruction in 64-bit mode is: legacy prefixes (66 67 F0 F2 F3 2E 36 3E 26 64 65), an optional
 * REX byte (40-4F), then either a legacy opcode (1 byte, 0F xx, 0F 38 xx or 0F 3A xx) or a VEX
 * (C5 + 1 byte, C4 + 2 bytes) / EVEX (62 + 3 bytes) prefix and an opcode in the map it selects;
 * then a ModRM byte (with a SIB byte and a 1- or 4-byte displacement) when the opcode has one, then
 * the immediate. The tables below give, per opcode, whether a ModRM byte follows and which
 * immediate; the few opcodes whose length depends on more (F6/F7 /0, A0-A3, C8, B8-BF) are handled
 * in code.
 */
#include "core/x86len.h"

#include <string.h>

/* Table flags. */
enum {
	M = 0x01,   /* a ModRM byte follows */
	I8 = 0x02,  /* 1-byte immediate */
	IZ = 0x04,  /* 2-byte immediate with the 66 prefix, else 4 */
	IV = 0x08,  /* 8-byte immediate with REX.W, else as IZ (mov r, imm: B8-BF) */
	I16 = 0x10, /* 2-byte immediate (ret/retf imm16; ENTER has I16|I8) */
	J = 0x20,   /* the immediate is a branch displacement: J|I8 rel8, J|IZ rel32 (always 4 bytes) */
	X = 0x80,   /* invalid in 64-bit mode, or a prefix/escape handled before the table */
};

/* The 1-byte opcode map. */
static const uint8_t map1[256] = {
	/* 00-07: add r/m,r / r,r/m (M) ; al,ib ; eax,iz ; 06/07 push/pop es: invalid */
	M, M, M, M, I8, IZ, X, X,
	/* 08-0F: or ... ; 0E push cs: invalid ; 0F: escape */
	M, M, M, M, I8, IZ, X, X,
	/* 10-1F: adc, sbb (16/17 1E/1F push/pop ss/ds invalid) */
	M, M, M, M, I8, IZ, X, X, M, M, M, M, I8, IZ, X, X,
	/* 20-2F: and, sub (26 2E segment prefixes, 27 2F daa/das invalid) */
	M, M, M, M, I8, IZ, X, X, M, M, M, M, I8, IZ, X, X,
	/* 30-3F: xor, cmp (36 3E segment prefixes, 37 3F aaa/aas invalid) */
	M, M, M, M, I8, IZ, X, X, M, M, M, M, I8, IZ, X, X,
	/* 40-4F: REX prefixes */
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	/* 50-5F: push/pop r64 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 60 61 invalid, 62 EVEX, 63 movsxd, 64-67 prefixes, 68 push iz, 69 imul r,r/m,iz, 6A push ib,
	 * 6B imul r,r/m,ib, 6C-6F ins/outs */
	X, X, X, M, X, X, X, X, IZ, M | IZ, I8, M | I8, 0, 0, 0, 0,
	/* 70-7F: jcc rel8 */
	J | I8, J | I8, J | I8, J | I8, J | I8, J | I8, J | I8, J | I8,
	J | I8, J | I8, J | I8, J | I8, J | I8, J | I8, J | I8, J | I8,
	/* 80 grp1 r/m,ib ; 81 r/m,iz ; 82 invalid ; 83 r/m,ib ; 84-8F test/xchg/mov/lea/mov sreg/pop r/m */
	M | I8, M | IZ, X, M | I8, M, M, M, M, M, M, M, M, M, M, M, M,
	/* 90-9F: xchg/nop, cbw, cwd, (9A far call invalid), fwait, pushf, popf, sahf, lahf */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, X, 0, 0, 0, 0, 0,
	/* A0-A3 mov moffs (in code), A4-A7 movs/cmps, A8 test al,ib, A9 test eax,iz, AA-AF stos/lods/scas */
	X, X, X, X, 0, 0, 0, 0, I8, IZ, 0, 0, 0, 0, 0, 0,
	/* B0-B7 mov r8,ib ; B8-BF mov r,iv */
	I8, I8, I8, I8, I8, I8, I8, I8, IV, IV, IV, IV, IV, IV, IV, IV,
	/* C0 C1 shift r/m,ib ; C2 ret iw ; C3 ret ; C4 C5 VEX ; C6 mov r/m,ib ; C7 mov r/m,iz ;
	 * C8 enter iw,ib ; C9 leave ; CA retf iw ; CB retf ; CC int3 ; CD int ib ; CE into invalid ; CF iret */
	M | I8, M | I8, I16, 0, X, X, M | I8, M | IZ, I16 | I8, 0, I16, 0, 0, I8, X, 0,
	/* D0-D3 shift r/m,1/cl ; D4-D6 invalid ; D7 xlat ; D8-DF x87 */
	M, M, M, M, X, X, X, 0, M, M, M, M, M, M, M, M,
	/* E0-E3 loopne/loope/loop/jrcxz rel8 ; E4-E7 in/out ib ; E8 call rel32 ; E9 jmp rel32 ;
	 * EA invalid ; EB jmp rel8 ; EC-EF in/out dx */
	J | I8, J | I8, J | I8, J | I8, I8, I8, I8, I8, J | IZ, J | IZ, X, J | I8, 0, 0, 0, 0,
	/* F0 lock ; F1 int1 ; F2 F3 rep ; F4 hlt ; F5 cmc ; F6 F7 grp3 (test imm in code) ; F8-FD flags ;
	 * FE FF grp4/5 */
	X, 0, X, X, 0, 0, M, M, 0, 0, 0, 0, 0, 0, M, M,
};

/* The two-byte map 0F xx (also VEX/EVEX map 1, where only M and I8 entries are valid, and 77). */
static const uint8_t map0f[256] = {
	/* 00-03 grp6/grp7/lar/lsl ; 04 invalid ; 05 syscall ; 06 clts ; 07 sysret ; 08 invd ; 09 wbinvd ;
	 * 0A invalid ; 0B ud2 ; 0C invalid ; 0D prefetch ; 0E femms ; 0F 3DNow! (ModRM, then an imm8 suffix) */
	M, M, M, M, X, 0, 0, 0, 0, 0, X, 0, X, M, 0, M | I8,
	/* 10-1F: SSE moves, prefetch/hint nops, endbr (F3 0F 1E FA), nop r/m */
	M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
	/* 20-23 mov cr/dr ; 24-27 invalid ; 28-2F SSE */
	M, M, M, M, X, X, X, X, M, M, M, M, M, M, M, M,
	/* 30 wrmsr ; 31 rdtsc ; 32 rdmsr ; 33 rdpmc ; 34 sysenter ; 35 sysexit ; 36 invalid ; 37 getsec ;
	 * 38 3A escapes ; others invalid */
	0, 0, 0, 0, 0, 0, X, 0, X, X, X, X, X, X, X, X,
	/* 40-4F cmovcc ; 50-6F SSE/MMX */
	M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
	M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
	M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
	/* 70 pshuf ib ; 71-73 shift groups ib ; 74-76 pcmpeq ; 77 emms/vzeroupper ; 78-7F */
	M | I8, M | I8, M | I8, M | I8, M, M, M, 0, M, M, M, M, M, M, M, M,
	/* 80-8F jcc rel32 */
	J | IZ, J | IZ, J | IZ, J | IZ, J | IZ, J | IZ, J | IZ, J | IZ,
	J | IZ, J | IZ, J | IZ, J | IZ, J | IZ, J | IZ, J | IZ, J | IZ,
	/* 90-9F setcc (VEX: kmov/kortest) */
	M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
	/* A0 A1 push/pop fs ; A2 cpuid ; A3 bt ; A4 shld ib ; A5 shld cl ; A6 A7 invalid ; A8 A9 push/pop gs ;
	 * AA rsm ; AB bts ; AC shrd ib ; AD shrd cl ; AE grp15 (fences, xsave, ldmxcsr) ; AF imul */
	0, 0, 0, M, M | I8, M, X, X, 0, 0, 0, M, M | I8, M, M, M,
	/* B0-B9 cmpxchg, lss, btr, lfs, lgs, movzx, popcnt, ud1 ; BA grp8 ib ; BB-BF btc, bsf, bsr, movsx */
	M, M, M, M, M, M, M, M, M, M, M | I8, M, M, M, M, M,
	/* C0 C1 xadd ; C2 cmpps ib ; C3 movnti ; C4 pinsrw ib ; C5 pextrw ib ; C6 shufps ib ; C7 grp9 ;
	 * C8-CF bswap */
	M, M, M | I8, M, M | I8, M | I8, M | I8, M, 0, 0, 0, 0, 0, 0, 0, 0,
	/* D0-FF: SSE/MMX (FF ud0) */
	M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
	M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
	M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
};

/* Reads a little-endian signed value of n bytes (1, 2 or 4). */
static int64_t sread(const uint8_t *p, int n)
{
	if (n == 1)
		return (int8_t)p[0];
	if (n == 2)
		return (int16_t)(uint16_t)(p[0] | p[1] << 8);
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* The ModRM byte at p[i] and what follows it (SIB, displacement). Returns the new index or -1 when
 * the buffer ends; sets *rip_disp to the index of a RIP-relative disp32 (mod 00, rm 101), else -1. */
static int modrm(const uint8_t *p, size_t avail, int i, int *rip_disp)
{
	*rip_disp = -1;
	if ((size_t)i >= avail)
		return -1;
	int m = p[i++];
	int mod = m >> 6, rm = m & 7;
	if (mod == 3)
		return i;
	int disp = mod == 1 ? 1 : mod == 2 ? 4 : 0;
	if (rm == 4) { /* SIB; base 101 with mod 00: disp32, no base */
		if ((size_t)i >= avail)
			return -1;
		if (mod == 0 && (p[i] & 7) == 5)
			disp = 4;
		i++;
	} else if (mod == 0 && rm == 5) {
		disp = 4;
		*rip_disp = i;
	}
	return (size_t)i + (size_t)disp <= avail ? i + disp : -1;
}

int sf_x86_decode(const uint8_t *p, size_t avail, uint64_t addr, sf_x86_insn *out)
{
	memset(out, 0, sizeof *out);
	if (avail > 15)
		avail = 15;
	/* fwait before fnstcw/fnstenv (D9 /7 /6), fnstsw/fnsave (DD /7 /6), fnclex/fninit (DB E2/E3),
	 * fnstsw ax (DF E0): one instruction for objdump (fstcw, ...), so one here too */
	if (avail >= 3 && p[0] == 0x9b &&
	    (((p[1] == 0xd9 || p[1] == 0xdd) && (p[2] >> 6) != 3 && ((p[2] >> 3) & 7) >= 6) ||
	     (p[1] == 0xdb && (p[2] == 0xe2 || p[2] == 0xe3)) || (p[1] == 0xdf && p[2] == 0xe0))) {
		int n = sf_x86_decode(p + 1, avail - 1, addr + 1, out);
		if (n)
			out->len = n + 1;
		return out->len;
	}
	int i = 0, opsize16 = 0, adsize32 = 0, rexw = 0;
	/* legacy prefixes, then REX (a REX byte followed by another prefix is ignored) */
	for (;; i++) {
		if ((size_t)i >= avail)
			return 0;
		uint8_t b = p[i];
		if ((b & 0xf0) == 0x40) {
			/* a REX byte not just before the opcode: ignored by the CPU; objdump lists it as an
			 * instruction of its own (rex.W ...), and so does this decoder */
			if ((size_t)i + 1 < avail && ((p[i + 1] & 0xf0) == 0x40 || p[i + 1] == 0x66 || p[i + 1] == 0x67 ||
			    memchr("\xf0\xf2\xf3\x2e\x36\x3e\x26\x64\x65", p[i + 1], 9))) {
				out->len = i + 1;
				return out->len;
			}
			rexw = (b >> 3) & 1;
			continue;
		}
		if (b == 0x66)
			opsize16 = 1;
		else if (b == 0x67)
			adsize32 = 1;
		else if (!memchr("\xf0\xf2\xf3\x2e\x36\x3e\x26\x64\x65", b, 9))
			break;
		rexw = 0;
	}
	uint8_t op = p[i++];
	int flags, map = 0, vex = 0; /* map: 0 one-byte, 1 0F, 2 0F38, 3 0F3A (5, 6: EVEX FP16 maps) */
	if (op == 0xc4 || op == 0xc5 || op == 0x62) {
		/* VEX3: C4 [RXB mmmmm] [W vvvv L pp] op ; VEX2: C5 [R vvvv L pp] op ; EVEX: 62 P0 P1 P2 op
		 * (in 64-bit mode these bytes are always VEX/EVEX: LES, LDS and BOUND are invalid) */
		int evex = op == 0x62, extra = op == 0xc5 ? 1 : op == 0xc4 ? 2 : 3;
		if ((size_t)(i + extra) >= avail)
			return 0;
		map = op == 0xc5 ? 1 : op == 0xc4 ? (p[i] & 0x1f) : (p[i] & 0x07);
		if (op != 0xc5)
			rexw = p[i + 1] >> 7;
		i += extra;
		vex = 1;
		op = p[i++];
		if (map == 1) {
			if (!(map0f[op] & M) && op != 0x77)
				return 0;
			flags = map0f[op] & (M | I8);
		} else if (map == 2 || (evex && (map == 5 || map == 6))) {
			flags = M; /* 0F38, EVEX maps 5/6 (FP16): ModRM, no immediate */
		} else if (map == 3) {
			flags = M | I8; /* 0F3A: ModRM and imm8 */
		} else {
			return 0; /* reserved maps */
		}
	} else if (op == 0x0f) {
		if ((size_t)i >= avail)
			return 0;
		op = p[i++];
		if (op == 0x38 || op == 0x3a) {
			map = op == 0x38 ? 2 : 3;
			if ((size_t)i >= avail)
				return 0;
			op = p[i++];
			flags = map == 2 ? M : M | I8;
		} else {
			map = 1;
			flags = map0f[op];
		}
	} else {
		flags = map1[op];
	}
	if (flags & X) {
		if (map == 0 && op >= 0xa0 && op <= 0xa3) { /* mov al/eax, moffs: an address-sized offset */
			int n = adsize32 ? 4 : 8;
			if ((size_t)(i + n) > avail)
				return 0;
			out->len = i + n;
			return out->len;
		}
		return 0;
	}
	int rip = -1;
	if (flags & M) {
		if (map == 0 && op == 0x8f && (size_t)i < avail && (p[i] & 0x38))
			return 0; /* 8F /1-7: AMD XOP, not decoded */
		int mi = i;
		i = modrm(p, avail, i, &rip);
		if (i < 0)
			return 0;
		int reg = (p[mi] >> 3) & 7, mod = p[mi] >> 6;
		/* FE: only /0 /1 (inc, dec) ; FF /7 undefined, FF /3 /5 (far call/jmp) need memory */
		if (map == 0 && ((op == 0xfe && reg >= 2) || (op == 0xff && (reg == 7 || ((reg == 3 || reg == 5) && mod == 3)))))
			return 0;
		if (map == 0 && (op == 0xf6 || op == 0xf7) && reg <= 1) /* test r/m, imm */
			flags |= op == 0xf6 ? I8 : IZ;
		if (map == 0 && op == 0xc7 && p[mi] == 0xf8) /* xbegin rel32 */
			flags |= J;
	}
	int imm = 0;
	if (flags & I16)
		imm += 2;
	if (flags & I8)
		imm += 1;
	if (flags & IZ)
		imm += (opsize16 && !(flags & J)) ? 2 : 4;
	if (flags & IV)
		imm += rexw ? 8 : opsize16 ? 2 : 4;
	if ((size_t)(i + imm) > avail)
		return 0;
	int immpos = i;
	i += imm;
	out->len = i;
	if (flags & J) {
		out->has_target = 1;
		out->target = addr + (uint64_t)i + (uint64_t)sread(p + immpos, imm);
	} else if (rip >= 0) {
		out->has_target = 2;
		out->target = addr + (uint64_t)i + (uint64_t)sread(p + rip, 4);
	}
	if (!vex && ((map == 1 && (op == 0x05 || op == 0x34)) || (map == 0 && op == 0xcd && p[immpos] == 0x80)))
		out->syscall = 1;
	return i;
}
