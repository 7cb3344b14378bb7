/*
 * runner_cuda_diag.cu - timing-parity experiments for solforge-runner-cuda, compiled in only with
 * -DRCU_DIAG (the `diag-runner` make target builds that runner into build/diag/; the runner that
 * `make` builds has none of this). tools/gpu_knobs.sh runs the same evaluation under each mode
 * (ENV:SOLFORGE_RUNNER_DIR=build/diag ENV:SF_RUNNER_DIAG=... tokens, tools/knobs/s9_parity*.txt,
 * s9_touch.txt) to find what separates the C runner's device time from the PyTorch bridge's for the
 * same kernel (docs/runner.md, "Timing parity").
 *
 * SF_RUNNER_DIAG is a comma list of modes:
 *   sets1      one timing set (no rotation over 2..8 sets)
 *   nopoison   no poisoning of the outputs before a timed call
 *   nol2reset  no reset of the persisting-L2 state before a timed call
 *   noflush    no L2 flush
 *   primer     a kernel runs right before the candidate's first kernel (the bridge's marker
 *              kernel does the same): the runner waits until it has started, opens the window
 *              and calls the candidate while it spins for ~4 us, so the candidate is queued
 *              behind a running kernel instead of launched on an idle GPU
 *   settle     the host waits 50 us after the flush's synchronize before the timed call (the
 *              bridge's Python dispatch leaves such a gap)
 *   kflush     the L2 flush by a store kernel (rcu_diag_flush) instead of cudaMemsetAsync
 *   readflush  the L2 flush by reads (the runner's timing.flush_reads, `eval --flush reads`) whatever the
 *              job says: the L2 left holding clean lines, where the memset leaves up to its size in dirty
 *              lines whose write-back shares DRAM with the timed call (session 23: ncu's clean invalidate
 *              timed decode b16-kv4096 at 73.6 us, the evaluator 80.2)
 *   stream0    the timed call gets the legacy default stream instead of the runner's non-blocking one
 *   set2m      every input set's allocation rounded up to a multiple of 2 MB
 *   touch      after the flush, one read per 64 KiB of the set's allocation (address translations
 *              warm, data cold; rcu_diag_touch below)
 */
#ifdef RCU_DIAG
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runner/runner_cuda.h"

int rcu_diag(const char *mode)
{
	const char *v = getenv("SF_RUNNER_DIAG");
	if (!v)
		return 0;
	size_t n = strlen(mode);
	for (const char *p = v; *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && !strncmp(p, mode, n))
			return 1;
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

/* Writes seq to *flag when it starts, then spins for spin_ns on the global timer. */
__global__ void rcu_diag_primer(volatile unsigned *flag, unsigned seq, unsigned long long spin_ns)
{
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	*flag = seq;
	__threadfence_system();
	do
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	while (t - t0 < spin_ns);
}

static volatile unsigned *g_flag;
static unsigned g_seq;

/* Launches the primer on rcu_stream and returns once it runs (0), or -1 when it did not start
 * within a second or the mapped flag cannot be allocated. */
int rcu_diag_primer_start(void)
{
	if (!g_flag) {
		void *p = NULL;
		if (cudaHostAlloc(&p, sizeof(unsigned), cudaHostAllocMapped) != cudaSuccess)
			return -1;
		g_flag = (volatile unsigned *)p;
		*g_flag = 0;
	}
	unsigned seq = ++g_seq;
	unsigned *dflag = NULL;
	if (cudaHostGetDevicePointer((void **)&dflag, (void *)g_flag, 0) != cudaSuccess)
		return -1;
	rcu_diag_primer<<<1, 32, 0, rcu_stream>>>(dflag, seq, 4000ull);
	if (cudaGetLastError() != cudaSuccess)
		return -1;
	for (long i = 0; *g_flag != seq; i++)
		if (i > 200000000L)
			return -1;
	return 0;
}

/* Busy-waits us microseconds on the host's monotonic clock. */
void rcu_diag_settle(double us)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) * 1e-3 < us);
}

__global__ void rcu_diag_fill(uint4 *p, size_t n, unsigned v)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = make_uint4(v, v ^ 1u, v ^ 2u, v ^ 3u);
}

/* The flush as a store kernel over the buffer (n bytes, 16-byte units; the tail left as it is). */
void rcu_diag_flush(void *p, size_t n, unsigned v)
{
	rcu_diag_fill<<<132 * 8, 512, 0, rcu_stream>>>((uint4 *)p, n / 16, v);
}
/* Mode `touch`: one read every RCU_TOUCH_STRIDE bytes of the set's allocation after the flush, so the
 * address translations of the candidate's tensors are warm while the data stays cold (one 32-byte
 * sector per 64 KiB). Measured in session 9 (docs/runner.md, "Timing parity"): no effect on the
 * runner's time, so it is not part of the real runner's timed call. */
#define RCU_TOUCH_STRIDE 65536
__device__ unsigned rcu_touch_sink;
__global__ void rcu_touch(const unsigned char *p, size_t n)
{
	const size_t pages = (n + RCU_TOUCH_STRIDE - 1) / RCU_TOUCH_STRIDE;
	unsigned acc = 0;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < pages; i += (size_t)gridDim.x * blockDim.x)
		acc += __ldcg(p + i * RCU_TOUCH_STRIDE);
	if (acc == 0xffffffffu) /* never: keeps the loads */
		rcu_touch_sink = acc;
}

/* Launches rcu_touch over set s's allocation on rcu_stream. */
void rcu_diag_touch(const dev_set *s)
{
	const size_t pages = (s->bytes + RCU_TOUCH_STRIDE - 1) / RCU_TOUCH_STRIDE;
	const unsigned blocks = (unsigned)(pages < 256 * 1024 ? (pages + 255) / 256 : 1024);
	rcu_touch<<<blocks ? blocks : 1, 256, 0, rcu_stream>>>(s->base, s->bytes);
	cu_fault(cudaGetLastError(), "touching the set's pages");
}
#endif
