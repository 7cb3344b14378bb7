#!/usr/bin/env bash
# solution_includes.sh - the compile cache of a bare-file solution is keyed on the files it pulls in with
# #include "relative/path" (src/core/solution.c), so editing a shared header (e.g.
# problems/common/kernels/gemm_bf16_sm90_*.cuh) rebuilds the solutions that include it. Uses the cpu
# backend (no GPU needed): a solution including a two-level chain of local headers is prepared, then each
# header is edited in turn (must recompile), then nothing is edited (must be a cache hit).
set -u
cd "$(dirname "$0")/../.."
S=${BUILD:-build}/solforge
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SOLFORGE_CACHE=$tmp/cache
pass=0
fail=0
check() { # name, wanted word (compiled|cached)
	got=$($S eval problems/llama/rmsnorm_h4096 "$tmp/src/sol.c" --backend cpu --prepare-only 2>&1 | awk '/^solution/ {print $2}')
	if [ "$got" = "$2" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $1: solution $got, wanted $2"; fi
}
mkdir -p "$tmp/src/sub"
cat >"$tmp/src/sol.c" <<'C'
/* sol.c - test solution including local headers */
#include "solforge/solution.h"
#include "sub/a.h"
SF_EXPORT int run(const sf_call *call) { (void)call; return A_VAL; }
C
printf '#include "b.h"\n#define A_VAL (B_VAL - %d)\n' "$RANDOM" >"$tmp/src/sub/a.h"
printf '#define B_VAL %d\n' "$RANDOM" >"$tmp/src/sub/b.h"
check "first build" compiled
check "unchanged" cached
echo '/* edited */' >>"$tmp/src/sub/a.h"
check "direct include edited" compiled
echo '/* edited */' >>"$tmp/src/sub/b.h"
check "nested include edited" compiled
check "unchanged again" cached
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
