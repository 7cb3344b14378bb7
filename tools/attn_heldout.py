#!/usr/bin/env python3
"""attn_heldout.py - held-out batch compositions for the four GQA paged attention problems.

usage: attn_heldout.py OUTDIR

For each of problems/llama/gqa_paged_{prefill_causal,decode}_h32_kv8_d128_ps{1,16} writes
OUTDIR/<name>/ with the problem's definition.json and oracle.c and a workload.jsonl of compositions
the bundled workloads do not cover (single tokens, all-length-1 batches, many tiny ragged sequences,
empty sequences, prefixes much longer than the new tokens, sizes off every tile and page multiple).
`solforge eval OUTDIR/<name> SOLUTION` then checks a solution on them against the oracle. Every axis
set is checked against the definition's constraints here, so a bad composition fails loudly.
"""
import json
import os
import shutil
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SCALE = 0.08838834764831845
TOL = {"max_atol": 0.01, "max_rtol": 0.01}

# (tag, batch, total_q, total_kv, num_empty, ragged): prefill compositions
PREFILL = [
    ("b1-q1", 1, 1, 1, 0, 0),
    ("b1-q1-kv777", 1, 1, 777, 0, 0),
    ("b5-q17-kv17", 5, 17, 17, 0, 1),
    ("b7-q333-kv5000-e3", 7, 333, 5000, 3, 1),
    ("b33-q100-kv2000-e5", 33, 100, 2000, 5, 1),
    ("b3-q2500-kv9001", 3, 2500, 9001, 0, 1),
    ("b2-q100-kv230-e1", 2, 100, 230, 1, 0),
]
# (tag, batch, total_kv, ragged): decode compositions
DECODE = [
    ("b1-kv1", 1, 1, 0),
    ("b5-kv5", 5, 5, 0),
    ("b17-kv1000-ragged", 17, 1000, 1),
    ("b3-kv70001-ragged", 3, 70001, 1),
    ("b200-kv30000-ragged", 200, 30000, 1),
    ("b256-kv256", 256, 256, 0),
]


def pages_for(ps, batch, total_kv):
    """Smallest page count that can hold total_kv tokens in batch sequences of >= 1 page each."""
    if ps == 1:
        return total_kv
    n = max(batch, -(-total_kv // ps))
    if not (ps * n - (ps - 1) * batch <= total_kv <= ps * n):
        raise SystemExit(f"attn_heldout: no page count for batch {batch}, total_kv {total_kv}, ps {ps}")
    return n


def prefill_axes(ps, batch, total_q, total_kv, empty, ragged):
    n_idx = pages_for(ps, batch, total_kv)
    ax = {"batch_size": batch, "total_q": total_q}
    if ps != 1:
        ax["total_kv"] = total_kv
    ax.update({"num_kv_indices": n_idx, "num_pages": n_idx + n_idx // 3 + 1, "num_empty_seqs": empty,
               "ragged": ragged})
    ok = (0 <= empty < batch and total_q >= batch - empty and total_kv >= batch
          and total_q * batch <= total_kv * (batch - empty))
    if not ok:
        raise SystemExit(f"attn_heldout: prefill composition violates the constraints: {ax}")
    return ax


def decode_axes(ps, batch, total_kv, ragged):
    n_idx = pages_for(ps, batch, total_kv)
    ax = {"batch_size": batch}
    if ps != 1:
        ax["total_kv"] = total_kv
    ax.update({"num_kv_indices": n_idx, "num_pages": n_idx + n_idx // 3 + 1, "ragged": ragged})
    if total_kv < batch:
        raise SystemExit(f"attn_heldout: decode composition violates the constraints: {ax}")
    return ax


def write_problem(outdir, name, rows, prefill):
    src = os.path.join(ROOT, "problems", "llama", name)
    dst = os.path.join(outdir, name)
    os.makedirs(dst, exist_ok=True)
    shutil.copy(os.path.join(src, "oracle.c"), os.path.join(dst, "oracle.c"))
    defn = json.load(open(os.path.join(src, "definition.json")))
    # baseline sources are relative to the problem folder: made absolute for the copy
    for b in defn.get("solforge", {}).get("baselines", []):
        b["source"] = os.path.abspath(os.path.join(src, b["source"]))
    with open(os.path.join(dst, "definition.json"), "w") as f:
        json.dump(defn, f, indent=2)
    names = list(defn["inputs"].keys())
    with open(os.path.join(dst, "workload.jsonl"), "w") as f:
        for tag, ax in rows:
            inputs = {}
            for n in names:
                if n in ("q", "k_cache", "v_cache"):
                    inputs[n] = {"type": "random"}
                elif n == "sm_scale":
                    inputs[n] = {"type": "scalar", "value": SCALE}
                else:
                    inputs[n] = {"type": "custom"}
            w = {"uuid": f"{name}-heldout-{tag}", "axes": ax, "inputs": inputs, "correctness": TOL,
                 "solforge": {"note": "held-out composition (tools/attn_heldout.py)"}}
            f.write(json.dumps(w) + "\n")
    return dst


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: attn_heldout.py OUTDIR")
    out = sys.argv[1]
    for ps in (1, 16):
        rows = [(t, prefill_axes(ps, b, q, kv, e, r)) for (t, b, q, kv, e, r) in PREFILL]
        print(write_problem(out, f"gqa_paged_prefill_causal_h32_kv8_d128_ps{ps}", rows, True))
        rows = [(t, decode_axes(ps, b, kv, r)) for (t, b, kv, r) in DECODE]
        print(write_problem(out, f"gqa_paged_decode_h32_kv8_d128_ps{ps}", rows, False))


if __name__ == "__main__":
    main()
