/*
 * gqa_paged_decode_sm90_cluster.cuh - decode version 5 candidate (-DDEC_CLUSTER=CS, CS = 2 .. 16 CTAs per
 * cluster; off by default): the small-batch path of gqa_paged_decode_sm90.cu, which includes it after
 * decode_fused (it uses that file's macros, dec_ring and the attend header's attend_range_cp).
 *
 * Why (DECODE_NOTES.md "Session 8: the small-batch latency"): at batch 1 the default kernel's time is
 * a dependent chain, and half of it comes after the last K/V byte: partial store, fence, counter
 * atomic, fence, the last CTA's 32 partials read back from L2 by one SM, combine, output. Here the CS
 * chunks of one (sequence, kv head) are ONE thread-block cluster: no locate scan (the CTA's sequence,
 * kv head and chunk are its cluster index and rank), no global partials, no atomics, no counters;
 * the chunks' states meet in distributed shared memory and every CTA of the cluster merges and
 * writes 1/CS of the output at once.
 *
 * Chunking: chunk = ceil(pages x ps / CS) rounded up to 64 positions, so every sequence of the batch
 * (kv_len <= pages x ps) fits in its cluster's CS chunks; rank r takes [r chunk, min(kv_len, (r + 1)
 * chunk)), possibly nothing (then its state is empty: m = -inf, l = 0). The host takes this path only
 * for batch <= DEC_CLUSTER_MAXB (default 1: a ragged batch would give every sequence the longest
 * one's chunk), larger batches run version 3; when the occupancy API says no cluster of CS fits, the
 * call fails (cudaErrorNotSupported) rather than timing version 3 under the candidate's name.
 *
 * Per CTA: (sequence 0 only, DEC_CL_PREFETCH: an L2 prefetch of the page ids of its first ring steps,
 * addressed as if kv_indptr[0] = 0 - what the definition guarantees; a wrong guess only wastes the
 * prefetch - so that the id loads below hit L2 instead of waiting for DRAM after kv_indptr)
 * kv_len (kv_indptr, last page) -> attend_range_cp (page ids, cp.async ring, mma.sync math,
 * the 8 warp states in shared memory: sm_m, sm_l, sm_acc, all aliasing the ring) -> the CTA's one
 * state (m, l, unnormalized acc of the 4 heads) in shared memory -> cluster barrier (release /
 * acquire) -> thread t < 512 / CS reads element r 512 / CS + t of every rank's state through DSMEM
 * (ranks in order: deterministic), writes bf16 output and, at dim 0, the base-2 lse -> cluster
 * barrier (no CTA leaves while another still reads its shared memory).
 */
#ifndef SF_DECODE_CLUSTER_CUH
#define SF_DECODE_CLUSTER_CUH

#if DEC_CLUSTER < 2 || DEC_CLUSTER > 16 || (GRP * D) % DEC_CLUSTER != 0
#error "DEC_CLUSTER must be 2, 4, 8 or 16 CTAs per cluster"
#endif
#if DEC_STAGES == 0 || !DECODE_MMA
#error "DEC_CLUSTER needs version 3 (the cp.async ring and DECODE_MMA)"
#endif
#ifndef DEC_CLUSTER_MAXB
#define DEC_CLUSTER_MAXB 1 /* the largest batch that takes the cluster path */
#endif
#ifndef DEC_CLUSTER_MAXKV
#define DEC_CLUSTER_MAXKV 0 /* > 0: the cluster path only when pages x page size < this (session 10's size rule) */
#endif
#ifndef DEC_CL_PREFETCH
#define DEC_CL_PREFETCH 1 /* sequence 0's CTAs prefetch their first page ids into L2 before kv_indptr arrives */
#endif

/* L2 prefetch of the 128-byte line holding p (a hint: no fault, no effect on results) */
__device__ __forceinline__ void dec_prefetch_l2(const void *p)
{
#if defined(__CUDA_ARCH__) && !defined(SF_EMU_H)
	asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#else
	(void)p;
#endif
}

