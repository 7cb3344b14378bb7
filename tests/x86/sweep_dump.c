/*
 * tests/x86/sweep_dump.c - prints the instruction starts that the code scan's sweep (x86len.h)
 * finds in one section of an ELF file, for tests/suites/x86len.sh to compare with objdump.
 *
 * Usage: sweep_dump FILE SECTION [LO:HI ...] (hex address ranges: print only the starts inside
 * them). Output: one line per instruction start, the address in lower-case hex without 0x, then
 * " bad" where the decoder failed (the sweep goes on at the next byte, as objdump does, whose
 * "(bad)" lines these match); last a line "FAIL ADDR" for the first failure.
 * The sweep restarts at the same symbols as the import check (functions and untyped labels of
 * .symtab and .dynsym).
 */
#include "core/util.h"
#include "core/x86len.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: sweep_dump FILE SECTION [LO:HI ...]\n");
		return 2;
	}
	char *text, err[SF_ERRLEN];
	size_t len;
	if (sf_read_file(argv[1], &text, &len, err, sizeof err)) {
		fprintf(stderr, "sweep_dump: cannot read %s: %s\n", argv[1], err);
		return 2;
	}
	const uint8_t *d = (const uint8_t *)text;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)d;
	if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > len) {
		fprintf(stderr, "sweep_dump: %s is not an ELF file with section headers\n", argv[1]);
		return 2;
	}
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(d + eh->e_shoff);
	const Elf64_Shdr *names = &sh[eh->e_shstrndx];
	uint64_t *syms = NULL;
	size_t ns = 0;
	const Elf64_Shdr *sec = NULL;
	for (int i = 0; i < eh->e_shnum; i++) {
		if (!strcmp((const char *)d + names->sh_offset + sh[i].sh_name, argv[2]))
			sec = &sh[i];
		if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM)
			continue;
		const Elf64_Sym *sym = (const Elf64_Sym *)(d + sh[i].sh_offset);
		size_t n = sh[i].sh_size / sizeof *sym;
		uint64_t *t = realloc(syms, (ns + n) * sizeof *t);
		if (!t)
			return 2;
		syms = t;
		for (size_t j = 1; j < n; j++) {
			int type = ELF64_ST_TYPE(sym[j].st_info);
			if (sym[j].st_shndx != SHN_UNDEF && sym[j].st_shndx < SHN_LORESERVE && sym[j].st_value &&
			    (type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE))
				syms[ns++] = sym[j].st_value;
		}
	}
	if (!sec || sec->sh_type != SHT_PROGBITS || sec->sh_offset + sec->sh_size > len) {
		fprintf(stderr, "sweep_dump: %s has no section %s with contents\n", argv[1], argv[2]);
		return 2;
	}
	sf_x86_region r = { d + sec->sh_offset, sec->sh_size, sec->sh_addr, sec->sh_offset };
	uint8_t *starts = malloc(r.size ? r.size : 1);
	if (!starts)
		return 2;
	size_t fail = sf_x86_sweep(&r, syms, ns, starts);
	for (int k = 3; k <= argc; k++) {
		unsigned long long lo = r.addr, hi = r.addr + r.size;
		if (k == argc && argc > 3)
			break;
		if (k < argc && sscanf(argv[k], "%llx:%llx", &lo, &hi) != 2) {
			fprintf(stderr, "sweep_dump: bad range %s (want LO:HI in hex)\n", argv[k]);
			return 2;
		}
		for (uint64_t a = lo; a < hi; a++)
			if (a >= r.addr && a - r.addr < r.size && starts[a - r.addr])
				printf("%llx%s\n", (unsigned long long)a, starts[a - r.addr] == 2 ? " bad" : "");
	}
	if (fail < r.size)
		printf("FAIL %llx\n", (unsigned long long)(r.addr + fail));
	free(starts);
	free(syms);
	free(text);
	return 0;
}
