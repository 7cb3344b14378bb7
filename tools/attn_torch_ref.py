#!/usr/bin/env python3
"""attn_torch_ref.py - PyTorch SDPA on contiguous K/V for the shapes of the GQA attention workloads.

usage: attn_torch_ref.py   (needs torch with CUDA; prints one line per shape)

Not a solforge baseline (no paging, no lse): a reference point for tools/gpu_attn.sh's table.
Prefill: one sequence of S tokens, causal, 32 q / 8 kv heads, head_dim 128, bf16, TFLOP/s counting
the causal half (4 * 128 * 32 * S(S+1)/2). Decode: B sequences of one token over L kv positions,
TB/s of the K/V bytes (B * L * 4096). Times: triton.testing.do_bench (L2 flushed), median, ms.
"""
import torch
import torch.nn.functional as F
from triton.testing import do_bench


def sdpa(q, k, v, causal):
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)


def main():
    torch.manual_seed(1)
    dev = "cuda"
    for s in (512, 1000, 4096, 8192, 16384):
        q = torch.randn(1, 32, s, 128, device=dev, dtype=torch.bfloat16)
        k = torch.randn(1, 8, s, 128, device=dev, dtype=torch.bfloat16)
        v = torch.randn(1, 8, s, 128, device=dev, dtype=torch.bfloat16)
        ms = do_bench(lambda: sdpa(q, k, v, True), return_mode="median")
        fl = 4 * 128 * 32 * s * (s + 1) / 2
        print(f"sdpa prefill S={s:6d}: {ms * 1e3:9.2f} us  {fl / ms / 1e9:6.0f} TF/s")
    for b, L in ((1, 4096), (1, 32768), (16, 4096), (64, 4096), (256, 4096), (32, 32768)):
        q = torch.randn(b, 32, 1, 128, device=dev, dtype=torch.bfloat16)
        k = torch.randn(b, 8, L, 128, device=dev, dtype=torch.bfloat16)
        v = torch.randn(b, 8, L, 128, device=dev, dtype=torch.bfloat16)
        ms = do_bench(lambda: sdpa(q, k, v, False), return_mode="median")
        print(f"sdpa decode B={b:3d} L={L:6d}: {ms * 1e3:9.2f} us  {b * L * 4096 / ms / 1e9:6.2f} TB/s")


if __name__ == "__main__":
    main()
