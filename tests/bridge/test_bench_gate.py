#!/usr/bin/env python3
"""test_bench_gate.py - what the bridge counts and holds around inductor's GPU benchmarks
(tools/bridge/sf_benchgate.py, GpuSlot in tools/bridge/solforge_bridge.py), without torch: stand-in
modules model torch 2.11's torch/_inductor/runtime/benchmarking.py (Benchmarker -> TritonBenchmarker ->
InductorBenchmarker, every benchmark method counted by `time_and_count` under
"benchmarking.<class of the instance>.<method>" in torch._dynamo.utils.counters["inductor"];
Benchmarker.benchmark reaching the GPU through self.benchmark_gpu) and newer torch's nested
benchmark_gpu_with_cuda_graph (super() call, then self.benchmark_gpu: one benchmark, several counts).

Checks, each with random call mixes (seeded from the clock, the seed printed):
- every reachable path (shared instance, module alias, another instance, class attribute with an
  explicit self, super(), functools.partial taken after install, Benchmarker.benchmark) runs with the
  slot's lock held; the metered count equals inductor's count: benchmarks_outside_slot == 0;
- a planted path the hook cannot reach (a bound method taken before install) runs unheld and is
  reported as exactly that many benchmarks outside the slot; an instance-only patch (the bridge's
  patch before this change) misses the class-attribute and other-instance calls, and the check says so;
- nested counts (newer torch) give more counts than holds but none outside the slot;
- benchmarks while the tasks hold the slot (a recompile in the slot, as session 7 saw on ragged
  attention workloads) are nested holds: counted, metered, not new holds, not outside;
- CompileWatch: a compile during a "warm" hold lets the lock go and takes it back; during the tasks'
  hold it is counted; the config guards (autotune_in_subproc, do_bench_using_profiling) refuse the hook;
- compile_task calls the compiled function once on every round and timing set, in order, each in a
  "warm" hold when asked, and stops at a failing input;
- tools/bridge/phases_summary.py flags benchmarks outside the slot and compiles inside it, and
  nothing on clean records.
Prints `ok NAME` / `FAIL NAME: why`; exits non-zero on a failure.
"""
import collections
import functools
import os
import random
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "bridge"))
import sf_benchgate  # noqa: E402
import sf_io  # noqa: E402
import solforge_bridge  # noqa: E402
sys.path.insert(0, HERE)
from lockprobe import lock_state  # noqa: E402

failed = 0
seed = int(os.environ.get("SEED", time.time_ns() % (1 << 31)))
rng = random.Random(seed)
print(f"seed {seed}")


def check(name, cond, why=""):
    global failed
    print(f"ok {name}" if cond else f"FAIL {name}: {why}")
    failed += 0 if cond else 1


TMP = tempfile.mkdtemp(prefix="sf-bench-gate-")
LOCK, LOG = os.path.join(TMP, "slot.lock"), os.path.join(TMP, "timing.log")


def probe():
    return lock_state(LOCK)


