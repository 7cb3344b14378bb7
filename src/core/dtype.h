/*
 * dtype.h - host-only dtype metadata: the names a definition uses, the DLPack codes of the solution
 * ABI (include/solforge/solution.h), the safetensors dtype strings, and the dtype a reference output
 * buffer uses. The element layouts and conversions themselves live in include/solforge/numeric.h.
 */
#ifndef SF_DTYPE_H
#define SF_DTYPE_H

#include "solforge/numeric.h"
#include "solforge/solution.h"

/*
 * The dtype of a definition name: float64 float32 float16 bfloat16 float8_e4m3fn float8_e5m2
 * float4_e2m1 (alias float4_e2m1fn_x2; solforge shapes always count elements, two per byte)
 * int64 int32 int16 int8 uint8 bool. Exact, case-sensitive match; SF_DT_INVALID for anything else
 * (NULL included).
 */
sf_dt sf_dt_from_name(const char *name);

/* The canonical definition name ("float4_e2m1" for SF_DT_E2M1); "invalid" for an invalid dtype. */
const char *sf_dt_name(sf_dt dt);

/* The DLPack type of dt (lanes 1): int 0, uint 1, float 2, bfloat 4, bool 6 (8 bits),
 * float8_e4m3fn 10, float8_e5m2 12, float4_e2m1fn 17 (4 bits). {0, 0, 0} for an invalid dtype. */
sf_dtype sf_dt_to_dlpack(sf_dt dt);

/* The inverse of sf_dt_to_dlpack: code, bits and lanes (1) must all match; else SF_DT_INVALID. */
sf_dt sf_dt_from_dlpack(sf_dtype t);

/*
 * The safetensors header dtype string: F64 F32 F16 BF16 F8_E4M3 F8_E5M2 F4 I64 I32 I16 I8 U8 BOOL;
 * NULL for an invalid dtype. float4_e2m1 is "F4": the name the safetensors format itself uses since
 * 0.6 (Rust `Dtype::F4`, "MXF4" e2m1, 4 bits per element, the header shape counting elements and
 * numel * 4 required to be a multiple of 8 bits); the Python package writes it for torch's
 * float4_e2m1fn_x2 with the last dimension doubled, which is solforge's element count.
 */
const char *sf_dt_safetensors_name(sf_dt dt);

/* The inverse (exact match); SF_DT_INVALID for a name solforge does not handle (NULL included). */
sf_dt sf_dt_from_safetensors_name(const char *name);

/* The dtype of a reference output buffer for an output of dtype dt: float32 for float32 and every
 * narrower float, float64 for float64, the dtype itself for integers and bool. */
sf_dt sf_dt_reference(sf_dt dt);

#endif
