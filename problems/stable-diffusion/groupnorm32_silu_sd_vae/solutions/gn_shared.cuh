/*
 * gn_shared.cuh - groupnorm32_silu_sd_vae: what the path headers (gn_ring.cuh, gn_l2win.cuh,
 * gn_cluster.cuh) share: GN_SHARED, a kernel's shared array declared in a header (per block on the GPU
 * and in the CPU emulation, whose source rewrite only sees fast.cu), and the 16-byte cp.async helpers.
 * Included by fast.cu before those headers; not a standalone header.
 */
#ifndef GN_SHARED_CUH
#define GN_SHARED_CUH

#ifdef SF_EMU_H
#define GN_SHARED(T, name, n, key) T *name = emu_shared<T>(key, (size_t)(n))
#else
#define GN_SHARED(T, name, n, key) __shared__ T name[n]
#endif

/* One 16-byte global -> shared asynchronous copy (L2 only); commit closes a group; wait leaves at most
 * n groups pending. */
static __device__ __forceinline__ void gn_cp16(uint4 *dst, const uint4 *src)
{
#ifdef __CUDA_ARCH__
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src)
		     : "memory");
#else /* emulation: the copy lands at once */
	*dst = *src;
#endif
}
static __device__ __forceinline__ void gn_cp_commit(void)
{
#ifdef __CUDA_ARCH__
	asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
static __device__ __forceinline__ void gn_cp_wait(int n)
{
#ifdef __CUDA_ARCH__
	switch (n) { /* the count is an immediate */
	case 0: asm volatile("cp.async.wait_group 0;" ::: "memory"); break;
	case 1: asm volatile("cp.async.wait_group 1;" ::: "memory"); break;
	case 2: asm volatile("cp.async.wait_group 2;" ::: "memory"); break;
	case 3: asm volatile("cp.async.wait_group 3;" ::: "memory"); break;
	case 4: asm volatile("cp.async.wait_group 4;" ::: "memory"); break;
	case 5: asm volatile("cp.async.wait_group 5;" ::: "memory"); break;
	case 6: asm volatile("cp.async.wait_group 6;" ::: "memory"); break;
	default: asm volatile("cp.async.wait_group 7;" ::: "memory"); break;
	}
#else
	(void)n;
#endif
}

#endif