def fake_torch(newer=False, harness_hook=False, cfg=None):
    """Stand-ins for torch, torch._dynamo.utils (counters), torch._dynamo.callback and
    torch._inductor.runtime.benchmarking shaped like torch 2.11 (newer: with the nested cuda-graph
    benchmark; harness_hook: with set_gpu_benchmark_lock_context). Returns (bench module, device log,
    callback handler)."""
    for n in list(sys.modules):
        if n == "torch" or n.startswith("torch."):
            del sys.modules[n]
    mods = {n: types.ModuleType(n) for n in ("torch", "torch._dynamo", "torch._dynamo.utils", "torch._dynamo.callback",
                                             "torch._inductor", "torch._inductor.runtime",
                                             "torch._inductor.runtime.benchmarking", "torch._inductor.config")}
    counters = collections.defaultdict(collections.Counter)
    mods["torch._dynamo.utils"].counters = counters
    cfgm = mods["torch._inductor.config"]
    for k, v in (cfg or {}).items():
        setattr(cfgm, k, v)
    handler = types.SimpleNamespace(start=[], end=[])
    handler.register_start_callback = handler.start.append
    handler.register_end_callback = handler.end.append
    mods["torch._dynamo.callback"].callback_handler = handler
    device = []  # (what, lock state) of every device-side benchmark body
    lock_ctx = [None]

    def time_and_count(fn):
        @functools.wraps(fn)
        def wrapper(self, *a, **k):
            counters["inductor"][f"benchmarking.{self.__class__.__name__}.{fn.__name__}"] += 1
            return fn(self, *a, **k)
        return wrapper

    def gpu_lock(fn):  # newer torch's gpu_benchmark_lock: the harness context around the body
        @functools.wraps(fn)
        def wrapper(*a, **k):
            if lock_ctx[0] is None:
                return fn(*a, **k)
            with lock_ctx[0]():
                return fn(*a, **k)
        return wrapper if harness_hook else fn

    class Benchmarker:
        @time_and_count
        def benchmark(self, fn, fn_args=(), fn_kwargs=None, device="cuda", **kw):
            if device == "cpu":
                return self.benchmark_cpu(lambda: fn(*fn_args))
            return self.benchmark_gpu(lambda: fn(*fn_args), **kw)

        @time_and_count
        def benchmark_cpu(self, _callable, warmup=20, rep=100):
            device.append(("cpu", probe()))
            return _callable()

        @time_and_count
        def benchmark_gpu(self, *a, **k):
            raise NotImplementedError

        if newer:
            @time_and_count
            @gpu_lock
            def benchmark_gpu_with_cuda_graph(self, _callable, **kw):
                device.append(("graph-capture", probe()))
                return self.benchmark_gpu(_callable, **kw)

    class TritonBenchmarker(Benchmarker):
        @time_and_count
        @gpu_lock
        def benchmark_gpu(self, _callable, **kw):
            device.append(("triton", probe()))
            return _callable()

    class InductorBenchmarker(TritonBenchmarker):
        _in_graph = False

        if newer:
            @time_and_count
            def benchmark_gpu_with_cuda_graph(self, _callable, **kw):
                self._in_graph = True
                try:
                    return super().benchmark_gpu_with_cuda_graph(_callable, **kw)
                finally:
                    self._in_graph = False

        @time_and_count
        @gpu_lock
        def benchmark_gpu(self, _callable, graph=False, **kw):
            if newer and graph and not self._in_graph:
                return self.benchmark_gpu_with_cuda_graph(_callable, **kw)
            device.append(("inductor", probe()))
            return _callable()

    bm = mods["torch._inductor.runtime.benchmarking"]
    bm.Benchmarker, bm.TritonBenchmarker, bm.InductorBenchmarker = Benchmarker, TritonBenchmarker, InductorBenchmarker
    bm.benchmarker = InductorBenchmarker()
    if harness_hook:
        def set_ctx(f):
            prev, lock_ctx[0] = lock_ctx[0], f
            return prev
        bm.set_gpu_benchmark_lock_context = set_ctx
    sys.modules.update(mods)
    mods["torch"]._dynamo, mods["torch"]._inductor = mods["torch._dynamo"], mods["torch._inductor"]
    return bm, device, handler, counters


def new_slot():
    if os.path.exists(LOG):
        os.unlink(LOG)
    return solforge_bridge.GpuSlot({"lock": LOCK, "log": LOG, "slot": "cuda-0", "problem": "p", "what": "w"},
                                   lambda: sf_benchgate.inductor_benchmarks())


def install(slot):
    api, how = sf_benchgate.benchmark_lock_hook(None)
    gate = sf_benchgate.BenchGate(slot)
    if api is not None:
        api(gate.hold)
    return api, how, gate


def paths(bm, newer):
    """Every way torch 2.11 (and newer) code reaches a GPU benchmark, as (name, call(value))."""
    inst = bm.benchmarker
    alias = bm.benchmarker  # triton_heuristics / autotune_process: `from .benchmarking import benchmarker`
    other = bm.InductorBenchmarker()
    p = [("instance", lambda v: inst.benchmark_gpu(lambda: v)),
         ("alias", lambda v: alias.benchmark_gpu(lambda: v, rep=40)),
         ("benchmark", lambda v: inst.benchmark(lambda: v, device="cuda")),
         ("other_instance", lambda v: other.benchmark_gpu(lambda: v)),
         ("class_attr", lambda v: bm.TritonBenchmarker.benchmark_gpu(inst, lambda: v)),
         ("partial", lambda v: functools.partial(bm.benchmarker.benchmark_gpu)(lambda: v))]  # pad_mm.get_do_bench
    if newer:
        p.append(("cuda_graph", lambda v: inst.benchmark_gpu(lambda: v, graph=True)))
    return p


