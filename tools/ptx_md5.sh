#!/usr/bin/env bash
# ptx_md5.sh - which kernels of a CUDA source a change touched: compiles SRC to PTX for sm_90a (the
# evaluator's -std=c++17 -O3, plus any extra nvcc flags, e.g. -D knobs) and prints one line per PTX
# entry, "NAME md5" (12 hex digits of the entry's text), plus "header md5" for the text before the
# first entry. Run it before and after an edit (or with and without a knob) and diff the two lists.
# No GPU needed (nvcc only).
#   tools/ptx_md5.sh problems/llama/rmsnorm_h4096/solutions/fast.cu [-DRMS_SUM_UNROLL=0 ...]
set -u
cd "$(dirname "$0")/.." || exit 2
[ $# -ge 1 ] || {
	echo "usage: tools/ptx_md5.sh SRC [nvcc flags]" >&2
	exit 2
}
src=$1
shift
tmp=$(mktemp /tmp/ptx_md5.XXXXXX)
trap 'rm -f "$tmp"' EXIT
"${NVCC:-nvcc}" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -ptx "$@" "$src" -o "$tmp" || {
	echo "ptx_md5: nvcc failed on $src" >&2
	exit 1
}
python3 - "$tmp" <<'PY'
import hashlib, re, sys
text = open(sys.argv[1]).read()
parts = re.split(r"(?m)^(?=(?:\.visible |\.weak )?\.entry\s)", text)
print("header", hashlib.md5(parts[0].encode()).hexdigest()[:12])
for p in parts[1:]:
    name = re.search(r"\.entry\s+(\w+)", p).group(1)
    print(name, hashlib.md5(p.encode()).hexdigest()[:12])
PY
