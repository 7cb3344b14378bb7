/*
 * gqa_paged_prefill_sm90_p7.cuh - version 7 ("v7") of the causal GQA paged prefill attend kernel
 * (gqa_paged_prefill_sm90.cu with -DSF_PREFILL_WGMMA=7): version 6 (gqa_paged_prefill_sm90_p6.cuh) made
 * persistent. The grid is at most one CTA per SM; each CTA walks work units (a 32-token item x one kv
 * head, v6's CTA), so the next unit's page ids, K / V gathers and Q load overlap the current unit's tail
 * instead of a CTA teardown, launch and cold prologue per unit (design and prediction:
 * problems/llama/PREFILL_NOTES.md).
 *
 * Units: u in [0, n_items x HKV) is v6's CTA u (kv head u % HKV, item n_items - 1 - u / HKV: longest
 * first). CTA b takes unit b, then gridDim.x + atomicAdd(counter, 1) (a dynamic counter: greedy, longest
 * first; prefill_plan zeroes the counter in the same stream right before). A unit past the end ends the
 * CTA; a unit without keys (n_kv < 1, invalid input) is skipped.
 *
 * Roles as v6 (warpgroup 0 = producer, setmaxnreg.dec to P6_PROD_REGS; warpgroups 1, 2 = consumers,
 * setmaxnreg.inc to P6_CONS_REGS), v6's ring (3 K + 3 V stages of 32 KiB, Q 32 KiB), its barriers and
 * its per-unit order; the stage / parity counters run on across units (gi counts the CTA's tiles).
 * Producer per unit: v6's loop (groups {Q, K0}, V0, K1, V1, ...; group g - 2 published after group g's
 * commit, {Q, K0} after V0's; an empty wait before a gather once gi >= 3), Q gathered only after EMPTY_Q
 * (both consumers' last S of the previous unit retired), the unit's info (kv head, first output row,
 * tokens, first causal limit, tile count) written to shared memory before the {K0, Q} publication; after
 * the last commit it publishes the last K and V at once (a flush: every tile of a unit is published
 * without waiting for anything of the next), claims the next unit (thread 0's atomic, handed to the
 * warpgroup by a 2-slot shared int and bar.sync 1, 128) and goes on. No unit left: it waits EMPTY_Q,
 * writes tile count 0 and arrives on the next FULL_K without a gather.
 * Consumers per unit: wait FULL_K of the unit's first tile, read the info (0 tiles: return), v6's tile
 * loop, EMPTY_Q beside the last tile's EMPTY_K, the last PV, then release its V stage (v6's CTA ended
 * there), the epilogue, the next unit. No CTA-wide barrier after the barrier init.
 * Memory order of the info: the producer's st.shared precede its mbarrier.arrive (release.cta); the
 * consumers load after try_wait (acquire.cta); the producer overwrites it only after EMPTY_Q, which the
 * consumers arrive on after their loads. tools/attn_emulate_pp.py --variant 7 replays the protocol.
 */
#pragma once
#include "gqa_paged_prefill_sm90_p6.cuh"

#define P7_THREADS P6_THREADS
#define P7_SMEM_BYTES P6_SMEM_BYTES
#define P7_SINK_BYTES 512 /* store_rows's sink: one row of O (256 B) and one lse */
#ifndef P7_PROD_REGS
#define P7_PROD_REGS 88 /* setmaxnreg.dec of the producer warpgroup (ptxas spills it at 80: 12 B) */
#endif
#ifndef P7_CONS_REGS
#define P7_CONS_REGS 208 /* setmaxnreg.inc of the consumers; 128 x 88 + 256 x 208 = 64512 = 168 x 384 */
#endif

namespace sfp7 {

__device__ __forceinline__ void setmaxnreg_dec()
{
	asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(P7_PROD_REGS));
}

__device__ __forceinline__ void setmaxnreg_inc()
{
	asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(P7_CONS_REGS));
}

/* named barrier 1 over the producer warpgroup's 128 threads (0 is __syncthreads) */
__device__ __forceinline__ void producer_sync()
{
	asm volatile("bar.sync 1, 128;" ::: "memory");
}

