/*
 * runner_cuda.cu - the cuda backend's runner: `solforge-runner-cuda JOB.json`.
 *
 * Same protocol and semantics as runner_cpu.c (job.h describes the files it writes), on one GPU:
 *
 * Reference mode: draws each round's inputs on the GPU (the generator kernels below are bit-identical
 * with the host's rc_gen_host; custom inputs come from the oracle's generator on the host, file
 * inputs from their safetensors file), runs the problem module's sf_oracle_gpu_run, copies the
 * reference outputs back and writes them; the SOL work comes from the module's work function on
 * host copies of round 0's inputs.
 *
 * Solution mode: draws every round's inputs and every timing set before the candidate is loaded, wipes
 * the seeds, then loads the candidate and calls it on poisoned outputs wrapped in guard bytes, on a
 * stream of ours; after each call it synchronizes the stream and the device and checks the return
 * code, the guards, the descriptors and a hash of the inputs. A CUDA error after the candidate was
 * loaded (an illegal address is sticky) ends the process with a message on stderr and no result.json.
 *
 * Timing: input sets rotated (fresh content, shifted addresses), an L2 flush (cudaMemsetAsync of
 * flush_bytes) and a reset of the persisting-L2 state before every call; each call's time comes from
 * CUPTI activity records (kernels, memcpys, memsets on any stream) that start inside the call's
 * window: max(end) - min(start). Without CUPTI: CUDA events around the call on its stream.
 *
 * Written as C-style C++17 (nvcc); the core files come from libsolforge.a, built as C.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the core headers have no extern "C" guards of their own (runner_common.h has) */
extern "C" {
#include "core/job.h"
#include "core/util.h"
}
#include "runner/runner_common.h"
#include "runner/runner_guard.h"
#include "runner/perturb.h"
#include "runner/cuda_util.h"

#define PROG "solforge-runner-cuda"
#define ALIGN 256         /* every tensor starts on a 256-byte boundary (cudaMalloc's own alignment) */
#define GEN_BLOCK 256

typedef int (*oracle_gpu_fn)(const sf_ocall *c, void *stream);

static int g_device;
static int g_sms = 1;
static cudaStream_t g_stream;            /* the stream the candidate (and the oracle) is called on */
static unsigned long long *g_hash_dev;   /* device scratch of the input hash */

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
	int64_t cap = (int64_t)g_sms * 32;
	if (b > cap)
		b = cap;
	return (unsigned)(b < 1 ? 1 : b);
}

/* ---------------------------------------------------------------------------------------------- */
/* buffers                                                                                         */

static size_t arg_bytes(const sf_otensor *t)
{
	return (size_t)sf_dt_bytes((sf_dt)t->dt, t->numel);
}

static size_t align_up(size_t x, size_t a)
{
	return (x + a - 1) / a * a;
}

static int is_tensor_input(const sf_job *job, int k)
{
	return job->in[k].gen.kind != SF_GEN_SCALAR;
}

static int job_has_custom(const sf_job *job)
{
	for (int k = 0; k < job->n_in; k++)
		if (job->in[k].gen.kind == SF_GEN_CUSTOM)
			return 1;
	return 0;
}

/* One input set on the device: a single allocation holding the inputs (from `shift` on, each
 * 256-aligned) and the outputs, each with RC_GUARD_BYTES of RC_GUARD_BYTE before and after. */
typedef struct dev_set {
	sf_ocall c; /* device data pointers */
	uint8_t *base;
	size_t bytes;
	sf_tensor in_t[SF_MAX_ARGS], out_t[SF_MAX_ARGS];
	int64_t in_s[SF_MAX_ARGS][SF_MAX_DIMS], out_s[SF_MAX_ARGS][SF_MAX_DIMS];
	uint8_t *saved[SF_MAX_ARGS]; /* perturbation undo (device) */
	uint64_t key;                /* the key applied last (active) */
	int active;
} dev_set;

/* Offsets of a set's tensors; returns the allocation size. */
static size_t set_layout(const sf_job *job, const sf_ocall *l, size_t shift, size_t *in_off, size_t *out_off)
{
	size_t o = shift;
	for (int k = 0; k < l->n_in; k++) {
		in_off[k] = 0;
		if (!is_tensor_input(job, k))
			continue;
		o = align_up(o, ALIGN);
		in_off[k] = o;
		o += arg_bytes(&l->in[k]);
	}
	for (int k = 0; k < l->n_out; k++) {
		o = align_up(o, ALIGN) + RC_GUARD_BYTES;
		out_off[k] = o;
		o += arg_bytes(&l->out[k]) + RC_GUARD_BYTES;
	}
	return align_up(o + 1, ALIGN);
}

static size_t set_size(const sf_job *job, const sf_ocall *l, size_t shift)
{
	size_t a[SF_MAX_ARGS], b[SF_MAX_ARGS];
	return set_layout(job, l, shift, a, b);
}

static int set_alloc(dev_set *s, const sf_job *job, const sf_ocall *layout, size_t shift, char *err, size_t errlen)
{
	size_t in_off[SF_MAX_ARGS], out_off[SF_MAX_ARGS];
	memset(s, 0, sizeof *s);
	s->c = *layout;
	s->bytes = set_layout(job, layout, shift, in_off, out_off);
	void *p = NULL;
	CU(cudaMalloc(&p, s->bytes));
	s->base = (uint8_t *)p;
	CU(cudaMemset(s->base, RC_GUARD_BYTE, s->bytes));
	for (int k = 0; k < s->c.n_in; k++)
		s->c.in[k].data = is_tensor_input(job, k) ? (void *)(s->base + in_off[k]) : NULL;
	for (int k = 0; k < s->c.n_out; k++)
		s->c.out[k].data = s->base + out_off[k];
	CU(cudaDeviceSynchronize());
	return 0;
}

