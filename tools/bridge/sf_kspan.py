"""sf_kspan.py - device-time timing of PyTorch calls, the way the C runner times a candidate.

The C runner's sample of one call is the span of the device activity the call caused: the latest end
minus the earliest start of the kernels, memcpys and memsets (CUPTI activity records) it launched,
after an L2 flush and a synchronize (docs/runner.md). CUDA events around a Python call also count the
host's dispatch before the first kernel whenever the GPU is idle by then (it is: the flush is
synchronized), which makes a PyTorch baseline look slower than the same kernels are; at decode sizes
the dispatch is most of an eager op's time. This module gives the bridge the C runner's measure:
`KernelSpanTimer` runs batches of timed calls under torch.profiler (CUPTI underneath, device activity
only), with a tiny marker kernel (an in-place bitwise_not of one int32) launched right before and right
after every call, exports the batch as a Chrome trace, and `spans_from_trace` cuts the device events
into calls at the markers: sample i = max(end) - min(start) of the events strictly between call i's
two markers. A call that caused no device activity, or a trace whose markers do not pair up, raises
SpanError: the bridge then reports the failure instead of a number (no silent fallback to events).
"""
import json
import os
import tempfile

MARKER = "bitwise_not"  # the marker op's kernel name contains this
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
    """Per-call device spans (milliseconds) of a batch of n_calls calls, each bracketed by two marker
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
        spans.append((max(e[1] for e in inside) - min(e[0] for e in inside)) * 1e-3)
    return spans


class KernelSpanTimer:
    """Times calls as device spans (see the module comment). flush() is the caller's L2 flush."""

    method = "cupti"

    def __init__(self, torch, flush):
        self.torch = torch
        self.flush = flush
        self.mark = torch.zeros(1, dtype=torch.int32, device="cuda")
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
                torch.cuda.synchronize()
                self.mark.bitwise_not_()
                ret = fn(*args)
                self.mark.bitwise_not_()
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
