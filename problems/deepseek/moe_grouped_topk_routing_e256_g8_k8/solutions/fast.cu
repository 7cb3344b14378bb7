/*
 * fast.cu - DeepSeek-V3 grouped top-k routing (moe_grouped_topk_routing_e256_g8_k8): sigmoid scores,
 * choice = s + bias, 8 groups of 32 scored by their two largest choices, the 4 best groups kept
 * (equal scores: lower group first), the TOPK (8) largest choices of kept experts (equal: lower expert
 * first), weights = s / sum(s of picks) * routed_scaling_factor.
 *
 * One warp per token, 8 experts per lane (two 16-byte loads; lane l holds experts 8l..8l+7, so group
 * g is lanes 4g..4g+3). Each lane keeps the two largest choices of its 8 (a multiset: equal values
 * both count, as the oracle's scan), two xor-shuffle merges give the group's top two, every lane
 * gathers the 8 group scores and picks the kept groups the same way; then TOPK rounds of a warp
 * argmax over (choice, expert) among kept, not yet picked experts: per round one redux.sync.max over
 * order-preserving 32-bit keys of the choices and one redux.sync.min for the lowest expert holding
 * that maximum (the oracle's tie rule); the winner's lane retires it. Lane k keeps pick k's id and
 * fetches its logit from the owning lane (shuffles) to recompute its sigmoid for the weights. All float32 (sigmoid via IEEE
 * expf and division): the generator keeps every decision's margin >= 1e-4, far above float32 error.
 * The bias row is loaded once per warp; each warp handles TPW tokens, their loads issued first.
 * Geometry fixed by the definition (E 256, G 8, TOPKG 4; TOPK read from the output shape, <= 32).
 * The per-lane pieces are __host__ __device__: tests/fast/grouped_router_fast_test.cu drives them
 * through a CPU emulation of the warp against the oracle's algorithm.
 * Version 2 (-DDS_V2=1, opt-in; "Version 2" below): the same layout with ~4x fewer instructions per
 * token, one token per warp, a capped grid looping over tokens. Both versions run whole on the CPU
 * emulation (tests/emu/emu_dsroute.h).
 */
// solforge-tune: TPW=1,2,4 THREADS=64,128,256
/* version 2 (-DDS_V2=1) knobs: DS2_BPS=4,8,16,0 DS2_THREADS=64,128,256 DS2_PREFETCH=0,1 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <math.h>
#include <string.h>
#include "solforge/solution.h"

#ifndef TPW
#define TPW 2
#endif
#ifndef THREADS
#define THREADS 128
#endif
#ifndef DS_V2
#define DS_V2 1 /* 1 (default since session 13: 2.5-4.4x version 1 on the H200, t8 9.06 -> 2.08 us, t32768 75.33 ->
		 * 23.65; NOTES.md "Version 2 measured"): version 2 (below); 0: version 1 */
#endif

#define DS_E 256
#define DS_G 8
#define DS_TOPKG 4
#define DS_VPL 8 /* experts per lane */

/* (t1, t2) = the two largest of a multiset given as two sorted pairs (t1 >= t2, o1 >= o2) */
static __host__ __device__ __forceinline__ void ds_merge2(float &t1, float &t2, float o1, float o2)
{
	const float n2 = fmaxf(fminf(t1, o1), fmaxf(t2, o2));
	t1 = fmaxf(t1, o1);
	t2 = n2;
}

/* the two largest of v[0..7] as a multiset (equal values both count), as the oracle's scan */
static __host__ __device__ __forceinline__ void ds_top2(const float *v, float &t1, float &t2)
{
	t1 = -INFINITY;
	t2 = -INFINITY;
	for (int j = 0; j < DS_VPL; j++) {
		if (v[j] > t1) {
			t2 = t1;
			t1 = v[j];
		} else if (v[j] > t2) {
			t2 = v[j];
		}
	}
}

