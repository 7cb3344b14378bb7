/*
 * util.c - checked allocation, byte buffers, file I/O, paths and clocks (see util.h).
 */
#include "core/util.h"
#include "core/status.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void oom(void)
{
	fputs("solforge: out of memory\n", stderr);
	exit(SF_EXIT_INTERNAL);
}

void *sf_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *sf_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom();
	return p;
}

void *sf_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom();
	return q;
}

char *sf_xstrdup(const char *s)
{
	return sf_xstrndup(s, strlen(s));
}

char *sf_xstrndup(const char *s, size_t n)
{
	char *p = sf_xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

static void buf_reserve(sf_buf *b, size_t extra)
{
	if (b->len + extra + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + extra + 1)
		cap *= 2;
	b->data = sf_xrealloc(b->data, cap);
	b->cap = cap;
}

void sf_buf_append(sf_buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
}

void sf_buf_puts(sf_buf *b, const char *s)
{
	sf_buf_append(b, s, strlen(s));
}

void sf_buf_vprintf(sf_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return;
	buf_reserve(b, (size_t)n);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void sf_buf_printf(sf_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sf_buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void sf_buf_json_str(sf_buf *b, const char *s)
{
	sf_buf_append(b, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': sf_buf_puts(b, "\\\""); break;
		case '\\': sf_buf_puts(b, "\\\\"); break;
		case '\n': sf_buf_puts(b, "\\n"); break;
		case '\r': sf_buf_puts(b, "\\r"); break;
		case '\t': sf_buf_puts(b, "\\t"); break;
		case '\b': sf_buf_puts(b, "\\b"); break;
		case '\f': sf_buf_puts(b, "\\f"); break;
		default:
			if (*p < 0x20)
				sf_buf_printf(b, "\\u%04x", *p);
			else
				sf_buf_append(b, p, 1);
		}
	}
	sf_buf_append(b, "\"", 1);
}

void sf_buf_json_num(sf_buf *b, double v)
{
	if (isnan(v)) {
		sf_buf_puts(b, "\"NaN\"");
	} else if (isinf(v)) {
		sf_buf_puts(b, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
	} else if (v == floor(v) && fabs(v) < 1e15) {
		sf_buf_printf(b, "%.0f", v);
	} else {
		char tmp[40];
		for (int prec = 6; prec <= 17; prec++) {
			snprintf(tmp, sizeof tmp, "%.*g", prec, v);
			if (strtod(tmp, NULL) == v)
				break;
		}
		sf_buf_puts(b, tmp);
	}
}

char *sf_buf_take(sf_buf *b)
{
	char *p = b->data ? b->data : sf_xstrdup("");
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

void sf_buf_free(sf_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void sf_errf(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int sf_err_oneline(char *err, int rc)
{
	for (char *c = rc ? err : NULL; c && *c; c++) /* (on success err may hold nothing, not even a NUL) */
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return rc;
}

int sf_read_file(const char *path, char **out, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		sf_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	sf_buf b = { 0 };
	char tmp[65536];
	size_t n;
	while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
		sf_buf_append(&b, tmp, n);
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		sf_buf_free(&b);
		sf_errf(err, errlen, "cannot read %s", path);
		return -1;
	}
	if (len)
		*len = b.len;
	*out = sf_buf_take(&b);
	return 0;
}

int sf_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
	sf_buf tmp = { 0 };
	sf_buf_printf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	FILE *f = fopen(tmp.data, "wb");
	if (!f) {
		sf_errf(err, errlen, "cannot create %s: %s", tmp.data, strerror(errno));
		sf_buf_free(&tmp);
		return -1;
	}
	int ok = fwrite(data, 1, len, f) == len;
	ok = (fflush(f) == 0) && ok;
	ok = (fclose(f) == 0) && ok;
	if (!ok || rename(tmp.data, path) != 0) {
		sf_errf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		unlink(tmp.data);
		sf_buf_free(&tmp);
		return -1;
	}
	sf_buf_free(&tmp);
	return 0;
}

int sf_mkdir_p(const char *path, char *err, size_t errlen)
{
	char *p = sf_xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0755) != 0 && errno != EEXIST) {
			sf_errf(err, errlen, "cannot create folder %s: %s", p, strerror(errno));
			free(p);
			return -1;
		}
		*s = '/';
	}
	if (mkdir(p, 0755) != 0 && errno != EEXIST) {
		sf_errf(err, errlen, "cannot create folder %s: %s", p, strerror(errno));
		free(p);
		return -1;
	}
	free(p);
	return 0;
}

int sf_rm_rf(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *sub = sf_path_join(path, e->d_name);
		rc |= sf_rm_rf(sub);
		free(sub);
	}
	closedir(d);
	return rmdir(path) | rc;
}

int sf_file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

char *sf_path_join(const char *a, const char *b)
{
	if (!a || !*a || b[0] == '/')
		return sf_xstrdup(b);
	sf_buf r = { 0 };
	sf_buf_puts(&r, a);
	if (a[strlen(a) - 1] != '/')
		sf_buf_puts(&r, "/");
	sf_buf_puts(&r, b);
	return sf_buf_take(&r);
}

char *sf_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return sf_xstrdup(".");
	if (slash == path)
		return sf_xstrdup("/");
	return sf_xstrndup(path, (size_t)(slash - path));
}

const char *sf_basename(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

uint64_t sf_fnv1a(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = (const uint8_t *)p;
	if (!h)
		h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

double sf_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double sf_wall_time(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void sf_iso8601(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int sf_parse_i64(const char *s, int64_t *out)
{
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

int sf_parse_double(const char *s, double *out)
{
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}
