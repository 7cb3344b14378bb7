/*
 * Unit tests of the gqa_paged_decode_h32_kv8_d128_ps1 oracle: hand-checked attention values, a
 * randomized check against a dense recomputation, the index-structure generator and the SOL count.
 */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

#define DC1_NIN 6

static const char *const dc1_names[DC1_NIN] = { "q", "k_cache", "v_cache", "kv_indptr", "kv_indices",
						 "sm_scale" };

/* Allocates every tensor of a call (q/k/v only when with_data) and sets the axes. */
static void dc1_setup(sf_ocall *c, int64_t B, int64_t P, int64_t NP, int64_t ragged, double scale, int with_data)
{
	const int64_t sq[3] = { B, GQ_HQ, GQ_D }, skv[4] = { NP, 1, GQ_HKV, GQ_D };
	const int64_t sb1[1] = { B + 1 }, sp[1] = { P }, sl[2] = { B, GQ_HQ };
	if (with_data) {
		ot_input(c, IN_Q, SF_DT_BF16, 3, sq);
		ot_input(c, IN_K, SF_DT_BF16, 4, skv);
		ot_input(c, IN_V, SF_DT_BF16, 4, skv);
	}
	ot_input(c, IN_KV_INDPTR, SF_DT_I32, 1, sb1);
	ot_input(c, IN_KV_INDICES, SF_DT_I32, 1, sp);
	ot_scalar(c, IN_SM_SCALE, scale);
	if (with_data) {
		ot_output(c, OUT_OUTPUT, SF_DT_F32, 3, sq);
		ot_output(c, OUT_LSE, SF_DT_F32, 2, sl);
	}
	c->n_axis = 4;
	c->axis[AX_BATCH] = B;
	c->axis[AX_NUM_KV_INDICES] = P;
	c->axis[AX_NUM_PAGES] = NP;
	c->axis[AX_RAGGED] = ragged;
}

static void dc1_set_i32(sf_ocall *c, int k, const int64_t *v, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		sf_store_int(c->in[k].data, SF_DT_I32, i, v[i]);
}

/* k_cache / v_cache [num_pages, 1, 8, 128] */
static int64_t dc1_kv(int64_t page, int kvh, int d)
{
	return (page * GQ_HKV + kvh) * GQ_D + d;
}

static double dc1_out(const sf_ocall *c, int64_t b, int h, int d)
{
	return sf_load(c->out[OUT_OUTPUT].data, SF_DT_F32, (b * GQ_HQ + h) * GQ_D + d);
}

static double dc1_lse(const sf_ocall *c, int64_t b, int h)
{
	return sf_load(c->out[OUT_LSE].data, SF_DT_F32, b * GQ_HQ + h);
}

/*
 * Two sequences: seq 0 kv_len 4 on slots [6, 2, 7, 0], seq 1 kv_len 2 on slots [4, 1]; pool of 9,
 * slots 3, 5, 8 unreferenced (K = 50, V = 1000 in dim 0 of every kv head). K is 0 at the referenced
 * slots (uniform weights); V of kv head 0: dim 0 = 100 * b + position, dim 1 = 1; kv head 3 dim 5 = -2.
 * q = 1 in dim 0 of every head.
 *   seq 0: dim0 = (0 + 1 + 2 + 3) / 4 = 1.5, lse = log2(4) = 2
 *   seq 1: dim0 = (100 + 101) / 2 = 100.5, lse = log2(2) = 1
 */
