/*
 * silu_mul.cu - dev bench of silu_and_mul (Llama-3.1-8B, I = 14336): out[t, i] = bf16(silu(g) * u), g =
 * x[t, i], u = x[t, I + i], bf16 in and out, float32 math (__expf / __fdividef, as fast.cu). Numbered
 * variants, each one template instance, isolate the structural choices of
 * problems/llama/silu_and_mul_i14336/solutions/fast.cu against what torch.compile's Triton kernel does:
 * cache hints (mb_common.cuh), CTA size, 16-byte vectors per stream per thread, 2-D (rows x column
 * chunks) vs one-shot 1-D flat grid (crossing rows: t = v / ipv) vs persistent grid-stride, and a
 * compile-time I (Triton specializes it) vs a runtime one. Variant 0 is fast.cu's default.
 *
 * Two builds:
 *   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -shared -Xcompiler -fPIC tools/membench/silu_mul.cu -o silu_mul.so
 *     extern "C" API for tools/membench/membench.py (ctypes on torch tensors' data_ptr, timed beside
 *     torch.compile): mb_silu_count, mb_silu_name, mb_silu_run, mb_silu_ref.
 *   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -DMB_MAIN tools/membench/silu_mul.cu -o silu_mul
 *     stand-alone (llm.c style): ./silu_mul [variant|-1 = all] [T ...]; validates every variant against
 *     the CPU reference (3 seeds; 1 above T 1024) then times it (events, L2 flush between calls,
 *     median of 30).
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <stdio.h>
#include "mb_common.cuh"

#define MB_I 14336

/* silu(g) * u per pair, 8 pairs packed as bf16x2 words (the math of fast.cu) */
static __device__ __forceinline__ uint4 mb_silu_vec(uint4 g, uint4 u)
{
	const uint32_t gw[4] = {g.x, g.y, g.z, g.w}, uw[4] = {u.x, u.y, u.z, u.w};
	uint32_t ow[4];
#pragma unroll
	for (int j = 0; j < 4; j++) {
		__nv_bfloat162 gb = *reinterpret_cast<const __nv_bfloat162 *>(&gw[j]);
		__nv_bfloat162 ub = *reinterpret_cast<const __nv_bfloat162 *>(&uw[j]);
		const float2 gf = __bfloat1622float2(gb), uf = __bfloat1622float2(ub);
		__nv_bfloat162 o = __floats2bfloat162_rn(__fdividef(gf.x, 1.0f + __expf(-gf.x)) * uf.x,
							 __fdividef(gf.y, 1.0f + __expf(-gf.y)) * uf.y);
		ow[j] = *reinterpret_cast<uint32_t *>(&o);
	}
	return make_uint4(ow[0], ow[1], ow[2], ow[3]);
}

/* 2-D grid (fast.cu's structure): x = chunks of TH * VPT vectors of a row, y = rows (grid-stride) */
template <int TH, int VPT, int H>
__global__ void __launch_bounds__(TH) mb_silu_2d(const uint4 *__restrict__ x, uint4 *__restrict__ out, int64_t T,
							 int ipv)
{
	const uint64_t pol = H == MB_H_EF ? mb_policy_ef() : 0;
	const int c0 = blockIdx.x * (TH * VPT) + threadIdx.x;
	for (int64_t t = blockIdx.y; t < T; t += gridDim.y) {
		const uint4 *row = x + t * 2 * ipv;
		uint4 *orow = out + t * ipv;
		uint4 g[VPT], u[VPT];
#pragma unroll
		for (int r = 0; r < VPT; r++) {
			const int c = c0 + r * TH;
			if (c < ipv) {
				g[r] = mb_ld<H>(row + c, pol);
				u[r] = mb_ld<H>(row + ipv + c, pol);
			}
		}
#pragma unroll
		for (int r = 0; r < VPT; r++) {
			const int c = c0 + r * TH;
			if (c < ipv)
				mb_st<H>(orow + c, mb_silu_vec(g[r], u[r]), pol);
		}
	}
}

/* 1-D grid over the n = T * ipv output vectors (n < 2^31): v -> row t = v / ipv, column c; CI > 0
 * makes ipv a compile-time constant (Triton specializes I: the division becomes a multiply).
 * PERSIST: the grid (gridDim.x blocks) strides over the vectors; else one block per TH * VPT. */
