"""The FlexAttention baselines of the paged attention problems (problems/common/baselines/torch/
attention_flex.py) against the float32 baselines of attention.py, on random ragged batches: empty
sequences (no new token), sequences with and without a cached prefix, partly filled last pages, pages
shuffled across the cache. Needs the real torch; exits 77 (skip) without it. On a machine without
a GPU flex_attention runs eagerly (inductor's CPU kernel returns no lse), on cuda compiled, as the
bridge runs it. Usage: python3 tests/bridge/test_attention_flex.py [SEEDS] [cpu|cuda]
"""
import os
import sys

try:
    import torch
except ImportError:
    print("test_attention_flex: no torch, skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "problems", "common", "baselines", "torch"))
import attention as ref  # noqa: E402
import attention_flex as flex  # noqa: E402

SM_SCALE = 0.08838834764831845


def batch(gen, ps, dev):
    """A random paged batch: (q_prefill, q_decode, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, last)."""
    B = int(torch.randint(1, 6, (1,), generator=gen))
    qlens, kvlens = [], []
    for b in range(B):
        qo = 0 if (b > 0 and torch.rand(1, generator=gen) < 0.25) else int(torch.randint(1, 90, (1,), generator=gen))
        prefix = 0 if torch.rand(1, generator=gen) < 0.3 else int(torch.randint(1, 200, (1,), generator=gen))
        qlens.append(qo)
        kvlens.append(max(qo + prefix, 1))
    pages = [-(-kl // ps) for kl in kvlens]
    P = sum(pages)
    NP = P + int(torch.randint(0, 9, (1,), generator=gen))
    kv_indices = torch.randperm(NP, generator=gen)[:P].int()
    kc = torch.randn(NP, ps, 8, 128, generator=gen).bfloat16()
    vc = torch.randn(NP, ps, 8, 128, generator=gen).bfloat16()
    qp = torch.randn(sum(qlens), 32, 128, generator=gen).bfloat16()
    qd = torch.randn(B, 32, 128, generator=gen).bfloat16()
    qo_indptr = torch.tensor([0] + qlens).cumsum(0).int()
    kv_indptr = torch.tensor([0] + pages).cumsum(0).int()
    last = torch.tensor([kl - (p - 1) * ps for kl, p in zip(kvlens, pages)]).int()
    return [t.to(dev) for t in (qp, qd, kc, vc, qo_indptr, kv_indptr, kv_indices, last)]


def check(tag, got, want):
    """Output within the workloads' tolerance (atol = rtol = 1e-2), lse within 1e-3; returns failures."""
    (o, l), (ro, rl) = got, want
    bad = 0
    if o.dtype != torch.bfloat16 or l.dtype != torch.float32 or o.shape != ro.shape or l.shape != rl.shape:
        print(f"FAIL {tag}: dtype/shape {o.dtype} {tuple(o.shape)} {l.dtype} {tuple(l.shape)}")
        return 1
    err_o = ((o.float() - ro.float()).abs() - 1e-2 * ro.float().abs()).max().item() if o.numel() else 0.0
    err_l = (l - rl).abs().max().item() if l.numel() else 0.0
    if not err_o <= 1e-2 or not err_l <= 1e-3:
        print(f"FAIL {tag}: output excess {err_o:.4g}, lse err {err_l:.4g}")
        bad = 1
    return bad


def main():
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    dev = sys.argv[2] if len(sys.argv) > 2 else ("cuda" if torch.cuda.is_available() else "cpu")
    fails = 0
    fns = {}
    for name in ("prefill_ps1", "prefill_ps16", "decode_ps1", "decode_ps16"):
        fns[name] = torch.compile(getattr(flex, name))
    for s in range(seeds):
        gen = torch.Generator().manual_seed(1000 + s)
        for ps in (1, 16):
            qp, qd, kc, vc, qo, kvp, idx, last = batch(gen, ps, dev)
            extra = () if ps == 1 else (last,)
            p, d = f"prefill_ps{ps}", f"decode_ps{ps}"
            fails += check(f"seed {s} {p}", fns[p](qp, kc, vc, qo, kvp, idx, *extra, SM_SCALE),
                           getattr(ref, p)(qp, kc, vc, qo, kvp, idx, *extra, SM_SCALE))
            fails += check(f"seed {s} {d}", fns[d](qd, kc, vc, kvp, idx, *extra, SM_SCALE),
                           getattr(ref, d)(qd, kc, vc, kvp, idx, *extra, SM_SCALE))
    print(f"test_attention_flex: {4 * seeds - fails} of {4 * seeds} checks passed ({dev})")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
