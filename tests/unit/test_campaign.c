/*
 * test_campaign.c - the campaign's text parsing: solforge-tune declarations (good and malformed)
 * and the code block / notes taken from a model's reply (src/campaign/parse.c).
 */
#include "test.h"
#include "campaign/campaign.h"

#include <stdlib.h>

SF_TEST(tune_parse_declarations)
{
	sf_tune_space s;
	char err[256];
	const char *src = "// solforge-tune: BLOCK=64,128,256 UNROLL=1,2\n#include <x.h>\n/* solforge-tune: VEC=f4 */\n";
	CHECK_INT(sf_tune_parse(src, &s, err, sizeof err), 0);
	CHECK_INT(s.n, 3);
	CHECK(!strcmp(s.names[0], "BLOCK") && !strcmp(s.names[1], "UNROLL") && !strcmp(s.names[2], "VEC"));
	CHECK_INT(s.n_values[0], 3);
	CHECK(!strcmp(s.values[0][2], "256") && !strcmp(s.values[1][1], "2") && !strcmp(s.values[2][0], "f4"));
	CHECK(sf_tune_size(&s) == 6.0);
	CHECK_INT(sf_tune_parse("int x; // nothing to tune\n", &s, err, sizeof err), 0);
	CHECK_INT(s.n, 0);
	CHECK(sf_tune_size(&s) == 0.0);
}

SF_TEST(tune_parse_rejects_malformed)
{
	sf_tune_space s;
	char err[256];
	static const char *const bad[] = {
		"// solforge-tune: BLOCK\n",             /* no values */
		"// solforge-tune: BLOCK=\n",            /* empty list */
		"// solforge-tune: 9X=1,2\n",            /* not an identifier */
		"// solforge-tune: B=1;rm\n",            /* a value that could smuggle shell/flags */
		"// solforge-tune: B=1 B=2\n",           /* twice */
		"// solforge-tune: B=-DEVIL=1,\"x\"\n",  /* quote */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = 0;
		CHECK_INT(sf_tune_parse(bad[i], &s, err, sizeof err), -1);
		CHECK(err[0] != 0);
	}
}

SF_TEST(extract_code_takes_last_usable_block)
{
	const char *reply = "Here is a plan.\n```text\nnot code\n```\nFirst try:\n```c\nint a;\n```\n"
			    "Better:\n```cuda\n__global__ void k() {}\nint run;\n```\nNotes: used shared memory.\n";
	char *code = sf_extract_code(reply);
	CHECK(code && !strcmp(code, "__global__ void k() {}\nint run;\n"));
	free(code);
	char *prose = sf_prose_of(reply);
	CHECK(prose && strstr(prose, "Notes: used shared memory.") && !strstr(prose, "__global__") && !strstr(prose, "not code"));
	free(prose);
	/* a bare fence counts; an unterminated block (a cut-off reply) does not */
	code = sf_extract_code("```\nx = 1;\n```\n```c\nint cut;\n");
	CHECK(code && !strcmp(code, "x = 1;\n"));
	free(code);
	CHECK(sf_extract_code("no code at all") == NULL);
	CHECK(sf_extract_code("```python\nprint(1)\n```\n") == NULL);
	CHECK(sf_extract_code(NULL) == NULL);
	/* indented fences and CRLF info strings */
	code = sf_extract_code("  ```cpp\r\nint y;\n  ```\n");
	CHECK(code && !strcmp(code, "int y;\n"));
	free(code);
}
