/*
 * safetensors.c - safetensors reading (mmap + full validation) and writing (see safetensors.h).
 *
 * The reader trusts nothing in the file: every length and offset is checked with overflow-safe
 * arithmetic before any tensor pointer is formed, names are shown in errors through a bounded,
 * printable copy, and the JSON header goes through the strict parser of core/json.h.
 */
#include "core/safetensors.h"
#include "core/json.h"
#include "core/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define META_KEY "__metadata__"

/* A printable copy of s for an error message: at most 64 bytes, control characters as '?'. */
static const char *shown(const char *s, char buf[72])
{
	size_t i = 0;
	if (!s)
		s = "(null)";
	for (; s[i] && i < 64; i++)
		buf[i] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
	if (s[i])
		memcpy(buf + i, "...", 3), i += 3;
	buf[i] = 0;
	return buf;
}

/* 1 if s is well-formed UTF-8 (no overlong forms, surrogates or code points above U+10FFFF). */
static int utf8_valid(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	while (*s) {
		unsigned c = *s;
		int n;
		unsigned min;
		if (c < 0x80) {
			s++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1, min = 0x80, c &= 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2, min = 0x800, c &= 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3, min = 0x10000, c &= 0x07;
		} else {
			return 0;
		}
		for (int k = 1; k <= n; k++) {
			if ((s[k] & 0xc0) != 0x80)
				return 0;
			c = (c << 6) | (s[k] & 0x3f);
		}
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return 0;
		s += n + 1;
	}
	return 1;
}

int64_t sf_st_numel(const sf_st_tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->ndim; i++) {
		if (t->shape[i] < 0 || __builtin_mul_overflow(n, t->shape[i], &n))
			return -1;
	}
	return n;
}

/*
 * The byte size of a tensor of dtype dt and the given shape (ndim already checked <= 8): writes it
 * to *nbytes and returns 0, or returns -1 with a reason (no file or tensor name) in why.
 */
static int tensor_bytes(sf_dt dt, int ndim, const int64_t *shape, size_t *nbytes, char *why, size_t whylen)
{
	int64_t numel = 1, nbits;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] < 0) {
			sf_errf(why, whylen, "dimension %d is negative (%" PRId64 ")", i, shape[i]);
			return -1;
		}
		if (__builtin_mul_overflow(numel, shape[i], &numel)) {
			sf_errf(why, whylen, "shape overflows int64");
			return -1;
		}
	}
	if (__builtin_mul_overflow(numel, (int64_t)sf_dt_bits(dt), &nbits)) {
		sf_errf(why, whylen, "size in bits overflows int64");
		return -1;
	}
	if (nbits % 8) {
		sf_errf(why, whylen, "%" PRId64 " elements of %s are not a whole number of bytes", numel,
			sf_dt_name(dt));
		return -1;
	}
	*nbytes = (size_t)(nbits / 8);
	return 0;
}

/* ---- writing ---- */

typedef struct wentry {
	const sf_st_tensor *t;
} wentry;

/* Layout order: larger elements first (keeps every tensor aligned), then names in byte order. */
static int cmp_layout(const void *a, const void *b)
{
	const sf_st_tensor *x = ((const wentry *)a)->t, *y = ((const wentry *)b)->t;
	int bx = sf_dt_bits(x->dt), by = sf_dt_bits(y->dt);
	if (bx != by)
		return bx > by ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const wentry *)a)->t->name, ((const wentry *)b)->t->name);
}

