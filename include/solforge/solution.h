/*
 * solution.h - the whole solution ABI of solforge.
 *
 * A solution is one C (.c, cpu backend) or CUDA C (.cu, cuda backend) source file that includes this
 * header and nothing of the harness. It exports one function with C linkage (default name `run`):
 *
 *     SF_EXPORT int run(const sf_call *call);
 *
 * Destination-passing: the harness allocates every output; the solution writes them. Inputs come in
 * definition order (definition.json "inputs"), outputs in definition order ("outputs").
 *
 * Tensors are DLPack-compatible: sf_tensor has the layout of DLTensor (dlpack.h >= 0.6), sf_device of
 * DLDevice and sf_dtype of DLDataType, so a pointer to one may be cast to the other. Tensors are dense
 * and row-major (strides == NULL), byte_offset is 0, data points to device memory on the cuda backend
 * (device_type SF_DEVICE_CUDA) and to host memory on the cpu backend (SF_DEVICE_CPU).
 *
 * Scalar inputs (shape null in the definition) are passed as an sf_tensor with ndim == 0 and
 * data == NULL; their value is call->scalars[i] (a double; integer scalars are exact up to 2^53).
 * For tensor inputs scalars[i] is NaN.
 *
 * float4_e2m1 tensors hold two values per byte, element 2k in the low nibble of byte k; shape[] counts
 * elements (the last dimension is even). Dtype codes follow DLPack 1.x where it defines them.
 *
 * Ownership: everything reachable from `call` belongs to the harness and lives for the call only.
 * The solution must not keep pointers to inputs or outputs between calls, must not modify inputs,
 * and must finish all its work on call->stream (or synchronously) before returning: work left on
 * another stream or thread is a reward hack (docs/security.md).
 *
 * Return SF_OK (0) on success; any other value is reported as RUNTIME_ERROR with that code.
 */
#ifndef SOLFORGE_SOLUTION_H
#define SOLFORGE_SOLUTION_H

#include <stdint.h>

#define SF_ABI_VERSION 1u

#ifdef __cplusplus
#define SF_EXTERN_C extern "C"
#else
#define SF_EXTERN_C
#endif
#define SF_EXPORT SF_EXTERN_C __attribute__((visibility("default")))

/* DLDeviceType values */
enum { SF_DEVICE_CPU = 1, SF_DEVICE_CUDA = 2 };

/* DLDataTypeCode values (DLPack 1.1 numbering for the float8 / float4 codes) */
enum {
	SF_CODE_INT = 0,
	SF_CODE_UINT = 1,
	SF_CODE_FLOAT = 2,
	SF_CODE_BFLOAT = 4,
	SF_CODE_BOOL = 6,
	SF_CODE_FLOAT8_E4M3FN = 10,
	SF_CODE_FLOAT8_E5M2 = 12,
	SF_CODE_FLOAT4_E2M1FN = 17
};

typedef struct sf_device {
	int32_t device_type; /* SF_DEVICE_* */
	int32_t device_id;
} sf_device;

typedef struct sf_dtype {
	uint8_t code;   /* SF_CODE_* */
	uint8_t bits;   /* 4, 8, 16, 32 or 64 */
	uint16_t lanes; /* always 1 */
} sf_dtype;

typedef struct sf_tensor {
	void *data;
	sf_device device;
	int32_t ndim;
	sf_dtype dtype;
	int64_t *shape;
	int64_t *strides; /* NULL: dense row-major */
	uint64_t byte_offset;
} sf_tensor;

typedef struct sf_call {
	uint32_t abi_version;      /* SF_ABI_VERSION */
	int32_t n_inputs;
	const sf_tensor *inputs;   /* definition order */
	const double *scalars;     /* n_inputs entries: value of each scalar input, NaN otherwise */
	int32_t n_outputs;
	const sf_tensor *outputs;  /* definition order; write-only for the solution */
	void *stream;              /* cudaStream_t on the cuda backend, NULL on cpu */
} sf_call;

enum { SF_OK = 0, SF_ERR_UNSUPPORTED = 1, SF_ERR_CUDA = 2, SF_ERR_INTERNAL = 3 };

typedef int (*sf_entry_fn)(const sf_call *call);

/* Number of elements of a tensor (1 for a scalar / 0-d tensor). */
static inline int64_t sf_numel(const sf_tensor *t)
{
	int64_t n = 1;
	for (int32_t i = 0; i < t->ndim; i++)
		n *= t->shape[i];
	return n;
}

#endif /* SOLFORGE_SOLUTION_H */
