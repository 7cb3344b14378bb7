/*
 * test_safetensors.c - src/core/dtype.c (name, DLPack, safetensors and reference-dtype tables) and
 * src/core/safetensors.c: round trips of random tensors of every dtype with metadata, the exact
 * bytes of a small file, and a catalogue of corrupted files and bad writes that must each give a
 * one-line error naming the file (never a crash), plus random byte flips and truncations of a
 * valid file.
 */
#include "test.h"
#include "core/dtype.h"
#include "core/safetensors.h"
#include "core/util.h"
#include "solforge/rng.h"

#include <stdlib.h>
#include <unistd.h>

/* ---- dtype tables ---- */

static const char *const DEF_NAMES[] = { NULL, "float64", "float32", "float16", "bfloat16", "float8_e4m3fn",
					 "float8_e5m2", "float4_e2m1", "int64", "int32", "int16", "int8",
					 "uint8", "bool" };
static const char *const ST_NAMES[] = { NULL, "F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2", "F4",
					"I64", "I32", "I16", "I8", "U8", "BOOL" };

SF_TEST(dtype_names)
{
	for (int dt = SF_DT_F64; dt < SF_DT_COUNT; dt++) {
		CHECK_INT(sf_dt_from_name(DEF_NAMES[dt]), dt);
		CHECK_STR(sf_dt_name((sf_dt)dt), DEF_NAMES[dt]);
		CHECK_INT(sf_dt_from_safetensors_name(ST_NAMES[dt]), dt);
		CHECK_STR(sf_dt_safetensors_name((sf_dt)dt), ST_NAMES[dt]);
	}
	CHECK_INT(sf_dt_from_name("float4_e2m1fn_x2"), SF_DT_E2M1);
	CHECK_INT(sf_dt_from_name("Float32"), SF_DT_INVALID);
	CHECK_INT(sf_dt_from_name("float"), SF_DT_INVALID);
	CHECK_INT(sf_dt_from_name(""), SF_DT_INVALID);
	CHECK_INT(sf_dt_from_name("invalid"), SF_DT_INVALID);
	CHECK_INT(sf_dt_from_name(NULL), SF_DT_INVALID);
	CHECK_INT(sf_dt_from_safetensors_name("f32"), SF_DT_INVALID);
	CHECK_INT(sf_dt_from_safetensors_name("U16"), SF_DT_INVALID);
	CHECK_INT(sf_dt_from_safetensors_name("F8_E4M3FNUZ"), SF_DT_INVALID);
	CHECK_INT(sf_dt_from_safetensors_name(NULL), SF_DT_INVALID);
	CHECK_STR(sf_dt_name(SF_DT_INVALID), "invalid");
	CHECK_STR(sf_dt_name(SF_DT_COUNT), "invalid");
	CHECK(sf_dt_safetensors_name(SF_DT_INVALID) == NULL);
	CHECK(sf_dt_safetensors_name((sf_dt)99) == NULL);
}

SF_TEST(dtype_dlpack)
{
	static const struct {
		sf_dt dt;
		int code, bits;
	} want[] = {
		{ SF_DT_F64, 2, 64 }, { SF_DT_F32, 2, 32 }, { SF_DT_F16, 2, 16 }, { SF_DT_BF16, 4, 16 },
		{ SF_DT_E4M3, 10, 8 }, { SF_DT_E5M2, 12, 8 }, { SF_DT_E2M1, 17, 4 }, { SF_DT_I64, 0, 64 },
		{ SF_DT_I32, 0, 32 }, { SF_DT_I16, 0, 16 }, { SF_DT_I8, 0, 8 }, { SF_DT_U8, 1, 8 },
		{ SF_DT_BOOL, 6, 8 },
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		sf_dtype t = sf_dt_to_dlpack(want[i].dt);
		CHECK_INT(t.code, want[i].code);
		CHECK_INT(t.bits, want[i].bits);
		CHECK_INT(t.lanes, 1);
		CHECK_INT(t.bits, sf_dt_bits(want[i].dt));
		CHECK_INT(sf_dt_from_dlpack(t), want[i].dt);
	}
	sf_dtype t = sf_dt_to_dlpack(SF_DT_INVALID);
	CHECK(t.code == 0 && t.bits == 0 && t.lanes == 0);
	CHECK_INT(sf_dt_from_dlpack(t), SF_DT_INVALID);
	sf_dtype two_lanes = { SF_CODE_FLOAT, 32, 2 };
	CHECK_INT(sf_dt_from_dlpack(two_lanes), SF_DT_INVALID);
	sf_dtype u16 = { SF_CODE_UINT, 16, 1 };
	CHECK_INT(sf_dt_from_dlpack(u16), SF_DT_INVALID);
	sf_dtype f8 = { SF_CODE_FLOAT, 8, 1 };
	CHECK_INT(sf_dt_from_dlpack(f8), SF_DT_INVALID);
}

