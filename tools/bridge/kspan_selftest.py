#!/usr/bin/env python3
"""kspan_selftest.py - checks the bridge's device-span timing (sf_kspan.py) on this GPU before a run.

usage: kspan_selftest.py

Times three PyTorch calls of different sizes (an elementwise op on 4 K and 64 M elements, a 3-kernel
composite) both ways: device spans under torch.profiler and CUDA events around the call, after the same
L2 flush, and prints both medians. Exit 0 when every span median is positive and at most the events
median (+5% and 2 us of slack): a span can only leave out host time, never add any. Exit 1 otherwise,
3 without torch or a GPU.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sf_kspan  # noqa: E402


def main():
    try:
        import torch
    except ImportError:
        print("kspan_selftest: torch is not importable")
        return 3
    if not torch.cuda.is_available():
        print("kspan_selftest: no CUDA device")
        return 3
    flush_buf = torch.empty(2 * 64 << 20, dtype=torch.int8, device="cuda")
    flush = flush_buf.zero_
    spans = sf_kspan.KernelSpanTimer(torch, flush)
    ev = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
    small = torch.randn(4096, device="cuda")
    big = torch.randn(64 << 20, device="cuda")
    cases = [("mul 4K", lambda x: x * 2, small), ("mul 64M", lambda x: x * 2, big),
             ("3 ops 4K", lambda x: (x * 2 + 1).relu(), small)]
    ok = True
    for name, fn, x in cases:
        for _ in range(3):
            fn(x)
        torch.cuda.synchronize()
        evs = []
        for _ in range(20):
            flush()
            torch.cuda.synchronize()
            ev[0].record()
            fn(x)
            ev[1].record()
            ev[1].synchronize()
            evs.append(ev[0].elapsed_time(ev[1]))
        try:
            sp = [ms for ms, _ in spans.time_batch(fn, [(x,)] * 10) + spans.time_batch(fn, [(x,)] * 10)]
        except sf_kspan.SpanError as e:
            print(f"{name}: device spans FAILED: {e}")
            ok = False
            continue
        s, e = statistics.median(sp), statistics.median(evs)
        good = 0 < s <= e * 1.05 + 0.002
        ok = ok and good
        print(f"{name}: span {s * 1e3:.2f} us, events {e * 1e3:.2f} us {'ok' if good else 'BAD'}")
    print("kspan_selftest:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
