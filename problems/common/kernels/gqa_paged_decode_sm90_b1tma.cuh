/*
 * gqa_paged_decode_sm90_b1tma.cuh - decode_b1 with its K/V ring filled by the Hopper bulk-copy (TMA) engine
 * (-DDEC_B1_TMA=1, candidate of session 16, off by default): the kernel decode_b1tma, which
 * gqa_paged_decode_sm90.cu launches instead of decode_b1 when the call's batch is 1 (this file is included
 * at the end of gqa_paged_decode_sm90_b1.cuh and uses its macros and helpers). Notes:
 * problems/llama/DECODE_NOTES_B1.md, "Session 16".
 *
 * Why: decode_b1 requests 64-96 KiB per CTA as 2048 16-byte cp.async per 32-KiB step (24 outstanding per
 * thread), each an LSU request tracked in the SM's L1 miss path; here a step is 128 bulk copies of one
 * 256-byte row each (thread t < 128: row t % 64 of K for t < 64, of V otherwise), tracked by the TMA unit
 * and counted on one mbarrier per ring stage (expect_tx of the step's 32 KiB by thread 0), so whatever the
 * L1's limit the requested bytes are in flight. Consumers wait on the stage's phase (try_wait.parity)
 * instead of cp.async.wait_group + __syncthreads; the refill of a stage still follows a __syncthreads
 * (every warp has read it). Bulk copies write rows as they are (no 16-byte swizzle), so the ring's rows
 * are padded to 272 bytes (17 chunks: the 8 rows of an ldmatrix phase fall in 8 different 4-bank groups)
 * and mma_step reads them with pitch 17, no swizzle. Everything else is decode_b1: the grid, the chunk
 * (DEC_B1_ITEMS), the first steps' page ids loaded at entry beside kv_indptr (one per issuing thread and
 * step), the L2 prefetch of the rest (DEC_B1_PF), partials, counters, the last CTA's merge.
 *
 * Shared memory (dynamic): DEC_STAGES x 34 KiB of ring, then DEC_B1_EXTRA bytes: sm_m, sm_l (256 B), n and
 * the merge flag (bytes 256-263), the DEC_STAGES mbarriers at byte 384; sm_acc aliases the ring's head
 * after the loop (every issued copy has been waited for by then). 102.5 KiB: 2 CTAs/SM as decode_b1.
 * The CPU emulation (tests/emu) runs the copies as plain copies at issue and the mbarriers as counters
 * under a lock (phase, pending arrivals, transaction bytes), so a wrong byte count or parity hangs, and a
 * wait of 20 s aborts the emulation (a failed case, not a silent pass).
 */
#ifndef SF_DECODE_B1TMA_CUH
#define SF_DECODE_B1TMA_CUH

#if DEC_B1_DYN
#error "DEC_B1_TMA and DEC_B1_DYN both replace decode_b1: pick one"
#endif
#define DEC_TMA_PITCH (D / 8 + 1)                                 /* 16-byte chunks per ring row: 17 (272 B) */
#define DEC_TMA_STAGE (2 * POS_PER_STEP * DEC_TMA_PITCH)          /* uint4 per stage: 64 K rows, then 64 V rows */
#define DEC_TMA_RING_BYTES ((size_t)DEC_STAGES * DEC_TMA_STAGE * 16) /* 3 x 34 KiB */
#define DEC_TMA_BAR_OFF 384                                       /* byte offset of the mbarriers in the extra */
#define DEC_TMA_STEP_BYTES (2 * POS_PER_STEP * D * 2)             /* bytes one step's copies deliver: 32 KiB */
#if DEC_TMA_BAR_OFF + 8 * DEC_STAGES > DEC_B1_EXTRA
#error "decode_b1tma: the mbarriers do not fit in DEC_B1_EXTRA"
#endif

#ifdef SF_EMU_H
#include <chrono>
#include <mutex>
/* The emulated mbarrier (8 bytes, as the real one): transaction bytes pending, arrivals pending, the
 * arrival count of a phase and the current phase's parity; every operation under one lock. */
struct emu_mbar {
	int32_t tx;
	uint16_t pending;
	uint8_t count, phase;
};
static std::mutex emu_mbar_lock;
/* completes the phase when nothing is pending (caller holds the lock) */
static inline void emu_mbar_step(emu_mbar *b)
{
	if (b->pending == 0 && b->tx == 0) {
		b->phase ^= 1;
		b->pending = b->count;
	}
}
#endif

