/*
 * gqa_paged_prefill_sm90_p6.cuh - version 6 ("v6") of the causal GQA paged prefill attend kernel
 * (gqa_paged_prefill_sm90.cu with -DSF_PREFILL_WGMMA=6): version 5 (gqa_paged_prefill_sm90_p5.cuh) with a
 * producer warpgroup that does every K / V page-slot gather, so the two consumer warpgroups issue no
 * load instruction in the tile loop (FlashAttention-3's warp specialization, with cp.async gathers).
 *
 * A CTA has 384 threads, 1 per SM. Warpgroup 0 = producer (setmaxnreg.dec to P6_PROD_REGS), warpgroups
 * 1 and 2 = consumers (setmaxnreg.inc to P6_CONS_REGS); the consumers keep v5's work: 32 new tokens x
 * the 4 query heads of one kv head = 128 rows, consumer c (warpgroup 1 + c) owns rows 64 c .. 64 c + 63
 * (tokens 16 c .. +15), 128-key tiles, S(t) = Q K(t)^T (8 x wgmma m64n128k16 SS) and O += P(t-1)
 * V(t-1) (8 x m64n128k16 RS) as two groups, the softmax of tile t under PV(t-1), the O rescale after it,
 * v5's masks, causal limits, epilogue and lse.
 *
 * Ring: v5's 3 stages of K and 3 of V (32 KiB each, 128B-swizzled) + Q (32 KiB), 225 KiB.
 * Producer (128 threads; thread p copies chunk p % 16 of rows p / 16 + 8 i, i < 16, of each tile): one
 * cp.async group per (cache, tile) in the order G0 = {Q, K0}, V0, K1, V1, ... (group 2 i = K(i), 2 i + 1
 * = V(i)); a gather into a stage that held tile i - 3 first waits for the consumers' release of it.
 * Publication: after committing group g >= 3 a producer thread waits for its group g - 2 to land
 * (cp.async.wait_group 2), fences it to the async proxy and arrives on that group's full barrier; group 0
 * ({Q, K0}) goes out right after V0's commit (wait_group 1: the first tile does not wait for the page
 * ids of tile 1), and after the last group wait_group 1 / 0 publish the last K (n >= 2) and V. Why this and not cp.async.mbarrier.arrive.noinc:
 * the order writer-retires / writer-fences / writer-arrives is the one v3pp and v5 proved on the H200;
 * with .noinc the copies complete asynchronously and the proxy fence would have to move to every
 * consumer after every full wait (an extra per-tile instruction on the issue-bound warps, and a
 * reader-side fence for another thread's cp.async writes that this repository has not proven). The
 * producer has nothing else to issue, so blocking it on wait_group costs no consumer slot; two groups
 * (one tile of K and V) stay in flight. The page slots of tile i + 1 are loaded right after tile i's
 * gathers (their latency hides behind the next empty wait).
 * Barriers: full_k[s], full_v[s] (128 producer arrivals), parity (tile / 3) & 1 for the consumers;
 * empty_k[s], empty_v[s] (256 consumer arrivals): a consumer thread releases K(t) once S(t) retired
 * (wgmma.wait_group 1) and V(t - 1) once PV(t - 1) retired (wait_group 0); the producer waits for the
 * phase of tile i - 3, parity ((i - 3) / 3) & 1 = (i / 3 & 1) ^ 1. Stage / parity are loop-carried on
 * both sides. Deadlock freedom: the producer's release of group g - 2 waits only on its own copies, and
 * its empty waits (tile i - 3) need consumer work that needs groups <= 2 i - 4, published by then
 * (tools/attn_emulate_pp.py --variant 6 replays this under random interleavings of the three roles).
 * A CTA whose item has no key (n_kv < 1, impossible for valid inputs) returns whole before any barrier.
 * Version 8 (gqa_paged_prefill_sm90_p8.cuh) is this kernel's body with its consumers' turns on: p6_attend
 * <PS, kTurns>, instantiated by P6_KERNEL for both (PTX of v6 and v8 byte-identical to the separate bodies).
 */
#pragma once
#include "gqa_paged_prefill_sm90_p5.cuh"

