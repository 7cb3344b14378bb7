#!/usr/bin/env python3
"""emulate_tt.py - CPU checks of the mid-M GEMM's narrow token tiles (version 24, SF_GEMM_MIDM_TT_SMALL: FIT 2's two token
tiles of 16 / 32 / 48 tokens at M 17-128), on emulate_wgmma.py's model of gemm_midm_kernel (plans, TMA boxes, fragments,
stores); split out of that file to keep it under ~800 lines. GEMM_NOTES_MID_M3.md "Version 24" says what it covers
(version 25's weight-multicast pair and its ring-protocol emulation were removed with the candidate in session 25).

    python3 tools/gemm_dev/emulate_tt.py      # exit status 1 on a failure (tests/suites/gemm_fragments.sh runs it)
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emulate_wgmma import HB_NT_SMALL, midm_plan_hb_fit, run_midm  # noqa: E402


def check_tt_small(rng):
    """Version 24 (SF_GEMM_MIDM_TT_SMALL with SF_GEMM_MIDM_TT_MIN_M 16, GEMM_NOTES_MID_M3.md "Version 24"): FIT 2's two
    token tiles below 64 tokens. The plans of M 17..128 on the 4096-row shapes (and odd ones) give an instantiated tile
    (16, 32, 48, 64) of ceil(M / 2) rounded up to 16 (two tiles overlap by < 32 tokens) wherever the plan splits K in
    two, and the version-16 plans elsewhere; then the kernel's loads and stores at odd M with each narrow tile (consumer
    widths 8, 16, 24: one, two, three 8-token groups): every output written once and exact, expect_tx = the bytes
    landed; mutations mlo / row0 / tx16 caught. Returns the failure count."""
    bad = 0
    for (N, K) in ((4096, 4096), (4096, 14336), (6144, 4096), (130, 520), (1000, 4104)):
        for M in range(17, 129):
            got = midm_plan_hb_fit(M, N, K, 132, 0, None, 2, 16, 1)
            base = midm_plan_hb_fit(M, N, K, 132, 0, None, 2, 16, 0)
            nt, splits, tt = got
            if tt == 2:
                t = (M + 1) // 2
                ok = (splits == 1 and nt in set(HB_NT_SMALL) | {64} and nt < M <= 2 * nt and 2 * nt - M < 32 and
                      nt == (t + 15) // 16 * 16)
            else:
                ok = got == base
            if not ok:
                print("tt_small plan %dx%d M=%d: nt %d splits %d ttiles %d FAILED" % (N, K, M, nt, splits, tt))
                bad += 1
    for (N, K, M, want) in [(4096, 4096, 64, (32, 1, 2)), (4096, 4096, 32, (16, 1, 2)), (4096, 4096, 128, (64, 1, 2)),
                            (4096, 4096, 77, (48, 1, 2)), (6144, 4096, 64, (64, 1, 1))]:
        got = midm_plan_hb_fit(M, N, K, 132, 0, None, 2, 16, 1)
        if got != want:
            print("tt_small plan %dx%d M=%d: %s, expected %s FAILED" % (N, K, M, got, want))
            bad += 1
    print("tt_small plans: M 17..128 x 5 shapes checked, max err 0")
    for (M, N, K, mutants) in [(17, 66, 136, 0), (31, 64, 72, 1), (32, 70, 200, 0), (33, 66, 136, 1), (47, 64, 72, 0),
                               (49, 66, 72, 1), (64, 64, 136, 0), (77, 70, 72, 0), (96, 64, 72, 0), (127, 66, 72, 0)]:
        nt = midm_plan_hb_fit(M, 4096, 4096, 132, 0, None, 2, 16, 1)[0]
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        for mut in (None,) + (('mlo', 'row0', 'tx16') if mutants else ()):
            if (mut == 'mlo' and 2 * nt == M) or (mut == 'row0' and M - nt == nt):
                continue  # no overlap / the same rows: nothing to catch
            acct = []
            C, writes = run_midm(A, B, nt, 1, 1, hb=True, ttiles=2, acct=acct, xrows=True, mutate=mut)
            err = np.abs(C - A @ B.T).max()
            good = err <= 1e-9 and bool((writes == 1).all()) and all(e == l for e, l in acct)
            if mut is None:
                print("tt_small M=%d N=%d K=%d NT=%d ttiles=2 max err %.2e, every output written once and tx: %s" %
                      (M, N, K, nt, err, good))
                bad += not good
            else:
                print("tt_small mutation %s M=%d NT=%d: %s" % (mut, M, nt, "NOT CAUGHT" if good else "caught"))
                bad += good
    return bad


def main():
    seed = int(os.environ.get("EMU_SEED", "0")) or int.from_bytes(os.urandom(4), "little")
    print("emulate_tt: seed %d (EMU_SEED=%d reruns it)" % (seed, seed))
    rng = np.random.default_rng(seed)
    bad = check_tt_small(rng)
    print("emulate_tt: %s" % ("FAILED" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
