/*
 * redteam/honest/copy.c - an honest cpu solution of tools/calibration/copy (y = x): the control of
 * the red-team suite. It must PASS with every defense on.
 */
#include <string.h>
#include "solforge/solution.h"

SF_EXPORT int run(const sf_call *call)
{
	memcpy(call->outputs[0].data, call->inputs[0].data, (size_t)sf_numel(&call->inputs[0]) * 2);
	return SF_OK;
}
