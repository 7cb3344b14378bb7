# emulate naive.cu's float32 arithmetic for the MoE NVFP4 problem in numpy; compare to the oracle
import os, sys, json, zlib, ctypes as C, numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ["VDEV"] = "cpu"
import verify as V
pdir = "problems/qwen/moe_nvfp4_gated_linear_e128_k8_h2048_i768"
name = os.path.basename(pdir)
lib = C.CDLL(f"{V.BUILD}/{name}_cpu.so"); lib.v_items.restype = C.c_int64
defn = json.load(open(os.path.join(pdir, "definition.json")))
wls = [json.loads(l) for l in open(os.path.join(pdir, "workload.jsonl"))]
T = int(sys.argv[1])
wl = [w for w in wls if w["axes"]["T"] == T][0]
ax = V.eval_axes(defn, wl); seed = zlib.crc32(wl["uuid"].encode())
E, TOPK, H, I = 128, 8, 2048, 768; I2 = 2 * I; HB = H // 16; IB = I // 16
oc = V.OCall(); oc.n_axis = 5
for i, a in enumerate(["T", "E", "TOPK", "H", "I"]): oc.axis[i] = ax[a]
specs = [(7, [T, H], 0, 2), (5, [T, HB], 112, 24), None, (9, [T, TOPK], None, None), (7, [E, I2, H], 0, 2), (5, [E, I2, HB], 112, 24), (2, [E], 12800, 1000), None]
bufs = []
for k, s in enumerate(specs):
    if s is None:
        oc.in_[k].numel = 1; oc.scalar[k] = 256.0 if k == 2 else 640.0; bufs.append(None); continue
    dt, shape, mean, std = s; n = int(np.prod(shape))
    b = np.zeros((n * V.BITS[dt] + 7) // 8, np.uint8); bufs.append(b)
    if mean is not None:
        lib.v_fill(b.ctypes.data_as(C.c_void_p), dt, C.c_int64(n), C.c_double(mean), C.c_double(std), C.c_uint64(seed), C.c_uint32(k + 1))
    oc.in_[k].data = b.ctypes.data; oc.in_[k].dt = dt; oc.in_[k].ndim = len(shape); oc.in_[k].numel = n
    for i, x in enumerate(shape): oc.in_[k].shape[i] = x
oc.n_in = 8
gc = V.GCall(); gc.c = oc; ic = (C.c_int * 16)(0, 0, 0, 1); gc.is_custom = ic; gc.seed = seed
assert lib.v_gen(C.byref(gc)) == 0
outs = [np.zeros(T * TOPK * I * 4, np.uint8), np.zeros(T * TOPK * IB * 4, np.uint8)]
for k, (n, sh) in enumerate([(T * TOPK * I, [T, TOPK, I]), (T * TOPK * IB, [T, TOPK, IB])]):
    oc.out[k].data = outs[k].ctypes.data; oc.out[k].dt = 2; oc.out[k].ndim = 3; oc.out[k].numel = n
    for i, x in enumerate(sh): oc.out[k].shape[i] = x
oc.n_out = 2
lib.v_run_items(C.byref(oc), C.c_int64(0), C.c_int64(lib.v_items(C.byref(oc))))
oq = outs[0].view(np.float32).reshape(T, TOPK, I); osc = outs[1].view(np.float32).reshape(T, TOPK, IB)
# emulate naive (float32)
xq = V.decode(bufs[0], 7, T * H).astype(np.float32).reshape(T, H)
xs = V.decode(bufs[1], 5, T * HB).astype(np.float32).reshape(T, HB)
wq_all = bufs[4]; ws_all = V.decode(bufs[5], 5, E * I2 * HB).astype(np.float32).reshape(E, I2, HB)
wgs = bufs[6].view(np.float32)
ids = bufs[3].view(np.int32).reshape(T, TOPK)
f32 = np.float32
gs = f32(640.0); rcp6 = f32(1.0) / f32(6.0)
mism_q = mism_s = 0; tot_q = tot_s = 0; sat = 0; hmax = 0
for t in range(T):
    for j in range(TOPK):
        e = ids[t, j]
        wq = V.decode(wq_all[e * I2 * H // 2:(e + 1) * I2 * H // 2], 7, I2 * H).astype(np.float32).reshape(I2, H)
        blk = (xq[t].reshape(1, HB, 16) * wq.reshape(I2, HB, 16)).sum(-1, dtype=np.float64).astype(np.float32)  # exact
        sxw = (xs[t][None, :] * ws_all[e]).astype(np.float32)
        acc = np.zeros(I2, np.float32)
        for kb in range(HB):
            acc = (acc + (blk[:, kb] * sxw[:, kb]).astype(np.float32)).astype(np.float32)
        deq = f32(256.0) * wgs[e]
        gu = (acc / deq).astype(np.float32)
        g, u = gu[:I], gu[I:]
        h = (g / (f32(1) + np.exp(-g).astype(np.float32)) * u).astype(np.float32)
        hmax = max(hmax, float(np.abs(h).max()))
        hb = h.reshape(IB, 16)
        amax = np.abs(hb).max(-1)
        s = (gs * (amax * rcp6).astype(np.float32)).astype(np.float32)
        sc = V.E4M3[np.array([V_e for V_e in range(256)])]  # lut
        # e4m3 RNE satfinite via nearest in the positive lut (ties to even code)
        pos = V.E4M3[:127]
        idx = np.array([np.argmin(np.abs(pos - min(v, 448.0)) + (np.arange(127) % 2) * 1e-12) for v in s])
        scale = pos[idx].astype(np.float32)
        sat += int(np.sum(s >= 448))
        os_ = np.where(scale == 0, f32(0), f32(1) / (scale * (f32(1) / gs)).astype(np.float32)).astype(np.float32)
        y = (hb * os_[:, None]).astype(np.float32)
        a = np.abs(y)
        code = (a > .25).astype(int) + (a >= .75) + (a > 1.25) + (a >= 1.75) + (a > 2.5) + (a >= 3.5) + (a > 5)
        q = np.array([0, .5, 1, 1.5, 2, 3, 4, 6])[code] * np.where(np.signbit(y), -1, 1)
        mism_q += int(np.sum(q.reshape(-1) != oq[t, j])); tot_q += I
        mism_s += int(np.sum(scale != osc[t, j])); tot_s += IB
print(f"T={T}: fp32-emulated naive vs oracle: codes mismatched {mism_q}/{tot_q}, scales mismatched {mism_s}/{tot_s}; "
      f"max|h| {hmax:.3f}; saturated scales {sat}; oracle scales: min {osc.min():.4g} median {np.median(osc):.4g} max {osc.max():.4g}; "
      f"codes: frac 0 {np.mean(oq==0):.3f}, frac |6| {np.mean(np.abs(oq)==6):.3f}")
