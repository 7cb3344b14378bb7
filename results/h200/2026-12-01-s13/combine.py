#!/usr/bin/env python3
"""combine.py - session 13's memory-bound table from its traces: every trace of calls 1, 2, 4 and 5, the latest run of a
workload winning; GroupNorm and the DeepSeek router from call 4 (their defaults changed after call 1), except
GroupNorm's large groups (512x512 and up: the split path, unchanged), which only call 1 reached; silu / geglu's
bundled workloads from session 12 call 1 (their code unchanged since). Writes one JSONL for tools/mem_table.py.
usage: combine.py OUT.jsonl   (run from the repository root)"""
import glob
import json
import sys

S = 'results/h200/2026-12-01-s13'
files = sorted(glob.glob(S + '/call1/traces/allA.*.jsonl') + glob.glob(S + '/call1/traces/allB.*.jsonl')
               + glob.glob(S + '/call2/traces/rest*.jsonl') + glob.glob(S + '/call2/traces/actheld.*.jsonl')
               + glob.glob(S + '/call4/traces/final.*.jsonl') + glob.glob(S + '/call5/traces/rest4k.*.jsonl'))
files += ['results/h200/2026-11-30-s12/call1/traces/act.silu_and_mul_i14336.jsonl',
          'results/h200/2026-11-30-s12/call1/traces/act.geglu_tanh_h5376_i21504.jsonl']
rows, order = {}, []
for f in files:
    late = '/call4/' in f
    for line in open(f, encoding='utf-8'):
        if not line.strip():
            continue
        t = json.loads(line)
        d, u = t['definition'], t['workload']['uuid']
        if d in ('groupnorm32_silu_sd_vae', 'moe_grouped_topk_routing_e256_g8_k8') and not late:
            if d.startswith('moe') or not any(s in u for s in ('512x512', '1024x1024', '720x1280')):
                continue
        if (d, u) not in rows:
            order.append((d, u))
        rows[(d, u)] = t
with open(sys.argv[1], 'w', encoding='utf-8') as o:
    for k in order:
        o.write(json.dumps(rows[k]) + '\n')
print(f"combine: {len(order)} workloads from {len(files)} trace files", file=sys.stderr)
