#!/usr/bin/env bash
# tests/suites/openai.sh - the openai: chat-completions client (src/agent/openai.c) against a local
# fake server (tests/agent/fake_openai.py) that streams, rate-limits, fails, breaks and stalls.
#
# Builds the driver tests/agent/openai_test.c three ways under $BUILD/tests/agent/: with libcurl,
# with libcurl under ASan+UBSan, and without libcurl (the clear-error mode); runs every case of
# tests/agent/openai_cases.py with the first two (three random seeds each, printed; OPENAI_SEEDS="1 2"
# to repeat some). Needs the libcurl headers (tools/deps.sh installs libcurl4-openssl-dev).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
BUILD=${BUILD:-build}
OUTD=$BUILD/tests/agent
mkdir -p "$OUTD"
CC=${CC:-cc}
FLAGS=(-std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
	-Wpointer-arith -Wformat=2 -Wvla -Wno-unused-parameter -Wno-format-truncation -Werror -Iinclude -Isrc)
SRCS=(tests/agent/openai_test.c src/agent/openai.c src/core/util.c src/core/json_parse.c src/core/json_scalar.c
	src/core/json_write.c)
LIBS=(-lm -lpthread)
P=0 F=0

build() { # NAME ARGS...: compiles the driver; one case
	local name=$1
	shift
	if "$CC" "${FLAGS[@]}" "$@" >"$OUTD/$name.log" 2>&1; then
		P=$((P + 1))
		echo "ok build-$name"
	else
		F=$((F + 1))
		echo "FAIL build-$name: $(head -20 "$OUTD/$name.log")"
	fi
}

if ! printf '#include <curl/curl.h>\n' | "$CC" -E - >/dev/null 2>&1; then
	echo "FAIL libcurl headers: <curl/curl.h> not found (tools/deps.sh installs libcurl4-openssl-dev)"
	echo "0 passed, 1 failed"
	exit 1
fi
build openai-test -DSF_HAVE_CURL -o "$OUTD/openai_test" "${SRCS[@]}" -lcurl "${LIBS[@]}"
build openai-test-asan -DSF_HAVE_CURL -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer -o "$OUTD/openai_test_asan" "${SRCS[@]}" -lcurl "${LIBS[@]}"
build openai-test-nocurl -o "$OUTD/openai_test_nocurl" "${SRCS[@]}" "${LIBS[@]}"

# prints the cases' lines, adds their counts
run_cases() {
	local log=$OUTD/$1.log
	shift
	"$@" >"$log" 2>&1
	local rc=$? line
	sed -n 's/^\(ok\|FAIL\) /\1 '"${log##*/}"': /p; /^seeds:/p' "$log"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
	if [ -z "$line" ]; then
		F=$((F + 1))
		echo "FAIL $log: no counts (exit $rc)"
		tail -20 "$log"
		return
	fi
	P=$((P + $(echo "$line" | cut -d' ' -f1)))
	F=$((F + $(echo "$line" | cut -d' ' -f3)))
}
# shellcheck disable=SC2086
if [ -x "$OUTD/openai_test" ]; then
	run_cases cases env NOCURL_DRIVER="$OUTD/openai_test_nocurl" python3 tests/agent/openai_cases.py \
		"$OUTD/openai_test" ${OPENAI_SEEDS:-}
fi
if [ -x "$OUTD/openai_test_asan" ]; then
	run_cases cases-asan env ASAN_OPTIONS=detect_leaks=1 python3 tests/agent/openai_cases.py \
		"$OUTD/openai_test_asan" ${OPENAI_SEEDS:-}
fi
echo "$P passed, $F failed"
[ "$F" = 0 ]