#define P6_THREADS 384
/* setmaxnreg: the CTA holds 168 x 384 = 64512 registers from launch (ptxas gives __launch_bounds__(384, 1)
 * 168); an inc blocks until decs have released enough, so 128 x P6_PROD_REGS + 256 x P6_CONS_REGS must not
 * exceed 64512 (64 / 216: 63488). ptxas spills the producer below 64 (56: 20 B, 40: 140 B); the consumers
 * need no more than v5's 206 (0 spills at 216) */
#define P6_PROD_REGS 64	 /* setmaxnreg.dec of the producer warpgroup */
#define P6_CONS_REGS 216 /* setmaxnreg.inc of the consumers */
#define P6_PROWS (P5_BN * 16 / 128) /* rows of a kv tile one producer thread gathers: 16 */
#define P6_LAG 2		    /* cp.async groups in flight after a publication */
#define P6_SMEM_BYTES P5_SMEM_BYTES
#define P8_TURN_BAR 1		  /* version 8: named barriers 1 (consumer 0's turn) and 2 (consumer 1's); 0 = __syncthreads */
#define P8_TURN_THREADS (2 * 128) /* both consumer warpgroups: 128 bar.sync + 128 bar.arrive per phase */

namespace sfp6 {

__device__ __forceinline__ void setmaxnreg_dec()
{
	asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(P6_PROD_REGS));
}

__device__ __forceinline__ void setmaxnreg_inc()
{
	asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(P6_CONS_REGS));
}

/* slots of the P6_PROWS rows producer thread p gathers in kv tile t (rows p / 16 + 8 i), v5's rule: a
 * position past the CTA's last key takes that key's slot (masked later, real data, no zero-fill) */
template <int PS>
__device__ __forceinline__ void fetch_slots(int (&sl)[P6_PROWS], const int32_t *__restrict__ pages, int ps_rt, int t,
					    int n_kv, int p)
{
	const int ps = PS ? PS : ps_rt;
#pragma unroll
	for (int i = 0; i < P6_PROWS; i++) {
		const int pos = min(t * P5_BN + (p >> 4) + 8 * i, n_kv - 1);
		sl[i] = pages[pos / ps] * ps + pos % ps;
	}
}

/* cp.async of producer thread p's rows of one kv tile: dst = the tile + sw128(P5_BN, p / 16, p % 16),
 * row + 8 i lies 1024 i bytes further (same swizzle phase); per row one mad.wide and the copy, in one asm statement (the producer has
 * P6_PROD_REGS registers: ptxas must not hoist 16 64-bit addresses ahead of the copies) */
__device__ __forceinline__ void gather(uint32_t dst, uint64_t src, const int (&sl)[P6_PROWS])
{
#pragma unroll
	for (int i = 0; i < P6_PROWS; i++) {
		asm volatile("{\n\t.reg .u64 a;\n\tmad.wide.u32 a, %1, %2, %3;\n\t"
			     "cp.async.cg.shared.global [%0], [a], 16;\n\t}" ::"r"(dst + i * 8 * 128),
			     "r"((uint32_t)sl[i]), "r"(HKV * D * 2), "l"(src)
			     : "memory");
	}
}

/* cp.async of producer thread p's share of the CTA's Q tile (PP_BM rows, row r = token r / 4, head
 * kvh * 4 + r % 4; tokens >= ntok zero-filled) into s_q, 128B-swizzled: rows p / 16 + 8 i */
__device__ __forceinline__ void load_q(uint32_t s_q, const __nv_bfloat16 *__restrict__ q, int q_row0, int ntok, int kvh,
				       int p)
{
	const int ch = p & 15;
#pragma unroll
	for (int i = 0; i < PP_BM * 16 / 128; i++) {
		const int row = (p >> 4) + 8 * i;
		const int tok = row >> 2;
		const bool ok = tok < ntok;
		const __nv_bfloat16 *src = q + ((size_t)(q_row0 + (ok ? tok : 0)) * HQ + kvh * GRP + (row & 3)) * D + ch * 8;
		cp_async16(s_q + sw128(PP_BM, row, ch), src, ok ? 16 : 0);
	}
}

/* the producer's publication of its oldest unpublished group (K(i) for group 2 i, V(i) for 2 i + 1):
 * wait_group N has retired it, the proxy fence hands its bytes to wgmma's async proxy, the arrive
 * releases them */
template <int N>
__device__ __forceinline__ void publish(uint32_t bar)
{
	cp_wait_n<N>();
	sfwg::fence_proxy_async();
	sfwg::mbar_arrive(bar);
}

} /* namespace sfp6 */

