#!/usr/bin/env python3
"""xval_missing.py - the "PROBLEM_DIR UUID" lines of tools/gpu_bridge.sh's every-workload
cross-validation list (problems with a solutions/naive.cu and a PyTorch reference) that have no
trace with an xval verdict in the given JSON-lines trace files, for gpu_xval.sh's XVAL_LIST.

usage: tools/xval_missing.py TRACE.jsonl... > list.txt   (counts go to stderr)
"""
import json
import sys

from suite_list import definition, naive_problems, workload_uuids


def main(argv):
    done = set()
    for path in argv[1:]:
        for n, line in enumerate(open(path), 1):
            if not line.strip():
                continue
            try:
                t = json.loads(line)
            except ValueError:  # a line cut by a killed run: that workload has no verdict from it
                print(f"xval_missing: {path}:{n}: not a complete trace (skipped)", file=sys.stderr)
                continue
            if "xval:" in t.get("evaluation", {}).get("log", ""):
                done.add(t["workload"]["uuid"])
    wanted = []
    for p in naive_problems():
        if not definition(p).get("reference"):
            continue
        wanted.extend((p, u) for u in workload_uuids(p))
    missing = [w for w in wanted if w[1] not in done]
    for p, u in missing:
        print(p, u)
    print(f"xval_missing: {len(wanted)} workloads, {len(wanted) - len(missing)} with a verdict, "
          f"{len(missing)} missing", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
