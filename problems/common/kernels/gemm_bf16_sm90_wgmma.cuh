/*
 * gemm_bf16_sm90_wgmma.cuh - the large- and mid-M path of gemm_bf16_sm90.cu (-DSF_GEMM_LARGE=2):
 * a warp-specialized Hopper GEMM. TMA loads A and B tiles into a shared-memory ring guarded by mbarriers;
 * two consumer warpgroups run wgmma m64nBNk16 (bf16 in, fp32 accumulate in registers) on 64-row halves of
 * a 128 x BN output tile; one producer warpgroup (one thread of it) issues the TMA copies. setmaxnreg
 * moves registers from the producer to the consumers.
 *
 * Tiles: 128 (M) x BN (N) x 64 (K), BN = 256 (v2), 192 or 128 (v3); the ring holds WgCfg<BN>::kStages
 * stages of A [128][64] and B [BN][64] bf16, both K-major with the 128-byte swizzle that TMA writes (rows
 * of 128 bytes, 16-byte chunk c of row r at chunk c ^ (r % 8), 1024-byte atoms of 8 rows) and that the
 * wgmma descriptors below describe (layout 1 = 128B swizzle, stride byte offset 1024 between 8-row
 * atoms; the k16 step inside the 64-wide K block moves the start address by 32 bytes).
 *
 * Barriers: full[s] (1 arrival + the TMA transaction bytes) and empty[s] (one arrival per consumer warp,
 * 8; 16 in the pair mode). A running stage counter it gives the slot it % kStages and the phase
 * (it / kStages) & 1; the producer waits on empty with the opposite parity, so its first pass over a
 * fresh ring does not block. Consumers keep one wgmma batch in flight: after committing stage it they
 * wait for the batch of stage it - 1 and release that slot.
 *
 * Scheduler and modes (gemm_wgmma_kernel's contract): persistent work units (tile, K split) with global
 * split-K slabs (v2), cluster split-K reduced through distributed shared memory (v3, mid M), or
 * persistent clusters of 2 CTAs sharing B by TMA multicast (v3 candidate, large M); tile t maps to
 * (tm, tn) through groups of kWgGroupM M-tiles (the CTAs running at once share A and B tiles in L2).
 * Out-of-range rows and K are zero-filled by TMA; stores are bounds-checked. SF_GEMM_TAILROWS (version 15): the last
 * token tile's A box is its M % 128 real rows (map tm_at), the stage rows past them stale (see wg_a_rows). The
 * epilogue converts to bf16 and stores directly from the accumulator registers while the producer already loads the
 * next tile.
 *
 * Requirements (checked by the host): K % 8 == 0, A and B 16-byte aligned, N % 2 == 0.
 */
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "sm90_wgmma_util.cuh"
#include "gemm_bf16_sm90_wgmma_ops.cuh"
#include "gemm_bf16_sm90_config.cuh" /* SF_GEMM_TAILROWS */

/* SF_GEMM_TAILROWS (version 15): the last token tile's A map travels beside A's map through the host launch helpers
 * (gemm_bf16_sm90.cu, gemm_bf16_sm90_v10.cuh, gemm_bf16_sm90_hooks.cuh): SF_GEMM_TAIL_P appends the parameter,
 * SF_GEMM_TAIL_A the argument; both empty in the default build (the helpers and kernels as before). */
#if SF_GEMM_TAILROWS
#define SF_GEMM_TAIL_P , const CUtensorMap &mat
#define SF_GEMM_TAIL_A , mat
#else
#define SF_GEMM_TAIL_P
#define SF_GEMM_TAIL_A
#endif

