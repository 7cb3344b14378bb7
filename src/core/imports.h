/*
 * imports.h - the static check of a built candidate (docs/security.md, "static import check").
 *
 * Before a candidate's shared object is run, the parent reads its ELF dynamic section and symbol
 * table (no tool, no loading): the libraries it needs, the functions it imports and the functions
 * it exports. A candidate must not import what a kernel has no use for and a cheat needs (dynamic
 * loading, process and thread control beyond pthreads, memory protection, sockets, profiler and
 * event-timing APIs, file opening, signal handlers, the persisting-L2 controls), must not export
 * functions that would shadow the timers, CUPTI or the runner, must not need a library outside an
 * allow-list, and must not carry a raw system-call instruction in its executable sections.
 *
 * A solution may declare what it needs on comment lines of its source:
 *     // solforge-allow: fopen, cudaStreamSetAttribute
 * in the solution's file or a file it includes. Each declared name is then allowed; a raw system call is declared with
 * the name `syscall-instruction`, a library with `lib:NAME` (e.g. lib:libnvrtc.so.12).
 */
#ifndef SF_IMPORTS_H
#define SF_IMPORTS_H

#include <stddef.h>

/* Checks so_path; sources (a NULL-terminated list, may be NULL: the solution's files, its local
 * includes too) are read for solforge-allow declarations. Returns 0 when clean, 1 when a rule is
 * broken (why says which, and what to declare), -1 when the file cannot be read as a 64-bit ELF
 * shared object (why says so). */
int sf_imports_check(const char *so_path, const char *const *sources, char *why, size_t whylen);

#endif
