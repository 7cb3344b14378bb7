/*
 * Unit tests of the gqa_paged_prefill_causal_h32_kv8_d128_ps1 oracle: hand-checked attention values,
 * a randomized check against a dense recomputation, the index-structure generator and the SOL count.
 */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

#define PF1_NIN 7

static const char *const pf1_names[PF1_NIN] = { "q", "k_cache", "v_cache", "qo_indptr", "kv_indptr",
						 "kv_indices", "sm_scale" };

/* Allocates every tensor of a call (q/k/v only when with_data) and sets the axes. */
static void pf1_setup(sf_ocall *c, int64_t B, int64_t TQ, int64_t P, int64_t NP, int64_t E, int64_t ragged,
		      double scale, int with_data)
{
	const int64_t sq[3] = { TQ, GQ_HQ, GQ_D }, skv[4] = { NP, 1, GQ_HKV, GQ_D };
	const int64_t sb1[1] = { B + 1 }, sp[1] = { P }, sl[2] = { TQ, GQ_HQ };
	if (with_data) {
		ot_input(c, IN_Q, SF_DT_BF16, 3, sq);
		ot_input(c, IN_K, SF_DT_BF16, 4, skv);
		ot_input(c, IN_V, SF_DT_BF16, 4, skv);
	}
	ot_input(c, IN_QO_INDPTR, SF_DT_I32, 1, sb1);
	ot_input(c, IN_KV_INDPTR, SF_DT_I32, 1, sb1);
	ot_input(c, IN_KV_INDICES, SF_DT_I32, 1, sp);
	ot_scalar(c, IN_SM_SCALE, scale);
	if (with_data) {
		ot_output(c, OUT_OUTPUT, SF_DT_F32, 3, sq);
		ot_output(c, OUT_LSE, SF_DT_F32, 2, sl);
	}
	c->n_axis = 6;
	c->axis[AX_BATCH] = B;
	c->axis[AX_TOTAL_Q] = TQ;
	c->axis[AX_NUM_KV_INDICES] = P;
	c->axis[AX_NUM_PAGES] = NP;
	c->axis[AX_NUM_EMPTY] = E;
	c->axis[AX_RAGGED] = ragged;
}

static void pf1_set_i32(sf_ocall *c, int k, const int64_t *v, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		sf_store_int(c->in[k].data, SF_DT_I32, i, v[i]);
}

/* k_cache / v_cache [num_pages, 1, 8, 128] */
static int64_t pf1_kv(int64_t page, int kvh, int d)
{
	return (page * GQ_HKV + kvh) * GQ_D + d;
}

static double pf1_out(const sf_ocall *c, int64_t t, int h, int d)
{
	return sf_load(c->out[OUT_OUTPUT].data, SF_DT_F32, (t * GQ_HQ + h) * GQ_D + d);
}

static double pf1_lse(const sf_ocall *c, int64_t t, int h)
{
	return sf_load(c->out[OUT_LSE].data, SF_DT_F32, t * GQ_HQ + h);
}

/*
 * One sequence, qo_len 2, kv_len 5 (prefix 3): token slots kv_indices = [6, 2, 7, 0, 4] of a pool of 8.
 * K is 0 at the referenced slots (all scores 0: uniform weights). V of kv head 0: dim 0 = position,
 * dim 1 = 1; kv head 3 dim 5 = -2. The unreferenced slots 1, 3, 5 hold K = 50, V = 1000 in dim 0 of
 * every kv head: reading one would pull the output towards 1000. q = 1 in dim 0 of every head.
 *   token 0 attends positions 0..3 (5 - 2 + 0): dim0 = (0+1+2+3)/4 = 1.5, lse = log2(4) = 2
 *   token 1 attends positions 0..4:              dim0 = (0+1+2+3+4)/5 = 2, lse = log2(5) = 2.321928094887362
 */
