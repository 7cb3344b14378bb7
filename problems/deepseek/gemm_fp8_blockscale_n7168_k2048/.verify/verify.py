# temporary verification harness: oracle (CPU and GPU builds) vs naive.cu vs the definition's torch reference
import ctypes as C, json, sys, os, time, math, subprocess, zlib
import numpy as np
import torch

ROOT = os.getcwd()
DEV = os.environ.get("VDEV", "cuda")
VD = os.path.dirname(os.path.abspath(__file__))
BUILD = "/tmp/vbuild"
os.makedirs(BUILD, exist_ok=True)
DT = {"float64": 1, "float32": 2, "float16": 3, "bfloat16": 4, "float8_e4m3fn": 5, "float8_e5m2": 6,
      "float4_e2m1": 7, "float4_e2m1fn_x2": 7, "int64": 8, "int32": 9, "int16": 10, "int8": 11, "uint8": 12, "bool": 13}
BITS = {1: 64, 2: 32, 3: 16, 4: 16, 5: 8, 6: 8, 7: 4, 8: 64, 9: 32, 10: 16, 11: 8, 12: 8, 13: 8}
DL = {1: (2, 64), 2: (2, 32), 3: (2, 16), 4: (4, 16), 5: (10, 8), 6: (12, 8), 7: (17, 4), 8: (0, 64), 9: (0, 32),
      10: (0, 16), 11: (0, 8), 12: (1, 8), 13: (6, 8)}


class OTensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("dt", C.c_int), ("ndim", C.c_int), ("shape", C.c_int64 * 8), ("numel", C.c_int64)]


class OCall(C.Structure):
    _fields_ = [("n_in", C.c_int), ("n_out", C.c_int), ("n_axis", C.c_int), ("in_", OTensor * 16),
                ("out", OTensor * 16), ("scalar", C.c_double * 16), ("axis", C.c_int64 * 16)]


class GCall(C.Structure):
    _fields_ = [("c", OCall), ("in_names", C.c_void_p), ("is_custom", C.POINTER(C.c_int)), ("seed", C.c_uint64),
                ("err", C.c_char * 256)]


class Work(C.Structure):
    _fields_ = [("flops", C.c_double * 9), ("bytes", C.c_double)]


class Dev(C.Structure):
    _fields_ = [("device_type", C.c_int32), ("device_id", C.c_int32)]


class DType(C.Structure):
    _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16)]


class Tensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("device", Dev), ("ndim", C.c_int32), ("dtype", DType),
                ("shape", C.POINTER(C.c_int64)), ("strides", C.POINTER(C.c_int64)), ("byte_offset", C.c_uint64)]


class Call(C.Structure):
    _fields_ = [("abi_version", C.c_uint32), ("n_inputs", C.c_int32), ("inputs", C.POINTER(Tensor)),
                ("scalars", C.POINTER(C.c_double)), ("n_outputs", C.c_int32), ("outputs", C.POINTER(Tensor)),
                ("stream", C.c_void_p)]


def lut_e4m3():
    t = np.zeros(256)
    for c in range(256):
        s, e, m = c >> 7, (c >> 3) & 15, c & 7
        if e == 15 and m == 7:
            v = float("nan")
        elif e == 0:
            v = m / 8 * 2.0 ** -6
        else:
            v = (1 + m / 8) * 2.0 ** (e - 7)
        t[c] = -v if s else v
    return t


E4M3 = lut_e4m3()
E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])


