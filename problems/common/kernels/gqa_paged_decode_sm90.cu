/*
 * gqa_paged_decode_sm90.cu - split-KV GQA paged decode for Llama-3.1-8B (32 q heads, 8 kv heads, head_dim 128), one
 * source for page sizes 1 and 16 (the same file serves gqa_paged_decode_h32_kv8_d128_ps1 and _ps16;
 * it tells them apart by the input count: ps1 has no kv_last_page_len).
 *
 * Memory-bound: every K/V row the page table references is read exactly once. The 4 query heads of a
 * GQA group share each K/V load. Three kernels on the caller's stream:
 *   plan    one CTA: kv_len per sequence, chunks of `chunk` positions, a prefix of chunk counts and
 *           the list of work items (sequence, chunk) in scratch memory;
 *   attend  one CTA (8 warps) per (work item, kv head): each half-warp takes 4 consecutive positions
 *           per step (16-byte ld.global.nc loads per lane: 8 dims of K and of V), scores the 4 heads,
 *           keeps a base-2 online softmax in fp32; the CTA merges its 16 half-warps; a sequence with
 *           one chunk writes output and lse directly, otherwise a partial (o, lse) goes to scratch;
 *   merge   one warp per (sequence, q head) with >= 2 chunks (or none: zeros and -inf).
 * Scratch is allocated once (cudaMalloc) and regrown, the old block freed, when a bigger batch comes.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>
#include "solforge/solution.h"

#define HQ 32
#define HKV 8
#define GRP 4
#define D 128
#define ATT_WARPS 8
#define ATT_THREADS (ATT_WARPS * 32)
#define POS_PER_GROUP 4                                   /* consecutive positions per half-warp step */
#define POS_PER_STEP (ATT_WARPS * 2 * POS_PER_GROUP)      /* 64 positions per CTA step */
#define PLAN_THREADS 1024
#define LOG2E 1.4426950408889634f

struct work_item {
	int b;     /* sequence */
	int chunk; /* chunk index within the sequence */
};

/* kv_len of sequence b: pages * ps for ps1 (no last-page input), else (pages - 1) * ps + last. */
__device__ __forceinline__ int kv_len_of(const int32_t *kv_indptr, const int32_t *last_len, int ps, int b)
{
	const int n = kv_indptr[b + 1] - kv_indptr[b];
	if (n <= 0)
		return 0;
	return last_len ? (n - 1) * ps + last_len[b] : n * ps;
}

/*
 * One CTA: start[b] = chunks before sequence b (start[batch] = total), items[] = (b, chunk) for every
 * chunk in sequence order, *n_items = total. Chunks of sequence b: ceil(kv_len / chunk).
 */
__global__ void __launch_bounds__(PLAN_THREADS)
decode_plan(const int32_t *__restrict__ kv_indptr, const int32_t *__restrict__ last_len, int ps, int batch,
	    int chunk, int *__restrict__ start, work_item *__restrict__ items, int *__restrict__ n_items)
{
	__shared__ int warp_sum[PLAN_THREADS / 32];
	__shared__ int carry;
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	if (tid == 0)
		carry = 0;
	__syncthreads();
	for (int base = 0; base < batch; base += PLAN_THREADS) {
		const int b = base + tid;
		const int cnt = b < batch ? (kv_len_of(kv_indptr, last_len, ps, b) + chunk - 1) / chunk : 0;
		int x = cnt; /* inclusive warp scan */
		for (int o = 1; o < 32; o <<= 1) {
			const int y = __shfl_up_sync(0xffffffffu, x, o);
			if (lane >= o)
				x += y;
		}
		if (lane == 31)
			warp_sum[warp] = x;
		__syncthreads();
		if (warp == 0) {
			int w = warp_sum[lane];
			for (int o = 1; o < 32; o <<= 1) {
				const int y = __shfl_up_sync(0xffffffffu, w, o);
				if (lane >= o)
					w += y;
			}
			warp_sum[lane] = w; /* inclusive over warps */
		}
		__syncthreads();
		const int excl = carry + (warp ? warp_sum[warp - 1] : 0) + x - cnt;
		if (b < batch) {
			start[b] = excl;
			for (int c = 0; c < cnt; c++)
				items[excl + c] = work_item{b, c};
		}
		__syncthreads();
		if (tid == 0)
			carry += warp_sum[PLAN_THREADS / 32 - 1];
		__syncthreads();
	}
	if (tid == 0) {
		start[batch] = carry;
		*n_items = carry;
	}
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

__device__ __forceinline__ uint4 ldg_nc(const void *p)
{
	uint4 r;
	asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
		     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
		     : "l"(p));
	return r;
}

