/*
 * gn_host.cuh - groupnorm32_silu_sd_vae: fast.cu's host helpers (no kernels, no launches): the dtype and alignment
 * tests, the fused kernel's shape pick, the split path's workspace and the group-resident path's counters (kept
 * between calls, grown on demand), and that path's capacity and shape pick. Included by fast.cu after the kernels
 * and the path headers, before run(); not a standalone header.
 */
#ifndef GN_HOST_CUH
#define GN_HOST_CUH

static int gn_is_f16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_FLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

static int gn_aligned(const void *p)
{
	return ((uintptr_t)p & 15u) == 0;
}

/* Vectors per thread and block size of the fused kernel for a group of nvec vectors: the fewest idle
 * slots (ties: the first in the preference order). 0 when no block holds the group. */
static int gn_pick_fused(int64_t nvec, int *threads)
{
	static const int cand[] = { 1, 2, 4, 8, 16 }; /* most threads first: the per-thread math is the latency */
	int best = 0;
	int64_t best_waste = INT64_MAX;
	for (unsigned c = 0; c < sizeof cand / sizeof cand[0]; c++) {
		const int64_t v = cand[c];
		int64_t t = (nvec + v - 1) / v;
		t = (t + 31) / 32 * 32;
		if (t > GN_FUSED_THREADS)
			continue;
		if (t * v - nvec < best_waste) {
			best = (int)v;
			best_waste = t * v - nvec;
			*threads = (int)t;
		}
	}
	return best;
}

/* The workspace (float2 per chunk) and the group-resident path's counters (1 + groups, zero between
 * launches), grown on demand (in practice in the first call); owned by this solution. */
static float2 *gn_ws;
static int64_t gn_ws_cap;
static unsigned *gn_sync;
static int64_t gn_sync_cap;

static int gn_workspace(int64_t n)
{
	if (n <= gn_ws_cap)
		return 0;
	int64_t want = n < 65536 ? 65536 : n;
	if (gn_ws) {
		cudaFree(gn_ws); /* synchronizes: earlier launches that used it are done */
		gn_ws = NULL;
		gn_ws_cap = 0;
	}
	if (cudaMalloc((void **)&gn_ws, (size_t)want * sizeof(float2)) != cudaSuccess)
		return -1;
	gn_ws_cap = want;
	return 0;
}

static int gn_sync_area(int64_t groups)
{
	if (groups + 1 <= gn_sync_cap)
		return 0;
	int64_t want = groups + 1 < 4096 ? 4096 : groups + 1;
	if (gn_sync) {
		cudaFree(gn_sync);
		gn_sync = NULL;
		gn_sync_cap = 0;
	}
	if (cudaMalloc((void **)&gn_sync, (size_t)want * sizeof(unsigned)) != cudaSuccess)
		return -1;
	if (cudaMemset(gn_sync, 0, (size_t)want * sizeof(unsigned)) != cudaSuccess) /* once: stays 0 between launches */
		return -1;
	gn_sync_cap = want;
	return 0;
}

/* Blocks of gn_coop<VPT> resident on the whole device at once (occupancy x SMs), read once per VPT
 * (the device of the first call); 0 when unknown. */
static int64_t gn_capacity(int vpt)
{
	static int64_t cap[5] = { -1, -1, -1, -1, -1 };
	static int sms;
	const int i = vpt == 2 ? 0 : vpt == 4 ? 1 : vpt == 8 ? 2 : vpt == 16 ? 3 : 4;
	if (i == 4)
		return 0;
	if (cap[i] >= 0)
		return cap[i];
	if (!sms && cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess)
		sms = 0;
	int nb = 0;
	cudaError_t e = cudaErrorInvalidConfiguration;
	switch (vpt) {
	case 2: e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, gn_coop<2>, GN_THREADS, 0); break;
	case 4: e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, gn_coop<4>, GN_THREADS, 0); break;
	case 8: e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, gn_coop<8>, GN_THREADS, 0); break;
	case 16: e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, gn_coop<16>, GN_THREADS, 0); break;
	}
	cap[i] = e == cudaSuccess ? (int64_t)nb * sms : 0;
	return cap[i];
}

/* The group-resident path's vectors per thread for a group of cnt values: the smallest of GN_COOP_VPT,
 * 8, 16 (not below GN_COOP_VPT) whose chunk count fits the resident capacity; 0 when none does. */
static int gn_pick_coop(int64_t cnt, int64_t *nchunk)
{
	static const int cand[] = { 2, 4, 8, 16 };
	for (unsigned c = 0; c < sizeof cand / sizeof cand[0]; c++) {
		if (cand[c] < GN_COOP_VPT)
			continue;
		const int64_t chunk = (int64_t)GN_THREADS * cand[c] * 8, n = (cnt + chunk - 1) / chunk;
		if (n <= gn_capacity(cand[c])) {
			*nchunk = n;
			return cand[c];
		}
	}
	return 0;
}

#endif
