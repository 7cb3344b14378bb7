/*
 * oracle.c - read_bf16: y[b] = max(x[b, 0..R-1]), one item per row. The maximum starts at -inf and
 * takes a value only when it is greater (a NaN never is), so a row of NaNs gives -inf and the result is
 * the same in any order: the candidates' reductions may use any tree.
 */
#include <math.h>
#include "solforge/oracle.h"

SF_ORACLE_AXES("B", "R");

SF_ORACLE_ITEMS(c)
{
	return c->axis[0];
}

SF_ORACLE_ITEM(c, b)
{
	const int64_t R = c->axis[1];
	double m = -INFINITY;
	for (int64_t r = 0; r < R; r++) {
		const double v = sf_in(c, 0, b * R + r);
		if (v > m)
			m = v;
	}
	sf_out_set(c, 0, b, m);
}
