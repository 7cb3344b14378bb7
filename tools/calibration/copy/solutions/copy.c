/*
 * copy.c - the calibration copy for the cpu backend: y = x with memcpy (the C library's copy is the
 * practical host-memory ceiling). Used by `solforge eval --copy-ceiling --backend cpu`.
 */
#include <string.h>
#include "solforge/solution.h"

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 1 || call->n_outputs != 1 || call->inputs[0].ndim != 1 ||
	    call->outputs[0].ndim != 1 || call->outputs[0].shape[0] != call->inputs[0].shape[0])
		return SF_ERR_UNSUPPORTED;
	memcpy(call->outputs[0].data, call->inputs[0].data, (size_t)call->inputs[0].shape[0] * 2);
	return SF_OK;
}
