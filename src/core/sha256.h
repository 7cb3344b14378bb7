/*
 * sha256.h - SHA-256 (FIPS 180-4), incremental and one-shot, for content-addressed caches.
 */
#ifndef SF_SHA256_H
#define SF_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sf_sha256 {
	uint32_t h[8];     /* chaining state */
	uint64_t nbytes;   /* message length so far */
	uint8_t block[64]; /* pending partial block */
	size_t fill;       /* bytes in block */
} sf_sha256;

/* Starts a new hash. */
void sf_sha256_init(sf_sha256 *s);
/* Feeds len bytes (data may be NULL when len is 0). */
void sf_sha256_update(sf_sha256 *s, const void *data, size_t len);
/* Finishes the hash and writes the 32-byte digest; s must be re-initialized before reuse. */
void sf_sha256_final(sf_sha256 *s, uint8_t out[32]);
/* One-shot: the digest of data[0..len) as 64 lowercase hex digits and a NUL. */
void sf_sha256_hex(const void *data, size_t len, char out[65]);

#endif
