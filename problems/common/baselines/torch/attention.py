"""PyTorch baselines of the paged GQA attention problems (docs/bridge.md): gather the pages each
sequence references into a padded [batch, kv_len, heads, dim] tensor, then attention with a mask.
Decode: F.scaled_dot_product_attention (enable_gqa) for the output, the base-2 log-sum-exp from the
same scores in float32. Prefill: masked attention in float32 (the output and the log-sum-exp both
need the full score rows; SDPA does not return the log-sum-exp). FlexAttention with a paged block
mask is not tried here (see docs/bridge.md).
"""
import math

import torch
import torch.nn.functional as F

LOG2E = 1.0 / math.log(2.0)


def _gather(cache, kv_indptr, kv_indices, kv_len, L):
    """[B, L, Hk, D] keys (or values) of every sequence, zero-padded, and the validity mask [B, L]."""
    ps = cache.shape[1]
    p = torch.arange(L, device=cache.device)
    valid = p[None, :] < kv_len[:, None]
    page_pos = (kv_indptr[:-1, None].long() + p[None, :] // ps).clamp(max=max(kv_indices.numel() - 1, 0))
    page = kv_indices.long()[page_pos]
    return cache[page, (p % ps)[None, :].expand_as(page)], valid


def _kv_len(kv_indptr, last, ps):
    pages = (kv_indptr[1:] - kv_indptr[:-1]).long()
    return pages if last is None else (pages - 1) * ps + last.long()


def _decode(q, k_cache, v_cache, kv_indptr, kv_indices, last, sm_scale):
    B, Hq, D = q.shape
    Hk = k_cache.shape[2]
    kv_len = _kv_len(kv_indptr, last, k_cache.shape[1])
    L = int(kv_len.max())
    K, valid = _gather(k_cache, kv_indptr, kv_indices, kv_len, L)
    V, _ = _gather(v_cache, kv_indptr, kv_indices, kv_len, L)
    qh = q.unsqueeze(2)                                    # [B, Hq, 1, D]
    Kh, Vh = K.transpose(1, 2), V.transpose(1, 2)          # [B, Hk, L, D]
    mask = valid[:, None, None, :]
    out = F.scaled_dot_product_attention(qh, Kh, Vh, attn_mask=mask, scale=sm_scale, enable_gqa=True)
    s = torch.einsum("bhgd,bhld->bhgl", q.view(B, Hk, Hq // Hk, D).float(), Kh.float()) * sm_scale
    s = s.masked_fill(~valid[:, None, None, :], float("-inf"))
    lse = torch.logsumexp(s, dim=-1).reshape(B, Hq) * LOG2E
    return out.squeeze(2), lse


def decode_ps1(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale):
    return _decode(q, k_cache, v_cache, kv_indptr, kv_indices, None, sm_scale)


def decode_ps16(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    return _decode(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale)


def _prefill(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, last, sm_scale):
    TQ, Hq, D = q.shape
    Hk = k_cache.shape[2]
    G = Hq // Hk
    B = qo_indptr.numel() - 1
    kv_len = _kv_len(kv_indptr, last, k_cache.shape[1])
    qo_len = (qo_indptr[1:] - qo_indptr[:-1]).long()
    L, Lq = int(kv_len.max()), int(qo_len.max())
    out = torch.zeros(TQ, Hq, D, dtype=q.dtype, device=q.device)
    lse = torch.full((TQ, Hq), float("-inf"), dtype=torch.float32, device=q.device)
    if Lq == 0:
        return out, lse
    K, valid = _gather(k_cache, kv_indptr, kv_indices, kv_len, L)
    V, _ = _gather(v_cache, kv_indptr, kv_indices, kv_len, L)
    j = torch.arange(Lq, device=q.device)
    qvalid = j[None, :] < qo_len[:, None]                                  # [B, Lq]
    rows = (qo_indptr[:-1, None].long() + j[None, :]).clamp(max=max(TQ - 1, 0))
    Q = q[rows]                                                            # [B, Lq, Hq, D]
    p = torch.arange(L, device=q.device)
    allowed = p[None, None, :] <= (kv_len - qo_len)[:, None, None] + j[None, :, None]
    allowed = allowed & valid[:, None, :]                                  # [B, Lq, L]
    Qg = Q.view(B, Lq, Hk, G, D).permute(0, 2, 3, 1, 4).float()           # [B, Hk, G, Lq, D]
    s = torch.einsum("bhgqd,blhd->bhgql", Qg, K.float()) * sm_scale
    s = s.masked_fill(~allowed[:, None, None, :, :], float("-inf"))
    m = torch.logsumexp(s, dim=-1)                                         # [B, Hk, G, Lq]
    pr = torch.exp(s - m.unsqueeze(-1)).nan_to_num(0.0)
    o = torch.einsum("bhgql,blhd->bqhgd", pr, V.float()).reshape(B, Lq, Hq, D)
    sel = qvalid.reshape(-1)
    out[rows.reshape(-1)[sel]] = o.reshape(B * Lq, Hq, D)[sel].to(q.dtype)
    lse[rows.reshape(-1)[sel]] = (m.permute(0, 3, 1, 2).reshape(B * Lq, Hq) * LOG2E)[sel]
    return out, lse


def prefill_ps1(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, sm_scale):
    return _prefill(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, None, sm_scale)


def prefill_ps16(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    return _prefill(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, kv_last_page_len, sm_scale)
