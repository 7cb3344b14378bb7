/*
 * safetensors.h - reading and writing the safetensors format (the tensor files solforge exchanges
 * with runners and with Python tooling).
 *
 * File layout: an 8-byte little-endian header length N, N bytes of UTF-8 JSON (an object mapping
 * each tensor name to {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, plus an optional
 * "__metadata__" object of string values), padded with spaces to a multiple of 8, then the data
 * section. Offsets are relative to the data section; the tensors cover it exactly, back to back.
 * Elements are little-endian and row-major; float4 (dtype "F4") packs two elements per byte, element
 * 2k in the low nibble, and the shape counts elements. Dtype strings: see sf_dt_safetensors_name.
 */
#ifndef SF_SAFETENSORS_H
#define SF_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

#define SF_ST_MAX_DIMS 8
#define SF_ST_MAX_HEADER 100000000 /* bytes, the limit the reference implementation uses */

typedef struct sf_st_tensor {
	char *name;
	sf_dt dt;
	int ndim;
	int64_t shape[SF_ST_MAX_DIMS];
	void *data;
	size_t nbytes;
} sf_st_tensor;

/*
 * Writes n tensors and optional metadata to `path` (atomically: a temporary file in the same folder,
 * then rename). The tensors' fields are read, not owned; data must hold nbytes bytes, and nbytes must
 * be numel * bits / 8 exactly (float4: an even number of elements). `metadata` is NULL or a list of
 * key, value string pairs ended by a NULL key. Names must be distinct, valid UTF-8 and not
 * "__metadata__"; metadata keys distinct and valid UTF-8. Tensors are laid out by decreasing element
 * size, then by name, so every tensor is aligned to its element size in the file (the order the
 * reference implementation uses). Returns 0, or -1 with a message naming the file and tensor.
 */
int sf_st_write(const char *path, const sf_st_tensor *ts, int n, const char *const *metadata, char *err,
		size_t errlen);

typedef struct sf_st_file {
	int n;
	sf_st_tensor *t;  /* header order; names owned, data points into map (read-only memory) */
	void *map;        /* the whole file, mapped read-only */
	size_t map_len;
	char **meta_keys, **meta_vals;
	int n_meta;
} sf_st_file;

/*
 * Maps `path` and validates it completely: header length within the file and at most
 * SF_ST_MAX_HEADER, a JSON object header, known dtypes, at most 8 non-negative dims, numel * bits
 * a whole number of bytes equal to end - begin, offsets within the data section, no overlap, no gap
 * and no trailing bytes (the tensors tile the data section as the format requires), string-valued
 * metadata, no unknown fields. On success fills *out (release with sf_st_close) and returns 0; on
 * failure *out is zeroed and err holds one line naming the file and the tensor or field at fault.
 * Data of files solforge wrote is aligned to the element size; other writers' may not be (read it
 * with memcpy / sf_load).
 */
int sf_st_read(const char *path, sf_st_file *out, char *err, size_t errlen);

/* The tensor called `name`, or NULL. */
const sf_st_tensor *sf_st_find(const sf_st_file *f, const char *name);

/* The metadata value for `key`, or NULL. */
const char *sf_st_meta(const sf_st_file *f, const char *key);

/* Unmaps and frees everything; *f is zeroed. A zeroed file is fine; so is NULL. */
void sf_st_close(sf_st_file *f);

/* Number of elements of a tensor (1 for 0 dims); -1 on int64 overflow or a negative dim. */
int64_t sf_st_numel(const sf_st_tensor *t);

#endif
