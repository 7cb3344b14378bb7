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


def run_fp8_blockscale_scaled_mm(A, A_scale, B, B_scale):
    """The block-scaled fp8 GEMM through torch's own scaled-matmul API (F.scaled_mm, torch >= 2.10), which
    dispatches the DeepSeek recipe (1x128 activation blocks, 128x128 weight blocks, fp32 scales) to
    cuBLASLt on Hopper. Scale layouts it checks: scale_a (M, K/128) M-major, scale_b (K/128, N/128) for
    mat_b = B^T, i.e. B_scale^T. Raises when this torch build lacks the API or the recipe."""
    if not hasattr(F, "scaled_mm") or not hasattr(F, "ScalingType"):
        raise RuntimeError("torch %s has no torch.nn.functional.scaled_mm" % torch.__version__)
    st = F.ScalingType
    sa = A_scale.t().contiguous().t()
    return F.scaled_mm(A, B.t(), sa, st.BlockWise1x128, B_scale.t(), st.BlockWise128x128,
                       output_dtype=torch.bfloat16)


def run_fp8_blockscale_fp32(A, A_scale, B, B_scale):
    """The block-scaled fp8 GEMM with fp32 products and sums, as the definition states it: per 128-wide
    K block, the e4m3 values (exact in fp32) multiplied in fp32 (TF32 is off in the bridge), each
    block's partial scaled by A_scale[m, kb] * B_scale[n // 128, kb], summed in fp32, rounded to bf16
    once. run_fp8_blockscale (dequantize to bf16, one bf16 GEMM) is faster but rounds every scaled
    input to bf16, which can miss the tolerance; T_b takes the fastest one that passes."""
    M, K = A.shape
    N = B.shape[0]
    KB = K // 128
    a = A.to(torch.float32).view(M, KB, 128).permute(1, 0, 2)          # [KB, M, 128]
    b = B.to(torch.float32).view(N, KB, 128).permute(1, 2, 0)          # [KB, 128, N]
    part = torch.bmm(a, b)                                              # [KB, M, N]
    bs = B_scale.repeat_interleave(128, dim=0)[:N].t().unsqueeze(1)     # [KB, 1, N]
    part = part * A_scale.t().unsqueeze(-1) * bs                       # [KB, M, N]
    return part.sum(dim=0).to(torch.bfloat16)
