/*
 * Oracle of gqa_paged_prefill_causal_h32_kv8_d128_ps16: Llama-3.1-8B self-attention during
 * (incremental) prefill over a FlashInfer paged KV cache with page_size 16 (NHD layout).
 *
 * Inputs (definition order):
 *   0 q                 [total_q, 32, 128] bf16     new query tokens of all sequences, concatenated
 *   1 k_cache           [num_pages, 16, 8, 128] bf16
 *   2 v_cache           [num_pages, 16, 8, 128] bf16
 *   3 qo_indptr         [batch_size + 1] int32      sequence b owns q rows qo_indptr[b] .. qo_indptr[b+1]-1
 *   4 kv_indptr         [batch_size + 1] int32      sequence b owns kv_indices[kv_indptr[b] .. kv_indptr[b+1]-1]
 *   5 kv_indices        [num_kv_indices] int32      page ids, in position order within each sequence
 *   6 kv_last_page_len  [batch_size] int32          valid slots (1..16) of each sequence's last page
 *   7 sm_scale          scalar float32
 * Outputs: 0 output [total_q, 32, 128] (bf16, reference float32), 1 lse [total_q, 32] float32.
 *
 * Sequence b has kv_len = (kv_indptr[b+1] - kv_indptr[b] - 1) * 16 + kv_last_page_len[b] cached
 * positions (its new tokens included: they were appended to the cache before attention); kv position
 * p lives at k_cache[kv_indices[kv_indptr[b] + p / 16], p % 16]. Its qo_len = qo_indptr[b+1] -
 * qo_indptr[b] new tokens are the last qo_len positions, so new token j (0-based) attends to kv
 * positions 0 .. kv_len - qo_len + j (causal with a cached prefix). Query head h reads kv head h / 4
 * (GQA, 32 query heads over 8 kv heads). With s_p = sm_scale * q.k_p:
 *   output = sum_p exp(s_p) v_p / sum_p exp(s_p),   lse = log2(sum_p exp(s_p))   (base 2, FlashInfer).
 *
 * One item per (query token, query head): two passes over the allowed positions, the first for the
 * max score, the second for the exp-sum and the exp-weighted sum of V, all in double. Local memory:
 * q row and accumulator, 2 x 128 doubles.
 *
 * SF_ORACLE_GEN draws the index structure (qo_indptr, kv_indptr, kv_indices, kv_last_page_len) from
 * the axes and the seed; SF_ORACLE_WORK counts the causal (query, key) pairs and the K/V bytes that
 * the actual structure needs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "solforge/oracle.h"

#define GQ_HQ 32          /* num_attention_heads */
#define GQ_HKV 8          /* num_key_value_heads */
#define GQ_GROUP (GQ_HQ / GQ_HKV)
#define GQ_D 128          /* head_dim */
#define GQ_PS 16          /* page_size */
#define GQ_LN2 0.69314718055994530942

enum { IN_Q, IN_K, IN_V, IN_QO_INDPTR, IN_KV_INDPTR, IN_KV_INDICES, IN_LAST_PAGE_LEN, IN_SM_SCALE };
enum { OUT_OUTPUT, OUT_LSE };

SF_ORACLE_AXES("batch_size", "total_q", "total_kv", "num_kv_indices", "num_pages", "num_empty_seqs",
	       "ragged");
enum { AX_BATCH, AX_TOTAL_Q, AX_TOTAL_KV, AX_NUM_KV_INDICES, AX_NUM_PAGES, AX_NUM_EMPTY, AX_RAGGED };

/* Integer element i of input k. */
static SF_HD inline int64_t gq_idx(const sf_ocall *c, int k, int64_t i)
{
	return sf_load_int(c->in[k].data, (sf_dt)c->in[k].dt, i);
}

/* Flat index of element d of kv head kvh at kv position pos of the sequence whose pages start at
 * kv_indices[page0], in a [num_pages, 16, 8, 128] cache. */
