/*
 * gemm_bf16_sm90_coop.cuh - candidate large-M kernel of gemm_bf16_sm90.cu (-DSF_GEMM_COOP256=1 or 2, default 0:
 * this header is then not included and the default build's PTX is unchanged; GEMM_NOTES_LARGE_M.md
 * "Version 9"): the warp-specialized TMA + wgmma GEMM of gemm_bf16_sm90_wgmma.cuh (same ring, barriers,
 * release protocol, producer thread, setmaxnreg split) with cuBLASLt's consumer shape: each of the two
 * consumer warpgroups owns a 128 x 128 block of the CTA tile and issues TWO m64n128k16 per k16 step (its
 * two 64-row halves of A against one shared B block) instead of one m64n256k16 on a 64 x 256 half.
 *
 * Tiles (48 KB stages either way: A [TM][64] + B [384 - TM][64] bf16, 4 stages in ~200 KB):
 *   TM = 256 (SF_GEMM_COOP256=1): 256 (M) x 128 (N); consumer c owns rows 128 c .. 128 c + 127, all columns.
 *   TM = 128 (SF_GEMM_COOP256=2): 128 (M) x 256 (N); consumer c owns columns 128 c .. 128 c + 127, all rows.
 * Both operands K-major with the 128-byte swizzle TMA writes (the layout gemm_bf16_sm90_wgmma.cuh
 * describes); a 64-row sub-block of either starts at a multiple of 64 x 128 bytes (whole 1024-byte atoms),
 * so its descriptor is the block's start plus that offset.
 *
 * Schedule: persistent, grid min(tiles, SMs); CTA b takes tiles b, b + G, ... (G = gridDim.x) through
 * wg_raster over groups of CoopCfg<TM>::kGroupM tile rows (1024 rows of C, as the default kernel).
 * Ring protocol: the default's (full[s] 1 arrival + kStageBytes of TMA; empty[s] the 8 consumer warps,
 * lane 0 after wgmma.wait_group 1 has retired the stage's reads), unchanged.
 * Issue order per stage (SF_GEMM_COOP_ORDER): 0 (the candidate) k16 step outer, row block inner: consecutive
 * wgmmas write different accumulators; 1 (diagnostic) row block outer: four dependent wgmmas per block.
 * Edges: TMA zero-fills rows >= M / N and K past K; every store checks row < M and column < N.
 */
#pragma once
#include "gemm_bf16_sm90_wgmma.cuh"
#include "gemm_bf16_sm90_config.cuh" /* SF_GEMM_COOP_ORDER */

