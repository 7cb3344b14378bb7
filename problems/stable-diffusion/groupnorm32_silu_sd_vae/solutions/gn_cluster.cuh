/*
 * gn_cluster.cuh - groupnorm32_silu_sd_vae, the thread-block-cluster path (v5, GN_CLUSTER=1; NOTES.md
 * "Version 5"): a cluster of cs CTAs owns one (sample, group) at a time and holds it in shared memory,
 * so x is read once from HBM and no CTA ever waits on a global counter. Included by fast.cu after the
 * shared helpers (gn_lo/gn_hi, gn_st, gn_apply8_ch) and gn_shared.cuh (GN_SHARED, gn_cp16,
 * gn_cp_commit, gn_cp_wait); not a standalone header.
 *
 * Layout: a group is nvec 16-byte vectors (cnt = 8 nvec values, one contiguous run in NCHW); CTA rank r
 * of a cluster holds vectors [r sv, min((r + 1) sv, nvec)) of it (its slice, sv vectors of dynamic
 * shared memory). Thread t owns slice vectors t, t + T, t + 2T, ... (k = 0, 1, ...): it issues their
 * cp.async copies, reads them for the statistics and applies them, so a thread's cp.async.wait_group
 * is all the ordering its own data needs (no block barrier between landing and use). Its vectors are
 * cut into GN_CL_PARTS commit groups, so the statistics of part p run while parts > p still land.
 * Persistent: grid = clusters x cs (clusters <= the active clusters the occupancy API reports; groups
 * dealt round-robin, equal rounds). Per group:
 *  1. wait for each part, accumulate s1 = sum(x - K), s2 = sum((x - K)^2) per thread (K = the first
 *     value of the CTA's slice: within a few sigma of the mean, so s2 - s1^2/n does not cancel);
 *  2. block reduction; thread 0 writes the slice's (n, mean, M2) to part[parity] in its shared memory;
 *  3. one cluster barrier (arrive.release / wait.acquire);
 *  4. warp 0 reads the cs partials through DSMEM (mapa + ld.shared::cluster, lane j <- rank j), merges
 *     them (Chan, xor-butterfly sums: every lane, warp and CTA of the cluster gets the same bits) and
 *     writes the (a, c) = (rstd gamma, beta - mean a) table of the group's channels; __syncthreads;
 *  5. apply from shared memory (gn_apply8_ch math), 16-byte stores, and right behind each vector's
 *     store the cp.async of the same vector of the cluster's NEXT group into the freed slot: the loads
 *     of group k+1 stream in while group k is written.
 * Hazards: part[] is double-buffered by group parity (a remote read of parity p at group k happens
 * before its reader arrives at barrier k+1; the rewrite of p at group k+2 after it); red[] and tbl[]
 * are rewritten only after a barrier every reader has passed; a final cluster barrier keeps every CTA
 * (its shared memory) alive until its cluster's last DSMEM read.
 * Groups over the cluster's shared memory (GN_CL_STREAM): each CTA holds the first hv vectors of its
 * slice as above and streams the rest: read once (ld.global.cg) for the statistics before the held
 * part is used, and again for the apply after it, newest first, so that the re-read finds L2 when the
 * streamed bytes of the resident clusters fit there (HBM then moves the byte floor).
 * The host plan needs hw % 8 == 0 (a vector never straddles channels), cpg <= GN_CL_MAXC and cnt < 2^31;
 * other shapes take the other paths.
 */
#ifndef GN_CLUSTER_CUH
#define GN_CLUSTER_CUH

#ifndef GN_CLUSTER
#define GN_CLUSTER 1 /* 1 (default since session 16: NOTES.md "Session 16"): the cluster path (v5) for groups over
		     * GN_FUSED_MAX and GN_CLR_MAX held whole in a cluster's shared memory (GN_CL_STREAM 0) with
		     * H x W <= GN_CL_MAX_HW; 0: those take the split path */
#endif
#ifndef GN_CL_THREADS
#define GN_CL_THREADS 512
#endif
#ifndef GN_CL_MAXCS
#define GN_CL_MAXCS 16 /* largest cluster: 16 needs the non-portable attribute (Hopper), 8 is portable */
#endif
#ifndef GN_CL_HALF
#define GN_CL_HALF 1 /* 1: prefer a cluster size whose slices leave room for 2 CTAs per SM */
#endif
#ifndef GN_CL_PARTS
#define GN_CL_PARTS 4 /* commit groups per slice (1..8) */
#endif
#ifndef GN_CL_STREAM
#define GN_CL_STREAM 0 /* 1: groups over a cluster's shared memory hold what fits and stream the rest twice (the
			* second read from L2, if it is still there; measured slower than the split path at 512x512,
			* sessions 5-6); 0 (default since session 16): those take the split path */
