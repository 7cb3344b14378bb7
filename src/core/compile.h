/*
 * compile.h - building shared objects through a content-addressed cache.
 *
 * The cache key is the SHA-256 of: the kind of object, the compiler command (with the output path
 * left out), the toolchain's own version text, and the contents of every file the build reads
 * (the source, the headers of include/solforge, a wrapper). An unchanged solution therefore
 * compiles nothing the second time. Objects land in the cache folder as <key>.so with the compiler
 * output in <key>.log; a build writes to a temporary name and renames, so concurrent evaluations
 * sharing a cache never see half an object.
 */
#ifndef SF_COMPILE_H
#define SF_COMPILE_H

#include "core/spawn.h"

typedef struct sf_build {
	char *so_path;   /* the object (caller frees) */
	int cached;      /* 1 when found in the cache */
	double seconds;  /* compile wall time (0 when cached) */
	char *log;       /* compiler output (caller frees) */
} sf_build;

/* The cache folder: $SOLFORGE_CACHE, else $XDG_CACHE_HOME/solforge, else ~/.cache/solforge. */
char *sf_cache_dir(void);

/* Builds with cmd, where the argument "@OUT@" stands for the output path. key_files: NULL-terminated.
 * The cache key is the kind, the command, the compiler's --version text and every key file's path
 * and content, with the checkout's and the working folder's absolute paths replaced by tokens (so a
 * cache built in one checkout serves another at a different path: tools/prebuild_cache.sh).
 * Returns 0 with *b filled; -1 when the compiler failed (b->log holds its output) or could not run. */
int sf_build_cached(const char *kind, const sf_argv *cmd, const char *const *key_files, double timeout_s, sf_build *b,
		    char *err, size_t errlen);
void sf_build_free(sf_build *b);

/* The solforge source tree holding include/ and src/runner/ (found from the executable's location
 * or $SOLFORGE_HOME). Caller frees. */
char *sf_home(void);

#endif