/*
 * One CTA per (work item = blockIdx.x / HKV, kv head = blockIdx.x % HKV). Items beyond *n_items exit.
 * Lane l of half-warp hw holds dims 8*(l%16) .. +7 of the 4 query heads of the group (pre-scaled by
 * sm_scale * log2 e) and of their 4 accumulators. Writes output/lse when the sequence has one chunk,
 * else part_o[(item * HQ + h) * D + d] (normalized) and part_lse[item * HQ + h] (base 2).
 */
template <int PS>
__global__ void __launch_bounds__(ATT_THREADS, 2)
decode_attend(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
	      const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ kv_indptr,
	      const int32_t *__restrict__ kv_indices, const int32_t *__restrict__ last_len, int ps_rt,
	      float scale_log2, int chunk, const int *__restrict__ start, const work_item *__restrict__ items,
	      const int *__restrict__ n_items, float *__restrict__ part_o, float *__restrict__ part_lse,
	      __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
	const int ps = PS ? PS : ps_rt;
	const int item = blockIdx.x / HKV, kvh = blockIdx.x % HKV;
	if (item >= *n_items)
		return;
	const work_item w = items[item];
	const int b = w.b;
	const int kv_len = kv_len_of(kv_indptr, last_len, ps, b);
	const int p_begin = w.chunk * chunk;
	const int p_end = min(kv_len, p_begin + chunk);
	const int single = (start[b + 1] - start[b]) == 1;
	const int32_t *pages = kv_indices + kv_indptr[b];

	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int sub = lane & 15;                 /* lane within the half-warp: dims 8*sub .. 8*sub+7 */

	float qf[GRP][8];
#pragma unroll
	for (int h = 0; h < GRP; h++) {
		const uint4 u = *(const uint4 *)(q + ((size_t)b * HQ + kvh * GRP + h) * D + sub * 8);
		bf16x8_to_float(u, qf[h]);
#pragma unroll
		for (int i = 0; i < 8; i++)
			qf[h][i] *= scale_log2;
	}
	float acc[GRP][8];
	float m[GRP], l[GRP];
#pragma unroll
	for (int h = 0; h < GRP; h++) {
		m[h] = -INFINITY;
		l[h] = 0.0f;
#pragma unroll
		for (int i = 0; i < 8; i++)
			acc[h][i] = 0.0f;
	}

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
#pragma unroll
		for (int j = 0; j < NPG; j++) /* the next step's pages (K is consumed) */
			pg[j] = pages[min(p0 + POS_PER_STEP + j, p_end - 1) / ps];
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

	/* merge the two half-warps of the warp (xor 16), then the 8 warps through shared memory */
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
	__shared__ float sm_m[ATT_WARPS][GRP], sm_l[ATT_WARPS][GRP];
	__shared__ float sm_acc[ATT_WARPS][GRP][D];
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
	__syncthreads();
	/* thread t: head t / 64 ... 4 heads x 128 dims = 512 outputs, 2 per thread */
	for (int o = tid; o < GRP * D; o += ATT_THREADS) {
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
		const int hq = kvh * GRP + h;
		const float val = A / L; /* L > 0: the chunk has at least one position */
		if (single) {
			out[((size_t)b * HQ + hq) * D + d] = __float2bfloat16(val);
			if (d == 0)
				lse[(size_t)b * HQ + hq] = mx + log2f(L);
		} else {
			part_o[((size_t)item * HQ + hq) * D + d] = val;
			if (d == 0)
				part_lse[(size_t)item * HQ + hq] = mx + log2f(L);
		}
	}
}

