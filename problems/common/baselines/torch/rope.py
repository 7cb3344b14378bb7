"""PyTorch baselines of the rotary-embedding problems (docs/bridge.md), with the precision each
definition pins: Llama-3.1 (llama3-scaled inv_freq in float64 rounded to float32, float32 angle,
rotate_half pairing) and FLUX (3-axis, float64 frequencies, interleaved pairs).
"""
import math

import torch

_INV_FREQ = {}


def _llama3_inv_freq(device):
    if device not in _INV_FREQ:
        i = torch.arange(0, 64, dtype=torch.float64)
        f = 500000.0 ** (-(2 * i) / 128)
        wavelen = 2 * math.pi / f
        s = (8192.0 / wavelen - 1) / 3
        inv = torch.where(wavelen > 8192, f / 8, torch.where(wavelen < 2048, f, (1 - s) * f / 8 + s * f))
        _INV_FREQ[device] = inv.to(torch.float32).to(device)
    return _INV_FREQ[device]


def llama31(q, k, positions):
    ang = positions.to(torch.float32)[:, None] * _llama3_inv_freq(q.device)[None, :]
    cos, sin = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]

    def rot(x):
        xf = x.float()
        x1, x2 = xf[..., :64], xf[..., 64:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(torch.bfloat16)

    return rot(q), rot(k)


def flux_3axis(q, k, ids, theta):
    angs = []
    for a, d in enumerate((16, 56, 56)):
        scale = torch.arange(0, d, 2, dtype=torch.float64, device=q.device) / d
        omega = 1.0 / (theta ** scale)
        angs.append(ids[:, a].to(torch.float64)[:, None] * omega[None, :])
    ang = torch.cat(angs, dim=-1)
    cos, sin = torch.cos(ang).float(), torch.sin(ang).float()

    def rot(x):
        xf = x.float().unflatten(-1, (64, 2))
        x0, x1 = xf[..., 0], xf[..., 1]
        return torch.stack([cos * x0 - sin * x1, sin * x0 + cos * x1], dim=-1).flatten(-2).to(torch.bfloat16)

    return rot(q), rot(k)
