"""PyTorch baselines of the GEMM problems (docs/bridge.md): what a user would call.

bf16: C = A @ B^T is nn.Linear without bias, F.linear (cuBLAS / cuBLASLt under torch).
fp8 block-scaled (DeepSeek-V3 recipe): dequantize with the block scales into bf16, then F.linear;
the scaled-mm path of torch needs per-tensor or rowwise scales, not this 1x128 / 128x128 recipe.
"""
import torch
import torch.nn.functional as F


def run(A, B):
    return F.linear(A, B)


def run_fp8_blockscale(A, A_scale, B, B_scale):
    M, K = A.shape
    N = B.shape[0]
    KB = K // 128
    a = (A.to(torch.float32).view(M, KB, 128) * A_scale.unsqueeze(-1)).view(M, K).to(torch.bfloat16)
    bs = B_scale.repeat_interleave(128, dim=0)[:N]
    b = (B.to(torch.float32).view(N, KB, 128) * bs.unsqueeze(-1)).view(N, K).to(torch.bfloat16)
    return F.linear(a, b)
