/*
 * oracle.c - moe_router_softmax_topk_e128_k8: the Qwen3-30B-A3B MoE router after the gate projection.
 *
 * For each token t (one item):
 *     p[e]   = softmax(logits[t, :])[e]                 (the model does this in float32; here in double)
 *     ids    = the K experts of largest p, in descending p; equal p (equal bf16 logits) -> lower index
 *     w[k]   = p[ids[k]] / sum_j p[ids[j]]              (norm_topk_prob = true)
 * Outputs: topk_weights [T, K] (float32 reference buffer), topk_ids [T, K] int32 (stored exactly).
 *
 * Ranking by p is ranking by logit (exp is increasing and the denominator is shared), so the ids do not
 * depend on how a kernel sums the softmax denominator: two distinct bf16 logits differ by at least one
 * bf16 ulp, far more than any float32 rounding of exp(). Equal bf16 logits give equal probabilities in
 * any implementation, and the tie rule (lower expert index first) decides.
 */
#include <math.h>
#include "solforge/oracle.h"

#define ROUTER_TOPK_MAX 32 /* local-array bound; the definition has K = 8 */

SF_ORACLE_AXES("T", "E", "K");

SF_ORACLE_ITEMS(c)
{
	return c->axis[0];
}

static SF_HD inline int router_taken(const int64_t *ids, int64_t n, int64_t e)
{
	for (int64_t j = 0; j < n; j++)
		if (ids[j] == e)
			return 1;
	return 0;
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t E = c->axis[1];
	const int64_t K = c->axis[2] < ROUTER_TOPK_MAX ? c->axis[2] : ROUTER_TOPK_MAX;
	const int64_t row = item * E;

	/* pass 1: the largest logit (softmax is shift-invariant; the shift keeps exp() in range) */
	double m = sf_in(c, 0, row);
	for (int64_t e = 1; e < E; e++) {
		double v = sf_in(c, 0, row + e);
		if (v > m)
			m = v;
	}
	/* pass 2: the softmax denominator */
	double denom = 0.0;
	for (int64_t e = 0; e < E; e++)
		denom += exp(sf_in(c, 0, row + e) - m);

	/* top-K: K passes of argmax over the experts not taken yet. Scanning upwards with a strict '>'
	 * keeps the lower index among equal probabilities. */
	int64_t ids[ROUTER_TOPK_MAX];
	double p[ROUTER_TOPK_MAX];
	double psum = 0.0;
	for (int64_t k = 0; k < K; k++) {
		int64_t best = -1;
		double bestp = 0.0;
		for (int64_t e = 0; e < E; e++) {
			if (router_taken(ids, k, e))
				continue;
			double pe = exp(sf_in(c, 0, row + e) - m) / denom;
			if (best < 0 || pe > bestp) {
				best = e;
				bestp = pe;
			}
		}
		ids[k] = best;
		p[k] = bestp;
		psum += bestp;
	}
	for (int64_t k = 0; k < K; k++) {
		sf_out_set(c, 0, item * c->axis[2] + k, p[k] / psum);
		sf_store_int(c->out[1].data, (sf_dt)c->out[1].dt, item * c->axis[2] + k, ids[k]);
	}
}
