/*
 * gqa_paged_decode_sm90_b1dyn.cuh - decode at batch 1 with dynamic work distribution (-DDEC_B1_DYN=1, a
 * candidate, off by default; session 11, problems/llama/DECODE_NOTES.md "Session 11"): the kernel
 * decode_b1dyn, launched instead of decode_b1 when the call's batch is 1. Included by
 * gqa_paged_decode_sm90.cu after gqa_paged_decode_sm90_b1.cuh (it uses that file's dec_b1_extra,
 * dec_b1_prefetch, DEC_B1_EXTRA and the attend / mma headers' primitives).
 *
 * Work: the sequence's 64-position ring steps of each kv head. C CTAs per kv head (grid C x 8, one
 * wave: C <= DEC_B1_ITEMS = 33 at 2 CTAs/SM). CTA j first takes the static run of steps
 * [j Fs, j Fs + Fs) (known at entry: its first page ids are loaded beside kv_indptr, as decode_b1
 * does); the steps from C Fs on are units of DEC_B1_DYN_U steps that the head's CTAs claim from a
 * global counter (counters[8 + kvh]), one unit per claim, so that the head's CTAs finish together
 * instead of each waiting out a fixed chunk. The cp.async ring stays full across runs: a claim is
 * made (thread 0, atomicAdd) when the current run has <= 1 step left to issue, published to the CTA
 * one iteration later, and the new unit's first step is issued as soon as a ring buffer frees.
 * Determinism: every run (the static run, each claimed unit) keeps its own (m, l, acc) and writes its
 * own partial (row j for static runs, C + unit for units), and the last CTA of the head merges the
 * C + units partials in row order: the result does not depend on which CTA took which unit.
 * Flush of a run: its state goes through the ring buffer just consumed (free until its refill, which
 * is issued after the flush), so no shared memory beyond decode_b1's.
 */
#ifndef SF_DECODE_B1DYN_CUH
#define SF_DECODE_B1DYN_CUH

#ifndef DEC_B1_DYN_U
#define DEC_B1_DYN_U 2 /* steps (of 64 positions) per claimed unit */
#endif
#ifndef DEC_B1_DYN_PCT
#define DEC_B1_DYN_PCT 85 /* percent of the steps handed out as static runs (the rest: claimed units) */
#endif
#ifndef DEC_B1_DYN_MIN
#define DEC_B1_DYN_MIN 4 /* below this many steps per CTA (at C = DEC_B1_ITEMS) all work is static */
#endif
#ifndef DEC_B1_DYN_MUTATE
#define DEC_B1_DYN_MUTATE 0 /* tests only: 1 = a claimed unit's partial written one row off (must fail) */
#endif
#if DEC_B1_DYN_U < 2
#error "DEC_B1_DYN_U must be >= 2 (the ring catches up by issuing a unit's 2 steps in one iteration)"
#endif
#if DEC_STAGES != 3
#error "DEC_B1_DYN assumes DEC_STAGES 3 (its wait counts)"
#endif

/* wait until at most n (0..2, CTA-uniform) of this thread's cp.async groups are pending */
__device__ __forceinline__ void dec_dyn_wait(int n)
{
	if (n >= 2)
		cp_async_wait<2>();
	else if (n == 1)
		cp_async_wait<1>();
	else
		cp_async_wait<0>();
}

/*
 * decode_b1dyn: grid = C x HKV CTAs (blockIdx.x = j x HKV + kvh), C and Fs from the host (every
 * kv_len <= n_idx x ps is handled: steps past the end are not issued; a static run past the end is an
 * empty partial). counters[0 .. 8): merge counters, [8 .. 16): claim counters; both back to 0 at the
 * end (the last CTA of the head). Partials: rows 0 .. C + units - 1 of part_o / part_lse (host sizes
 * them). Output and lse as decode_b1.
 */
