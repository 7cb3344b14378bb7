/*
 * gemm_bf16_sm90_wgmma.cuh - the large-M path of gemm_bf16_sm90.cu (-DSF_GEMM_LARGE=2):
 * a persistent, warp-specialized Hopper GEMM. TMA loads A and B tiles into a kWgStages-deep
 * shared-memory ring guarded by mbarriers; two consumer warpgroups run wgmma m64n256k16 (bf16 in, fp32
 * accumulate in registers) on 64-row halves of a 128 x 256 output tile; one producer warpgroup (one
 * thread of it) issues the TMA copies. setmaxnreg moves registers from the producer to the consumers.
 *
 * Tiles: 128 (M) x 256 (N) x 64 (K). A stage holds A [128][64] and B [256][64] bf16 (16 + 32 KB), both
 * K-major with the 128-byte swizzle that TMA writes (rows of 128 bytes, 16-byte chunk c of row r at
 * chunk c ^ (r % 8), 1024-byte atoms of 8 rows) and that the wgmma descriptors below describe
 * (layout 1 = 128B swizzle, stride byte offset 1024 between 8-row atoms; the k16 step inside the
 * 64-wide K block moves the start address by 32 bytes).
 *
 * Barriers: full[s] (1 arrival + the TMA transaction bytes) and empty[s] (one arrival per consumer warp,
 * 8). A running stage counter it gives the slot it % kWgStages and the phase (it / kWgStages) & 1; the
 * producer waits on empty with the opposite parity, so its first pass over a fresh ring does not block.
 * Consumers keep one wgmma batch in flight: after committing stage it they wait for the batch of stage
 * it - 1 and release that slot.
 *
 * Scheduler: CTA b processes work units b, b + gridDim.x, ...; unit u is tile u / splits, K split
 * u % splits (splits > 1 only when the tiles alone leave SMs idle: mid M, see gemm_wgmma_kernel);
 * tile t maps to (tm, tn) through groups of kWgGroupM M-tiles (the CTAs running at once share A and B
 * tiles in L2). Out-of-range rows and K are
 * zero-filled by TMA; stores are bounds-checked. The epilogue converts to bf16 and stores directly from
 * the accumulator registers while the producer already loads the next tile.
 *
 * Requirements (checked by the host): K % 8 == 0, A and B 16-byte aligned, N % 2 == 0.
 */
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "sm90_wgmma_util.cuh"

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

const int kWgBM = 128, kWgBN = 256, kWgBK = 64, kWgStages = 4, kWgGroupM = 8;
const int kWgThreads = 384; /* producer warpgroup + 2 consumer warpgroups */
const int kWgABytes = kWgBM * kWgBK * 2, kWgBBytes = kWgBN * kWgBK * 2;
const int kWgStageBytes = kWgABytes + kWgBBytes;
const int kWgSmemBytes = kWgStages * kWgStageBytes + 1024 /* alignment slack */ + 256 /* barriers */;

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

/* d[128] += A (64 x 16, descriptor da) . B (256 x 16, descriptor db)^T */
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t da, uint64_t db)
{
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %130, 0;\n\t"
		     "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
		     "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
		     "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
		     "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
		     "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
		     "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
		     "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
		     "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
		     "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
		     "}, %128, %129, p, 1, 1, 0, 0;\n\t}"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
		       "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
		       "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
		       "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
		       "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
		       "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
		       "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
		       "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
		       "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
		       "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
		       "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
		       "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
		       "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
		       "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
		       "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
		       "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
		     : "l"(da), "l"(db), "r"(1)
		     : "memory");
}

/*
 * Grid min(tiles * splits, SMs), kWgThreads threads, kWgSmemBytes dynamic shared memory. A work unit
 * u is (tile u / splits, K split u % splits); every split has at least one K block (the host makes
 * sure). With splits > 1, part holds one 128-KB fp32 slab per unit, written in register order
 * (element i of consumer thread j at i * 256 + j: coalesced, and the same (i, j) is the same output
 * in every unit of a tile), and cnt one zeroed counter per tile: the last unit of a tile to finish
 * sums the slabs in split order (deterministic), stores bf16 and resets the counter.
 * spread != 0 (the host launched it cooperatively with one unit per CTA, so all units of a tile are
 * resident): cnt holds 2 * tiles counters; every unit waits until all slabs of its tile are written and
 * then sums a 1/splits share of the tile (still in split order), so the reduction is spread over all
 * the tile's CTAs instead of one CTA reading every slab; the last unit to finish resets both counters.
 */
