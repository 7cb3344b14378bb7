/*
 * emu_dsroute.h - the DeepSeek-V3 grouped top-k routing cases of emu_test.cpp (included there, after its
 * helpers; -DEMU_DSROUTE): the fast.cu of moe_grouped_topk_routing_e256_g8_k8, version 1 (default) or 2
 * (-DDS_V2=1), run whole on the CPU emulation (warp shuffles, redux, ballot) against oracle.c's
 * algorithm in double (dsr_route, restated): ids exact, weights within the workload's tolerance
 * (atol 1e-6, rtol 1e-5), outputs poisoned and guarded. Row kinds:
 *  - margin: as the oracle's generator (bias ~ N(0, 0.05), logits ~ N(0, 1) redrawn until every
 *    decision has a 1e-4 margin);
 *  - ties:   zero bias, logits from 4 values: exact ties among choices and among group scores (the lower
 *    index must win in both);
 *  - near:   zero bias, low background, a ladder of 16 logits 4e-5 apart planted at random experts:
 *    choices and group scores 1e-5 apart (10x below the generator's margin), rows kept when the
 *    double oracle's margin is >= 2e-6 (far above float32's ~1e-7);
 *  - lanedup: low background, 1-3 random lanes (8 experts each) given several copies of one or two
 *    values: exact ties inside a lane, popped in consecutive rounds (version 2's dup count);
 *  - grouptie: low background, each group two equal values of one of two levels: group scores tie
 *    exactly across the 4th / 5th boundary, and which groups are kept decides the ids.
 * Three seeds (one with -DEMU_DS_QUICK); the SM count is emulated as 2, so version 2's grid cap (DS2_BPS blocks per SM) makes
 * warps loop over tokens (and prefetch) from T = 65 on. K 4 and an unaligned row take version 1.
 */
#ifdef EMU_DSROUTE
#include "ds_route_ref.h"
enum { DSE_E = 256, DSE_G = 8, DSE_TOPKG = 4 };

/* oracle.c's dsr_route for one token in double (ds_route_ref.h): ids and s (sigmoid) of the K picks; returns the
 * smallest decision margin (4th vs 5th group score, consecutive pairs among the K+1 best kept) */
static double dse_route(const float *l, const float *b, int K, int *ids, double *s)
{
	return ds_route_ref(l, b, DSE_E, DSE_G, DSE_TOPKG, K, ids, s);
}

/* one token's logits of the given kind (bias drawn by the caller); false: give up on this row */
static bool dse_row(const std::string &kind, float *l, const float *b, int K)
{
	std::normal_distribution<double> nd(0.0, 1.0);
	int ids[32];
	double s[32];
	for (int attempt = 0; attempt < 64; attempt++) {
		if (kind == "margin") {
			for (int e = 0; e < DSE_E; e++)
				l[e] = (float)nd(rng);
			if (dse_route(l, b, K, ids, s) >= 1e-4)
				return true;
		} else if (kind == "ties") {
			static const float vals[4] = { -1.0f, 0.0f, 0.5f, 2.0f };
			for (int e = 0; e < DSE_E; e++)
				l[e] = vals[rng() % 4];
			return true;
		} else if (kind == "near") {
			for (int e = 0; e < DSE_E; e++)
				l[e] = (float)(-2.0 + 0.3 * nd(rng));
			for (int i = 0; i < 16; i++)
				l[rng() % DSE_E] = (float)(1.0 + 4e-5 * i);
			if (dse_route(l, b, K, ids, s) >= 2e-6)
				return true;
		} else if (kind == "grouptie") {
			for (int e = 0; e < DSE_E; e++)
				l[e] = (float)(-3.0 + 0.3 * nd(rng));
			for (int g = 0; g < DSE_G; g++) { /* two equal values per group, of one of two levels */
				const float v = (rng() % 2) ? 2.0f : 1.0f;
				const int a = (int)(rng() % 32), b = (a + 1 + (int)(rng() % 31)) % 32;
				l[32 * g + a] = v;
				l[32 * g + b] = v;
			}
			return true;
		} else { /* lanedup */
			for (int e = 0; e < DSE_E; e++)
				l[e] = (float)(-3.0 + 0.5 * nd(rng));
			const int lanes = 1 + (int)(rng() % 3);
			for (int i = 0; i < lanes; i++) {
				const int ln = (int)(rng() % 32), copies = 2 + (int)(rng() % 7);
				for (int c = 0; c < copies; c++)
					l[8 * ln + rng() % 8] = (rng() % 3) ? 2.0f : 1.5f;
			}
			return true;
		}
	}
	return false;
}

