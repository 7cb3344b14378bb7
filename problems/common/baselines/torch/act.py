"""PyTorch baselines of the activation problems (docs/bridge.md): F.silu / F.gelu on the fused
gate_up output, in float32 where the definition asks for one rounding, fused by torch.compile.
"""
import torch
import torch.nn.functional as F


def silu_and_mul(x):
    I = x.shape[-1] // 2
    return (F.silu(x[:, :I].float()) * x[:, I:].float()).to(torch.bfloat16)


def geglu_tanh(x):
    I = x.shape[-1] // 2
    g = F.gelu(x[:, :I].float(), approximate="tanh").to(torch.bfloat16)
    return g * x[:, I:]


def causal_conv1d_silu(x, weight, bias):
    C, W = weight.shape
    L = x.shape[-1]
    y = F.conv1d(x.float(), weight.float().unsqueeze(1), bias.float(), padding=W - 1, groups=C)[..., :L]
    return F.silu(y).to(torch.bfloat16)
