#!/usr/bin/env bash
# deps.sh - installs the Debian packages solforge's build and tests need, when they are missing.
# The CUDA toolkit (nvcc 12.4+ for sm_90a, CUPTI) is a prerequisite it cannot install: it says so.
set -u
need=()
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v make >/dev/null 2>&1 || need+=(make)
command -v clang >/dev/null 2>&1 || need+=(clang)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v pgrep >/dev/null 2>&1 || need+=(procps)
# libcurl's headers, for the openai: model client (src/agent/openai.c; the CLI builds without them, the
# client then failing with a clear error, but the tests need it)
printf '#include <curl/curl.h>\n' | "${CC:-cc}" -E - >/dev/null 2>&1 || need+=(libcurl4-openssl-dev)
# the campaign's database (header + static library) and the HTML report's rendering test
[ -f /usr/include/sqlite3.h ] || need+=(libsqlite3-dev)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# the PyTorch bridge's I/O layer and its CI suite (tests/suites/bridge.sh) need numpy (torch is optional)
python3 -c 'import numpy' >/dev/null 2>&1 || need+=(python3-numpy)
# libFuzzer's runtime for the fuzz targets
if command -v clang >/dev/null 2>&1; then
	v=$(clang --version | sed -n 's/.*version \([0-9]*\).*/\1/p' | head -1)
	printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}' >/tmp/sf-fz.c
	clang -fsanitize=fuzzer /tmp/sf-fz.c -o /tmp/sf-fz 2>/dev/null || need+=("libclang-rt-${v}-dev")
	rm -f /tmp/sf-fz /tmp/sf-fz.c
else
	need+=(libclang-rt-14-dev)
fi
if ((${#need[@]})); then
	echo "deps: installing ${need[*]}"
	if [ "$(id -u)" != 0 ]; then
		echo "deps: not root; run: sudo apt-get install -y ${need[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null && apt-get install -y -qq "${need[@]}" >/dev/null || {
		echo "deps: apt-get install ${need[*]} failed" >&2
		exit 1
	}
fi
# the Debian package serves /usr/bin/python3; a python3 of its own (pyenv, a venv) earlier on PATH
# still lacks numpy: install it there with that interpreter's pip
if ! python3 -c 'import numpy' >/dev/null 2>&1; then
	echo "deps: installing numpy for $(command -v python3) with pip"
	python3 -m pip install -q numpy >/dev/null 2>&1 || {
		echo "deps: pip install numpy for $(command -v python3) failed" >&2
		exit 1
	}
fi
if ! command -v nvcc >/dev/null 2>&1; then
	for d in /usr/local/cuda/bin /usr/local/cuda-13/bin /usr/local/cuda-12/bin; do
		[ -x "$d/nvcc" ] && { echo "deps: nvcc is at $d; add it to PATH" >&2; break; }
	done
	echo "deps: the CUDA toolkit (nvcc) is required to compile the CUDA sources; install it from NVIDIA" >&2
	exit 1
fi
exit 0
