/*
 * emu.h - a tiny CPU emulation of the CUDA features the memory-bound kernels use, so that their index
 * math, tails, reductions and rounding can be tested without a GPU (tests/suites/emu_kernels.sh).
 *
 * Blocks are dispatched in blockIdx order to emu_resident slots (default 1: one block after another;
 * a test of a kernel whose blocks wait for each other sets more, with emu_sm_count / emu_occupancy
 * to match what the occupancy API reports); each slot is an OS thread, and the threads of its block are fibers on it
 * (user-space stacks switched by a few instructions of x86-64 assembly, emu_fibers_run: a thread runs until it waits at a
 * barrier or calls emu_yield, then the next in a per-block random order takes over; -DEMU_OS_THREADS, or a CPU other
 * than x86-64, makes every thread a std::thread as before session 25 - the fibers cut the suite's system time, most
 * of its cost, to almost nothing). __syncthreads is
 * a barrier over the block (emu_barrier: fibers switch while they wait; std::threads spin a few sched_yield turns, then
 * sleep on a futex), __shfl_xor_sync exchanges through a per-warp slot array between two warp
 * barriers (every lane of a warp must call it, as on the GPU with a full mask; __shfl_up_sync likewise,
 * for ints; __shfl_sync and __shfl_xor_sync for floats and 32-bit ints; __ballot_sync, __reduce_max_sync / __reduce_min_sync (u32)
 * likewise). The tensor-core primitives mma.sync m16n8k16 bf16 -> f32 and
 * ldmatrix x1/x2/x4 (.trans) are emulated from the PTX ISA fragment layouts (emu_mma_m16n8k16_bf16,
 * emu_ldmatrix: each lane posts its operands or row address in the warp's slots, every lane computes
 * its own result; problems/common/kernels/sm80_warp_mma.cuh calls them; tests/emu/emu_mma_test.cpp
 * checks them against plain matrix products). The test script
 * rewrites `__shared__ T a[N], b[M];` to per-block arrays from emu_shared(). atomicAdd / atomicExch /
 * __threadfence / __ldcg map to GCC atomics. Thread-block clusters (emu_cluster > 1 at the launch, along x):
 * the cs blocks of a cluster run at once, emu_cluster_sync is the cluster barrier (all threads of
 * its blocks), emu_cluster_shared reads a shared array of another block of the cluster (DSMEM). A kernel
 * launch `k<<<grid, block, smem, stream>>>(args)` is rewritten by the test script to
 * `emu_launch(grid, block, k, args)` (grid 1-D or 2-D; block a count or a 2-D dim3, threadIdx.x fastest, warps and
 * shuffles by the linear thread index). bf16 / fp16 conversions round to nearest even like the device's
 * _rn intrinsics; rsqrtf and __expf are exact here, so results may differ from the GPU's in the last
 * bits (the tolerances are far wider). Not a timing model.
 */
#ifndef SF_EMU_H
#define SF_EMU_H

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sched.h>
#include <unistd.h>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <sys/mman.h>
#include <thread>
#include <tuple>
#include <vector>

#if !defined(EMU_OS_THREADS) && !defined(__x86_64__)
#define EMU_OS_THREADS 1 /* the fiber switch below is x86-64 assembly */
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct emu_dim3 {
	unsigned x, y, z;
};
static thread_local emu_dim3 threadIdx, blockIdx;
static emu_dim3 blockDim, gridDim;
static unsigned emu_block_x; /* a 2-D block's x extent (0: 1-D blocks) */
/* the thread's linear index in its block (warps are 32 consecutive ones, x fastest, as on the GPU) */
static inline unsigned emu_tid()
{
	return threadIdx.x + threadIdx.y * blockDim.x;
}
/* a 2-D launch grid (emu_launch runs its rows y = 0 .. y-1 one after another) */
struct dim3 {
	unsigned x, y, z;
	dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
static unsigned emu_grid_y = 1, emu_block_y = 0; /* the row of a 2-D launch being run */

struct uint4 {
	unsigned x, y, z, w;
};
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d)
{
	return uint4{ a, b, c, d };
}
struct float2 {
	float x, y;
};
struct float4 {
	float x, y, z, w;
};
struct uint2 {
	unsigned x, y;
};
static inline int min(int a, int b)
{
	return a < b ? a : b;
}
static inline int max(int a, int b)
{
	return a > b ? a : b;
}
static inline float2 make_float2(float a, float b)
{
	return float2{ a, b };
}
static inline float4 make_float4(float a, float b, float c, float d)
{
	return float4{ a, b, c, d };
}

