/*
 * gated_narrow.cuh - the small-T "narrow" kernel body shared by the gated activations (silu_and_mul_i14336,
 * geglu_tanh_h5376_i21504): out[t, i] = act(x[t, i]) * x[t, I + i] in float32, one rounding to bf16, EPT
 * consecutive outputs per thread with 2-, 4- or 8-byte accesses, so that one token spreads over many CTAs
 * (torch.compile's Triton kernels at t1 / t16 run 1-2 values per thread on 112-672 CTAs, where a 16-byte
 * flat kernel runs 14-336; measured in session 11: silu's NOTES.md "Version 3" and "Version 4").
 * Each solution keeps its own __global__ wrapper (one template argument, CI: the emulator's launch rewrite
 * takes one) and its own activation.
 */
#ifndef GATED_NARROW_CUH
#define GATED_NARROW_CUH

/* the access type of kEpt bf16 values */
template <int kEpt> struct gated_narrow_word;
template <> struct gated_narrow_word<1> {
	typedef unsigned short t;
};
template <> struct gated_narrow_word<2> {
	typedef unsigned int t;
};
template <> struct gated_narrow_word<4> {
	typedef uint2 t;
};

/* One thread's kEpt outputs of a grid of kThreads-thread CTAs over the n = T * I outputs (n < 2^32).
 * Act::f(gate) is the activation in float32 (the caller's vector path uses the same one, so both paths
 * round alike). kCI > 0: I is that compile-time constant (the index division by a constant) and I_rt is
 * ignored. Needs I % kEpt == 0 and x, out aligned to 2 * kEpt bytes (rows then are); threads past n return.
 * kExact: the caller guarantees n == gridDim.x * kThreads * kEpt, so no thread is past n and the check (which
 * waits for the runtime n before the first address) is left out (silu's SM_EXACT_NARROW candidate). */
template <class Act, int kEpt, int kThreads, uint32_t kCI, bool kExact = false>
static __device__ __forceinline__ void gated_narrow_body(const __nv_bfloat16 *__restrict__ x,
							 __nv_bfloat16 *__restrict__ out, uint32_t n, uint32_t I_rt)
{
	typedef typename gated_narrow_word<kEpt>::t W;
	const uint32_t I = kCI ? kCI : I_rt;
	const uint32_t e = (blockIdx.x * (uint32_t)kThreads + threadIdx.x) * (uint32_t)kEpt;
	if (!kExact && e >= n)
		return;
	const uint32_t t = e / I, i = e - t * I;
	const __nv_bfloat16 *row = x + (size_t)t * 2 * I;
	const W gw = *reinterpret_cast<const W *>(row + i), uw = *reinterpret_cast<const W *>(row + I + i);
	const __nv_bfloat16 *g = reinterpret_cast<const __nv_bfloat16 *>(&gw), *u = reinterpret_cast<const __nv_bfloat16 *>(&uw);
	W ow;
	__nv_bfloat16 *o = reinterpret_cast<__nv_bfloat16 *>(&ow);
#pragma unroll
	for (int j = 0; j < kEpt; j++)
		o[j] = __float2bfloat16_rn(Act::f(__bfloat162float(g[j])) * __bfloat162float(u[j]));
	*reinterpret_cast<W *>(out + e) = ow;
}

#endif