namespace sfgemm {

/* mbarrier, descriptor and wgmma fence helpers: sm90_wgmma_util.cuh (shared with the attention kernel) */
using sfwg::mbar_arrive;
using sfwg::mbar_expect_tx;
using sfwg::mbar_init;
using sfwg::mbar_wait;
using sfwg::wg_desc;
using sfwg::wgmma_commit;
using sfwg::wgmma_fence;
using sfwg::wgmma_wait;

const int kWgBM = 128, kWgBK = 64, kWgGroupM = 8, kWgMaxCluster = 8;
#ifndef SF_GEMM_WG_CL_RT /* cluster split-K: output pairs summed per DSMEM round trip (GEMM_NOTES.md "Version 6") */
#define SF_GEMM_WG_CL_RT 2
#endif
const int kWgClusterRT = SF_GEMM_WG_CL_RT;
#ifndef SF_GEMM_WG_PREFETCH /* 1: thread 0 prefetches both TMA descriptors before the barrier setup (as v4 and v5 do) */
#define SF_GEMM_WG_PREFETCH 0
#endif
const bool kWgPrefetchMaps = SF_GEMM_WG_PREFETCH != 0;
static_assert(kWgClusterRT >= 1 && kWgClusterRT <= 8, "SF_GEMM_WG_CL_RT: 1..8 pairs per round trip");
/* gemm_wgmma_kernel modes (see its contract) */
const int kWgPersistent = 0, kWgSplitCluster = 1, kWgPairMulticast = 2;
const int kWgThreads = 384; /* producer warpgroup + 2 consumer warpgroups */
const int kWgABytes = kWgBM * kWgBK * 2;

/* Host: the launch configuration of `grid` CTAs of `threads` threads with `smem` bytes of dynamic shared
 * memory on `stream`, as thread-block clusters of s CTAs along x when s > 1 (no cluster attribute when
 * s == 1). at[] receives the cluster attribute and must outlive the returned config. Shared by the v3
 * cluster and pair launches, the v4 mid-M and the v5 small-M launches and their occupancy queries. */
inline cudaLaunchConfig_t cluster_launch_config(cudaLaunchAttribute (&at)[1], int grid, int threads, int smem, int s,
						cudaStream_t stream)
{
	cudaLaunchConfig_t cfg = {};
	at[0].id = cudaLaunchAttributeClusterDimension;
	at[0].val.clusterDim.x = (unsigned)s;
	at[0].val.clusterDim.y = 1;
	at[0].val.clusterDim.z = 1;
	cfg.gridDim = dim3((unsigned)grid);
	cfg.blockDim = dim3((unsigned)threads);
	cfg.dynamicSmemBytes = (size_t)smem;
	cfg.stream = stream;
	cfg.attrs = at;
	cfg.numAttrs = s > 1 ? 1 : 0;
	return cfg;
}

/* Per tile width BN (128, 192 or 256): stage bytes, ring depth (as many stages as fit in ~200 KB: 6, 5
 * and 4, so BN = 256 keeps v2's 4 x 48 KB ring) and the dynamic shared memory of the kernel. */
template <int BN> struct WgCfg {
	static const int kBBytes = BN * kWgBK * 2;
	static const int kStageBytes = kWgABytes + kBBytes;
	static const int kStages = (200 * 1024) / kStageBytes;
	static const int kSmemBytes = kStages * kStageBytes + 1024 /* alignment slack */ + 256 /* barriers */;
};

__device__ __forceinline__ int ld_acquire(const int *p)
{
	int v;
	asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}

/* 2D TMA load of the box at (c0 = K element, c1 = row) into shared memory, completing on bar. */
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap *map, uint32_t bar, int c0, int c1)
{
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], "
		     "[%2];" ::"r"(dst),
		     "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1)
		     : "memory");
}

/* tma_load_2d into the same shared-memory offset (data and barrier) of every CTA of the cluster in mask. */
__device__ __forceinline__ void tma_load_2d_mc(uint32_t dst, const CUtensorMap *map, uint32_t bar, int c0, int c1,
					       uint16_t mask)
{
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
		     "[%0], [%1, {%3, %4}], [%2], %5;" ::"r"(dst),
		     "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1), "h"(mask)
		     : "memory");
}

/* Arrive on the mbarrier at CTA-local address bar of cluster CTA rank (release, cluster scope). */
__device__ __forceinline__ void mbar_arrive_remote(uint32_t bar, uint32_t rank)
{
	uint32_t remote;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(rank));
	asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

/* All threads of all CTAs of the cluster: arrive (release) and wait (acquire); not .aligned, so
 * warps may reach it divergently. Every thread of every CTA must execute it (none may have exited). */
__device__ __forceinline__ void cluster_sync()
{
	asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}