template <int TH, int VPT, int H, int CI, int PERSIST>
__global__ void __launch_bounds__(TH) mb_silu_flat(const uint4 *__restrict__ x, uint4 *__restrict__ out,
							   uint32_t n, uint32_t ipv_rt)
{
	const uint64_t pol = H == MB_H_EF ? mb_policy_ef() : 0;
	const uint32_t ipv = CI > 0 ? (uint32_t)CI : ipv_rt;
	for (uint32_t base = blockIdx.x * (uint32_t)(TH * VPT); base < n;
	     base += PERSIST ? gridDim.x * (uint32_t)(TH * VPT) : n) {
		uint4 g[VPT], u[VPT];
#pragma unroll
		for (int r = 0; r < VPT; r++) {
			const uint32_t v = base + threadIdx.x + r * TH;
			if (v < n) {
				const uint32_t t = v / ipv, c = v - t * ipv;
				const uint4 *row = x + (size_t)t * 2 * ipv;
				g[r] = mb_ld<H>(row + c, pol);
				u[r] = mb_ld<H>(row + ipv + c, pol);
			}
		}
#pragma unroll
		for (int r = 0; r < VPT; r++) {
			const uint32_t v = base + threadIdx.x + r * TH;
			if (v < n)
				mb_st<H>(out + v, mb_silu_vec(g[r], u[r]), pol);
		}
	}
}

/* The variants: id, name, CTA threads, vectors per stream per thread, hint, grid, compile-time I,
 * blocks per SM (persistent grids). Variant 0 = fast.cu's version-1 default (THREADS 256, UNROLL 2, .cs);
 * variant 14 its default since session 7 (the name says "(fast.cu"). */
#define MB_SILU_VARIANTS(X)                                                              \
	X(0, "2d_t256_v2_cs (v1 default)", 256, 2, MB_H_CS, MB_G_2D, 0, 0)               \
	X(1, "2d_t256_v2_none", 256, 2, MB_H_NONE, MB_G_2D, 0, 0)                        \
	X(2, "2d_t256_v2_nc", 256, 2, MB_H_NC, MB_G_2D, 0, 0)                            \
	X(3, "2d_t256_v2_evict_first", 256, 2, MB_H_EF, MB_G_2D, 0, 0)                   \
	X(4, "2d_t256_v2_cs_ld_only", 256, 2, MB_H_CSLD, MB_G_2D, 0, 0)                  \
	X(5, "2d_t256_v2_cs_st_only", 256, 2, MB_H_CSST, MB_G_2D, 0, 0)                  \
	X(6, "2d_t128_v1_none", 128, 1, MB_H_NONE, MB_G_2D, 0, 0)                        \
	X(7, "2d_t128_v1_cs", 128, 1, MB_H_CS, MB_G_2D, 0, 0)                            \
	X(8, "2d_t256_v1_none", 256, 1, MB_H_NONE, MB_G_2D, 0, 0)                        \
	X(9, "2d_t512_v1_none", 512, 1, MB_H_NONE, MB_G_2D, 0, 0)                        \
	X(10, "2d_t128_v2_none", 128, 2, MB_H_NONE, MB_G_2D, 0, 0)                       \
	X(11, "2d_t128_v4_none", 128, 4, MB_H_NONE, MB_G_2D, 0, 0)                       \
	X(12, "2d_t256_v4_none", 256, 4, MB_H_NONE, MB_G_2D, 0, 0)                       \
	X(13, "2d_t512_v2_none", 512, 2, MB_H_NONE, MB_G_2D, 0, 0)                       \
	X(14, "flat_t128_v1_none (fast.cu, triton)", 128, 1, MB_H_NONE, MB_G_FLAT, 0, 0) \
	X(15, "flat_t128_v1_none_constI", 128, 1, MB_H_NONE, MB_G_FLAT, MB_I / 8, 0)     \
	X(16, "flat_t128_v1_cs", 128, 1, MB_H_CS, MB_G_FLAT, 0, 0)                       \
	X(17, "flat_t128_v1_nc", 128, 1, MB_H_NC, MB_G_FLAT, 0, 0)                       \
	X(18, "flat_t128_v1_evict_first", 128, 1, MB_H_EF, MB_G_FLAT, 0, 0)              \
	X(19, "flat_t128_v1_nc256", 128, 1, MB_H_NC256, MB_G_FLAT, 0, 0)                 \
	X(20, "flat_t256_v1_none", 256, 1, MB_H_NONE, MB_G_FLAT, 0, 0)                   \
	X(21, "flat_t512_v1_none", 512, 1, MB_H_NONE, MB_G_FLAT, 0, 0)                   \
	X(22, "flat_t128_v2_none", 128, 2, MB_H_NONE, MB_G_FLAT, 0, 0)                   \
	X(23, "flat_t128_v4_none", 128, 4, MB_H_NONE, MB_G_FLAT, 0, 0)                   \
	X(24, "flat_t64_v1_none", 64, 1, MB_H_NONE, MB_G_FLAT, 0, 0)                     \
	X(25, "flat_t256_v2_cs", 256, 2, MB_H_CS, MB_G_FLAT, 0, 0)                       \
	X(26, "persist_t256_v1_none_bps8", 256, 1, MB_H_NONE, MB_G_PERSIST, 0, 8)        \
	X(27, "persist_t512_v2_none_bps4", 512, 2, MB_H_NONE, MB_G_PERSIST, 0, 4)        \
	X(28, "persist_t256_v2_cs_bps4", 256, 2, MB_H_CS, MB_G_PERSIST, 0, 4)            \
	X(29, "persist_t128_v4_none_bps16", 128, 4, MB_H_NONE, MB_G_PERSIST, 0, 16)      \
	X(30, "flat_t128_v1_l1_evict_last", 128, 1, MB_H_L1EL, MB_G_FLAT, 0, 0)

