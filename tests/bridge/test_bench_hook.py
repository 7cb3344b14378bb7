#!/usr/bin/env python3
"""test_bench_hook.py - how the bridge makes inductor's GPU benchmarks hold the device slot
(benchmark_lock_hook in tools/bridge/sf_benchgate.py, used by tools/bridge/solforge_bridge.py), without torch: stand-in modules in
sys.modules play torch._inductor.runtime.benchmarking in its two shapes.

- A torch with the harness hook (set_gpu_benchmark_lock_context): installing registers the context
  with it (tests/bridge/test_bench_gate.py models torch's classes and counters in full).
- An older torch with only the shared `benchmarker` instance: its benchmark_gpu methods get wrapped so
  that every call, through any reference to that instance, runs inside the context (a GpuSlot hold
  on a real lock file: held during the call, free after), installing twice wraps once, and the
  benchmark's return value and arguments pass through.
- Neither: (None, why).
Random arguments per run. Prints `ok NAME` / `FAIL NAME: why`; exits non-zero on a failure.
"""
import os
import random
import sys
import tempfile
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bridge"))
import solforge_bridge  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lockprobe import lock_state  # noqa: E402

failed = 0


def check(name, cond, why=""):
    global failed
    print(f"ok {name}" if cond else f"FAIL {name}: {why}")
    failed += 0 if cond else 1


def probe(lock):
    return lock_state(lock)


def install_module(mod):
    names = ["torch", "torch._inductor", "torch._inductor.runtime", "torch._inductor.runtime.benchmarking"]
    for n in names[:-1]:
        sys.modules.setdefault(n, types.ModuleType(n))
    sys.modules[names[-1]] = mod


rng = random.Random()
tmp = tempfile.mkdtemp(prefix="sf-bench-hook-")
lock, log = os.path.join(tmp, "slot.lock"), os.path.join(tmp, "timing.log")

# 1. the harness hook: install() registers the context factory with it
got = []
mod = types.ModuleType("torch._inductor.runtime.benchmarking")
mod.set_gpu_benchmark_lock_context = got.append
install_module(mod)
api, how = solforge_bridge.benchmark_lock_hook(None)
factory = object()
if api is not None:
    api(factory)
check("inductor_hook", api is not None and got == [factory] and how == "inductor-hook", how)

# 2. only the shared benchmarker: wrapped methods run inside the slot
seen = []


class Bench:
    def benchmark_gpu(self, fn, **kw):
        seen.append(("gpu", probe(lock), kw.get("rep")))
        return fn() * 2.0


mod = types.ModuleType("torch._inductor.runtime.benchmarking")
mod.benchmarker = Bench()
install_module(mod)
alias = mod.benchmarker  # as triton_heuristics holds it: `from ... import benchmarker`
api, how = solforge_bridge.benchmark_lock_hook(None)
slot = solforge_bridge.GpuSlot({"lock": lock, "log": log, "slot": "cuda-0", "problem": "p", "what": "w"})
if api is None:
    check("benchmarker_patch", False, how)
else:
    api(lambda: slot.hold("autotune"))
    api(lambda: slot.hold("autotune"))  # a second install must not wrap twice
    n = rng.randint(2, 6)
    vals = [rng.uniform(0.1, 9.0) for _ in range(n)]
    reps = [rng.randint(1, 100) for _ in range(n)]
    outs = [alias.benchmark_gpu(lambda v=v: v, rep=r) for v, r in zip(vals, reps)]
    lines = open(log).read().splitlines() if os.path.exists(log) else []
    check("benchmarker_patch", how == "benchmarker-patch" and outs == [2.0 * v for v in vals]
          and seen == [("gpu", "held", r) for r in reps] and probe(lock) == "free"
          and len(lines) == n and all(ln.split()[7] == "w/autotune" for ln in lines)
          and slot.holds.get("autotune") == n, f"{how} {outs} {seen} {lines}")

# 3. neither
mod = types.ModuleType("torch._inductor.runtime.benchmarking")
install_module(mod)
api, how = solforge_bridge.benchmark_lock_hook(None)
check("no_hook", api is None and "no" in how, how)
sys.exit(1 if failed else 0)
