/*
 * gn_l2win.cuh - groupnorm32_silu_sd_vae, the L2-windowed two-pass path (v4, GN_L2WIN=1; NOTES.md
 * "Version 4"): a persistent grid reads every chunk of x twice, the second time from L2, so HBM moves the
 * byte floor (x once, y once) in one launch. Included by fast.cu after the shared helpers (gn_lo/gn_hi,
 * gn_sum8/gn_dev8, gn_ld_stream, gn_backoff, gn_apply8_fast, gn_apply8_ch) and gn_shared.cuh (GN_SHARED,
 * gn_cp16, gn_cp_commit, gn_cp_wait); not a standalone header.
 *
 * Chunks of GN_L2W_CV values per group (group-major: global chunk j is chunk j % nchunk of group
 * j / nchunk, the last chunk of a group partial), dealt round-robin: CTA b owns chunks b, b + G, ...
 * (its local chunks 0, 1, ...). Every CTA runs a statistics cursor `look` local chunks ahead of its
 * apply cursor: iteration k issues local chunk k + look into a shared slot (cp.async, HBM), applies
 * local chunk k (loaded into registers again: it was read `look` iterations ago, so it is in L2), then
 * waits for the slot and reduces and publishes chunk k + look. Between the two cursors lie look * G
 * chunks of x, the L2 window (GN_L2W_KB, about 18 MB): the re-read hits L2 while HBM sees one stream
 * of reads and one of writes.
 * Publishing: per-warp two-pass (mean, M2) from registers, combined across warps (Chan, fixed order)
 * into the chunk's partial; one float2 per chunk in ws, then an arrival on the group's counter. The
 * last arrival (one warp) merges the group's nchunk partials (one shifted pass, fixed order) and
 * releases the group's (mean, rstd) as one 64-bit word (rstd > 0 marks it ready). Appliers poll that word once per
 * group change (ld.acquire, per lane: no block barrier on the apply side).
 * Deadlock freedom (all CTAs resident: grid <= occupancy x SMs): before applying local chunk k a CTA has
 * published its local chunks < k + look. In a state where every unfinished CTA waits, let j0 be the
 * smallest waited chunk; every CTA Y waits at a chunk j_Y >= j0 and has published all its chunks
 * below j_Y + look * G, so every chunk < j0 + look * G is published; group(j0) ends before
 * j0 + nchunk, so look * G >= nchunk (the host's lower bound on look) completes it: no such state.
 * Per-group record rec[4 g .. 4 g + 3] = arrivals, departures, mean bits, rstd bits (zero between
 * launches): one departure per (chunk, warp) after the warp has used the word; the last one zeroes the
 * record for the next launch (nothing on the host per call).
 */
#ifndef GN_L2WIN_CUH
#define GN_L2WIN_CUH

#ifndef GN_L2WIN
#define GN_L2WIN 0 /* 1: the L2-windowed path for groups over GN_FUSED_MAX (16-byte case); unmeasured yet */
#endif
#ifndef GN_L2W_THREADS
#define GN_L2W_THREADS 256
#endif
#ifndef GN_L2W_VPT
#define GN_L2W_VPT 4 /* 16-byte vectors per thread per chunk: chunks of 256 * 4 * 8 = 8192 values (16 KB) */
#endif
#ifndef GN_L2W_MINB
#define GN_L2W_MINB 4 /* launch bound: CTAs per SM (4 x 256 threads: <= 64 registers) */
#endif
#ifndef GN_L2W_KB
#define GN_L2W_KB 18432 /* the L2 window: x read for statistics and not yet applied, at most about this */
#endif
#ifndef GN_L2W_CS
#define GN_L2W_CS 1 /* y stored evict-first (st.global.cs), so that it does not push the window out of L2 */
#endif
#define GN_L2W_CV ((int64_t)GN_L2W_THREADS * GN_L2W_VPT * 8)
#define GN_L2W_WARPS (GN_L2W_THREADS / 32)
#if GN_L2W_THREADS % 32 != 0 || GN_L2W_THREADS > 1024 || GN_L2W_VPT < 1
#error "GN_L2W_THREADS must be a multiple of 32 (<= 1024) and GN_L2W_VPT >= 1"
#endif