/* the shared-memory address of p (PTX's .shared window) */
__device__ __forceinline__ unsigned tma_smem(const void *p)
{
#if defined(__CUDA_ARCH__) && !defined(SF_EMU_H)
	return (unsigned)__cvta_generic_to_shared(p);
#else
	(void)p;
	return 0u;
#endif
}

/* mbarrier.init with `count` arrivals per phase, then the fence that makes it visible to the async proxy
 * (one thread; the block synchronizes before anyone uses the barrier) */
__device__ __forceinline__ void tma_bar_init(uint64_t *bar, unsigned count)
{
#if defined(__CUDA_ARCH__) && !defined(SF_EMU_H)
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(tma_smem(bar)), "r"(count) : "memory");
	asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#elif defined(SF_EMU_H)
	std::lock_guard<std::mutex> l(emu_mbar_lock);
	emu_mbar *b = (emu_mbar *)bar;
	b->tx = 0;
	b->pending = (uint16_t)count;
	b->count = (uint8_t)count;
	b->phase = 0;
#else /* the host pass of nvcc parses device bodies: nothing to emit there */
	(void)bar, (void)count;
#endif
}

/* one arrival on bar that also expects `bytes` more transaction bytes in the current phase */
__device__ __forceinline__ void tma_bar_expect(uint64_t *bar, unsigned bytes)
{
#if defined(__CUDA_ARCH__) && !defined(SF_EMU_H)
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(tma_smem(bar)), "r"(bytes) : "memory");
#elif defined(SF_EMU_H)
	std::lock_guard<std::mutex> l(emu_mbar_lock);
	emu_mbar *b = (emu_mbar *)bar;
	assert(b->pending > 0);
	b->tx += (int32_t)bytes;
	b->pending--;
	emu_mbar_step(b);
#else /* the host pass of nvcc parses device bodies: nothing to emit there */
	(void)bar, (void)bytes;
#endif
}

/* waits until the phase of parity `parity` of bar has completed (its copies have landed: visible) */
__device__ __forceinline__ void tma_bar_wait(uint64_t *bar, unsigned parity)
{
#if defined(__CUDA_ARCH__) && !defined(SF_EMU_H)
	asm volatile("{\n\t.reg .pred P1;\n"
		     "DEC_TMA_WAIT:\n\t"
		     "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t"
		     "@P1 bra DEC_TMA_DONE;\n\t"
		     "bra DEC_TMA_WAIT;\n"
		     "DEC_TMA_DONE:\n\t}" ::"r"(tma_smem(bar)),
		     "r"(parity)
		     : "memory");
#elif defined(SF_EMU_H)
	const auto t0 = std::chrono::steady_clock::now();
	for (;;) {
		{
			std::lock_guard<std::mutex> l(emu_mbar_lock);
			if (((emu_mbar *)bar)->phase != parity)
				return;
		}
		/* a phase that never completes (wrong byte count or parity): abort, a failed case */
		if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(20)) {
			fprintf(stderr, "emu: mbarrier wait never completes (parity %u)\n", parity);
			abort();
		}
		emu_yield(); /* a fiber: the producer thread of this block runs */
	}
#else /* the host pass of nvcc parses device bodies: nothing to emit there */
	(void)bar, (void)parity;
#endif
}

/* bulk copy of `bytes` (a multiple of 16; both addresses 16-byte aligned) from global src to shared dst,
 * its completion counted as transaction bytes on bar */
__device__ __forceinline__ void tma_copy(void *dst, const void *src, unsigned bytes, uint64_t *bar)
{
#if defined(__CUDA_ARCH__) && !defined(SF_EMU_H)
	asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
			     tma_smem(dst)),
		     "l"(src), "r"(bytes), "r"(tma_smem(bar))
		     : "memory");
#elif defined(SF_EMU_H)
	memcpy(dst, src, bytes);
	std::lock_guard<std::mutex> l(emu_mbar_lock);
	emu_mbar *b = (emu_mbar *)bar;
	b->tx -= (int32_t)bytes;
	emu_mbar_step(b);
#else /* the host pass of nvcc parses device bodies: nothing to emit there */
	(void)dst, (void)src, (void)bytes, (void)bar;
#endif
}

/* The ring and the DEC_B1_EXTRA bytes after it (the emulation: one per-block array of its own). */
__device__ __forceinline__ uint4 *dec_tma_ring()
{
#ifdef SF_EMU_H
	return emu_shared<uint4>(1002, (DEC_TMA_RING_BYTES + DEC_B1_EXTRA) / 16);
#else
	return dec_ring(); /* the dynamic shared memory, sized DEC_B1_SMEM at the launch */
#endif
}

