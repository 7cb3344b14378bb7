/*
 * support.h - helpers for a problem's oracle unit tests (problems/<family>/<name>/test_oracle.c).
 *
 * A test_oracle.c includes this header, then its problem's oracle.c, and defines tests with
 * SF_TEST(name) from tests/unit/test.h (names must be unique across the whole suite: prefix them with
 * the problem's short name). tools/test.sh builds each problem's tests into their own executable
 * with tests/unit/main.c and runs them on the CPU.
 *
 * Typical use:
 *     sf_ocall c = {0};
 *     ot_input(&c, 0, SF_DT_BF16, 2, (int64_t[]){2, 4});  // allocates zeroed, sets c.n_in
 *     ot_output(&c, 0, SF_DT_F32, 2, (int64_t[]){2, 4});
 *     sf_store(c.in[0].data, SF_DT_BF16, 0, 1.5);  ...
 *     c.axis[0] = 2;  c.n_axis = 1;                // in SF_ORACLE_AXES order
 *     ot_run(&c);                                   // every item, like the CPU runner
 *     CHECK_NEAR(sf_load(c.out[0].data, SF_DT_F32, 0), 0.75, 1e-6);
 *     ot_free(&c);
 */
#ifndef SF_ORACLE_TEST_SUPPORT_H
#define SF_ORACLE_TEST_SUPPORT_H

#include <stdlib.h>
#include <string.h>
#include "solforge/oracle.h"
#include "../unit/test.h"

static inline void ot_tensor(sf_otensor *t, sf_dt dt, int ndim, const int64_t *shape)
{
	t->dt = dt;
	t->ndim = ndim;
	t->numel = 1;
	for (int i = 0; i < ndim; i++) {
		t->shape[i] = shape[i];
		t->numel *= shape[i];
	}
	size_t bytes = (size_t)sf_dt_bytes(dt, t->numel);
	t->data = calloc(bytes ? bytes : 1, 1);
}

/* Input k (definition order); grows c->n_in to cover k. */
static inline void ot_input(sf_ocall *c, int k, sf_dt dt, int ndim, const int64_t *shape)
{
	ot_tensor(&c->in[k], dt, ndim, shape);
	if (c->n_in < k + 1)
		c->n_in = k + 1;
}

/* Scalar input k (shape null in the definition). */
static inline void ot_scalar(sf_ocall *c, int k, double v)
{
	c->in[k].data = NULL;
	c->in[k].ndim = 0;
	c->in[k].numel = 1;
	c->scalar[k] = v;
	if (c->n_in < k + 1)
		c->n_in = k + 1;
}

static inline void ot_output(sf_ocall *c, int k, sf_dt dt, int ndim, const int64_t *shape)
{
	ot_tensor(&c->out[k], dt, ndim, shape);
	if (c->n_out < k + 1)
		c->n_out = k + 1;
}

/* Runs every item of the oracle, as the CPU runner does. */
static inline void ot_run(const sf_ocall *c)
{
	int64_t n = sf_oracle_items(c);
	for (int64_t i = 0; i < n; i++)
		sf_oracle_item(c, i);
}

static inline void ot_free(sf_ocall *c)
{
	for (int k = 0; k < c->n_in; k++)
		free(c->in[k].data);
	for (int k = 0; k < c->n_out; k++)
		free(c->out[k].data);
	memset(c, 0, sizeof *c);
}

#endif