SF_TEST(gqa_pf1_slots_and_gqa)
{
	sf_ocall c = { 0 };
	pf1_setup(&c, 1, 2, 5, 8, 0, 0, 0.08838834764831845, 1);
	const int64_t qo[2] = { 0, 2 }, kvp[2] = { 0, 5 }, idx[5] = { 6, 2, 7, 0, 4 };
	pf1_set_i32(&c, IN_QO_INDPTR, qo, 2);
	pf1_set_i32(&c, IN_KV_INDPTR, kvp, 2);
	pf1_set_i32(&c, IN_KV_INDICES, idx, 5);
	const int64_t unused[3] = { 1, 3, 5 };
	for (int u = 0; u < 3; u++)
		for (int kvh = 0; kvh < GQ_HKV; kvh++) {
			sf_store(c.in[IN_K].data, SF_DT_BF16, pf1_kv(unused[u], kvh, 0), 50.0);
			sf_store(c.in[IN_V].data, SF_DT_BF16, pf1_kv(unused[u], kvh, 0), 1000.0);
		}
	for (int64_t pos = 0; pos < 5; pos++) {
		sf_store(c.in[IN_V].data, SF_DT_BF16, pf1_kv(idx[pos], 0, 0), (double)pos);
		sf_store(c.in[IN_V].data, SF_DT_BF16, pf1_kv(idx[pos], 0, 1), 1.0);
		sf_store(c.in[IN_V].data, SF_DT_BF16, pf1_kv(idx[pos], 3, 5), -2.0);
	}
	for (int64_t t = 0; t < 2; t++)
		for (int h = 0; h < GQ_HQ; h++)
			sf_store(c.in[IN_Q].data, SF_DT_BF16, (t * GQ_HQ + h) * GQ_D, 1.0);
	CHECK_INT(sf_oracle_items(&c), 64);
	ot_run(&c);
	CHECK_NEAR(pf1_out(&c, 0, 0, 0), 1.5, 1e-12);
	CHECK_NEAR(pf1_out(&c, 0, 0, 1), 1.0, 1e-12);
	CHECK_NEAR(pf1_out(&c, 0, 3, 0), 1.5, 1e-12);  /* head 3 -> kv head 0 */
	CHECK_NEAR(pf1_out(&c, 0, 4, 0), 0.0, 1e-12);  /* head 4 -> kv head 1 */
	CHECK_NEAR(pf1_out(&c, 1, 0, 0), 2.0, 1e-12);
	CHECK_NEAR(pf1_out(&c, 1, 12, 5), -2.0, 1e-12); /* heads 12..15 -> kv head 3 */
	CHECK_NEAR(pf1_out(&c, 1, 15, 5), -2.0, 1e-12);
	CHECK_NEAR(pf1_out(&c, 1, 16, 5), 0.0, 1e-12);
	CHECK_NEAR(pf1_out(&c, 1, 11, 5), 0.0, 1e-12);
	CHECK_NEAR(pf1_lse(&c, 0, 0), 2.0, 1e-12);
	CHECK_NEAR(pf1_lse(&c, 1, 31), 2.321928094887362, 1e-6);
	ot_free(&c);
}

/*
 * kv_len 3 (slots [1, 2, 0]), qo_len 2, sm_scale 0.5. Kv head 0, dim 0 at positions 0, 1, 2:
 * K = 2, 0, 4 and V = 1, 2, 4; q = 1 in dim 0 of head 0, 0 elsewhere. Head 0 scores (1, 0, 2):
 *   token 0 (positions 0..1): out = (1*e + 2*1) / (e + 1) = 1.268941421369995,
 *                             lse = log2(e + 1) = ln(3.718281828) / ln 2 = 1.8946361239720115
 *   token 1 (positions 0..2): out = (e + 2 + 4 e^2) / (1 + e + e^2) = 34.274506 / 11.107338 = 3.085753440494846,
 *                             lse = log2(1 + e + e^2) = 3.4734411853185976
 * Head 1 (q = 0, same kv head): uniform: token 0 (1 + 2) / 2 = 1.5, lse 1;
 *                                        token 1 (1 + 2 + 4) / 3 = 7/3, lse log2 3 = 1.584962500721156
 */
