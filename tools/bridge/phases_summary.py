#!/usr/bin/env python3
"""phases_summary.py - sums the bridge's phases log (SOLFORGE_BRIDGE_PHASES, one JSON line per bridge
process, tools/bridge/solforge_bridge.py log_phases) into a few lines, with the device-slot flags:

    phases_summary.py PHASES.jsonl [PROGRESS.jsonl]

- "** N GPU benchmarks ran outside the slot **": inductor counted benchmarks while the process did not
  hold the device slot (benchmarks_outside_slot > 0): a benchmark path the hook missed.
- "** compile inside the slot **": benchmarks counted or dynamo compiles started while the tasks held
  the slot (benchmarks_in_task_hold, compiles_in_task_hold) with the compile meant to run before it: a
  (re)compile the warm calls did not cover, holding the slot for host work.
With PROGRESS.jsonl (SOLFORGE_BRIDGE_PROGRESS, solforge_bridge.progress: events as they happen), one line per
bridge process: its workload, each task's seconds (begin to end) with its compile's first call and warm calls, and,
for a process whose trail stops before its last task ended (killed by its eval's time limit), "** cut: ... **" with
the step it was in and for how long.
Older lines (before these counts) are summed as far as they go; their holds-vs-benchmarks comparison
is not flagged, since a benchmark inside the tasks' hold is a nested hold, not a new one. Prints the
lines on stdout; exits 0 (2 on a usage error).
"""
import json
import sys


def summarize(recs):
    """The summary lines of a list of phases records."""
    if not recs:
        return ["bridge processes: 0"]
    tot = {k: sum(r.get(k, 0) for r in recs) for k in ("pre_s", "wait_s", "held_s", "post_s")}
    comp = sum(t.get("compile_s", 0) for r in recs for t in r.get("tasks", []))
    tw = sum(t.get("timing_wall_s", 0) for r in recs for t in r.get("tasks", []))
    warm = sum(t.get("warm_calls", 0) for r in recs for t in r.get("tasks", []))
    out = [f"bridge processes: {len(recs)}; seconds in all: start-up + reads {tot['pre_s']:.1f}, waiting for the "
           f"slot {tot['wait_s']:.1f}, holding it {tot['held_s']:.1f} (timing loops {tw:.1f}), "
           f"writing results {tot['post_s']:.1f}; torch.compile {comp:.1f} in all, {warm} warm calls"]
    modes = sorted({str(r.get("compile_outside_slot")) for r in recs})

    def total(key):
        """(sum of the known values, the sum as text: "unknown" or "N (K of M unknown)" where some
        records lack the count)."""
        vals = [r.get(key) for r in recs]
        known = [v for v in vals if v is not None]
        n = sum(known)
        if not known:
            return 0, "unknown"
        return n, str(n) + (f" ({len(vals) - len(known)} of {len(vals)} unknown)" if len(known) < len(vals) else "")
    _, holds = total("autotune_holds")
    _, nb = total("inductor_benchmarks")
    outside, outside_s = total("benchmarks_outside_slot")
    _, in_task = total("benchmarks_in_task_hold")
    _, comp_in = total("compiles_in_task_hold")
    line = (f"torch.compile before the slot: {', '.join(modes)}; compile time outside the slot "
            f"{sum(r.get('compile_outside_s', 0) for r in recs):.1f} s; autotuning slot holds {holds}, inductor "
            f"GPU benchmarks {nb}, outside the slot {outside_s}, in the tasks' hold {in_task}; "
            f"dynamo compiles in the tasks' hold {comp_in}")
    if outside > 0:
        line += f"  ** {outside} GPU benchmarks ran outside the slot **"
    out.append(line)
    bad = [r for r in recs if not str(r.get("compile_outside_slot", "no")).startswith("no")
           and ((r.get("benchmarks_in_task_hold") or 0) > 0 or (r.get("compiles_in_task_hold") or 0) > 0)]
    if bad:
        out.append(f"  ** compile inside the slot in {len(bad)} processes: "
                   + ", ".join(f"{r.get('what')} ({r.get('benchmarks_in_task_hold')} benchmarks, "
                               f"{r.get('compiles_in_task_hold')} compiles, held {r.get('held_s')} s)"
                               for r in bad[:6]) + " **")
    return out


def progress_lines(events):
    """The per-process lines of a progress trail (a list of event dicts, several processes interleaved)."""
    procs = {}
    for e in events:
        procs.setdefault(e.get("pid"), []).append(e)
    out = []
    for pid, ev in procs.items():
        start = next((e for e in ev if e.get("event") == "start"), {})
        names = start.get("tasks") or []
        parts, begun, comp = [], {}, {}
        for e in ev:
            k, t = e.get("event"), e.get("task")
            if k == "compile_begin":
                comp[t] = {"begin": e["t_s"], "warm": 0, "warm_s": 0.0}
            elif k == "compile_end" and t in comp:
                comp[t]["first_s"] = e["t_s"] - comp[t]["begin"]
            elif k == "warm" and t in comp:
                comp[t]["warm"] += 1
                comp[t]["warm_s"] += e.get("s", 0.0)
            elif k == "task_begin":
                begun[t] = e["t_s"]
            elif k == "task_end":
                c = comp.get(t)
                extra = (f", compile {c.get('first_s', 0):.1f} + {c['warm']} warm {c['warm_s']:.1f}" if c else "")
                parts.append(f"{t} {e.get('status')} {e['t_s'] - begun.get(t, e['t_s']):.1f} s{extra}")
        line = f"bridge {start.get('what') or pid}: " + ("; ".join(parts) if parts else "no task ended")
        ended = {e.get("task") for e in ev if e.get("event") == "task_end"}
        if names and not set(names) <= ended:
            last = ev[-1]
            line += (f"  ** cut: last {last.get('event')}{' of ' + str(last.get('task')) if last.get('task') else ''}"
                     f" at {last.get('t_s', 0):.1f} s; never ended: {', '.join(n for n in names if n not in ended)} **")
        out.append(line)
    return out


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: phases_summary.py PHASES.jsonl [PROGRESS.jsonl]", file=sys.stderr)
        return 2
    recs = []
    try:
        with open(argv[1]) as f:
            recs = [json.loads(ln) for ln in f if ln.strip()]
    except OSError:
        if len(argv) == 2:
            raise
    print("\n".join(summarize(recs)))
    if len(argv) == 3:
        with open(argv[2]) as f:
            print("\n".join(progress_lines([json.loads(ln) for ln in f if ln.strip()])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
