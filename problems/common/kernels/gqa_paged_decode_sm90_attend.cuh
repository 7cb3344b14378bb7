/*
 * gqa_paged_decode_sm90_attend.cuh - the device half of gqa_paged_decode_sm90.cu (included by it, after
 * its includes and macros; no includes of its own, so the CPU emulation of tests/emu can build it):
 * kv lengths from the page table, the per-(chunk, kv head) attention loops - K/V straight into
 * registers (attend_range) or through a cp.async ring in shared memory (attend_range_cp) - the
 * combination of the 8 warps' softmax states into a stored output or partial (combine_store), and the
 * last CTA's merge of a sequence's partials (merge_partials; versions 2-4).
 */
/* kv_len of sequence b: pages * ps for ps1 (no last-page input), else (pages - 1) * ps + last. */
__device__ __forceinline__ int kv_len_of(const int32_t *kv_indptr, const int32_t *last_len, int ps, int b)
{
	const int n = kv_indptr[b + 1] - kv_indptr[b];
	if (n <= 0)
		return 0;
	return last_len ? (n - 1) * ps + last_len[b] : n * ps;
}

__device__ __forceinline__ void bf16x8_to_float(uint4 u, float f[8])
{
	const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
	for (int i = 0; i < 4; i++) {
		f[2 * i] = __uint_as_float(w[i] << 16);
		f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
	}
}

/* 16-byte streaming load that skips L1 (K/V rows are read once); L2 = 256: with .L2::256B (DEC_CP_L2). */
template <int L2 = DEC_CP_L2> __device__ __forceinline__ uint4 ldg_nc(const void *p)
{
	uint4 r;
#ifdef __CUDA_ARCH__
	if (L2 == 256)
		asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
			     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
			     : "l"(p));
	else
		asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
			     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
			     : "l"(p));
#else /* host-side emulation (tests/emu) */
	r = *(const uint4 *)p;
#endif
	return r;
}

/*
 * One half-warp step: scores of positions p0 .. p0 + 3 (K rows kr, V rows vr; positions >= p_end are
 * masked) for the 4 heads, then the base-2 online softmax update of m, l and acc; mid() runs once
 * the K rows are consumed (the register loop fetches the next page ids there). Both half-warps of
 * the warp must call it (xor shuffles within the half-warp).
 */
template <class F>
__device__ __forceinline__ void consume_step(const uint4 kr[POS_PER_GROUP], const uint4 vr[POS_PER_GROUP], int p0,
					     int p_end, const float qf[GRP][8], float m[GRP], float l[GRP],
					     float acc[GRP][8], F &&mid)
{
	float s[POS_PER_GROUP][GRP];
#pragma unroll
	for (int j = 0; j < POS_PER_GROUP; j++) {
		float kf[8];
		bf16x8_to_float(kr[j], kf);
#pragma unroll
		for (int h = 0; h < GRP; h++) {
			float x = 0.0f;
#pragma unroll
			for (int i = 0; i < 8; i++)
				x = fmaf(qf[h][i], kf[i], x);
			s[j][h] = x;
		}
	}
#pragma unroll
	for (int o = 8; o > 0; o >>= 1)
#pragma unroll
		for (int j = 0; j < POS_PER_GROUP; j++)
#pragma unroll
			for (int h = 0; h < GRP; h++)
				s[j][h] += __shfl_xor_sync(0xffffffffu, s[j][h], o);
	mid();
#pragma unroll
	for (int j = 0; j < POS_PER_GROUP; j++)
		if (p0 + j >= p_end)
#pragma unroll
			for (int h = 0; h < GRP; h++)
				s[j][h] = -INFINITY;
	float pw[POS_PER_GROUP][GRP];
#pragma unroll
	for (int h = 0; h < GRP; h++) {
		float mx = m[h];
#pragma unroll
		for (int j = 0; j < POS_PER_GROUP; j++)
			mx = fmaxf(mx, s[j][h]);
		/* mx = -inf only when nothing was valid yet: then corr and the weights are 0 */
		const float mu = mx == -INFINITY ? 0.0f : mx;
		const float corr = exp2f(m[h] - mu);
		m[h] = mx;
		float sum = 0.0f;
#pragma unroll
		for (int j = 0; j < POS_PER_GROUP; j++) {
			pw[j][h] = exp2f(s[j][h] - mu);
			sum += pw[j][h];
		}
		l[h] = l[h] * corr + sum;
#pragma unroll
		for (int i = 0; i < 8; i++)
			acc[h][i] *= corr;
	}
#pragma unroll
	for (int j = 0; j < POS_PER_GROUP; j++) {
		float vf[8];
		bf16x8_to_float(vr[j], vf);
#pragma unroll
		for (int h = 0; h < GRP; h++)
#pragma unroll
			for (int i = 0; i < 8; i++)
				acc[h][i] = fmaf(pw[j][h], vf[i], acc[h][i]);
	}
}

