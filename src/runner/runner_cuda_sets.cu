/*
 * runner_cuda_sets.cu - solforge-runner-cuda's inputs on the device: the kernels that draw inputs
 * (bit-identical with the host's rc_gen_host), perturb them for a timed call (perturb.h) and hash
 * them; the input sets (one allocation each, outputs wrapped in guard bytes); drawing a round's or a
 * set's inputs (generators on the GPU, file and custom inputs through the host). runner_cuda.h has
 * the contracts of what other files call.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_cuda.h"
#include "runner/perturb.h"

#define GEN_BLOCK 256

int rcu_sms = 1;

/* ---------------------------------------------------------------------------------------------- */
/* device kernels                                                                                  */

/* Input k of a round/set: one thread per element (per byte for float4). */
__global__ void gen_kernel(uint8_t *buf, int dt, sf_genspec g, uint64_t seed, uint32_t stream, int64_t numel)
{
	int64_t stride = (int64_t)gridDim.x * (int64_t)blockDim.x;
	int64_t i0 = (int64_t)blockIdx.x * (int64_t)blockDim.x + (int64_t)threadIdx.x;
	if (dt == SF_DT_E2M1) {
		int64_t nb = sf_dt_bytes(SF_DT_E2M1, numel);
		for (int64_t b = i0; b < nb; b += stride)
			sf_gen_store_e2m1_byte(buf, &g, seed, stream, b, numel);
	} else {
		for (int64_t i = i0; i < numel; i += stride)
			sf_gen_store(buf, (sf_dt)dt, &g, seed, stream, i);
	}
}

/* An order-free 64-bit fingerprint of n bytes at p (256-byte aligned): the sum over 8-byte words of
 * mix(word ^ mix(index)), tail bytes likewise. Only compared with itself, before and after a call. */
__global__ void hash_kernel(const uint8_t *p, int64_t n, unsigned long long *out)
{
	int64_t stride = (int64_t)gridDim.x * (int64_t)blockDim.x;
	int64_t i0 = (int64_t)blockIdx.x * (int64_t)blockDim.x + (int64_t)threadIdx.x;
	int64_t words = n / 8;
	const uint64_t *w = (const uint64_t *)p;
	uint64_t acc = 0;
	for (int64_t i = i0; i < words; i += stride)
		acc += sf_mix64(w[i] ^ sf_mix64((uint64_t)i));
	for (int64_t i = words * 8 + i0; i < n; i += stride)
		acc += sf_mix64((uint64_t)p[i] ^ ((uint64_t)i << 8) ^ 0x5bd1e995ull);
	for (int off = 16; off > 0; off >>= 1)
		acc += __shfl_down_sync(0xffffffffu, acc, off);
	if ((threadIdx.x & 31) == 0 && acc)
		atomicAdd(out, (unsigned long long)acc);
}

/* Fresh input content for a timed call (perturb.h): thread j owns block j of the input's units;
 * with `restore` it first puts back the unit the previous key changed there (saved[j]), then saves
 * (when saved) and redraws the unit of key u. */
__global__ void perturb_kernel(uint8_t *buf, int dt, sf_genspec g, uint64_t u, uint64_t prev, int restore,
			       uint32_t stream, int64_t numel, uint8_t *saved)
{
	int64_t n = rc_perturb_units((sf_dt)dt, numel), m = rc_perturb_count(n);
	int ub = rc_perturb_unit_bytes((sf_dt)dt);
	for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < m; j += (int64_t)gridDim.x * blockDim.x) {
		if (restore) {
			int64_t old = rc_perturb_pos(n, m, prev, stream, j);
			for (int b = 0; b < ub; b++)
				buf[old * ub + b] = saved[j * RC_PERTURB_ELEM + b];
		}
		int64_t pos = rc_perturb_pos(n, m, u, stream, j);
		if (saved)
			for (int b = 0; b < ub; b++)
				saved[j * RC_PERTURB_ELEM + b] = buf[pos * ub + b];
		rc_perturb_store(buf, (sf_dt)dt, &g, u, stream, pos, numel);
	}
}

static unsigned grid_for(int64_t n)
{
	int64_t b = (n + GEN_BLOCK - 1) / GEN_BLOCK;
	int64_t cap = (int64_t)rcu_sms * 32;
	if (b > cap)
		b = cap;
	return (unsigned)(b < 1 ? 1 : b);
}

/* ---------------------------------------------------------------------------------------------- */
/* buffers                                                                                         */

static size_t align_up(size_t x, size_t a)
{
	return (x + a - 1) / a * a;
}

/* Whether any input comes from the oracle's custom generator. */
int rcu_job_has_custom(const sf_job *job)
{
	for (int k = 0; k < job->n_in; k++)
		if (job->in[k].gen.kind == SF_GEN_CUSTOM)
			return 1;
	return 0;
}