/*
 * One warp per (sequence, q head) row: combines the partials of a sequence with >= 2 chunks; a
 * sequence with no kv position gets zeros and lse -inf (what the reference writes); one chunk: done.
 */
__global__ void __launch_bounds__(256)
decode_merge(const int *__restrict__ start, const float *__restrict__ part_o, const float *__restrict__ part_lse,
	     int batch, __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
	const int row = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
	if (row >= batch * HQ)
		return;
	const int b = row / HQ, h = row % HQ;
	const int s0 = start[b], n = start[b + 1] - s0;
	if (n == 1)
		return;
	if (n == 0) {
		for (int d = lane; d < D; d += 32)
			out[(size_t)row * D + d] = __float2bfloat16(0.0f);
		if (lane == 0)
			lse[row] = -INFINITY;
		return;
	}
	float mx = -INFINITY;
	for (int c = 0; c < n; c++)
		mx = fmaxf(mx, part_lse[(size_t)(s0 + c) * HQ + h]);
	float wsum = 0.0f, a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
	for (int c = 0; c < n; c++) {
		const float wt = exp2f(part_lse[(size_t)(s0 + c) * HQ + h] - mx);
		wsum += wt;
		const float4 v = *(const float4 *)(part_o + ((size_t)(s0 + c) * HQ + h) * D + lane * 4);
		a[0] = fmaf(wt, v.x, a[0]);
		a[1] = fmaf(wt, v.y, a[1]);
		a[2] = fmaf(wt, v.z, a[2]);
		a[3] = fmaf(wt, v.w, a[3]);
	}
	const float inv = 1.0f / wsum;
	__nv_bfloat162 lo2 = __floats2bfloat162_rn(a[0] * inv, a[1] * inv);
	__nv_bfloat162 hi2 = __floats2bfloat162_rn(a[2] * inv, a[3] * inv);
	uint2 pk;
	pk.x = *(uint32_t *)&lo2;
	pk.y = *(uint32_t *)&hi2;
	*(uint2 *)(out + (size_t)row * D + lane * 4) = pk;
	if (lane == 0)
		lse[row] = mx + log2f(wsum);
}

static void *g_scratch;
static size_t g_scratch_bytes;

/* Returns scratch of at least `bytes` (grown by cudaMalloc, old block freed), NULL on failure. */
static void *scratch(size_t bytes)
{
	if (bytes <= g_scratch_bytes)
		return g_scratch;
	if (g_scratch)
		cudaFree(g_scratch);
	g_scratch = NULL;
	g_scratch_bytes = 0;
	size_t want = bytes + bytes / 4;
	if (cudaMalloc(&g_scratch, want) != cudaSuccess)
		return NULL;
	g_scratch_bytes = want;
	return g_scratch;
}

static size_t align256(size_t x)
{
	return (x + 255) & ~(size_t)255;
}

