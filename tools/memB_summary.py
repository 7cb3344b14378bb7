#!/usr/bin/env python3
"""memB_summary.py - the result table of tools/gpu_memB.sh.

Usage: memB_summary.py LOGDIR PROBLEM...  (PROBLEM as family/name). Reads LOGDIR/NAME.fast.jsonl and
NAME.naive.jsonl (solforge eval --json traces), LOGDIR/torch.jsonl (tools/memB_torch_baselines.py) and
LOGDIR/calibration.txt (eval --calibrate's lines; the
per-trace sol_measured_ms is used when present) and prints one row per workload: bytes, T_k, T_sol,
TB/s, percent of the measured copy bandwidth (at 2^28 elements), naive and best torch times, the SOL
score against the torch time (naive.cu's where torch has none), the status and flags; then the
median SOL score.
"""
import json
import os
import re
import sys


def jsonl(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith('{'):
                    try:
                        rows.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return rows


def uuid_of(t):
    w = t.get('workload')
    if isinstance(w, dict):
        return w.get('uuid', '?')
    return t.get('uuid', '?')


def fmt(x, spec):
    return spec % x if x is not None else '-'


def main():
    logs, probs = sys.argv[1], sys.argv[2:]
    copy = None
    try:
        m = re.search(r'copy [0-9.]+ MiB: ([0-9.]+) TB/s', open(os.path.join(logs, 'calibration.txt')).read())
        copy = float(m.group(1)) if m else None
    except OSError:
        pass
    torch = {t.get('uuid'): t for t in jsonl(os.path.join(logs, 'torch.jsonl'))}
    print('copy ceiling (2^28 bf16 copy, read+write): %s' % ('%.2f TB/s' % copy if copy else 'not measured'))
    print('%-36s %-44s %10s %9s %9s %6s %5s %9s %9s %6s %s' % ('problem', 'workload', 'bytes', 'T_k_us', 'T_sol_us',
          'TB/s', '%copy', 'naive_us', 'torch_us', 'SOL', 'status'))
    scores = []
    for p in probs:
        n = os.path.basename(p.rstrip('/'))
        fast = {uuid_of(t): t for t in jsonl(os.path.join(logs, n + '.fast.jsonl'))}
        naive = {uuid_of(t): t for t in jsonl(os.path.join(logs, n + '.naive.jsonl'))}
        if not fast:
            print('%-36s (no traces: see %s.fast.err)' % (n, n))
        for u, t in fast.items():
            ev = t.get('evaluation') or {}
            sf = ev.get('solforge') or t.get('solforge') or {}
            tk = (ev.get('performance') or {}).get('latency_ms')
            tsol, by = sf.get('sol_ms'), sf.get('bytes')
            nv = (((naive.get(u) or {}).get('evaluation') or {}).get('performance') or {}).get('latency_ms')
            tt = (torch.get(u) or {}).get('best_ms')
            tbs = by / (tk * 1e-3) / 1e12 if tk and by else None
            meas = sf.get('sol_measured_ms')
            frac = 100 * meas / tk if meas and tk else (100 * tbs / copy if tbs and copy else None)
            base = tt if tt else nv  # the baseline is torch; naive.cu only when torch is missing
            score = None
            if tk and tsol and base and base > tsol:
                score = 1.0 / (1.0 + (tk - tsol) / (base - tsol))
                scores.append(score)
            flag = ''
            if tt and tk and tk >= tt:
                flag += '  SLOWER than torch'
            if nv and tk and tk >= nv:
                flag += '  slower than naive'
            if not tt and score is not None:
                flag += '  (SOL vs naive)'
            print('%-36s %-44s %10s %9s %9s %6s %5s %9s %9s %6s %s%s' % (
                n[:36], u[:44], fmt(by, '%10.0f'), fmt(tk * 1e3 if tk else None, '%9.2f'),
                fmt(tsol * 1e3 if tsol else None, '%9.2f'), fmt(tbs, '%6.2f'), fmt(frac, '%5.0f'),
                fmt(nv * 1e3 if nv else None, '%9.2f'), fmt(tt * 1e3 if tt else None, '%9.2f'),
                fmt(score, '%6.3f'), ev.get('status', '?'), flag))
    if scores:
        s = sorted(scores)
        print('median SOL score %.3f over %d workloads (baseline: best torch time, else naive.cu)' %
              (s[len(s) // 2], len(s)))


if __name__ == '__main__':
    main()
