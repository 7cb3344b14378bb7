/*
 * check.c - output comparison (see check.h).
 */
#include "core/check.h"
#include "core/dtype.h"
#include "core/safetensors.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void flat_to_index(const sf_job_arg *a, int64_t i, char *out, size_t len)
{
	int64_t idx[SF_MAX_DIMS];
	for (int d = a->ndim - 1; d >= 0; d--) {
		idx[d] = a->shape[d] ? i % a->shape[d] : 0;
		i = a->shape[d] ? i / a->shape[d] : 0;
	}
	size_t off = (size_t)snprintf(out, len, "[");
	for (int d = 0; d < a->ndim && off < len; d++)
		off += (size_t)snprintf(out + off, len - off, "%s%lld", d ? ", " : "", (long long)idx[d]);
	if (off < len)
		snprintf(out + off, len - off, "]");
}

static int compare_output(const sf_job_arg *a, const sf_st_tensor *ref, const sf_st_tensor *sol,
			  const sf_tolerance *tol, sf_check *c)
{
	if (sol->dt != a->dt) {
		c->status = SF_INCORRECT_DTYPE;
		snprintf(c->msg, sizeof c->msg, "output '%s' is %s, expected %s", a->name, sf_dt_name(sol->dt),
			 sf_dt_name(a->dt));
		return 0;
	}
	if (sol->ndim != a->ndim || ref->ndim != a->ndim ||
	    memcmp(sol->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim) ||
	    memcmp(ref->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim)) {
		c->status = SF_INCORRECT_SHAPE;
		snprintf(c->msg, sizeof c->msg, "output '%s' has the wrong shape", a->name);
		return 0;
	}
	int64_t n = a->numel, bad = 0, first_bad = -1;
	double first_x = 0, first_y = 0;
	int any_nonzero_ref = 0, any_nonzero_sol = 0, cap_hit = 0;
	for (int64_t i = 0; i < n; i++) {
		double x = sf_load(sol->data, sol->dt, i);
		double y = sf_load(ref->data, ref->dt, i);
		any_nonzero_ref |= y != 0;
		any_nonzero_sol |= x != 0;
		int ok;
		double e;
		if (isnan(x) || isnan(y)) {
			ok = 0;
			e = INFINITY;
		} else if (isinf(x) || isinf(y)) {
			ok = x == y && (y > 0 || tol->allow_negative_inf);
			e = ok ? 0 : INFINITY;
		} else {
			e = fabs(x - y);
			ok = e <= tol->atol + tol->rtol * fabs(y);
		}
		if (e > c->max_abs)
			c->max_abs = e;
		double rel = e / fmax(fabs(y), tol->atol > 0 ? tol->atol : 1e-30);
		if (rel > c->max_rel)
			c->max_rel = rel;
		if (!isnan(tol->error_cap) && e > tol->error_cap)
			cap_hit = 1;
		if (!ok) {
			if (first_bad < 0) {
				first_bad = i;
				first_x = x;
				first_y = y;
			}
			bad++;
		}
	}
	double ratio = n ? 1.0 - (double)bad / (double)n : 1.0;
	if (ratio < c->matched_ratio)
		c->matched_ratio = ratio;
	char where[160] = "";
	if (first_bad >= 0)
		flat_to_index(a, first_bad, where, sizeof where);
	if (ratio < tol->matched_ratio) {
		c->status = SF_INCORRECT_NUMERICAL;
		snprintf(c->msg, sizeof c->msg,
			 "output '%s': %lld of %lld elements out of tolerance (atol %g, rtol %g); first at %s: got %.9g, "
			 "expected %.9g",
			 a->name, (long long)bad, (long long)n, tol->atol, tol->rtol, where, first_x, first_y);
		return 0;
	}
	if (cap_hit) {
		c->status = SF_INCORRECT_NUMERICAL;
		snprintf(c->msg, sizeof c->msg, "output '%s': an error exceeds max_error_cap %g (max %g)", a->name,
			 tol->error_cap, c->max_abs);
		return 0;
	}
	if (any_nonzero_ref && !any_nonzero_sol) {
		c->status = SF_INCORRECT_NUMERICAL;
		snprintf(c->msg, sizeof c->msg, "output '%s' is all zeros; the reference is not", a->name);
		return 0;
	}
	return 0;
}

int sf_check_round(const char *ref_path, const char *sol_path, const sf_job *job, const sf_tolerance *tol,
		   sf_check *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof *c);
	c->status = SF_PASSED;
	c->matched_ratio = 1.0;
	sf_st_file ref, sol;
	if (sf_st_read(ref_path, &ref, err, errlen))
		return -1;
	if (sf_st_read(sol_path, &sol, err, errlen)) {
		sf_st_close(&ref);
		return -1;
	}
	for (int k = 0; k < job->n_out && c->status == SF_PASSED; k++) {
		const sf_st_tensor *r = sf_st_find(&ref, job->out[k].name);
		const sf_st_tensor *s = sf_st_find(&sol, job->out[k].name);
		if (!r) {
			sf_errf(err, errlen, "reference file %s lacks output '%s'", ref_path, job->out[k].name);
			sf_st_close(&ref);
			sf_st_close(&sol);
			return -1;
		}
		if (!s) {
			c->status = SF_INCORRECT_SHAPE;
			snprintf(c->msg, sizeof c->msg, "output '%s' is missing", job->out[k].name);
			break;
		}
		compare_output(&job->out[k], r, s, tol, c);
	}
	sf_st_close(&ref);
	sf_st_close(&sol);
	return 0;
}

void sf_check_merge(sf_check *acc, const sf_check *round, int first)
{
	if (first) {
		*acc = *round;
		return;
	}
	if (acc->status == SF_PASSED && round->status != SF_PASSED) {
		acc->status = round->status;
		memcpy(acc->msg, round->msg, sizeof acc->msg);
	}
	if (round->max_abs > acc->max_abs)
		acc->max_abs = round->max_abs;
	if (round->max_rel > acc->max_rel)
		acc->max_rel = round->max_rel;
	if (round->matched_ratio < acc->matched_ratio)
		acc->matched_ratio = round->matched_ratio;
}
