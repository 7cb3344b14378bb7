/*
 * Unit tests of the gqa_paged_prefill_causal_h32_kv8_d128_ps16 oracle: hand-checked attention values,
 * a randomized check against a dense recomputation, the index-structure generator and the SOL count.
 */
#include "../../../tests/oracle/support.h"
#include "oracle.c"

#define PF16_NIN 8

static const char *const pf16_names[PF16_NIN] = { "q", "k_cache", "v_cache", "qo_indptr", "kv_indptr",
						   "kv_indices", "kv_last_page_len", "sm_scale" };

/* Allocates every tensor of a call (q/k/v only when with_data) and sets the axes. */
static void pf16_setup(sf_ocall *c, int64_t B, int64_t TQ, int64_t TKV, int64_t P, int64_t NP, int64_t E,
		       int64_t ragged, double scale, int with_data)
{
	const int64_t sq[3] = { TQ, GQ_HQ, GQ_D }, skv[4] = { NP, GQ_PS, GQ_HKV, GQ_D };
	const int64_t sb1[1] = { B + 1 }, sp[1] = { P }, sb[1] = { B }, sl[2] = { TQ, GQ_HQ };
	if (with_data) {
		ot_input(c, IN_Q, SF_DT_BF16, 3, sq);
		ot_input(c, IN_K, SF_DT_BF16, 4, skv);
		ot_input(c, IN_V, SF_DT_BF16, 4, skv);
	}
	ot_input(c, IN_QO_INDPTR, SF_DT_I32, 1, sb1);
	ot_input(c, IN_KV_INDPTR, SF_DT_I32, 1, sb1);
	ot_input(c, IN_KV_INDICES, SF_DT_I32, 1, sp);
	ot_input(c, IN_LAST_PAGE_LEN, SF_DT_I32, 1, sb);
	ot_scalar(c, IN_SM_SCALE, scale);
	if (with_data) {
		ot_output(c, OUT_OUTPUT, SF_DT_F32, 3, sq);
		ot_output(c, OUT_LSE, SF_DT_F32, 2, sl);
	}
	c->n_axis = 7;
	c->axis[AX_BATCH] = B;
	c->axis[AX_TOTAL_Q] = TQ;
	c->axis[AX_TOTAL_KV] = TKV;
	c->axis[AX_NUM_KV_INDICES] = P;
	c->axis[AX_NUM_PAGES] = NP;
	c->axis[AX_NUM_EMPTY] = E;
	c->axis[AX_RAGGED] = ragged;
}

static void pf16_set_i32(sf_ocall *c, int k, const int64_t *v, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		sf_store_int(c->in[k].data, SF_DT_I32, i, v[i]);
}

static int64_t pf16_kv(int64_t page, int64_t slot, int kvh, int d)
{
	return ((page * GQ_PS + slot) * GQ_HKV + kvh) * GQ_D + d;
}

static double pf16_out(const sf_ocall *c, int64_t t, int h, int d)
{
	return sf_load(c->out[OUT_OUTPUT].data, SF_DT_F32, (t * GQ_HQ + h) * GQ_D + d);
}

static double pf16_lse(const sf_ocall *c, int64_t t, int h)
{
	return sf_load(c->out[OUT_LSE].data, SF_DT_F32, t * GQ_HQ + h);
}

/*
 * One sequence, qo_len 2, kv_len 18 = 16 + 2: pages kv_indices = [5, 2], last page 2 slots. K is 0 at
 * every valid position (all scores 0: uniform weights). V of kv head 0: dim 0 = position, dim 1 = 1;
 * kv head 3 dim 5 = -2. The 14 unused slots of page 2 and the unreferenced pages 0, 1, 3, 4 hold
 * K = 50, V = 1000 in dim 0 of every kv head: reading any of them would pull the output to ~1000.
 *   token 0 attends positions 0..16 (18 - 2 + 0): dim0 = (0+...+16)/17 = 8, lse = log2(17)
 *   token 1 attends positions 0..17: dim0 = (0+...+17)/18 = 8.5, lse = log2(18)
 * q = 1 in dim 0 of every head (so the garbage K would score 50 * sm_scale).
 */