/* bit g set for the DS_TOPKG best of the DS_G group scores (equal scores: lower group first) */
static __host__ __device__ __forceinline__ unsigned ds_pick_groups(const float *gsc)
{
	unsigned kept = 0;
	for (int r = 0; r < DS_TOPKG; r++) {
		int best = -1;
		for (int g = 0; g < DS_G; g++)
			if (!(kept >> g & 1u) && (best < 0 || gsc[g] > gsc[best]))
				best = g;
		kept |= 1u << best;
	}
	return kept;
}

/* order key of a choice: sign-folded float bits (larger key = larger value; -0 made +0 so that equal
 * values tie), or 0 (below any real key) when the expert is out of the race */
static __host__ __device__ __forceinline__ uint32_t ds_key(float c, bool live)
{
	uint32_t u;
	memcpy(&u, &c, 4);
	u = (u == 0x80000000u) ? 0u : u;
	return live ? ((u & 0x80000000u) ? ~u : (u | 0x80000000u)) : 0u;
}

/* the sigmoid score */
static __host__ __device__ __forceinline__ float ds_sigmoid(float x)
{
	return 1.0f / (1.0f + expf(-x));
}

template <bool VEC>
static __device__ __forceinline__ void ds_load8(const float *p, float v[DS_VPL])
{
	if (VEC) {
		const float4 a = __ldcs(reinterpret_cast<const float4 *>(p));
		const float4 b = __ldcs(reinterpret_cast<const float4 *>(p) + 1);
		v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
		v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
	} else {
#pragma unroll
		for (int j = 0; j < DS_VPL; j++)
			v[j] = p[j];
	}
}

template <bool VEC>
static __global__ void __launch_bounds__(THREADS) ds_kernel(const float *__restrict__ logits, const float *__restrict__ bias,
							   float rsf, float *__restrict__ w_out,
							   int32_t *__restrict__ id_out, int64_t T, int K)
{
	const int lane = threadIdx.x & 31;
	const int64_t warp = ((int64_t)blockIdx.x * THREADS + threadIdx.x) >> 5;
	const int64_t t0 = warp * TPW;
	if (t0 >= T) /* warp-uniform */
		return;
	float l[TPW][DS_VPL], b[DS_VPL];
#pragma unroll
	for (int r = 0; r < TPW; r++)
		if (t0 + r < T)
			ds_load8<VEC>(logits + (t0 + r) * DS_E + lane * DS_VPL, l[r]);
	if (VEC) {
		const float4 a = __ldg(reinterpret_cast<const float4 *>(bias + lane * DS_VPL));
		const float4 c = __ldg(reinterpret_cast<const float4 *>(bias + lane * DS_VPL) + 1);
		b[0] = a.x; b[1] = a.y; b[2] = a.z; b[3] = a.w;
		b[4] = c.x; b[5] = c.y; b[6] = c.z; b[7] = c.w;
	} else {
#pragma unroll
		for (int j = 0; j < DS_VPL; j++)
			b[j] = bias[lane * DS_VPL + j];
	}
#pragma unroll
	for (int r = 0; r < TPW; r++) {
		const int64_t t = t0 + r;
		if (t >= T) /* warp-uniform */
			break;
		float c[DS_VPL];
#pragma unroll
		for (int j = 0; j < DS_VPL; j++)
			c[j] = ds_sigmoid(l[r][j]) + b[j];
		float t1, t2;
		ds_top2(c, t1, t2);
		/* the group's two largest: merge the lanes' pairs (symmetric, so all 4 lanes agree) */
#pragma unroll
		for (int off = 1; off <= 2; off <<= 1) {
			const float o1 = __shfl_xor_sync(0xffffffffu, t1, off);
			const float o2 = __shfl_xor_sync(0xffffffffu, t2, off);
			ds_merge2(t1, t2, o1, o2);
		}
		const float gscore = t1 + t2;
		float gsc[DS_G];
#pragma unroll
		for (int g = 0; g < DS_G; g++)
			gsc[g] = __shfl_sync(0xffffffffu, gscore, 4 * g);
		const unsigned kept = ds_pick_groups(gsc);
		uint32_t key[DS_VPL];
		const bool grp_kept = (kept >> (lane >> 2)) & 1u;
#pragma unroll
		for (int j = 0; j < DS_VPL; j++)
			key[j] = ds_key(c[j], grp_kept);
		int my_id = 0;
		for (int k = 0; k < K; k++) {
			uint32_t lm = key[0];
#pragma unroll
			for (int j = 1; j < DS_VPL; j++)
				lm = max(lm, key[j]);
			const uint32_t w = __reduce_max_sync(0xffffffffu, lm); /* the largest choice left */
			uint32_t cand = 0xffffffffu; /* the lowest expert holding it */
#pragma unroll
			for (int j = DS_VPL - 1; j >= 0; j--)
				cand = (key[j] == w) ? (uint32_t)(lane * DS_VPL + j) : cand;
			const int bi = (int)__reduce_min_sync(0xffffffffu, cand);
			if (lane == k)
				my_id = bi;
			if ((bi >> 3) == lane) {
#pragma unroll
				for (int j = 0; j < DS_VPL; j++)
					if ((bi & (DS_VPL - 1)) == j)
						key[j] = 0;
			}
		}
		/* lane k < K: the sigmoid of its pick, from the logit held by lane my_id / 8 (8 shuffles, all
		 * lanes take part), computed as above */
		float my_l = 0.0f;
#pragma unroll
		for (int j = 0; j < DS_VPL; j++) {
			const float v = __shfl_sync(0xffffffffu, l[r][j], (my_id >> 3) & 31);
			my_l = (my_id & (DS_VPL - 1)) == j ? v : my_l;
		}
		const float my_s = lane < K ? ds_sigmoid(my_l) : 0.0f;
		float sum = lane < K ? my_s : 0.0f;
#pragma unroll
		for (int off = 16; off > 0; off >>= 1)
			sum += __shfl_xor_sync(0xffffffffu, sum, off);
		if (lane < K) {
			w_out[t * K + lane] = my_s / sum * rsf;
			id_out[t * K + lane] = my_id;
		}
	}
}

