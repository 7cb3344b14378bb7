/*
 * oracle.c - qk_rmsnorm_h32_kv4_d128: Qwen3's per-head RMSNorm of q and k (self_attn.q_norm / k_norm,
 * applied before RoPE), as Qwen3RMSNorm computes it:
 *     n = float32(x) * rsqrt(mean(float32(x)^2) + eps);   y = weight * bf16(n)
 * One item per head row of 128: items [0, T*HQ) are q rows (weight q_norm_weight), the next T*HK are k
 * rows (weight k_norm_weight). Sums in double; the intermediate bf16 rounding of n is the model's
 * (hidden_states.to(input_dtype) before the weight multiply); the reference keeps y = w * bf16(n)
 * unrounded (exact in float32: a product of two bf16 values).
 */
#include <math.h>
#include "solforge/oracle.h"

SF_ORACLE_AXES("T", "HQ", "HK", "D");

enum { QKN_Q = 0, QKN_K, QKN_QW, QKN_KW, QKN_EPS };

SF_ORACLE_ITEMS(c)
{
	return c->axis[0] * (c->axis[1] + c->axis[2]);
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t T = c->axis[0], HQ = c->axis[1], D = c->axis[3];
	const int is_q = item < T * HQ;
	const int xin = is_q ? QKN_Q : QKN_K, win = is_q ? QKN_QW : QKN_KW, out = is_q ? 0 : 1;
	const int64_t base = (is_q ? item : item - T * HQ) * D;

	double ss = 0.0;
	for (int64_t d = 0; d < D; d++) {
		double v = sf_in(c, xin, base + d);
		ss += v * v;
	}
	const double inv = 1.0 / sqrt(ss / (double)D + c->scalar[QKN_EPS]);
	for (int64_t d = 0; d < D; d++) {
		double n = sf_round_bf16(sf_in(c, xin, base + d) * inv);
		sf_out_set(c, out, base + d, sf_in(c, win, d) * n);
	}
}
