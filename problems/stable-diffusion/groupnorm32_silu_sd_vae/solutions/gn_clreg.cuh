/*
 * gn_clreg.cuh - groupnorm32_silu_sd_vae, the register-resident cluster path (v6, GN_CLR=1; NOTES.md
 * "Version 6") for mid-size groups (GN_FUSED_MAX < cnt <= GN_CLR_MAX: 64x64 and 128x128 at C 512, 128-512
 * KB per group): too few groups for one block per group, too small for the split path's two launches
 * to pay off. One cluster of cs CTAs per (sample, group), NOT persistent: grid = groups x cs, every CTA
 * does one slice and leaves, so 64x64 runs 32 x 16 = 512 CTAs at once (v5's persistent gn_cl ran its
 * clusters in rounds on ~1-2 CTAs per SM). Per CTA, straight-line code:
 *  1. every 16-byte load of the slice issued at once into registers (VPT vectors per thread), beside
 *     the (gamma, beta) of each vector's channel (hw % 8 == 0: a vector is one channel);
 *  2. exact two-pass slice statistics from the registers (slice mean, then M2 about it), two block
 *     reductions; thread 0 puts the slice's (n, mean, M2) in its shared part[];
 *  3. ONE cluster barrier (arrive.release / wait.acquire);
 *  4. every warp reads the cs partials through DSMEM (lane j <- rank j) and merges them (Chan:
 *     mean = sum n_j mean_j / cnt, M2 = sum M2_j + n_j (mean_j - mean)^2; xor-butterfly sums, so every
 *     lane, warp and CTA of the cluster gets the same bits); then arrives (release) at the exit barrier;
 *  5. applies its registers (gn_apply8_ch math) and stores; waits on the exit barrier (every CTA's
 *     part[] stays alive until the cluster's last DSMEM read) and leaves.
 * x is read once from HBM, y written once, no global counters, no workspace. Included by fast.cu after
 * the shared helpers (gn_sum8, gn_dev8, gn_apply8_ch, gn_st, gn_ld_stream) and gn_shared.cuh; not a
 * standalone header.
 */
#ifndef GN_CLREG_CUH
#define GN_CLREG_CUH

#ifndef GN_CLR
#define GN_CLR 1 /* 1 (default since session 13: 64x64 15.52 -> 7.81 us, 128x128 39.73 -> 37.34, NOTES.md "Version 6
		  * measured"): groups of GN_FUSED_MAX < cnt <= GN_CLR_MAX (hw % 8 == 0) on gn_clr; 0: the split path */
#endif
#ifndef GN_CLR_THREADS
#define GN_CLR_THREADS 256
#endif
#ifndef GN_CLR_PREFCS
#define GN_CLR_PREFCS 8 /* clusters up to this size are tried first (any VPT), larger ones (to GN_CLR_MAXCS) only when none
			 * holds the group; GN_CLR_PREFCS = GN_CLR_MAXCS gives session 13's first rule (fewest VPT first) */
#endif
#ifndef GN_CLR_MAXCS
#define GN_CLR_MAXCS 16 /* largest cluster (16: the non-portable attribute, Hopper; 8 portable) */
#endif
#ifndef GN_CLR_MAX
#define GN_CLR_MAX 245760 /* largest group (values) on gn_clr: 96x160 at C 512 (session 16: 128x128 at C 512, 262144,
			   * runs 1.06x faster on the v5 cluster path, GN_CLUSTER) */
#endif
#if GN_CLR_THREADS % 32 != 0 || GN_CLR_THREADS > 1024 || GN_CLR_MAXCS < 1 || GN_CLR_MAXCS > 16
#error "GN_CLR_THREADS must be a multiple of 32 up to 1024, GN_CLR_MAXCS 1..16"
#endif

/* The cluster barrier in two halves: arrive (release: this CTA's shared writes and DSMEM reads before it)
 * and wait (acquire). Every thread of every CTA of the cluster calls both, in order. */
static __device__ __forceinline__ void gn_clr_arrive(void)
{
#if defined(__CUDA_ARCH__) && !defined(SF_EMU_H)
	asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}
static __device__ __forceinline__ void gn_clr_wait(void)
{
#ifdef SF_EMU_H
	emu_cluster_sync(); /* (arrive is a no-op there: the full barrier here) */
#elif defined(__CUDA_ARCH__)
	asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

/* part[0] of the CTA of rank `rank` in this cluster (DSMEM) */
static __device__ __forceinline__ float4 gn_clr_remote(const float4 *part, unsigned rank)
{
#ifdef SF_EMU_H
	(void)part;
	return emu_cluster_shared<float4>(5003, rank)[0];
#elif defined(__CUDA_ARCH__)
	float4 v;
	unsigned ra;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"((unsigned)__cvta_generic_to_shared(part)), "r"(rank));
	asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
		     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
		     : "r"(ra)
		     : "memory");
	return v;
#else /* host compilation pass: never called */
	(void)part, (void)rank;
	return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#endif
}