SF_TEST(dtype_reference)
{
	CHECK_INT(sf_dt_reference(SF_DT_F64), SF_DT_F64);
	CHECK_INT(sf_dt_reference(SF_DT_F32), SF_DT_F32);
	CHECK_INT(sf_dt_reference(SF_DT_F16), SF_DT_F32);
	CHECK_INT(sf_dt_reference(SF_DT_BF16), SF_DT_F32);
	CHECK_INT(sf_dt_reference(SF_DT_E4M3), SF_DT_F32);
	CHECK_INT(sf_dt_reference(SF_DT_E5M2), SF_DT_F32);
	CHECK_INT(sf_dt_reference(SF_DT_E2M1), SF_DT_F32);
	CHECK_INT(sf_dt_reference(SF_DT_I64), SF_DT_I64);
	CHECK_INT(sf_dt_reference(SF_DT_I32), SF_DT_I32);
	CHECK_INT(sf_dt_reference(SF_DT_I16), SF_DT_I16);
	CHECK_INT(sf_dt_reference(SF_DT_I8), SF_DT_I8);
	CHECK_INT(sf_dt_reference(SF_DT_U8), SF_DT_U8);
	CHECK_INT(sf_dt_reference(SF_DT_BOOL), SF_DT_BOOL);
	CHECK_INT(sf_dt_reference(SF_DT_INVALID), SF_DT_INVALID);
}

/* ---- helpers ---- */

static uint64_t rs;

static uint64_t rnd(void)
{
	rs += 0x9E3779B97F4A7C15ull;
	return sf_mix64(rs);
}

/* A fresh temporary folder (caller removes it with sf_rm_rf and frees the name). */
static char *tmp_dir(void)
{
	const char *base = getenv("TMPDIR");
	sf_buf b = { 0 };
	sf_buf_printf(&b, "%s/sf_st_XXXXXX", base && *base ? base : "/tmp");
	char *p = sf_buf_take(&b);
	if (!mkdtemp(p)) {
		perror("mkdtemp");
		abort();
	}
	return p;
}

/* Writes a raw safetensors-like file: an explicit 8-byte length, then header, then data. */
static void write_raw_len(const char *path, uint64_t len, const char *header, size_t hlen, const void *data,
			  size_t dlen)
{
	sf_buf b = { 0 };
	unsigned char l8[8];
	for (int k = 0; k < 8; k++)
		l8[k] = (unsigned char)(len >> (8 * k));
	sf_buf_append(&b, l8, 8);
	sf_buf_append(&b, header, hlen);
	if (dlen)
		sf_buf_append(&b, data, dlen);
	char err[SF_ERRLEN];
	if (sf_write_file(path, b.data, b.len, err, sizeof err))
		fprintf(stderr, "  %s\n", err);
	sf_buf_free(&b);
}

static void write_raw(const char *path, const char *header, const void *data, size_t dlen)
{
	write_raw_len(path, strlen(header), header, strlen(header), data, dlen);
}

/* sf_st_read must fail with a one-line message naming the file and containing `want` (if not
 * NULL), and leave *f zeroed. Returns 1 when it did. */
static int read_fails(const char *path, const char *want)
{
	sf_st_file f;
	char err[SF_ERRLEN] = "";
	memset(&f, 0x5a, sizeof f);
	int rc = sf_st_read(path, &f, err, sizeof err);
	int ok = rc == -1 && err[0] && !strchr(err, '\n') && strstr(err, path) &&
		 (!want || strstr(err, want)) && f.n == 0 && f.t == NULL && f.map == NULL && f.n_meta == 0;
	if (!ok)
		fprintf(stderr, "  reading %s: rc %d, err \"%s\" (wanted \"%s\")\n", sf_basename(path), rc, err,
			want ? want : "");
	if (rc == 0)
		sf_st_close(&f);
	return ok;
}

