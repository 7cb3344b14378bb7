/*
 * redteam/honest/declared/copy_reads_file.c - an honest copy that also reads a file (a stand-in for a
 * solution loading a table): fopen is a denied import, declared in the included needs_fopen.h. It
 * must PASS: declared imports are allowed, and reading files is not what the sandbox refuses.
 */
#include <stdio.h>
#include <string.h>
#include "needs_fopen.h"
#include "solforge/solution.h"

SF_EXPORT int run(const sf_call *call)
{
	static int read_once;
	if (!read_once++) {
		FILE *f = fopen("/proc/self/status", "r");
		if (!f)
			return SF_ERR_INTERNAL;
		fclose(f);
	}
	memcpy(call->outputs[0].data, call->inputs[0].data, (size_t)sf_numel(&call->inputs[0]) * 2);
	return SF_OK;
}