def outside(slot, counters):
    return sf_benchgate.inductor_benchmarks() - slot.metered


# 1. torch 2.11: every path held, counts metered, none outside; plus cpu benchmarks (neither)
for newer in (False, True):
    tag = "newer" if newer else "t211"
    bm, device, _, counters = fake_torch(newer=newer)
    slot = new_slot()
    api, how, gate = install(slot)
    ps = paths(bm, newer)
    mix = [rng.choice(ps) for _ in range(rng.randint(8, 20))]
    vals = [rng.uniform(0.5, 9.0) for _ in mix]
    outs = [f(v) for (_, f), v in zip(mix, vals)]
    n_cpu = rng.randint(1, 3)
    for _ in range(n_cpu):
        bm.benchmarker.benchmark(lambda: 1.0, device="cpu")
    gpu = [d for d in device if d[0] != "cpu"]
    lines = open(LOG).read().splitlines()
    check(f"{tag}_every_path_held", how == "benchmarker-patch" and outs == vals and gpu
          and all(st == "held" for _, st in gpu) and probe() == "free", f"{how} {[m[0] for m in mix]} {device}")
    check(f"{tag}_none_outside", outside(slot, counters) == 0 and slot.metered == sf_benchgate.inductor_benchmarks()
          and gate.calls == len(mix) == slot.holds.get("autotune") == len(lines),
          f"outside {outside(slot, counters)} metered {slot.metered} calls {gate.calls} holds {slot.holds} {len(lines)}")
    if newer and any(m[0] == "cuda_graph" for m in mix):
        check("newer_nested_counts_no_alarm", sf_benchgate.inductor_benchmarks() > slot.holds.get("autotune", 0)
              and outside(slot, counters) == 0, f"{dict(counters['inductor'])}")

# 2. a planted path the hook cannot reach: a bound method taken before install
bm, device, _, counters = fake_torch()
early = bm.benchmarker.benchmark_gpu
slot = new_slot()
api, how, gate = install(slot)
k = rng.randint(1, 5)
for _ in range(rng.randint(1, 4)):
    bm.benchmarker.benchmark_gpu(lambda: 1.0)
for _ in range(k):
    early(lambda: 1.0)
unheld = sum(1 for _, st in device if st == "free")
check("planted_bypass_reported", unheld == k and outside(slot, counters) == k, f"unheld {unheld} outside {outside(slot, counters)} k {k}")

# 2b. the old instance-only patch: class-attribute and other-instance calls slip past it, and the meter says so
bm, device, _, counters = fake_torch()
slot = new_slot()
gate = sf_benchgate.BenchGate(slot)
inst = bm.benchmarker
f0 = inst.benchmark_gpu
inst.benchmark_gpu = lambda *a, **kw: (gate.hold().__enter__(), f0(*a, **kw), slot.release(),
                                       setattr(gate, "depth", gate.depth - 1))[1]
miss = rng.randint(1, 4)
for _ in range(miss):
    rng.choice([lambda: bm.TritonBenchmarker.benchmark_gpu(inst, lambda: 1.0),
                lambda: bm.InductorBenchmarker().benchmark_gpu(lambda: 1.0)])()
inst.benchmark_gpu(lambda: 1.0)
check("instance_only_patch_caught", outside(slot, counters) == miss, f"outside {outside(slot, counters)} miss {miss}")

# 3. benchmarks while the tasks hold the slot (a recompile inside it): nested, metered, not new holds
bm, device, _, counters = fake_torch()
slot = new_slot()
api, how, gate = install(slot)
pre = rng.randint(1, 6)
for _ in range(pre):
    bm.benchmarker.benchmark(lambda: 1.0, device="cuda")
m0 = slot.metered
slot.acquire()
inside = rng.randint(1, 8)
for _ in range(inside):
    rng.choice(paths(bm, False))[1](2.0)