/* ---- round trips ---- */

SF_TEST(safetensors_roundtrip)
{
	rs = sf_test_seed() ^ 0x5afe;
	char *dir = tmp_dir();
	char *path = sf_path_join(dir, "t.safetensors");
	char err[SF_ERRLEN];
	for (int round = 0; round < 40; round++) {
		enum { MAXT = 20 };
		sf_st_tensor ts[MAXT];
		char names[MAXT][32];
		int n = (int)(rnd() % MAXT);
		if (round == 0)
			n = 0;
		for (int i = 0; i < n; i++) {
			sf_st_tensor *t = &ts[i];
			memset(t, 0, sizeof *t);
			t->dt = (sf_dt)(SF_DT_F64 + (int)(rnd() % (SF_DT_COUNT - SF_DT_F64)));
			if (round == 1) /* every dtype at least once */
				t->dt = (sf_dt)(SF_DT_F64 + i % (SF_DT_COUNT - SF_DT_F64));
			snprintf(names[i], sizeof names[i], "layer.%d.%s%s", i, sf_dt_name(t->dt),
				 (rnd() & 1) ? ".\xc3\xa9\"\\" : "");
			t->name = names[i];
			t->ndim = (int)(rnd() % 5);
			if (rnd() % 10 == 0)
				t->ndim = SF_ST_MAX_DIMS;
			for (int d = 0; d < t->ndim; d++)
				t->shape[d] = (int64_t)(rnd() % (t->ndim > 4 ? 3 : 7));
			if (t->dt == SF_DT_E2M1 && sf_st_numel(t) % 2) {
				if (t->ndim == 0) {
					t->ndim = 1;
					t->shape[0] = 2;
				} else {
					t->shape[t->ndim - 1] = 2 * (t->shape[t->ndim - 1] + 1);
				}
			}
			t->nbytes = (size_t)sf_dt_bytes(t->dt, sf_st_numel(t));
			uint8_t *p = malloc(t->nbytes + 1);
			for (size_t k = 0; k < t->nbytes; k++)
				p[k] = (uint8_t)rnd();
			t->data = p;
		}
		const char *meta[] = { "format", "pt", "solforge.round", "3", "quote\"key", "line\nbreak \xe2\x82\xac",
				       NULL };
		const char *const *md = (round % 3 == 0) ? NULL : meta;
		int rc = sf_st_write(path, ts, n, md, err, sizeof err);
		CHECK_INT(rc, 0);
		if (rc)
			fprintf(stderr, "  %s\n", err);
		sf_st_file f;
		rc = sf_st_read(path, &f, err, sizeof err);
		CHECK_INT(rc, 0);
		if (rc) {
			fprintf(stderr, "  %s\n", err);
		} else {
			CHECK_INT(f.n, n);
			for (int i = 0; i < n; i++) {
				const sf_st_tensor *g = sf_st_find(&f, ts[i].name);
				CHECK(g != NULL);
				if (!g)
					continue;
				CHECK_INT(g->dt, ts[i].dt);
				CHECK_INT(g->ndim, ts[i].ndim);
				for (int d = 0; d < ts[i].ndim; d++)
					CHECK_INT(g->shape[d], ts[i].shape[d]);
				CHECK_INT(g->nbytes, ts[i].nbytes);
				CHECK(g->nbytes == 0 || memcmp(g->data, ts[i].data, g->nbytes) == 0);
				/* aligned to the element size within the (page-aligned) map */
				int eb = sf_dt_bits(g->dt) / 8;
				CHECK(eb == 0 || (uintptr_t)g->data % (uintptr_t)eb == 0);
			}
			CHECK(sf_st_find(&f, "no such tensor") == NULL);
			/* the header length is a multiple of 8, as is the data start */
			uint64_t hl;
			memcpy(&hl, f.map, 8);
			CHECK_INT(hl % 8, 0);
			if (md) {
				CHECK_INT(f.n_meta, 3);
				CHECK_STR(sf_st_meta(&f, "format"), "pt");
				CHECK_STR(sf_st_meta(&f, "solforge.round"), "3");
				CHECK_STR(sf_st_meta(&f, "quote\"key"), "line\nbreak \xe2\x82\xac");
			} else {
				CHECK_INT(f.n_meta, 0);
				CHECK(sf_st_meta(&f, "format") == NULL);
			}
			sf_st_close(&f);
			CHECK(f.map == NULL && f.t == NULL && f.n == 0);
		}
		for (int i = 0; i < n; i++)
			free(ts[i].data);
	}
	sf_st_close(NULL);
	sf_rm_rf(dir);
	free(path);
	free(dir);
}