#if DS_V2
/*
 * Version 2 (-DDS_V2=1; K == 8 with 16-byte aligned rows, else version 1): the same lane layout with a
 * shorter per-token dependent chain and ~2x fewer instructions (solutions/NOTES.md, "v2"):
 *  - s = __fdividef(1, 1 + __expf(-x)) (two MUFU ops, ~2 ulp; the definition's margins are 1e-4);
 *  - each lane's top two by a 3-level tree of pair merges instead of a sequential scan;
 *  - the kept groups by rank: the 4 lanes of a group compare 2 of the 8 group scores each with their
 *    own and add up those ahead (larger, or equal with a lower group index): kept iff fewer than 4
 *    (4 shuffles; no 4 x 8 sequential pick loop);
 *  - each lane sorts its 8 keys descending once (19-comparator network, off the group chain), so a
 *    round is: redux.max of the heads, ballot of the lanes holding it, the lowest of them pops (the
 *    oracle's order: larger choice, then lower expert; lane l holds experts 8l..8l+7); lane r records
 *    round r's value and ballot, every lane the rounds it won;
 *  - lane k < 8 then finds its expert among the winner's 8 unsorted keys (8 shuffles; with exact ties
 *    inside that lane, the match after the winner's earlier pops of that value), reloads that logit
 *    (an L1 hit), and the weights are normalized over lanes 0..7 (3 xor shuffles); lanes 0..7 store
 *    32 coalesced bytes each of weights and ids.
 * Tokens: one per warp, warps looping over the tokens with a stride of the grid's warps; the grid is
 * capped at DS2_BPS blocks per SM (0: no cap, one token per warp) and the next token's row is
 * prefetched into registers while the current one is routed (DS2_PREFETCH).
 */
#ifndef DS2_THREADS
#define DS2_THREADS 128
#endif
#ifndef DS2_BPS
#define DS2_BPS 8
#endif
#ifndef DS2_PREFETCH
#define DS2_PREFETCH 1
#endif
#define DS2_K 8

/* the sigmoid score, fast form: ex2.approx.ftz and rcp.approx (two MUFU ops, ~2 ulp; a flushed
 * exponential only arises where s rounds to 1 anyway). Never -0, so s + bias is never -0 either. */
