/*
 * util.h - small helpers every part of solforge uses: checked allocation, a growable byte buffer,
 * whole-file I/O, paths, a monotonic clock and error formatting.
 *
 * Conventions: functions that can fail return 0 on success and -1 on failure, writing a one-line,
 * lowercase message into a caller-provided `err` buffer of `errlen` bytes (OUT parameter). Allocation
 * failure is not recoverable: sf_x* print "solforge: out of memory" and exit with SF_EXIT_INTERNAL.
 * Strings returned by sf_xstrdup / sf_path_join / sf_buf are owned by the caller (free()).
 */
#ifndef SF_UTIL_H
#define SF_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

#define SF_ERRLEN 512

void *sf_xmalloc(size_t n);
void *sf_xcalloc(size_t n, size_t size);
void *sf_xrealloc(void *p, size_t n);
char *sf_xstrdup(const char *s);
char *sf_xstrndup(const char *s, size_t n);

typedef struct sf_buf {
	char *data; /* always NUL-terminated when non-NULL */
	size_t len;
	size_t cap;
} sf_buf;

void sf_buf_append(sf_buf *b, const void *p, size_t n);
void sf_buf_puts(sf_buf *b, const char *s);
void sf_buf_printf(sf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sf_buf_vprintf(sf_buf *b, const char *fmt, va_list ap);
/* Append s as a JSON string literal (quotes and escapes included). */
void sf_buf_json_str(sf_buf *b, const char *s);
/* Append a double as JSON: finite values with %.17g-or-shorter round-trip; NaN/inf as strings
 * "NaN", "Infinity", "-Infinity" (what SOL-ExecBench's traces write). */
void sf_buf_json_num(sf_buf *b, double v);
char *sf_buf_take(sf_buf *b); /* returns data (never NULL) and resets b */
void sf_buf_free(sf_buf *b);

void sf_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* When rc != 0, makes err one line: every control byte (a newline in a quoted name from a user's file, ...) becomes
 * '?'. Returns rc, so that a loader can end with `return sf_err_oneline(err, rc)`. */
int sf_err_oneline(char *err, int rc);

/* Reads a whole file; *out is NUL-terminated and owned by the caller. */
int sf_read_file(const char *path, char **out, size_t *len, char *err, size_t errlen);
/* Writes a whole file atomically (temporary file in the same folder, then rename). */
int sf_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen);
int sf_mkdir_p(const char *path, char *err, size_t errlen);
/* Removes a folder and everything below it; missing is not an error. */
int sf_rm_rf(const char *path);
int sf_file_exists(const char *path);

char *sf_path_join(const char *a, const char *b);
char *sf_dirname(const char *path);
const char *sf_basename(const char *path);

/* FNV-1a 64 of n bytes, continuing from h (0: start a new hash). Not cryptographic: for hash
 * tables, file names of generated text, and detecting changed buffers. */
uint64_t sf_fnv1a(const void *p, size_t n, uint64_t h);

double sf_now(void);       /* monotonic seconds */
double sf_wall_time(void); /* seconds since the epoch */
void sf_iso8601(char out[32]); /* current UTC time, e.g. 2026-11-29T14:30:00Z */

/* Parses a non-negative decimal integer / a double; returns -1 on junk. */
int sf_parse_i64(const char *s, int64_t *out);
int sf_parse_double(const char *s, double *out);

#endif