static SF_HD inline int64_t gq_kv_at(const sf_ocall *c, int64_t page0, int64_t pos, int kvh, int d)
{
	const int64_t page = gq_idx(c, IN_KV_INDICES, page0 + pos / GQ_PS);
	return ((page * GQ_PS + pos % GQ_PS) * GQ_HKV + kvh) * GQ_D + d;
}

SF_ORACLE_ITEMS(c)
{
	return c->axis[AX_TOTAL_Q] * GQ_HQ;
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t t = item / GQ_HQ; /* query token (row of q) */
	const int h = (int)(item % GQ_HQ);
	const int kvh = h / GQ_GROUP;
	const int64_t batch = c->axis[AX_BATCH];
	const double scale = sf_round_f32(c->scalar[IN_SM_SCALE]); /* the float32 the scalar holds */

	/* the sequence owning row t: the first b with t < qo_indptr[b+1] (empty sequences skipped) */
	int64_t b = 0;
	while (b < batch - 1 && gq_idx(c, IN_QO_INDPTR, b + 1) <= t)
		b++;
	const int64_t q0 = gq_idx(c, IN_QO_INDPTR, b);
	const int64_t qo_len = gq_idx(c, IN_QO_INDPTR, b + 1) - q0;
	const int64_t page0 = gq_idx(c, IN_KV_INDPTR, b);
	const int64_t n_pages = gq_idx(c, IN_KV_INDPTR, b + 1) - page0;
	const int64_t kv_len = n_pages > 0 ? (n_pages - 1) * GQ_PS + gq_idx(c, IN_LAST_PAGE_LEN, b) : 0;
	const int64_t n_keys = kv_len - qo_len + (t - q0) + 1; /* positions 0 .. n_keys-1 */

	if (n_keys <= 0) { /* no key to attend to (never for valid inputs): zeros and -inf */
		for (int d = 0; d < GQ_D; d++)
			sf_out_set(c, OUT_OUTPUT, item * GQ_D + d, 0.0);
		sf_out_set(c, OUT_LSE, item, sf_bits_f64(0xfff0000000000000ull));
		return;
	}

	double qv[GQ_D];
	for (int d = 0; d < GQ_D; d++)
		qv[d] = sf_in(c, IN_Q, item * GQ_D + d); /* q[t, h, d]: (t * 32 + h) * 128 + d */

	/* pass 1: the largest scaled score */
	double m = 0.0;
	for (int64_t p = 0; p < n_keys; p++) {
		double s = 0.0;
		for (int d = 0; d < GQ_D; d++)
			s += qv[d] * sf_in(c, IN_K, gq_kv_at(c, page0, p, kvh, d));
		s *= scale;
		if (p == 0 || s > m)
			m = s;
	}

	/* pass 2: sum of exp(s - m) and the exp-weighted sum of V */
	double acc[GQ_D];
	for (int d = 0; d < GQ_D; d++)
		acc[d] = 0.0;
	double sum = 0.0;
	for (int64_t p = 0; p < n_keys; p++) {
		double s = 0.0;
		for (int d = 0; d < GQ_D; d++)
			s += qv[d] * sf_in(c, IN_K, gq_kv_at(c, page0, p, kvh, d));
		const double e = exp(s * scale - m);
		sum += e;
		for (int d = 0; d < GQ_D; d++)
			acc[d] += e * sf_in(c, IN_V, gq_kv_at(c, page0, p, kvh, d));
	}

	for (int d = 0; d < GQ_D; d++)
		sf_out_set(c, OUT_OUTPUT, item * GQ_D + d, acc[d] / sum);
	sf_out_set(c, OUT_LSE, item, (m + log(sum)) / GQ_LN2);
}

/* ---------------------------------------------------------------- generator (host only) -------- */

#define GQ_STREAM_PAGES 0x47510001u /* ragged factors of the page counts */
#define GQ_STREAM_LAST 0x47510002u  /* ragged factors of the last-page lengths */
#define GQ_STREAM_QO 0x47510003u    /* ragged factors of the new-token counts */
#define GQ_STREAM_TIE 0x47510004u   /* tie-breaks when choosing the empty sequences */
#define GQ_STREAM_PERM 0x47510005u  /* the page-id shuffle */

