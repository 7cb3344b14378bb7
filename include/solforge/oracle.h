/*
 * oracle.h - the API a problem's reference oracle (problems/<family>/<name>/oracle.c) is written in.
 *
 * An oracle is one plain C file, obvious rather than fast, accumulating in double (or float where the
 * definition says so). It is compiled twice from the same source:
 *   - for the CPU by the host compiler (src/runner/oracle_cpu.c wraps it): a loop over items;
 *   - for the GPU by nvcc (src/runner/oracle_gpu.cu wraps it): one thread per item.
 * So the item function must be SF_HD, touch only its own outputs, use only bounded local memory
 * (a few KB: recompute in several passes instead of buffering a whole row), and call only SF_HD code
 * (everything in numeric.h and rng.h is).
 *
 * An oracle file defines, with these macros:
 *   SF_ORACLE_AXES("M", "N", "K")      the axes it reads, in the order they appear in c->axis[]
 *   SF_ORACLE_ITEMS(c) { ... }          int64_t: the number of independent items for this call
 *   SF_ORACLE_ITEM(c, item) { ... }     computes item `item` (0 <= item < items)
 * and optionally (host only, never compiled for the device):
 *   SF_ORACLE_GEN(g) { ... }            fills the inputs whose generator is "custom" (ragged indptr,
 *                                       page tables, ...); returns 0 or sets g->err and returns -1
 *   SF_ORACLE_WORK(c, w) { ... }        data-dependent SOL work (FLOPs per unit class, bytes) computed
 *                                       from the actual inputs; overrides the definition's expressions
 *
 * Reading and writing elements: sf_in(c, k, i) reads element i (flat row-major index) of input k as a
 * double, whatever its dtype; sf_out_set(c, k, i, v) writes output k. Reference output buffers hold
 * float outputs in float32 (float64 for float64 outputs) so the reference keeps its precision; integer
 * and bool outputs keep their dtype. An oracle that quantizes (fp8, fp4) rounds the value itself with
 * the helpers of numeric.h and stores the rounded value. Scalar inputs: c->scalar[k].
 */
#ifndef SOLFORGE_ORACLE_H
#define SOLFORGE_ORACLE_H

#include <stdint.h>
#include <stddef.h>
#include "numeric.h"
#include "rng.h"

#define SF_MAX_ARGS 16
#define SF_MAX_DIMS 8
#define SF_MAX_AXES 16

typedef struct sf_otensor {
	void *data;
	int dt;                       /* sf_dt of the buffer (reference dtype for outputs) */
	int ndim;
	int64_t shape[SF_MAX_DIMS];
	int64_t numel;
} sf_otensor;

/* Passed by value to the GPU kernel: keep it flat (no pointers to host memory besides data). */
typedef struct sf_ocall {
	int n_in, n_out, n_axis;
	sf_otensor in[SF_MAX_ARGS];
	sf_otensor out[SF_MAX_ARGS];
	double scalar[SF_MAX_ARGS];   /* value of scalar input k (shape null); 0 for tensors */
	int64_t axis[SF_MAX_AXES];    /* values of the axes named by SF_ORACLE_AXES, in that order */
} sf_ocall;

/* Argument of SF_ORACLE_GEN: the call (inputs already allocated on the host; non-custom ones filled)
 * and what the generator needs to be deterministic. */
typedef struct sf_gcall {
	sf_ocall c;
	const char *const *in_names;  /* n_in names, definition order */
	const int *is_custom;         /* n_in flags: fill input k only when is_custom[k] */
	uint64_t seed;                /* use with sf_rng_* so that the draw is reproducible */
	char err[256];
} sf_gcall;

/* Unit classes of SOL work. Keep in sync with src/core/sol.c names. */
enum {
	SF_UNIT_FP64 = 0, SF_UNIT_FP32, SF_UNIT_TF32_TENSOR, SF_UNIT_BF16_TENSOR, SF_UNIT_FP16_TENSOR,
	SF_UNIT_FP8_TENSOR, SF_UNIT_FP4_TENSOR, SF_UNIT_INT8_TENSOR, SF_UNIT_SFU, SF_UNIT_COUNT
};

typedef struct sf_work {
	double flops[SF_UNIT_COUNT];
	double bytes;                 /* < 0: keep the definition's byte count */
} sf_work;

static SF_HD inline double sf_in(const sf_ocall *c, int k, int64_t i)
{
	return sf_load(c->in[k].data, (sf_dt)c->in[k].dt, i);
}

static SF_HD inline void sf_out_set(const sf_ocall *c, int k, int64_t i, double v)
{
	sf_store(c->out[k].data, (sf_dt)c->out[k].dt, i, v);
}

#ifdef __cplusplus
#define SF_EXTERN_C_ORACLE extern "C"
#else
#define SF_EXTERN_C_ORACLE
#endif

/* Prototypes of what an oracle file defines (the macros below open the definitions). */
SF_EXTERN_C_ORACLE extern const char *const sf_oracle_axis_names[];
SF_EXTERN_C_ORACLE int64_t sf_oracle_items(const sf_ocall *c);
SF_HD void sf_oracle_item(const sf_ocall *c, int64_t item);
SF_EXTERN_C_ORACLE int sf_oracle_gen(sf_gcall *g);
SF_EXTERN_C_ORACLE void sf_oracle_work(const sf_ocall *c, sf_work *w);

#define SF_ORACLE_AXES(...) \
	SF_EXTERN_C_ORACLE const char *const sf_oracle_axis_names[] = { __VA_ARGS__, NULL }
#define SF_ORACLE_ITEMS(c) SF_EXTERN_C_ORACLE int64_t sf_oracle_items(const sf_ocall *c)
#define SF_ORACLE_ITEM(c, item) SF_HD void sf_oracle_item(const sf_ocall *c, int64_t item)
#define SF_ORACLE_GEN(g) SF_EXTERN_C_ORACLE int sf_oracle_gen(sf_gcall *g)
#define SF_ORACLE_WORK(c, w) SF_EXTERN_C_ORACLE void sf_oracle_work(const sf_ocall *c, sf_work *w)

#endif /* SOLFORGE_ORACLE_H */
