"""tally.py - the ok / FAIL lines and the pass / fail count that the membench python tests share
(membench_py_test.py, rmsbench_py_test.py, problem_subset_test.py)."""

counts = {"passed": 0, "failed": 0}


def check(ok, what):
    """Prints "ok WHAT" or "FAIL WHAT" and counts it."""
    print(("ok " if ok else "FAIL ") + what)
    counts["passed" if ok else "failed"] += 1


def summary():
    """Prints "N passed, M failed"; the exit status: 1 when a check failed, else 0."""
    print("%d passed, %d failed" % (counts["passed"], counts["failed"]))
    return 1 if counts["failed"] else 0