static void set_free(dev_set *s)
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

/* Perturbs the set's inputs with key u on g_stream (undoing the previous key when undo); for the
 * reference (undo 0) nothing is saved. Returns a CUDA error. */
static cudaError_t perturb_set(const sf_job *job, dev_set *s, uint64_t u, int undo)
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
		perturb_kernel<<<grid_for(m), GEN_BLOCK, 0, g_stream>>>((uint8_t *)s->c.in[k].data, (int)a->dt, a->gen, u,
									s->key, undo && s->active, rc_stream(k),
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

static void set_descriptors(dev_set *s)
{
	rc_abi_tensors(s->c.in, s->c.n_in, s->in_t, s->in_s, SF_DEVICE_CUDA, g_device);
	rc_abi_tensors(s->c.out, s->c.n_out, s->out_t, s->out_s, SF_DEVICE_CUDA, g_device);
}

/* Host buffers for the tensor inputs of h (a copy of a layout); outputs untouched. */
static void host_inputs_alloc(const sf_job *job, sf_ocall *h)
{
	for (int k = 0; k < h->n_in; k++)
		h->in[k].data = is_tensor_input(job, k) ? sf_xcalloc(1, arg_bytes(&h->in[k]) + 1) : NULL;
}

static void host_inputs_free(sf_ocall *h)
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
		size_t nb = arg_bytes(&dc->in[k]);
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
		CU(cudaMemcpy(h->in[k].data, dc->in[k].data, arg_bytes(&dc->in[k]), cudaMemcpyDeviceToHost));
	}
	if (rc_gen_custom(job, m, h, seed, err, errlen))
		return -1;
	for (int k = 0; k < job->n_in; k++)
		if (job->in[k].gen.kind == SF_GEN_CUSTOM)
			CU(cudaMemcpy(dc->in[k].data, h->in[k].data, arg_bytes(&dc->in[k]), cudaMemcpyHostToDevice));
	return 0;
}

/* As draw_into; without h, custom inputs still get (temporary) host buffers. */
static int draw_inputs(const sf_job *job, const rc_module *m, sf_ocall *dc, sf_ocall *h, uint64_t seed, char *err,
		       size_t errlen)
{
	if (h || !job_has_custom(job))
		return draw_into(job, m, dc, h, seed, err, errlen);
	sf_ocall tmp = *dc;
	for (int k = 0; k < tmp.n_out; k++)
		tmp.out[k].data = NULL;
	host_inputs_alloc(job, &tmp);
	int rc = draw_into(job, m, dc, &tmp, seed, err, errlen);
	host_inputs_free(&tmp);
	return rc;
}

/* ---------------------------------------------------------------------------------------------- */
/* reference mode                                                                                  */

static int reference_rounds(const sf_job *job, const rc_module *m, rc_result *res, char *err, size_t errlen)
{
	sf_ocall layout;
	if (rc_ocall_layout(job, m, 1, &layout, err, errlen))
		return -1;
	dev_set d;
	if (set_alloc(&d, job, &layout, 0, err, errlen))
		return -1;
	for (int k = 0; k < d.c.n_out; k++)
		CU(cudaMemset(d.c.out[k].data, 0, arg_bytes(&d.c.out[k])));
	/* host side: the outputs (written to the round files) and, where the generator or the work
	 * function needs them, the inputs */
	sf_ocall h = layout;
	for (int k = 0; k < h.n_out; k++)
		h.out[k].data = sf_xcalloc(1, arg_bytes(&h.out[k]) + 1);
	int custom = job_has_custom(job);
	int host_in = custom || m->work;
	if (host_in)
		host_inputs_alloc(job, &h);
	int rc = 0;
	/* the rounds, then the timed calls the solution runner audited (their set, their perturbation) */
	int n_audits = job->timing.enabled ? job->n_audits : 0;
	for (int r = 0; r < job->n_rounds + n_audits && !rc; r++) {
		int audit = r - job->n_rounds; /* >= 0: audit number */
		sf_ocall *hp = (custom || (r == 0 && m->work)) ? &h : NULL;
		uint64_t seed = audit < 0 ? job->seeds[r] : rc_set_seed(job, job->audit_set[audit]);
		if (draw_inputs(job, m, &d.c, hp, seed, err, errlen)) {
			rc = -1;
			break;
		}
		/* key 0: an audit of an unperturbed call (SOLFORGE_DEFENSES=0), nothing to redo */
		if (audit >= 0 && job->audit_key[audit] &&
		    (cu_fail(perturb_set(job, &d, job->audit_key[audit], 0), "perturbing audit inputs", err,
					   errlen) ||
				   cu_fail(cudaDeviceSynchronize(), "perturbing audit inputs", err, errlen))) {
			rc = -1;
			break;
		}
		if (r == 0 && m->work) {
			memset(&res->work, 0, sizeof res->work);
			res->work.bytes = -1;
			m->work(&h, &res->work);
			res->have_work = 1;
		}
		oracle_gpu_fn run;
		memcpy(&run, &m->run, sizeof run);
		int e = run(&d.c, (void *)g_stream);
		if (e) {
			sf_errf(err, errlen, "the oracle failed on the GPU: %s (%s)", cudaGetErrorName((cudaError_t)e),
				cudaGetErrorString((cudaError_t)e));
			rc = -1;
			break;
		}
		if (cu_fail(cudaDeviceSynchronize(), "running the oracle", err, errlen)) {
			rc = -1;
			break;
		}
		for (int k = 0; k < h.n_out && !rc; k++)
			rc = cu_fail(cudaMemcpy(h.out[k].data, d.c.out[k].data, arg_bytes(&h.out[k]),
						cudaMemcpyDeviceToHost),
				     "copying a reference output back", err, errlen);
		if (!rc && audit < 0)
			rc = rc_write_round(job, &h, r, err, errlen);
		if (!rc && audit >= 0) {
			rc = rc_write_audit(job, &h, audit, err, errlen);
			res->n_audits = audit + 1;
			res->audit_set[audit] = job->audit_set[audit];
			res->audit_key[audit] = job->audit_key[audit];
		}
	}
	for (int k = 0; k < h.n_out; k++)
		free(h.out[k].data);
	if (host_in)
		host_inputs_free(&h);
	set_free(&d);
	return rc;
}