#endif
#ifndef GN_CL_MAX_HW
#define GN_CL_MAX_HW 65536 /* largest H x W on the cluster path: measured faster than the default of the time at 128x128,
			    * 256x256 and 200x300, slower at 512x512 (n2-c128, 0.977x, session 16; 0.965x in session 6) */
#endif
#ifndef GN_CL_L2_PCT
#define GN_CL_L2_PCT 75 /* streaming only while the resident clusters' streamed bytes fit this share of the L2 */
#endif
#ifndef GN_CL_UNROLL
#define GN_CL_UNROLL 4 /* streamed 16-byte loads in flight per thread */
#endif
#define GN_CL_MAXC 64 /* channels per group held in the (a, c) table */
#define GN_CL_WARPS (GN_CL_THREADS / 32)
#if GN_CL_PARTS < 1 || GN_CL_PARTS > 8 || GN_CL_THREADS % 32 != 0
#error "GN_CL_PARTS must be 1..8 and GN_CL_THREADS a multiple of 32"
#endif

/* A 16-byte load through L2 (normal priority: the streamed remainder is read again soon), not L1 */
static __device__ __forceinline__ uint4 gn_ld_l2(const uint4 *p)
{
#ifdef __CUDA_ARCH__
	return __ldcg(p);
#else
	return *p;
#endif
}

/* barrier.cluster arrive (release) + wait (acquire): every thread of every CTA of the cluster */
static __device__ __forceinline__ void gn_cl_sync(void)
{
#ifdef SF_EMU_H
	emu_cluster_sync();
#elif defined(__CUDA_ARCH__)
	asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

/* part[i] of the CTA of rank `rank` in this cluster (DSMEM); key: part's GN_SHARED key (emulation) */
static __device__ __forceinline__ float4 gn_cl_remote(const float4 *part, int i, unsigned rank, int key)
{
#ifdef SF_EMU_H
	(void)part;
	return emu_cluster_shared<float4>(key, rank)[i];
#elif defined(__CUDA_ARCH__)
	(void)key;
	float4 v;
	unsigned ra;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"((unsigned)__cvta_generic_to_shared(part + i)), "r"(rank));
	asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
		     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
		     : "r"(ra)
		     : "memory");
	return v;
#else /* host compilation pass: never called */
	(void)part, (void)i, (void)rank, (void)key;
	return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#endif
}

/* s1 += sum(x - K), s2 += sum((x - K)^2) over the 8 values of v */
static __device__ __forceinline__ void gn_cl_acc8(uint4 v, float K, float *s1, float *s2)
{
	const uint32_t u[4] = { v.x, v.y, v.z, v.w };
	float a = 0.0f, b = 0.0f;
#pragma unroll
	for (int j = 0; j < 4; j++) {
		const float d0 = gn_lo(u[j]) - K, d1 = gn_hi(u[j]) - K;
		a += d0 + d1;
		b = fmaf(d0, d0, b);
		b = fmaf(d1, d1, b);
	}
	*s1 += a;
	*s2 += b;
}

/* Issues the cp.async copies of this thread's vectors of slice src (nv vectors) into sl, one commit
 * group per part (also when empty: every thread commits GN_CL_PARTS groups per group). */
static __device__ __forceinline__ void gn_cl_issue(uint4 *sl, const uint4 *src, int nv, int kmax, int kp)
{
	for (int p = 0; p < GN_CL_PARTS; p++) {
		const int k1 = (p + 1) * kp < kmax ? (p + 1) * kp : kmax;
		for (int k = p * kp; k < k1; k++) {
			const int i = (int)threadIdx.x + k * GN_CL_THREADS;
			if (i < nv)
				gn_cp16(sl + i, src + i);
		}
		gn_cp_commit();
	}
}

