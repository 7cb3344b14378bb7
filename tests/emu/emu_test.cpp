/*
 * emu_test.cpp - runs one CUDA solution of a memory-bound problem on the CPU emulation (emu.h) over
 * many shapes (workload sizes, held-out sizes, odd widths that take the scalar fallbacks, unaligned
 * pointers) and checks every output element against a double-precision reference written from the
 * problem's oracle.c, with the workload's tolerance; outputs are poisoned (NaN) and guarded, so a
 * missed element or a write past the end fails. Built once per problem by tests/suites/emu_kernels.sh
 * with -DEMU_<PROBLEM> and -DEMU_SOLUTION="<the .cu rewritten for emu.h>".
 * Prints "ok CASE" / "FAIL CASE: why" and ends with "N passed, M failed".
 */
#include "emu.h"
#include "solforge/solution.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>
#include <string>

#include EMU_SOLUTION

static int n_pass, n_fail;
/* the draw of the data, lengths and page permutations (and of emu.h's fiber orders): EMU_SEED from the environment
 * (emu_kernels.sh draws one per run and prints it; EMU_SEED=n reruns that draw), else a fresh one, printed first */
static const unsigned long long emu_data_seed = [] {
	const unsigned long long s = emu_fiber_seed_value();
	printf("seed %llu (EMU_SEED=%llu reruns it)\n", s, s);
	return s;
}();
#define EMU_SEED emu_data_seed
static std::mt19937_64 rng(EMU_SEED);

/* A tensor in a guarded host buffer: 256 guard bytes of 0xA5 on each side, data shifted by `shift`
 * bytes from a 256-aligned start (shift 2: not 16-byte aligned). */
struct buf {
	std::vector<unsigned char> raw;
	size_t off, bytes;
	void *data() { return raw.data() + off; }
	void init(size_t nbytes, size_t shift)
	{
		bytes = nbytes;
		raw.assign(nbytes + 1024, 0xA5);
		uintptr_t base = (uintptr_t)raw.data();
		off = ((base + 256 + 255) / 256 * 256 - base) + shift;
	}
	bool guards_ok() const
	{
		for (size_t i = 0; i < off; i++)
			if (raw[i] != 0xA5)
				return false;
		for (size_t i = off + bytes; i < raw.size(); i++)
			if (raw[i] != 0xA5)
				return false;
		return true;
	}
};

struct targ {
	std::vector<int64_t> shape;
	sf_tensor t;
};

static sf_tensor mk(std::vector<int64_t> &shape, void *data, uint8_t code, uint8_t bits)
{
	sf_tensor t;
	memset(&t, 0, sizeof t);
	t.data = data;
	t.device.device_type = SF_DEVICE_CUDA;
	t.ndim = (int32_t)shape.size();
	t.dtype.code = code;
	t.dtype.bits = bits;
	t.dtype.lanes = 1;
	t.shape = shape.data();
	return t;
}

static uint16_t bf16_bits(double v)
{
	return __float2bfloat16_rn((float)v).r; /* float first: inputs are drawn in float range */
}
static double bf16_val(uint16_t b)
{
	return __bfloat162float(__nv_bfloat16{ b });
}
static uint16_t f16_bits(double v)
{
	return __float2half_rn((float)v).r;
}
static double f16_val(uint16_t b)
{
	return __half2float(__half{ b });
}
static double round_bf16(double v)
{
	/* round the double once to bf16 (nearest even), as numeric.h's sf_round_bf16 */
	if (v == 0 || std::isnan(v) || std::isinf(v))
		return v;
	int e;
	std::frexp(v, &e);
	double ulp = std::ldexp(1.0, e - 8);
	return std::nearbyint(v / ulp) * ulp;
}
static double round_f16(double v)
{
	if (v == 0 || std::isnan(v) || std::isinf(v))
		return v;
	int e;
	std::frexp(v, &e);
	if (e < -13)
		e = -13; /* subnormals: fixed quantum 2^-24 */
	double ulp = std::ldexp(1.0, e - 11);
	return std::nearbyint(v / ulp) * ulp;
}

/* fills n 16-bit values with a*N(0,1)+b rounded to bf16 (bf=1) or fp16 */
static void fill(void *p, size_t n, double mean, double sd, int bf)
{
	std::normal_distribution<double> d(mean, sd);
	uint16_t *q = (uint16_t *)p;
	for (size_t i = 0; i < n; i++)
		q[i] = bf ? bf16_bits(d(rng)) : f16_bits(d(rng));
}

/* compares n outputs (16-bit, bf or fp16) with ref; returns an empty string or why not */
static std::string compare(const void *p, const std::vector<double> &ref, int bf, double atol, double rtol)
{
	const uint16_t *q = (const uint16_t *)p;
	for (size_t i = 0; i < ref.size(); i++) {
		double y = bf ? bf16_val(q[i]) : f16_val(q[i]);
		if (!(std::fabs(y - ref[i]) <= atol + rtol * std::fabs(ref[i]))) {
			char m[160];
			snprintf(m, sizeof m, "element %zu: got %.6g, want %.6g", i, y, ref[i]);
			return m;
		}
	}
	return "";
}

