/*
 * coop_plan_test.cu - host-side check of the version-9 launch decision of the bf16 GEMM (sfgemm::coop_decide
 * in problems/common/kernels/gemm_bf16_sm90_coop.cuh, as launch_v3 in gemm_bf16_sm90.cu calls it with v3a's
 * plan and v2's split rule; the .cu included whole with SF_GEMM_COOP256=1, the default's other macros; no GPU
 * needed). For random shapes (M 1..20000, N even 8..30000, K % 8 == 0) and SM counts, at both tile heights
 * (256: 256 x 128 tiles, 128: 128 x 256): the coop kernel is taken only where the launch it replaces is an
 * unsplit persistent 128 x 256 one (v3a's width-256 plan with one split, or v2's launch where v2 would not
 * split K) and M >= SF_GEMM_COOP_MIN_M, never with more waves than that launch; always taken there at tile
 * height 128 (the same tiles) and at 256 whenever the tile counts are equal (M % 256 in 1..128 or 0 with
 * N % 256 == 0 ...: checked as "same tile count => taken"). Then the four Llama shapes at 132 SMs, printed,
 * with the decisions the notes rely on (GEMM_NOTES_LARGE_M.md "Version 9") asserted: 4096 x 4096 and
 * 4096 x 14336 taken at M 1000 / 1024 (v2's unsplit launch) and at M >= 2048; 6144 x 4096 left to v3a's
 * 192-wide plan at M 1024; 28672 x 4096 taken at M 4096 and 8192.
 * Prints "N passed, M failed"; exit status 1 on a failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#define SF_GEMM_COOP256 1
#include "../../problems/common/kernels/gemm_bf16_sm90.cu"

static uint64_t g_rng;

static uint32_t rnd(uint32_t n)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return (uint32_t)(g_rng % n);
}

static int failed, passed;

static void expect(int ok, const char *what, int M, int N, int K, int sms, int tm, V3Plan p, int d)
{
	if (ok) {
		passed++;
		return;
	}
	if (failed++ < 20)
		printf("FAIL %s: M %d N %d K %d sms %d TM %d -> plan bn %d splits %d cluster %d pair %d, decision %d\n", what, M, N,
		       K, sms, tm, p.bn, p.splits, p.cluster, p.pair, d);
}

static int no_clusters(int bn, int s)
{
	(void)bn, (void)s;
	return 0;
}

/* the v3a plan as launch_v3 asks for it (the default macros: SF_GEMM_V3_CLUSTER 0, no pairs) */
static V3Plan plan_of(int M, int N, int K)
{
	return v3_plan(M, N, K, sm_count(), no_clusters, SF_GEMM_V3_BN, SF_GEMM_V3_SPLIT_BN, SF_GEMM_V3_CLUSTER, nullptr);
}

/* coop_decide at tile height tm, with launch_v3's arguments */
static int decide(int tm, V3Plan p, int M, int N, int K)
{
	return tm == 256 ? sfgemm::coop_decide<256>(p.pair, p.cluster, p.splits, p.bn, v2_splits(M, N, K), M, N, SF_GEMM_COOP_MIN_M,
						    sm_count())
			 : sfgemm::coop_decide<128>(p.pair, p.cluster, p.splits, p.bn, v2_splits(M, N, K), M, N, SF_GEMM_COOP_MIN_M,
						    sm_count());
}

static void check_one(int M, int N, int K)
{
	const int sms = sm_count();
	const V3Plan p = plan_of(M, N, K);
	const int plain = ((M + 127) / 128) * ((N + 255) / 256);
	const bool unsplit256 = !p.pair && !p.cluster && p.bn == 256 && (p.splits == 1 || (p.splits == 0 && v2_splits(M, N, K) == 1));
	for (int tm = 256; tm >= 128; tm -= 128) {
		const int d = decide(tm, p, M, N, K);
		const int tiles = ((M + tm - 1) / tm) * ((N + 384 - tm - 1) / (384 - tm));
		expect(d == sfgemm::kCoopTake || d == sfgemm::kCoopNotTaken || d == sfgemm::kCoopPlan, "decision value", M, N, K, sms,
		       tm, p, d);
		expect(d == sfgemm::kCoopPlan || (unsplit256 && M >= SF_GEMM_COOP_MIN_M), "taken only for unsplit 128 x 256 launches",
		       M, N, K, sms, tm, p, d);
		expect(d != sfgemm::kCoopTake || (tiles + sms - 1) / sms <= (plain + sms - 1) / sms, "no added wave", M, N, K, sms,
		       tm, p, d);
		expect(!(unsplit256 && M >= SF_GEMM_COOP_MIN_M) || d != sfgemm::kCoopPlan, "every unsplit 128 x 256 launch considered",
		       M, N, K, sms, tm, p, d);
		expect(d != sfgemm::kCoopNotTaken || tiles > plain, "declined only with more tiles", M, N, K, sms, tm, p, d);
		expect(!(tiles == plain && unsplit256 && M >= SF_GEMM_COOP_MIN_M) || d == sfgemm::kCoopTake,
		       "taken at an equal tile count", M, N, K, sms, tm, p, d);
	}
}

int main(int argc, char **argv)
{
	g_rng = argc > 1 ? strtoull(argv[1], 0, 10) | 1 : 88172645463325252ull;
	for (int iter = 0; iter < 20000; iter++) {
		g_sms = 60 + (int)rnd(90);
		const int M = 1 + (int)rnd(iter & 1 ? 3000 : 20000), N = 8 + 2 * (int)rnd(15000), K = 8 * (1 + (int)rnd(2500));
		check_one(M, N, K);
	}
	g_sms = 132;
	static const int shapes[4][2] = { { 4096, 4096 }, { 6144, 4096 }, { 28672, 4096 }, { 4096, 14336 } };
	static const int ms[] = { 513, 1000, 1024, 1300, 2048, 2900, 4096, 5000, 8192 };
	const char *names[3] = { "coop", "coop adds a wave", "v3a plan" };
	for (int s = 0; s < 4; s++) {
		const int N = shapes[s][0], K = shapes[s][1];
		printf("%dx%d on 132 SMs (TM 256 / TM 128):", N, K);
		for (unsigned i = 0; i < sizeof ms / sizeof ms[0]; i++) {
			const int M = ms[i];
			check_one(M, N, K);
			const V3Plan p = plan_of(M, N, K);
			const int d256 = decide(256, p, M, N, K), d128 = decide(128, p, M, N, K);
			printf(" M%d %s/%s;", M, names[d256], names[d128]);
			if (N == 4096 && (M == 1000 || M == 1024 || M >= 2048))
				expect(d256 == sfgemm::kCoopTake && d128 == sfgemm::kCoopTake, "Llama N 4096 taken", M, N, K, 132, 0, p, d256);
			if (N == 6144 && M == 1024)
				expect(d256 == sfgemm::kCoopPlan && p.bn == 192, "6144 x 4096 M 1024 on v3a's 192", M, N, K, 132, 0, p, d256);
			if (N == 28672 && M >= 4096)
				expect(d256 == sfgemm::kCoopTake && d128 == sfgemm::kCoopTake, "28672 x 4096 taken", M, N, K, 132, 0, p,
				       d256);
		}
		printf("\n");
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
