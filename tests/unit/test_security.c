/*
 * test_security.c - pieces of the reward-hack defenses that can be tested without a runner
 * (docs/security.md; the red-team suite tests them end to end): the static import check on real and
 * broken files, the perturbation positions and values, the job's audit list.
 */
#include "test.h"
#include "core/imports.h"
#include "core/job.h"
#include "core/util.h"
#include "runner/perturb.h"

#include <stdlib.h>
#include <unistd.h>

static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

SF_TEST(imports_check_flags_this_binary)
{
	/* the test binary opens files and so imports fopen or open: flagged, naming the import */
	char why[4096];
	CHECK_INT(sf_imports_check("/proc/self/exe", NULL, why, sizeof why), 1);
	CHECK(strstr(why, "imports ") != NULL);
	CHECK(strstr(why, "solforge-allow") != NULL);
}

SF_TEST(imports_check_rejects_non_elf_and_truncated)
{
	char why[4096], err[SF_ERRLEN];
	char path[] = "/tmp/sf-test-imports.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	close(fd);
	CHECK(sf_write_file(path, "not an ELF file\n", 16, err, sizeof err) == 0);
	CHECK_INT(sf_imports_check(path, NULL, why, sizeof why), -1);
	/* the first 200 bytes of a real ELF file: header fine, section headers beyond the end */
	char *text;
	size_t len;
	CHECK(sf_read_file("/proc/self/exe", &text, &len, err, sizeof err) == 0);
	if (len > 200) {
		CHECK(sf_write_file(path, text, 200, err, sizeof err) == 0);
		CHECK_INT(sf_imports_check(path, NULL, why, sizeof why), -1);
	}
	free(text);
	CHECK_INT(sf_imports_check("/nonexistent/solution.so", NULL, why, sizeof why), -1);
	unlink(path);
}

SF_TEST(perturb_positions_distinct_in_their_blocks)
{
	uint64_t s = 0x5eed;
	for (int t = 0; t < 200; t++) {
		int64_t n = 1 + (int64_t)(next_rand(&s) % 3000000);
		int64_t m = rc_perturb_count(n);
		CHECK(m >= 1 && m <= RC_PERTURB_MAX && m <= n);
		uint64_t u = next_rand(&s) | 1;
		int64_t step = n / m, prev = -1;
		for (int64_t j = 0; j < m; j += 1 + m / 64) {
			int64_t p = rc_perturb_pos(n, m, u, 0x1000, j);
			CHECK(p >= j * step && p < (j + 1) * step && p < n && p > prev);
			prev = p;
		}
	}
	CHECK_INT(rc_perturb_count(0), 0);
	CHECK_INT(rc_perturb_count(255), 1);
	CHECK_INT(rc_perturb_count(512), 2);
}

SF_TEST(perturb_values_fresh_and_reproducible)
{
	/* a bf16 N(0,1) input: the value of key u at a position is a pure function of (u, stream, pos),
	 * and differs from the base draw almost everywhere */
	enum { N = 4096 };
	uint16_t base[N], a[N], b[N];
	sf_genspec g = { SF_GEN_NORMAL, 0.0, 1.0 };
	for (int64_t i = 0; i < N; i++)
		sf_gen_store(base, SF_DT_BF16, &g, 77, 0x1000, i);
	memcpy(a, base, sizeof a);
	memcpy(b, base, sizeof b);
	uint64_t u = 0x123456789abcdefull;
	int64_t m = rc_perturb_count(N), changed = 0;
	for (int64_t j = 0; j < m; j++) {
		int64_t p = rc_perturb_pos(N, m, u, 0x1000, j);
		rc_perturb_store(a, SF_DT_BF16, &g, u, 0x1000, p, N);
		rc_perturb_store(b, SF_DT_BF16, &g, u, 0x1000, p, N);
		changed += a[p] != base[p];
	}
	CHECK(memcmp(a, b, sizeof a) == 0);
	CHECK(changed >= m - 2);
	/* another key changes other elements */
	int64_t p1 = rc_perturb_pos(N, m, u, 0x1000, 3), p2 = rc_perturb_pos(N, m, u + 1, 0x1000, 3);
	CHECK(p1 != p2 || rc_perturb_pos(N, m, u, 0x1000, 5) != rc_perturb_pos(N, m, u + 1, 0x1000, 5));
}

SF_TEST(job_audits_round_trip)
{
	const char *text = "{\"mode\":\"reference\",\"problem_module\":\"/m.so\",\"out_dir\":\"/o\",\"axes\":{},"
			   "\"inputs\":[],\"outputs\":[],\"seeds\":[\"1\"],\"timing\":{\"seed\":\"9\"},"
			   "\"audits\":[{\"set\":1,\"key\":\"18446744073709551615\"},{\"set\":0,\"key\":\"5\"}]}";
	sf_job job;
	char err[SF_ERRLEN];
	memset(&job, 0, sizeof job);
	CHECK(sf_job_parse(text, strlen(text), &job, err, sizeof err) == 0);
	CHECK_INT(job.n_audits, 2);
	CHECK_INT(job.audit_set[0], 1);
	CHECK(job.audit_key[0] == UINT64_MAX);
	CHECK(job.audit_key[1] == 5);
	char *json = sf_job_to_json(&job);
	sf_job again;
	memset(&again, 0, sizeof again);
	CHECK(sf_job_parse(json, strlen(json), &again, err, sizeof err) == 0);
	CHECK_INT(again.n_audits, 2);
	CHECK(again.audit_key[0] == UINT64_MAX && again.audit_set[1] == 0);
	free(json);
	sf_job_free(&job);
	sf_job_free(&again);
	/* too many audits, or one without a key: rejected */
	const char *bad = "{\"mode\":\"reference\",\"problem_module\":\"/m.so\",\"out_dir\":\"/o\",\"axes\":{},"
			  "\"inputs\":[],\"outputs\":[],\"seeds\":[\"1\"],\"audits\":[{\"set\":1}]}";
	memset(&job, 0, sizeof job);
	CHECK(sf_job_parse(bad, strlen(bad), &job, err, sizeof err) != 0);
}
