#!/usr/bin/env python3
"""mem_heldout.py - held-out shapes for the memory-bound problems of issue 7 and the GEMMs of issue 8.

usage: mem_heldout.py OUTDIR [--list] [--root PROBLEMS_DIR]

For each memory-bound problem (MEM below: norms, RoPE, gated activations, MoE routing, NVFP4
quantization, GroupNorm+SiLU, causal conv1d) writes OUTDIR/<name>/ with the problem's definition.json
(baseline sources made absolute), its oracle.c and a workload.jsonl of 4-6 shapes that its bundled
workload.jsonl does not have: token counts off the powers of two and the vector widths (2, 3, 5, 33, 77,
1000, 12345, ...), odd image sizes and grids, odd sequence lengths, one large shape per problem (about
the size of the bundled largest, never above 1.25x it). The four Llama GEMMs (GEMM below) get odd token counts M
(3, 17, 48, 77, 1000, 5000: every M class of the GEMM's plans, the issue's 3 / 77 / 1000 / 5000 among them). Each held-out workload keeps the bundled file's
tolerance and scalar / custom inputs (global_scale varies for nvfp4). `solforge eval OUTDIR/<name>
SOLUTION` then checks a solution on them against the oracle; `solforge sol OUTDIR/<name>` validates
them without building anything.

Checked here, failing loudly (exit 1 with the reason): every var axis given, a positive integer, no
other axis; every definition constraint holds (a Python reading of the axis expressions: solforge's own
check runs when the folder is loaded); the shape differs from every bundled shape; the uuid differs
from every bundled uuid of every problem under the problems folder; the largest held-out shape is at
least 0.4x and at most 1.25x the bundled largest (tensor elements read + written).
Prints one line per problem with its shapes, or with --list only the folders written, one per line.
"""
import ast
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from suite_list import definition, problem_dirs, workload_uuids  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LARGEST_MIN, LARGEST_MAX = 0.4, 1.25

