/*
 * gemm_bf16_sm90_hooks.cuh - the large-M candidates' (and mid-M version 12's) kernels and host hooks of gemm_bf16_sm90.cu and
 * the small-M version-5 candidate's host path (launch_small5, its map cache and cluster counts), moved out of it
 * to keep that file under the size limit: each part is compiled only when its opt-in macro is set
 * (SF_GEMM_PINGPONG, SF_GEMM_MCAST, SF_GEMM_COOP256, SF_GEMM_V10, SF_GEMM_MIDM_MC, SF_GEMM_SMALLM_V == 2; SF_GEMM_TAILROWS' map helper;
 * gemm_bf16_sm90_config.cuh), so the default
 * build includes no candidate kernel and its PTX is unchanged (tools/ptx_md5.sh). Included once, at file scope,
 * by gemm_bf16_sm90.cu after the config and v3-plan headers; the hooks live in that file's anonymous namespace
 * and call its host helpers, declared here and defined there.
 */
#pragma once
#include "gemm_bf16_sm90_config.cuh"
#include "gemm_bf16_sm90_v3plan.cuh"
#if SF_GEMM_PINGPONG /* compiled only in the candidate's build: the default PTX is unchanged */
#include "gemm_bf16_sm90_pingpong.cuh"
#endif
#if SF_GEMM_MCAST /* compiled only in the candidate's build: the default PTX is unchanged */
#include "gemm_bf16_sm90_mcast.cuh"
#endif
#if SF_GEMM_COOP256 /* compiled only in the candidate's build: the default PTX is unchanged */
#include "gemm_bf16_sm90_coop.cuh"
static_assert(SF_GEMM_COOP256 == 1 || SF_GEMM_COOP256 == 2, "SF_GEMM_COOP256: 0, 1 (256 x 128) or 2 (128 x 256)");
#endif
#if SF_GEMM_V10 /* compiled only in the candidate's build: the default PTX is unchanged */
#include "gemm_bf16_sm90_v10.cuh"
#endif
#if SF_GEMM_MIDM_SK /* version 26 (stream-K half bands): compiled only in the candidate's build */
#include "gemm_bf16_sm90_midm_sk.cuh"
#endif
#if SF_GEMM_MIDM_MC /* compiled only in the candidate's build: the default PTX is unchanged */
#include "gemm_bf16_sm90_midm_mc.cuh"
static_assert(SF_GEMM_MIDM_MC == 1 || SF_GEMM_MIDM_MC == 2, "SF_GEMM_MIDM_MC: 0, 1 (multicast) or 2 (control)");
#endif