__device__ __forceinline__ uint32_t cluster_rank()
{
	uint32_t r;
	asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
	return r;
}

/* Two floats at CTA-local shared address addr of cluster CTA rank (distributed shared memory). */
__device__ __forceinline__ float2 dsmem_ld_f2(uint32_t addr, uint32_t rank)
{
	uint32_t remote;
	float2 v;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
	asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(remote) : "memory");
	return v;
}

/*
 * The wgmma GEMM, tile 128 x BN (BN = 128, 192, 256; consumer warpgroup c owns rows 64 c .. 64 c + 63
 * and BN / 2 fp32 accumulators per thread). kWgThreads threads, WgCfg<BN>::kSmemBytes dynamic shared memory.
 *
 * kMode == kWgPersistent (v2 for BN = 256): grid min(tiles * splits, SMs), persistent. A work unit u is
 * (tile u / splits, K split u % splits); every split has at least one K block (the host makes sure).
 * With splits > 1, part holds one 128 x BN fp32 slab per unit, written in register order (element i of
 * consumer thread j at i * 256 + j: coalesced, and the same (i, j) is the same output in every unit of a
 * tile), and cnt one zeroed counter per tile: the last unit of a tile to finish sums the slabs in split
 * order (deterministic), stores bf16 and resets the counter. spread != 0 (the host launched it
 * cooperatively with one unit per CTA, so all units of a tile are resident): cnt holds 2 * tiles
 * counters; every unit waits until all slabs of its tile are written and then sums a 1/splits share of
 * the tile (still in split order); the last unit to finish resets both counters.
 *
 * kMode == kWgSplitCluster (v3 mid M): grid tiles * splits, launched with clusters of splits (<= 8) CTAs along
 * x, one unit per CTA: the CTAs of a cluster are the K splits of one tile (tile blockIdx.x / splits, K
 * split blockIdx.x % splits = the cluster rank). After its K loop a CTA writes its accumulators into its
 * own (now idle) stage ring as a 128 x BN fp32 slab, float pair p = i / 2 of thread j at (p * 256 + j) * 2
 * (conflict-free, the same (p, j) is the same output pair in every CTA); after a cluster barrier, rank r
 * sums pairs [r * share, (r + 1) * share) over the cluster's slabs through distributed shared memory in
 * rank order (deterministic), stores bf16, and a second cluster barrier keeps every slab alive until all
 * ranks have read it. No global scratch, no atomics. Each thread sums kWgClusterRT (SF_GEMM_WG_CL_RT, default 2)
 * pairs per round trip: kWgClusterRT x splits remote loads in flight before the first add.
 *
 * kMode == kWgPairMulticast (v3 large M candidate): persistent over clusters of 2 CTAs along x (grid 2 x
 * clusters, splits 1); cluster k takes pair units k, k + gridDim.x / 2, ...: a pair unit is the tiles
 * (2 pm + rank, tn) of both CTAs (a padded tile row past M when tiles_m is odd: zero-filled, never
 * stored). Each CTA loads its own A tile and half of the shared B tile (rows rank * BN / 2 ..), multicast
 * into both CTAs' rings at the same offset, so B crosses L2 once per pair (L2 -> SM bytes per tile 48 KB
 * -> 32 KB at BN = 256). A full barrier expects the whole stage (own A + both halves); an empty barrier
 * counts the 8 consumer warps of both CTAs (each warp arrives locally and remotely), because a producer's
 * multicast overwrites the slot in both CTAs. Cluster barriers after the barrier init (no multicast into
 * an uninitialized peer) and before exit (no remote arrive on an exited peer).
 */
/* Tile t of a tiles_m x tiles_n grid -> (tm, tn), walking groups of gm tile rows column by column so
 * that consecutive tiles share B columns and stay within gm rows of A (L2 reuse): the default
 * kernel's raster (written inline there, with its pair rows, to keep its PTX as measured), used by
 * v7 (ping-pong) and v8 (pair units of the mcast kernel). */
