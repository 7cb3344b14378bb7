/*
 * inputs_main.c - `solforge-inputs JOB.json`: writes the inputs a job's runners draw, as safetensors,
 * for the PyTorch bridge (docs/bridge.md).
 *
 * The C runners draw every input from the secret seeds in the job (Philox, src/common/gen.h; custom
 * inputs from the problem module's SF_ORACLE_GEN). The bridge must see exactly those inputs, so it
 * does not draw them itself: this program draws them with the same code as solforge-runner-cpu and
 * writes OUT_DIR/in_round<r>.safetensors for every round, and when the job times,
 * OUT_DIR/in_set<s>.safetensors for the TORCH_TIMING_SETS sets a torch baseline is timed on and
 * OUT_DIR/in_audit<i>.safetensors for each audited timed call of the candidate (its set's inputs with
 * that call's perturbation), tensor inputs only (scalars stay in job.json), in the definition's
 * dtypes, then OUT_DIR/result.json {"status": "ok", "audits": [...]}.
 * The problem module (job.problem_module) is needed only for custom inputs; "" means none.
 */
#include "runner/runner_common.h"
#include "core/safetensors.h"
#include "core/util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One thread's share of an input's draws: elements (bytes for float4) [lo, hi). */
typedef struct draw_part {
	const sf_job_arg *a;
	void *buf;
	uint64_t seed;
	uint32_t stream;
	int64_t lo, hi;
} draw_part;

static void *draw_range(void *vp)
{
	draw_part *p = vp;
	for (int64_t i = p->lo; i < p->hi; i++) {
		if (p->a->dt == SF_DT_E2M1)
			sf_gen_store_e2m1_byte((uint8_t *)p->buf, &p->a->gen, p->seed, p->stream, i, p->a->numel);
		else
			sf_gen_store(p->buf, p->a->dt, &p->a->gen, p->seed, p->stream, i);
	}
	return NULL;
}

/* rc_gen_host on every core: each element is a pure function of (seed, stream, index), so the split
 * does not change a bit (large weights would otherwise take seconds per round on one core). */
static void gen_parallel(const sf_job_arg *a, void *buf, uint64_t seed, uint32_t stream)
{
	int64_t n = a->dt == SF_DT_E2M1 ? sf_dt_bytes(a->dt, a->numel) : a->numel;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int nt = (int)(cores < 1 ? 1 : cores > 64 ? 64 : cores);
	if (n < (int64_t)1 << 16)
		nt = 1;
	pthread_t th[64];
	int made[64] = { 0 };
	draw_part parts[64];
	for (int t = 0; t < nt; t++) {
		parts[t] = (draw_part){ a, buf, seed, stream, n * t / nt, n * (t + 1) / nt };
		if (t > 0)
			made[t] = pthread_create(&th[t], NULL, draw_range, &parts[t]) == 0;
	}
	draw_range(&parts[0]);
	for (int t = 1; t < nt; t++) {
		if (made[t])
			pthread_join(th[t], NULL);
		else
			draw_range(&parts[t]); /* no thread: draw that share here */
	}
}

/* Draws one input set with `seed` into c (buffers allocated), applies the per-call perturbation of
 * key `perturb` when it is nonzero (runner_common.h: what an audited timed call saw), and writes it
 * to OUT_DIR/name. */