slot.release()
check("recompile_in_task_hold", slot.holds.get("autotune") == pre and sf_benchgate.inductor_benchmarks() == pre + inside
      and slot.metered - m0 == inside and outside(slot, counters) == 0 and gate.calls == pre + inside,
      f"holds {slot.holds} counted {sf_benchgate.inductor_benchmarks()} metered {slot.metered}")

# 4. harness hook (newer torch): the context nests, counts metered, none outside
bm, device, _, counters = fake_torch(newer=True, harness_hook=True)
slot = new_slot()
api, how, gate = install(slot)
n = rng.randint(3, 9)
for _ in range(n):
    bm.benchmarker.benchmark_gpu(lambda: 1.0, graph=rng.random() < 0.5)
check("harness_hook_metered", how == "inductor-hook" and all(st == "held" for _, st in device)
      and gate.calls == n and outside(slot, counters) == 0, f"{how} {device} calls {gate.calls} n {n} outside {outside(slot, counters)}")

# 5. config guards
for key in ("autotune_in_subproc", "profile_bandwidth_with_do_bench_using_profiling"):
    fake_torch(cfg={key: True})
    api, how = sf_benchgate.benchmark_lock_hook(None)
    check(f"guard_{key}", api is None and how, how)

# 6. CompileWatch: warm holds let the lock go while dynamo compiles; the tasks' hold counts compiles
bm, device, handler, counters = fake_torch()
slot = new_slot()
api, how, gate = install(slot)
watch = sf_benchgate.CompileWatch(slot)
states = []


def compile_now(bench):
    for cb in handler.start:
        cb(None)
    states.append(probe())
    for _ in range(bench):
        bm.benchmarker.benchmark_gpu(lambda: 1.0)
    for cb in handler.end:
        cb(None)
    states.append(probe())


b1 = rng.randint(1, 4)
with slot.hold("warm"):
    compile_now(b1)
    held_after = probe()
slot.acquire()
compile_now(0)
slot.release()
check("compile_watch", watch.ok and states == ["free", "held", "held", "held"] and held_after == "held"
      and watch.suspended == 1 and watch.in_slot == 1 and slot.holds.get("autotune") == b1
      and slot.holds.get("warm") == 2 and outside(slot, counters) == 0 and probe() == "free",
      f"states {states} susp {watch.suspended} in_slot {watch.in_slot} holds {slot.holds}")


# 7. compile_task: one warm call per round and timing set, in order, in "warm" holds; stops at a failure
class Codec:
    fake, device = False, "cpu"

    def __init__(self, fail_at=None):
        self.calls, self.fail_at = [], fail_at
        codec = self

        def compile_(fn):
            def compiled(x):
                codec.calls.append((float(x[0]), probe()))
                if codec.fail_at is not None and len(codec.calls) - 1 == codec.fail_at:
                    raise RuntimeError("planted")
                return fn(x)
            return compiled
        self.torch = types.SimpleNamespace(compile=compile_)

    def to_torch(self, st, shape, raw):
        return sf_io.decode(st, shape, raw)