static __device__ __forceinline__ unsigned long long gn_ld_acquire64(const unsigned long long *p)
{
	unsigned long long v;
#ifdef __CUDA_ARCH__
	asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
#else /* host-side emulation (tests/emu) */
	v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
	return v;
}
static __device__ __forceinline__ void gn_st_release64(unsigned long long *p, unsigned long long v)
{
#ifdef __CUDA_ARCH__
	asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}
static __device__ __forceinline__ float gn_warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}
static __device__ __forceinline__ void gn_syncwarp(void)
{
#ifdef __CUDA_ARCH__
	__syncwarp();
#else /* the emulation's shuffle is a warp barrier */
	(void)__shfl_xor_sync(0xffffffffu, 0.0f, 1);
#endif
}
static __device__ __forceinline__ void gn_l2w_store(uint4 *p, uint4 v)
{
#if GN_L2W_CS
	__stcs(p, v);
#else
	*p = v;
#endif
}

/* e / hw for a value offset e in a group of cpg channels (e < cpg * hw): by a float multiply and a
 * +-1 correction when the quotient is small (cpg <= 2^16: the product's relative error ~2^-22 is far
 * below 1 / cpg), else an integer division (~15 instructions per vector of 8 values saved). */
static __device__ __forceinline__ int gn_l2w_channel(int e, int hw, float inv_hw, int cpg)
{
	if (cpg > 65536)
		return e / hw;
	int q = (int)((float)e * inv_hw);
	const int r = e - q * hw;
	q += r < 0 ? -1 : r >= hw ? 1 : 0;
	return q;
}

/* Chunk j: its group, its first value in the group and its 16-byte vectors (32-bit: the host checks
 * cnt and the chunk count < 2^31; cnt % 8 == 0 in this path). */
struct gn_l2w_chunk {
	int grp, start, nv;
};
static __device__ __forceinline__ gn_l2w_chunk gn_l2w_at(int j, int cnt, int nchunk)
{
	gn_l2w_chunk c;
	c.grp = j / nchunk;
	c.start = (j - c.grp * nchunk) * (int)GN_L2W_CV;
	c.nv = (cnt - c.start < (int)GN_L2W_CV ? cnt - c.start : (int)GN_L2W_CV) / 8;
	return c;
}

/* Loads the vectors of chunk c into v (vector tid + k * THREADS; zeros past the chunk's end). */
static __device__ __forceinline__ void gn_l2w_load(const uint4 *__restrict__ x, uint4 (&v)[GN_L2W_VPT], gn_l2w_chunk c,
						   int cnt)
{
	const uint4 *src = x + ((int64_t)c.grp * cnt + c.start) / 8;
#pragma unroll
	for (int k = 0; k < GN_L2W_VPT; k++) {
		const int i = (int)threadIdx.x + k * GN_L2W_THREADS;
		v[k] = i < c.nv ? gn_ld_stream(src + i) : make_uint4(0, 0, 0, 0);
	}
}

/* Issues the statistics read of chunk c into this CTA's shared slot (cp.async, L2 only), one commit
 * group. Thread t copies the vectors it reduces later (t + k * THREADS), so its own wait suffices. */
static __device__ __forceinline__ void gn_l2w_issue(const uint4 *__restrict__ x, uint4 *slot, gn_l2w_chunk c, int cnt)
{
	const uint4 *src = x + ((int64_t)c.grp * cnt + c.start) / 8;
#pragma unroll
	for (int k = 0; k < GN_L2W_VPT; k++) {
		const int i = (int)threadIdx.x + k * GN_L2W_THREADS;
		if (i < c.nv)
			gn_cp16(slot + i, src + i);
	}
	gn_cp_commit();
}

