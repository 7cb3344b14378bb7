/*
 * emu_act.h - the gated-activation cases of emu_test.cpp (included there, after its helpers): the
 * fast.cu of silu_and_mul_i14336 (-DEMU_SILU) and of geglu_tanh_h5376_i21504 (-DEMU_GEGLU), whichever
 * grid the -D knobs select (SM_/GG_GRID 0: 2-D, 1: flat one-shot, 2: flat persistent; SM_/GG_NARROW_MAX:
 * the small-T narrow kernel, 1-4 values per thread, on every shape it takes), over the
 * workload width, narrow rows that a flat block crosses several times, a width that takes the scalar
 * kernel and an unaligned pointer, against double references of the oracles (silu: atol 1e-5,
 * rtol 1e-2; geglu: act rounded to bf16 first, atol 5e-3, rtol 1e-2). One emulated SM, so a
 * persistent grid has few blocks and each takes many chunks.
 */
#if defined(EMU_SILU) || defined(EMU_GEGLU)
static void test_act(int64_t T, int64_t I, size_t shift)
{
	buf x, y;
	x.init((size_t)(T * 2 * I * 2), shift);
	y.init((size_t)(T * I * 2), shift);
	fill(x.data(), (size_t)(T * 2 * I), 0, 2, 1);
	uint16_t *xb = (uint16_t *)x.data();
	/* the tails of the activations: large gates of both signs */
	std::uniform_int_distribution<int64_t> pick(0, T * I - 1);
	for (int k = 0; k < 8; k++) {
		const int64_t e = pick(rng), t = e / I, i = e % I;
		xb[t * 2 * I + i] = bf16_bits(k % 2 ? -40.0 - k : 30.0 + k);
	}
	memset(y.data(), 0xFF, y.bytes);
	std::vector<int64_t> sx{ T, 2 * I }, sy{ T, I };
	std::vector<sf_tensor> in{ mk(sx, x.data(), SF_CODE_BFLOAT, 16) }, out{ mk(sy, y.data(), SF_CODE_BFLOAT, 16) };
	std::vector<double> scal{ NAN };
	std::string why = call_run(in, scal, out);
	std::vector<double> ref((size_t)(T * I));
	for (int64_t t = 0; t < T; t++)
		for (int64_t i = 0; i < I; i++) {
			const double g = bf16_val(xb[t * 2 * I + i]), u = bf16_val(xb[t * 2 * I + I + i]);
#ifdef EMU_SILU
			ref[(size_t)(t * I + i)] = g / (1.0 + std::exp(-g)) * u;
#else
			const double inner = 0.79788456080286535588 * (g + 0.044715 * g * g * g);
			ref[(size_t)(t * I + i)] = round_bf16(0.5 * g * (1.0 + std::tanh(inner))) * u;
#endif
		}
#ifdef EMU_SILU
	const double atol = 1e-5;
#else
	const double atol = 5e-3;
#endif
	if (why.empty())
		why = compare(y.data(), ref, 1, atol, 1e-2);
	if (why.empty() && !y.guards_ok())
		why = "wrote outside the output";
	report("T" + std::to_string(T) + "xI" + std::to_string(I) + SHIFT_NAME(shift), why);
}
static void tests()
{
	emu_sm_count = 1;
#ifdef EMU_SILU
	const int64_t W = 14336;
#else
	const int64_t W = 21504;
#endif
	test_act(1, W, 0);
	test_act(3, W, 0);
	test_act(20, W, 0);   /* T * I past the default narrow bound: the vector kernels */
	test_act(2, 1000, 0); /* 125 vectors a row: flat blocks cross rows */
	test_act(9, 24, 0);   /* 3 vectors a row */
	test_act(3, 1002, 0); /* I % 4 == 2: the narrow kernel of EPT 1 / 2 (candidate lines), else the scalar one */
	test_act(4, 13, 0);   /* I % 8 != 0: the scalar kernel */
	test_act(2, 1000, 2); /* unaligned: the scalar kernel */
}
#endif
