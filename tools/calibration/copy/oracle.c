/*
 * oracle.c - copy_bf16: y[i] = x[i]. One item per element.
 */
#include "solforge/oracle.h"

SF_ORACLE_AXES("N");

SF_ORACLE_ITEMS(c)
{
	return c->axis[0];
}

SF_ORACLE_ITEM(c, i)
{
	sf_out_set(c, 0, i, sf_in(c, 0, i));
}
