"""FlexAttention baselines of the paged GQA attention problems (docs/bridge.md), declared with
"compile": true: the bridge wraps the entry in torch.compile, which compiles flex_attention into one
fused kernel (eager flex_attention is a slow debugging path) and reports the compile time as
compile_s. flex_attention returns the natural-log log-sum-exp; it is converted to base 2 here.

Prefill: the referenced pages are gathered, in kv_indices order, into one packed [1, kv_heads,
pages * page_size, head_dim] K and V; the new tokens of all sequences stay packed in q's row order
([1, q_heads, total_q, head_dim]). One flex_attention call covers the ragged batch with a
document-style mask: query row i and packed kv slot t match when they belong to the same sequence
and t's position is at most the cached prefix plus i's index among its sequence's new tokens
(kv_len - qo_len + j). Slots past kv_len in a partly filled last page belong to no sequence.
Every shape comes from the input shapes, so the whole entry compiles into one graph without a host
synchronization. Every query row has at least kv position 0, so no row is empty; a sequence without
new tokens has no rows. The prefill call passes kernel_options FORCE_USE_FLEX_ATTENTION: at short packed
query lengths (the cpu-* workloads' 48-64 rows) inductor otherwise lowers flex_attention to its
flex-decoding kernel, which has no valid choice for this GQA block mask (torch 2.11: "NoValidChoicesError:
No choices to select"; every cpu-* prefill workload failed with SOLUTION_ERROR up to session 22). The
forced prefill template is the kernel inductor picks at every longer length anyway (tools/flex_diag.py,
session 23: as-is fails, forced and padded-to-128 both match the float32 reference).

Decode: each sequence's keys and values are gathered into a zero-padded [batch, kv_heads, L,
head_dim] tensor (L = the longest kv_len rounded up to a multiple of 128, a host read), and
flex_attention runs with one query per batch entry and the mask kv position < kv_len[b]; the block
mask skips the padding blocks.

On the cpu backend inductor's flex_attention kernel cannot return the lse (torch 2.15: "torch.compile
on CPU only supports inference and `return_lse` is not supported yet"), so there flex_attention runs
eagerly (torch.compiler.disable) inside the compiled entry: the same masks and layout, checked against
the C oracle on the cpu workloads, but not a fast path; the fast path is CUDA's.
"""
import math

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

LOG2E = 1.0 / math.log(2.0)
PAD = 128  # decode: the padded kv length is a multiple of flex_attention's kv block


def _flex(q, k, v, bm, scale, force_prefill_kernel=False):
    """flex_attention's output and natural-log lse; compiled with the entry on a GPU, eager elsewhere.
    force_prefill_kernel: inductor's prefill (flex_attention) template even for short query lengths, where it
    picks its flex-decoding kernel instead (the prefill baseline: see the module comment)."""
    if q.device.type == "cuda":
        opts = {"FORCE_USE_FLEX_ATTENTION": True} if force_prefill_kernel else None
        return flex_attention(q, k, v, block_mask=bm, scale=scale, enable_gqa=True, return_lse=True,
                              kernel_options=opts)
    return _flex_eager(q, k, v, bm, scale)


@torch.compiler.disable
def _flex_eager(q, k, v, bm, scale):
    """Inductor's CPU flex_attention does not return the lse (torch 2.15): the eager path, which
    computes the same masked attention densely (a correctness path, slow, for the cpu backend)."""
    return flex_attention(q, k, v, block_mask=bm, scale=scale, enable_gqa=True, return_lse=True)


def _kv_len(kv_indptr, last, ps):
    pages = (kv_indptr[1:] - kv_indptr[:-1]).long()
    return pages * ps if last is None else (pages - 1) * ps + last.long()


def _prefill(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, last, sm_scale):
    """Output [total_q, 32, 128] bf16 and the base-2 lse [total_q, 32] of the packed ragged batch."""
    TQ, Hq, D = q.shape
    ps, Hk = k_cache.shape[1], k_cache.shape[2]
    TK = kv_indices.shape[0] * ps
    dev = q.device
    qo_ptr, kv_ptr = qo_indptr.long(), kv_indptr.long()
    pages = kv_indices.long()
    K = k_cache[pages].reshape(TK, Hk, D)
    V = v_cache[pages].reshape(TK, Hk, D)
    kv_len = _kv_len(kv_ptr, last, ps)
    qo_len = qo_ptr[1:] - qo_ptr[:-1]
    # packed kv slot t: its sequence (or -1 past kv_len) and its position in that sequence
    t = torch.arange(TK, device=dev)
    slot = t // ps
    # the sequence of slot / row by counting the sequence ends at or before it (a [n, batch] compare:
    # torch.searchsorted on the slice kv_ptr[1:] fails to lower in inductor, torch 2.11: "SliceView")
    kv_seq = (slot[:, None] >= kv_ptr[None, 1:]).sum(1)
    kv_pos = (slot - kv_ptr[kv_seq]) * ps + t % ps
    kv_seq = torch.where(kv_pos < kv_len[kv_seq], kv_seq, -1)
    # query row i: its sequence and the last kv position it attends to
    i = torch.arange(TQ, device=dev)
    q_seq = (i[:, None] >= qo_ptr[None, 1:]).sum(1)
    q_lim = kv_len[q_seq] - qo_len[q_seq] + (i - qo_ptr[q_seq])

    def causal_paged(b, h, qi, ki):
        return (q_seq[qi] == kv_seq[ki]) & (kv_pos[ki] <= q_lim[qi])

    bm = create_block_mask(causal_paged, None, None, TQ, TK, device=dev)
    out, lse = _flex(q.transpose(0, 1).unsqueeze(0), K.transpose(0, 1).unsqueeze(0),
                     V.transpose(0, 1).unsqueeze(0), bm, sm_scale, force_prefill_kernel=True)
    return out[0].transpose(0, 1).contiguous(), (lse[0].transpose(0, 1) * LOG2E).contiguous()


def prefill_ps1(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, sm_scale):
    return _prefill(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, None, sm_scale)


def prefill_ps16(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    return _prefill(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, kv_last_page_len, sm_scale)


@torch.compiler.disable
def _padded_len(kv_len):
    """The longest kv_len rounded up to a multiple of PAD: a host read, a graph break by design."""
    return -(-int(kv_len.max()) // PAD) * PAD


def _decode(q, k_cache, v_cache, kv_indptr, kv_indices, last, sm_scale):
    """Output [batch, 32, 128] bf16 and the base-2 lse [batch, 32] over padded, masked KV."""
    B, Hq, D = q.shape
    ps = k_cache.shape[1]
    kv_len = _kv_len(kv_indptr, last, ps)
    L = _padded_len(kv_len)
    p = torch.arange(L, device=q.device)
    page_pos = (kv_indptr[:-1, None].long() + p[None, :] // ps).clamp(max=kv_indices.shape[0] - 1)
    page = kv_indices.long()[page_pos]                                  # [B, L]; padding: any page
    off = (p % ps)[None, :].expand_as(page)
    K = k_cache[page, off].transpose(1, 2)                              # [B, Hk, L, D]
    V = v_cache[page, off].transpose(1, 2)

    def within(b, h, qi, ki):
        return ki < kv_len[b]

    bm = create_block_mask(within, B, None, 1, L, device=q.device)
    out, lse = _flex(q.unsqueeze(2), K, V, bm, sm_scale)
    return out.squeeze(2).contiguous(), (lse.squeeze(2) * LOG2E).contiguous()


def decode_ps1(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale):
    return _decode(q, k_cache, v_cache, kv_indptr, kv_indices, None, sm_scale)


def decode_ps16(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    return _decode(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale)
