#!/usr/bin/env bash
# gpu_gemm.sh - one-shot GPU check and tuning run of the from-scratch bf16 GEMM
# (problems/common/kernels/gemm_bf16_sm90.cu) on an H200, in under ~3 minutes. Full logs go to $OUT (the
# device tool) or build/gpu-gemm, packed into gpu_gemm_logs.tgz beside summary.txt; the table is printed last.
#
#   build    v2 (-DSF_GEMM_MIDM=0 -DSF_GEMM_V3=0: the default before session 4), v4 (-DSF_GEMM_V3=0: the
#            session-4 default, v2 with M 17..128 on the mid-M kernel; the default build since session 5
#            is v4 with the v3a width plan above M 128, i.e. candidate v3a) and the candidates below as plain .so files, plus the cuBLASLt
#            baseline, all with -Xptxas -v, in parallel with `make` (the eval step needs build/solforge)
#   sass     cuobjdump of v2, v3, midm, pp, mc, c256 and c256n: HGMMA / UTMALDG (multicast) / MEMBAR.ALL.GPU counts (the large-M
#            path must show HGMMA; mc's clustered kernel a UTMALDG.2D.MULTICAST)
#   precheck the candidates that launch thread-block clusters (a wrong cluster barrier hangs) checked
#            apart from the rest (one process each, in turn), untimed, at the M where they use
#            clusters, each under a 45 s `timeout`; only those that pass join the timed run
#   check    ONE tools/gemm_dev/gemm_check.py process: every variant checked against an fp32 torch
#            reference (NaN-filled output, canary) and timed beside cuBLASLt (CUDA events, L2 flushed,
#            median of 10) on the 4 shapes x $MS; a candidate only at the M it can change
#            (NAME=PATH@MINM-); under `timeout` (a hang costs at most $CHECK_TIMEOUT s)
#   eval     build/solforge eval of solutions/fast.cu (the default) on gemm_bf16_n4096_k4096, workloads
#            matching -m1 (M = 1, 16, 128, 1024), --rounds 1 --budget-ms 200, if time is left
#   ncu      (only when named) Nsight Compute of cuBLASLt's and our kernels at NCU_SHAPES x NCU_MS (below)
#   eval6    (only when named) solforge eval (CUPTI) of fast.cu by default and with -D SF_GEMM_V6=1 on
#            gemm_bf16_n4096_k4096 and _n6144_k4096 at the M = 256 and 512 workloads: 8 evals, one row each
# Candidates (one -D each; the default of every macro is in gemm_bf16_sm90.cu; GEMM_NOTES.md "Version 3"):
#   v3      -DSF_GEMM_V3=1 (+ _TRACE=1)            the v3 plan: tile width by whole waves at large M (128 x 192
#                                                  for 6144 x 4096 at M ~1000), cluster split-K reduced
#                                                  through DSMEM at mid M (width 128 or 256, 2..8 splits)
#   v3w     -DSF_GEMM_V3=1 -DSF_GEMM_V3_CLUSTER=0  the width plan only (mid M stays on v2's split-K)
#   v3a     v3w with SF_GEMM_V3_AUTO=1: a width other than 256 only when predicted >= 2% cheaper
#                                                  (GEMM_NOTES.md "v3 width: a margin"; traced)
#   v3c256  -DSF_GEMM_V3=1 -DSF_GEMM_V3_SPLIT_BN=256  mid M: cluster split-K with 128 x 256 tiles only
#   v3c128  -DSF_GEMM_V3=1 -DSF_GEMM_V3_SPLIT_BN=128  mid M: cluster split-K with 128 x 128 tiles only
#   v3n192  -DSF_GEMM_V3=1 -DSF_GEMM_V3_BN=192     large M: 128 x 192 tiles everywhere (width efficiency)
#   v3n128  -DSF_GEMM_V3=1 -DSF_GEMM_V3_BN=128     large M: 128 x 128 tiles everywhere
#   v3p     -DSF_GEMM_V3=1 -DSF_GEMM_V3_PAIR=1 (+ _TRACE=1)  v3 + large M on persistent clusters of 2 CTAs that share the
#                                                  B tile by TMA multicast (L2 -> SM bytes per tile -1/3)
#   midm    -DSF_GEMM_MIDM=1 (+ _TRACE=1)          v4 mid M (17..256, GEMM_NOTES.md "Version 4"): swap-AB wgmma,
#                                                  weight bands of 128 rows x all tokens, planned K splits as
#                                                  clusters reduced through DSMEM
#   midm_s1 / midm_s2 / midm_s4  -DSF_GEMM_MIDM_SPLITS=1 / 2 / 4: the same kernel with the split count pinned
#                                                  (s1: no cluster, bands CTAs only; tells the split's cost)
#   midm2   -DSF_GEMM_MIDM=1 -DSF_GEMM_MIDM_2CTA=1 (+ _TRACE=1)  M 17..96: two CTAs per SM (half the ring
#                                                  each, ~twice the splits; 28672 x 4096 in one wave)
#   sm5     -DSF_GEMM_SMALLM_V=2 (+ SF_GEMM_SMALLM_TRACE=1)  v5 small M (M <= 16, GEMM_NOTES.md "Version 5"):
#                                                  weight stream through a TMA ring (~170-200 KB in flight per SM),
#                                                  one wave of equal units, K split as clusters reduced through DSMEM
#   sm5c    sm5 with tiles of >= 128 rows (-DSF_GEMM_SM5_MIN_RB=128): the K split as clusters of 4 reduced
#                                                  through DSMEM on 3 of the 4 shapes (sm5 runs them unsplit)
#   sm5r    sm5 with a 96 KB ring (-DSF_GEMM_SM5_RING_KB=96): half the bytes in flight (is depth the limiter?)
#   sm5m    sm5 releasing a ring stage after the mma only, no proxy fences (-DSF_GEMM_SM5_RELEASE=1; is the
#                                                  fence needed, what does it cost?)
#   v6      the default (v3a) + -DSF_GEMM_V6=1 (+ _TRACE=1): M 129..512 on the v6 plan (GEMM_NOTES.md "Version 6": tile
#                                                  width 128/192/256 and schedule, persistent unsplit / cluster
#                                                  split-K / v2 split-K, by a cost model; prints its predicted us)
#   v6rt    v6 with -DSF_GEMM_WG_CL_RT=4: the cluster reduction sums 4 output pairs per DSMEM round trip (2)
#   v6p     v6 with the schedule pinned to persistent unsplit tiles (-DSF_GEMM_V6_PIN_MODE=0), width planned
#           (launches no cluster: no precheck; v6's precheck covers odd M on the persistent plans)
#   v6c     v6 with the schedule pinned to cluster split-K (-DSF_GEMM_V6_PIN_MODE=1), width and splits planned
#   v6pf    v6 with -DSF_GEMM_WG_PREFETCH=1: the wgmma kernel prefetches its two TMA descriptors first
#   pp      the default (v3a, v6) + -DSF_GEMM_PINGPONG=1: M >= 513 on the ping-pong kernel (GEMM_NOTES_LARGE_M.md "Version 7":
#                                                  the two consumer warpgroups on alternate 128 x 128 tiles, K loops
#                                                  ordered by named barriers, each epilogue under the other's K loop)
#   pp64    pp with 64 x 256 consumer tiles (-DSF_GEMM_PP_WM=64: one m64n256k16 per k16 step, as the default kernel)
#           pp / pp64 hang if the turn protocol is wrong: their precheck ($MS_PP) runs them alone under a timeout
#   mc      the default (v3a, v6) + -DSF_GEMM_MCAST=1 (+ SF_GEMM_V3_TRACE=1): v3a's unsplit large-M plans (M >= 513) on
#                                                  persistent clusters of 2 CTAs sharing the W block by TMA multicast
#                                                  (GEMM_NOTES_LARGE_M.md "Version 8"; the plan trace says "launched mcast")
#   mcr     mc with -DSF_GEMM_MCAST_FENCE=1: the remote release as v3p wrote it (.release.cluster: a MEMBAR.ALL.GPU
#                                                  per arrive; does the fence explain v3p's 0.71x?)
#   mcn     mc with -DSF_GEMM_MCAST_SHARE=0: the same clusters and barriers, each CTA loads all of W (the lockstep's cost)
#           mc / mcr / mcn hang if the two-CTA barrier protocol is wrong: their precheck ($MS_MC) runs them alone under a timeout;
#           with v3a among CANDS the summary adds each candidate's geomean time ratio against v3a
#   c256    the default (v3a, v6) + -DSF_GEMM_COOP256=1 (+ SF_GEMM_V3_TRACE=1): v3a's unsplit 256-wide large-M plans
#                                                  (M >= 513) on 256 (M) x 128 (N) tiles, each consumer warpgroup 128 x 128
#                                                  issuing two m64n128k16 per k16 step (GEMM_NOTES_LARGE_M.md "Version 9",
#                                                  cuBLASLt's consumer shape; the plan trace says "launched coop")
#   c256n   c256 with -DSF_GEMM_COOP256=2: 128 x 256 tiles, the consumers split by columns (the same wgmma stream;
#                                                  cuBLASLt's 256x128 tile in our orientation)
#   c256d   c256 with -DSF_GEMM_COOP_ORDER=1 (diagnostic): each row block's four k16 wgmmas back to back (dependent
#                                                  chains) instead of alternating the two accumulators
#           c256 / c256n / c256d run a new kernel: their precheck ($MS_COOP) runs them alone under a timeout
#   v10     the default (v3a, v6) + -DSF_GEMM_V10=1 (+ SF_GEMM_V3_TRACE=1): every unsplit persistent 128 x BN launch at
#                                                  M >= 513 (v3a's and v2's) on the version-10 kernel: the same K loop, the
#                                                  epilogue through shared memory and TMA stores (GEMM_NOTES_LARGE_M.md
#                                                  "Version 10"; the trace says "v10 plan ...: launched v10")
#   v10r    v10 with -DSF_GEMM_V10_EPI=0 (control): the version-10 kernel with the default's register-store epilogue
#           v10 / v10r run a new kernel: their precheck ($MS_V10) runs them alone under a timeout;
#           with v3a among CANDS the summary adds each candidate's geomean time ratio against v3a
#   s10     the defaults with -DSF_GEMM_V10_MIN_M=513 (session 10's default: v10 only above M 512), the control of
#           the session-11 flip to 129 (v11p below is now the default's code)
#   v11p    the defaults + -DSF_GEMM_V10_MIN_M=129 (+ V3 / V6 traces): every unsplit persistent launch at M 129..512
#           (v6's persistent plans and its v2 plans that do not split K) on the version-10 kernel, i.e. the
#           TMA-store epilogue at mid M with no new device code (GEMM_NOTES_MID_M.md "Version 11")
#   v11r    v11p with -DSF_GEMM_V10_EPI=0 (control): the version-10 kernel with register stores at mid M
#   v11pp   v11p with -DSF_GEMM_V6_PIN_MODE=0: every v6 plan persistent, so M 200..256 on 4096^2 / 4096x14336
#           (cluster / global split-K by default) also get the TMA-store epilogue
#   v11m    the defaults + -DSF_GEMM_MIDM_TMA=1 (+ _TRACE=1): v4's swap-AB kernel (M 17..128) stores through a
#           transposing shared-memory stage and TMA stores, unsplit and in the cluster reduction where a rank's
#           share is even (the trace line ends "(TMA stores)" or "(register stores)"); precheck $MS_V11M
#           v11p / v11r / v11pp precheck ($MS_V11) alone under a timeout; with dflt among CANDS the summary adds each
#           candidate's geomean time ratio against dflt
#   s16     the defaults + -DSF_GEMM_SM16=1 (the default since session 12: M 9..16 on gemm_smallm16_kernel where its
#           grid is one wave; every warp 16 rows of B against both A halves, A:B loads 1:1 as at M <= 8;
#           GEMM_NOTES_MID_M.md "M 9-16 measured"); checked and timed at M 9..16 only; its precheck ($MS_S16,
#           untimed) covers odd M and every M-row clamp
#   s16o    the control of that flip, -DSF_GEMM_SM16=0: M 9..16 on the 8-row kernel gemm_smallm_kernel<2, U>
#   (sm16a / sm16a16, A staged in shared memory at M 9-16: measured slower in session 16, removed)
#   v12     the defaults + -DSF_GEMM_MIDM_MC=1 (+ _TRACE=1): v4's one-CTA-per-SM plans (M 17..128) on clusters of two
#           weight bands x their K splits whose CTAs of one K range share the activation tile by TMA multicast (each
#           loads half; gemm_bf16_sm90_midm_mc.cuh, GEMM_NOTES_MID_M.md "Version 12"); the trace line of a pair plan
#           ends "(v12 band pairs, ...)", a declined one reads "midm pair plan ...: not taken: v4"; precheck $MS_V12
#   v12n    v12 with -DSF_GEMM_MIDM_MC=2 (control): the same clusters, barriers and lockstep, no multicast (each CTA
#           loads its whole activation tile): v12 against v12n is the byte saving, v12n against dflt the pairing's cost
#   v12w    v12 with -DSF_GEMM_MIDM_MAX_M=256: M 129..256 on the swap-AB kernel too (token tiles 192 / 256, band pairs
#           where they fit) instead of v6 + v10; precheck $MS_V12W
#   v12t8   v12 with -DSF_GEMM_MIDM_MC_TRIP=8: the cluster reduction issues 8 output pairs' DSMEM loads per round trip
#           (a rank's whole share at NT 128 with 4 splits: 1 trip instead of 2; unchanged at NT <= 64): is the
#           reduction latency-bound?
#   v13     the defaults + -DSF_GEMM_MIDM_HB=1 (+ _TRACE=1): v4's swap-AB kernel on half bands (64 weight rows per CTA,
#           the two consumers splitting the tokens) where that plan has more CTAs than v4's one-CTA-per-SM plan
#           (4096-row weights: 64 bands x 2 splits = 128 CTAs on clusters of 2 instead of 32 x 3 = 96; GEMM_NOTES_MID_M.md
#           "Version 13"); trace lines "midm hb plan ..."; precheck $MS_V13
#   v13a    -DSF_GEMM_MIDM_HB=2: half bands wherever v4 runs one CTA per SM (also 6144 x 4096: 96 x 1 vs 48 x 2; the
#           default since session 13)
#   v13o    -DSF_GEMM_MIDM_HB=0: v4 as before session 13 (the control of that flip)
#   v13x    v13a with -DSF_GEMM_MIDM_XROWS=1: the half-band activation box M rows instead of NT (the default since
#           session 13's third call); v13n (-DSF_GEMM_MIDM_XROWS=0) its control; precheck $MS_V13
#   v13w    v13a with -DSF_GEMM_MIDM_MAX_M=256: M 129..256 on half bands too (token tiles 192 / 256) instead of v6 +
#   v13c    -DSF_GEMM_MIDM_MAX_M=128: the default before session 15 (M 129-192 on the v6 / v10 plans, not half bands)
#           v10; precheck $MS_V13W
#   (v14, v14p, v14s8, v14k, v14x, v14n: version 14, token pairs, removed in session 14; GEMM_NOTES_MID_M.md)
#   v15o    -DSF_GEMM_TAILROWS=0: the 128-row / NT-row boxes of before version 15 (the control since v15 became the default, session 14);
#   v15a    version 15 at every M (-DSF_GEMM_TAILROWS_MAX_M=1e9; the default stops at M 512);
#   v15     the defaults + -DSF_GEMM_TAILROWS=1 (+ V3 / V6 / MIDM traces): the last token tile's A box is its M % 128
#           real rows (a second A map) in the wgmma kernel (v6's cluster / v2 split-K plans, fallbacks) and the v10 kernel
#           (every unsplit persistent launch from M 129), and v4's activation box M rows outside the half bands (28672 x
#           4096's two-CTA plans at M 17..96): no zero-filled rows past M (GEMM_NOTES_MID_M.md "Version 15"; M % 128 == 0
#           runs the default's code); precheck $MS_V15 (odd M: every tail size class, cluster and two-CTA plans)
#   (since session 15 the default is FIT 2 with token tiles only at M > 128 and K <= 4096: SF_GEMM_MIDM_TT_MIN_M /
#   _TT_MAX_K; v16t / v16tw pin the candidate's rule, M > 64 at any K; v16o = FIT 0, the version-13 tiles)
#   v16     the defaults + -DSF_GEMM_MIDM_FIT=1 (+ MIDM trace): the half-band plan's token tile is M rounded up to 16 at
#           M 65..192 (NT 80, 96, 112, 144, 160, 176 besides 128 / 192; each consumer a wgmma n of NT / 2) instead of the next
#           of 64 / 128 / 192 / 256: M 129 runs 144 tokens, not 192 (GEMM_NOTES_MID_M2.md "Version 16"); trace lines
#           "midm hb plan ...: nt 144 splits 2 ttiles 1"; precheck $MS_V16 (every new tile at odd M, clusters of 2)
#   v16t    -DSF_GEMM_MIDM_FIT=2: v16, and where the half-band plan splits K in two (4096-row weights) two token tiles of
#           M / 2 rounded up to 16 (>= 64) instead, the whole K per CTA, no cluster (cuBLASLt's 4096^2 plan: 64 x 72 tiles,
#           2 token tiles, 128 CTAs); "ttiles 2" in the trace; precheck $MS_V16
#   v16tw   v16t with -DSF_GEMM_MIDM_MAX_M=256: M 193..256 on half bands too (4096 rows: two token tiles of 112 / 128;
#           6144: NT 256 unsplit); precheck $MS_V16W
#   v16w    the defaults + -DSF_GEMM_MIDM_MAX_M=256: M 193..256 on half bands with the default's token-tile rule (two
#           token tiles at K <= 4096 as v16tw; K 14336 keeps one tile and the 2-way split); precheck $MS_V16W
#   v17     the defaults + -DSF_GEMM_V6_BN96=1 (+ V6 / V3 traces): the v6 plan may pick 128 x 96 persistent tiles
#           (gemm_wgmma_kernel<96, kWgPersistent>, register stores; v10's epilogue is not taken at width 96) where they
#           fill one wave to >= 90% and M <= 256: 6144x4096 M 193..256 on 128 CTAs instead of v10's 96 x 128-wide
#           (GEMM_NOTES_MID_M2.md "Version 17"); trace "v6 plan 6144x4096 M=256: bn 96 splits 1 mode persistent ctas 128";
#           every other plan unchanged; precheck $MS_V17 (odd tails 65..127 rows, the new kernel under a timeout)
#   v17o    -DSF_GEMM_V6_BN96=0: the control of version 17's flip (session 16, call 4): no 96-wide tiles
#   (smpf1 / smpf2 / smpfb / smxpf, the small-M L2 prefetch candidates SF_GEMM_SM_PF / _PF_OP / _XPF: measured slower
#           in session 17, call 1, removed)
#   sm256   (the default since session 17) -DSF_GEMM_SM_LDPF=256: the weight loads carry .L2::256B
#           (ld.global.nc.L1::no_allocate.L2::256B; GEMM_NOTES_MID_M2.md "M <= 16: ramp and tail"); sm256o
#           (-DSF_GEMM_SM_LDPF=0) the control of that flip
#   v17x    (the default since session 16's fourth call) -DSF_GEMM_V6_BN96=2: v17 at any v6 M, so also 4096^2 and 4096x14336 M 257..384 (43 x 3 = 129 CTAs instead of
#           96 of 128-wide tiles); precheck $MS_V17X
#   v18     (the default since session 17; v18o = -DSF_GEMM_MIDM_MW=0, the control) -DSF_GEMM_MIDM_MW=1 (+ MIDM / V6 traces): where the weight has more 128-row bands than SMs
#           (28672 x 4096) and M is 129..192, v4's full-band swap-AB kernel (gemm_midm_kernel<192, 1>, 224 CTAs, unsplit,
#           M-row activation box) instead of the v6 plan's 224 v10 tiles of 128 tokens x 256 (25% less MMA per SM at the same
#           2 waves; GEMM_NOTES_MID_M2.md "Version 18"); trace "midm plan 28672x4096 M=129: nt 192 cps 1 splits 1 ctas 224:
#           launched"; every other shape and M unchanged (host code only); precheck $MS_V18 (odd M: stale box rows 129..191)
#   v18h    -DSF_GEMM_MIDM_MW=2: v18's dispatch with the half-band hook on (448 CTAs of 64 weight rows x M rounded up to
#           16 tokens; trace "midm hb plan 28672x4096 M=129: nt 144 splits 1 ttiles 1 ctas 448"); precheck $MS_V18
#   v24     (the default since session 24; v24o = -DSF_GEMM_MIDM_TT_SMALL=0 -DSF_GEMM_MIDM_TT_MIN_M=128, the control)
#           -DSF_GEMM_MIDM_TT_SMALL=1 -DSF_GEMM_MIDM_TT_MIN_M=16 (+ MIDM trace): FIT 2's two token tiles over
#           the whole K (no cluster, no reduction) from M 17 wherever the half-band plan splits K in two at K <= 4096
#           (4096^2), tiles of ceil(M / 2) rounded up to 16: NT 16 / 32 / 48 / 64 (consumer wgmma n 8 / 16 / 24 / 32;
#           GEMM_NOTES_MID_M3.md "Version 24"); trace "midm hb plan 4096x4096 M=64: nt 32 splits 1 ttiles 2"; every
#           other shape unchanged; precheck $MS_V24 (every narrow tile at odd M, overlaps of 1..31 tokens)
#   v26     the defaults + -DSF_GEMM_MIDM_SK=1 (+ MIDM trace): the unsplit one-tile half-band plans that leave SMs idle
#           (6144 x 4096 M 17-192: 96 bands) on a stream-K schedule over every SM (gemm_bf16_sm90_midm_sk.cuh;
#           GEMM_NOTES_MID_M3.md "Version 26"); trace "midm sk plan 6144x4096 M=128: nt 128 ctas 132 units 6144: launched";
#           precheck $MS_V26; v26b (-DSF_GEMM_MIDM_SK=2) the same with one fence-free release per published partial
#   mm64    the defaults + -DSF_GEMM_MIDM_MAX_M=64 (+ V6 / V3 traces): M 65..128 leave the mid-M path for the v6 plan
#           (6144 x 4096 M 128 runs 96 CTAs of 64 weight rows there; cuBLASLt 128 CTAs of 96 x 64 tiles): which plan v6
#           picks there (the trace) and its time, a probe (GEMM_NOTES_MID_M3.md "Version 24")
#   dflt    the solution's defaults as they are (no -D but the trace): since session 10 v3a + v6 + v10; v3a and v2
#           pin v10 off (-DSF_GEMM_V10=0) so they stay the session-9 controls
#   sm5old  sm5 with the first, racy release order (-DSF_GEMM_SM5_RELEASE=0): the control, expected to FAIL
#                                                  at 28672 x 4096 (GEMM_NOTES.md "Version 5: the ring race")
# v3, v3p, midm (and midm_s*) and sm5 print the plan of each new shape to stderr (SF_GEMM_V3_TRACE / SF_GEMM_MIDM_TRACE, in
# logs/check.log): the summary counts plans launched and fallbacks to v2 (a refused cluster launch would
# otherwise look like "no gain").
# Env: STEPS selects steps (default: all); CANDS, a list of variant names, the variants built and run
# besides v2 (always: the reference column), `all` for every one (default: v4, midm, midm2;
# the v3 large-M candidates having been measured); MS the M list. Lists in STEPS, CANDS and MS
# may be separated by '+' (the form a tools/gpu_round.sh spec can carry), or by spaces (STEPS, CANDS) or
# commas. `make` runs only for the eval step. Exit status 0 when every step passed.
# The v6 mid-M run (GEMM_NOTES.md "Version 6"; v3a = the current default, v2 the reference column):
#   CANDS=v3a,v6,v6rt,v6p,v6c,v6pf MS=64,128,200,256,384,512,1000 STEPS=build,precheck,check tools/gpu_gemm.sh
# The v7 large-M ping-pong run (GEMM_NOTES_LARGE_M.md "Version 7"; v3a = the default at M > 512):
#   'CANDS=v3a+pp+pp64,MS=1000+1024+2048+4096+5000+8192,STEPS=build+precheck+check@tools/gpu_gemm.sh:240'
# The v8 large-M cluster multicast run (GEMM_NOTES_LARGE_M.md "Version 8"; v3a = the default at M > 512):
#   'CANDS=v3a+mc+mcr+mcn,MS=1000+1024+2048+4096+5000+8192,STEPS=build+sass+precheck+check@tools/gpu_gemm.sh:200'
# The v9 large-M run (GEMM_NOTES_LARGE_M.md "Version 9"; v3a = the default at M > 512):
#   'CANDS=v3a+c256+c256n+c256d,MS=1000+1024+2048+4096+5000+8192,STEPS=build+sass+precheck+check@tools/gpu_gemm.sh:200'
#   'CANDS=v3a+v10+v10r,MS=1000+1024+2048+4096+5000+8192,STEPS=build+sass+precheck+check@tools/gpu_gemm.sh:150'
# The v11 mid-M run (GEMM_NOTES_MID_M.md "Version 11"; dflt = the defaults, v3a = the same code at M <= 512):
#   'CANDS=v3a+dflt+v11p+v11r+v11pp+v11m,MS=64+128+200+256+384+512,STEPS=build+sass+precheck+check@tools/gpu_gemm.sh:240'
# The v12 mid-M run (GEMM_NOTES_MID_M.md "Version 12"; dflt = the defaults; v12 at M <= 128, v12w also at 129..256):
#   'CANDS=dflt+v12+v12n+v12t8+v12w,MS=32+64+100+128+200+256,STEPS=build+sass+precheck+check@tools/gpu_gemm.sh:240'
# The v15 run (GEMM_NOTES_MID_M.md "Version 15"; dflt = the defaults; v15 changes M % 128 != 0 from 129 up and 28672 at 17..96):
#   'CANDS=dflt+v15,MS=33+77+129+200+256+333+384+1000+5000,STEPS=build+sass+precheck+check@tools/gpu_gemm.sh:240'
# The v16 run (GEMM_NOTES_MID_M2.md "Version 16"; dflt = the defaults; v16 / v16t change M 65..192 on the half bands):
#   'CANDS=dflt+v16+v16t,MS=77+100+129+144+145+160+176+192,STEPS=build+sass+precheck+check@tools/gpu_gemm.sh:240'
# The M 9-16 candidate (GEMM_NOTES_MID_M.md "M 9-16 candidate"; dflt = the defaults, M 8 the reference row):
#   'CANDS=dflt+v17,MS=200+224+256+333,STEPS=build+sass+precheck+check@tools/gpu_gemm.sh:150' (version 17: 128 x 96 tiles)
#   'CANDS=dflt+v18+v18h,MS=129+144+160+176+192+200,STEPS=build+sass+precheck+check@tools/gpu_gemm.sh:240' (version 18:
#   28672 x 4096 M 129..192 on swap-AB token tiles; v18 / v18h timed at M 129..192 only, M 200 the dflt / cuBLASLt anchor)
#   'CANDS=dflt+s16,MS=8+9+12+16,STEPS=build+sass+precheck+check@tools/gpu_gemm.sh:240'
# The v5 small-M run (GEMM_NOTES.md "Version 5"; ~3 min on one H200):
#   CANDS=sm5,sm5c,sm5r,midm_s1 MS=1,2,3,4,7,8,9,12,16,17,64 MS_MIDM=17,64 STEPS=build,precheck,check tools/gpu_gemm.sh
# Every build's .so is checked for STB_GNU_UNIQUE symbols (`nm` type u): gemm_check.py loads all variants
# into one process, where such a symbol (a function-local static of an external template) is shared
# between the libraries (GEMM_NOTES.md, "The midm_s1/s2/s4 anomaly, explained"); a build with one fails.
# The v4 mid-M run (GEMM_NOTES.md "Version 4"):
#   CANDS=v3c256,midm,midm_s1,midm_s2,midm_s4,midm2 MS=16,17,32,33,64,77,128,200,256 STEPS=build,sass,precheck,check \
#     tools/gpu_gemm.sh
# or, through tools/gpu_round.sh:
#   'CANDS=v3c256+midm+midm_s1+midm_s2+midm_s4+midm2,MS=16+17+32+33+64+77+128+200+256,STEPS=build+sass+precheck+check@tools/gpu_gemm.sh:240'
set -u
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-build/gpu-gemm}
logs=$out/logs
mkdir -p "$logs"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
steps=${STEPS:-build sass precheck check eval}
steps=${steps//[,+]/ } # commas or + too: a gpu_round.sh spec carries neither spaces nor (in a value) commas
MS=${MS:-1,3,8,16,17,32,33,64,77,128,192,256,384,512,768,1000,1024,2048,4096,5000}
MS=${MS//+/,}
MS_MID=${MS_MID:-17,77,128,256,512}
MS_MIDM=${MS_MIDM:-17,33,77,128,200,256}
MS_MIDM2=${MS_MIDM2:-17,33,64,77,96}
MS_SM5=${MS_SM5:-1,3,7,8,9,16}
MS_V6=${MS_V6:-129,200,256,333,384,511,512} # odd M past 128 included: v6's precheck (correctness, untimed)
MS_V6=${MS_V6//+/,}
MS_PP=${MS_PP:-513,1000,2048} # ping-pong precheck: 1..2 tiles per CTA (513, 1000) and many, odd and even (2048)
MS_PP=${MS_PP//+/,}
MS_MC=${MS_MC:-513,1000,2900,5000} # v8 precheck: a padded tile row in one wave (513) and in three (2900), M edges (1000, 5000)
MS_MC=${MS_MC//+/,}
MS_COOP=${MS_COOP:-513,1000,1300,2900,5000} # v9 precheck: M edges in 256-row tiles (513, 1000, 2900, 5000), a plan declined for a wave (1300)
MS_COOP=${MS_COOP//+/,}
MS_V10=${MS_V10:-513,1000,2900,5000} # v10 precheck: M edges clipped by the TMA store box (513, 1000, 2900, 5000), BN 192 at 6144 (1000, 2900, 5000)
MS_V10=${MS_V10//+/,}
MS_V11=${MS_V11:-129,200,256,333,384,511,512} # v11 precheck: the TMA store box clipped at odd M past 128 (as v6's)
MS_V11=${MS_V11//+/,}
MS_S16=${MS_S16:-9,11,13,15,16} # s16 precheck: odd M (rows of A clamped) and M 16
MS_S16=${MS_S16//+/,}
MS_V11M=${MS_V11M:-17,33,64,77,96,128} # v11m precheck: every token tile of v4 (32..128), boxes taller than M (17, 33, 77)
MS_V11M=${MS_V11M//+/,}
MS_V12=${MS_V12:-17,33,64,77,100,127,128} # v12 precheck: every token tile 32..128 of the pair kernel, odd M (boxes past M)
MS_V12=${MS_V12//+/,}
MS_V12W=${MS_V12W:-17,64,127,129,160,200,255,256} # v12w precheck: v12's tiles and 192 / 256 at odd M
MS_V12W=${MS_V12W//+/,}
MS_V13=${MS_V13:-17,33,64,65,77,100,127,128} # v13 precheck: both half-band token tiles (64, 128), odd M (boxes past M)
MS_V13=${MS_V13//+/,}
MS_V13W=${MS_V13W:-17,64,127,129,160,200,255,256} # v13w precheck: every half-band tile 64..256 at odd M
MS_V13W=${MS_V13W//+/,}
MS_V15=${MS_V15:-17,33,77,129,200,255,333,1000,2900} # v15 precheck: tails of 1..127 rows on every plan family, v4 two-CTA boxes
MS_V15=${MS_V15//+/,}
MS_V16=${MS_V16:-65,77,100,113,129,143,145,160,175,176,192} # v16 precheck: every exact-fit tile (80..176) at odd M, token-tile overlaps
MS_V16=${MS_V16//+/,}
MS_V16W=${MS_V16W:-129,175,193,200,255,256} # v16tw precheck: two token tiles of 112 / 128 past M 192 (overlaps 0..31 rows)
MS_V16W=${MS_V16W//+/,}
MS_V17=${MS_V17:-193,200,224,255,256} # v17 precheck: 128 x 96 tiles with tails of 65..127 rows and none (6144 x 4096)
MS_V17=${MS_V17//+/,}
MS_V17X=${MS_V17X:-193,256,257,300,333,384} # v17x precheck: also 3 token tile rows on the 4096-row shapes
MS_V17X=${MS_V17X//+/,}
MS_V18=${MS_V18:-129,143,160,175,191,192,193} # v18 precheck: the full band's 192-token tile at odd M (stale box rows), 193 not taken
MS_V18=${MS_V18//+/,}
MS_V24=${MS_V24:-17,31,32,33,47,49,64,77,96,127,128} # v24 precheck: the narrow token tiles 16 / 32 / 48 (and 64) at odd M
MS_V24=${MS_V24//+/,}
MS_V26=${MS_V26:-17,33,64,77,100,127,128,129,160,192} # v26 precheck: stream-K over every half-band tile 64..192 at odd M
MS_V26=${MS_V26//+/,}
MS_MID=${MS_MID//+/,} # every M list may use '+' (a gpu_round.sh spec), gemm_check.py wants commas
MS_MIDM=${MS_MIDM//+/,}
MS_MIDM2=${MS_MIDM2//+/,}
MS_SM5=${MS_SM5//+/,}
CHECK_TIMEOUT=${CHECK_TIMEOUT:-120}
EVAL_PROBLEM=${EVAL_PROBLEM:-gemm_bf16_n4096_k4096}
has() { case " $steps " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
summary=()
status=0
note() {
	summary+=("$1")
	echo "== $1"
}
t0=$(date +%s)
dev=build/gemm_dev
mkdir -p "$dev"
src=problems/common/kernels/gemm_bf16_sm90.cu
nv="nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared -Iinclude -Xptxas -v"
# name, flags, M range it can change (gemm_check's @MAXM or @MINM-[MAXM]; empty: all M), the M list of its
# precheck when it launches clusters (empty: none)
v3a="-DSF_GEMM_V3=1 -DSF_GEMM_V3_CLUSTER=0 -DSF_GEMM_V3_AUTO=1" # the default's v3 macros, pinned for the v6 candidates
# (v10 is the default since session 10: the v2 / v3* / v3a controls below pin it off with -DSF_GEMM_V10=0, the
# candidates built on "$v3a" keep it unless they say otherwise)
variants=("v2|-DSF_GEMM_MIDM=0 -DSF_GEMM_V3=0 -DSF_GEMM_V10=0||" "v4|-DSF_GEMM_V3=0 -DSF_GEMM_MIDM_TRACE=1|17-128|$MS_MIDM" "v3|-DSF_GEMM_V3=1 -DSF_GEMM_V3_CLUSTER=1 -DSF_GEMM_V3_AUTO=0 -DSF_GEMM_V3_TRACE=1|17-|$MS_MID" "v3w|-DSF_GEMM_V3=1 -DSF_GEMM_V3_CLUSTER=0 -DSF_GEMM_V3_AUTO=0|17-|"
	"v3a|-DSF_GEMM_V3=1 -DSF_GEMM_V3_CLUSTER=0 -DSF_GEMM_V3_AUTO=1 -DSF_GEMM_V10=0 -DSF_GEMM_V3_TRACE=1|17-|"
	"dflt|-DSF_GEMM_V3_TRACE=1||" "s10|-DSF_GEMM_V10_MIN_M=513 -DSF_GEMM_V3_TRACE=1|129-512|"
	"v3c256|-DSF_GEMM_V3=1 -DSF_GEMM_V3_CLUSTER=1 -DSF_GEMM_V3_AUTO=0 -DSF_GEMM_V3_SPLIT_BN=256|17-512|$MS_MID" "v3c128|-DSF_GEMM_V3=1 -DSF_GEMM_V3_CLUSTER=1 -DSF_GEMM_V3_AUTO=0 -DSF_GEMM_V3_SPLIT_BN=128|17-512|$MS_MID"
	"v3n192|-DSF_GEMM_V3=1 -DSF_GEMM_V3_CLUSTER=1 -DSF_GEMM_V3_AUTO=0 -DSF_GEMM_V3_BN=192|513-|" "v3n128|-DSF_GEMM_V3=1 -DSF_GEMM_V3_CLUSTER=1 -DSF_GEMM_V3_AUTO=0 -DSF_GEMM_V3_BN=128|513-|"
	"v3p|-DSF_GEMM_V3=1 -DSF_GEMM_V3_CLUSTER=1 -DSF_GEMM_V3_AUTO=0 -DSF_GEMM_V3_PAIR=1 -DSF_GEMM_V3_TRACE=1|17-|128,256,640,1000,1024,2048"
	"midm|-DSF_GEMM_MIDM=1 -DSF_GEMM_MIDM_2CTA=0 -DSF_GEMM_MIDM_MAX_M=256 -DSF_GEMM_MIDM_TRACE=1|17-256|$MS_MIDM"
	"midm_s1|-DSF_GEMM_MIDM=1 -DSF_GEMM_MIDM_2CTA=0 -DSF_GEMM_MIDM_MAX_M=256 -DSF_GEMM_MIDM_SPLITS=1 -DSF_GEMM_MIDM_TRACE=1|17-256|$MS_MIDM"
	"midm_s2|-DSF_GEMM_MIDM=1 -DSF_GEMM_MIDM_2CTA=0 -DSF_GEMM_MIDM_MAX_M=256 -DSF_GEMM_MIDM_SPLITS=2 -DSF_GEMM_MIDM_TRACE=1|17-256|$MS_MIDM"
	"midm_s4|-DSF_GEMM_MIDM=1 -DSF_GEMM_MIDM_2CTA=0 -DSF_GEMM_MIDM_MAX_M=256 -DSF_GEMM_MIDM_SPLITS=4 -DSF_GEMM_MIDM_TRACE=1|17-256|$MS_MIDM"
	"midm2|-DSF_GEMM_MIDM=1 -DSF_GEMM_MIDM_2CTA=2 -DSF_GEMM_MIDM_MAX_M=96 -DSF_GEMM_MIDM_TRACE=1|17-96|$MS_MIDM2"
	"sm5|-DSF_GEMM_SMALLM_V=2 -DSF_GEMM_SMALLM_TRACE=1|16|$MS_SM5"
	"sm5c|-DSF_GEMM_SMALLM_V=2 -DSF_GEMM_SM5_MIN_RB=128 -DSF_GEMM_SMALLM_TRACE=1|16|$MS_SM5"
	"sm5r|-DSF_GEMM_SMALLM_V=2 -DSF_GEMM_SM5_RING_KB=96 -DSF_GEMM_SMALLM_TRACE=1|16|$MS_SM5"
	"sm5m|-DSF_GEMM_SMALLM_V=2 -DSF_GEMM_SM5_RELEASE=1 -DSF_GEMM_SMALLM_TRACE=1|16|$MS_SM5"
	"sm5old|-DSF_GEMM_SMALLM_V=2 -DSF_GEMM_SM5_RELEASE=0 -DSF_GEMM_SMALLM_TRACE=1|16|$MS_SM5"
	"v6|$v3a -DSF_GEMM_V6=1 -DSF_GEMM_V6_TRACE=1|129-512|$MS_V6"
	"v6rt|$v3a -DSF_GEMM_V6=1 -DSF_GEMM_WG_CL_RT=4 -DSF_GEMM_V6_TRACE=1|129-512|$MS_V6"
	"v6p|$v3a -DSF_GEMM_V6=1 -DSF_GEMM_V6_PIN_MODE=0 -DSF_GEMM_V6_TRACE=1|129-512|"
	"v6c|$v3a -DSF_GEMM_V6=1 -DSF_GEMM_V6_PIN_MODE=1 -DSF_GEMM_V6_TRACE=1|129-512|$MS_V6"
	"v6pf|$v3a -DSF_GEMM_V6=1 -DSF_GEMM_WG_PREFETCH=1 -DSF_GEMM_V6_TRACE=1|129-512|200,333,511"
	"pp|$v3a -DSF_GEMM_PINGPONG=1 -DSF_GEMM_PP_WM=128|513-|$MS_PP"
	"pp64|$v3a -DSF_GEMM_PINGPONG=1 -DSF_GEMM_PP_WM=64|513-|$MS_PP"
	"mc|$v3a -DSF_GEMM_MCAST=1 -DSF_GEMM_V3_TRACE=1|513-|$MS_MC"
	"mcr|$v3a -DSF_GEMM_MCAST=1 -DSF_GEMM_MCAST_FENCE=1 -DSF_GEMM_V3_TRACE=1|513-|$MS_MC"
	"mcn|$v3a -DSF_GEMM_MCAST=1 -DSF_GEMM_MCAST_SHARE=0 -DSF_GEMM_V3_TRACE=1|513-|$MS_MC"
	"c256|$v3a -DSF_GEMM_COOP256=1 -DSF_GEMM_V3_TRACE=1|513-|$MS_COOP"
	"c256n|$v3a -DSF_GEMM_COOP256=2 -DSF_GEMM_V3_TRACE=1|513-|$MS_COOP"
	"c256d|$v3a -DSF_GEMM_COOP256=1 -DSF_GEMM_COOP_ORDER=1 -DSF_GEMM_V3_TRACE=1|513-|$MS_COOP"
	"v10|$v3a -DSF_GEMM_V10=1 -DSF_GEMM_V3_TRACE=1|513-|$MS_V10"
	"v10r|$v3a -DSF_GEMM_V10=1 -DSF_GEMM_V10_EPI=0 -DSF_GEMM_V3_TRACE=1|513-|$MS_V10"
	"v11p|-DSF_GEMM_V10_MIN_M=129 -DSF_GEMM_V3_TRACE=1 -DSF_GEMM_V6_TRACE=1|129-512|$MS_V11"
	"v11r|-DSF_GEMM_V10_MIN_M=129 -DSF_GEMM_V10_EPI=0 -DSF_GEMM_V3_TRACE=1 -DSF_GEMM_V6_TRACE=1|129-512|$MS_V11"
	"v11pp|-DSF_GEMM_V10_MIN_M=129 -DSF_GEMM_V6_PIN_MODE=0 -DSF_GEMM_V3_TRACE=1 -DSF_GEMM_V6_TRACE=1|129-512|$MS_V11"
	"v11m|-DSF_GEMM_MIDM_TMA=1 -DSF_GEMM_MIDM_TRACE=1|17-128|$MS_V11M"
	"s16|-DSF_GEMM_SM16=1|9-16|$MS_S16"
	"s16o|-DSF_GEMM_SM16=0|9-16|$MS_S16"
	"s16m|-DSF_GEMM_SM16_MIDM=1 -DSF_GEMM_MIDM_TRACE=1|9-16|$MS_S16"
	"s16s|-DSF_GEMM_SM16_MIDM=0|9-16|"
	"v12|-DSF_GEMM_MIDM_MC=1 -DSF_GEMM_MIDM_TRACE=1|17-128|$MS_V12"
	"v12n|-DSF_GEMM_MIDM_MC=2 -DSF_GEMM_MIDM_TRACE=1|17-128|$MS_V12"
	"v12w|-DSF_GEMM_MIDM_MC=1 -DSF_GEMM_MIDM_MAX_M=256 -DSF_GEMM_MIDM_TRACE=1|17-256|$MS_V12W"
	"v12t8|-DSF_GEMM_MIDM_MC=1 -DSF_GEMM_MIDM_MC_TRIP=8 -DSF_GEMM_MIDM_TRACE=1|17-128|$MS_V12"
	"v13|-DSF_GEMM_MIDM_HB=1 -DSF_GEMM_MIDM_TRACE=1|17-128|$MS_V13"
	"v13a|-DSF_GEMM_MIDM_HB=2 -DSF_GEMM_MIDM_TRACE=1|17-128|$MS_V13"
	"v13w|-DSF_GEMM_MIDM_HB=2 -DSF_GEMM_MIDM_MAX_M=256 -DSF_GEMM_MIDM_TRACE=1|17-256|$MS_V13W"
	"v13c|-DSF_GEMM_MIDM_MAX_M=128 -DSF_GEMM_MIDM_TRACE=1|129-192|"
	"v13o|-DSF_GEMM_MIDM_HB=0 -DSF_GEMM_MIDM_TRACE=1|17-128|"
	"v13x|-DSF_GEMM_MIDM_HB=2 -DSF_GEMM_MIDM_XROWS=1 -DSF_GEMM_MIDM_TRACE=1|17-128|$MS_V13"
	"v13n|-DSF_GEMM_MIDM_HB=2 -DSF_GEMM_MIDM_XROWS=0 -DSF_GEMM_MIDM_TRACE=1|17-128|"
	"v15|-DSF_GEMM_TAILROWS=1 -DSF_GEMM_V3_TRACE=1 -DSF_GEMM_V6_TRACE=1 -DSF_GEMM_MIDM_TRACE=1|17-|$MS_V15"
	"v15o|-DSF_GEMM_TAILROWS=0|17-|"
	"v15a|-DSF_GEMM_TAILROWS=1 -DSF_GEMM_TAILROWS_MAX_M=1000000000|17-|$MS_V15"
	"v16|-DSF_GEMM_MIDM_FIT=1 -DSF_GEMM_MIDM_TRACE=1|65-192|$MS_V16"
	"v16t|-DSF_GEMM_MIDM_FIT=2 -DSF_GEMM_MIDM_TT_MIN_M=64 -DSF_GEMM_MIDM_TT_MAX_K=1000000000 -DSF_GEMM_MIDM_TRACE=1|65-192|$MS_V16"
	"v16tw|-DSF_GEMM_MIDM_FIT=2 -DSF_GEMM_MIDM_TT_MIN_M=64 -DSF_GEMM_MIDM_TT_MAX_K=1000000000 -DSF_GEMM_MIDM_MAX_M=256 -DSF_GEMM_MIDM_TRACE=1|65-256|$MS_V16W"
	"v16w|-DSF_GEMM_MIDM_MAX_M=256 -DSF_GEMM_MIDM_TRACE=1|193-256|$MS_V16W"
	"v16o|-DSF_GEMM_MIDM_FIT=0 -DSF_GEMM_MIDM_TRACE=1|65-192|"
	"v17|-DSF_GEMM_V6_BN96=1 -DSF_GEMM_V6_TRACE=1 -DSF_GEMM_V3_TRACE=1|193-256|$MS_V17"
	"v17o|-DSF_GEMM_V6_BN96=0 -DSF_GEMM_V6_TRACE=1|193-384|"
	"v17x|-DSF_GEMM_V6_BN96=2 -DSF_GEMM_V6_TRACE=1 -DSF_GEMM_V3_TRACE=1|193-384|$MS_V17X"
	"v18|-DSF_GEMM_MIDM_MW=1 -DSF_GEMM_MIDM_TRACE=1 -DSF_GEMM_V6_TRACE=1|129-192|$MS_V18"
	"v18h|-DSF_GEMM_MIDM_MW=2 -DSF_GEMM_MIDM_TRACE=1 -DSF_GEMM_V6_TRACE=1|129-192|$MS_V18"
	"sm256|-DSF_GEMM_SM_LDPF=256|1-16|"
	"sm256o|-DSF_GEMM_SM_LDPF=0|1-16|"
	"v18o|-DSF_GEMM_MIDM_MW=0 -DSF_GEMM_V6_TRACE=1|129-192|"
	"v24|-DSF_GEMM_MIDM_TT_SMALL=1 -DSF_GEMM_MIDM_TT_MIN_M=16 -DSF_GEMM_MIDM_TRACE=1|17-128|$MS_V24"
	"v26|-DSF_GEMM_MIDM_SK=1 -DSF_GEMM_MIDM_TRACE=1|17-192|$MS_V26"
	"v26b|-DSF_GEMM_MIDM_SK=2 -DSF_GEMM_MIDM_TRACE=1|17-192|$MS_V26"
	"v24o|-DSF_GEMM_MIDM_TT_SMALL=0 -DSF_GEMM_MIDM_TT_MIN_M=128 -DSF_GEMM_MIDM_TRACE=1|17-128|"
	"mm64|-DSF_GEMM_MIDM_MAX_M=64 -DSF_GEMM_V6_TRACE=1 -DSF_GEMM_V3_TRACE=1|65-128|$MS_V24")
# the candidates whose ptxas report (registers, spills per kernel) and SASS counts (HGMMA, TMA) are printed
WGMMA_CANDS="v2 v3 midm midm2 sm5 sm5c v6 pp pp64 mc c256 c256n c256d v10 v10r v11p v11m s16 s16o s16m v12 v12n v12w v12t8 v13 v13a v13w v13o v13x v13n v15 v15o v15a v16 v16t v16tw v16w v17 v17x v17o v18 v18h v18o sm256 sm256o v24 v24o v26 v26b mm64 dflt"
CANDS=${CANDS:-v4 midm midm2}
if [ "$CANDS" != all ]; then # keep v2 and the named candidates
	names=" "
	for v in "${variants[@]}"; do names+="${v%%|*} "; done
	for c in ${CANDS//[,+]/ }; do # a removed (v14*) or misspelled name would otherwise drop out silently
		case "$names" in *" $c "*) ;; *)
			echo "gpu_gemm: unknown candidate '$c' (removed? see the list atop tools/gpu_gemm.sh)" >&2
			exit 2
			;;
		esac
	done
	keep=()
	for v in "${variants[@]}"; do
		case " v2 ${CANDS//[,+]/ } " in *" ${v%%|*} "*) keep+=("$v") ;; esac
	done
	variants=("${keep[@]}")
fi

{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
	nvcc --version | tail -2
} >"$logs/env.txt" 2>&1

if has build; then
	mk=
	if has eval || has eval6; then
		make -j"$(nproc)" >"$logs/make.log" 2>&1 &
		mk=$!
	fi
	pids=()
	for v in "${variants[@]}"; do
		IFS='|' read -r name flags _ _ <<<"$v"
		# shellcheck disable=SC2086
		$nv $flags "$src" -o "$dev/$name.so" >"$logs/ptxas_$name.log" 2>&1 &
		pids+=($!)
	done
	$nv problems/common/baselines/cublaslt_gemm_bf16.cu -o "$dev/cublaslt.so" -lcublasLt -lcublas >"$logs/ptxas_cublaslt.log" 2>&1 &
	pids+=($!)
	wait "${pids[@]}"
	[ -z "$mk" ] || wait $mk || { note "make: FAILED (see logs/make.log)"; status=1; }
	for v in "${variants[@]}" "cublaslt|||"; do
		IFS='|' read -r name _ _ _ <<<"$v"
		if [ -f "$dev/$name.so" ] && nu=$(nm -C "$dev/$name.so" 2>/dev/null | grep -c ' u ') && [ "$nu" -gt 0 ]; then
			note "build $name: FAILED: $nu STB_GNU_UNIQUE symbols (shared across the libraries of one process): $(nm -C "$dev/$name.so" | grep ' u ' | head -3 | tr '\n' ';')"
			status=1
		elif [ -f "$dev/$name.so" ] && grep -q C7520 "$logs/ptxas_$name.log"; then
			# ptxas's "info" that it serialized wgmma (accumulators touched on a path it cannot prove uniform): a build
			# that times 1.3x slow for no kernel-design reason (version 26's first build, session 24)
			note "build $name: FAILED: wgmma serialized by ptxas (C7520) in $(grep -c C7520 "$logs/ptxas_$name.log") kernels: $(grep -m1 -o "function '[^']*'" "$logs/ptxas_$name.log")"
			status=1
		elif [ -f "$dev/$name.so" ]; then
			case " $WGMMA_CANDS " in *" $name "*) true ;; *) false ;; esac && note "build $name: ok, registers/spill stores per kernel: $(awk '/Compiling entry/ {k = $0; sub(/.*gemm_/, "", k); t = ""; if (match(k, /ILi[0-9]+ELi[0-9]/)) t = substr(k, RSTART + 3, RLENGTH - 3); else if (match(k, /ILi[0-9]+E/)) t = substr(k, RSTART + 3, RLENGTH - 4); sub(/ELi/, ",", t); sub(/kernel.*/, "", k); k = k t "_"} /spill stores/ {s = $5} /Used [0-9]+ registers/ {printf "%s%s/%s ", k, $5, s}' "$logs/ptxas_$name.log")"
		else
			note "build $name: FAILED (see logs/ptxas_$name.log)"
			tail -20 "$logs/ptxas_$name.log"
			status=1
		fi
	done
	note "build: done at $(($(date +%s) - t0)) s"
fi

# the eval step's build (solution, baseline, oracle module) runs on the CPU while the check step uses the GPU
if has eval && [ -x build/solforge ]; then
	build/solforge eval "problems/llama/$EVAL_PROBLEM" "problems/llama/$EVAL_PROBLEM/solutions/fast.cu" --backend cuda \
		--prepare-only >"$logs/prepare.log" 2>&1 &
	prep=$!
fi

if has sass; then
	for name in $WGMMA_CANDS; do
		[ -f "$dev/$name.so" ] || continue
		cuobjdump --dump-sass "$dev/$name.so" >"$logs/sass_$name.txt" 2>&1
		n=$(grep -c HGMMA "$logs/sass_$name.txt")
		note "sass $name: HGMMA $n (64x128x16: $(grep -c 'HGMMA.64x128x16' "$logs/sass_$name.txt")) UTMALDG $(grep -c UTMALDG "$logs/sass_$name.txt") (MULTICAST $(grep -c 'UTMALDG.*MULTICAST' "$logs/sass_$name.txt"), MEMBAR.ALL.GPU $(grep -c 'MEMBAR.ALL.GPU' "$logs/sass_$name.txt")) HMMA $(grep -c 'HMMA\.' "$logs/sass_$name.txt") LDG.E.NA.128 $(grep -c 'LDG.E.NA.128' "$logs/sass_$name.txt") UTMASTG $(grep -c 'UTMASTG' "$logs/sass_$name.txt") LDS.128 $(grep -c 'LDS.128' "$logs/sass_$name.txt") LDGSTS $(grep -c 'LDGSTS' "$logs/sass_$name.txt") CCTL (prefetch.global) $(grep -c 'CCTL' "$logs/sass_$name.txt") UBLKPF $(grep -c 'UBLKPF' "$logs/sass_$name.txt")"
		[ "${n:-0}" -gt 0 ] || { note "sass: no HGMMA in $name"; status=1; }
	done
fi

# candidates that launch clusters: checked alone first (a hang there must not cost the timed run), one
# process each, one after the other, each under its own timeout
declare -A ok_cluster
if has precheck; then
	pre=()
	for v in "${variants[@]}"; do
		IFS='|' read -r name _ _ pms <<<"$v"
		[ -n "$pms" ] && [ -f "$dev/$name.so" ] || continue
		(
			timeout -s KILL 45 python3 tools/gemm_dev/gemm_check.py --ref "cublasLt=$dev/cublaslt.so" --no-time \
				--sol "$name=$dev/$name.so" --ms "$pms" >"$logs/precheck_$name.log" 2>&1
			echo $? >"$logs/precheck_$name.rc"
		) &
		wait $! # one at a time: a hung kernel holds SMs and would slow (and time out) its neighbours
		pre+=("$name|$pms")
	done
	for v in "${pre[@]}"; do
		IFS='|' read -r name pms <<<"$v"
		rc=$(cat "$logs/precheck_$name.rc" 2>/dev/null || echo 1)
		note "precheck $name (M $pms, untimed): rc $rc$([ "$rc" = 137 ] && echo ' (killed by timeout: hang?)'), $(grep -c ' ok ' "$logs/precheck_$name.log") ok, $(grep -c ' FAIL' "$logs/precheck_$name.log") FAILED"
		if [ "$rc" = 0 ]; then
			ok_cluster[$name]=1
		else
			grep -A1 ' FAIL' "$logs/precheck_$name.log" | head -6
			tail -2 "$logs/precheck_$name.log"
			status=1
		fi
	done
	note "precheck: done at $(($(date +%s) - t0)) s"
fi

if has check; then
	sols=()
	for v in "${variants[@]}"; do
		IFS='|' read -r name _ range pms <<<"$v"
		[ -f "$dev/$name.so" ] || continue
		if [ -n "$pms" ] && has precheck && [ -z "${ok_cluster[$name]:-}" ]; then
			note "check: $name left out (its precheck failed)"
			continue
		fi
		sols+=(--sol "$name=$dev/$name.so${range:+@$range}")
	done
	timeout -s KILL "$CHECK_TIMEOUT" python3 tools/gemm_dev/gemm_check.py --ref "cublasLt=$dev/cublaslt.so" \
		"${sols[@]}" --ms "$MS" >"$logs/check.log" 2>&1
	rc=$?
	nfail=$(grep -c ' FAIL' "$logs/check.log")
	nok=$(grep -c ' ok ' "$logs/check.log")
	grep -q '^v10 plan' "$logs/check.log" && note "v10 plans (SF_GEMM_V3_TRACE of v10 / v10r / v11*): $(grep -c '^v10 plan.*: launched v10' "$logs/check.log") launched, $(grep -c '^v10 plan.*FALLBACK' "$logs/check.log") fell back$(grep -m3 '^v10 plan.*FALLBACK' "$logs/check.log" | sed 's/^/; /' | tr -d '\n')"
	note "v3 plans (SF_GEMM_V3_TRACE of v3 / v3p / mc*): $(grep -c '^v3 plan.*: launched' "$logs/check.log") launched ($(grep -c '^v3 plan.*: launched mcast' "$logs/check.log") of them mcast, $(grep -c '^v3 plan.*: launched coop' "$logs/check.log") coop; $(grep -c '^v3 plan.*mcast adds a wave' "$logs/check.log") mcast and $(grep -c '^v3 plan.*coop adds a wave' "$logs/check.log") coop plans declined for a wave), $(grep -c '^v3 plan.*FALLBACK' "$logs/check.log") fell back$(grep -m3 '^v3 plan.*FALLBACK' "$logs/check.log" | sed 's/^/; /' | tr -d '\n')"
	note "midm plans (SF_GEMM_MIDM_TRACE of midm / midm2 / v11m): $(grep -c '^midm plan.*: launched' "$logs/check.log") launched ($(grep -c '^midm plan.*: launched (TMA stores)' "$logs/check.log") with TMA stores), $(grep -c '^midm plan.*FALLBACK' "$logs/check.log") fell back$(grep -m3 '^midm plan.*FALLBACK' "$logs/check.log" | sed 's/^/; /' | tr -d '\n')"
	grep -q 'v12 band pairs\|^midm pair plan' "$logs/check.log" && note "v12 pair plans (SF_GEMM_MIDM_TRACE of v12 / v12n / v12w): $(grep -c '^midm plan.*: launched (v12 band pairs' "$logs/check.log") launched as band pairs, $(grep -c '^midm pair plan.*not taken' "$logs/check.log") not taken, $(grep -c '^midm pair plan.*FALLBACK' "$logs/check.log") refused$(grep -m3 '^midm pair plan' "$logs/check.log" | sed 's/^/; /' | tr -d '\n')"
	grep '^midm plan' "$logs/check.log" | grep -E ' M=(17|64|128|256):' | sort -u | sed 's/^/   /' | head -24
	if grep -q '^v6 plan' "$logs/check.log"; then
		note "v6 plans (SF_GEMM_V6_TRACE of v6, v6rt, v6p, v6c, v6pf): $(grep -c '^v6 plan.*: launched' "$logs/check.log") launched, $(grep -c '^v6 plan.*: v2 split-K' "$logs/check.log") planned on v2, $(grep -c '^v6 plan.*FALLBACK' "$logs/check.log") fell back$(grep -m3 '^v6 plan.*FALLBACK' "$logs/check.log" | sed 's/^/; /' | tr -d '\n')"
		grep '^v6 plan' "$logs/check.log" | grep -E ' M=(200|224|256|333|384|512):' | sort -u | sed 's/^/   /' | head -32
	fi
	if grep -q '^smallm5 plan' "$logs/check.log"; then
		note "smallm5 plans (SF_GEMM_SMALLM_TRACE of sm5, sm5c, sm5r): $(grep -c '^smallm5 plan.*: launched' "$logs/check.log") launched, $(grep -c '^smallm5 plan.*FALLBACK' "$logs/check.log") fell back$(grep -m3 '^smallm5 plan.*FALLBACK' "$logs/check.log" | sed 's/^/; /' | tr -d '\n')"
		grep '^smallm5 plan' "$logs/check.log" | grep -E ' M=(1|16):' | sort -u | sed 's/^/   /' | head -12
	fi
	if [ $rc = 0 ] && [ "$nok" -gt 0 ]; then
		note "check: all $nok passed (every variant), at $(($(date +%s) - t0)) s"
	else
		note "check: rc $rc, $nok ok, $nfail FAILED$([ $rc = 137 ] && echo ' (killed by timeout: hang or slow?)')"
		grep -A1 ' FAIL' "$logs/check.log" | head -12
		tail -3 "$logs/check.log"
		status=1
	fi
fi

evaltab=""
if has eval; then
	[ -n "${prep:-}" ] && wait "$prep"
	now=$(($(date +%s) - t0))
	if [ ! -x build/solforge ]; then
		note "eval: skipped (no build/solforge)"
		status=1
	elif [ $now -gt 170 ]; then
		note "eval: skipped (time, ${now}s used)"
	else
		timeout -s KILL 40 build/solforge eval "problems/llama/$EVAL_PROBLEM" "problems/llama/$EVAL_PROBLEM/solutions/fast.cu" \
			--backend cuda --only -m1 --rounds 1 --budget-ms 200 --timeout 30 >"$logs/eval.log" 2>&1
		rc=$?
		note "eval $EVAL_PROBLEM (M 1, 16, 128, 1024): rc $rc, $(grep -c '^gemm_bf16.* PASSED ' "$logs/eval.log") workloads PASSED"
		evaltab=$(sed -n '/^workload /,$p' "$logs/eval.log" | cut -c1-110)
		[ $rc = 0 ] || status=1
	fi
fi

# eval6 (not in the default steps): CUPTI device times (solforge eval, the scored timing) of fast.cu as
# built by default and with -D SF_GEMM_V6=1, on the N = 4096 / 6144 shapes at the M = 256 and 512 workloads
if has eval6; then
	if [ ! -x build/solforge ]; then
		note "eval6: skipped (no build/solforge)"
		status=1
	else
		for prob in gemm_bf16_n4096_k4096 gemm_bf16_n6144_k4096; do
			for m in 256 512; do
				for var in default v6; do
					d=()
					[ $var = v6 ] && d=(-D SF_GEMM_V6=1)
					lg="$logs/eval6_${prob}_m${m}_$var.log"
					timeout -s KILL 60 build/solforge eval "problems/llama/$prob" "problems/llama/$prob/solutions/fast.cu" \
						--backend cuda "${d[@]}" --only "-m$m" --rounds 1 --budget-ms 200 --timeout 40 >"$lg" 2>&1
					rc=$?
					row=$(grep -m1 "^$prob-m$m " "$lg" | cut -c1-110)
					note "eval6 $prob M=$m $var: rc $rc ${row:-no row (see logs/$(basename "$lg"))}"
					[ $rc = 0 ] || status=1
				done
			done
		done
	fi
fi

# ncu (not in the default steps): Nsight Compute over ONE untimed gemm_check.py process (--no-time: each
# variant and cuBLASLt launched once per case) on NCU_SHAPES x NCU_MS, clocks left alone; per kernel launch
# its name, grid, block, cluster, duration, DRAM and SM throughput -> logs/ncu.csv and a short table in the
# summary (--ref-once: cuBLASLt is called once per case though nothing is timed). The question it answers: which kernel (tile, cluster, split) cuBLASLt picks at a given M, beside
# ours. NCU_CANDS (default dflt) names the built variants profiled beside cuBLASLt; NCU_SECTIONS ('+'-separated,
# default SpeedOfLight+LaunchStats) the sections, whose metrics all land in ncu.csv (e.g. +WarpStateStats: stall reasons).
if has ncu; then
	NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | tail -1)
	NCU_MS=${NCU_MS:-129,200,333,512}
	NCU_MS=${NCU_MS//+/,}
	NCU_SHAPES=${NCU_SHAPES:-4096:4096,4096:14336}
	NCU_SHAPES=${NCU_SHAPES//+/,}
	nsols=() nsec=()
	NCU_SECTIONS=${NCU_SECTIONS:-SpeedOfLight+LaunchStats}
	for w in ${NCU_SECTIONS//[,+]/ }; do nsec+=(--section "$w"); done
	NCU_CANDS=${NCU_CANDS:-dflt}
	for v in ${NCU_CANDS//[,+]/ }; do
		[ -f "$dev/$v.so" ] && nsols+=(--sol "$v=$dev/$v.so")
	done
	if [ -z "$NCU" ] || [ ${#nsols[@]} = 0 ]; then
		note "ncu: skipped (ncu '${NCU:-not found}', ${#nsols[@]} built variants)"
	else
		# the fp32 reference is torch's (sgemm-class kernels): only bf16 kernels and ours are profiled
		timeout -s KILL "${NCU_TIMEOUT:-150}" "$NCU" --clock-control none --kernel-name-base demangled \
			--kernel-name 'regex:nvjet|bf16|gemm_|splitk|reduce' "${nsec[@]}" \
			--csv --page raw --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__cluster_dim_x,launch__cluster_dim_y,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread \
			python3 tools/gemm_dev/gemm_check.py --ref "cublasLt=$dev/cublaslt.so" "${nsols[@]}" --ms "$NCU_MS" \
			--shapes "$NCU_SHAPES" --no-time --ref-once >"$logs/ncu.csv" 2>"$logs/ncu.err"
		rc=$?
		note "ncu: rc $rc, $(grep -c '^"[0-9]' "$logs/ncu.csv") kernel launches profiled (logs/ncu.csv)"
		python3 - "$logs/ncu.csv" <<'PY' | tee -a "$logs/ncu_table.txt"
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
hdr = next((r for r in rows if "Kernel Name" in r), None)
if hdr is None:
    print("ncu: no csv header (see logs/ncu.err)"); sys.exit(0)
ix = {k: hdr.index(k) for k in hdr}
def g(r, k):
    return r[ix[k]] if k in ix and ix[k] < len(r) else "?"
print("%-60s %8s %6s %7s %10s %6s %6s %4s" % ("kernel", "grid", "block", "cluster", "time", "DRAM%", "SM%", "regs"))
for r in rows:
    if r is hdr or not r[0][:1].isdigit():
        continue
    if "at::" in g(r, "Kernel Name") or "f32f32" in g(r, "Kernel Name"):
        continue  # torch's fp32 reference and its checks (kept in ncu.csv)
    name = g(r, "Kernel Name")[:60]
    print("%-60s %8s %6s %7s %10s %6s %6s %4s" % (name, g(r, "launch__grid_size"), g(r, "launch__block_size"),
          g(r, "launch__cluster_dim_x") + "x" + g(r, "launch__cluster_dim_y"), g(r, "gpu__time_duration.sum"),
          g(r, "dram__throughput.avg.pct_of_peak_sustained_elapsed")[:5], g(r, "sm__throughput.avg.pct_of_peak_sustained_elapsed")[:5],
          g(r, "launch__registers_per_thread")))
PY
		summary+=("$(head -60 "$logs/ncu_table.txt")")
	fi
fi

table=""
if [ -f "$logs/check.log" ]; then
	table=$(python3 tools/gemm_dev/gemm_table.py "$logs/check.log" --default v2 --side)
	# the v8 / v9 runs' question is mc* / c256* against v3a (the default's large-M plan), not against v2
	case " ${CANDS//[,+]/ } " in *" v3a "*" mc"* | *" mc"*" v3a "* | *" v3a "*" c256"* | *" c256"*" v3a "* | *" v3a "*" v10"* | *" v10"*" v3a "*)
		table+=$'\n'"against v3a instead of v2:"$'\n'$(python3 tools/gemm_dev/gemm_table.py "$logs/check.log" --default v3a |
			sed -n '/^candidates vs the default/,/^failed/p' | grep -v '^failed')
		;;
	esac
	# the v11 (v12, v15, v16) run's question is the candidates against the defaults (dflt: v6 at mid M, v10 from M 513)
	case " ${CANDS//[,+]/ } " in *" dflt "*" v11"* | *" v11"*" dflt "* | *" dflt "*" v12"* | *" v12"*" dflt "* | *" dflt "*" v15"* | *" v15"*" dflt "* | *" dflt "*" v16"* | *" v16"*" dflt "*)
		table+=$'\n'"against dflt instead of v2:"$'\n'$(python3 tools/gemm_dev/gemm_table.py "$logs/check.log" --default dflt |
			sed -n '/^candidates vs the default/,/^failed/p' | grep -v '^failed')
		;;
	esac
fi
echo "$table" >"$logs/table.txt"
{
	printf '%s\n' "${summary[@]}"
	[ -n "$evaltab" ] && echo "$evaltab"
	echo "$table"
	echo "total $(($(date +%s) - t0)) s, status $status"
} >"$out/summary.txt"
tar -czf "$out/gpu_gemm_logs.tgz" -C "$out" logs && rm -rf "$logs"
echo "-------- gpu_gemm summary --------"
cat "$out/summary.txt"
exit $status