#if SF_GEMM_PINGPONG || SF_GEMM_MCAST || SF_GEMM_COOP256 || SF_GEMM_V10 || SF_GEMM_MIDM_MC || SF_GEMM_TAILROWS || SF_GEMM_SMALLM_V == 2
namespace {
/* gemm_bf16_sm90.cu's host helpers (defined there, in this anonymous namespace) */
int sm_count(void);
int make_map(CUtensorMap *map, const void *ptr, int rows, int K, int box_rows);
int v2_splits(int M, int N, int K);
void v3_trace(int M, int N, int K, V3Plan p, const char *what);
int launch_v3(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K, cudaStream_t stream);
int launch_small(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K, cudaStream_t stream);

#if SF_GEMM_TAILROWS
/* Version 15 (GEMM_NOTES_MID_M.md): A's map (box kWgBM rows) in *ma and the last token tile's (box M % kWgBM rows, its
 * real rows; a copy of *ma when M % kWgBM == 0 or M > SF_GEMM_TAILROWS_MAX_M, then never loaded) in *mat; 0 on success. gemm_bf16_sm90.cu makes them
 * through SF_MAKE_A where it made A's map, beside `CUtensorMap ma, mb SF_GEMM_TAIL_A;`. */
int make_a_maps(CUtensorMap *ma, CUtensorMap *mat, const void *A, int M, int K)
{
	if (make_map(ma, A, M, K, sfgemm::kWgBM))
		return -1;
	*mat = *ma;
	return M % sfgemm::kWgBM && M <= SF_GEMM_TAILROWS_MAX_M ? make_map(mat, A, M, K, M % sfgemm::kWgBM) : 0;
}
#endif

#if SF_GEMM_SMALLM_V == 2 /* version 5 (GEMM_NOTES.md "Version 5"), called from run() for M <= 16 */
/* make_map through a small cache keyed on (pointer, rows, K, box rows): encoding is host work that the
 * GPU waits for when it is idle (event-timed calls, back-to-back small GEMMs), and the runner and
 * gemm_check reuse a few buffers. A descriptor holds only the address, shape and strides, so an entry
 * stays valid for any data at that address with that shape. 0 on success. */
int make_map_cached(CUtensorMap *map, const void *ptr, int rows, int K, int box_rows)
{
	struct Entry {
		const void *ptr;
		int rows, K, box;
		CUtensorMap map;
	};
	static Entry cache[16];
	static int used = 0, next = 0;
	for (int i = 0; i < used; i++)
		if (cache[i].ptr == ptr && cache[i].rows == rows && cache[i].K == K && cache[i].box == box_rows) {
			*map = cache[i].map;
			return 0;
		}
	if (make_map(map, ptr, rows, K, box_rows))
		return -1;
	Entry &e = cache[next];
	e.ptr = ptr;
	e.rows = rows;
	e.K = K;
	e.box = box_rows;
	e.map = *map;
	next = (next + 1) % 16;
	used = used < 16 ? used + 1 : 16;
	return 0;
}

/* Clusters of s CTAs of the v5 small-M kernel with weight tiles of rb rows resident at once (0: none). */
int sm5_max_clusters(int rb, int s)
{
	using namespace sfgemm;
	switch (rb) {
	case 32: return sm5_max_clusters_cfg<4, 1>(s, sm_count());
	case 48: return sm5_max_clusters_cfg<6, 1>(s, sm_count());
	case 64: return sm5_max_clusters_cfg<8, 1>(s, sm_count());
	case 128: return sm5_max_clusters_cfg<8, 2>(s, sm_count());
	case 192: return sm5_max_clusters_cfg<8, 3>(s, sm_count());
	case 224: return sm5_max_clusters_cfg<7, 4>(s, sm_count());
	default: return sm5_max_clusters_cfg<8, 4>(s, sm_count());
	}
}

/* The v5 small-M path (M <= 16, GEMM_NOTES.md "Version 5"): sm5_plan, then gemm_smallm5_kernel of the planned
 * tile; the v2 kernel when nothing fits one wave, a TMA descriptor cannot be made or the launch is refused
 * (SF_GEMM_SMALLM_TRACE says which ran). */
int launch_small5(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K,
		  cudaStream_t stream)
{
	using namespace sfgemm;
	const Sm5Plan p = sm5_plan(N, K, sm_count(), SF_GEMM_SM5_MIN_RB, sm5_max_clusters);
	const int mh = M <= 8 ? 1 : 2;
	CUtensorMap mw, mx;
	int rc = -1;
	if (p.rb && !make_map_cached(&mw, B, N, K, p.rb) && !make_map_cached(&mx, A, M, K, 8 * mh))
		rc = mh == 1 ? sm5_launch_cfg<1>(p.cfg, mw, mx, C, M, N, K, p.splits, stream)
			     : sm5_launch_cfg<2>(p.cfg, mw, mx, C, M, N, K, p.splits, stream);
#if SF_GEMM_SMALLM_TRACE
	static int last[3];
	if (trace_new_shape(last, M, N, K)) {
		fprintf(stderr, "smallm5 plan %dx%d M=%d (ring %d KB, min rb %d): rb %d splits %d ctas %d: %s\n", N, K, M,
			SF_GEMM_SM5_RING_KB, SF_GEMM_SM5_MIN_RB, p.rb, p.splits, p.rb ? (N + p.rb - 1) / p.rb * p.splits : 0,
			rc == 0 ? "launched" : "FALLBACK v2");
	}
#endif
	return rc == 0 ? SF_OK : launch_small(A, B, C, M, N, K, stream);
}
#endif

#if SF_GEMM_COOP256
/* Version 9 (GEMM_NOTES_LARGE_M.md), called first in launch_v3 with its plan p: an unsplit 128 x 256 plan (v3a's, or
 * v2's where it would not split K: 4096 x 4096 at M 1024, 128 tiles) on the two-m64n128k16 consumers, with its own
 * maps (box TM and 384 - TM rows). true when it launched (launch_v3 returns SF_OK), false: v3a as without it. */
bool coop_hook(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K, const V3Plan &p,
	       cudaStream_t stream)
{
	const int ctm = SF_GEMM_COOP256 == 1 ? 256 : 128;
	const int cd = sfgemm::coop_decide<SF_GEMM_COOP256 == 1 ? 256 : 128>(p.pair, p.cluster, p.splits, p.bn, v2_splits(M, N, K),
									   M, N, SF_GEMM_COOP_MIN_M, sm_count());
	CUtensorMap ca, cb;
	if (cd == sfgemm::kCoopNotTaken)
		v3_trace(M, N, K, p, "coop adds a wave: v3a");
	if (cd == sfgemm::kCoopTake && !make_map(&ca, A, M, K, ctm) && !make_map(&cb, B, N, K, 384 - ctm)) {
		const int rc = sfgemm::coop_launch<SF_GEMM_COOP256 == 1 ? 256 : 128>(ca, cb, C, M, N, K, sm_count(), stream);
		v3_trace(M, N, K, p, rc == 0 ? "launched coop" : "FALLBACK v3a (coop launch failed)");
		if (rc == 0)
			return true;
	}
	return false;
}
#endif

#if SF_GEMM_MCAST
/* Version 8, called in launch_v3 once A's map ma (box 128 rows) is made: v3a's unsplit 256 / 192 plan on clusters of
 * 2 sharing W (its map: box BN / 2). true when it launched, false: v3a as without it. */
bool mcast_hook(const CUtensorMap &ma, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K, const V3Plan &p,
		cudaStream_t stream)
{
	CUtensorMap mbh;
	if (!p.pair && !p.cluster && p.splits == 1 && M >= SF_GEMM_MCAST_MIN_M && (p.bn == 256 || p.bn == 192) &&
	    !make_map(&mbh, B, N, K, p.bn / 2)) {
		const int rc = p.bn == 256 ? sfgemm::mc_launch<256>(ma, mbh, C, M, N, K, sm_count(), stream)
					   : sfgemm::mc_launch<192>(ma, mbh, C, M, N, K, sm_count(), stream);
		v3_trace(M, N, K, p, rc == 0 ? "launched mcast" : (rc < 0 ? "FALLBACK v3a (mcast launch refused)" : "mcast adds a wave: v3a"));
		if (rc == 0)
			return true;
	}
	return false;
}
#endif

#if SF_GEMM_PINGPONG
/* The ping-pong large-M path (GEMM_NOTES_LARGE_M.md "Version 7"): gemm_pingpong_kernel<WM> with WM x (WM == 128 ? 128 :
 * 256) consumer tiles, persistent, grid min(tiles, SMs); the v3 path when a TMA descriptor cannot be made. */
template <int WM>
int launch_pp(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K, cudaStream_t stream)
{
	typedef sfgemm::PpCfg<WM> Cfg;
	static bool attr = false;
	if (!attr) {
		if (cudaFuncSetAttribute(sfgemm::gemm_pingpong_kernel<WM>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					 Cfg::kSmemBytes) != cudaSuccess)
			return SF_ERR_CUDA;
		attr = true;
	}
	CUtensorMap ma, mb;
	if (make_map(&ma, A, M, K, WM) || make_map(&mb, B, N, K, Cfg::kBN))
		return launch_v3(A, B, C, M, N, K, stream);
	const int tiles = ((M + WM - 1) / WM) * ((N + Cfg::kBN - 1) / Cfg::kBN);
	const int grid = tiles < sm_count() ? tiles : sm_count();
	sfgemm::gemm_pingpong_kernel<WM><<<grid, sfgemm::kWgThreads, Cfg::kSmemBytes, stream>>>(ma, mb, C, M, N, K);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
static_assert(SF_GEMM_PP_WM == 64 || SF_GEMM_PP_WM == 128, "SF_GEMM_PP_WM: 64 or 128");
#endif

#if SF_GEMM_MIDM_MC
/* Version 12 (GEMM_NOTES_MID_M.md), called in launch_midm with the v4 plan p: the plan on clusters of two bands x p.splits
 * sharing the activation tiles (midm_mc_take decides; maps: weight box 128 rows, activation box nt / 2 rows, nt for the
 * control). true when it launched, false: v4 as without it. SF_GEMM_MIDM_TRACE prints one line per new shape. */
bool midm_mc_hook(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K,
		  const sfgemm::MidmPlan &p, cudaStream_t stream)
{
	using namespace sfgemm;
	const int cl = 2 * p.splits, sms = sm_count();
	int resident = 0;
	if (p.cps == 1 && cl <= kMidmMaxSplit) {
		switch (p.nt) {
		case 32: resident = midm_mc_resident<32>(cl, sms); break;
		case 64: resident = midm_mc_resident<64>(cl, sms); break;
		case 96: resident = midm_mc_resident<96>(cl, sms); break;
		case 128: resident = midm_mc_resident<128>(cl, sms); break;
		case 192: resident = midm_mc_resident<192>(cl, sms); break;
		default: resident = midm_mc_resident<256>(cl, sms); break;
		}
	}
	const bool take = midm_mc_take(M, N, p.nt, p.cps, p.splits, sms, resident);
	CUtensorMap mw, mx;
	int rc = 1; /* 1: not taken */
	if (take && !make_map(&mw, B, N, K, kMidmRows) && !make_map(&mx, A, M, K, SF_GEMM_MIDM_MC == 1 ? p.nt / 2 : p.nt)) {
		switch (p.nt) {
		case 32: rc = midm_mc_launch<32>(mw, mx, C, M, N, K, p.splits, stream); break;
		case 64: rc = midm_mc_launch<64>(mw, mx, C, M, N, K, p.splits, stream); break;
		case 96: rc = midm_mc_launch<96>(mw, mx, C, M, N, K, p.splits, stream); break;
		case 128: rc = midm_mc_launch<128>(mw, mx, C, M, N, K, p.splits, stream); break;
		case 192: rc = midm_mc_launch<192>(mw, mx, C, M, N, K, p.splits, stream); break;
		default: rc = midm_mc_launch<256>(mw, mx, C, M, N, K, p.splits, stream); break;
		}
	}
#if SF_GEMM_MIDM_TRACE /* "midm plan ...: launched" lines are what tools/gpu_gemm.sh counts; a declined pair plan says why */
	static int last[3];
	if (trace_new_shape(last, M, N, K)) {
		const int pairs = ((N + kMidmRows - 1) / kMidmRows + 1) / 2;
		if (rc == 0)
			fprintf(stderr, "midm plan %dx%d M=%d: nt %d cps 1 splits %d ctas %d: launched (v12 band pairs, clusters of %d, %s)\n",
				N, K, M, p.nt, p.splits, pairs * cl, cl, SF_GEMM_MIDM_MC == 1 ? "multicast" : "no multicast");
		else
			fprintf(stderr, "midm pair plan %dx%d M=%d: nt %d cps %d splits %d, %d pairs, %d clusters of %d resident: %s\n", N,
				K, M, p.nt, p.cps, p.splits, pairs, resident, cl, rc < 0 ? "FALLBACK v4 (launch refused)" : "not taken: v4");
	}
#endif
	return rc == 0;
}
#endif

#if SF_GEMM_V10
/* Version 10 (GEMM_NOTES_LARGE_M.md), called first in launch_persistent: an unsplit persistent 128 x BN launch (v3a's
 * unsplit plans and v2's where it does not split K) at M >= SF_GEMM_V10_MIN_M on gemm_v10_kernel<BN> (the same K loop,
 * the epilogue through shared memory and TMA stores). Needs C's TMA map (N % 8 == 0: C's row stride a multiple of 16
 * bytes; make_map refuses otherwise). SF_GEMM_TAILROWS (version 15): mat, A's last token tile (box M % 128 rows), passed
 * on. true when it launched, false: the default kernel as without it. */
template <int BN>
bool v10_hook(const CUtensorMap &ma, const CUtensorMap &mb SF_GEMM_TAIL_P, __nv_bfloat16 *C, int M, int N, int K, int splits,
	      cudaStream_t stream)
{
	CUtensorMap mc;
	if (splits != 1 || M < SF_GEMM_V10_MIN_M)
		return false;
	const int rc = N % 8 != 0 || make_map(&mc, C, M, N, 64)
			       ? 1
			       : sfgemm::v10_launch<BN>(ma, mb SF_GEMM_TAIL_A, mc, C, M, N, K, sm_count(), stream);
#if SF_GEMM_V3_TRACE /* one stderr line per new shape, as v3_trace: a silent fallback must show in the log */
	static int last[3];
	if (trace_new_shape(last, M, N, K)) {
		fprintf(stderr, "v10 plan %dx%d M=%d: bn %d: %s\n", N, K, M, BN,
			rc == 0 ? "launched v10" : (rc > 0 ? "FALLBACK default (no C map)" : "FALLBACK default (launch failed)"));
	}
#endif
	return rc == 0;
}
#endif
} /* namespace */
#endif

/* A's map(s) for the wgmma and v10 kernels in gemm_bf16_sm90.cu's launches (ma, and mat with SF_GEMM_TAILROWS) */
#if SF_GEMM_TAILROWS
#define SF_MAKE_A(A, M, K) make_a_maps(&ma, &mat, A, M, K)
#else
#define SF_MAKE_A(A, M, K) make_map(&ma, A, M, K, sfgemm::kWgBM)
#endif
