/*
 * oracle.c - moe_grouped_topk_routing_e256_g8_k8: DeepSeek-V3 MoE gate (noaux_tc routing).
 *
 * For each token (one item), in double:
 *     s[e]      = sigmoid(logits[e]);   c[e] = s[e] + bias[e]            (bias: e_score_correction_bias)
 *     group g   = experts [g*E/G, (g+1)*E/G); score(g) = sum of the two largest c in the group
 *     keep the TOPKG groups of largest score (equal scores: lower group index first)
 *     ids       = the TOPK experts of largest c among the kept groups, in descending c (equal c: lower
 *                 index first); experts of dropped groups never qualify (DeepSeek masks them with -inf)
 *     w[k]      = s[ids[k]] / sum_j s[ids[j]] * routed_scaling_factor
 * The generator (SF_ORACLE_GEN) draws logits and bias together and redraws a token's logits until every
 * decision is separated by at least DSR_MARGIN: the 4th and 5th group scores, and each consecutive pair
 * among the 9 best kept choices. So any float32 evaluation of sigmoid and of the sums (errors ~1e-7)
 * reaches the same ids in the same order as this double-precision oracle.
 */
#include <math.h>
#include <stdio.h>
#include "solforge/oracle.h"

SF_ORACLE_AXES("T", "E", "G", "TOPKG", "TOPK");

enum { DSR_LOGITS = 0, DSR_BIAS, DSR_RSF };

#define DSR_TOPK_MAX 32
#define DSR_GROUPS_MAX 64
#define DSR_MARGIN 1e-4

SF_ORACLE_ITEMS(c)
{
	return c->axis[0];
}

static SF_HD inline double dsr_sigmoid(double x)
{
	return 1.0 / (1.0 + exp(-x));
}

/*
 * Routes one token: l and b point at its E logits and the E biases. Writes the TOPK ids and their
 * sigmoid scores s (without bias), in order. Returns the smallest decision margin (see above); a margin
 * that cannot be measured (no 5th group, no 9th expert) counts as infinite.
 */
static SF_HD double dsr_route(const float *l, const float *b, int64_t E, int64_t G, int64_t TOPKG, int64_t TOPK,
			      int64_t *ids, double *s)
{
	const int64_t GS = E / G;
	const double inf = 1e300;
	double gscore[DSR_GROUPS_MAX];
	unsigned char kept[DSR_GROUPS_MAX];
	for (int64_t g = 0; g < G; g++) {
		double top1 = -inf, top2 = -inf;
		for (int64_t e = g * GS; e < (g + 1) * GS; e++) {
			double ce = dsr_sigmoid((double)l[e]) + (double)b[e];
			if (ce > top1) {
				top2 = top1;
				top1 = ce;
			} else if (ce > top2) {
				top2 = ce;
			}
		}
		gscore[g] = top1 + top2;
		kept[g] = 0;
	}

	double margin = inf, prev = 0.0;
	/* TOPKG passes of argmax over the groups (strict '>': lower index wins), one more for the margin */
	for (int64_t r = 0; r <= TOPKG && r < G; r++) {
		int64_t best = -1;
		for (int64_t g = 0; g < G; g++)
			if (!kept[g] && (best < 0 || gscore[g] > gscore[best]))
				best = g;
		if (r < TOPKG) {
			kept[best] = 1;
			prev = gscore[best];
		} else if (prev - gscore[best] < margin) {
			margin = prev - gscore[best];
		}
	}

	/* TOPK passes of argmax over the experts of kept groups, one more for the margin */
	for (int64_t r = 0; r <= TOPK; r++) {
		int64_t best = -1;
		double bestc = 0.0;
		for (int64_t e = 0; e < E; e++) {
			if (!kept[e / GS])
				continue;
			int taken = 0;
			for (int64_t j = 0; j < r && j < TOPK; j++)
				taken |= ids[j] == e;
			if (taken)
				continue;
			double ce = dsr_sigmoid((double)l[e]) + (double)b[e];
			if (best < 0 || ce > bestc) {
				best = e;
				bestc = ce;
			}
		}
		if (best < 0)
			break;
		if (r > 0 && prev - bestc < margin)
			margin = prev - bestc;
		if (r < TOPK) {
			ids[r] = best;
			s[r] = dsr_sigmoid((double)l[best]);
		}
		prev = bestc;
	}
	return margin;
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t E = c->axis[1], G = c->axis[2], TOPKG = c->axis[3], TOPK = c->axis[4];
	const float *l = (const float *)c->in[DSR_LOGITS].data + item * E;
	const float *b = (const float *)c->in[DSR_BIAS].data;
	int64_t ids[DSR_TOPK_MAX];
	double s[DSR_TOPK_MAX];
	if (TOPK > DSR_TOPK_MAX || G > DSR_GROUPS_MAX || TOPK > TOPKG * (E / G))
		return; /* outside the definition (TOPK 8, G 8) */
	dsr_route(l, b, E, G, TOPKG, TOPK, ids, s);
	double sum = 0.0;
	for (int64_t k = 0; k < TOPK; k++)
		sum += s[k];
	const double rsf = (double)(float)c->scalar[DSR_RSF];
	for (int64_t k = 0; k < TOPK; k++) {
		sf_out_set(c, 0, item * TOPK + k, s[k] / sum * rsf);
		sf_store_int(c->out[1].data, (sf_dt)c->out[1].dt, item * TOPK + k, ids[k]);
	}
}