/* Checks one tensor handed to sf_st_write; 0 or -1 with err set. */
static int check_write_tensor(const char *path, const sf_st_tensor *t, char *err, size_t errlen)
{
	char nb[72], why[160];
	if (!t->name) {
		sf_errf(err, errlen, "%s: a tensor has no name", path);
		return -1;
	}
	if (!utf8_valid(t->name) || !strcmp(t->name, META_KEY)) {
		sf_errf(err, errlen, "%s: tensor name '%s' is not valid utf-8 or is reserved", path,
			shown(t->name, nb));
		return -1;
	}
	if (!sf_dt_safetensors_name(t->dt)) {
		sf_errf(err, errlen, "%s: tensor '%s': invalid dtype %d", path, shown(t->name, nb), (int)t->dt);
		return -1;
	}
	if (t->ndim < 0 || t->ndim > SF_ST_MAX_DIMS) {
		sf_errf(err, errlen, "%s: tensor '%s': %d dims (0 to %d allowed)", path, shown(t->name, nb),
			t->ndim, SF_ST_MAX_DIMS);
		return -1;
	}
	size_t nbytes;
	if (tensor_bytes(t->dt, t->ndim, t->shape, &nbytes, why, sizeof why)) {
		sf_errf(err, errlen, "%s: tensor '%s': %s", path, shown(t->name, nb), why);
		return -1;
	}
	if (nbytes != t->nbytes) {
		sf_errf(err, errlen, "%s: tensor '%s': nbytes is %zu but its shape and dtype need %zu", path,
			shown(t->name, nb), t->nbytes, nbytes);
		return -1;
	}
	if (nbytes && !t->data) {
		sf_errf(err, errlen, "%s: tensor '%s': no data", path, shown(t->name, nb));
		return -1;
	}
	return 0;
}

/* Checks the metadata pairs; sets *count. 0 or -1 with err set. */
static int check_metadata(const char *path, const char *const *md, int *count, char *err, size_t errlen)
{
	char nb[72];
	int m = 0;
	for (; md && md[2 * m]; m++) {
		const char *k = md[2 * m], *v = md[2 * m + 1];
		if (!v) {
			sf_errf(err, errlen, "%s: metadata '%s' has no value", path, shown(k, nb));
			return -1;
		}
		if (!utf8_valid(k) || !utf8_valid(v)) {
			sf_errf(err, errlen, "%s: metadata '%s' is not valid utf-8", path, shown(k, nb));
			return -1;
		}
		for (int j = 0; j < m; j++) {
			if (!strcmp(md[2 * j], k)) {
				sf_errf(err, errlen, "%s: metadata key '%s' given twice", path, shown(k, nb));
				return -1;
			}
		}
	}
	*count = m;
	return 0;
}

/* Writes the whole of p[0..n) to f; 0 or -1. */
static int put(FILE *f, const void *p, size_t n)
{
	return n == 0 || fwrite(p, 1, n, f) == n ? 0 : -1;
}

