#!/usr/bin/env python3
"""naive_coverage.py - issue 3's GPU check from recorded traces: for every problem with a
solutions/naive.cu, which of its workloads have a PASSED trace of naive.cu on the cuda backend in the
given JSON-lines files (evaluations of fast.cu or of baselines do not count), and which have none.

usage: tools/naive_coverage.py TRACE.jsonl...   (exit 1 when a workload has no PASSED naive.cu trace)
"""
import json
import os
import sys

from suite_list import naive_problems, workload_uuids


def main(argv):
    passed, bad = {}, {}
    for path in argv[1:]:
        for line in open(path):
            try:
                t = json.loads(line)
            except ValueError:  # a line cut by a killed run
                continue
            if os.path.basename(t.get("solution", "")) != "naive.cu":
                continue
            u, st = t["workload"]["uuid"], t["evaluation"]["status"]
            if st == "PASSED":
                passed.setdefault(u, path)
            else:
                bad.setdefault(u, (st, path))
    missing_total = 0
    for p in naive_problems():
        uu = workload_uuids(p)
        miss = [u for u in uu if u not in passed]
        missing_total += len(miss)
        print(f"{os.path.basename(p):45s} {len(uu) - len(miss):3d} / {len(uu):3d} PASSED"
              + ("" if not miss else "   missing: " + " ".join(
                  u + (f" ({bad[u][0]})" if u in bad else "") for u in miss)))
    print(f"naive_coverage: {missing_total} workloads without a PASSED naive.cu trace")
    return 1 if missing_total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
