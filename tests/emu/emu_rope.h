/*
 * emu_rope.h - the Llama-3.1 RoPE cases of emu_test.cpp (included there, after its helpers): the fast.cu of
 * rope_llama31_h32_kv8_d128 (-DEMU_ROPE) against a double-precision reference of its oracle.
 */
#ifdef EMU_ROPE
/* inv_freq[i] of the oracle (llama3 scaling in double, rounded once to float32) */
static float rope_inv_freq(int64_t i, int64_t D)
{
	const double inv = 1.0 / std::pow(500000.0, (double)(2 * i) / (double)D), pi = 3.14159265358979323846;
	const double wl = 2.0 * pi / inv;
	double f;
	if (wl < 8192.0 / 4.0)
		f = inv;
	else if (wl > 8192.0)
		f = inv / 8.0;
	else {
		const double sm = (8192.0 / wl - 1.0) / 3.0;
		f = (1.0 - sm) * inv / 8.0 + sm * inv;
	}
	return (float)f;
}
/* q [T, Hq, D], k [T, Hk, D] rotated at random positions < 131072 (int64 or, pos32, int32) against
 * the oracle's double rotation of the float32 angle, the workload's tolerance (atol 1e-4, rtol 1e-2) */
static void test_rope(int64_t T, int64_t Hq, int64_t Hk, int64_t D, size_t shift, bool pos32)
{
	buf q, k, p, qo, ko;
	q.init(T * Hq * D * 2, shift);
	k.init(T * Hk * D * 2, 0);
	p.init(T * 8, 0);
	qo.init(T * Hq * D * 2, 0);
	ko.init(T * Hk * D * 2, shift);
	fill(q.data(), T * Hq * D, 0, 1, 1);
	fill(k.data(), T * Hk * D, 0, 1, 1);
	std::vector<int64_t> pos((size_t)T);
	for (int64_t t = 0; t < T; t++) {
		pos[t] = (int64_t)(rng() % 131072);
		if (pos32)
			((int32_t *)p.data())[t] = (int32_t)pos[t];
		else
			((int64_t *)p.data())[t] = pos[t];
	}
	memset(qo.data(), 0xFF, qo.bytes);
	memset(ko.data(), 0xFF, ko.bytes);
	std::vector<int64_t> sq{ T, Hq, D }, sk{ T, Hk, D }, sp{ T };
	std::vector<sf_tensor> in{ mk(sq, q.data(), SF_CODE_BFLOAT, 16), mk(sk, k.data(), SF_CODE_BFLOAT, 16),
				   mk(sp, p.data(), SF_CODE_INT, pos32 ? 32 : 64) };
	std::vector<sf_tensor> out{ mk(sq, qo.data(), SF_CODE_BFLOAT, 16), mk(sk, ko.data(), SF_CODE_BFLOAT, 16) };
	std::vector<double> scal{ NAN, NAN, NAN };
	std::string why = call_run(in, scal, out);
	const int64_t half = D / 2;
	auto refof = [&](const void *xv, int64_t H) {
		std::vector<double> ref((size_t)(T * H * D));
		const uint16_t *xp = (const uint16_t *)xv;
		for (int64_t t = 0; t < T; t++)
			for (int64_t h = 0; h < H; h++)
				for (int64_t i = 0; i < half; i++) {
					const double a = (double)((float)pos[t] * rope_inv_freq(i, D));
					const double c = std::cos(a), s = std::sin(a);
					const int64_t b = (t * H + h) * D;
					const double x1 = bf16_val(xp[b + i]), x2 = bf16_val(xp[b + half + i]);
					ref[b + i] = x1 * c - x2 * s;
					ref[b + half + i] = x2 * c + x1 * s;
				}
		return ref;
	};
	if (why.empty())
		why = compare(qo.data(), refof(q.data(), Hq), 1, 1e-4, 1e-2);
	if (why.empty())
		why = compare(ko.data(), refof(k.data(), Hk), 1, 1e-4, 1e-2);
	if (why.empty() && !(qo.guards_ok() && ko.guards_ok()))
		why = "wrote outside an output";
	report("T" + std::to_string(T) + "-HQ" + std::to_string(Hq) + "-HK" + std::to_string(Hk) + "-D" +
		       std::to_string(D) + (pos32 ? "-pos32" : "") + SHIFT_NAME(shift),
	       why);
}
static void tests()
{
	for (int64_t T : { 1, 2, 5 })
		test_rope(T, 32, 8, 128, 0, false); /* the definition's shape: the compile-time instance (RP_CONST) */
	test_rope(3, 32, 8, 128, 0, true);
	test_rope(2, 32, 4, 128, 0, false); /* other head counts: the runtime instance */
	test_rope(2, 8, 2, 64, 0, false);   /* D 64: hv 4 */
	test_rope(2, 4, 1, 256, 0, false);  /* D 256: 128 pairs */
	test_rope(2, 4, 2, 40, 0, false);   /* D/2 = 20, not a multiple of 8: scalar kernel */
	test_rope(2, 32, 8, 128, 2, false); /* unaligned: scalar kernel */
}
#endif