static int run_reference(const sf_job *job, const rc_module *m)
{
	rc_result res;
	memset(&res, 0, sizeof res);
	res.status = "ok";
	char err[SF_ERRLEN] = "";
	if (reference_rounds(job, m, &res, err, sizeof err)) {
		res.status = "error";
		snprintf(res.message, sizeof res.message, "%s", err);
		fprintf(stderr, PROG ": %s\n", err);
		rc_write_result(job, &res);
		return 1;
	}
	return rc_write_result(job, &res) ? 1 : 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* CUPTI: per-call device time                                                                     */

/* A timed call: [t0, t1] on CUPTI's clock; the records that start inside it. */
typedef struct cwin {
	uint64_t t0, t1;          /* t1 == UINT64_MAX while the call runs */
	uint64_t min_start, max_end;
	int64_t count;
} cwin;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static cwin *g_win;       /* windows in call order (t0 increasing, disjoint) */
static int g_nwin, g_capwin;
static uint64_t g_dropped, g_untimed;

#define CUPTI_BUF_BYTES (4u << 20)

static void CUPTIAPI cupti_buf_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	void *p = NULL;
	if (posix_memalign(&p, 8, CUPTI_BUF_BYTES))
		p = NULL;
	*buffer = (uint8_t *)p;
	*size = p ? CUPTI_BUF_BYTES : 0;
	*max_records = 0;
}

/* Adds one record to the window its start lies in, if any. Called with g_mu held. */
static void attribute(uint64_t start, uint64_t end)
{
	if (start == 0 && end == 0) {
		g_untimed++;
		return;
	}
	int lo = 0, hi = g_nwin;
	while (lo < hi) { /* last window with t0 <= start */
		int mid = (lo + hi) / 2;
		if (g_win[mid].t0 <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return;
	cwin *w = &g_win[lo - 1];
	if (start > w->t1)
		return;
	if (end < start)
		end = start;
	if (!w->count || start < w->min_start)
		w->min_start = start;
	if (!w->count || end > w->max_end)
		w->max_end = end;
	w->count++;
}

static void CUPTIAPI cupti_buf_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer, size_t size,
					 size_t valid)
{
	(void)size;
	pthread_mutex_lock(&g_mu);
	CUpti_Activity *rec = NULL;
	while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
		switch (rec->kind) {
		case CUPTI_ACTIVITY_KIND_KERNEL:
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
			const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
			attribute(k->start, k->end);
			break;
		}
		case CUPTI_ACTIVITY_KIND_MEMCPY: {
			const CUpti_ActivityMemcpy6 *k = (const CUpti_ActivityMemcpy6 *)rec;
			attribute(k->start, k->end);
			break;
		}
		case CUPTI_ACTIVITY_KIND_MEMSET: {
			const CUpti_ActivityMemset4 *k = (const CUpti_ActivityMemset4 *)rec;
			attribute(k->start, k->end);
			break;
		}
		default:
			break;
		}
	}
	size_t dropped = 0;
	if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS)
		g_dropped += dropped;
	pthread_mutex_unlock(&g_mu);
	free(buffer);
}

static const char *cupti_str(CUptiResult r)
{
	const char *s = NULL;
	if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
		s = "unknown CUPTI error";
	return s;
}

/* Registers the buffers and enables the record kinds; 0 or -1 with the reason in why. */
static int cupti_init(char *why, size_t whylen)
{
	CUptiResult r = cuptiActivityRegisterCallbacks(cupti_buf_requested, cupti_buf_completed);
	if (r != CUPTI_SUCCESS) {
		snprintf(why, whylen, "cuptiActivityRegisterCallbacks: %s", cupti_str(r));
		return -1;
	}
	const CUpti_ActivityKind kinds[] = { CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
					     CUPTI_ACTIVITY_KIND_MEMSET };
	for (int i = 0; i < 3; i++) {
		r = cuptiActivityEnable(kinds[i]);
		if (r != CUPTI_SUCCESS) {
			snprintf(why, whylen, "cuptiActivityEnable(%d): %s", (int)kinds[i], cupti_str(r));
			for (int j = 0; j < i; j++)
				cuptiActivityDisable(kinds[j]);
			return -1;
		}
	}
	uint64_t ts = 0;
	r = cuptiGetTimestamp(&ts);
	if (r != CUPTI_SUCCESS || ts == 0) {
		snprintf(why, whylen, "cuptiGetTimestamp: %s", cupti_str(r));
		for (int j = 0; j < 3; j++)
			cuptiActivityDisable(kinds[j]);
		return -1;
	}
	return 0;
}

static void cupti_stop(void)
{
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
	cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
}

static uint64_t cupti_now(void)
{
	uint64_t t = 0;
	cuptiGetTimestamp(&t);
	return t;
}

