# CPU-only check: the oracle (gcc build) vs the definition's torch reference run on the CPU
import os, sys, json, zlib, time, ctypes as C, math
os.environ["VDEV"] = "cpu"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np, torch
import verify as V

def run(pdir, which):
    name = os.path.basename(pdir)
    defn = json.load(open(os.path.join(V.ROOT, pdir, "definition.json")))
    wls = [json.loads(l) for l in open(os.path.join(V.ROOT, pdir, "workload.jsonl")) if l.strip()]
    o = os.path.join(V.ROOT, pdir, "oracle.c"); src = open(o).read()
    defs = (["-DHAS_GEN"] if "SF_ORACLE_GEN(" in src else []) + (["-DHAS_WORK"] if "SF_ORACLE_WORK(" in src else [])
    so = f"{V.BUILD}/{name}_cpu.so"
    import subprocess
    subprocess.check_call(["gcc", "-O2", "-fopenmp", "-shared", "-fPIC", "-std=c11", "-D_GNU_SOURCE", "-ffp-contract=off", "-Iinclude", "-Isrc", f'-DORACLE_PATH="{o}"'] + defs + [f"{V.VD}/vlib.c", "-o", so, "-lm"])
    lib = C.CDLL(so); lib.v_items.restype = C.c_int64
    axis_names = []
    for s in (C.c_char_p * 17).in_dll(lib, "sf_oracle_axis_names"):
        if s is None: break
        axis_names.append(s.decode())
    ns = {}; exec(defn["reference"], ns)
    allpass = True
    for wl in wls:
        if which and not any(wl["uuid"].endswith("-" + w) for w in which): continue
        ax = V.eval_axes(defn, wl); seed = zlib.crc32(wl["uuid"].encode())
        oc = V.OCall(); oc.n_axis = len(axis_names)
        for i, a in enumerate(axis_names): oc.axis[i] = ax[a]
        bufs, metas, scalars, is_custom = [], [], [], []
        gens = defn["solforge"].get("inputs", {})
        for k, (iname, spec) in enumerate(defn["inputs"].items()):
            wi = wl["inputs"][iname]
            if spec["shape"] is None:
                oc.in_[k].numel = 1; oc.scalar[k] = wi["value"]; bufs.append(None); metas.append(None); scalars.append(float(wi["value"])); is_custom.append(0); continue
            dt = V.DT[spec["dtype"]]; shape = [ax[s] if isinstance(s, str) else s for s in spec["shape"]]; n = int(np.prod(shape))
            buf = np.zeros(max((n * V.BITS[dt] + 7) // 8, 1), np.uint8)
            g = gens.get(iname, {"gen": "normal", "mean": 0, "std": 1})
            if wi["type"] == "custom" or g["gen"] == "custom": is_custom.append(1)
            else:
                is_custom.append(0)
                mean = float(eval(str(g.get("mean", 0)), {"sqrt": math.sqrt}, dict(ax))); std = float(eval(str(g.get("std", 1)), {"sqrt": math.sqrt}, dict(ax)))
                lib.v_fill(buf.ctypes.data_as(C.c_void_p), dt, C.c_int64(n), C.c_double(mean), C.c_double(std), C.c_uint64(seed), C.c_uint32(k + 1))
            oc.in_[k].data = buf.ctypes.data; oc.in_[k].dt = dt; oc.in_[k].ndim = len(shape); oc.in_[k].numel = n
            for i, s in enumerate(shape): oc.in_[k].shape[i] = s
            bufs.append(buf); metas.append((dt, shape, n)); scalars.append(float("nan"))
        oc.n_in = len(bufs)
        if any(is_custom):
            gc = V.GCall(); gc.c = oc; ic = (C.c_int * 16)(*is_custom); gc.is_custom = ic; gc.seed = seed
            rc = lib.v_gen(C.byref(gc))
            if rc: print("GEN failed", gc.err); allpass = False; continue
        outs_meta, couts = [], []
        for k, (oname, spec) in enumerate(defn["outputs"].items()):
            dt = V.DT[spec["dtype"]]; shape = [ax[s] if isinstance(s, str) else s for s in spec["shape"]]; n = int(np.prod(shape))
            rdt = 2 if dt in (2, 3, 4, 5, 6, 7) else dt
            outs_meta.append((oname, dt, rdt, shape, n))
            b = np.zeros(max((n * V.BITS[rdt] + 7) // 8, 1), np.uint8); couts.append(b)
            oc.out[k].data = b.ctypes.data; oc.out[k].dt = rdt; oc.out[k].ndim = len(shape); oc.out[k].numel = n
            for i, s in enumerate(shape): oc.out[k].shape[i] = s
        oc.n_out = len(outs_meta)
        t0 = time.time(); items = lib.v_items(C.byref(oc)); lib.v_run_items(C.byref(oc), C.c_int64(0), C.c_int64(items)); to = time.time() - t0
        oracle = [V.decode(b, m[2], m[4]) for b, m in zip(couts, outs_meta)]
        shim = f"{V.BUILD}/{name}_shim.so"
        if os.path.exists(shim) and os.environ.get("NO_SHIM") != "1":
            sl = C.CDLL(shim); sl.run.restype = C.c_int
            tins = (V.Tensor * 16)(); touts = (V.Tensor * 16)(); keep = []
            for k in range(len(bufs)):
                if bufs[k] is None: tins[k].ndim = 0; continue
                dt, shape, n = metas[k]; sh = (C.c_int64 * 8)(*shape); keep.append(sh)
                tins[k].data = bufs[k].ctypes.data; tins[k].ndim = len(shape); tins[k].shape = C.cast(sh, C.POINTER(C.c_int64))
                tins[k].dtype.code, tins[k].dtype.bits = V.DL[dt]; tins[k].dtype.lanes = 1; tins[k].device.device_type = 1
            nouts = []
            for k, (oname, dt, rdt, shape, n) in enumerate(outs_meta):
                b = np.full((n * V.BITS[dt] + 7) // 8, 0xAB, np.uint8); nouts.append(b); sh = (C.c_int64 * 8)(*shape); keep.append(sh)
                touts[k].data = b.ctypes.data; touts[k].ndim = len(shape); touts[k].shape = C.cast(sh, C.POINTER(C.c_int64))
                touts[k].dtype.code, touts[k].dtype.bits = V.DL[dt]; touts[k].dtype.lanes = 1; touts[k].device.device_type = 1
            sc = (C.c_double * 16)(*scalars)
            call = V.Call(1, len(bufs), tins, sc, len(outs_meta), touts, None)
            t0 = time.time(); rc = sl.run(C.byref(call)); tn = time.time() - t0
            m = f"  naive-on-cpu rc={rc} ({tn:.2f}s):"
            for k, (oname, dt, rdt, shape, n) in enumerate(outs_meta):
                x = V.decode(nouts[k], dt, n); p, r, e = V.compare(x, oracle[k], wl["correctness"])
                allpass &= bool(p) and rc == 0
                m += f" {oname} pass={p} matched={r:.6f} exact={float(np.mean(x == oracle[k])):.6f} maxerr={e:.3g};"
            print(m, flush=True)
        if os.environ.get("NO_REF") == "1": continue
        args = [scalars[k] if bufs[k] is None else V.to_torch(bufs[k], metas[k][0], list(metas[k][1])) for k in range(len(bufs))]
        t0 = time.time()
        with torch.no_grad(): outs = ns["run"](*args)
        tr = time.time() - t0
        if not isinstance(outs, (tuple, list)): outs = (outs,)
        tol = wl["correctness"]
        msg = f"{wl['uuid']}: oracle {to:.2f}s ref {tr:.2f}s"
        for k, (oname, dt, rdt, shape, n) in enumerate(outs_meta):
            ot = outs[k]; exp_shape = shape[:-1] + [shape[-1] // 2] if dt == 7 else shape
            x = V.from_torch(ot, n); p, r, e = V.compare(x, oracle[k], tol)
            exact = float(np.mean(x == oracle[k]))
            ok = p and list(ot.shape) == exp_shape
            allpass &= bool(ok)
            msg += f" | {oname} {str(ot.dtype).replace('torch.','')}{list(ot.shape)} pass={ok} matched={r:.6f} exact={exact:.6f} maxerr={e:.3g}"
            if oname.endswith("scale") or "fp4" in oname: msg += f" nonzero={np.mean(oracle[k]!=0):.3f}"
        print(msg, flush=True)
    print(f"== {name}: {'ALL PASS' if allpass else 'FAILURES'}", flush=True)

if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2].split(",") if len(sys.argv) > 2 else None)