def decode(raw, dt, n):
    raw = np.ascontiguousarray(raw).view(np.uint8).reshape(-1)
    if dt == 2: return raw.view(np.float32)[:n].astype(np.float64)
    if dt == 1: return raw.view(np.float64)[:n].copy()
    if dt == 4: return (raw.view(np.uint16)[:n].astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if dt == 5: return E4M3[raw[:n]]
    if dt == 7:
        codes = np.empty(raw.size * 2, np.uint8)
        codes[0::2] = raw & 15
        codes[1::2] = raw >> 4
        return E2M1[codes[:n]]
    if dt == 9: return raw.view(np.int32)[:n].astype(np.float64)
    if dt == 8: return raw.view(np.int64)[:n].astype(np.float64)
    raise ValueError(dt)


def build(pdir, name, extra_sources):
    o = os.path.join(ROOT, pdir, "oracle.c")
    src = open(o).read()
    defs = []
    if "SF_ORACLE_GEN(" in src and "#define SF_ORACLE_GEN" not in src: defs.append("-DHAS_GEN")
    if "SF_ORACLE_WORK(" in src: defs.append("-DHAS_WORK")
    cpu = f"{BUILD}/{name}_cpu.so"; gpu = f"{BUILD}/{name}_gpu.so"
    cmds = [
        ["gcc", "-O2", "-fopenmp", "-shared", "-fPIC", "-std=c11", "-D_GNU_SOURCE", "-ffp-contract=off", "-Iinclude", "-Isrc",
         f'-DORACLE_PATH="{o}"'] + defs + [f"{VD}/vlib.c", "-o", cpu, "-lm"],
        ["nvcc", "-O2", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "--fmad=false", "-shared", "-Xcompiler", "-fPIC",
         "-Iinclude", "-Isrc", f'-DORACLE_PATH="{o}"', f"{VD}/vgpu.cu", "-o", gpu],
    ]
    cands = {}
    for label, srcf, libs in extra_sources:
        so = f"{BUILD}/{name}_{label}.so"
        cmds.append(["nvcc", "-O2", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-shared", "-Xcompiler", "-fPIC",
                     "-Iinclude", srcf, "-o", so] + libs)
        cands[label] = so
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for c in cmds]
    for c, p in zip(cmds, procs):
        out = p.communicate()[0].decode()
        if p.returncode:
            print("BUILD FAILED", " ".join(c), out); sys.exit(1)
    return C.CDLL(cpu), C.CDLL(gpu), {k: C.CDLL(v) for k, v in cands.items()}


def eval_axes(defn, wl):
    ax = {}
    for k, a in defn["axes"].items():
        if a["type"] == "const": ax[k] = a["value"]
        elif a["type"] == "var": ax[k] = wl["axes"][k]
    for _ in range(4):
        for k, a in defn["axes"].items():
            if a["type"] == "expr" and k not in ax:
                try: ax[k] = int(eval(a["expression"], {"sqrt": math.sqrt}, dict(ax)))
                except NameError: pass
    return ax


def compare(x, y, tol):
    atol = tol.get("max_atol", 1e-2); rtol = tol.get("max_rtol", 1e-2)
    ok = np.abs(x - y) <= atol + rtol * np.abs(y)
    ok &= ~(np.isnan(x) | np.isnan(y))
    ratio = ok.mean() if ok.size else 1.0
    err = np.abs(x - y)
    passed = ratio >= tol.get("required_matched_ratio", 1.0)
    if "max_error_cap" in tol: passed &= bool(np.all(err[~np.isnan(err)] <= tol["max_error_cap"]))
    if np.all(x == 0) and not np.all(y == 0): passed = False
    return passed, ratio, (np.nanmax(err) if err.size else 0.0)


