/*
 * gemm_bf16_sm90_config.cuh - the tuning macros of gemm_bf16_sm90.cu and their defaults (each may be set with
 * -D; tools/gpu_gemm.sh builds its candidates that way). What each one selects: the comment beside it and
 * GEMM_NOTES.md (the version named there). Included once, by gemm_bf16_sm90.cu, before its code.
 */
#pragma once

#ifndef SF_GEMM_LARGE
#define SF_GEMM_LARGE 2
#endif
#ifndef SF_GEMM_WG_SPLITK /* 0: the wgmma path never splits K */
#define SF_GEMM_WG_SPLITK 1
#endif
#ifndef SF_GEMM_WG_REDUCE /* 1: split-K slabs reduced by all units of a tile (cooperative launch) */
#define SF_GEMM_WG_REDUCE 0
#endif
#ifndef SF_GEMM_WG_SPLIT_DIV /* split-K count = SMs / tiles / this */
#define SF_GEMM_WG_SPLIT_DIV 1
#endif
#ifndef SF_GEMM_V3 /* 1: the v3 host plan (tile width by wave count, cluster split-K at mid M); the default since
			* session 5 with SF_GEMM_V3_CLUSTER 0 and SF_GEMM_V3_AUTO 1 ("v3a", GEMM_NOTES.md) */
#define SF_GEMM_V3 1
#endif
#ifndef SF_GEMM_V3_BN /* v3: pin the persistent tile width (128, 192, 256; 0: chosen by wave count) */
#define SF_GEMM_V3_BN 0
#endif
#ifndef SF_GEMM_V3_CLUSTER /* v3: 0 keeps mid M on v2's split-K (only the tile width plan is new) */
#define SF_GEMM_V3_CLUSTER 0
#endif
#ifndef SF_GEMM_V3_AUTO /* v3 large M: leave v2's width 256 only when the planned width's predicted cost (whole
			 * waves x width cost) is at least SF_GEMM_V3_AUTO_PCT % lower (GEMM_NOTES.md, "v3 width: a margin") */
#define SF_GEMM_V3_AUTO 1
#endif
#ifndef SF_GEMM_V3_AUTO_PCT
#define SF_GEMM_V3_AUTO_PCT 2
#endif
#ifndef SF_GEMM_V3_PAIR /* v3: 1 runs large M on clusters of 2 CTAs sharing B by TMA multicast */
#define SF_GEMM_V3_PAIR 0
#endif
#ifndef SF_GEMM_V3_TRACE /* 1: print the v3 plan of each new shape to stderr (dev builds only) */
#define SF_GEMM_V3_TRACE 0
#endif
#ifndef SF_GEMM_V3_SPLIT_BN /* v3: pin the mid-M (cluster split-K) tile width (128 or 256; 0: planned) */
#define SF_GEMM_V3_SPLIT_BN 0
#endif
#ifndef SF_GEMM_MIDM /* 1 (default since the H200 run of session 4): M in (SMALL_MAX_M, MIDM_MAX_M] on the v4
                      * swap-AB kernel (gemm_bf16_sm90_midm.cuh); 0: v2's persistent wgmma path */
#define SF_GEMM_MIDM 1
#endif
#ifndef SF_GEMM_MIDM_MAX_M /* largest M the v4 / v13 mid-M kernel takes (at most 256): 192 since session 15 (v13's
                            * half bands with 192-token tiles beat the v6 / v10 plans at M 129-160, 1.04-1.25x;
                            * with 256-token tiles they lose at M 200-256: GEMM_NOTES_MID_M.md "Version 13w") */
#define SF_GEMM_MIDM_MAX_M 192
#endif
#ifndef SF_GEMM_MIDM_SPLITS /* v4: pin the K split count (0: planned by midm_plan) */
#define SF_GEMM_MIDM_SPLITS 0
#endif
#ifndef SF_GEMM_MIDM_2CTA /* v4: token tiles <= 96 at two CTAs per SM (half the ring, twice the splits): 2 always,
                           * 1 when the 128-row weight bands outnumber the SMs (one CTA per SM would take
                           * more than a wave: 28672 x 4096), 0 never */
