/*
 * Oracle of silu_and_mul_i14336: Llama-3.1-8B's MLP activation act_fn(gate_proj(x)) * up_proj(x)
 * with intermediate_size 14336, on the fused gate_up_proj output as vLLM's / FlashInfer's
 * silu_and_mul take it: x [num_tokens, 2 * intermediate_size], the gate in columns
 * [0, intermediate_size) and up in [intermediate_size, 2 * intermediate_size).
 *
 *     out[t, i] = silu(gate) * up,  silu(g) = g / (1 + exp(-g)) = g * sigmoid(g)
 *
 * computed in one go (here double, the definition float32) and rounded once to bf16 by the
 * candidate. One item per output element. Input: 0 x bf16. Output: 0 out [num_tokens,
 * intermediate_size].
 */
#include <math.h>
#include "solforge/oracle.h"

SF_ORACLE_AXES("num_tokens", "intermediate_size");

SF_ORACLE_ITEMS(c)
{
	return c->axis[0] * c->axis[1];
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t I = c->axis[1];
	const int64_t t = item / I, i = item % I;
	const double gate = sf_in(c, 0, t * 2 * I + i);
	const double up = sf_in(c, 0, t * 2 * I + I + i);
	const double silu = gate / (1.0 + exp(-gate)); /* exp(-gate) = inf for gate < -709: silu = -0 */
	sf_out_set(c, 0, item, silu * up);
}
