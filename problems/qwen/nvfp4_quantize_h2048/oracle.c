/*
 * oracle.c - nvfp4_quantize_h2048: NVFP4 quantization of bf16 activations [T, 2048] with a float32
 * global scale (the FlashInfer / TensorRT-LLM fp4_quantize recipe, linear scale layout).
 *
 * One item per 16-element block (row t, block b); gs = float32(global_scale). All steps are float32
 * operations rounded to nearest even, emulated exactly in double (the product of two floats is exact in
 * double, and a double quotient rounded to float is the correctly rounded float quotient):
 *     amax      = max_i |x_i|                                    (exact: bf16 values)
 *     s         = f32(gs * f32(amax * f32(1/6)))                 f32(1/6) = 0x3E2AAAAB
 *     scale     = e4m3(s)  (RNE, saturating at 448)              -> output x_scale[t, b]
 *     out_scale = scale == 0 ? 0 : f32(1 / f32(scale * f32(1/gs)))
 *     q_i       = e2m1(f32(x_i * out_scale))  (RNE, saturating at 6)   -> output x_fp4[t, 16b + i]
 * Reference buffers hold the decoded values (float32), which is what the check compares.
 */
#include "solforge/oracle.h"

SF_ORACLE_AXES("T", "H");

SF_ORACLE_ITEMS(c)
{
	return c->axis[0] * (c->axis[1] / 16);
}

/* float32 round-to-nearest-even of an exactly representable-in-double value */
static SF_HD inline double nvq_f32(double v)
{
	return (double)(float)v;
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t H = c->axis[1];
	const int64_t nb = H / 16;
	const int64_t t = item / nb, b = item % nb;
	const int64_t base = t * H + b * 16;
	const double gs = nvq_f32(c->scalar[1]);
	const double rcp6 = nvq_f32(1.0 / 6.0);

	double amax = 0.0;
	for (int i = 0; i < 16; i++) {
		double v = sf_in(c, 0, base + i);
		v = v < 0 ? -v : v;
		if (v > amax)
			amax = v;
	}
	double s = nvq_f32(gs * nvq_f32(amax * rcp6));
	double scale = sf_round_e4m3(s);
	double inv_gs = nvq_f32(1.0 / gs);
	double out_scale = scale == 0.0 ? 0.0 : nvq_f32(1.0 / nvq_f32(scale * inv_gs));

	sf_out_set(c, 1, t * nb + b, scale);
	for (int i = 0; i < 16; i++)
		sf_out_set(c, 0, base + i, sf_round_e2m1(nvq_f32(sf_in(c, 0, base + i) * out_scale)));
}
