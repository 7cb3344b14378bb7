/*
 * gemm_bf16_sm90_v10.cuh - candidate large-M kernel of gemm_bf16_sm90.cu (-DSF_GEMM_V10=1, default 0: this
 * header is then not included and the default build's PTX is unchanged; GEMM_NOTES_LARGE_M.md "Version 10"):
 * the default's persistent, unsplit 128 x BN wgmma kernel (gemm_bf16_sm90_wgmma.cuh, kWgPersistent with one
 * split: same ring depth, barriers, producer thread, setmaxnreg split, one m64nBNk16 per k16 step, one wgmma
 * batch in flight, release after wgmma.wait_group 1) with ONE change, the epilogue: instead of 128 4-byte
 * global stores per consumer thread per tile (each warp instruction touching 8 rows of C, 16 bytes of each),
 * the accumulators go as bf16 pairs into a 64 x 64 shared-memory chunk (128-byte swizzle, conflict-free
 * 4-byte st.shared) and one thread per consumer warpgroup stores the chunk with a TMA bulk tensor store
 * (cp.async.bulk.tensor, whole 128-byte lines of C), asynchronously: the next chunk is written while it
 * drains, and the last chunks of a tile drain under the next tile's K loop.
 *
 * Epilogue buffers: kBufs per consumer warpgroup (2, double-buffered; 1 at BN = 192, where the default's
 * 5-stage ring leaves room for one), 8 KB each, after the ring. Chunk e of a consumer (a running count over
 * its tiles) uses buffer e % kBufs. Per chunk: the consumer's issuing thread (tid 0) waits until at most
 * kBufs - 1 of its bulk groups are still reading shared memory (cp.async.bulk.wait_group.read), so the group
 * that last read buffer e % kBufs is done; named barrier (id 2 + c, 128 threads); all threads write the
 * chunk; fence.proxy.async (generic-proxy writes visible to the TMA); named barrier; tid 0 issues the store
 * and commits its bulk group. Before exit tid 0 waits for all its groups to complete (cp.async.bulk.wait_group 0).
 * Control (SF_GEMM_V10_EPI=0, diagnostic): this kernel with the default's register-store epilogue (wg_store_rows),
 * no epilogue buffers used: separates the epilogue's effect from this kernel's schedule (its K loop is the default's).
 * Edges: TMA zero-fills rows >= M / N and K past K on loads and clips the store box at M and N (no row or
 * column checks); with SF_GEMM_TAILROWS (version 15) the last token tile's A box is its real rows (tm_at), the stage
 * rows past them stale: they reach only the chunk rows >= M, which the clipped store box leaves out. Requirements (host): K % 8 == 0, A, B and C 16-byte aligned, N % 8 == 0 (C's TMA row stride).
 */
#pragma once
#include "gemm_bf16_sm90_wgmma.cuh"
#include "gemm_bf16_sm90_config.cuh" /* SF_GEMM_V10_EPI */

namespace sfgemm {

const int kV10Epi = SF_GEMM_V10_EPI;
static_assert(kV10Epi == 0 || kV10Epi == 1, "SF_GEMM_V10_EPI: 1 (TMA stores) or 0 (the control: register stores)");

/* Per tile width BN (256, 192, 128): the default kernel's ring (WgCfg<BN>) plus the epilogue buffers. */
template <int BN> struct V10Cfg {
	static const int kStages = WgCfg<BN>::kStages, kStageBytes = WgCfg<BN>::kStageBytes;
	static const int kBufs = BN == 192 ? 1 : 2;			 /* epilogue buffers per consumer */
	static const int kChunkBytes = 64 * 64 * 2;			 /* 64 rows x 64 columns of bf16 */
	static const int kEpiBytes = 2 * kBufs * kChunkBytes;		 /* both consumers */
	static const int kSmemBytes = kStages * kStageBytes + kEpiBytes + 1024 /* alignment slack */ + 256 /* barriers */;
};
static_assert(V10Cfg<256>::kSmemBytes <= 227 * 1024 && V10Cfg<192>::kSmemBytes <= 227 * 1024 &&
		      V10Cfg<128>::kSmemBytes <= 227 * 1024,
	      "the ring and the epilogue buffers fit in 227 KB");

/* TMA store of the box at (c0 = column, c1 = row) of map from shared memory src, in this thread's bulk group. */
__device__ __forceinline__ void tma_store_2d(const CUtensorMap *map, uint32_t src, int c0, int c1)
{
	asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"((uint64_t)map),
		     "r"(src), "r"(c0), "r"(c1)
		     : "memory");
}