/* Values of chunk-local vectors held by warp w: 8 x sum over k of the valid ones of its 32. */
static __device__ __forceinline__ float gn_l2w_warp_count(int w, int nv)
{
	int n = 0;
	for (int k = 0; k < GN_L2W_VPT; k++) {
		const int r = nv - (k * GN_L2W_THREADS + w * 32);
		n += r <= 0 ? 0 : r >= 32 ? 32 : r;
	}
	return (float)(8 * n);
}

/* Chunk c (global index j) from this thread's vectors of the slot, once landed: its (mean, M2) to
 * ws[j], an arrival on its group's counter; the group's last arrival merges the partials and releases
 * (mean, rstd). part: this publish's
 * GN_L2W_WARPS slots of shared memory (alternated by the caller: one barrier per publish). */
static __device__ __forceinline__ void gn_l2w_publish(const uint4 *slot, gn_l2w_chunk c, int j, float2 *ws, unsigned *rec,
						      int cnt, int nchunk, float eps, float2 *part)
{
	const int w = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
	gn_cp_wait(0);
	uint4 v[GN_L2W_VPT];
#pragma unroll
	for (int k = 0; k < GN_L2W_VPT; k++) {
		const int i = (int)threadIdx.x + k * GN_L2W_THREADS;
		v[k] = i < c.nv ? slot[i] : make_uint4(0, 0, 0, 0);
	}
	const float nw = gn_l2w_warp_count(w, c.nv);
	float s = 0.0f;
#pragma unroll
	for (int k = 0; k < GN_L2W_VPT; k++)
		s += gn_sum8(v[k]); /* slots past the end hold +0 */
	s = gn_warp_sum(s);
	const float wmean = nw > 0.0f ? s / nw : 0.0f;
	float m2 = 0.0f;
#pragma unroll
	for (int k = 0; k < GN_L2W_VPT; k++)
		if ((int)threadIdx.x + k * GN_L2W_THREADS < c.nv)
			m2 += gn_dev8(v[k], wmean);
	m2 = gn_warp_sum(m2);
	if (lane == 0)
		part[w] = make_float2(wmean, m2);
	__syncthreads();
	if (w != 0)
		return;
	float last = 0.0f;
	if (lane == 0) { /* Chan, warps in order */
		float n = 0.0f, mean = 0.0f, q = 0.0f;
		for (int i = 0; i < GN_L2W_WARPS; i++) {
			const float ni = gn_l2w_warp_count(i, c.nv);
			if (ni == 0.0f)
				continue;
			const float2 p = part[i];
			const float d = p.x - mean, nn = n + ni;
			mean += d * (ni / nn);
			q += p.y + d * d * (n * ni / nn);
			n = nn;
		}
		ws[j] = make_float2(mean, q);
		__threadfence(); /* the partial is visible before the arrival */
		last = atomicAdd(rec + 4 * c.grp, 1u) == (unsigned)nchunk - 1u ? 1.0f : 0.0f;
	}
	if (gn_warp_sum(last) == 0.0f) /* lane 0's verdict to the warp */
		return;
	__threadfence();
	/* one pass, shifted by chunk 0's mean K (within ~sigma / sqrt(chunk) of the group's, so s2 - s1^2 / cnt
	 * does not cancel): s1 = sum n_i (mean_i - K), s2 = sum M2_i + n_i (mean_i - K)^2, in a fixed order;
	 * partials fetched 8 per lane at a time (the merge delays the group's release: few round trips) */
	const float2 *p = ws + (int64_t)c.grp * nchunk;
	const float K = __ldcg(p).x;
	float s1 = 0.0f, s2 = 0.0f;
	for (int base = 0; base < nchunk; base += 8 * 32) {
		float2 q[8];
#pragma unroll
		for (int u = 0; u < 8; u++) {
			const int i = base + u * 32 + lane;
			q[u] = i < nchunk ? __ldcg(p + i) : make_float2(K, 0.0f);
		}
#pragma unroll
		for (int u = 0; u < 8; u++) {
			const int i = base + u * 32 + lane;
			if (i < nchunk) {
				const int r = cnt - i * (int)GN_L2W_CV;
				const float ni = (float)(r < (int)GN_L2W_CV ? r : (int)GN_L2W_CV), d = q[u].x - K;
				s1 += ni * d;
				s2 += q[u].y + ni * d * d;
			}
		}
	}
	s1 = gn_warp_sum(s1);
	s2 = gn_warp_sum(s2);
	const float mean = K + s1 / (float)cnt;
	const float rstd = rsqrtf(fmaxf(s2 - s1 * (s1 / (float)cnt), 0.0f) / (float)cnt + eps);
	if (lane == 0)
		gn_st_release64(reinterpret_cast<unsigned long long *>(rec + 4 * c.grp + 2),
				(unsigned long long)__float_as_uint(mean) | (unsigned long long)__float_as_uint(rstd) << 32);
}

