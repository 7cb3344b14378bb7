#!/usr/bin/env python3
"""tests/x86/compare_objdump.py - compares the instruction starts of the code scan's sweep
(tests/x86/sweep_dump.c, src/core/x86len.c) with objdump's on one section of an ELF file.

Usage: compare_objdump.py SWEEP_DUMP FILE SECTION [--funcs N --seed S]
Without --funcs the whole section is compared; with it, N function symbols of the section picked
at random (seeded) are, each by its own objdump run from its start to its end.

objdump's blocks (from one symbol to the next) that hold data (a "(bad)" or ".byte" line: tables
and strings inside .text) are skipped: where decoding fails, objdump's recovery and the sweep's
differ, and the scan byte-scans from the first failure anyway. In every other block each start
must be the same; a decoder failure there is a mismatch. Prints one line
"FILE SECTION: N starts compared in B blocks, M mismatches, D data blocks skipped" and up to 5
mismatches, and exits 1 when there is a mismatch (2 when the tools fail).
"""
import bisect
import random
import re
import subprocess
import sys

HEAD = re.compile(r"^([0-9a-f]+) <(.*)>:$")
INSN = re.compile(r"^\s*([0-9a-f]+):\t(.*)$")


def objdump_blocks(path, section, lo=None, hi=None):
    """The blocks of objdump -d: a list of (start, end or None, [addresses], has_data)."""
    cmd = ["objdump", "-d", "-z", "--no-show-raw-insn", "-j", section, path]
    if lo is not None:
        cmd += ["--start-address=0x%x" % lo, "--stop-address=0x%x" % hi]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True).stdout
    blocks = []
    for line in out.splitlines():
        m = HEAD.match(line)
        if m:
            blocks.append([int(m.group(1), 16), None, [], False])
            continue
        m = INSN.match(line)
        if m and blocks:
            blocks[-1][2].append(int(m.group(1), 16))
            if "(bad)" in m.group(2) or ".byte" in m.group(2):
                blocks[-1][3] = True
    for i in range(len(blocks) - 1):
        blocks[i][1] = blocks[i + 1][0]
    if blocks and hi is not None:
        blocks[-1][1] = hi
    return blocks


def sweep(dump, path, section, ranges=()):
    """The sweep's starts: {address: is_failure}."""
    args = [dump, path, section] + ["%x:%x" % r for r in ranges]
    out = subprocess.run(args, stdout=subprocess.PIPE, text=True, check=True).stdout
    starts = {}
    for line in out.splitlines():
        f = line.split()
        if f[0] != "FAIL":
            starts[int(f[0], 16)] = len(f) > 1
    return starts


def functions(path, section):
    """(address, size) of the defined functions inside section (from readelf)."""
    sh = subprocess.run(["readelf", "-SW", path], stdout=subprocess.PIPE, text=True, check=True).stdout
    lo = hi = None
    for line in sh.splitlines():
        m = re.search(r"\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m and m.group(1) == section:
            lo = int(m.group(2), 16)
            hi = lo + int(m.group(3), 16)
    syms = subprocess.run(["readelf", "-sW", "--dyn-syms", path], stdout=subprocess.PIPE, text=True,
                          check=True).stdout
    found = set()
    for line in syms.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND":
            a, n = int(f[1], 16), int(f[2], 0)
            if n > 0 and lo is not None and lo <= a and a + n <= hi:
                found.add((a, n))
    return sorted(found)


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    dump, path, section = sys.argv[1:4]
    nfuncs = seed = None
    if "--funcs" in sys.argv:
        nfuncs = int(sys.argv[sys.argv.index("--funcs") + 1])
        seed = int(sys.argv[sys.argv.index("--seed") + 1])
    if nfuncs is None:
        blocks = objdump_blocks(path, section)
        mine = sweep(dump, path, section)
    else:
        funcs = functions(path, section)
        pick = random.Random(seed).sample(funcs, min(nfuncs, len(funcs)))
        blocks = []
        for a, n in pick:
            blocks += objdump_blocks(path, section, a, a + n)
        mine = sweep(dump, path, section, [(a, a + n) for a, n in pick])
    order = sorted(mine)
    compared = mismatches = skipped = nblocks = 0
    shown = []
    for start, end, addrs, data in blocks:
        if data:
            skipped += 1
            continue
        nblocks += 1
        theirs = set(addrs)
        if end is None:  # the last block: up to objdump's last start
            end = max(addrs) + 1 if addrs else start
        ours = set(order[bisect.bisect_left(order, start):bisect.bisect_left(order, end)])
        bad = {a for a in ours if mine[a]}
        diff = sorted((theirs ^ ours) | bad)
        compared += len(theirs)
        mismatches += len(diff)
        for a in diff[:5 - len(shown)]:
            shown.append("0x%x (%s)" % (a, "decoder failed" if a in bad else
                                        "objdump only" if a in theirs else "sweep only"))
    what = "whole section" if nfuncs is None else "%d random functions, seed %d" % (nfuncs, seed)
    print("%s %s (%s): %d starts compared in %d blocks, %d mismatches, %d data blocks skipped"
          % (path, section, what, compared, nblocks, mismatches, skipped))
    for s in shown:
        print("    mismatch at " + s)
    if compared == 0:
        print("    nothing compared")
        return 1
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