__global__ void __launch_bounds__(GN_CL_THREADS, 2)
	gn_cl(const uint4 *__restrict__ x, const __half *__restrict__ gamma, const __half *__restrict__ beta,
	      uint4 *__restrict__ y, int nvec, int sv, int hv, int cs, int groups, int cpg, int hw, float eps)
{
	GN_SHARED(float2, red, GN_CL_WARPS, 3001);
	GN_SHARED(float4, part, 2, 3002);
	GN_SHARED(float2, tbl, GN_CL_MAXC, 3003);
#ifdef SF_EMU_H
	uint4 *sl = emu_shared<uint4>(3000, (size_t)hv);
#else
	extern __shared__ __align__(16) uint4 gn_cl_smem[];
	uint4 *sl = gn_cl_smem;
#endif
	const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int rank = (int)(blockIdx.x % (unsigned)cs), ncl = (int)(gridDim.x / (unsigned)cs);
	const int v0 = rank * sv, nv = nvec - v0 < 0 ? 0 : nvec - v0 < sv ? nvec - v0 : sv;
	const int nh = nv < hv ? nv : hv; /* held vectors; [nh, nv) are streamed */
	const int kmax = (hv + GN_CL_THREADS - 1) / GN_CL_THREADS, kp = (kmax + GN_CL_PARTS - 1) / GN_CL_PARTS;
	const int ksm = (sv - hv + GN_CL_THREADS - 1) / GN_CL_THREADS; /* streamed vectors per thread, at most */
	const float cnt = (float)nvec * 8.0f;
	const int step = GN_CL_THREADS * 8;
	int grp = (int)(blockIdx.x / (unsigned)cs);
	if (grp < groups)
		gn_cl_issue(sl, x + (int64_t)grp * nvec + v0, nh, kmax, kp);
	for (int par = 0; grp < groups; grp += ncl, par ^= 1) {
		const uint4 *xs = x + (int64_t)grp * nvec + v0;
		const float K = nv > 0 ? gn_lo(*(const uint32_t *)xs) : 0.0f; /* the slice's first value (L2) */
		float s1 = 0.0f, s2 = 0.0f;
		for (int k = 0; k < ksm; k += GN_CL_UNROLL) { /* the streamed remainder first (the held part lands meanwhile) */
			uint4 v[GN_CL_UNROLL];
#pragma unroll
			for (int u = 0; u < GN_CL_UNROLL; u++) {
				const int i = nh + tid + (k + u) * GN_CL_THREADS;
				v[u] = i < nv ? gn_ld_l2(xs + i) : make_uint4(0, 0, 0, 0);
			}
#pragma unroll
			for (int u = 0; u < GN_CL_UNROLL; u++)
				if (nh + tid + (k + u) * GN_CL_THREADS < nv)
					gn_cl_acc8(v[u], K, &s1, &s2);
		}
		for (int p = 0; p < GN_CL_PARTS; p++) {
			gn_cp_wait(GN_CL_PARTS - 1 - p); /* this thread's copies of parts <= p have landed */
			const int k1 = (p + 1) * kp < kmax ? (p + 1) * kp : kmax;
			for (int k = p * kp; k < k1; k++) {
				const int i = tid + k * GN_CL_THREADS;
				if (i < nh)
					gn_cl_acc8(sl[i], K, &s1, &s2);
			}
		}
		for (int o = 16; o > 0; o >>= 1) {
			s1 += __shfl_xor_sync(0xffffffffu, s1, o);
			s2 += __shfl_xor_sync(0xffffffffu, s2, o);
		}
		if (lane == 0)
			red[warp] = make_float2(s1, s2);
		__syncthreads();
		if (tid == 0) {
			float t1 = 0.0f, t2 = 0.0f;
			for (int w = 0; w < GN_CL_WARPS; w++) {
				t1 += red[w].x;
				t2 += red[w].y;
			}
			const float n = (float)nv * 8.0f;
			part[par] = nv > 0 ? make_float4(n, K + t1 / n, fmaxf(t2 - t1 * (t1 / n), 0.0f), 0.0f)
					   : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
		}
		gn_cl_sync(); /* every slice's partial is written (and visible cluster-wide) */
		if (warp == 0) {
			const float4 q = lane < cs ? gn_cl_remote(part, par, (unsigned)lane, 3002) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
			float sm = q.x * q.y;
			for (int o = 16; o > 0; o >>= 1)
				sm += __shfl_xor_sync(0xffffffffu, sm, o);
			const float mean = sm / cnt, d = q.y - mean;
			float m2 = q.z + q.x * d * d;
			for (int o = 16; o > 0; o >>= 1)
				m2 += __shfl_xor_sync(0xffffffffu, m2, o);
			const float rstd = rsqrtf(m2 / cnt + eps);
			const int cb = (grp % GN_GROUPS) * cpg;
			for (int c = lane; c < cpg; c += 32) {
				const float a = rstd * __half2float(gamma[cb + c]);
				tbl[c] = make_float2(a, __half2float(beta[cb + c]) - mean * a);
			}
		}
		__syncthreads(); /* the table is written */
		const int nxt = grp + ncl;
		const bool more = nxt < groups;
		const uint4 *xn = x + (int64_t)nxt * nvec + v0;
		uint4 *yg = y + (int64_t)grp * nvec + v0;
		const int e = (v0 + tid) * 8; /* group offset of this thread's first value: cnt < 2^31 */
		int ch = e / hw, rem = e - ch * hw;
		for (int p = 0; p < GN_CL_PARTS; p++) {
			const int k1 = (p + 1) * kp < kmax ? (p + 1) * kp : kmax;
			for (int k = p * kp; k < k1; k++) {
				const int i = tid + k * GN_CL_THREADS;
				if (i < nh) {
					const float2 ac = tbl[ch];
					gn_st(yg + i, gn_apply8_ch(sl[i], ac.x, ac.y));
					if (more) /* the slot is free: this thread read it, its store holds the data */
						gn_cp16(sl + i, xn + i);
				}
				rem += step; /* the channel of vector i + T */
				if (rem >= hw) {
					if (hw >= step) {
						rem -= hw;
						ch++;
					} else {
						ch += rem / hw;
						rem %= hw;
					}
				}
			}
			gn_cp_commit();
		}
		for (int k = (ksm - 1) / GN_CL_UNROLL * GN_CL_UNROLL; k >= 0 && ksm > 0; k -= GN_CL_UNROLL) {
			/* the streamed remainder again, newest first (the most likely still in L2) */
			uint4 v[GN_CL_UNROLL];
#pragma unroll
			for (int u = 0; u < GN_CL_UNROLL; u++) {
				const int i = nh + tid + (k + u) * GN_CL_THREADS;
				v[u] = i < nv ? gn_ld_l2(xs + i) : make_uint4(0, 0, 0, 0);
			}
#pragma unroll
			for (int u = 0; u < GN_CL_UNROLL; u++) {
				const int i = nh + tid + (k + u) * GN_CL_THREADS;
				if (i < nv) {
					const int c = (v0 + i) * 8 / hw;
					const float2 ac = tbl[c];
					gn_st(yg + i, gn_apply8_ch(v[u], ac.x, ac.y));
				}
			}
		}
	}
	gn_cl_sync(); /* no CTA leaves while a CTA of its cluster may still read its part[] */
}