static void report(const std::string &name, const std::string &why)
{
	if (why.empty()) {
		n_pass++;
		printf("ok %s\n", name.c_str());
	} else {
		n_fail++;
		printf("FAIL %s: %s\n", name.c_str(), why.c_str());
	}
	fflush(stdout);
	/* a mutant's run (emu_kernels.sh sets EMU_STOP_AT_FAIL=1) only has to show one failing case: stop there */
	const char *stop = getenv("EMU_STOP_AT_FAIL");
	if (n_fail && stop && strcmp(stop, "1") == 0) {
		printf("%d passed, %d failed\n", n_pass, n_fail);
		fflush(stdout);
		exit(1);
	}
}

static std::string call_run(std::vector<sf_tensor> &in, std::vector<double> &scal, std::vector<sf_tensor> &out)
{
	sf_call c;
	memset(&c, 0, sizeof c);
	c.abi_version = SF_ABI_VERSION;
	c.n_inputs = (int32_t)in.size();
	c.inputs = in.data();
	c.scalars = scal.data();
	c.n_outputs = (int32_t)out.size();
	c.outputs = out.data();
	int rc = run(&c);
	if (rc != SF_OK)
		return "run returned " + std::to_string(rc);
	return "";
}

#define SHIFT_NAME(s) (std::string((s) ? "-unaligned" : ""))

#if defined(EMU_RMSNORM) || defined(EMU_GEMMA)
static void test_rows(int64_t T, int64_t H, size_t shift)
{
	buf x, w, y;
	x.init(T * H * 2, shift);
	w.init(H * 2, 0);
	y.init(T * H * 2, shift);
	fill(x.data(), T * H, 0, 1, 1);
#ifdef EMU_GEMMA
	fill(w.data(), H, 0, 0.1, 1);
	const double eps = 1e-6, atol = 1e-3, rtol = 1e-2;
#else
	fill(w.data(), H, 1, 0.1, 1);
	const double eps = 1e-5, atol = 1e-5, rtol = 0.016;
#endif
	memset(y.data(), 0xFF, y.bytes);
	std::vector<int64_t> sx{ T, H }, sw{ H }, ss;
	std::vector<sf_tensor> in{ mk(sx, x.data(), SF_CODE_BFLOAT, 16), mk(sw, w.data(), SF_CODE_BFLOAT, 16),
				   mk(ss, nullptr, SF_CODE_FLOAT, 32) };
	std::vector<sf_tensor> out{ mk(sx, y.data(), SF_CODE_BFLOAT, 16) };
	std::vector<double> scal{ NAN, NAN, eps };
	std::string why = call_run(in, scal, out);
	std::vector<double> ref((size_t)(T * H));
	const uint16_t *xp = (const uint16_t *)x.data(), *wp = (const uint16_t *)w.data();
	const double epsf = (float)eps;
	for (int64_t t = 0; t < T; t++) {
		double ssq = 0;
		for (int64_t h = 0; h < H; h++)
			ssq += bf16_val(xp[t * H + h]) * bf16_val(xp[t * H + h]);
		const double rstd = 1.0 / std::sqrt(ssq / (double)H + epsf);
		for (int64_t h = 0; h < H; h++) {
#ifdef EMU_GEMMA
			ref[t * H + h] = bf16_val(xp[t * H + h]) * rstd * (1.0 + bf16_val(wp[h]));
#else
			ref[t * H + h] = bf16_val(wp[h]) * round_bf16(bf16_val(xp[t * H + h]) * rstd);
#endif
		}
	}
	if (why.empty())
		why = compare(y.data(), ref, 1, atol, rtol);
	if (why.empty() && !(y.guards_ok() && x.guards_ok()))
		why = "wrote outside the output";
	report("T" + std::to_string(T) + "-H" + std::to_string(H) + SHIFT_NAME(shift), why);
}
static void tests()
{
	for (int64_t T : { 1, 3, 7 })
		test_rows(T, 4096, 0);
	test_rows(2, 5376, 0);
	test_rows(16, 5376, 0); /* mean by fl(1/5376) (not a power of two: within 1 fp32 ulp of the division)
				 * over 86k outputs; gemma: 11 warps, the unrolled final sum's tail of 3 */
	test_rows(3, 3072, 0);
	test_rows(2, 40, 0);    /* 5 vectors: idle slots */
	test_rows(3, 36, 0);    /* not a multiple of 8: scalar fallback */
	test_rows(2, 4096, 2);  /* unaligned: scalar fallback */
	test_rows(2, 5376, 2);  /* unaligned at gemma's width (its RMS_CONST_H test must not divide by vpt 0) */
	test_rows(1, 65536, 0); /* 8192 vectors: VPT 16 would be needed, 8 * 512 = 4096: fallback */
	test_rows(2, 32768, 0); /* VPT 8 x 512 exactly */
}
#endif

