/*
 * emu_mma_test.cpp - checks the CPU emulation of the warp tensor-core primitives (emu.h's
 * emu_mma_m16n8k16_bf16 and emu_ldmatrix, reached through problems/common/kernels/sm80_warp_mma.cuh,
 * the wrappers the kernels call) against plain matrix products on random data, several seeds:
 *   - mma with fragments built by hand from the PTX ISA layouts (A 16x16, B 16x8, C 16x8) vs A.B + C;
 *   - the same product with A loaded by ldmatrix.x4 from a row-major tile, B by ldmatrix.x2 from B^T
 *     (N x K rows), by ldmatrix.x2.trans from B (K x N rows) and by two ldmatrix.x1(.trans), and a
 *     16x16 output (two n-tiles) with B by one ldmatrix.x4.trans; the tiles' rows sit at shuffled
 *     16-byte-aligned addresses (ldmatrix takes one address per row);
 *   - the decode kernel's transposed use (version 3): O^T = V^T P^T with V^T by ldmatrix.x4.trans of
 *     V rows, P^T's b[0] packed from an m16n8 accumulator layout, b[1] = 0.
 * Built and run by tests/suites/emu_mma.sh. Prints "ok CASE" / "FAIL CASE: why", then "N passed, M failed".
 */
#include "emu.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>

#include "../../problems/common/kernels/sm80_warp_mma.cuh"

static int n_pass, n_fail;

static uint16_t bf16_bits_of(float f)
{
	return __float2bfloat16_rn(f).r;
}
static float bf16_of(uint16_t b)
{
	return __uint_as_float((unsigned)b << 16);
}

/* the test data of one seed: bf16 matrices as bits, and fp32 C */
struct data {
	uint16_t A[16][16], B[16][16]; /* A: M x K; B: K x N (N up to 16: two n-tiles) */
	float C[16][16];
};

/* shared-memory image: 64 rows of 16 bytes at shuffled positions; row i of a tile lives at slot[i] */
struct rows {
	alignas(16) uint16_t mem[64][8];
	int slot[64];
};

static data dat;
static rows tA, tBt, tB, tV;
static float got[32][16]; /* per lane: results of the cases, see kernel */
static int which;         /* the case the kernel runs */

static const void *row_ptr(const rows &t, int i)
{
	return t.mem[t.slot[i]];
}

/* one warp: runs case `which`, lane results into got[lane][] */
static void kernel()
{
	const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
	float c[4], d[4], d2[4];
	for (int i = 0; i < 4; i++)
		c[i] = dat.C[g + 8 * (i >> 1)][2 * t + (i & 1)];
	uint32_t a[4], b[2];
	auto pk = [](uint16_t lo, uint16_t hi) { return (uint32_t)lo | (uint32_t)hi << 16; };
	if (which == 0) { /* fragments by hand from the documented layouts */
		a[0] = pk(dat.A[g][2 * t], dat.A[g][2 * t + 1]);
		a[1] = pk(dat.A[g + 8][2 * t], dat.A[g + 8][2 * t + 1]);
		a[2] = pk(dat.A[g][2 * t + 8], dat.A[g][2 * t + 9]);
		a[3] = pk(dat.A[g + 8][2 * t + 8], dat.A[g + 8][2 * t + 9]);
		b[0] = pk(dat.B[2 * t][g], dat.B[2 * t + 1][g]);
		b[1] = pk(dat.B[2 * t + 8][g], dat.B[2 * t + 9][g]);
	} else {
		/* A: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15);
		 * tile tA row (m, half) = A[m][8 half ..] at index 2m + half */
		const int mi = lane >> 3, m = (lane & 7) + 8 * (mi & 1), half = mi >> 1;
		ldsm<4, false>(a, row_ptr(tA, 2 * m + half));
		if (which == 1) /* B^T rows (n, k-half) at index 2n + half: matrices k 0-7, k 8-15 */
			ldsm<2, false>(b, row_ptr(tBt, 2 * (lane & 7) + ((lane >> 3) & 1)));
		else if (which == 2) /* B rows (k, n-half 0) at 2k: matrices k 0-7, k 8-15 */
			ldsm<2, true>(b, row_ptr(tB, 2 * ((lane & 15))));
		else if (which == 3) { /* two x1 loads (lanes 8..31 give unused addresses) */
			ldsm<1, false>(&b[0], row_ptr(tBt, 2 * (lane & 7)));
			ldsm<1, true>(&b[1], row_ptr(tB, 2 * (8 + (lane & 7))));
		} else { /* which 4: x4.trans: (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15) */
			uint32_t bb[4];
			const int mj = lane >> 3;
			ldsm<4, true>(bb, row_ptr(tB, 2 * ((lane & 7) + 8 * (mj & 1)) + (mj >> 1)));
			const uint32_t b1[2] = {bb[2], bb[3]};
			float c1[4];
			for (int i = 0; i < 4; i++)
				c1[i] = dat.C[g + 8 * (i >> 1)][8 + 2 * t + (i & 1)];
			mma_bf16_16816(d2, a, b1, c1);
			b[0] = bb[0];
			b[1] = bb[1];
		}
	}
	if (which == 5) { /* O^T (16 dims x 8 heads) = V^T (dims x 16 positions, 8 real) . P^T */
		uint32_t vf[4];
		ldsm<4, true>(vf, row_ptr(tV, 2 * (lane & 7) + ((lane >> 3) & 1))); /* matrices 2, 3 repeat 0, 1 */
		/* P^T b[0]: P[head g][positions 2t, 2t+1] = dat.B[2t][g] (B as P^T, positions = k) */
		const uint32_t bp[2] = {pk(dat.B[2 * t][g], dat.B[2 * t + 1][g]), 0u};
		const uint32_t av[4] = {vf[0], vf[1], 0u, 0u};
		mma_bf16_16816(d, av, bp, c);
	} else {
		mma_bf16_16816(d, a, b, c); /* d separate from c */
		mma_bf16_16816(c, a, b, c); /* in place */
		for (int i = 0; i < 4; i++)
			if (c[i] != d[i])
				d[i] = NAN; /* in-place and separate results must agree */
	}
	for (int i = 0; i < 4; i++) {
		got[lane][i] = d[i];
		got[lane][4 + i] = which == 4 ? d2[i] : 0.0f;
	}
}

