/*
 * copy_bench.cu - times variants of the calibration copy (tools/calibration/copy/solutions/copy.cu,
 * its `// solforge-tune:` knobs) side by side in one process, so the best can become copy.cu's
 * default: every variant is copy.cu compiled again inside its own namespace with its own -D values
 * (COPY_VARIANT below), its run() called through the solution ABI on the same buffers.
 *
 * Usage: copy_bench [MiB ...]   (default sizes: 32 256 1024 4096 MiB read, as many written)
 * For each size and variant: 5 warm-up calls, then ITERS (20) timed calls, each timed alone with CUDA
 * events (no L2 flush: at >= 32 MiB the copy does not fit L2), the median reported as time and
 * bandwidth = 2 * bytes / time. One correctness check per variant and size (the last output compared
 * with the input byte for byte). Prints "variant size_MiB median_us TB/s" rows, then the best kernel
 * variant per size (cudaMemcpyAsync is listed for reference only). Build: nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude tools/copy_bench.cu
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>
#include "solforge/solution.h"
#undef SF_EXPORT
#define SF_EXPORT static

#define COPY_BLOCKED 0
#define COPY_UNROLL 4
#define COPY_THREADS 512
#define COPY_BPS 4
#define COPY_NC 1
#define COPY_ST_CS 1
namespace v_default
{
#include "calibration/copy/solutions/copy.cu"
}
#undef COPY_UNROLL
#undef COPY_THREADS
#undef COPY_BPS
#undef COPY_NC
#undef COPY_ST_CS

#define COPY_UNROLL 8
#define COPY_THREADS 256
#define COPY_BPS 4
#define COPY_NC 1
#define COPY_ST_CS 1
namespace v_u8_t256
{
#include "calibration/copy/solutions/copy.cu"
}
#undef COPY_UNROLL
#undef COPY_THREADS
#undef COPY_BPS
#undef COPY_NC
#undef COPY_ST_CS

#define COPY_UNROLL 2
#define COPY_THREADS 512
#define COPY_BPS 4
#define COPY_NC 1
#define COPY_ST_CS 1
namespace v_u2
{
#include "calibration/copy/solutions/copy.cu"
}
#undef COPY_UNROLL
#undef COPY_THREADS
#undef COPY_BPS
#undef COPY_NC
#undef COPY_ST_CS

#define COPY_UNROLL 4
#define COPY_THREADS 512
#define COPY_BPS 0
#define COPY_NC 1
#define COPY_ST_CS 1
namespace v_grid_all
{
#include "calibration/copy/solutions/copy.cu"
}
#undef COPY_UNROLL
#undef COPY_THREADS
#undef COPY_BPS
#undef COPY_NC
#undef COPY_ST_CS

#define COPY_UNROLL 2
#define COPY_THREADS 256
#define COPY_BPS 0
#define COPY_NC 1
#define COPY_ST_CS 1
namespace v_grid_all_u2_t256
{
#include "calibration/copy/solutions/copy.cu"
}
#undef COPY_UNROLL
#undef COPY_THREADS
#undef COPY_BPS
#undef COPY_NC
#undef COPY_ST_CS

#define COPY_UNROLL 4
#define COPY_THREADS 512
#define COPY_BPS 4
#define COPY_NC 0
#define COPY_ST_CS 1
namespace v_plain_ld
{
#include "calibration/copy/solutions/copy.cu"
}
#undef COPY_UNROLL
#undef COPY_THREADS
#undef COPY_BPS
#undef COPY_NC
#undef COPY_ST_CS

#define COPY_UNROLL 4
#define COPY_THREADS 512
#define COPY_BPS 4
#define COPY_NC 1
#define COPY_ST_CS 0
namespace v_plain_st
{
#include "calibration/copy/solutions/copy.cu"
}
#undef COPY_UNROLL
#undef COPY_THREADS
#undef COPY_BPS
#undef COPY_NC
#undef COPY_ST_CS

#define COPY_UNROLL 4
#define COPY_THREADS 256
#define COPY_BPS 8
#define COPY_NC 1
#define COPY_ST_CS 1
namespace v_bps8_t256
{
#include "calibration/copy/solutions/copy.cu"
}
#undef COPY_UNROLL
#undef COPY_THREADS
#undef COPY_BPS
#undef COPY_NC
#undef COPY_ST_CS

#undef COPY_BLOCKED

#define COPY_UNROLL 4
#define COPY_THREADS 512
#define COPY_BPS 4
#define COPY_NC 1
#define COPY_ST_CS 1
#define COPY_BLOCKED 1
namespace v_blocked
{
#include "calibration/copy/solutions/copy.cu"
}
#undef COPY_UNROLL
#undef COPY_THREADS
#undef COPY_BPS
#undef COPY_NC
#undef COPY_ST_CS
#undef COPY_BLOCKED

#define COPY_UNROLL 8
#define COPY_THREADS 256
#define COPY_BPS 2
#define COPY_NC 1
#define COPY_ST_CS 1
#define COPY_BLOCKED 1
namespace v_blocked_u8_bps2
{
#include "calibration/copy/solutions/copy.cu"
}
#undef COPY_UNROLL
#undef COPY_THREADS
#undef COPY_BPS
#undef COPY_NC
#undef COPY_ST_CS
#undef COPY_BLOCKED

/* the driver's device-to-device copy, for reference (not a kernel eval times with CUPTI) */
static int memcpy_run(const sf_call *c)
{
	const size_t bytes = (size_t)c->inputs[0].shape[0] * 2;
	return cudaMemcpyAsync(c->outputs[0].data, c->inputs[0].data, bytes, cudaMemcpyDeviceToDevice,
			       (cudaStream_t)c->stream) == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}