static int dump_set(const sf_job *job, const rc_module *m, int have_module, sf_ocall *c, uint64_t seed,
		    uint64_t perturb, const char *name, char *err, size_t errlen)
{
	for (int k = 0; k < job->n_in; k++) {
		const sf_job_arg *a = &job->in[k];
		if (a->gen.kind == SF_GEN_SCALAR || a->gen.kind == SF_GEN_CUSTOM)
			continue;
		if (a->gen.kind == SF_GEN_FILE) {
			if (rc_load_file_input(a, c->in[k].data, err, errlen))
				return -1;
		} else {
			gen_parallel(a, c->in[k].data, seed, rc_stream(k));
		}
	}
	if (have_module) {
		if (rc_gen_custom(job, m, c, seed, err, errlen))
			return -1;
	} else {
		for (int k = 0; k < job->n_in; k++)
			if (job->in[k].gen.kind == SF_GEN_CUSTOM) {
				sf_errf(err, errlen, "input '%s' is custom but the job names no problem module",
					job->in[k].name);
				return -1;
			}
	}
	if (perturb)
		rc_perturb_host(job, c, perturb);
	sf_st_tensor ts[SF_MAX_ARGS];
	memset(ts, 0, sizeof ts);
	int n = 0;
	for (int k = 0; k < job->n_in; k++) {
		if (job->in[k].gen.kind == SF_GEN_SCALAR)
			continue;
		ts[n].name = job->in[k].name;
		ts[n].dt = job->in[k].dt;
		ts[n].ndim = job->in[k].ndim;
		memcpy(ts[n].shape, job->in[k].shape, sizeof ts[n].shape);
		ts[n].data = c->in[k].data;
		ts[n].nbytes = (size_t)sf_dt_bytes(job->in[k].dt, job->in[k].numel);
		n++;
	}
	char *path = sf_path_join(job->out_dir, name);
	int rc = sf_st_write(path, ts, n, NULL, err, errlen);
	free(path);
	return rc;
}

#define TORCH_TIMING_SETS 2 /* input sets a PyTorch baseline rotates through while timed */

int main(int argc, char **argv)
{
	sf_job job;
	rc_load_job_or_die(argc, argv, "solforge-inputs", &job);
	rc_result res = { .status = "ok" };
	char err[SF_ERRLEN] = "";
	rc_module m;
	memset(&m, 0, sizeof m);
	static const char *const no_axes[] = { NULL };
	int have_module = job.problem_module && *job.problem_module;
	sf_ocall c;
	memset(&c, 0, sizeof c);
	if (have_module && rc_module_open(job.problem_module, "sf_oracle_cpu_run", &m, err, sizeof err))
		goto fail;
	if (!have_module)
		m.axis_names = no_axes;
	if (rc_ocall_layout(&job, &m, 0, &c, err, sizeof err))
		goto fail;
	for (int k = 0; k < c.n_in; k++)
		c.in[k].data = job.in[k].gen.kind == SF_GEN_SCALAR
				       ? NULL
				       : sf_xcalloc(1, (size_t)sf_dt_bytes((sf_dt)c.in[k].dt, c.in[k].numel) + 1);
	for (int r = 0; r < job.n_rounds; r++) {
		char name[64];
		snprintf(name, sizeof name, "in_round%d.safetensors", r);
		if (dump_set(&job, &m, have_module, &c, job.seeds[r], 0, name, err, sizeof err))
			goto fail;
	}
	/* the timing sets PyTorch baselines are timed on (unperturbed: their outputs are not audited) */
	for (int s = 0; job.timing.enabled && s < TORCH_TIMING_SETS; s++) {
		char name[64];
		snprintf(name, sizeof name, "in_set%d.safetensors", s);
		if (dump_set(&job, &m, have_module, &c, rc_set_seed(&job, s), 0, name, err, sizeof err))
			goto fail;
	}
	/* the timed calls the solution runner audited: their set's inputs with their perturbation */
	for (int i = 0; job.timing.enabled && i < job.n_audits; i++) {
		char name[64];
		snprintf(name, sizeof name, "in_audit%d.safetensors", i);
		if (dump_set(&job, &m, have_module, &c, rc_set_seed(&job, job.audit_set[i]), job.audit_key[i], name,
			     err, sizeof err))
			goto fail;
		res.n_audits = i + 1;
		res.audit_set[i] = job.audit_set[i];
		res.audit_key[i] = job.audit_key[i];
	}
	for (int k = 0; k < c.n_in; k++)
		free(c.in[k].data);
	int rc = rc_write_result(&job, &res) ? 1 : 0;
	sf_job_free(&job);
	return rc;
fail:
	res.status = "error";
	snprintf(res.message, sizeof res.message, "%s", err);
	fprintf(stderr, "solforge-inputs: %s\n", err);
	rc_write_result(&job, &res);
	return 1;
}
