/*
 * gqa_paged_decode_sm90_knobs.cuh - the compile-time knobs of the GQA paged decode (gqa_paged_decode_sm90.cu, which
 * includes this first): every -D the kernels read, its default and what it selects, the shapes the kernels are
 * written for (HQ, HKV, GRP, D, the CTA's warps and step) and the checks that reject impossible combinations.
 * Measurements behind the defaults: problems/llama/DECODE_NOTES.md and DECODE_NOTES_B1.md.
 */
#ifndef SF_DECODE_KNOBS_CUH
#define SF_DECODE_KNOBS_CUH
#ifndef DECODE_V1
#define DECODE_V1 0
#endif
#ifndef DEC_ITEMS
#define DEC_ITEMS 66
#endif
#ifndef DEC_MIN_CHUNK
#define DEC_MIN_CHUNK 128
#endif
#ifndef DEC_STAGES
#define DEC_STAGES 3 /* version 2: cp.async ring of 3 steps of 32 KiB (0: K/V straight to registers) */
#endif
#ifndef DECODE_MMA /* 1 (default since the H200 run of session 4: 1.11-1.22x v2 on every workload timed):
                     * version 3, the attend math on tensor cores (mma.sync m16n8k16, ldmatrix); 0: v2 */
#if DECODE_V1 || DEC_STAGES == 0
#define DECODE_MMA 0
#else
#define DECODE_MMA 1
#endif
#endif
#ifndef DEC_MERGE_UNROLL
#define DEC_MERGE_UNROLL (DECODE_MMA ? 4 : 2) /* chunks per warp whose partials the merge loads at once (2 or 4) */
#endif
#ifndef DEC_PERSIST
#define DEC_PERSIST 0 /* 1: version 4 (candidate): one wave of CTAs, each a contiguous item range, one ring through it */
#endif
#ifndef DEC_PERSIST_CTAS
#define DEC_PERSIST_CTAS 0 /* version 4: item ranges per kv head (0: SMs x resident CTAs per SM / 8; tests set few) */
#endif
#ifndef DEC_PERSIST_SPLIT
#define DEC_PERSIST_SPLIT 16 /* version 4: items per range aimed at (the balance granularity: ~1/16) */
#endif
#ifndef DEC_PERSIST_MIN_CHUNK
#define DEC_PERSIST_MIN_CHUNK 16 /* version 4: the smallest item, in positions (any size: steps are masked) */
#endif
#ifndef DEC_CLUSTER
#define DEC_CLUSTER 0 /* CS > 1: version 5 (candidate): batch <= DEC_CLUSTER_MAXB as clusters of CS chunks, DSMEM merge */
#endif
#ifndef DEC_B1 /* 1 (default since session 10 wherever version 3 runs: b1-kv4096 14.69 -> 13.63 us, b1-kv32768 53.73 ->
		* 47.33, DECODE_NOTES.md "Session 10"): batch 1 runs decode_b1 (version 3 without the locate scan;
		* gqa_paged_decode_sm90_b1.cuh); 0: batch 1 on decode_fused like every batch */
#if DECODE_V1 || DEC_PERSIST || !DECODE_MMA || DEC_STAGES == 0
#define DEC_B1 0
#else
#define DEC_B1 1
#endif
#endif
#if DEC_B1 && (DECODE_V1 || DEC_PERSIST)
#error "DEC_B1 (decode_b1) is version 3's batch-1 kernel: not with DECODE_V1 or DEC_PERSIST"
#endif
#ifndef DEC_B1_ITEMS
#define DEC_B1_ITEMS 33 /* DEC_B1: the chunk count aimed at for batch 1 (33: one wave at 2 CTAs/SM; 66 measured 51.26 us
			* at b1-kv32768, 33 47.33) */
#endif
#ifndef DEC_B1_DYN
#define DEC_B1_DYN 0 /* 1 (candidate, session 11): batch 1 runs decode_b1dyn (static runs + claimed units of steps,
		      * gqa_paged_decode_sm90_b1dyn.cuh) instead of decode_b1 */
#endif
#if DEC_B1_DYN && !DEC_B1
#error "DEC_B1_DYN replaces decode_b1: it needs DEC_B1"
#endif
#ifndef DEC_B1_TMA
#define DEC_B1_TMA 0 /* 1 (candidate, session 16): batch 1 runs decode_b1tma (the ring filled by TMA bulk copies) */
#endif
#ifndef DEC_B1_REG
#define DEC_B1_REG 0 /* 1 (candidate, session 17): decode_b1 streams K / V into registers (attend_range_reg,
		      * gqa_paged_decode_sm90_b1reg.cuh) instead of through the cp.async ring */