struct variant {
	const char *name;
	int (*run)(const sf_call *);
};
static const variant variants[] = {
	{ "default(U4,T512,BPS4,nc,cs)", v_default::run }, { "U8,T256,BPS4", v_u8_t256::run },
	{ "U2,T512,BPS4", v_u2::run },			  { "U4,T512,grid=all", v_grid_all::run },
	{ "U2,T256,grid=all", v_grid_all_u2_t256::run },	  { "plain ld (no .nc)", v_plain_ld::run },
	{ "plain st (no .cs)", v_plain_st::run },	  { "U4,T256,BPS8", v_bps8_t256::run },
	{ "U4,T512,BPS4,blocked", v_blocked::run },	  { "U8,T256,BPS2,blocked", v_blocked_u8_bps2::run },
	{ "cudaMemcpyAsync (reference)", memcpy_run },
};

#define CK(x)                                                                                                          \
	do {                                                                                                           \
		cudaError_t e_ = (x);                                                                                  \
		if (e_ != cudaSuccess) {                                                                               \
			fprintf(stderr, "copy_bench: %s failed: %s\n", #x, cudaGetErrorString(e_));                   \
			exit(1);                                                                                       \
		}                                                                                                      \
	} while (0)

int main(int argc, char **argv)
{
	std::vector<double> mib;
	for (int i = 1; i < argc; i++)
		mib.push_back(atof(argv[i]));
	if (mib.empty())
		mib = { 32, 256, 1024, 4096 };
	const int iters = 20;
	size_t maxb = 0;
	for (double m : mib)
		maxb = std::max(maxb, (size_t)(m * 1048576.0));
	void *x, *y;
	CK(cudaMalloc(&x, maxb));
	CK(cudaMalloc(&y, maxb));
	CK(cudaMemset(x, 0x5a, maxb));
	{ /* non-uniform data: a ramp */
		std::vector<uint16_t> h(1 << 20);
		for (size_t i = 0; i < h.size(); i++)
			h[i] = (uint16_t)(i * 40503u);
		for (size_t off = 0; off < maxb; off += h.size() * 2)
			CK(cudaMemcpy((char *)x + off, h.data(), std::min(maxb - off, h.size() * 2), cudaMemcpyHostToDevice));
	}
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	const int nv = (int)(sizeof variants / sizeof variants[0]);
	printf("%-30s %9s %11s %7s\n", "variant", "MiB", "median_us", "TB/s");
	for (double m : mib) {
		const size_t bytes = (size_t)(m * 1048576.0) / 16 * 16;
		int64_t n = (int64_t)(bytes / 2), shp[1] = { n };
		sf_tensor ti, to;
		memset(&ti, 0, sizeof ti);
		ti.data = x;
		ti.device = { SF_DEVICE_CUDA, 0 };
		ti.ndim = 1;
		ti.dtype = { SF_CODE_UINT, 16, 1 };
		ti.shape = shp;
		to = ti;
		to.data = y;
		const double nan = 0.0 / 0.0;
		sf_call c;
		c.abi_version = SF_ABI_VERSION;
		c.n_inputs = 1;
		c.inputs = &ti;
		c.scalars = &nan;
		c.n_outputs = 1;
		c.outputs = &to;
		c.stream = s;
		double best = 1e30;
		const char *bestn = "";
		for (int v = 0; v < nv; v++) {
			CK(cudaMemsetAsync(y, 0, bytes, s));
			for (int w = 0; w < 5; w++)
				if (variants[v].run(&c) != SF_OK) {
					fprintf(stderr, "copy_bench: %s run failed\n", variants[v].name);
					return 1;
				}
			std::vector<float> t;
			for (int i = 0; i < iters; i++) {
				CK(cudaEventRecord(a, s));
				variants[v].run(&c);
				CK(cudaEventRecord(b, s));
				CK(cudaEventSynchronize(b));
				float ms;
				CK(cudaEventElapsedTime(&ms, a, b));
				t.push_back(ms);
			}
			std::sort(t.begin(), t.end());
			const double us = t[t.size() / 2] * 1e3;
			/* correctness: the first and last MiB and a middle window byte for byte */
			std::vector<char> hx(1 << 20), hy(1 << 20);
			const size_t w = std::min(bytes, hx.size());
			bool ok = true;
			for (size_t off : { (size_t)0, (bytes - w) / 2 / 16 * 16, bytes - w }) {
				CK(cudaMemcpy(hx.data(), (char *)x + off, w, cudaMemcpyDeviceToHost));
				CK(cudaMemcpy(hy.data(), (char *)y + off, w, cudaMemcpyDeviceToHost));
				ok = ok && memcmp(hx.data(), hy.data(), w) == 0;
			}
			printf("%-30s %9.0f %11.2f %7.3f%s\n", variants[v].name, m, us, 2.0 * (double)bytes / us * 1e-6,
			       ok ? "" : "  WRONG OUTPUT");
			if (ok && us < best && variants[v].run != memcpy_run) {
				best = us;
				bestn = variants[v].name;
			}
		}
		printf("best at %.0f MiB: %s (%.3f TB/s)\n", m, bestn, 2.0 * (double)bytes / best * 1e-6);
	}
	return 0;
}