/* Grid = groups x cs CTAs of GN_CLR_THREADS, clusters of cs along x (cluster rank = blockIdx.x % cs);
 * group blockIdx.x / cs has nvec vectors (cpg channels of hw values, hw % 8 == 0); rank r holds vectors
 * [r sv, min((r + 1) sv, nvec)), thread t its vectors t + k T (k < VPT; sv <= VPT T). */
template <int VPT>
__global__ void __launch_bounds__(GN_CLR_THREADS)
	gn_clr(const uint4 *__restrict__ x, const __half *__restrict__ gamma, const __half *__restrict__ beta,
	       uint4 *__restrict__ y, int nvec, int sv, int cs, int cpg, int hw, float eps)
{
	GN_SHARED(float, red1, GN_CLR_THREADS / 32, 5001);
	GN_SHARED(float, red2, GN_CLR_THREADS / 32, 5002);
	GN_SHARED(float4, part, 1, 5003);
	const int tid = (int)threadIdx.x, lane = tid & 31;
	const int rank = (int)(blockIdx.x % (unsigned)cs), grp = (int)(blockIdx.x / (unsigned)cs);
	const int v0 = rank * sv, nv = nvec - v0 < 0 ? 0 : nvec - v0 < sv ? nvec - v0 : sv;
	const int64_t off = (int64_t)grp * nvec + v0;
	const int cb = (grp % GN_GROUPS) * cpg;
	uint4 v[VPT];
	uint32_t gb[VPT]; /* gamma | beta << 16 of the vector's channel */
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const int i = tid + k * GN_CLR_THREADS;
		v[k] = make_uint4(0, 0, 0, 0);
		gb[k] = 0;
		if (i < nv) {
			v[k] = gn_ld_stream(x + off + i);
			const int c = cb + (v0 + i) * 8 / hw;
			gb[k] = (uint32_t)__ldg((const unsigned short *)gamma + c) |
				((uint32_t)__ldg((const unsigned short *)beta + c) << 16);
		}
	}
	float s = 0.0f;
#pragma unroll
	for (int k = 0; k < VPT; k++)
		s += gn_sum8(v[k]); /* idle slots hold +0 */
	const float n = (float)nv * 8.0f, sm = gn_block_sum(s, red1), mean_s = nv > 0 ? sm / n : 0.0f;
	float m2 = 0.0f;
#pragma unroll
	for (int k = 0; k < VPT; k++)
		if (tid + k * GN_CLR_THREADS < nv)
			m2 += gn_dev8(v[k], mean_s);
	m2 = gn_block_sum(m2, red2);
	if (tid == 0)
		part[0] = make_float4(n, mean_s, m2, 0.0f);
	gn_clr_arrive();
	gn_clr_wait(); /* every slice's partial is written and visible cluster-wide */
	const float4 q = lane < cs ? gn_clr_remote(part, (unsigned)lane) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
	gn_clr_arrive(); /* this CTA's DSMEM reads are done (the exit barrier's first half) */
	const float cnt = (float)nvec * 8.0f;
	float t = q.x * q.y;
	for (int o = 16; o > 0; o >>= 1)
		t += __shfl_xor_sync(0xffffffffu, t, o);
	const float mean = t / cnt, d = q.y - mean;
	float q2 = q.z + q.x * d * d;
	for (int o = 16; o > 0; o >>= 1)
		q2 += __shfl_xor_sync(0xffffffffu, q2, o);
	const float rstd = rsqrtf(q2 / cnt + eps);
	uint4 *ys = y + off;
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const int i = tid + k * GN_CLR_THREADS;
		if (i < nv) {
			const float a = rstd * __half2float(__ushort_as_half((unsigned short)(gb[k] & 0xffffu)));
			gn_st(ys + i, gn_apply8_ch(v[k], a, __half2float(__ushort_as_half((unsigned short)(gb[k] >> 16))) - mean * a));
		}
	}
	gn_clr_wait(); /* no CTA leaves while another CTA of its cluster may still read its part[] */
}

/* ---- host side ---------------------------------------------------------------------------------- */
struct gn_clr_plan {
	int vpt, cs, sv;
};

typedef void (*gn_clr_fn)(const uint4 *, const __half *, const __half *, uint4 *, int, int, int, int, int, float);

static gn_clr_fn gn_clr_kernel(int vpt)
{
	switch (vpt) {
	case 1: return gn_clr<1>;
	case 2: return gn_clr<2>;
	case 4: return gn_clr<4>;
	case 8: return gn_clr<8>;
	}
	return 0;
}

/* Whether clusters of cs CTAs of gn_clr<vpt> can run (cudaOccupancyMaxActiveClusters > 0), remembered
 * per (vpt, cs); sets the non-portable cluster-size attribute once per kernel. */