#define SF_GEMM_MIDM_2CTA 1
#endif
#ifndef SF_GEMM_MIDM_TMA /* version-11 candidate (GEMM_NOTES_MID_M.md): 1 the v4 swap-AB kernel's stores (unsplit, and the
			  * cluster reduction's where a rank's share is a whole number of 8-token groups) through a
			  * transposing shared-memory stage and TMA stores; 0 (default): its 2-byte register stores */
#define SF_GEMM_MIDM_TMA 0
#endif
#ifndef SF_GEMM_MIDM_MC /* version-12 candidate (GEMM_NOTES_MID_M.md): 1 the v4 plans at one CTA per SM on clusters of two
			 * bands x their K splits whose CTAs of one K range share the activation tile by TMA multicast
			 * (gemm_bf16_sm90_midm_mc.cuh); 2 the same clusters without the multicast (control); 0 (default): off */
#define SF_GEMM_MIDM_MC 0
#endif
#ifndef SF_GEMM_MIDM_MC_TRIP /* version 12: output pairs per DSMEM round trip of its cluster reduction (v4's 4; 8: diagnostic) */
#define SF_GEMM_MIDM_MC_TRIP 4
#endif
#ifndef SF_GEMM_MIDM_HB /* version 13 (GEMM_NOTES_MID_M.md): 2 (default since session 13's H200 run) the v4 swap-AB kernel on
			 * half bands (64 weight rows per CTA, the consumers splitting the tokens) whenever the v4 plan runs one
			 * CTA per SM (4096-row weights: 64 x 2 splits = 128 CTAs on clusters of 2 instead of 32 x 3 = 96;
			 * 6144: 96 x 1 unsplit instead of 48 x 2); 1: only where the half-band plan has more CTAs; 0: v4 */
#define SF_GEMM_MIDM_HB 2
#endif
#ifndef SF_GEMM_MIDM_XROWS /* version 13: 1 (default since session 13's third call: 4096 x 14336 M 77 55.3 -> 43.8 us) the
			    * half-band kernel's activation box is M rows instead of the token tile's NT (no zero-filled rows
			    * past M, which TMA fills slowly; GEMM_NOTES_MID_M.md "Version 13: the box rows past M"); 0: NT rows */
#define SF_GEMM_MIDM_XROWS 1
#endif
#ifndef SF_GEMM_MIDM_FIT /* version-16 candidate (GEMM_NOTES_MID_M2.md "Version 16"): 1 the half-band plan's token tile is M
			  * rounded up to 16 (NT 80, 96, 112, 144, 160, 176 instantiated besides 64 / 128 / 192 / 256; each
			  * consumer a wgmma n of NT / 2, a multiple of 8) between M 65 and 192 instead of the next of 64 / 128 /
			  * 192 / 256 (M 129: 144 tokens, not 192: 25% less MMA); 2 (default since session 15) as 1, and where
			  * the plan splits K in two, M > SF_GEMM_MIDM_TT_MIN_M and K <= SF_GEMM_MIDM_TT_MAX_K, two token tiles of
			  * ~M / 2 over the whole K instead (4096^2 M 129-192: 1.07-1.10x over FIT 1, measured); 0: the version-13
			  * tiles */
#define SF_GEMM_MIDM_FIT 2
#endif
#ifndef SF_GEMM_MIDM_TT_MIN_M /* FIT 2: token tiles only above this M; 16 (every mid-M M) since session 24 with SF_GEMM_MIDM_TT_SMALL's
			      * narrow tiles (before, 128: at M <= 128 the tiles were 64 tokens, two overlapping) */
#define SF_GEMM_MIDM_TT_MIN_M 16
#endif
#ifndef SF_GEMM_MIDM_TT_MAX_K /* FIT 2: token tiles only up to this K (4096 x 14336: 0.86-0.94x of FIT 1's split plan) */
#define SF_GEMM_MIDM_TT_MAX_K 4096
#endif
#ifndef SF_GEMM_MIDM_TT_SMALL /* version 24 (GEMM_NOTES_MID_M3.md "Version 24"; default 1 since session 24: 4096^2 M 32 / 64 / 128
			       * 15.95 / 16.02 / 17.09 -> 14.62 / 14.93 / 16.55 us through the eval, CUPTI): 1 FIT 2's two token tiles may be
			       * narrower than 64: ceil(M / 2) rounded up to 16 (NT 16, 32, 48, 64; each consumer a wgmma n of
			       * 8, 16, 24, 32), so that with SF_GEMM_MIDM_TT_MIN_M below 64 the tiles of M 17..128 do not
			       * overlap by 32 tokens or more (without it, M 64 would run two tiles of the same 64 tokens);
			       * 0 (the control, with SF_GEMM_MIDM_TT_MIN_M 128): tiles of at least 64 tokens, as version 16 */