/* sfp5::pv128 whose first k-step overwrites O when acc == 0 (the unit's first PV): O = (acc ? O : 0) +
 * P V for one 128-key tile */
__device__ __forceinline__ void pv128(float (&o)[64], const uint32_t (&pa)[P5_BN / 16][4], uint64_t dvt, int acc)
{
	sfwg::wgmma_m64n128k16_rs_tb_acc(o, pa[0], dvt, acc);
#pragma unroll
	for (int kk = 1; kk < P5_BN / 16; kk++)
		sfwg::wgmma_m64n128k16_rs_tb(o, pa[kk], sfpp::desc_add(dvt, kk * 2048));
}

/* the row sums spread over a quad's 4 lanes, summed (wg_store_rows's first step; done before the unit's last
 * PV: shuffles between it and the stores made ptxas serialize the wgmmas, C7520) */
__device__ __forceinline__ void quad_sum(float &l_a, float &l_b)
{
	l_a += __shfl_xor_sync(0xffffffffu, l_a, 1);
	l_a += __shfl_xor_sync(0xffffffffu, l_a, 2);
	l_b += __shfl_xor_sync(0xffffffffu, l_b, 1);
	l_b += __shfl_xor_sync(0xffffffffu, l_b, 2);
}

/* wg_store_rows's contract with l_a, l_b already summed over the quad (quad_sum, before the last PV),
 * branch-free: every lane stores unconditionally, the rows that are padding (token >= ntok) and the lse
 * of lanes c != 0 into `sink` (P7_SINK_BYTES of scratch nobody reads) instead of being branched around or
 * predicated off (either, with the accumulators read inside the unit loop, made ptxas serialize the
 * wgmmas: C7520) */
__device__ __forceinline__ void store_rows(const float (&o)[64], float l_a, float l_b, float m_a, float m_b, int tok_a,
					   int tok_b, int ntok, int g, int c, int tok0, int kvh,
					   __nv_bfloat16 *__restrict__ out, float *__restrict__ lse, unsigned char *sink)
{
	const float inv_a = 1.0f / l_a, inv_b = 1.0f / l_b;
	const int hh = g & 3; /* rows a and b have the same head (rows differ by 8 = 2 tokens) */
	const size_t row_a = (size_t)(tok0 + tok_a) * HQ + kvh * GRP + hh, row_b = row_a + 2 * HQ;
	__nv_bfloat16 *oa = tok_a < ntok ? out + row_a * D : (__nv_bfloat16 *)sink;
	__nv_bfloat16 *ob = tok_b < ntok ? out + row_b * D : (__nv_bfloat16 *)sink;
#pragma unroll
	for (int j = 0; j < D / 8; j++) {
		*(uint32_t *)(oa + j * 8 + 2 * c) = pack_bf16(o[4 * j] * inv_a, o[4 * j + 1] * inv_a);
		*(uint32_t *)(ob + j * 8 + 2 * c) = pack_bf16(o[4 * j + 2] * inv_b, o[4 * j + 3] * inv_b);
	}
	*(tok_a < ntok && c == 0 ? lse + row_a : (float *)(sink + D * 2)) = m_a + log2f(l_a);
	*(tok_b < ntok && c == 0 ? lse + row_b : (float *)(sink + D * 2)) = m_b + log2f(l_b);
}

} /* namespace sfp7 */

/* prefill_attend_p6's contract, persistent: the grid may be smaller than n_items x HKV; counter points
 * to an int that is 0 at launch (prefill_plan sets it); sink to P7_SINK_BYTES of scratch that padding
 * rows' stores go to (never read) */
