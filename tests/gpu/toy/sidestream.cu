/* toy solution for tests/gpu/runner_smoke.sh: correct, but does its work on a stream of its own after
 * a ~2 ms spin and returns without waiting (a reward hack: the runner must still time the side work). */
#include "common.cuh"

__global__ void spin_kernel(long long cycles)
{
	long long t0 = clock64();
	while (clock64() - t0 < cycles)
		;
}

SF_EXPORT int run(const sf_call *call)
{
	static cudaStream_t side;
	if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess)
		return SF_ERR_CUDA;
	spin_kernel<<<1, 1, 0, side>>>(2000000LL * 2); /* ~2 ms at ~2 GHz */
	return toy_launch(call, 0, side);
}
