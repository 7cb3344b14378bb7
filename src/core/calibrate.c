/*
 * calibrate.c - measured ceilings (see calibrate.h).
 */
#include "core/calibrate.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Median time in seconds of one workload of a problem under a solution, or -1. */
static double time_one(const sf_eval_opts *base, const char *problem, const char *solution, const char *uuid,
		       char *err, size_t errlen)
{
	sf_eval_opts o = *base;
	o.no_baseline = 1;
	o.progress = NULL;
	o.cpu_max_work = 1e18;
	sf_eval e;
	int code;
	if (sf_eval_prepare(&e, problem, solution, &o, &code, err, errlen)) {
		sf_eval_free(&e, &o);
		return -1;
	}
	double t = -1;
	for (int i = 0; i < e.n_ws; i++) {
		if (strcmp(e.ws[i].uuid, uuid))
			continue;
		sf_eval_workload(&e, i, &o);
		if (e.res[i].status == SF_PASSED && e.res[i].have_tk)
			t = e.res[i].tk.median * 1e-3;
		else
			sf_errf(err, errlen, "calibration %s on %s: %s %s", solution, uuid, sf_status_name(e.res[i].status),
				e.res[i].log ? e.res[i].log : "");
	}
	if (t < 0 && !err[0])
		sf_errf(err, errlen, "calibration workload %s not found in %s", uuid, problem);
	sf_eval_free(&e, &o);
	return t;
}

int sf_calibrate(const sf_eval_opts *o, sf_calibration *cal, char *err, size_t errlen)
{
	memset(cal, 0, sizeof *cal);
	err[0] = 0;
	char *home = sf_home();
	char *copy = sf_path_join(home, "tools/calibration/copy");
	int cuda = !strcmp(o->backend->name, "cuda");
	/* 2^28 bf16 = 512 MiB each way on the GPU; 2^24 on the CPU */
	const char *uuid = cuda ? "copy-n2^28" : "copy-n2^24";
	double n = cuda ? 268435456.0 : 16777216.0;
	char *sol = cuda ? sf_path_join(copy, "solutions/copy.cu") : sf_xstrdup("@oracle");
	double t = time_one(o, copy, sol, uuid, err, errlen);
	free(sol);
	int rc = -1;
	if (t <= 0)
		goto out;
	cal->copy_bytes = 4 * n;
	cal->copy_bytes_per_s = cal->copy_bytes / t;
	if (cuda) {
		char *gemm = sf_path_join(home, "problems/llama/gemm_bf16_n4096_k4096");
		char *blt = sf_path_join(home, "problems/common/baselines/cublaslt_gemm_bf16.cu");
		double tg = time_one(o, gemm, blt, "gemm_bf16_n4096_k4096-m8192", err, errlen);
		free(gemm);
		free(blt);
		if (tg <= 0)
			goto out;
		cal->bf16_flops_per_s = 2.0 * 8192 * 4096 * 4096 / tg;
		snprintf(cal->note, sizeof cal->note, "copy %.0f MiB: %.2f TB/s (read+write); cuBLASLt bf16 8192x4096x4096: %.0f TFLOP/s",
			 cal->copy_bytes / 1048576, cal->copy_bytes_per_s / 1e12, cal->bf16_flops_per_s / 1e12);
	} else {
		snprintf(cal->note, sizeof cal->note, "copy %.0f MiB: %.2f GB/s (read+write; the plain C copy); matrix rate not measured on cpu",
			 cal->copy_bytes / 1048576, cal->copy_bytes_per_s / 1e9);
	}
	rc = 0;
out:
	free(copy);
	free(home);
	return rc;
}

double sf_sol_measured(const sf_sol *s, const sf_hw *hw, const sf_calibration *cal)
{
	if (!cal || cal->copy_bytes_per_s <= 0)
		return NAN;
	double t = s->bytes / cal->copy_bytes_per_s;
	for (int u = 0; u < SF_UNIT_COUNT; u++) {
		if (s->flops[u] <= 0)
			continue;
		double rate = hw->rate[u];
		if ((u == SF_UNIT_BF16_TENSOR || u == SF_UNIT_FP16_TENSOR) && cal->bf16_flops_per_s > 0)
			rate = cal->bf16_flops_per_s;
		if (rate <= 0)
			return NAN;
		if (s->flops[u] / rate > t)
			t = s->flops[u] / rate;
	}
	return t;
}