#define SF_GEMM_MIDM_TT_SMALL 1
#endif
#ifdef SF_GEMM_MIDM_TT_MC /* version 25 (a cluster pair of token tiles multicasting the weight): removed in session 25 */
#error "SF_GEMM_MIDM_TT_MC (version 25) was removed in session 25: GEMM_NOTES_MID_M3.md \"Version 25\""
#endif
#ifndef SF_GEMM_MIDM_SK /* version-26 candidate (GEMM_NOTES_MID_M3.md "Version 26"; gemm_bf16_sm90_midm_sk.cuh): 1 the unsplit
			 * one-tile half-band plans that leave SMs idle (6144 x 4096 M 17-192: 96 bands on 132 SMs) run on a
			 * stream-K schedule over all SMs (fp32 partials of cut bands through a workspace, one flag per part);
			 * 2 the same with one fence-free release per published partial instead of a fence in every consumer
			 * thread (1: the per-thread fences of session 24's measured build, 1.3x slower, which also had its
			 * wgmma serialized by ptxas: C7520, fixed since); 0 (default): 96 CTAs */
#define SF_GEMM_MIDM_SK 0
#endif
#ifndef SF_GEMM_MIDM_TT_TOP_M /* FIT 2 (session 16): above SF_GEMM_MIDM_MAX_M and up to this M, the mid-M path takes only
				* the half-band plans of two token tiles over the whole K (4096^2 M 200-256: 21.3-22.2 us vs
				* 24.4-24.8 on v6 / v10, measured as candidate v16w; GEMM_NOTES_MID_M2.md); <= MAX_M: off */
#define SF_GEMM_MIDM_TT_TOP_M 256
#endif
#ifndef SF_GEMM_MIDM_MW /* version 18 (GEMM_NOTES_MID_M2.md "Version 18"; mw_route in gemm_bf16_sm90_v6plan.cuh): where the
			 * weight has more 128-row bands than SMs (28672 x 4096) and 128 < M <= min(SF_GEMM_MIDM_MAX_M, 192), the
			 * mid-M path instead of the v6 plan's 224 persistent 128 x 256 tiles: 1 (default since session 17: 28672
			 * M 129-192 95.3-97.2 -> 84.3-89.4 us, events) v4's full-band kernel, token tile 192, unsplit (224 CTAs:
			 * 25% less MMA per SM at the same 2 waves), the half-band hook skipped; 2 the same dispatch with the half
			 * bands (448 CTAs of 64 x M rounded up to 16; measured 5-13% behind 1); 0: not taken. Host code only */
#define SF_GEMM_MIDM_MW 1
#endif
#ifndef SF_GEMM_TAILROWS /* version 15 (GEMM_NOTES_MID_M.md "Version 15"): 1 (default since session 14's second call: 4096^2
			  * M 129 33.4 -> 24.6 us, M 200 27.3 -> 24.1, 28672 x 4096 M 33 80.4 -> 69.1) the last token tile's A box is
			  * its M % 128 real rows (a second A map, made when M % 128 != 0 and M <= SF_GEMM_TAILROWS_MAX_M) in
			  * gemm_wgmma_kernel (every mode) and gemm_v10_kernel, and v4's swap-AB kernel outside the half bands (the
			  * two-CTA plans of 28672 x 4096) loads an M-row activation box: no zero-filled rows past M (XROWS' fix on
			  * the other paths); 0: 128-row / NT-row boxes, the kernels' parameters as before */
#define SF_GEMM_TAILROWS 1
#endif
#ifndef SF_GEMM_TAILROWS_MAX_M /* version 15: the largest M whose last tile takes the short box (above it the 128-row box, as
				* before version 15: at M 5000 the tail is 8 of 5120 rows and 4096^2 measured 226.8 -> 240.1 us with it) */