SF_TEST(gqa_pf16_pages_last_page_and_gqa)
{
	sf_ocall c = { 0 };
	pf16_setup(&c, 1, 2, 18, 2, 6, 0, 0, 0.08838834764831845, 1);
	const int64_t qo[2] = { 0, 2 }, kvp[2] = { 0, 2 }, idx[2] = { 5, 2 }, last[1] = { 2 };
	pf16_set_i32(&c, IN_QO_INDPTR, qo, 2);
	pf16_set_i32(&c, IN_KV_INDPTR, kvp, 2);
	pf16_set_i32(&c, IN_KV_INDICES, idx, 2);
	pf16_set_i32(&c, IN_LAST_PAGE_LEN, last, 1);
	for (int64_t page = 0; page < 6; page++)
		for (int64_t slot = 0; slot < GQ_PS; slot++)
			for (int kvh = 0; kvh < GQ_HKV; kvh++) {
				sf_store(c.in[IN_K].data, SF_DT_BF16, pf16_kv(page, slot, kvh, 0), 50.0);
				sf_store(c.in[IN_V].data, SF_DT_BF16, pf16_kv(page, slot, kvh, 0), 1000.0);
			}
	for (int64_t pos = 0; pos < 18; pos++) {
		const int64_t page = idx[pos / GQ_PS], slot = pos % GQ_PS;
		for (int kvh = 0; kvh < GQ_HKV; kvh++) {
			sf_store(c.in[IN_K].data, SF_DT_BF16, pf16_kv(page, slot, kvh, 0), 0.0);
			sf_store(c.in[IN_V].data, SF_DT_BF16, pf16_kv(page, slot, kvh, 0), 0.0);
		}
		sf_store(c.in[IN_V].data, SF_DT_BF16, pf16_kv(page, slot, 0, 0), (double)pos);
		sf_store(c.in[IN_V].data, SF_DT_BF16, pf16_kv(page, slot, 0, 1), 1.0);
		sf_store(c.in[IN_V].data, SF_DT_BF16, pf16_kv(page, slot, 3, 5), -2.0);
	}
	for (int64_t t = 0; t < 2; t++)
		for (int h = 0; h < GQ_HQ; h++)
			sf_store(c.in[IN_Q].data, SF_DT_BF16, (t * GQ_HQ + h) * GQ_D, 1.0);
	CHECK_INT(sf_oracle_items(&c), 64);
	ot_run(&c);
	CHECK_NEAR(pf16_out(&c, 0, 0, 0), 8.0, 1e-12);
	CHECK_NEAR(pf16_out(&c, 0, 0, 1), 1.0, 1e-12);
	CHECK_NEAR(pf16_out(&c, 0, 3, 0), 8.0, 1e-12);  /* head 3 -> kv head 0 */
	CHECK_NEAR(pf16_out(&c, 0, 4, 0), 0.0, 1e-12);  /* head 4 -> kv head 1 */
	CHECK_NEAR(pf16_out(&c, 1, 0, 0), 8.5, 1e-12);
	CHECK_NEAR(pf16_out(&c, 1, 12, 5), -2.0, 1e-12); /* heads 12..15 -> kv head 3 */
	CHECK_NEAR(pf16_out(&c, 1, 15, 5), -2.0, 1e-12);
	CHECK_NEAR(pf16_out(&c, 1, 16, 5), 0.0, 1e-12);
	CHECK_NEAR(pf16_out(&c, 1, 11, 5), 0.0, 1e-12);
	CHECK_NEAR(pf16_lse(&c, 0, 0), 4.087462841250339, 1e-6);  /* log2(17) */
	CHECK_NEAR(pf16_lse(&c, 1, 31), 4.169925001442312, 1e-6); /* log2(18) */
	ot_free(&c);
}