/* Offsets of a set's tensors; returns the allocation size. */
static size_t set_layout(const sf_job *job, const sf_ocall *l, size_t shift, size_t *in_off, size_t *out_off)
{
	size_t o = shift;
	for (int k = 0; k < l->n_in; k++) {
		in_off[k] = 0;
		if (!rcu_is_tensor_input(job, k))
			continue;
		o = align_up(o, RCU_ALIGN);
		in_off[k] = o;
		o += rcu_arg_bytes(&l->in[k]);
	}
	for (int k = 0; k < l->n_out; k++) {
		o = align_up(o, RCU_ALIGN) + RC_GUARD_BYTES;
		out_off[k] = o;
		o += rcu_arg_bytes(&l->out[k]) + RC_GUARD_BYTES;
	}
	return align_up(o + 1, RCU_ALIGN);
}

/* The allocation size of a set with its first input `shift` bytes in. */
size_t rcu_set_size(const sf_job *job, const sf_ocall *l, size_t shift)
{
	size_t a[SF_MAX_ARGS], b[SF_MAX_ARGS];
	return set_layout(job, l, shift, a, b);
}

/* Allocates set s for layout, all RC_GUARD_BYTE; 0, or -1 with err written. */
int rcu_set_alloc(dev_set *s, const sf_job *job, const sf_ocall *layout, size_t shift, char *err, size_t errlen)
{
	size_t in_off[SF_MAX_ARGS], out_off[SF_MAX_ARGS];
	memset(s, 0, sizeof *s);
	s->c = *layout;
	s->bytes = set_layout(job, layout, shift, in_off, out_off);
	void *p = NULL;
#ifdef RCU_DIAG
	if (rcu_diag("set2m")) { /* diagnostic mode set2m: the allocation rounded up to whole 2 MB */
		const size_t two_mb = (size_t)2 << 20;
		CU(cudaMalloc(&p, (s->bytes + two_mb - 1) / two_mb * two_mb));
	} else
#endif
		CU(cudaMalloc(&p, s->bytes));
	s->base = (uint8_t *)p;
	CU(cudaMemset(s->base, RC_GUARD_BYTE, s->bytes));
	for (int k = 0; k < s->c.n_in; k++)
		s->c.in[k].data = rcu_is_tensor_input(job, k) ? (void *)(s->base + in_off[k]) : NULL;
	for (int k = 0; k < s->c.n_out; k++)
		s->c.out[k].data = s->base + out_off[k];
	CU(cudaDeviceSynchronize());
	return 0;
}

/* Frees s's buffers; s may be freed again or reallocated. */
void rcu_set_free(dev_set *s)
{
	if (s->base)
		cudaFree(s->base);
	s->base = NULL;
	for (int k = 0; k < SF_MAX_ARGS; k++) {
		if (s->saved[k])
			cudaFree(s->saved[k]);
		s->saved[k] = NULL;
	}
	s->active = 0;
}

/* Perturbs the set's inputs with key u on rcu_stream (undoing the previous key when undo); for the
 * reference (undo 0) nothing is saved. Returns a CUDA error. */
cudaError_t rcu_perturb_set(const sf_job *job, dev_set *s, uint64_t u, int undo)
{
	for (int k = 0; k < job->n_in; k++) {
		const sf_job_arg *a = &job->in[k];
		if (!rc_perturbed_kind(a->gen.kind) || !s->c.in[k].data || a->numel <= 0)
			continue;
		int64_t m = rc_perturb_count(rc_perturb_units(a->dt, a->numel));
		if (undo && !s->saved[k]) {
			void *p = NULL;
			cudaError_t e = cudaMalloc(&p, (size_t)(m * RC_PERTURB_ELEM));
			if (e != cudaSuccess)
				return e;
			s->saved[k] = (uint8_t *)p;
		}
		perturb_kernel<<<grid_for(m), GEN_BLOCK, 0, rcu_stream>>>((uint8_t *)s->c.in[k].data, (int)a->dt, a->gen,
									  u, s->key, undo && s->active, rc_stream(k),
									  a->numel, undo ? s->saved[k] : NULL);
		cudaError_t e = cudaGetLastError();
		if (e != cudaSuccess)
			return e;
	}
	if (undo) {
		s->key = u;
		s->active = 1;
	}
	return cudaSuccess;
}

/* The ABI descriptors of s (in_t, out_t, their shapes) from its device pointers. */
void rcu_set_descriptors(dev_set *s)
{
	rc_abi_tensors(s->c.in, s->c.n_in, s->in_t, s->in_s, SF_DEVICE_CUDA, rcu_device);
	rc_abi_tensors(s->c.out, s->c.n_out, s->out_t, s->out_s, SF_DEVICE_CUDA, rcu_device);
}