__global__ void __launch_bounds__(kWgThreads, 1)
	gemm_wgmma_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
			  __nv_bfloat16 *__restrict__ C, int M, int N, int K, int splits, float *part, int *cnt, int spread)
{
	extern __shared__ uint8_t smem_raw[];
	const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
	const uint32_t base = (raw + 1023) & ~1023u;
	const uint32_t bar_full = base + kWgStages * kWgStageBytes, bar_empty = bar_full + 8 * kWgStages;
	const int wg = threadIdx.x / 128;
	const int tiles_m = (M + kWgBM - 1) / kWgBM, tiles_n = (N + kWgBN - 1) / kWgBN;
	const int tiles = tiles_m * tiles_n, kb_count = (K + kWgBK - 1) / kWgBK;
	const int units = tiles * splits, kb_per = (kb_count + splits - 1) / splits;
	volatile int *last_flag = (volatile int *)(smem_raw + (bar_empty + 8 * kWgStages - raw));

	if (threadIdx.x == 0) {
		for (int s = 0; s < kWgStages; s++) {
			mbar_init(bar_full + 8 * s, 1);
			mbar_init(bar_empty + 8 * s, 8);
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();

	if (wg == 0) {
		asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
		if (threadIdx.x != 0)
			return;
		uint32_t it = 0;
		for (int u = blockIdx.x; u < units; u += gridDim.x) {
			const int t = u / splits, kb0 = (u % splits) * kb_per, kb1 = min(kb0 + kb_per, kb_count);
			const int group = t / (kWgGroupM * tiles_n), first_m = group * kWgGroupM;
			const int gsz = min(tiles_m - first_m, kWgGroupM), r = t % (kWgGroupM * tiles_n);
			const int tm = first_m + r % gsz, tn = r / gsz;
			for (int kb = kb0; kb < kb1; kb++, it++) {
				const uint32_t s = it % kWgStages, ph = (it / kWgStages) & 1;
				mbar_wait(bar_empty + 8 * s, ph ^ 1);
				const uint32_t sa = base + s * kWgStageBytes;
				mbar_expect_tx(bar_full + 8 * s, kWgStageBytes);
				tma_load_2d(sa, &tm_a, bar_full + 8 * s, kb * kWgBK, tm * kWgBM);
				tma_load_2d(sa + kWgABytes, &tm_b, bar_full + 8 * s, kb * kWgBK, tn * kWgBN);
			}
		}
		return;
	}

	asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
	const int c = wg - 1; /* rows 64 c .. 64 c + 63 of the tile */
	const int tid = threadIdx.x - 128 * wg, warp = tid >> 5, lane = tid & 31;
	uint32_t it = 0;
	float d[128];
	for (int u = blockIdx.x; u < units; u += gridDim.x) {
		const int t = u / splits, kb0 = (u % splits) * kb_per, kb1 = min(kb0 + kb_per, kb_count);
		const int group = t / (kWgGroupM * tiles_n), first_m = group * kWgGroupM;
		const int gsz = min(tiles_m - first_m, kWgGroupM), r = t % (kWgGroupM * tiles_n);
		const int tm = first_m + r % gsz, tn = r / gsz;
#pragma unroll
		for (int i = 0; i < 128; i++)
			d[i] = 0.0f;
		uint32_t prev = 0;
		for (int kb = kb0; kb < kb1; kb++, it++) {
			const uint32_t s = it % kWgStages, ph = (it / kWgStages) & 1;
			mbar_wait(bar_full + 8 * s, ph);
			const uint32_t sa = base + s * kWgStageBytes + c * (64 * 128), sb = base + s * kWgStageBytes + kWgABytes;
			wgmma_fence();
#pragma unroll
			for (int kk = 0; kk < kWgBK / 16; kk++)
				wgmma_m64n256k16(d, wg_desc(sa + kk * 32), wg_desc(sb + kk * 32));
			wgmma_commit();
			if (kb > kb0) {
				wgmma_wait<1>();
				if (lane == 0)
					mbar_arrive(bar_empty + 8 * prev);
			}
			prev = s;
		}
		wgmma_wait<0>();
		if (kb1 > kb0 && lane == 0)
			mbar_arrive(bar_empty + 8 * prev);

		if (splits > 1) {
			/* this unit's slab, then the last unit of the tile reduces all of them */
			const int j = tid + 128 * c;
			float *slab = part + (size_t)u * (128 * 256);
#pragma unroll
			for (int i = 0; i < 128; i++)
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
				const int share = ((128 + splits - 1) / splits + 1) & ~1, i0 = (u % splits) * share;
				const int i1 = min(i0 + share, 128);
				const int g = lane >> 2, q = lane & 3;
				for (int i = i0; i < i1; i += 2) { /* (i, i + 1): one row, two adjacent columns */
					float v0 = 0.0f, v1 = 0.0f;
					for (int s2 = 0; s2 < splits; s2++) {
						const float *src = part + (size_t)(t * splits + s2) * (128 * 256);
						v0 += __ldcg(src + i * 256 + j);
						v1 += __ldcg(src + (i + 1) * 256 + j);
					}
					const int row = tm * kWgBM + c * 64 + warp * 16 + g + ((i & 2) ? 8 : 0);
					const int n = tn * kWgBN + (i >> 2) * 8 + q * 2;
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
			for (int i = 0; i < 128; i++)
				d[i] = 0.0f;
			for (int s2 = 0; s2 < splits; s2++) {
				const float *src = part + (size_t)(t * splits + s2) * (128 * 256);
#pragma unroll
				for (int i = 0; i < 128; i++)
					d[i] += __ldcg(src + i * 256 + j);
			}
			if (j == 0)
				cnt[t] = 0;
		}

		const int g = lane >> 2, q = lane & 3;
		const int row0 = tm * kWgBM + c * 64 + warp * 16 + g;
		const int col0 = tn * kWgBN + q * 2;
#pragma unroll
		for (int j = 0; j < 32; j++) {
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
}

} /* namespace sfgemm */
