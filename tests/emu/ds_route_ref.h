/*
 * ds_route_ref.h - oracle.c's DeepSeek-V3 grouped top-k routing (dsr_route) restated in double for one token: the
 * reference of the CPU emulation's cases (tests/emu/emu_dsroute.h) and of the host-side check of the fast solution
 * (tests/fast/grouped_router_fast_test.cu). Plain C++ (host), no state.
 */
#pragma once
#include <math.h>

/*
 * ds_route_ref: E experts in G groups (G <= 64) of E / G; choice = sigmoid(l) + b; a group's score is the sum of its
 * two largest choices; the topkg best groups are kept (lower index first on ties), then the K best kept experts by
 * choice (lower index first). OUT: ids[K] and s[K] (the picks' sigmoids). Returns the smallest decision margin:
 * the topkg-th vs the (topkg + 1)-th group score, and consecutive choices among the K + 1 best kept experts.
 */
static double ds_route_ref(const float *l, const float *b, int E, int G, int topkg, int K, int *ids, double *s)
{
	const int GS = E / G;
	double gscore[64], prev = 0.0, margin = 1e300;
	int kept[64] = { 0 };
	for (int g = 0; g < G; g++) {
		double a = -1e300, bb = -1e300;
		for (int e = g * GS; e < (g + 1) * GS; e++) {
			const double ce = 1.0 / (1.0 + exp(-(double)l[e])) + (double)b[e];
			if (ce > a) {
				bb = a;
				a = ce;
			} else if (ce > bb) {
				bb = ce;
			}
		}
		gscore[g] = a + bb;
	}
	for (int r = 0; r <= topkg; r++) {
		int best = -1;
		for (int g = 0; g < G; g++)
			if (!kept[g] && (best < 0 || gscore[g] > gscore[best]))
				best = g;
		if (r < topkg) {
			kept[best] = 1;
			prev = gscore[best];
		} else if (best >= 0 && prev - gscore[best] < margin) {
			margin = prev - gscore[best];
		}
	}
	for (int r = 0; r <= K; r++) {
		int best = -1;
		double bestc = 0.0;
		for (int e = 0; e < E; e++) {
			if (!kept[e / GS])
				continue;
			int taken = 0;
			for (int j = 0; j < r && j < K; j++)
				taken |= ids[j] == e;
			if (taken)
				continue;
			const double ce = 1.0 / (1.0 + exp(-(double)l[e])) + (double)b[e];
			if (best < 0 || ce > bestc) {
				best = e;
				bestc = ce;
			}
		}
		if (r > 0 && best >= 0 && prev - bestc < margin)
			margin = prev - bestc;
		if (r < K) {
			ids[r] = best;
			s[r] = 1.0 / (1.0 + exp(-(double)l[best]));
		}
		prev = bestc;
	}
	return margin;
}
