/*
 * fast.cu - bandwidth-bound solution of silu_and_mul_i14336: out[t, i] = silu(x[t, i]) * x[t, I + i],
 * silu(g) = g / (1 + exp(-g)) in float32 (__expf, __fdividef), one rounding to bf16.
 *
 * One pass: every thread owns UNROLL 16-byte vectors (8 bf16) of gate and the matching vectors of up
 * (all loads issued before any math, so 2*UNROLL*16 bytes are in flight per thread), and writes one
 * 16-byte vector of out per pair. 2D grid (columns x tokens): no integer division. Loads are
 * streaming (ld.global.cs: read once), stores too.
 * Vector path: I % 8 == 0 and x, out 16-byte aligned (every row then is); anything else takes the
 * scalar kernel (one element per thread), correct for any shape.
 */
// solforge-tune: UNROLL=1,2,4 THREADS=128,256,512
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"

#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef THREADS
#define THREADS 256
#endif

/* silu(g) = g / (1 + exp(-g)) with the MUFU-based __expf and __fdividef (a few ulp: the tolerance is
 * rtol 1e-2, atol 1e-5 on outputs ~1); for g < -88.7 exp(-g) = inf and __fdividef(g, inf) = g * 0 = -0,
 * as the oracle's g / inf. The IEEE expf and division cost ~25 instructions per element, enough to
 * make the issue rate, not HBM, the limit. */
static __device__ __forceinline__ float sm_silu(float g)
{
	return __fdividef(g, 1.0f + __expf(-g));
}

/* 8 gate/up pairs packed as bf16x2 words -> 8 outputs */
static __device__ __forceinline__ uint4 sm_vec(uint4 g, uint4 u)
{
	const uint32_t gw[4] = {g.x, g.y, g.z, g.w}, uw[4] = {u.x, u.y, u.z, u.w};
	uint32_t ow[4];
#pragma unroll
	for (int j = 0; j < 4; j++) {
		__nv_bfloat162 gb = *reinterpret_cast<const __nv_bfloat162 *>(&gw[j]);
		__nv_bfloat162 ub = *reinterpret_cast<const __nv_bfloat162 *>(&uw[j]);
		float2 gf = __bfloat1622float2(gb), uf = __bfloat1622float2(ub);
		__nv_bfloat162 o = __floats2bfloat162_rn(sm_silu(gf.x) * uf.x, sm_silu(gf.y) * uf.y);
		ow[j] = *reinterpret_cast<uint32_t *>(&o);
	}
	return make_uint4(ow[0], ow[1], ow[2], ow[3]);
}

/* grid: x covers a row's ipv = I / 8 vectors (THREADS * UNROLL per CTA), y the tokens (grid-stride
 * when T > 65535); no integer division anywhere */
static __global__ void __launch_bounds__(THREADS) sm_vec_kernel(const uint4 *__restrict__ x, uint4 *__restrict__ out,
								int64_t T, int ipv)
{
	const int c0 = blockIdx.x * (THREADS * UNROLL) + threadIdx.x;
	for (int64_t t = blockIdx.y; t < T; t += gridDim.y) {
		const uint4 *row = x + t * 2 * ipv;
		uint4 *orow = out + t * ipv;
		uint4 g[UNROLL], u[UNROLL];
#pragma unroll
		for (int r = 0; r < UNROLL; r++) {
			const int c = c0 + r * THREADS;
			if (c < ipv) {
				g[r] = __ldcs(row + c);
				u[r] = __ldcs(row + ipv + c);
			}
		}
#pragma unroll
		for (int r = 0; r < UNROLL; r++) {
			const int c = c0 + r * THREADS;
			if (c < ipv)
				__stcs(orow + c, sm_vec(g[r], u[r]));
		}
	}
}

static __global__ void sm_scalar_kernel(const __nv_bfloat16 *__restrict__ x, __nv_bfloat16 *__restrict__ out,
					int64_t n, int64_t I)
{
	for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
		const int64_t t = e / I, i = e - t * I;
		const float g = __bfloat162float(x[t * 2 * I + i]), u = __bfloat162float(x[t * 2 * I + I + i]);
		out[e] = __float2bfloat16_rn(sm_silu(g) * u);
	}
}

static int sm_is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

/* The entry point: checks dtypes and shapes (SF_ERR_UNSUPPORTED for anything the definition does not
 * allow), takes the vector kernel when alignment and shape permit, else the scalar one, and launches
 * on call->stream; SF_ERR_CUDA if the launch failed. */
SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 1 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *o = &call->outputs[0];
	if (x->ndim != 2 || o->ndim != 2 || !sm_is_bf16(x) || !sm_is_bf16(o))
		return SF_ERR_UNSUPPORTED;
	const int64_t T = x->shape[0], I = o->shape[1];
	if (x->shape[1] != 2 * I || o->shape[0] != T)
		return SF_ERR_UNSUPPORTED;
	if (T == 0 || I == 0)
		return SF_OK;
	cudaStream_t st = (cudaStream_t)call->stream;
	if (I % 8 == 0 && I / 8 <= 0x3fffffff && ((uintptr_t)x->data % 16) == 0 && ((uintptr_t)o->data % 16) == 0) {
		const int64_t ipv = I / 8;
		const dim3 grid((unsigned)((ipv + THREADS * UNROLL - 1) / (THREADS * UNROLL)), (unsigned)(T < 65535 ? T : 65535));
		sm_vec_kernel<<<grid, THREADS, 0, st>>>((const uint4 *)x->data, (uint4 *)o->data, T, (int)ipv);
	} else {
		const int64_t n = T * I;
		int64_t blocks = (n + 255) / 256;
		if (blocks > 65536)
			blocks = 65536;
		sm_scalar_kernel<<<(unsigned)blocks, 256, 0, st>>>((const __nv_bfloat16 *)x->data,
								  (__nv_bfloat16 *)o->data, n, I);
	}
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