static inline float __uint_as_float(unsigned u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}
static inline unsigned emu_float_bits(float f)
{
	unsigned u;
	memcpy(&u, &f, 4);
	return u;
}
static inline unsigned __float_as_uint(float f)
{
	return emu_float_bits(f);
}

struct __nv_bfloat16 {
	unsigned short r;
};
struct __nv_bfloat162 {
	__nv_bfloat16 x, y;
};
static inline __nv_bfloat16 __float2bfloat16_rn(float f)
{
	unsigned u = emu_float_bits(f);
	if (std::isnan(f))
		return __nv_bfloat16{ 0x7fc0 };
	u += 0x7fffu + ((u >> 16) & 1u);
	return __nv_bfloat16{ (unsigned short)(u >> 16) };
}
static inline __nv_bfloat16 __float2bfloat16(float f)
{
	return __float2bfloat16_rn(f);
}
static inline float __bfloat162float(__nv_bfloat16 h)
{
	return __uint_as_float((unsigned)h.r << 16);
}
static inline float2 __bfloat1622float2(__nv_bfloat162 h)
{
	return float2{ __bfloat162float(h.x), __bfloat162float(h.y) };
}
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b)
{
	return __nv_bfloat162{ __float2bfloat16_rn(a), __float2bfloat16_rn(b) };
}

struct __half {
	unsigned short r;
};
struct __half2 {
	__half x, y;
};
static inline __half __float2half_rn(float f)
{
	_Float16 h = (_Float16)f; /* correctly rounded, nearest even */
	__half o;
	memcpy(&o.r, &h, 2);
	return o;
}
static inline float __half2float(__half h)
{
	_Float16 v;
	memcpy(&v, &h.r, 2);
	return (float)v;
}
static inline __half __ushort_as_half(unsigned short u)
{
	return __half{ u };
}
static inline __half2 __floats2half2_rn(float a, float b)
{
	return __half2{ __float2half_rn(a), __float2half_rn(b) };
}

static inline float rsqrtf(float x)
{
	return (float)(1.0 / std::sqrt((double)x));
}
static inline float emu_expf(float x)
{
	return std::exp(x);
}
#define __expf emu_expf /* glibc declares its own __expf */
template <class T> static inline T __ldg(const T *p)
{
	return *p;
}
template <class T> static inline T __ldcs(const T *p)
{
	return *p;
}
/* the rounded float32 product and int64 -> float32 conversion (IEEE round to nearest even on the host) */
static inline float __fmul_rn(float a, float b)
{
	return a * b;
}
static inline float __ll2float_rn(long long v)
{
	return (float)v;
}
static inline float __fdividef(float a, float b)
{
	return a / b;
}
template <class T> static inline void __stcs(T *p, T v)
{
	*p = v;
}

/* the run's seed: EMU_SEED from the environment, else a fresh one (the same value for every caller) */
static unsigned long long emu_fiber_seed_value()
{
	static const unsigned long long seed = [] {
		const char *e = getenv("EMU_SEED");
		return e && *e ? strtoull(e, nullptr, 10)
			       : ((unsigned long long)std::random_device{}() << 32) ^ std::random_device{}();
	}();
	return seed;
}

#ifndef EMU_OS_THREADS
/* Fibers: the emulated threads of one slot (a block, or a cluster's blocks) as user-space contexts on the slot's OS
 * thread. emu_ctx_switch saves the callee-saved registers, MXCSR and the x87 control word on the running stack, stores
 * its stack pointer in *save and resumes the context whose stack pointer is `to` (a new one "returns" into
 * emu_fiber_entry; noipa: every caller treats it as an unknown function, so no global or thread-local is kept in a
 * register across a switch). A fiber runs until it waits (emu_barrier) or calls emu_yield; nothing preempts it, so a spin on
 * memory that another thread of the same slot writes must call emu_yield (the kernels' emulation branches do). */