#define SF_GEMM_TAILROWS_MAX_M 512
#endif
#if defined(SF_GEMM_MIDM_TP) && SF_GEMM_MIDM_TP /* version 14 (token pairs) was removed, its _STAGES / _KC / _PRE with it */
#error "SF_GEMM_MIDM_TP=1: version 14 was removed (measured 0.932x the default); GEMM_NOTES_MID_M.md \"Version 14 removed (session 14)\""
#endif
#ifndef SF_GEMM_MIDM_TRACE /* 1: print the v4 plan of each new shape to stderr (dev builds only) */
#define SF_GEMM_MIDM_TRACE 0
#endif
#ifndef SF_GEMM_SMALLM_V /* small-M kernel for M <= 16: 1 the v2 register-streaming kernel, 2 the v5 TMA-ring
			  * kernel (candidate, GEMM_NOTES.md "Version 5") */
#define SF_GEMM_SMALLM_V 1
#endif
#ifndef SF_GEMM_SMALLM_TRACE /* 1: print the v5 plan of each new shape to stderr (dev builds only) */
#define SF_GEMM_SMALLM_TRACE 0
#endif
#ifndef SF_GEMM_V6 /* 1 (the default since session 7): M in [SF_GEMM_V6_MIN_M, SF_GEMM_V6_MAX_M] on the v6 plan
		    * (gemm_bf16_sm90_v6plan.cuh: tile width and schedule by a cost model; GEMM_NOTES.md "Version 6");
		    * 0: those M on v3a's plan */
#define SF_GEMM_V6 1
#endif
#ifndef SF_GEMM_V6_MIN_M /* smallest M the v6 plan takes (M <= 128 stays on v4 where midm_takes it) */
#define SF_GEMM_V6_MIN_M 129
#endif
#ifndef SF_GEMM_V6_MAX_M
#define SF_GEMM_V6_MAX_M 512
#endif
#ifndef SF_GEMM_V6_PIN_BN /* v6: pin the tile width (128, 192, 256; 0: planned) */
#define SF_GEMM_V6_PIN_BN 0
#endif
#ifndef SF_GEMM_V6_PIN_MODE /* v6: pin the schedule (0 persistent, 1 cluster split-K, 2 v2 split-K; -1: planned) */
#define SF_GEMM_V6_PIN_MODE -1
#endif
#ifndef SF_GEMM_V6_BN96 /* version 17 (GEMM_NOTES_MID_M2.md "Version 17"): 1 the v6 plan may also pick 128 x 96 persistent
			 * tiles (gemm_wgmma_kernel<96, kWgPersistent>, register stores) where they fill one wave to >= 90%
			 * of the SMs and M <= 256 (6144 x 4096 M 193-256: 128 CTAs instead of 96); 2 (default since session
			 * 16's fourth call) the same at any M the v6 plan takes (also the 4096-row weights at M 257-384:
			 * 4096 x 14336 M 300-384 75.3-77.0 -> 64.4-66.6 us, 4096^2 26.0-26.8 vs 27.5-28.4, 6144 M 200-224
			 * 28.0-28.2 vs 29.5-30.0, events); 0: not compiled */
#define SF_GEMM_V6_BN96 2
#endif
#ifndef SF_GEMM_V6_TRACE /* 1: print the v6 plan of each new shape to stderr (dev builds only) */
#define SF_GEMM_V6_TRACE 0
#endif
#ifndef SF_GEMM_PINGPONG /* 1 (candidate): M >= SF_GEMM_PP_MIN_M on the ping-pong kernel (gemm_bf16_sm90_pingpong.cuh:
			  * the two consumer warpgroups on alternate tiles, one's epilogue under the other's K loop;
			  * GEMM_NOTES_LARGE_M.md "Version 7 (large M ping-pong)"; measured on the H200 in session 8:
			  * 0.95x the default at M >= 1000); 0: not compiled at all */
#define SF_GEMM_PINGPONG 0
#endif
#ifndef SF_GEMM_PP_WM /* ping-pong consumer tile: 128 (128 x 128, two m64n128k16) or 64 (64 x 256, one m64n256k16) */
#define SF_GEMM_PP_WM 128
#endif
#ifndef SF_GEMM_PP_MIN_M /* smallest M the ping-pong kernel takes (below: v6 / v3a as without it) */
#define SF_GEMM_PP_MIN_M 513
#endif
#ifndef SF_GEMM_MCAST /* 1 (candidate): M >= SF_GEMM_MCAST_MIN_M where v3a plans unsplit 256- or 192-wide tiles on
		       * clusters of 2 CTAs sharing the W block by TMA multicast (gemm_bf16_sm90_mcast.cuh;
		       * GEMM_NOTES_LARGE_M.md "Version 8"); 0: not compiled at all */