# problem folder (relative to the problems folder) -> [(tag, var axes, scalar overrides)]
MEM = {
    "llama/rmsnorm_h4096": [
        ("t2", {"batch_size": 2}, {}),
        ("t5", {"batch_size": 5}, {}),
        ("t77", {"batch_size": 77}, {}),
        ("t1000", {"batch_size": 1000}, {}),
        ("t12345", {"batch_size": 12345}, {}),
        ("t50001", {"batch_size": 50001}, {}),
    ],
    "llama/fused_add_rmsnorm_h4096": [
        ("t3", {"batch_size": 3}, {}),
        ("t33", {"batch_size": 33}, {}),
        ("t777", {"batch_size": 777}, {}),
        ("t5000", {"batch_size": 5000}, {}),
        ("t40001", {"batch_size": 40001}, {}),
    ],
    "llama/rope_llama31_h32_kv8_d128": [
        ("t2", {"num_tokens": 2}, {}),
        ("t5", {"num_tokens": 5}, {}),
        ("t77", {"num_tokens": 77}, {}),
        ("t1000", {"num_tokens": 1000}, {}),
        ("t12345", {"num_tokens": 12345}, {}),
    ],
    "llama/silu_and_mul_i14336": [
        ("t3", {"num_tokens": 3}, {}),
        ("t33", {"num_tokens": 33}, {}),
        ("t1000", {"num_tokens": 1000}, {}),
        ("t5000", {"num_tokens": 5000}, {}),
        ("t12345", {"num_tokens": 12345}, {}),
    ],
    "gemma/gemma_rmsnorm_h5376": [
        ("t2", {"num_tokens": 2}, {}),
        ("t7", {"num_tokens": 7}, {}),
        ("t77", {"num_tokens": 77}, {}),
        ("t1000", {"num_tokens": 1000}, {}),
        ("t12345", {"num_tokens": 12345}, {}),
    ],
    "gemma/geglu_tanh_h5376_i21504": [
        ("t3", {"num_tokens": 3}, {}),
        ("t5", {"num_tokens": 5}, {}),
        ("t333", {"num_tokens": 333}, {}),
        ("t2047", {"num_tokens": 2047}, {}),
        ("t7777", {"num_tokens": 7777}, {}),
    ],
    "flux/flux_rope_3axis_h24_d128": [
        ("b1-txt1-img1x1", {"batch_size": 1, "txt_len": 1, "img_h": 1, "img_w": 1}, {}),
        ("b3-txt7-img5x9", {"batch_size": 3, "txt_len": 7, "img_h": 5, "img_w": 9}, {}),
        ("b1-txt77-img33x47", {"batch_size": 1, "txt_len": 77, "img_h": 33, "img_w": 47}, {}),
        ("b2-txt300-img45x71", {"batch_size": 2, "txt_len": 300, "img_h": 45, "img_w": 71}, {}),
        ("b1-txt512-img96x160", {"batch_size": 1, "txt_len": 512, "img_h": 96, "img_w": 160}, {}),
    ],
    "flux/flux_adaln_layernorm_modulate_h3072": [
        ("b1-s1", {"batch_size": 1, "seq_len": 1}, {}),
        ("b3-s5", {"batch_size": 3, "seq_len": 5}, {}),
        ("b2-s77", {"batch_size": 2, "seq_len": 77}, {}),
        ("b1-s1001", {"batch_size": 1, "seq_len": 1001}, {}),
        ("b3-s4097", {"batch_size": 3, "seq_len": 4097}, {}),
        ("b1-s15001", {"batch_size": 1, "seq_len": 15001}, {}),
    ],
    "qwen/moe_router_softmax_topk_e128_k8": [
        ("t2", {"T": 2}, {}),
        ("t5", {"T": 5}, {}),
        ("t77", {"T": 77}, {}),
        ("t1000", {"T": 1000}, {}),
        ("t12345", {"T": 12345}, {}),
        ("t30001", {"T": 30001}, {}),
    ],
    "qwen/nvfp4_quantize_h2048": [
        ("t3", {"T": 3}, {"global_scale": 537.5}),
        ("t33", {"T": 33}, {"global_scale": 896.0}),
        ("t1000", {"T": 1000}, {"global_scale": 600.0}),
        ("t5000", {"T": 5000}, {"global_scale": 1344.0}),
        ("t12345", {"T": 12345}, {"global_scale": 700.0}),
    ],
    "qwen/qk_rmsnorm_h32_kv4_d128": [
        ("t2", {"T": 2}, {}),
        ("t5", {"T": 5}, {}),
        ("t77", {"T": 77}, {}),
        ("t1000", {"T": 1000}, {}),
        ("t12345", {"T": 12345}, {}),
    ],
    "deepseek/moe_grouped_topk_routing_e256_g8_k8": [
        ("t3", {"T": 3}, {}),
        ("t33", {"T": 33}, {}),
        ("t1000", {"T": 1000}, {}),
        ("t5000", {"T": 5000}, {}),
        ("t30001", {"T": 30001}, {}),
    ],
    "stable-diffusion/groupnorm32_silu_sd_vae": [
        ("n1-c128-7x9", {"batch_size": 1, "num_channels": 128, "height": 7, "width": 9}, {}),
        ("n3-c96-13x17", {"batch_size": 3, "num_channels": 96, "height": 13, "width": 17}, {}),
        ("n1-c512-96x160", {"batch_size": 1, "num_channels": 512, "height": 96, "width": 160}, {}),
        ("n2-c256-200x300", {"batch_size": 2, "num_channels": 256, "height": 200, "width": 300}, {}),
        ("n1-c256-720x1280", {"batch_size": 1, "num_channels": 256, "height": 720, "width": 1280}, {}),
    ],
    "mamba/causal_conv1d_silu_d4_mamba2": [
        ("b1-l5", {"batch_size": 1, "seq_len": 5}, {}),
        ("b3-l7", {"batch_size": 3, "seq_len": 7}, {}),
        ("b5-l33", {"batch_size": 5, "seq_len": 33}, {}),
        ("b2-l1000", {"batch_size": 2, "seq_len": 1000}, {}),
        ("b3-l4999", {"batch_size": 3, "seq_len": 4999}, {}),
        ("b7-l7777", {"batch_size": 7, "seq_len": 7777}, {}),
    ],
}

_FUNCS = {"min": min, "max": max, "abs": abs, "cdiv": lambda a, b: -(-a // b)}
_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b}
_CMPS = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
         ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}


# issue 8's GEMMs (y = x W^T, the token count M the only var axis): off the powers of two, one per plan class of
# gemm_bf16_sm90.cu (small-M stream, mid-M token tiles of 16 / 32 / 48, v6 / v10 tiles with tail rows)
GEMM_M = (3, 17, 48, 77, 1000, 5000)
GEMM = {rel: [(f"m{m}", {"M": m}, {}) for m in GEMM_M]
        for rel in ("llama/gemm_bf16_n4096_k4096", "llama/gemm_bf16_n6144_k4096", "llama/gemm_bf16_n28672_k4096",
                    "llama/gemm_bf16_n4096_k14336")}


