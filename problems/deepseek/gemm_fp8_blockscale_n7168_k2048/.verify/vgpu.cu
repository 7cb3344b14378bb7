#include ORACLE_PATH
__global__ void v_kernel(sf_ocall c, int64_t lo, int64_t hi)
{
	int64_t i = lo + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (i < hi)
		sf_oracle_item(&c, i);
}
extern "C" int v_gpu_run(const sf_ocall *c, int64_t n)
{
	const int64_t chunk = 1 << 22;
	for (int64_t lo = 0; lo < n; lo += chunk) {
		int64_t hi = lo + chunk < n ? lo + chunk : n;
		v_kernel<<<(unsigned)((hi - lo + 127) / 128), 128>>>(*c, lo, hi);
	}
	cudaError_t e = cudaDeviceSynchronize();
	return e == cudaSuccess ? 0 : (int)e;
}