for fail in (None, "some"):
    d = tempfile.mkdtemp(dir=TMP)
    rounds, sets = rng.randint(1, 4), rng.randint(0, 3)
    names = [f"in_round{r}.safetensors" for r in range(rounds)] + [f"in_set{s}.safetensors" for s in range(sets)]
    marks = [rng.uniform(-100, 100) for _ in names]
    import numpy as np  # noqa: E402
    for nm, v in zip(names, marks):
        sf_io.write_safetensors(os.path.join(d, nm), [("x", "F32", [2], sf_io.encode("F32", np.array([v, 0], np.float32)))])
    src = os.path.join(d, "base.py")
    with open(src, "w") as f:
        f.write("def run(x):\n    return x\n")
    job = {"seeds": list(range(rounds)), "inputs": [{"name": "x", "gen": "normal", "dtype": "float32", "shape": [2]}]}
    fail_at = None if fail is None else rng.randint(1, len(names) - 1) if len(names) > 1 else None
    codec = Codec(fail_at)
    slot = new_slot()
    prog = os.path.join(d, "progress.jsonl")
    os.environ["SOLFORGE_BRIDGE_PROGRESS"] = prog
    r = solforge_bridge.compile_task(job, {"source": src, "entry": "run", "name": "tc"}, {}, codec,
                                     solforge_bridge.Inputs(d), slot, True)
    del os.environ["SOLFORGE_BRIDGE_PROGRESS"]
    want = len(names) if fail_at is None else fail_at + 1
    got = [round(c[0], 3) for c in codec.calls]
    exp = [round(float(np.float32(v)), 3) for v in marks[:want]]
    ok = (not isinstance(r, solforge_bridge.TaskError) and got == exp and all(c[1] == "held" for c in codec.calls)
          and r[2]["warm_calls"] == want - 1 - (0 if fail_at is None else 1) and slot.holds.get("warm") == want)
    check(f"compile_task_warms_every_input{'_until_failure' if fail_at is not None else ''}", ok,
          f"{r} calls {codec.calls} expected {exp} holds {slot.holds}")
    # the progress trail (SOLFORGE_BRIDGE_PROGRESS): compile_begin, compile_end, then one warm line per
    # warm call in input order, the failing one (if any) last with ok false; times never go back
    ev = [__import__("json").loads(ln) for ln in open(prog)] if os.path.exists(prog) else []
    warms = [e for e in ev if e["event"] == "warm"]
    ok = ([e["event"] for e in ev[:2]] == ["compile_begin", "compile_end"] and ev[1].get("ok") is True
          and [e["input"] for e in warms] == names[1:want]
          and [e["ok"] for e in warms] == [True] * (want - 1 - (fail_at is not None)) + [False] * (fail_at is not None)
          and all(e["task"] == "tc" for e in ev) and all(a["t_s"] <= b["t_s"] for a, b in zip(ev, ev[1:])))
    check(f"compile_task_progress_trail{'_until_failure' if fail_at is not None else ''}", ok, str(ev))

# 7b. run_task on a task compiled before the slot (compile_task's (fn, first_s, warm) triple) times it
# and reports compile_s and the warm fields in its timing; the real-torch path, which the fake torch
# cannot reach through compile_task (session 7's H200 run: the triple's warm dict was shadowed by the
# warm-up counter and every torch.compile baseline failed with a TypeError)
import importlib.util  # noqa: E402
_spec = importlib.util.spec_from_file_location(  # by path: earlier checks put stand-ins named torch in sys.modules
    "sf_fixture_fake_torch", os.path.join(HERE, "..", "fixtures", "bridge", "fake_torch", "torch", "__init__.py"))
fake_torch_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_torch_mod)
d = tempfile.mkdtemp(dir=TMP)
n_sets = rng.randint(1, 3)
for nm in ["in_round0.safetensors"] + [f"in_set{i}.safetensors" for i in range(n_sets)]:
    sf_io.write_safetensors(os.path.join(d, nm), [("x", "F32", [2], sf_io.encode("F32", np.array([rng.uniform(-9, 9), 1], np.float32)))])
src = os.path.join(d, "base.py")
with open(src, "w") as f:
    f.write("def run(x):\n    return x\n")
job = {"seeds": [0], "inputs": [{"name": "x", "gen": "normal", "dtype": "float32", "shape": [2]}],
       "outputs": [{"name": "y", "dtype": "float32", "shape": [2]}],
       "timing": {"flush_bytes": 0, "warmup_ms": 0.0, "min_iters": 5, "max_iters": 10, "budget_ms": 50.0,
                  "target_rel_ci": 1.0}}
wi = {"warm_calls": rng.randint(0, 9), "warm_s": rng.uniform(0, 2)}
first = rng.uniform(0.1, 9)
real_codec = solforge_bridge.Codec(fake_torch_mod, "cpu")
task = {"source": src, "entry": "run", "compile": True, "role": "baseline", "out_dir": os.path.join(d, "out")}
try:
    _, tm = solforge_bridge.run_task(job, task, {}, real_codec, solforge_bridge.Inputs(d), [],
                                     (lambda x: x, first, dict(wi)))
    ok = (tm is not None and tm.get("compile_s") == first and tm.get("warm_calls") == wi["warm_calls"]
          and tm.get("warm_s") == wi["warm_s"] and tm.get("timed_calls", 0) >= 5)
    why = str(tm)
except Exception as e:  # noqa: BLE001 - the failure being tested for
    import traceback as _tb
    ok, why = False, f"{type(e).__name__}: {e} " + _tb.format_exc(limit=8)
