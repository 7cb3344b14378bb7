/*
 * sm80_warp_mma.cuh - small wrappers around the warp-collective tensor-core primitives the decode
 * kernel's version 3 uses: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 and
 * ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16. On the GPU each is one inline-PTX
 * instruction; under the CPU emulation of tests/emu (emu.h defines SF_EMU_H) each calls emu.h's
 * implementation of the PTX ISA fragment layouts (every lane of the warp must call it, as on the GPU);
 * in nvcc's host pass they are never called and do nothing. No includes of its own (the including
 * source brings stdint / cuda_runtime or emu.h).
 *
 * Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"; lane =
 * 4 g + t): a bf16 pair packs the lower index in the low 16 bits. A (16 x 16, row major): a[0] = row g,
 * cols 2t, 2t+1; a[1] = row g+8, same cols; a[2] = row g, cols 2t+8, 2t+9; a[3] = row g+8, cols 2t+8,
 * 2t+9. B (16 x 8, "col"): b[0] = rows 2t, 2t+1 of col g; b[1] = rows 2t+8, 2t+9 of col g. C / D
 * (16 x 8 fp32): c[0], c[1] = row g, cols 2t, 2t+1; c[2], c[3] = row g+8, cols 2t, 2t+1.
 * ldmatrix: matrix i (i < N) takes its 8 row addresses (16 bytes each) from lanes 8i .. 8i+7; lane
 * 4g + t receives r[i] = (row g, cols 2t, 2t+1) of matrix i, or with .trans (rows 2t, 2t+1 of col g).
 */
#ifndef SF_SM80_WARP_MMA_CUH
#define SF_SM80_WARP_MMA_CUH

/* d = A . B + c for one m16n8k16 tile (bf16 inputs, fp32 accumulate); d may alias c. */
__device__ __forceinline__ void mma_bf16_16816(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4])
{
#ifdef __CUDA_ARCH__
	asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
		     "{%8, %9}, {%10, %11, %12, %13};"
		     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
		       "f"(c[2]), "f"(c[3]));
#elif defined(SF_EMU_H)
	emu_mma_m16n8k16_bf16(d, a, b, c);
#else
	(void)d, (void)a, (void)b, (void)c;
#endif
}

/* N (1, 2 or 4) 8 x 8 b16 matrices from shared memory: this lane gives row address p (lanes 8i ..
 * 8i+7 for matrix i; p 16-byte aligned), r[i] gets its fragment of matrix i (transposed when TRANS). */
template <int N, bool TRANS> __device__ __forceinline__ void ldsm(uint32_t r[N], const void *p)
{
#ifdef __CUDA_ARCH__
	const unsigned sa = (unsigned)__cvta_generic_to_shared(p);
	if (N == 1 && !TRANS)
		asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(sa));
	else if (N == 1)
		asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(sa));
	else if (N == 2 && !TRANS)
		asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
			     : "=r"(r[0]), "=r"(r[N > 1 ? 1 : 0])
			     : "r"(sa));
	else if (N == 2)
		asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
			     : "=r"(r[0]), "=r"(r[N > 1 ? 1 : 0])
			     : "r"(sa));
	else if (!TRANS)
		asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
			     : "=r"(r[0]), "=r"(r[N > 1 ? 1 : 0]), "=r"(r[N > 2 ? 2 : 0]), "=r"(r[N > 3 ? 3 : 0])
			     : "r"(sa));
	else
		asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
			     : "=r"(r[0]), "=r"(r[N > 1 ? 1 : 0]), "=r"(r[N > 2 ? 2 : 0]), "=r"(r[N > 3 ? 3 : 0])
			     : "r"(sa));
#elif defined(SF_EMU_H)
	emu_ldmatrix(r, N, TRANS, p);
#else
	(void)r, (void)p;
#endif
}

/* Two floats rounded to nearest-even bf16 and packed (x in the low half). */
__device__ __forceinline__ uint32_t pack_bf16x2(float x, float y)
{
	__nv_bfloat162 h = __floats2bfloat162_rn(x, y);
	return *(uint32_t *)&h;
}

#endif