/* Time of window i in ms: the span of its records, or the whole window when none started in it. */
static double window_ms(int i, int *empty)
{
	const cwin *w = &g_win[i];
	*empty = w->count == 0;
	if (w->count == 0)
		return (double)(w->t1 - w->t0) * 1e-6;
	return (double)(w->max_end - w->min_start) * 1e-6;
}

/* ---------------------------------------------------------------------------------------------- */
/* solution mode                                                                                   */

static double g_scal[SF_MAX_ARGS];
static int g_l2_note;

/* Fingerprint of the n bytes at device address p (0 bytes: 0). */
static uint64_t dev_hash(const void *p, size_t n)
{
	if (!p || n == 0)
		return 0;
	cu_fault(cudaMemset(g_hash_dev, 0, sizeof *g_hash_dev), "clearing the input hash");
	hash_kernel<<<grid_for((int64_t)(n / 8 + 1)), GEN_BLOCK>>>((const uint8_t *)p, (int64_t)n, g_hash_dev);
	cu_fault(cudaGetLastError(), "launching the input hash");
	unsigned long long h = 0;
	cu_fault(cudaMemcpy(&h, g_hash_dev, sizeof h, cudaMemcpyDeviceToHost), "reading the input hash");
	return (uint64_t)h;
}

static int guards_ok(const void *out, size_t bytes)
{
	static uint8_t g[2][RC_GUARD_BYTES];
	const uint8_t *p = (const uint8_t *)out;
	cu_fault(cudaMemcpy(g[0], p - RC_GUARD_BYTES, RC_GUARD_BYTES, cudaMemcpyDeviceToHost), "reading a guard");
	cu_fault(cudaMemcpy(g[1], p + bytes, RC_GUARD_BYTES, cudaMemcpyDeviceToHost), "reading a guard");
	for (int i = 0; i < RC_GUARD_BYTES; i++)
		if (g[0][i] != RC_GUARD_BYTE || g[1][i] != RC_GUARD_BYTE)
			return 0;
	return 1;
}

static void make_call(sf_call *call, dev_set *s)
{
	memset(call, 0, sizeof *call);
	call->abi_version = SF_ABI_VERSION;
	call->n_inputs = s->c.n_in;
	call->inputs = s->in_t;
	call->scalars = g_scal;
	call->n_outputs = s->c.n_out;
	call->outputs = s->out_t;
	call->stream = (void *)g_stream;
}

/* After the candidate returns: its device again (it may have switched), then all its work, on any
 * stream, finished; a CUDA error here is the candidate's (sticky) fault. */
static void sync_after_call(const char *where)
{
	cu_fault(cudaSetDevice(g_device), where);
	cu_fault(cudaStreamSynchronize(g_stream), where);
	cu_fault(cudaDeviceSynchronize(), where);
	cudaError_t e = cudaGetLastError(); /* a non-sticky error of a runtime call: not ours to judge */
	if (e != cudaSuccess)
		fprintf(stderr, PROG ": note: the solution left a CUDA error pending: %s\n", cudaGetErrorName(e));
}

/* Threads the CUDA driver and CUPTI may start on their own after the candidate is loaded. */
#define CUDA_THREAD_NAMES "cuda|CUPTI|cupti"

/* After a call (or the candidate's constructors): no trapped system call, no thread of the
 * candidate left running. 0 or -1 with res->status set. */
static int guard_check(rc_result *res)
{
	if (rg_violation(res->message, sizeof res->message)) {
		res->status = "sandbox_violation";
		return -1;
	}
	if (rg_threads_new(CUDA_THREAD_NAMES, res->message, sizeof res->message)) {
		res->status = "thread_escaped";
		return -1;
	}
	return 0;
}

/* Calls the candidate once on set s and checks what it must not change (as runner_cpu.c's
 * call_checked). Returns 0, or -1 with res->status / message set. */
static int call_checked(sf_entry_fn fn, const sf_job *job, dev_set *s, rc_result *res)
{
	sf_tensor in_copy[SF_MAX_ARGS], out_copy[SF_MAX_ARGS];
	int64_t in_sc[SF_MAX_ARGS][SF_MAX_DIMS], out_sc[SF_MAX_ARGS][SF_MAX_DIMS];
	memcpy(in_copy, s->in_t, sizeof in_copy);
	memcpy(out_copy, s->out_t, sizeof out_copy);
	memcpy(in_sc, s->in_s, sizeof in_sc);
	memcpy(out_sc, s->out_s, sizeof out_sc);
	uint64_t before[SF_MAX_ARGS];
	for (int k = 0; k < s->c.n_in; k++)
		before[k] = dev_hash(s->c.in[k].data, s->c.in[k].data ? arg_bytes(&s->c.in[k]) : 0);
	sf_call call;
	make_call(&call, s);
	int rc = fn(&call);
	sync_after_call("after the solution's call");
	if (guard_check(res)) /* a refused system call first: a cheat may fail because of it */
		return -1;
	if (rc != SF_OK) {
		res->status = "solution_error";
		snprintf(res->message, sizeof res->message, "the solution returned %d", rc);
		return -1;
	}
	for (int k = 0; k < s->c.n_out; k++) {
		if (!guards_ok(s->c.out[k].data, arg_bytes(&s->c.out[k]))) {
			res->status = "wrote_out_of_bounds";
			snprintf(res->message, sizeof res->message, "the solution wrote outside output '%s'",
				 job->out[k].name);
			return -1;
		}
	}
	if (rc_abi_unchanged(in_copy, s->in_t, s->c.n_in, in_sc, s->in_s) ||
	    rc_abi_unchanged(out_copy, s->out_t, s->c.n_out, out_sc, s->out_s)) {
		res->status = "tensor_changed";
		snprintf(res->message, sizeof res->message, "the solution changed a tensor descriptor");
		return -1;
	}
	for (int k = 0; k < s->c.n_in; k++) {
		if (dev_hash(s->c.in[k].data, s->c.in[k].data ? arg_bytes(&s->c.in[k]) : 0) != before[k]) {
			res->status = "inputs_modified";
			snprintf(res->message, sizeof res->message, "the solution modified its input '%s'",
				 job->in[k].name);
			return -1;
		}
	}
	return 0;
}