/* ---- host side ---------------------------------------------------------------------------------- */
struct gn_cl_plan {
	int cs, sv, hv, grid; /* cluster size, slice vectors, held vectors (hv < sv: the rest streamed) */
	size_t smem;
};

/* Clusters of cs CTAs (smem bytes of dynamic shared memory each) resident on the device at once, from
 * the occupancy API, remembered per (cs, smem); 0 when none fits. */
static int gn_cl_active(int cs, size_t smem)
{
	static int key_cs[16], val[16], n;
	static size_t key_sm[16];
	for (int i = 0; i < n; i++)
		if (key_cs[i] == cs && key_sm[i] == smem)
			return val[i];
	int a = 0;
#ifdef SF_EMU_H
	a = emu_sm_count * emu_occupancy / cs;
#else
	cudaLaunchConfig_t cfg = {};
	cudaLaunchAttribute at[1];
	at[0].id = cudaLaunchAttributeClusterDimension;
	at[0].val.clusterDim.x = (unsigned)cs;
	at[0].val.clusterDim.y = 1;
	at[0].val.clusterDim.z = 1;
	cfg.gridDim = dim3((unsigned)cs, 1, 1);
	cfg.blockDim = dim3(GN_CL_THREADS, 1, 1);
	cfg.dynamicSmemBytes = smem;
	cfg.attrs = at;
	cfg.numAttrs = 1;
	if (cudaOccupancyMaxActiveClusters(&a, gn_cl, &cfg) != cudaSuccess) {
		(void)cudaGetLastError();
		a = 0;
	}
#endif
	const int i = n < 16 ? n++ : 0;
	key_cs[i] = cs;
	key_sm[i] = smem;
	val[i] = a;
	return a;
}

/* The cluster plan for `groups` groups of cnt values (cpg channels of hw): the smallest cluster size
 * (1, 2, 4, ..., GN_CL_MAXCS) whose slice fits the shared-memory limit (with GN_CL_HALF first the
 * limit that leaves room for 2 CTAs per SM) and whose groups x cs CTAs cover every SM; if none covers
 * them, the largest that fits; if none fits (GN_CL_STREAM), GN_CL_MAXCS with slices held up to the
 * limit and the rest streamed. Grid: clusters x cs, clusters <= active clusters, trimmed so that every
 * cluster runs the same number of groups. 0: no plan (the caller takes another path). */
