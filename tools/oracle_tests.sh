#!/usr/bin/env bash
# oracle_tests.sh - builds and runs every problem's oracle unit tests (problems/*/*/test_oracle.c),
# each in its own executable with tests/unit/main.c. Extra compiler flags come from $OT_CFLAGS
# (e.g. sanitizers). Closes with the summed "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
out=${BUILD:-build}/oracle-tests
mkdir -p "$out"
cc=${CC:-cc}
P=0 F=0
for t in problems/*/*/test_oracle.c problems/common/oracles/test_*.c; do
	d=$(dirname "$t")
	name=$(basename "$d")
	[ "$name" = oracles ] && name=$(basename "$t" .c)
	mkdir -p "$out/$name"
	grep -ho 'SF_TEST([a-z0-9_]*)' "$t" | sed 's/SF_TEST(\(.*\))/X(\1)/' >"$out/$name/all_tests.h"
	# shellcheck disable=SC2086
	if ! $cc -std=c11 -D_GNU_SOURCE -O1 -g -ffp-contract=off -Wall -Wextra -Wshadow -Wstrict-prototypes \
		-Wmissing-prototypes -Wformat=2 -Wvla -Werror ${OT_CFLAGS:-} -Iinclude -Isrc -I"$out/$name" \
		tests/unit/main.c "$t" -o "$out/$name/t" -lm >"$out/$name/build.log" 2>&1; then
		echo "FAIL $name: does not build"
		sed 's/^/    /' "$out/$name/build.log" | head -20
		F=$((F + 1))
		continue
	fi
	log=$("$out/$name/t" 2>&1)
	rc=$?
	line=$(echo "$log" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
	p=$(echo "$line" | cut -d' ' -f1)
	f=$(echo "$line" | cut -d' ' -f3)
	if [ -z "$line" ] || [ $rc -ne 0 ]; then
		echo "FAIL $name"
		echo "$log" | sed 's/^/    /' | tail -20
		[ -z "$line" ] && f=$((${f:-0} + 1))
	fi
	P=$((P + ${p:-0}))
	F=$((F + ${f:-0}))
done
echo "$P passed, $F failed"
[ "$F" = 0 ]
