#!/usr/bin/env python3
"""mem_table.py - issue 7's table from `solforge eval --copy-ceiling --json` traces (tools/gpu_memtable.sh);
with --read-ceiling traces (READ=1) also the same-byte read and T_k's fraction of its speed.

usage: mem_table.py TRACES.jsonl...

One row per trace line: problem, workload, status, T_k (µs), the same-byte copy (µs), T_k's fraction
of the copy's speed, the rate (TB/s of the SOL bytes; TFLOP/s of the bf16 tensor FLOPs where the
workload is compute-bound, e.g. attention prefill), the best correct baseline of the same run (name, µs, and how many seconds
its torch.compile took where it was compiled), T_b / T_k, the SOL score. Then per problem: workloads,
how many PASSED, the fraction of copy min / median, the speedup over the best baseline min / geomean,
the SOL score min / median; and the overall lines the issue asks about: median SOL score over the
problems (the median of the per-problem medians) and over all workloads, and the workloads at
>= 90% of copy and faster than their best baseline. A trace without a copy time or a baseline shows
"-" there (an eval with --no-torch has no SOL score); one whose baselines all ran and failed says so in the
baseline column ("(none: N failed (STATUS))") and is listed on a line of its own below the counts. Exit status 1 when a trace did not pass.
"""
import json
import math
import statistics
import sys


def fmt(x, spec):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def rows_of(paths):
    rows = []
    for path in paths:
        try:
            lines = open(path, encoding="utf-8").read().splitlines()
        except OSError as e:
            print(f"mem_table: cannot read {path}: {e}", file=sys.stderr)
            continue
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                t = json.loads(line)
            except json.JSONDecodeError:
                print(f"mem_table: {path}:{n}: not a JSON trace (cut?)", file=sys.stderr)
                continue
            ev = t.get("evaluation", {})
            sf = ev.get("solforge", {})
            perf = ev.get("performance") or {}
            tk = perf.get("latency_ms")
            best = None
            tried = sf.get("baselines", [])
            for b in tried:
                if b.get("status") == "PASSED" and b.get("median_ms") and (best is None or b["median_ms"] < best["median_ms"]):
                    best = b
            # every baseline ran and none passed (e.g. its bridge process killed): said in the table, not a bare "-"
            failed = sorted({b.get("status", "?") for b in tried}) if tried and best is None else None
            rows.append({
                "problem": t.get("definition", "?"),
                "heldout": "heldout_" in path.rsplit("/", 1)[-1],
                "workload": t.get("workload", {}).get("uuid", "?"),
                "m": t.get("workload", {}).get("axes", {}).get("M"),  # the GEMMs' axis (tools/gemm_classes.py)
                "status": ev.get("status", "?"),
                "tk_us": tk * 1e3 if tk else None,
                "copy_us": sf["copy_ms"] * 1e3 if sf.get("copy_ms") else None,
                "frac": sf.get("bw_fraction_of_copy"),
                "read_us": sf["read_ms"] * 1e3 if sf.get("read_ms") else None,
                # a read ceiling of other than ~the workload's bytes (whole 16386-byte rows at a few KB) is no
                # same-byte comparison: left out of the fraction
                "rfrac": sf.get("bw_fraction_of_read") if sf.get("read_bytes") and sf.get("bytes") and
                abs(sf["read_bytes"] / sf["bytes"] - 1) <= 0.05 else None,
                "rate": rate_of(sf, tk),
                "base": best["name"] if best else None,
                "base_failed": f"none: {len(tried)} failed ({', '.join(failed)})" if failed else None,
                "base_us": best["median_ms"] * 1e3 if best else None,
                "compile_s": best.get("compile_s") if best else None,
                "base_method": best.get("timing_method") if best else None,
                "speedup": (best["median_ms"] / tk) if best and tk else None,
                "sol": sf.get("sol_score"),
            })
    return rows


def rate_of(sf, tk_ms):
    """TFLOP/s of the tensor FLOPs for a compute-bound trace, else TB/s of the SOL bytes ('-')."""
    if not tk_ms:
        return "-"
    fl = sf.get("flops", {}).get("bf16_tensor")
    if fl and sf.get("sol_bound_by") not in (None, "memory"):
        return f"{fl / (tk_ms * 1e-3) / 1e12:.0f} TF/s"
    if sf.get("bytes"):
        return f"{sf['bytes'] / (tk_ms * 1e-3) / 1e12:.2f} TB/s"
    return "-"