SF_TEST(gqa_dc1_slots_and_gqa)
{
	sf_ocall c = { 0 };
	dc1_setup(&c, 2, 6, 9, 0, 0.08838834764831845, 1);
	const int64_t kvp[3] = { 0, 4, 6 }, idx[6] = { 6, 2, 7, 0, 4, 1 }, unused[3] = { 3, 5, 8 };
	dc1_set_i32(&c, IN_KV_INDPTR, kvp, 3);
	dc1_set_i32(&c, IN_KV_INDICES, idx, 6);
	for (int u = 0; u < 3; u++)
		for (int kvh = 0; kvh < GQ_HKV; kvh++) {
			sf_store(c.in[IN_K].data, SF_DT_BF16, dc1_kv(unused[u], kvh, 0), 50.0);
			sf_store(c.in[IN_V].data, SF_DT_BF16, dc1_kv(unused[u], kvh, 0), 1000.0);
		}
	for (int64_t b = 0; b < 2; b++)
		for (int64_t pos = 0; pos < kvp[b + 1] - kvp[b]; pos++) {
			const int64_t slot = idx[kvp[b] + pos];
			sf_store(c.in[IN_V].data, SF_DT_BF16, dc1_kv(slot, 0, 0), (double)(100 * b + pos));
			sf_store(c.in[IN_V].data, SF_DT_BF16, dc1_kv(slot, 0, 1), 1.0);
			sf_store(c.in[IN_V].data, SF_DT_BF16, dc1_kv(slot, 3, 5), -2.0);
		}
	for (int64_t b = 0; b < 2; b++)
		for (int h = 0; h < GQ_HQ; h++)
			sf_store(c.in[IN_Q].data, SF_DT_BF16, (b * GQ_HQ + h) * GQ_D, 1.0);
	CHECK_INT(sf_oracle_items(&c), 64);
	ot_run(&c);
	CHECK_NEAR(dc1_out(&c, 0, 0, 0), 1.5, 1e-12);
	CHECK_NEAR(dc1_out(&c, 0, 0, 1), 1.0, 1e-12);
	CHECK_NEAR(dc1_out(&c, 0, 3, 0), 1.5, 1e-12);   /* head 3 -> kv head 0 */
	CHECK_NEAR(dc1_out(&c, 0, 4, 0), 0.0, 1e-12);   /* head 4 -> kv head 1 */
	CHECK_NEAR(dc1_out(&c, 1, 2, 0), 100.5, 1e-12);
	CHECK_NEAR(dc1_out(&c, 1, 12, 5), -2.0, 1e-12); /* heads 12..15 -> kv head 3 */
	CHECK_NEAR(dc1_out(&c, 1, 15, 5), -2.0, 1e-12);
	CHECK_NEAR(dc1_out(&c, 1, 16, 5), 0.0, 1e-12);
	CHECK_NEAR(dc1_out(&c, 0, 11, 5), 0.0, 1e-12);
	CHECK_NEAR(dc1_lse(&c, 0, 0), 2.0, 1e-12);
	CHECK_NEAR(dc1_lse(&c, 1, 31), 1.0, 1e-12);
	ot_free(&c);
}

/*
 * One sequence, kv_len 3 on slots [1, 2, 0], sm_scale 0.5. Kv head 0, dim 0 at positions 0, 1, 2:
 * K = 2, 0, 4 and V = 1, 2, 4; q = 1 in dim 0 of head 0. Head 0 scores (1, 0, 2):
 *   out = (e + 2 + 4 e^2) / (1 + e + e^2) = 34.274506 / 11.107338 = 3.085753440494846,
 *   lse = log2(1 + e + e^2) = ln(11.107338) / ln 2 = 3.4734411853185976
 * Head 1 (q = 0): uniform: (1 + 2 + 4) / 3 = 7/3, lse log2 3 = 1.584962500721156.
 */
SF_TEST(gqa_dc1_softmax_by_hand)
{
	sf_ocall c = { 0 };
	dc1_setup(&c, 1, 3, 3, 0, 0.5, 1);
	const int64_t kvp[2] = { 0, 3 }, idx[3] = { 1, 2, 0 };
	dc1_set_i32(&c, IN_KV_INDPTR, kvp, 2);
	dc1_set_i32(&c, IN_KV_INDICES, idx, 3);
	const double kk[3] = { 2, 0, 4 }, vv[3] = { 1, 2, 4 };
	for (int p = 0; p < 3; p++) {
		sf_store(c.in[IN_K].data, SF_DT_BF16, dc1_kv(idx[p], 0, 0), kk[p]);
		sf_store(c.in[IN_V].data, SF_DT_BF16, dc1_kv(idx[p], 0, 0), vv[p]);
	}
	sf_store(c.in[IN_Q].data, SF_DT_BF16, 0, 1.0);
	ot_run(&c);
	CHECK_NEAR(dc1_out(&c, 0, 0, 0), 3.085753440494846, 1e-6);
	CHECK_NEAR(dc1_lse(&c, 0, 0), 3.4734411853185976, 1e-6);
	CHECK_NEAR(dc1_out(&c, 0, 1, 0), 2.3333333333333335, 1e-6);
	CHECK_NEAR(dc1_lse(&c, 0, 1), 1.584962500721156, 1e-6);
	CHECK_NEAR(dc1_out(&c, 0, 0, 1), 0.0, 1e-12);
	ot_free(&c);
}

