#!/usr/bin/env python3
"""test_gpu_slot.py - the device slot the PyTorch bridge takes itself (GpuSlot in
tools/bridge/solforge_bridge.py; src/core/gpulock.h is the C side of the same flock protocol).

A second process holds the slot's lock for a random 0.6-1.2 s (it also takes it through the lock file,
as `solforge eval` does); the bridge's acquire() must wait for it, hold the slot exclusively (a third
process that tries the lock without blocking fails while it is held), and release() must append one
timing-log line in the C side's format with the wait it measured, then free the slot. Prints
`ok NAME` / `FAIL NAME: why`; exits non-zero when anything failed.
"""
import fcntl
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bridge"))
import solforge_bridge  # noqa: E402

failed = 0


def check(name, cond, why=""):
    global failed
    if cond:
        print(f"ok {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {why}")


HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()          # tell the test the slot is held
time.sleep(float(sys.argv[3]))
"""

PROBE = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("free")
except BlockingIOError:
    print("held")
"""


def probe(lock):
    return subprocess.run([sys.executable, "-c", PROBE, lock], capture_output=True, text=True).stdout.strip()


with tempfile.TemporaryDirectory() as d:
    lock, log, ready = os.path.join(d, "cuda-0.lock"), os.path.join(d, "timing.log"), os.path.join(d, "ready")
    hold = random.uniform(0.6, 1.2)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, lock, ready, "%.3f" % hold])
    t0 = time.monotonic()
    while not os.path.exists(ready) and time.monotonic() - t0 < 20:
        time.sleep(0.01)
    check("holder_started", os.path.exists(ready))
    spec = {"lock": lock, "log": log, "slot": "cuda-0", "problem": "prob_x", "what": "prob_x-w%d" % random.randint(1, 999)}
    slot = solforge_bridge.GpuSlot(spec)
    a = time.monotonic()
    slot.acquire()
    waited = time.monotonic() - a
    holder.wait()
    check("waits_for_the_holder", waited >= hold * 0.5, "waited %.3f s for a %.3f s hold" % (waited, hold))
    check("holds_exclusively", probe(lock) == "held", probe(lock))
    time.sleep(0.05)
    slot.release()
    check("released", probe(lock) == "free")
    lines = open(log).read().splitlines() if os.path.exists(log) else []
    check("one_log_line", len(lines) == 1, repr(lines))
    if lines:
        f = lines[0].split()
        ok = (len(f) == 8 and f[1] == "cuda-0" and int(f[2]) == os.getpid() and f[5] == "prob_x" and f[6] == "pytorch"
              and f[7] == spec["what"] and abs(float(f[3]) - waited) < 0.1 and float(f[4]) >= 0.04
              and abs(float(f[0]) - time.time()) < 60)
        check("log_line_format", ok, lines[0])
    # no slot in the job: nothing is locked or logged
    none = solforge_bridge.GpuSlot(None)
    none.acquire()
    none.release()
    check("no_slot_no_lock", probe(lock) == "free" and len(open(log).read().splitlines()) == 1)
    # nested holds (inductor's autotuning benchmarks inside a hold): one lock, one log line per
    # outermost hold, labelled; the lock is free only after the outermost release
    label = "autotune%d" % random.randint(1, 99)
    depth = random.randint(2, 4)
    for _ in range(depth):
        slot.hold(label).__enter__()
    nested_held = probe(lock) == "held"
    for _ in range(depth - 1):
        slot.release()
    still = probe(lock) == "held"
    slot.release()
    slot.release()  # one release too many: ignored
    lines = open(log).read().splitlines()
    check("nested_holds", nested_held and still and probe(lock) == "free" and len(lines) == 2
          and lines[1].split()[7] == spec["what"] + "/" + label, repr(lines))

sys.exit(1 if failed else 0)
