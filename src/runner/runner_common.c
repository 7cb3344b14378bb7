/*
 * runner_common.c - shared runner helpers (see runner_common.h).
 */
#include "runner/runner_common.h"
#include "core/util.h"
#include "core/dtype.h"
#include "core/safetensors.h"
#include "core/stats.h"
#include "runner/perturb.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int rc_module_open(const char *path, const char *run_symbol, rc_module *m, char *err, size_t errlen)
{
	memset(m, 0, sizeof *m);
	m->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!m->handle) {
		sf_errf(err, errlen, "cannot load problem module %s: %s", path, dlerror());
		return -1;
	}
	m->axis_names = (const char *const *)dlsym(m->handle, "sf_oracle_axis_names");
	m->run = dlsym(m->handle, run_symbol);
	*(void **)&m->gen = dlsym(m->handle, "sf_oracle_gen");
	*(void **)&m->work = dlsym(m->handle, "sf_oracle_work");
	if (!m->axis_names || !m->run) {
		sf_errf(err, errlen, "problem module %s lacks sf_oracle_axis_names or %s", path, run_symbol);
		dlclose(m->handle);
		m->handle = NULL;
		return -1;
	}
	return 0;
}

static void layout_arg(const sf_job_arg *a, sf_otensor *t, sf_dt dt)
{
	t->data = NULL;
	t->dt = dt;
	t->ndim = a->ndim;
	t->numel = a->numel;
	for (int d = 0; d < a->ndim; d++)
		t->shape[d] = a->shape[d];
}

int rc_ocall_layout(const sf_job *job, const rc_module *m, int reference, sf_ocall *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof *c);
	c->n_in = job->n_in;
	c->n_out = job->n_out;
	for (int k = 0; k < job->n_in; k++) {
		layout_arg(&job->in[k], &c->in[k], job->in[k].dt);
		if (job->in[k].gen.kind == SF_GEN_SCALAR)
			c->scalar[k] = job->in[k].gen.a;
	}
	for (int k = 0; k < job->n_out; k++)
		layout_arg(&job->out[k], &c->out[k], reference ? sf_dt_reference(job->out[k].dt) : job->out[k].dt);
	int n = 0;
	for (; m->axis_names[n]; n++) {
		if (n >= SF_MAX_AXES) {
			sf_errf(err, errlen, "oracle declares more than %d axes", SF_MAX_AXES);
			return -1;
		}
		int found;
		c->axis[n] = sf_job_axis(job, m->axis_names[n], &found);
		if (!found) {
			sf_errf(err, errlen, "oracle reads axis '%s', which the workload does not bind",
				m->axis_names[n]);
			return -1;
		}
	}
	c->n_axis = n;
	return 0;
}

uint32_t rc_stream(int k)
{
	return (uint32_t)(0x1000 + k);
}

void rc_gen_host(const sf_job_arg *a, void *buf, uint64_t seed, uint32_t stream)
{
	if (a->dt == SF_DT_E2M1) {
		int64_t bytes = sf_dt_bytes(a->dt, a->numel);
		for (int64_t b = 0; b < bytes; b++)
			sf_gen_store_e2m1_byte((uint8_t *)buf, &a->gen, seed, stream, b, a->numel);
		return;
	}
	for (int64_t i = 0; i < a->numel; i++)
		sf_gen_store(buf, a->dt, &a->gen, seed, stream, i);
}

int rc_gen_custom(const sf_job *job, const rc_module *m, sf_ocall *c, uint64_t seed, char *err, size_t errlen)
{
	int any = 0;
	int is_custom[SF_MAX_ARGS] = { 0 };
	const char *names[SF_MAX_ARGS];
	for (int k = 0; k < job->n_in; k++) {
		names[k] = job->in[k].name;
		is_custom[k] = job->in[k].gen.kind == SF_GEN_CUSTOM;
		any |= is_custom[k];
	}
	if (!any)
		return 0;
	if (!m->gen) {
		sf_errf(err, errlen, "the workload has custom inputs but the oracle has no SF_ORACLE_GEN");
		return -1;
	}
	sf_gcall *g = sf_xcalloc(1, sizeof *g);
	g->c = *c;
	g->in_names = names;
	g->is_custom = is_custom;
	g->seed = seed;
	int rc = m->gen(g);
	if (rc != 0) {
		sf_errf(err, errlen, "custom input generator failed: %s", g->err[0] ? g->err : "(no message)");
		free(g);
		return -1;
	}
	free(g);
	return 0;
}

int rc_load_file_input(const sf_job_arg *a, void *buf, char *err, size_t errlen)
{
	sf_st_file f;
	if (sf_st_read(a->file_path, &f, err, errlen))
		return -1;
	const sf_st_tensor *t = sf_st_find(&f, a->file_key);
	int rc = -1;
	if (!t) {
		sf_errf(err, errlen, "input '%s': no tensor '%s' in %s", a->name, a->file_key, a->file_path);
	} else if (t->dt != a->dt) {
		sf_errf(err, errlen, "input '%s': tensor '%s' in %s is %s, the definition says %s", a->name,
			a->file_key, a->file_path, sf_dt_name(t->dt), sf_dt_name(a->dt));
	} else if (t->ndim != a->ndim || memcmp(t->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim)) {
		sf_errf(err, errlen, "input '%s': tensor '%s' in %s has another shape than the workload binds",
			a->name, a->file_key, a->file_path);
	} else {
		memcpy(buf, t->data, t->nbytes);
		rc = 0;
	}
	sf_st_close(&f);
	return rc;
}

