/*
 * gn_ring.cuh - groupnorm32_silu_sd_vae, the persistent ring path (v3, GN_RING=1; NOTES.md "Design v3"):
 * its knobs, cp.async helpers, the gn_ring kernel and its host-side plan. Included by fast.cu after the
 * shared helpers (gn_lo/gn_hi, gn_sum8/gn_dev8, gn_block_sum, gn_ld_acquire, gn_backoff, gn_apply8_fast)
 * and gn_shared.cuh (GN_SHARED, the cp.async helpers); not a standalone header.
 */
#ifndef GN_RING_CUH
#define GN_RING_CUH

/* ---- Ring path (v3): a persistent grid, x read once, one launch ------------------------------------
 * gridDim.x CTAs, all resident (grid <= occupancy x SMs), each with a ring of GN_RING_SLOTS shared-memory
 * slots of cv values. The tensor is cut into chunks of cv values per group (group-major: chunk j is
 * chunk j % nchunk of group j / nchunk); CTA b takes chunks b, b + G, b + 2G, ... (its k-th chunk is
 * local chunk k). Loads are cp.async 16-byte copies, one commit group per chunk, the ring kept full.
 * Iteration k: publish the (mean, M2) of every local chunk up to k + L (waiting for each to land, then
 * bumping its group's counter), wait until group(k)'s counter shows all nchunk partials (once per
 * group), merge them (Chan, same order in every CTA), write y for chunk k from shared memory, refill
 * the slot with local chunk k + SLOTS. Deadlock freedom: a CTA waiting at iteration k has published
 * its chunks up to k + L, and every CTA is at an iteration >= that of the oldest unwritten chunk j0,
 * so all chunks up to j0 + L*G are published; nchunk - 1 <= L*G (checked on the host, with
 * L <= SLOTS - 2 so one slot is always loading) covers j0's group. Counters: arrivals count to nchunk,
 * one departure per chunk applied to 2*nchunk, the last departure resets the counter to 0. */
#ifndef GN_RING
#define GN_RING 0 /* 1: the persistent ring (v3); 0: group-resident or split paths (v1/v2). Default 0: on the H200 the ring was slower than split at 128x128 and up (results/h200/2026-11-29-s3) */
#endif
#ifndef GN_RING_THREADS
#define GN_RING_THREADS 512
#endif
#ifndef GN_RING_SLOTS
#define GN_RING_SLOTS 7 /* 2..8 */
#endif
#ifndef GN_RING_SLOT_VALUES
#define GN_RING_SLOT_VALUES 16384 /* the largest chunk: 32 KB of fp16; 7 slots = 224 KB */
#endif
#ifndef GN_RING_PER_CTA
#define GN_RING_PER_CTA 2 /* small tensors: chunks shrink (to GN_RING_THREADS*8 values) until a CTA gets this many */
#endif
#if GN_RING_SLOTS < 2 || GN_RING_SLOTS > 8 || GN_RING_SLOT_VALUES % (GN_RING_THREADS * 8) != 0
#error "GN_RING_SLOTS must be 2..8 and GN_RING_SLOT_VALUES a multiple of GN_RING_THREADS * 8"
#endif

/* Issues the loads of global chunk j (len values) into slot s and closes the commit group (also when
 * there is nothing to load, so that group counts stay one per local chunk). */
static __device__ __forceinline__ void gn_ring_issue(const uint4 *__restrict__ x, uint4 *slot, int64_t j, int64_t cnt,
						     int64_t cv, int64_t nchunk, bool any)
{
	if (any) {
		const int64_t grp = j / nchunk, start = (j % nchunk) * cv;
		const int64_t nv = (cnt - start < cv ? cnt - start : cv) / 8;
		const uint4 *src = x + (grp * cnt + start) / 8;
		for (int64_t i = threadIdx.x; i < nv; i += GN_RING_THREADS)
			gn_cp16(slot + i, src + i);
	}
	gn_cp_commit();
}

/* Group grp's partials for the ring: every thread reads the group's counter (acquire) and, ordered
 * after it, partials tid and tid + GN_RING_THREADS (nchunk <= 2 * GN_RING_THREADS); true when its
 * counter read showed all nchunk arrivals (then its partials are the published ones). */
static __device__ __forceinline__ bool gn_ring_fetch(const unsigned *sync, const float2 *ws, int64_t grp, int64_t nchunk,
						     float2 *p0, float2 *p1)
{
	const bool ok = gn_ld_acquire(sync + 1 + grp) >= (unsigned)nchunk;
	const float2 *p = ws + grp * nchunk;
	const int64_t t = threadIdx.x;
	*p0 = t < nchunk ? __ldcg(p + t) : make_float2(0.0f, 0.0f);
	*p1 = t + GN_RING_THREADS < nchunk ? __ldcg(p + t + GN_RING_THREADS) : make_float2(0.0f, 0.0f);
	return ok;
}

