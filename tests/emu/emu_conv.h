/*
 * emu_conv.h - the causal conv1d + SiLU cases of emu_test.cpp (included there, after its helpers): the
 * fast.cu of causal_conv1d_silu_d4_mamba2 (-DEMU_CONV), whichever path the -D knobs select (CC_FLAT 0:
 * version 1's row-vector kernel at L % 8 == 0, else the scalar one; 1: the flat kernel where version 1 ran
 * the scalar one; 2: the flat kernel for every aligned shape; CC_U vectors per thread), over the decode
 * lengths (L 1-7: several rows inside one 16-byte vector), odd and power-of-two lengths, lengths around
 * the flat kernel's 256-element step, short aligned rows (CC_ROWS: several rows per CTA), a channel count that wraps inside a vector (D 13: n % 8 != 0, so the
 * scalar tail runs too) and unaligned pointers, against a double reference of the oracle (one rounding to
 * bf16; atol 1e-3, rtol 1e-2 as the definition). x holds large values of both signs at random places.
 */
#ifdef EMU_CONV
static void test_conv(int64_t B, int64_t D, int64_t L, size_t shift)
{
	buf x, w, bias, y;
	const int64_t n = B * D * L;
	x.init((size_t)(n * 2), shift);
	w.init((size_t)(D * 4 * 2), 0);
	bias.init((size_t)(D * 2), 0);
	y.init((size_t)(n * 2), shift);
	fill(x.data(), (size_t)n, 0, 1.5, 1);
	fill(w.data(), (size_t)(D * 4), 0, 0.6, 1);
	fill(bias.data(), (size_t)D, 0.1, 0.5, 1);
	uint16_t *xb = (uint16_t *)x.data();
	std::uniform_int_distribution<int64_t> pick(0, n - 1);
	for (int k = 0; k < 8 && n > 1; k++)
		xb[pick(rng)] = bf16_bits(k % 2 ? -60.0 - k : 40.0 + k);
	memset(y.data(), 0xFF, y.bytes);
	std::vector<int64_t> sx{ B, D, L }, sw{ D, 4 }, sb{ D };
	std::vector<sf_tensor> in{ mk(sx, x.data(), SF_CODE_BFLOAT, 16), mk(sw, w.data(), SF_CODE_BFLOAT, 16),
				   mk(sb, bias.data(), SF_CODE_BFLOAT, 16) },
		out{ mk(sx, y.data(), SF_CODE_BFLOAT, 16) };
	std::vector<double> scal;
	std::string why = call_run(in, scal, out);
	const uint16_t *wb = (const uint16_t *)w.data(), *bb = (const uint16_t *)bias.data();
	std::vector<double> ref((size_t)n);
	for (int64_t r = 0; r < B * D; r++) {
		const int64_t d = r % D;
		for (int64_t t = 0; t < L; t++) {
			double acc = bf16_val(bb[d]);
			for (int k = 0; k < 4; k++)
				if (t - 3 + k >= 0)
					acc += bf16_val(wb[d * 4 + k]) * bf16_val(xb[r * L + t - 3 + k]);
			ref[(size_t)(r * L + t)] = acc / (1.0 + std::exp(-acc));
		}
	}
	if (why.empty())
		why = compare(y.data(), ref, 1, 1e-3, 1e-2);
	if (why.empty() && !y.guards_ok())
		why = "wrote outside the output";
	report("B" + std::to_string(B) + "xD" + std::to_string(D) + "xL" + std::to_string(L) + SHIFT_NAME(shift), why);
}
static void tests()
{
	emu_sm_count = 1;
	/* decode lengths (rows inside a vector), at the definition's D for L 1-4 and on 40 channels (fewer emulated
	 * threads) for L 5-9; L 8 runs version 1's kernel at CC_FLAT < 2 */
	for (int64_t L = 1; L <= 9; L++)
		test_conv(L <= 4 ? 1 : L % 3 + 1, L <= 4 ? 5376 : 40, L, 0);
	test_conv(2, 48, 33, 0);
	test_conv(1, 640, 37, 0);
	test_conv(2, 24, 64, 0); /* short aligned rows: CC_ROWS' 2-D blocks (8 vectors a row) */
	test_conv(3, 13, 128, 0); /* rows not a multiple of the CTA's row count */
	test_conv(1, 40, 512, 0); /* 64 vectors a row: U 2 at CC_ROWS */
	test_conv(1, 64, 255, 0); /* around the flat kernel's 256-element step: division vs addition */
	test_conv(1, 64, 256, 0);
	test_conv(2, 40, 257, 0);
	test_conv(3, 16, 4999, 0); /* held-out-like odd length: long rows */
	test_conv(1, 8, 8192, 0);
	test_conv(1, 13, 3, 0); /* n % 8 != 0: the scalar kernel's tail */
	test_conv(2, 13, 301, 0);
	test_conv(1, 24, 37, 2); /* unaligned: the scalar kernel */
}
#endif