#endif
#if DEC_B1_REG && (DEC_B1_TMA || DEC_B1_DYN || !DEC_B1 || !DECODE_MMA)
#error "DEC_B1_REG is decode_b1's register loop: it needs decode_b1 (DEC_B1, DECODE_MMA, not DEC_B1_TMA / DEC_B1_DYN)"
#endif
/* The ring depth of decode_b1 (batch 1), chosen per call by the chunk's steps (session 19, DECODE_NOTES_B1.md "Session
 * 19"): DEC_B1_STAGES (2) for chunks of more than DEC_B1_SHORT_STEPS (2) steps, DEC_B1_STAGES_SHORT (1) for the rest;
 * decode_fused keeps DEC_STAGES (3). Against 3 / 3 (the control, CUPTI, same run, session 19 call 3): b1-kv4096 1.029 /
 * 1.040x, b1-kv32768 1.021 / 1.019x (ps 1 / 16). The candidates TMA / REG / DYN / the diagnostics keep DEC_STAGES. */
#if DEC_B1_TMA || DEC_B1_REG || DEC_B1_DYN || DEC_DIAG_GATHER
#if defined(DEC_B1_STAGES) || defined(DEC_B1_STAGES_SHORT)
#error "DEC_B1_STAGES / DEC_B1_STAGES_SHORT set decode_b1's ring; DEC_B1_TMA / REG / DYN and DEC_DIAG_GATHER keep DEC_STAGES"
#endif
#define DEC_B1_STAGES DEC_STAGES
#define DEC_B1_STAGES_SHORT DEC_STAGES
#endif
#ifndef DEC_B1_STAGES
#define DEC_B1_STAGES (DEC_STAGES < 2 ? DEC_STAGES : 2)
#endif
#ifndef DEC_B1_STAGES_SHORT
#define DEC_B1_STAGES_SHORT (DEC_STAGES < 1 ? DEC_STAGES : 1)
#endif
#ifndef DEC_B1_SHORT_STEPS
#define DEC_B1_SHORT_STEPS 2
#endif
#if DEC_B1 && (DEC_B1_STAGES < 1 || DEC_B1_STAGES > DEC_STAGES || DEC_B1_STAGES_SHORT < 1 || \
	       DEC_B1_STAGES_SHORT > DEC_STAGES)
#error "DEC_B1_STAGES / DEC_B1_STAGES_SHORT: 1 .. DEC_STAGES (the emulation's ring holds DEC_STAGES steps)"
#endif
#ifndef DEC_CP_L2
#define DEC_CP_L2 256 /* 256 (default since session 18: 1.014-1.123x at batch 4-64, DECODE_NOTES_B1.md "Session 18"):
		       * .L2::256B (the L2 fetches the 256-byte stretch around a miss) on decode_fused's ring cp.async.cg and
		       * its register loops' ld.global.nc K / V loads; 0: no size hint (the control) */
#endif
#ifndef DEC_CP_L2_B1
#define DEC_CP_L2_B1 0 /* the same hint in decode_b1 (batch 1: its ring, decode_b1dyn's and DEC_B1_REG's loads); 0 by
			* default: 256 measured 0.990-0.994x at batch 1 (session 18, call 1) */
#endif
#if (DEC_CP_L2 != 0 && DEC_CP_L2 != 256) || (DEC_CP_L2_B1 != 0 && DEC_CP_L2_B1 != 256)
#error "DEC_CP_L2 / DEC_CP_L2_B1: 0 (no L2 fetch-size hint) or 256"
#endif
#ifndef DEC_DIAG_GATHER
#define DEC_DIAG_GATHER 0 /* diagnostic (session 16; outputs WRONG by design): decode_b1 without its math, K/V rows at
			   * 1 the page table's addresses, 2 contiguous 16-KiB runs, 3 the identity table; session 17, all at
			   * 1's addresses: 4 no K/V copies at all (the chain alone), 5 the rows into registers by
			   * ld.global.nc (no ring, no barriers), 6 the ring without the loop's barriers (DECODE_NOTES_B1.md) */