__device__ __forceinline__ void wg_raster(int t, int tiles_m, int tiles_n, int gm, int &tm, int &tn)
{
	const int group = t / (gm * tiles_n), first_m = group * gm;
	const int gsz = min(tiles_m - first_m, gm), r = t % (gm * tiles_n);
	tm = first_m + r % gsz;
	tn = r / gsz;
}

/* A consumer warp's share of its 64 x BN accumulator tile stored as bf16: rows row0 and row0 + 8
 * (the m64nNk16 fragment: accumulators 4 j, 4 j + 1 at row0, 4 j + 2, 4 j + 3 at row0 + 8, columns
 * col0 + 8 j, + 1), rows >= M and columns >= N left out. Shared by the default kernel and v8 (mcast). */
template <int BN>
__device__ __forceinline__ void wg_store_rows(__nv_bfloat16 *__restrict__ C, const float (&d)[BN / 2], int row0, int col0,
					      int M, int N)
{
#pragma unroll
	for (int j = 0; j < BN / 8; j++) {
		const int n = col0 + j * 8;
		if (n < N) {
			if (row0 < M)
				*(__nv_bfloat162 *)(C + (size_t)row0 * N + n) = __floats2bfloat162_rn(d[4 * j], d[4 * j + 1]);
			if (row0 + 8 < M)
				*(__nv_bfloat162 *)(C + (size_t)(row0 + 8) * N + n) =
					__floats2bfloat162_rn(d[4 * j + 2], d[4 * j + 3]);
		}
	}
}

/* Releases ring stage barrier `bar` (an empty barrier) for this warp: arrive here and, kPair, on the peer CTA's
 * (rank pr ^ 1) barrier at the same offset. Called by lane 0 of each consumer warp. */
template <bool kPair> __device__ __forceinline__ void wg_release(uint32_t bar, int pr)
{
	mbar_arrive(bar);
	if (kPair)
		mbar_arrive_remote(bar, (uint32_t)(pr ^ 1));
}

#if SF_GEMM_TAILROWS
/* Version 15: the A rows that the stage of token tile row am loads: 128, or the M - 128 am real rows of the last tile
 * row (1..128; its map's box when < 128) where M <= SF_GEMM_TAILROWS_MAX_M (make_a_maps' rule). The stage keeps stale rows past them (earlier tiles' rows, or shared memory
 * never written: any bits, NaN included); a row of A reaches only the same row of the accumulators, and every epilogue
 * stores (and every split-K reduction sums into a stored value) rows < M only, so they reach no output. */
__device__ __forceinline__ int wg_a_rows(int am, int M)
{
	return M <= SF_GEMM_TAILROWS_MAX_M && am == (M - 1) / kWgBM ? M - am * kWgBM : kWgBM;
}
#endif

/*
 * A consumer warpgroup's K loop over K blocks [kb0, kb1) of one 128 x BN tile, shared by the default kernel and
 * v10 (gemm_bf16_sm90_v10.cuh): d (the m64nBNk16 accumulators of rows 64 c .. of the tile) zeroed, then per
 * block: wait for ring stage s = it % WgCfg<BN>::kStages to be full (parity (it / kStages) & 1), four
 * m64nBNk16 wgmmas on the stage's A rows 64 c .. and its B, commit; after issuing a block's batch, wait
 * until at most that batch is in flight and release the previous block's stage (lane 0: wg_release<kPair>).
 * Returns with every wgmma retired and the last block's stage (returned) not yet released: the caller
 * releases it (when kb1 > kb0). it advances by kb1 - kb0 (the ring position, carried across tiles).
 */
template <int BN, bool kPair>
__device__ __forceinline__ uint32_t wg_k_loop(float (&d)[BN / 2], uint32_t &it, int kb0, int kb1, uint32_t base, int c,
					      int lane, uint32_t bar_full, uint32_t bar_empty, int pr)
{
	const int kStages = WgCfg<BN>::kStages, kStageBytes = WgCfg<BN>::kStageBytes;
#pragma unroll
	for (int i = 0; i < BN / 2; i++)
		d[i] = 0.0f;
	uint32_t prev = 0;
	for (int kb = kb0; kb < kb1; kb++, it++) {
		const uint32_t s = it % kStages, ph = (it / kStages) & 1;
		mbar_wait(bar_full + 8 * s, ph);
		const uint32_t sa = base + s * kStageBytes + c * (64 * 128), sb = base + s * kStageBytes + kWgABytes;
		wgmma_fence();
#pragma unroll
		for (int kk = 0; kk < kWgBK / 16; kk++)
			wgmma_m64k16<BN>(d, wg_desc(sa + kk * 32), wg_desc(sb + kk * 32));
		wgmma_commit();
		if (kb > kb0) {
			wgmma_wait<1>(); /* the batch of stage prev has retired its reads: release its slot */
			if (lane == 0)
				wg_release<kPair>(bar_empty + 8 * prev, pr);
		}
		prev = s;
	}
	wgmma_wait<0>();
	return prev;
}

