/*
 * gemm_bf16_sm90_midm_host.cuh - the host side of the mid-M paths of gemm_bf16_sm90.cu (split out of it in session 16 to
 * keep that file under ~800 lines): the v4 plan's cluster counts and dispatch rule (midm_max_clusters, midm_bands,
 * midm_takes), the version-13 half-band plan and launch (midm_max_clusters_hb, midm_hb_hook), session 16's rule for M
 * 193-256 (midm_tt_top_takes) and launch_midm. Not a standalone header: gemm_bf16_sm90.cu includes it inside its
 * anonymous namespace, after launch_wgmma, and everything it uses (config macros, sm_count, make_map, the kernels'
 * launch templates, trace_new_shape) is declared there before it.
 */
#if SF_GEMM_MIDM
static_assert(SF_GEMM_MIDM_MAX_M <= 256 && SF_GEMM_MIDM_TT_TOP_M <= 256, "the v4 mid-M kernel covers at most 256 tokens");

/* Clusters of s CTAs of the v4 kernel for token tile nt at cps CTAs per SM resident at once (0: none). */
int midm_max_clusters(int nt, int cps, int s)
{
	using namespace sfgemm;
#if SF_GEMM_MIDM_2CTA
	if (cps == 2)
		return nt == 32 ? midm_max_clusters_nt<32, 2>(s, sm_count())
		       : nt == 64 ? midm_max_clusters_nt<64, 2>(s, sm_count()) : midm_max_clusters_nt<96, 2>(s, sm_count());
#endif
	(void)cps;
	switch (nt) {
	case 32: return midm_max_clusters_nt<32, 1>(s, sm_count());
	case 64: return midm_max_clusters_nt<64, 1>(s, sm_count());
	case 96: return midm_max_clusters_nt<96, 1>(s, sm_count());
	case 128: return midm_max_clusters_nt<128, 1>(s, sm_count());
	case 192: return midm_max_clusters_nt<192, 1>(s, sm_count());
	default: return midm_max_clusters_nt<256, 1>(s, sm_count());
	}
}

/* 128-row weight bands of an N-row weight: the v4 kernel's units before the K split. */
int midm_bands(int N)
{
	return (N + sfgemm::kMidmRows - 1) / sfgemm::kMidmRows;
}

/* Whether the v4 mid-M path takes this M (the dispatch rule measured on the H200, GEMM_NOTES.md "Version 4
 * measured"): M <= SF_GEMM_MIDM_MAX_M, and above 96 tokens only when the bands fit one wave (with more
 * bands than SMs, 28672 x 4096 at M 97..128, v2 was 2% faster), or where the version-18 candidate routes the
 * multi-wave case here (SF_GEMM_MIDM_MW, mw_route: M 129..192). */
bool midm_takes(int M, int N)
{
	return M <= SF_GEMM_MIDM_MAX_M &&
	       (M <= 96 || midm_bands(N) <= sm_count() ||
		sfgemm::mw_route(M, N, sm_count(), SF_GEMM_MIDM_MW, SF_GEMM_MIDM_MAX_M) != 0);
}

#if SF_GEMM_MIDM_HB
/* Clusters of s CTAs of the v13 half-band kernel for token tile nt resident at once (cps is always 1). */
int midm_max_clusters_hb(int nt, int cps, int s)
{
	using namespace sfgemm;
	(void)cps;
	switch (nt) {
	case 64: return midm_max_clusters_nt<64, 1, 1>(s, sm_count());
#if SF_GEMM_MIDM_FIT /* version 16: the exact-fit token tiles (midm_hb_nt) */
	case 80: return midm_max_clusters_nt<80, 1, 1>(s, sm_count());
	case 96: return midm_max_clusters_nt<96, 1, 1>(s, sm_count());
	case 112: return midm_max_clusters_nt<112, 1, 1>(s, sm_count());
	case 144: return midm_max_clusters_nt<144, 1, 1>(s, sm_count());
	case 160: return midm_max_clusters_nt<160, 1, 1>(s, sm_count());
	case 176: return midm_max_clusters_nt<176, 1, 1>(s, sm_count());
#endif
	case 128: return midm_max_clusters_nt<128, 1, 1>(s, sm_count());
	case 192: return midm_max_clusters_nt<192, 1, 1>(s, sm_count());
	default: return midm_max_clusters_nt<256, 1, 1>(s, sm_count());
	}
}