/* barrier.cluster arrive (release) + wait (acquire): every thread of every CTA of the cluster */
__device__ __forceinline__ void dec_cl_sync()
{
#ifdef SF_EMU_H
	emu_cluster_sync();
#elif defined(__CUDA_ARCH__)
	asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

/* The float at byte offset `off` of the ring (dynamic shared memory) of cluster rank `rank` (DSMEM). */
__device__ __forceinline__ float dec_cl_remote(const float *local, unsigned rank)
{
#ifdef SF_EMU_H
	const char *mine = (const char *)dec_ring();
	return *(const float *)((const char *)emu_cluster_shared<uint4>(1000, rank) + ((const char *)local - mine));
#elif defined(__CUDA_ARCH__)
	float v;
	unsigned ra;
	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"((unsigned)__cvta_generic_to_shared(local)), "r"(rank));
	asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(ra) : "memory");
	return v;
#else /* host compilation pass: never called */
	(void)local, (void)rank;
	return 0.0f;
#endif
}

/*
 * Version 5 (DEC_CLUSTER): CTA blockIdx.x = ((b x HKV + kv head) x CS + rank); clusters of CS along x,
 * grid = batch x HKV x CS. Writes out[b, 4 kvh .. 4 kvh + 3, :] and lse of the same rows; touches no
 * scratch. Shared memory: the ring (DEC_RING_BYTES, dynamic) only - after the loop its head holds
 * sm_acc (16 KiB), the CTA state (2 KiB + 32 B) and sm_m / sm_l.
 */
template <int PS>
__global__ void __launch_bounds__(ATT_THREADS, 2)
decode_cluster(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
	       const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ kv_indptr,
	       const int32_t *__restrict__ kv_indices, const int32_t *__restrict__ last_len, int ps_rt,
	       float scale_log2, int chunk, int n_idx, __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
	constexpr int EPC = GRP * D / DEC_CLUSTER; /* output elements each CTA merges */
	uint4 *ring = dec_ring();
	float(*sm_acc)[GRP][D] = (float(*)[GRP][D])ring;  /* written after the ring's last use */
	float *cl_acc = (float *)ring + ATT_WARPS * GRP * D; /* the CTA's state: acc [GRP][D], m [GRP], l [GRP] */
	float *cl_m = cl_acc + GRP * D, *cl_l = cl_m + GRP;
	float(*sm_m)[GRP] = (float(*)[GRP])(cl_l + GRP), (*sm_l)[GRP] = sm_m + ATT_WARPS;
	const int ps = PS ? PS : ps_rt, tid = threadIdx.x;
	const int rank = blockIdx.x % DEC_CLUSTER, bk = blockIdx.x / DEC_CLUSTER, b = bk / HKV, kvh = bk % HKV;
#if DEC_CL_PREFETCH
	if (b == 0) { /* the lines of ids i0 .. i1 - 1: positions rank chunk .. + min(chunk, DEC_STAGES steps) */
		const int i0 = rank * chunk / ps;
		const int i1 = min(n_idx, (rank * chunk + min(chunk, DEC_STAGES * POS_PER_STEP) - 1) / ps + 1);
		const uintptr_t line = ((uintptr_t)(kv_indices + i0) & ~(uintptr_t)127) + (uintptr_t)128 * tid;
		if (i0 < i1 && line < (uintptr_t)(kv_indices + i1))
			dec_prefetch_l2((const void *)line);
	}
#endif
	const int kv_len = kv_len_of(kv_indptr, last_len, ps, b);
	const int p_begin = rank * chunk, p_end = min(kv_len, p_begin + chunk);
	if (p_begin < p_end) {
		attend_range_cp<PS>(q, k_cache, v_cache, kv_indices + kv_indptr[b], ps, scale_log2, b, kvh, p_begin,
				    p_end, ring, sm_m, sm_l, sm_acc);
	} else if (tid < ATT_WARPS * GRP) { /* nothing in this chunk: empty warp states (sm_acc unread) */
		sm_m[tid / GRP][tid % GRP] = -INFINITY;
		sm_l[tid / GRP][tid % GRP] = 0.0f;
	}
	__syncthreads();
	/* the CTA's state: max over the warps, l and acc relative to it; warps with nothing are skipped
	 * (their sm_acc may be stale ring bytes) */
	for (int o = tid; o < GRP * D; o += ATT_THREADS) {
		const int h = o / D, d = o % D;
		float mx = -INFINITY;
#pragma unroll
		for (int x = 0; x < ATT_WARPS; x++)
			mx = fmaxf(mx, sm_m[x][h]);
		float L = 0.0f, A = 0.0f;
#pragma unroll
		for (int x = 0; x < ATT_WARPS; x++)
			if (sm_m[x][h] != -INFINITY) {
				const float f = exp2f(sm_m[x][h] - mx);
				L += sm_l[x][h] * f;
				A += sm_acc[x][h][d] * f;
			}
		cl_acc[o] = A;
		if (d == 0) {
			cl_m[h] = mx;
			cl_l[h] = L;
		}
	}
	dec_cl_sync(); /* every rank's state is written and visible to the cluster */
	if (tid < EPC) {
		const int e = rank * EPC + tid, h = e / D, d = e % D;
		float mj[DEC_CLUSTER], lj[DEC_CLUSTER], aj[DEC_CLUSTER];
#pragma unroll
		for (int j = 0; j < DEC_CLUSTER; j++) { /* all 3 x CS loads in flight at once */
			mj[j] = dec_cl_remote(cl_m + h, (unsigned)j);
			lj[j] = dec_cl_remote(cl_l + h, (unsigned)j);
			aj[j] = dec_cl_remote(cl_acc + e, (unsigned)j);
		}
		float mx = -INFINITY;
#pragma unroll
		for (int j = 0; j < DEC_CLUSTER; j++)
			mx = fmaxf(mx, mj[j]);
		float L = 0.0f, A = 0.0f;
#pragma unroll
		for (int j = 0; j < DEC_CLUSTER; j++)
			if (mj[j] != -INFINITY) {
				const float f = exp2f(mj[j] - mx);
				L += lj[j] * f;
				A += aj[j] * f;
			}
		const size_t row = (size_t)b * HQ + kvh * GRP + h;
		out[row * D + d] = __float2bfloat16(L > 0.0f ? A / L : 0.0f);
		if (d == 0)
			lse[row] = L > 0.0f ? mx + log2f(L) : -INFINITY;
	}
	dec_cl_sync(); /* the other ranks have read this CTA's state */
}