#ifndef SF_PREFILL_LEAN /* 1 (default since session 14 call 3: q4096 285.60 -> 267.50 us, q8192 990.57 -> 918.90, same errors): version 8 with the lean consumer (gqa_paged_prefill_sm90_lean.cuh); 0: v8 as measured */
#define SF_PREFILL_LEAN 1
#endif
#if SF_PREFILL_LEAN
#include "gqa_paged_prefill_sm90_lean.cuh"
#endif

/* The kernel body of versions 6 (kTurns = false: prefill_attend_p6) and 8 (kTurns = true: prefill_attend_p8,
 * gqa_paged_prefill_sm90_p8.cuh): prefill_attend's contract (version 1) on 32-token items
 * (prefill_plan<PP_TOK>), P6_THREADS threads, P6_SMEM_BYTES of dynamic shared memory; `bars` = the
 * kernel's 4 * P5_STAGES mbarriers (full_k, full_v, empty_k, empty_v), declared in the __global__ function
 * so that their PTX names stay the kernel's (p6_attend stands at global scope for smem's PTX name to stay
 * `smem`: in namespace sfp6 it would be _ZN4sfp64smemE). kTurns adds version 8's consumer turns on named
 * barriers P8_TURN_BAR + 0 / + 1 (p8.cuh's header); without it the code is version 6's. */
