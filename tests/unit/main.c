/*
 * main.c - runs every unit test listed in all_tests.h, or those whose name contains argv[1].
 * Prints one line per failing test and closes with "N passed, N failed".
 */
#include "test.h"
#include <stdlib.h>
#include <time.h>

int sf_test_failed_checks;
const char *sf_test_current;

#define X(name) void test_##name(void);
#include "all_tests.h"
#undef X

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
#define X(name) { #name, test_##name },
#include "all_tests.h"
#undef X
};

static uint64_t seed;

uint64_t sf_test_seed(void)
{
	return seed;
}

int main(int argc, char **argv)
{
	const char *env = getenv("SF_TEST_SEED");
	seed = env ? strtoull(env, NULL, 0) : ((uint64_t)time(NULL) << 20) ^ (uint64_t)clock();
	printf("unit tests: seed %llu (rerun with SF_TEST_SEED=%llu)\n", (unsigned long long)seed,
	       (unsigned long long)seed);
	int passed = 0, failed = 0;
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (argc > 1 && !strstr(tests[i].name, argv[1]))
			continue;
		sf_test_current = tests[i].name;
		int before = sf_test_failed_checks;
		tests[i].fn();
		if (sf_test_failed_checks == before) {
			passed++;
		} else {
			failed++;
			printf("FAIL %s\n", tests[i].name);
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
