#!/usr/bin/env python3
"""test_kspan.py - the device-span cutting of tools/bridge/sf_kspan.py on synthetic Chrome traces.

Random batches (a fresh seed per run, printed): per call a flush kernel, a marker, 1-4 device events
(kernels, memcpys, memsets, with gaps), a marker; CPU-side events and runtime calls interleaved. The
spans must equal max(end) - min(start) of each call's events; a missing marker and a call without
device activity must raise SpanError. Prints `ok NAME` / `FAIL NAME: why`; exit status 1 on a failure.
"""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bridge"))
import sf_kspan  # noqa: E402

MARK = "void at::native::vectorized_elementwise_kernel<4, gcd_kernel_cuda(TensorIteratorBase&)::{lambda}>"

failed = 0


def check(name, cond, why=""):
    global failed
    print(f"ok {name}" if cond else f"FAIL {name}: {why}")
    failed += 0 if cond else 1


def batch(rng, n_calls, empty_call=-1, drop_marker=False):
    """(trace dict, expected spans in ms)"""
    ev, want, t = [], [], rng.uniform(1e3, 1e6)
    def dev(cat, name, dur):
        nonlocal t
        ev.append({"ph": "X", "cat": cat, "name": name, "ts": t, "dur": dur})
        t += dur + rng.uniform(0.5, 30.0)
    for c in range(n_calls):
        dev("kernel", "void at::native::vectorized_elementwise_kernel<4, FillFunctor<int>>", rng.uniform(20, 40))
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t, "dur": 3.0})
        if not (drop_marker and c == n_calls - 1):
            dev("kernel", MARK, 1.5)
        if c != empty_call:
            busy = 0.0
            for _ in range(rng.randint(1, 4)):
                cat = rng.choice(["kernel", "kernel", "gpu_memcpy", "gpu_memset"])
                name = rng.choice(["triton_red_fused_0", "Memcpy DtoD", "Memset", "rms_norm_kernel",
                                   "void at::native::vectorized_elementwise_kernel<4, bitwise_not_kernel_cuda>"])
                d = rng.uniform(0.8, 300.0)
                if rng.random() < 0.3:  # a second stream: an event inside this one, adding no busy time
                    ev.append({"ph": "X", "cat": "kernel", "name": "side_stream_kernel", "ts": t + d * 0.25,
                               "dur": d * 0.5})
                busy += d
                dev(cat, name, d)
            want.append(busy * 1e-3)
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": t - 1, "dur": 9.0})
        dev("kernel", MARK, 1.5)
    rng.shuffle(ev)  # the cutter must sort
    return {"traceEvents": ev + [{"ph": "M", "name": "process_name"}]}, want


seed = int.from_bytes(os.urandom(4), "little")
print(f"# seed {seed}")
rng = random.Random(seed)
worst = 0.0
for trial in range(200):
    n = rng.randint(1, 12)
    tr, want = batch(rng, n)
    got = sf_kspan.spans_from_trace(tr, n)
    worst = max([worst] + [abs(g - w) for g, w in zip(got, want)])
    if len(got) != n:
        worst = float("inf")
check("spans_match", worst < 1e-9, f"largest error {worst} ms")

n = rng.randint(2, 9)
tr, _ = batch(rng, n, drop_marker=True)
try:
    sf_kspan.spans_from_trace(tr, n)
    check("missing_marker_raises", False, "no SpanError")
except sf_kspan.SpanError as e:
    check("missing_marker_raises", "marker" in str(e), str(e))

tr, _ = batch(rng, n, empty_call=rng.randrange(n))
try:
    sf_kspan.spans_from_trace(tr, n)
    check("empty_call_raises", False, "no SpanError")
except sf_kspan.SpanError as e:
    check("empty_call_raises", "no device activity" in str(e), str(e))

tr, want = batch(rng, 3)
try:
    sf_kspan.spans_from_trace(tr, 4)
    check("call_count_checked", False, "no SpanError for 4 calls in a 3-call batch")
except sf_kspan.SpanError:
    check("call_count_checked", True)
# the bridge's batch sizing (solforge_bridge.batch_size), on random timing parameters: 10 calls first,
# later batches within [1, 100], multiples of 5 unless max_iters cuts them, never past max_iters, and
# the whole loop ends (the stopping rule sees max_iters) whatever the per-call wall time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bridge"))
import solforge_bridge  # noqa: E402

bad = ""
for _ in range(300):
    t = {"max_iters": rng.randint(1, 400), "min_iters": 1, "budget_ms": rng.uniform(1, 500), "target_rel_ci": 0.0}
    per_call = rng.choice([0.0, rng.uniform(1e-3, 5.0), rng.uniform(5, 200)])
    done, el, steps = 0, 0.0, 0
    while done < t["max_iters"] and steps < 1000:
        n = solforge_bridge.batch_size(t, done, el)
        if n < 1 or n > 100 or done + n > t["max_iters"] or (done == 0 and n != min(10, t["max_iters"])):
            bad = f"batch {n} after {done} of max_iters {t['max_iters']}"
            break
        if done and n % 5 and done + n != t["max_iters"]:
            bad = f"batch {n} is not a multiple of 5"
            break
        done, el, steps = done + n, el + n * per_call, steps + 1
    if not bad and done != t["max_iters"]:
        bad = f"loop stopped at {done} of {t['max_iters']}"
    if bad:
        break
check("batch_size_bounds", not bad, bad)
sys.exit(1 if failed else 0)
