#!/usr/bin/env python3
"""solforge_bridge.py - the PyTorch bridge: PyTorch references and baselines for the C evaluator.

    solforge_bridge.py --probe [--device cuda|cpu]     prints {"torch": VERSION, ...}; exit 0 usable,
                                                       3 torch missing or the device unusable
    solforge_bridge.py JOB.json BRIDGE.json            runs the tasks of BRIDGE.json on one workload

`solforge eval` starts this program (docs/bridge.md) once per workload that needs PyTorch, after the
candidate ran. JOB.json is the runner job (docs/runner.md: axes, inputs, outputs, rounds, timing).
BRIDGE.json: {"device": "cuda"|"cpu", "problem", "what" (the workload, for the logs), "inputs_dir": DIR,
"definition": PATH, "tasks": [TASK...]}
with TASK {"role": "reference"|"baseline", "name", "source": PATH|"@reference", "entry": "run",
"compile": bool, "time": bool, "out_dir": DIR}. The inputs are those the C runners drew, written by
solforge-inputs as DIR/in_round<r>.safetensors, DIR/in_set<s>.safetensors (the timing sets a
baseline is timed on) and DIR/in_audit<i>.safetensors (the inputs of the candidate's audited timed
call i, perturbation included: the reference recomputes it as audit<i>.safetensors).

Every task leaves the runner's files in its out_dir: round<r>.safetensors (reference: float32 for
float outputs; baseline: the definition's dtypes), audit<i>.safetensors (reference only: the audited
timed calls recomputed), result.json {"status": "ok"|"error"|"solution_error"|
"unavailable", "message", "audits", "timing": {"method": "cupti"|"events"|"clock", "samples_ms", "compile_s",
...}}. torch is imported lazily: without it every task says "unavailable" and the process exits 0.
"""
import importlib.util
import json
import math
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sf_io  # noqa: E402
import sf_kspan  # noqa: E402
from sf_benchgate import BenchGate, CompileWatch, benchmark_lock_hook, inductor_benchmarks  # noqa: E402,F401

T_START = time.perf_counter()

TORCH_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
                "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "I64": "int64", "I32": "int32",
                "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool"}


def progress(event, **fields):
    """With $SOLFORGE_BRIDGE_PROGRESS set: appends one JSON line {"pid", "t_s" (seconds since this process
    started), "event", fields...} to that file at once (opened, written, closed per line), so a bridge
    killed by the evaluator's time limit still leaves where its time went (the phases log is written only
    at the end). Events: start, inputs (preloaded), compile_begin / compile_end (a compile task's first
    call), warm (each warm call), task_begin / task_end. A file that cannot be written is ignored."""
    path = os.environ.get("SOLFORGE_BRIDGE_PROGRESS")
    if not path:
        return
    rec = {"pid": os.getpid(), "t_s": round(time.perf_counter() - T_START, 3), "event": event}
    rec.update(fields)
    try:
        with open(path, "a") as f:
            f.write(json.dumps(rec) + "\n")
    except OSError:
        pass


