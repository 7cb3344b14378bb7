/*
 * gemm_bf16_sm90_pingpong.cuh - candidate large-M kernel of gemm_bf16_sm90.cu (-DSF_GEMM_PINGPONG=1, default 0;
 * GEMM_NOTES_LARGE_M.md "Version 7 (large M ping-pong)"): the warp-specialized TMA + wgmma GEMM of
 * gemm_bf16_sm90_wgmma.cuh with its two consumer warpgroups on DIFFERENT output tiles ("ping-pong"):
 * while one runs its K loop (wgmma), the other stores its finished tile from registers, so the tensor
 * cores are fed by one warpgroup or the other at all times instead of idling through every epilogue.
 *
 * Tiles: one consumer warpgroup owns a whole WM x BN tile, 128 fp32 accumulators per thread either way:
 *   WM = 128: 128 x 128, two m64n128k16 per k16 step (rows 0..63 and 64..127 share the B operand);
 *   WM = 64:  64 x 256, one m64n256k16 per k16 step (the instruction of the default kernel).
 * Ring stage = A [WM][64] + B [BN][64] bf16 (32 KB / 40 KB: 6 / 5 stages in ~200 KB), both K-major with
 * the 128-byte swizzle TMA writes (the layout gemm_bf16_sm90_wgmma.cuh describes); A rows 64 h .. of a
 * stage start at 64 h x 128 bytes, a whole number of 1024-byte swizzle atoms.
 *
 * Schedule: persistent, grid min(tiles, SMs); CTA b takes tiles b, b + G, b + 2 G, ... (G = gridDim.x,
 * grouped rasterization over kGroupM tile rows = 1024 rows of C); its local tile i goes to consumer
 * warpgroup i % 2. The producer loads every local tile's K blocks in local order, so the ring holds
 * tile i's stages before tile i + 1's; each consumer walks the same running stage counter and skips
 * (counts past) the other's stages. full[s]: 1 arrival + the TMA bytes; empty[s]: the 4 warps of the
 * one warpgroup that reads the stage.
 *
 * Turn order (named barriers kPpTurnBar + c, 256 threads = both consumer warpgroups): the K loops run in
 * local tile order. The owner of tile i >= 1 executes bar.sync on ITS barrier before its first wgmma; the
 * owner of tile i, after issuing its last wgmma of the tile and when tile i + 1 exists, executes
 * bar.arrive on the OTHER warpgroup's barrier. Each barrier thus sees exactly one arrive (128 threads)
 * and one sync (128 threads) per turn, and no second arrive can precede the matching sync: the next
 * arrive on barrier c needs the other warpgroup's turn, which needs warpgroup c's own arrive, which comes
 * after its sync. Epilogues are not ordered (they share nothing). tools/gemm_dev/emulate_pingpong.py checks
 * the protocol (all interleavings of small cases: no deadlock, no arrive without its sync, every stage
 * read after its load and before its reload, every tile stored once).
 */
#pragma once
#include "gemm_bf16_sm90_wgmma.cuh"

