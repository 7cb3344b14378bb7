#!/usr/bin/env python3
"""attn_table.py - the result table of tools/gpu_attn.sh from `solforge eval --json` traces.

usage: attn_table.py TRACES.jsonl...

One row per workload: status, T_k (median), T_sol, the rate (prefill: TFLOP/s of the causal bf16
tensor FLOPs the oracle counted; decode: TB/s of the K/V bytes the page table references, 4096 B per
kv position: 8 kv heads x 128 dims x 2 bytes x K and V) and the SOL score. Last line: pass count.
Exit status 1 when some workload did not pass.
"""
import json
import sys


def rate(tr):
    perf = tr["evaluation"].get("performance")
    if not perf or not perf.get("latency_ms"):
        return "-"
    t = perf["latency_ms"] * 1e-3
    name = tr["definition"]
    ax = tr["workload"]["axes"]
    if "decode" in name:
        kv = ax.get("total_kv", ax.get("num_kv_indices", 0))
        return f"{kv * 4096 / t / 1e12:.2f} TB/s"
    fl = tr["evaluation"].get("solforge", tr.get("solforge", {})).get("flops", {}).get("bf16_tensor")
    if fl is None:
        return "-"
    return f"{fl / t / 1e12:.0f} TF/s"


def main():
    n = ok = 0
    print(f"{'workload':58s} {'status':22s} {'T_k':>11s} {'T_sol':>11s} {'rate':>12s} {'SOL':>6s}")
    for path in sys.argv[1:]:
        try:
            lines = open(path).read().splitlines()
        except OSError as e:
            print(f"{path}: {e}")
            n += 1
            continue
        if not any(line.strip().startswith("{") for line in lines):
            err = path[:-len(".jsonl")] + ".err" if path.endswith(".jsonl") else ""
            why = ""
            if err:
                try:
                    why = [x for x in open(err).read().splitlines() if x.strip()][-1]
                except (OSError, IndexError):
                    pass
            print(f"{path}: no traces ({why or 'no log'})")
            n += 1
            continue
        for line in lines:
            line = line.strip()
            if not line.startswith("{"):
                continue
            tr = json.loads(line)
            ev = tr["evaluation"]
            sf = ev.get("solforge", tr.get("solforge", {}))
            perf = ev.get("performance") or {}
            tk = f"{perf['latency_ms'] * 1e3:.2f} us" if perf.get("latency_ms") else "-"
            ts = f"{sf['sol_ms'] * 1e3:.2f} us" if sf.get("sol_ms") else "-"
            sc = f"{sf['sol_score']:.3f}" if sf.get("sol_score") is not None else "-"
            uuid = tr["workload"]["uuid"].replace("gqa_paged_", "").replace("_h32_kv8_d128", "")
            n += 1
            ok += ev["status"] in ("PASSED", "SKIPPED")
            print(f"{uuid:58.58s} {ev['status']:22s} {tk:>11s} {ts:>11s} {rate(tr):>12s} {sc:>6s}")
            if ev["status"] != "PASSED" and ev.get("log"):
                print("    " + ev["log"].splitlines()[0][:200])
    print(f"{ok} of {n} workloads passed")
    return 0 if ok == n else 1


if __name__ == "__main__":
    sys.exit(main())