__global__ void __launch_bounds__(GN_L2W_THREADS, GN_L2W_MINB)
	gn_l2w(const uint4 *__restrict__ x, const __half *__restrict__ gamma, const __half *__restrict__ beta, float2 *ws,
	       unsigned *rec, uint4 *__restrict__ y, int cnt, int nchunk, int total, int look, int cpg, int hw, float eps)
{
	GN_SHARED(float2, part, 2 * GN_L2W_WARPS, 2001);
	GN_SHARED(uint4, slot, GN_L2W_THREADS * GN_L2W_VPT, 2002); /* the statistics chunk in flight */
	const int G = (int)gridDim.x, b = (int)blockIdx.x;
	const int K = (total - b + G - 1) / G; /* local chunks; the host launches at most `total` CTAs */
	const int lane = (int)(threadIdx.x & 31);
	uint4 av[GN_L2W_VPT];
	for (int m = 0; m < look && m < K; m++) {
		const gn_l2w_chunk c = gn_l2w_at(b + m * G, cnt, nchunk);
		gn_l2w_issue(x, slot, c, cnt);
		gn_l2w_publish(slot, c, b + m * G, ws, rec, cnt, nchunk, eps, part + (m & 1) * GN_L2W_WARPS);
	}
	int cur = -1;
	float mean = 0.0f, rstd = 0.0f;
	const float inv_hw = 1.0f / (float)hw;
	for (int k = 0; k < K; k++) {
		const int m = k + look; /* m * G < 2^31: look * G <= total + G <= 2^30 (host) */
		if (m < K) /* the statistics read, in flight during the apply below */
			gn_l2w_issue(x, slot, gn_l2w_at(b + m * G, cnt, nchunk), cnt);
		const gn_l2w_chunk c = gn_l2w_at(b + k * G, cnt, nchunk);
		gn_l2w_load(x, av, c, cnt); /* read look iterations ago: from L2 */
		if (c.grp != cur) {
			const unsigned long long *wp = reinterpret_cast<const unsigned long long *>(rec + 4 * c.grp + 2);
			unsigned long long wd;
			while (((wd = gn_ld_acquire64(wp)) >> 32) == 0) { /* rstd > 0 once released */
				gn_backoff();
#ifdef SF_EMU_H
				emu_yield();
#endif
			}
			mean = __uint_as_float((unsigned)(wd & 0xffffffffu));
			rstd = __uint_as_float((unsigned)(wd >> 32));
			cur = c.grp;
		}
		uint4 *dst = y + ((int64_t)c.grp * cnt + c.start) / 8;
		const int cbase = (c.grp % GN_GROUPS) * cpg;
		if (hw % 8 == 0) { /* a vector lies in one channel (every workload) */
#pragma unroll
			for (int v = 0; v < GN_L2W_VPT; v++) {
				const int i = (int)threadIdx.x + v * GN_L2W_THREADS;
				if (i < c.nv) {
					const int ch = cbase + gn_l2w_channel(c.start + i * 8, hw, inv_hw, cpg);
					const float ga = rstd * __half2float(gamma[ch]);
					gn_l2w_store(dst + i, gn_apply8_ch(av[v], ga, __half2float(beta[ch]) - mean * ga));
				}
			}
		} else {
#pragma unroll
			for (int v = 0; v < GN_L2W_VPT; v++) {
				const int i = (int)threadIdx.x + v * GN_L2W_THREADS;
				if (i < c.nv)
					gn_l2w_store(dst + i, gn_apply8_fast(av[v], (unsigned)(c.start + i * 8), (unsigned)hw,
									     gamma + cbase, beta + cbase, mean, rstd));
			}
		}
		gn_syncwarp(); /* every lane of the warp has read the group's word */
		if (lane == 0 && atomicAdd(rec + 4 * c.grp + 1, 1u) == (unsigned)(nchunk * GN_L2W_WARPS) - 1u) {
			/* the group's last departure: nobody reads its record again in this launch */
			atomicExch(rec + 4 * c.grp, 0u);
			gn_st_release64(reinterpret_cast<unsigned long long *>(rec + 4 * c.grp + 2), 0ull);
			atomicExch(rec + 4 * c.grp + 1, 0u);
		}
		if (m < K) /* (the chunk's indices recomputed: fewer registers live across the apply) */
			gn_l2w_publish(slot, gn_l2w_at(b + m * G, cnt, nchunk), b + m * G, ws, rec, cnt, nchunk, eps,
				       part + (m & 1) * GN_L2W_WARPS);
	}
}