/* Before every warm-up and timed call: fresh poison in the set's outputs (a result cached from an
 * earlier call on the same buffers must be written again), the persisting-L2 state reset, the L2
 * flushed, everything finished. */
static void prepare_timed_call(dev_set *s, int i, void *flush, size_t flush_n)
{
	for (int k = 0; k < s->c.n_out; k++)
		cu_fault(cudaMemsetAsync(s->c.out[k].data, rc_poison_byte(i), arg_bytes(&s->c.out[k]), g_stream),
			 "poisoning a timed output");
	cudaStreamAttrValue v;
	memset(&v, 0, sizeof v);
	v.accessPolicyWindow.base_ptr = NULL;
	v.accessPolicyWindow.num_bytes = 0;
	v.accessPolicyWindow.hitRatio = 0.0f;
	v.accessPolicyWindow.hitProp = cudaAccessPropertyNormal;
	v.accessPolicyWindow.missProp = cudaAccessPropertyNormal;
	cudaError_t e1 = cudaStreamSetAttribute(g_stream, cudaStreamAttributeAccessPolicyWindow, &v);
	cudaError_t e2 = cudaCtxResetPersistingL2Cache();
	if (e1 != cudaSuccess || e2 != cudaSuccess) {
		cudaGetLastError();
		if (!g_l2_note++)
			fprintf(stderr, PROG ": note: cannot reset the persisting L2 state: %s\n",
				cudaGetErrorName(e1 != cudaSuccess ? e1 : e2));
	}
	if (flush_n)
		cu_fault(cudaMemsetAsync(flush, i & 0xff, flush_n, g_stream), "flushing the L2");
	cu_fault(cudaDeviceSynchronize(), "before a timed call");
}

static void append_note(char *msg, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append_note(char *msg, size_t n, const char *fmt, ...)
{
	size_t len = strlen(msg);
	if (len + 3 >= n)
		return;
	if (len) {
		memcpy(msg + len, "; ", 3);
		len += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg + len, n - len, fmt, ap);
	va_end(ap);
}

typedef struct plan {
	int nsets;
	int lazy;               /* rounds drawn one at a time (not enough device memory for all) */
	size_t flush_n;
	size_t round_bytes, set_bytes;
} plan;

/* How many timing sets, whether all rounds fit at once, the flush size. */
static int make_plan(const sf_job *job, const sf_ocall *layout, plan *p, char *note, size_t notelen, char *err,
		     size_t errlen)
{
	memset(p, 0, sizeof *p);
	int nr = job->n_rounds;
	p->round_bytes = set_size(job, layout, (size_t)ALIGN * (size_t)nr);
	size_t free_b = 0, total_b = 0;
	CU(cudaMemGetInfo(&free_b, &total_b));
	size_t avail = free_b / 10 * 8;
	if (!job->timing.enabled) {
		p->lazy = (size_t)nr * p->round_bytes > avail;
		return 0;
	}
	int l2 = 0;
	CU(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, g_device));
	p->flush_n = job->timing.flush_bytes > 0 ? (size_t)job->timing.flush_bytes : 2 * (size_t)l2;
	size_t per = 0;
	for (int k = 0; k < layout->n_in; k++)
		if (is_tensor_input(job, k))
			per += arg_bytes(&layout->in[k]);
	for (int k = 0; k < layout->n_out; k++)
		per += arg_bytes(&layout->out[k]);
	int want = job->timing.sets > 0 ? job->timing.sets : (int)(2 * (size_t)l2 / (per + 1)) + 1;
	if (want < 2)
		want = 2;
	if (want > 8)
		want = 8;
	p->set_bytes = set_size(job, layout, 4096 + 768 * 8);
	p->lazy = (size_t)nr * p->round_bytes + p->flush_n + 2 * p->set_bytes > avail;
	size_t used = (p->lazy ? 1 : (size_t)nr) * p->round_bytes + p->flush_n;
	p->nsets = want;
	while (p->nsets > 1 && used + (size_t)p->nsets * p->set_bytes > avail)
		p->nsets--;
	if (p->nsets < want)
		append_note(note, notelen, "%d timing sets instead of %d (device memory)", p->nsets, want);
	if (p->lazy)
		append_note(note, notelen, "rounds drawn one at a time (device memory)");
	return 0;
}

static int timing_phase(sf_entry_fn fn, sf_job *job, dev_set *sets, const plan *p, void *flush, int use_cupti,
			rc_result *res, char *note, size_t notelen, double **samples_out);

