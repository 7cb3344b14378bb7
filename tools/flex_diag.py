"""flex_diag.py - why the flex_attention prefill baseline fails on the suite's cpu-* workloads (session 22:
SOLUTION_ERROR on every cpu-* prefill shape, the message lost to the old tail clip). Runs the baseline's compiled
entries (problems/common/baselines/torch/attention_flex.py, as the bridge compiles them: torch.compile of the entry)
on batches of the cpu-* workloads' geometry (ps1 cpu-b2-q64, ps16 cpu-b4-q48-kv192-e1) under three variants and
on a larger control (b1-q200, as-is only), each in a fresh dynamo state, and checks every result against attention.py's float32 reference (the tolerance of
tests/bridge/test_attention_flex.py):
  as-is   the module unchanged
  force   flex_attention(..., kernel_options={"FORCE_USE_FLEX_ATTENTION": True}) (inductor's prefill template even
          for short query lengths, where it would otherwise pick its decoding kernel)
  pad128  the packed query rows and kv slots padded to multiples of 128 (padded rows belong to no sequence and are
          dropped; padded slots match no row)
Writes one line per (case, variant) to stdout and the full tracebacks to OUTDIR/flex_diag_tracebacks.txt.
Usage (a GPU machine with torch): python3 tools/flex_diag.py OUTDIR [SEED]
Exit status 0 when the as-is variant passes every case, 1 otherwise (the table says which variant would fix it).
"""
import functools
import os
import sys
import traceback

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "problems", "common", "baselines", "torch"))
import attention as ref  # noqa: E402
import attention_flex as flex  # noqa: E402

SM_SCALE = 0.08838834764831845