#define SF_GEMM_MCAST 0
#endif
#ifndef SF_GEMM_MCAST_MIN_M /* smallest M the clustered kernel takes (below: v3a / v6 as without it) */
#define SF_GEMM_MCAST_MIN_M 513
#endif
#ifndef SF_GEMM_MCAST_FENCE /* diagnostic: 1 releases the peer's stage with .release.cluster (v3p's form, a
			     * MEMBAR.ALL.GPU per remote arrive); 0 the fence-free form */
#define SF_GEMM_MCAST_FENCE 0
#endif
#ifndef SF_GEMM_MCAST_SHARE /* diagnostic: 0 keeps the cluster and its barriers but each CTA loads all of W itself */
#define SF_GEMM_MCAST_SHARE 1
#endif
#ifndef SF_GEMM_COOP256 /* candidate: where v3a plans unsplit 128 x 256 tiles at M >= SF_GEMM_COOP_MIN_M, the version-9
			 * kernel with two m64n128k16 per consumer k16 step (gemm_bf16_sm90_coop.cuh; GEMM_NOTES_LARGE_M.md
			 * "Version 9"): 1 tiles of 256 (M) x 128 (N), 2 tiles of 128 x 256 split by columns; 0: not compiled */
#define SF_GEMM_COOP256 0
#endif
#ifndef SF_GEMM_COOP_ORDER /* version-9 diagnostic: 0 issues the two m64n128k16 of a k16 step back to back (alternating
			    * accumulators), 1 all four k16 steps of row block 0, then of row block 1 (dependent chains) */
#define SF_GEMM_COOP_ORDER 0
#endif
#ifndef SF_GEMM_COOP_MIN_M /* smallest M the version-9 kernel takes (below: v3a / v6 as without it) */
#define SF_GEMM_COOP_MIN_M 513
#endif
#ifndef SF_GEMM_V10 /* 1 (default since session 10): the unsplit persistent 128 x BN launches at M >= SF_GEMM_V10_MIN_M
		     * on the version-10 kernel (gemm_bf16_sm90_v10.cuh: the K loop of gemm_wgmma_kernel, the epilogue
		     * through shared memory and TMA stores; GEMM_NOTES_LARGE_M.md "Version 10 measured"); 0: not compiled */
#define SF_GEMM_V10 1
#endif
#ifndef SF_GEMM_V10_MIN_M /* smallest M the version-10 kernel takes (below: the default kernel as without it); 129 since
			   * session 11 (v11p: 1.056x session 10's 513 over 16 cases at M 200-512, GEMM_NOTES_MID_M.md) */
#define SF_GEMM_V10_MIN_M 129
#endif
#ifndef SF_GEMM_V10_EPI /* version-10 diagnostic: 1 the epilogue through shared memory and TMA stores, 0 (the control)
			 * the default's register stores in the version-10 kernel */
#define SF_GEMM_V10_EPI 1
#endif
#ifndef SF_GEMM_SM16_MIDM /* 1 (default since session 16's third call: 28672 x 4096 M 16 70.8 -> 68.2 us, M 12 68.8 -> 67.8,
			   * events) = M 9..16 on the mid-M path (v4's two-CTA plan, 32-token tile) where the weight has more
			   * 128-row bands than SMs; 0 = the small-M kernels (gemm_smallm_kernel<2, U> there: its A reloads
			   * throttle the LSU) */
#define SF_GEMM_SM16_MIDM 1
#endif
#ifndef SF_GEMM_SMALL_MAX_M /* 16: M 17..64 go to wgmma (see GEMM_NOTES.md, version 2) */
#define SF_GEMM_SMALL_MAX_M 16
#endif

/* The *_TRACE builds' once-per-shape rule: true (and last[] updated) when (M, N, K) differs from the shape that
 * last[] holds, so each trace prints one line per new shape. Host code, trace builds only. */
static inline bool trace_new_shape(int last[3], int M, int N, int K)
{
	if (last[0] == M && last[1] == N && last[2] == K)
		return false;
	last[0] = M;
	last[1] = N;
	last[2] = K;
	return true;
}