static __device__ __forceinline__ float ds2_sigmoid(float x)
{
	const float a = x * -1.4426950408889634f;
	float e;
#ifdef __CUDA_ARCH__
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(a));
#else
	e = exp2f(a); /* (the CPU emulation) */
#endif
	return __fdividef(1.0f, 1.0f + e);
}

/* order key of a float that is not -0 or NaN: larger value, larger key; never 0 (0 = out of the race) */
static __host__ __device__ __forceinline__ uint32_t ds2_key(float c)
{
	uint32_t u;
	memcpy(&u, &c, 4);
	return u ^ ((uint32_t)((int32_t)u >> 31) | 0x80000000u);
}

/* descending compare-exchange of keys a (first) and b */
#define DS2_CX(a, b)                                \
	do {                                        \
		const uint32_t hi_ = max((a), (b)); \
		(b) = min((a), (b));                \
		(a) = hi_;                          \
	} while (0)

/* sorts k[0..7] descending (Batcher's odd-even merge network: 19 comparators, depth 6) */
static __host__ __device__ __forceinline__ void ds2_sort8(uint32_t k[DS_VPL])
{
	DS2_CX(k[0], k[1]); DS2_CX(k[2], k[3]); DS2_CX(k[4], k[5]); DS2_CX(k[6], k[7]);
	DS2_CX(k[0], k[2]); DS2_CX(k[1], k[3]); DS2_CX(k[4], k[6]); DS2_CX(k[5], k[7]);
	DS2_CX(k[1], k[2]); DS2_CX(k[5], k[6]);
	DS2_CX(k[0], k[4]); DS2_CX(k[1], k[5]); DS2_CX(k[2], k[6]); DS2_CX(k[3], k[7]);
	DS2_CX(k[2], k[4]); DS2_CX(k[3], k[5]);
	DS2_CX(k[1], k[2]); DS2_CX(k[3], k[4]); DS2_CX(k[5], k[6]);
}

/* the two largest of v[0..7] as a multiset, by a tree of pair merges (same result as ds_top2) */
static __host__ __device__ __forceinline__ void ds2_top2(const float *v, float &t1, float &t2)
{
	float a1[4], a2[4];
	for (int i = 0; i < 4; i++) {
		a1[i] = fmaxf(v[2 * i], v[2 * i + 1]);
		a2[i] = fminf(v[2 * i], v[2 * i + 1]);
	}
	ds_merge2(a1[0], a2[0], a1[1], a2[1]);
	ds_merge2(a1[2], a2[2], a1[3], a2[3]);
	ds_merge2(a1[0], a2[0], a1[2], a2[2]);
	t1 = a1[0];
	t2 = a2[0];
}

static __device__ __forceinline__ void ds2_load(const float *p, float4 &a, float4 &b)
{
	a = __ldg(reinterpret_cast<const float4 *>(p));
	b = __ldg(reinterpret_cast<const float4 *>(p) + 1);
}

/* Routes tokens warp, warp + nwarps, ... < T (rows 16-byte aligned, K == 8); see above. Registers
 * capped for 32 warps per SM (<= 64; without the cap ptxas picked 56 and spilled 4 bytes). */
