/*
 * test_numeric.c - bit-exact checks of include/solforge/numeric.h: the dtype conversions (known bit
 * patterns, rounding ties, overflow, NaN, subnormals), exhaustive decode/encode round trips of every
 * 8- and 16-bit code, the encoders against independent references (a nearest-value table search,
 * a round-to-odd float bit trick for bfloat16, the compiler's _Float16 where it has one) over random
 * doubles, and sf_load / sf_store / sf_load_int / sf_store_int for every dtype (float4 nibbles too).
 */
#include "test.h"
#include "solforge/numeric.h"
#include "solforge/rng.h"

#include <float.h>
#include <stdlib.h>

/* ---- helpers ---- */

static uint64_t rng_state;

static uint64_t next_u64(void)
{
	rng_state += 0x9E3779B97F4A7C15ull;
	return sf_mix64(rng_state);
}

static void seed_rng(uint64_t salt)
{
	rng_state = sf_test_seed() ^ (salt * 0xD1B54A32D192ED03ull);
}

/* Same double, bit for bit (so -0 != +0 and NaN == NaN only as the same bits). */
static int same_bits(double a, double b)
{
	return sf_f64_bits(a) == sf_f64_bits(b);
}

/* Same value, counting every NaN equal and telling -0 from +0. */
static int same_value(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return same_bits(a, b);
}

/* A description of one small binary float format, for the reference implementations below. */
typedef struct fmt {
	const char *name;
	int ebits, mbits, bias;
	int has_inf;      /* IEEE-like: all-ones exponent is inf / NaN */
	int nan_ones;     /* e4m3fn: only S.1111.111 is NaN */
	int has_nan;      /* 0 for e2m1 */
	uint32_t max_code; /* largest finite positive code */
	uint32_t (*enc)(double);
	double (*dec)(uint32_t);
} fmt;

static uint32_t enc_f16(double v) { return sf_f64_to_f16(v); }
static double dec_f16(uint32_t c) { return sf_f16_to_f64((uint16_t)c); }
static uint32_t enc_bf16(double v) { return sf_f64_to_bf16(v); }
static double dec_bf16(uint32_t c) { return sf_bf16_to_f64((uint16_t)c); }
static uint32_t enc_e4m3(double v) { return sf_f64_to_e4m3(v); }
static double dec_e4m3(uint32_t c) { return sf_e4m3_to_f64((uint8_t)c); }
static uint32_t enc_e5m2(double v) { return sf_f64_to_e5m2(v); }
static double dec_e5m2(uint32_t c) { return sf_e5m2_to_f64((uint8_t)c); }
static uint32_t enc_e2m1(double v) { return sf_f64_to_e2m1(v); }
static double dec_e2m1(uint32_t c) { return sf_e2m1_to_f64((uint8_t)c); }

static const fmt FMT_F16 = { "float16", 5, 10, 15, 1, 0, 1, 0x7bff, enc_f16, dec_f16 };
static const fmt FMT_BF16 = { "bfloat16", 8, 7, 127, 1, 0, 1, 0x7f7f, enc_bf16, dec_bf16 };
static const fmt FMT_E4M3 = { "float8_e4m3fn", 4, 3, 7, 0, 1, 1, 0x7e, enc_e4m3, dec_e4m3 };
static const fmt FMT_E5M2 = { "float8_e5m2", 5, 2, 15, 1, 0, 1, 0x7b, enc_e5m2, dec_e5m2 };
static const fmt FMT_E2M1 = { "float4_e2m1", 2, 1, 1, 0, 0, 0, 0x7, enc_e2m1, dec_e2m1 };

static uint32_t fmt_sign(const fmt *f)
{
	return 1u << (f->ebits + f->mbits);
}

/* Reference decoder: the value of a code from its fields with ldexp (independent of numeric.h). */
static double ref_decode(const fmt *f, uint32_t c)
{
	uint32_t e = (c >> f->mbits) & ((1u << f->ebits) - 1), m = c & ((1u << f->mbits) - 1);
	int neg = (c & fmt_sign(f)) != 0;
	double v;
	if (f->has_inf && e == (1u << f->ebits) - 1)
		v = m ? NAN : INFINITY;
	else if (f->nan_ones && e == (1u << f->ebits) - 1 && m == (1u << f->mbits) - 1)
		v = NAN;
	else if (e == 0)
		v = ldexp((double)m, 1 - f->bias - f->mbits);
	else
		v = ldexp((double)((1u << f->mbits) + m), (int)e - f->bias - f->mbits);
	return neg ? -v : v;
}

/*
 * Reference encoder: round-to-nearest-even by searching the (monotonic) table of positive finite
 * values for the neighbours of |v|. Overflow: IEEE formats give inf from max + half an ulp up (that
 * tie goes to the even "next" code, which is inf); saturating formats clamp to the max. NaN: the
 * format's NaN code (callers compare NaN-ness only), or the max for formats without NaN.
 */
