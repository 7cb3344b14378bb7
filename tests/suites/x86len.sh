#!/usr/bin/env bash
# tests/suites/x86len.sh - the x86-64 decoder of the raw-system-call check (src/core/x86len.c,
# docs/security.md "raw system calls") on real code.
#
# 1. Instruction starts of the check's sweep against objdump -d on whole .text sections (the
#    solforge binaries, libc, libstdc++, libm, system libraries picked at random, solutions built
#    here with cc and nvcc, among them the fused_add_rmsnorm build the old byte scan rejected) and on
#    random functions of a large CUDA library; every start must match (objdump blocks holding data
#    are skipped, tests/x86/compare_objdump.py).
# 2. The import check on built shared objects (tests/x86/asm_cases.c): 0F 05 / 0F 34 / CD 80 inside
#    immediates pass; a real syscall, a jump, a RIP-relative LEA and a relocated pointer in data into
#    an instruction whose bytes are a syscall are flagged; the red-team fixture raw_syscall_fork.c is flagged as before and its
#    declared twin is not (statically).
# Prints `ok NAME` / `FAIL NAME: why` and ends with `N passed, M failed`. Environment: BUILD,
# X86LEN_SEED (the random picks; printed), X86LEN_NVCC=0 to skip the nvcc builds.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
PASS=0
FAILN=0
ok() { echo "ok $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1: $2"; FAILN=$((FAILN + 1)); }
if [ ! -f "$BUILD/libsolforge.a" ] || ! command -v objdump >/dev/null || ! command -v python3 >/dev/null; then
	echo "x86len.sh: needs $BUILD/libsolforge.a (run make), objdump and python3" >&2
	echo "0 passed, 1 failed"
	exit 2