/* gn_merge_cg from partials already in registers (thread t holds partials t and t + GN_RING_THREADS):
 * the same order of operations in every CTA. */
static __device__ __forceinline__ void gn_ring_merge(float2 p0, float2 p1, int64_t cnt, int64_t nchunk, int64_t cv,
						     float eps, float *red1, float *red2, float *mean, float *rstd)
{
	const int64_t t = threadIdx.x, t1 = t + GN_RING_THREADS;
	const float n0 = t < nchunk ? (float)(cnt - t * cv < cv ? cnt - t * cv : cv) : 0.0f;
	const float n1 = t1 < nchunk ? (float)(cnt - t1 * cv < cv ? cnt - t1 * cv : cv) : 0.0f;
	const float m = gn_block_sum(n0 * p0.x + n1 * p1.x, red1) / (float)cnt;
	const float d0 = p0.x - m, d1 = p1.x - m;
	const float q = (t < nchunk ? p0.y + n0 * d0 * d0 : 0.0f) + (t1 < nchunk ? p1.y + n1 * d1 * d1 : 0.0f);
	*mean = m;
	*rstd = rsqrtf(gn_block_sum(q, red2) / (float)cnt + eps);
}

__global__ void __launch_bounds__(GN_RING_THREADS, 1)
	gn_ring(const uint4 *__restrict__ x, const __half *__restrict__ gamma, const __half *__restrict__ beta, float2 *ws,
		unsigned *sync, uint4 *__restrict__ y, int64_t cnt, int64_t cv, int64_t nchunk, int64_t total, int look,
		int64_t cpg, int64_t hw, float eps)
{
	GN_SHARED(float, red1, 32, 1001);
	GN_SHARED(float, red2, 32, 1002);
	GN_SHARED(float, red3, 32, 1003);
	GN_SHARED(float, red4, 32, 1004);
	GN_SHARED(float, red5, 32, 1005);
	const int64_t sv = cv / 8; /* vectors per slot */
#ifdef SF_EMU_H
	uint4 *ring = emu_shared<uint4>(1000, (size_t)(GN_RING_SLOTS * sv));
#else
	extern __shared__ __align__(16) uint4 gn_ring_smem[];
	uint4 *ring = gn_ring_smem;
#endif
	const int64_t G = gridDim.x, b = blockIdx.x;
	const int64_t K = (total - b + G - 1) / G; /* local chunks; the host launches at most `total` CTAs */
	for (int s = 0; s < GN_RING_SLOTS; s++)
		gn_ring_issue(x, ring + s * sv, b + s * G, cnt, cv, nchunk, s < K);
	int64_t pub = 0, cur = -1, pgrp = -1;
	float mean = 0.0f, rstd = 0.0f;
	float2 p0 = make_float2(0.0f, 0.0f), p1 = p0;
	bool pok = false;
	for (int64_t k = 0; k < K; k++) {
		const int64_t lim = k + look < K - 1 ? k + look : K - 1;
		for (; pub <= lim; pub++) { /* publish local chunks up to k + look */
			gn_cp_wait((int)(k + GN_RING_SLOTS - 1 - pub)); /* groups committed: local chunks < k + SLOTS */
			__syncthreads();
			const int64_t j = b + pub * G, grp = j / nchunk, start = (j % nchunk) * cv;
			const int64_t len = cnt - start < cv ? cnt - start : cv;
			const uint4 *sl = ring + (pub % GN_RING_SLOTS) * sv;
			float s = 0.0f;
			for (int64_t i = threadIdx.x; i < len / 8; i += GN_RING_THREADS)
				s += gn_sum8(sl[i]);
			const float cmean = gn_block_sum(s, red1) / (float)len;
			float m2 = 0.0f;
			for (int64_t i = threadIdx.x; i < len / 8; i += GN_RING_THREADS)
				m2 += gn_dev8(sl[i], cmean);
			m2 = gn_block_sum(m2, red2);
			if (threadIdx.x == 0) {
				ws[j] = make_float2(cmean, m2);
				__threadfence(); /* the partial is visible before the arrival */
				atomicAdd(sync + 1 + grp, 1u);
			}
		}
		const int64_t j = b + k * G, grp = j / nchunk, start = (j % nchunk) * cv;
		const int64_t len = cnt - start < cv ? cnt - start : cv;
		unsigned *gc = sync + 1 + grp;
		if (grp != cur) { /* a new group: its partials, prefetched during the last apply when complete then */
			if (pgrp != grp || gn_block_sum(pok ? 0.0f : 1.0f, red5) != 0.0f) {
				if (threadIdx.x == 0)
					while (gn_ld_acquire(gc) < (unsigned)nchunk)
						gn_backoff();
				__syncthreads();
				gn_ring_fetch(sync, ws, grp, nchunk, &p0, &p1);
			}
			gn_ring_merge(p0, p1, cnt, nchunk, cv, eps, red3, red4, &mean, &rstd);
			cur = grp;
		}
		if (threadIdx.x == 0 && atomicAdd(gc, 1u) == 2u * (unsigned)nchunk - 1u)
			atomicExch(gc, 0u); /* every chunk of the group has been applied: reset for the next launch */
		pgrp = k + 1 < K ? (j + G) / nchunk : -1;
		pok = pgrp >= 0 && pgrp != grp && gn_ring_fetch(sync, ws, pgrp, nchunk, &p0, &p1);
		const uint4 *sl = ring + (k % GN_RING_SLOTS) * sv;
		const int64_t off = (grp * cnt + start) / 8, cbase = (grp % GN_GROUPS) * cpg;
#pragma unroll 4
		for (int64_t i = threadIdx.x; i < len / 8; i += GN_RING_THREADS)
			gn_st(y + off + i, gn_apply8_fast(sl[i], (unsigned)(start + i * 8), (unsigned)hw, gamma + cbase, beta + cbase,
							  mean, rstd));
		__syncthreads(); /* the slot is read: refill it */
		gn_ring_issue(x, ring + (k % GN_RING_SLOTS) * sv, b + (k + GN_RING_SLOTS) * G, cnt, cv, nchunk,
			      k + GN_RING_SLOTS < K);
	}
	gn_cp_wait(0);
}

