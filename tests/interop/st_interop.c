/*
 * st_interop.c - the C side of the safetensors interop check (tools/interop_safetensors.sh):
 *   st_interop write PATH            writes the interop tensor set with sf_st_write
 *   st_interop check PATH PRODUCER   reads PATH with sf_st_read and checks every tensor, value by
 *                                    value, and the metadata "producer" == PRODUCER
 * The tensor set (one 4x4 tensor per dtype named by its definition name, a 0-d float32 "scalar",
 * an empty int32 "empty", metadata producer / note) is mirrored in tests/interop/check_safetensors.py.
 * Exit status 0 when everything matched.
 */
#include "core/safetensors.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every one of these is exactly representable in every float dtype (float4_e2m1 included). */
static const double VALS[16] = { 0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -1, -1.5, -2, -3, -4, -6, -0.0 };

static const char *NOTE = "h\xc3\xa9llo \"quoted\" \\ tab\t";

/* Value of element i of the tensor of dtype dt (as a double; integers exact). */
static double value(sf_dt dt, int i)
{
	if (sf_dt_is_float(dt))
		return VALS[i];
	switch (dt) {
	case SF_DT_U8: return i * 13 + 7;
	case SF_DT_BOOL: return i % 3 == 0;
	default: return i * 7 - 50;
	}
}

static int write_set(const char *path)
{
	sf_st_tensor ts[SF_DT_COUNT + 2];
	uint8_t *bufs[SF_DT_COUNT + 2] = { 0 };
	int n = 0;
	for (int dt = SF_DT_F64; dt < SF_DT_COUNT; dt++, n++) {
		sf_st_tensor *t = &ts[n];
		memset(t, 0, sizeof *t);
		t->name = (char *)sf_dt_name((sf_dt)dt);
		t->dt = (sf_dt)dt;
		t->ndim = 2;
		t->shape[0] = t->shape[1] = 4;
		t->nbytes = (size_t)sf_dt_bytes(t->dt, 16);
		bufs[n] = sf_xcalloc(t->nbytes, 1);
		for (int i = 0; i < 16; i++)
			sf_store(bufs[n], t->dt, i, value(t->dt, i));
		t->data = bufs[n];
	}
	float sc = 2.5f;
	ts[n++] = (sf_st_tensor){ .name = "scalar", .dt = SF_DT_F32, .ndim = 0, .data = &sc, .nbytes = 4 };
	ts[n++] = (sf_st_tensor){ .name = "empty", .dt = SF_DT_I32, .ndim = 2, .shape = { 0, 3 }, .data = NULL,
				  .nbytes = 0 };
	const char *md[] = { "producer", "solforge", "note", NOTE, NULL };
	char err[SF_ERRLEN];
	int rc = sf_st_write(path, ts, n, md, err, sizeof err);
	if (rc)
		fprintf(stderr, "st_interop: %s\n", err);
	for (int i = 0; i < n; i++)
		free(bufs[i]);
	return rc;
}

static int check_set(const char *path, const char *producer)
{
	sf_st_file f;
	char err[SF_ERRLEN];
	if (sf_st_read(path, &f, err, sizeof err)) {
		fprintf(stderr, "st_interop: %s\n", err);
		return -1;
	}
	int bad = 0;
	if (f.n != SF_DT_COUNT - SF_DT_F64 + 2) {
		fprintf(stderr, "st_interop: %d tensors, expected %d\n", f.n, SF_DT_COUNT - SF_DT_F64 + 2);
		bad++;
	}
	for (int dt = SF_DT_F64; dt < SF_DT_COUNT; dt++) {
		const char *name = sf_dt_name((sf_dt)dt);
		const sf_st_tensor *t = sf_st_find(&f, name);
		if (!t || t->dt != (sf_dt)dt || t->ndim != 2 || t->shape[0] != 4 || t->shape[1] != 4) {
			fprintf(stderr, "st_interop: tensor %s missing or with the wrong dtype or shape\n", name);
			bad++;
			continue;
		}
		for (int i = 0; i < 16; i++) {
			double got = sf_load(t->data, t->dt, i), want = value(t->dt, i);
			if (memcmp(&got, &want, 8) != 0) {
				fprintf(stderr, "st_interop: %s[%d] = %g, expected %g\n", name, i, got, want);
				bad++;
			}
		}
	}
	const sf_st_tensor *s = sf_st_find(&f, "scalar"), *e = sf_st_find(&f, "empty");
	if (!s || s->dt != SF_DT_F32 || s->ndim != 0 || sf_load(s->data, SF_DT_F32, 0) != 2.5) {
		fprintf(stderr, "st_interop: tensor scalar wrong\n");
		bad++;
	}
	if (!e || e->dt != SF_DT_I32 || e->ndim != 2 || e->shape[0] != 0 || e->shape[1] != 3 || e->nbytes) {
		fprintf(stderr, "st_interop: tensor empty wrong\n");
		bad++;
	}
	const char *p = sf_st_meta(&f, "producer"), *note = sf_st_meta(&f, "note");
	if (!p || strcmp(p, producer) || !note || strcmp(note, NOTE) || f.n_meta != 2) {
		fprintf(stderr, "st_interop: metadata wrong (producer %s)\n", p ? p : "(none)");
		bad++;
	}
	sf_st_close(&f);
	return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "write"))
		return write_set(argv[2]) ? 1 : 0;
	if (argc == 4 && !strcmp(argv[1], "check"))
		return check_set(argv[2], argv[3]) ? 1 : 0;
	fprintf(stderr, "usage: st_interop write PATH | st_interop check PATH PRODUCER\n");
	return 2;
}
