/*
 * oracle_gpu.cu - compiles one problem's oracle for the GPU: the cuda backend's problem module.
 *
 * Built per problem by nvcc into a shared object:
 *     nvcc -std=c++17 -O2 -gencode=arch=compute_90a,code=sm_90a --fmad=false -Xcompiler -fPIC -shared \
 *          -Iinclude -Isrc -DSF_ORACLE_SOURCE='"/abs/path/oracle.c"' src/runner/oracle_gpu.cu -o module.so
 * The oracle file is included here, so the module also exports its host functions
 * (sf_oracle_axis_names, sf_oracle_items, and where defined sf_oracle_gen, sf_oracle_work; they have C
 * linkage through the oracle.h macros) next to the driver below. --fmad=false keeps the oracle's
 * arithmetic as written (no contraction into FMAs), like -ffp-contract=off on the host.
 *
 * The kernel runs one thread per item (grid-stride, 64-bit indices). The sf_ocall travels by value as
 * a __grid_constant__ kernel parameter, so taking its address costs no per-thread copy; its data
 * pointers are device pointers. sf_oracle_items() runs on the host and must only read the call's
 * layout and axes (never tensor data, which lives on the device here).
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "solforge/oracle.h"

#ifndef SF_ORACLE_SOURCE
#error "define SF_ORACLE_SOURCE as the quoted path of the problem's oracle.c"
#endif
#include SF_ORACLE_SOURCE

/* Per-thread stack for items that keep a few KB of locals (or call deeply). The driver grows the stack
 * for frames it can size statically; this covers what it cannot (calls through pointers, recursion). */
#define SF_ORACLE_STACK_BYTES 16384
#define SF_ORACLE_BLOCK 128

__global__ void __launch_bounds__(SF_ORACLE_BLOCK) sf_oracle_kernel(const __grid_constant__ sf_ocall c, int64_t n)
{
	int64_t stride = (int64_t)gridDim.x * (int64_t)blockDim.x;
	for (int64_t i = (int64_t)blockIdx.x * (int64_t)blockDim.x + (int64_t)threadIdx.x; i < n; i += stride)
		sf_oracle_item(&c, i);
}

/* Runs every item of the call on `stream` (a cudaStream_t; NULL: the legacy default stream) and waits
 * for it. Returns 0 or the cudaError_t of the first failure. */
extern "C" __attribute__((visibility("default"))) int sf_oracle_gpu_run(const sf_ocall *c, void *stream)
{
	static int stack_set;
	cudaStream_t s = (cudaStream_t)stream;
	cudaError_t e;
	if (!stack_set) {
		size_t cur = 0;
		e = cudaDeviceGetLimit(&cur, cudaLimitStackSize);
		if (e != cudaSuccess)
			return (int)e;
		if (cur < SF_ORACLE_STACK_BYTES) {
			e = cudaDeviceSetLimit(cudaLimitStackSize, SF_ORACLE_STACK_BYTES);
			if (e != cudaSuccess)
				return (int)e;
		}
		stack_set = 1;
	}
	int64_t n = sf_oracle_items(c);
	if (n <= 0)
		return 0;
	int dev = 0, sms = 0;
	e = cudaGetDevice(&dev);
	if (e == cudaSuccess)
		e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
	if (e != cudaSuccess)
		return (int)e;
	/* enough blocks to fill the chip many times over; the grid-stride loop covers the rest */
	int64_t blocks = (n + SF_ORACLE_BLOCK - 1) / SF_ORACLE_BLOCK;
	int64_t cap = (int64_t)(sms > 0 ? sms : 1) * 64;
	if (blocks > cap)
		blocks = cap;
	sf_oracle_kernel<<<(unsigned)blocks, SF_ORACLE_BLOCK, 0, s>>>(*c, n);
	e = cudaGetLastError();
	if (e != cudaSuccess)
		return (int)e;
	e = cudaStreamSynchronize(s);
	return (int)e;
}
