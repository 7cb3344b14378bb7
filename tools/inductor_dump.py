"""inductor_dump.py - what torch.compile generates for a baseline entry at given shapes, kept for reading beside our
kernel (the best baseline's code is the field's code: session 23 reads torch.compile's silu_and_mul kernel, which
ties or beats ours at t33 / t64). Compiles problems/common/baselines/torch/MODULE.ENTRY with torch.compile (as the
bridge does: default mode), calls it once on random bf16 tensors of SHAPES (AxB[+CxD...]: one tensor per '+'), and
leaves inductor's generated Triton source, the PTX and the cubins under the cache directories the caller set
(TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR); tools/gpu_inductor_dump.sh collects them with their SASS.
Usage: python3 tools/inductor_dump.py MODULE ENTRY SHAPES
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "problems", "common", "baselines", "torch"))


def main():
    mod, entry, shapes = sys.argv[1], sys.argv[2], sys.argv[3]
    fn = getattr(__import__(mod), entry)
    args = [torch.randn(*[int(d) for d in s.split("x")], device="cuda").bfloat16() for s in shapes.split("+")]
    out = torch.compile(fn)(*args)
    torch.cuda.synchronize()
    want = fn(*args)
    err = (out.float() - want.float()).abs().max().item()
    print(f"inductor_dump: {mod}.{entry} at {shapes}: compiled, max |compiled - eager| {err:.3g}")


if __name__ == "__main__":
    main()