typedef struct {
	int64_t B, P, NP;
} dc1_axes;

static int64_t dc1_get(const sf_ocall *c, int k, int64_t i)
{
	return sf_load_int(c->in[k].data, (sf_dt)c->in[k].dt, i);
}

/* Every invariant the generator promises; returns the number of violations. */
static int dc1_check_structure(const sf_ocall *c, dc1_axes a)
{
	int bad = 0;
	bad += dc1_get(c, IN_KV_INDPTR, 0) != 0;
	bad += dc1_get(c, IN_KV_INDPTR, a.B) != a.P;
	for (int64_t b = 0; b < a.B; b++)
		bad += dc1_get(c, IN_KV_INDPTR, b + 1) - dc1_get(c, IN_KV_INDPTR, b) < 1;
	unsigned char *seen = (unsigned char *)calloc((size_t)a.NP, 1);
	for (int64_t i = 0; i < a.P; i++) {
		const int64_t id = dc1_get(c, IN_KV_INDICES, i);
		if (id < 0 || id >= a.NP || seen[id])
			bad++;
		else
			seen[id] = 1;
	}
	free(seen);
	return bad;
}

static int dc1_gen(sf_ocall *out, dc1_axes a, int64_t ragged, uint64_t seed, char *err, size_t errlen)
{
	static const int custom[DC1_NIN] = { 0, 0, 0, 1, 1, 0 };
	sf_gcall g;
	memset(&g, 0, sizeof g);
	dc1_setup(&g.c, a.B, a.P, a.NP, ragged, 0.08838834764831845, 0);
	g.in_names = dc1_names;
	g.is_custom = custom;
	g.seed = seed;
	const int rc = sf_oracle_gen(&g);
	if (err)
		snprintf(err, errlen, "%s", g.err);
	*out = g.c;
	return rc;
}

SF_TEST(gqa_dc1_gen_valid_for_any_seed)
{
	const dc1_axes cases[] = {
		{ 1, 4096, 8192 },      /* single sequence: forced */
		{ 1, 4000, 4000 },      /* pool exactly full */
		{ 3, 1500, 2000 },
		{ 16, 65536, 70000 },
		{ 64, 64, 64 },         /* every sequence one token */
		{ 256, 1000, 1200 },    /* many short sequences */
		{ 8, 4000, 4800 },
	};
	const uint64_t base = sf_test_seed();
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
		for (int64_t ragged = 0; ragged <= 1; ragged++)
			for (uint64_t s = 0; s < 20; s++) {
				sf_ocall c;
				char err[256];
				const int rc = dc1_gen(&c, cases[k], ragged, sf_mix64(base + s), err, sizeof err);
				CHECK_INT(rc, 0);
				if (rc == 0)
					CHECK_INT(dc1_check_structure(&c, cases[k]), 0);
				else
					fprintf(stderr, "    case %zu: %s\n", k, err);
				ot_free(&c);
			}
}

/* ragged 0 gives lengths as equal as the total allows: 14 tokens over 4 sequences -> 14/4 = 3.5 -> 4,
 * 10/3 = 3.33 -> 3, 7/2 = 3.5 -> 4, 3: (4, 3, 4, 3). */
SF_TEST(gqa_dc1_gen_uniform_mode)
{
	const dc1_axes a = { 4, 14, 20 };
	sf_ocall c;
	CHECK_INT(dc1_gen(&c, a, 0, sf_test_seed(), NULL, 0), 0);
	const int64_t expect[4] = { 4, 3, 4, 3 };
	for (int64_t b = 0; b < 4; b++)
		CHECK_INT(dc1_get(&c, IN_KV_INDPTR, b + 1) - dc1_get(&c, IN_KV_INDPTR, b), expect[b]);
	ot_free(&c);
}