template <int PS, bool kTurns>
__device__ __forceinline__ void p6_attend(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
				       const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ qo_indptr,
				       const int32_t *__restrict__ kv_indptr, const int32_t *__restrict__ kv_indices,
				       const int32_t *__restrict__ last_len, int ps_rt, float scale_log2,
				       const work_item *__restrict__ items, const int *__restrict__ n_items,
				       __nv_bfloat16 *__restrict__ out, float *__restrict__ lse, uint64_t *bars)
{
	extern __shared__ __align__(128) unsigned char smem[]; /* rounded up to 1024 below */
	const int ps = PS ? PS : ps_rt;
	const int kvh = blockIdx.x % HKV;
	const int idx = *n_items - 1 - (int)(blockIdx.x / HKV);
	if (idx < 0)
		return;
	const item_rows it = item_rows_of<PP_TOK>(items[idx], qo_indptr, kv_indptr, last_len, ps);
	const int b = it.b, q_start = it.q_start, prefix = it.prefix;
	const int j0 = it.j0, ntok = it.ntok, n_kv = it.n_kv;
	if (n_kv < 1)
		return; /* the whole CTA, before any barrier: no role waits for another */
	const int n = (n_kv + P5_BN - 1) / P5_BN;

	const int tid = threadIdx.x;
	const uint32_t s_q = ((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u; /* swizzle atoms */
	const uint32_t s_k = s_q + PP_Q_BYTES;		  /* P5_STAGES tiles */
	const uint32_t s_v = s_k + P5_STAGES * P5_TILE; /* P5_STAGES tiles */
	const uint32_t bar0 = (uint32_t)__cvta_generic_to_shared(bars);
#define FULL_K(s) (bar0 + 8 * (s))
#define FULL_V(s) (bar0 + 8 * (P5_STAGES + (s)))
#define EMPTY_K(s) (bar0 + 8 * (2 * P5_STAGES + (s)))
#define EMPTY_V(s) (bar0 + 8 * (3 * P5_STAGES + (s)))
	if (tid < 4 * P5_STAGES)
		sfwg::mbar_init(bar0 + 8 * tid, tid < 2 * P5_STAGES ? 128 : PP_THREADS);
	__syncthreads();

	if (tid < 128) {
		/* ---- producer warpgroup: every gather, publication by wait_group + proxy fence + arrive ---- */
		sfp6::setmaxnreg_dec();
		const int32_t *pages = kv_indices + kv_indptr[b];
		const uint64_t kb = (uint64_t)(k_cache + kvh * D + (tid & 15) * 8); /* generic = global addresses */
		const uint64_t vb = (uint64_t)(v_cache + kvh * D + (tid & 15) * 8);
		const uint32_t gofs = sw128(P5_BN, tid >> 4, tid & 15); /* this thread's first row in a kv tile */
		int sl[P6_PROWS];
		sfp6::fetch_slots<PS>(sl, pages, ps, 0, n_kv, tid);
		sfp6::load_q(s_q, q, q_start + j0, ntok, kvh, tid);
		int st = 0;	 /* i % 3 */
		uint32_t ph = 0; /* (i / 3) & 1 */
#pragma unroll 1
		for (int i = 0; i < n; i++) {
			const int sp = st == 0 ? 2 : st - 1; /* (i - 1) % 3 */
			if (i >= P5_STAGES)
				sfwg::mbar_wait(EMPTY_K(st), ph ^ 1); /* K(i - 3) released */
			sfp6::gather(s_k + st * P5_TILE + gofs, kb, sl);
			cp_commit(); /* group 2 i (with Q when i = 0) */
			if (i >= 2)
				sfp6::publish<P6_LAG>(FULL_K(sp)); /* group 2 i - 2 = K(i - 1) */
			if (i >= P5_STAGES)
				sfwg::mbar_wait(EMPTY_V(st), ph ^ 1); /* V(i - 3) released */
			sfp6::gather(s_v + st * P5_TILE + gofs, vb, sl);
			cp_commit(); /* group 2 i + 1 */
			if (i == 0)
				sfp6::publish<1>(FULL_K(0)); /* group 0 = {Q, K0} at once: the first tile waits no longer */
			else
				sfp6::publish<P6_LAG>(FULL_V(sp)); /* group 2 i - 1 = V(i - 1) */
			if (i + 1 < n)
				sfp6::fetch_slots<PS>(sl, pages, ps, i + 1, n_kv, tid);
			st = st == 2 ? 0 : st + 1;
			ph ^= st == 0 ? 1u : 0u;
		}
		{
			const int sl_last = (n - 1) % P5_STAGES;
			if (n >= 2)
				sfp6::publish<1>(FULL_K(sl_last)); /* group 2 n - 2 (K0 went out at i = 0) */
			sfp6::publish<0>(FULL_V(sl_last)); /* group 2 n - 1 */
		}
		return; /* no CTA-wide barrier follows */
	}

	/* ---- consumer warpgroups 1, 2: wait full -> [turn ->] S, PV -> [pass the turn ->] softmax -> release ---- */
	sfp6::setmaxnreg_inc();
#if SF_PREFILL_LEAN
	if constexpr (kTurns) { /* version 8's lean consumer (lean.cuh); v6 keeps its own */
		sflean::consumer(s_q, s_k, s_v, bar0, n, prefix + j0, ntok, q_start + j0, kvh, scale_log2, tid, out, lse);
		return;
	}
#endif
	const int ct = tid - 128, lane = ct & 31, wg = ct >> 7, wi = (ct >> 5) & 3;
	const int g = lane >> 2, c = lane & 3;
	/* accumulator rows: 16 wi + g (a) and + 8 (b) of this warpgroup; their tokens and causal limits */
	const int tok_a = 16 * wg + wi * 4 + (g >> 2), tok_b = tok_a + 2;
	const int lim_a = prefix + j0 + tok_a, lim_b = prefix + j0 + tok_b;
	const int lim_min = prefix + j0 + 16 * wg; /* this warpgroup's smallest limit */
	const uint64_t dq = sfwg::wg_desc(s_q + wg * 64 * 128);
	const uint64_t dk = sfwg::wg_desc(s_k);
	const uint64_t dv = sfwg::wg_desc_mn(s_v, P5_BN * 128);

	float o[64];
#pragma unroll
	for (int i = 0; i < 64; i++)
		o[i] = 0.0f;
	float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;
	uint32_t pa[P5_BN / 16][4];
	int st = 0;	 /* t % 3 */
	uint32_t ph = 0; /* (t / 3) & 1 */
	if (kTurns && wg == 1)
		sfpp::bar_arrive(P8_TURN_BAR, P8_TURN_THREADS); /* consumer 0 issues first */
	for (int t = 0; t < n; t++) {
		const int sp = st == 0 ? 2 : st - 1;	/* (t - 1) % 3 */
		const uint32_t php = st == 0 ? ph ^ 1 : ph; /* ((t - 1) / 3) & 1 */
		sfwg::mbar_wait(FULL_K(st), ph);
		if (t > 0)
			sfwg::mbar_wait(FULL_V(sp), php);
		if (kTurns)
			sfpp::bar_sync(P8_TURN_BAR + wg, P8_TURN_THREADS); /* my turn on the tensor core */
		float s[64];
		sfwg::wgmma_fence();
		const uint64_t dkt = sfpp::desc_add(dk, st * P5_TILE);
#pragma unroll
		for (int kk = 0; kk < D / 16; kk++)
			sfwg::wgmma_m64n128k16_ss(s, sfpp::desc_add(dq, (kk >> 2) * (PP_BM * 128) + (kk & 3) * 32),
						  sfpp::desc_add(dkt, (kk >> 2) * (P5_BN * 128) + (kk & 3) * 32), kk);
		sfwg::wgmma_commit();
		if (t > 0)
			sfp5::pv128(o, pa, sfpp::desc_add(dv, sp * P5_TILE));
		sfwg::wgmma_commit();
		if (kTurns)
			sfpp::bar_arrive(P8_TURN_BAR + 1 - wg, P8_TURN_THREADS); /* the other consumer's turn */

		sfwg::wgmma_wait<1>(); /* S(t) complete: K(t) read; PV(t - 1) may still run */
		sfwg::fence_regs(s);
		sfwg::mbar_arrive(EMPTY_K(st));

		float corr_a, corr_b;
		uint32_t pn[P5_BN / 16][4]; /* P(t): pa (P(t - 1)) is an operand of the PV in flight until wait 0 */
		sfp5::softmax128(s, pn, t, lim_a, lim_b, lim_min, c, scale_log2, m_a, m_b, l_a, l_b, corr_a, corr_b);
		sfwg::wgmma_wait<0>();
		sfwg::fence_regs(o);
		if (t > 0)
			sfwg::mbar_arrive(EMPTY_V(sp)); /* V(t - 1) read */
		if (!__all_sync(0xffffffffu, corr_a == 1.0f && corr_b == 1.0f))
			rescale_o(o, corr_a, corr_b);
#pragma unroll
		for (int kk = 0; kk < P5_BN / 16; kk++)
			for (int e = 0; e < 4; e++)
				pa[kk][e] = pn[kk][e];
		st = st == 2 ? 0 : st + 1;
		ph ^= st == 0 ? 1u : 0u;
	}
	/* the last tile's PV (V(n - 1), published by the producer's last wait_group 0) */
	{
		const int sl = (n - 1) % P5_STAGES;
		sfwg::mbar_wait(FULL_V(sl), ((n - 1) / P5_STAGES) & 1);
		sfwg::fence_regs(o);
		sfwg::wgmma_fence();
		sfp5::pv128(o, pa, sfpp::desc_add(dv, sl * P5_TILE));
	}
	sfwg::wgmma_commit();
	sfwg::wgmma_wait<0>();
	sfwg::fence_regs(o);
	if (kTurns && wg == 0) /* takes consumer 1's arrival after its last tile: both barriers end balanced */
		sfpp::bar_sync(P8_TURN_BAR, P8_TURN_THREADS);
#undef FULL_K
#undef FULL_V
#undef EMPTY_K
#undef EMPTY_V

	/* finish: the row sums, O / l and the log-sum-exp of rows a and b */
	wg_store_rows(o, l_a, l_b, m_a, m_b, tok_a, tok_b, ntok, g, c, q_start + j0, kvh, out, lse);
}

/* prefill_attend_p6 (P6_KERNEL(prefill_attend_p6, false)) and prefill_attend_p8 (p8.cuh): one template
 * kernel NAME<PS> of prefill_attend's arguments (version 1), P6_THREADS threads, running p6_attend<PS,
 * TURNS> on its own mbarriers (their PTX names carry the kernel's name, as before the bodies were shared). */
#define P6_KERNEL(NAME, TURNS)                                                                                          \
	template <int PS>                                                                                               \
	__global__ void __launch_bounds__(P6_THREADS, 1)                                                                \
	NAME(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,                            \
	     const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ qo_indptr,                          \
	     const int32_t *__restrict__ kv_indptr, const int32_t *__restrict__ kv_indices,                             \
	     const int32_t *__restrict__ last_len, int ps_rt, float scale_log2, const work_item *__restrict__ items,     \
	     const int *__restrict__ n_items, __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)                 \
	{                                                                                                               \
		__shared__ __align__(8) uint64_t bars[4 * P5_STAGES]; /* full_k, full_v, empty_k, empty_v */            \
		p6_attend<PS, TURNS>(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, last_len, ps_rt,            \
				     scale_log2, items, n_items, out, lse, bars);                                     \
	}

P6_KERNEL(prefill_attend_p6, false)