static int gn_plan_cl(int64_t cnt, int64_t groups, int64_t cpg, int64_t hw, struct gn_cl_plan *p)
{
	static int sms, optin, l2;
	if (!sms) {
		if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess ||
		    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) != cudaSuccess || sms <= 0 ||
		    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0) != cudaSuccess ||
		    cudaFuncSetAttribute(gn_cl, cudaFuncAttributeMaxDynamicSharedMemorySize, optin - 2048) != cudaSuccess ||
		    (GN_CL_MAXCS > 8 && cudaFuncSetAttribute(gn_cl, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)) {
			(void)cudaGetLastError();
			sms = -1;
		}
	}
	if (sms < 0 || hw % 8 != 0 || cnt % 8 != 0 || cpg > GN_CL_MAXC || cnt > 2147483647 || groups > 2147483647 ||
	    hw > GN_CL_MAX_HW)
		return 0;
	const int64_t nvec = cnt / 8;
	const int64_t lim_full = optin - 2048, lim_half = (optin + 1024) / 2 - 2048;
	int best = 0;
	for (int pass = GN_CL_HALF ? 0 : 1; pass < 2 && !best; pass++) {
		const int64_t lim = pass == 0 ? lim_half : lim_full;
		for (int cs = 1; cs <= GN_CL_MAXCS && !best; cs *= 2) {
			const int64_t sv = (nvec + cs - 1) / cs;
			if (sv * 16 <= lim && groups * cs >= sms && gn_cl_active(cs, (size_t)sv * 16) > 0)
				best = cs;
		}
	}
	for (int cs = GN_CL_MAXCS; cs >= 1 && !best; cs /= 2) { /* too few groups to cover the SMs */
		const int64_t sv = (nvec + cs - 1) / cs;
		if (sv * 16 <= lim_full && gn_cl_active(cs, (size_t)sv * 16) > 0)
			best = cs;
	}
	int64_t sv = best ? (nvec + best - 1) / best : 0, hv = sv;
	for (int cs = GN_CL_MAXCS; cs >= 2 && !best && GN_CL_STREAM; cs /= 2) { /* the largest cluster that runs, */
		const int64_t a = gn_cl_active(cs, (size_t)(lim_full / 16) * 16); /* each CTA holding what fits */
		const int64_t s = (nvec + cs - 1) / cs, h = lim_full / 16;
		const int64_t streamed = (a < groups ? a : groups) * cs * (s - h) * 16; /* per round, all clusters */
		if (a > 0 && streamed * 100 <= (int64_t)l2 * GN_CL_L2_PCT) {
			best = cs;
			sv = s;
			hv = h;
		} else if (a > 0) {
			break; /* smaller clusters stream more: the split path */
		}
	}
	if (!best)
		return 0;
	const int64_t act = gn_cl_active(best, (size_t)hv * 16);
	const int64_t rounds = (groups + act - 1) / act, ncl = (groups + rounds - 1) / rounds;
	if (ncl * best > 2147483647)
		return 0;
	p->cs = best;
	p->sv = (int)sv;
	p->hv = (int)hv;
	p->grid = (int)(ncl * best);
	p->smem = (size_t)hv * 16;
	return 1;
}

/* Launches gn_cl with plan p (clusters of p->cs along x); the launch's error. */
static cudaError_t gn_cl_launch(const struct gn_cl_plan *p, const uint4 *x, const __half *gamma, const __half *beta,
				uint4 *y, int64_t cnt, int64_t groups, int64_t cpg, int64_t hw, float eps, cudaStream_t s)
{
#ifdef SF_EMU_H
	(void)s;
	emu_cluster = p->cs;
	emu_launch(p->grid, GN_CL_THREADS, gn_cl, x, gamma, beta, y, (int)(cnt / 8), p->sv, p->hv, p->cs, (int)groups, (int)cpg,
		   (int)hw, eps);
	emu_cluster = 1;
	return cudaGetLastError();
#else
	cudaLaunchConfig_t cfg = {};
	cudaLaunchAttribute at[1];
	at[0].id = cudaLaunchAttributeClusterDimension;
	at[0].val.clusterDim.x = (unsigned)p->cs;
	at[0].val.clusterDim.y = 1;
	at[0].val.clusterDim.z = 1;
	cfg.gridDim = dim3((unsigned)p->grid, 1, 1);
	cfg.blockDim = dim3(GN_CL_THREADS, 1, 1);
	cfg.dynamicSmemBytes = p->smem;
	cfg.stream = s;
	cfg.attrs = at;
	cfg.numAttrs = 1;
	return cudaLaunchKernelEx(&cfg, gn_cl, x, gamma, beta, y, (int)(cnt / 8), p->sv, p->hv, p->cs, (int)groups, (int)cpg,
				  (int)hw, eps);
#endif
}

#endif