#ifdef EMU_FUSED_ADD
static void test_rows(int64_t T, int64_t H, size_t shift)
{
	buf x, r, w, y, ro;
	x.init(T * H * 2, shift);
	r.init(T * H * 2, 0);
	w.init(H * 2, 0);
	y.init(T * H * 2, 0);
	ro.init(T * H * 2, shift);
	fill(x.data(), T * H, 0, 1, 1);
	fill(r.data(), T * H, 0, 1, 1);
	fill(w.data(), H, 1, 0.1, 1);
	memset(y.data(), 0xFF, y.bytes);
	memset(ro.data(), 0xFF, ro.bytes);
	std::vector<int64_t> sx{ T, H }, sw{ H }, ss;
	std::vector<sf_tensor> in{ mk(sx, x.data(), SF_CODE_BFLOAT, 16), mk(sx, r.data(), SF_CODE_BFLOAT, 16),
				   mk(sw, w.data(), SF_CODE_BFLOAT, 16), mk(ss, nullptr, SF_CODE_FLOAT, 32) };
	std::vector<sf_tensor> out{ mk(sx, y.data(), SF_CODE_BFLOAT, 16), mk(sx, ro.data(), SF_CODE_BFLOAT, 16) };
	std::vector<double> scal{ NAN, NAN, NAN, 1e-5 };
	std::string why = call_run(in, scal, out);
	std::vector<double> ref((size_t)(T * H)), refr((size_t)(T * H));
	const uint16_t *xp = (const uint16_t *)x.data(), *rp = (const uint16_t *)r.data(), *wp = (const uint16_t *)w.data();
	for (int64_t t = 0; t < T; t++) {
		double ssq = 0;
		for (int64_t h = 0; h < H; h++) {
			const double s = round_bf16(bf16_val(xp[t * H + h]) + bf16_val(rp[t * H + h]));
			refr[t * H + h] = s;
			ssq += s * s;
		}
		const double rstd = 1.0 / std::sqrt(ssq / (double)H + (double)(float)1e-5);
		for (int64_t h = 0; h < H; h++)
			ref[t * H + h] = bf16_val(wp[h]) * round_bf16(refr[t * H + h] * rstd);
	}
	if (why.empty())
		why = compare(y.data(), ref, 1, 1e-5, 0.016);
	if (why.empty())
		why = compare(ro.data(), refr, 1, 0, 0); /* residual_out is exact */
	if (why.empty() && !(y.guards_ok() && ro.guards_ok()))
		why = "wrote outside an output";
	report("T" + std::to_string(T) + "-H" + std::to_string(H) + SHIFT_NAME(shift), why);
}
static void tests()
{
	for (int64_t T : { 1, 5 })
		test_rows(T, 4096, 0); /* few rows: VPT 1 x 512 */
	test_rows(2, 5376, 0);
	test_rows(2, 40, 0);
	test_rows(2, 36, 0);
	test_rows(2, 4096, 2);
	test_rows(3, 1024, 0);   /* few rows: VPT 1 x 128 */
	test_rows(300, 1024, 0); /* more than RMS_SMALL_T rows: VPT 4 x 32 */
}
#endif