/*
 * bias: normal, std DSR_BIAS_STD (small per-expert offsets); logits: standard normal, a token's logits
 * redrawn (a new stream per attempt) until dsr_route's margin is at least DSR_MARGIN, which about 9 in
 * 10 first draws meet. Should 64 attempts all fail, a deterministic fallback sets the token's choice
 * values to an evenly spaced ramp (spacing 0.5/(E-1)) by solving sigmoid(l) = c - bias for l.
 */
#define DSR_BIAS_STD 0.05
#define DSR_STREAM_BIAS 0xb1a5u
#define DSR_STREAM_LOGITS 0x10600000u

SF_ORACLE_GEN(g)
{
	const int64_t T = g->c.axis[0], E = g->c.axis[1], G = g->c.axis[2], TOPKG = g->c.axis[3],
		      TOPK = g->c.axis[4];
	if (!g->is_custom[DSR_LOGITS] && !g->is_custom[DSR_BIAS])
		return 0;
	if (!g->is_custom[DSR_LOGITS] || !g->is_custom[DSR_BIAS]) {
		snprintf(g->err, sizeof g->err, "logits and bias must both be custom: the margins depend on both");
		return -1;
	}
	if (g->c.in[DSR_LOGITS].dt != SF_DT_F32 || g->c.in[DSR_BIAS].dt != SF_DT_F32 || G > DSR_GROUPS_MAX ||
	    TOPK > DSR_TOPK_MAX || G <= 0 || E % G != 0 || TOPK > TOPKG * (E / G)) {
		snprintf(g->err, sizeof g->err, "unsupported routing geometry or dtypes");
		return -1;
	}
	float *l = (float *)g->c.in[DSR_LOGITS].data;
	float *b = (float *)g->c.in[DSR_BIAS].data;
	for (int64_t e = 0; e < E; e++)
		b[e] = (float)(DSR_BIAS_STD * sf_rng_normal(g->seed, DSR_STREAM_BIAS, (uint64_t)e));

	int64_t ids[DSR_TOPK_MAX];
	double s[DSR_TOPK_MAX];
	for (int64_t t = 0; t < T; t++) {
		float *lt = l + t * E;
		int ok = 0;
		for (uint32_t attempt = 0; attempt < 64 && !ok; attempt++) {
			for (int64_t e = 0; e < E; e++)
				lt[e] = (float)sf_rng_normal(g->seed, DSR_STREAM_LOGITS + attempt, (uint64_t)(t * E + e));
			ok = dsr_route(lt, b, E, G, TOPKG, TOPK, ids, s) >= DSR_MARGIN;
		}
		if (!ok) {
			for (int64_t e = 0; e < E; e++) {
				double target = 0.25 + 0.5 * (double)e / (double)(E - 1) - (double)b[e];
				lt[e] = (float)log(target / (1.0 - target));
			}
			if (dsr_route(lt, b, E, G, TOPKG, TOPK, ids, s) < DSR_MARGIN) {
				snprintf(g->err, sizeof g->err, "token %lld: no draw met the routing margin",
					 (long long)t);
				return -1;
			}
		}
	}
	return 0;
}
