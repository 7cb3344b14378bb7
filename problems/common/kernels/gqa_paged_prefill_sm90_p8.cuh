/*
 * gqa_paged_prefill_sm90_p8.cuh - version 8 ("v8") of the causal GQA paged prefill attend kernel
 * (gqa_paged_prefill_sm90.cu with -DSF_PREFILL_WGMMA=8): version 6 (gqa_paged_prefill_sm90_p6.cuh: one
 * producer warpgroup with cp.async gathers, two consumer warpgroups with wgmma, setmaxnreg 64 / 216)
 * plus FlashAttention-3's ping-pong of the two consumers on named barriers, so that one consumer's
 * softmax runs while the other's S / PV wgmmas occupy the tensor core.
 *
 * Everything but the turns is v6's code, shared through p6_attend<PS, kTurns = true> (p6.cuh; its
 * kTurns branches are the turns): ring, producer, publication lag 2, full / empty mbarriers, masks,
 * rescale vote, epilogue (see p6.cuh's header for their contract). The turns (named barriers
 * P8_TURN_BAR + 0 / + 1, P8_TURN_THREADS = the 256 consumer threads; the producer never uses them):
 *  - consumer c waits for its full barriers, then `bar.sync P8_TURN_BAR + c` before issuing
 *    [S(t), PV(t - 1)], and `bar.arrive P8_TURN_BAR + 1 - c` right after the two wgmma commits: the
 *    tensor core gets 0's pair, 1's pair, 0's pair, ... and each softmax runs under the other's pair;
 *  - consumer 1 arrives once on barrier P8_TURN_BAR before its loop (consumer 0 issues first);
 *    consumer 0 syncs once more on it after its last PV, taking consumer 1's arrival after its last
 *    tile: both barriers end balanced. Every arrival is unconditional (a branch around a wgmma's
 *    neighbourhood made ptxas serialize wgmmas, C7520, in v3pp and v7).
 *  - both consumers walk the same n tiles (consumer 0's last may be fully masked): a consumer that
 *    skipped a tile would leave the other's last bar.sync without its arrival (a hang).
 * Deadlock freedom (PREFILL_NOTES.md, v8): a consumer's turn for tile t needs the other's issue of tile
 * t - 1 + c, which needs only full phases this consumer already waited for (its full waits precede the
 * turn); the producer's waits need consumer work on tiles <= t - 2, done before any turn of tile t.
 * tools/attn_emulate_pp.py --variant 8 replays the three roles with the turns under random
 * interleavings. A CTA whose item has no key (n_kv < 1) returns whole before any barrier, as v6.
 * -DSF_PREFILL_LEAN=1 swaps in the lean consumers of gqa_paged_prefill_sm90_lean.cuh (same turns and ring;
 * tile 0 peeled so the softmax overlaps its PV, PREFILL_NOTES.md "Version 10"); the default keeps this body.
 */
#pragma once
#include "gqa_paged_prefill_sm90_p6.cuh" /* p6_attend, P6_KERNEL, P8_TURN_BAR, P8_TURN_THREADS */

#define P8_THREADS P6_THREADS
#define P8_SMEM_BYTES P6_SMEM_BYTES

/* Same contract and arguments as prefill_attend (version 1), but the items are 32-token tiles
 * (prefill_plan<PP_TOK>), P8_THREADS threads and P8_SMEM_BYTES of dynamic shared memory. */
P6_KERNEL(prefill_attend_p8, true)
