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


def adaln_modulate(x, shift, scale, eps):
    H = x.shape[-1]
    n = F.layer_norm(x.float(), (H,), eps=eps)
    return (n * (1.0 + scale.float()[:, None, :]) + shift.float()[:, None, :]).to(torch.bfloat16)


def groupnorm_silu(x, gamma, beta, eps):
    # nn.GroupNorm (float32 statistics, float16 output) then nn.SiLU on that float16 tensor
    return F.silu(F.group_norm(x, 32, gamma, beta, eps))