check("run_task_reports_precompiled_timing", ok, why)

# 8. the phases summary's flags (tools/bridge/phases_summary.py): random records through log_phases
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "bridge"))
import phases_summary  # noqa: E402


def record(outside_n, in_task, compiles, mode="benchmarker-patch"):
    path = os.path.join(TMP, f"phases{rng.randint(0, 1 << 30)}.jsonl")
    os.environ["SOLFORGE_BRIDGE_PHASES"] = path
    holds = rng.randint(0, 40)
    counts = {"autotune_holds": holds, "hook_calls": holds + in_task, "inductor_benchmarks": holds + in_task + outside_n,
              "benchmarks_outside_slot": outside_n, "benchmarks_in_task_hold": in_task,
              "compiles_in_task_hold": compiles, "compile_suspends": rng.randint(0, 3)}
    what = f"w{rng.randint(0, 99)}"
    # (BRIDGE.json's top-level names, as the C side writes them with or without a device slot)
    solforge_bridge.log_phases({"problem": "p", "what": what}, [],
                               *[rng.uniform(0, 9) for _ in range(5)], mode, counts)
    del os.environ["SOLFORGE_BRIDGE_PHASES"]
    recs = [__import__("json").loads(ln) for ln in open(path)]
    check("phases_line_names_workload", [(r["problem"], r["what"]) for r in recs] == [("p", what)], str(recs))
    return recs


clean = [record(0, 0, 0)[0] for _ in range(rng.randint(1, 5))]
k = rng.randint(1, 9)
dirty = clean + record(k, 0, 0)
slotc = clean + record(0, rng.randint(1, 30), rng.randint(0, 3))
inslot = clean + record(0, rng.randint(1, 30), 1, "no (compile in the slot)")
s_clean, s_dirty = "\n".join(phases_summary.summarize(clean)), "\n".join(phases_summary.summarize(dirty))
s_slot, s_in = "\n".join(phases_summary.summarize(slotc)), "\n".join(phases_summary.summarize(inslot))
check("summary_flags", "**" not in s_clean and f"** {k} GPU benchmarks ran outside the slot **" in s_dirty
      and "compile inside the slot in 1 processes" in s_slot and "outside the slot **" not in s_slot
      and "**" not in s_in, "\n".join([s_clean, s_dirty, s_slot, s_in]))

# 9. the progress trail's summary (phases_summary.progress_lines): a whole process and one cut inside a warm call
#    (random times, the two processes' lines interleaved): only the cut one is flagged, with its step and the
#    tasks that never ended; the whole one's compile first call and warm calls add up
def trail(pid, cut):
    t, ev = 0.0, [{"pid": pid, "t_s": 0.0, "event": "start", "what": f"w{pid}", "tasks": ["a", "tc"]}]
    def at(event, **kw):
        nonlocal t
        t += rng.uniform(0.01, 50)
        ev.append(dict({"pid": pid, "t_s": round(t, 3), "event": event}, **kw))
    at("compile_begin", task="tc")
    at("compile_end", task="tc", ok=True)
    first = ev[-1]["t_s"] - ev[-2]["t_s"]  # (as the summary computes it: from the trail's rounded times)
    ws = [round(rng.uniform(0.1, 9), 3) for _ in range(rng.randint(1, 4))]
    for w in ws:
        at("warm", task="tc", input="in_set0.safetensors", ok=True, s=w)
    if cut:
        return ev, first, ws
    for name in ("a", "tc"):
        at("task_begin", task=name)
        at("task_end", task=name, status="ok")
    return ev, first, ws


ev1, first1, ws1 = trail(11, False)
ev2, _, _ = trail(22, True)
mixed = sorted(ev1 + ev2, key=lambda e: (e["t_s"], e["pid"]))
lines = phases_summary.progress_lines(mixed)
whole = next((ln for ln in lines if ln.startswith("bridge w11:")), "")
cut = next((ln for ln in lines if ln.startswith("bridge w22:")), "")
check("progress_summary", len(lines) == 2 and "**" not in whole
      and f"compile {first1:.1f} + {len(ws1)} warm {sum(ws1):.1f}" in whole
      and "** cut: last warm of tc at" in cut and "never ended: a, tc **" in cut, "\n".join(lines))

sys.exit(1 if failed else 0)