def fail(msg):
    """Exits with status 1 and 'mem_heldout: msg' on stderr."""
    sys.stderr.write(f"mem_heldout: {msg}\n")
    sys.exit(1)


def ev(node, env, text):
    """Value of one node of a parsed axis expression over the axis values env; fails on anything
    outside the arithmetic, comparison and boolean subset the definitions here use."""
    t = type(node)
    if t is ast.Expression:
        return ev(node.body, env, text)
    if t is ast.Constant and isinstance(node.value, (int, float)):
        return node.value
    if t is ast.Name:
        if node.id not in env:
            fail(f"expression '{text}' names an unknown axis '{node.id}'")
        return env[node.id]
    if t is ast.BinOp and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](ev(node.left, env, text), ev(node.right, env, text))
    if t is ast.UnaryOp and type(node.op) in (ast.USub, ast.Not):
        v = ev(node.operand, env, text)
        return -v if type(node.op) is ast.USub else not v
    if t is ast.BoolOp:
        vals = [ev(v, env, text) for v in node.values]
        return all(vals) if type(node.op) is ast.And else any(vals)
    if t is ast.Compare and all(type(o) in _CMPS for o in node.ops):
        left = ev(node.left, env, text)
        for op, comp in zip(node.ops, node.comparators):
            right = ev(comp, env, text)
            if not _CMPS[type(op)](left, right):
                return False
            left = right
        return True
    if t is ast.Call and isinstance(node.func, ast.Name) and node.func.id in _FUNCS and not node.keywords:
        return _FUNCS[node.func.id](*[ev(a, env, text) for a in node.args])
    fail(f"expression '{text}' uses a construct this check does not read ({t.__name__})")
    return None


def evaluate(text, env):
    """The value of the axis expression text with the axis values env."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        fail(f"cannot parse the expression '{text}'")
    return ev(tree, env, text)


def bind_axes(defn, var, where):
    """All axis values of defn with the var axes var: const, var, then expr axes until none is left
    (they may refer to each other); checks var and every constraint. Returns the axis dict."""
    axes = defn["axes"]
    want = sorted(n for n, a in axes.items() if a["type"] == "var")
    if sorted(var) != want:
        fail(f"{where}: var axes {sorted(var)} differ from the definition's {want}")
    env = {}
    for n, a in axes.items():
        if a["type"] == "const":
            env[n] = a["value"]
        elif a["type"] == "var":
            v = var[n]
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                fail(f"{where}: axis {n} = {v!r} is not a positive integer")
            env[n] = v
    todo = [n for n, a in axes.items() if a["type"] == "expr"]
    while todo:
        ready = [n for n in todo if all(x.id in env for x in ast.walk(ast.parse(axes[n]["expression"],
                 mode="eval")) if isinstance(x, ast.Name) and x.id not in _FUNCS)]
        if not ready:
            fail(f"{where}: expression axes {todo} refer to unknown axes or to each other in a cycle")
        for n in ready:
            v = evaluate(axes[n]["expression"], env)
            if v != int(v) or v < 1:
                fail(f"{where}: expression axis {n} = {v} is not a positive integer")
            env[n] = int(v)
            todo.remove(n)
    for c in defn.get("constraints") or []:
        if not evaluate(c, env):
            fail(f"{where}: constraint '{c}' does not hold for {var}")
    return env


def elements(defn, env):
    """Tensor elements read and written: every input and output tensor's element count (scalars 0)."""
    total = 0
    for t in list(defn["inputs"].values()) + list(defn["outputs"].values()):
        if not t.get("shape"):
            continue
        n = 1
        for d in t["shape"]:
            n *= d if isinstance(d, int) else env[d]
        total += n
    return total


def bundled_rows(src):
    """The bundled workloads of src as dicts, and the one (correctness, inputs) they all share
    (a scalar input's value may differ from line to line: the first line's is kept)."""
    rows = [json.loads(line) for line in open(os.path.join(src, "workload.jsonl")) if line.strip()]
    if not rows:
        fail(f"{src}: no bundled workloads")
    first = rows[0]
    corr = first.get("correctness", first.get("tolerance"))
    for r in rows:
        if r.get("correctness", r.get("tolerance")) != corr:
            fail(f"{src}: bundled workloads differ in tolerance; pick one per held-out shape by hand")
        if {k: v["type"] for k, v in r["inputs"].items()} != {k: v["type"] for k, v in first["inputs"].items()}:
            fail(f"{src}: bundled workloads differ in their input kinds")
    return rows, corr, first["inputs"]


