/*
 * oracle_cpu.c - compiles a problem's oracle for the cpu runner.
 *
 * Built by the parent as a shared object with -DSF_ORACLE_SOURCE="\"/abs/path/oracle.c\"":
 * the oracle's own symbols plus sf_oracle_cpu_run, the loop over items.
 */
#include "solforge/oracle.h"
#include SF_ORACLE_SOURCE

void sf_oracle_cpu_run(const sf_ocall *c);

void sf_oracle_cpu_run(const sf_ocall *c)
{
	int64_t n = sf_oracle_items(c);
	for (int64_t i = 0; i < n; i++)
		sf_oracle_item(c, i);
}