/* The exact bytes of a small file: the format as the reference implementation writes it. */
SF_TEST(safetensors_layout)
{
	char *dir = tmp_dir();
	char *path = sf_path_join(dir, "l.safetensors");
	char err[SF_ERRLEN];
	uint8_t f4 = 0x21;
	float w[2] = { 1.0f, -2.0f };
	sf_st_tensor ts[2] = {
		{ .name = "attn.0", .dt = SF_DT_E2M1, .ndim = 2, .shape = { 1, 2 }, .data = &f4, .nbytes = 1 },
		{ .name = "w", .dt = SF_DT_F32, .ndim = 1, .shape = { 2 }, .data = w, .nbytes = 8 },
	};
	CHECK_INT(sf_st_write(path, ts, 2, NULL, err, sizeof err), 0);
	char *buf = NULL;
	size_t len = 0;
	CHECK_INT(sf_read_file(path, &buf, &len, err, sizeof err), 0);
	/* the float32 tensor first (larger elements first), header padded with spaces to 8 */
	const char *hdr = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
			  "\"attn.0\":{\"dtype\":\"F4\",\"shape\":[1,2],\"data_offsets\":[8,9]}}";
	size_t hl = strlen(hdr), padded = (hl + 7) / 8 * 8;
	CHECK_INT(len, 8 + padded + 9);
	if (buf && len == 8 + padded + 9) {
		uint64_t n = 0;
		for (int k = 0; k < 8; k++)
			n |= (uint64_t)(uint8_t)buf[k] << (8 * k);
		CHECK_INT(n, padded);
		CHECK(memcmp(buf + 8, hdr, hl) == 0);
		for (size_t k = hl; k < padded; k++)
			CHECK(buf[8 + k] == ' ');
		CHECK(memcmp(buf + 8 + padded, w, 8) == 0);
		CHECK_INT((uint8_t)buf[8 + padded + 8], 0x21);
	}
	free(buf);
	/* no tensors: "{}" padded */
	CHECK_INT(sf_st_write(path, NULL, 0, NULL, err, sizeof err), 0);
	CHECK_INT(sf_read_file(path, &buf, &len, err, sizeof err), 0);
	CHECK(len == 16 && buf[0] == 8 && memcmp(buf + 8, "{}      ", 8) == 0);
	free(buf);
	sf_st_file f;
	CHECK_INT(sf_st_read(path, &f, err, sizeof err), 0);
	CHECK_INT(f.n, 0);
	sf_st_close(&f);
	/* metadata goes first */
	const char *md[] = { "a", "b", NULL };
	CHECK_INT(sf_st_write(path, &ts[1], 1, md, err, sizeof err), 0);
	CHECK_INT(sf_read_file(path, &buf, &len, err, sizeof err), 0);
	CHECK(len > 40 && !strncmp(buf + 8, "{\"__metadata__\":{\"a\":\"b\"},\"w\":{", 31));
	free(buf);
	/* a file written by hand with tensors out of offset order and whitespace reads fine */
	float v[3] = { 1, 2, 3 };
	write_raw(path, "{ \"b\" : {\"shape\":[1],\"dtype\":\"F32\",\"data_offsets\":[8,12]},\n"
			"\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}, \"__metadata__\": null}   ",
		  v, 12);
	CHECK_INT(sf_st_read(path, &f, err, sizeof err), 0);
	if (f.n == 2) {
		CHECK_STR(f.t[0].name, "b");
		CHECK(sf_load(sf_st_find(&f, "b")->data, SF_DT_F32, 0) == 3.0);
		CHECK(sf_load(sf_st_find(&f, "a")->data, SF_DT_F32, 1) == 2.0);
	}
	sf_st_close(&f);
	sf_rm_rf(dir);
	free(path);
	free(dir);
}