/* The plan for groups of cnt values (16-byte case): chunks per group, grid (occupancy x SMs, at most one
 * CTA per chunk) and lookahead (at least ceil(nchunk / grid), the deadlock bound, and as many grid-wide
 * rounds of chunks as fit GN_L2W_KB). 0 when the kernel cannot be made resident. */
struct gn_l2w_plan {
	int64_t nchunk, total;
	int grid, look;
};
static int gn_plan_l2w(int64_t cnt, int64_t groups, struct gn_l2w_plan *p)
{
	static int sms, occ;
	if (!sms) {
		/* the largest shared-memory carveout, so that the residency the occupancy query reports is the
		 * one the launch gets (the grid must be resident at once: CTAs wait for each other) */
		if (cudaFuncSetAttribute(gn_l2w, cudaFuncAttributePreferredSharedMemoryCarveout, 100) != cudaSuccess)
			(void)cudaGetLastError();
		if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess || sms <= 0 ||
		    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, gn_l2w, GN_L2W_THREADS, 0) != cudaSuccess || occ <= 0) {
			(void)cudaGetLastError();
			sms = -1;
		}
	}
	if (sms < 0)
		return 0;
	const int64_t nchunk = (cnt + GN_L2W_CV - 1) / GN_L2W_CV, total = groups * nchunk;
	if (total > (1 << 29) || cnt > 2147483647) /* chunk indices (and k + look rounds of them) stay 32-bit */
		return 0;
	const int64_t grid = (int64_t)occ * sms < total ? (int64_t)occ * sms : total;
	const int64_t lmin = (nchunk + grid - 1) / grid;
	const int64_t lw = (int64_t)GN_L2W_KB * 1024 / (grid * GN_L2W_CV * 2);
	int64_t look = lmin > lw ? lmin : lw > 1 ? lw : 1;
	if (look * grid > total + grid) /* more rounds than there are chunks: the same, and k + look stays 32-bit */
		look = (total + grid - 1) / grid;
	p->nchunk = nchunk;
	p->total = total;
	p->grid = (int)grid;
	p->look = (int)look;
	return 1;
}

#endif