/* Session 16 (GEMM_NOTES_MID_M2.md "M 193-256: two token tiles only"): whether M in (SF_GEMM_MIDM_MAX_M,
 * SF_GEMM_MIDM_TT_TOP_M] goes to the mid-M path because its half-band plan is two token tiles over the whole K (FIT 2:
 * 4096-row weights at K <= SF_GEMM_MIDM_TT_MAX_K); every other plan there (6144 rows: 192 CTAs; K 14336: a 2-way
 * split with 256-token tiles) measured slower than the v6 / v10 plans and stays on them. */
bool midm_tt_top_takes(int M, int N, int K)
{
	using namespace sfgemm;
#if SF_GEMM_MIDM_FIT == 2
	if (M <= SF_GEMM_MIDM_MAX_M || M > SF_GEMM_MIDM_TT_TOP_M)
		return false;
	const MidmPlan h = midm_plan_hb(M, N, K, sm_count(), SF_GEMM_MIDM_SPLITS, midm_max_clusters_hb, SF_GEMM_MIDM_FIT,
					SF_GEMM_MIDM_TT_MIN_M, SF_GEMM_MIDM_TT_MAX_K, SF_GEMM_MIDM_TT_SMALL);
	return h.ttiles == 2;
#else
	(void)M, (void)N, (void)K;
	return false;
#endif
}

/* Version 13 (GEMM_NOTES_MID_M.md): the half-band plan and launch when SF_GEMM_MIDM_HB takes this case over the v4
 * plan p (1: more CTAs than p at one CTA per SM; 2: whenever p is one CTA per SM); 1 when it launched. */