static void report(const std::string &name, const std::string &why)
{
	if (why.empty()) {
		n_pass++;
		printf("ok %s\n", name.c_str());
	} else {
		n_fail++;
		printf("FAIL %s: %s\n", name.c_str(), why.c_str());
	}
}

/* fills tile t with n rows of 8 b16 from row(i), at a random permutation of its 64 slots */
template <class F> static void place(rows &t, int n, F row, std::mt19937_64 &rng)
{
	int perm[64];
	for (int i = 0; i < 64; i++)
		perm[i] = i;
	std::shuffle(perm, perm + 64, rng);
	for (int i = 0; i < 64; i++)
		for (int e = 0; e < 8; e++)
			t.mem[i][e] = 0x7fc0; /* NaN: a row read that was never placed poisons the result */
	for (int i = 0; i < n; i++) {
		t.slot[i] = perm[i];
		row(i, t.mem[perm[i]]);
	}
}

static void run_seed(unsigned seed)
{
	std::mt19937_64 rng(seed);
	std::normal_distribution<float> nd(0.0f, 1.0f);
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 16; j++) {
			dat.A[i][j] = bf16_bits_of(nd(rng));
			dat.B[i][j] = bf16_bits_of(nd(rng));
			dat.C[i][j] = nd(rng);
		}
	place(tA, 32, [](int i, uint16_t *r) { for (int e = 0; e < 8; e++) r[e] = dat.A[i / 2][8 * (i % 2) + e]; }, rng);
	place(tBt, 32, [](int i, uint16_t *r) { for (int e = 0; e < 8; e++) r[e] = dat.B[8 * (i % 2) + e][i / 2]; }, rng);
	place(tB, 32, [](int i, uint16_t *r) { for (int e = 0; e < 8; e++) r[e] = dat.B[i / 2][8 * (i % 2) + e]; }, rng);
	/* V rows = positions 0..7 (A's rows as V: V[p][dim] = A[p][dim], dims 0..15), index 2p + dim-half */
	place(tV, 16, [](int i, uint16_t *r) { for (int e = 0; e < 8; e++) r[e] = dat.A[i / 2][8 * (i % 2) + e]; }, rng);
	const char *names[] = {"by-hand", "ldsm-x4-A-x2-Bt", "ldsm-x4-A-x2t-B", "ldsm-x4-A-x1-x1t", "ldsm-x4-A-x4t-B",
			       "decode-vt-pt"};
	for (which = 0; which < 6; which++) {
		emu_launch(1, 32, kernel);
		std::string why;
		for (int lane = 0; lane < 32 && why.empty(); lane++) {
			const int g = lane >> 2, t = lane & 3;
			for (int i = 0; i < (which == 4 ? 8 : 4) && why.empty(); i++) {
				const int r = g + 8 * ((i & 3) >> 1), n = 2 * t + (i & 1) + (i >= 4 ? 8 : 0);
				double want = dat.C[r][n];
				if (which == 5) /* O^T[dim r][head n] = sum over positions p < 8 of V[p][r] P[n][p] */
					for (int p = 0; p < 8; p++)
						want += (double)bf16_of(dat.A[p][r]) * bf16_of(dat.B[p][n]);
				else
					for (int k = 0; k < 16; k++)
						want += (double)bf16_of(dat.A[r][k]) * bf16_of(dat.B[k][n]);
				const double gv = got[lane][i];
				if (!(std::fabs(gv - want) <= 1e-5 * (1.0 + std::fabs(want)))) {
					char m[160];
					snprintf(m, sizeof m, "lane %d element (%d, %d): got %.7g, want %.7g", lane, r, n, gv, want);
					why = m;
				}
			}
		}
		report(std::string(names[which]) + " seed " + std::to_string(seed), why);
	}
}

int main(int argc, char **argv)
{
	const unsigned base = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1u;
	for (unsigned s = 0; s < 5; s++)
		run_seed(base + 7919u * s);
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