SF_TEST(safetensors_corrupt)
{
	char *dir = tmp_dir();
	char *p = sf_path_join(dir, "bad.safetensors");
	uint8_t data[64] = { 0 };
	const char *ok1 = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}";

	/* sanity: the base case is valid */
	write_raw(p, ok1, data, 16);
	sf_st_file f;
	char err[SF_ERRLEN];
	CHECK_INT(sf_st_read(p, &f, err, sizeof err), 0);
	sf_st_close(&f);

	CHECK(read_fails(dir, "not a regular file"));
	char *missing = sf_path_join(dir, "missing.safetensors");
	CHECK(read_fails(missing, "cannot open"));
	free(missing);
	CHECK(sf_write_file(p, "abc", 3, err, sizeof err) == 0 && read_fails(p, "too short"));
	CHECK(sf_write_file(p, "", 0, err, sizeof err) == 0 && read_fails(p, "too short"));
	/* truncated: inside the header, inside the data */
	write_raw_len(p, strlen(ok1), ok1, 10, NULL, 0);
	CHECK(read_fails(p, "header length"));
	write_raw(p, ok1, data, 15);
	CHECK(read_fails(p, "'x'"));
	/* trailing bytes */
	write_raw(p, ok1, data, 17);
	CHECK(read_fails(p, "after the last tensor"));
	/* bad header lengths */
	write_raw_len(p, 0, ok1, strlen(ok1), data, 16);
	CHECK(read_fails(p, "header length"));
	write_raw_len(p, ~0ull, ok1, strlen(ok1), data, 16);
	CHECK(read_fails(p, "header length"));
	write_raw_len(p, 200000000, ok1, strlen(ok1), data, 16);
	CHECK(read_fails(p, "header length"));
	write_raw_len(p, strlen(ok1) + 17, ok1, strlen(ok1), data, 16);
	CHECK(read_fails(p, "header length"));
	write_raw_len(p, strlen(ok1) - 1, ok1, strlen(ok1), data, 16); /* header cut short: bad json */
	CHECK(read_fails(p, "json"));
	write_raw_len(p, strlen(ok1) + 3, ok1, strlen(ok1), data, 16); /* takes 3 data bytes (NULs) */
	CHECK(read_fails(p, "json"));

	static const struct {
		const char *header;
		size_t dlen;
		const char *want;
	} cases[] = {
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
		  "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "overlap" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
		  "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "overlap" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
		  "\"y\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}", 8, "overlap" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "unused bytes" },
		{ "{\"x\":{\"dtype\":\"F7\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "unknown dtype 'F7'" },
		{ "{\"x\":{\"dtype\":\"U16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "'x': unknown dtype" },
		{ "{\"x\":{\"dtype\":3,\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "'x': dtype" },
		{ "{\"x\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "'x': dtype missing" },
		{ "{\"x\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, "'x': shape missing" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "'x': data_offsets" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8, "'x': data_offsets" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,9]}}", 8, "'x': data_offsets" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "'x': data_offsets" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-1,7]}}", 8, "'x': data_offsets" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8.0]}}", 8, "'x': data_offsets" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,1e30]}}", 8, "'x': data_offsets" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,80]}}", 8, "outside" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "need 12" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "'x': shape entry 0" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8, "'x': shape entry" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", 8, "'x': shape" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}}", 8, "9 dims" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
		  "overflow" },
		{ "{\"x\":{\"dtype\":\"F64\",\"shape\":[1152921504606846976],\"data_offsets\":[0,8]}}", 8,
		  "overflow" },
		{ "{\"x\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2, "whole number of bytes" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"extra\":1}}", 8,
		  "unknown field 'extra'" },
		{ "{\"x\":[1,2]}", 8, "'x': entry is not an object" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"__metadata__\":{\"k\":1}}", 8,
		  "value of 'k'" },
		{ "{\"__metadata__\":[\"k\"]}", 0, "__metadata__" },
		{ "[]", 0, "not a json object" },
		{ "\"str\"", 0, "not a json object" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "json" },
		{ "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],}}", 8, "json" },
		{ "{\"x\":1,\"x\":2}", 0, "json" },
		{ "{\"a\\u0001b\":{\"dtype\":\"F7\",\"shape\":[],\"data_offsets\":[0,4]}}", 4, "'a?b'" },
		{ "{\"\xff\":1}", 0, "json" },
		{ "   ", 0, "json" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		write_raw(p, cases[i].header, data, cases[i].dlen);
		int ok = read_fails(p, cases[i].want);
		CHECK(ok);
		if (!ok)
			fprintf(stderr, "  (case %zu)\n", i);
	}
	/* a long name is shortened in messages */
	sf_buf h = { 0 };
	sf_buf_puts(&h, "{\"");
	for (int i = 0; i < 300; i++)
		sf_buf_puts(&h, "n");
	sf_buf_puts(&h, "\":{\"dtype\":\"F9\",\"shape\":[],\"data_offsets\":[0,4]}}");
	write_raw(p, h.data, data, 4);
	sf_buf_free(&h);
	CHECK(read_fails(p, "nnn...'"));
	sf_rm_rf(dir);
	free(p);
	free(dir);
}

