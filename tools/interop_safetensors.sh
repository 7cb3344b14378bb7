#!/bin/sh
# interop_safetensors.sh - checks solforge's safetensors reader and writer against the reference
# Python package, both ways: a file sf_st_write wrote is read and checked value by value with
# `safetensors` + numpy (tests/interop/check_safetensors.py), and a file the Python package wrote is
# read and checked with sf_st_read (tests/interop/st_interop.c). Independent of the unit tests.
# Needs python3 with `safetensors` (0.6 or later, for float4 "F4") and `numpy`; prints SKIPPED and
# exits 0 without them. Exit status 1 on any mismatch. PYTHON and CC override the tools.
set -eu
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
CC=${CC:-cc}
if ! "$PY" -c 'import safetensors, numpy' >/dev/null 2>&1; then
	echo "interop safetensors: SKIPPED (needs $PY with the safetensors and numpy packages)"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
"$CC" -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -Iinclude -Isrc -o "$tmp/st_interop" \
	tests/interop/st_interop.c src/core/safetensors.c src/core/dtype.c src/core/json_parse.c \
	src/core/json_scalar.c src/core/json_write.c src/core/util.c -lm
fail=0
"$tmp/st_interop" write "$tmp/from_c.safetensors"
if "$PY" tests/interop/check_safetensors.py check "$tmp/from_c.safetensors" solforge; then
	echo "interop safetensors: python reads solforge's file: ok"
else
	echo "interop safetensors: python reads solforge's file: FAILED"
	fail=1
fi
"$PY" tests/interop/check_safetensors.py write "$tmp/from_py.safetensors"
if "$tmp/st_interop" check "$tmp/from_py.safetensors" python; then
	echo "interop safetensors: solforge reads python's file: ok"
else
	echo "interop safetensors: solforge reads python's file: FAILED"
	fail=1
fi
[ "$fail" = 0 ] && echo "interop safetensors: ok"
exit "$fail"
