/*
 * test_problem.c - the problem loaders' error messages stay one line whatever the file quotes: a definition whose
 * shape names an unknown axis spelled with each control byte (what `solforge import` may bring in; found by
 * tests/fuzz/fuzz_problem.c in session 25) fails with a message that holds no control byte and still names the field.
 */
#include "test.h"
#include "core/problem.h"
#include "core/util.h"

#include <stdlib.h>
#include <unistd.h>

SF_TEST(definition_errors_are_one_line)
{
	char dir[] = "/tmp/sf_test_problem.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[64];
	snprintf(path, sizeof path, "%s/definition.json", dir);
	for (int c = 1; c < 0x80; c++) {
		if (c >= 0x20 && c != 0x7f)
			continue;
		FILE *f = fopen(path, "w");
		CHECK(f != NULL);
		if (!f)
			return;
		fprintf(f, "{\"name\": \"p\", \"axes\": {\"M\": {\"type\": \"var\"}}, \"inputs\": {\"x\": {\"shape\": "
			   "[\"A\\u%04xB\"], \"dtype\": \"float32\"}}, \"outputs\": {\"y\": {\"shape\": [\"M\"], "
			   "\"dtype\": \"float32\"}}}",
			c);
		fclose(f);
		sf_definition d;
		char err[SF_ERRLEN] = "";
		CHECK(sf_definition_load(dir, &d, err, sizeof err) != 0);
		CHECK(strstr(err, "inputs.x.shape[0]") != NULL);
		int ctrl = 0;
		for (const char *p = err; *p; p++)
			ctrl += (unsigned char)*p < 0x20 || *p == 0x7f;
		CHECK_INT(ctrl, 0);
	}
	unlink(path);
	rmdir(dir);
}
