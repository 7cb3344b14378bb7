#!/usr/bin/env bash
# gpu_inductor_dump.sh - torch.compile's generated kernels for baseline entries, for reading beside ours (GPU machine
# with torch). DUMP_CASES: space-separated MODULE:ENTRY:SHAPES (tools/inductor_dump.py), default the silu_and_mul
# shapes where torch.compile ties or beats us (t33, t64) and t1024. Each case gets its own inductor and Triton cache
# under $OUT/NAME/ (NAME = ENTRY_SHAPES); what comes back: the generated Triton source (*.py with @triton.jit), the
# PTX, the SASS of each cubin (cuobjdump -sass) and the launch metadata (*.json), the caches themselves removed.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-inductor-dump}
mkdir -p "$out"
CASES=${DUMP_CASES:-"act:silu_and_mul:33x28672 act:silu_and_mul:64x28672 act:silu_and_mul:1024x28672"}
for c in $CASES; do
	IFS=: read -r mod entry shapes <<<"$c"
	name="${entry}_${shapes//[+x]/_}"
	d="$out/$name"
	mkdir -p "$d/keep"
	TORCHINDUCTOR_CACHE_DIR="$d/inductor" TRITON_CACHE_DIR="$d/triton" \
		python3 tools/inductor_dump.py "$mod" "$entry" "$shapes" >"$d/log.txt" 2>&1
	echo "$name: rc $? $(tail -1 "$d/log.txt")"
	# the kernels' own files (inductor's generated module repeats them inside its `call` wrapper: not kept)
	grep -rl "@triton.jit" "$d/inductor" --include='*.py' 2>/dev/null | while read -r f; do
		grep -q "^def call(" "$f" || cp "$f" "$d/keep/"
	done
	find "$d/triton" -name '*.ptx' -exec cp {} "$d/keep/" \; 2>/dev/null
	find "$d/triton" -name '*.json' -size -64k -exec cp {} "$d/keep/" \; 2>/dev/null
	find "$d/triton" -name '*.cubin' 2>/dev/null | while read -r f; do
		cuobjdump -sass "$f" >"$d/keep/$(basename "$f").sass" 2>&1
	done
	rm -rf "$d/inductor" "$d/triton"
	ls "$d/keep" | sed "s|^|    |"
done
