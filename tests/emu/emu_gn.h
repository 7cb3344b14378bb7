/*
 * emu_gn.h - the GroupNorm(32) + SiLU cases of emu_test.cpp (included there, after its helpers): the fast.cu of
 * groupnorm32_silu_sd_vae (-DEMU_GN, with -DEMU_GN_V6 / _CL / _L2W / _WIDE / _BIG for its path variants)
 * against a double-precision reference of its oracle.
 */
#ifdef EMU_GN
/* calls > 1: run() again on fresh outputs (the group-resident path's counters must be back at 0).
 * gn_want_launches > 0: the first call must take that many launches (the path the case is meant for) */
static int gn_want_launches;
static void test_gn(int64_t N, int64_t C, int64_t H, int64_t W, size_t shift, int calls = 1)
{
	const int64_t n = N * C * H * W, HW = H * W, G = 32, cpg = C / G;
	buf x, g, b, y;
	x.init(n * 2, shift);
	g.init(C * 2, 0);
	b.init(C * 2, 0);
	y.init(n * 2, 0);
	fill(x.data(), n, 0.3, 1, 0); /* a non-zero mean exercises the two-pass statistics */
	fill(g.data(), C, 1, 0.1, 0);
	fill(b.data(), C, 0, 0.1, 0);
	memset(y.data(), 0xFF, y.bytes);
	std::vector<int64_t> sx{ N, C, H, W }, sc{ C }, ss;
	std::vector<sf_tensor> in{ mk(sx, x.data(), SF_CODE_FLOAT, 16), mk(sc, g.data(), SF_CODE_FLOAT, 16),
				   mk(sc, b.data(), SF_CODE_FLOAT, 16), mk(ss, nullptr, SF_CODE_FLOAT, 32) };
	std::vector<sf_tensor> out{ mk(sx, y.data(), SF_CODE_FLOAT, 16) };
	std::vector<double> scal{ NAN, NAN, NAN, 1e-6 };
	long l0 = emu_launches;
	const auto t0 = std::chrono::steady_clock::now();
	std::string why = call_run(in, scal, out);
	long launches = emu_launches - l0;
	if (why.empty() && gn_want_launches > 0 && launches != gn_want_launches)
		why = "took " + std::to_string(launches) + " launches, expected " + std::to_string(gn_want_launches);
	if (calls > 1 && why.empty()) { /* again on other data: stale partials or counters would show */
		for (int c = 1; c < calls && why.empty(); c++) {
			fill(x.data(), n, -0.5 * c, 2, 0);
			why = call_run(in, scal, out);
		}
		fill(x.data(), n, 0.3, 1, 0);
		memset(y.data(), 0xFF, y.bytes);
		if (why.empty())
			why = call_run(in, scal, out);
	}
	std::vector<double> ref((size_t)n);
	const uint16_t *xp = (const uint16_t *)x.data(), *gp = (const uint16_t *)g.data(), *bp = (const uint16_t *)b.data();
	for (int64_t s = 0; s < N; s++)
		for (int64_t gr = 0; gr < G; gr++) {
			const int64_t base = (s * C + gr * cpg) * HW, cnt = cpg * HW;
			double sum = 0, sq = 0;
			for (int64_t i = 0; i < cnt; i++)
				sum += f16_val(xp[base + i]);
			const double mean = sum / (double)cnt;
			for (int64_t i = 0; i < cnt; i++)
				sq += (f16_val(xp[base + i]) - mean) * (f16_val(xp[base + i]) - mean);
			const double rstd = 1.0 / std::sqrt(sq / (double)cnt + 1e-6);
			for (int64_t i = 0; i < cnt; i++) {
				const int64_t c = gr * cpg + i / HW;
				const double h = round_f16((f16_val(xp[base + i]) - mean) * rstd * f16_val(gp[c]) + f16_val(bp[c]));
				ref[base + i] = h / (1.0 + std::exp(-h));
			}
		}
	if (why.empty())
		why = compare(y.data(), ref, 0, 1e-3, 5e-3);
	if (why.empty() && !y.guards_ok())
		why = "wrote outside the output";
	report("n" + std::to_string(N) + "-c" + std::to_string(C) + "-" + std::to_string(H) + "x" + std::to_string(W) +
		       SHIFT_NAME(shift) + " (" + std::to_string(launches) + " launch" + (launches == 1 ? "" : "es") +
		       (calls > 1 ? ", " + std::to_string(calls) + " calls" : "") + ", " +
		       std::to_string((int)std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) +
		       " s emulated)",
	       why);
}
static void tests()
{
#ifdef EMU_GN_L2CHUNK
	/* the split path in ranges of groups (-DGN_L2CHUNK_KB=64 -DGN_CLR=0 -DGN_CLUSTER=0 -DGN_FUSED_MAX=0 -DEMU_GN_L2CHUNK: the
	 * cluster path, the default for these groups since session 16, off): 2 launches per
	 * range, checked on the first call (so a range loop that falls back to one pass fails its case) */
	gn_want_launches = 2 * 32;
	test_gn(1, 32, 160, 160, 0);     /* cnt 25600 (50 KB): one group per range, 32 ranges, hw % 8 == 0 */
	gn_want_launches = 2 * 16;
	test_gn(1, 256, 45, 45, 0);      /* cnt 16200 (32 KB): two groups per range, hw % 8 != 0 (the general apply) */
	gn_want_launches = 2 * 2 * 4;
	test_gn(2, 64, 40, 48, 0);       /* N 2, cnt 3840 (7.5 KB): 8 groups per range, 4 ranges per sample */
	gn_want_launches = 2 * 2;
	test_gn(1, 96, 24, 24, 0);       /* cnt 1728 (3.4 KB): 18 groups per range, ranges of 18 and 14 (a sample's 32 groups) */
	gn_want_launches = 0;
	return;
#endif
#ifdef EMU_GN_V6
	/* version 6 (-DGN_ODD=1 -DGN_CLR=1 -DEMU_GN_V6 -DGN_CLR_THREADS=64 -DGN_FUSED_MAX=256 -DGN_FUSED_PF=1): groups
	 * of <= 256 values (16-byte) on the fused kernel with GN_FUSED_PF's prefetch; odd or unaligned
	 * groups of <= 8192 values on gn_odd (one block per group, 1-8 values per thread), 16-byte groups
	 * with hw % 8 == 0 on gn_clr (non-persistent clusters of 1-16 CTAs of 64 threads: up to 16 x 64 x 8
	 * = 8192 vectors per group), the rest on the split paths (2 launches: checked, so a plan that falls
	 * back silently fails its case). 8 SMs x 2 CTAs (the occupancy query) */
	emu_sm_count = 8;
	emu_occupancy = 2;
	emu_resident = 16;
	gn_want_launches = 1;
	test_gn(1, 128, 7, 9, 0, 2);     /* held-out: odd hw 63, cnt 252 (gn_odd VPT 1 x 256), 2 calls */
	test_gn(3, 96, 13, 17, 0);       /* held-out: N 3, C 96, odd hw 221, cnt 663 (VPT 1 x 672 threads) */
	test_gn(1, 32, 30, 50, 0);       /* cnt 1500 (even hw, cnt % 8 = 4): VPT 2 x 768 */
	test_gn(1, 64, 19, 79, 0);       /* cnt 3002: VPT 4 x 768 */
	test_gn(1, 32, 77, 99, 0);       /* cnt 7623: VPT 8 x 960 (the largest odd group class) */
	test_gn(2, 64, 8, 8, 2);         /* unaligned pointers, cnt 128: gn_odd VPT 1 x 128 */
	test_gn(1, 128, 8, 8, 0, 2);     /* workload: cnt 256 <= GN_FUSED_MAX 256: fused, (gamma, beta) prefetched, 2 calls */
	test_gn(1, 256, 5, 5, 0);        /* fused, hw 25 (channels end mid-vector): the general apply */
	test_gn(1, 64, 16, 16, 0, 2);    /* 64 vectors per group: gn_clr cs 1, 2 calls */
	test_gn(2, 512, 16, 16, 0);      /* workload: 512 vectors per group, cs 8 */
	test_gn(3, 96, 16, 24, 0);       /* N 3, C 96: 144 vectors, cs 4 (36 each: threads partly idle) */
	test_gn(1, 96, 40, 41, 0);       /* 615 vectors, cs 16 (39 each, the last 30) */
	test_gn(1, 64, 64, 64, 0);       /* 1024 vectors: cs 16 exactly full */
	test_gn(1, 32, 96, 128, 0);      /* 1536 vectors: VPT 2, cs 16 */
	test_gn(1, 64, 128, 128, 0);     /* 4096 vectors: VPT 4, cs 16 */
	test_gn(1, 32, 200, 200, 0);     /* 5000 vectors: VPT 8, cs 16 (313 each, the last 305) */
	gn_want_launches = 2;
	test_gn(1, 64, 99, 101, 0);      /* odd cnt 19998 > 8192: scalar split */
	test_gn(1, 256, 45, 45, 0);      /* cnt % 8 == 0 but hw % 8 != 0: split */
#ifdef EMU_GN_BIG
	test_gn(1, 32, 320, 320, 0);     /* 12800 vectors: over 16 x 64 x 8: split */
#endif
	gn_want_launches = 0;
	return;
#endif
#ifdef EMU_GN_L2W
	/* the L2-window path (-DGN_L2WIN=1 -DGN_L2W_THREADS=64 -DGN_L2W_VPT=1 -DGN_L2W_KB=8 -DGN_FUSED_MAX=0):
	 * 1 SM x 4 CTAs = 4 resident CTAs of 2 warps, chunks of 512 values, a window of 2 grid-wide rounds
	 * (8 KB) unless the group needs more (lookahead ceil(nchunk / 4)); every 16-byte shape takes it
	 * (the fallbacks are the default build's). The emulation's barriers are slow: few chunks per case,
	 * the second seed on two cases */
	emu_sm_count = 1;
	emu_occupancy = 4;
	emu_resident = 4;
	for (int seed = 0; seed < 2; seed++) {
		rng.seed(777 + 1000 * seed);
		test_gn(1, 256, 21, 21, 0);        /* 7 chunks, the last 456 values (warp 1 partly idle), channels end mid-vector */
		test_gn(1, 32, 60, 72, 0, 2);      /* 9 chunks, the last 224 values (warp 1 idle): lookahead 3, 2 calls */
	}
	test_gn(1, 32, 100, 100, 0);               /* 20 chunks per group, the last partial: lookahead 5 */
	test_gn(1, 128, 8, 8, 0, 2);               /* workload: 32 groups of one partial chunk (256 values) */
	test_gn(1, 64, 30, 34, 0, 2);              /* 4 chunks per group (the last 504 values), 2 calls */
	test_gn(2, 512, 16, 16, 0);                /* workload: 64 groups x 8 chunks */
	return;
#endif
#ifdef EMU_GN_CL
	/* the cluster path (-DGN_CLUSTER=1 -DEMU_GN_CL -DGN_CL_THREADS=64 -DGN_FUSED_MAX=0): 8 SMs x 2 CTAs,
	 * a shared-memory opt-in of 6 KB (slices of <= 256 vectors, <= 96 with room for 2 CTAs per SM), so
	 * cluster sizes 1..16, several groups per cluster (the next group's prefetch), partial last slices,
	 * empty commit groups; groups over 16 slices hold 256 vectors per CTA and stream the rest while
	 * the streamed bytes per round fit 75 % of a 128 KB L2, else split */
	emu_sm_count = 8;
	emu_occupancy = 2;
	emu_resident = 16;
	emu_smem_optin = 6144;
	emu_l2_bytes = 128 << 10;
#ifdef EMU_GN_CL_QUICK
	/* CI's line for the default build's cluster path (session 16: GN_CLUSTER 1, GN_CL_STREAM 0), with
	 * -DGN_CL_MAX_HW=4096 so that both sides of the H x W rule run: the shapes below up to hw 2160 on the
	 * cluster path, hw 22800 on the split path */
	test_gn(1, 128, 8, 8, 0, 2);     /* workload: 32 vectors per group, cs 1, 16 clusters x 2 groups */
	test_gn(3, 64, 16, 16, 0, 2);    /* 96 groups, cs 1, 6 rounds */
	test_gn(1, 32, 45, 48, 0, 3);    /* 270 vectors: cs 4 (68 + 68 + 68 + 66), parts 2-3 empty, 3 calls */
	test_gn(1, 2048, 4, 6, 0);       /* 64 channels of hw 24 per group (< one stride: the division path) */
	test_gn(1, 64, 32, 32, 0);       /* hw 1024 >= the stride of 512 values: one subtraction per step */
	test_gn(2, 512, 16, 16, 0);      /* workload: 64 groups of 512 vectors, cs 8 */
	test_gn(1, 32, 152, 150, 0);     /* hw 22800 over the line's GN_CL_MAX_HW: the split path */
	return;
#endif
	test_gn(1, 128, 8, 8, 0, 2);     /* workload: 32 vectors per group, cs 1, 16 clusters x 2 groups */
	test_gn(3, 64, 16, 16, 0, 2);    /* 96 groups, cs 1, 6 rounds */
	test_gn(1, 32, 45, 48, 0, 3);    /* 270 vectors: cs 4 (68 + 68 + 68 + 66), parts 2-3 empty, 3 calls */
	test_gn(1, 2048, 4, 6, 0);       /* 64 channels of hw 24 per group (< one stride: the division path) */
	test_gn(1, 64, 32, 32, 0);       /* hw 1024 >= the stride of 512 values: one subtraction per step */
	test_gn(1, 32, 152, 150, 0);     /* 2850 vectors: cs 16 (179 each, the last 165), 32 rounds of 1 cluster */
	test_gn(2, 512, 16, 16, 0);      /* workload: 64 groups of 512 vectors, cs 8 */
	test_gn(1, 32, 200, 200, 0, 2);  /* 5000 vectors: cs 16, 256 held + 57 streamed per slice (the last 49), 2 calls */
	test_gn(1, 32, 278, 256, 0);     /* 8896 vectors: 256 held + 300 streamed (2 unrolled steps, the last partial) */
	test_gn(1, 32, 320, 320, 0);     /* 12800 vectors: 544 streamed per CTA, 136 KB per round > 75 % of the L2: split */
	test_gn(1, 4096, 2, 4, 0);       /* 128 channels per group: over the table, split */
	test_gn(1, 64, 99, 101, 0);      /* cnt % 8 != 0: scalar split */
	test_gn(2, 128, 16, 16, 2);      /* unaligned: scalar split */
	return;
#endif
#ifdef EMU_GN_WIDE
	/* 16 SMs x 1 block (with -DGN_RING_THREADS=128 -DGN_RING_SLOT_VALUES=4096 -DGN_RING_SLOTS=4
	 * -DGN_FUSED_MAX=0): the ring path on every 16-byte shape, its chunks shrunk to 1024..4096 values,
	 * lookahead 0..2 (the bound with 4 slots: groups of <= 33 chunks) */
	emu_sm_count = 16;
	emu_occupancy = 1;
	emu_resident = 16;
	test_gn(1, 128, 8, 8, 0, 2);     /* 32 chunks of 1024 (one per group), look 0 */
	test_gn(2, 512, 16, 16, 0, 2);   /* 64 groups x 1 chunk of 4096 */
	test_gn(1, 256, 45, 45, 0);      /* partial chunks, channels end mid-vector */
	test_gn(1, 32, 120, 128, 0, 3);  /* 32 x 4 chunks of 4096 */
	test_gn(1, 32, 200, 256, 0);     /* 13 chunks of 4096 per group: look 1 */
	test_gn(1, 32, 288, 290, 0, 2);  /* 21 chunks per group, the last partial: look 2 */
	test_gn(1, 32, 380, 380, 0);     /* 36 chunks: over the bound, split */
	test_gn(1, 64, 99, 101, 0);      /* cnt % 8 != 0: scalar split */
	test_gn(2, 128, 16, 16, 2);      /* unaligned: scalar split */
	return;
#endif
	/* 2 SMs x 2 blocks: 4 blocks run at once. Ring path (default; GN_RING=0 for the others): 4 CTAs,
	 * chunks of 16384 values, lookahead 0..1 here (more in the wide build: 512 emulated threads per
	 * block are slow). Group-resident path (GN_RING=0 GN_COOP=1): groups of <= 4 chunks (VPT 4: 8192
	 * values each, VPT 8: 16384, VPT 16: 32768), larger ones go to the split path */
	emu_sm_count = 2;
	emu_occupancy = 2;
	emu_resident = 4;
	test_gn(1, 128, 8, 8, 0);        /* fused, VPT 1 x 32 */
	test_gn(2, 512, 16, 16, 0);      /* fused, VPT 1 x 512 */
	test_gn(3, 96, 20, 24, 0);       /* fused, cpg 3 */
	test_gn(1, 32, 64, 128, 0);      /* fused, VPT 2 x 512: the largest fused group (8192) */
	test_gn(1, 256, 45, 45, 0, 2);   /* ring 1 chunk / coop VPT 4, 2 chunks, channels end mid-vector */
	test_gn(1, 128, 95, 96, 0, 2);   /* ring 3 chunks / coop VPT 4, 4 chunks (the capacity), the last partial */
	test_gn(2, 128, 64, 64, 0, 2);   /* ring or coop, 64 groups x 1-2 chunks, 2 calls (3 until session 14: CI's time) */
	test_gn(1, 512, 64, 64, 0);      /* ring 4 chunks, look 1 / coop VPT 8, 4 chunks */
#if !GN_RING /* (the ring's larger cases run in the wide build: 512 emulated threads per block are slow) */
	test_gn(1, 256, 99, 99, 0);      /* coop VPT 16, 3 chunks, channels end mid-vector */
#ifdef EMU_GN_BIG /* (the two largest: ~100 of the line's ~200 CPU-seconds, EMU_EXTRA only; the split path's
		   * chunks, partial last chunks and channel ends are in the cases above) */
	test_gn(1, 64, 200, 200, 0);     /* coop VPT 16, 3 chunks, the last one partial */
	test_gn(1, 32, 400, 400, 0);     /* over the coop capacity: split, 10 chunks (one call: 37 s emulated each) */
#endif
#endif
	test_gn(1, 64, 99, 101, 0);      /* cnt % 8 != 0: scalar split, 2 chunks */
	test_gn(1, 64, 33, 35, 0);       /* scalar split, 1 chunk */
	test_gn(2, 128, 16, 16, 2);      /* unaligned: scalar split */
}
#endif
