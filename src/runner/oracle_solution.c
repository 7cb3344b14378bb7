/*
 * oracle_solution.c - a problem's oracle compiled as a cpu solution ("@oracle"): the obvious C
 * implementation, used to check the cpu backend end to end and as the cpu backend's baseline.
 *
 * Built by the parent with -DSF_ORACLE_SOURCE="\"/abs/oracle.c\"" and
 * -DSF_AXIS_BINDING="\"/abs/axes.h\"", a generated header that says where each axis can be read:
 *     static const struct sf_axis_bind sf_axis_binding[] = { {"M", 0, 0, 0, -1}, ... {NULL} };
 * (name, is_output, argument index, dimension, constant value or -1 or -2, scale, offset).
 * Outputs are written in their real dtypes (the oracle rounds through sf_store).
 */
#include <math.h>
#include "solforge/solution.h"
#include "solforge/oracle.h"

struct sf_axis_bind {
	const char *name;
	int is_out, arg, dim;
	long long value; /* >= 0: a constant; -1: (shape[dim] of the argument - offset) / scale;
			    -2: no tensor determines it (a generator parameter): reads as 0 */
	long long scale, offset;
};

#include SF_ORACLE_SOURCE
#include SF_AXIS_BINDING

static sf_dt dt_of(sf_dtype t)
{
	switch (t.code) {
	case SF_CODE_FLOAT: return t.bits == 64 ? SF_DT_F64 : t.bits == 32 ? SF_DT_F32 : SF_DT_F16;
	case SF_CODE_BFLOAT: return SF_DT_BF16;
	case SF_CODE_FLOAT8_E4M3FN: return SF_DT_E4M3;
	case SF_CODE_FLOAT8_E5M2: return SF_DT_E5M2;
	case SF_CODE_FLOAT4_E2M1FN: return SF_DT_E2M1;
	case SF_CODE_INT: return t.bits == 64 ? SF_DT_I64 : t.bits == 32 ? SF_DT_I32 : t.bits == 16 ? SF_DT_I16 : SF_DT_I8;
	case SF_CODE_UINT: return SF_DT_U8;
	case SF_CODE_BOOL: return SF_DT_BOOL;
	default: return SF_DT_INVALID;
	}
}

static void to_otensor(const sf_tensor *t, sf_otensor *o)
{
	o->data = t->data;
	o->dt = dt_of(t->dtype);
	o->ndim = t->ndim;
	o->numel = 1;
	for (int d = 0; d < t->ndim && d < SF_MAX_DIMS; d++) {
		o->shape[d] = t->shape[d];
		o->numel *= t->shape[d];
	}
}

SF_EXPORT int run(const sf_call *call);

SF_EXPORT int run(const sf_call *call)
{
	static sf_ocall c;
	c.n_in = call->n_inputs;
	c.n_out = call->n_outputs;
	for (int k = 0; k < call->n_inputs; k++) {
		to_otensor(&call->inputs[k], &c.in[k]);
		c.scalar[k] = isnan(call->scalars[k]) ? 0 : call->scalars[k];
	}
	for (int k = 0; k < call->n_outputs; k++)
		to_otensor(&call->outputs[k], &c.out[k]);
	int n = 0;
	for (; sf_oracle_axis_names[n]; n++) {
		int found = 0;
		for (int b = 0; sf_axis_binding[b].name; b++) {
			const struct sf_axis_bind *x = &sf_axis_binding[b];
			if (strcmp(x->name, sf_oracle_axis_names[n]))
				continue;
			if (x->value >= 0)
				c.axis[n] = x->value;
			else if (x->value == -2)
				c.axis[n] = 0;
			else
				c.axis[n] = ((x->is_out ? call->outputs : call->inputs)[x->arg].shape[x->dim] - x->offset) /
					    x->scale;
			found = 1;
			break;
		}
		if (!found)
			return SF_ERR_UNSUPPORTED;
	}
	c.n_axis = n;
	int64_t items = sf_oracle_items(&c);
	for (int64_t i = 0; i < items; i++)
		sf_oracle_item(&c, i);
	return SF_OK;
}