/*
 * Splits `total` into n parts x[i] in [lo[i], hi[i]]; needs sum(lo) <= total <= sum(hi), else
 * returns -1. Part i aims at the mean of what is left (left / (n - i)), times a random factor in
 * [0.2, 1.8] when `ragged`, and is clamped to the range that keeps the remaining parts feasible, so
 * the parts always sum to `total` exactly. ragged == 0 gives parts as equal as the bounds allow.
 */
static int gq_compose(int64_t *x, const int64_t *lo, const int64_t *hi, int64_t n, int64_t total,
		      int ragged, uint64_t seed, uint32_t stream)
{
	int64_t lo_rest = 0, hi_rest = 0;
	for (int64_t i = 0; i < n; i++) {
		lo_rest += lo[i];
		hi_rest += hi[i];
	}
	if (total < lo_rest || total > hi_rest)
		return -1;
	int64_t left = total;
	for (int64_t i = 0; i < n; i++) {
		lo_rest -= lo[i];
		hi_rest -= hi[i];
		const int64_t a = lo[i] > left - hi_rest ? lo[i] : left - hi_rest;
		const int64_t z = hi[i] < left - lo_rest ? hi[i] : left - lo_rest;
		double target = (double)left / (double)(n - i);
		if (ragged)
			target *= 0.2 + 1.6 * sf_rng_uniform(seed, stream, (uint64_t)i);
		int64_t v = (int64_t)floor(target + 0.5);
		v = v < a ? a : (v > z ? z : v);
		x[i] = v;
		left -= v;
	}
	return 0;
}

static int gq_fail(sf_gcall *g, const char *msg)
{
	snprintf(g->err, sizeof g->err, "gqa_paged_prefill_ps16 gen: %s", msg);
	return -1;
}

/*
 * Draws a valid paged batch for any seed:
 *  1. page counts n_pages[b] >= 1 summing to num_kv_indices;
 *  2. last-page lengths in [1, 16] summing to total_kv - 16 * (num_kv_indices - batch_size), so that
 *     kv_len[b] = 16 * (n_pages[b] - 1) + last[b] sums to total_kv;
 *  3. the num_empty_seqs sequences with the shortest kv_len (ties at random) get qo_len 0, the others
 *     qo_len in [1, kv_len[b]], summing to total_q (feasible: the constraint total_q * batch_size <=
 *     total_kv * (batch_size - num_empty_seqs) bounds total_q by what the non-empty ones hold);
 *  4. kv_indices: num_kv_indices distinct page ids drawn from [0, num_pages) in random order (a partial
 *     Fisher-Yates shuffle), handed out to the sequences in order.
 */