#ifndef SF_EMU_H
/* The launch configuration of decode_cluster: `grid` CTAs of ATT_THREADS in clusters of DEC_CLUSTER
 * along x, the ring's dynamic shared memory, on `stream`; at[0] holds the cluster attribute (it must
 * outlive cfg). */
static void dec_cluster_cfg(cudaLaunchConfig_t *cfg, cudaLaunchAttribute *at, unsigned grid, cudaStream_t stream)
{
	*cfg = cudaLaunchConfig_t{};
	at[0].id = cudaLaunchAttributeClusterDimension;
	at[0].val.clusterDim.x = DEC_CLUSTER;
	at[0].val.clusterDim.y = 1;
	at[0].val.clusterDim.z = 1;
	cfg->gridDim = dim3(grid, 1, 1);
	cfg->blockDim = dim3(ATT_THREADS, 1, 1);
	cfg->dynamicSmemBytes = DEC_RING_BYTES;
	cfg->stream = stream;
	cfg->attrs = at;
	cfg->numAttrs = 1;
}
#endif

static int g_cl_setup[3]; /* per page-size kind: 0 not yet, 1 usable, -1 not (clusters of CS do not fit) */

/*
 * Once per kernel kind (0: ps 1, 1: ps 16, 2: runtime ps): the ring's dynamic shared memory opt-in,
 * the largest carveout, non-portable cluster sizes (CS > 8), and whether at least one cluster of CS
 * CTAs fits on the device (cudaOccupancyMaxActiveClusters). Returns 1 when the path may be used.
 */