SF_EXPORT int run(const sf_call *call)
{
	/* ps1: q k v kv_indptr kv_indices sm_scale; ps16: ... kv_indices kv_last_page_len sm_scale */
	const int has_last = call->n_inputs == 7;
	if ((call->n_inputs != 6 && call->n_inputs != 7) || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *in = call->inputs;
	const int i_scale = has_last ? 6 : 5;
	if (in[0].ndim != 3 || in[0].shape[1] != HQ || in[0].shape[2] != D || in[1].ndim != 4 ||
	    in[1].shape[2] != HKV || in[1].shape[3] != D)
		return SF_ERR_UNSUPPORTED;
	const int64_t batch64 = in[0].shape[0];
	const int64_t n_idx = in[4].shape[0];
	const int ps = (int)in[1].shape[1];
	if (batch64 < 1)
		return SF_OK;
	if (batch64 > (1 << 24) || n_idx * ps > INT32_MAX / 2)
		return SF_ERR_UNSUPPORTED;
	const int batch = (int)batch64;
	const float scale_log2 = (float)call->scalars[i_scale] * LOG2E;
	cudaStream_t stream = (cudaStream_t)call->stream;

	/* chunk: about 66 chunks x 8 kv heads = 4 CTAs per SM of 132 over the whole batch, a multiple of 64 */
	const int64_t total_kv_max = n_idx * ps;
	int64_t chunk = (total_kv_max + 65) / 66;
	chunk = (chunk + POS_PER_STEP - 1) / POS_PER_STEP * POS_PER_STEP;
	if (chunk < 128)
		chunk = 128;
	const int64_t max_items = total_kv_max / chunk + batch;
	if (max_items * HKV > INT32_MAX)
		return SF_ERR_UNSUPPORTED;

	const size_t o_start = 0;
	const size_t o_nitems = align256(o_start + sizeof(int) * (size_t)(batch + 1));
	const size_t o_items = align256(o_nitems + sizeof(int));
	const size_t o_plse = align256(o_items + sizeof(work_item) * (size_t)max_items);
	const size_t o_po = align256(o_plse + sizeof(float) * (size_t)max_items * HQ);
	const size_t total = o_po + sizeof(float) * (size_t)max_items * HQ * D;
	char *s = (char *)scratch(total);
	if (!s)
		return SF_ERR_CUDA;
	int *start = (int *)(s + o_start);
	int *n_items = (int *)(s + o_nitems);
	work_item *items = (work_item *)(s + o_items);
	float *part_lse = (float *)(s + o_plse);
	float *part_o = (float *)(s + o_po);

	const __nv_bfloat16 *q = (const __nv_bfloat16 *)in[0].data;
	const __nv_bfloat16 *kc = (const __nv_bfloat16 *)in[1].data;
	const __nv_bfloat16 *vc = (const __nv_bfloat16 *)in[2].data;
	const int32_t *kv_indptr = (const int32_t *)in[3].data;
	const int32_t *kv_indices = (const int32_t *)in[4].data;
	const int32_t *last = has_last ? (const int32_t *)in[5].data : NULL;
	__nv_bfloat16 *out = (__nv_bfloat16 *)call->outputs[0].data;
	float *lse = (float *)call->outputs[1].data;

	decode_plan<<<1, PLAN_THREADS, 0, stream>>>(kv_indptr, last, ps, batch, (int)chunk, start, items, n_items);
	const unsigned grid = (unsigned)(max_items * HKV);
	if (ps == 1)
		decode_attend<1><<<grid, ATT_THREADS, 0, stream>>>(q, kc, vc, kv_indptr, kv_indices, last, ps, scale_log2,
								  (int)chunk, start, items, n_items, part_o, part_lse,
								  out, lse);
	else if (ps == 16)
		decode_attend<16><<<grid, ATT_THREADS, 0, stream>>>(q, kc, vc, kv_indptr, kv_indices, last, ps, scale_log2,
								   (int)chunk, start, items, n_items, part_o, part_lse,
								   out, lse);
	else
		decode_attend<0><<<grid, ATT_THREADS, 0, stream>>>(q, kc, vc, kv_indptr, kv_indices, last, ps, scale_log2,
								  (int)chunk, start, items, n_items, part_o, part_lse,
								  out, lse);
	decode_merge<<<(unsigned)((batch * HQ + 7) / 8), 256, 0, stream>>>(start, part_o, part_lse, batch, out, lse);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