static uint32_t ref_encode(const fmt *f, const double *pos, double v)
{
	uint32_t sign = signbit(v) ? fmt_sign(f) : 0;
	double a = fabs(v);
	uint32_t maxc = f->max_code;
	if (isnan(v)) /* formats with a NaN: enc_matches compares NaN-ness and sign only */
		return sign | maxc;
	if (a >= pos[maxc]) {
		if (!f->has_inf || a == pos[maxc])
			return sign | maxc;
		double ulp = pos[maxc] - pos[maxc - 1];
		if (a >= pos[maxc] + ulp / 2)
			return sign | (((1u << f->ebits) - 1) << f->mbits);
		return sign | maxc;
	}
	uint32_t lo = 0, hi = maxc; /* pos[lo] <= a < pos[hi] */
	while (hi - lo > 1) {
		uint32_t mid = (lo + hi) / 2;
		if (pos[mid] <= a)
			lo = mid;
		else
			hi = mid;
	}
	double dlo = a - pos[lo], dhi = pos[hi] - a; /* exact: neighbours of a within one binade */
	uint32_t c;
	if (dlo < dhi)
		c = lo;
	else if (dhi < dlo)
		c = hi;
	else
		c = (lo & 1) ? hi : lo;
	return sign | c;
}

/* Table of the positive finite values, pos[c] for c = 0..max_code (caller frees). */
static double *pos_table(const fmt *f)
{
	double *pos = malloc((f->max_code + 1) * sizeof(double));
	for (uint32_t c = 0; c <= f->max_code; c++)
		pos[c] = ref_decode(f, c);
	return pos;
}

static int is_nan_code(const fmt *f, uint32_t c)
{
	return isnan(ref_decode(f, c));
}

/* Compares f->enc(v) with the reference; NaN results compare by NaN-ness. Returns 1 if equal. */
static int enc_matches(const fmt *f, const double *pos, double v)
{
	uint32_t got = f->enc(v), want = ref_encode(f, pos, v);
	if (f->has_nan && isnan(v))
		return is_nan_code(f, got) && ((got & fmt_sign(f)) == (want & fmt_sign(f)));
	if (got != want) {
		fprintf(stderr, "  %s: encode(%a) = 0x%x, reference 0x%x\n", f->name, v, got, want);
		return 0;
	}
	return 1;
}

/*
 * The full check of one format: every code decodes as the reference says; every non-NaN code
 * round-trips through encode; every midpoint between adjacent codes (a tie), and the doubles just
 * either side of it, encode as the reference says; plus `n_random` random doubles in and around
 * the format's range. Returns the number of mismatches.
 */
static int check_format(const fmt *f, int n_random)
{
	int bad = 0;
	uint32_t ncodes = fmt_sign(f) << 1;
	double *pos = pos_table(f);
	for (uint32_t c = 0; c < ncodes; c++) {
		double d = f->dec(c), r = ref_decode(f, c);
		if (!same_value(d, r) || (isnan(d) && signbit(d) != signbit(r))) {
			if (bad++ < 10)
				fprintf(stderr, "  %s: decode(0x%x) = %a, reference %a\n", f->name, c, d, r);
			continue;
		}
		if (isnan(d)) {
			if (!is_nan_code(f, f->enc(d)) && bad++ < 10)
				fprintf(stderr, "  %s: NaN code 0x%x does not encode back to NaN\n", f->name, c);
			continue;
		}
		if (f->enc(d) != c && bad++ < 10)
			fprintf(stderr, "  %s: encode(decode(0x%x)) = 0x%x\n", f->name, c, f->enc(d));
	}
	for (uint32_t c = 0; c < f->max_code; c++) {
		double mid = (pos[c] + pos[c + 1]) / 2; /* exact: one more bit than the format */
		double probes[6] = { mid, nextafter(mid, 0), nextafter(mid, INFINITY), -mid,
				     -nextafter(mid, 0), -nextafter(mid, INFINITY) };
		for (int k = 0; k < 6; k++)
			bad += !enc_matches(f, pos, probes[k]);
	}
	/* beyond the max: the overflow threshold and its neighbours */
	double ulp = pos[f->max_code] - pos[f->max_code - 1];
	double thr = pos[f->max_code] + ulp / 2;
	double edge[8] = { thr, nextafter(thr, 0), nextafter(thr, INFINITY), 2 * thr, 1e300, INFINITY,
			   DBL_MAX, pos[f->max_code] };
	for (int k = 0; k < 8; k++) {
		bad += !enc_matches(f, pos, edge[k]);
		bad += !enc_matches(f, pos, -edge[k]);
	}
	/* random doubles: exponents spread from far below the smallest subnormal to above the max */
	int lo_exp = 1 - f->bias - f->mbits - 4, hi_exp = (1 << f->ebits) - f->bias + 2;
	for (int i = 0; i < n_random; i++) {
		uint64_t r = next_u64();
		int e = lo_exp + (int)(r % (uint64_t)(hi_exp - lo_exp + 1));
		double m = 1.0 + (double)(next_u64() >> 12) * 0x1p-52;
		double v = ldexp(m, e);
		if (r & (1ull << 40))
			v = -v;
		bad += !enc_matches(f, pos, v);
	}
	/* zeros, NaN, double subnormals */
	double special[6] = { 0.0, -0.0, NAN, -NAN, 0x1p-1074, -0x1p-1060 };
	for (int k = 0; k < 6; k++)
		bad += !enc_matches(f, pos, special[k]);
	free(pos);
	return bad;
}

