#!/usr/bin/env python3
"""sass_loop_classes.py - instruction classes of one iteration of a kernel's wgmma tile loop, from SASS.

Reads nvdisasm -c (or cuobjdump -sass) text of ONE function (stdin or a file), finds the loop: the
smallest range closed by a backward branch that holds at least 16 HGMMAs (S and PV of one 128-key tile) (the consumers'
tile loop of prefill v8; mbarrier try-wait retries that jump to the loop head are inside it). Inside it,
every forward branch (conditional, or the jump over an else arm) that skips a range without HGMMA is an optional block (the causal mask,
the O rescale); those are reported apart, so "main" is one iteration of a non-diagonal tile without a
rescale. try-wait retry paths (`@!P BRA` back to a SYNCS.PHASECHK) run only while waiting and are not
counted apart: their branch instruction itself is in the main count. No GPU needed.
  python3 tools/sass_loop_classes.py prefill_p8_ps1.sass        # table of classes: main, each block
  python3 tools/sass_loop_classes.py --self-test                # the parser on a synthetic loop (both forms)
"""
import re
import signal
import sys

signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head -1` (gpu_pfw.sh) ends it quietly

CLASSES = [  # (class, regex on the opcode), first match wins
    ("HGMMA", r"^HGMMA"),
    ("WARPGROUP (ARRIVE/DEPBAR)", r"^WARPGROUP"),
    ("BAR (named barrier)", r"^BAR\."),
    ("SYNCS (mbarrier)", r"^SYNCS"),
    ("MUFU.EX2", r"^MUFU"),
    ("FMNMX", r"^FMNMX"),
    ("FFMA", r"^FFMA"),
    ("FMUL", r"^FMUL"),
    ("FADD", r"^FADD"),
    ("F2FP (bf16x2 pack)", r"^F2FP"),
    ("SHFL", r"^SHFL"),
    ("VOTE", r"^VOTE"),
    ("FSETP/FSEL", r"^FSE"),
    ("ISETP/PLOP3 (vector)", r"^(ISETP|PLOP3)"),
    ("uniform (U*, S2UR)", r"^(U|S2UR)"),
    ("R2UR", r"^R2UR"),
    ("int ALU (IADD3/IMAD/LOP3/LEA/SHF/SEL/MOV)", r"^(IADD3|VIADD|IMAD|LOP3|LEA|SHF|SEL|MOV|IABS|PRMT)"),
    ("branch/convergence (BRA/BSSY/BSYNC/WARPSYNC/YIELD)", r"^(BRA|BSSY|BSYNC|WARPSYNC|YIELD|NOP)"),
    ("other", r"."),
]

LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*?);")
LABEL = re.compile(r"^\s*\.?(L_x_\d+|\.L_x_\d+):")


def parse(text):
    """instructions (addr, predicate, opcode, operands, branch target) and labels -> instruction index; a
    branch target is a label (nvdisasm: `(.L_x_N)) or an address (cuobjdump -sass: BRA 0x9a0)"""
    ins, labels = [], {}
    for raw in text.splitlines():
        m = LABEL.match(raw)
        if m:
            labels[m.group(1).lstrip(".")] = len(ins)
            continue
        m = LINE.search(raw)
        if m:
            tgt = re.search(r"`\(\.?(L_x_\d+)\)", raw) or re.search(r"\bBRA(?:\.\S+)?\s+(0x[0-9a-f]+)", raw)
            ins.append(dict(addr=int(m.group(1), 16), pred=(m.group(2) or "").strip(), op=m.group(3),
                            rest=m.group(4), tgt=tgt.group(1) if tgt else None))
    for i, x in enumerate(ins):  # address targets become labels of their instruction
        if x["tgt"] and x["tgt"].startswith("0x"):
            a = int(x["tgt"], 16)
            labels.setdefault(x["tgt"], next((k for k, y in enumerate(ins) if y["addr"] == a), len(ins)))
    return ins, labels


def classify(op):
    for name, rx in CLASSES:
        if re.match(rx, op):
            return name
    return "other"


def count(ins, idx):
    c = {}
    for i in idx:
        k = classify(ins[i]["op"])
        c[k] = c.get(k, 0) + 1
    return c


def synthetic(labels_form):
    """a small tile loop in nvdisasm (labels_form) or cuobjdump (address targets) form: a try-wait retry, 16
    HGMMA, a 10-instruction mask block, 4 MUFU, a rescale if / else whose else arm (DEPBAR + 9 FMUL) a BRA
    skips; 50 instructions, main path 30"""
    body = [("L1", None, "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R2"), (None, "@!P0", "BRA L1"),
            (None, None, "WARPGROUP.ARRIVE")] + [(None, None, "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR16], R24")] * 16
    body += [(None, None, "WARPGROUP.DEPBAR.LE gsb0, 0x1"), (None, "@P1", "BRA L2")]
    body += [(None, None, "FSEL R24, R24, -INF , P2")] * 10 + [("L2", None, "MUFU.EX2 R24, R24")]
    body += [(None, None, "MUFU.EX2 R25, R25")] * 3 + [(None, "@P2", "BRA L3"), (None, None, "WARPGROUP.DEPBAR.LE gsb0, 0x0"),
                                                       (None, None, "BRA L4"), ("L3", None, "WARPGROUP.DEPBAR.LE gsb0, 0x0")]
    body += [(None, None, "FMUL R88, R88, R9")] * 9 + [("L4", None, "UIADD3 UR5, UR5, 0x1, URZ"), (None, "@!P0", "BRA L1"),
                                                      (None, None, "EXIT")]
    addr = {lab: 0x100 + 16 * i for i, (lab, _, _) in enumerate(body) if lab}
    out = []
    for i, (lab, pred, op) in enumerate(body):
        if lab and labels_form:
            out.append(f".L_x_{lab[1:]}:")
        if op.startswith("BRA "):
            t = op.split()[1]
            op = f"BRA `(.L_x_{t[1:]})" if labels_form else f"BRA {addr[t]:#x}"
        out.append(f"        /*{0x100 + 16 * i:04x}*/              {pred or ''} {op} ;")
    return "\n".join(out)


def self_test():
    """the parser and the block rules on synthetic() in both forms; prints ok / FAIL lines"""
    bad = 0
    for form in (True, False):
        ins, labels = parse(synthetic(form))
        lo, hi, blocks, main_idx = analyse(ins, labels)
        got = (hi - lo + 1, len(main_idx), sorted(b[1] - b[0] for b in blocks), count(ins, main_idx).get("MUFU.EX2"))
        ok = got == (50, 30, [10, 10], 4)
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} sass_loop_classes {'nvdisasm' if form else 'cuobjdump'} form: loop, main "
              f"path, blocks, MUFU {got} (want (50, 30, [10, 10], 4))")
    return 1 if bad else 0


def analyse(ins, labels):
    """the tile loop (lo, hi), its optional blocks and the main path's instruction indices"""
    hg = [i for i, x in enumerate(ins) if x["op"].startswith("HGMMA")]
    loop = None
    for i, x in enumerate(ins):
        if x["op"] == "BRA" and x["tgt"] in labels and labels[x["tgt"]] < i:
            lo = labels[x["tgt"]]
            if sum(1 for k in hg if lo <= k <= i) >= 16 and (loop is None or i - lo < loop[1] - loop[0]):
                loop = (lo, i)  # the smallest backward range with 16 HGMMAs (retry stubs jump from further)
    if loop is None:
        sys.exit("sass_loop_classes: no tile loop found")
    lo, hi = loop
    blocks = []
    for i in range(lo, hi):
        x = ins[i]
        if x["op"] == "BRA" and x["tgt"] in labels:  # predicated, or jumping over the other arm of an if / else
            j = labels[x["tgt"]]
            if i < j <= hi and not any(ins[k]["op"].startswith("HGMMA") for k in range(i + 1, j)):
                blocks.append((i + 1, j))
    # keep the outermost skipped blocks with more than 8 instructions (the mask, the rescale)
    blocks = [b for b in blocks if b[1] - b[0] > 8]
    blocks = [b for b in blocks if not any(o != b and o[0] <= b[0] and b[1] <= o[1] for o in blocks)]
    skipped = {k for b in blocks for k in range(*b)}
    return lo, hi, blocks, [k for k in range(lo, hi + 1) if k not in skipped]