static int midm_hb_hook(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K,
			const sfgemm::MidmPlan &p, cudaStream_t stream)
{
	using namespace sfgemm;
	if (p.cps != 1)
		return 0;
	/* version 16: exact-fit token tiles (FIT 1), and two token tiles instead of a 2-way K split (FIT 2); FIT 0 the v13 tiles */
	static_assert(SF_GEMM_MIDM_FIT >= 0 && SF_GEMM_MIDM_FIT <= 2, "SF_GEMM_MIDM_FIT: 0, 1 or 2");
	const MidmPlan h = midm_plan_hb(M, N, K, sm_count(), SF_GEMM_MIDM_SPLITS, midm_max_clusters_hb, SF_GEMM_MIDM_FIT,
					SF_GEMM_MIDM_TT_MIN_M, SF_GEMM_MIDM_TT_MAX_K, SF_GEMM_MIDM_TT_SMALL);
	const int hb_ctas = (N + kMidmRows / 2 - 1) / (kMidmRows / 2) * h.splits * h.ttiles;
	if (SF_GEMM_MIDM_HB == 1 && hb_ctas <= midm_bands(N) * p.splits)
		return 0;
	CUtensorMap mw, mx;
	int rc = -1;
	/* the activation box: M rows (XROWS), or NT when two token tiles of NT < M tokens each load NT rows (16t) */
	const int xbox = SF_GEMM_MIDM_XROWS ? (M < h.nt ? M : h.nt) : h.nt;
#if SF_GEMM_MIDM_SK /* version 26: the unsplit one-tile plan on a stream-K schedule over every SM (midm_sk.cuh) */
	{
		const int sms = sm_count(), hbands = (N + kMidmRows / 2 - 1) / (kMidmRows / 2), kbc = (K + kWgBK - 1) / kWgBK;
		const int64_t U = (int64_t)hbands * kbc;
		if (h.splits == 1 && h.ttiles == 1 && hbands < sms && 2 * U > (int64_t)sms * (kbc + 2) && U < (1 << 30)) {
			CUtensorMap sw, sx;
			int sr = -1;
			if (!make_map(&sw, B, N, K, kMidmRows / 2) && !make_map(&sx, A, M, K, M < h.nt ? M : h.nt)) {
				switch (h.nt) {
				case 64: sr = midm_sk_launch<64>(sw, sx, C, M, N, K, sms, stream); break;
				case 80: sr = midm_sk_launch<80>(sw, sx, C, M, N, K, sms, stream); break;
				case 96: sr = midm_sk_launch<96>(sw, sx, C, M, N, K, sms, stream); break;
				case 112: sr = midm_sk_launch<112>(sw, sx, C, M, N, K, sms, stream); break;
				case 128: sr = midm_sk_launch<128>(sw, sx, C, M, N, K, sms, stream); break;
				case 144: sr = midm_sk_launch<144>(sw, sx, C, M, N, K, sms, stream); break;
				case 160: sr = midm_sk_launch<160>(sw, sx, C, M, N, K, sms, stream); break;
				case 176: sr = midm_sk_launch<176>(sw, sx, C, M, N, K, sms, stream); break;
				case 192: sr = midm_sk_launch<192>(sw, sx, C, M, N, K, sms, stream); break;
				default: break; /* 256: not instantiated (M <= 192 here) */
				}
			}
#if SF_GEMM_MIDM_TRACE
			fprintf(stderr, "midm sk plan %dx%d M=%d: nt %d ctas %d units %lld: %s\n", N, K, M, h.nt, sms, (long long)U,
				sr == 0 ? "launched" : "refused, half-band plan");
#endif
			if (sr == 0)
				return 1;
		}
	}
#endif
	const int wbox = kMidmRows / 2;
	if (!make_map(&mw, B, N, K, wbox) && !make_map(&mx, A, M, K, xbox)) {
#if SF_GEMM_MIDM_TMA
#define SF_MIDM_HB_C mw, 0, C /* the v11 TMA stores are not taken on half bands (a dummy map, tma_epi 0) */
#else
#define SF_MIDM_HB_C C
#endif
#if SF_GEMM_MIDM_FIT == 2
#define SF_MIDM_HB_S h.splits, stream, h.ttiles
#else
#define SF_MIDM_HB_S h.splits, stream
#endif
		switch (h.nt) {
#if SF_GEMM_MIDM_TT_SMALL && SF_GEMM_MIDM_FIT == 2 /* version 24: two token tiles of fewer than 64 tokens (splits 1) */
		case 16: rc = midm_launch_nt<16, 1, 1>(mw, mx, SF_MIDM_HB_C, M, N, K, SF_MIDM_HB_S); break;
		case 32: rc = midm_launch_nt<32, 1, 1>(mw, mx, SF_MIDM_HB_C, M, N, K, SF_MIDM_HB_S); break;
		case 48: rc = midm_launch_nt<48, 1, 1>(mw, mx, SF_MIDM_HB_C, M, N, K, SF_MIDM_HB_S); break;
#endif
		case 64: rc = midm_launch_nt<64, 1, 1>(mw, mx, SF_MIDM_HB_C, M, N, K, SF_MIDM_HB_S); break;
#if SF_GEMM_MIDM_FIT /* version 16: the exact-fit token tiles (midm_hb_nt) */
		case 80: rc = midm_launch_nt<80, 1, 1>(mw, mx, SF_MIDM_HB_C, M, N, K, SF_MIDM_HB_S); break;
		case 96: rc = midm_launch_nt<96, 1, 1>(mw, mx, SF_MIDM_HB_C, M, N, K, SF_MIDM_HB_S); break;
		case 112: rc = midm_launch_nt<112, 1, 1>(mw, mx, SF_MIDM_HB_C, M, N, K, SF_MIDM_HB_S); break;
		case 144: rc = midm_launch_nt<144, 1, 1>(mw, mx, SF_MIDM_HB_C, M, N, K, SF_MIDM_HB_S); break;
		case 160: rc = midm_launch_nt<160, 1, 1>(mw, mx, SF_MIDM_HB_C, M, N, K, SF_MIDM_HB_S); break;
		case 176: rc = midm_launch_nt<176, 1, 1>(mw, mx, SF_MIDM_HB_C, M, N, K, SF_MIDM_HB_S); break;
#endif
		case 128: rc = midm_launch_nt<128, 1, 1>(mw, mx, SF_MIDM_HB_C, M, N, K, SF_MIDM_HB_S); break;
		case 192: rc = midm_launch_nt<192, 1, 1>(mw, mx, SF_MIDM_HB_C, M, N, K, SF_MIDM_HB_S); break;
		default: rc = midm_launch_nt<256, 1, 1>(mw, mx, SF_MIDM_HB_C, M, N, K, SF_MIDM_HB_S); break;
		}
#undef SF_MIDM_HB_S
#undef SF_MIDM_HB_C
	}
#if SF_GEMM_MIDM_TRACE
	fprintf(stderr, "midm hb plan %dx%d M=%d: nt %d splits %d ttiles %d ctas %d (v4 %d): %s\n", N, K, M, h.nt, h.splits,
		h.ttiles, hb_ctas, midm_bands(N) * p.splits, rc == 0 ? "launched" : "refused, v4 plan");
#endif
	return rc == 0;
}
#endif