def med(xs):
    xs = [x for x in xs if x is not None and not math.isnan(x)]
    return statistics.median(xs) if xs else None


def gmean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    rows = rows_of(argv[1:])
    if not rows:
        print("mem_table: no traces")
        return 1
    reads = any(r["read_us"] is not None for r in rows)  # --read-ceiling: two more columns
    print("| problem | workload | status | T_k us | copy us | of copy | " + ("read us | of read | " if reads else "") +
          "rate | best baseline | T_b us | T_b/T_k | SOL |")
    print("|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if reads else ""))
    for r in rows:
        base = r["base"] or (f"({r['base_failed']})" if r["base_failed"] else "-")
        if r["compile_s"]:
            base += f" ({r['compile_s']:.1f} s compile)"
        if r["base_method"] and r["base_method"] != "cupti":
            base += f" [{r['base_method']}]"
        wl = r["workload"] + (" (held-out)" if r["heldout"] else "")
        print(f"| {r['problem']} | {wl} | {r['status']} | {fmt(r['tk_us'], '.2f')} | {fmt(r['copy_us'], '.2f')} | "
              f"{fmt(r['frac'], '.2f')} | " + (f"{fmt(r['read_us'], '.2f')} | {fmt(r['rfrac'], '.2f')} | " if reads else "") +
              f"{r['rate']} | {base} | {fmt(r['base_us'], '.2f')} | "
              f"{fmt(r['speedup'], '.2f')} | {fmt(r['sol'], '.3f')} |")
    print()
    print("| problem | workloads | PASSED | of copy min / median | T_b/T_k min / geomean | SOL min / median |")
    print("|---|---|---|---|---|---|")
    problems = sorted({r["problem"] for r in rows})
    medians = []
    for p in problems:
        rs = [r for r in rows if r["problem"] == p]
        fr = [r["frac"] for r in rs if r["frac"] is not None]
        sp = [r["speedup"] for r in rs if r["speedup"] is not None]
        so = [r["sol"] for r in rs if r["sol"] is not None]
        m = med(so)
        if m is not None:
            medians.append(m)
        print(f"| {p} | {len(rs)} | {sum(r['status'] == 'PASSED' for r in rs)} | "
              f"{fmt(min(fr) if fr else None, '.2f')} / {fmt(med(fr), '.2f')} | "
              f"{fmt(min(sp) if sp else None, '.2f')} / {fmt(gmean(sp), '.2f')} | "
              f"{fmt(min(so) if so else None, '.3f')} / {fmt(m, '.3f')} |")
    print()
    npass = sum(r["status"] == "PASSED" for r in rows)
    at90 = sum(1 for r in rows if r["frac"] is not None and r["frac"] >= 0.9)
    nfrac = sum(1 for r in rows if r["frac"] is not None)
    faster = sum(1 for r in rows if r["speedup"] is not None and r["speedup"] > 1.0)
    nsp = sum(1 for r in rows if r["speedup"] is not None)
    print(f"workloads: {len(rows)}, PASSED {npass}; >= 0.90 of copy: {at90} of {nfrac}; "
          f"faster than the best baseline: {faster} of {nsp}")
    nfail = sum(1 for r in rows if r["base_failed"])
    if nfail:
        print(f"workloads whose every baseline failed (no comparison): {nfail}: " +
              ", ".join(r["workload"] for r in rows if r["base_failed"]))
    if reads:
        rf = [r["rfrac"] for r in rows if r["rfrac"] is not None]
        print(f">= 0.90 of the same-byte read: {sum(1 for x in rf if x >= 0.9)} of {len(rf)}; of read min / median "
              f"{fmt(min(rf) if rf else None, '.2f')} / {fmt(med(rf), '.2f')}")
    print(f"median SOL score: over the {len(medians)} problems' medians {fmt(med(medians), '.3f')}, "
          f"over all workloads {fmt(med([r['sol'] for r in rows]), '.3f')}")
    print("(compile s: torch.compile time of the best baseline in this eval; [events]: that baseline was "
          "timed with CUDA events, host dispatch included, not as a device span like T_k)")
    return 0 if npass == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