/*
 * One page (id 1 of 2), kv_len 3 (last page 3), qo_len 2, sm_scale 0.5. Kv head 0, dim 0:
 * K = 2, 0, 4 and V = 1, 2, 4 at positions 0, 1, 2; q = 1 in dim 0 of head 0, 0 elsewhere.
 * Head 0 scores 0.5 * (2, 0, 4) = (1, 0, 2):
 *   token 0 (positions 0..1): out = (1*e + 2*1) / (e + 1) = 1.268941421369995,
 *                             lse = log2(e + 1) = ln(3.718281828) / ln 2 = 1.8946361239720115
 *   token 1 (positions 0..2): out = (e + 2 + 4 e^2) / (1 + e + e^2) = 34.274506 / 11.107338 = 3.085753440494846,
 *                             lse = log2(1 + e + e^2) = 3.4734411853185976
 * Head 1 (q = 0, same kv head): uniform: token 0 (1 + 2) / 2 = 1.5, lse log2 2 = 1;
 *                                        token 1 (1 + 2 + 4) / 3 = 7/3, lse log2 3 = 1.584962500721156
 */
SF_TEST(gqa_pf16_softmax_by_hand)
{
	sf_ocall c = { 0 };
	pf16_setup(&c, 1, 2, 3, 1, 2, 0, 0, 0.5, 1);
	const int64_t qo[2] = { 0, 2 }, kvp[2] = { 0, 1 }, idx[1] = { 1 }, last[1] = { 3 };
	pf16_set_i32(&c, IN_QO_INDPTR, qo, 2);
	pf16_set_i32(&c, IN_KV_INDPTR, kvp, 2);
	pf16_set_i32(&c, IN_KV_INDICES, idx, 1);
	pf16_set_i32(&c, IN_LAST_PAGE_LEN, last, 1);
	const double kk[3] = { 2, 0, 4 }, vv[3] = { 1, 2, 4 };
	for (int p = 0; p < 3; p++) {
		sf_store(c.in[IN_K].data, SF_DT_BF16, pf16_kv(1, p, 0, 0), kk[p]);
		sf_store(c.in[IN_V].data, SF_DT_BF16, pf16_kv(1, p, 0, 0), vv[p]);
	}
	sf_store(c.in[IN_Q].data, SF_DT_BF16, (0 * GQ_HQ + 0) * GQ_D, 1.0);
	sf_store(c.in[IN_Q].data, SF_DT_BF16, (1 * GQ_HQ + 0) * GQ_D, 1.0);
	ot_run(&c);
	CHECK_NEAR(pf16_out(&c, 0, 0, 0), 1.268941421369995, 1e-6);
	CHECK_NEAR(pf16_lse(&c, 0, 0), 1.8946361239720115, 1e-6);
	CHECK_NEAR(pf16_out(&c, 1, 0, 0), 3.085753440494846, 1e-6);
	CHECK_NEAR(pf16_lse(&c, 1, 0), 3.4734411853185976, 1e-6);
	CHECK_NEAR(pf16_out(&c, 0, 1, 0), 1.5, 1e-12);
	CHECK_NEAR(pf16_lse(&c, 0, 1), 1.0, 1e-12);
	CHECK_NEAR(pf16_out(&c, 1, 1, 0), 2.3333333333333335, 1e-6);
	CHECK_NEAR(pf16_lse(&c, 1, 1), 1.584962500721156, 1e-6);
	CHECK_NEAR(pf16_out(&c, 1, 0, 1), 0.0, 1e-12);
	ot_free(&c);
}

/*
 * Three sequences, the middle one empty: qo_len (2, 0, 1), kv_len (3, 17, 4).
 * kv_indptr [0, 1, 3, 4], kv_indices [3, 0, 2, 1], last pages (3, 1, 4), qo_indptr [0, 2, 2, 3].
 * K = 0 (uniform weights); V kv head 0 dim 0 = 10 * b + position.
 *   row 0: seq 0, token 0 -> positions 0..1 (3 - 2 + 0): mean(0, 1) = 0.5, lse log2 2 = 1
 *   row 1: seq 0, token 1 -> positions 0..2: mean(0, 1, 2) = 1, lse log2 3
 *   row 2: seq 2, token 0 -> positions 0..3 (4 - 1 + 0): mean(20..23) = 21.5, lse log2 4 = 2
 */
