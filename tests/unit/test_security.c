/*
 * test_security.c - pieces of the reward-hack defenses that can be tested without a runner
 * (docs/security.md; the red-team suite tests them end to end): the static import check on real and
 * broken files, the perturbation positions and values, the job's audit list, the external clock's
 * choice among its batch pairs.
 */
#include "test.h"
#include "core/eval.h"
#include "core/imports.h"
#include "core/spawn.h"
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

/* marks of an external batch: SF_CLOCK_PAIRS pairs "cdab", pair k's candidate half cand[k] s, its
 * empty half empty[k] s (wall), the CPU halves cpu_c[k] / cpu_e[k] */
static void batch_marks(sf_proc *p, const double *cand, const double *empty, const double *cpu_c,
			const double *cpu_e, uint64_t *s)
{
	memset(p, 0, sizeof *p);
	double t = 1000.0 + (double)(next_rand(s) % 1000), c = (double)(next_rand(s) % 100);
	for (int k = 0; k < SF_CLOCK_PAIRS; k++) {
		const double h[4][2] = { { t, c }, { t + cand[k], c + cpu_c[k] }, { t + cand[k] + 1e-4, c + cpu_c[k] },
					  { t + cand[k] + 1e-4 + empty[k], c + cpu_c[k] + cpu_e[k] } };
		for (int j = 0; j < 4; j++) {
			p->mark[p->n_marks] = "cdab"[j];
			p->mark_t[p->n_marks] = h[j][0];
			p->mark_cpu[p->n_marks++] = h[j][1];
		}
		t = h[3][0] + 1e-4;
		c = h[3][1];
	}
}

SF_TEST(clock_pairs_keep_the_smallest_estimate)
{
	uint64_t s = sf_test_seed() ^ 0x636c6bull;
	for (int trial = 0; trial < 200; trial++) {
		double cand[SF_CLOCK_PAIRS], empty[SF_CLOCK_PAIRS], cpu_c[SF_CLOCK_PAIRS], cpu_e[SF_CLOCK_PAIRS];
		double want = 1e30;
		const int stall = (int)(next_rand(&s) % SF_CLOCK_PAIRS), tamper = trial % 4 == 0;
		for (int k = 0; k < SF_CLOCK_PAIRS; k++) {
			empty[k] = 0.01 + (double)(next_rand(&s) % 1000) * 1e-5;
			cand[k] = empty[k] + (double)(next_rand(&s) % 1000) * 1e-6 + (tamper ? 0.5 : 0.0);
			cpu_e[k] = empty[k] * 0.9;
			cpu_c[k] = cand[k] * ((next_rand(&s) & 1) ? 0.9 : 1.1);
			if (k == stall) { /* a one-off stall: both clocks see it */
				cand[k] += 0.3;
				cpu_c[k] += 0.3;
			}
			double est = cand[k] - empty[k];
			if (cpu_c[k] - cpu_e[k] < est)
				est = cpu_c[k] - cpu_e[k];
			if (est < want)
				want = est;
		}
		sf_proc p;
		batch_marks(&p, cand, empty, cpu_c, cpu_e, &s);
		sf_runner_out r;
		memset(&r, 0, sizeof r);
		sf_runner_clock_pairs(&p, &r);
		CHECK_INT(r.have_clock, 1);
		double got = r.ext_cand_s - r.ext_empty_s;
		if (r.cpu_cand_s - r.cpu_empty_s < got)
			got = r.cpu_cand_s - r.cpu_empty_s;
		CHECK_NEAR(got, want, 1e-9);
		if (!tamper)
			CHECK(got < 0.3); /* the stalled pair never wins */
		else
			CHECK(got >= 0.45 - 1e-9); /* work that escapes the timed window shows in every pair: at
						    * least 0.9 (the CPU clock's factor) x 0.5 s, exactly that
						    * when the pair's random extra is 0 */
		/* a mark missing, one out of order, or unknown CPU time in one pair */
		sf_proc q = p;
		q.n_marks--;
		memset(&r, 0, sizeof r);
		sf_runner_clock_pairs(&q, &r);
		CHECK_INT(r.have_clock, 0);
		q = p;
		const int at = (int)(next_rand(&s) % (uint64_t)q.n_marks), to = (at + 1) % q.n_marks;
		const char tmp = q.mark[at];
		q.mark[at] = q.mark[to];
		q.mark[to] = tmp;
		memset(&r, 0, sizeof r);
		sf_runner_clock_pairs(&q, &r);
		CHECK_INT(r.have_clock, q.mark[at] == q.mark[to]);
		q = p;
		q.mark_cpu[4 * stall + 1] = -1;
		memset(&r, 0, sizeof r);
		sf_runner_clock_pairs(&q, &r);
		CHECK_INT(r.have_clock, 1);
	}
}
