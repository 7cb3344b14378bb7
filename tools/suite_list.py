"""suite_list.py - the bundled problems' folders and workload uuids, shared by the coverage tools
(tools/naive_coverage.py, tools/xval_missing.py) and tools/mem_heldout.py.

Paths are as `glob("problems/*/*/")` gives them relative to the current directory (no trailing
slash), sorted, so the tools print exactly the paths they always printed.
"""
import glob
import json
import os


def workload_uuids(problem_dir):
    """The uuids of problem_dir/workload.jsonl, in file order (blank lines skipped)."""
    with open(os.path.join(problem_dir, "workload.jsonl")) as f:
        return [json.loads(line)["uuid"] for line in f if line.strip()]


def definition(problem_dir):
    """problem_dir/definition.json, parsed."""
    with open(os.path.join(problem_dir, "definition.json")) as f:
        return json.load(f)


def problem_dirs(root="problems"):
    """Every root/<family>/<name> folder, sorted, without the trailing slash."""
    return [p.rstrip("/") for p in sorted(glob.glob(os.path.join(root, "*", "*", "")))]


def naive_problems(root="problems"):
    """The problem folders (sorted) that have a solutions/naive.cu: the first solutions of issue 3."""
    return [p for p in problem_dirs(root) if os.path.exists(p + "/solutions/naive.cu")]