SF_TEST(gqa_pf16_batch_with_empty_sequence)
{
	sf_ocall c = { 0 };
	pf16_setup(&c, 3, 3, 24, 4, 5, 1, 0, 0.08838834764831845, 1);
	const int64_t qo[4] = { 0, 2, 2, 3 }, kvp[4] = { 0, 1, 3, 4 }, idx[4] = { 3, 0, 2, 1 };
	const int64_t last[3] = { 3, 1, 4 }, kv_len[3] = { 3, 17, 4 };
	pf16_set_i32(&c, IN_QO_INDPTR, qo, 4);
	pf16_set_i32(&c, IN_KV_INDPTR, kvp, 4);
	pf16_set_i32(&c, IN_KV_INDICES, idx, 4);
	pf16_set_i32(&c, IN_LAST_PAGE_LEN, last, 3);
	for (int64_t b = 0; b < 3; b++)
		for (int64_t pos = 0; pos < kv_len[b]; pos++)
			sf_store(c.in[IN_V].data, SF_DT_BF16, pf16_kv(idx[kvp[b] + pos / GQ_PS], pos % GQ_PS, 0, 0),
				 (double)(10 * b + pos));
	for (int64_t i = 0; i < 3 * GQ_HQ * GQ_D; i++)
		sf_store(c.in[IN_Q].data, SF_DT_BF16, i, 0.25);
	ot_run(&c);
	CHECK_NEAR(pf16_out(&c, 0, 0, 0), 0.5, 1e-12);
	CHECK_NEAR(pf16_lse(&c, 0, 0), 1.0, 1e-12);
	CHECK_NEAR(pf16_out(&c, 1, 2, 0), 1.0, 1e-12);
	CHECK_NEAR(pf16_lse(&c, 1, 2), 1.584962500721156, 1e-6);
	CHECK_NEAR(pf16_out(&c, 2, 3, 0), 21.5, 1e-12);
	CHECK_NEAR(pf16_lse(&c, 2, 3), 2.0, 1e-12);
	CHECK_NEAR(pf16_out(&c, 2, 4, 0), 0.0, 1e-12);
	ot_free(&c);
}

/* Reads the structure back: per-sequence qo_len, kv_len and page lists. */
typedef struct {
	int64_t B, TQ, TKV, P, NP, E;
} pf16_axes;

static int64_t pf16_get(const sf_ocall *c, int k, int64_t i)
{
	return sf_load_int(c->in[k].data, (sf_dt)c->in[k].dt, i);
}

/* Every invariant the generator promises; returns the number of violations. */
static int pf16_check_structure(const sf_ocall *c, pf16_axes a)
{
	int bad = 0;
	int64_t n_empty = 0, kv_sum = 0;
	bad += pf16_get(c, IN_QO_INDPTR, 0) != 0;
	bad += pf16_get(c, IN_KV_INDPTR, 0) != 0;
	bad += pf16_get(c, IN_QO_INDPTR, a.B) != a.TQ;
	bad += pf16_get(c, IN_KV_INDPTR, a.B) != a.P;
	for (int64_t b = 0; b < a.B; b++) {
		const int64_t qo_len = pf16_get(c, IN_QO_INDPTR, b + 1) - pf16_get(c, IN_QO_INDPTR, b);
		const int64_t n_pages = pf16_get(c, IN_KV_INDPTR, b + 1) - pf16_get(c, IN_KV_INDPTR, b);
		const int64_t last = pf16_get(c, IN_LAST_PAGE_LEN, b);
		const int64_t kv_len = (n_pages - 1) * GQ_PS + last;
		bad += qo_len < 0 || n_pages < 1 || last < 1 || last > GQ_PS;
		bad += kv_len < qo_len || kv_len < 1;
		n_empty += qo_len == 0;
		kv_sum += kv_len;
	}
	bad += n_empty != a.E;
	bad += kv_sum != a.TKV;
	unsigned char *seen = (unsigned char *)calloc((size_t)a.NP, 1);
	for (int64_t i = 0; i < a.P; i++) {
		const int64_t id = pf16_get(c, IN_KV_INDICES, i);
		if (id < 0 || id >= a.NP || seen[id])
			bad++;
		else
			seen[id] = 1;
	}
	free(seen);
	return bad;
}