/* T tokens of one kind, K picks; shift 4: logits not 16-byte aligned (version 1's scalar kernel) */
static void test_dsroute(const std::string &kind, int64_t T, int K, size_t shift)
{
	const bool zero_bias = kind != "margin";
	buf lg, bs, wo, io;
	lg.init((size_t)T * DSE_E * 4, shift);
	bs.init(DSE_E * 4, 0);
	wo.init((size_t)T * K * 4, 0);
	io.init((size_t)T * K * 4, 0);
	float *l = (float *)lg.data(), *b = (float *)bs.data();
	std::normal_distribution<double> nd(0.0, 0.05);
	for (int e = 0; e < DSE_E; e++)
		b[e] = zero_bias ? 0.0f : (float)nd(rng);
	std::string why;
	for (int64_t t = 0; t < T && why.empty(); t++)
		if (!dse_row(kind, l + t * DSE_E, b, K))
			why = "could not draw a row";
	memset(wo.data(), 0xFF, wo.bytes); /* NaN */
	memset(io.data(), 0xFF, io.bytes); /* -1 */
	std::vector<int64_t> sl{ T, DSE_E }, sb{ DSE_E }, so{ T, K }, ss{};
	std::vector<sf_tensor> in{ mk(sl, lg.data(), SF_CODE_FLOAT, 32), mk(sb, bs.data(), SF_CODE_FLOAT, 32),
				   mk(ss, nullptr, SF_CODE_FLOAT, 32) };
	std::vector<sf_tensor> out{ mk(so, wo.data(), SF_CODE_FLOAT, 32), mk(so, io.data(), SF_CODE_INT, 32) };
	std::vector<double> scal{ NAN, NAN, 2.5 };
	if (why.empty())
		why = call_run(in, scal, out);
	const float *w = (const float *)wo.data();
	const int32_t *id = (const int32_t *)io.data();
	for (int64_t t = 0; t < T && why.empty(); t++) {
		int ids[32];
		double s[32], sum = 0.0;
		dse_route(l + t * DSE_E, b, K, ids, s);
		for (int k = 0; k < K; k++)
			sum += s[k];
		for (int k = 0; k < K && why.empty(); k++) {
			const double ref = s[k] / sum * 2.5, got = w[t * K + k];
			if (id[t * K + k] != ids[k] || !(std::fabs(got - ref) <= 1e-6 + 1e-5 * std::fabs(ref))) {
				char m[200];
				snprintf(m, sizeof m, "token %lld pick %d: id %d weight %.9g, want id %d weight %.9g",
					 (long long)t, k, id[t * K + k], got, ids[k], ref);
				why = m;
			}
		}
	}
	if (why.empty() && !(lg.guards_ok() && wo.guards_ok() && io.guards_ok()))
		why = "wrote outside an output";
	report(kind + "-T" + std::to_string(T) + "-K" + std::to_string(K) + (shift ? "-unaligned" : ""), why);
}

static void tests()
{
	emu_sm_count = 2; /* (read once by version 2's grid cap) */
#ifdef EMU_DS_QUICK /* (knob variants and mutants: one seed) */
	const unsigned seeds = 1;
#else
	const unsigned seeds = 3;
#endif
	for (unsigned seed = 0; seed < seeds; seed++) {
		rng.seed(EMU_SEED + 1000 * seed);
		for (int64_t T : { 1, 3, 33, 90 })
			test_dsroute("margin", T, 8, 0);
		test_dsroute("ties", 40, 8, 0);
		test_dsroute("near", 40, 8, 0);
		test_dsroute("lanedup", 40, 8, 0);
		test_dsroute("grouptie", 40, 8, 0);
	}
	test_dsroute("margin", 200, 8, 0); /* version 2: up to 4 tokens per warp (13 with DS2_BPS=1) */
	test_dsroute("ties", 9, 4, 0);     /* K 4: version 1 */
	test_dsroute("margin", 5, 8, 4);   /* unaligned: version 1's scalar kernel */
	test_dsroute("lanedup", 9, 8, 4);
}
#endif