def to_torch(buf, dt, shape):
    t = torch.from_numpy(buf)
    if dt == 4: t = t.view(torch.int16).view(torch.bfloat16)
    elif dt == 5: t = t.view(torch.float8_e4m3fn)
    elif dt == 7: return t.view(torch.float4_e2m1fn_x2).reshape(shape[:-1] + [shape[-1] // 2]).to(DEV)
    elif dt == 2: t = t.view(torch.float32)
    elif dt == 9: t = t.view(torch.int32)
    return t.reshape(shape).to(DEV)


def from_torch(t, n):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.float4_e2m1fn_x2: return decode(t.view(torch.uint8).numpy(), 7, n)
    if t.dtype == torch.float8_e4m3fn: return E4M3[t.view(torch.uint8).numpy().reshape(-1)][:n]
    return t.to(torch.float64).numpy().reshape(-1)[:n]


def run_problem(pdir, which=None, cpu_max_items=None, extra=(), skip_ref=False):
    name = os.path.basename(pdir)
    defn = json.load(open(os.path.join(ROOT, pdir, "definition.json")))
    wls = [json.loads(l) for l in open(os.path.join(ROOT, pdir, "workload.jsonl")) if l.strip()]
    sources = [("naive", os.path.join(pdir, "solutions/naive.cu"), [])] + list(extra)
    lcpu, lgpu, cands = build(pdir, name, sources)
    lcpu.v_items.restype = C.c_int64
    axis_names = []
    arr = (C.c_char_p * 17).in_dll(lcpu, "sf_oracle_axis_names")
    for s in arr:
        if s is None: break
        axis_names.append(s.decode())
    ns = {}
    exec(defn["reference"], ns)
    allpass = True
    for wl in wls:
        if which and not any(w in wl["uuid"] for w in which): continue
        ax = eval_axes(defn, wl)
        seed = zlib.crc32(wl["uuid"].encode())
        oc = OCall(); oc.n_axis = len(axis_names)
        for i, a in enumerate(axis_names): oc.axis[i] = ax[a]
        bufs, metas, scalars, is_custom = [], [], [], []
        gens = defn["solforge"].get("inputs", {})
        for k, (iname, spec) in enumerate(defn["inputs"].items()):
            wi = wl["inputs"][iname]
            if spec["shape"] is None:
                oc.in_[k].data = None; oc.in_[k].ndim = 0; oc.in_[k].numel = 1; oc.scalar[k] = wi["value"]
                bufs.append(None); metas.append(None); scalars.append(float(wi["value"])); is_custom.append(0)
                continue
            dt = DT[spec["dtype"]]
            shape = [ax[s] if isinstance(s, str) else s for s in spec["shape"]]
            n = int(np.prod(shape)) if shape else 1
            buf = np.zeros(max((n * BITS[dt] + 7) // 8, 1), np.uint8)
            g = gens.get(iname, {"gen": "normal", "mean": 0, "std": 1})
            if wi["type"] == "custom" or g["gen"] == "custom":
                is_custom.append(1)
            else:
                is_custom.append(0)
                assert g["gen"] == "normal", g
                mean = float(eval(str(g.get("mean", 0)), {"sqrt": math.sqrt}, dict(ax)))
                std = float(eval(str(g.get("std", 1)), {"sqrt": math.sqrt}, dict(ax)))
                lcpu.v_fill(buf.ctypes.data_as(C.c_void_p), dt, C.c_int64(n), C.c_double(mean), C.c_double(std), C.c_uint64(seed), C.c_uint32(k + 1))
            oc.in_[k].data = buf.ctypes.data; oc.in_[k].dt = dt; oc.in_[k].ndim = len(shape); oc.in_[k].numel = n
            for i, s in enumerate(shape): oc.in_[k].shape[i] = s
            bufs.append(buf); metas.append((dt, shape, n)); scalars.append(float("nan"))
        oc.n_in = len(bufs)
        if any(is_custom):
            gc = GCall(); gc.c = oc; ic = (C.c_int * 16)(*is_custom); gc.is_custom = ic; gc.seed = seed
            t0 = time.time(); rc = lcpu.v_gen(C.byref(gc))
            if rc != 0: print(wl["uuid"], "GEN FAILED", rc, gc.err); allpass = False; continue
            tg = time.time() - t0
        else:
            tg = 0.0
        outs_meta = []
        for k, (oname, spec) in enumerate(defn["outputs"].items()):
            dt = DT[spec["dtype"]]
            shape = [ax[s] if isinstance(s, str) else s for s in spec["shape"]]
            n = int(np.prod(shape))
            rdt = 2 if dt in (2, 3, 4, 5, 6, 7) else dt
            outs_meta.append((oname, dt, rdt, shape, n))
            oc.out[k].dt = rdt; oc.out[k].ndim = len(shape); oc.out[k].numel = n
            for i, s in enumerate(shape): oc.out[k].shape[i] = s
        oc.n_out = len(outs_meta)
        items = lcpu.v_items(C.byref(oc))
        # device copies of inputs
        dins = [torch.from_numpy(b).cuda() if b is not None else None for b in bufs]
        # GPU oracle
        doc = OCall.from_buffer_copy(oc)
        for k, d in enumerate(dins):
            if d is not None: doc.in_[k].data = d.data_ptr()
        gouts = []
        for k, (oname, dt, rdt, shape, n) in enumerate(outs_meta):
            t = torch.zeros(max((n * BITS[rdt] + 7) // 8, 1), dtype=torch.uint8, device="cuda")
            gouts.append(t); doc.out[k].data = t.data_ptr()
        torch.cuda.synchronize(); t0 = time.time()
        rc = lgpu.v_gpu_run(C.byref(doc), C.c_int64(items))
        tgo = time.time() - t0
        if rc: print("gpu oracle failed", rc); sys.exit(1)
        oracle = [decode(g.cpu().numpy(), o[2], o[4]) for g, o in zip(gouts, outs_meta)]
        line = f"{wl['uuid']}: items {items} gen {tg:.2f}s gpu-oracle {tgo:.2f}s"
        # CPU oracle for small workloads
        if cpu_max_items is not None and items <= cpu_max_items:
            couts = []
            for k, (oname, dt, rdt, shape, n) in enumerate(outs_meta):
                b = np.zeros(max((n * BITS[rdt] + 7) // 8, 1), np.uint8); couts.append(b); oc.out[k].data = b.ctypes.data
            t0 = time.time(); lcpu.v_run_items(C.byref(oc), C.c_int64(0), C.c_int64(items)); tco = time.time() - t0
            same = all(np.array_equal(b, g.cpu().numpy()) for b, g in zip(couts, gouts))
            maxd = max(float(np.nanmax(np.abs(decode(b, o[2], o[4]) - decode(g.cpu().numpy(), o[2], o[4])))) for b, g, o in zip(couts, gouts, outs_meta))
            line += f" | cpu-oracle {tco:.2f}s bit-identical={same} maxdiff={maxd:.3g}"
            if maxd > 1e-6: allpass = False
        w = Work()
        if lcpu.v_work(C.byref(oc), C.byref(w)) == 0:
            line += f" | WORK bytes {w.bytes:.0f} fp8 {w.flops[5]:.4g}"
        print(line)
        tol = wl.get("correctness", wl.get("tolerance", {}))
        # candidates
        for label, lib in cands.items():
            tins = (Tensor * 16)(); touts = (Tensor * 16)(); shp_keep = []
            for k, d in enumerate(dins):
                if d is None:
                    tins[k].data = None; tins[k].ndim = 0
                else:
                    dt, shape, n = metas[k]
                    sh = (C.c_int64 * 8)(*shape); shp_keep.append(sh)
                    tins[k].data = d.data_ptr(); tins[k].ndim = len(shape); tins[k].shape = C.cast(sh, C.POINTER(C.c_int64))
                    tins[k].dtype.code, tins[k].dtype.bits = DL[dt]; tins[k].dtype.lanes = 1
                tins[k].device.device_type = 2
            douts = []
            for k, (oname, dt, rdt, shape, n) in enumerate(outs_meta):
                t = torch.full(((n * BITS[dt] + 7) // 8,), 0xAB, dtype=torch.uint8, device="cuda"); douts.append(t)
                sh = (C.c_int64 * 8)(*shape); shp_keep.append(sh)
                touts[k].data = t.data_ptr(); touts[k].ndim = len(shape); touts[k].shape = C.cast(sh, C.POINTER(C.c_int64))
                touts[k].dtype.code, touts[k].dtype.bits = DL[dt]; touts[k].dtype.lanes = 1; touts[k].device.device_type = 2
            sc = (C.c_double * 16)(*scalars)
            call = Call(1, len(dins), tins, sc, len(outs_meta), touts, C.c_void_p(torch.cuda.current_stream().cuda_stream))
            lib.run.restype = C.c_int
            rc = lib.run(C.byref(call)); torch.cuda.synchronize()
            t0 = time.time(); rc2 = lib.run(C.byref(call)); torch.cuda.synchronize(); tr = time.time() - t0
            if rc or rc2: print(f"  {label}: run returned {rc}/{rc2}"); allpass = False; continue
            msg = f"  {label} ({tr*1e3:.2f} ms):"
            for k, (oname, dt, rdt, shape, n) in enumerate(outs_meta):
                x = decode(douts[k].cpu().numpy(), dt, n)
                p, r, e = compare(x, oracle[k], tol)
                allpass &= bool(p)
                msg += f" {oname} pass={p} matched={r:.6f} maxerr={e:.3g};"
            print(msg)
        if not skip_ref:
            args = []
            for k, (iname, spec) in enumerate(defn["inputs"].items()):
                if bufs[k] is None: args.append(scalars[k])
                else: args.append(to_torch(bufs[k], metas[k][0], list(metas[k][1])))
            t0 = time.time()
            with torch.no_grad():
                outs = ns["run"](*args)
            torch.cuda.synchronize(); tr = time.time() - t0
            if not isinstance(outs, (tuple, list)): outs = (outs,)
            msg = f"  reference ({tr:.2f} s):"
            for k, (oname, dt, rdt, shape, n) in enumerate(outs_meta):
                o = outs[k]
                exp_shape = shape[:-1] + [shape[-1] // 2] if dt == 7 else shape
                shape_ok = list(o.shape) == exp_shape
                x = from_torch(o, n)
                p, r, e = compare(x, oracle[k], tol)
                allpass &= bool(p) and shape_ok
                msg += f" {oname} {str(o.dtype).replace('torch.', '')}{list(o.shape)} shape_ok={shape_ok} pass={p} matched={r:.6f} maxerr={e:.3g};"
            print(msg)
            del outs, args
        del dins
        torch.cuda.empty_cache()
    print(f"== {name}: {'ALL PASS' if allpass else 'FAILURES'}")
    return allpass


if __name__ == "__main__":
    pdir = sys.argv[1]
    which = sys.argv[2].split(",") if len(sys.argv) > 2 and sys.argv[2] else None
    extra = []
    if "gemm_fp8_blockscale" in pdir:
        extra = [("cublaslt", "problems/common/baselines/cublaslt_gemm_fp8_blockscale.cu", ["-lcublasLt"])]
    run_problem(pdir, which, cpu_max_items=int(os.environ.get("CPU_MAX", "100000")), extra=extra,
                skip_ref=os.environ.get("SKIP_REF") == "1")
