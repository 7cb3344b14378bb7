#!/usr/bin/env python3
"""problem_subset_test.py - tools/problem_subset.py on bundled problems with random workload regexes:
the copy keeps exactly the workloads the regex names, in file order, its definition's relative
baseline sources resolve to the original files, and a regex matching nothing is an error (exit 1).
Usage: problem_subset_test.py SEED. Prints ok/FAIL lines and "N passed, M failed"."""
import json
import os
import random
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tally import check, summary  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tools"))
import problem_subset  # noqa: E402


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    rnd = random.Random(seed)
    probs = sorted(os.path.join(ROOT, "problems", m, p) for m in os.listdir(os.path.join(ROOT, "problems"))
                   if os.path.isdir(os.path.join(ROOT, "problems", m)) and m != "common"
                   for p in os.listdir(os.path.join(ROOT, "problems", m))
                   if os.path.exists(os.path.join(ROOT, "problems", m, p, "workload.jsonl")))
    check(len(probs) >= 10, "found the bundled problems")
    with tempfile.TemporaryDirectory() as tmp:
        for prob in rnd.sample(probs, 4):
            name = os.path.basename(prob)
            rows = [json.loads(l) for l in open(os.path.join(prob, "workload.jsonl")) if l.strip()]
            sufs = [r["uuid"][len(name) + 1:] if r["uuid"].startswith(name + "-") else r["uuid"] for r in rows]
            pick = rnd.sample(sufs, rnd.randint(1, min(3, len(sufs))))
            regex = "|".join(re.escape(s) for s in pick)
            kept = problem_subset.subset(tmp, prob, regex)
            want = [r["uuid"] for r, s in zip(rows, sufs) if s in pick]
            got = [json.loads(l)["uuid"] for l in open(os.path.join(tmp, name, "workload.jsonl")) if l.strip()]
            check(kept == want and got == want, "%s: keeps %s in file order" % (name, pick))
            d = json.load(open(os.path.join(tmp, name, "definition.json")))
            srcs = [b["source"] for b in d.get("solforge", {}).get("baselines", []) if "source" in b]
            check(all(os.path.isabs(s) and os.path.exists(s) for s in srcs), "%s: baseline sources resolve" % name)
        prob = rnd.choice(probs)
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "problem_subset.py"), tmp, prob,
                            "no-such-workload-%d" % rnd.randint(0, 1 << 30)], capture_output=True, text=True)
        check(r.returncode == 1 and "no workload" in r.stderr, "a regex matching nothing exits 1")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