namespace sfgemm {

const int kPpTurnBar = 1; /* named barriers 1 (consumer 0's turn) and 2 (consumer 1's turn) */

/* Per consumer tile height WM (64 or 128): tile width, wgmma row blocks, ring geometry, raster group. */
template <int WM> struct PpCfg {
	static const int kBN = WM == 128 ? 128 : 256;
	static const int kMH = WM / 64;		/* m64 row blocks per consumer tile */
	static const int kNR = kBN / 2;		/* fp32 accumulators per row block per thread */
	static const int kABytes = WM * kWgBK * 2;
	static const int kStageBytes = kABytes + kBN * kWgBK * 2;
	static const int kStages = (200 * 1024) / kStageBytes;
	static const int kSmemBytes = kStages * kStageBytes + 1024 /* alignment slack */ + 256 /* barriers */;
	static const int kGroupM = kWgGroupM * kWgBM / WM; /* tile rows per raster group: 1024 rows of C */
};
static_assert(PpCfg<128>::kMH * PpCfg<128>::kNR == 128 && PpCfg<64>::kMH * PpCfg<64>::kNR == 128,
	      "128 accumulators per consumer thread");

/* Tile t -> (tm, tn) of a tiles_m x tiles_n grid, groups of gm tile rows (the default kernel's raster). */
__device__ __forceinline__ void pp_tile(int t, int tiles_m, int tiles_n, int gm, int &tm, int &tn)
{
	wg_raster(t, tiles_m, tiles_n, gm, tm, tn);
}

/*
 * The ping-pong GEMM: C[M][N] = A[M][K] . B[N][K]^T, tiles WM x PpCfg<WM>::kBN; kWgThreads threads
 * (producer warpgroup 0, consumers 1 and 2), PpCfg<WM>::kSmemBytes dynamic shared memory, grid <= tiles
 * (persistent). tm_a: A with box [WM][64]; tm_b: B with box [BN][64]; both 128-byte swizzled.
 * Requirements (checked by the host): K % 8 == 0, A and B 16-byte aligned, N % 2 == 0, K >= 1.
 */
template <int WM>
__global__ void __launch_bounds__(kWgThreads, 1)
	gemm_pingpong_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
			     __nv_bfloat16 *__restrict__ C, int M, int N, int K)
{
	typedef PpCfg<WM> Cfg;
	const int BN = Cfg::kBN, kStages = Cfg::kStages, kStageBytes = Cfg::kStageBytes;
	extern __shared__ uint8_t smem_raw[];
	const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
	const uint32_t base = (raw + 1023) & ~1023u;
	const uint32_t bar_full = base + kStages * kStageBytes, bar_empty = bar_full + 8 * kStages;
	const int wg = threadIdx.x / 128;
	const int tiles_m = (M + WM - 1) / WM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
	const int kb_count = (K + kWgBK - 1) / kWgBK;

	if (threadIdx.x == 0) {
		for (int s = 0; s < kStages; s++) {
			mbar_init(bar_full + 8 * s, 1);
			mbar_init(bar_empty + 8 * s, 4); /* the 4 warps of the one consumer reading the stage */
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();

	if (wg == 0) {
		asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
		if (threadIdx.x == 0) {
			uint32_t it = 0;
			for (int t = blockIdx.x; t < tiles; t += gridDim.x) { /* local tile order = both consumers' turn order */
				int tm, tn;
				pp_tile(t, tiles_m, tiles_n, Cfg::kGroupM, tm, tn);
				for (int kb = 0; kb < kb_count; kb++, it++) {
					const uint32_t s = it % kStages, ph = (it / kStages) & 1;
					mbar_wait(bar_empty + 8 * s, ph ^ 1);
					const uint32_t sa = base + s * kStageBytes;
					mbar_expect_tx(bar_full + 8 * s, kStageBytes);
					tma_load_2d(sa, &tm_a, bar_full + 8 * s, kb * kWgBK, tm * WM);
					tma_load_2d(sa + Cfg::kABytes, &tm_b, bar_full + 8 * s, kb * kWgBK, tn * BN);
				}
			}
		}
		return; /* no block-wide barrier follows: the consumers only use named barriers 1 and 2 */
	}

	asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
	const int c = wg - 1; /* this consumer takes local tiles c, c + 2, ... */
	const int tid = threadIdx.x - 128 * wg, warp = tid >> 5, lane = tid & 31;
	const int g = lane >> 2, q = lane & 3;
	uint32_t it = 0;
	float d[Cfg::kMH][Cfg::kNR];
	int i = 0; /* local tile index */
	for (int t = blockIdx.x; t < tiles; t += gridDim.x, i++) {
		if ((i & 1) != c) { /* the other consumer's tile: skip its stages */
			it += (uint32_t)kb_count;
			continue;
		}
		int tm, tn;
		pp_tile(t, tiles_m, tiles_n, Cfg::kGroupM, tm, tn);
#pragma unroll
		for (int h = 0; h < Cfg::kMH; h++)
#pragma unroll
			for (int r = 0; r < Cfg::kNR; r++)
				d[h][r] = 0.0f;
		if (i > 0) /* wait for the turn: the owner of tile i - 1 has issued all of its wgmmas */
			asm volatile("bar.sync %0, 256;" ::"r"(kPpTurnBar + c) : "memory");
		uint32_t prev = 0;
		for (int kb = 0; kb < kb_count; kb++, it++) {
			const uint32_t s = it % kStages, ph = (it / kStages) & 1;
			mbar_wait(bar_full + 8 * s, ph);
			const uint32_t sa = base + s * kStageBytes, sb = sa + Cfg::kABytes;
			wgmma_fence();
#pragma unroll
			for (int kk = 0; kk < kWgBK / 16; kk++)
#pragma unroll
				for (int h = 0; h < Cfg::kMH; h++)
					wgmma_m64k16<PpCfg<WM>::kBN>(d[h], wg_desc(sa + h * (64 * 128) + kk * 32), wg_desc(sb + kk * 32));
			wgmma_commit();
			if (kb > 0) {
				wgmma_wait<1>();
				if (lane == 0)
					mbar_arrive(bar_empty + 8 * prev);
			}
			prev = s;
		}
		if (t + (int)gridDim.x < tiles) /* tile i + 1 exists: its owner (the other consumer) may start */
			asm volatile("bar.arrive %0, 256;" ::"r"(kPpTurnBar + (c ^ 1)) : "memory");
		wgmma_wait<0>();
		if (lane == 0)
			mbar_arrive(bar_empty + 8 * prev);

		/* epilogue, overlapped with the other consumer's K loop: bf16 pairs straight from registers */
#pragma unroll
		for (int h = 0; h < Cfg::kMH; h++) {
			const int row0 = tm * WM + h * 64 + warp * 16 + g, col0 = tn * BN + q * 2;
#pragma unroll
			for (int j = 0; j < BN / 8; j++) {
				const int n = col0 + j * 8;
				if (n < N) {
					if (row0 < M)
						*(__nv_bfloat162 *)(C + (size_t)row0 * N + n) =
							__floats2bfloat162_rn(d[h][4 * j], d[h][4 * j + 1]);
					if (row0 + 8 < M)
						*(__nv_bfloat162 *)(C + (size_t)(row0 + 8) * N + n) =
							__floats2bfloat162_rn(d[h][4 * j + 2], d[h][4 * j + 3]);
				}
			}
		}
	}
}

} /* namespace sfgemm */