/* Host buffers for the tensor inputs of h (a copy of a layout); outputs untouched. */
void rcu_host_inputs_alloc(const sf_job *job, sf_ocall *h)
{
	for (int k = 0; k < h->n_in; k++)
		h->in[k].data = rcu_is_tensor_input(job, k) ? sf_xcalloc(1, rcu_arg_bytes(&h->in[k]) + 1) : NULL;
}

/* Frees what rcu_host_inputs_alloc allocated. */
void rcu_host_inputs_free(sf_ocall *h)
{
	for (int k = 0; k < h->n_in; k++) {
		free(h->in[k].data);
		h->in[k].data = NULL;
	}
}

/* ---------------------------------------------------------------------------------------------- */
/* drawing inputs                                                                                  */

/*
 * Draws the inputs of a round or set into the device buffers of dc: generators on the GPU, files
 * through the host. With h (host buffers for every tensor input), the drawn inputs are also copied
 * into h, the custom generator runs on h (as on the cpu backend: it sees the other inputs drawn) and
 * its inputs are copied up.
 */
static int draw_into(const sf_job *job, const rc_module *m, sf_ocall *dc, sf_ocall *h, uint64_t seed, char *err,
		     size_t errlen)
{
	for (int k = 0; k < job->n_in; k++) {
		const sf_job_arg *a = &job->in[k];
		size_t nb = rcu_arg_bytes(&dc->in[k]);
		if (a->gen.kind == SF_GEN_SCALAR || a->gen.kind == SF_GEN_CUSTOM)
			continue;
		if (a->gen.kind == SF_GEN_FILE) {
			void *buf = h ? h->in[k].data : sf_xmalloc(nb + 1);
			int rc = rc_load_file_input(a, buf, err, errlen);
			if (!rc)
				rc = cu_fail(cudaMemcpy(dc->in[k].data, buf, nb, cudaMemcpyHostToDevice),
					     "copying a file input to the device", err, errlen);
			if (!h)
				free(buf);
			if (rc)
				return -1;
		} else if (a->numel > 0) {
			gen_kernel<<<grid_for(a->numel), GEN_BLOCK>>>((uint8_t *)dc->in[k].data, (int)a->dt, a->gen,
								     seed, rc_stream(k), a->numel);
			CU(cudaGetLastError());
		}
	}
	CU(cudaDeviceSynchronize());
	if (!h)
		return 0;
	for (int k = 0; k < job->n_in; k++) {
		int kind = job->in[k].gen.kind;
		if (kind == SF_GEN_SCALAR || kind == SF_GEN_CUSTOM || kind == SF_GEN_FILE)
			continue;
		CU(cudaMemcpy(h->in[k].data, dc->in[k].data, rcu_arg_bytes(&dc->in[k]), cudaMemcpyDeviceToHost));
	}
	if (rc_gen_custom(job, m, h, seed, err, errlen))
		return -1;
	for (int k = 0; k < job->n_in; k++)
		if (job->in[k].gen.kind == SF_GEN_CUSTOM)
			CU(cudaMemcpy(dc->in[k].data, h->in[k].data, rcu_arg_bytes(&dc->in[k]),
				      cudaMemcpyHostToDevice));
	return 0;
}

/* As draw_into; without h, custom inputs still get (temporary) host buffers (runner_cuda.h). */
int rcu_draw_inputs(const sf_job *job, const rc_module *m, sf_ocall *dc, sf_ocall *h, uint64_t seed, char *err,
		    size_t errlen)
{
	if (h || !rcu_job_has_custom(job))
		return draw_into(job, m, dc, h, seed, err, errlen);
	sf_ocall tmp = *dc;
	for (int k = 0; k < tmp.n_out; k++)
		tmp.out[k].data = NULL;
	rcu_host_inputs_alloc(job, &tmp);
	int rc = draw_into(job, m, dc, &tmp, seed, err, errlen);
	rcu_host_inputs_free(&tmp);
	return rc;
}

/* Fingerprint of the n bytes at device address p (0 bytes: 0). */
uint64_t rcu_dev_hash(const void *p, size_t n)
{
	if (!p || n == 0)
		return 0;
	cu_fault(cudaMemset(rcu_hash_dev, 0, sizeof *rcu_hash_dev), "clearing the input hash");
	hash_kernel<<<grid_for((int64_t)(n / 8 + 1)), GEN_BLOCK>>>((const uint8_t *)p, (int64_t)n, rcu_hash_dev);
	cu_fault(cudaGetLastError(), "launching the input hash");
	unsigned long long h = 0;
	cu_fault(cudaMemcpy(&h, rcu_hash_dev, sizeof h, cudaMemcpyDeviceToHost), "reading the input hash");
	return (uint64_t)h;
}

/* One tiny kernel on the default stream (not synchronized): the driver's threads start. */
void rcu_touch_device(void)
{
	hash_kernel<<<1, 32>>>((const uint8_t *)rcu_hash_dev, 8, rcu_hash_dev);
}
