#!/usr/bin/env python3
"""benchgate_selftest.py - checks on the real torch and GPU what tests/bridge/test_bench_gate.py checks
on stand-ins: inductor's autotuning benchmarks hold the bridge's device slot, the meter finds none
outside it, and dynamo's compiles during "warm" holds let the slot go (tools/bridge/sf_benchgate.py).

    python3 tools/bridge/benchgate_selftest.py [SEED]

A function shaped like the attention baselines (a host read of a data-dependent length, a graph break,
then a compiled softmax-reduction over that length, compiled with max_autotune_pointwise so that
inductor autotunes its reduction kernels at their first run) is compiled with warm calls on 3 inputs of different lengths (as the bridge's precompile
does), then called on the same inputs inside a "tasks" hold (no compile, no benchmark may happen there),
then on a new row count inside the tasks' hold (a recompile in the slot: it must be detected). While a
compile runs in a warm hold, a second process must be able to take the lock (the slot was let go).
Prints one line per check (`ok NAME` / `FAIL NAME: why`) and a summary table; exits 0 when all passed,
1 when one failed, 3 without torch or CUDA.
"""
import fcntl
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sf_benchgate  # noqa: E402
import solforge_bridge  # noqa: E402


def probe(lock):
    """'free' or 'held', asked from another process (flock is per open file; this process's own lock
    would not block a second open here)."""
    code = ("import fcntl,os,sys\nfd=os.open(sys.argv[1],os.O_RDWR|os.O_CREAT,0o644)\n"
            "try:\n fcntl.flock(fd,fcntl.LOCK_EX|fcntl.LOCK_NB); print('free')\nexcept BlockingIOError:\n print('held')")
    return subprocess.run([sys.executable, "-c", code, lock], capture_output=True, text=True).stdout.strip()


def main(argv):
    seed = int(argv[1]) if len(argv) > 1 else random.SystemRandom().randrange(1 << 30)
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        print(f"benchgate_selftest: no torch ({type(e).__name__}: {e})")
        return 3
    if not torch.cuda.is_available():
        print("benchgate_selftest: no CUDA device")
        return 3
    rng = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix="sf-benchgate-")
    lock = os.path.join(tmp, "slot.lock")
    slot = solforge_bridge.GpuSlot({"lock": lock, "log": os.path.join(tmp, "timing.log"), "slot": "cuda-0",
                                    "problem": "selftest", "what": "w"}, sf_benchgate.inductor_benchmarks)
    install, how = sf_benchgate.benchmark_lock_hook(torch)
    if install is None:
        print(f"FAIL hook: {how}")
        return 1
    gate = sf_benchgate.BenchGate(slot)
    install(gate.hold)
    seen = []  # lock state, asked from another process, at each compile start during a warm hold

    class Watch(sf_benchgate.CompileWatch):
        def _start(self, *a):
            super()._start(*a)
            if self._susp:
                seen.append(probe(lock))
    watch = Watch(slot)
    failed = 0

    def check(name, cond, why=""):
        nonlocal failed
        print(f"ok {name}" if cond else f"FAIL {name}: {why}")
        failed += 0 if cond else 1

    @torch.compiler.disable
    def longest(n):
        return int(n.max())

    def f(x, n):
        L = longest(n)
        y = x[:, :L].float()
        return torch.softmax(y * 1.7, dim=-1).sum(dim=0) + y.logsumexp(dim=-1).mean()

    # max_autotune_pointwise: inductor gives its pointwise and reduction kernels several configs and
    # benchmarks them at their first run (with one config per kernel, the default for these inner
    # reductions, nothing is benchmarked and the checks below would prove nothing)
    fn = torch.compile(f, options={"max_autotune_pointwise": True})
    rows = rng.randint(96, 512)
    lens = rng.sample(range(1000, 9000, 8), 4)
    x = torch.randn(rows, 9000, device="cuda", dtype=torch.bfloat16)
    ins = [torch.tensor([ln, ln // 2], device="cuda") for ln in lens]
    for n in ins[:3]:  # the bridge's precompile: one warm call per input
        with slot.hold("warm"):
            fn(x, n)
            torch.cuda.synchronize()
    warm_bench = sf_benchgate.inductor_benchmarks()
    m0, c0 = slot.metered, watch.in_slot
    slot.acquire()  # the tasks' hold
    for n in ins[:3]:
        fn(x, n)
    torch.cuda.synchronize()
    slot.release()
    in_task = slot.metered - m0
    comp_task = watch.in_slot - c0
    slot.acquire()
    fn(x[: rows - 8], ins[3])  # a row count and length the warm calls did not cover: a recompile
    torch.cuda.synchronize()
    slot.release()
    total = sf_benchgate.inductor_benchmarks()
    outside = total - slot.metered
    check("hook", how in ("benchmarker-patch", "inductor-hook"), how)
    check("callbacks", watch.ok, "no dynamo compile callbacks")
    check("benchmarks_ran", warm_bench and warm_bench > 0, f"inductor counted {warm_bench} benchmarks")
    check("none_outside_slot", outside == 0, f"{outside} of {total} counted while the slot was free")
    check("compiles_let_slot_go", watch.suspended >= 1 and seen and all(s == "free" for s in seen),
          f"suspends {watch.suspended}, lock seen {seen}")
    check("warm_inputs_no_compile_in_tasks", in_task == 0 and comp_task == 0,
          f"{in_task} benchmarks and {comp_task} compiles in the tasks' hold")
    check("new_input_compile_detected", watch.in_slot - c0 - comp_task >= 1,
          f"compiles in the tasks' hold after the new length: {watch.in_slot - c0 - comp_task}")
    print(f"seed {seed} torch {torch.__version__} hook {how}: benchmarks {total} (warm phase {warm_bench}), "
          f"outside the slot {outside}, autotune holds {slot.holds.get('autotune', 0)}, hook calls {gate.calls}, "
          f"compile suspends {watch.suspended}, compiles in the tasks' hold {watch.in_slot - c0}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