def main():
    if sys.argv[1:2] == ["--self-test"]:
        return self_test()
    text = open(sys.argv[1]).read() if len(sys.argv) > 1 else sys.stdin.read()
    ins, labels = parse(text)
    lo, hi, blocks, main_idx = analyse(ins, labels)
    cols = [("main", count(ins, main_idx), len(main_idx))]
    for b in blocks:
        cols.append((f"block {ins[b[0]]['addr']:#x}", count(ins, range(*b)), b[1] - b[0]))
    print(f"loop {ins[lo]['addr']:#x}..{ins[hi]['addr']:#x}: {hi - lo + 1} instructions; main path "
          f"{len(main_idx)}; optional blocks: " + ", ".join(f"{c[0]} ({c[2]})" for c in cols[1:]))
    print("| class | " + " | ".join(c[0] for c in cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for name, _ in CLASSES:
        if any(c[1].get(name) for c in cols):
            print(f"| {name} | " + " | ".join(str(c[1].get(name, 0)) for c in cols) + " |")
    print("| **total** | " + " | ".join(str(c[2]) for c in cols) + " |")
    # where the wgmma waits sit: instruction index within the main path (the softmax's overlap with PV)
    for k in main_idx:
        x = ins[k]
        if x["op"].startswith("WARPGROUP.DEPBAR") or x["op"] == "VOTE.ALL" or x["op"].startswith("BAR."):
            before_ex2 = sum(1 for j in main_idx if j > k and ins[j]["op"].startswith("MUFU"))
            print(f"  {x['addr']:#06x} {x['op']}{x['rest']}: {before_ex2} MUFU after it in the main path")


if __name__ == "__main__":
    sys.exit(main())