SF_TEST(gqa_pf1_softmax_by_hand)
{
	sf_ocall c = { 0 };
	pf1_setup(&c, 1, 2, 3, 3, 0, 0, 0.5, 1);
	const int64_t qo[2] = { 0, 2 }, kvp[2] = { 0, 3 }, idx[3] = { 1, 2, 0 };
	pf1_set_i32(&c, IN_QO_INDPTR, qo, 2);
	pf1_set_i32(&c, IN_KV_INDPTR, kvp, 2);
	pf1_set_i32(&c, IN_KV_INDICES, idx, 3);
	const double kk[3] = { 2, 0, 4 }, vv[3] = { 1, 2, 4 };
	for (int p = 0; p < 3; p++) {
		sf_store(c.in[IN_K].data, SF_DT_BF16, pf1_kv(idx[p], 0, 0), kk[p]);
		sf_store(c.in[IN_V].data, SF_DT_BF16, pf1_kv(idx[p], 0, 0), vv[p]);
	}
	sf_store(c.in[IN_Q].data, SF_DT_BF16, (0 * GQ_HQ + 0) * GQ_D, 1.0);
	sf_store(c.in[IN_Q].data, SF_DT_BF16, (1 * GQ_HQ + 0) * GQ_D, 1.0);
	ot_run(&c);
	CHECK_NEAR(pf1_out(&c, 0, 0, 0), 1.268941421369995, 1e-6);
	CHECK_NEAR(pf1_lse(&c, 0, 0), 1.8946361239720115, 1e-6);
	CHECK_NEAR(pf1_out(&c, 1, 0, 0), 3.085753440494846, 1e-6);
	CHECK_NEAR(pf1_lse(&c, 1, 0), 3.4734411853185976, 1e-6);
	CHECK_NEAR(pf1_out(&c, 0, 1, 0), 1.5, 1e-12);
	CHECK_NEAR(pf1_lse(&c, 0, 1), 1.0, 1e-12);
	CHECK_NEAR(pf1_out(&c, 1, 1, 0), 2.3333333333333335, 1e-6);
	CHECK_NEAR(pf1_lse(&c, 1, 1), 1.584962500721156, 1e-6);
	CHECK_NEAR(pf1_out(&c, 1, 0, 1), 0.0, 1e-12);
	ot_free(&c);
}

/*
 * Three sequences, the middle one empty: qo_len (2, 0, 1), kv_len (3, 2, 4).
 * kv_indptr [0, 3, 5, 9], kv_indices [8, 0, 3, 1, 2, 7, 4, 6, 5], qo_indptr [0, 2, 2, 3].
 * K = 0 (uniform weights); V kv head 0 dim 0 = 10 * b + position.
 *   row 0: seq 0, token 0 -> positions 0..1 (3 - 2 + 0): mean(0, 1) = 0.5, lse log2 2 = 1
 *   row 1: seq 0, token 1 -> positions 0..2: mean(0, 1, 2) = 1, lse log2 3
 *   row 2: seq 2, token 0 -> positions 0..3 (4 - 1 + 0): mean(20..23) = 21.5, lse log2 4 = 2
 */
SF_TEST(gqa_pf1_batch_with_empty_sequence)
{
	sf_ocall c = { 0 };
	pf1_setup(&c, 3, 3, 9, 9, 1, 0, 0.08838834764831845, 1);
	const int64_t qo[4] = { 0, 2, 2, 3 }, kvp[4] = { 0, 3, 5, 9 }, idx[9] = { 8, 0, 3, 1, 2, 7, 4, 6, 5 };
	pf1_set_i32(&c, IN_QO_INDPTR, qo, 4);
	pf1_set_i32(&c, IN_KV_INDPTR, kvp, 4);
	pf1_set_i32(&c, IN_KV_INDICES, idx, 9);
	for (int64_t b = 0; b < 3; b++)
		for (int64_t pos = 0; pos < kvp[b + 1] - kvp[b]; pos++)
			sf_store(c.in[IN_V].data, SF_DT_BF16, pf1_kv(idx[kvp[b] + pos], 0, 0), (double)(10 * b + pos));
	for (int64_t i = 0; i < 3 * GQ_HQ * GQ_D; i++)
		sf_store(c.in[IN_Q].data, SF_DT_BF16, i, 0.25);
	ot_run(&c);
	CHECK_NEAR(pf1_out(&c, 0, 0, 0), 0.5, 1e-12);
	CHECK_NEAR(pf1_lse(&c, 0, 0), 1.0, 1e-12);
	CHECK_NEAR(pf1_out(&c, 1, 2, 0), 1.0, 1e-12);
	CHECK_NEAR(pf1_lse(&c, 1, 2), 1.584962500721156, 1e-6);
	CHECK_NEAR(pf1_out(&c, 2, 3, 0), 21.5, 1e-12);
	CHECK_NEAR(pf1_lse(&c, 2, 3), 2.0, 1e-12);
	CHECK_NEAR(pf1_out(&c, 2, 4, 0), 0.0, 1e-12);
	ot_free(&c);
}

typedef struct {
	int64_t B, TQ, P, NP, E;
} pf1_axes;

static int64_t pf1_get(const sf_ocall *c, int k, int64_t i)
{
	return sf_load_int(c->in[k].data, (sf_dt)c->in[k].dt, i);
}

