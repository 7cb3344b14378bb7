/*
 * gqa_paged_decode_sm90_host.cuh - the host-side helpers of gqa_paged_decode_sm90.cu (which includes it
 * just before run()): the scratch block for partials (scratch, from gqa_paged_sm90_scratch.cuh, shared
 * with the prefill solution), the merge counters (counters, grown by that header's grow_block), the
 * once-per-kernel-kind setup (dec_setup: shared-memory opt-in, carveout, version 4's range count) and
 * align256. Moved here unchanged in session 10 to keep the main file under ~800 lines (PTX md5 of
 * every entry unchanged; scratch and counters grow through grow_block since the prefill solution shares
 * it); no device code, so the CPU emulation's rewrite of the main file is unaffected.
 */
#ifndef SF_DECODE_HOST_CUH
#define SF_DECODE_HOST_CUH

#include "gqa_paged_sm90_scratch.cuh" /* grow_block, scratch */

#if !DECODE_V1
static void *g_counters;
static size_t g_counters_bytes;

/*
 * Returns n zeroed merge counters (grown by grow_block and cleared on `stream` when n is more than
 * before; afterwards every kernel leaves them zero), NULL on failure.
 */
static unsigned *counters(size_t n, cudaStream_t stream)
{
	const size_t had = g_counters_bytes;
	void *c = grow_block(&g_counters, &g_counters_bytes, n * sizeof(unsigned));
	if (c == NULL || g_counters_bytes == had)
		return (unsigned *)c;
	if (cudaMemsetAsync(c, 0, g_counters_bytes, stream) != cudaSuccess) {
		cudaFree(c);
		g_counters = NULL;
		g_counters_bytes = 0;
		return NULL;
	}
	return (unsigned *)c;
}
#endif

#if !DECODE_V1
#if DEC_PERSIST
#define DEC_KFN(P) decode_persist<P>
#else
#define DEC_KFN(P) decode_fused<P>
#endif
static int g_setup[3];
static int64_t g_ranges[3]; /* version 4: item ranges per kv head, by page-size kind */
#if DEC_WAVE_CHUNK
static int g_slots[3]; /* SMs x resident decode_fused CTAs per SM, by page-size kind */
#endif

/*
 * Once per kernel kind (0: ps 1, 1: ps 16, 2: runtime ps): opts in to the ring's dynamic shared
 * memory (more than the default 48 KiB) with the largest carveout (2 CTAs x 96 KiB per SM), and for
 * version 4 sets g_ranges[kind] = SMs x resident CTAs per SM / HKV (one wave of CTAs;
 * DEC_PERSIST_CTAS overrides), DEC_WAVE_CHUNK g_slots[kind] = SMs x resident CTAs per SM. Returns the
 * first CUDA error.
 */
static cudaError_t dec_setup(int kind)
{
	if (g_setup[kind])
		return cudaSuccess;
	cudaError_t e = cudaSuccess;
	if (DEC_RING_BYTES > 0) {
		e = kind == 0   ? cudaFuncSetAttribute(DEC_KFN(1), cudaFuncAttributeMaxDynamicSharedMemorySize, (int)DEC_RING_BYTES)
		    : kind == 1 ? cudaFuncSetAttribute(DEC_KFN(16), cudaFuncAttributeMaxDynamicSharedMemorySize, (int)DEC_RING_BYTES)
				: cudaFuncSetAttribute(DEC_KFN(0), cudaFuncAttributeMaxDynamicSharedMemorySize, (int)DEC_RING_BYTES);
		if (e == cudaSuccess)
			e = kind == 0   ? cudaFuncSetAttribute(DEC_KFN(1), cudaFuncAttributePreferredSharedMemoryCarveout, 100)
			    : kind == 1 ? cudaFuncSetAttribute(DEC_KFN(16), cudaFuncAttributePreferredSharedMemoryCarveout, 100)
					: cudaFuncSetAttribute(DEC_KFN(0), cudaFuncAttributePreferredSharedMemoryCarveout, 100);
	}
#if DEC_PERSIST || DEC_WAVE_CHUNK
	int sms = 0, occ = 0;
	if (e == cudaSuccess)
		e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
	if (e == cudaSuccess)
		e = kind == 0   ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, DEC_KFN(1), ATT_THREADS, DEC_RING_BYTES)
		    : kind == 1 ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, DEC_KFN(16), ATT_THREADS, DEC_RING_BYTES)
				: cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, DEC_KFN(0), ATT_THREADS, DEC_RING_BYTES);
	if (e != cudaSuccess)
		return e;