template <int BN, int kMode>
__global__ void __launch_bounds__(kWgThreads, 1)
	gemm_wgmma_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
#if SF_GEMM_TAILROWS /* version 15: A's last token tile, box M % 128 rows (a copy of tm_a when M % 128 == 0, unused) */
			  const __grid_constant__ CUtensorMap tm_at,
#endif
			  __nv_bfloat16 *__restrict__ C, int M, int N, int K, int splits, float *part, int *cnt, int spread)
{
	typedef WgCfg<BN> Cfg;
	const bool kCluster = kMode == kWgSplitCluster, kPair = kMode == kWgPairMulticast;
	const int kStages = Cfg::kStages, kStageBytes = Cfg::kStageBytes, kNR = BN / 2;
	extern __shared__ uint8_t smem_raw[];
	const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
	const uint32_t base = (raw + 1023) & ~1023u;
	const uint32_t bar_full = base + kStages * kStageBytes, bar_empty = bar_full + 8 * kStages;
	const int wg = threadIdx.x / 128;
	/* scheduled tile rows: pairs of tile rows in kPair mode */
	const int tiles_m = kPair ? ((M + kWgBM - 1) / kWgBM + 1) / 2 : (M + kWgBM - 1) / kWgBM, tiles_n = (N + BN - 1) / BN;
	const int tiles = tiles_m * tiles_n, kb_count = (K + kWgBK - 1) / kWgBK;
	const int units = tiles * splits, kb_per = (kb_count + splits - 1) / splits;
	const int u_first = kPair ? (int)(blockIdx.x >> 1) : (int)blockIdx.x, u_step = kPair ? (int)(gridDim.x >> 1) : (int)gridDim.x;
	const int tiles_m_real = (M + kWgBM - 1) / kWgBM;
	const int pr = kPair ? (int)(blockIdx.x & 1) : 0; /* rank in the pair (the cluster rank: clusters of 2 along x) */
	volatile int *last_flag = (volatile int *)(smem_raw + (bar_empty + 8 * kStages - raw));

	if (threadIdx.x == 0) {
		if (kWgPrefetchMaps) { /* the descriptors' first fetch overlaps the barrier setup (v6 candidate) */
			asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tm_a) : "memory");
			asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tm_b) : "memory");
#if SF_GEMM_TAILROWS
			asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)&tm_at) : "memory");
