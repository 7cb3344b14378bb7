/*
 * test_sha256.c - SHA-256 against the FIPS 180-2/180-4 example vectors, block-boundary lengths,
 * and incremental-vs-one-shot agreement on random data split at random points.
 */
#include "test.h"
#include "core/sha256.h"

#include <stdlib.h>

/* Digest of data fed through init/update/final in one update, as hex. */
static void hex_of(const uint8_t d[32], char out[65])
{
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* splitmix64: the test's own random stream from a seed. */
static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

SF_TEST(sha256_nist_vectors)
{
	char h[65];
	sf_sha256_hex("", 0, h);
	CHECK_STR(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sf_sha256_hex("abc", 3, h);
	CHECK_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	CHECK_INT(strlen(m448) * 8, 448);
	sf_sha256_hex(m448, strlen(m448), h);
	CHECK_STR(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
			   "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
	CHECK_INT(strlen(m896) * 8, 896);
	sf_sha256_hex(m896, strlen(m896), h);
	CHECK_STR(h, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

SF_TEST(sha256_million_a)
{
	static const char want[] = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
	char chunk[1000];
	memset(chunk, 'a', sizeof chunk);
	sf_sha256 s;
	uint8_t d[32];
	char h[65];
	sf_sha256_init(&s);
	for (int i = 0; i < 1000; i++)
		sf_sha256_update(&s, chunk, sizeof chunk);
	sf_sha256_final(&s, d);
	hex_of(d, h);
	CHECK_STR(h, want);

	/* again in chunks of random sizes (1..1000 bytes) */
	uint64_t r = sf_test_seed() ^ 0x5a5a0001ull;
	size_t left = 1000000;
	sf_sha256_init(&s);
	while (left) {
		size_t n = 1 + (size_t)(next_rand(&r) % 1000);
		if (n > left)
			n = left;
		sf_sha256_update(&s, chunk, n);
		left -= n;
	}
	sf_sha256_final(&s, d);
	hex_of(d, h);
	CHECK_STR(h, want);
}

SF_TEST(sha256_block_boundaries)
{
	/* lengths around the 55/56-byte padding edge and the 64-byte block edge */
	static const struct {
		size_t n;
		const char *hex;
	} v[] = {
		{ 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318" },
		{ 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a" },
		{ 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34" },
		{ 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb" },
		{ 65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0" },
		{ 119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb" },
		{ 120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c" },
	};
	char buf[128], h[65];
	memset(buf, 'a', sizeof buf);
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		sf_sha256_hex(buf, v[i].n, h);
		CHECK_STR(h, v[i].hex);
		/* byte at a time gives the same */
		sf_sha256 s;
		uint8_t d[32];
		sf_sha256_init(&s);
		for (size_t k = 0; k < v[i].n; k++)
			sf_sha256_update(&s, buf + k, 1);
		sf_sha256_update(&s, NULL, 0);
		sf_sha256_final(&s, d);
		hex_of(d, h);
		CHECK_STR(h, v[i].hex);
	}
}

SF_TEST(sha256_random_splits)
{
	uint64_t r = sf_test_seed() ^ 0x5a5a0002ull;
	uint8_t *data = malloc(4096);
	for (int iter = 0; iter < 200; iter++) {
		size_t len = (size_t)(next_rand(&r) % 4097);
		for (size_t i = 0; i < len; i++)
			data[i] = (uint8_t)next_rand(&r);
		char one[65], inc[65];
		sf_sha256_hex(data, len, one);
		sf_sha256 s;
		uint8_t d[32];
		sf_sha256_init(&s);
		size_t pos = 0;
		while (pos < len) {
			size_t n = (size_t)(next_rand(&r) % 150);
			if (n > len - pos)
				n = len - pos;
			sf_sha256_update(&s, data + pos, n);
			pos += n;
		}
		sf_sha256_final(&s, d);
		hex_of(d, inc);
		CHECK_STR(inc, one);
		/* one flipped bit changes the digest */
		if (len) {
			size_t at = (size_t)(next_rand(&r) % len);
			data[at] ^= (uint8_t)(1u << (next_rand(&r) % 8));
			sf_sha256_hex(data, len, inc);
			CHECK(strcmp(inc, one) != 0);
		}
	}
	free(data);
}