/* The ring path's plan for groups of cnt values (16-byte case): chunk size cv (the largest chunk,
 * shrunk for small tensors so that each CTA gets about GN_RING_PER_CTA chunks), chunks per group,
 * grid (occupancy x SMs, at most one CTA per chunk), lookahead and dynamic shared memory. 0 when no
 * plan keeps the grid resident with nchunk - 1 <= look * grid and look <= SLOTS - 2. */
struct gn_ring_plan {
	int64_t cv, nchunk;
	int grid, look;
	size_t smem;
};
static int gn_plan_ring(int64_t cnt, int64_t groups, struct gn_ring_plan *p)
{
	static int sms, occ[GN_RING_SLOT_VALUES / (GN_RING_THREADS * 8) + 1];
	const int64_t step = (int64_t)GN_RING_THREADS * 8;
	if (!sms) {
		if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess || sms <= 0)
			return 0;
#ifndef SF_EMU_H
		if (cudaFuncSetAttribute(gn_ring, cudaFuncAttributeMaxDynamicSharedMemorySize,
					 GN_RING_SLOTS * GN_RING_SLOT_VALUES * 2) != cudaSuccess) {
			(void)cudaGetLastError();
			sms = -1;
		}
#endif
	}
	if (sms < 0)
		return 0;
	int64_t want = (cnt * groups + (int64_t)sms * GN_RING_PER_CTA - 1) / ((int64_t)sms * GN_RING_PER_CTA);
	want = (want + step - 1) / step * step;
	for (int64_t cv = want < step ? step : want > GN_RING_SLOT_VALUES ? GN_RING_SLOT_VALUES : want;
	     cv <= GN_RING_SLOT_VALUES; cv += step) {
		const size_t smem = (size_t)GN_RING_SLOTS * (size_t)cv * 2;
		int *o = &occ[cv / step];
		if (*o == 0) { /* once per chunk size: -1 when no CTA fits */
			int nb = 0;
			if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, gn_ring, GN_RING_THREADS, smem) != cudaSuccess)
				(void)cudaGetLastError();
			*o = nb > 0 ? nb : -1;
		}
		if (*o <= 0)
			continue;
		const int64_t nchunk = (cnt + cv - 1) / cv, total = groups * nchunk;
		const int64_t grid = (int64_t)*o * sms < total ? (int64_t)*o * sms : total;
		const int64_t look = nchunk <= 1 ? 0 : (nchunk - 2) / grid + 1; /* ceil((nchunk - 1) / grid) */
		if (look > GN_RING_SLOTS - 2 || nchunk > 2 * GN_RING_THREADS || total > 2147483647)
			continue;
		p->cv = cv;
		p->nchunk = nchunk;
		p->grid = (int)grid;
		p->look = (int)look;
		p->smem = smem;
		return 1;
	}
	return 0;
}

#endif