class TaskError(Exception):
    """A task failed; status is the result.json status."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


MESSAGE_MAX = 4000  # characters of a task's message in result.json
MESSAGE_HEAD = 1200  # of which the start: the line that says what failed


def clip_message(message, limit=MESSAGE_MAX, head=MESSAGE_HEAD):
    """message unchanged when it fits limit characters; else its first head characters (the C side
    logs the first line: "torch.compile failed: InductorError: ..."; at most a third of limit) and its
    last ones (the traceback's end), joined by a line that says how much was left out, limit characters in all.
    (Keeping only the tail cut the first line mid-word: session 22's flex_attention errors read "v_len,".)"""
    if len(message) <= limit:
        return message
    head = min(head, limit // 3)  # (limit >= 200: room for the gap line and a tail)
    left = len(message) - limit
    for _ in range(3):  # the gap's own length depends on the count it states
        gap = "\n[... %d characters left out ...]\n" % left
        tail = limit - head - len(gap)
        left = len(message) - head - tail
    gap = "\n[... %d characters left out ...]\n" % left
    return message[:head] + gap + message[len(message) - tail:]


def write_result(out_dir, status, message="", audits=None, timing=None):
    """Writes out_dir/result.json atomically (the runner protocol's last file). audits: the list of
    {"set", "key"} of the audit<i>.safetensors written (reference role), as the job named them."""
    os.makedirs(out_dir, exist_ok=True)
    r = {"status": status, "message": clip_message(message)}
    if audits:
        r["audits"] = audits
    if timing:
        r["timing"] = timing
    tmp = os.path.join(out_dir, f"result.json.tmp{os.getpid()}")
    with open(tmp, "w") as f:
        json.dump(r, f)
    os.replace(tmp, os.path.join(out_dir, "result.json"))


def import_torch():
    """(torch module, None) or (None, why)."""
    try:
        import torch  # noqa: F401
        return torch, None
    except Exception as e:  # ImportError, or a broken install raising anything
        return None, f"torch is not importable ({type(e).__name__}: {e})"


def device_ok(torch, device):
    if device == "cuda" and not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no CUDA device"
    return None


class GpuSlot:
    """The device's timing slot (src/core/gpulock.h) taken by the bridge itself, after python and torch
    have started: an flock(2) on the slot's lock file. Holds nest (hold() inside hold() keeps the one
    lock); each outermost hold appends one line "START SLOT PID WAIT_S HELD_S PROBLEM pytorch WHAT" to
    the timing log, as the C side writes its own (WHAT gets "/LABEL" when the hold has a label). A job
    without "gpu_slot" (no SOLFORGE_GPU_LOCKS) locks nothing. meter: a count read at each outermost
    acquire and release (inductor's benchmark count): metered sums its growth while the lock was held.
    suspend()/resume() let the lock go inside a hold and take it back (a compile in a warm-up call)."""

    def __init__(self, spec, meter=None):
        self.spec = spec if isinstance(spec, dict) and spec.get("lock") else None
        self.fd = None
        self.depth = 0
        self.label = ""
        self.holds = {}  # label -> outermost holds taken
        self.waited_s = 0.0  # all waits for the lock
        self.meter = meter  # a count to meter while the lock is held (inductor's benchmarks), or None
        self.metered = 0  # how much the meter's count grew while the lock was held
        self._saved = None
        self.m0 = None

    def acquire(self, label=""):
        self.depth += 1
        if not self.spec or self.depth > 1:
            return
        import fcntl
        self.label = label
        self.holds[label] = self.holds.get(label, 0) + 1
        self.t_req = time.monotonic()
        self.fd = os.open(self.spec["lock"], os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)  # python retries EINTR itself
        self.t_got = time.monotonic()
        self.waited_s += self.t_got - self.t_req
        self.start = time.time()
        self.m0 = self.meter() if self.meter else None

    def release(self):
        if self.depth == 0:
            return
        self.depth -= 1
        if self.depth > 0 or self.fd is None:
            return
        import fcntl
        held = time.monotonic() - self.t_got
        if self.m0 is not None:
            self.metered += (self.meter() or 0) - self.m0
        sp = self.spec
        what = str(sp.get("what", "-")) + (f"/{self.label}" if self.label else "")
        line = "%.3f %s %d %.3f %.3f %s pytorch %s\n" % (self.start, sp.get("slot", "-"), os.getpid(),
                                                          self.t_got - self.t_req, held, sp.get("problem", "-"), what)
        if sp.get("log"):
            try:
                # one write(2) of a short line on O_APPEND: lines of concurrent processes do not interleave
                lf = os.open(sp["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
                os.write(lf, line.encode())
                os.close(lf)
            except OSError:
                pass
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = None

    def suspend(self):
        """Lets the lock go (logging the hold so far) while keeping the nesting for resume(): for
        host-only work (a compile) inside a hold. No-op when nothing is held or already suspended."""
        if self.depth == 0 or self._saved is not None:
            return
        self._saved = (self.depth, self.label)
        self.depth = 1
        self.release()

    def resume(self):
        """Takes the lock again (waiting for it: a new outermost hold with the old label) and restores
        the nesting suspend() saved."""
        if self._saved is None:
            return
        depth, label = self._saved
        self._saved = None
        self.acquire(label)
        self.depth = depth

    def hold(self, label=""):
        """A context manager around acquire(label) / release()."""
        slot = self

        class _Hold:
            def __enter__(self):
                slot.acquire(label)

            def __exit__(self, *exc):
                slot.release()
                return False
        return _Hold()


def probe(device):
    torch, why = import_torch()
    if torch is None:
        print(json.dumps({"torch": None, "error": why}))
        return 3
    why = device_ok(torch, device)
    info = {"torch": str(torch.__version__), "device": device, "fake": bool(getattr(torch, "SF_FAKE", False))}
    if why:
        info["error"] = why
    print(json.dumps(info))
    return 3 if why else 0


# --- tensors in and out ----------------------------------------------------------------------------

class Codec:
    """Moves tensors between safetensors bytes and torch (or, with the CI's numpy-backed fake torch,
    numpy float32 arrays)."""

    def __init__(self, torch, device):
        self.torch, self.device = torch, device
        self.fake = bool(getattr(torch, "SF_FAKE", False))
        self.host = {}  # id(raw) -> (raw, decoded host tensor): each input is decoded once per process

    def to_torch(self, st_dtype, shape, raw):
        """A fresh tensor on the device holding raw (a run() may write its inputs in place: every call
        gets its own copy; only the host-side decode is shared)."""
        if self.fake:
            return sf_io.decode(st_dtype, shape, raw)
        hit = self.host.get(id(raw))
        if hit is None or hit[0] is not raw:
            hit = (raw, self._host_tensor(st_dtype, shape, raw))
            self.host[id(raw)] = hit
        t = hit[1]
        if st_dtype == "F4":
            t = t.to(self.device, copy=True)
            x2 = getattr(self.torch, "float4_e2m1fn_x2", None)
            return t.view(x2) if x2 is not None else t
        return t.to(self.device, copy=True)

    def _host_tensor(self, st_dtype, shape, raw):
        torch = self.torch
        if st_dtype == "F4":
            # two e2m1 codes per byte, last dimension halved (torch.float4_e2m1fn_x2 where it exists)
            pshape = list(shape[:-1]) + [(int(shape[-1]) + 1) // 2] if shape else []
            return torch.frombuffer(bytearray(raw), dtype=torch.uint8).reshape(pshape)
        dt = getattr(torch, TORCH_DTYPES[st_dtype])
        if raw.size == 0:
            return torch.empty(tuple(shape), dtype=dt)
        return torch.frombuffer(bytearray(raw), dtype=dt).reshape(tuple(shape))

    def from_torch(self, name, t, st_dtype, shape, reference):
        """Raw bytes of output `name` as st_dtype (reference: float formats as F32). Returns (st, raw)."""
        want_st = "F32" if reference and sf_io.ST_DTYPES[st_dtype][0] in sf_io.FLOAT_DTYPES else st_dtype
        if self.fake:
            import numpy as np
            a = np.asarray(t)
            if tuple(a.shape) != tuple(shape):
                raise TaskError("error", f"output '{name}': shape {list(a.shape)}, the definition binds {list(shape)}")
            return want_st, sf_io.encode(want_st, a)
        torch = self.torch
        if not isinstance(t, torch.Tensor):
            raise TaskError("error", f"output '{name}': run() returned {type(t).__name__}, not a tensor")
        t = t.detach()
        if st_dtype == "F4":
            # packed e2m1 (uint8 or float4_e2m1fn_x2), last dimension halved
            raw = t.contiguous().view(torch.uint8).cpu().numpy().reshape(-1)
            if raw.size != sf_io.nbytes_of("F4", shape):
                raise TaskError("error", f"output '{name}': {raw.size} packed float4 bytes for shape {list(shape)}")
            if want_st == "F32":
                return want_st, sf_io.encode("F32", sf_io.decode("F4", shape, raw))
            return want_st, raw
        if tuple(t.shape) != tuple(shape):
            raise TaskError("error", f"output '{name}': shape {list(t.shape)}, the definition binds {list(shape)}")
        want = getattr(torch, TORCH_DTYPES[want_st])
        if t.dtype != want:
            if not reference and want_st != "F32" and t.dtype != want:
                raise TaskError("error", f"output '{name}': dtype {t.dtype}, the definition says {want}")
            t = t.to(want)
        t = t.contiguous().cpu()
        if t.numel() == 0:
            import numpy as np
            return want_st, np.zeros(0, np.uint8)
        return want_st, t.view(torch.uint8).numpy().reshape(-1)


# --- one task --------------------------------------------------------------------------------------

class Inputs:
    """The workload's input files (in_round<r>, in_set<s>, in_audit<i>.safetensors), each read once per
    process and shared by every task: preload() reads them all before the device slot is taken, so
    the slot is held for device work, not for reading and decoding files."""

    def __init__(self, inputs_dir):
        self.dir = inputs_dir
        self.files = {}

    def read(self, name):
        """{name: (st_dtype, shape, raw)} of one file (sf_io.read_safetensors; raises its IOError_)."""
        if name not in self.files:
            self.files[name] = sf_io.read_safetensors(os.path.join(self.dir, name))
        return self.files[name]

    def exists(self, name):
        return name in self.files or os.path.exists(os.path.join(self.dir, name))

    def preload(self, job, codec):
        """Reads every input file the job names and decodes its tensors on the host. Errors are left
        for the task that reads the file (it reports them as its own failure)."""
        names = [f"in_round{r}.safetensors" for r in range(len(job.get("seeds", [])))]
        names += [f"in_audit{i}.safetensors" for i in range(len(job.get("audits", [])))]
        s = 0
        while self.exists(f"in_set{s}.safetensors"):
            names.append(f"in_set{s}.safetensors")
            s += 1
        for n in names:
            try:
                files = self.read(n)
                if not codec.fake:
                    for st, shape, raw in files.values():
                        codec.host[id(raw)] = (raw, codec._host_tensor(st, shape, raw))
            except Exception:  # noqa: BLE001 - reported by the task that needs the file
                self.files.pop(n, None)


def load_fn(task, definition):
    """The callable of a task: a baseline file's entry, or the definition's reference run()."""
    src = task.get("source", "@reference")
    entry = task.get("entry", "run")
    if src == "@reference":
        code = definition.get("reference")
        if not isinstance(code, str) or not code.strip():
            raise TaskError("error", "the definition has no PyTorch reference")
        ns = {"__name__": "sf_reference"}
        exec(compile(code, "<definition.reference>", "exec"), ns)
        fn = ns.get(entry)
    else:
        spec = importlib.util.spec_from_file_location(f"sf_baseline_{abs(hash(src))}", src)
        if spec is None:
            raise TaskError("error", f"cannot load {src}")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        fn = getattr(mod, entry, None)
    if not callable(fn):
        raise TaskError("error", f"{src} defines no function {entry}()")
    return fn


def call_args(job, codec, files):
    """Positional arguments in definition order: tensors from the safetensors file, scalars from the job."""
    args = []
    for a in job["inputs"]:
        if a["gen"] == "scalar":
            args.append(float(a["a"]))
            continue
        if a["name"] not in files:
            raise TaskError("error", f"the inputs file lacks '{a['name']}'")
        st, shape, raw = files[a["name"]]
        if st != sf_io.DEF_TO_ST.get(a["dtype"]) or list(shape) != list(a.get("shape", [])):
            raise TaskError("error", f"input '{a['name']}': file has {st} {list(shape)}, the job {a['dtype']} {a.get('shape')}")
        args.append(codec.to_torch(st, shape, raw))
    return args


def outputs_of(job, ret):
    outs = job["outputs"]
    if not isinstance(ret, (tuple, list)):
        ret = (ret,)
    if len(ret) != len(outs):
        raise TaskError("error", f"run() returned {len(ret)} outputs, the definition has {len(outs)}")
    return list(ret)


def outputs_raw(job, codec, ret, reference):
    """The outputs of one call as sf_io.write_safetensors' tensor list (copied to the host)."""
    ts = []
    for spec, t in zip(job["outputs"], outputs_of(job, ret)):
        st = sf_io.DEF_TO_ST[spec["dtype"]]
        st_out, raw = codec.from_torch(spec["name"], t, st, spec.get("shape", []), reference)
        ts.append((spec["name"], st_out, spec.get("shape", []), raw))
    return ts


def sync(codec):
    if not codec.fake and codec.device == "cuda":
        codec.torch.cuda.synchronize()


def rel_ci(samples):
    """Relative half-width of the 95% CI of the median (src/core/stats.c)."""
    n = len(samples)
    if n < 6:
        return math.inf
    s = sorted(samples)
    pos = 0.5 * (n - 1)
    i = int(math.floor(pos))
    med = s[n - 1] if i >= n - 1 else s[i] * (1 - (pos - i)) + s[i + 1] * (pos - i)
    h = 0.98 * math.sqrt(n)
    j = max(int(math.floor(n / 2.0 - h)), 0)
    k = min(int(math.ceil(n / 2.0 + 1 + h)) - 1, n - 1)
    return (s[k] - s[j]) / (2 * med) if med > 0 else math.inf


def timing_done(t, samples, elapsed_ms):
    """The runners' stopping rule (rc_timing_done)."""
    n = len(samples)
    if n >= t["max_iters"]:
        return True
    if n < t["min_iters"]:
        return False
    if elapsed_ms >= t["budget_ms"]:
        return True
    if n % 5:
        return False
    return rel_ci(samples) <= t["target_rel_ci"]


def batch_size(t, n_done, elapsed_ms):
    """Calls in the next profiled batch: 10 first, then as many as the remaining budget_ms holds at the
    wall time per call seen so far (profile overheads included), 10 to 100, a multiple of 5 (the
    stopping rule looks at the CI every 5 samples), never past max_iters."""
    left = max(int(t["max_iters"]) - n_done, 1)
    if n_done == 0:
        return min(10, left)
    per_call = elapsed_ms / n_done
    fit = int((float(t["budget_ms"]) - elapsed_ms) / per_call) if per_call > 0 else 100
    n = max(10, min(100, fit)) // 5 * 5
    return max(1, min(n, left))


class Timer:
    """Times one call after an L2 flush. cuda: device spans under torch.profiler (sf_kspan, "cupti":
    what the C runner measures), or CUDA events on the current stream with SOLFORGE_BRIDGE_TIMING=events
    (the warm-up always uses events); cpu / the fake torch: the monotonic clock."""

    def __init__(self, codec, flush_bytes, flush_reads=False):
        self.codec = codec
        self.flush_reads = flush_reads  # eval --flush reads: the buffer read (clean lines), not written
        self.spans = None  # sf_kspan.KernelSpanTimer on cuda (the C runner's device-span measure)
        self.last_ms = 0.0
        torch = codec.torch
        if codec.fake or codec.device != "cuda":
            import numpy as np
            self.method = "clock"
            self.flush_buf = np.zeros(max(flush_bytes, 1 << 20) // 8, np.float64)
        else:
            self.method = "events"
            if flush_bytes <= 0:
                l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20)
                flush_bytes = 2 * int(l2)
            self.flush_buf = torch.empty(flush_bytes // 4, dtype=torch.int32, device="cuda")
            self.l2reset = persisting_l2_reset()
            self.ev = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            if os.environ.get("SOLFORGE_BRIDGE_TIMING", "cupti") != "events":
                self.spans = sf_kspan.KernelSpanTimer(torch, self.flush)
                self.method = self.spans.method
        self.flush_bytes = flush_bytes

    def flush(self):
        """The C runner's step before a timed call, in its order (src/runner/runner_cuda_timing.cu): the
        persisting-L2 state reset, then the L2 flushed (a zero_() of the buffer; with --flush reads a sum over it:
        loads only, clean lines left). Without the reset, lines a kernel loaded with an
        L2 eviction hint (Inductor's reductions load with evict_last) can outlive the flush, and a
        baseline would be timed on inputs the candidate's runner sees cold."""
        if self.method != "clock":
            self.l2reset()
            if self.flush_reads:
                self.flush_sink = self.flush_buf.sum()  # a reduction kernel over the buffer: loads only
            else:
                self.flush_buf.zero_()
        elif self.flush_reads:
            self.flush_sink = float(self.flush_buf.sum())
        else:
            self.flush_buf += 1.0

    def time_call(self, fn, args):
        """One call after a flush; its milliseconds (events or clock) in self.last_ms."""
        self.flush()
        if self.method != "clock":
            a, b = self.ev
            a.record()
            fn(*args)
            b.record()
            b.synchronize()
            self.last_ms = a.elapsed_time(b)
            return
        t0 = time.perf_counter()
        fn(*args)
        self.last_ms = (time.perf_counter() - t0) * 1e3


def persisting_l2_reset():
    """cuCtxResetPersistingL2Cache of the current context as a function (the runner calls the runtime's
    cudaCtxResetPersistingL2Cache before every timed call). A device without the driver entry point or
    a failing reset is noted once on stderr, as the runner does, and the flush goes on without it."""
    import ctypes
    try:
        fn = ctypes.CDLL("libcuda.so.1").cuCtxResetPersistingL2Cache
    except (OSError, AttributeError) as e:
        print(f"solforge_bridge: note: cannot reset the persisting L2 state: {e}", file=sys.stderr)
        return lambda: None
    fn.restype = ctypes.c_int
    noted = [False]

    def reset():
        r = fn()
        if r != 0 and not noted[0]:
            noted[0] = True
            print(f"solforge_bridge: note: cannot reset the persisting L2 state: CUresult {r}", file=sys.stderr)
    return reset


def input_files(job, inputs):
    """The input files a baseline task is called on, in the order it meets them: the checked rounds,
    then the timing sets."""
    names = [f"in_round{r}.safetensors" for r in range(len(job.get("seeds", [])))]
    s = 0
    while inputs.exists(f"in_set{s}.safetensors"):
        names.append(f"in_set{s}.safetensors")
        s += 1
    return names


def compile_task(job, task, definition, codec, inputs, slot=None, warm_hold=False):
    """torch.compile of a baseline task's function, its first call on round 0's inputs (where inductor
    compiles and autotunes), then one warm call on each other input file it will be called on (rounds
    and timing sets): a function whose shapes follow the data (a host read of the longest sequence,
    ragged workloads) recompiles on another input, and that compile, with its autotuning, belongs here
    (before the slot), not in the tasks' hold. warm_hold: every call holds the slot ("warm"; a
    CompileWatch lets it go while dynamo compiles), so their kernels run in it. A warm call that fails
    ends the warm-up: the task reports that input's failure itself. Returns (compiled fn, seconds of
    the first call, {"warm_calls", "warm_s"}), seconds without slot waits, or the TaskError to report."""
    try:
        if codec.fake:
            raise TaskError("unavailable", "torch.compile needs the real torch")
        if os.environ.get("SOLFORGE_BRIDGE_NO_COMPILE"):
            raise TaskError("unavailable", "torch.compile baselines disabled by SOLFORGE_BRIDGE_NO_COMPILE")
        fn = load_fn(task, definition)
        fn = codec.torch.compile(fn)
        hold = slot.hold if (slot is not None and warm_hold) else None

        def call(name):
            args = call_args(job, codec, inputs.read(name))
            t = time.perf_counter()
            w = slot.waited_s if slot is not None else 0.0
            if hold:
                with hold("warm"):
                    fn(*args)
                    sync(codec)
            else:
                fn(*args)
                sync(codec)
            return time.perf_counter() - t - ((slot.waited_s - w) if slot is not None else 0.0)

        label = task.get("name", "-")
        progress("compile_begin", task=label)
        try:
            first_s = call("in_round0.safetensors")
        except Exception as e:
            progress("compile_end", task=label, ok=False)
            raise TaskError("solution_error", f"torch.compile failed: {type(e).__name__}: {e}") from None
        progress("compile_end", task=label, ok=True, first_s=round(first_s, 3))
        warm = {"warm_calls": 0, "warm_s": 0.0}
        for name in input_files(job, inputs)[1:]:
            try:
                s_ = call(name)
            except Exception:  # noqa: BLE001 - reported by the task when it calls this input
                progress("warm", task=label, input=name, ok=False)
                break
            progress("warm", task=label, input=name, ok=True, s=round(s_, 3))
            warm["warm_s"] += s_
            warm["warm_calls"] += 1
        return fn, first_s, warm
    except TaskError as e:
        return e
    except sf_io.IOError_ as e:
        return TaskError("error", f"bridge i/o: {e}")
    except Exception:
        return TaskError("error", "bridge: " + traceback.format_exc(limit=6))


def run_task(job, task, definition, codec, inputs, pending, compiled=None):
    """Runs one task; its output files are appended to pending as (path, tensors) for write_results()
    after the device slot is released. compiled: compile_task()'s result when the task was compiled
    before (outside the slot). Returns (audits, timing)."""
    out_dir = task["out_dir"]
    os.makedirs(out_dir, exist_ok=True)
    reference = task["role"] == "reference"
    fn = load_fn(task, definition)
    rounds = [inputs.read(f"in_round{r}.safetensors") for r in range(len(job["seeds"]))]
    n_sets = 0
    while inputs.exists(f"in_set{n_sets}.safetensors"):
        n_sets += 1
    compile_s = warm_info = None
    if task.get("compile"):
        if compiled is None:
            compiled = compile_task(job, task, definition, codec, inputs)
        if isinstance(compiled, TaskError):
            raise compiled
        fn, compile_s, warm_info = compiled
    # checked rounds
    for r, files in enumerate(rounds):
        args = call_args(job, codec, files)
        try:
            ret = fn(*args)
            sync(codec)
        except TaskError:
            raise
        except Exception as e:
            raise TaskError("solution_error", f"run() raised {type(e).__name__}: {e}\n"
                            + traceback.format_exc(limit=4)) from None
        pending.append((os.path.join(out_dir, f"round{r}.safetensors"), outputs_raw(job, codec, ret, reference)))
    timing = job.get("timing")
    if reference:
        # the audited timed calls of the candidate: their inputs (timing set + that call's
        # perturbation) were written by solforge-inputs as in_audit<i>; recompute each
        audits = []
        for i, a in enumerate(job.get("audits", [])):
            files = inputs.read(f"in_audit{i}.safetensors")
            pending.append((os.path.join(out_dir, f"audit{i}.safetensors"),
                            outputs_raw(job, codec, fn(*call_args(job, codec, files)), True)))
            audits.append({"set": a["set"], "key": a["key"]})
        return audits, None
    if not task.get("time", True) or not timing or n_sets == 0:
        return None, None
    sets = [call_args(job, codec, inputs.read(f"in_set{s}.safetensors")) for s in range(n_sets)]
    timer = Timer(codec, int(timing.get("flush_bytes", 0)), bool(timing.get("flush_reads", 0)))
    t_start = time.perf_counter()
    warm = 0
    while warm < 3 or (time.perf_counter() - t_start) * 1e3 < timing["warmup_ms"]:
        timer.time_call(fn, sets[warm % n_sets])
        warm += 1
    samples = []
    t_timed = time.perf_counter()
    if timer.spans is not None:
        # device spans in batches, one profile each (starting and exporting a profile costs far more
        # than a small call: batch_size() sizes the batches); the stopping rule after each batch
        while True:
            n = batch_size(timing, len(samples), (time.perf_counter() - t_timed) * 1e3)
            batch = [sets[(len(samples) + i) % n_sets] for i in range(n)]
            try:
                samples += [ms for ms, _ in timer.spans.time_batch(fn, batch)]
            except sf_kspan.SpanError as e:
                raise TaskError("error", f"device-span timing failed: {e} (SOLFORGE_BRIDGE_TIMING=events "
                                "times with CUDA events instead)") from None
            if timing_done(timing, samples, (time.perf_counter() - t_timed) * 1e3):
                break
    else:
        while True:
            timer.time_call(fn, sets[len(samples) % n_sets])
            samples.append(timer.last_ms)
            if timing_done(timing, samples, (time.perf_counter() - t_timed) * 1e3):
                break
    wall_ms = (time.perf_counter() - t_start) * 1e3
    t = {"method": timer.method, "sets": n_sets, "flush_bytes": timer.flush_bytes,
         "flush": "reads" if timer.flush_reads else "memset", "timed_calls": len(samples),
         "wall_ms": wall_ms, "timed_wall_ms": (time.perf_counter() - t_timed) * 1e3, "samples_ms": samples}
    if compile_s is not None:
        t["compile_s"] = compile_s
        t.update(warm_info)
    return None, t


def main(argv):
    if len(argv) >= 2 and argv[1] == "--probe":
        dev = argv[3] if len(argv) >= 4 and argv[2] == "--device" else "cuda"
        return probe(dev)
    if len(argv) != 3:
        print("usage: solforge_bridge.py JOB.json BRIDGE.json | --probe [--device cuda|cpu]", file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            job = json.load(f)
        with open(argv[2]) as f:
            bridge = json.load(f)
        tasks = bridge["tasks"]
        if not isinstance(bridge.get("inputs_dir"), str):
            raise ValueError("inputs_dir must be a path")
        for t in tasks:
            if not isinstance(t.get("out_dir"), str) or t.get("role") not in ("reference", "baseline"):
                raise ValueError("every task needs out_dir and role reference|baseline")
        with open(bridge["definition"]) as f:
            definition = json.load(f)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"solforge_bridge: bad job: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    torch, why = import_torch()
    if torch is not None:
        why = device_ok(torch, bridge.get("device", "cuda"))
    if why:
        for t in tasks:
            write_result(t["out_dir"], "unavailable", why)
        return 0
    codec = Codec(torch, bridge.get("device", "cuda"))
    inputs = Inputs(bridge["inputs_dir"])
    progress("start", problem=bridge.get("problem"), what=bridge.get("what"), tasks=[t.get("name", "-") for t in tasks])
    inputs.preload(job, codec)  # file reads and decodes before the slot: it is held for device work
    progress("inputs", files=len(input_files(job, inputs)))
    warm_device(torch, codec)
    real = not codec.fake
    slot = GpuSlot(bridge.get("gpu_slot"), (lambda: inductor_benchmarks(torch)) if real else None)
    # torch.compile outside the slot where inductor lets a harness lock its GPU benchmarks: the compile
    # (CPU: tracing, code generation, Triton builds) runs beside other processes' timing, every
    # autotuning benchmark holds the slot (label "autotune" in the timing log), and the compiled
    # function is called once on every input it will meet (recompiles happen here, not in the tasks'
    # hold), each call holding the slot ("warm") except while dynamo compiles (CompileWatch; without
    # dynamo's callbacks those calls run unlocked). Otherwise (or SOLFORGE_BRIDGE_COMPILE_IN_SLOT=1)
    # the compile holds the slot as everything else does.
    lock_api, hook = None, "compile in the slot"
    if slot.spec and real and not os.environ.get("SOLFORGE_BRIDGE_COMPILE_IN_SLOT"):
        lock_api, hook = benchmark_lock_hook(torch)
    gate = BenchGate(slot)
    if lock_api:
        lock_api(gate.hold)
    watch = CompileWatch(slot) if slot.spec and real else None
    compiled, compile_wall = {}, 0.0
    t_pre = time.perf_counter()
    try:
        if lock_api:
            compiled = precompile(job, tasks, definition, codec, inputs, slot, bool(watch and watch.ok))
            compile_wall = time.perf_counter() - t_pre
        t_req = time.perf_counter()
        m_pre, c_pre = slot.metered, (watch.in_slot if watch else 0)
        slot.acquire()
        t_slot = time.perf_counter()
        done = run_tasks(torch, job, tasks, definition, codec, inputs, compiled, hook if lock_api else False)
    finally:
        while slot.depth:
            slot.release()
    t_held = time.perf_counter()
    write_results(done)
    total = inductor_benchmarks(torch) if real else None
    counts = {"autotune_holds": slot.holds.get("autotune", 0), "hook_calls": gate.calls,
              "inductor_benchmarks": total,
              "benchmarks_outside_slot": None if total is None or not slot.spec else total - slot.metered,
              "benchmarks_in_task_hold": slot.metered - m_pre if total is not None and slot.spec else None,
              "compiles_in_task_hold": watch.in_slot - c_pre if watch and watch.ok else None,
              "compile_suspends": watch.suspended if watch and watch.ok else None}
    log_phases(bridge, done, t_pre - T_START, compile_wall, t_slot - t_req, t_held - t_slot,
               time.perf_counter() - t_held, hook if lock_api else f"no ({hook})", counts)
    return 0


def precompile(job, tasks, definition, codec, inputs, slot=None, warm_hold=False):
    """compile_task() of every compile task, by task index (before the slot is taken)."""
    return {i: compile_task(job, t, definition, codec, inputs, slot, warm_hold)
            for i, t in enumerate(tasks) if t.get("compile")}


def warm_device(torch, codec):
    """Creates the CUDA context and sets up the profiler (CUPTI) before the device slot is taken: both
    cost host time (about a second) and launch no kernel, so they need not hold the slot."""
    if codec.fake or codec.device != "cuda":
        return
    torch.empty(1, device="cuda")
    if os.environ.get("SOLFORGE_BRIDGE_TIMING", "cupti") != "events":
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]):
            pass


def log_phases(bridge, done, pre_s, outside_s, wait_s, held_s, post_s, compile_outside, counts):
    """With $SOLFORGE_BRIDGE_PHASES set: appends one JSON line of where this process's time went (start-up
    and file reads, compiling before the slot, waiting for it, holding it, per task, writing results)
    to that file, with how the compile ran (compile_outside_slot: the hook used, or "no (why)") and
    counts: autotune_holds (outermost slot holds the benchmark hook took), hook_calls (outermost
    benchmark calls through the hook), inductor_benchmarks (GPU benchmark calls inductor counted),
    benchmarks_outside_slot (counted while this process did not hold the slot: above 0 means a
    benchmark the hook missed), benchmarks_in_task_hold (counted while the tasks held it: autotuning
    of a compile inside the slot), compiles_in_task_hold (dynamo compiles started then),
    compile_suspends (compiles during warm calls, which let the slot go); None where unknown."""
    path = os.environ.get("SOLFORGE_BRIDGE_PHASES")
    if not path:
        return
    rec = {"problem": bridge.get("problem"), "what": bridge.get("what"), "pre_s": round(pre_s, 3),
           "compile_outside_slot": compile_outside, "compile_outside_s": round(outside_s, 3)}
    rec.update(counts)
    rec.update({"wait_s": round(wait_s, 3), "held_s": round(held_s, 3), "post_s": round(post_s, 3),
                "tasks": [{"name": d["name"], "status": d["status"], "task_s": round(d["task_s"], 3),
                           "compile_s": round((d["timing"] or {}).get("compile_s", 0.0), 3),
                           "warm_calls": (d["timing"] or {}).get("warm_calls", 0),
                           "warm_s": round((d["timing"] or {}).get("warm_s", 0.0), 3),
                           "timing_wall_s": round((d["timing"] or {}).get("wall_ms", 0.0) / 1e3, 3),
                           "timed_calls": (d["timing"] or {}).get("timed_calls", 0)}
                          for d in done]})
    try:
        with open(path, "a") as f:
            f.write(json.dumps(rec) + "\n")
    except OSError:
        pass


def run_tasks(torch, job, tasks, definition, codec, inputs, compiled=None, compile_outside=False):
    """Runs every task in order (holding the device slot, when there is one). Returns per task a dict
    (name, out_dir, status, message, audits, timing, pending output files, task_s) for write_results()."""
    if not codec.fake:
        # fp32 GEMMs and convolutions in fp32, as the definitions ask (torch's cuDNN default is TF32)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    done = []
    for i, t in enumerate(tasks):
        pending = []
        t0 = time.perf_counter()
        audit = timing = None
        status, message = "ok", ""
        progress("task_begin", task=t.get("name", "-"), role=t.get("role"))
        try:
            audit, timing = run_task(job, t, definition, codec, inputs, pending, (compiled or {}).get(i))
            if timing is not None and t.get("compile"):
                timing["compile_outside_slot"] = compile_outside
        except TaskError as e:
            status, message = e.status, str(e)
        except sf_io.IOError_ as e:
            status, message = "error", f"bridge i/o: {e}"
        except Exception:
            status, message = "error", "bridge: " + traceback.format_exc(limit=6)
        done.append({"name": t.get("name", "-"), "out_dir": t["out_dir"], "status": status, "message": message,
                     "audits": audit, "timing": timing, "pending": pending, "task_s": time.perf_counter() - t0})
        progress("task_end", task=t.get("name", "-"), status=status, s=round(time.perf_counter() - t0, 3),
                 timed_calls=(timing or {}).get("timed_calls", 0))
        if not codec.fake and codec.device == "cuda":
            torch.cuda.empty_cache()
    return done


def write_results(done):
    """Writes each task's output files, then its result.json (the runner protocol's last file), after the
    device slot is released. A file that cannot be written turns the task's status into error."""
    for d in done:
        status, message, audit, timing = d["status"], d["message"], d["audits"], d["timing"]
        try:
            for path, ts in d["pending"]:
                sf_io.write_safetensors(path, ts)
        except (OSError, sf_io.IOError_) as e:
            if status == "ok":
                status, message, audit, timing = "error", f"bridge i/o: {e}", None, None
        write_result(d["out_dir"], status, message, audit, timing)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