/*
 * attend_range_cp's loop (version 3 math) over [p_begin, p_end) of kv head kvh of sequence 0, the ring
 * (DEC_STAGES stages of DEC_TMA_STAGE uint4) filled by bulk copies that complete on bars[stage]. pre[s]:
 * for issuing threads (t < 128), the page id of row t % 64 of step s < DEC_STAGES (clamped to p_end - 1).
 * Ends with each warp's state in sm_m / sm_l / sm_acc[warp] (sm_acc may alias the ring). Every thread of
 * the block calls it; bars are initialized and the block synchronized before.
 */
template <int PS>
__device__ __forceinline__ void attend_range_tma(const __nv_bfloat16 *__restrict__ q,
						 const __nv_bfloat16 *__restrict__ k_cache,
						 const __nv_bfloat16 *__restrict__ v_cache,
						 const int32_t *__restrict__ pages, int ps, float scale_log2, int kvh,
						 int p_begin, int p_end, uint4 *ring, uint64_t *bars, float (*sm_m)[GRP],
						 float (*sm_l)[GRP], float (*sm_acc)[GRP][D], const int pre[DEC_STAGES])
{
	constexpr int ROWS = POS_PER_STEP;
	const int tid = threadIdx.x, row = tid % ROWS;
	const bool issuer = tid < 2 * ROWS;
	const __nv_bfloat16 *src = tid < ROWS ? k_cache : v_cache;
	const int nsteps = (p_end - p_begin + ROWS - 1) / ROWS;
	/* step s's copies into stage s % DEC_STAGES (row tid of the stage: K rows, then V rows), page id `id` */
	auto issue = [&](int id, int s) {
		uint64_t *bar = bars + s % DEC_STAGES;
		if (tid == 0)
			tma_bar_expect(bar, DEC_TMA_STEP_BYTES);
		if (issuer) {
			const int p = min(p_begin + s * ROWS + row, p_end - 1);
			const size_t off = (((size_t)id * ps + p % ps) * HKV + kvh) * D;
			tma_copy(ring + (size_t)(s % DEC_STAGES) * DEC_TMA_STAGE + tid * DEC_TMA_PITCH, src + off, D * 2,
				 bar);
		}
	};
#pragma unroll
	for (int s = 0; s < DEC_STAGES; s++)
		if (s < nsteps)
			issue(pre[s], s);
	uint32_t qa[D / 16][2];
	float o[D / 16][4], m, l;
	mma_init(q, 0, kvh, qa, m, l, o);
	int pg = 0;
	for (int s = 0; s < nsteps; s++) {
		if (issuer && s + DEC_STAGES < nsteps) /* step s + 3's id (an L2 hit after DEC_B1_PF) */
			pg = pages[min(p_begin + (s + DEC_STAGES) * ROWS + row, p_end - 1) / ps];
		tma_bar_wait(bars + s % DEC_STAGES, (unsigned)(s / DEC_STAGES) & 1u);
		mma_step<DEC_TMA_PITCH, 0>(ring + (size_t)(s % DEC_STAGES) * DEC_TMA_STAGE, p_begin + s * ROWS, p_end,
					   scale_log2, qa, m, l, o);
		if (s + DEC_STAGES < nsteps) { /* (uniform) */
			__syncthreads(); /* every warp has read stage s % 3: refill it */
			issue(pg, s + DEC_STAGES);
		}
	}
	__syncthreads(); /* sm_acc may alias the ring: every warp is past its last read */
	mma_state_store(m, l, o, sm_m, sm_l, sm_acc);
}

/*
 * decode_b1 with attend_range_tma: CTA blockIdx.x = (item = chunk of sequence 0, kv head); grid, n_idx,
 * outputs, partials (row = item), counters (kvh) and merge exactly as decode_b1.
 */