uint8_t rc_poison_byte(int round)
{
	return (round & 1) ? 0x7F : 0xFF;
}

static int write_outputs(const sf_job *job, const sf_ocall *c, const char *name, char *err, size_t errlen);

int rc_write_round(const sf_job *job, const sf_ocall *c, int round, char *err, size_t errlen)
{
	char name[64];
	snprintf(name, sizeof name, "round%d.safetensors", round);
	return write_outputs(job, c, name, err, errlen);
}

int rc_write_audit(const sf_job *job, const sf_ocall *c, int i, char *err, size_t errlen)
{
	char name[64];
	snprintf(name, sizeof name, "audit%d.safetensors", i);
	return write_outputs(job, c, name, err, errlen);
}

uint64_t rc_set_seed(const sf_job *job, int s)
{
	return sf_mix64(job->timing.seed + (uint64_t)s);
}

/* Applies key u to input k's host buffer; with save, the overwritten bytes go to save first. */
static void perturb_input(const sf_job_arg *a, void *buf, int k, uint64_t u, uint8_t *save)
{
	int64_t n = rc_perturb_units(a->dt, a->numel), m = rc_perturb_count(n);
	int ub = rc_perturb_unit_bytes(a->dt);
	for (int64_t j = 0; j < m; j++) {
		int64_t pos = rc_perturb_pos(n, m, u, rc_stream(k), j);
		if (save)
			memcpy(save + j * RC_PERTURB_ELEM, (uint8_t *)buf + pos * ub, (size_t)ub);
		rc_perturb_store(buf, a->dt, &a->gen, u, rc_stream(k), pos, a->numel);
	}
}

void rc_perturb_host(const sf_job *job, sf_ocall *c, uint64_t u)
{
	if (!u)
		return;
	for (int k = 0; k < job->n_in; k++)
		if (rc_perturbed_kind(job->in[k].gen.kind) && c->in[k].data)
			perturb_input(&job->in[k], c->in[k].data, k, u, NULL);
}

void rc_perturb_apply(const sf_job *job, sf_ocall *c, rc_undo *undo, uint64_t u)
{
	for (int k = 0; k < job->n_in; k++) {
		const sf_job_arg *a = &job->in[k];
		if (!rc_perturbed_kind(a->gen.kind) || !c->in[k].data)
			continue;
		int64_t n = rc_perturb_units(a->dt, a->numel), m = rc_perturb_count(n);
		int ub = rc_perturb_unit_bytes(a->dt);
		if (!undo->saved[k])
			undo->saved[k] = sf_xmalloc((size_t)(m * RC_PERTURB_ELEM) + 1);
		if (undo->active) { /* the previous key's positions, restored */
			for (int64_t j = 0; j < m; j++) {
				int64_t pos = rc_perturb_pos(n, m, undo->key, rc_stream(k), j);
				memcpy((uint8_t *)c->in[k].data + pos * ub, undo->saved[k] + j * RC_PERTURB_ELEM,
				       (size_t)ub);
			}
		}
		perturb_input(a, c->in[k].data, k, u, undo->saved[k]);
	}
	undo->key = u;
	undo->active = 1;
}

void rc_undo_free(rc_undo *undo)
{
	for (int k = 0; k < SF_MAX_ARGS; k++)
		free(undo->saved[k]);
	memset(undo, 0, sizeof *undo);
}

static int write_outputs(const sf_job *job, const sf_ocall *c, const char *name, char *err, size_t errlen)
{
	sf_st_tensor ts[SF_MAX_ARGS];
	memset(ts, 0, sizeof ts);
	for (int k = 0; k < c->n_out; k++) {
		ts[k].name = job->out[k].name;
		ts[k].dt = (sf_dt)c->out[k].dt;
		ts[k].ndim = c->out[k].ndim;
		memcpy(ts[k].shape, c->out[k].shape, sizeof ts[k].shape);
		ts[k].data = c->out[k].data;
		ts[k].nbytes = (size_t)sf_dt_bytes((sf_dt)c->out[k].dt, c->out[k].numel);
	}
	char *path = sf_path_join(job->out_dir, name);
	int rc = sf_st_write(path, ts, c->n_out, NULL, err, errlen);
	free(path);
	return rc;
}