fi
TMP=$(mktemp -d /tmp/solforge-x86len.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
SEED=${X86LEN_SEED:-$(( $(date +%s) % 1000000 ))}
echo "x86len: seed $SEED (rerun with X86LEN_SEED=$SEED)"
CFLAGS=(-std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Iinclude -Isrc)
cc "${CFLAGS[@]}" tests/x86/sweep_dump.c "$BUILD/libsolforge.a" -lm -ldl -lpthread -o "$TMP/sweep_dump" &&
	cc "${CFLAGS[@]}" tests/x86/imports_check.c "$BUILD/libsolforge.a" -lm -ldl -lpthread -o "$TMP/imports_check" ||
	{ echo "FAIL build: the test tools do not build"; echo "0 passed, 1 failed"; exit 1; }

# compare NAME FILE SECTION [--funcs N --seed S]
compare() {
	local name=$1
	shift
	local out
	out=$(python3 tests/x86/compare_objdump.py "$TMP/sweep_dump" "$@" 2>&1)
	local rc=$?
	echo "    $out" | head -n 7
	if [ $rc = 0 ]; then ok "$name"; else fail "$name" "boundaries differ from objdump (or the tools failed)"; fi
}

# 1. boundaries against objdump
compare solforge "$BUILD/solforge" .text
compare solforge_plt "$BUILD/solforge" .plt
[ -x "$BUILD/solforge-runner-cpu" ] && compare runner_cpu "$BUILD/solforge-runner-cpu" .text
LIBDIR=/usr/lib/x86_64-linux-gnu
for lib in libc.so.6 libstdc++.so.6 libm.so.6; do
	[ -f "$LIBDIR/$lib" ] && compare "$lib" "$LIBDIR/$lib" .text
done
# system libraries at random (regular files under 20 MiB)
mapfile -t LIBS < <(find "$LIBDIR" -maxdepth 1 -type f -name '*.so*' -size -20M | sort |
	shuf -n 4 --random-source=<(yes "$SEED"))
for lib in "${LIBS[@]}"; do
	readelf -SW "$lib" 2>/dev/null | grep -q ' \.text ' && compare "random:$(basename "$lib")" "$lib" .text
done
# solutions built as the evaluator builds them (backend.c, backend_cuda.c)
for src in tools/calibration/copy/solutions/copy.c problems/llama/rmsnorm_h4096/solutions/tuned.c; do
	so=$TMP/$(basename "$src" .c).so
	if cc -std=c11 -O2 -fPIC -shared -Iinclude "$src" -o "$so" -lm 2>"$TMP/cc.log"; then
		compare "solution:$src" "$so" .text
	else
		fail "solution:$src" "does not build: $(head -c 300 "$TMP/cc.log")"
	fi
done
NVCCF=(-std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared -Iinclude -cudart shared)
if [ "${X86LEN_NVCC:-1}" != 0 ] && command -v nvcc >/dev/null; then
	# the build the old byte scan rejected on the H200 (its host code differs there: compiler versions)
	FA=problems/llama/fused_add_rmsnorm_h4096/solutions/fast.cu
	if nvcc "${NVCCF[@]}" -DRMS_SMALL_T=256 "$FA" -o "$TMP/fa.so" 2>"$TMP/nvcc.log"; then
		compare "solution:fast.cu RMS_SMALL_T=256" "$TMP/fa.so" .text
		r=$("$TMP/imports_check" "$TMP/fa.so" "$FA")
		[ "${r%% *}" = 0 ] && ok "import_check:fused_add fast.cu" || fail "import_check:fused_add fast.cu" "$r"
	else
		fail "solution:$FA" "does not build: $(head -c 300 "$TMP/nvcc.log")"
	fi
	mapfile -t CUS < <(ls problems/*/*/solutions/*.cu | shuf -n 2 --random-source=<(yes "$SEED"))
	for src in "${CUS[@]}"; do
		so=$TMP/cu_$(echo "$src" | tr '/' '_').so
		if nvcc "${NVCCF[@]}" "$src" -o "$so" 2>"$TMP/nvcc.log"; then
			compare "solution:$src" "$so" .text
		else
			echo "    (skipped $src: it does not build alone here: $(head -c 200 "$TMP/nvcc.log"))"
		fi
	done
	for lib in /usr/local/cuda/lib64/libnvrtc.so /usr/local/cuda/lib64/libcublas.so; do
		[ -f "$lib" ] && compare "random-functions:$(basename "$lib")" "$lib" .text --funcs 25 --seed "$SEED"
	done
fi

# 2. the import check on built objects: CASE EXPECT_RC MESSAGE_RE
check_case() {
	local c=$1 want=$2 re=$3 so=$TMP/case$1.so
	if ! cc -std=c11 -O2 -fPIC -shared -DCASE="$c" tests/x86/asm_cases.c -o "$so" 2>"$TMP/cc.log"; then
		fail "asm_case$c" "does not build: $(head -c 300 "$TMP/cc.log")"
		return
	fi
	# the object must hold the byte pattern at all (else case 1 proves nothing)
	if ! python3 -c "import sys; d=open(sys.argv[1],'rb').read(); sys.exit(0 if b'\x0f\x05' in d else 1)" "$so"; then
		fail "asm_case$c" "the built object holds no 0F 05 bytes"
		return
	fi
	local r
	r=$("$TMP/imports_check" "$so")
	if [ "${r%% *}" != "$want" ]; then
		fail "asm_case$c" "import check returned ${r%% *}, expected $want: $r"
	elif [ -n "$re" ] && ! grep -Eq -- "$re" <<<"$r"; then
		fail "asm_case$c" "the finding does not match /$re/: $r"
	else
		ok "asm_case$c (rc $want)"
	fi
}
check_case 1 0 ''
check_case 2 1 'has a raw system-call instruction at offset 0x[0-9a-f]+ \(static'
check_case 3 1 'raw system-call instruction at offset 0x[0-9a-f]+ \(a branch into the middle of an instruction at offset'
check_case 4 1 'raw system-call instruction at offset 0x[0-9a-f]+ \(a branch into the middle of an instruction at offset'
check_case 5 1 'raw system-call instruction at offset 0x[0-9a-f]+ \(a branch into the middle of an instruction at offset'
for f in raw_syscall_fork raw_syscall_fork_declared; do
	src=tests/redteam/cpu/$f.c
	want=1
	[ $f = raw_syscall_fork_declared ] && want=0 # declared: the seccomp filter catches it at run time
	if cc -std=c11 -O2 -fPIC -shared -Iinclude "$src" -o "$TMP/$f.so" -lm 2>"$TMP/cc.log"; then
		r=$("$TMP/imports_check" "$TMP/$f.so" "$src")
		if [ "${r%% *}" = "$want" ] && { [ $want = 0 ] || grep -q 'raw system-call instruction' <<<"$r"; }; then
			ok "fixture:$f (rc $want)"
		else
			fail "fixture:$f" "import check: $r (expected rc $want)"
		fi
	else
		fail "fixture:$f" "does not build: $(head -c 300 "$TMP/cc.log")"
	fi
done

echo "$PASS passed, $FAILN failed"
[ "$FAILN" = 0 ]
