/*
 * copy.cu - dev bench of a plain 16-byte-vector copy y = x: the same structural variants as
 * silu_mul.cu (cache hints, CTA size, vectors per thread, one-shot 1-D grid vs persistent
 * grid-stride), to tell what the copy ceiling (tools/calibration/copy) loses against torch's copy
 * (cudaMemcpy, 4.3 TB/s) and a Triton pointwise kernel. Variant 0 is the calibration copy's default
 * (2 vectors per thread, 256 threads, one block per chunk, ld.nc.L1::no_allocate, st.cs).
 *
 * Two builds (as silu_mul.cu):
 *   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -shared -Xcompiler -fPIC tools/membench/copy.cu -o copy.so
 *     extern "C": mb_copy_count, mb_copy_name, mb_copy_run (n16 = number of 16-byte vectors).
 *   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -DMB_MAIN tools/membench/copy.cu -o copy
 *     ./copy [variant|-1] [MiB ...]: validates each variant byte for byte (3 seeds; 1 above 64 MiB),
 *     then times it (events, L2 flush between calls, median of 30).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include "mb_common.cuh"

/* 1-D grid over n 16-byte vectors: one block per TH * VPT vectors, or (PERSIST) gridDim.x blocks
 * striding; all VPT loads of a thread are issued before its first store. */
template <int TH, int VPT, int H, int PERSIST>
__global__ void __launch_bounds__(TH) mb_copy_k(const uint4 *__restrict__ x, uint4 *__restrict__ y, uint32_t n)
{
	const uint64_t pol = H == MB_H_EF ? mb_policy_ef() : 0;
	for (uint32_t base = blockIdx.x * (uint32_t)(TH * VPT); base < n;
	     base += PERSIST ? gridDim.x * (uint32_t)(TH * VPT) : n) {
		uint4 v[VPT];
#pragma unroll
		for (int r = 0; r < VPT; r++) {
			const uint32_t k = base + threadIdx.x + r * TH;
			if (k < n)
				v[r] = mb_ld<H>(x + k, pol);
		}
#pragma unroll
		for (int r = 0; r < VPT; r++) {
			const uint32_t k = base + threadIdx.x + r * TH;
			if (k < n)
				mb_st<H>(y + k, v[r], pol);
		}
	}
}

/* id, name, threads, vectors per thread, hint, grid (MB_G_FLAT / MB_G_PERSIST), blocks per SM */
#define MB_COPY_VARIANTS(X)                                                         \
	X(0, "flat_t256_v2_nc_cs (v2 default)", 256, 2, MB_H_NCCS, MB_G_FLAT, 0)    \
	X(1, "flat_t128_v1_none (copy.cu >= 24M)", 128, 1, MB_H_NONE, MB_G_FLAT, 0) \
	X(2, "flat_t128_v1_cs", 128, 1, MB_H_CS, MB_G_FLAT, 0)                      \
	X(3, "flat_t128_v1_nc", 128, 1, MB_H_NC, MB_G_FLAT, 0)                      \
	X(4, "flat_t128_v1_evict_first", 128, 1, MB_H_EF, MB_G_FLAT, 0)             \
	X(5, "flat_t128_v1_cs_ld_only", 128, 1, MB_H_CSLD, MB_G_FLAT, 0)            \
	X(6, "flat_t128_v1_cs_st_only", 128, 1, MB_H_CSST, MB_G_FLAT, 0)            \
	X(7, "flat_t128_v1_nc256", 128, 1, MB_H_NC256, MB_G_FLAT, 0)                \
	X(8, "flat_t256_v1_none", 256, 1, MB_H_NONE, MB_G_FLAT, 0)                  \
	X(9, "flat_t512_v1_none", 512, 1, MB_H_NONE, MB_G_FLAT, 0)                  \
	X(10, "flat_t128_v2_none", 128, 2, MB_H_NONE, MB_G_FLAT, 0)                 \
	X(11, "flat_t128_v4_none (copy.cu < 24M)", 128, 4, MB_H_NONE, MB_G_FLAT, 0) \
	X(12, "flat_t256_v2_none", 256, 2, MB_H_NONE, MB_G_FLAT, 0)                 \
	X(13, "flat_t256_v4_none", 256, 4, MB_H_NONE, MB_G_FLAT, 0)                 \
	X(14, "persist_t256_v1_none_bps8", 256, 1, MB_H_NONE, MB_G_PERSIST, 8)      \
	X(15, "persist_t512_v4_none_bps4", 512, 4, MB_H_NONE, MB_G_PERSIST, 4)      \
	X(16, "persist_t512_v4_nc_cs_bps4", 512, 4, MB_H_NCCS, MB_G_PERSIST, 4)     \
	X(17, "flat_t128_v1_l1_evict_last", 128, 1, MB_H_L1EL, MB_G_FLAT, 0)

#define MB_NAME(id, name, th, vpt, h, g, bps) name,
static const char *const mb_copy_names[] = {MB_COPY_VARIANTS(MB_NAME)};
#undef MB_NAME
#define MB_NCOPY ((int)(sizeof mb_copy_names / sizeof mb_copy_names[0]))

