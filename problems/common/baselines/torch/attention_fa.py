"""FlashAttention-2 varlen baselines of the paged GQA attention problems (docs/bridge.md): what a
PyTorch user with paged KV and no FlashInfer writes. The pages each sequence references are gathered
into one packed [total_kv, kv_heads, head_dim] K and V (one index per kv position), and PyTorch's own
FlashAttention-2 kernel runs over the ragged batch in one call with cumulative sequence lengths:
torch.ops.aten._flash_attention_forward (the kernel behind F.scaled_dot_product_attention's flash
backend; the public SDPA call returns no log-sum-exp, which the problems need). GQA is native (32 q
heads over 8 kv heads), causal masks are aligned to the end of each sequence's keys (FlashAttention
>= 2.1: query j of a sequence with qo_len new tokens sees kv positions <= kv_len - qo_len + j, the
problem's rule), and the natural-log lse comes back from the same kernel, converted to base 2 here.

Host work: none that waits on the GPU: the packed K/V holds every referenced page slot (a size known
from the shapes) and the maximum lengths passed to the kernel are bounds from the shapes. Empty sequences: decode rows of a sequence
with no kv get output 0 and lse -inf (FlashAttention writes +inf there). CUDA only: on another device
the entry raises (the bridge reports the baseline as failed; it is a speed baseline, not a checker).
"""
import math

import torch

LOG2E = 1.0 / math.log(2.0)


def _packed_kv(k_cache, v_cache, kv_indptr, kv_indices, last):
    """Packed K, V [capacity, Hk, D] (sequence b's keys at rows cu[b] .. cu[b+1]-1; the rows past the
    last sequence are filler FlashAttention never reads), int32 cumulative kv lengths cu [B+1], the
    kv lengths, and the capacity (every referenced page slot: an upper bound known from the shapes,
    so nothing is read back to the host)."""
    ps = k_cache.shape[1]
    cap = kv_indices.shape[0] * ps
    B = kv_indptr.shape[0] - 1
    dev = k_cache.device
    ptr = kv_indptr.long()
    pages = ptr[1:] - ptr[:-1]
    kv_len = pages * ps if last is None else torch.where(pages > 0, (pages - 1) * ps + last.long(), 0)
    cu = torch.zeros(B + 1, dtype=torch.long, device=dev)
    cu[1:] = torch.cumsum(kv_len, 0)
    t = torch.arange(cap, device=dev)
    seq = torch.searchsorted(cu[1:].contiguous(), t, right=True).clamp(max=max(B - 1, 0))
    pos = (t - cu[seq]).clamp(min=0)
    page = kv_indices.long()[(ptr[seq] + pos // ps).clamp(max=max(kv_indices.shape[0] - 1, 0))]
    slot = pos % ps
    return k_cache[page, slot], v_cache[page, slot], cu.to(torch.int32), kv_len, max(cap, 1)


def _flash(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale):
    if q.device.type != "cuda":
        raise RuntimeError("the FlashAttention-2 varlen baseline needs a CUDA device")
    r = torch.ops.aten._flash_attention_forward(q, k, v, cu_q, cu_k, max_q, max_k, 0.0, causal, False, scale=scale)
    return r[0], r[1]


def _lse_rows(lse, cu_q, total_q, hq):
    """[total_q, Hq] natural-log lse from FlashAttention's [Hq, total_q] or padded [B, Hq, max_q]."""
    if lse.dim() == 2:
        return lse[:, :total_q].t()
    dev = lse.device
    r = torch.arange(total_q, device=dev)
    b = torch.searchsorted(cu_q.long(), r, right=True) - 1
    return lse[b, :, r - cu_q.long()[b]]


def _prefill(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, last, sm_scale):
    TQ, Hq, D = q.shape
    if TQ == 0:
        return torch.zeros_like(q), torch.full((0, Hq), float("-inf"), dtype=torch.float32, device=q.device)
    K, V, cu_k, _, cap = _packed_kv(k_cache, v_cache, kv_indptr, kv_indices, last)
    cu_q = qo_indptr.to(torch.int32)
    # max_q: total_q bounds every sequence's new tokens (a shape, no host read; the extra query
    # blocks of the grid exit at once)
    out, lse = _flash(q, K, V, cu_q, cu_k, TQ, cap, True, sm_scale)
    return out, _lse_rows(lse, cu_q, TQ, Hq).float() * LOG2E


def _decode(q, k_cache, v_cache, kv_indptr, kv_indices, last, sm_scale):
    B, Hq, D = q.shape
    K, V, cu_k, kv_len, cap = _packed_kv(k_cache, v_cache, kv_indptr, kv_indices, last)
    cu_q = torch.arange(B + 1, dtype=torch.int32, device=q.device)
    out, lse = _flash(q, K, V, cu_q, cu_k, 1, cap, False, sm_scale)
    lse = _lse_rows(lse, cu_q, B, Hq).float() * LOG2E
    empty = kv_len == 0
    return out.masked_fill(empty[:, None, None], 0), lse.masked_fill(empty[:, None], float("-inf"))


def prefill_ps1(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, sm_scale):
    return _prefill(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, None, sm_scale)


def prefill_ps16(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    return _prefill(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, kv_last_page_len, sm_scale)


def decode_ps1(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale):
    return _decode(q, k_cache, v_cache, kv_indptr, kv_indices, None, sm_scale)


def decode_ps16(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    return _decode(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale)
