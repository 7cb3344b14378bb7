#!/usr/bin/env python3
"""problem_subset.py - copies problem folders into DST keeping only some of their workloads, for a
short GPU run through the real evaluator (tools/gpu_membw.sh, tools/gpu_knobs.sh).

    problem_subset.py DST PROBLEM_DIR [REGEX]     (repeatable as PROBLEM_DIR=REGEX pairs via --each)

The copy is DST/<basename>: definition.json with its relative baseline sources and oracle paths made
absolute (so they still point at the original), workload.jsonl holding the workloads whose uuid
suffix after the problem name matches REGEX (re.fullmatch; default: the first, the one ending in -t256
and the last, tools/gpu_membw.sh's choice). Exits 1 when a REGEX keeps no workload.
"""
import json
import os
import re
import shutil
import sys


def copy_problem(dst_root, prob):
    """Copies the problem folder prob to dst_root/<basename> (replacing an earlier copy) with the
    definition's relative baseline sources and '..' oracle path made absolute, so they still name the
    originals. Returns (name, the copy's path, the original's workload rows)."""
    name = os.path.basename(prob.rstrip("/"))
    dst = os.path.join(dst_root, name)
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(prob, dst)
    dp = os.path.join(dst, "definition.json")
    d = json.load(open(dp))
    ext = d.get("solforge", {})
    for b in ext.get("baselines", []):
        if "source" in b and not os.path.isabs(b["source"]):
            b["source"] = os.path.abspath(os.path.join(prob, b["source"]))
    if isinstance(ext.get("oracle"), str) and ext["oracle"].startswith(".."):
        ext["oracle"] = os.path.abspath(os.path.join(prob, ext["oracle"]))
    json.dump(d, open(dp, "w"), indent=2)
    rows = [json.loads(l) for l in open(os.path.join(prob, "workload.jsonl")) if l.strip()]
    return name, dst, rows


def subset(dst_root, prob, regex=None):
    """Writes the copy of prob under dst_root with the workloads regex names; returns their uuids."""
    name, dst, rows = copy_problem(dst_root, prob)
    if regex is None:
        keep = [rows[0]] + [r for r in rows if r["uuid"].endswith("-t256")] + [rows[-1]]
    else:
        keep = [r for r in rows if re.fullmatch(regex, r["uuid"][len(name) + 1:] if r["uuid"].startswith(name + "-")
                                                else r["uuid"])]
    seen, uniq = set(), []
    for r in keep:
        if r["uuid"] not in seen:
            seen.add(r["uuid"])
            uniq.append(r)
    with open(os.path.join(dst, "workload.jsonl"), "w") as f:
        for r in uniq:
            f.write(json.dumps(r) + "\n")
    return [r["uuid"] for r in uniq]


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    kept = subset(argv[1], argv[2], argv[3] if len(argv) > 3 else None)
    if not kept:
        sys.stderr.write("problem_subset: no workload of %s matches %r\n" % (argv[2], argv[3] if len(argv) > 3 else None))
        return 1
    print(" ".join(kept))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
