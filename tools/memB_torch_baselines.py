#!/usr/bin/env python3
"""memB_torch_baselines.py - torch eager times of issue 7 part B's ops, for tools/gpu_memB.sh.

Usage: memB_torch_baselines.py PROBLEM...  (family/name under problems/). For every workload of each
problem prints one JSON line {"uuid", "ref_ms", "practical_ms", "best_ms"}: ref_ms times the
definition's own torch reference (exec'd from definition.json), practical_ms a hand-written eager form
a model would use (F.silu, F.gelu, F.conv1d, HF's bf16 rotate_half, softmax + topk) where one exists,
best_ms the smallest of these. Timed with triton.testing.do_bench (L2 flushed between calls,
median). TORCH_COMPILE=1 adds compile_ms (torch.compile of the reference; slow to build).
Inputs are random draws of the definition's shapes; these are timings, not correctness checks.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
import triton.testing

DEV = 'cuda'


def bench(fn):
    fn()
    torch.cuda.synchronize()
    return triton.testing.do_bench(fn, warmup=5, rep=25, return_mode='median')


def llama_inv_freq():
    e = torch.arange(0, 128, 2, dtype=torch.float64) / 128
    f = 1.0 / (500000.0 ** e)
    wl = 2 * math.pi / f
    scaled = torch.where(wl > 8192, f / 8, f)
    s = (8192 / wl - 1) / 3
    sm = (1 - s) * scaled / 8 + s * scaled
    med = ~(wl < 2048) & ~(wl > 8192)
    return torch.where(med, sm, scaled).to(torch.float32).to(DEV)


def make(name, ax):
    """(inputs for the reference run(), practical eager fn or None)"""
    bf, f32 = torch.bfloat16, torch.float32
    if name.startswith('rope_llama31'):
        T = ax['num_tokens']
        q = torch.randn(T, 32, 128, device=DEV, dtype=bf)
        k = torch.randn(T, 8, 128, device=DEV, dtype=bf)
        pos = torch.randint(0, 131072, (T,), device=DEV, dtype=torch.int64)
        inv = llama_inv_freq()

        def hf():
            fr = pos.float()[:, None] * inv[None]
            emb = torch.cat((fr, fr), -1)
            c, s = emb.cos().to(bf)[:, None], emb.sin().to(bf)[:, None]

            def rot(x):
                return x * c + torch.cat((-x[..., 64:], x[..., :64]), -1) * s
            return rot(q), rot(k)
        return dict(q=q, k=k, positions=pos), hf
    if name.startswith('flux_rope'):
        B, txt, h, w = ax['batch_size'], ax['txt_len'], ax['img_h'], ax['img_w']
        S = txt + h * w
        q = torch.randn(B, 24, S, 128, device=DEV, dtype=bf)
        k = torch.randn(B, 24, S, 128, device=DEV, dtype=bf)
        ids = torch.zeros(S, 3, device=DEV, dtype=f32)
        r = torch.arange(h * w, device=DEV)
        ids[txt:, 1] = (r // w).float()
        ids[txt:, 2] = (r % w).float()
        return dict(q=q, k=k, ids=ids, theta=10000.0), None
    if name.startswith('silu_and_mul'):
        T, I = ax['num_tokens'], 14336
        x = torch.randn(T, 2 * I, device=DEV, dtype=bf)
        return dict(x=x), lambda: F.silu(x[:, :I]) * x[:, I:]
    if name.startswith('geglu_tanh'):
        T, I = ax['num_tokens'], 21504
        x = torch.randn(T, 2 * I, device=DEV, dtype=bf)
        return dict(x=x), lambda: F.gelu(x[:, :I], approximate='tanh') * x[:, I:]
    if name.startswith('moe_router_softmax'):
        lg = torch.randn(ax['T'], 128, device=DEV, dtype=bf)

        def qw():
            p = torch.softmax(lg, dim=1, dtype=torch.float)
            w, i = torch.topk(p, 8, dim=-1)
            return w / w.sum(dim=-1, keepdim=True), i.to(torch.int32)
        return dict(logits=lg), qw
    if name.startswith('moe_grouped_topk'):
        lg = torch.randn(ax['T'], 256, device=DEV, dtype=f32)
        b = 0.05 * torch.randn(256, device=DEV, dtype=f32)
        return dict(logits=lg, bias=b, routed_scaling_factor=2.5), None
    if name.startswith('nvfp4_quantize'):
        x = torch.randn(ax['T'], 2048, device=DEV, dtype=bf)
        return dict(x=x, global_scale=768.0), None
    if name.startswith('causal_conv1d'):
        B, L, D = ax['batch_size'], ax['seq_len'], 5376
        x = torch.randn(B, D, L, device=DEV, dtype=bf)
        wt = torch.randn(D, 4, device=DEV, dtype=bf) * 0.5
        bias = torch.randn(D, device=DEV, dtype=bf) * 0.1

        def conv():
            return F.silu(F.conv1d(x, wt[:, None, :], bias, padding=3, groups=D)[..., :L])
        return dict(x=x, weight=wt, bias=bias), conv
    raise ValueError('unknown problem ' + name)


def main():
    compile_too = os.environ.get('TORCH_COMPILE') == '1'
    for p in sys.argv[1:]:
        d = os.path.join('problems', p)
        defn = json.load(open(os.path.join(d, 'definition.json')))
        ns = {}
        exec(compile(defn['reference'], p + '/reference', 'exec'), ns)
        ref = ns['run']
        cref = torch.compile(ref) if compile_too else None
        for line in open(os.path.join(d, 'workload.jsonl')):
            w = json.loads(line)
            row = {'uuid': w['uuid']}
            try:
                inputs, practical = make(defn['name'], w['axes'])
                with torch.no_grad():
                    row['ref_ms'] = bench(lambda: ref(**inputs))
                    if practical:
                        row['practical_ms'] = bench(practical)
                    if cref:
                        row['compile_ms'] = bench(lambda: cref(**inputs))
                row['best_ms'] = min(v for k, v in row.items() if k.endswith('_ms'))
                del inputs, practical
            except Exception as e:  # one failing shape must not hide the others
                row['error'] = repr(e)[:300]
            print(json.dumps(row), flush=True)
            torch.cuda.empty_cache()


if __name__ == '__main__':
    main()