/* Every invariant the generator promises; returns the number of violations. */
static int pf1_check_structure(const sf_ocall *c, pf1_axes a)
{
	int bad = 0;
	int64_t n_empty = 0;
	bad += pf1_get(c, IN_QO_INDPTR, 0) != 0;
	bad += pf1_get(c, IN_KV_INDPTR, 0) != 0;
	bad += pf1_get(c, IN_QO_INDPTR, a.B) != a.TQ;
	bad += pf1_get(c, IN_KV_INDPTR, a.B) != a.P;
	for (int64_t b = 0; b < a.B; b++) {
		const int64_t qo_len = pf1_get(c, IN_QO_INDPTR, b + 1) - pf1_get(c, IN_QO_INDPTR, b);
		const int64_t kv_len = pf1_get(c, IN_KV_INDPTR, b + 1) - pf1_get(c, IN_KV_INDPTR, b);
		bad += qo_len < 0 || kv_len < 1 || kv_len < qo_len;
		n_empty += qo_len == 0;
	}
	bad += n_empty != a.E;
	unsigned char *seen = (unsigned char *)calloc((size_t)a.NP, 1);
	for (int64_t i = 0; i < a.P; i++) {
		const int64_t id = pf1_get(c, IN_KV_INDICES, i);
		if (id < 0 || id >= a.NP || seen[id])
			bad++;
		else
			seen[id] = 1;
	}
	free(seen);
	return bad;
}

static int pf1_gen(sf_ocall *out, pf1_axes a, int64_t ragged, uint64_t seed, char *err, size_t errlen)
{
	static const int custom[PF1_NIN] = { 0, 0, 0, 1, 1, 1, 0 };
	sf_gcall g;
	memset(&g, 0, sizeof g);
	pf1_setup(&g.c, a.B, a.TQ, a.P, a.NP, a.E, ragged, 0.08838834764831845, 0);
	g.in_names = pf1_names;
	g.is_custom = custom;
	g.seed = seed;
	const int rc = sf_oracle_gen(&g);
	if (err)
		snprintf(err, errlen, "%s", g.err);
	*out = g.c;
	return rc;
}

SF_TEST(gqa_pf1_gen_valid_for_any_seed)
{
	const pf1_axes cases[] = {
		{ 1, 512, 512, 1024, 0 },      /* single sequence, no prefix: everything forced */
		{ 1, 1000, 1000, 1000, 0 },    /* pool exactly full */
		{ 4, 4096, 12288, 16384, 0 },  /* prefixes */
		{ 16, 8192, 8192, 12000, 0 },  /* no prefix anywhere: qo_len == kv_len */
		{ 8, 2048, 6144, 8192, 2 },    /* empty sequences */
		{ 5, 1, 9, 9, 4 },             /* one token in total, four empty sequences */
		{ 3, 2, 3, 3, 1 },             /* minimal: kv_len 1 each */
		{ 7, 7, 7, 20, 0 },            /* every sequence one token */
		{ 2, 64, 64, 128, 0 },
	};
	const uint64_t base = sf_test_seed();
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
		for (int64_t ragged = 0; ragged <= 1; ragged++)
			for (uint64_t s = 0; s < 40; s++) {
				sf_ocall c;
				char err[256];
				const int rc = pf1_gen(&c, cases[k], ragged, sf_mix64(base + s), err, sizeof err);
				CHECK_INT(rc, 0);
				if (rc == 0)
					CHECK_INT(pf1_check_structure(&c, cases[k]), 0);
				else
					fprintf(stderr, "    case %zu: %s\n", k, err);
				ot_free(&c);
			}
}

/* ragged 0 gives lengths as equal as the totals allow: 10 kv tokens over 3 sequences -> 3 or 4 each,
 * (3 + 4 + 3 in the order the rounding gives: 10/3 = 3.33 -> 3, 7/2 = 3.5 -> 4, 3), and 6 new tokens
 * -> 2 each. */
SF_TEST(gqa_pf1_gen_uniform_mode)
{
	const pf1_axes a = { 3, 6, 10, 12, 0 };
	sf_ocall c;
	CHECK_INT(pf1_gen(&c, a, 0, sf_test_seed(), NULL, 0), 0);
	const int64_t kv_expect[3] = { 3, 4, 3 };
	for (int64_t b = 0; b < 3; b++) {
		CHECK_INT(pf1_get(&c, IN_KV_INDPTR, b + 1) - pf1_get(&c, IN_KV_INDPTR, b), kv_expect[b]);
		CHECK_INT(pf1_get(&c, IN_QO_INDPTR, b + 1) - pf1_get(&c, IN_QO_INDPTR, b), 2);
	}
	ot_free(&c);
}