static void __attribute__((naked, noinline, noipa, used)) emu_ctx_switch(void **save, void *to)
{
	__asm__ volatile("pushq %rbp\n\t"
			 "pushq %rbx\n\t"
			 "pushq %r12\n\t"
			 "pushq %r13\n\t"
			 "pushq %r14\n\t"
			 "pushq %r15\n\t"
			 "subq $8, %rsp\n\t"
			 "stmxcsr (%rsp)\n\t"
			 "fnstcw 4(%rsp)\n\t"
			 "movq %rsp, (%rdi)\n\t"
			 "movq %rsi, %rsp\n\t"
			 "ldmxcsr (%rsp)\n\t"
			 "fldcw 4(%rsp)\n\t"
			 "addq $8, %rsp\n\t"
			 "popq %r15\n\t"
			 "popq %r14\n\t"
			 "popq %r13\n\t"
			 "popq %r12\n\t"
			 "popq %rbx\n\t"
			 "popq %rbp\n\t"
			 "ret\n\t");
}
#ifndef EMU_FIBER_STACK
#define EMU_FIBER_STACK (512 << 10) /* bytes per fiber (reserved, touched as used), plus a PROT_NONE guard page below */
#endif
/* fiber stacks, reused across blocks, slots and launches (never unmapped: a test binary's life) */
static std::mutex emu_stack_lock;
static std::vector<char *> emu_stack_pool;
static char *emu_stack_get()
{
	{
		std::lock_guard<std::mutex> l(emu_stack_lock);
		if (!emu_stack_pool.empty()) {
			char *st = emu_stack_pool.back();
			emu_stack_pool.pop_back();
			return st;
		}
	}
	void *m = mmap(nullptr, EMU_FIBER_STACK + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (m == MAP_FAILED) {
		fprintf(stderr, "emu: cannot map a fiber stack\n");
		abort();
	}
	if (mprotect(m, 4096, PROT_NONE) != 0) { /* an overflow faults instead of writing into the next stack */
		fprintf(stderr, "emu: cannot protect a fiber stack's guard page\n");
		abort();
	}
	return (char *)m + 4096;
}
/* the fibers of the running slot (one per OS thread; null outside emu_fibers_run) */
struct emu_fiber_rt {
	int n = 0, cur = 0, live = 0;
	std::vector<void *> sp;
	std::vector<char *> stack;
	std::vector<char> done;
	std::vector<int> order, pos; /* the round-robin order (a random permutation per run) and each fiber's place in it */
	void *main_sp = nullptr;
	void (*setup)(void *, int) = nullptr; /* sets the thread-local threadIdx / blockIdx / contexts of fiber i */
	void (*body)(void *, int) = nullptr;  /* runs the kernel as fiber i */
	void *arg = nullptr;
};
static thread_local emu_fiber_rt *emu_frt;
static std::atomic<unsigned long long> emu_fiber_seq{ 0 };

/* resume fiber `to` from the running one (its thread-locals set first) */
static inline void emu_fiber_go(emu_fiber_rt *r, int to)
{
	const int from = r->cur;
	if (to == from)
		return;
	r->cur = to;
	r->setup(r->arg, to);
	emu_ctx_switch(&r->sp[from], r->sp[to]);
}
/* the next live fiber after the running one in the slot's order; an OS-level yield once per full turn, so that a
 * spin on another slot's memory lets that slot's OS thread run */
static inline int emu_fiber_next(emu_fiber_rt *r)
{
	int k = r->pos[r->cur];
	for (int tries = 0; tries < r->n; tries++) {
		k = k + 1 == r->n ? 0 : k + 1;
		if (k == 0)
			sched_yield();
		if (!r->done[r->order[k]])
			return r->order[k];
	}
	return r->cur;
}
/* where a fiber starts: its body, then the next live fiber (or the slot's own context after the last) */
static void emu_fiber_entry()
{
	emu_fiber_rt *r = emu_frt;
	const int i = r->cur;
	r->body(r->arg, i);
	r->done[i] = 1;
	if (--r->live == 0) {
		void *dead;
		emu_ctx_switch(&dead, r->main_sp);
	}
	const int j = emu_fiber_next(r);
	r->cur = j;
	r->setup(r->arg, j);
	void *dead;
	emu_ctx_switch(&dead, r->sp[j]);
	__builtin_unreachable();
}
/* Runs body(arg, i) for i = 0 .. n-1 as fibers on the calling OS thread (setup(arg, i) before each switch into i) and
 * returns when every one has returned. */
static void emu_fibers_run(int n, void (*setup)(void *, int), void (*body)(void *, int), void *arg)
{
	emu_fiber_rt r;
	r.n = r.live = n;
	r.setup = setup;
	r.body = body;
	r.arg = arg;
	r.sp.assign((size_t)n, nullptr);
	r.stack.resize((size_t)n);
	r.done.assign((size_t)n, 0);
	r.order.resize((size_t)n);
	r.pos.resize((size_t)n);
	for (int i = 0; i < n; i++)
		r.order[(size_t)i] = i;
	std::mt19937_64 g(emu_fiber_seed_value() + 0x9e3779b97f4a7c15ull * ++emu_fiber_seq);
	std::shuffle(r.order.begin(), r.order.end(), g);
	for (int i = 0; i < n; i++) {
		r.pos[(size_t)r.order[(size_t)i]] = i;
		char *st = r.stack[(size_t)i] = emu_stack_get();
		/* a new context: [fp state][r15 r14 r13 r12 rbx rbp = 0][return address emu_fiber_entry], entered as if
		 * called (rsp = 8 mod 16 at its first instruction) */
		uintptr_t top = ((uintptr_t)st + EMU_FIBER_STACK) & ~(uintptr_t)15;
		uint64_t *f = (uint64_t *)(top - 72);
		unsigned mx;
		unsigned short cw;
		__asm__ volatile("stmxcsr %0" : "=m"(mx));
		__asm__ volatile("fnstcw %0" : "=m"(cw));
		f[0] = (uint64_t)mx | ((uint64_t)cw << 32);
		for (int k = 1; k <= 6; k++)
			f[k] = 0;
		f[7] = (uint64_t)(uintptr_t)&emu_fiber_entry;
		r.sp[(size_t)i] = f;
	}
	emu_fiber_rt *outer = emu_frt;
	emu_frt = &r;
	r.cur = r.order[0];
	setup(arg, r.cur);
	emu_ctx_switch(&r.main_sp, r.sp[(size_t)r.cur]);
	emu_frt = outer;
	std::lock_guard<std::mutex> l(emu_stack_lock);
	for (char *st : r.stack)
		emu_stack_pool.push_back(st);
}
#endif

/* Gives way: inside a fiber, to the slot's next thread (and, once per turn, to the other OS threads); elsewhere
 * sched_yield. Kernels' emulation branches call it in every spin wait. */
static inline void emu_yield()
{
#ifndef EMU_OS_THREADS
	if (emu_frt) {
		emu_fiber_go(emu_frt, emu_fiber_next(emu_frt));
		return;
	}
#endif
	sched_yield();
}

/* a reusable barrier for n threads: arrivals counted atomically; fibers switch to the next thread while
 * they wait; std::threads (EMU_OS_THREADS) sleep on the generation word with a Linux futex (no mutex: a
 * condition variable's wake-all made every waiter take the mutex in turn, most of the emulation's time
 * went to the kernel) */
#ifndef EMU_SPIN
#define EMU_SPIN 16
#endif
struct emu_barrier {
	std::atomic<int> count{ 0 };
	std::atomic<unsigned> gen{ 0 };
	int n = 0;
	emu_barrier() = default;
	emu_barrier(const emu_barrier &o) : count(0), gen(0), n(o.n) {} /* (vectors of warps copy them unused) */
	void wait()
	{
		const unsigned g = gen.load(std::memory_order_acquire);
		if (count.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
			count.store(0, std::memory_order_relaxed); /* before the release below: the next round starts at 0 */
			gen.fetch_add(1, std::memory_order_release);
#ifdef EMU_OS_THREADS
			syscall(SYS_futex, reinterpret_cast<unsigned *>(&gen), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
#endif
			return;
		}
#ifndef EMU_OS_THREADS /* every waiter of a barrier is a fiber of this slot (warp, block and cluster barriers) */
		while (gen.load(std::memory_order_acquire) == g)
			emu_yield();
		return;
#endif
		for (int spin = 0; spin < EMU_SPIN && gen.load(std::memory_order_acquire) == g; spin++)
			sched_yield();
		while (gen.load(std::memory_order_acquire) == g)
			syscall(SYS_futex, reinterpret_cast<unsigned *>(&gen), FUTEX_WAIT_PRIVATE, g, nullptr, nullptr, 0);
	}
};
struct emu_warp {
	emu_barrier bar;
	float vals[32];
	int ivals[32];
	uint32_t frag[32][10]; /* mma.sync operands of every lane (a[4], b[2], c[4] as bits) */
	const void *addr[32];  /* ldmatrix row addresses */
};
/* one running block: its barrier, warps and shared arrays */
struct emu_block_ctx {
	emu_barrier bar;
	std::vector<emu_warp> warps;
	std::mutex m;
	std::map<int, std::vector<unsigned char>> shm;
};
static thread_local emu_block_ctx *emu_ctx;
static int emu_resident = 1, emu_sm_count = 132, emu_occupancy = 1;
static int emu_cluster = 1;                     /* blocks per cluster of the next launches (x) */
static int emu_smem_optin = 232448;             /* cudaDevAttrMaxSharedMemoryPerBlockOptin */
static int emu_l2_bytes = 50 << 20;             /* cudaDevAttrL2CacheSize */
/* one running cluster: its barrier over all its threads and its blocks (rank order) */
struct emu_cluster_ctx {
	emu_barrier bar;
	std::vector<emu_block_ctx *> blocks;
};
static thread_local emu_cluster_ctx *emu_cl;

/* The running block's shared array `key` of n T (created by its first caller, zero-filled). */
template <class T> static T *emu_shared(int key, size_t n)
{
	std::lock_guard<std::mutex> l(emu_ctx->m);
	std::vector<unsigned char> &v = emu_ctx->shm[key];
	if (v.empty())
		v.resize(n * sizeof(T) + 16);
	return reinterpret_cast<T *>(v.data());
}

/* Shared array `key` of block `rank` of the running cluster (created by that block before the
 * cluster barrier that orders this read after its writes). */
template <class T> static T *emu_cluster_shared(int key, unsigned rank)
{
	assert(rank < emu_cl->blocks.size());
	emu_block_ctx *c = emu_cl->blocks[rank];
	std::lock_guard<std::mutex> l(c->m);
	std::vector<unsigned char> &v = c->shm[key];
	assert(!v.empty());
	return reinterpret_cast<T *>(v.data());
}
/* barrier.cluster.arrive.release + wait.acquire: every thread of every block of the cluster */
static inline void emu_cluster_sync()
{
	emu_cl->bar.wait();
}

static inline void __syncthreads()
{
	emu_ctx->bar.wait();
}
static inline float __shfl_xor_sync(unsigned mask, float v, int o)
{
	(void)mask;
	const unsigned lane = emu_tid() & 31, w = emu_tid() >> 5;
	emu_warp &W = emu_ctx->warps[w];
	W.vals[lane] = v;
	W.bar.wait();
	const float r = W.vals[lane ^ (unsigned)o];
	W.bar.wait();
	return r;
}
static inline float __shfl_sync(unsigned mask, float v, int src)
{
	(void)mask;
	const unsigned lane = emu_tid() & 31, w = emu_tid() >> 5;
	emu_warp &W = emu_ctx->warps[w];
	W.vals[lane] = v;
	W.bar.wait();
	const float r = W.vals[(unsigned)src & 31u];
	W.bar.wait();
	return r;
}
static inline int __shfl_up_sync(unsigned mask, int v, int o)
{
	(void)mask;
	const unsigned lane = emu_tid() & 31, w = emu_tid() >> 5;
	emu_warp &W = emu_ctx->warps[w];
	W.ivals[lane] = v;
	W.bar.wait();
	const int r = lane >= (unsigned)o ? W.ivals[lane - (unsigned)o] : v;
	W.bar.wait();
	return r;
}
/* integer lanes for the warp-wide vote / reduce / index shuffle (every lane of the warp must call them) */
static inline unsigned emu_warp_ints(unsigned v, unsigned *all)
{
	const unsigned lane = emu_tid() & 31, w = emu_tid() >> 5;
	emu_warp &W = emu_ctx->warps[w];
	W.ivals[lane] = (int)v;
	W.bar.wait();
	for (int i = 0; i < 32; i++)
		all[i] = (unsigned)W.ivals[i];
	W.bar.wait();
	return lane;
}
static inline unsigned __shfl_sync(unsigned mask, unsigned v, int src)
{
	unsigned all[32];
	(void)mask;
	emu_warp_ints(v, all);
	return all[(unsigned)src & 31u];
}
static inline int __shfl_sync(unsigned mask, int v, int src)
{
	return (int)__shfl_sync(mask, (unsigned)v, src);
}
static inline unsigned __shfl_xor_sync(unsigned mask, unsigned v, int o)
{
	unsigned all[32];
	(void)mask;
	const unsigned lane = emu_warp_ints(v, all);
	return all[lane ^ (unsigned)o];
}
static inline int __shfl_xor_sync(unsigned mask, int v, int o)
{
	return (int)__shfl_xor_sync(mask, (unsigned)v, o);
}
static inline unsigned __ballot_sync(unsigned mask, int p)
{
	unsigned all[32], b = 0;
	(void)mask;
	emu_warp_ints(p != 0, all);
	for (int i = 0; i < 32; i++)
		b |= all[i] ? 1u << i : 0u;
	return b;
}
/* redux.sync.max / .min (u32) */
static inline unsigned __reduce_max_sync(unsigned mask, unsigned v)
{
	unsigned all[32], m = 0;
	(void)mask;
	emu_warp_ints(v, all);
	for (int i = 0; i < 32; i++)
		m = all[i] > m ? all[i] : m;
	return m;
}
static inline unsigned __reduce_min_sync(unsigned mask, unsigned v)
{
	unsigned all[32], m = 0xffffffffu;
	(void)mask;
	emu_warp_ints(v, all);
	for (int i = 0; i < 32; i++)
		m = all[i] < m ? all[i] : m;
	return m;
}
static inline int __ffs(int x)
{
	return __builtin_ffs(x);
}
static inline int __popc(unsigned x)
{
	return __builtin_popcount(x);
}
static inline unsigned min(unsigned a, unsigned b)
{
	return a < b ? a : b;
}
static inline unsigned max(unsigned a, unsigned b)
{
	return a > b ? a : b;
}
/* bf16 element `half` (0: low 16 bits) of a packed pair, as float */
static inline float emu_bf16_half(uint32_t w, int half)
{
	return __uint_as_float(half ? (w & 0xffff0000u) : (w << 16));
}
/*
 * mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32, d = A . B + c, with the PTX ISA fragment
 * layouts (lane = 4 g + t): A[r][k] is in lane 4 (r % 8) + (k % 8) / 2, register (r / 8) + 2 (k / 8),
 * half k % 2; B[k][n] in lane 4 n + (k % 8) / 2, register k / 8, half k % 2; C[r][n] in lane
 * 4 (r % 8) + n / 2, register 2 (r / 8) + n % 2. The products are summed in k order in fp32 and c
 * added last (the tensor core's internal order and precision differ in the last bits). Every lane of
 * the warp must call it.
 */
static inline void emu_mma_m16n8k16_bf16(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4])
{
	const unsigned lane = emu_tid() & 31, w = emu_tid() >> 5;
	emu_warp &W = emu_ctx->warps[w];
	for (int i = 0; i < 4; i++)
		W.frag[lane][i] = a[i];
	W.frag[lane][4] = b[0];
	W.frag[lane][5] = b[1];
	for (int i = 0; i < 4; i++)
		W.frag[lane][6 + i] = emu_float_bits(c[i]);
	W.bar.wait();
	const int g = (int)lane >> 2, t = (int)lane & 3;
	float out[4];
	for (int i = 0; i < 4; i++) {
		const int r = g + 8 * (i >> 1), n = 2 * t + (i & 1);
		float acc = 0.0f;
		for (int k = 0; k < 16; k++) {
			const float av = emu_bf16_half(W.frag[4 * (r % 8) + (k % 8) / 2][(r / 8) + 2 * (k / 8)], k % 2);
			const float bv = emu_bf16_half(W.frag[4 * n + (k % 8) / 2][4 + k / 8], k % 2);
			acc += av * bv;
		}
		out[i] = acc + __uint_as_float(W.frag[4 * (r % 8) + n / 2][6 + 2 * (r / 8) + n % 2]);
	}
	W.bar.wait();
	for (int i = 0; i < 4; i++)
		d[i] = out[i];
}
/*
 * ldmatrix.sync.aligned.m8n8.x{n}[.trans].shared.b16: matrix i < n has its 8 rows (8 b16 each) at the
 * addresses of lanes 8 i .. 8 i + 7; lane 4 g + t gets r[i] = (row g, cols 2 t, 2 t + 1) of matrix i,
 * transposed (rows 2 t, 2 t + 1 of col g) when trans. Every lane of the warp must call it.
 */
static inline void emu_ldmatrix(uint32_t *r, int n, bool trans, const void *p)
{
	const unsigned lane = emu_tid() & 31, w = emu_tid() >> 5;
	emu_warp &W = emu_ctx->warps[w];
	assert(((uintptr_t)p & 15) == 0);
	W.addr[lane] = p;
	W.bar.wait();
	const int g = (int)lane >> 2, t = (int)lane & 3;
	for (int i = 0; i < n; i++) {
		uint32_t lo, hi;
		if (!trans) {
			const uint16_t *row = (const uint16_t *)W.addr[8 * i + g];
			lo = row[2 * t];
			hi = row[2 * t + 1];
		} else {
			lo = ((const uint16_t *)W.addr[8 * i + 2 * t])[g];
			hi = ((const uint16_t *)W.addr[8 * i + 2 * t + 1])[g];
		}
		r[i] = lo | hi << 16;
	}
	W.bar.wait();
}
/* Fibers run until they wait, so the threads of a block would meet their atomics and fences in one fixed order; a
 * switch to the next thread at one in four of them (a per-OS-thread generator from EMU_SEED) varies the interleaving
 * there, as preemption did for std::threads. */
static inline void emu_maybe_yield()
{
#ifndef EMU_OS_THREADS
	static thread_local uint64_t x = 0;
	if (!emu_frt)
		return;
	if (!x)
		x = (emu_fiber_seed_value() ^ (uint64_t)(uintptr_t)&x) | 1;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	if ((x & 3) == 0)
		emu_yield();
#endif
}
static inline unsigned atomicAdd(unsigned *p, unsigned v)
{
	emu_maybe_yield();
	return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline unsigned atomicExch(unsigned *p, unsigned v)
{
	emu_maybe_yield();
	return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
static inline void __threadfence()
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	emu_maybe_yield();
}
template <class T> static inline T __ldcg(const T *p)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return *p;
}

/* runtime API */
typedef void *cudaStream_t;
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorInvalidConfiguration = 9, cudaErrorNotSupported = 801 };
enum cudaDeviceAttr {
	cudaDevAttrMultiProcessorCount = 16,
	cudaDevAttrL2CacheSize = 38,
	cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
};
static cudaError_t emu_last_error = cudaSuccess;
static inline cudaError_t cudaGetLastError()
{
	cudaError_t e = emu_last_error;
	emu_last_error = cudaSuccess;
	return e;
}
static inline cudaError_t cudaGetDevice(int *dev)
{
	*dev = 0;
	return cudaSuccess;
}
static inline cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int dev)
{
	(void)dev;
	*v = a == cudaDevAttrMaxSharedMemoryPerBlockOptin ? emu_smem_optin : a == cudaDevAttrL2CacheSize ? emu_l2_bytes : emu_sm_count;
	return cudaSuccess;
}
template <class K> static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, K k, int threads, size_t smem)
{
	(void)k;
	(void)threads;
	(void)smem;
	*n = emu_occupancy;
	return cudaSuccess;
}
static inline cudaError_t cudaMemset(void *p, int v, size_t n)
{
	memset(p, v, n);
	return cudaSuccess;
}
enum cudaFuncAttribute {
	cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
	cudaFuncAttributePreferredSharedMemoryCarveout = 9,
	cudaFuncAttributeNonPortableClusterSizeAllowed = 14
};
/* accepted and ignored: emulated shared arrays have no size limit */
template <class K> static inline cudaError_t cudaFuncSetAttribute(K k, cudaFuncAttribute a, int v)
{
	(void)k;
	(void)a;
	(void)v;
	return cudaSuccess;
}
static inline cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
	(void)s;
	memset(p, v, n);
	return cudaSuccess;
}
static inline cudaError_t cudaMalloc(void **p, size_t n)
{
	*p = aligned_alloc(256, (n + 255) / 256 * 256);
	return *p ? cudaSuccess : 2;
}
static inline cudaError_t cudaFree(void *p)
{
	free(p);
	return cudaSuccess;
}