#ifdef EMU_QK
static void test_qk(int64_t T, int64_t HQ, int64_t HK, int64_t D, size_t shift)
{
	buf q, k, qw, kw, qo, ko;
	q.init(T * HQ * D * 2, shift);
	k.init(T * HK * D * 2, 0);
	qw.init(D * 2, 0);
	kw.init(D * 2, 0);
	qo.init(T * HQ * D * 2, 0);
	ko.init(T * HK * D * 2, shift);
	fill(q.data(), T * HQ * D, 0, 1, 1);
	fill(k.data(), T * HK * D, 0, 1, 1);
	fill(qw.data(), D, 1, 0.1, 1);
	fill(kw.data(), D, 1, 0.1, 1);
	memset(qo.data(), 0xFF, qo.bytes);
	memset(ko.data(), 0xFF, ko.bytes);
	std::vector<int64_t> sq{ T, HQ, D }, sk{ T, HK, D }, sw{ D }, ss;
	std::vector<sf_tensor> in{ mk(sq, q.data(), SF_CODE_BFLOAT, 16), mk(sk, k.data(), SF_CODE_BFLOAT, 16),
				   mk(sw, qw.data(), SF_CODE_BFLOAT, 16), mk(sw, kw.data(), SF_CODE_BFLOAT, 16),
				   mk(ss, nullptr, SF_CODE_FLOAT, 32) };
	std::vector<sf_tensor> out{ mk(sq, qo.data(), SF_CODE_BFLOAT, 16), mk(sk, ko.data(), SF_CODE_BFLOAT, 16) };
	std::vector<double> scal{ NAN, NAN, NAN, NAN, 1e-6 };
	std::string why = call_run(in, scal, out);
	auto refof = [&](const void *xv, const void *wv, int64_t rows) {
		std::vector<double> ref((size_t)(rows * D));
		const uint16_t *xp = (const uint16_t *)xv, *wp = (const uint16_t *)wv;
		for (int64_t r = 0; r < rows; r++) {
			double ssq = 0;
			for (int64_t d = 0; d < D; d++)
				ssq += bf16_val(xp[r * D + d]) * bf16_val(xp[r * D + d]);
			const double inv = 1.0 / std::sqrt(ssq / (double)D + 1e-6);
			for (int64_t d = 0; d < D; d++)
				ref[r * D + d] = bf16_val(wp[d]) * round_bf16(bf16_val(xp[r * D + d]) * inv);
		}
		return ref;
	};
	if (why.empty())
		why = compare(qo.data(), refof(q.data(), qw.data(), T * HQ), 1, 1e-5, 0.016);
	if (why.empty())
		why = compare(ko.data(), refof(k.data(), kw.data(), T * HK), 1, 1e-5, 0.016);
	if (why.empty() && !(qo.guards_ok() && ko.guards_ok()))
		why = "wrote outside an output";
	report("T" + std::to_string(T) + "-HQ" + std::to_string(HQ) + "-HK" + std::to_string(HK) + "-D" +
		       std::to_string(D) + SHIFT_NAME(shift),
	       why);
}
static void tests()
{
	for (int64_t T : { 1, 3, 8 })
		test_qk(T, 32, 4, 128, 0);
	test_qk(61, 32, 4, 128, 0); /* 2196 rows: several block iterations and a partial one */
	test_qk(3, 8, 2, 64, 0);    /* G = 8 */
	test_qk(2, 4, 1, 256, 0);   /* G = 32 */
	test_qk(3, 4, 2, 40, 0);    /* G = 5: scalar fallback */
	test_qk(2, 32, 4, 128, 2);  /* unaligned */
}
#endif

#include "emu_rope.h" /* EMU_ROPE */

#include "emu_gn.h" /* EMU_GN */

#ifdef EMU_FLUX
static void test_flux(int64_t B, int64_t S, int64_t H, size_t shift)
{
	buf x, sh, sc, y;
	x.init(B * S * H * 2, shift);
	sh.init(B * H * 2, 0);
	sc.init(B * H * 2, 0);
	y.init(B * S * H * 2, 0);
	fill(x.data(), B * S * H, 0.5, 1, 1);
	fill(sh.data(), B * H, 0, 1, 1);
	fill(sc.data(), B * H, 0, 1, 1);
	memset(y.data(), 0xFF, y.bytes);
	std::vector<int64_t> sx{ B, S, H }, sm{ B, H }, ss;
	std::vector<sf_tensor> in{ mk(sx, x.data(), SF_CODE_BFLOAT, 16), mk(sm, sh.data(), SF_CODE_BFLOAT, 16),
				   mk(sm, sc.data(), SF_CODE_BFLOAT, 16), mk(ss, nullptr, SF_CODE_FLOAT, 32) };
	std::vector<sf_tensor> out{ mk(sx, y.data(), SF_CODE_BFLOAT, 16) };
	std::vector<double> scal{ NAN, NAN, NAN, 1e-6 };
	std::string why = call_run(in, scal, out);
	std::vector<double> ref((size_t)(B * S * H));
	const uint16_t *xp = (const uint16_t *)x.data(), *shp = (const uint16_t *)sh.data(), *scp = (const uint16_t *)sc.data();
	for (int64_t r = 0; r < B * S; r++) {
		const int64_t bi = r / S;
		double sum = 0, sq = 0;
		for (int64_t j = 0; j < H; j++)
			sum += bf16_val(xp[r * H + j]);
		const double mean = sum / (double)H;
		for (int64_t j = 0; j < H; j++)
			sq += (bf16_val(xp[r * H + j]) - mean) * (bf16_val(xp[r * H + j]) - mean);
		const double rstd = 1.0 / std::sqrt(sq / (double)H + 1e-6);
		for (int64_t j = 0; j < H; j++)
			ref[r * H + j] = (bf16_val(xp[r * H + j]) - mean) * rstd * (1.0 + bf16_val(scp[bi * H + j])) +
					 bf16_val(shp[bi * H + j]);
	}
	if (why.empty())
		why = compare(y.data(), ref, 1, 1e-2, 1e-2);
	if (why.empty() && !y.guards_ok())
		why = "wrote outside the output";
	report("b" + std::to_string(B) + "-s" + std::to_string(S) + "-H" + std::to_string(H) + SHIFT_NAME(shift), why);
}
static void tests()
{
	test_flux(1, 3, 3072, 0);
	test_flux(2, 17, 3072, 0);
	test_flux(3, 2, 3072, 0);
	test_flux(2, 3, 40, 0);   /* idle slots hold zeros: left out of the variance */
	test_flux(2, 3, 36, 0);   /* scalar fallback */
	test_flux(2, 3, 3072, 2); /* unaligned */
}
#endif