template <int PS>
__global__ void __launch_bounds__(ATT_THREADS, 2)
decode_b1tma(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
	     const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ kv_indptr,
	     const int32_t *__restrict__ kv_indices, const int32_t *__restrict__ last_len, int ps_rt,
	     float scale_log2, int chunk, int n_idx, float *__restrict__ part_o, float *__restrict__ part_lse,
	     unsigned *__restrict__ counters, __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
	uint4 *ring = dec_tma_ring();
	float(*sm_acc)[GRP][D] = (float(*)[GRP][D])ring; /* 16 KiB, written after the ring's last use */
	float *extra = (float *)((char *)ring + DEC_TMA_RING_BYTES);
	float(*sm_m)[GRP] = (float(*)[GRP])extra, (*sm_l)[GRP] = sm_m + ATT_WARPS;
	int *sh_n = (int *)(extra + 2 * ATT_WARPS * GRP), *sh_last = sh_n + 1;
	uint64_t *bars = (uint64_t *)((char *)extra + DEC_TMA_BAR_OFF);
	const int ps = PS ? PS : ps_rt, tid = threadIdx.x, row = tid % POS_PER_STEP;
	const bool issuer = tid < 2 * POS_PER_STEP;
	const int item = blockIdx.x / HKV, kvh = blockIdx.x % HKV, p_begin = item * chunk;
	/* the guess kv_indptr[0] = 0 (decode_b1's): row p of the first steps at kv_indices[p / ps] */
	int pre[DEC_STAGES];
#pragma unroll
	for (int s = 0; s < DEC_STAGES; s++)
		pre[s] = issuer && n_idx > 0 ? kv_indices[min((p_begin + s * POS_PER_STEP + row) / ps, n_idx - 1)] : 0;
#if DEC_B1_PF
	if (n_idx > 0) { /* the lines of ids after the first steps, to the chunk's end: one per thread */
		const int i0 = min((p_begin + DEC_STAGES * POS_PER_STEP) / ps, n_idx);
		const int i1 = min(n_idx, (p_begin + chunk - 1) / ps + 1);
		for (uintptr_t a = ((uintptr_t)(kv_indices + i0) & ~(uintptr_t)127) + (uintptr_t)128 * tid;
		     i0 < i1 && a < (uintptr_t)(kv_indices + i1); a += (uintptr_t)128 * ATT_THREADS)
			dec_b1_prefetch((const void *)a);
	}
#endif
	const int base = kv_indptr[0];
	const int kv_len = kv_len_of(kv_indptr, last_len, ps, 0);
	const int n = max(1, (kv_len + chunk - 1) / chunk);
	if (item >= n)
		return;
	if (kv_len == 0) { /* empty sequence (n = 1, item 0): zeros and -inf, as the reference */
		for (int o = tid; o < GRP * D; o += ATT_THREADS) {
			out[(size_t)kvh * GRP * D + o] = __float2bfloat16(0.0f);
			if (o % D == 0)
				lse[kvh * GRP + o / D] = -INFINITY;
		}
		return;
	}
	if (tid == 0) {
		sh_n[0] = n;
#pragma unroll
		for (int s = 0; s < DEC_STAGES; s++)
			tma_bar_init(bars + s, 1);
	}
	const int p_end = min(kv_len, p_begin + chunk);
	const int32_t *pages = kv_indices + base;
#pragma unroll
	for (int s = 0; s < DEC_STAGES; s++) {
		const int p = p_begin + s * POS_PER_STEP + row;
		/* the ordinary (dependent) load where the guess cannot be used; steps past the end are not issued */
		if (issuer && p_begin + s * POS_PER_STEP < p_end && (n_idx <= 0 || base != 0 || p >= p_end))
			pre[s] = pages[min(p, p_end - 1) / ps];
	}
	__syncthreads(); /* the mbarriers are initialized before any copy or wait */
	attend_range_tma<PS>(q, k_cache, v_cache, pages, ps, scale_log2, kvh, p_begin, p_end, ring, bars, sm_m, sm_l,
			     sm_acc, pre);
	__syncthreads();
	/* decode_b1's end (n re-read: not kept live through the loop) */
	const int nn = sh_n[0];
	__nv_bfloat16 *bo = out + (size_t)kvh * GRP * D;
	float *blse = lse + kvh * GRP;
	if (nn == 1) {
		combine_store(sm_m, sm_l, sm_acc, NULL, NULL, bo, blse);
		return;
	}
	const size_t prow = (size_t)item * HQ + kvh * GRP;
	combine_store(sm_m, sm_l, sm_acc, part_o + prow * D, part_lse + prow, NULL, NULL);
	__threadfence(); /* release: every thread's partial stores are visible device-wide before the count goes up */
	__syncthreads();
	if (tid == 0)
		sh_last[0] = atomicAdd(&counters[kvh], 1u) == (unsigned)(nn - 1);
	__syncthreads();
	if (!sh_last[0])
		return;
	__threadfence(); /* acquire: the other CTAs' partials (ld.cg reads L2) */
	merge_partials(part_o, part_lse, [=](int c) { return c; }, nn, kvh, sm_m, sm_l, sm_acc);
	__syncthreads();
	combine_store(sm_m, sm_l, sm_acc, NULL, NULL, bo, blse);
	if (tid == 0)
		counters[kvh] = 0u; /* the next call (a later kernel on the stream) starts from 0 */
}
#endif