SF_TEST(gqa_dc1_gen_reproducible)
{
	const dc1_axes a = { 8, 4000, 4800 };
	sf_ocall c1, c2, c3;
	const uint64_t seed = sf_test_seed();
	CHECK_INT(dc1_gen(&c1, a, 1, seed, NULL, 0), 0);
	CHECK_INT(dc1_gen(&c2, a, 1, seed, NULL, 0), 0);
	CHECK_INT(dc1_gen(&c3, a, 1, seed + 1, NULL, 0), 0);
	int same12 = 1, same13 = 1;
	for (int k = IN_KV_INDPTR; k <= IN_KV_INDICES; k++) {
		const size_t bytes = (size_t)sf_dt_bytes((sf_dt)c1.in[k].dt, c1.in[k].numel);
		same12 &= memcmp(c1.in[k].data, c2.in[k].data, bytes) == 0;
		same13 &= memcmp(c1.in[k].data, c3.in[k].data, bytes) == 0;
	}
	CHECK(same12);
	CHECK(!same13);
	ot_free(&c1);
	ot_free(&c2);
	ot_free(&c3);
}

SF_TEST(gqa_dc1_gen_rejects_infeasible_axes)
{
	const dc1_axes bad[] = {
		{ 16, 65536, 65535 },  /* pool smaller than the slots referenced */
		{ 16, 15, 20 },        /* 16 sequences need 16 tokens */
		{ 0, 0, 0 },
	};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		sf_ocall c;
		char err[256] = "";
		CHECK_INT(dc1_gen(&c, bad[k], 1, sf_test_seed(), err, sizeof err), -1);
		CHECK(err[0] != 0);
		ot_free(&c);
	}
	static const int partial[DC1_NIN] = { 0, 0, 0, 1, 0, 0 };
	sf_gcall g;
	memset(&g, 0, sizeof g);
	dc1_setup(&g.c, 2, 64, 100, 1, 0.08838834764831845, 0);
	g.in_names = dc1_names;
	g.is_custom = partial;
	g.seed = 1;
	CHECK_INT(sf_oracle_gen(&g), -1);
	CHECK(strstr(g.err, "together") != NULL);
	ot_free(&g.c);
}

/*
 * Randomized: a generated structure with random q, K, V against a dense recomputation that gathers
 * each sequence's K and V into position order, stores every score and applies a plain softmax.
 */
SF_TEST(gqa_dc1_random_vs_dense)
{
	const uint64_t seed = sf_test_seed();
	for (uint64_t round = 0; round < 4; round++) {
		const uint64_t rs = sf_mix64(seed ^ (round * 0x9E37u));
		dc1_axes a;
		a.B = sf_rng_int(rs, 1, 0, 1, 6);
		a.P = a.B + sf_rng_int(rs, 1, 3, 0, 100);
		a.NP = a.P + sf_rng_int(rs, 1, 5, 0, 8);

		sf_ocall c;
		CHECK_INT(dc1_gen(&c, a, 1, rs, NULL, 0), 0);
		const int64_t sq[3] = { a.B, GQ_HQ, GQ_D }, skv[4] = { a.NP, 1, GQ_HKV, GQ_D };
		const int64_t sl[2] = { a.B, GQ_HQ };
		ot_input(&c, IN_Q, SF_DT_BF16, 3, sq);
		ot_input(&c, IN_K, SF_DT_BF16, 4, skv);
		ot_input(&c, IN_V, SF_DT_BF16, 4, skv);
		ot_output(&c, OUT_OUTPUT, SF_DT_F32, 3, sq);
		ot_output(&c, OUT_LSE, SF_DT_F32, 2, sl);
		for (int k = IN_Q; k <= IN_V; k++)
			for (int64_t i = 0; i < c.in[k].numel; i++)
				sf_store(c.in[k].data, SF_DT_BF16, i, sf_rng_normal(rs, 10 + (uint32_t)k, (uint64_t)i));
		const double scale = sf_round_f32(0.08838834764831845);
		ot_run(&c);

		double max_err = 0.0;
		for (int64_t b = 0; b < a.B; b++) {
			const int64_t p0 = dc1_get(&c, IN_KV_INDPTR, b), kv_len = dc1_get(&c, IN_KV_INDPTR, b + 1) - p0;
			double *kd = (double *)malloc(sizeof(double) * (size_t)(kv_len * GQ_HKV * GQ_D));
			double *vd = (double *)malloc(sizeof(double) * (size_t)(kv_len * GQ_HKV * GQ_D));
			double *sc = (double *)malloc(sizeof(double) * (size_t)kv_len);
			for (int64_t p = 0; p < kv_len; p++) {
				const int64_t id = dc1_get(&c, IN_KV_INDICES, p0 + p);
				for (int64_t e = 0; e < GQ_HKV * GQ_D; e++) {
					kd[p * GQ_HKV * GQ_D + e] = sf_load(c.in[IN_K].data, SF_DT_BF16, id * GQ_HKV * GQ_D + e);
					vd[p * GQ_HKV * GQ_D + e] = sf_load(c.in[IN_V].data, SF_DT_BF16, id * GQ_HKV * GQ_D + e);
				}
			}
			for (int h = 0; h < GQ_HQ; h++) {
				const int64_t row = b * GQ_HQ + h;
				double mx = -1e300, den = 0.0;
				for (int64_t p = 0; p < kv_len; p++) {
					double s = 0.0;
					for (int d = 0; d < GQ_D; d++)
						s += sf_load(c.in[IN_Q].data, SF_DT_BF16, row * GQ_D + d) *
						     kd[(p * GQ_HKV + h / 4) * GQ_D + d];
					sc[p] = s * scale;
					mx = sc[p] > mx ? sc[p] : mx;
				}
				for (int64_t p = 0; p < kv_len; p++)
					den += exp(sc[p] - mx);
				for (int d = 0; d < GQ_D; d++) {
					double o = 0.0;
					for (int64_t p = 0; p < kv_len; p++)
						o += exp(sc[p] - mx) / den * vd[(p * GQ_HKV + h / 4) * GQ_D + d];
					const double err = fabs(o - dc1_out(&c, b, h, d)) / (1.0 + fabs(o));
					max_err = err > max_err ? err : max_err;
				}
				const double lse2 = (mx + log(den)) / log(2.0);
				const double err = fabs(lse2 - dc1_lse(&c, b, h)) / (1.0 + fabs(lse2));
				max_err = err > max_err ? err : max_err;
			}
			free(kd);
			free(vd);
			free(sc);
		}
		/* float32 reference buffers: 2^-24 relative */
		CHECK(max_err < 2e-7);
		ot_free(&c);
	}
}