static long emu_launches, emu_blocks;

/* Runs kernel k on a grid of `grid` blocks of `block` threads: blocks (clusters of emu_cluster blocks
 * when that is > 1: grid a multiple of it) taken in blockIdx order by emu_resident slots (for clusters
 * emu_resident / emu_cluster, at least 1), each running one block (cluster) at a time. */
template <class K, class... A> static void emu_launch(long long grid, long long block, K k, A... args)
{
	const long long cs = emu_cluster < 1 ? 1 : emu_cluster;
	if (grid < 1 || grid > 2147483647LL || block < 1 || block > 1024 || block % 32 != 0 || grid % cs != 0) {
		emu_last_error = cudaErrorInvalidConfiguration;
		return;
	}
	emu_launches++;
	emu_blocks += grid;
	const unsigned bx = emu_block_x ? emu_block_x : (unsigned)block;
	blockDim = emu_dim3{ bx, (unsigned)block / bx, 1 };
	gridDim = emu_dim3{ (unsigned)grid, emu_grid_y, 1 };
	std::atomic<long long> next{ 0 };
	auto slot = [&] {
		for (long long u; (u = next++) < grid / cs;) {
			std::vector<emu_block_ctx> ctx((size_t)cs);
			emu_cluster_ctx cl;
			cl.bar.n = (int)(block * cs);
			for (auto &c : ctx) {
				c.bar.n = (int)block;
				c.warps = std::vector<emu_warp>((size_t)block / 32);
				for (auto &w : c.warps)
					w.bar.n = 32;
				cl.blocks.push_back(&c);
			}
#ifndef EMU_OS_THREADS
			/* fiber i: thread i % block of block i / block of the cluster */
			struct job {
				std::vector<emu_block_ctx> *ctx;
				emu_cluster_ctx *cl;
				long long block, u, cs;
				unsigned bx, by;
				K *k;
				std::tuple<A...> *args;
			};
			std::tuple<A...> targs(args...);
			job jb{ &ctx, &cl, block, u, cs, bx, emu_block_y, &k, &targs };
			emu_fibers_run(
				(int)(block * cs),
				[](void *a, int i) {
					const job &j = *(const job *)a;
					const long long r = i / j.block, t = i % j.block;
					emu_ctx = &(*j.ctx)[(size_t)r];
					emu_cl = j.cl;
					threadIdx = emu_dim3{ (unsigned)t % j.bx, (unsigned)t / j.bx, 0 };
					blockIdx = emu_dim3{ (unsigned)(j.u * j.cs + r), j.by, 0 };
				},
				[](void *a, int) {
					const job &j = *(const job *)a;
					std::apply(*j.k, *j.args);
				},
				&jb);
#else
			std::vector<std::thread> ts;
			ts.reserve((size_t)(block * cs));
			for (long long r = 0; r < cs; r++)
				for (long long t = 0; t < block; t++)
					ts.emplace_back([&, t, r, u] {
						emu_ctx = &ctx[(size_t)r];
						emu_cl = &cl;
						threadIdx = emu_dim3{ (unsigned)t % bx, (unsigned)t / bx, 0 };
						blockIdx = emu_dim3{ (unsigned)(u * cs + r), emu_block_y, 0 };
						k(args...);
					});
			for (auto &th : ts)
				th.join();
#endif
		}
	};
	const long long nslot = emu_resident / cs > 1 ? emu_resident / cs : 1;
	if (nslot <= 1) {
		slot();
		return;
	}
	std::vector<std::thread> slots;
	for (long long r = 0; r < nslot; r++)
		slots.emplace_back(slot);
	for (auto &th : slots)
		th.join();
}

/* A 2-D grid: its rows y = 0 .. grid.y - 1 run one after another, each as a 1-D launch of grid.x
 * blocks with blockIdx.y = y and gridDim.y = grid.y (no 3-D grids). */
template <class K, class... A> static void emu_launch(dim3 grid, long long block, K k, A... args)
{
	if (grid.y < 1 || grid.y > 65535 || grid.z != 1) {
		emu_last_error = cudaErrorInvalidConfiguration;
		return;
	}
	emu_grid_y = grid.y;
	for (unsigned y = 0; y < grid.y; y++) {
		emu_block_y = y;
		emu_launch((long long)grid.x, block, k, args...);
	}
	emu_grid_y = 1;
	emu_block_y = 0;
}

/* 2-D blocks (block.z 1): block.x * block.y threads, threadIdx.x fastest; warps and shuffles by the linear index */
template <class K, class... A> static void emu_launch(dim3 grid, dim3 block, K k, A... args)
{
	if (block.z != 1 || block.x < 1 || block.y < 1) {
		emu_last_error = cudaErrorInvalidConfiguration;
		return;
	}
	emu_block_x = block.x;
	emu_launch(grid, (long long)block.x * block.y, k, args...);
	emu_block_x = 0;
}

#endif