int rc_write_result(const sf_job *job, const rc_result *r)
{
	sf_buf b = { 0 };
	sf_buf_puts(&b, "{\"status\":");
	sf_buf_json_str(&b, r->status);
	sf_buf_puts(&b, ",\"audits\":[");
	for (int i = 0; i < r->n_audits; i++)
		sf_buf_printf(&b, "%s{\"set\":%d,\"key\":\"%llu\"}", i ? "," : "", r->audit_set[i],
			      (unsigned long long)r->audit_key[i]);
	sf_buf_printf(&b, "],\"batch_calls\":%lld", (long long)r->batch_calls);
	if (r->sandbox) {
		sf_buf_puts(&b, ",\"sandbox\":");
		sf_buf_json_str(&b, r->sandbox);
	}
	sf_buf_puts(&b, ",\"message\":");
	sf_buf_json_str(&b, r->message);
	if (r->have_work) {
		sf_buf_puts(&b, ",\"work\":{\"flops\":[");
		for (int u = 0; u < SF_UNIT_COUNT; u++) {
			if (u)
				sf_buf_puts(&b, ",");
			sf_buf_json_num(&b, r->work.flops[u]);
		}
		sf_buf_puts(&b, "],\"bytes\":");
		sf_buf_json_num(&b, r->work.bytes);
		sf_buf_puts(&b, "}");
	}
	if (r->n_samples > 0) {
		sf_buf_puts(&b, ",\"timing\":{\"method\":");
		sf_buf_json_str(&b, r->timing_method ? r->timing_method : "clock");
		sf_buf_printf(&b, ",\"sets\":%d,\"flush_bytes\":%lld,\"timed_calls\":%lld,\"wall_ms\":", r->sets,
			      (long long)r->flush_bytes, (long long)r->timed_calls);
		sf_buf_json_num(&b, r->timing_wall_ms);
		sf_buf_puts(&b, ",\"timed_wall_ms\":");
		sf_buf_json_num(&b, r->timed_wall_ms);
		sf_buf_puts(&b, ",\"samples_ms\":[");
		for (int i = 0; i < r->n_samples; i++) {
			if (i)
				sf_buf_puts(&b, ",");
			sf_buf_printf(&b, "%.9g", r->samples_ms[i]);
		}
		sf_buf_puts(&b, "]}");
	}
	sf_buf_puts(&b, "}\n");
	char err[SF_ERRLEN];
	char *path = sf_path_join(job->out_dir, "result.json");
	int rc = sf_write_file(path, b.data, b.len, err, sizeof err);
	if (rc)
		fprintf(stderr, "runner: %s\n", err);
	free(path);
	sf_buf_free(&b);
	return rc;
}

void rc_abi_tensors(const sf_otensor *ts, int n, sf_tensor *out, int64_t (*shapes)[SF_MAX_DIMS], int device,
		    int device_id)
{
	for (int k = 0; k < n; k++) {
		memset(&out[k], 0, sizeof out[k]);
		out[k].data = ts[k].data;
		out[k].device.device_type = device;
		out[k].device.device_id = device_id;
		out[k].ndim = ts[k].ndim;
		out[k].dtype = sf_dt_to_dlpack((sf_dt)ts[k].dt);
		for (int d = 0; d < ts[k].ndim; d++)
			shapes[k][d] = ts[k].shape[d];
		out[k].shape = shapes[k];
		out[k].strides = NULL;
		out[k].byte_offset = 0;
	}
}

int rc_abi_unchanged(const sf_tensor *a, const sf_tensor *b, int n, int64_t (*sa)[SF_MAX_DIMS],
		     int64_t (*sb)[SF_MAX_DIMS])
{
	for (int k = 0; k < n; k++) {
		if (a[k].data != b[k].data || a[k].ndim != b[k].ndim || a[k].shape != b[k].shape ||
		    a[k].strides != b[k].strides || a[k].byte_offset != b[k].byte_offset ||
		    memcmp(&a[k].dtype, &b[k].dtype, sizeof a[k].dtype) ||
		    memcmp(&a[k].device, &b[k].device, sizeof a[k].device))
			return -1;
		if (memcmp(sa[k], sb[k], sizeof(int64_t) * SF_MAX_DIMS))
			return -1;
	}
	return 0;
}

int rc_timing_done(const sf_job_timing *t, const double *samples, int n, double elapsed_ms)
{
	if (n >= t->max_iters)
		return 1;
	if (n < t->min_iters)
		return 0;
	if (elapsed_ms >= t->budget_ms)
		return 1;
	if (n % 5)
		return 0;
	sf_stats st;
	sf_stats_compute(samples, n, &st);
	return st.rel_ci <= t->target_rel_ci;
}

void rc_load_job_or_die(int argc, char **argv, const char *prog, sf_job *job)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s JOB.json\n", prog);
		exit(2);
	}
	char err[SF_ERRLEN], *text;
	size_t len;
	if (sf_read_file(argv[1], &text, &len, err, sizeof err) || sf_job_parse(text, len, job, err, sizeof err)) {
		fprintf(stderr, "%s: %s\n", prog, err);
		exit(2);
	}
	explicit_bzero(text, len); /* the text names the seeds: not left in freed heap for the candidate to find */
	free(text);
	/* the job names the seeds: gone from the disk before the candidate is loaded */
	if (job->mode == SF_JOB_SOLUTION && unlink(argv[1]) != 0)
		fprintf(stderr, "%s: note: cannot remove %s\n", prog, argv[1]);
}