template <int PS>
__global__ void __launch_bounds__(P7_THREADS, 1)
prefill_attend_p7(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
		  const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ qo_indptr,
		  const int32_t *__restrict__ kv_indptr, const int32_t *__restrict__ kv_indices,
		  const int32_t *__restrict__ last_len, int ps_rt, float scale_log2, const work_item *__restrict__ items,
		  const int *__restrict__ n_items, int *__restrict__ counter, unsigned char *sink,
		  __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
	extern __shared__ __align__(128) unsigned char smem[]; /* rounded up to 1024 below */
	__shared__ __align__(8) uint64_t bars[4 * P5_STAGES + 1]; /* full_k, full_v, empty_k, empty_v, empty_q */
	__shared__ int info[5];	/* the consumers' unit: kv head, first output row, tokens, first limit, tiles */
	__shared__ int pslot[2]; /* the producer's claimed unit (thread 0 -> its warpgroup), by claim parity */
	const int ps = PS ? PS : ps_rt;
	const int tid = threadIdx.x;
	const uint32_t s_q = ((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u; /* swizzle atoms */
	const uint32_t s_k = s_q + PP_Q_BYTES;		  /* P5_STAGES tiles */
	const uint32_t s_v = s_k + P5_STAGES * P5_TILE; /* P5_STAGES tiles */
	const uint32_t bar0 = (uint32_t)__cvta_generic_to_shared(bars);
#define FULL_K(s) (bar0 + 8 * (s))
#define FULL_V(s) (bar0 + 8 * (P5_STAGES + (s)))
#define EMPTY_K(s) (bar0 + 8 * (2 * P5_STAGES + (s)))
#define EMPTY_V(s) (bar0 + 8 * (3 * P5_STAGES + (s)))
#define EMPTY_Q (bar0 + 8 * (4 * P5_STAGES))
	if (tid <= 4 * P5_STAGES)
		sfwg::mbar_init(bar0 + 8 * tid, tid < 2 * P5_STAGES ? 128 : PP_THREADS);
	__syncthreads();

	if (tid < 128) {
		/* ---- producer warpgroup: the units' gathers, publication, the claims ---- */
		sfp7::setmaxnreg_dec();
		const uint32_t gofs = sw128(P5_BN, tid >> 4, tid & 15); /* this thread's first row in a kv tile */
		int unit = blockIdx.x;
		int nc = 0;	   /* claims so far (pslot parity) */
		int k = 0;	   /* units started so far (EMPTY_Q parity) */
		int gi = 0;	   /* tiles gathered so far */
		int st = 0;	   /* gi % 3 */
		uint32_t ph = 0; /* (gi / 3) & 1 */
		for (;;) {
			item_rows it;
			for (;; nc++) { /* the unit, skipping any without keys */
				if (unit >= *n_items * HKV)
					break;
				it = item_rows_of<PP_TOK>(items[*n_items - 1 - unit / HKV], qo_indptr, kv_indptr, last_len, ps);
				if (it.n_kv >= 1)
					break;
				if (tid == 0)
					pslot[nc & 1] = (int)gridDim.x + atomicAdd(counter, 1);
				sfp7::producer_sync();
				unit = pslot[nc & 1];
			}
			if (unit >= *n_items * HKV) { /* none left: tell the consumers (tile count 0) on the next FULL_K */
				if (k > 0)
					sfwg::mbar_wait(EMPTY_Q, (k - 1) & 1);
				if (tid == 0)
					info[4] = 0;
				sfwg::mbar_arrive(FULL_K(st));
				return;
			}
			const int kvh = unit % HKV;
			const int n_kv = it.n_kv;
			const int n = (n_kv + P5_BN - 1) / P5_BN;
			/* offsets, not pointers (the producer has P6_PROD_REGS registers): the unit's page ids, this
			 * thread's K / V column (generic = global addresses, formed per gather from the parameters) */
			const int pbase = kv_indptr[it.b];
			const int cofs = kvh * D + (tid & 15) * 8;
#define PAGES (kv_indices + pbase)
#define KB ((uint64_t)(k_cache + cofs))
#define VB ((uint64_t)(v_cache + cofs))
			int sl[P6_PROWS];
			sfp6::fetch_slots<PS>(sl, PAGES, ps, 0, n_kv, tid);
			/* tile 0 of the unit (peeled: the item's rows are dead in the loop below) */
			if (gi >= P5_STAGES)
				sfwg::mbar_wait(EMPTY_K(st), ph ^ 1); /* K(gi - 3) released */
			sfp6::gather(s_k + st * P5_TILE + gofs, KB, sl);
			if (k > 0) /* Q once both consumers' last S of the previous unit retired */
				sfwg::mbar_wait(EMPTY_Q, (k - 1) & 1);
			sfp6::load_q(s_q, q, it.q_start + it.j0, it.ntok, kvh, tid);
			if (tid == 0) {
				info[0] = kvh;
				info[1] = it.q_start + it.j0;
				info[2] = it.ntok;
				info[3] = it.prefix + it.j0;
				info[4] = n;
			}
			cp_commit(); /* group 0 = {K0, Q} */
			if (gi >= P5_STAGES)
				sfwg::mbar_wait(EMPTY_V(st), ph ^ 1); /* V(gi - 3) released */
			sfp6::gather(s_v + st * P5_TILE + gofs, VB, sl);
			cp_commit();			   /* group 1 = V0 */
			sfp6::publish<1>(FULL_K(st)); /* {Q, K0} and the info at once */
			if (n > 1)
				sfp6::fetch_slots<PS>(sl, PAGES, ps, 1, n_kv, tid);
			st = st == 2 ? 0 : st + 1;
			ph ^= st == 0 ? 1u : 0u;
			gi++;
#pragma unroll 1
			for (int i = 1; i < n; i++) { /* v6's loop from tile 1 */
				const int sp = st == 0 ? 2 : st - 1; /* (gi - 1) % 3 */
				if (gi >= P5_STAGES)
					sfwg::mbar_wait(EMPTY_K(st), ph ^ 1);
				sfp6::gather(s_k + st * P5_TILE + gofs, KB, sl);
				cp_commit(); /* group 2 i */
				if (i >= 2)
					sfp6::publish<P6_LAG>(FULL_K(sp)); /* group 2 i - 2 = K(i - 1) */
				if (gi >= P5_STAGES)
					sfwg::mbar_wait(EMPTY_V(st), ph ^ 1);
				sfp6::gather(s_v + st * P5_TILE + gofs, VB, sl);
				cp_commit();			       /* group 2 i + 1 */
				sfp6::publish<P6_LAG>(FULL_V(sp)); /* group 2 i - 1 = V(i - 1) */
				if (i + 1 < n)
					sfp6::fetch_slots<PS>(sl, PAGES, ps, i + 1, n_kv, tid);
				st = st == 2 ? 0 : st + 1;
				ph ^= st == 0 ? 1u : 0u;
				gi++;
			}
#undef PAGES
#undef KB
#undef VB
			/* claim the next unit (the atomic's latency under the flush), flush the unit's last K and V */
			int nxt = 0;
			if (tid == 0)
				nxt = (int)gridDim.x + atomicAdd(counter, 1);
			{
				const int sl_last = st == 0 ? 2 : st - 1;
				if (n >= 2)
					sfp6::publish<1>(FULL_K(sl_last)); /* group 2 n - 2 (K0 went out at i = 0) */
				sfp6::publish<0>(FULL_V(sl_last));	 /* group 2 n - 1 */
			}
			if (tid == 0)
				pslot[nc & 1] = nxt;
			sfp7::producer_sync();
			unit = pslot[nc & 1];
			nc++;
			k++;
		}
	}

	/* ---- consumer warpgroups 1, 2: per unit wait full -> S -> softmax -> PV -> release ---- */
	sfp7::setmaxnreg_inc();
	const int ct = tid - 128, lane = ct & 31, wg = ct >> 7, wi = (ct >> 5) & 3;
	const int g = lane >> 2, c = lane & 3;
	/* accumulator rows: 16 wi + g (a) and + 8 (b) of this warpgroup; their tokens */
	const int tok_a = 16 * wg + wi * 4 + (g >> 2), tok_b = tok_a + 2;
	const uint64_t dq = sfwg::wg_desc(s_q + wg * 64 * 128);
	const uint64_t dk = sfwg::wg_desc(s_k);
	const uint64_t dv = sfwg::wg_desc_mn(s_v, P5_BN * 128);
	int st = 0;	 /* the CTA's tile count % 3 */
	uint32_t ph = 0; /* (the CTA's tile count / 3) & 1 */
	float o[64]; /* defined once here; every unit's first PV overwrites it (scale-d 0) */
#pragma unroll
	for (int i = 0; i < 64; i++)
		o[i] = 0.0f;
	sfwg::fence_regs(o);
	for (;;) {
		sfwg::mbar_wait(FULL_K(st), ph); /* the unit's first K, its Q and its info */
		const int n = info[4];
		if (n == 0)
			break; /* no unit left */
		const int kvh = info[0], row0 = info[1], ntok = info[2], lim0 = info[3];
		const int lim_a = lim0 + tok_a, lim_b = lim0 + tok_b;
		const int lim_min = lim0 + 16 * wg; /* this warpgroup's smallest limit */
		float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;
		uint32_t pa[P5_BN / 16][4];
		for (int t = 0; t < n; t++) {
			const int sp = st == 0 ? 2 : st - 1;	/* (gi - 1) % 3 */
			const uint32_t php = st == 0 ? ph ^ 1 : ph; /* ((gi - 1) / 3) & 1 */
			if (t > 0) {
				sfwg::mbar_wait(FULL_K(st), ph);
				sfwg::mbar_wait(FULL_V(sp), php);
			}
			float s[64];
			sfwg::wgmma_fence();
			const uint64_t dkt = sfpp::desc_add(dk, st * P5_TILE);
#pragma unroll
			for (int kk = 0; kk < D / 16; kk++)
				sfwg::wgmma_m64n128k16_ss(s, sfpp::desc_add(dq, (kk >> 2) * (PP_BM * 128) + (kk & 3) * 32),
							  sfpp::desc_add(dkt, (kk >> 2) * (P5_BN * 128) + (kk & 3) * 32), kk);
			sfwg::wgmma_commit();
			if (t > 0)
				sfp7::pv128(o, pa, sfpp::desc_add(dv, sp * P5_TILE), t > 1);
			sfwg::wgmma_commit();

			sfwg::wgmma_wait<1>(); /* S(t) complete: K(t) and Q read; PV(t - 1) may still run */
			sfwg::fence_regs(s);
			sfwg::mbar_arrive(EMPTY_K(st));
			if (t == n - 1)
				sfwg::mbar_arrive(EMPTY_Q); /* the unit's last S: Q and the info are free */

			float corr_a, corr_b;
			uint32_t pn[P5_BN / 16][4]; /* P(t): pa (P(t - 1)) is an operand of the PV in flight */
			sfp5::softmax128(s, pn, t, lim_a, lim_b, lim_min, c, scale_log2, m_a, m_b, l_a, l_b, corr_a, corr_b);
			sfwg::wgmma_wait<0>();
			sfwg::fence_regs(o);
			if (t > 0)
				sfwg::mbar_arrive(EMPTY_V(sp)); /* V(t - 1) read */
			if (t > 0 && !__all_sync(0xffffffffu, corr_a == 1.0f && corr_b == 1.0f))
				rescale_o(o, corr_a, corr_b); /* not at t = 0: PV(0) overwrites O */
#pragma unroll
			for (int kk = 0; kk < P5_BN / 16; kk++)
				for (int e = 0; e < 4; e++)
					pa[kk][e] = pn[kk][e];
			st = st == 2 ? 0 : st + 1;
			ph ^= st == 0 ? 1u : 0u;
		}
		sfp7::quad_sum(l_a, l_b);
		/* the unit's last PV (V published by the producer's flush), then its V stage released */
		{
			const int sl = st == 0 ? 2 : st - 1;
			sfwg::mbar_wait(FULL_V(sl), st == 0 ? ph ^ 1 : ph);
			sfwg::fence_regs(o);
			sfwg::wgmma_fence();
			sfp7::pv128(o, pa, sfpp::desc_add(dv, sl * P5_TILE), n > 1);
			sfwg::wgmma_commit();
			sfwg::wgmma_wait<0>();
			sfwg::fence_regs(o);
			sfwg::mbar_arrive(EMPTY_V(sl));
		}
		/* finish: the row sums, O / l and the log-sum-exp of rows a and b */
		sfp7::store_rows(o, l_a, l_b, m_a, m_b, tok_a, tok_b, ntok, g, c, row0, kvh, out, lse, sink);
	}
#undef FULL_K
#undef FULL_V
#undef EMPTY_K
#undef EMPTY_V
#undef EMPTY_Q
}
