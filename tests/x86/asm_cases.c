/*
 * tests/x86/asm_cases.c - shared objects for tests/suites/x86len.sh, built with -DCASE=N:
 *   1: honest code whose immediates and displacements hold 0F 05, 0F 34 and CD 80 (the old byte
 *      scan rejected such a build): must pass the import check;
 *   2: the same plus a real `syscall` instruction: must be flagged;
 *   3: a `mov eax, 0x50f` that a jump enters at its second byte (0F 05: a syscall hidden inside an
 *      instruction): must be flagged as a branch into the middle of an instruction;
 *   4: the same hidden bytes reached by a RIP-relative LEA and an indirect jump: flagged too;
 *   5: ... reached through a code pointer in data (a relocation, no instruction names it): flagged.
 * The functions are never called; only their bytes matter.
 */
#ifndef CASE
#error "build with -DCASE=1..5"
#endif

__asm__(".text\n"
	".globl sfx_case\n"
	".type sfx_case, @function\n"
	"sfx_case:\n"
	"	movl $0x50f, %eax\n"
	"	leaq 0x340f(%rax), %rcx\n"
	"	imulq $0x80cd, %rcx, %rdx\n"
	"	movabsq $0x80cd340f00050f00, %rsi\n"
	"	testl $0x50f, %edi\n"
#if CASE == 2
	"	syscall\n"
#elif CASE == 3
	"	jmp .Lmid\n"
	"	.byte 0xb8\n"
	".Lmid:\n"
	"	.byte 0x0f, 0x05, 0x00, 0x00\n"
#elif CASE == 4
	"	leaq .Lmid(%rip), %rax\n"
	"	jmp *%rax\n"
	"	.byte 0xb8\n"
	".Lmid:\n"
	"	.byte 0x0f, 0x05, 0x00, 0x00\n"
#elif CASE == 5
	"	.byte 0xb8\n"
	".Lmid:\n"
	"	.byte 0x0f, 0x05, 0x00, 0x00\n"
#endif
	"	ret\n"
	".size sfx_case, .-sfx_case\n"
#if CASE == 5
	".section .data.rel.ro,\"aw\"\n"
	".globl sfx_case_ptr\n"
	"sfx_case_ptr: .quad .Lmid\n"
	".text\n"
#endif
);