/* The v4 mid-M path (GEMM_NOTES.md "Version 4"): midm_plan, then gemm_midm_kernel<nt, cps>; v2's launch when a
 * TMA descriptor cannot be made or the launch is refused (SF_GEMM_MIDM_TRACE says which ran). */
int launch_midm(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K,
		cudaStream_t stream)
{
	using namespace sfgemm;
	const int two = SF_GEMM_MIDM_2CTA == 2 || (SF_GEMM_MIDM_2CTA == 1 && midm_bands(N) > sm_count());
	const MidmPlan p = midm_plan(M, N, K, sm_count(), SF_GEMM_MIDM_SPLITS, two, midm_max_clusters);
#if SF_GEMM_MIDM_HB /* version 13 (GEMM_NOTES_MID_M.md): half bands where they give more CTAs; not where version 18's
		    * candidate (SF_GEMM_MIDM_MW 1) routed a multi-wave case to v4's full bands */
	if (sfgemm::mw_route(M, N, sm_count(), SF_GEMM_MIDM_MW, SF_GEMM_MIDM_MAX_M) != 1 &&
	    midm_hb_hook(A, B, C, M, N, K, p, stream))
		return SF_OK;
#endif
#if SF_GEMM_MIDM_MC /* version 12 (GEMM_NOTES_MID_M.md): the plan on band-pair clusters sharing the activations */
	if (midm_mc_hook(A, B, C, M, N, K, p, stream))
		return SF_OK;
#endif
	CUtensorMap mw, mx;
	int rc = -1;
#if SF_GEMM_MIDM_TMA /* version 11: C's map for the TMA-store epilogue where the plan allows it (else register stores) */
	CUtensorMap mc = {}; /* unused by the kernel when tma is 0 */
	const int tma_rows = N % 8 == 0 ? midm_tma_rows(p.nt, p.splits) : 0;
	const int tma = tma_rows > 0 && !make_map(&mc, C, M, N, tma_rows);
#define SF_MIDM_C mc, tma, C
#else
#define SF_MIDM_C C
#endif
	/* SF_GEMM_TAILROWS (version 15): an M-row activation box (v4's two-CTA plans; XROWS' fix outside the half bands) */
	if (!make_map(&mw, B, N, K, kMidmRows) && !make_map(&mx, A, M, K, SF_GEMM_TAILROWS ? M : p.nt)) {
#if SF_GEMM_MIDM_2CTA
		if (p.cps == 2) {
			switch (p.nt) {
			case 32: rc = midm_launch_nt<32, 2>(mw, mx, SF_MIDM_C, M, N, K, p.splits, stream); break;
			case 64: rc = midm_launch_nt<64, 2>(mw, mx, SF_MIDM_C, M, N, K, p.splits, stream); break;
			default: rc = midm_launch_nt<96, 2>(mw, mx, SF_MIDM_C, M, N, K, p.splits, stream); break;
			}
		} else
#endif
		switch (p.nt) {
		case 32: rc = midm_launch_nt<32, 1>(mw, mx, SF_MIDM_C, M, N, K, p.splits, stream); break;
		case 64: rc = midm_launch_nt<64, 1>(mw, mx, SF_MIDM_C, M, N, K, p.splits, stream); break;
		case 96: rc = midm_launch_nt<96, 1>(mw, mx, SF_MIDM_C, M, N, K, p.splits, stream); break;
		case 128: rc = midm_launch_nt<128, 1>(mw, mx, SF_MIDM_C, M, N, K, p.splits, stream); break;
		case 192: rc = midm_launch_nt<192, 1>(mw, mx, SF_MIDM_C, M, N, K, p.splits, stream); break;
		default: rc = midm_launch_nt<256, 1>(mw, mx, SF_MIDM_C, M, N, K, p.splits, stream); break;
		}
	}
#undef SF_MIDM_C
#if SF_GEMM_MIDM_TRACE
	static int last[3];
	if (trace_new_shape(last, M, N, K)) {
		fprintf(stderr, "midm plan %dx%d M=%d: nt %d cps %d splits %d ctas %d: %s%s\n", N, K, M, p.nt, p.cps, p.splits,
			(N + kMidmRows - 1) / kMidmRows * p.splits, rc == 0 ? "launched" : "FALLBACK v2",
#if SF_GEMM_MIDM_TMA
			tma ? " (TMA stores)" : " (register stores)"
#else
			""
#endif
		);
	}
#endif
	return rc == 0 ? SF_OK : launch_wgmma(A, B, C, M, N, K, stream);
}
#endif