/* 16-byte global -> shared copy that does not wait (cp.async.cg: L2 only), its commit and wait; L2 = 256: with
 * .L2::256B (the L2 fetches the 256-byte stretch around a miss; DEC_CP_L2, session 18). */
template <int L2 = DEC_CP_L2> __device__ __forceinline__ void cp_async16(void *smem, const void *gmem)
{
#ifdef __CUDA_ARCH__
	const unsigned sa = (unsigned)__cvta_generic_to_shared(smem);
	if (L2 == 256)
		asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(sa), "l"(gmem) : "memory");
	else
		asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sa), "l"(gmem) : "memory");
#else /* host-side emulation (tests/emu): a plain copy */
	*(uint4 *)smem = *(const uint4 *)gmem;
#endif
}
__device__ __forceinline__ void cp_async_commit()
{
#ifdef __CUDA_ARCH__
	asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void cp_async_wait()
{
#ifdef __CUDA_ARCH__
	asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

/* Loads the q rows of the 4 heads of kv head kvh (dims 8*sub .. +7), scaled by sm_scale * log2 e, and
 * clears the softmax state. */
__device__ __forceinline__ void init_state(const __nv_bfloat16 *__restrict__ q, int b, int kvh, int sub,
					   float scale_log2, float qf[GRP][8], float m[GRP], float l[GRP],
					   float acc[GRP][8])
{
#pragma unroll
	for (int h = 0; h < GRP; h++) {
		const uint4 u = *(const uint4 *)(q + ((size_t)b * HQ + kvh * GRP + h) * D + sub * 8);
		bf16x8_to_float(u, qf[h]);
#pragma unroll
		for (int i = 0; i < 8; i++)
			qf[h][i] *= scale_log2;
		m[h] = -INFINITY;
		l[h] = 0.0f;
#pragma unroll
		for (int i = 0; i < 8; i++)
			acc[h][i] = 0.0f;
	}
}

/* Merges the two half-warps of the warp (xor 16) and stores the warp's state in sm_m / sm_l /
 * sm_acc[warp] (max m, sum l relative to m, unnormalized accumulators). */
__device__ __forceinline__ void warp_state_store(float m[GRP], float l[GRP], float acc[GRP][8], float (*sm_m)[GRP],
						 float (*sm_l)[GRP], float (*sm_acc)[GRP][D])
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, sub = lane & 15;
#pragma unroll
	for (int h = 0; h < GRP; h++) {
		const float mo = __shfl_xor_sync(0xffffffffu, m[h], 16);
		const float lo = __shfl_xor_sync(0xffffffffu, l[h], 16);
		const float mx = fmaxf(m[h], mo);
		const float a = mx == -INFINITY ? 0.0f : exp2f(m[h] - mx);
		const float c = mx == -INFINITY ? 0.0f : exp2f(mo - mx);
		l[h] = l[h] * a + lo * c;
#pragma unroll
		for (int i = 0; i < 8; i++) {
			const float ao = __shfl_xor_sync(0xffffffffu, acc[h][i], 16);
			acc[h][i] = acc[h][i] * a + ao * c;
		}
		m[h] = mx;
	}
	if (lane < 16) {
#pragma unroll
		for (int h = 0; h < GRP; h++) {
#pragma unroll
			for (int i = 0; i < 8; i++)
				sm_acc[warp][h][sub * 8 + i] = acc[h][i];
			if (sub == 0) {
				sm_m[warp][h] = m[h];
				sm_l[warp][h] = l[h];
			}
		}
	}
}

/*
 * The attention of the 4 query heads of kv head kvh of sequence b over kv positions [p_begin, p_end)
 * (p_begin < p_end), pages = the sequence's page ids; K/V straight into registers. Lane l of
 * half-warp hw holds dims 8*(l%16) .. +7 of the 4 queries and of their 4 accumulators; a CTA step
 * covers 64 positions, 4 consecutive ones per half-warp (8 loads of 16 B in flight per lane). Ends
 * with each warp's state in sm_m / sm_l / sm_acc[warp]; the caller synchronizes before reading them.
 */
template <int PS>
__device__ __forceinline__ void
attend_range(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
	     const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ pages, int ps, float scale_log2,
	     int b, int kvh, int p_begin, int p_end, float (*sm_m)[GRP], float (*sm_l)[GRP], float (*sm_acc)[GRP][D])
{
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int sub = lane & 15;                 /* lane within the half-warp: dims 8*sub .. 8*sub+7 */
	float qf[GRP][8], acc[GRP][8], m[GRP], l[GRP];
	init_state(q, b, kvh, sub, scale_log2, qf, m, l, acc);

	/* page ids of the current step, fetched one step ahead (positions clamped to a valid row: a
	 * masked position reads p_end - 1) */
	/* with PS a multiple of 4, a step's 4 positions (p0 is a multiple of 4) share one page: one id */
	constexpr int NPG = (PS >= POS_PER_GROUP && PS % POS_PER_GROUP == 0) ? 1 : POS_PER_GROUP;
	int pg[NPG];
	{
		const int p0 = p_begin + warp * 2 * POS_PER_GROUP + (lane >> 4) * POS_PER_GROUP;
#pragma unroll
		for (int j = 0; j < NPG; j++)
			pg[j] = pages[min(p0 + j, p_end - 1) / ps];
	}
	/* warp-uniform trip count (the shuffles need both half-warps): the odd half-warp may see a step
	 * with no valid position; its scores are then all -inf and the step changes nothing */
	for (int pw0 = p_begin + warp * 2 * POS_PER_GROUP; pw0 < p_end; pw0 += POS_PER_STEP) {
		const int p0 = pw0 + (lane >> 4) * POS_PER_GROUP;
		uint4 kr[POS_PER_GROUP], vr[POS_PER_GROUP];
#pragma unroll
		for (int j = 0; j < POS_PER_GROUP; j++) {
			const int p = min(p0 + j, p_end - 1);
			const size_t off = (((size_t)pg[NPG == 1 ? 0 : j] * ps + p % ps) * HKV + kvh) * D + sub * 8;
			kr[j] = ldg_nc(k_cache + off);
			vr[j] = ldg_nc(v_cache + off);
		}
		consume_step(kr, vr, p0, p_end, qf, m, l, acc, [&] {
#pragma unroll
			for (int j = 0; j < NPG; j++) /* the next step's pages (K is consumed) */
				pg[j] = pages[min(p0 + POS_PER_STEP + j, p_end - 1) / ps];
		});
	}
	warp_state_store(m, l, acc, sm_m, sm_l, sm_acc);
}

#if DEC_STAGES > 0
/*
 * attend_range with K/V staged through shared memory: a ring of DEC_STAGES buffers of one CTA step
 * (64 positions x K and V x 256 B = 32 KiB each) filled by cp.async.cg, DEC_STAGES steps in flight
 * per CTA (96 KiB for 3) whatever the register budget. Thread t copies 16-byte column t % 16 of rows
 * t / 16 + 16 j (j < 4) of K and of V; the page ids of the stage issued next are fetched one step
 * ahead. The math is consume_step on rows warp * 8 + half * 4 + j, as in attend_range, or with
 * DECODE_MMA (version 3) mma_step on rows warp * 8 .. + 7 on tensor cores, the rows then stored
 * swizzled (16-byte chunk c of row r at c ^ (r % 8), conflict-free ldmatrix). ring: dynamic shared
 * memory of DEC_STAGES * 32 KiB; sm_acc may alias it (it is written after the last step).
 * PRE 1 (the batch-1 path, -DDEC_B1_IDS): pre[s][j] already holds the page id of row t / 16 + 16 j of
 * step s < DEC_STAGES (what DEC_FETCH_IDS would load); the ring's first copies are issued from it.
 */
#if DEC_DIAG_GATHER && defined(SF_EMU_H)
/* tests/emu only: how often the diagnostic copied each 16-B chunk of K (batch 1), set by the test */
static unsigned *dec_diag_hits;
static const __nv_bfloat16 *dec_diag_base;
#define DEC_DIAG_NOTE1(p_)                                                                                 \
	do {                                                                                               \
		if (dec_diag_hits)                                                                         \
			__atomic_fetch_add(&dec_diag_hits[((p_) - dec_diag_base) / 8], 1u, __ATOMIC_RELAXED); \
	} while (0)
#define DEC_DIAG_NOTE(p_)                 \
	do {                              \
		if (PRE)                  \
			DEC_DIAG_NOTE1(p_); \
	} while (0)
#else
#define DEC_DIAG_NOTE1(p_) \
	do {               \
	} while (0)
#define DEC_DIAG_NOTE(p_) DEC_DIAG_NOTE1(p_)
#endif
#if DECODE_MMA && DEC_DIAG_GATHER
/* The diagnostic's result (finite, wrong by design): the warp's XOR of what its threads read, so no load is dead. */
__device__ __forceinline__ void dec_diag_fold(uint32_t x, float &m, float &l, float (*o)[4])
{
#pragma unroll
	for (int s_ = 16; s_ > 0; s_ >>= 1)
		x ^= __shfl_xor_sync(0xffffffffu, x, s_);
	m = 0.0f;
	l = 1.0f;
	o[0][0] = (float)(x & 0xffu);
}
#endif
#if DECODE_MMA && DEC_DIAG_GATHER == 5
/*
 * Diagnostic 5 (batch 1 only): the rows attend_range_cp would copy - the same thread -> (row, 16-B column)
 * map, the same page-table addresses, the same DEC_STAGES steps in flight per thread (RPT rows of K and of V
 * each) - loaded into registers by ld.global.nc instead of cp.async into the ring; no shared memory and no
 * barrier in the loop; returns the XOR of every word loaded. pre: step s < DEC_STAGES's page ids (decode_b1's).
 * The page ids of step s + DEC_STAGES are loaded one step before their rows are issued, as the ring loads
 * them one wait ahead.
 */
template <int RPT>
__device__ __forceinline__ uint32_t dec_diag_regs(const __nv_bfloat16 *__restrict__ k_cache,
						  const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ pages,
						  int ps, int kvh, int p_begin, int p_end, int nsteps, const int (*pre)[RPT])
{
	constexpr int ROWS = POS_PER_STEP, COLS = D / 8;
	const int tid = threadIdx.x, col = tid % COLS, row0 = tid / COLS;
	uint4 rk[DEC_STAGES][RPT], rv[DEC_STAGES][RPT];
	int nxt[RPT]; /* the page ids of step s + DEC_STAGES, loaded during step s - 1 */
	uint32_t x = 0u;
	auto issue = [&](uint4 *k_, uint4 *v_, const int *ids, int s) {
#pragma unroll
		for (int j = 0; j < RPT; j++) {
			const int p = min(p_begin + s * ROWS + row0 + 16 * j, p_end - 1);
			const size_t off = (((size_t)ids[j] * ps + p % ps) * HKV + kvh) * D + col * 8;
			k_[j] = ldg_nc(k_cache + off);
			DEC_DIAG_NOTE1(k_cache + off);
			v_[j] = ldg_nc(v_cache + off);
		}
	};
	auto fetch = [&](int s) {
#pragma unroll
		for (int j = 0; j < RPT; j++)
			nxt[j] = pages[min(p_begin + s * ROWS + row0 + 16 * j, p_end - 1) / ps];
	};
#pragma unroll
	for (int k = 0; k < DEC_STAGES; k++)
		if (k < nsteps)
			issue(rk[k], rv[k], pre[k], k);
	if (DEC_STAGES < nsteps)
		fetch(DEC_STAGES);
	for (int s0 = 0; s0 < nsteps; s0 += DEC_STAGES) {
#pragma unroll
		for (int k = 0; k < DEC_STAGES; k++) { /* step s = s0 + k lives in registers k (constant index) */
			const int s = s0 + k;
			if (s < nsteps) {
#pragma unroll
				for (int j = 0; j < RPT; j++)
					x ^= rk[k][j].x ^ rk[k][j].y ^ rk[k][j].z ^ rk[k][j].w ^ rv[k][j].x ^ rv[k][j].y ^
					     rv[k][j].z ^ rv[k][j].w;
				if (s + DEC_STAGES < nsteps) {
					int ids[RPT];
#pragma unroll
					for (int j = 0; j < RPT; j++)
						ids[j] = nxt[j];
					if (s + DEC_STAGES + 1 < nsteps)
						fetch(s + DEC_STAGES + 1);
					issue(rk[k], rv[k], ids, s + DEC_STAGES);
				}
			}
		}
	}
	return x;
}
#endif
#if DECODE_MMA
#define DEC_SWZ(r, c) ((c) ^ ((r) & 7))
#else
#define DEC_SWZ(r, c) (c)
#endif
template <int PS, int PRE = 0, int L2 = DEC_CP_L2, int ST = DEC_STAGES> /* L2: the copies' fetch-size hint (cp_async16);
									    * ST: the ring's steps in flight */
__device__ __forceinline__ void
attend_range_cp(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
		const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ pages, int ps, float scale_log2,
		int b, int kvh, int p_begin, int p_end, uint4 *ring, float (*sm_m)[GRP], float (*sm_l)[GRP],
		float (*sm_acc)[GRP][D], const int (*pre)[POS_PER_STEP * (D / 8) / ATT_THREADS] = nullptr
#if DEC_DIAG_GATHER
		, int diag_len = 0
#endif
)
{
	constexpr int ROWS = POS_PER_STEP, COLS = D / 8;          /* 64 rows of 16 x 16 B per tensor */
	constexpr int RPT = ROWS * COLS / ATT_THREADS;            /* rows per thread per tensor: 4 */
	const int tid = threadIdx.x, col = tid % COLS, row0 = tid / COLS;
#if !DECODE_MMA
	const int lane = tid & 31, warp = tid >> 5, sub = lane & 15;
#endif
	const int nsteps = (p_end - p_begin + ROWS - 1) / ROWS;
	/* the page ids of step s's rows (clamped to p_end - 1) into ids[] */
#define DEC_FETCH_IDS(ids, s_)                                                                     \
	do {                                                                                       \
		_Pragma("unroll") for (int j = 0; j < RPT; j++)                                    \
			ids[j] = pages[min(p_begin + (s_) * ROWS + row0 + 16 * j, p_end - 1) / ps]; \
	} while (0)
	/* copies step s's rows into ring buffer s % ST, page ids from ids[] */
#define DEC_ISSUE(ids, s_)                                                                         \
	do {                                                                                       \
		uint4 *kb_ = ring + (size_t)((s_) % ST) * 2 * ROWS * COLS;                 \
		_Pragma("unroll") for (int j = 0; j < RPT; j++)                                    \
		{                                                                                  \
			const int r_ = row0 + 16 * j;                                              \
			const int p_ = min(p_begin + (s_) * ROWS + r_, p_end - 1);                 \
			const size_t off_ = DEC_ROW_OFF(ids[j], p_) + col * 8;                      \
			if (!DEC_DIAG_NOCOPY) {                                                    \
				cp_async16<L2>(kb_ + r_ * COLS + DEC_SWZ(r_, col), k_cache + off_); \
				DEC_DIAG_NOTE(k_cache + off_);                                     \
				cp_async16<L2>(kb_ + (ROWS + r_) * COLS + DEC_SWZ(r_, col), v_cache + off_); \
			} else {                                                                   \
				(void)off_;                                                        \
			}                                                                          \
		}                                                                                  \
	} while (0)
	/* the element offset of row (position p_, kv head kvh) whose page id is id_ (DEC_DIAG_GATHER: the
	 * variant's address, the id kept live as + (id_ < 0), never true; batch 1 only) */
#if DEC_DIAG_GATHER == 2
#define DEC_ROW_OFF(id_, p_) \
	((PRE ? (size_t)kvh * diag_len + (p_) + ((id_) < 0) : ((size_t)(id_) * ps + (p_) % ps) * HKV + kvh) * D)
#elif DEC_DIAG_GATHER == 3
#define DEC_ROW_OFF(id_, p_) \
	((PRE ? (size_t)(p_) * HKV + kvh + ((id_) < 0) : ((size_t)(id_) * ps + (p_) % ps) * HKV + kvh) * D)
#else
#define DEC_ROW_OFF(id_, p_) ((((size_t)(id_) * ps + (p_) % ps) * HKV + kvh) * D)
#endif
	/* the diagnostic's variants of batch 1 (PRE): 4 copies nothing (the chain alone), 5 loads the rows into
	 * registers instead (dec_diag_regs), 6 drops the loop's two barriers (each thread reads only its own chunks) */
	constexpr bool DEC_DIAG_NOCOPY = PRE && DEC_DIAG_GATHER == 4;
	constexpr bool DEC_DIAG_NOSYNC = PRE && DEC_DIAG_GATHER == 6;
#if DEC_DIAG_GATHER == 5
	if constexpr (PRE) {
		const uint32_t x_ = dec_diag_regs<RPT>(k_cache, v_cache, pages, ps, kvh, p_begin, p_end, nsteps, pre);
		uint32_t qa[D / 16][2];
		float o[D / 16][4], m, l;
		mma_init(q, b, kvh, qa, m, l, o);
		dec_diag_fold(x_, m, l, o);
		mma_state_store(m, l, o, sm_m, sm_l, sm_acc);
		return;
	}
#endif
	int pg[RPT];
	{
		/* the first ST steps: every page id load first, then every copy (one latency) */
		int pg0[ST][RPT];
		if constexpr (PRE) {
#pragma unroll
			for (int s = 0; s < ST; s++)
				_Pragma("unroll") for (int j = 0; j < RPT; j++) pg0[s][j] = pre[s][j];
		} else {
#pragma unroll
			for (int s = 0; s < ST; s++)
				if (s < nsteps)
					DEC_FETCH_IDS(pg0[s], s);
		}
#if DEC_EXP_IDS2 /* timing only: the same ids again, through L2, each dependent on the first (never < 0) */
#pragma unroll
		for (int s = 0; s < ST; s++)
			if (s < nsteps)
				_Pragma("unroll") for (int j = 0; j < RPT; j++)
					pg0[s][j] = __ldcg(pages + min(p_begin + s * ROWS + row0 + 16 * j, p_end - 1) / ps +
							   (pg0[s][j] < 0));
#endif
#pragma unroll
		for (int s = 0; s < ST; s++) {
			if (s < nsteps)
				DEC_ISSUE(pg0[s], s);
			cp_async_commit(); /* one group per step, empty past the end: the wait count is fixed */
		}
	}
#if DECODE_MMA
	uint32_t qa[D / 16][2];
	float o[D / 16][4], m, l;
	mma_init(q, b, kvh, qa, m, l, o);
#if DEC_DIAG_GATHER
	uint32_t diag_x = 0u; /* the XOR of every chunk this thread copied (batch 1: replaces mma_step) */
#endif
#else
	float qf[GRP][8], acc[GRP][8], m[GRP], l[GRP];
	init_state(q, b, kvh, sub, scale_log2, qf, m, l, acc);
#endif
	for (int s = 0; s < nsteps; s++) {
		if (s + ST < nsteps)
			DEC_FETCH_IDS(pg, s + ST);
		cp_async_wait<ST - 1>(); /* this thread's copies of step s have landed */
		if (!DEC_DIAG_NOSYNC)
			__syncthreads(); /* everyone's */
		const uint4 *kb = ring + (size_t)(s % ST) * 2 * ROWS * COLS;
#if DECODE_MMA && DEC_DIAG_GATHER
		if constexpr (PRE) { /* no math: the thread's own 2 x RPT chunks of this step, XORed */
#pragma unroll
			for (int j = 0; j < RPT; j++) {
				const int r_ = row0 + 16 * j;
				const uint4 a_ = kb[r_ * COLS + DEC_SWZ(r_, col)], b_ = kb[(ROWS + r_) * COLS + DEC_SWZ(r_, col)];
				diag_x ^= a_.x ^ a_.y ^ a_.z ^ a_.w ^ b_.x ^ b_.y ^ b_.z ^ b_.w;
			}
		} else {
			mma_step(kb, p_begin + s * ROWS, p_end, scale_log2, qa, m, l, o);
		}
#elif DECODE_MMA
		mma_step(kb, p_begin + s * ROWS, p_end, scale_log2, qa, m, l, o);
#else
		const int r = warp * 2 * POS_PER_GROUP + (lane >> 4) * POS_PER_GROUP;
		uint4 kr[POS_PER_GROUP], vr[POS_PER_GROUP];
#pragma unroll
		for (int j = 0; j < POS_PER_GROUP; j++) {
			kr[j] = kb[(r + j) * COLS + sub];
			vr[j] = kb[(ROWS + r + j) * COLS + sub];
		}
		consume_step(kr, vr, p_begin + s * ROWS + r, p_end, qf, m, l, acc, [] {});
#endif
		if (!DEC_DIAG_NOSYNC)
			__syncthreads(); /* buffer s % ST is read: refill it */
		if (s + ST < nsteps)
			DEC_ISSUE(pg, s + ST);
		cp_async_commit();
	}
#undef DEC_FETCH_IDS
#undef DEC_ISSUE
#undef DEC_ROW_OFF
#undef DEC_DIAG_NOTE
	cp_async_wait<0>();
	__syncthreads(); /* sm_acc may alias the ring */
#if DECODE_MMA && DEC_DIAG_GATHER
	if constexpr (PRE)
		dec_diag_fold(diag_x, m, l, o);
#endif
#if DECODE_MMA
	mma_state_store(m, l, o, sm_m, sm_l, sm_acc);
#else
	warp_state_store(m, l, acc, sm_m, sm_l, sm_acc);
#endif
}
#undef DEC_SWZ
#endif

/*
 * Combines the 8 warp states in shared memory (max m, sum l relative to m, unnormalized acc) into the
 * 4 heads x 128 dims of one GQA group (2 values per thread) and stores them: as fp32 po[h * D + d]
 * and plse[h] when po is set, else as bf16 bo[h * D + d] and blse[h]. A group with nothing in it
 * (every l = 0) stores zeros and lse -inf.
 */
__device__ __forceinline__ void combine_store(const float (*sm_m)[GRP], const float (*sm_l)[GRP],
					      const float (*sm_acc)[GRP][D], float *po, float *plse,
					      __nv_bfloat16 *bo, float *blse)
{
	for (int o = threadIdx.x; o < GRP * D; o += ATT_THREADS) {
		const int h = o / D, d = o % D;
		float mx = -INFINITY;
#pragma unroll
		for (int x = 0; x < ATT_WARPS; x++)
			mx = fmaxf(mx, sm_m[x][h]);
		float L = 0.0f, A = 0.0f;
#pragma unroll
		for (int x = 0; x < ATT_WARPS; x++) {
			const float f = sm_m[x][h] == -INFINITY ? 0.0f : exp2f(sm_m[x][h] - mx);
			L += sm_l[x][h] * f;
			A += sm_acc[x][h][d] * f;
		}
		const float val = L > 0.0f ? A / L : 0.0f;
		const float lv = L > 0.0f ? mx + log2f(L) : -INFINITY;
		if (po) {
			po[h * D + d] = val;
			if (d == 0)
				plse[h] = lv;
		} else {
			bo[h * D + d] = __float2bfloat16(val);
			if (d == 0)
				blse[h] = lv;
		}
	}
}

/*
 * The last CTA of (sequence, kv head kvh): combines the sequence's n partials (partial c in row
 * slot(c); version 2/3: items s0 .. s0 + n - 1) in order - warp w takes partials w, w + 8, ..., lane l
 * dims 4l .. 4l + 3 of the 4 heads - into the warp states of sm_m / sm_l / sm_acc (as attend_range
 * leaves them). Partials are read through L2 (ld.cg): other SMs wrote them.
 */
template <class SLOT>
__device__ __forceinline__ void merge_partials(const float *part_o, const float *part_lse, SLOT slot, int n, int kvh,
					       float (*sm_m)[GRP], float (*sm_l)[GRP], float (*sm_acc)[GRP][D])
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	float m[GRP], l[GRP], a[GRP][4];
#pragma unroll
	for (int h = 0; h < GRP; h++) {
		m[h] = -INFINITY;
		l[h] = 0.0f;
#pragma unroll
		for (int i = 0; i < 4; i++)
			a[h][i] = 0.0f;
	}
#if DEC_MERGE_UNROLL == 4
#pragma unroll 4 /* four chunks' loads in flight per warp: up to 32 chunks in one round trip */
#else
#pragma unroll 2 /* two chunks' loads in flight per warp */
#endif
	for (int c = warp; c < n; c += ATT_WARPS) {
		const size_t row = (size_t)slot(c) * HQ + kvh * GRP;
		const float4 ls = __ldcg((const float4 *)(part_lse + row));
		const float lv[GRP] = {ls.x, ls.y, ls.z, ls.w};
		float4 ov[GRP];
#pragma unroll
		for (int h = 0; h < GRP; h++)
			ov[h] = __ldcg((const float4 *)(part_o + (row + h) * D) + lane);
#pragma unroll
		for (int h = 0; h < GRP; h++) {
			const float mx = fmaxf(m[h], lv[h]);
			const float mu = mx == -INFINITY ? 0.0f : mx;
			const float corr = exp2f(m[h] - mu), wt = exp2f(lv[h] - mu);
			m[h] = mx;
			l[h] = l[h] * corr + wt;
			a[h][0] = a[h][0] * corr + wt * ov[h].x;
			a[h][1] = a[h][1] * corr + wt * ov[h].y;
			a[h][2] = a[h][2] * corr + wt * ov[h].z;
			a[h][3] = a[h][3] * corr + wt * ov[h].w;
		}
	}
#pragma unroll
	for (int h = 0; h < GRP; h++) {
#pragma unroll
		for (int i = 0; i < 4; i++)
			sm_acc[warp][h][lane * 4 + i] = a[h][i];
		if (lane == 0) {
			sm_m[warp][h] = m[h];
			sm_l[warp][h] = l[h];
		}
	}
}