#include "emu_calib.h" /* EMU_COPY, EMU_READ */

#include "emu_act.h" /* EMU_SILU, EMU_GEGLU */

#include "emu_conv.h" /* EMU_CONV */

#include "emu_dsroute.h" /* EMU_DSROUTE */

#ifdef EMU_DECODE
/*
 * GQA paged decode (problems/common/kernels/gqa_paged_decode_sm90.cu): 32 q heads, 8 kv heads, d 128.
 * lens: kv positions per sequence (0 = empty: no pages); ps: page size (ps 1 has no kv_last_page_len
 * input); pages are a random permutation of a cache with spare pages. Checks output (bf16, 1e-2) and
 * the base-2 lse (1e-4) against a double reference, zeros and -inf for empty sequences, the guards,
 * and that `calls` repeated calls give bit-identical results (merge counters reset, merge order fixed).
 */
static void test_decode(const std::vector<int> &lens, int ps, int calls, const std::string &tag)
{
	const int B = (int)lens.size(), HQn = 32, HK = 8, Dn = 128;
	std::vector<int32_t> indptr(B + 1, 0), last(B, 0);
	for (int b = 0; b < B; b++) {
		const int np = (lens[b] + ps - 1) / ps;
		indptr[b + 1] = indptr[b] + np;
		last[b] = np ? lens[b] - (np - 1) * ps : 0;
	}
	const int nidx = indptr[B], npages = nidx + nidx / 2 + 3;
	std::vector<int32_t> perm(npages);
	for (int i = 0; i < npages; i++)
		perm[i] = i;
	std::shuffle(perm.begin(), perm.end(), rng);
	buf q, k, v, ip, ix, lp, o, l;
	q.init((size_t)B * HQn * Dn * 2, 0);
	k.init((size_t)npages * ps * HK * Dn * 2, 0);
	v.init((size_t)npages * ps * HK * Dn * 2, 0);
	ip.init((size_t)(B + 1) * 4, 0);
	ix.init((size_t)(nidx ? nidx : 1) * 4, 0);
	lp.init((size_t)B * 4, 0);
	o.init((size_t)B * HQn * Dn * 2, 0);
	l.init((size_t)B * HQn * 4, 0);
	fill(q.data(), (size_t)B * HQn * Dn, 0, 1, 1);
	fill(k.data(), (size_t)npages * ps * HK * Dn, 0, 1, 1);
	fill(v.data(), (size_t)npages * ps * HK * Dn, 0, 1, 1);
	memcpy(ip.data(), indptr.data(), (size_t)(B + 1) * 4);
	memcpy(ix.data(), perm.data(), (size_t)nidx * 4);
	memcpy(lp.data(), last.data(), (size_t)B * 4);
	std::vector<int64_t> sq{ B, HQn, Dn }, sk{ npages, ps, HK, Dn }, sip{ B + 1 }, six{ nidx }, slp{ B }, sl{ B, HQn },
		ss;
	std::vector<sf_tensor> in{ mk(sq, q.data(), SF_CODE_BFLOAT, 16), mk(sk, k.data(), SF_CODE_BFLOAT, 16),
				   mk(sk, v.data(), SF_CODE_BFLOAT, 16), mk(sip, ip.data(), SF_CODE_INT, 32),
				   mk(six, ix.data(), SF_CODE_INT, 32) };
	if (ps != 1)
		in.push_back(mk(slp, lp.data(), SF_CODE_INT, 32));
	in.push_back(mk(ss, nullptr, SF_CODE_FLOAT, 32));
	std::vector<sf_tensor> out{ mk(sq, o.data(), SF_CODE_BFLOAT, 16), mk(sl, l.data(), SF_CODE_FLOAT, 32) };
	const double scale = 0.08838834764831845;
	std::vector<double> scal(in.size(), NAN);
	scal.back() = scale;

	/* reference: row (b, h) attends to every position of b with kv head h / 4 */
	std::vector<double> ref((size_t)B * HQn * Dn, 0.0), rlse((size_t)B * HQn, -INFINITY);
	const uint16_t *qp = (const uint16_t *)q.data(), *kp = (const uint16_t *)k.data(), *vp = (const uint16_t *)v.data();
	for (int b = 0; b < B; b++)
		for (int h = 0; h < HQn; h++) {
			if (!lens[b])
				continue;
			std::vector<double> sc(lens[b]);
			double mx = -INFINITY;
			for (int p = 0; p < lens[b]; p++) {
				const size_t row = ((size_t)perm[indptr[b] + p / ps] * ps + p % ps) * HK + h / 4;
				double x = 0;
				for (int d = 0; d < Dn; d++)
					x += bf16_val(qp[((size_t)b * HQn + h) * Dn + d]) * bf16_val(kp[row * Dn + d]);
				sc[p] = x * (double)(float)scale;
				mx = std::max(mx, sc[p]);
			}
			double sum = 0;
			for (int p = 0; p < lens[b]; p++)
				sum += std::exp(sc[p] - mx);
			for (int p = 0; p < lens[b]; p++) {
				const size_t row = ((size_t)perm[indptr[b] + p / ps] * ps + p % ps) * HK + h / 4;
				const double w = std::exp(sc[p] - mx) / sum;
				for (int d = 0; d < Dn; d++)
					ref[((size_t)b * HQn + h) * Dn + d] += w * bf16_val(vp[row * Dn + d]);
			}
			rlse[(size_t)b * HQn + h] = (mx + std::log(sum)) / std::log(2.0);
		}

	std::string why;
#if DEC_DIAG_GATHER
	/* the gather diagnostic (outputs wrong by design): batch 1 copies exactly the intended K rows, every
	 * 16-B chunk of them, nothing else; per CTA whole steps of 64 rows (clamped rows repeat the last) */
	if (B == 1 && lens[0] > 0) {
		std::vector<unsigned> hits(k.bytes / 16, 0u), want(k.bytes / 16, 0u);
		dec_diag_hits = hits.data();
		dec_diag_base = (const __nv_bfloat16 *)k.data();
		why = call_run(in, scal, out);
		dec_diag_hits = nullptr;
		for (int p = 0; p < lens[0] && DEC_DIAG_GATHER != 4; p++) /* 4 copies nothing */
			for (int h = 0; h < HK; h++) {
				const size_t row = DEC_DIAG_GATHER == 2   ? (size_t)h * lens[0] + p
						   : DEC_DIAG_GATHER == 3 ? (size_t)p * HK + h
									  : ((size_t)perm[p / ps] * ps + p % ps) * HK + h;
				for (int c = 0; c < Dn / 8; c++)
					want[row * (Dn / 8) + c] = 1u;
			}
		size_t total = 0;
		for (size_t i = 0; why.empty() && i < hits.size(); i++) {
			total += hits[i];
			if ((hits[i] > 0) != (want[i] > 0))
				why = "chunk " + std::to_string(i) + (hits[i] ? " copied, not intended" : " intended, not copied");
		}
		/* the host's batch-1 chunk (gqa_paged_decode_sm90.cu): DEC_B1_ITEMS chunks aimed at, whole steps */
		const int chunk = std::max(DEC_MIN_CHUNK, (lens[0] + DEC_B1_ITEMS - 1) / DEC_B1_ITEMS + 63) / 64 * 64;
		size_t steps = 0;
		for (int p0 = 0; p0 < lens[0]; p0 += chunk)
			steps += (std::min(lens[0], p0 + chunk) - p0 + 63) / 64;
		const size_t want_total = DEC_DIAG_GATHER == 4 ? 0 : steps * 64 * HK * (Dn / 8);
		if (why.empty() && total != want_total)
			why = "copied " + std::to_string(total) + " chunks, want " + std::to_string(want_total);
		report("decode-diag" + std::to_string(DEC_DIAG_GATHER) + "-ps" + std::to_string(ps) + "-" + tag, why);
		return;
	}
#endif
	std::vector<unsigned char> first;
	for (int call = 0; call < calls && why.empty(); call++) {
		memset(o.data(), 0xFF, o.bytes);
		memset(l.data(), 0xFF, l.bytes);
		why = call_run(in, scal, out);
		if (why.empty())
			why = compare(o.data(), ref, 1, 1e-2, 1e-2);
		const float *lo = (const float *)l.data();
		for (size_t i = 0; why.empty() && i < rlse.size(); i++) {
			const bool ok = std::isinf(rlse[i]) ? (std::isinf(lo[i]) && lo[i] < 0)
							  : std::fabs(lo[i] - rlse[i]) <= 1e-4 + 1e-5 * std::fabs(rlse[i]);
			if (!ok) {
				char m[160];
				snprintf(m, sizeof m, "lse %zu: got %.7g, want %.7g", i, lo[i], rlse[i]);
				why = m;
			}
		}
		std::vector<unsigned char> now((unsigned char *)o.data(), (unsigned char *)o.data() + o.bytes);
		now.insert(now.end(), (unsigned char *)l.data(), (unsigned char *)l.data() + l.bytes);
		if (why.empty() && call > 0 && now != first)
			why = "call " + std::to_string(call + 1) + " differs from call 1 (not deterministic)";
		first = now;
	}
	if (why.empty() && !(o.guards_ok() && l.guards_ok() && q.guards_ok() && k.guards_ok() && v.guards_ok()))
		why = "wrote outside the outputs";
	report("decode-ps" + std::to_string(ps) + "-b" + std::to_string(B) + "-" + tag + " (" + std::to_string(emu_launches) +
		       " launches so far)",
	       why);
}
/* n lengths >= 1 summing to total, each drawn around the mean of what is left (as the generator's
 * ragged compositions) */
