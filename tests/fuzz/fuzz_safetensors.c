/*
 * fuzz_safetensors.c - libFuzzer target for sf_st_read: each input is written to a temporary file
 * and read back; a successful read must have every tensor inside the mapping, and every byte of
 * every tensor is touched so the sanitizers see any out-of-bounds pointer.
 *
 * Sources: tests/fuzz/fuzz_safetensors.c src/core/safetensors.c src/core/dtype.c src/core/json_parse.c
 * src/core/json_scalar.c src/core/json_write.c src/core/util.c. Build, e.g.:
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *     tests/fuzz/fuzz_safetensors.c src/core/safetensors.c src/core/dtype.c src/core/json_parse.c \
 *     src/core/json_scalar.c src/core/json_write.c src/core/util.c -lm -o fuzz_safetensors
 */
#include "core/safetensors.h"
#include "core/util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char scratch[4096];

static void remove_scratch(void)
{
	if (scratch[0])
		unlink(scratch);
}

/* The temporary file this process reuses for every input (created on first use, removed at exit). */
static const char *scratch_path(void)
{
	if (!scratch[0]) {
		const char *dir = getenv("TMPDIR");
		snprintf(scratch, sizeof scratch, "%s/sf_fuzz_st_XXXXXX", dir && *dir ? dir : "/tmp");
		int fd = mkstemp(scratch);
		if (fd < 0) {
			perror("fuzz_safetensors: mkstemp");
			abort();
		}
		close(fd);
		atexit(remove_scratch);
	}
	return scratch;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = scratch_path();
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	if (fclose(f) != 0)
		abort();
	sf_st_file st;
	char err[SF_ERRLEN];
	if (sf_st_read(path, &st, err, sizeof err) == 0) {
		const uint8_t *lo = st.map, *hi = lo + st.map_len;
		unsigned sum = 0;
		for (int i = 0; i < st.n; i++) {
			const uint8_t *p = st.t[i].data;
			if (p < lo || p + st.t[i].nbytes > hi || sf_st_find(&st, st.t[i].name) == NULL)
				abort();
			for (size_t k = 0; k < st.t[i].nbytes; k++)
				sum += p[k];
		}
		for (int i = 0; i < st.n_meta; i++)
			if (sf_st_meta(&st, st.meta_keys[i]) == NULL)
				abort();
		(void)sum;
		sf_st_close(&st);
	} else if (!err[0] || strchr(err, '\n')) {
		abort(); /* every failure explains itself in one line */
	}
	return 0;
}