/* Returns 0 (res->status says how the candidate did) or -1: the harness failed (err). */
static int solution(sf_job *job, const rc_module *m, rc_result *res, double **samples_out, char *err, size_t errlen)
{
	char note[sizeof res->message] = "";
	sf_ocall layout;
	if (rc_ocall_layout(job, m, 0, &layout, err, errlen))
		return -1;
	for (int k = 0; k < job->n_in; k++)
		g_scal[k] = job->in[k].gen.kind == SF_GEN_SCALAR ? job->in[k].gen.a : NAN;
	plan p;
	if (make_plan(job, &layout, &p, note, sizeof note, err, errlen))
		return -1;
	int nr = job->n_rounds;

	/* rounds and timing sets drawn before the candidate is loaded */
	dev_set rounds[SF_MAX_ROUNDS];
	memset(rounds, 0, sizeof rounds);
	for (int r = 0; r < (p.lazy ? 0 : nr); r++) {
		if (set_alloc(&rounds[r], job, &layout, (size_t)ALIGN * (size_t)r, err, errlen) ||
		    draw_inputs(job, m, &rounds[r].c, NULL, job->seeds[r], err, errlen))
			return -1;
	}
	dev_set *sets = NULL;
	void *flush = NULL;
	if (job->timing.enabled) {
		sets = (dev_set *)sf_xcalloc((size_t)p.nsets, sizeof *sets);
		for (int s = 0; s < p.nsets; s++) {
			if (set_alloc(&sets[s], job, &layout, 4096 + 768 * (size_t)s, err, errlen) ||
			    draw_inputs(job, m, &sets[s].c, NULL, sf_mix64(job->timing.seed + (uint64_t)s), err,
					errlen))
				return -1;
		}
		if (p.flush_n)
			CU(cudaMalloc(&flush, p.flush_n));
	}
	/* the candidate never sees the seeds (lazily drawn rounds: once the last one is drawn) */
	if (!p.lazy)
		memset(job->seeds, 0, sizeof job->seeds);
	job->timing.seed = 0;
	int use_cupti = 0;
	if (job->timing.enabled) {
		char why[256] = "";
		/* SF_RUNNER_NO_CUPTI (set by whoever starts the runner; the candidate is not loaded yet)
		 * forces the CUDA-event fallback, to test it */
		const char *no_cupti = getenv("SF_RUNNER_NO_CUPTI");
		if (no_cupti && *no_cupti && strcmp(no_cupti, "0"))
			snprintf(why, sizeof why, "disabled by SF_RUNNER_NO_CUPTI");
		else
			use_cupti = cupti_init(why, sizeof why) == 0;
		if (!use_cupti) {
			fprintf(stderr, PROG ": note: CUPTI unavailable (%s); timing with CUDA events\n", why);
			append_note(note, sizeof note,
				    "CUPTI unavailable (%s): timed with CUDA events on the call's stream, work on "
				    "other streams not counted",
				    why);
		}
	}

	/* the driver's and CUPTI's own threads exist by now (a kernel, a flush): then the snapshot of
	 * threads, the sandbox, and the candidate, whose constructors run inside it */
	hash_kernel<<<1, 32>>>((const uint8_t *)g_hash_dev, 8, g_hash_dev);
	CU(cudaDeviceSynchronize());
	if (use_cupti)
		cuptiActivityFlushAll(0);
	rg_threads_snapshot();
	static char sandbox_note[256];
	if (rg_sandbox_install(1, job->out_dir, sandbox_note, sizeof sandbox_note, err, errlen))
		return -1;
	res->sandbox = sandbox_note[0] ? sandbox_note : "on";
	void *h = dlopen(job->solution, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		sf_errf(err, errlen, "cannot load the solution: %s", dlerror());
		return -1;
	}
	sf_entry_fn fn;
	void *sym = dlsym(h, job->entry);
	if (!sym) {
		sf_errf(err, errlen, "the solution has no entry point '%s'", job->entry);
		return -1;
	}
	memcpy(&fn, &sym, sizeof fn);
	if (guard_check(res))
		return 0;

	void *hout[SF_MAX_ARGS];
	for (int k = 0; k < layout.n_out; k++)
		hout[k] = sf_xmalloc(arg_bytes(&layout.out[k]) + 1);
	for (int r = 0; r < nr; r++) {
		dev_set *s = &rounds[p.lazy ? 0 : r];
		if (p.lazy) {
			set_free(s);
			if (set_alloc(s, job, &layout, (size_t)ALIGN * (size_t)r, err, errlen) ||
			    draw_inputs(job, m, &s->c, NULL, job->seeds[r], err, errlen))
				return -1;
			if (r == nr - 1)
				memset(job->seeds, 0, sizeof job->seeds);
		}
		for (int k = 0; k < s->c.n_out; k++)
			cu_fault(cudaMemset(s->c.out[k].data, rc_poison_byte(r), arg_bytes(&s->c.out[k])),
				 "poisoning an output");
		cu_fault(cudaDeviceSynchronize(), "before the solution's call");
		set_descriptors(s);
		if (call_checked(fn, job, s, res))
			return 0;
		sf_ocall hc = s->c;
		for (int k = 0; k < hc.n_out; k++) {
			cu_fault(cudaMemcpy(hout[k], s->c.out[k].data, arg_bytes(&s->c.out[k]), cudaMemcpyDeviceToHost),
				 "copying an output back");
			hc.out[k].data = hout[k];
		}
		if (rc_write_round(job, &hc, r, err, errlen))
			return -1;
		if (p.lazy)
			set_free(s);
	}
	for (int k = 0; k < layout.n_out; k++)
		free(hout[k]);
	if (!p.lazy)
		for (int r = 0; r < nr; r++)
			set_free(&rounds[r]);

	if (job->timing.enabled) {
		if (timing_phase(fn, job, sets, &p, flush, use_cupti, res, note, sizeof note, samples_out))
			return 0;
		for (int s = 0; s < p.nsets; s++)
			set_free(&sets[s]);
		free(sets);
		cudaFree(flush);
	}
	if (note[0] && !strcmp(res->status, "ok"))
		snprintf(res->message, sizeof res->message, "%s", note);
	return 0;
}

static int noop_entry(const sf_call *call)
{
	(void)call;
	return SF_OK;
}

