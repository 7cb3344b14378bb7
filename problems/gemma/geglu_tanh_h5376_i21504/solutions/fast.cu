/*
 * fast.cu - bandwidth-bound solution of geglu_tanh_h5376_i21504: y[t, j] = bf16(bf16(gelu_tanh(g)) * up)
 * with g = x[t, j], up = x[t, I + j], gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))
 * in float32 (as g / (1 + exp(-2u)), see gg_act), rounded to bf16 as the oracle does, then multiplied
 * by up in float32 and rounded to bf16 again.
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

/*
 * gelu_tanh(g) in float32, rounded to bf16 and widened back (the oracle's sf_round_bf16). Uses the
 * exact identity 0.5 g (1 + tanh(u)) = g / (1 + exp(-2u)): no cancellation where tanh(u) -> -1, and
 * one MUFU exp + one fast divide instead of IEEE tanhf (~20 instructions per element, which made the
 * kernel issue-bound). Error: a few float32 ulp, far inside rtol 1e-2 / atol 5e-3; exp(-2u) = inf
 * (g < ~-9.4) gives g * 0 = -0, the limit. The bf16 rounding of act can flip by one ulp where the
 * float32 value sits on a rounding boundary: 2^-8 relative, inside the tolerance.
 */
static __device__ __forceinline__ float gg_act(float g)
{
	const float u = 0.79788456080286535588f * (g + 0.044715f * g * g * g);
	return __bfloat162float(__float2bfloat16_rn(__fdividef(g, 1.0f + __expf(-2.0f * u))));
}

/* 8 gate/up pairs packed as bf16x2 words -> 8 outputs */
static __device__ __forceinline__ uint4 gg_vec(uint4 g, uint4 u)
{
	const uint32_t gw[4] = {g.x, g.y, g.z, g.w}, uw[4] = {u.x, u.y, u.z, u.w};
	uint32_t ow[4];
#pragma unroll
	for (int j = 0; j < 4; j++) {
		__nv_bfloat162 gb = *reinterpret_cast<const __nv_bfloat162 *>(&gw[j]);
		__nv_bfloat162 ub = *reinterpret_cast<const __nv_bfloat162 *>(&uw[j]);
		float2 gf = __bfloat1622float2(gb), uf = __bfloat1622float2(ub);
		__nv_bfloat162 o = __floats2bfloat162_rn(gg_act(gf.x) * uf.x, gg_act(gf.y) * uf.y);
		ow[j] = *reinterpret_cast<uint32_t *>(&o);
	}
	return make_uint4(ow[0], ow[1], ow[2], ow[3]);
}

/* grid: x covers a row's ipv = I / 8 vectors (THREADS * UNROLL per CTA), y the tokens (grid-stride
 * when T > 65535); no integer division anywhere */
static __global__ void __launch_bounds__(THREADS) gg_vec_kernel(const uint4 *__restrict__ x, uint4 *__restrict__ out,
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
				__stcs(orow + c, gg_vec(g[r], u[r]));
		}
	}
}

static __global__ void gg_scalar_kernel(const __nv_bfloat16 *__restrict__ x, __nv_bfloat16 *__restrict__ out,
					int64_t n, int64_t I)
{
	for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
		const int64_t t = e / I, i = e - t * I;
		const float g = __bfloat162float(x[t * 2 * I + i]), u = __bfloat162float(x[t * 2 * I + I + i]);
		out[e] = __float2bfloat16_rn(gg_act(g) * u);
	}
}

static int gg_is_bf16(const sf_tensor *t)
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
	if (x->ndim != 2 || o->ndim != 2 || !gg_is_bf16(x) || !gg_is_bf16(o))
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
		gg_vec_kernel<<<grid, THREADS, 0, st>>>((const uint4 *)x->data, (uint4 *)o->data, T, (int)ipv);
	} else {
		const int64_t n = T * I;
		int64_t blocks = (n + 255) / 256;
		if (blocks > 65536)
			blocks = 65536;
		gg_scalar_kernel<<<(unsigned)blocks, 256, 0, st>>>((const __nv_bfloat16 *)x->data,
								  (__nv_bfloat16 *)o->data, n, I);
	}
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