static int gn_clr_fits(int vpt, int cs)
{
	static signed char known[4][17]; /* 0 unknown, 1 yes, -1 no */
	const int vi = vpt == 1 ? 0 : vpt == 2 ? 1 : vpt == 4 ? 2 : 3;
	if (known[vi][cs])
		return known[vi][cs] > 0;
	int a = 0;
#ifdef SF_EMU_H
	a = emu_sm_count * emu_occupancy / cs;
#else
	static int attr[4];
	gn_clr_fn k = gn_clr_kernel(vpt);
	if (!attr[vi]) {
		attr[vi] = GN_CLR_MAXCS <= 8 || cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess ? 1 : -1;
		(void)cudaGetLastError();
	}
	if (attr[vi] > 0 || cs <= 8) {
		cudaLaunchConfig_t cfg = {};
		cudaLaunchAttribute at[1];
		at[0].id = cudaLaunchAttributeClusterDimension;
		at[0].val.clusterDim.x = (unsigned)cs;
		at[0].val.clusterDim.y = 1;
		at[0].val.clusterDim.z = 1;
		cfg.gridDim = dim3((unsigned)cs, 1, 1);
		cfg.blockDim = dim3(GN_CLR_THREADS, 1, 1);
		cfg.attrs = at;
		cfg.numAttrs = 1;
		if (cudaOccupancyMaxActiveClusters(&a, k, &cfg) != cudaSuccess) {
			(void)cudaGetLastError();
			a = 0;
		}
	}
#endif
	known[vi][cs] = a > 0 ? 1 : -1;
	return a > 0;
}

/* The plan for groups of cnt values (cpg channels of hw): first with clusters of at most GN_CLR_PREFCS CTAs,
 * then (if none holds the group) of at most GN_CLR_MAXCS: the fewest vectors per thread (1, 2, 4, 8) for which
 * such a cluster (a power of two) holds the group, then the smallest such cluster. 256 threads: 64x64 C 512
 * (8192 vectors) -> VPT 4 x 8 CTAs (measured 7.81 us, where VPT 2 x 16 took 10.72: session 13, NOTES.md "Version
 * 6 measured"); 128x128 -> VPT 8 x 16. 0: no plan (hw % 8 != 0, cnt over GN_CLR_MAX, or no such cluster runs):
 * the caller takes another path. */
static int gn_plan_clr(int64_t cnt, int64_t groups, int64_t hw, struct gn_clr_plan *p)
{
	if (hw % 8 != 0 || cnt % 8 != 0 || cnt > GN_CLR_MAX || cnt > 2147483647)
		return 0;
	const int64_t nvec = cnt / 8;
	const int caps[2] = { GN_CLR_PREFCS < GN_CLR_MAXCS ? GN_CLR_PREFCS : GN_CLR_MAXCS, GN_CLR_MAXCS };
	for (int ci = 0; ci < 2; ci++)
		for (int vpt = 1; vpt <= 8; vpt *= 2) {
			int cs = 1;
			while ((int64_t)cs * GN_CLR_THREADS * vpt < nvec && cs < caps[ci])
				cs *= 2;
			if ((int64_t)cs * GN_CLR_THREADS * vpt < nvec || groups * cs > 2147483647 || !gn_clr_fits(vpt, cs))
				continue;
			p->vpt = vpt;
			p->cs = cs;
			p->sv = (int)((nvec + cs - 1) / cs);
			return 1;
		}
	return 0;
}

/* Launches gn_clr with plan p; the launch's error. */
static cudaError_t gn_clr_launch(const struct gn_clr_plan *p, const uint4 *x, const __half *gamma, const __half *beta,
				 uint4 *y, int64_t cnt, int64_t groups, int64_t cpg, int64_t hw, float eps, cudaStream_t s)
{
	const gn_clr_fn k = gn_clr_kernel(p->vpt);
	const unsigned grid = (unsigned)(groups * p->cs);
#ifdef SF_EMU_H
	(void)s;
	emu_cluster = p->cs;
	emu_launch(grid, GN_CLR_THREADS, k, x, gamma, beta, y, (int)(cnt / 8), p->sv, p->cs, (int)cpg, (int)hw, eps);
	emu_cluster = 1;
	return cudaGetLastError();
#else
	cudaLaunchConfig_t cfg = {};
	cudaLaunchAttribute at[1];
	at[0].id = cudaLaunchAttributeClusterDimension;
	at[0].val.clusterDim.x = (unsigned)p->cs;
	at[0].val.clusterDim.y = 1;
	at[0].val.clusterDim.z = 1;
	cfg.gridDim = dim3(grid, 1, 1);
	cfg.blockDim = dim3(GN_CLR_THREADS, 1, 1);
	cfg.stream = s;
	cfg.attrs = at;
	cfg.numAttrs = 1;
	return cudaLaunchKernelEx(&cfg, k, x, gamma, beta, y, (int)(cnt / 8), p->sv, p->cs, (int)cpg, (int)hw, eps);
#endif
}

#endif
