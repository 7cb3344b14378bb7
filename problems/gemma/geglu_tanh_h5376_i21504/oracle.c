/*
 * Oracle of geglu_tanh_h5376_i21504: Gemma-3 MLP activation y = gelu_tanh(gate) * up.
 *
 * Input (definition order): 0 x [T, 2*I] bfloat16, gate = x[t, 0:I], up = x[t, I:2I].
 * Output: 0 y [T, I].
 * gelu_tanh(g) = 0.5 * g * (1 + tanh(sqrt(2/pi) * (g + 0.044715 * g^3))) is evaluated in double and
 * rounded to bfloat16, as the model's activation tensor is (HF act_fn(gate_proj(x)) * up_proj(x),
 * vLLM GeluAndMul); the product with up is then exact in double (two 8-bit significands) and is
 * kept in the float32 reference buffer; the candidate's final bf16 rounding is what the tolerance
 * allows for. One item per output element.
 */
#include <math.h>
#include "solforge/oracle.h"

SF_ORACLE_AXES("num_tokens", "intermediate_size");

/* sqrt(2 / pi) */
#define GEGLU_SQRT_2_OVER_PI 0.79788456080286535588

static SF_HD inline double geglu_gelu_tanh(double g)
{
	const double inner = GEGLU_SQRT_2_OVER_PI * (g + 0.044715 * g * g * g);
	return 0.5 * g * (1.0 + tanh(inner));
}

SF_ORACLE_ITEMS(c)
{
	return c->axis[0] * c->axis[1]; /* T * I outputs */
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t I = c->axis[1];
	const int64_t t = item / I, j = item % I;
	const double gate = sf_in(c, 0, t * 2 * I + j);
	const double up = sf_in(c, 0, t * 2 * I + I + j);
	const double act = sf_round_bf16(geglu_gelu_tanh(gate));
	sf_out_set(c, 0, item, act * up);
}
