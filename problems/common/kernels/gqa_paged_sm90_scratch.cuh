/*
 * gqa_paged_sm90_scratch.cuh - the host-side device-memory blocks of the paged-attention solutions,
 * shared by gqa_paged_decode_sm90.cu (through gqa_paged_decode_sm90_host.cuh, whose merge counters
 * also grow with grow_block) and gqa_paged_prefill_sm90.cu: grow_block (a grow-only cudaMalloc block)
 * and scratch (the solution's one scratch block). Host code only: the PTX of every kernel is the same
 * with or without it, and the decode CPU emulation (tests/suites/emu_kernels.sh) compiles it unchanged.
 */
#ifndef SF_GQA_PAGED_SCRATCH_CUH
#define SF_GQA_PAGED_SCRATCH_CUH

/*
 * Returns *blk when its *cap bytes hold `bytes`; otherwise frees it and cudaMallocs bytes + bytes / 4
 * (room to grow) into *blk, *cap. NULL on failure, with *blk = NULL and *cap = 0.
 */
static void *grow_block(void **blk, size_t *cap, size_t bytes)
{
	if (bytes <= *cap)
		return *blk;
	if (*blk)
		cudaFree(*blk);
	*blk = NULL;
	*cap = 0;
	size_t want = bytes + bytes / 4;
	if (cudaMalloc(blk, want) != cudaSuccess)
		return NULL;
	*cap = want;
	return *blk;
}

static void *g_scratch;
static size_t g_scratch_bytes;

/* Returns scratch of at least `bytes` (grown by cudaMalloc, old block freed), NULL on failure. */
static void *scratch(size_t bytes)
{
	return grow_block(&g_scratch, &g_scratch_bytes, bytes);
}

#endif