SF_TEST(safetensors_write_errors)
{
	char *dir = tmp_dir();
	char *p = sf_path_join(dir, "w.safetensors");
	char err[SF_ERRLEN];
	float v[4] = { 0 };
	sf_st_tensor good = { .name = "a", .dt = SF_DT_F32, .ndim = 1, .shape = { 4 }, .data = v, .nbytes = 16 };
	sf_st_tensor t[2] = { good, good };
	/* duplicate names */
	err[0] = 0;
	CHECK_INT(sf_st_write(p, t, 2, NULL, err, sizeof err), -1);
	CHECK(strstr(err, "'a' given twice") != NULL);
	t[1].name = "b";
	CHECK_INT(sf_st_write(p, t, 2, NULL, err, sizeof err), 0);
	t[1].nbytes = 12;
	CHECK_INT(sf_st_write(p, t, 2, NULL, err, sizeof err), -1);
	CHECK(strstr(err, "'b'") && strstr(err, "nbytes"));
	t[1] = good;
	t[1].name = "__metadata__";
	CHECK_INT(sf_st_write(p, t, 2, NULL, err, sizeof err), -1);
	CHECK(strstr(err, "reserved") != NULL);
	t[1].name = "bad\xff";
	CHECK_INT(sf_st_write(p, t, 2, NULL, err, sizeof err), -1);
	t[1].name = "\xc0\x80"; /* overlong NUL */
	CHECK_INT(sf_st_write(p, t, 2, NULL, err, sizeof err), -1);
	t[1].name = "\xed\xa0\x80"; /* surrogate */
	CHECK_INT(sf_st_write(p, t, 2, NULL, err, sizeof err), -1);
	t[1].name = NULL;
	CHECK_INT(sf_st_write(p, t, 2, NULL, err, sizeof err), -1);
	t[1] = good;
	t[1].name = "b";
	t[1].dt = SF_DT_INVALID;
	CHECK_INT(sf_st_write(p, t, 2, NULL, err, sizeof err), -1);
	CHECK(strstr(err, "dtype") != NULL);
	t[1].dt = SF_DT_E2M1;
	t[1].shape[0] = 3;
	t[1].nbytes = 2;
	CHECK_INT(sf_st_write(p, t, 2, NULL, err, sizeof err), -1);
	CHECK(strstr(err, "whole number of bytes") != NULL);
	t[1] = good;
	t[1].name = "b";
	t[1].ndim = 9;
	CHECK_INT(sf_st_write(p, t, 2, NULL, err, sizeof err), -1);
	t[1].ndim = -1;
	CHECK_INT(sf_st_write(p, t, 2, NULL, err, sizeof err), -1);
	t[1].ndim = 1;
	t[1].shape[0] = -4;
	CHECK_INT(sf_st_write(p, t, 2, NULL, err, sizeof err), -1);
	t[1].shape[0] = 4;
	t[1].data = NULL;
	CHECK_INT(sf_st_write(p, t, 2, NULL, err, sizeof err), -1);
	t[1].data = v;
	CHECK_INT(sf_st_write(p, t, -1, NULL, err, sizeof err), -1);
	/* metadata */
	const char *m1[] = { "k", "v", "k", "w", NULL };
	CHECK_INT(sf_st_write(p, t, 2, m1, err, sizeof err), -1);
	CHECK(strstr(err, "twice") != NULL);
	const char *m2[] = { "k", NULL, NULL };
	CHECK_INT(sf_st_write(p, t, 2, m2, err, sizeof err), -1);
	const char *m3[] = { "k", "\xff", NULL };
	CHECK_INT(sf_st_write(p, t, 2, m3, err, sizeof err), -1);
	const char *m4[] = { NULL };
	CHECK_INT(sf_st_write(p, t, 2, m4, err, sizeof err), 0);
	/* an unwritable place; no temporary file left behind on failure */
	char *nodir = sf_path_join(dir, "no/such/dir/x.safetensors");
	CHECK_INT(sf_st_write(nodir, t, 2, NULL, err, sizeof err), -1);
	CHECK(strstr(err, nodir) != NULL);
	free(nodir);
	/* a failed write leaves the previous file intact */
	sf_st_file f;
	CHECK_INT(sf_st_read(p, &f, err, sizeof err), 0);
	CHECK_INT(f.n, 2);
	sf_st_close(&f);
	sf_rm_rf(dir);
	free(p);
	free(dir);
}

