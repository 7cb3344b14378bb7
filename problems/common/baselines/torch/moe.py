"""PyTorch baselines of the MoE and NVFP4 problems (docs/bridge.md): softmax / sigmoid routing with
stable sorts (the definitions' tie rule: lower expert index first), and NVFP4 quantization by the
definitions' float32 recipe with torch ops (torch has an e4m3 cast but no e2m1 arithmetic cast, so
e2m1 rounding is written with comparisons, round-to-nearest-even and saturating at 6).
"""
import torch
import torch.nn.functional as F

_E2M1 = {}


def _e2m1_lut(device):
    if device not in _E2M1:
        m = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
        _E2M1[device] = torch.tensor(m + [-v for v in m], dtype=torch.float32, device=device)
    return _E2M1[device]


def router_softmax_topk(logits):
    p = torch.softmax(logits.float(), dim=-1)
    w, ids = torch.sort(p, dim=-1, descending=True, stable=True)
    w, ids = w[:, :8], ids[:, :8]
    return w / w.sum(dim=-1, keepdim=True), ids.to(torch.int32)


def grouped_topk(logits, bias, routed_scaling_factor):
    T, E = logits.shape
    s = torch.sigmoid(logits.float())
    choice = s + bias.float()
    g = choice.view(T, 8, E // 8)
    gscore = g.topk(2, dim=-1).values.sum(dim=-1)
    _, gidx = torch.sort(gscore, dim=-1, descending=True, stable=True)
    keep = torch.zeros(T, 8, dtype=torch.bool, device=logits.device)
    keep.scatter_(1, gidx[:, :4], True)
    masked = choice.masked_fill(~keep.repeat_interleave(E // 8, dim=1), float("-inf"))
    _, ids = torch.sort(masked, dim=-1, descending=True, stable=True)
    ids = ids[:, :8]
    w = s.gather(1, ids)
    w = w / w.sum(dim=-1, keepdim=True) * routed_scaling_factor
    return w, ids.to(torch.int32)


def _e2m1_codes(v):
    """Codes (sign in bit 3) of float32 v rounded to e2m1: nearest, ties to even, saturating at 6."""
    a = v.abs()
    code = ((a > 0.25).to(torch.uint8) + (a >= 0.75) + (a > 1.25) + (a >= 1.75) + (a > 2.5) + (a >= 3.5)
            + (a > 5.0)).to(torch.uint8)
    return code | (torch.signbit(v).to(torch.uint8) << 3)


def _pack(codes):
    c = codes.reshape(*codes.shape[:-1], codes.shape[-1] // 2, 2)
    return c[..., 0] | (c[..., 1] << 4)


def _quantize16(x, gs):
    """NVFP4 recipe of nvfp4_quantize_h2048 on float32 x [..., n*16]: (packed codes, e4m3 scales)."""
    shp = x.shape
    xb = x.reshape(*shp[:-1], shp[-1] // 16, 16)
    gs = torch.as_tensor(gs, dtype=torch.float32, device=x.device)
    amax = xb.abs().amax(dim=-1)
    s = gs * (amax * torch.tensor(1.0 / 6.0, dtype=torch.float32, device=x.device))
    scale = s.clamp(max=448.0).to(torch.float8_e4m3fn)
    sf = scale.to(torch.float32)
    inv_gs = torch.tensor(1.0, dtype=torch.float32, device=x.device) / gs
    out_scale = torch.where(sf == 0, torch.zeros_like(sf), 1.0 / (sf * inv_gs))
    q = _e2m1_codes(xb * out_scale.unsqueeze(-1)).reshape(shp)
    return _pack(q), scale


def nvfp4_quantize(x, global_scale):
    return _quantize16(x.float(), global_scale)


def _dequant_fp4(packed, scale, n):
    b = packed.view(torch.uint8)
    codes = torch.stack([b & 0xF, b >> 4], dim=-1).reshape(*b.shape[:-1], n)
    v = _e2m1_lut(b.device)[codes.long()]
    return (v.view(*v.shape[:-1], n // 16, 16) * scale.float().unsqueeze(-1)).view(*v.shape[:-1], n)


def moe_nvfp4_gated(x_fp4, x_scale, x_global_scale, topk_ids, w_fp4, w_scale, w_global_scale, out_global_scale):
    T, K = topk_ids.shape
    H = x_scale.shape[-1] * 16
    I2 = w_scale.shape[1]
    I = I2 // 2
    xd = _dequant_fp4(x_fp4, x_scale, H) / torch.tensor(x_global_scale, dtype=torch.float32, device=x_scale.device)
    flat = topk_ids.reshape(-1).long()
    order = torch.argsort(flat, stable=True)
    experts, counts = torch.unique_consecutive(flat[order], return_counts=True)
    h = torch.empty(T * K, I, dtype=torch.float32, device=x_scale.device)
    start = 0
    for e, c in zip(experts.tolist(), counts.tolist()):
        rows = order[start:start + c]
        start += c
        wd = _dequant_fp4(w_fp4[e], w_scale[e], H) / w_global_scale[e]
        gu = xd[rows // K] @ wd.T
        h[rows] = F.silu(gu[:, :I]) * gu[:, I:]
    q, s = _quantize16(h, out_global_scale)
    return q.view(T, K, I // 2), s.view(T, K, I // 16)
