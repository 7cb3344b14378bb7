/* verification helper (temporary): CPU oracle runner, input filler, generator access */
#include ORACLE_PATH
#include <omp.h>
void v_run_items(const sf_ocall *c, int64_t lo, int64_t hi);
int64_t v_items(const sf_ocall *c);
void v_fill(void *buf, int dt, int64_t n, double mean, double std, uint64_t seed, uint32_t stream);
int v_gen(sf_gcall *g);
int v_work(const sf_ocall *c, sf_work *w);
void v_run_items(const sf_ocall *c, int64_t lo, int64_t hi)
{
#pragma omp parallel for schedule(dynamic, 64)
	for (int64_t i = lo; i < hi; i++)
		sf_oracle_item(c, i);
}
int64_t v_items(const sf_ocall *c) { return sf_oracle_items(c); }
void v_fill(void *buf, int dt, int64_t n, double mean, double std, uint64_t seed, uint32_t stream)
{
#pragma omp parallel for
	for (int64_t i = 0; i < n; i++) {
		double v = mean + std * sf_rng_normal(seed, stream, (uint64_t)i);
		if (dt == SF_DT_E2M1) { /* two threads must not write one byte: do pairs */
			if (i % 2 == 0) {
				sf_store(buf, (sf_dt)dt, i, v);
				if (i + 1 < n)
					sf_store(buf, (sf_dt)dt, i + 1, mean + std * sf_rng_normal(seed, stream, (uint64_t)(i + 1)));
			}
		} else {
			sf_store(buf, (sf_dt)dt, i, v);
		}
	}
}
#ifdef HAS_GEN
int v_gen(sf_gcall *g) { return sf_oracle_gen(g); }
#else
int v_gen(sf_gcall *g) { (void)g; return -2; }
#endif
#ifdef HAS_WORK
int v_work(const sf_ocall *c, sf_work *w) { sf_oracle_work(c, w); return 0; }
#else
int v_work(const sf_ocall *c, sf_work *w) { (void)c; (void)w; return -2; }
#endif