#endif
#if DEC_WAVE_CHUNK
	g_slots[kind] = sms * (occ > 0 ? occ : 1);
#endif
#if DEC_PERSIST
	g_ranges[kind] = DEC_PERSIST_CTAS > 0 ? DEC_PERSIST_CTAS : (int64_t)sms * (occ > 0 ? occ : 1) / HKV;
	if (g_ranges[kind] < 1)
		g_ranges[kind] = 1;
#endif
	if (e == cudaSuccess)
		g_setup[kind] = 1;
	return e;
}
#endif

static size_t align256(size_t x)
{
	return (x + 255) & ~(size_t)255;
}
#if DEC_B1
/* kind (0: ps 1, 1: ps 16, else: runtime ps) -> the page-size instance K<1>, K<16> or K<0> of kernel template K,
 * as a function pointer (launched with <<<>>> like the kernel itself: the CPU emulation rewrites that too). Nested
 * so that nvcc instantiates (and emits into the PTX) K<1>, K<16>, K<0> in that order, as the written-out launches
 * did: the PTX stays byte-identical (its branch labels are numbered in entry order). */
#define DEC_BY_KIND(K, kind) ((kind) == 0 || (kind) == 1 ? ((kind) == 0 ? K<1> : K<16>) : K<0>)
#if !DEC_B1_DYN && !DEC_B1_TMA
/* decode_b1 of page-size kind `kind` (as DEC_BY_KIND) with the ring of DEC_B1_STAGES_SHORT steps when short_chunk
 * (the call's chunk has at most DEC_B1_SHORT_STEPS steps), else of DEC_B1_STAGES steps, as a function pointer */
static auto dec_b1_kernel(int kind, int short_chunk) -> decltype(&decode_b1<1, DEC_B1_STAGES>)
{
	if (short_chunk)
		return kind == 0 || kind == 1 ? (kind == 0 ? decode_b1<1, DEC_B1_STAGES_SHORT> : decode_b1<16, DEC_B1_STAGES_SHORT>)
					      : decode_b1<0, DEC_B1_STAGES_SHORT>;
	return kind == 0 || kind == 1 ? (kind == 0 ? decode_b1<1, DEC_B1_STAGES> : decode_b1<16, DEC_B1_STAGES>)
				      : decode_b1<0, DEC_B1_STAGES>;
}
#define DEC_B1_PICK(kind, sh) dec_b1_kernel(kind, sh)
#define DEC_B1_SMEM_PICK(sh) ((sh) ? DEC_B1_SMEM_OF(DEC_B1_STAGES_SHORT) : DEC_B1_SMEM_OF(DEC_B1_STAGES))
#else /* the candidates' kernels keep one ring of DEC_STAGES steps (DEC_B1_DYN: decode_b1 is unreachable) */
#define DEC_B1_PICK(kind, sh) DEC_BY_KIND(DEC_B1_K, kind)
#define DEC_B1_SMEM_PICK(sh) DEC_B1_SMEM
#endif
#if DEC_B1_DYN /* the kernel the batch-1 launch really takes, and its dynamic shared memory */
#define DEC_B1_SETUP_FN(kind, sh) DEC_BY_KIND(decode_b1dyn, kind)
#define DEC_B1_SETUP_SMEM(sh) (DEC_RING_BYTES + DEC_B1_EXTRA)
#else
#define DEC_B1_SETUP_FN(kind, sh) DEC_B1_PICK(kind, sh)
#define DEC_B1_SETUP_SMEM(sh) DEC_B1_SMEM_PICK(sh)
#endif
static int g_b1_setup[3][2];
/* Once per kernel kind (0: ps 1, 1: ps 16, 2: runtime ps) and ring (sh: DEC_B1_PICK's short_chunk): the batch-1
 * kernel's (decode_b1, or the candidates' decode_b1dyn / decode_b1tma) dynamic shared memory (the ring and
 * DEC_B1_EXTRA) opt-in and the largest carveout. Returns the first CUDA error. */
static cudaError_t dec_b1_setup(int kind, int sh)
{
	if (g_b1_setup[kind][sh])
		return cudaSuccess;
	const auto fn = DEC_B1_SETUP_FN(kind, sh);
	cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)DEC_B1_SETUP_SMEM(sh));
	if (e == cudaSuccess)
		e = cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
	if (e == cudaSuccess)
		g_b1_setup[kind][sh] = 1;
	return e;
}
#endif
#endif
