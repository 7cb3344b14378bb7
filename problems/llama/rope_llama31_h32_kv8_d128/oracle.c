/*
 * Oracle of rope_llama31_h32_kv8_d128: Llama-3.1-8B's rotary position embedding (self_attn
 * rotary_emb + apply_rotary_pos_emb) on q [num_tokens, 32, 128] and k [num_tokens, 8, 128], with the
 * "llama3" frequency scaling of the config (rope_theta 500000, factor 8, low_freq_factor 1,
 * high_freq_factor 4, original_max_position_embeddings 8192) and HF's non-interleaved rotate_half
 * pairing: element i of a head rotates with element i + head_dim/2.
 *
 * The angle is pinned down in float32, as every implementation computes it (HF, vLLM, FlashInfer),
 * so that a correct candidate reproduces it bit for bit:
 *   inv_freq[i] = float32(llama3-scaled theta^(-2i/head_dim)), the scaled frequency computed in
 *                 double and rounded once to float32 (a tie-free rounding for all 64 values: the
 *                 unit tests check the margin);
 *   angle       = float32(float32(position) * inv_freq[i])  (one IEEE float32 multiply).
 * cos and sin of that float32 angle are then evaluated exactly (double here), the rotation
 *   out[i]          = x[i] * cos - x[i + D/2] * sin
 *   out[i + D/2]    = x[i + D/2] * cos + x[i] * sin
 * in double, and the candidate rounds once to bf16.
 *
 * One item per (token, head of q then k, i < head_dim/2): it writes out[i] and out[i + D/2].
 * Inputs: 0 q, 1 k (bf16), 2 positions [num_tokens] int64. Outputs: 0 q_out, 1 k_out.
 * positions is a "custom" input: SF_ORACLE_GEN below draws realistic batches of decode tokens
 * and prefill chunks (runs of consecutive positions) below max_position_embeddings = 131072.
 */
#include <math.h>
#include "solforge/oracle.h"

#define ROPE31_MAX_POSITION 131072 /* Llama-3.1 max_position_embeddings */

SF_ORACLE_AXES("num_tokens", "num_qo_heads", "num_kv_heads", "head_dim");

SF_ORACLE_ITEMS(c)
{
	return c->axis[0] * (c->axis[1] + c->axis[2]) * (c->axis[3] / 2);
}

/* inv_freq[i] of HF's _compute_llama3_parameters, evaluated in double, rounded once to float32. */
static SF_HD float rope31_inv_freq(int64_t i, int64_t head_dim)
{
	const double theta = 500000.0, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0;
	const double old_context_len = 8192.0;
	const double pi = 3.14159265358979323846;
	const double low_freq_wavelen = old_context_len / low_freq_factor;   /* 8192 */
	const double high_freq_wavelen = old_context_len / high_freq_factor; /* 2048 */
	const double inv_freq = 1.0 / pow(theta, (double)(2 * i) / (double)head_dim);
	const double wavelen = 2.0 * pi / inv_freq;
	double f;
	if (wavelen < high_freq_wavelen) {         /* high frequencies: unchanged */
		f = inv_freq;
	} else if (wavelen > low_freq_wavelen) {   /* low frequencies: divided by factor */
		f = inv_freq / factor;
	} else {                                   /* in between: smooth interpolation */
		const double smooth = (old_context_len / wavelen - low_freq_factor) /
				      (high_freq_factor - low_freq_factor);
		f = (1.0 - smooth) * inv_freq / factor + smooth * inv_freq;
	}
	return (float)f;
}

/* float32(float32(pos) * inv_freq): both factors have 24-bit significands, so their double
 * product is exact and rounding it to float32 is the IEEE float32 product. */
static SF_HD double rope31_angle(int64_t pos, float inv_freq)
{
	return sf_round_f32(sf_round_f32((double)pos) * (double)inv_freq);
}

SF_ORACLE_ITEM(c, item)
{
	const int64_t Hq = c->axis[1], Hk = c->axis[2], D = c->axis[3];
	const int64_t half = D / 2;
	const int64_t t = item / ((Hq + Hk) * half);
	const int64_t rem = item % ((Hq + Hk) * half);
	const int64_t h = rem / half, i = rem % half;
	const int64_t pos = sf_load_int(c->in[2].data, (sf_dt)c->in[2].dt, t);
	const double angle = rope31_angle(pos, rope31_inv_freq(i, D));
	const double cs = cos(angle), sn = sin(angle);
	/* q heads first, then k heads */
	const int k = (h < Hq) ? 0 : 1;
	const int64_t base = (h < Hq) ? (t * Hq + h) * D : (t * Hk + (h - Hq)) * D;
	const double x1 = sf_in(c, k, base + i), x2 = sf_in(c, k, base + half + i);
	sf_out_set(c, k, base + i, x1 * cs - x2 * sn);
	sf_out_set(c, k, base + half + i, x2 * cs + x1 * sn);
}

/*
 * positions: a batch as a continuous-batching server forms it (vLLM / SGLang with chunked
 * prefill): a sequence of runs, each either a decode token (probability 1/2; one position) or a
 * prefill chunk of consecutive positions, length uniform in [2, max(2, num_tokens/2)] (clipped to
 * the tokens left and to 131072). Each run starts at a uniform position chosen so that it stays
 * below 131072. Any seed gives num_tokens valid positions in [0, 131072).
 */
SF_ORACLE_GEN(g)
{
	enum { ROPE31_POS = 2 };
	static const uint32_t stream_kind = 0x726f7031u, stream_len = 0x726f7032u, stream_start = 0x726f7033u;
	if (!g->is_custom[ROPE31_POS])
		return 0;
	const sf_otensor *p = &g->c.in[ROPE31_POS];
	if (p->dt != SF_DT_I64 && p->dt != SF_DT_I32) {
		static const char msg[] = "rope_llama31: positions must be an int64 or int32 tensor";
		memcpy(g->err, msg, sizeof msg);
		return -1;
	}
	const int64_t T = p->numel;
	int64_t cap = T / 2 < 2 ? 2 : T / 2;
	if (cap > ROPE31_MAX_POSITION)
		cap = ROPE31_MAX_POSITION;
	int64_t t = 0;
	for (uint64_t run = 0; t < T; run++) {
		const int64_t left = T - t;
		int64_t len = 1;
		if (left > 1 && (sf_rng_u64(g->seed, stream_kind, run) & 1)) {
			const int64_t hi = cap < left ? cap : left;
			len = sf_rng_int(g->seed, stream_len, run, 2, hi + 1);
		}
		const int64_t start = sf_rng_int(g->seed, stream_start, run, 0, ROPE31_MAX_POSITION - len + 1);
		for (int64_t j = 0; j < len; j++)
			sf_store_int(p->data, (sf_dt)p->dt, t + j, start + j);
		t += len;
	}
	return 0;
}