static __global__ void __launch_bounds__(DS2_THREADS, 1024 / DS2_THREADS) ds2_kernel(const float *__restrict__ logits,
								  const float *__restrict__ bias, float rsf,
								  float *__restrict__ w_out, int32_t *__restrict__ id_out,
								  int64_t T)
{
	const int lane = threadIdx.x & 31;
	const int64_t nwarps = (int64_t)gridDim.x * (DS2_THREADS / 32);
	int64_t t = ((int64_t)blockIdx.x * DS2_THREADS + threadIdx.x) >> 5;
	if (t >= T) /* warp-uniform */
		return;
	const unsigned FULL = 0xffffffffu;
	const int g = lane >> 2;
	const uint32_t lt = (1u << lane) - 1u; /* lanes below this one */
	float b[DS_VPL];
	{
		float4 x, y;
		ds2_load(bias + lane * DS_VPL, x, y);
		b[0] = x.x; b[1] = x.y; b[2] = x.z; b[3] = x.w;
		b[4] = y.x; b[5] = y.y; b[6] = y.z; b[7] = y.w;
	}
	float4 na, nb;
	ds2_load(logits + t * DS_E + lane * DS_VPL, na, nb);
	for (; t < T; t += nwarps) {
		const float l[DS_VPL] = { na.x, na.y, na.z, na.w, nb.x, nb.y, nb.z, nb.w };
		if (DS2_PREFETCH) {
			if (t + nwarps < T) /* warp-uniform */
				ds2_load(logits + (t + nwarps) * DS_E + lane * DS_VPL, na, nb);
		}
		float c[DS_VPL];
		uint32_t ok[DS_VPL], key[DS_VPL];
#pragma unroll
		for (int j = 0; j < DS_VPL; j++) {
			c[j] = ds2_sigmoid(l[j]) + b[j];
			ok[j] = ds2_key(c[j]);
			key[j] = ok[j];
		}
		ds2_sort8(key); /* independent of the group chain below */
		float t1, t2;
		ds2_top2(c, t1, t2);
#pragma unroll
		for (int off = 1; off <= 2; off <<= 1) {
			const float o1 = __shfl_xor_sync(FULL, t1, off);
			const float o2 = __shfl_xor_sync(FULL, t2, off);
			ds_merge2(t1, t2, o1, o2);
		}
		/* groups ranked before this lane's group g: a larger score, or an equal one of a lower group
		 * (a key above gk - 1, i.e. at least gk; group scores are sums of finite choices, not -0).
		 * Lane 4g + i compares groups 2i and 2i + 1, the 4 lanes of the group add their counts. */
		const uint32_t gk = ds2_key(t1 + t2);
		const int h0 = 2 * (lane & 3);
		const uint32_t o0 = __shfl_sync(FULL, gk, 4 * h0), o1 = __shfl_sync(FULL, gk, 4 * h0 + 4);
		int ahead = (o0 > gk - (h0 < g ? 1u : 0u) ? 1 : 0) + (o1 > gk - (h0 + 1 < g ? 1u : 0u) ? 1 : 0);
		ahead += __shfl_xor_sync(FULL, ahead, 1);
		ahead += __shfl_xor_sync(FULL, ahead, 2);
		key[0] = ahead < DS_TOPKG ? key[0] : 0u; /* a dropped lane never wins, so its head stays 0 */
		uint32_t my_w = 0, my_bal = 1u, won = 0; /* won: bit r for a round this lane won */
#pragma unroll
		for (int r = 0; r < DS2_K; r++) {
			const uint32_t w = __reduce_max_sync(FULL, key[0]);
			const bool hit = key[0] == w;
			const uint32_t bal = __ballot_sync(FULL, hit);
			const bool win = hit && (bal & lt) == 0u;
			won |= win ? 1u << r : 0u;
			if (lane == r) {
				my_w = w;
				my_bal = bal;
			}
#pragma unroll
			for (int j = 0; j < DS_VPL - 1; j++)
				key[j] = win ? key[j + 1] : key[j];
			key[DS_VPL - 1] = win ? 0u : key[DS_VPL - 1];
		}
		/* lane k < 8: pick k is the expert of lane my_wl (the lowest lane holding round k's value) with
		 * key my_w; should that lane hold my_w more than once (exact ties), the one after its earlier
		 * pops of my_w: it pops in (key descending, expert ascending) order, so their number is its pops
		 * before round k less its keys above my_w */
		const int my_wl = __ffs((int)my_bal) - 1;
		const uint32_t wl_won = __shfl_sync(FULL, won, my_wl);
		uint32_t m = 0, o[DS_VPL];
#pragma unroll
		for (int j = 0; j < DS_VPL; j++) {
			o[j] = __shfl_sync(FULL, ok[j], my_wl);
			m |= o[j] == my_w ? 1u << j : 0u;
		}
		if (m & (m - 1u)) { /* (rare) */
			int dup = __popc(wl_won & ((1u << lane) - 1u));
#pragma unroll
			for (int j = 0; j < DS_VPL; j++)
				dup -= o[j] > my_w ? 1 : 0;
#pragma unroll 1
			for (int d = 0; d < dup; d++)
				m &= m - 1u;
		}
		const int my_id = my_wl * DS_VPL + ((__ffs((int)m) - 1) & (DS_VPL - 1));
		float s = 0.0f;
		if (lane < DS2_K)
			s = ds2_sigmoid(__ldg(logits + t * DS_E + my_id));
		float sum = s;
#pragma unroll
		for (int off = 1; off < DS2_K; off <<= 1)
			sum += __shfl_xor_sync(FULL, sum, off);
		if (lane < DS2_K) {
			w_out[t * DS2_K + lane] = __fdividef(s, sum) * rsf;
			id_out[t * DS2_K + lane] = my_id;
		}
		if (!DS2_PREFETCH && t + nwarps < T) /* warp-uniform */
			ds2_load(logits + (t + nwarps) * DS_E + lane * DS_VPL, na, nb);
	}
}