static std::vector<int> ragged_lens(int n, int total)
{
	std::vector<int> lens;
	for (int i = 0; i < n; i++) {
		const int left = total - (int)std::accumulate(lens.begin(), lens.end(), 0), rest = n - i;
		if (rest == 1) {
			lens.push_back(left);
			break;
		}
		const double mean = (double)left / rest;
		std::uniform_real_distribution<double> u(0.2, 1.8);
		int x = std::max(1, (int)(mean * u(rng)));
		lens.push_back(std::min(x, left - (rest - 1)));
	}
	return lens;
}
static void tests()
{
	/* blocks run 4 at a time, so several CTAs of one (sequence, kv head) race for the merge */
	emu_resident = 4;
#ifdef EMU_DECODE_WAVE
	/* the wave-chunk rule (its line sets DEC_MIN_CHUNK 256, DEC_ITEMS 100000, DEC_WAVE_CHUNK 512): 48 resident
	 * CTA slots (read once, at the first call), so a batch whose 512-position chunks make 6 items (48 CTAs) takes
	 * them; 8 items (64 CTAs: more than one wave) or 4 (32: under 3/4 of it) keep 256; each called twice */
	emu_sm_count = 48;
	emu_occupancy = 1;
	test_decode({ 1000, 1000, 1000 }, 1, 2, "wave-uniform");       /* 6 items of 512: doubled */
	test_decode({ 1000, 1000, 1000 }, 16, 1, "wave-uniform-ps16"); /* partial last pages, doubled */
	test_decode({ 1100, 300, 700, 1000 }, 1, 1, "wave-over");      /* 3 + 1 + 2 + 2 = 8 items: kept */
	test_decode({ 1000, 1000 }, 1, 1, "wave-under");               /* 4 items: kept */
	test_decode({ 1, 1023, 0, 512, 1 }, 8, 1, "wave-ragged-ps8");  /* 1 + 2 + 1 + 1 + 1 = 6 items: doubled (runtime
									* page size, an empty sequence, single tokens) */
	return;
#endif
#ifdef EMU_DECODE_HELDOUT
	/* the default chunking (DEC_ITEMS 66, DEC_MIN_CHUNK 128) on held-out-like compositions
	 * (tools/attn_heldout.py's smaller ones, scaled to the emulation) */
	test_decode({ 1 }, 1, 1, "kv1");
	test_decode({ 1, 1, 1, 1, 1 }, 16, 1, "kv5");
	test_decode(ragged_lens(17, 600), 1, 1, "kv600-ragged");
	test_decode(ragged_lens(3, 500), 16, 2, "kv500-ragged");
	return;
#endif
	/* the list lines set a small chunk: several chunks per sequence (v2: 256 positions = 4 steps of
	 * 64, one more than the 3 ring buffers, so the ring wraps; v1: 64) */
	const int C = DEC_MIN_CHUNK;
#if DEC_DIAG_GATHER /* the gather diagnostic's lines: the rows decode_b1 copies (ring wraps, ps16, a short chunk) */
	test_decode({ 4 * C + 77 }, 1, 1, "chunks");
	test_decode({ 3 * C + 5 }, 16, 1, "ps16");
	test_decode({ 130 }, 1, 1, "short");
	return;
#endif
#ifdef EMU_DECODE_B1_ONLY /* (the ring-depth lines: decode_b1's cases alone, every chunk on one ring depth) */
	test_decode({ 4 * C + 77 }, 1, 1, "b1-chunks");
	test_decode({ 2 * C + 5 }, 16, 1, "b1-ps16");
	test_decode({ C + 9 }, 8, 1, "b1-ps8-runtime");
	test_decode({ 1 }, 16, 1, "b1-len1");
	return;
#endif
#ifdef EMU_DECODE_TMA_ONLY /* (the TMA mutant's line: one case that reaches decode_b1tma) */
	test_decode({ 2 * C + 130 }, 1, 1, "tma-odd");
	return;
#endif
#if DEC_EXP_UNIFORM
	/* the timing-only knob that takes items (2: and lengths, page bases) from equal lengths: exact
	 * only there (ps1, full pages); its lines also set the other timing knobs (same results) */
	test_decode({ 2 * C + 5, 2 * C + 5, 2 * C + 5 }, 1, 2, "uniform");
	test_decode({ 77 }, 1, 1, "uniform-b1");
	return;
#endif
	test_decode({ C + 70, 1, 2 * C + 3 }, 1, 2, "ragged");   /* 2 calls: counters back to 0 */
	test_decode({ 0, C + 17, 0, 37 }, 16, 1, "empties");     /* partial last pages, empty sequences */
#if !DECODE_V1
	test_decode({ 1 }, 1, 1, "len1");
	test_decode({ C + 9, 3 }, 8, 1, "ps8-runtime"); /* the runtime page-size kernel */
	/* more sequences than one pass of the CTAs' locate scan holds (5 passes: the list line sets
	 * DEC_SCAN_PASS 2 to keep the emulation short; the kernel's default is 256) */
	std::vector<int> many(5 * DEC_SCAN_PASS, 1);
	many[3] = 0;
	many[DEC_SCAN_PASS] = C + 2;
	many[4 * DEC_SCAN_PASS] = C + 1;
	test_decode(many, 1, 1, "multi-pass");
#endif
#if DEC_PERSIST
	/* version 4: ragged sequences over few item ranges (segments that start and end inside a
	 * range, ranges that cut a sequence), ps16 partial last pages, called twice */
	test_decode(ragged_lens(9, 5 * C), 16, 2, "persist-ragged");
	test_decode({ 3 * C, 0, 5, C / 2 + 1, 0 }, 1, 2, "persist-empties");
#endif
#if DEC_B1
	/* decode_b1 (the list line sets DEC_B1 1, so len1 above ran on it too): one sequence of several
	 * chunks whose ring wraps, called twice (counters back to 0, merge order fixed); ps16 with a
	 * partial last page; a last chunk ending inside a step (rows past the end: the dependent id load);
	 * the runtime page size; an empty sequence; batch 2 right after (decode_fused, same counters) */
	test_decode({ 4 * C + 77 }, 1, 2, "b1-chunks");
	test_decode({ 3 * C + 5 }, 16, 2, "b1-ps16");
	test_decode({ 130 }, 1, 1, "b1-short");
	test_decode({ C + 9 }, 8, 1, "b1-ps8-runtime");
	test_decode({ 0 }, 16, 1, "b1-empty");
	test_decode({ 2 * C + 1, C }, 1, 1, "b2-after-b1");
#endif
#if DEC_B1_TMA
	/* decode_b1tma (the list line sets DEC_B1_TMA 1 and DEC_B1_ITEMS 2, so every batch-1 case above ran on it
	 * with chunks of up to 9 steps: each stage's mbarrier through phases 0, 1, 0): a last step ending inside
	 * (clamped rows) called twice, ps16 of 11-step chunks with a partial last page called twice, len 1 on
	 * ps16, an empty ps1 sequence (the other empties above are ps16), then batch 3 ragged (decode_fused) */
	test_decode({ 2 * C + 130 }, 1, 2, "tma-odd");
	test_decode({ 5 * C + 33 }, 16, 2, "tma-ps16-long");
	test_decode({ 1 }, 16, 1, "tma-len1-ps16");
	test_decode({ 0 }, 1, 1, "tma-empty-ps1");
	test_decode(ragged_lens(3, 700), 1, 1, "b3-after-tma");
#endif
#if DEC_B1_DYN
	/* decode_b1dyn (the list lines set DEC_B1_ITEMS 3-4 and DEC_B1_DYN_MIN 1, so batch 1 above ran on it):
	 * static runs + claimed units of 2 steps, ring and claim counters across runs, one partial per run;
	 * 18 / 16 / 17 steps (a last unit of 2 and of 1 step, a last step ending inside), ps16 with a partial
	 * last page, a short sequence with one unit, an empty ps1 sequence, called twice where the claims
	 * must reset and the merge must not depend on who took which unit; then batch 2 */
	emu_resident = 12; /* CTAs j = 0 and 1 of kv heads 0-3 run at once: they race for the same units */
	test_decode({ 1100 }, 1, 2, "dyn-18steps");
	test_decode({ 1000 }, 16, 2, "dyn-ps16");
	test_decode({ 1050 }, 1, 2, "dyn-17steps");
	test_decode({ 300 }, 16, 2, "dyn-short");
	test_decode({ 0 }, 1, 1, "dyn-empty");
	test_decode({ 1100 }, 8, 1, "dyn-ps8-runtime");
	test_decode({ 700, 5 }, 1, 1, "b2-after-dyn");
	emu_resident = 4;
#endif
#if DEC_CLUSTER
	/* version 5 (the list line sets DEC_CLUSTER 4 and DEC_CLUSTER_MAXB 4, so the cases above with up
	 * to 4 sequences ran on clusters too): one sequence over 4 ranks with a ring that wraps (chunk
	 * 320 = 5 steps), ps16 with a partial last page, a length that leaves the last rank empty and one
	 * rank with 2 positions, the runtime page size, an empty batch-1 sequence (zeros, lse -inf) */
	test_decode({ 1100 }, 1, 2, "cluster-b1");
	test_decode({ 1000 }, 16, 1, "cluster-b1-ps16");
	test_decode({ 130 }, 1, 1, "cluster-empty-rank");
	test_decode({ 700, 90 }, 8, 1, "cluster-ps8-runtime");
	test_decode({ 0 }, 16, 1, "cluster-empty-seq");
	test_decode(ragged_lens(4, 900), 16, 2, "cluster-ragged");
#endif
}
#endif

int main()
{
	tests();
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