/*
 * The external wall-clock batch (see runner_cpu.c): marks 'c' .. 'd' around B calls of the
 * candidate, then 'a' .. 'b' around B calls of an empty function, each call followed by the same
 * synchronization as a timed call, no flush in between; B fits target_s of the raw clock (2 at
 * least).
 */
static int64_t external_batch(sf_entry_fn fn, dev_set *sets, int nsets, double target_s, rc_result *res)
{
	if (!rg_clock_enabled())
		return 0;
	sf_call call;
	int64_t calls = 0;
	for (int half = 1; half >= 0; half--) {
		if (rg_clock_mark(half ? 'c' : 'a'))
			return 0;
		double t0 = rg_raw_now();
		for (int64_t i = 0; half ? (i < 2 || (rg_raw_now() - t0 < target_s && i < 100000)) : i < calls; i++) {
			make_call(&call, &sets[i % nsets]);
			int rc = (half ? fn : noop_entry)(&call);
			sync_after_call("in the wall-clock batch");
			if (rc != SF_OK) {
				res->status = "solution_error";
				snprintf(res->message, sizeof res->message, "the solution failed in the wall-clock batch");
				return -1;
			}
			if (half)
				calls = i + 1;
		}
		if (rg_clock_mark(half ? 'd' : 'b'))
			return 0;
	}
	return guard_check(res) ? -1 : calls;
}

/* Warm-up, then timed calls until rc_timing_done. Returns 0, or -1 when the candidate failed
 * (res->status set). */
static int timing_phase(sf_entry_fn fn, sf_job *job, dev_set *sets, const plan *p, void *flush, int use_cupti,
			rc_result *res, char *note, size_t notelen, double **samples_out)
{
	const sf_job_timing *t = &job->timing;
	int nsets = p->nsets;
	for (int s = 0; s < nsets; s++)
		set_descriptors(&sets[s]);
	double t_start = rg_raw_now();
	/* warm-up: the same conditions as a timed call, every check of a checked call */
	for (int i = 0; i < 3 || (rg_raw_now() - t_start) * 1e3 < t->warmup_ms; i++) {
		prepare_timed_call(&sets[i % nsets], i, flush, p->flush_n);
		if (call_checked(fn, job, &sets[i % nsets], res))
			return -1;
		if (i > 1000)
			break;
	}
	double *samples = (double *)sf_xmalloc(sizeof(double) * (size_t)t->max_iters);
	*samples_out = samples;
	cudaEvent_t e0 = NULL, e1 = NULL;
	if (use_cupti) {
		cuptiActivityFlushAll(0); /* deliver (and ignore) everything recorded so far */
		pthread_mutex_lock(&g_mu);
		g_win = (cwin *)sf_xcalloc((size_t)t->max_iters, sizeof *g_win);
		g_capwin = t->max_iters;
		g_nwin = 0;
		pthread_mutex_unlock(&g_mu);
	} else {
		cu_fault(cudaEventCreate(&e0), "creating a timing event");
		cu_fault(cudaEventCreate(&e1), "creating a timing event");
	}
	int n = 0;
	double t_timing = rg_raw_now(), timed_wall = 0;
	sf_call call;
	int defenses = rg_defenses_enabled();
	rg_reservoir audits;
	memset(&audits, 0, sizeof audits);
	void *audit_out[RC_AUDITS][SF_MAX_ARGS];
	for (int i = 0; i < RC_AUDITS; i++)
		for (int k = 0; k < sets[0].c.n_out; k++)
			audit_out[i][k] = sf_xmalloc(arg_bytes(&sets[0].c.out[k]) + 1);
	while (!rc_timing_done(t, samples, n, (rg_raw_now() - t_timing) * 1e3)) {
		int si = n % nsets;
		dev_set *s = &sets[si];
		/* fresh inputs: a new random sample of elements redrawn (the last one undone) */
		uint64_t key = 0;
		if (defenses) {
			key = rg_random();
			cu_fault(perturb_set(job, s, key, 1), "perturbing a timed call's inputs");
		}
		prepare_timed_call(s, n + 1, flush, p->flush_n);
		make_call(&call, s);
		double w0, w1;
		int rc;
		if (use_cupti) {
			uint64_t t0 = cupti_now();
			pthread_mutex_lock(&g_mu);
			if (g_nwin >= g_capwin) { /* rc_timing_done stops at max_iters: cannot happen */
				pthread_mutex_unlock(&g_mu);
				break;
			}
			g_win[g_nwin].t0 = t0;
			g_win[g_nwin].t1 = UINT64_MAX;
			g_win[g_nwin].count = 0;
			g_nwin++;
			pthread_mutex_unlock(&g_mu);
			w0 = sf_now();
			rc = fn(&call);
			sync_after_call("after a timed call");
			uint64_t t1 = cupti_now();
			w1 = sf_now();
			pthread_mutex_lock(&g_mu);
			g_win[n].t1 = t1;
			pthread_mutex_unlock(&g_mu);
		} else {
			cu_fault(cudaEventRecord(e0, g_stream), "recording a timing event");
			w0 = sf_now();
			rc = fn(&call);
			cu_fault(cudaSetDevice(g_device), "after a timed call");
			cu_fault(cudaEventRecord(e1, g_stream), "recording a timing event");
			sync_after_call("after a timed call");
			w1 = sf_now();
		}
		if (guard_check(res))
			return -1;
		if (rc != SF_OK) {
			res->status = "solution_error";
			snprintf(res->message, sizeof res->message, "the solution returned %d while timed", rc);
			return -1;
		}
		/* audit: kept or not is decided after the call, at random */
		int slot = t->time_only ? -1 : defenses ? rg_reservoir_offer(&audits, n, si, key) : (n < 2 ? n : -1);
		if (slot >= 0) {
			if (!defenses) { /* the old audit: the first timed call on sets 0 and 1, unperturbed */
				audits.set[slot] = si;
				audits.key[slot] = 0;
				audits.n = slot + 1;
			}
			for (int k = 0; k < s->c.n_out; k++)
				cu_fault(cudaMemcpy(audit_out[slot][k], s->c.out[k].data, arg_bytes(&s->c.out[k]),
						    cudaMemcpyDeviceToHost),
					 "copying an audited output back");
		}
		if (use_cupti) {
			cuptiActivityFlushAll(0);
			int empty;
			pthread_mutex_lock(&g_mu);
			samples[n] = window_ms(n, &empty);
			pthread_mutex_unlock(&g_mu);
		} else {
			float ms = 0;
			cu_fault(cudaEventElapsedTime(&ms, e0, e1), "reading a timing event");
			samples[n] = ms;
		}
		timed_wall += (w1 - w0) * 1e3;
		n++;
	}
	if (use_cupti) {
		/* final values: records delivered late still count */
		cupti_stop();
		int empty_calls = 0;
		pthread_mutex_lock(&g_mu);
		for (int i = 0; i < n; i++) {
			int empty;
			samples[i] = window_ms(i, &empty);
			empty_calls += empty;
		}
		uint64_t dropped = g_dropped, untimed = g_untimed;
		pthread_mutex_unlock(&g_mu);
		if (empty_calls)
			append_note(note, notelen,
				    "%d of %d timed calls had no device activity (timed by their host window)",
				    empty_calls, n);
		if (dropped)
			append_note(note, notelen, "CUPTI dropped %llu activity records", (unsigned long long)dropped);
		if (untimed)
			append_note(note, notelen, "%llu CUPTI records without timestamps", (unsigned long long)untimed);
	} else {
		cudaEventDestroy(e0);
		cudaEventDestroy(e1);
	}
	char err[SF_ERRLEN];
	for (int i = 0; i < audits.n; i++) {
		sf_ocall ac = sets[0].c;
		for (int k = 0; k < ac.n_out; k++)
			ac.out[k].data = audit_out[i][k];
		if (rc_write_audit(job, &ac, i, err, sizeof err)) {
			res->status = "error";
			snprintf(res->message, sizeof res->message, "%s", err);
			return -1;
		}
		res->audit_set[i] = audits.set[i];
		res->audit_key[i] = audits.key[i];
		res->n_audits = i + 1;
	}
	for (int i = 0; i < RC_AUDITS; i++)
		for (int k = 0; k < sets[0].c.n_out; k++)
			free(audit_out[i][k]);
	/* about 100 ms of candidate calls (a quarter of the budget when that is smaller), 2 at least */
	double target_s = t->budget_ms / 4000 < 0.1 ? t->budget_ms / 4000 : 0.1;
	res->batch_calls = t->time_only ? 0 : external_batch(fn, sets, nsets, target_s, res);
	if (res->batch_calls < 0)
		return -1;
	res->n_samples = n;
	res->samples_ms = samples;
	res->timing_method = use_cupti ? "cupti" : "events";
	res->timing_wall_ms = (rg_raw_now() - t_start) * 1e3;
	res->timed_wall_ms = timed_wall;
	res->timed_calls = n;
	res->sets = nsets;
	res->flush_bytes = (int64_t)p->flush_n;
	return 0;
}