def write_problem(outdir, problems, rel, heldout, taken):
    """Writes outdir/<name>/ for problems/rel with the held-out rows; taken: every bundled uuid.
    Returns (folder, [(tag, elements)])."""
    src = os.path.join(problems, rel)
    name = os.path.basename(rel)
    defn = definition(src)
    rows, corr, inputs = bundled_rows(src)
    bundled_max = max(elements(defn, bind_axes(defn, r["axes"], f"{name} bundled {r['uuid']}")) for r in rows)
    bundled_shapes = [r["axes"] for r in rows]
    out_rows, sizes, seen = [], [], set()
    for tag, var, scalars in heldout:
        uuid = f"{name}-heldout-{tag}"
        where = f"{name} {tag}"
        if uuid in taken or uuid in seen:
            fail(f"{where}: uuid {uuid} collides with a bundled or another held-out workload")
        seen.add(uuid)
        if var in bundled_shapes:
            fail(f"{where}: shape {var} is one of the bundled workloads")
        env = bind_axes(defn, var, where)
        sizes.append((tag, elements(defn, env)))
        inp = json.loads(json.dumps(inputs))
        for k, v in scalars.items():
            if inp.get(k, {}).get("type") != "scalar":
                fail(f"{where}: {k} is not a scalar input of the bundled workloads")
            inp[k]["value"] = v
        out_rows.append({"uuid": uuid, "axes": var, "inputs": inp, "correctness": corr,
                         "solforge": {"note": "held-out shape (tools/mem_heldout.py)"}})
    if not 4 <= len(out_rows) <= 6:
        fail(f"{name}: {len(out_rows)} held-out shapes, want 4 to 6")
    largest = max(s for _, s in sizes)
    if not LARGEST_MIN * bundled_max <= largest <= LARGEST_MAX * bundled_max:
        fail(f"{name}: largest held-out shape {largest} elements is not within {LARGEST_MIN}x-{LARGEST_MAX}x "
             f"of the bundled largest {bundled_max}")
    dst = os.path.join(outdir, name)
    os.makedirs(dst, exist_ok=True)
    orc = defn["solforge"]["oracle"]
    if os.path.dirname(orc):  # a shared oracle outside the folder (the GEMMs' ../../common/oracles/...): made absolute
        defn["solforge"]["oracle"] = os.path.abspath(os.path.join(src, orc))
    else:
        shutil.copy(os.path.join(src, orc), os.path.join(dst, orc))
    # baseline sources are relative to the problem folder: made absolute for the copy
    for b in defn.get("solforge", {}).get("baselines", []):
        b["source"] = os.path.abspath(os.path.join(src, b["source"]))
    with open(os.path.join(dst, "definition.json"), "w") as f:
        json.dump(defn, f, indent=2)
    with open(os.path.join(dst, "workload.jsonl"), "w") as f:
        for w in out_rows:
            f.write(json.dumps(w) + "\n")
    return dst, sizes


def main(argv):
    args, listing, problems = [], False, os.path.join(ROOT, "problems")
    i = 1
    while i < len(argv):
        if argv[i] == "--list":
            listing = True
        elif argv[i] == "--root" and i + 1 < len(argv):
            i += 1
            problems = argv[i]
        elif argv[i].startswith("-"):
            fail(f"unknown option {argv[i]}\nusage: mem_heldout.py OUTDIR [--list] [--root PROBLEMS_DIR]")
        else:
            args.append(argv[i])
        i += 1
    if len(args) != 1:
        sys.exit("usage: mem_heldout.py OUTDIR [--list] [--root PROBLEMS_DIR]")
    taken = set()
    for p in problem_dirs(problems):
        if os.path.exists(os.path.join(p, "workload.jsonl")):
            taken.update(workload_uuids(p))
    for rel, heldout in list(MEM.items()) + list(GEMM.items()):
        if not os.path.isdir(os.path.join(problems, rel)):
            fail(f"problem folder {os.path.join(problems, rel)} is missing")
        dst, sizes = write_problem(args[0], problems, rel, heldout, taken)
        if listing:
            print(dst)
        else:
            print(f"{dst}: " + " ".join(f"{t}({s / 1e6:.3g}M)" for t, s in sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