template <int PS>
__global__ void __launch_bounds__(ATT_THREADS, 2)
decode_b1dyn(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
	     const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ kv_indptr,
	     const int32_t *__restrict__ kv_indices, const int32_t *__restrict__ last_len, int ps_rt, float scale_log2,
	     int C, int Fs, int n_idx, float *__restrict__ part_o, float *__restrict__ part_lse,
	     unsigned *__restrict__ counters, __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
	constexpr int ROWS = POS_PER_STEP, COLS = D / 8, RPT = DEC_RPT, U = DEC_B1_DYN_U;
	uint4 *ring = dec_ring();
	float *extra = dec_b1_extra();
	float(*sm_m)[GRP] = (float(*)[GRP])extra, (*sm_l)[GRP] = sm_m + ATT_WARPS;
	/* sh: [0] published claim, [1] merge flag, [2..5) step of ring buffer b, [5..8) its flush row + 1 */
	int *sh = (int *)(extra + 2 * ATT_WARPS * GRP);
	const int ps = PS ? PS : ps_rt, tid = threadIdx.x, col = tid % COLS, row0 = tid / COLS;
	const int kvh = blockIdx.x % HKV, j = blockIdx.x / HKV, s_begin = j * Fs, dyn0 = C * Fs;
	/* the static run's first page ids, guessing kv_indptr[0] = 0 (decode_b1's DEC_B1_IDS) */
	int pre[DEC_STAGES][RPT];
#pragma unroll
	for (int s = 0; s < DEC_STAGES; s++)
#pragma unroll
		for (int r = 0; r < RPT; r++)
			pre[s][r] = n_idx > 0 ? kv_indices[min(((s_begin + s) * ROWS + row0 + 16 * r) / ps, n_idx - 1)] : 0;
	if (n_idx > 0) { /* L2 prefetch: the rest of the static run's ids, and a share of the claimed units' ids */
		const int i0 = min((s_begin + DEC_STAGES) * ROWS / ps, n_idx), i1 = min(n_idx, ((s_begin + Fs) * ROWS - 1) / ps + 1);
		for (uintptr_t a = ((uintptr_t)(kv_indices + i0) & ~(uintptr_t)127) + (uintptr_t)128 * tid;
		     i0 < i1 && a < (uintptr_t)(kv_indices + i1); a += (uintptr_t)128 * ATT_THREADS)
			dec_b1_prefetch((const void *)a);
		const int d0 = min(dyn0 * ROWS / ps, n_idx);
		const uintptr_t a = ((uintptr_t)(kv_indices + d0) & ~(uintptr_t)127) +
				    (uintptr_t)128 * ((size_t)tid * gridDim.x + blockIdx.x);
		if (a < (uintptr_t)(kv_indices + n_idx))
			dec_b1_prefetch((const void *)a);
	}
	const int base = kv_indptr[0];
	const int kv_len = kv_len_of(kv_indptr, last_len, ps, 0);
	if (kv_len == 0) { /* empty sequence: zeros and -inf (CTA 0 of each head), no claims */
		if (j == 0)
			for (int o = tid; o < GRP * D; o += ATT_THREADS) {
				out[(size_t)kvh * GRP * D + o] = __float2bfloat16(0.0f);
				if (o % D == 0)
					lse[kvh * GRP + o / D] = -INFINITY;
			}
		return;
	}
	const int nsteps = (kv_len + ROWS - 1) / ROWS;
	const int n_static = max(0, min(nsteps, s_begin + Fs) - s_begin);
	const int nunits = dyn0 < nsteps ? (nsteps - dyn0 + U - 1) / U : 0;
	const int nn = C + nunits; /* partials of the head (1: the single run writes the output) */
	unsigned *claim_ctr = counters + HKV + kvh;
	int pending = 0; /* thread 0: the claim in flight */
	int claim = 0;   /* CTA-uniform: 1 while a claim is in flight, 0 otherwise */
	if (nunits > 0 && n_static <= DEC_STAGES + 1) { /* the run leaves <= 1 step after the ring's first fill */
		if (tid == 0)
			pending = (int)atomicAdd(claim_ctr, 1u);
		claim = 1;
	}
	const int32_t *pages = kv_indices + base;
	if (n_static == 0 && nn > 1) /* a static run past the end: an empty partial (merged as nothing) */
		for (int o = tid; o < GRP * D; o += ATT_THREADS) {
			part_o[((size_t)j * HQ + kvh * GRP) * D + o] = 0.0f;
			if (o % D == 0)
				part_lse[(size_t)j * HQ + kvh * GRP + o / D] = -INFINITY;
		}
	/* rows of step t (ring buffer b): thread copies column col of rows row0 + 16 r of K and V */
#define DYN_FETCH(ids, t_)                                                                           \
	do {                                                                                         \
		_Pragma("unroll") for (int r = 0; r < RPT; r++)                                      \
			ids[r] = pages[min((t_) * ROWS + row0 + 16 * r, kv_len - 1) / ps];           \
	} while (0)
#define DYN_ISSUE(ids, t_, b_)                                                                       \
	do {                                                                                         \
		uint4 *kb_ = ring + (size_t)(b_) * 2 * ROWS * COLS;                                  \
		_Pragma("unroll") for (int r = 0; r < RPT; r++)                                      \
		{                                                                                    \
			const int rr_ = row0 + 16 * r;                                               \
			const int p_ = min((t_) * ROWS + rr_, kv_len - 1);                           \
			const size_t off_ = (((size_t)ids[r] * ps + p_ % ps) * HKV + kvh) * D + col * 8; \
			cp_async16<DEC_CP_L2_B1>(kb_ + rr_ * COLS + ((col) ^ (rr_ & 7)), k_cache + off_);          \
			cp_async16<DEC_CP_L2_B1>(kb_ + (ROWS + rr_) * COLS + ((col) ^ (rr_ & 7)), v_cache + off_); \
		}                                                                                    \
		cp_async_commit();                                                                   \
	} while (0)
	/* issue iterator (CTA-uniform): next step it_t, it_left steps left in the current run, whose
	 * partial row is run_row; nxt: a published unit not yet started (have_next) */
	int it_t = s_begin, it_left = n_static, run_row = j, nxt = 0, n_iss = 0, n_con = 0;
	bool have_next = false;
	{ /* the static run's first steps: ids as guessed, re-loaded where the guess cannot be used */
		const int n0 = min(n_static, DEC_STAGES);
#pragma unroll
		for (int s = 0; s < DEC_STAGES; s++)
			if (s < n0) {
#pragma unroll
				for (int r = 0; r < RPT; r++) {
					const int p = (s_begin + s) * ROWS + row0 + 16 * r;
					if (n_idx <= 0 || base != 0 || p >= kv_len)
						pre[s][r] = pages[min(p, kv_len - 1) / ps];
				}
				DYN_ISSUE(pre[s], s_begin + s, s);
				if (tid == 0) {
					sh[2 + s] = s_begin + s;
					sh[5 + s] = it_left == 1 ? run_row + 1 : 0;
				}
				n_iss++;
				it_t++;
				it_left--;
			}
	}
	uint32_t qa[D / 16][2];
	float o[D / 16][4], m, l;
	mma_init(q, 0, kvh, qa, m, l, o);
	__nv_bfloat16 *bo = out + (size_t)kvh * GRP * D;
	float *blse = lse + kvh * GRP;
	for (;;) {
		const bool has = n_con < n_iss;
		if (!has && !claim && !have_next && it_left == 0)
			break;
		/* the next issue's ids, one wait ahead, where its step is known */
		int pg[RPT], pk_t = -1;
		if (n_iss < n_con + 1 + DEC_STAGES) {
			pk_t = it_left > 0 ? it_t : have_next ? dyn0 + nxt * U : -1;
			if (pk_t >= 0)
				DYN_FETCH(pg, pk_t);
		}
		if (has)
			dec_dyn_wait(n_iss - 1 - n_con); /* this thread's copies of step n_con have landed */
		__syncthreads();                         /* everyone's; sh[] of this step is visible */
		int fl = 0;
		const int b = n_con % DEC_STAGES;
		if (has) {
			fl = sh[5 + b];
			mma_step(ring + (size_t)b * 2 * ROWS * COLS, sh[2 + b] * ROWS, kv_len, scale_log2, qa, m, l, o);
		}
		if (claim && tid == 0)
			sh[0] = pending; /* waits for the atomic issued one iteration ago */
		__syncthreads(); /* buffer b is read; the claim is visible */
		if (claim) {
			nxt = sh[0];
			claim = 0;
			have_next = nxt < nunits; /* a claim past the last unit: no more work */
		}
		if (fl) { /* the step ended a run: its state through buffer b into its partial (or the output) */
			float(*sm_acc)[GRP][D] = (float(*)[GRP][D])(ring + (size_t)b * 2 * ROWS * COLS);
			mma_state_store(m, l, o, sm_m, sm_l, sm_acc);
			__syncthreads();
			if (nn == 1) {
				combine_store(sm_m, sm_l, sm_acc, NULL, NULL, bo, blse);
			} else {
				const size_t prow = (size_t)(fl - 1) * HQ + kvh * GRP;
				combine_store(sm_m, sm_l, sm_acc, part_o + prow * D, part_lse + prow, NULL, NULL);
			}
			__syncthreads(); /* buffer b and sm_m / sm_l read: refill, next flush */
			m = -INFINITY;
			l = 0.0f;
#pragma unroll
			for (int x = 0; x < D / 16; x++)
				o[x][0] = o[x][1] = o[x][2] = o[x][3] = 0.0f;
		}
		if (has)
			n_con++;
		/* issue while a buffer is free: up to 2 steps (a short first run leaves the ring behind) */
#pragma unroll
		for (int k = 0; k < 2; k++) {
			if (n_iss >= n_con + DEC_STAGES)
				break;
			if (it_left == 0) {
				if (!have_next)
					break;
				it_t = dyn0 + nxt * U;
				it_left = min(U, nsteps - it_t);
				run_row = C + nxt + DEC_B1_DYN_MUTATE;
				have_next = false;
			}
			int ids[RPT];
			if (it_t == pk_t) {
#pragma unroll
				for (int r = 0; r < RPT; r++)
					ids[r] = pg[r];
			} else {
				DYN_FETCH(ids, it_t);
			}
			const int bi = n_iss % DEC_STAGES;
			DYN_ISSUE(ids, it_t, bi);
			if (tid == 0) { /* read after a later barrier; buffer bi's previous step was read before this one */
				sh[2 + bi] = it_t;
				sh[5 + bi] = it_left == 1 ? run_row + 1 : 0;
			}
			n_iss++;
			it_t++;
			it_left--;
		}
		/* claim the next unit once the current run has <= 1 step left to issue (published next iteration) */
		if (!claim && !have_next && it_left <= 1 && nunits > 0 && nxt < nunits) {
			if (tid == 0)
				pending = (int)atomicAdd(claim_ctr, 1u);
			claim = 1;
		}
	}
#undef DYN_FETCH
#undef DYN_ISSUE
	if (nn == 1)
		return;
	/* release: every run's partial stores visible device-wide before the count goes up */
	__threadfence();
	__syncthreads();
	if (tid == 0)
		sh[1] = atomicAdd(&counters[kvh], 1u) == (unsigned)(C - 1);
	__syncthreads();
	if (!sh[1])
		return;
	__threadfence(); /* acquire: the other CTAs' partials */
	float(*sm_acc)[GRP][D] = (float(*)[GRP][D])ring;
	merge_partials(part_o, part_lse, [=](int c) { return c; }, nn, kvh, sm_m, sm_l, sm_acc);
	__syncthreads();
	combine_store(sm_m, sm_l, sm_acc, NULL, NULL, bo, blse);
	if (tid == 0) { /* the next call starts from 0 (every CTA of the head read its last claim) */
		counters[kvh] = 0u;
		counters[HKV + kvh] = 0u;
	}
}
#endif
