/*
 * Toy problem for tests/gpu/runner_smoke.sh: y[i, j] = alpha * x[perm[i], j].
 *   inputs:  x (bfloat16 [M, N], normal), perm (int32 [M], custom: a permutation of 0..M-1),
 *            alpha (float32 scalar)
 *   outputs: y (bfloat16 [M, N]; the reference keeps float32)
 * One item per element of y.
 */
#include "solforge/oracle.h"

SF_ORACLE_AXES("M", "N");

SF_ORACLE_ITEMS(c)
{
	return c->axis[0] * c->axis[1];
}

SF_ORACLE_ITEM(c, item)
{
	int64_t n = c->axis[1];
	int64_t i = item / n, j = item % n;
	int64_t src = sf_load_int(c->in[1].data, (sf_dt)c->in[1].dt, i);
	sf_out_set(c, 0, item, c->scalar[2] * sf_in(c, 0, src * n + j));
}

/* perm: a random permutation (Fisher-Yates driven by the counter-based generator). */
SF_ORACLE_GEN(g)
{
	int64_t m = g->c.axis[0];
	if (!g->is_custom[1])
		return 0;
	void *p = g->c.in[1].data;
	for (int64_t i = 0; i < m; i++)
		sf_store_int(p, (sf_dt)g->c.in[1].dt, i, i);
	for (int64_t i = m - 1; i > 0; i--) {
		int64_t k = sf_rng_int(g->seed, 7, (uint64_t)i, 0, i + 1);
		int64_t a = sf_load_int(p, (sf_dt)g->c.in[1].dt, i), b = sf_load_int(p, (sf_dt)g->c.in[1].dt, k);
		sf_store_int(p, (sf_dt)g->c.in[1].dt, i, b);
		sf_store_int(p, (sf_dt)g->c.in[1].dt, k, a);
	}
	return 0;
}

SF_ORACLE_WORK(c, w)
{
	w->flops[SF_UNIT_FP32] = (double)(c->axis[0] * c->axis[1]);
	w->bytes = -1;
}