/* Launches variant v over n16 16-byte vectors on stream st: 0 ok, -1 unknown variant or n16 outside
 * 1 .. 2^31 - 1, -2 launch error. */
static int mb_copy_launch(int v, const void *x, void *y, int64_t n16, cudaStream_t st)
{
	if (n16 <= 0 || n16 > 0x7fffffff)
		return -1;
	switch (v) {
#define MB_CASE(id, name, th, vpt, h, g, bps)                                                           \
	case id: {                                                                                      \
		int64_t blocks = (n16 + th * vpt - 1) / (th * vpt);                                     \
		if (g == MB_G_PERSIST && blocks > (int64_t)mb_sms() * bps)                              \
			blocks = (int64_t)mb_sms() * bps;                                               \
		mb_copy_k<th, vpt, h, g == MB_G_PERSIST>                                                \
			<<<(unsigned)blocks, th, 0, st>>>((const uint4 *)x, (uint4 *)y, (uint32_t)n16); \
		break;                                                                                  \
	}
		MB_COPY_VARIANTS(MB_CASE)
#undef MB_CASE
	default:
		return -1;
	}
	return cudaGetLastError() == cudaSuccess ? 0 : -2;
}

extern "C" {
/* number of variants */
int mb_copy_count(void)
{
	return MB_NCOPY;
}
/* name of variant v ("" when out of range) */
const char *mb_copy_name(int v)
{
	return v >= 0 && v < MB_NCOPY ? mb_copy_names[v] : "";
}
/* copies n16 16-byte vectors from device pointer x to y with variant v on stream st */
int mb_copy_run(int v, const void *x, void *y, int64_t n16, void *st)
{
	return mb_copy_launch(v, x, y, n16, (cudaStream_t)st);
}
}

#ifdef MB_MAIN
typedef struct {
	int v;
	const void *x;
	void *y;
	int64_t n16;
} mb_copy_arg;

static void mb_copy_call(void *p)
{
	const mb_copy_arg *a = (const mb_copy_arg *)p;
	mb_copy_launch(a->v, a->x, a->y, a->n16, 0);
}

/* ./copy [variant|-1] [MiB ...] (default: the bytes silu_mul moves at T = 1, 16, 256, 1024, 16384,
 * half read, half written): validate, time; prints "variant MiB us TB/s" rows. */
int main(int argc, char **argv)
{
	const int only = argc > 1 ? atoi(argv[1]) : -1;
	int64_t bytes[16] = {43008, 43008 * 16, 43008 * 256, 43008 * 1024, (int64_t)43008 * 16384};
	int nb = 5;
	if (argc > 2) {
		nb = 0;
		for (int k = 2; k < argc && nb < 16; k++)
			bytes[nb++] = (int64_t)(atof(argv[k]) * 1048576.0) / 16 * 16;
	}
	for (int bi = 0; bi < nb; bi++) {
		const int64_t nb16 = bytes[bi] / 16;
		uint16_t *hx = (uint16_t *)malloc((size_t)bytes[bi]), *hy = (uint16_t *)malloc((size_t)bytes[bi]);
		void *dx, *dy;
		MB_CHECK(cudaMalloc(&dx, (size_t)bytes[bi]));
		MB_CHECK(cudaMalloc(&dy, (size_t)bytes[bi]));
		for (int v = 0; v < MB_NCOPY; v++) {
			if (only >= 0 && v != only)
				continue;
			int ok = 1;
			const uint64_t seeds = bytes[bi] <= (64 << 20) ? 3 : 1; /* host fill: seconds at 700 MB */
			for (uint64_t seed = 1; seed <= seeds && ok; seed++) {
				mb_fill_normal(hx, bytes[bi] / 2, seed * 104729 + (uint64_t)bi, 1.0);
				MB_CHECK(cudaMemcpy(dx, hx, (size_t)bytes[bi], cudaMemcpyHostToDevice));
				MB_CHECK(cudaMemset(dy, 0, (size_t)bytes[bi]));
				if (mb_copy_launch(v, dx, dy, nb16, 0)) {
					printf("FAIL %s: launch\n", mb_copy_names[v]);
					ok = 0;
					break;
				}
				MB_CHECK(cudaMemcpy(hy, dy, (size_t)bytes[bi], cudaMemcpyDeviceToHost));
				if (memcmp(hx, hy, (size_t)bytes[bi])) {
					printf("FAIL %s %lld bytes seed %llu: output differs\n", mb_copy_names[v],
					       (long long)bytes[bi], (unsigned long long)seed);
					ok = 0;
				}
			}
			if (!ok)
				continue;
			mb_copy_arg a = {v, dx, dy, nb16};
			const float us = mb_time_us(mb_copy_call, &a, 30);
			printf("%-36s %10.3f MiB %10.2f us %6.3f TB/s\n", mb_copy_names[v], bytes[bi] / 1048576.0, us,
			       2.0 * (double)bytes[bi] / us * 1e-6);
		}
		cudaFree(dx);
		cudaFree(dy);
		free(hx);
		free(hy);
	}
	return 0;
}
#endif