#endif
		}
		for (int s = 0; s < kStages; s++) {
			mbar_init(bar_full + 8 * s, 1);
			mbar_init(bar_empty + 8 * s, kPair ? 16 : 8);
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	if (kPair)
		cluster_sync(); /* the peer's barriers are initialized before any multicast or remote arrive */

	if (wg == 0) {
		asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
		if (threadIdx.x == 0) {
			uint32_t it = 0;
			for (int u = u_first; u < units; u += u_step) {
				const int t = u / splits, kb0 = (u % splits) * kb_per, kb1 = min(kb0 + kb_per, kb_count);
				const int group = t / (kWgGroupM * tiles_n), first_m = group * kWgGroupM;
				const int gsz = min(tiles_m - first_m, kWgGroupM), r = t % (kWgGroupM * tiles_n);
				const int tm = kPair ? 2 * (first_m + r % gsz) + pr : first_m + r % gsz, tn = r / gsz;
#if SF_GEMM_TAILROWS /* version 15: the tile row's real A rows through the map of their box, their bytes expected */
				const int am = kPair ? min(tm, tiles_m_real - 1) : tm, ar = wg_a_rows(am, M);
				const CUtensorMap *map_a = ar < kWgBM ? &tm_at : &tm_a;
				const uint32_t tx = (uint32_t)(kStageBytes - (kWgBM - ar) * (kWgBK * 2));
#endif
				for (int kb = kb0; kb < kb1; kb++, it++) {
					const uint32_t s = it % kStages, ph = (it / kStages) & 1;
					mbar_wait(bar_empty + 8 * s, ph ^ 1);
					const uint32_t sa = base + s * kStageBytes;
#if SF_GEMM_TAILROWS
					mbar_expect_tx(bar_full + 8 * s, tx);
					tma_load_2d(sa, map_a, bar_full + 8 * s, kb * kWgBK, am * kWgBM);
#else
					mbar_expect_tx(bar_full + 8 * s, kStageBytes);
					/* kPair: the padded tile row past M (odd tile rows) loads the last real one (never stored) */
					tma_load_2d(sa, &tm_a, bar_full + 8 * s, kb * kWgBK, (kPair ? min(tm, tiles_m_real - 1) : tm) * kWgBM);
#endif
					if (kPair)
						tma_load_2d_mc(sa + kWgABytes + pr * (Cfg::kBBytes / 2), &tm_b, bar_full + 8 * s, kb * kWgBK,
							       tn * BN + pr * (BN / 2), 3);
					else
						tma_load_2d(sa + kWgABytes, &tm_b, bar_full + 8 * s, kb * kWgBK, tn * BN);
				}
			}
		}
		if (kCluster) { /* the consumers' two cluster barriers count every thread of the CTA */
			cluster_sync();
			cluster_sync();
		}
		if (kPair)
			cluster_sync(); /* the consumers' exit barrier */
		return;
	}

	asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
	const int c = wg - 1; /* rows 64 c .. 64 c + 63 of the tile */
	const int tid = threadIdx.x - 128 * wg, warp = tid >> 5, lane = tid & 31;
	uint32_t it = 0;
	float d[kNR];
	for (int u = u_first; u < units; u += u_step) {
		const int t = u / splits, kb0 = (u % splits) * kb_per, kb1 = min(kb0 + kb_per, kb_count);
		const int group = t / (kWgGroupM * tiles_n), first_m = group * kWgGroupM;
		const int gsz = min(tiles_m - first_m, kWgGroupM), r = t % (kWgGroupM * tiles_n);
		const int tm = kPair ? 2 * (first_m + r % gsz) + pr : first_m + r % gsz, tn = r / gsz;
		const uint32_t prev = wg_k_loop<BN, kPair>(d, it, kb0, kb1, base, c, lane, bar_full, bar_empty, pr);
		if (kb1 > kb0 && lane == 0)
			wg_release<kPair>(bar_empty + 8 * prev, pr);

		const int g = lane >> 2, q = lane & 3;
		if (kCluster) {
			const int j = tid + 128 * c;
			/* both consumer warpgroups are past their last wgmma (which read the ring) and every TMA
			 * load of this CTA has landed (each full barrier was waited on): the ring is free */
			asm volatile("bar.sync 1, 256;" ::: "memory");
			float2 *slab = (float2 *)(smem_raw + (base - raw));
#pragma unroll
			for (int p = 0; p < kNR / 2; p++)
				slab[p * 256 + j] = make_float2(d[2 * p], d[2 * p + 1]);
			cluster_sync();
			const int S = splits, share = (kNR / 2 + S - 1) / S, rank = (int)cluster_rank();
			const int p0 = rank * share, p1 = min(p0 + share, kNR / 2);
			const int row_b = tm * kWgBM + c * 64 + warp * 16 + g, col_b = tn * BN + q * 2;
			for (int p = p0; p < p1; p += kWgClusterRT) { /* kWgClusterRT pairs per round trip: that many S loads in flight */
				float2 v[kWgClusterRT][kWgMaxCluster];
#pragma unroll
				for (int h = 0; h < kWgClusterRT; h++)
#pragma unroll
					for (int r2 = 0; r2 < kWgMaxCluster; r2++)
						if (r2 < S && p + h < p1)
							v[h][r2] = dsmem_ld_f2(base + (uint32_t)((p + h) * 256 + j) * 8, (uint32_t)r2);
#pragma unroll
				for (int h = 0; h < kWgClusterRT; h++) {
					float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
					for (int r2 = 0; r2 < kWgMaxCluster; r2++)
						if (r2 < S) {
							s0 += v[h][r2].x;
							s1 += v[h][r2].y;
						}
					/* pair p + h = registers (2 (p + h), 2 (p + h) + 1): column group (p + h) / 2, row half (p + h) % 2 */
					const int ph = p + h, row = row_b + ((ph & 1) ? 8 : 0), n = col_b + (ph >> 1) * 8;
					if (ph < p1 && row < M && n < N)
						*(__nv_bfloat162 *)(C + (size_t)row * N + n) = __floats2bfloat162_rn(s0, s1);
				}
			}
			cluster_sync();
			continue;
		}

		if (splits > 1) {
			/* this unit's slab, then the last unit of the tile reduces all of them */
			const int j = tid + 128 * c;
			float *slab = part + (size_t)u * (128 * BN);
#pragma unroll
			for (int i = 0; i < kNR; i++)
				__stcg(slab + i * 256 + j, d[i]);
			__threadfence();
			asm volatile("bar.sync 1, 256;" ::: "memory");
			if (spread) {
				/* every unit of the tile is resident (cooperative launch, one unit per CTA): wait for
				 * all slabs, then sum rows [i0, i1) of the slab index space, a 1/splits share */
				if (j == 0) {
					atomicAdd(&cnt[t], 1);
					while (ld_acquire(&cnt[t]) < splits)
						__nanosleep(64);
				}
				asm volatile("bar.sync 1, 256;" ::: "memory");
				__threadfence();
				const int share = ((kNR + splits - 1) / splits + 1) & ~1, i0 = (u % splits) * share;
				const int i1 = min(i0 + share, kNR);
				for (int i = i0; i < i1; i += 2) { /* (i, i + 1): one row, two adjacent columns */
					float v0 = 0.0f, v1 = 0.0f;
					for (int s2 = 0; s2 < splits; s2++) {
						const float *src = part + (size_t)(t * splits + s2) * (128 * BN);
						v0 += __ldcg(src + i * 256 + j);
						v1 += __ldcg(src + (i + 1) * 256 + j);
					}
					const int row = tm * kWgBM + c * 64 + warp * 16 + g + ((i & 2) ? 8 : 0);
					const int n = tn * BN + (i >> 2) * 8 + q * 2;
					if (row < M && n < N)
						*(__nv_bfloat162 *)(C + (size_t)row * N + n) = __floats2bfloat162_rn(v0, v1);
				}
				asm volatile("bar.sync 1, 256;" ::: "memory");
				if (j == 0 && atomicAdd(&cnt[tiles + t], 1) == splits - 1) { /* every unit is past the wait */
					cnt[t] = 0;
					cnt[tiles + t] = 0;
				}
				continue;
			}
			if (j == 0)
				*last_flag = atomicAdd(&cnt[t], 1) == splits - 1;
			asm volatile("bar.sync 1, 256;" ::: "memory");
			const int is_last = *last_flag;
			asm volatile("bar.sync 1, 256;" ::: "memory"); /* the flag is read before the next unit sets it */
			if (!is_last)
				continue;
			__threadfence();
#pragma unroll
			for (int i = 0; i < kNR; i++)
				d[i] = 0.0f;
			for (int s2 = 0; s2 < splits; s2++) {
				const float *src = part + (size_t)(t * splits + s2) * (128 * BN);
#pragma unroll
				for (int i = 0; i < kNR; i++)
					d[i] += __ldcg(src + i * 256 + j);
			}
			if (j == 0)
				cnt[t] = 0;
		}

		const int row0 = tm * kWgBM + c * 64 + warp * 16 + g;
		const int col0 = tn * BN + q * 2;
		wg_store_rows<BN>(C, d, row0, col0, M, N);
	}
	if (kPair)
		cluster_sync(); /* no CTA exits while its peer may still arrive on its barriers */
}

} /* namespace sfgemm */
