#!/usr/bin/env bash
# sass.sh - the SASS of a CUDA solution on a machine without a GPU (and without cuobjdump in its toolkit):
# compiles FILE as the evaluator does (nvcc -O3, sm_90a, -I include; extra -D flags pass through) to a cubin and
# disassembles it with cuobjdump and nvdisasm from PyPI's nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm wheels, unpacked
# once into .devtools/ (ignored by git). With -k REGEX only the functions whose mangled name matches are printed.
#
#   tools/sass.sh problems/llama/silu_and_mul_i14336/solutions/fast.cu [-k flat_kernel_ci] [-D SM_EXACT=0 ...]
#
# (Session 23 read torch.compile's silu kernel beside ours this way: the first load 15 instructions in against 25.)
set -eu
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: tools/sass.sh FILE.cu [-k REGEX] [-D NAME=VALUE ...]" >&2; exit 2; }
src=$1
shift
pat=
defs=()
while [ $# -gt 0 ]; do
	case $1 in
	-k) pat=$2; shift 2 ;;
	-D) defs+=("-D$2"); shift 2 ;;
	-D*) defs+=("$1"); shift ;;
	*) echo "sass.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
tools=$ROOT/.devtools
# fetch NAME: PyPI's nvidia-cuda-NAME wheel unpacked into .devtools (once); prints the binary's path
fetch() {
	local b
	b=$(find "$tools" -type f -name "$1" 2>/dev/null | head -1)
	if [ -z "$b" ]; then
		mkdir -p "$tools"
		(cd "$tools" && python3 -m pip download -q --no-deps "nvidia-cuda-$1" >&2 &&
			python3 -m zipfile -e nvidia_cuda_"$1"-*.whl . && rm -f ./*.whl)
		b=$(find "$tools" -type f -name "$1" | head -1)
		[ -n "$b" ] || { echo "sass.sh: no $1 in the nvidia-cuda-$1 wheel" >&2; exit 1; }
		chmod +x "$b"
	fi
	echo "$b"
}
cuobjdump=$(command -v cuobjdump || true)
if [ -z "$cuobjdump" ] || ! command -v nvdisasm >/dev/null; then
	cuobjdump=$(fetch cuobjdump)
	nvdisasm=$(fetch nvdisasm)
	PATH=$(dirname "$nvdisasm"):$PATH
fi
tmp=$(mktemp -d /tmp/sass.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I"$ROOT/include" "${defs[@]}" -cubin "$src" -o "$tmp/k.cubin"
"$cuobjdump" -sass "$tmp/k.cubin" >"$tmp/k.sass"
if [ -z "$pat" ]; then
	cat "$tmp/k.sass"
else
	awk -v pat="$pat" '/Function : /{on = ($0 ~ pat)} on' "$tmp/k.sass"
fi
