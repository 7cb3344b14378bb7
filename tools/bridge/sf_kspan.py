"""sf_kspan.py - device-time timing of PyTorch calls, the way the C runner times a candidate.

The C runner's sample of one call is the span of the device activity the call caused: the latest end
minus the earliest start of the kernels, memcpys and memsets (CUPTI activity records) it launched,
after an L2 flush and a synchronize (docs/runner.md). CUDA events around a Python call also count the
host's dispatch before the first kernel whenever the GPU is idle by then (it is: the flush is
synchronized), which makes a PyTorch baseline look slower than the same kernels are; at decode sizes
the dispatch is most of an eager op's time. This module gives the bridge a device-side measure:
`KernelSpanTimer` runs batches of timed calls under torch.profiler (CUPTI underneath, device activity
only), with a tiny marker kernel (an in-place gcd of one int32 with itself) launched right before and
right after every call, exports the batch as a Chrome trace, and `spans_from_trace` cuts the device events
into calls at the markers: sample i = the time the device was busy for call i, the length of the union
of the intervals of the events strictly between its two markers. Not max(end) - min(start): the
profiler's per-op hooks slow the host's dispatch, so the gaps between an eager composite's kernels
widen under it (rmsnorm t1 eager: 105 µs as a span against 42 µs by CUDA events, H200, session 5);
the busy time leaves those gaps out, which can only flatter a multi-kernel baseline (a lower bound of
its device time), never the candidate. A call that caused no device activity, or a trace whose
markers do not pair up, raises SpanError: the bridge then reports the failure instead of a number (no silent fallback to events).
"""
import json
import os
import tempfile

MARKER = "gcd"  # the marker op's kernel name contains this (an in-place gcd of an int32 with itself: a
# no-op no baseline uses; bitwise_not, the first choice, is how attention baselines invert masks)
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


class SpanError(Exception):
    """The trace cannot be cut into calls (missing markers, a call without device activity)."""


def device_events(trace):
    """[(start_us, end_us, name)] of the device activity in a Chrome trace dict, in start order."""
    out = []
    for e in trace.get("traceEvents", []):
        if e.get("ph") != "X" or e.get("cat") not in DEVICE_CATS:
            continue
        ts, dur = e.get("ts"), e.get("dur")
        if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)) or dur < 0:
            continue
        out.append((float(ts), float(ts) + float(dur), str(e.get("name", ""))))
    out.sort(key=lambda x: x[0])
    return out


def spans_from_trace(trace, n_calls, marker=MARKER):
    """Per-call device busy times (milliseconds) of a batch of n_calls calls, each bracketed by two marker
    kernels. Events that are not between a call's markers (the flushes) are ignored. Raises
    SpanError when the markers do not come as 2 * n_calls or a call has no device event."""
    evs = device_events(trace)
    marks = [i for i, e in enumerate(evs) if marker in e[2]]
    if len(marks) != 2 * n_calls:
        raise SpanError(f"expected {2 * n_calls} marker kernels, found {len(marks)}")
    spans = []
    for c in range(n_calls):
        a, b = marks[2 * c], marks[2 * c + 1]
        inside = evs[a + 1:b]
        if not inside:
            raise SpanError(f"call {c} of the batch caused no device activity")
        spans.append(busy_us(inside) * 1e-3)
    return spans


def busy_us(events):
    """Length of the union of the events' [start, end) intervals (µs): the time the device was busy."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e, _ in sorted(events):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0.0)


def touch_pages(torch, args, stride=65536):
    """One byte read every `stride` bytes of every contiguous CUDA tensor in args (lists and tuples
    walked): after an L2 flush, the tensors' address translations are warm again while their data
    stays cold (one sector per 64 KiB). A timing-parity experiment (tools/membench/flushprobe.py's
    runner+touch column, docs/runner.md "Timing parity"); the bridge does not use it."""
    stack = list(args)
    while stack:
        a = stack.pop()
        if isinstance(a, (list, tuple)):
            stack.extend(a)
        elif isinstance(a, torch.Tensor) and a.is_cuda and a.numel() > 0 and a.is_contiguous():
            a.detach().reshape(-1).view(torch.uint8)[::stride].max()


class KernelSpanTimer:
    """Times calls as device spans (see the module comment). flush() is the caller's L2 flush;
    touch(args), if given, runs after it and before the call's first marker."""

    method = "cupti"

    def __init__(self, torch, flush, touch=None):
        self.torch = torch
        self.flush = flush
        self.touch = touch  # touch(args): after the flush, before the markers (address translations)
        self.mark = torch.full((1,), 12, dtype=torch.int32, device="cuda")
        from torch.profiler import ProfilerActivity, profile
        self.profile = profile
        self.activities = [ProfilerActivity.CUDA]

    def time_batch(self, fn, args_list):
        """[(ms, return value)] of one call per entry of args_list, in order, all in one profile."""
        torch = self.torch
        rets = []
        with self.profile(activities=self.activities) as prof:
            for args in args_list:
                self.flush()
                if self.touch is not None:
                    self.touch(args)
                torch.cuda.synchronize()
                self.mark.gcd_(self.mark)
                ret = fn(*args)
                self.mark.gcd_(self.mark)
                torch.cuda.synchronize()
                rets.append(ret)
        fd, path = tempfile.mkstemp(suffix=".json", prefix="sf-kspan-")
        os.close(fd)
        try:
            prof.export_chrome_trace(path)
            with open(path) as f:
                trace = json.load(f)
        finally:
            os.unlink(path)
        spans = spans_from_trace(trace, len(args_list))
        return list(zip(spans, rets))
