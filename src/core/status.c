/*
 * status.c - names of evaluation statuses.
 */
#include "core/status.h"

#include <string.h>

static const char *const names[SF_STATUS_COUNT] = {
	[SF_PASSED] = "PASSED",
	[SF_INCORRECT_SHAPE] = "INCORRECT_SHAPE",
	[SF_INCORRECT_NUMERICAL] = "INCORRECT_NUMERICAL",
	[SF_INCORRECT_DTYPE] = "INCORRECT_DTYPE",
	[SF_RUNTIME_ERROR] = "RUNTIME_ERROR",
	[SF_COMPILE_ERROR] = "COMPILE_ERROR",
	[SF_TIMEOUT] = "TIMEOUT",
	[SF_REWARD_HACK] = "REWARD_HACK",
	[SF_INVALID_REFERENCE] = "INVALID_REFERENCE",
	[SF_SKIPPED] = "SKIPPED",
};

const char *sf_status_name(sf_status s)
{
	return (s >= 0 && s < SF_STATUS_COUNT) ? names[s] : "UNKNOWN";
}

int sf_status_from_name(const char *name)
{
	for (int i = 0; i < SF_STATUS_COUNT; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}
