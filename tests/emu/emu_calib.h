/*
 * emu_calib.h - the calibration kernels' cases of emu_test.cpp (included there, after its helpers): the
 * copy (tools/calibration/copy/solutions/copy.cu, -DEMU_COPY) and the read (tools/calibration/read/
 * solutions/read.cu, -DEMU_READ: y[b] = max of row b, exact, checked bit for bit).
 */
#ifdef EMU_COPY
static void test_copy(int64_t n, size_t shift)
{
	buf x, y;
	x.init(n * 2, shift);
	y.init(n * 2, shift);
	fill(x.data(), n, 0, 1, 1);
	memset(y.data(), 0xFF, y.bytes);
	std::vector<int64_t> s{ n };
	std::vector<sf_tensor> in{ mk(s, x.data(), SF_CODE_BFLOAT, 16) }, out{ mk(s, y.data(), SF_CODE_BFLOAT, 16) };
	std::vector<double> scal{ NAN };
	std::string why = call_run(in, scal, out);
	if (why.empty() && memcmp(x.data(), y.data(), n * 2))
		why = "output differs from the input";
	if (why.empty() && !y.guards_ok())
		why = "wrote outside the output";
	report("n" + std::to_string(n) + SHIFT_NAME(shift), why);
}
static void tests()
{
	/* one SM: with COPY_BPS > 0 at most COPY_BPS blocks, so 200003 elements (13 chunks of 512 x 4
	 * vectors) take several chunks per block (grid stride, or COPY_BLOCKED runs); every size here is
	 * below COPY_SMALL_BYTES unless a line sets it to 0 (the COPY_UNROLL kernel) */
	emu_sm_count = 1;
	for (int64_t n : { 1, 7, 8, 9, 16384, 16389, 200003 })
		test_copy(n, 0);
	test_copy(1001, 2);
}
#endif

#ifdef EMU_READ
/* y[b] = max over row b of x[B, R] as bf16, -inf to start, a NaN never taken; special: 0 none, 1 NaNs
 * scattered in every row (row 0 all NaN: -inf), 2 every value -inf. Checked bit for bit. */
static void test_read(int64_t B, int64_t R, size_t shift, int special)
{
	buf x, y;
	x.init(B * R * 2, shift);
	y.init(B * 2, 0);
	fill(x.data(), B * R, 0, 1, 1);
	uint16_t *q = (uint16_t *)x.data();
	for (int64_t i = 0; i < B * R; i++) {
		if (special == 1 && (i < R || i % 7 == 3))
			q[i] = (i & 1) ? 0x7FC1 : 0xFFC0; /* NaNs of both signs */
		if (special == 2)
			q[i] = 0xFF80;
	}
	/* the row's maximum planted at an edge (last, first, last of the first 16-byte vector, first of a
	 * second trip) so that a kernel skipping any part of a row is caught, not just likely caught */
	for (int64_t b = (special == 1); special != 2 && b < B; b++) {
		const int64_t at[4] = { R - 1, 0, R < 8 ? R / 2 : 7, R > 8192 ? 8192 : R / 2 };
		q[b * R + at[b % 4]] = (uint16_t)(0x4700 + b); /* > 32768, above any N(0,1) sample */
	}
	memset(y.data(), 0x5A, y.bytes);
	std::vector<int64_t> sx{ B, R }, sy{ B };
	std::vector<sf_tensor> in{ mk(sx, x.data(), SF_CODE_BFLOAT, 16) }, out{ mk(sy, y.data(), SF_CODE_BFLOAT, 16) };
	std::vector<double> scal{ NAN };
	std::string why = call_run(in, scal, out);
	const uint16_t *yq = (const uint16_t *)y.data();
	for (int64_t b = 0; why.empty() && b < B; b++) {
		double m = -INFINITY;
		uint16_t mb = 0xFF80;
		for (int64_t r = 0; r < R; r++) {
			const double v = bf16_val(q[b * R + r]);
			if (v > m) {
				m = v;
				mb = q[b * R + r];
			}
		}
		if (yq[b] != mb) {
			char msg[120];
			snprintf(msg, sizeof msg, "row %lld: got 0x%04x, want 0x%04x", (long long)b, yq[b], mb);
			why = msg;
		}
	}
	if (why.empty() && !y.guards_ok())
		why = "wrote outside the output";
	report("B" + std::to_string(B) + "-R" + std::to_string(R) + SHIFT_NAME(shift) +
		       (special == 1 ? "-nan" : special == 2 ? "-neginf" : ""),
	       why);
}
static void tests()
{
	test_read(1, 8192, 0, 0);
	test_read(4, 8192, 0, 0);
	test_read(4, 8200, 0, 0); /* two trips, the second guarded */
	test_read(3, 8192, 0, 1);
	test_read(2, 8192, 0, 2);
	test_read(3, 13, 0, 0);   /* R % 8 != 0: the scalar path */
	test_read(2, 8192, 2, 1); /* unaligned: the scalar path, with NaNs */
}
#endif
