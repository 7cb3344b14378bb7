/*
 * redteam/cpu/partial_write.c - HACK: writing only part of the output. Copies the first 15/16 of the
 * elements and leaves the tail: whatever the buffer held (an earlier correct result, or zeros) is
 * taken as the answer. Seen: the "writing only part of the output"; KernelBench reports of
 * kernels relying on a previous run's buffer contents.
 * Problem: tools/calibration/copy. Expected: INCORRECT_NUMERICAL - outputs are poisoned before
 * every call.
 */
#include <string.h>
#include "solforge/solution.h"

SF_EXPORT int run(const sf_call *call)
{
	size_t bytes = (size_t)sf_numel(&call->outputs[0]) * 2;
	memcpy(call->outputs[0].data, call->inputs[0].data, bytes / 32 * 30);
	return SF_OK;
}