static int pf16_gen(sf_ocall *out, pf16_axes a, int64_t ragged, uint64_t seed, char *err, size_t errlen)
{
	static const int custom[PF16_NIN] = { 0, 0, 0, 1, 1, 1, 1, 0 };
	sf_gcall g;
	memset(&g, 0, sizeof g);
	pf16_setup(&g.c, a.B, a.TQ, a.TKV, a.P, a.NP, a.E, ragged, 0.08838834764831845, 0);
	g.in_names = pf16_names;
	g.is_custom = custom;
	g.seed = seed;
	const int rc = sf_oracle_gen(&g);
	if (err)
		snprintf(err, errlen, "%s", g.err);
	*out = g.c;
	return rc;
}

SF_TEST(gqa_pf16_gen_valid_for_any_seed)
{
	const pf16_axes cases[] = {
		{ 1, 512, 512, 32, 64, 0 },        /* single sequence, no prefix: everything forced */
		{ 1, 1000, 1000, 63, 63, 0 },      /* partial last page, pool exactly full */
		{ 4, 4096, 12288, 770, 1024, 0 },  /* prefixes, ragged last pages */
		{ 4, 4096, 12288, 768, 768, 0 },   /* every last page full */
		{ 4, 4096, 12288, 771, 800, 0 },   /* the most pages the tokens allow */
		{ 16, 8192, 8192, 520, 700, 0 },   /* no prefix anywhere: qo_len == kv_len */
		{ 8, 2048, 6144, 390, 500, 2 },    /* empty sequences */
		{ 5, 1, 9, 5, 9, 4 },              /* one token in total, four empty sequences */
		{ 3, 2, 3, 3, 3, 1 },              /* minimal: kv_len 1 each */
		{ 7, 7, 7, 7, 20, 0 },             /* every sequence one token */
		{ 2, 64, 64, 5, 12, 0 },
	};
	const uint64_t base = sf_test_seed();
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
		for (int64_t ragged = 0; ragged <= 1; ragged++)
			for (uint64_t s = 0; s < 40; s++) {
				sf_ocall c;
				char err[256];
				const int rc = pf16_gen(&c, cases[k], ragged, sf_mix64(base + s), err, sizeof err);
				CHECK_INT(rc, 0);
				if (rc == 0)
					CHECK_INT(pf16_check_structure(&c, cases[k]), 0);
				else
					fprintf(stderr, "    case %zu: %s\n", k, err);
				ot_free(&c);
			}
}

/* ragged 0 gives lengths as equal as the totals allow: 1024 pages over 4 sequences -> 256 each,
 * 16384 - 16 * (1024 - 4) = 64 last-page slots -> 16 each, 4096 new tokens -> 1024 each. */
SF_TEST(gqa_pf16_gen_uniform_mode)
{
	const pf16_axes a = { 4, 4096, 16384, 1024, 1100, 0 };
	sf_ocall c;
	CHECK_INT(pf16_gen(&c, a, 0, sf_test_seed(), NULL, 0), 0);
	for (int64_t b = 0; b < 4; b++) {
		/* 1024 pages of 16 = 16384 tokens: 256 full pages and 1024 new tokens per sequence */
		CHECK_INT(pf16_get(&c, IN_KV_INDPTR, b + 1) - pf16_get(&c, IN_KV_INDPTR, b), 256);
		CHECK_INT(pf16_get(&c, IN_LAST_PAGE_LEN, b), 16);
		CHECK_INT(pf16_get(&c, IN_QO_INDPTR, b + 1) - pf16_get(&c, IN_QO_INDPTR, b), 1024);
	}
	ot_free(&c);
}