#define MB_NAME(id, name, th, vpt, h, g, ci, bps) name,
static const char *const mb_silu_names[] = {MB_SILU_VARIANTS(MB_NAME)};
#undef MB_NAME
#define MB_NSILU ((int)(sizeof mb_silu_names / sizeof mb_silu_names[0]))

/* Launches one variant's kernel (a template so that only its own kernel is instantiated): 0 ok, -1 a
 * shape it cannot take (a flat grid past 2^31 vectors, a constant-I variant at another I). */
template <int TH, int VPT, int H, int G, int CI, int BPS>
static int mb_silu_launch_one(const uint4 *xv, uint4 *ov, int64_t T, int64_t ipv, cudaStream_t st)
{
	if constexpr (G == MB_G_2D) {
		const dim3 grid((unsigned)((ipv + TH * VPT - 1) / (TH * VPT)), (unsigned)(T < 65535 ? T : 65535));
		mb_silu_2d<TH, VPT, H><<<grid, TH, 0, st>>>(xv, ov, T, (int)ipv);
	} else {
		const int64_t n = T * ipv;
		if (n > 0x7fffffff || (CI > 0 && CI != ipv))
			return -1;
		int64_t blocks = (n + TH * VPT - 1) / (TH * VPT);
		if (G == MB_G_PERSIST && blocks > (int64_t)mb_sms() * BPS)
			blocks = (int64_t)mb_sms() * BPS;
		mb_silu_flat<TH, VPT, H, CI, G == MB_G_PERSIST><<<(unsigned)blocks, TH, 0, st>>>(xv, ov, (uint32_t)n,
											     (uint32_t)ipv);
	}
	return 0;
}

/* Launches variant v on stream st: 0 ok, -1 unknown variant or a shape it cannot take (I % 8 != 0,
 * see mb_silu_launch_one), -2 launch error. */
static int mb_silu_launch(int v, const void *x, void *out, int64_t T, int64_t I, cudaStream_t st)
{
	if (T <= 0 || I <= 0 || I % 8 || I / 8 > 0x3fffffff)
		return -1;
	const uint4 *xv = (const uint4 *)x;
	uint4 *ov = (uint4 *)out;
	int rc;
	switch (v) {
#define MB_CASE(id, name, th, vpt, h, g, ci, bps)                                         \
	case id:                                                                          \
		rc = mb_silu_launch_one<th, vpt, h, g, ci, bps>(xv, ov, T, I / 8, st); \
		break;
		MB_SILU_VARIANTS(MB_CASE)
#undef MB_CASE
	default:
		return -1;
	}
	if (rc)
		return rc;
	return cudaGetLastError() == cudaSuccess ? 0 : -2;
}

