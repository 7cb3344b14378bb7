/*
 * gemm_bf16_sm90_mma.cuh - the safe large-M path of gemm_bf16_sm90.cu: a classic Ampere-style GEMM
 * (cp.async multi-stage ring, ldmatrix, mma.sync m16n8k16 bf16 -> fp32). Slower than the wgmma path
 * but simple; kept so that a correct mid/large-M path exists even if the wgmma kernel misbehaves
 * (-DSF_GEMM_LARGE=1, the default until the wgmma kernel has passed tools/gpu_gemm.sh on an H200).
 *
 * Block tile 128 x 128 x 32, 256 threads (8 warps as 2 along M x 4 along N, warp tile 64 x 32),
 * kMmaStages stages of shared memory. A tile row is 32 bf16 = 64 bytes = four 16-byte chunks; chunk c
 * of row r is stored at chunk c ^ ((r >> 1) & 3), which makes the 8 rows an ldmatrix phase reads land
 * in 8 different bank groups. Out-of-range rows and K chunks are zero-filled by cp.async (src-size 0).
 *
 * Requirements (checked by the host): K % 8 == 0, A and B 16-byte aligned, N % 2 == 0.
 */
#pragma once
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

namespace sfgemm {

const int kMmaBM = 128, kMmaBN = 128, kMmaBK = 32, kMmaStages = 4, kMmaThreads = 256;
const int kMmaStageBytes = (kMmaBM + kMmaBN) * kMmaBK * 2;
const int kMmaSmemBytes = kMmaStages * kMmaStageBytes;

__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
	return (uint32_t)__cvta_generic_to_shared(p);
}

/* 16-byte cp.async, zero-filling when !ok (src must still be a valid address). */
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, bool ok)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(ok ? 16 : 0));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
		     : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
		     : "r"(addr));
}

/* Byte offset of (row, 16-byte chunk) in a swizzled [rows][32] bf16 tile. */
__device__ __forceinline__ uint32_t mma_tile_off(int row, int chunk)
{
	return (uint32_t)(row * 64 + ((chunk ^ ((row >> 1) & 3)) << 4));
}

/* Grid (ceil(N / 128), ceil(M / 128)), kMmaThreads threads, kMmaSmemBytes dynamic shared memory. */
__global__ void __launch_bounds__(kMmaThreads) gemm_mma_kernel(const __nv_bfloat16 *__restrict__ A,
							       const __nv_bfloat16 *__restrict__ B,
							       __nv_bfloat16 *__restrict__ C, int M, int N, int K)
{
	extern __shared__ __align__(128) uint8_t smem[];
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int wm = warp >> 2, wn = warp & 3; /* warp tile origin: (64 wm, 32 wn) */
	const int m0 = blockIdx.y * kMmaBM, n0 = blockIdx.x * kMmaBN;
	const int kt = (K + kMmaBK - 1) / kMmaBK;
	const uint32_t sbase = smem_u32(smem);

	/* loader: A and B tiles are 128 rows x 4 chunks = 512 chunks each; thread loads 2 of each */
	auto load_stage = [&](int stage, int kb) {
		const uint32_t sa = sbase + stage * kMmaStageBytes, sb = sa + kMmaBM * kMmaBK * 2;
#pragma unroll
		for (int i = 0; i < 2; i++) {
			const int idx = tid + i * kMmaThreads, row = idx >> 2, chunk = idx & 3;
			const int k = kb * kMmaBK + chunk * 8;
			const int am = m0 + row, bn = n0 + row;
			const bool aok = am < M && k < K, bok = bn < N && k < K;
			cp_async16(sa + mma_tile_off(row, chunk), A + (aok ? (size_t)am * K + k : 0), aok);
			cp_async16(sb + mma_tile_off(row, chunk), B + (bok ? (size_t)bn * K + k : 0), bok);
		}
	};

	float acc[4][4][4];
#pragma unroll
	for (int i = 0; i < 4; i++)
#pragma unroll
		for (int j = 0; j < 4; j++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				acc[i][j][e] = 0.0f;

#pragma unroll
	for (int s = 0; s < kMmaStages - 1; s++) {
		if (s < kt)
			load_stage(s, s);
		asm volatile("cp.async.commit_group;");
	}
	for (int kb = 0; kb < kt; kb++) {
		asm volatile("cp.async.wait_group %0;" ::"n"(kMmaStages - 2));
		__syncthreads(); /* stage kb landed for everyone; stage kb - 1 is free to overwrite */
		const int nk = kb + kMmaStages - 1;
		if (nk < kt)
			load_stage(nk % kMmaStages, nk);
		asm volatile("cp.async.commit_group;");
		const uint32_t sa = sbase + (kb % kMmaStages) * kMmaStageBytes, sb = sa + kMmaBM * kMmaBK * 2;
#pragma unroll
		for (int ks = 0; ks < kMmaBK / 16; ks++) {
			uint32_t af[4][4], bfr[4][2];
#pragma unroll
			for (int i = 0; i < 4; i++) {
				const int row = wm * 64 + i * 16 + (lane & 15), chunk = ks * 2 + (lane >> 4);
				ldmatrix_x4(sa + mma_tile_off(row, chunk), af[i][0], af[i][1], af[i][2], af[i][3]);
			}
#pragma unroll
			for (int jj = 0; jj < 2; jj++) {
				const int mat = lane >> 3;
				const int row = wn * 32 + jj * 16 + (mat >> 1) * 8 + (lane & 7), chunk = ks * 2 + (mat & 1);
				ldmatrix_x4(sb + mma_tile_off(row, chunk), bfr[jj * 2][0], bfr[jj * 2][1], bfr[jj * 2 + 1][0],
					    bfr[jj * 2 + 1][1]);
			}
#pragma unroll
			for (int i = 0; i < 4; i++)
#pragma unroll
				for (int j = 0; j < 4; j++)
					mma_16816(acc[i][j], af[i][0], af[i][1], af[i][2], af[i][3], bfr[j][0], bfr[j][1]);
		}
	}
	asm volatile("cp.async.wait_group 0;");

	const int g = lane >> 2, q = lane & 3;
#pragma unroll
	for (int i = 0; i < 4; i++)
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const int n = n0 + wn * 32 + j * 8 + q * 2;
			const int m = m0 + wm * 64 + i * 16 + g;
			if (n < N) {
				if (m < M)
					*(__nv_bfloat162 *)(C + (size_t)m * N + n) = __floats2bfloat162_rn(acc[i][j][0], acc[i][j][1]);
				if (m + 8 < M)
					*(__nv_bfloat162 *)(C + (size_t)(m + 8) * N + n) =
						__floats2bfloat162_rn(acc[i][j][2], acc[i][j][3]);
			}
		}
}

} /* namespace sfgemm */
