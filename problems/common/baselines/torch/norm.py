"""PyTorch baselines of the normalization problems (docs/bridge.md): F.rms_norm, F.layer_norm,
F.group_norm with the rounding steps each definition pins (HF's casts), fused further by torch.compile.
"""
import torch
import torch.nn.functional as F


def rmsnorm(hidden_states, weight, eps):
    # HF LlamaRMSNorm: normalize in float32, cast to bf16, multiply by the weight in bf16
    n = F.rms_norm(hidden_states.float(), (hidden_states.shape[-1],), eps=eps).to(torch.bfloat16)
    return weight * n


def fused_add_rmsnorm(hidden_states, residual, weight, eps):
    r = hidden_states + residual
    n = F.rms_norm(r.float(), (r.shape[-1],), eps=eps).to(torch.bfloat16)
    return weight * n, r


def gemma_rmsnorm(hidden_states, weight, eps):
    n = F.rms_norm(hidden_states.float(), (hidden_states.shape[-1],), eps=eps)
    return (n * (1.0 + weight.float())).to(torch.bfloat16)


def qk_rmsnorm(q, k, q_norm_weight, k_norm_weight, eps):
    D = q.shape[-1]
    qn = F.rms_norm(q.float(), (D,), eps=eps).to(torch.bfloat16)
    kn = F.rms_norm(k.float(), (D,), eps=eps).to(torch.bfloat16)
    return q_norm_weight * qn, k_norm_weight * kn


# The same ops as one fused F.rms_norm call each (the weight folded into the kernel, bf16 in and out):
# what an engineer who does not replicate HF's cast sequence writes. The weight multiplies the fp32
# normalized value before the single rounding to bf16 (HF rounds, then multiplies in bf16), a difference
# within the problems' bf16 tolerance; the evaluator checks it like any baseline.
def rmsnorm_fused(hidden_states, weight, eps):
    return F.rms_norm(hidden_states, (hidden_states.shape[-1],), weight, eps=eps)


def fused_add_rmsnorm_fused(hidden_states, residual, weight, eps):
    r = hidden_states + residual
    return F.rms_norm(r, (r.shape[-1],), weight, eps=eps), r


def gemma_rmsnorm_fused(hidden_states, weight, eps):
    return F.rms_norm(hidden_states, (hidden_states.shape[-1],), 1.0 + weight, eps=eps)


def qk_rmsnorm_fused(q, k, q_norm_weight, k_norm_weight, eps):
    D = q.shape[-1]
    return F.rms_norm(q, (D,), q_norm_weight, eps=eps), F.rms_norm(k, (D,), k_norm_weight, eps=eps)


def adaln_modulate(x, shift, scale, eps):
    H = x.shape[-1]
    n = F.layer_norm(x.float(), (H,), eps=eps)
    return (n * (1.0 + scale.float()[:, None, :]) + shift.float()[:, None, :]).to(torch.bfloat16)


def groupnorm_silu(x, gamma, beta, eps):
    # nn.GroupNorm (float32 statistics, float16 output) then nn.SiLU on that float16 tensor
    return F.silu(F.group_norm(x, 32, gamma, beta, eps))
