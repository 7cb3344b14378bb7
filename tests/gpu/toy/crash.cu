/* toy solution for tests/gpu/runner_smoke.sh: an illegal address (sticky error): the runner must exit
 * non-zero with the error on stderr and no result.json. */
#include "common.cuh"

__global__ void bad_kernel(float *p)
{
	p[threadIdx.x] = 1.0f;
}

SF_EXPORT int run(const sf_call *call)
{
	bad_kernel<<<1, 32, 0, (cudaStream_t)call->stream>>>((float *)(uintptr_t)0x10);
	return SF_OK;
}