/*
 * SOL work of a hand-made batch: kv_len (3, 20). pairs = 23.
 * bf16_tensor = 4 * 128 * 32 * 23 = 376832; sfu = 32 * 23 = 736.
 * bytes: q + output 2 * 2 * 32 * 128 * 2 = 32768; lse 2 * 32 * 4 = 256;
 *        K + V 23 * 8 * 128 * 2 * 2 = 94208; indices 4 * (3 + 23) = 104 -> 127336.
 * Without host copies the same numbers follow from the axes (num_kv_indices = 23).
 */
SF_TEST(gqa_dc1_work_by_hand)
{
	sf_ocall c = { 0 };
	dc1_setup(&c, 2, 23, 30, 0, 0.08838834764831845, 0);
	const int64_t kvp[3] = { 0, 3, 23 };
	dc1_set_i32(&c, IN_KV_INDPTR, kvp, 3);
	for (int64_t i = 0; i < 23; i++)
		sf_store_int(c.in[IN_KV_INDICES].data, SF_DT_I32, i, i);
	sf_work w;
	memset(&w, 0xff, sizeof w);
	sf_oracle_work(&c, &w);
	CHECK_NEAR(w.flops[SF_UNIT_BF16_TENSOR], 376832.0, 0.0);
	CHECK_NEAR(w.flops[SF_UNIT_SFU], 736.0, 0.0);
	CHECK_NEAR(w.flops[SF_UNIT_FP32], 0.0, 0.0);
	CHECK_NEAR(w.bytes, 127336.0, 0.0);
	ot_free(&c);

	sf_ocall d = { 0 };
	d.n_in = DC1_NIN;
	d.n_axis = 4;
	d.axis[AX_BATCH] = 2;
	d.axis[AX_NUM_KV_INDICES] = 23;
	d.axis[AX_NUM_PAGES] = 30;
	sf_oracle_work(&d, &w);
	CHECK_NEAR(w.flops[SF_UNIT_BF16_TENSOR], 376832.0, 0.0);
	CHECK_NEAR(w.flops[SF_UNIT_SFU], 736.0, 0.0);
	CHECK_NEAR(w.bytes, 127336.0, 0.0);
}