def make_batch(gen, ps, qlens, prefixes, spare_pages, dev):
    """A paged batch with the given new-token and cached-prefix lengths, pages shuffled over the cache."""
    kvlens = [q + p for q, p in zip(qlens, prefixes)]
    pages = [-(-kl // ps) for kl in kvlens]
    P = sum(pages)
    NP = P + spare_pages
    kv_indices = torch.randperm(NP, generator=gen)[:P].int()
    kc = torch.randn(NP, ps, 8, 128, generator=gen).bfloat16()
    vc = torch.randn(NP, ps, 8, 128, generator=gen).bfloat16()
    q = torch.randn(sum(qlens), 32, 128, generator=gen).bfloat16()
    qo_indptr = torch.tensor([0] + qlens).cumsum(0).int()
    kv_indptr = torch.tensor([0] + pages).cumsum(0).int()
    last = torch.tensor([kl - (p - 1) * ps if p else 0 for kl, p in zip(kvlens, pages)]).int()
    return [t.to(dev) for t in (q, kc, vc, qo_indptr, kv_indptr, kv_indices, last)]


def cases(gen):
    """(name, ps, qlens, prefixes, spare pages): the cpu-* workloads' geometry (ragged lengths drawn here), then
    a control (b1-q200) where the baseline is known to work."""
    a = int(torch.randint(8, 57, (1,), generator=gen))
    q4 = [12, 0, 20, 16]
    return [("cpu-b2-q64", 1, [a, 64 - a], [0, 0], 32),
            ("cpu-b4-q48-kv192-e1", 16, q4, [40, 30, 50, 24], 8),
            ("b1-q200", 1, [200], [0], 16)]


def pad128_prefill(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, last, sm_scale):
    """attention_flex._prefill with the packed rows and slots padded to multiples of 128 (the variant)."""
    TQ, Hq, D = q.shape
    ps, Hk = k_cache.shape[1], k_cache.shape[2]
    TK = kv_indices.shape[0] * ps
    TQp, TKp = -(-TQ // 128) * 128, -(-TK // 128) * 128
    dev = q.device
    qo_ptr, kv_ptr = qo_indptr.long(), kv_indptr.long()
    pages = kv_indices.long()
    K = torch.zeros(TKp, Hk, D, dtype=k_cache.dtype, device=dev)
    V = torch.zeros(TKp, Hk, D, dtype=v_cache.dtype, device=dev)
    K[:TK] = k_cache[pages].reshape(TK, Hk, D)
    V[:TK] = v_cache[pages].reshape(TK, Hk, D)
    qp = torch.zeros(TQp, Hq, D, dtype=q.dtype, device=dev)
    qp[:TQ] = q
    kv_len = flex._kv_len(kv_ptr, last, ps)
    qo_len = qo_ptr[1:] - qo_ptr[:-1]
    t = torch.arange(TKp, device=dev)
    slot = t // ps
    kv_seq = (slot[:, None] >= kv_ptr[None, 1:]).sum(1)
    kv_seq_c = kv_seq.clamp(max=kv_len.shape[0] - 1)
    kv_pos = (slot - kv_ptr[kv_seq_c]) * ps + t % ps
    kv_seq = torch.where((kv_seq < kv_len.shape[0]) & (kv_pos < kv_len[kv_seq_c]), kv_seq, -1)
    i = torch.arange(TQp, device=dev)
    q_seq = (i[:, None] >= qo_ptr[None, 1:]).sum(1)
    q_seq_c = q_seq.clamp(max=kv_len.shape[0] - 1)
    q_lim = kv_len[q_seq_c] - qo_len[q_seq_c] + (i - qo_ptr[q_seq_c])
    q_seq = torch.where(i < TQ, q_seq, -2)

    def causal_paged(b, h, qi, ki):
        return (q_seq[qi] == kv_seq[ki]) & (kv_pos[ki] <= q_lim[qi])

    bm = flex.create_block_mask(causal_paged, None, None, TQp, TKp, device=dev)
    out, lse = flex._flex(qp.transpose(0, 1).unsqueeze(0), K.transpose(0, 1).unsqueeze(0),
                          V.transpose(0, 1).unsqueeze(0), bm, sm_scale)
    return (out[0].transpose(0, 1)[:TQ].contiguous(), (lse[0].transpose(0, 1)[:TQ] * flex.LOG2E).contiguous())


def check(got, want):
    """(ok, text): output within atol = rtol = 1e-2 and the lse within 1e-3, as test_attention_flex.py."""
    (o, l), (ro, rl) = got, want
    if o.shape != ro.shape or l.shape != rl.shape:
        return False, f"shape {tuple(o.shape)} {tuple(l.shape)}"
    err_o = ((o.float() - ro.float()).abs() - 1e-2 * ro.float().abs()).max().item() if o.numel() else 0.0
    err_l = (l - rl).abs().max().item() if l.numel() else 0.0
    return err_o <= 1e-2 and err_l <= 1e-3, f"output excess {err_o:.3g}, lse err {err_l:.3g}"


def main():
    outdir = sys.argv[1]
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else int.from_bytes(os.urandom(4), "little")
    os.makedirs(outdir, exist_ok=True)
    tb = open(os.path.join(outdir, "flex_diag_tracebacks.txt"), "w")
    print(f"flex_diag: torch {torch.__version__}, seed {seed}")
    gen = torch.Generator().manual_seed(seed)
    orig_fa = flex.flex_attention
    asis_fail = 0
    for name, ps, qlens, prefixes, spare in cases(gen):
        args = make_batch(gen, ps, qlens, prefixes, spare, "cuda")
        q, kc, vc, qo, kvp, idx, last = args
        extra = () if ps == 1 else (last,)
        want = getattr(ref, f"prefill_ps{ps}")(q, kc, vc, qo, kvp, idx, *extra, SM_SCALE)
        for var in (("as-is", "force", "pad128") if name.startswith("cpu-") else ("as-is",)):
            torch._dynamo.reset()
            flex.flex_attention = orig_fa if var != "force" else functools.partial(
                orig_fa, kernel_options={"FORCE_USE_FLEX_ATTENTION": True})
            if var == "pad128":
                fn = torch.compile(lambda *a: pad128_prefill(*a[:6], a[6] if ps == 16 else None, a[-1]))
            else:
                fn = torch.compile(getattr(flex, f"prefill_ps{ps}"))
            try:
                got = fn(q, kc, vc, qo, kvp, idx, *extra, SM_SCALE)
                torch.cuda.synchronize()
                ok, text = check(got, want)
                status = "PASS" if ok else "WRONG"
            except Exception as e:  # noqa: BLE001 - the point is to see it
                ok, status = False, "ERROR"
                first = (str(e).strip().splitlines() or [""])[0]
                text = f"{type(e).__name__}: {first[:300]}"
                tb.write(f"==== {name} ps{ps} {var}\n{traceback.format_exc()}\n")
            if var == "as-is" and not ok:
                asis_fail += 1
            print(f"{name:22s} ps{ps:<3d} TQ {sum(qlens):5d} {var:7s} {status:6s} {text}", flush=True)
    flex.flex_attention = orig_fa
    tb.close()
    print(f"flex_diag: as-is failed {asis_fail} case(s)")
    return 1 if asis_fail else 0


if __name__ == "__main__":
    sys.exit(main())
