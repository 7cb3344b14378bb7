/*
 * sol.c - SOL work, T_sol and the SOL score (see sol.h).
 */
#include "core/sol.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int sf_sol_work(const sf_definition *d, const sf_job *job, sf_sol *s, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	for (int u = 0; u < SF_UNIT_COUNT; u++) {
		if (!d->sol_flops[u])
			continue;
		char e2[SF_ERRLEN];
		if (sf_eval_axes_expr(d, job->axis_values, d->sol_flops[u], &s->flops[u], e2, sizeof e2)) {
			sf_errf(err, errlen, "%s: solforge.sol.flops.%s: %s", d->name, sf_unit_name(u), e2);
			return -1;
		}
	}
	if (d->sol_bytes) {
		char e2[SF_ERRLEN];
		if (sf_eval_axes_expr(d, job->axis_values, d->sol_bytes, &s->bytes, e2, sizeof e2)) {
			sf_errf(err, errlen, "%s: solforge.sol.bytes: %s", d->name, e2);
			return -1;
		}
	} else {
		for (int k = 0; k < job->n_in; k++)
			if (job->in[k].gen.kind != SF_GEN_SCALAR)
				s->bytes += (double)sf_dt_bytes(job->in[k].dt, job->in[k].numel);
		for (int k = 0; k < job->n_out; k++)
			s->bytes += (double)sf_dt_bytes(job->out[k].dt, job->out[k].numel);
	}
	return 0;
}

void sf_sol_apply_work(sf_sol *s, const sf_work *w)
{
	for (int u = 0; u < SF_UNIT_COUNT; u++)
		s->flops[u] = w->flops[u];
	if (w->bytes >= 0)
		s->bytes = w->bytes;
	s->data_dependent = 1;
}

int sf_sol_time(sf_sol *s, const sf_hw *hw, char *err, size_t errlen)
{
	s->t_mem = s->bytes / hw->hbm_bytes_per_s;
	s->t_sol = s->t_mem;
	s->binding = -1;
	for (int u = 0; u < SF_UNIT_COUNT; u++) {
		s->t_unit[u] = 0;
		if (s->flops[u] <= 0)
			continue;
		if (hw->rate[u] <= 0) {
			sf_errf(err, errlen, "%s has no %s unit, but the problem counts work for it", hw->name,
				sf_unit_name(u));
			return -1;
		}
		s->t_unit[u] = s->flops[u] / hw->rate[u];
		if (s->t_unit[u] > s->t_sol) {
			s->t_sol = s->t_unit[u];
			s->binding = u;
		}
	}
	return 0;
}

double sf_sol_score(double t_k, double t_b, double t_sol)
{
	if (!(t_b > t_sol) || !(t_k > 0))
		return NAN;
	return 1.0 / (1.0 + (t_k - t_sol) / (t_b - t_sol));
}

const char *sf_sol_binding_name(const sf_sol *s)
{
	return s->binding < 0 ? "memory" : sf_unit_name(s->binding);
}
