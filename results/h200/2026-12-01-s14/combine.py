#!/usr/bin/env python3
"""combine.py - session 14's memory-bound table: session 13's combined traces (results/h200/2026-12-01-s13/combine.py),
then this session's traces on top (call 1: GroupNorm 1024^2, DeepSeek t32768, flux RoPE b4-txt512, silu held-out t12345,
conv1d held-out with the first flat kernel; call 4: conv1d with this session's final defaults), the latest run of a
workload winning. The conv1d rows that no run of this session reached against the baselines (b1-l8192, b2-l8192,
b8-l8192, held-out b7-l7777: the knob runs time them beside the copy, README) are left out rather than shown with
session 13's kernel. Writes one JSONL for tools/mem_table.py.
usage: combine.py OUT.jsonl   (run from the repository root)"""
import glob
import json
import subprocess
import sys

S = 'results/h200/2026-12-01-s14'
base = sys.argv[1] + '.s13'
subprocess.run([sys.executable, 'results/h200/2026-12-01-s13/combine.py', base], check=True)
rows, order = {}, []


def add(t):
    k = (t['definition'], t['workload']['uuid'])
    if k not in rows:
        order.append(k)
    rows[k] = t


for line in open(base, encoding='utf-8'):
    if line.strip():
        t = json.loads(line)
        if t['definition'] != 'causal_conv1d_silu_d4_mamba2':
            add(t)
files = sorted(glob.glob(S + '/call1/traces/rest.*.jsonl')) + sorted(glob.glob(S + '/call4/traces/conv.*.jsonl'))
for f in files:
    for line in open(f, encoding='utf-8'):
        if line.strip():
            add(json.loads(line))
with open(sys.argv[1], 'w', encoding='utf-8') as o:
    for k in order:
        o.write(json.dumps(rows[k]) + '\n')
print(f"combine: {len(order)} workloads (session 13's without conv1d, then {len(files)} trace files)", file=sys.stderr)