namespace sfgemm {

/* Per tile height TM (256 or 128): tile width, operand bytes, ring depth, raster group, consumer split. */
template <int TM> struct CoopCfg {
	static const int kBN = 384 - TM;		      /* 128 or 256 */
	static const int kABytes = TM * kWgBK * 2;
	static const int kStageBytes = kABytes + kBN * kWgBK * 2; /* 48 KB */
	static const int kStages = (200 * 1024) / kStageBytes;    /* 4 */
	static const int kSmemBytes = kStages * kStageBytes + 1024 /* alignment slack */ + 256 /* barriers */;
	static const int kGroupM = 1024 / TM;		      /* tile rows per raster group: 1024 rows of C */
	static const int kRowOff = TM == 256 ? 128 : 0;	      /* consumer c's first row: kRowOff * c */
	static const int kColOff = TM == 256 ? 0 : 128;	      /* consumer c's first column: kColOff * c */
};
static_assert(CoopCfg<256>::kStageBytes == 48 * 1024 && CoopCfg<128>::kStageBytes == 48 * 1024, "48 KB stages");
const int kCoopOrder = SF_GEMM_COOP_ORDER;
static_assert(kCoopOrder == 0 || kCoopOrder == 1, "SF_GEMM_COOP_ORDER: 0 or 1");
static_assert(CoopCfg<256>::kStages == 4 && CoopCfg<128>::kStages == 4, "4 stages, as cuBLASLt's 64x4");

/*
 * The cooperative GEMM: C[M][N] = A[M][K] . B[N][K]^T, tiles TM x (384 - TM); kWgThreads threads (producer
 * warpgroup 0, consumers 1 and 2), CoopCfg<TM>::kSmemBytes dynamic shared memory, grid <= tiles
 * (persistent). tm_a: A with box [TM][64]; tm_b: B with box [384 - TM][64]; both 128-byte swizzled.
 * Requirements (checked by the host): K % 8 == 0, K >= 1, A and B 16-byte aligned, N % 2 == 0.
 */
template <int TM>
__global__ void __launch_bounds__(kWgThreads, 1)
	gemm_coop_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
			 __nv_bfloat16 *__restrict__ C, int M, int N, int K)
{
	typedef CoopCfg<TM> Cfg;
	const int BN = Cfg::kBN, kStages = Cfg::kStages, kStageBytes = Cfg::kStageBytes;
	extern __shared__ uint8_t smem_raw[];
	const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
	const uint32_t base = (raw + 1023) & ~1023u;
	const uint32_t bar_full = base + kStages * kStageBytes, bar_empty = bar_full + 8 * kStages;
	const int wg = threadIdx.x / 128;
	const int tiles_m = (M + TM - 1) / TM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
	const int kb_count = (K + kWgBK - 1) / kWgBK;

	if (threadIdx.x == 0) {
		for (int s = 0; s < kStages; s++) {
			mbar_init(bar_full + 8 * s, 1);
			mbar_init(bar_empty + 8 * s, 8); /* the 8 consumer warps */
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();

	if (wg == 0) {
		asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
		if (threadIdx.x == 0) {
			uint32_t it = 0;
			for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
				int tm, tn;
				wg_raster(t, tiles_m, tiles_n, Cfg::kGroupM, tm, tn);
				for (int kb = 0; kb < kb_count; kb++, it++) {
					const uint32_t s = it % kStages, ph = (it / kStages) & 1;
					mbar_wait(bar_empty + 8 * s, ph ^ 1);
					const uint32_t sa = base + s * kStageBytes;
					mbar_expect_tx(bar_full + 8 * s, kStageBytes);
					tma_load_2d(sa, &tm_a, bar_full + 8 * s, kb * kWgBK, tm * TM);
					tma_load_2d(sa + Cfg::kABytes, &tm_b, bar_full + 8 * s, kb * kWgBK, tn * BN);
				}
			}
		}
		return; /* no block-wide barrier follows */
	}

	asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
	const int c = wg - 1;
	const int tid = threadIdx.x - 128 * wg, warp = tid >> 5, lane = tid & 31;
	const int g = lane >> 2, q = lane & 3;
	/* this consumer's A rows and B rows inside a stage: 128 bytes per row */
	const uint32_t a_off = (uint32_t)(c * Cfg::kRowOff * 128), b_off = (uint32_t)(Cfg::kABytes + c * Cfg::kColOff * 128);
	uint32_t it = 0;
	float d[2][64]; /* d[h]: the m64n128 accumulators of rows 64 h .. 64 h + 63 of this consumer's block */
	for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
		int tm, tn;
		wg_raster(t, tiles_m, tiles_n, Cfg::kGroupM, tm, tn);
#pragma unroll
		for (int h = 0; h < 2; h++)
#pragma unroll
			for (int r = 0; r < 64; r++)
				d[h][r] = 0.0f;
		uint32_t prev = 0;
		for (int kb = 0; kb < kb_count; kb++, it++) {
			const uint32_t s = it % kStages, ph = (it / kStages) & 1;
			mbar_wait(bar_full + 8 * s, ph);
			const uint32_t sa = base + s * kStageBytes + a_off, sb = base + s * kStageBytes + b_off;
			wgmma_fence();
#pragma unroll
			for (int x = 0; x < 2 * kWgBK / 16; x++) { /* kCoopOrder 0: k16 step x / 2, row block x % 2 */
				const int kk = kCoopOrder ? x % 4 : x / 2, h = kCoopOrder ? x / 4 : x % 2;
				wgmma_m64k16<128>(d[h], wg_desc(sa + h * (64 * 128) + kk * 32), wg_desc(sb + kk * 32));
			}
			wgmma_commit();
			if (kb > 0) {
				wgmma_wait<1>(); /* the batch of stage prev has retired its reads: release its slot */
				if (lane == 0)
					mbar_arrive(bar_empty + 8 * prev);
			}
			prev = s;
		}
		wgmma_wait<0>();
		if (lane == 0)
			mbar_arrive(bar_empty + 8 * prev);

		/* epilogue: bf16 pairs straight from registers, rows >= M and columns >= N left out */
		const int col0 = tn * BN + c * Cfg::kColOff + q * 2;
#pragma unroll
		for (int h = 0; h < 2; h++)
			wg_store_rows<128>(C, d[h], tm * TM + c * Cfg::kRowOff + h * 64 + warp * 16 + g, col0, M, N);
	}
}

