#!/usr/bin/env python3
"""combine.py - session 24's memory-bound table: session 14's combined traces (results/h200/2026-12-01-s14/combine.py)
with every row of the three problems whose kernels changed since (causal conv1d + SiLU in session 15, GroupNorm + SiLU in
session 16, silu_and_mul in session 23) replaced by this session's call-1 refresh: for those three problems only this
session's rows are kept, so a workload the refresh did not reach (its deadline) is left out rather than shown with an
older kernel; the README lists them. Writes one JSONL for tools/mem_table.py.
usage: combine.py OUT.jsonl   (run from the repository root)"""
import glob
import json
import subprocess
import sys

S = 'results/h200/2026-12-04-s24'
FRESH = {'causal_conv1d_silu_d4_mamba2', 'groupnorm32_silu_sd_vae', 'silu_and_mul_i14336'}
base = sys.argv[1] + '.s14'
subprocess.run([sys.executable, 'results/h200/2026-12-01-s14/combine.py', base], check=True)
rows, order = {}, []


def add(t):
    k = (t['definition'], t['workload']['uuid'])
    if k not in rows:
        order.append(k)
    rows[k] = t


kept = 0
for line in open(base, encoding='utf-8'):
    if line.strip():
        t = json.loads(line)
        if t['definition'] not in FRESH:
            add(t)
            kept += 1
files = sorted(glob.glob(S + '/call1/traces/gpu_memtable.2.refresh.*.jsonl'))
for f in files:
    for line in open(f, encoding='utf-8'):
        if line.strip():
            add(json.loads(line))
with open(sys.argv[1], 'w', encoding='utf-8') as o:
    for k in order:
        o.write(json.dumps(rows[k]) + '\n')
print(f"combine: {len(order)} workloads ({kept} from session 14's table, then {len(files)} trace files)", file=sys.stderr)
