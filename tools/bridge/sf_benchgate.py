"""sf_benchgate.py - keeps inductor's device work in the device slot while torch.compile runs before it
(tools/bridge/solforge_bridge.py, docs/bridge.md "The device slot").

- benchmark_lock_hook(): routes every GPU benchmark inductor runs (autotuning) through a context (the
  bridge's "autotune" slot hold): torch's harness hook where it exists, else wrapped benchmark_gpu /
  benchmark_gpu_with_cuda_graph methods on every Benchmarker class.
- inductor_benchmarks(): the GPU benchmarks inductor itself counted (dynamo counters); the bridge's
  GpuSlot meters that count while it holds the lock, so "counted, not metered" = ran outside the slot.
- CompileWatch: dynamo's compile start/end callbacks; a compile that starts while the slot is held for
  warm-up calls releases the slot until it ends (compiling needs no device), and one that starts while
  the tasks hold it is counted (a compile inside the slot: a recompile the warm-up did not cover).

What torch 2.11 does (torch/_inductor/runtime/benchmarking.py): `time_and_count` counts every call of a
decorated method under "benchmarking.<class of the instance>.<method>", so a nested super() call
would count twice under one key; 2.11's InductorBenchmarker.benchmark_gpu makes none, and
Benchmarker.benchmark (key ".benchmark", not counted here) reaches the GPU through self.benchmark_gpu.
Newer torch adds benchmark_gpu_with_cuda_graph, which calls benchmark_gpu again inside (max-autotune
only): counts are then not calls, which is why the check meters counts against lock holds instead of
comparing counts with holds.
"""
import importlib


def _config_blocks(cfg):
    """Why inductor's config sends benchmarks where no hook reaches (a subprocess, or the profiler
    path utils.do_bench_using_profiling that bypasses the benchmarker and its counters), or None."""
    if cfg is None:
        return None
    if getattr(cfg, "autotune_in_subproc", False):
        return "inductor autotunes in a subprocess (autotune_in_subproc)"
    if getattr(cfg, "profile_bandwidth_with_do_bench_using_profiling", False):
        return "inductor benchmarks through do_bench_using_profiling (not the benchmarker)"
    return None


def _bench_classes(mod, bm):
    """Every class whose own benchmark methods a call on bm (or on another instance, or through
    super()) can reach: the instance's MRO and every subclass of the module's Benchmarker."""
    seen, out = set(), []
    todo = list(type(bm).__mro__)
    base = getattr(mod, "Benchmarker", None)
    if isinstance(base, type):
        todo.append(base)
    while todo:
        c = todo.pop()
        if c in seen or c is object:
            continue
        seen.add(c)
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


def benchmark_lock_hook(torch):
    """How to make inductor's GPU benchmarks (autotuning) hold the device slot: (install, how) where
    install(context_factory) routes every benchmark through the context: the benchmark methods
    (is_bench_method) get wrapped on every Benchmarker class that defines them, so calls through the
    shared `benchmarker`, another instance, a class attribute or super() all enter the context (nested
    calls nest), and the context is also registered with
    torch._inductor.runtime.benchmarking.set_gpu_benchmark_lock_context where that harness hook
    exists (newer torch: how is "inductor-hook"; "benchmarker-patch" otherwise, as torch 2.11). The
    wrap stays on with the hook because torch counts a call before its hook context is entered: the
    wrap is outside the counter, so the slot's meter sees the count. (None, why) when neither exists
    or inductor's config benchmarks out of the hooks' reach: torch.compile then runs in the slot."""
    try:
        mod = importlib.import_module("torch._inductor.runtime.benchmarking")
    except Exception as e:  # noqa: BLE001 - an older or stripped torch
        return None, f"no inductor benchmarking module ({type(e).__name__})"
    try:
        cfg = importlib.import_module("torch._inductor.config")
    except Exception:  # noqa: BLE001 - no config module: its defaults
        cfg = None
    why = _config_blocks(cfg)
    if why:
        return None, why
    api = getattr(mod, "set_gpu_benchmark_lock_context", None)
    api = api if callable(api) else None
    bm = getattr(mod, "benchmarker", None)
    if bm is not None and not callable(getattr(bm, "benchmark_gpu", None)):
        bm = None
    if api is None and bm is None:
        return None, "no benchmark hook and no shared benchmarker in this torch"

    def wrap(f, factory):
        def wrapped(*a, **k):
            with factory():
                return f(*a, **k)
        wrapped._sf_locked = True
        wrapped.__name__ = getattr(f, "__name__", "benchmark_gpu")
        wrapped.__wrapped__ = f
        return wrapped

    def install(factory):
        if api is not None:
            api(factory)
        if bm is None:
            return
        for c in _bench_classes(mod, bm):
            for name, f in list(c.__dict__.items()):
                if is_bench_method(name) and callable(f) and not getattr(f, "_sf_locked", False):
                    setattr(c, name, wrap(f, factory))
        for name, f in list(getattr(bm, "__dict__", {}).items()):  # an instance attribute shadows the classes
            if is_bench_method(name) and callable(f) and not getattr(f, "_sf_locked", False):
                setattr(bm, name, wrap(f, factory))
    return install, ("inductor-hook" if api is not None else "benchmarker-patch")