namespace { /* internal linkage (no STB_GNU_UNIQUE function-local static; GEMM_NOTES.md, the midm anomaly) */

/* Host: the coop tile count for C[M][N] at tile height TM. */
template <int TM> int coop_tiles(int M, int N)
{
	return ((M + TM - 1) / TM) * ((N + CoopCfg<TM>::kBN - 1) / CoopCfg<TM>::kBN);
}

/* Host: the version-9 decision for a v3 plan (pair, cluster, splits, bn: V3Plan's fields; splits 0 = v2's
 * launch, whose own K split is v2_splits) of C[M][N] on sms SMs at tile height TM. kCoopPlan: the plan is not
 * an unsplit persistent 128 x 256 one (a pair, a cluster, a K split, another width) or M < min_m: v3a as
 * without version 9; kCoopNotTaken: it is, but the coop tiles would need more waves (ceil(coop tiles / sms)
 * > ceil(128 x 256 tiles / sms): TM = 256 at e.g. M 1300); kCoopTake: run gemm_coop_kernel<TM>. */
const int kCoopTake = 0, kCoopNotTaken = 1, kCoopPlan = 2;
template <int TM>
int coop_decide(int pair, int cluster, int splits, int bn, int v2_splits, int M, int N, int min_m, int sms)
{
	if (pair || cluster || bn != 256 || M < min_m || !(splits == 1 || (splits == 0 && v2_splits == 1)))
		return kCoopPlan;
	const int tiles = coop_tiles<TM>(M, N), plain = ((M + kWgBM - 1) / kWgBM) * ((N + 255) / 256);
	return (tiles + sms - 1) / sms > (plain + sms - 1) / sms ? kCoopNotTaken : kCoopTake;
}

/* Host: launch gemm_coop_kernel<TM> persistent on sms SMs (grid min(tiles, sms)) after coop_decide said
 * kCoopTake. 0 when launched, -1 when the shared memory limit cannot be set or the launch fails (the caller
 * falls back). ma: A with box [TM][64]; mb: B with box [384 - TM][64]. */
template <int TM>
int coop_launch(const CUtensorMap &ma, const CUtensorMap &mb, __nv_bfloat16 *C, int M, int N, int K, int sms,
		cudaStream_t stream)
{
	static bool attr = false;
	const int tiles = coop_tiles<TM>(M, N);
	if (!attr) {
		if (cudaFuncSetAttribute(gemm_coop_kernel<TM>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					 CoopCfg<TM>::kSmemBytes) != cudaSuccess) {
			(void)cudaGetLastError();
			return -1;
		}
		attr = true;
	}
	gemm_coop_kernel<TM><<<tiles < sms ? tiles : sms, kWgThreads, CoopCfg<TM>::kSmemBytes, stream>>>(ma, mb, C, M, N, K);
	if (cudaGetLastError() != cudaSuccess)
		return -1;
	return 0;
}

} /* namespace */
} /* namespace sfgemm */