SF_TEST(gqa_pf1_gen_reproducible)
{
	const pf1_axes a = { 8, 2048, 6144, 8192, 2 };
	sf_ocall c1, c2, c3;
	const uint64_t seed = sf_test_seed();
	CHECK_INT(pf1_gen(&c1, a, 1, seed, NULL, 0), 0);
	CHECK_INT(pf1_gen(&c2, a, 1, seed, NULL, 0), 0);
	CHECK_INT(pf1_gen(&c3, a, 1, seed + 1, NULL, 0), 0);
	int same12 = 1, same13 = 1;
	for (int k = IN_QO_INDPTR; k <= IN_KV_INDICES; k++) {
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

SF_TEST(gqa_pf1_gen_rejects_infeasible_axes)
{
	const pf1_axes bad[] = {
		{ 4, 4096, 12288, 12287, 0 },  /* pool smaller than the slots referenced */
		{ 4, 4096, 4000, 5000, 0 },    /* more new tokens than kv tokens */
		{ 4, 4096, 4096, 5000, 1 },    /* the 3 non-empty sequences cannot hold 4096 without prefix */
		{ 4, 2, 4096, 5000, 1 },       /* 3 non-empty sequences need 3 tokens */
		{ 4, 100, 4096, 5000, 4 },     /* every sequence empty */
		{ 4, 3, 3, 5, 0 },             /* 4 sequences need at least 4 kv tokens */
		{ 0, 0, 0, 0, 0 },
	};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		sf_ocall c;
		char err[256] = "";
		CHECK_INT(pf1_gen(&c, bad[k], 1, sf_test_seed(), err, sizeof err), -1);
		CHECK(err[0] != 0);
		ot_free(&c);
	}
	static const int partial[PF1_NIN] = { 0, 0, 0, 1, 0, 1, 0 };
	sf_gcall g;
	memset(&g, 0, sizeof g);
	pf1_setup(&g.c, 2, 64, 64, 128, 0, 1, 0.08838834764831845, 0);
	g.in_names = pf1_names;
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
SF_TEST(gqa_pf1_random_vs_dense)
{
	const uint64_t seed = sf_test_seed();
	for (uint64_t round = 0; round < 4; round++) {
		const uint64_t rs = sf_mix64(seed ^ (round * 0x9E37u));
		pf1_axes a;
		a.B = sf_rng_int(rs, 1, 0, 1, 5);
		a.E = sf_rng_int(rs, 1, 1, 0, a.B);
		a.TQ = (a.B - a.E) + sf_rng_int(rs, 1, 2, 0, 24);
		const int64_t need = (a.TQ * a.B + (a.B - a.E) - 1) / (a.B - a.E);
		a.P = (need > a.B ? need : a.B) + sf_rng_int(rs, 1, 3, 0, 60);
		a.NP = a.P + sf_rng_int(rs, 1, 5, 0, 8);

		sf_ocall c;
		CHECK_INT(pf1_gen(&c, a, 1, rs, NULL, 0), 0);
		const int64_t sq[3] = { a.TQ, GQ_HQ, GQ_D }, skv[4] = { a.NP, 1, GQ_HKV, GQ_D };
		const int64_t sl[2] = { a.TQ, GQ_HQ };
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
			const int64_t q0 = pf1_get(&c, IN_QO_INDPTR, b), qo_len = pf1_get(&c, IN_QO_INDPTR, b + 1) - q0;
			const int64_t p0 = pf1_get(&c, IN_KV_INDPTR, b), kv_len = pf1_get(&c, IN_KV_INDPTR, b + 1) - p0;
			double *kd = (double *)malloc(sizeof(double) * (size_t)(kv_len * GQ_HKV * GQ_D));
			double *vd = (double *)malloc(sizeof(double) * (size_t)(kv_len * GQ_HKV * GQ_D));
			double *sc = (double *)malloc(sizeof(double) * (size_t)kv_len);
			for (int64_t p = 0; p < kv_len; p++) {
				const int64_t id = pf1_get(&c, IN_KV_INDICES, p0 + p);
				for (int64_t e = 0; e < GQ_HKV * GQ_D; e++) {
					kd[p * GQ_HKV * GQ_D + e] = sf_load(c.in[IN_K].data, SF_DT_BF16, id * GQ_HKV * GQ_D + e);
					vd[p * GQ_HKV * GQ_D + e] = sf_load(c.in[IN_V].data, SF_DT_BF16, id * GQ_HKV * GQ_D + e);
				}
			}
			for (int64_t j = 0; j < qo_len; j++)
				for (int h = 0; h < GQ_HQ; h++) {
					const int64_t row = (q0 + j) * GQ_HQ + h, n = kv_len - qo_len + j + 1;
					double mx = -1e300, den = 0.0;
					for (int64_t p = 0; p < n; p++) {
						double s = 0.0;
						for (int d = 0; d < GQ_D; d++)
							s += sf_load(c.in[IN_Q].data, SF_DT_BF16, row * GQ_D + d) *
							     kd[(p * GQ_HKV + h / 4) * GQ_D + d];
						sc[p] = s * scale;
						mx = sc[p] > mx ? sc[p] : mx;
					}
					for (int64_t p = 0; p < n; p++)
						den += exp(sc[p] - mx);
					for (int d = 0; d < GQ_D; d++) {
						double o = 0.0;
						for (int64_t p = 0; p < n; p++)
							o += exp(sc[p] - mx) / den * vd[(p * GQ_HKV + h / 4) * GQ_D + d];
						const double err = fabs(o - pf1_out(&c, q0 + j, h, d)) / (1.0 + fabs(o));
						max_err = err > max_err ? err : max_err;
					}
					const double lse2 = (mx + log(den)) / log(2.0);
					const double err = fabs(lse2 - pf1_lse(&c, q0 + j, h)) / (1.0 + fabs(lse2));
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
 * SOL work of a hand-made batch: qo_len (2, 1, 0), kv_len (3, 20, 5).
 * pairs: seq 0: 2 * (3 - 2) + 2 * 3 / 2 = 5; seq 1: 1 * (20 - 1) + 1 = 20; seq 2 (empty): 0 -> 25.
 * bf16_tensor = 4 * 128 * 32 * 25 = 409600; sfu = 32 * 25 = 800.
 * bytes: q + output 2 * 3 * 32 * 128 * 2 = 49152; lse 3 * 32 * 4 = 384;
 *        K + V of kv positions needed: (3 + 20) * 8 * 128 * 2 * 2 = 94208 (seq 2 has no query);
 *        indices 4 * (4 + 4 + 28) = 144 -> 143888.
 */
SF_TEST(gqa_pf1_work_by_hand)
{
	sf_ocall c = { 0 };
	pf1_setup(&c, 3, 3, 28, 30, 1, 0, 0.08838834764831845, 0);
	const int64_t qo[4] = { 0, 2, 3, 3 }, kvp[4] = { 0, 3, 23, 28 };
	pf1_set_i32(&c, IN_QO_INDPTR, qo, 4);
	pf1_set_i32(&c, IN_KV_INDPTR, kvp, 4);
	for (int64_t i = 0; i < 28; i++)
		sf_store_int(c.in[IN_KV_INDICES].data, SF_DT_I32, i, i);
	sf_work w;
	memset(&w, 0xff, sizeof w);
	sf_oracle_work(&c, &w);
	CHECK_NEAR(w.flops[SF_UNIT_BF16_TENSOR], 409600.0, 0.0);
	CHECK_NEAR(w.flops[SF_UNIT_SFU], 800.0, 0.0);
	CHECK_NEAR(w.flops[SF_UNIT_FP32], 0.0, 0.0);
	CHECK_NEAR(w.bytes, 143888.0, 0.0);
	ot_free(&c);

	/* without host copies: the uniform formula; one sequence of 512 new tokens, no prefix:
	 * pairs 512 * 513 / 2 = 131328 -> bf16 2151677952, sfu 4202496;
	 * bytes 512 * (16384 + 128) + 512 * 4096 + 4 * (2 * 2 + 512) = 8454144 + 2097152 + 2064 = 10553360 */
	sf_ocall d = { 0 };
	d.n_in = PF1_NIN;
	d.n_axis = 6;
	d.axis[AX_BATCH] = 1;
	d.axis[AX_TOTAL_Q] = 512;
	d.axis[AX_NUM_KV_INDICES] = 512;
	d.axis[AX_NUM_PAGES] = 1024;
	sf_oracle_work(&d, &w);
	CHECK_NEAR(w.flops[SF_UNIT_BF16_TENSOR], 2151677952.0, 0.0);
	CHECK_NEAR(w.flops[SF_UNIT_SFU], 4202496.0, 0.0);
	CHECK_NEAR(w.bytes, 10553360.0, 0.0);
}
