/*
 * mb_rms_ref_so.cpp - the CPU reference of tools/membench/rmsnorm.cu's mb_rms_ref_host, built with g++
 * as a host-only shared library (no CUDA), so tests/membench/rmsbench_py_test.py can drive
 * tools/membench/rmsbench.py's validation through the same ctypes signature the GPU bench uses.
 * Build: g++ -std=c++17 -O2 -shared -fPIC -Itools/membench tests/membench/mb_rms_ref_so.cpp -o mb_rms_ref.so
 */
#include "mb_host.h"

extern "C" {
/* x [rows, H], w [H] bf16 bits -> out [rows, H] float (see mb_rms_ref) */
void mb_rms_ref_host(const uint16_t *x, const uint16_t *w, float *out, int64_t rows, int64_t H, float eps)
{
	mb_rms_ref(x, w, out, rows, H, eps);
}
}