def is_bench_method(name):
    """A Benchmarker method that runs GPU benchmarks (benchmark_gpu, benchmark_gpu_with_cuda_graph,
    benchmark_many_gpu, ...): the ones the patch wraps."""
    return name.startswith("benchmark_gpu") or name.startswith("benchmark_many")


def inductor_benchmarks(torch=None):
    """The GPU benchmark calls inductor counted in this process (its dynamo counters: keys
    "benchmarking.<class>.<method>" whose method names benchmark_gpu; nested calls count each), or
    None when the counters are not there."""
    try:
        from torch._dynamo.utils import counters
        return sum(v for k, v in counters["inductor"].items() if str(k).startswith("benchmarking.")
                   and "benchmark_gpu" in str(k))
    except Exception:  # noqa: BLE001 - counters are internal: absent means unknown
        return None


class BenchGate:
    """The context factory the benchmark hook gets: each benchmark call holds the slot ("autotune",
    nested in whatever hold is already there); calls counts the outermost benchmark calls."""

    def __init__(self, slot):
        self.slot = slot
        self.calls = 0
        self.depth = 0

    def hold(self):
        gate = self

        class _Hold:
            def __enter__(self):
                if gate.depth == 0:
                    gate.calls += 1
                gate.depth += 1
                gate.slot.acquire("autotune")

            def __exit__(self, *exc):
                gate.slot.release()
                gate.depth -= 1
                return False
        return _Hold()


def compile_callbacks():
    """(register(start, end), None) with dynamo's compile start/end callbacks
    (torch._dynamo.callback.callback_handler: start when the outermost frame compile begins, end when
    it ends, raise or not), or (None, why)."""
    try:
        cb = importlib.import_module("torch._dynamo.callback")
        h = cb.callback_handler
        rs, re_ = h.register_start_callback, h.register_end_callback
    except Exception as e:  # noqa: BLE001 - an older torch
        return None, f"no dynamo compile callbacks ({type(e).__name__})"

    def register(start, end):
        rs(start)
        re_(end)
    return register, None


class CompileWatch:
    """Watches dynamo's compiles against the device slot. A compile that starts while the slot's
    outermost hold is labelled "warm" (the bridge's warm-up calls before the tasks) suspends the slot
    until the compile ends; one that starts while another hold has it (the tasks' hold) is counted in
    in_slot. Without callbacks (ok False) nothing is watched."""

    def __init__(self, slot, register=None):
        self.slot = slot
        self.in_slot = 0
        self.suspended = 0
        self._susp = False
        self.ok = False
        if register is None:
            register, _ = compile_callbacks()
        if register is not None:
            register(self._start, self._end)
            self.ok = True

    def _start(self, *_):
        s = self.slot
        if not s.spec or s.depth == 0:
            return
        if s.label == "warm":
            s.suspend()
            self._susp = True
            self.suspended += 1
        else:
            self.in_slot += 1

    def _end(self, *_):
        if self._susp:
            self._susp = False
            self.slot.resume()