/* ---- bfloat16 ---- */

/*
 * Independent bfloat16 reference: round the double to float with round-to-odd (exact when the float
 * is exact, otherwise the truncated float with its last bit forced to 1), then the classic float bit
 * trick (add 0x7fff plus the lsb of the kept half, shift). Round-to-odd with 16 spare bits makes the
 * second rounding exact, so this is the correctly rounded bfloat16 of the double.
 */
static uint16_t ref_bf16(double v)
{
	float f = (float)v;
	if ((double)f != v) {
		if (fabs((double)f) > fabs(v))
			f = nextafterf(f, 0.0f);
		uint32_t u = sf_f32_bits(f) | 1u;
		f = sf_bits_f32(u);
	}
	uint32_t u = sf_f32_bits(f);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

SF_TEST(numeric_bf16_known)
{
	CHECK_INT(sf_f64_to_bf16(1.0), 0x3F80);
	CHECK_INT(sf_f64_to_bf16(-1.0), 0xBF80);
	CHECK_INT(sf_f64_to_bf16(0.0), 0x0000);
	CHECK_INT(sf_f64_to_bf16(-0.0), 0x8000);
	CHECK_INT(sf_f64_to_bf16(sf_bits_f32(0x3F808000u)), 0x3F80); /* tie, even stays */
	CHECK_INT(sf_f64_to_bf16(sf_bits_f32(0x3F818000u)), 0x3F82); /* tie, odd rounds up */
	CHECK_INT(sf_f64_to_bf16(sf_bits_f32(0x3F808001u)), 0x3F81); /* just above the tie */
	/* a double just above a bfloat16 tie that rounds to the tie as a float: no double rounding */
	CHECK_INT(sf_f64_to_bf16(1.0 + 0x1p-8 + 0x1p-40), 0x3F81);
	CHECK_INT(sf_f64_to_bf16(1.0 + 0x1p-8), 0x3F80);
	CHECK_INT(sf_f64_to_bf16(3.0e38), 0x7F62);
	CHECK_INT(sf_f64_to_bf16(sf_bits_f32(0x7F7F0000u)), 0x7F7F); /* max */
	CHECK_INT(sf_f64_to_bf16(sf_bits_f32(0x7F7F8000u)), 0x7F80); /* max + half ulp: inf */
	CHECK_INT(sf_f64_to_bf16(sf_bits_f32(0x7F7F7FFFu)), 0x7F7F);
	CHECK_INT(sf_f64_to_bf16(1e39), 0x7F80);
	CHECK_INT(sf_f64_to_bf16(-1e300), 0xFF80);
	CHECK_INT(sf_f64_to_bf16(INFINITY), 0x7F80);
	CHECK(isnan(sf_bf16_to_f64(sf_f64_to_bf16(NAN))));
	CHECK(isnan(sf_bf16_to_f64(sf_f64_to_bf16(-NAN))));
	CHECK_INT(sf_f64_to_bf16(NAN) & 0x7F80, 0x7F80);
	/* subnormals: smallest 2^-133 = 0x0001; half of it ties to 0; 1.5x rounds to 2 */
	CHECK_INT(sf_f64_to_bf16(0x1p-133), 0x0001);
	CHECK_INT(sf_f64_to_bf16(0x1p-134), 0x0000);
	CHECK_INT(sf_f64_to_bf16(0x1.8p-134), 0x0001);
	CHECK_INT(sf_f64_to_bf16(0x1.8p-133), 0x0002);
	CHECK_INT(sf_f64_to_bf16(-0x1p-134), 0x8000);
	CHECK_INT(sf_f64_to_bf16(0x1p-126), 0x0080); /* smallest normal */
	CHECK_INT(sf_f64_to_bf16(0x1.fcp-127), 0x007F); /* largest subnormal */
	CHECK_INT(sf_f64_to_bf16(0x1.fep-127), 0x0080); /* largest subnormal + half ulp: tie, up to normal */
	CHECK(same_bits(sf_bf16_to_f64(0x3F80), 1.0));
	CHECK(same_bits(sf_bf16_to_f64(0x8000), -0.0));
	CHECK(same_bits(sf_bf16_to_f64(0x0001), 0x1p-133));
	CHECK(isinf(sf_bf16_to_f64(0xFF80)) && sf_bf16_to_f64(0xFF80) < 0);
	CHECK(isnan(sf_bf16_to_f64(0x7FC1)));
	CHECK(same_bits(sf_round_bf16(1.00390625), 1.0));
}

SF_TEST(numeric_bf16_exhaustive)
{
	seed_rng(1);
	CHECK_INT(check_format(&FMT_BF16, 200000), 0);
}

SF_TEST(numeric_bf16_vs_bit_trick)
{
	seed_rng(2);
	int bad = 0;
	for (int i = 0; i < 1000000; i++) {
		/* random double bits over the whole range, and doubles near bfloat16 ties */
		double v;
		uint64_t r = next_u64();
		if (i & 1) {
			v = sf_bits_f64(r);
		} else {
			uint16_t c = (uint16_t)(r & 0x7f7f);
			uint32_t tie = ((uint32_t)c << 16) | 0x8000u;
			double t = (double)sf_bits_f32(tie);
			int off = (int)((r >> 20) % 7) - 3; /* a few doubles either side */
			uint64_t tb = sf_f64_bits(t) + (uint64_t)(int64_t)off;
			v = sf_bits_f64(tb);
			if (r >> 63)
				v = -v;
		}
		if (isnan(v))
			continue;
		uint16_t got = sf_f64_to_bf16(v), want = ref_bf16(v);
		if (got != want && bad++ < 10)
			fprintf(stderr, "  bf16(%a) = 0x%04x, bit trick 0x%04x\n", v, got, want);
	}
	CHECK_INT(bad, 0);
}

/* ---- float16 ---- */

SF_TEST(numeric_f16_known)
{
	CHECK_INT(sf_f64_to_f16(1.0), 0x3C00);
	CHECK_INT(sf_f64_to_f16(-2.0), 0xC000);
	CHECK_INT(sf_f64_to_f16(65504.0), 0x7BFF);
	CHECK_INT(sf_f64_to_f16(65519.99), 0x7BFF);
	CHECK_INT(sf_f64_to_f16(65520.0), 0x7C00); /* max + half ulp: inf */
	CHECK_INT(sf_f64_to_f16(-65520.0), 0xFC00);
	CHECK_INT(sf_f64_to_f16(1e10), 0x7C00);
	CHECK_INT(sf_f64_to_f16(-INFINITY), 0xFC00);
	CHECK_INT(sf_f64_to_f16(0x1p-24), 0x0001);   /* smallest subnormal */
	CHECK_INT(sf_f64_to_f16(0x1p-25), 0x0000);   /* half of it: ties to even 0 */
	CHECK_INT(sf_f64_to_f16(0x1.0000000000001p-25), 0x0001);
	CHECK_INT(sf_f64_to_f16(3 * 0x1p-26), 0x0001); /* 0.75 of the smallest: up */
	CHECK_INT(sf_f64_to_f16(3 * 0x1p-25), 0x0002); /* 1.5: tie, to even 2 */
	CHECK_INT(sf_f64_to_f16(5 * 0x1p-25), 0x0002); /* 2.5: tie, to even 2 */
	CHECK_INT(sf_f64_to_f16(-0x1p-26), 0x8000);
	CHECK_INT(sf_f64_to_f16(0x1p-14), 0x0400);   /* smallest normal */
	CHECK_INT(sf_f64_to_f16(0x1.ff8p-15), 0x03FF); /* largest subnormal */
	CHECK_INT(sf_f64_to_f16(0x1.ffcp-15), 0x0400); /* largest subnormal + half: tie, to normal */
	CHECK_INT(sf_f64_to_f16(1.0 + 0x1p-11), 0x3C00); /* tie at 1: even */
	CHECK_INT(sf_f64_to_f16(1.0 + 3 * 0x1p-11), 0x3C02);
	CHECK_INT(sf_f64_to_f16(1.0 + 0x1p-11 + 0x1p-50), 0x3C01);
	CHECK_INT(sf_f64_to_f16(0.1), 0x2E66);
	CHECK_INT(sf_f64_to_f16(-0.0), 0x8000);
	CHECK(isnan(sf_f16_to_f64(sf_f64_to_f16(NAN))));
	CHECK(same_bits(sf_f16_to_f64(0x7BFF), 65504.0));
	CHECK(same_bits(sf_f16_to_f64(0x0001), 0x1p-24));
	CHECK(same_bits(sf_f16_to_f64(0x83FF), -0x1.ff8p-15));
	CHECK(same_bits(sf_f16_to_f64(0x8000), -0.0));
	CHECK(isinf(sf_f16_to_f64(0x7C00)));
	CHECK(isnan(sf_f16_to_f64(0x7C01)) && isnan(sf_f16_to_f64(0xFE00)));
	CHECK(same_bits(sf_round_f16(65519.0), 65504.0));
}

SF_TEST(numeric_f16_exhaustive)
{
	seed_rng(3);
	CHECK_INT(check_format(&FMT_F16, 200000), 0);
}

#if defined(__FLT16_MAX__) && (defined(__x86_64__) || defined(__aarch64__))
#define HAVE_FLOAT16 1
#endif

/* float16 against the compiler's _Float16 conversion from double (libgcc's __truncdfhf2 on x86-64:
 * a direct, correctly rounded conversion), where the compiler has the type. */
SF_TEST(numeric_f16_vs_compiler)
{
#ifdef HAVE_FLOAT16
	seed_rng(4);
	int bad = 0;
	for (int i = 0; i < 1000000; i++) {
		uint64_t r = next_u64();
		double v;
		if (i % 3 == 0) {
			v = sf_bits_f64(r);
		} else {
			/* within float16's range (exponents -30 .. 17), a third of them near ties */
			int e = -30 + (int)(r % 48);
			v = ldexp(1.0 + (double)(next_u64() >> 12) * 0x1p-52, e);
			if (i % 3 == 2)
				v = sf_bits_f64((sf_f64_bits(v) & ~((1ull << 42) - 1)) | (1ull << 41)) ;
			if (r >> 63)
				v = -v;
		}
		if (isnan(v))
			continue;
		_Float16 h = (_Float16)v;
		uint16_t want;
		memcpy(&want, &h, 2);
		uint16_t got = sf_f64_to_f16(v);
		if (got != want && bad++ < 10)
			fprintf(stderr, "  f16(%a) = 0x%04x, _Float16 0x%04x\n", v, got, want);
		/* decode against the compiler's widening too */
		uint16_t c = (uint16_t)(r >> 48);
		_Float16 hc;
		memcpy(&hc, &c, 2);
		if (!same_value(sf_f16_to_f64(c), (double)hc) && bad++ < 10)
			fprintf(stderr, "  f16 decode 0x%04x differs from _Float16\n", c);
	}
	CHECK_INT(bad, 0);
#else
	fprintf(stderr, "  (no _Float16 in this compiler: covered by numeric_f16_exhaustive only)\n");
#endif
}

/* ---- float8 ---- */

SF_TEST(numeric_e4m3_known)
{
	CHECK_INT(sf_f64_to_e4m3(1.0), 0x38);
	CHECK_INT(sf_f64_to_e4m3(-1.0), 0xB8);
	CHECK_INT(sf_f64_to_e4m3(448.0), 0x7E);
	CHECK_INT(sf_f64_to_e4m3(464.0), 0x7E);  /* tie between 448 and (NaN slot) 480: even 448 */
	CHECK_INT(sf_f64_to_e4m3(470.0), 0x7E);  /* saturates */
	CHECK_INT(sf_f64_to_e4m3(1e6), 0x7E);
	CHECK_INT(sf_f64_to_e4m3(-1e6), 0xFE);
	CHECK_INT(sf_f64_to_e4m3(INFINITY), 0x7E);
	CHECK_INT(sf_f64_to_e4m3(-INFINITY), 0xFE);
	CHECK_INT(sf_f64_to_e4m3(NAN), 0x7F);
	CHECK_INT(sf_f64_to_e4m3(-NAN), 0xFF);
	CHECK_INT(sf_f64_to_e4m3(0x1p-9), 0x01);  /* smallest subnormal */
	CHECK_INT(sf_f64_to_e4m3(0x1p-10), 0x00); /* half of it: to even 0 */
	CHECK_INT(sf_f64_to_e4m3(0.0009765625 * 1.5), 0x01); /* 0.75 of the smallest: up */
	CHECK_INT(sf_f64_to_e4m3(3 * 0x1p-10), 0x02); /* 1.5 of the smallest: tie to even 2 */
	CHECK_INT(sf_f64_to_e4m3(0x1p-6), 0x08);  /* smallest normal */
	CHECK_INT(sf_f64_to_e4m3(0x1.ep-7), 0x08); /* largest subnormal (7/8 * 2^-6) + half: normal */
	CHECK_INT(sf_f64_to_e4m3(1.0625), 0x38);  /* tie at 1: even */
	CHECK_INT(sf_f64_to_e4m3(1.1875), 0x3A);  /* tie between 1.125 and 1.25: even 1.25 */
	CHECK_INT(sf_f64_to_e4m3(-0.0), 0x80);
	CHECK(same_bits(sf_e4m3_to_f64(0x7E), 448.0));
	CHECK(same_bits(sf_e4m3_to_f64(0x78), 256.0)); /* the top binade is finite apart from 0x7F */
	CHECK(same_bits(sf_e4m3_to_f64(0x01), 0x1p-9));
	CHECK(same_bits(sf_e4m3_to_f64(0x80), -0.0));
	CHECK(isnan(sf_e4m3_to_f64(0x7F)) && isnan(sf_e4m3_to_f64(0xFF)));
	CHECK(same_bits(sf_round_e4m3(300.0), 288.0));
}

SF_TEST(numeric_e5m2_known)
{
	CHECK_INT(sf_f64_to_e5m2(1.0), 0x3C);
	CHECK_INT(sf_f64_to_e5m2(57344.0), 0x7B);
	CHECK_INT(sf_f64_to_e5m2(61439.0), 0x7B);
	CHECK_INT(sf_f64_to_e5m2(61440.0), 0x7C); /* max + half ulp: inf */
	CHECK_INT(sf_f64_to_e5m2(1e9), 0x7C);
	CHECK_INT(sf_f64_to_e5m2(-1e9), 0xFC);
	CHECK_INT(sf_f64_to_e5m2(INFINITY), 0x7C);
	CHECK(isnan(sf_e5m2_to_f64(sf_f64_to_e5m2(NAN))));
	CHECK_INT(sf_f64_to_e5m2(0x1p-16), 0x01); /* smallest subnormal */
	CHECK_INT(sf_f64_to_e5m2(0x1p-17), 0x00);
	CHECK_INT(sf_f64_to_e5m2(3 * 0x1p-18), 0x01);
	CHECK_INT(sf_f64_to_e5m2(1.125), 0x3C);  /* tie: even */
	CHECK_INT(sf_f64_to_e5m2(1.375), 0x3E);  /* tie: even */
	CHECK(same_bits(sf_e5m2_to_f64(0x7B), 57344.0));
	CHECK(isinf(sf_e5m2_to_f64(0xFC)) && sf_e5m2_to_f64(0xFC) < 0);
	CHECK(isnan(sf_e5m2_to_f64(0x7D)) && isnan(sf_e5m2_to_f64(0x7E)) && isnan(sf_e5m2_to_f64(0x7F)));
	CHECK(same_bits(sf_round_e5m2(3.3), 3.5));
}

SF_TEST(numeric_float8_exhaustive)
{
	seed_rng(5);
	CHECK_INT(check_format(&FMT_E4M3, 200000), 0);
	CHECK_INT(check_format(&FMT_E5M2, 200000), 0);
}

/* ---- float4 ---- */

SF_TEST(numeric_e2m1)
{
	static const double vals[8] = { 0, 0.5, 1, 1.5, 2, 3, 4, 6 };
	for (int c = 0; c < 16; c++) {
		double want = (c & 8) ? -vals[c & 7] : vals[c & 7];
		CHECK(same_bits(sf_e2m1_to_f64((uint8_t)c), want));
		CHECK_INT(sf_f64_to_e2m1(want), c);
		/* the high nibble is ignored */
		CHECK(same_bits(sf_e2m1_to_f64((uint8_t)(c | 0xA0)), want));
	}
	CHECK_INT(sf_f64_to_e2m1(0.25), 0);   /* tie between 0 and 0.5: even 0 */
	CHECK_INT(sf_f64_to_e2m1(0.2500001), 1);
	CHECK_INT(sf_f64_to_e2m1(0.75), 2);   /* tie between 0.5 and 1: even 1.0 */
	CHECK_INT(sf_f64_to_e2m1(1.25), 2);   /* tie: 1.0 */
	CHECK_INT(sf_f64_to_e2m1(1.75), 4);   /* tie: 2.0 */
	CHECK_INT(sf_f64_to_e2m1(2.5), 4);    /* tie: 2.0 */
	CHECK_INT(sf_f64_to_e2m1(3.5), 6);    /* tie: 4.0 */
	CHECK_INT(sf_f64_to_e2m1(5.0), 6);    /* tie between 4 (code 6) and 6 (code 7): 4 */
	CHECK_INT(sf_f64_to_e2m1(5.0001), 7);
	CHECK_INT(sf_f64_to_e2m1(7.0), 7);    /* saturates */
	CHECK_INT(sf_f64_to_e2m1(100.0), 7);
	CHECK_INT(sf_f64_to_e2m1(INFINITY), 7);
	CHECK_INT(sf_f64_to_e2m1(-0.25), 8);  /* -0 */
	CHECK_INT(sf_f64_to_e2m1(-5.0), 14);
	CHECK_INT(sf_f64_to_e2m1(-100.0), 15);
	CHECK_INT(sf_f64_to_e2m1(-0.0), 8);
	CHECK_INT(sf_f64_to_e2m1(0x1p-1074), 0);
	CHECK_INT(sf_f64_to_e2m1(NAN), 7);    /* no NaN: the max with the sign */
	CHECK_INT(sf_f64_to_e2m1(-NAN), 15);
	CHECK(same_bits(sf_round_e2m1(2.6), 3.0));
	seed_rng(6);
	CHECK_INT(check_format(&FMT_E2M1, 200000), 0);
}

/* ---- metadata, load and store ---- */

SF_TEST(numeric_dtype_sizes)
{
	CHECK_INT(sf_dt_bits(SF_DT_F64), 64);
	CHECK_INT(sf_dt_bits(SF_DT_BF16), 16);
	CHECK_INT(sf_dt_bits(SF_DT_E5M2), 8);
	CHECK_INT(sf_dt_bits(SF_DT_E2M1), 4);
	CHECK_INT(sf_dt_bits(SF_DT_BOOL), 8);
	CHECK_INT(sf_dt_bits(SF_DT_INVALID), 0);
	CHECK_INT(sf_dt_bytes(SF_DT_E2M1, 7), 4);
	CHECK_INT(sf_dt_bytes(SF_DT_E2M1, 8), 4);
	CHECK_INT(sf_dt_bytes(SF_DT_I32, 3), 12);
	CHECK(sf_dt_is_float(SF_DT_F64) && sf_dt_is_float(SF_DT_E2M1));
	CHECK(!sf_dt_is_float(SF_DT_I64) && !sf_dt_is_float(SF_DT_BOOL) && !sf_dt_is_float(SF_DT_INVALID));
}

/* The value sf_store must leave for v in dtype dt (what sf_load must then read). */
static double stored_value(sf_dt dt, double v)
{
	switch (dt) {
	case SF_DT_F64: return v;
	case SF_DT_F32: return (double)(float)v;
	case SF_DT_F16: return sf_round_f16(v);
	case SF_DT_BF16: return sf_round_bf16(v);
	case SF_DT_E4M3: return sf_round_e4m3(v);
	case SF_DT_E5M2: return sf_round_e5m2(v);
	case SF_DT_E2M1: return sf_round_e2m1(v);
	case SF_DT_I64: case SF_DT_I32: case SF_DT_I16: case SF_DT_I8: return trunc(v);
	case SF_DT_U8: return trunc(v);
	case SF_DT_BOOL: return v != 0.0;
	default: return 0;
	}
}

SF_TEST(numeric_load_store)
{
	seed_rng(7);
	enum { N = 257 };
	for (int dt = SF_DT_F64; dt < SF_DT_COUNT; dt++) {
		uint8_t buf[N * 8 + 8];
		double vals[N];
		memset(buf, 0xA5, sizeof buf);
		for (int i = 0; i < N; i++) {
			double v = ldexp((double)(int64_t)(next_u64() >> 40) - (double)(1 << 23), -17);
			if (dt >= SF_DT_I64) /* integral, in range of every integer dtype incl. u8 */
				v = (double)(next_u64() % 100);
			if (dt == SF_DT_BOOL)
				v = (double)(next_u64() % 3);
			vals[i] = v;
			sf_store(buf, (sf_dt)dt, i, v);
		}
		int bad = 0;
		for (int i = 0; i < N; i++) {
			double want = stored_value((sf_dt)dt, vals[i]);
			if (!same_bits(sf_load(buf, (sf_dt)dt, i), want) && bad++ < 5)
				fprintf(stderr, "  dtype %d element %d: load %a, want %a\n", dt, i,
					sf_load(buf, (sf_dt)dt, i), want);
			if (dt >= SF_DT_I64 && sf_load_int(buf, (sf_dt)dt, i) != (int64_t)want && bad++ < 5)
				fprintf(stderr, "  dtype %d element %d: load_int wrong\n", dt, i);
		}
		CHECK_INT(bad, 0);
		/* nothing past the last element is touched */
		int64_t used = sf_dt_bytes((sf_dt)dt, N);
		int past = 0;
		for (size_t k = (size_t)used; k < sizeof buf; k++)
			past += buf[k] != 0xA5;
		if (dt == SF_DT_E2M1) /* element N-1 = 256 is the low nibble of the last byte */
			past += (buf[used - 1] >> 4) != 0xA;
		CHECK_INT(past, 0);
	}
}

SF_TEST(numeric_float4_nibbles)
{
	uint8_t b[3] = { 0, 0, 0xFF };
	sf_store(b, SF_DT_E2M1, 0, 1.0);  /* code 2, low nibble of byte 0 */
	sf_store(b, SF_DT_E2M1, 1, -6.0); /* code 15, high nibble */
	sf_store(b, SF_DT_E2M1, 2, 0.5);  /* code 1 */
	sf_store(b, SF_DT_E2M1, 3, 3.0);  /* code 5 */
	CHECK_INT(b[0], 0xF2);
	CHECK_INT(b[1], 0x51);
	CHECK_INT(b[2], 0xFF);
	sf_store(b, SF_DT_E2M1, 0, 4.0); /* overwrite: only the low nibble changes */
	CHECK_INT(b[0], 0xF6);
	sf_store(b, SF_DT_E2M1, 5, 0.0); /* high nibble of byte 2 */
	CHECK_INT(b[2], 0x0F);
	CHECK(same_bits(sf_load(b, SF_DT_E2M1, 0), 4.0));
	CHECK(same_bits(sf_load(b, SF_DT_E2M1, 1), -6.0));
	CHECK(same_bits(sf_load(b, SF_DT_E2M1, 2), 0.5));
	CHECK(same_bits(sf_load(b, SF_DT_E2M1, 3), 3.0));
	CHECK(same_bits(sf_load(b, SF_DT_E2M1, 4), -6.0));
	CHECK(same_bits(sf_load(b, SF_DT_E2M1, 5), 0.0));
	uint8_t c = 0x3C; /* decode of a raw byte: element 0 = 0xC = -2, element 1 = 0x3 = 1.5 */
	CHECK(same_bits(sf_load(&c, SF_DT_E2M1, 0), -2.0));
	CHECK(same_bits(sf_load(&c, SF_DT_E2M1, 1), 1.5));
	CHECK(same_bits(sf_load_int(&c, SF_DT_E2M1, 1), 1)); /* float dtypes: truncated value */
}

SF_TEST(numeric_store_int)
{
	uint8_t buf[64];
	int64_t big = (int64_t)1 << 60 | 12345; /* not exact as a double */
	sf_store_int(buf, SF_DT_I64, 1, big);
	CHECK(sf_load_int(buf, SF_DT_I64, 1) == big);
	sf_store_int(buf, SF_DT_I64, 2, INT64_MIN);
	CHECK(sf_load_int(buf, SF_DT_I64, 2) == INT64_MIN);
	sf_store_int(buf, SF_DT_I32, 0, -7);
	CHECK_INT(sf_load_int(buf, SF_DT_I32, 0), -7);
	sf_store_int(buf, SF_DT_I16, 3, -32768);
	CHECK_INT(sf_load_int(buf, SF_DT_I16, 3), -32768);
	sf_store_int(buf, SF_DT_I8, 5, -128);
	CHECK_INT(sf_load_int(buf, SF_DT_I8, 5), -128);
	CHECK_INT(buf[5], 0x80);
	sf_store_int(buf, SF_DT_U8, 6, 255);
	CHECK_INT(sf_load_int(buf, SF_DT_U8, 6), 255);
	sf_store_int(buf, SF_DT_BOOL, 7, 42);
	CHECK_INT(buf[7], 1);
	CHECK_INT(sf_load_int(buf, SF_DT_BOOL, 7), 1);
	sf_store_int(buf, SF_DT_F32, 4, 16777217); /* rounds as a float store */
	CHECK(same_bits(sf_load(buf, SF_DT_F32, 4), 16777216.0));
	sf_store_int(buf, SF_DT_BF16, 1, 3);
	CHECK_INT(sf_load_int(buf, SF_DT_BF16, 1), 3);
	/* sf_store into integer dtypes: truncation toward zero, saturating, NaN -> 0 */
	sf_store(buf, SF_DT_I32, 0, -2.9);
	CHECK_INT(sf_load_int(buf, SF_DT_I32, 0), -2);
	sf_store(buf, SF_DT_I32, 0, 1e20);
	CHECK_INT(sf_load_int(buf, SF_DT_I32, 0), INT32_MAX);
	sf_store(buf, SF_DT_I32, 0, -1e20);
	CHECK_INT(sf_load_int(buf, SF_DT_I32, 0), INT32_MIN);
	sf_store(buf, SF_DT_I32, 0, NAN);
	CHECK_INT(sf_load_int(buf, SF_DT_I32, 0), 0);
	sf_store(buf, SF_DT_I64, 0, 1e19);
	CHECK(sf_load_int(buf, SF_DT_I64, 0) == INT64_MAX);
	sf_store(buf, SF_DT_I64, 0, -0x1p63);
	CHECK(sf_load_int(buf, SF_DT_I64, 0) == INT64_MIN);
	sf_store(buf, SF_DT_I64, 0, 0x1.fffffffffffffp62);
	CHECK(sf_load_int(buf, SF_DT_I64, 0) == (int64_t)0x7ffffffffffffc00ll);
	sf_store(buf, SF_DT_U8, 0, -3.0);
	CHECK_INT(buf[0], 0);
	sf_store(buf, SF_DT_U8, 0, 300.0);
	CHECK_INT(buf[0], 255);
	sf_store(buf, SF_DT_U8, 0, 254.99);
	CHECK_INT(buf[0], 254);
	sf_store(buf, SF_DT_I8, 0, -200.0);
	CHECK_INT(sf_load_int(buf, SF_DT_I8, 0), -128);
	sf_store(buf, SF_DT_I16, 0, 40000.0);
	CHECK_INT(sf_load_int(buf, SF_DT_I16, 0), 32767);
	sf_store(buf, SF_DT_BOOL, 0, -0.0);
	CHECK_INT(buf[0], 0);
	sf_store(buf, SF_DT_BOOL, 0, 0.5);
	CHECK_INT(buf[0], 1);
	CHECK_INT(sf_f64_to_int_sat(INFINITY, -5, 5), 5);
	CHECK_INT(sf_f64_to_int_sat(-INFINITY, -5, 5), -5);
}