/*
 * The version-10 GEMM: C[M][N] = A[M][K] . B[N][K]^T in 128 x BN tiles, persistent (grid <= tiles; CTA b takes
 * tiles b, b + G, ...), kWgThreads threads, V10Cfg<BN>::kSmemBytes dynamic shared memory. tm_a: A, box [128][64];
 * tm_b: B, box [BN][64]; tm_c: C, box [64][64]; all 128-byte swizzled. The K loop is gemm_wgmma_kernel's
 * (wg_k_loop, as kWgPersistent with splits 1); the epilogue is described atop this file.
 */
template <int BN>
__global__ void __launch_bounds__(kWgThreads, 1)
	gemm_v10_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
#if SF_GEMM_TAILROWS /* version 15: A's last token tile, box M % 128 rows (wg_a_rows; unused when M % 128 == 0) */
			const __grid_constant__ CUtensorMap tm_at,
#endif
			const __grid_constant__ CUtensorMap tm_c, __nv_bfloat16 *__restrict__ C, int M, int N, int K)
{
	typedef V10Cfg<BN> Cfg;
	const int kStages = Cfg::kStages, kStageBytes = Cfg::kStageBytes, kNR = BN / 2;
	extern __shared__ uint8_t smem_raw[];
	const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
	const uint32_t base = (raw + 1023) & ~1023u;
	const uint32_t epi = base + kStages * kStageBytes; /* 1024-aligned: stages are multiples of 1 KB */
	const uint32_t bar_full = epi + Cfg::kEpiBytes, bar_empty = bar_full + 8 * kStages;
	const int wg = threadIdx.x / 128;
	const int tiles_m = (M + kWgBM - 1) / kWgBM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
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
				wg_raster(t, tiles_m, tiles_n, kWgGroupM, tm, tn);
#if SF_GEMM_TAILROWS /* version 15: the last tile row's real A rows only, their bytes expected */
				const int ar = wg_a_rows(tm, M);
				const CUtensorMap *map_a = ar < kWgBM ? &tm_at : &tm_a;
				const uint32_t tx = (uint32_t)(kStageBytes - (kWgBM - ar) * (kWgBK * 2));
#endif
				for (int kb = 0; kb < kb_count; kb++, it++) {
					const uint32_t s = it % kStages, ph = (it / kStages) & 1;
					mbar_wait(bar_empty + 8 * s, ph ^ 1);
					const uint32_t sa = base + s * kStageBytes;
#if SF_GEMM_TAILROWS
					mbar_expect_tx(bar_full + 8 * s, tx);
					tma_load_2d(sa, map_a, bar_full + 8 * s, kb * kWgBK, tm * kWgBM);
#else
					mbar_expect_tx(bar_full + 8 * s, kStageBytes);
					tma_load_2d(sa, &tm_a, bar_full + 8 * s, kb * kWgBK, tm * kWgBM);
#endif
					tma_load_2d(sa + kWgABytes, &tm_b, bar_full + 8 * s, kb * kWgBK, tn * BN);
				}
			}
		}
		return; /* no block-wide barrier follows */
	}

	asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
	const int c = wg - 1; /* rows 64 c .. 64 c + 63 of the tile */
	const int tid = threadIdx.x - 128 * wg, warp = tid >> 5, lane = tid & 31;
	const int g = lane >> 2, q = lane & 3;
	/* this thread's byte offset in a chunk: row 16 warp + g (and + 8: the same swizzle phase g), bytes 4 q of a chunk */
	const uint32_t my_row = (uint32_t)((16 * warp + g) * 128 + 4 * q);
	const uint32_t my_epi = epi + (uint32_t)(c * Cfg::kBufs * Cfg::kChunkBytes);
	uint32_t it = 0, e = 0;
	float d[kNR];
	for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
		int tm, tn;
		wg_raster(t, tiles_m, tiles_n, kWgGroupM, tm, tn);
		const uint32_t prev = wg_k_loop<BN, false>(d, it, 0, kb_count, base, c, lane, bar_full, bar_empty, 0);
		if (lane == 0)
			wg_release<false>(bar_empty + 8 * prev, 0);

		if (!kV10Epi) { /* the control (SF_GEMM_V10_EPI=0): the default kernel's register stores, C unused otherwise */
			wg_store_rows<BN>(C, d, tm * kWgBM + c * 64 + warp * 16 + g, tn * BN + q * 2, M, N);
		} else {
			/* epilogue: BN / 64 chunks of 64 x 64 through shared memory and TMA stores */
#pragma unroll
			for (int ch = 0; ch < BN / 64; ch++, e++) {
				const uint32_t buf = my_epi + (e % Cfg::kBufs) * Cfg::kChunkBytes;
				if (tid == 0) { /* the group that last read this buffer is done reading it */
					if (Cfg::kBufs == 2)
						asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
					else
						asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
				}
				asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
#pragma unroll
				for (int jj = 0; jj < 8; jj++) { /* column group 8 ch + jj: 16-byte chunk jj of the row, swizzled by g */
					const int j = 8 * ch + jj;
					const uint32_t a = buf + my_row + (uint32_t)((jj ^ g) << 4);
					__nv_bfloat162 lo = __floats2bfloat162_rn(d[4 * j], d[4 * j + 1]);
					__nv_bfloat162 hi = __floats2bfloat162_rn(d[4 * j + 2], d[4 * j + 3]);
					asm volatile("st.shared.b32 [%0], %1;" ::"r"(a), "r"(*(uint32_t *)&lo) : "memory");
					asm volatile("st.shared.b32 [%0], %1;" ::"r"(a + 8 * 128), "r"(*(uint32_t *)&hi) : "memory");
				}
				asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
				asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
				if (tid == 0) {
					tma_store_2d(&tm_c, buf, tn * BN + 64 * ch, tm * kWgBM + 64 * c);
					asm volatile("cp.async.bulk.commit_group;" ::: "memory");
				}
			}
		}
	}
	if (kV10Epi && tid == 0) /* every store has completed before the CTA exits */
		asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