SF_ORACLE_GEN(g)
{
	sf_ocall *c = &g->c;
	const int64_t B = c->axis[AX_BATCH], TQ = c->axis[AX_TOTAL_Q], TKV = c->axis[AX_TOTAL_KV];
	const int64_t P = c->axis[AX_NUM_KV_INDICES], NP = c->axis[AX_NUM_PAGES], E = c->axis[AX_NUM_EMPTY];
	const int ragged = c->axis[AX_RAGGED] != 0;
	const int k_idx[4] = { IN_QO_INDPTR, IN_KV_INDPTR, IN_KV_INDICES, IN_LAST_PAGE_LEN };
	int n_custom = 0;
	for (int i = 0; i < 4; i++)
		n_custom += g->is_custom[k_idx[i]] != 0;
	if (n_custom == 0)
		return 0;
	if (n_custom != 4)
		return gq_fail(g, "qo_indptr, kv_indptr, kv_indices and kv_last_page_len are drawn together: "
				  "make all four custom or none");
	if (B < 1 || B > 0x7fffffff || E < 0 || E >= B)
		return gq_fail(g, "need 1 <= batch_size and 0 <= num_empty_seqs < batch_size");
	if (TQ < B - E || TQ > 0x7fffffff || TQ * B > TKV * (B - E))
		return gq_fail(g, "need batch_size - num_empty_seqs <= total_q and "
				  "total_q * batch_size <= total_kv * (batch_size - num_empty_seqs)");
	if (P < B || TKV > GQ_PS * P || TKV < GQ_PS * P - (GQ_PS - 1) * B || TKV > 0x7fffffff)
		return gq_fail(g, "need batch_size <= num_kv_indices and "
				  "16 * num_kv_indices - 15 * batch_size <= total_kv <= 16 * num_kv_indices");
	if (NP < P || NP > 0x7fffffff)
		return gq_fail(g, "need num_kv_indices <= num_pages <= 2^31 - 1");
	if (c->in[IN_QO_INDPTR].numel != B + 1 || c->in[IN_KV_INDPTR].numel != B + 1 ||
	    c->in[IN_KV_INDICES].numel != P || c->in[IN_LAST_PAGE_LEN].numel != B)
		return gq_fail(g, "index tensor shapes do not match the axes");

	int64_t *buf = (int64_t *)malloc(sizeof(int64_t) * (size_t)B * 6);
	int32_t *perm = (int32_t *)malloc(sizeof(int32_t) * (size_t)NP);
	if (!buf || !perm) {
		free(buf);
		free(perm);
		return gq_fail(g, "out of memory");
	}
	int64_t *n_pages = buf, *last = buf + B, *kv_len = buf + 2 * B, *qo_len = buf + 3 * B;
	int64_t *lo = buf + 4 * B, *hi = buf + 5 * B;
	const uint64_t seed = g->seed;
	int rc = 0;

	/* 1. pages per sequence */
	for (int64_t b = 0; b < B; b++) {
		lo[b] = 1;
		hi[b] = P;
	}
	rc |= gq_compose(n_pages, lo, hi, B, P, ragged, seed, GQ_STREAM_PAGES);
	/* 2. last-page lengths */
	for (int64_t b = 0; b < B; b++) {
		lo[b] = 1;
		hi[b] = GQ_PS;
	}
	rc |= gq_compose(last, lo, hi, B, TKV - GQ_PS * (P - B), ragged, seed, GQ_STREAM_LAST);
	for (int64_t b = 0; b < B; b++)
		kv_len[b] = GQ_PS * (n_pages[b] - 1) + last[b];
	/* 3. empty sequences (lo = hi = 0), then new tokens of the others */
	for (int64_t b = 0; b < B; b++) {
		lo[b] = 1;
		hi[b] = kv_len[b];
	}
	for (int64_t e = 0; e < E; e++) {
		int64_t best = -1;
		uint64_t best_tie = 0;
		for (int64_t b = 0; b < B; b++) {
			if (hi[b] == 0)
				continue; /* already empty */
			const uint64_t tie = sf_rng_u64(seed, GQ_STREAM_TIE, (uint64_t)b);
			if (best < 0 || kv_len[b] < kv_len[best] || (kv_len[b] == kv_len[best] && tie < best_tie)) {
				best = b;
				best_tie = tie;
			}
		}
		lo[best] = hi[best] = 0;
	}
	rc |= gq_compose(qo_len, lo, hi, B, TQ, ragged, seed, GQ_STREAM_QO);
	if (rc) { /* unreachable given the checks above */
		free(buf);
		free(perm);
		return gq_fail(g, "internal: infeasible composition");
	}
	/* 4. distinct page ids in random order */
	for (int64_t i = 0; i < NP; i++)
		perm[i] = (int32_t)i;
	for (int64_t i = 0; i < P; i++) {
		const int64_t j = sf_rng_int(seed, GQ_STREAM_PERM, (uint64_t)i, i, NP);
		const int32_t tmp = perm[i];
		perm[i] = perm[j];
		perm[j] = tmp;
	}

	int64_t qo_acc = 0, kv_acc = 0;
	sf_store_int(c->in[IN_QO_INDPTR].data, (sf_dt)c->in[IN_QO_INDPTR].dt, 0, 0);
	sf_store_int(c->in[IN_KV_INDPTR].data, (sf_dt)c->in[IN_KV_INDPTR].dt, 0, 0);
	for (int64_t b = 0; b < B; b++) {
		qo_acc += qo_len[b];
		kv_acc += n_pages[b];
		sf_store_int(c->in[IN_QO_INDPTR].data, (sf_dt)c->in[IN_QO_INDPTR].dt, b + 1, qo_acc);
		sf_store_int(c->in[IN_KV_INDPTR].data, (sf_dt)c->in[IN_KV_INDPTR].dt, b + 1, kv_acc);
		sf_store_int(c->in[IN_LAST_PAGE_LEN].data, (sf_dt)c->in[IN_LAST_PAGE_LEN].dt, b, last[b]);
	}
	for (int64_t i = 0; i < P; i++)
		sf_store_int(c->in[IN_KV_INDICES].data, (sf_dt)c->in[IN_KV_INDICES].dt, i, perm[i]);
	free(buf);
	free(perm);
	return 0;
}