extern "C" {
/* number of variants */
int mb_silu_count(void)
{
	return MB_NSILU;
}
/* name of variant v ("" when out of range) */
const char *mb_silu_name(int v)
{
	return v >= 0 && v < MB_NSILU ? mb_silu_names[v] : "";
}
/* runs variant v on device pointers x [T, 2I] and out [T, I] (bf16) on stream st; see mb_silu_launch */
int mb_silu_run(int v, const void *x, void *out, int64_t T, int64_t I, void *st)
{
	return mb_silu_launch(v, x, out, T, I, (cudaStream_t)st);
}
/* CPU reference on host bf16 bits: x [rows, 2I] -> out [rows, I] */
void mb_silu_ref_host(const uint16_t *x, uint16_t *out, int64_t rows, int64_t I)
{
	mb_silu_ref(x, out, rows, I);
}
}

#ifdef MB_MAIN
typedef struct {
	int v;
	const void *x;
	void *out;
	int64_t T;
} mb_silu_arg;

static void mb_silu_call(void *p)
{
	const mb_silu_arg *a = (const mb_silu_arg *)p;
	mb_silu_launch(a->v, a->x, a->out, a->T, MB_I, 0);
}

/* ./silu_mul [variant|-1] [T ...]: validate (all rows and 3 seeds up to T 1024, else the first and
 * last 64 rows of one seed) then time each selected variant at each T; prints "variant T us TB/s"
 * rows. */
int main(int argc, char **argv)
{
	const int only = argc > 1 ? atoi(argv[1]) : -1;
	int64_t Ts[16] = {1, 16, 256, 1024, 16384};
	int nT = 5;
	if (argc > 2) {
		nT = 0;
		for (int k = 2; k < argc && nT < 16; k++)
			Ts[nT++] = atoll(argv[k]);
	}
	const int64_t I = MB_I;
	for (int ti = 0; ti < nT; ti++) {
		const int64_t T = Ts[ti], nin = T * 2 * I, nout = T * I;
		uint16_t *hx = (uint16_t *)malloc((size_t)nin * 2), *hout = (uint16_t *)malloc((size_t)nout * 2);
		uint16_t *href = (uint16_t *)malloc((size_t)nout * 2);
		void *dx, *dout;
		MB_CHECK(cudaMalloc(&dx, (size_t)nin * 2));
		MB_CHECK(cudaMalloc(&dout, (size_t)nout * 2));
		const int64_t rows_chk = T <= 1024 ? T : 64;
		for (int v = 0; v < MB_NSILU; v++) {
			if (only >= 0 && v != only)
				continue;
			int ok = 1;
			const uint64_t seeds = T <= 1024 ? 3 : 1; /* the host fill of 16384 rows takes seconds */
			for (uint64_t seed = 1; seed <= seeds && ok; seed++) {
				mb_fill_normal(hx, nin, seed * 7919 + (uint64_t)T, 1.0 + (double)seed);
				MB_CHECK(cudaMemcpy(dx, hx, (size_t)nin * 2, cudaMemcpyHostToDevice));
				MB_CHECK(cudaMemset(dout, 0xff, (size_t)nout * 2)); /* NaN: an unwritten output fails */
				if (mb_silu_launch(v, dx, dout, T, I, 0)) {
					printf("%-36s T=%-6lld skipped (shape not supported)\n", mb_silu_names[v], (long long)T);
					ok = -1;
					break;
				}
				MB_CHECK(cudaDeviceSynchronize());
				MB_CHECK(cudaMemcpy(hout, dout, (size_t)nout * 2, cudaMemcpyDeviceToHost));
				for (int part = 0; part < (T <= 1024 ? 1 : 2); part++) {
					const int64_t r0 = part ? T - rows_chk : 0;
					int64_t first;
					mb_silu_ref(hx + r0 * 2 * I, href, rows_chk, I);
					const int64_t bad = mb_mismatches(hout + r0 * I, href, rows_chk * I, 1e-5, 1e-2, &first);
					if (bad) {
						printf("FAIL %s T=%lld seed %llu: %lld mismatches, first at %lld\n", mb_silu_names[v],
						       (long long)T, (unsigned long long)seed, (long long)bad,
						       (long long)(r0 * I + first));
						ok = 0;
					}
				}
			}
			if (ok != 1)
				continue;
			mb_silu_arg a = {v, dx, dout, T};
			const float us = mb_time_us(mb_silu_call, &a, 30);
			printf("%-36s T=%-6lld %10.2f us %6.3f TB/s\n", mb_silu_names[v], (long long)T, us,
			       (double)(nin + nout) * 2 / us * 1e-6);
		}
		cudaFree(dx);
		cudaFree(dout);
		free(hx);
		free(hout);
		free(href);
	}
	return 0;
}
#endif