#endif
#if DEC_DIAG_GATHER && (DEC_B1_TMA || DEC_B1_DYN || !DEC_B1 || !DECODE_MMA)
#error "DEC_DIAG_GATHER replaces decode_b1's math: it needs decode_b1 (DEC_B1, DECODE_MMA, not DEC_B1_TMA / DEC_B1_DYN)"
#endif
/* Timing-only knobs (session 8's latency budget, DECODE_NOTES.md; results stay exact where noted):
 * DEC_EXP_UNIFORM 1: items from blockIdx for a batch of equal lengths (no locate scan; kv_len and the
 * page base still from kv_indptr), 2: also no kv_indptr load (length and page base from the host's
 * pages x ps / batch; exact only for equal, full-paged sequences); DEC_EXP_MERGE2: the last CTA merges
 * twice; DEC_EXP_SYNC2: one more fence + counter atomic (adds 0) per CTA; DEC_EXP_IDS2: the ring's
 * first page ids loaded twice, the second time through L2 and dependent on the first. */
#ifndef DEC_EXP_UNIFORM
#define DEC_EXP_UNIFORM 0
#endif
#ifndef DEC_EXP_MERGE2
#define DEC_EXP_MERGE2 0
#endif
#ifndef DEC_EXP_SYNC2
#define DEC_EXP_SYNC2 0
#endif
#ifndef DEC_EXP_IDS2
#define DEC_EXP_IDS2 0
#endif
#ifndef DEC_WAVE_CHUNK /* decode_fused doubles the host's chunk when the doubled chunk is <= N positions and its items fill
			* one wave (between 3/4 and all of the resident CTA slots); the rule runs in the CTAs' locate scan,
			* where the lengths are known (DECODE_NOTES_B1.md "Session 20"; the default since session 20: b16-kv4096
			* 1.067x, the other workloads within 0.5%); 0: the host's chunk always (the control) */
#if DEC_PERSIST || DECODE_V1 || DEC_STAGES == 0
#define DEC_WAVE_CHUNK 0
#else
#define DEC_WAVE_CHUNK 2048
#endif
#endif
#ifndef DEC_WAVE_MIN_CHUNK
#define DEC_WAVE_MIN_CHUNK (DEC_WAVE_CHUNK / 2) /* the smallest host chunk the rule doubles (session 20: 512 -> 1024
						 * at cpu-b8-kv4000 was 4.6% slower; 1024 -> 2048 at b16 5% faster) */
#endif
#if DEC_WAVE_CHUNK && (DEC_PERSIST || DECODE_V1 || DEC_STAGES == 0)
#error "DEC_WAVE_CHUNK is decode_fused's (version 2-3 with the ring)"
#endif
#if DEC_WAVE_CHUNK
#define DEC_WAVE_PARAM , int slots
#define DEC_WAVE_ARG , g_slots[kind]
#else
#define DEC_WAVE_PARAM
#define DEC_WAVE_ARG
#endif
#if DEC_EXP_UNIFORM
#define DEC_EXP_PARAM , int uni_len
#define DEC_EXP_ARG , (int)(total_kv_max / batch)
#else
#define DEC_EXP_PARAM
#define DEC_EXP_ARG
#endif
#ifndef DEC_SCAN_PASS
#define DEC_SCAN_PASS 256 /* sequences per pass of the CTA's locate scan (<= 256; tests set fewer) */
#endif

#define HQ 32
#define HKV 8
#define GRP 4
#define D 128
#define ATT_WARPS 8
#define ATT_THREADS (ATT_WARPS * 32)
#define POS_PER_GROUP 4                                   /* consecutive positions per half-warp step */
#define POS_PER_STEP (ATT_WARPS * 2 * POS_PER_GROUP)      /* 64 positions per CTA step */
#define PLAN_THREADS 1024
#define LOG2E 1.4426950408889634f

#if DEC_MIN_CHUNK < POS_PER_STEP || DEC_MIN_CHUNK % POS_PER_STEP != 0
#error "DEC_MIN_CHUNK must be a positive multiple of 64"
#endif
#if DEC_SCAN_PASS < 1 || DEC_SCAN_PASS > ATT_THREADS
#error "DEC_SCAN_PASS must be in 1 .. 256"
#endif

#if DECODE_MMA && (DECODE_V1 || DEC_STAGES == 0)
#error "DECODE_MMA needs version 2's cp.async ring (DECODE_V1 0, DEC_STAGES > 0)"
#endif
#if DEC_PERSIST && !DECODE_MMA
#error "DEC_PERSIST (version 4) needs version 3 (DECODE_MMA 1)"
#endif
#endif