/* ---------------------------------------------------------------- SOL work (host only) --------- */

/*
 * pairs = sum over sequences of sum_j (kv_len - qo_len + j + 1) = qo_len * (kv_len - qo_len) +
 * qo_len * (qo_len + 1) / 2. Per pair and query head: QK^T and PV, 2 * 128 FLOPs each (bf16 tensor),
 * and one exp (sfu). Bytes: q, output and lse once; K and V rows (8 heads x 128 x 2 bytes each) of
 * the kv positions some query attends, i.e. all kv_len positions of every sequence with qo_len > 0
 * (an empty sequence's pages are not needed); the four index arrays once.
 */
SF_ORACLE_WORK(c, w)
{
	const int64_t B = c->axis[AX_BATCH], TQ = c->axis[AX_TOTAL_Q], P = c->axis[AX_NUM_KV_INDICES];
	double pairs = 0.0, kv_tokens = 0.0;
	if (c->in[IN_QO_INDPTR].data && c->in[IN_KV_INDPTR].data && c->in[IN_LAST_PAGE_LEN].data) {
		for (int64_t b = 0; b < B; b++) {
			const int64_t qo_len = gq_idx(c, IN_QO_INDPTR, b + 1) - gq_idx(c, IN_QO_INDPTR, b);
			const int64_t n_pages = gq_idx(c, IN_KV_INDPTR, b + 1) - gq_idx(c, IN_KV_INDPTR, b);
			const int64_t kv_len = n_pages > 0 ? (n_pages - 1) * GQ_PS + gq_idx(c, IN_LAST_PAGE_LEN, b) : 0;
			if (qo_len <= 0)
				continue;
			pairs += (double)qo_len * (double)(kv_len - qo_len) + (double)qo_len * (double)(qo_len + 1) / 2.0;
			kv_tokens += (double)kv_len;
		}
	} else { /* no host copy of the structure: the definition's uniform-batch formula */
		const double tq = (double)TQ, tkv = (double)c->axis[AX_TOTAL_KV], nb = (double)B;
		pairs = tq * (2.0 * (tkv - tq) + tq + nb) / (2.0 * nb);
		kv_tokens = tkv;
	}
	for (int u = 0; u < SF_UNIT_COUNT; u++)
		w->flops[u] = 0.0;
	w->flops[SF_UNIT_BF16_TENSOR] = 4.0 * GQ_D * GQ_HQ * pairs;
	w->flops[SF_UNIT_SFU] = (double)GQ_HQ * pairs;
	w->bytes = 2.0 * 2.0 * (double)TQ * GQ_HQ * GQ_D      /* q and output, bf16 */
		   + 4.0 * (double)TQ * GQ_HQ                  /* lse, float32 */
		   + 2.0 * 2.0 * kv_tokens * GQ_HKV * GQ_D     /* K and V rows, bf16 */
		   + 4.0 * (2.0 * (double)(B + 1) + (double)P + (double)B); /* int32 index arrays */
}