static int run_solution(sf_job *job, const rc_module *m)
{
	rc_result res;
	memset(&res, 0, sizeof res);
	res.status = "ok";
	char err[SF_ERRLEN] = "";
	double *samples = NULL;
	if (solution(job, m, &res, &samples, err, sizeof err)) {
		res.status = "error";
		res.n_samples = 0;
		snprintf(res.message, sizeof res.message, "%s", err);
		fprintf(stderr, PROG ": %s\n", err);
		rc_write_result(job, &res);
		return 1;
	}
	int rc = rc_write_result(job, &res) ? 1 : 0;
	free(samples);
	return rc;
}

/* ---------------------------------------------------------------------------------------------- */

static int cuda_setup(const sf_job *job, char *err, size_t errlen)
{
	g_device = job->device;
	CU(cudaSetDevice(g_device));
	CU(cudaFree(0)); /* creates the context */
	CU(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, g_device));
	if (g_sms < 1)
		g_sms = 1;
	CU(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
	void *p = NULL;
	CU(cudaMalloc(&p, sizeof *g_hash_dev));
	g_hash_dev = (unsigned long long *)p;
	return 0;
}

int main(int argc, char **argv)
{
	sf_job job;
	rc_load_job_or_die(argc, argv, PROG, &job);
	char err[SF_ERRLEN] = "";
	rc_module m;
	int rc;
	if (cuda_setup(&job, err, sizeof err) ||
	    rc_module_open(job.problem_module, "sf_oracle_gpu_run", &m, err, sizeof err)) {
		fprintf(stderr, PROG ": %s\n", err);
		rc_result res;
		memset(&res, 0, sizeof res);
		res.status = "error";
		snprintf(res.message, sizeof res.message, "%s", err);
		rc_write_result(&job, &res);
		rc = 1;
	} else {
		rc = job.mode == SF_JOB_REFERENCE ? run_reference(&job, &m) : run_solution(&job, &m);
	}
	sf_job_free(&job);
	/* No teardown: a candidate may have left the context (or CUPTI) in a state whose destruction
	 * hangs or crashes, and result.json is already written. */
	fflush(stdout);
	fflush(stderr);
	_exit(rc);
}