int sf_st_write(const char *path, const sf_st_tensor *ts, int n, const char *const *metadata, char *err,
		size_t errlen)
{
	char nb[72];
	int n_meta = 0;
	if (n < 0 || (n > 0 && !ts)) {
		sf_errf(err, errlen, "%s: bad tensor count %d", path, n);
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (check_write_tensor(path, &ts[i], err, errlen))
			return -1;
	if (check_metadata(path, metadata, &n_meta, err, errlen))
		return -1;
	wentry *order = sf_xcalloc((size_t)n + 1, sizeof *order);
	for (int i = 0; i < n; i++)
		order[i].t = &ts[i];
	qsort(order, (size_t)n, sizeof *order, cmp_name);
	for (int i = 1; i < n; i++) {
		if (!strcmp(order[i - 1].t->name, order[i].t->name)) {
			sf_errf(err, errlen, "%s: tensor name '%s' given twice", path, shown(order[i].t->name, nb));
			free(order);
			return -1;
		}
	}
	qsort(order, (size_t)n, sizeof *order, cmp_layout);

	/* the header */
	sf_buf h = { 0 };
	sf_buf_puts(&h, "{");
	if (n_meta > 0) {
		sf_buf_puts(&h, "\"" META_KEY "\":{");
		for (int m = 0; m < n_meta; m++) {
			if (m)
				sf_buf_puts(&h, ",");
			sf_buf_json_str(&h, metadata[2 * m]);
			sf_buf_puts(&h, ":");
			sf_buf_json_str(&h, metadata[2 * m + 1]);
		}
		sf_buf_puts(&h, "}");
	}
	uint64_t off = 0;
	for (int i = 0; i < n; i++) {
		const sf_st_tensor *t = order[i].t;
		if (n_meta > 0 || i)
			sf_buf_puts(&h, ",");
		sf_buf_json_str(&h, t->name);
		sf_buf_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", sf_dt_safetensors_name(t->dt));
		for (int d = 0; d < t->ndim; d++)
			sf_buf_printf(&h, "%s%" PRId64, d ? "," : "", t->shape[d]);
		sf_buf_printf(&h, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", off, off + (uint64_t)t->nbytes);
		off += (uint64_t)t->nbytes;
	}
	sf_buf_puts(&h, "}");
	while (h.len % 8)
		sf_buf_puts(&h, " ");
	if (h.len > SF_ST_MAX_HEADER) {
		sf_errf(err, errlen, "%s: header of %zu bytes is over the %d byte limit", path, h.len,
			SF_ST_MAX_HEADER);
		sf_buf_free(&h);
		free(order);
		return -1;
	}

	/* the file: a temporary beside it, renamed into place when complete */
	sf_buf tmp = { 0 };
	sf_buf_printf(&tmp, "%s.tmpXXXXXX", path);
	int fd = mkstemp(tmp.data);
	FILE *f = NULL;
	if (fd >= 0) {
		(void)fchmod(fd, 0644);
		f = fdopen(fd, "wb");
		if (!f)
			close(fd);
	}
	if (!f) {
		sf_errf(err, errlen, "%s: cannot create a temporary file: %s", path, strerror(errno));
		sf_buf_free(&tmp);
		sf_buf_free(&h);
		free(order);
		return -1;
	}
	unsigned char len8[8];
	for (int k = 0; k < 8; k++)
		len8[k] = (unsigned char)((uint64_t)h.len >> (8 * k));
	int bad = put(f, len8, 8) || put(f, h.data, h.len);
	for (int i = 0; i < n && !bad; i++)
		bad = put(f, order[i].t->data, order[i].t->nbytes);
	bad = (fflush(f) != 0) || bad;
	int saved = errno;
	bad = (fclose(f) != 0) || bad;
	if (!bad && rename(tmp.data, path) != 0) {
		saved = errno;
		bad = 1;
	}
	if (bad) {
		sf_errf(err, errlen, "%s: cannot write: %s", path, strerror(saved ? saved : EIO));
		unlink(tmp.data);
	}
	sf_buf_free(&tmp);
	sf_buf_free(&h);
	free(order);
	return bad ? -1 : 0;
}

/* ---- reading ---- */

typedef struct rspan {
	uint64_t begin, end;
	int idx; /* into the tensor array */
} rspan;

static int cmp_span(const void *a, const void *b)
{
	const rspan *x = a, *y = b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return 0;
}

/* A non-negative JSON integer, or -1. */
static int64_t json_uint(const sf_json *v)
{
	if (!v || v->type != SF_JSON_NUMBER || !v->is_int || v->ival < 0)
		return -1;
	return v->ival;
}

/* Parses the "__metadata__" object into out; 0 or -1 with err set. */
static int read_meta(const char *path, const sf_json *m, sf_st_file *out, char *err, size_t errlen)
{
	char nb[72];
	if (m->type == SF_JSON_NULL)
		return 0;
	if (m->type != SF_JSON_OBJECT) {
		sf_errf(err, errlen, "%s: " META_KEY " is not an object (%s)", path, sf_json_type_name(m->type));
		return -1;
	}
	for (size_t i = 0; i < m->n; i++) {
		if (m->items[i]->type != SF_JSON_STRING) {
			sf_errf(err, errlen, "%s: " META_KEY " value of '%s' is not a string (%s)", path,
				shown(m->keys[i], nb), sf_json_type_name(m->items[i]->type));
			return -1;
		}
	}
	out->meta_keys = sf_xcalloc(m->n + 1, sizeof(char *));
	out->meta_vals = sf_xcalloc(m->n + 1, sizeof(char *));
	for (size_t i = 0; i < m->n; i++) {
		out->meta_keys[i] = sf_xstrdup(m->keys[i]);
		out->meta_vals[i] = sf_xstrndup(m->items[i]->str, m->items[i]->len);
	}
	out->n_meta = (int)m->n;
	return 0;
}

/*
 * Parses the header entry `v` of tensor `name` into *t (name not yet set) and its offsets into *span,
 * checking them against the data section of data_len bytes. 0 or -1 with err set.
 */
static int read_tensor(const char *path, const char *name, const sf_json *v, uint64_t data_len, sf_st_tensor *t,
		       rspan *span, char *err, size_t errlen)
{
	char nb[72], why[160];
	const char *nm = shown(name, nb);
	if (v->type != SF_JSON_OBJECT) {
		sf_errf(err, errlen, "%s: tensor '%s': entry is not an object (%s)", path, nm,
			sf_json_type_name(v->type));
		return -1;
	}
	for (size_t i = 0; i < v->n; i++) {
		const char *k = v->keys[i];
		if (strcmp(k, "dtype") && strcmp(k, "shape") && strcmp(k, "data_offsets")) {
			char kb[72];
			sf_errf(err, errlen, "%s: tensor '%s': unknown field '%s'", path, nm, shown(k, kb));
			return -1;
		}
	}
	const sf_json *dt = sf_json_get(v, "dtype"), *shape = sf_json_get(v, "shape"),
		      *offs = sf_json_get(v, "data_offsets");
	if (!dt || dt->type != SF_JSON_STRING) {
		sf_errf(err, errlen, "%s: tensor '%s': dtype missing or not a string", path, nm);
		return -1;
	}
	t->dt = sf_dt_from_safetensors_name(dt->str);
	if (t->dt == SF_DT_INVALID) {
		char db[72];
		sf_errf(err, errlen, "%s: tensor '%s': unknown dtype '%s'", path, nm, shown(dt->str, db));
		return -1;
	}
	if (!shape || shape->type != SF_JSON_ARRAY) {
		sf_errf(err, errlen, "%s: tensor '%s': shape missing or not an array", path, nm);
		return -1;
	}
	if (shape->n > SF_ST_MAX_DIMS) {
		sf_errf(err, errlen, "%s: tensor '%s': shape has %zu dims, at most %d allowed", path, nm, shape->n,
			SF_ST_MAX_DIMS);
		return -1;
	}
	t->ndim = (int)shape->n;
	for (int d = 0; d < t->ndim; d++) {
		t->shape[d] = json_uint(shape->items[d]);
		if (t->shape[d] < 0) {
			sf_errf(err, errlen, "%s: tensor '%s': shape entry %d is not a non-negative integer", path, nm,
				d);
			return -1;
		}
	}
	if (!offs || offs->type != SF_JSON_ARRAY || offs->n != 2 || json_uint(offs->items[0]) < 0 ||
	    json_uint(offs->items[1]) < 0) {
		sf_errf(err, errlen, "%s: tensor '%s': data_offsets must be two non-negative integers", path, nm);
		return -1;
	}
	span->begin = (uint64_t)json_uint(offs->items[0]);
	span->end = (uint64_t)json_uint(offs->items[1]);
	if (span->end < span->begin || span->end > data_len) {
		sf_errf(err, errlen,
			"%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] outside the %" PRIu64
			" byte data section",
			path, nm, span->begin, span->end, data_len);
		return -1;
	}
	if (tensor_bytes(t->dt, t->ndim, t->shape, &t->nbytes, why, sizeof why)) {
		sf_errf(err, errlen, "%s: tensor '%s': %s", path, nm, why);
		return -1;
	}
	if ((uint64_t)t->nbytes != span->end - span->begin) {
		sf_errf(err, errlen,
			"%s: tensor '%s': data_offsets span %" PRIu64 " bytes but shape and dtype need %zu", path,
			nm, span->end - span->begin, t->nbytes);
		return -1;
	}
	return 0;
}

/* Checks that the spans tile [0, data_len) exactly, in offset order. 0 or -1 with err set. */
static int check_tiling(const char *path, rspan *spans, int n, const sf_st_tensor *t, uint64_t data_len,
			char *err, size_t errlen)
{
	char nb[72], nb2[72];
	qsort(spans, (size_t)n, sizeof *spans, cmp_span);
	uint64_t at = 0;
	for (int i = 0; i < n; i++) {
		if (spans[i].begin < at) {
			sf_errf(err, errlen, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
				"] overlap tensor '%s'",
				path, shown(t[spans[i].idx].name, nb), spans[i].begin, spans[i].end,
				shown(t[spans[i - 1].idx].name, nb2));
			return -1;
		}
		if (spans[i].begin > at) {
			sf_errf(err, errlen, "%s: tensor '%s': %" PRIu64 " unused bytes before its data", path,
				shown(t[spans[i].idx].name, nb), spans[i].begin - at);
			return -1;
		}
		at = spans[i].end;
	}
	if (at != data_len) {
		sf_errf(err, errlen, "%s: %" PRIu64 " bytes after the last tensor's data", path, data_len - at);
		return -1;
	}
	return 0;
}

int sf_st_read(const char *path, sf_st_file *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		sf_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		sf_errf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	if (st.st_size < 8) {
		sf_errf(err, errlen, "%s: %lld bytes, too short for a safetensors header", path,
			(long long)st.st_size);
		close(fd);
		return -1;
	}
	size_t size = (size_t)st.st_size;
	void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		sf_errf(err, errlen, "%s: cannot map: %s", path, strerror(errno));
		return -1;
	}
	const unsigned char *base = map;
	uint64_t hlen = 0;
	for (int k = 0; k < 8; k++)
		hlen |= (uint64_t)base[k] << (8 * k);
	if (hlen == 0 || hlen > SF_ST_MAX_HEADER || hlen > size - 8) {
		sf_errf(err, errlen, "%s: bad header length %" PRIu64 " (file has %zu bytes, limit %d)", path, hlen,
			size, SF_ST_MAX_HEADER);
		munmap(map, size);
		return -1;
	}
	uint64_t data_len = size - 8 - hlen;
	const unsigned char *data = base + 8 + hlen;
	char jerr[256];
	sf_json *root = sf_json_parse((const char *)base + 8, (size_t)hlen, jerr, sizeof jerr);
	if (!root) {
		sf_errf(err, errlen, "%s: bad json header: %s", path, jerr);
		munmap(map, size);
		return -1;
	}
	if (root->type != SF_JSON_OBJECT) {
		sf_errf(err, errlen, "%s: header is not a json object (%s)", path, sf_json_type_name(root->type));
		sf_json_free(root);
		munmap(map, size);
		return -1;
	}
	out->map = map;
	out->map_len = size;
	out->t = sf_xcalloc(root->n + 1, sizeof *out->t);
	rspan *spans = sf_xcalloc(root->n + 1, sizeof *spans);
	int rc = 0;
	for (size_t i = 0; i < root->n && rc == 0; i++) {
		if (!strcmp(root->keys[i], META_KEY)) {
			rc = read_meta(path, root->items[i], out, err, errlen);
			continue;
		}
		sf_st_tensor *t = &out->t[out->n];
		rc = read_tensor(path, root->keys[i], root->items[i], data_len, t, &spans[out->n], err, errlen);
		if (rc == 0) {
			t->name = sf_xstrdup(root->keys[i]);
			t->data = (void *)(data + spans[out->n].begin);
			spans[out->n].idx = out->n;
			out->n++;
		}
	}
	if (rc == 0)
		rc = check_tiling(path, spans, out->n, out->t, data_len, err, errlen);
	free(spans);
	sf_json_free(root);
	if (rc != 0)
		sf_st_close(out);
	return rc;
}

const sf_st_tensor *sf_st_find(const sf_st_file *f, const char *name)
{
	for (int i = 0; f && name && i < f->n; i++)
		if (!strcmp(f->t[i].name, name))
			return &f->t[i];
	return NULL;
}

const char *sf_st_meta(const sf_st_file *f, const char *key)
{
	for (int i = 0; f && key && i < f->n_meta; i++)
		if (!strcmp(f->meta_keys[i], key))
			return f->meta_vals[i];
	return NULL;
}

void sf_st_close(sf_st_file *f)
{
	if (!f)
		return;
	if (f->map)
		munmap(f->map, f->map_len);
	for (int i = 0; f->t && i < f->n; i++)
		free(f->t[i].name);
	free(f->t);
	for (int i = 0; i < f->n_meta; i++) {
		free(f->meta_keys[i]);
		free(f->meta_vals[i]);
	}
	free(f->meta_keys);
	free(f->meta_vals);
	memset(f, 0, sizeof *f);
}