SF_TEST(gqa_pf16_gen_reproducible)
{
	const pf16_axes a = { 8, 2048, 6144, 390, 500, 2 };
	sf_ocall c1, c2, c3;
	const uint64_t seed = sf_test_seed();
	CHECK_INT(pf16_gen(&c1, a, 1, seed, NULL, 0), 0);
	CHECK_INT(pf16_gen(&c2, a, 1, seed, NULL, 0), 0);
	CHECK_INT(pf16_gen(&c3, a, 1, seed + 1, NULL, 0), 0);
	int same12 = 1, same13 = 1;
	for (int k = IN_QO_INDPTR; k <= IN_LAST_PAGE_LEN; k++) {
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

SF_TEST(gqa_pf16_gen_rejects_infeasible_axes)
{
	const pf16_axes bad[] = {
		{ 4, 4096, 12288, 767, 1024, 0 },  /* 16 * 767 < 12288 tokens */
		{ 4, 4096, 12288, 772, 1024, 0 },  /* 16 * 772 - 15 * 4 > 12288: too many pages */
		{ 4, 4096, 12288, 770, 769, 0 },   /* pool smaller than the pages referenced */
		{ 4, 4096, 4000, 250, 300, 0 },    /* more new tokens than kv tokens */
		{ 4, 4096, 4096, 256, 300, 1 },    /* the 3 non-empty sequences cannot hold 4096 without prefix */
		{ 4, 2, 4096, 256, 300, 1 },       /* 3 non-empty sequences need 3 tokens */
		{ 4, 100, 4096, 256, 300, 4 },     /* every sequence empty */
		{ 0, 0, 0, 0, 0, 0 },
	};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		sf_ocall c;
		char err[256] = "";
		CHECK_INT(pf16_gen(&c, bad[k], 1, sf_test_seed(), err, sizeof err), -1);
		CHECK(err[0] != 0);
		ot_free(&c);
	}
	/* the four index inputs are drawn together */
	static const int partial[PF16_NIN] = { 0, 0, 0, 1, 1, 0, 1, 0 };
	sf_gcall g;
	memset(&g, 0, sizeof g);
	pf16_setup(&g.c, 2, 64, 64, 5, 12, 0, 1, 0.08838834764831845, 0);
	g.in_names = pf16_names;
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
SF_TEST(gqa_pf16_random_vs_dense)
{
	const uint64_t seed = sf_test_seed();
	for (uint64_t round = 0; round < 4; round++) {
		const uint64_t rs = sf_mix64(seed ^ (round * 0x9E37u));
		pf16_axes a;
		a.B = sf_rng_int(rs, 1, 0, 1, 5);
		a.E = sf_rng_int(rs, 1, 1, 0, a.B);
		a.TQ = (a.B - a.E) + sf_rng_int(rs, 1, 2, 0, 24);
		const int64_t need = (a.TQ * a.B + (a.B - a.E) - 1) / (a.B - a.E);
		a.TKV = (need > a.B ? need : a.B) + sf_rng_int(rs, 1, 3, 0, 60);
		const int64_t pmin = (a.TKV + GQ_PS - 1) / GQ_PS > a.B ? (a.TKV + GQ_PS - 1) / GQ_PS : a.B;
		const int64_t pmax = (a.TKV + (GQ_PS - 1) * a.B) / GQ_PS;
		a.P = sf_rng_int(rs, 1, 4, pmin, pmax + 1);
		a.NP = a.P + sf_rng_int(rs, 1, 5, 0, 4);

		sf_ocall c;
		CHECK_INT(pf16_gen(&c, a, 1, rs, NULL, 0), 0);
		const int64_t sq[3] = { a.TQ, GQ_HQ, GQ_D }, skv[4] = { a.NP, GQ_PS, GQ_HKV, GQ_D };
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
			const int64_t q0 = pf16_get(&c, IN_QO_INDPTR, b), qo_len = pf16_get(&c, IN_QO_INDPTR, b + 1) - q0;
			const int64_t p0 = pf16_get(&c, IN_KV_INDPTR, b), np = pf16_get(&c, IN_KV_INDPTR, b + 1) - p0;
			const int64_t kv_len = (np - 1) * GQ_PS + pf16_get(&c, IN_LAST_PAGE_LEN, b);
			/* gather K, V: [kv_len][8][128] in position order */
			double *kd = (double *)malloc(sizeof(double) * (size_t)(kv_len * GQ_HKV * GQ_D));
			double *vd = (double *)malloc(sizeof(double) * (size_t)(kv_len * GQ_HKV * GQ_D));
			double *sc = (double *)malloc(sizeof(double) * (size_t)kv_len);
			for (int64_t pg = 0; pg < np; pg++) {
				const int64_t id = pf16_get(&c, IN_KV_INDICES, p0 + pg);
				for (int64_t s = 0; s < GQ_PS && pg * GQ_PS + s < kv_len; s++)
					for (int64_t e = 0; e < GQ_HKV * GQ_D; e++) {
						const int64_t src = (id * GQ_PS + s) * GQ_HKV * GQ_D + e;
						kd[(pg * GQ_PS + s) * GQ_HKV * GQ_D + e] = sf_load(c.in[IN_K].data, SF_DT_BF16, src);
						vd[(pg * GQ_PS + s) * GQ_HKV * GQ_D + e] = sf_load(c.in[IN_V].data, SF_DT_BF16, src);
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
						const double err = fabs(o - pf16_out(&c, q0 + j, h, d)) / (1.0 + fabs(o));
						max_err = err > max_err ? err : max_err;
					}
					const double lse2 = (mx + log(den)) / log(2.0);
					const double err = fabs(lse2 - pf16_lse(&c, q0 + j, h)) / (1.0 + fabs(lse2));
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
 * SOL work of a hand-made batch: qo_len (2, 1, 0), kv_len (3, 20, 5); pages (1, 2, 1), last (3, 4, 5).
 * pairs: seq 0: 2 * (3 - 2) + 2 * 3 / 2 = 5; seq 1: 1 * (20 - 1) + 1 = 20; seq 2 (empty): 0 -> 25.
 * bf16_tensor = 4 * 128 * 32 * 25 = 409600; sfu = 32 * 25 = 800.
 * bytes: q + output 2 * 3 * 32 * 128 * 2 = 49152; lse 3 * 32 * 4 = 384;
 *        K + V of kv positions needed: (3 + 20) * 8 * 128 * 2 * 2 = 94208 (seq 2 has no query);
 *        indices 4 * (4 + 4 + 4 + 3) = 60 -> 143804.
 */
SF_TEST(gqa_pf16_work_by_hand)
{
	sf_ocall c = { 0 };
	pf16_setup(&c, 3, 3, 28, 4, 6, 1, 0, 0.08838834764831845, 0);
	const int64_t qo[4] = { 0, 2, 3, 3 }, kvp[4] = { 0, 1, 3, 4 }, idx[4] = { 0, 1, 2, 3 };
	const int64_t last[3] = { 3, 4, 5 };
	pf16_set_i32(&c, IN_QO_INDPTR, qo, 4);
	pf16_set_i32(&c, IN_KV_INDPTR, kvp, 4);
	pf16_set_i32(&c, IN_KV_INDICES, idx, 4);
	pf16_set_i32(&c, IN_LAST_PAGE_LEN, last, 3);
	sf_work w;
	memset(&w, 0xff, sizeof w);
	sf_oracle_work(&c, &w);
	CHECK_NEAR(w.flops[SF_UNIT_BF16_TENSOR], 409600.0, 0.0);
	CHECK_NEAR(w.flops[SF_UNIT_SFU], 800.0, 0.0);
	CHECK_NEAR(w.flops[SF_UNIT_FP32], 0.0, 0.0);
	CHECK_NEAR(w.bytes, 143804.0, 0.0);
	ot_free(&c);

	/* without host copies: the uniform formula; one sequence of 512 new tokens, no prefix:
	 * pairs 512 * 513 / 2 = 131328 -> bf16 2151677952, sfu 4202496;
	 * bytes 512 * (16384 + 128) + 512 * 4096 + 4 * (2 * 2 + 32 + 1) = 8454144 + 2097152 + 148 = 10551444 */
	sf_ocall d = { 0 };
	d.n_in = PF16_NIN;
	d.n_axis = 7;
	d.axis[AX_BATCH] = 1;
	d.axis[AX_TOTAL_Q] = 512;
	d.axis[AX_TOTAL_KV] = 512;
	d.axis[AX_NUM_KV_INDICES] = 32;
	d.axis[AX_NUM_PAGES] = 64;
	sf_oracle_work(&d, &w);
	CHECK_NEAR(w.flops[SF_UNIT_BF16_TENSOR], 2151677952.0, 0.0);
	CHECK_NEAR(w.flops[SF_UNIT_SFU], 4202496.0, 0.0);
	CHECK_NEAR(w.bytes, 10551444.0, 0.0);
}
