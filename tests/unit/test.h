/*
 * test.h - the unit-test harness: a table of named tests, CHECK macros, one closing line
 * "N passed, N failed" that CI reads.
 *
 * A test file defines functions with SF_TEST(name) and lists them in tests/unit/all_tests.h.
 * A test fails when any CHECK in it fails; the run goes on with the next test.
 */
#ifndef SF_TEST_H
#define SF_TEST_H

#include <stdio.h>
#include <string.h>
#include <math.h>
#include <stdint.h>

extern int sf_test_failed_checks;
extern const char *sf_test_current;

#define SF_TEST(name)                 \
	void test_##name(void);       \
	void test_##name(void)

#define CHECK(cond)                                                                                 \
	do {                                                                                        \
		if (!(cond)) {                                                                      \
			fprintf(stderr, "  %s:%d: %s: check failed: %s\n", __FILE__, __LINE__,      \
				sf_test_current, #cond);                                            \
			sf_test_failed_checks++;                                                    \
		}                                                                                   \
	} while (0)

#define CHECK_INT(a, b)                                                                             \
	do {                                                                                        \
		long long va_ = (long long)(a), vb_ = (long long)(b);                               \
		if (va_ != vb_) {                                                                   \
			fprintf(stderr, "  %s:%d: %s: %s == %lld, expected %s == %lld\n", __FILE__, \
				__LINE__, sf_test_current, #a, va_, #b, vb_);                       \
			sf_test_failed_checks++;                                                    \
		}                                                                                   \
	} while (0)

#define CHECK_NEAR(a, b, tol)                                                                       \
	do {                                                                                        \
		double va_ = (double)(a), vb_ = (double)(b);                                        \
		if (!(fabs(va_ - vb_) <= (tol))) {                                                  \
			fprintf(stderr, "  %s:%d: %s: %s == %.17g, expected %.17g (tol %g)\n",       \
				__FILE__, __LINE__, sf_test_current, #a, va_, vb_, (double)(tol));   \
			sf_test_failed_checks++;                                                    \
		}                                                                                   \
	} while (0)

#define CHECK_STR(a, b)                                                                             \
	do {                                                                                        \
		const char *va_ = (a), *vb_ = (b);                                                  \
		if (!va_ || !vb_ || strcmp(va_, vb_) != 0) {                                        \
			fprintf(stderr, "  %s:%d: %s: %s == \"%s\", expected \"%s\"\n", __FILE__,   \
				__LINE__, sf_test_current, #a, va_ ? va_ : "(null)",                 \
				vb_ ? vb_ : "(null)");                                              \
			sf_test_failed_checks++;                                                    \
		}                                                                                   \
	} while (0)

/* Seeds for randomized tests: a fresh seed per run (printed, and reproducible with SF_TEST_SEED). */
uint64_t sf_test_seed(void);

#endif