/* Random byte flips, insertions and truncations of a valid file: reading must never crash, and a
 * file that still reads has every tensor inside the mapping. */
SF_TEST(safetensors_mutations)
{
	rs = sf_test_seed() ^ 0xf1a9;
	char *dir = tmp_dir();
	char *p = sf_path_join(dir, "m.safetensors");
	char err[SF_ERRLEN];
	double a[6] = { 1, 2, 3, 4, 5, 6 };
	uint8_t b[5] = { 1, 2, 3, 4, 5 };
	sf_st_tensor ts[3] = {
		{ .name = "a", .dt = SF_DT_F64, .ndim = 2, .shape = { 2, 3 }, .data = a, .nbytes = 48 },
		{ .name = "b", .dt = SF_DT_U8, .ndim = 1, .shape = { 5 }, .data = b, .nbytes = 5 },
		{ .name = "c", .dt = SF_DT_E2M1, .ndim = 1, .shape = { 10 }, .data = b, .nbytes = 5 },
	};
	const char *md[] = { "k", "v", NULL };
	CHECK_INT(sf_st_write(p, ts, 3, md, err, sizeof err), 0);
	char *orig = NULL;
	size_t len = 0;
	CHECK_INT(sf_read_file(p, &orig, &len, err, sizeof err), 0);
	int ok = 0, failed = 0;
	for (int it = 0; it < 3000 && orig; it++) {
		char *m = malloc(len + 16);
		memcpy(m, orig, len);
		size_t mlen = len;
		int kind = (int)(rnd() % 4);
		int flips = 1 + (int)(rnd() % 3);
		for (int k = 0; k < flips; k++) {
			size_t at = (size_t)(rnd() % mlen);
			if (kind == 0) /* any byte */
				m[at] = (char)rnd();
			else if (kind == 1) /* header bytes only, printable */
				m[8 + rnd() % (mlen - 8 - 58)] = (char)(0x20 + rnd() % 95);
			else if (kind == 2) /* digits in the header */
				m[8 + rnd() % (mlen - 8 - 58)] = (char)('0' + rnd() % 10);
		}
		if (kind == 3)
			mlen = (size_t)(rnd() % len);
		if (sf_write_file(p, m, mlen, err, sizeof err) == 0) {
			sf_st_file f;
			if (sf_st_read(p, &f, err, sizeof err) == 0) {
				ok++;
				for (int i = 0; i < f.n; i++) {
					const uint8_t *d = f.t[i].data, *lo = f.map;
					CHECK(d >= lo && d + f.t[i].nbytes <= lo + f.map_len);
					unsigned s = 0;
					for (size_t k = 0; k < f.t[i].nbytes; k++)
						s += d[k];
					(void)s;
				}
				sf_st_close(&f);
			} else {
				failed++;
				CHECK(strchr(err, '\n') == NULL);
			}
		}
		free(m);
	}
	CHECK(failed > 0);
	free(orig);
	sf_rm_rf(dir);
	free(p);
	free(dir);
}