/* grid of the v2 kernel for T tokens: one warp per token, at most DS2_BPS blocks per SM (0: no cap) */
static int64_t ds2_blocks(int64_t T)
{
	int64_t blocks = (T + DS2_THREADS / 32 - 1) / (DS2_THREADS / 32);
	static int sms = 0;
	int dev = 0;
	if (DS2_BPS > 0 && !sms && (cudaGetDevice(&dev) != cudaSuccess ||
				    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0))
		sms = 132;
	if (DS2_BPS > 0 && blocks > (int64_t)sms * DS2_BPS)
		blocks = (int64_t)sms * DS2_BPS;
	return blocks;
}
#endif

/* The entry point: checks dtypes and shapes (SF_ERR_UNSUPPORTED for anything the definition does not
 * allow), takes the vector kernel when alignment and shape permit, else the scalar one, and launches
 * on call->stream; SF_ERR_CUDA if the launch failed. */
SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 3 || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *bias = &call->inputs[1];
	const sf_tensor *w = &call->outputs[0], *ids = &call->outputs[1];
	if (x->ndim != 2 || bias->ndim != 1 || w->ndim != 2 || ids->ndim != 2 || x->dtype.code != SF_CODE_FLOAT ||
	    x->dtype.bits != 32 || bias->dtype.code != SF_CODE_FLOAT || bias->dtype.bits != 32 ||
	    w->dtype.code != SF_CODE_FLOAT || w->dtype.bits != 32 || ids->dtype.code != SF_CODE_INT ||
	    ids->dtype.bits != 32)
		return SF_ERR_UNSUPPORTED;
	const int64_t T = x->shape[0], K = w->shape[1];
	if (x->shape[1] != DS_E || bias->shape[0] != DS_E || K < 1 || K > 32 || w->shape[0] != T ||
	    ids->shape[0] != T || ids->shape[1] != K)
		return SF_ERR_UNSUPPORTED;
	if (T == 0)
		return SF_OK;
	const float rsf = (float)call->scalars[2];
	const int64_t warps = (T + TPW - 1) / TPW;
	const int64_t blocks = (warps * 32 + THREADS - 1) / THREADS;
	cudaStream_t st = (cudaStream_t)call->stream;
#if DS_V2
	if (K == DS2_K && (uintptr_t)x->data % 16 == 0 && (uintptr_t)bias->data % 16 == 0) {
		ds2_kernel<<<(unsigned)ds2_blocks(T), DS2_THREADS, 0, st>>>((const float *)x->data, (const float *)bias->data,
									       rsf, (float *)w->data, (int32_t *)ids->data, T);
		return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
	}
#endif
	if ((uintptr_t)x->data % 16 == 0 && (uintptr_t)bias->data % 16 == 0)
		ds_kernel<true><<<(unsigned)blocks, THREADS, 0, st>>>((const float *)x->data, (const float *)bias->data, rsf,
								      (float *)w->data, (int32_t *)ids->data, T, (int)K);
	else
		ds_kernel<false><<<(unsigned)blocks, THREADS, 0, st>>>((const float *)x->data, (const float *)bias->data,
								       rsf, (float *)w->data, (int32_t *)ids->data, T,
								       (int)K);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