/* Prepares the calibration problem tools/calibration/DIR (solution sol_cuda or sol_cpu by backend), whose
 * first workload must bind exactly `axis`, as a ceiling of unit_bytes SOL bytes per unit (named `unit` in
 * messages) of that axis. dir and unit must outlive cc (string literals). */
static int ceiling_open(sf_copy_ceiling *cc, const sf_eval_opts *o, const char *dir, const char *sol_cuda,
			const char *sol_cpu, const char *axis, const char *unit, double unit_bytes, char *err,
			size_t errlen)
{
	memset(cc, 0, sizeof *cc);
	cc->o = *o;
	cc->o.no_baseline = 1;
	cc->o.progress = NULL;
	cc->o.only = NULL;
	cc->o.copy_ceiling = NULL;
	cc->o.read_ceiling = NULL;
	cc->o.calibration = NULL;
	cc->o.defines = NULL; /* the candidate's -D are not the calibration kernel's (they would rebuild it, or change it) */
	cc->o.xval = 0;       /* timed only: never compared, so no bridge probe for its PyTorch reference */
	cc->o.cpu_max_work = 1e18;
	cc->o.rounds = 1; /* one checked round: the kernel is exact, and its timing is what matters */
	cc->unit_bytes = unit_bytes;
	cc->what = dir;
	cc->unit = unit;
	char *home = sf_home();
	char *cal = sf_path_join(home, "tools/calibration");
	char *prob = sf_path_join(cal, dir);
	int cuda = !strcmp(o->backend->name, "cuda");
	char *sol = sf_path_join(prob, cuda ? sol_cuda : sol_cpu);
	int code;
	int rc = sf_eval_prepare(&cc->e, prob, sol, &cc->o, &code, err, errlen);
	if (rc == 0 && cc->e.compile_error) {
		sf_errf(err, errlen, "the calibration kernel %s does not build: %.300s", sol, cc->e.compile_error);
		rc = -1;
	}
	if (rc == 0 && (cc->e.n_ws < 1 || cc->e.ws[0].n_axes != 1 || strcmp(cc->e.ws[0].axis_names[0], axis))) {
		sf_errf(err, errlen, "%s: the first workload must bind exactly the axis %s", prob, axis);
		rc = -1;
	}
	free(sol);
	free(prob);
	free(cal);
	free(home);
	if (rc) {
		sf_eval_free(&cc->e, &cc->o);
		return -1;
	}
	cc->ready = 1;
	return 0;
}

int sf_copy_ceiling_open(sf_copy_ceiling *cc, const sf_eval_opts *o, char *err, size_t errlen)
{
	return ceiling_open(cc, o, "copy", "solutions/copy.cu", "solutions/copy.c", "N", "elements", 4.0, err, errlen);
}

int sf_read_ceiling_open(sf_copy_ceiling *cc, const sf_eval_opts *o, char *err, size_t errlen)
{
	/* a row: 8192 bf16 read (the definition's const R; checked by the read's own shape check) + 2 written */
	return ceiling_open(cc, o, "read", "solutions/read.cu", "solutions/read.c", "B", "rows", 16386.0, err, errlen);
}

double sf_copy_ceiling_time(sf_copy_ceiling *cc, double bytes, double *moved, char *err, size_t errlen)
{
	err[0] = 0;
	*moved = 0;
	if (!cc->ready) {
		sf_errf(err, errlen, "the %s ceiling is not prepared", cc->what);
		return -1;
	}
	double n = floor(bytes / cc->unit_bytes + 0.5);
	if (!(n >= 1))
		n = 1;
	if (n > 9e15) {
		sf_errf(err, errlen, "%.3g bytes: too many for the %s", bytes, cc->what);
		return -1;
	}
	/* the first workload of the calibration problem, re-bound to this unit count; timed only: the
	 * kernels are checked by tests/suites/emu_kernels.sh and the end-to-end tests, and comparing up to
	 * gigabytes against a reference per workload would dominate the run */
	cc->e.ws[0].axis_values[0] = (int64_t)n;
	*moved = cc->unit_bytes * n;
	double ms = sf_eval_time_only(&cc->e, 0, &cc->o, err, errlen);
	double t = ms > 0 ? ms * 1e-3 : -1;
	if (t < 0) {
		char why[SF_ERRLEN];
		snprintf(why, sizeof why, "%s", err);
		sf_errf(err, errlen, "%s of %.0f %s: %s", cc->what, n, cc->unit, why);
	}
	return t;
}

void sf_copy_ceiling_close(sf_copy_ceiling *cc)
{
	if (cc->ready)
		sf_eval_free(&cc->e, &cc->o);
	cc->ready = 0;
}