namespace { /* internal linkage (no STB_GNU_UNIQUE function-local static; GEMM_NOTES.md, the midm anomaly) */

/* Host: launch gemm_v10_kernel<BN> persistent on sms SMs (grid min(tiles, sms)). 0 when launched, -1 when the
 * shared memory limit cannot be set or the launch fails (the caller falls back to the default kernel).
 * ma: A, box [128][64]; mb: B, box [BN][64]; mc: C, box [64][64]; SF_GEMM_TAILROWS: mat, A's last tile (box M % 128). */
template <int BN>
int v10_launch(const CUtensorMap &ma, const CUtensorMap &mb SF_GEMM_TAIL_P, const CUtensorMap &mc, __nv_bfloat16 *C, int M,
	       int N, int K, int sms, cudaStream_t stream)
{
	static bool attr = false;
	const int tiles = ((M + kWgBM - 1) / kWgBM) * ((N + BN - 1) / BN);
	if (!attr) {
		if (cudaFuncSetAttribute(gemm_v10_kernel<BN>, cudaFuncAttributeMaxDynamicSharedMemorySize,
					 V10Cfg<BN>::kSmemBytes) != cudaSuccess) {
			(void)cudaGetLastError();
			return -1;
		}
		attr = true;
	}
	gemm_v10_kernel<BN><<<tiles < sms ? tiles : sms, kWgThreads, V10Cfg<BN>::kSmemBytes, stream>>>(ma, mb SF_GEMM_TAIL_A, mc, C, M, N, K);
	if (cudaGetLastError() != cudaSuccess)
		return -1;
	return 0;
}

} /* namespace */
} /* namespace sfgemm */