template <int PS> static int dec_cluster_setup(int kind)
{
	if (g_cl_setup[kind])
		return g_cl_setup[kind] > 0;
	cudaError_t e = cudaFuncSetAttribute(decode_cluster<PS>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)DEC_RING_BYTES);
	if (e == cudaSuccess)
		e = cudaFuncSetAttribute(decode_cluster<PS>, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
	if (e == cudaSuccess && DEC_CLUSTER > 8)
		e = cudaFuncSetAttribute(decode_cluster<PS>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
	int fits = e == cudaSuccess;
#ifndef SF_EMU_H
	if (fits) {
		cudaLaunchConfig_t cfg;
		cudaLaunchAttribute at[1];
		dec_cluster_cfg(&cfg, at, DEC_CLUSTER * HKV, 0);
		int ncl = 0;
		fits = cudaOccupancyMaxActiveClusters(&ncl, decode_cluster<PS>, &cfg) == cudaSuccess && ncl >= 1;
		(void)cudaGetLastError(); /* a refused query leaves no sticky error: dec_cluster_try reports it */
	}
#endif
	g_cl_setup[kind] = fits ? 1 : -1;
	return fits;
}

/* Launches decode_cluster<PS> for `batch` sequences with chunk `chunk` (n_idx: kv_indices' length) on
 * `stream`; the launch's error. */
template <int PS>
static cudaError_t dec_cluster_launch(const __nv_bfloat16 *q, const __nv_bfloat16 *kc, const __nv_bfloat16 *vc,
				      const int32_t *kv_indptr, const int32_t *kv_indices, const int32_t *last, int ps,
				      float scale_log2, int batch, int chunk, int n_idx, __nv_bfloat16 *out, float *lse,
				      cudaStream_t stream)
{
	const unsigned grid = (unsigned)batch * HKV * DEC_CLUSTER;
#ifdef SF_EMU_H
	(void)stream;
	emu_cluster = DEC_CLUSTER;
	emu_launch(grid, ATT_THREADS, decode_cluster<PS>, q, kc, vc, kv_indptr, kv_indices, last, ps, scale_log2, chunk,
		   n_idx, out, lse);
	emu_cluster = 1;
	return cudaGetLastError();
#else
	cudaLaunchConfig_t cfg;
	cudaLaunchAttribute at[1];
	dec_cluster_cfg(&cfg, at, grid, stream);
	return cudaLaunchKernelEx(&cfg, decode_cluster<PS>, q, kc, vc, kv_indptr, kv_indices, last, ps, scale_log2, chunk,
				  n_idx, out, lse);
#endif
}

/*
 * The cluster path for one call, when it applies (batch <= DEC_CLUSTER_MAXB and, with DEC_CLUSTER_MAXKV > 0,
 * total_kv_max = pages x page size < DEC_CLUSTER_MAXKV: session 9 measured cl16 -7% at b1-kv4096 and +4%
 * at b1-kv32768): chunk = ceil(total_kv_max
 * / CS) rounded up to 64 positions. Returns 1 when it applied (*err: the launch's error, or
 * cudaErrorNotSupported when clusters of CS CTAs do not fit on this device: the call then fails, so a
 * timed knob line can never be version 3 under the candidate's name), 0 when version 3 must run (the
 * batch is larger).
 */
static int dec_cluster_try(const __nv_bfloat16 *q, const __nv_bfloat16 *kc, const __nv_bfloat16 *vc,
			   const int32_t *kv_indptr, const int32_t *kv_indices, const int32_t *last, int ps,
			   float scale_log2, int batch, int64_t total_kv_max, __nv_bfloat16 *out, float *lse,
			   cudaStream_t stream, cudaError_t *err)
{
	if (batch > DEC_CLUSTER_MAXB || (int64_t)batch * HKV * DEC_CLUSTER > INT32_MAX)
		return 0;
	if (DEC_CLUSTER_MAXKV > 0 && total_kv_max >= DEC_CLUSTER_MAXKV) /* long: version 3 (or decode_b1) streams better */
		return 0;
	int64_t chunk = (total_kv_max + DEC_CLUSTER - 1) / DEC_CLUSTER;
	chunk = (chunk + POS_PER_STEP - 1) / POS_PER_STEP * POS_PER_STEP;
	if (chunk < POS_PER_STEP)
		chunk = POS_PER_STEP;
	const int kind = ps == 1 ? 0 : ps == 16 ? 1 : 2, n_idx = (int)(total_kv_max / ps), ck = (int)chunk;
	const int ok = kind == 0 ? dec_cluster_setup<1>(kind) : kind == 1 ? dec_cluster_setup<16>(kind) : dec_cluster_setup<0>(kind);
	if (!ok) { /* the candidate was asked for and cannot run here: an error, not a silent version 3 */
		*err = cudaErrorNotSupported;
		return 1;
	}
	*err = kind == 0   ? dec_cluster_launch<1>(q, kc, vc, kv_indptr, kv_indices, last, ps, scale_log2, batch, ck, n_idx, out, lse, stream)
	       : kind == 1 ? dec_cluster_launch<16>(q, kc, vc, kv_indptr, kv_indices, last, ps, scale_log2, batch, ck, n_idx, out, lse, stream)
			   : dec_cluster_launch<0>(q, kc, vc, kv_indptr, kv_indices, last, ps, scale_log2, batch, ck, n_idx, out, lse, stream);
	return 1;
}
#endif
