# solforge build. `make` builds the CLI and the cpu runner (and the cuda runner where nvcc exists);
# `make test` builds and runs every test CI runs; `make gpu-check` runs the GPU-side checks.
# Out-of-tree: BUILD=dir selects the build folder; SAN=1 builds with ASan+UBSan.

BUILD ?= build
CC ?= cc
NVCC ?= nvcc
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(shell command -v $(NVCC) 2>/dev/null))
SM ?= -gencode=arch=compute_90a,code=sm_90a

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith \
	-Wformat=2 -Wvla -Wno-unused-parameter -Wno-format-truncation -Werror
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -O2 -g -ffp-contract=off -fno-strict-aliasing $(WARN) \
	-Iinclude -Isrc
ifeq ($(SAN),1)
CFLAGS_BASE += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDSAN := -fsanitize=address,undefined
endif
CFLAGS ?=
ALL_CFLAGS := $(CFLAGS_BASE) $(CFLAGS)
LDLIBS := -lm -ldl -lpthread

CORE_SRC := $(wildcard src/core/*.c)
CLI_SRC := $(wildcard src/cli/*.c)
CORE_OBJ := $(CORE_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)

# src/agent: the model clients, linked into the CLI only (never into a runner). The openai: client
# uses libcurl when its headers are found; without them it builds, and fails at run time saying so.
AGENT_SRC := $(wildcard src/agent/*.c)
AGENT_OBJ := $(AGENT_SRC:%.c=$(BUILD)/%.o)
HAVE_CURL := $(shell printf '\043include <curl/curl.h>\n' | $(CC) -E - >/dev/null 2>&1 && echo 1)
ifeq ($(HAVE_CURL),1)
$(AGENT_OBJ): ALL_CFLAGS += -DSF_HAVE_CURL
CLI_LDLIBS += -lcurl
endif
CLI_OBJ += $(AGENT_OBJ)
TEST_SRC := $(wildcard tests/unit/*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)

# SQLite, for the campaign (only the solforge CLI links it; the runners never do). The system's
# sqlite3.h with libsqlite3.a linked statically where it exists; else .devdeps/ (tools/devdeps.sh
# copies both there, for machines without the -dev package); SQLITE_CFLAGS / SQLITE_LIBS override.
# Without any, the CLI builds without the campaign and `campaign`/`report` say so.
SQLITE_A := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libsqlite3.a /usr/lib/aarch64-linux-gnu/libsqlite3.a \
	/usr/lib64/libsqlite3.a /usr/lib/libsqlite3.a /usr/local/lib/libsqlite3.a))
ifeq ($(origin SQLITE_LIBS),undefined)
ifneq ($(wildcard /usr/include/sqlite3.h),)
SQLITE_CFLAGS ?=
SQLITE_LIBS := $(if $(SQLITE_A),$(SQLITE_A),-lsqlite3)
else ifneq ($(wildcard .devdeps/sqlite3.h),)
SQLITE_CFLAGS ?= -I.devdeps
SQLITE_LIBS := .devdeps/libsqlite3.a
else
SQLITE_LIBS :=
endif
endif
ifeq ($(strip $(SQLITE_LIBS)),)
CLI_CFLAGS := -DSF_NO_SQLITE
CAMPAIGN_SRC :=
else
CLI_CFLAGS := $(SQLITE_CFLAGS)
CAMPAIGN_SRC := $(wildcard src/campaign/*.c)
endif
CAMPAIGN_OBJ := $(CAMPAIGN_SRC:%.c=$(BUILD)/%.o)

# core files the runners need (no JSON-free dependency on the CLI)
RUNNER_CORE := src/core/util.c src/core/json_parse.c src/core/json_scalar.c src/core/json_write.c src/core/dtype.c \
	src/core/safetensors.c src/core/job.c

BIN := $(BUILD)/solforge $(BUILD)/solforge-runner-cpu $(BUILD)/solforge-inputs
ifneq ($(CUDA_HOME),)
BIN += $(BUILD)/solforge-runner-cuda
endif

.PHONY: all test unit asan cuda-check gpu-check clean fuzz diag-runner
all: $(BIN)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libsolforge.a: $(CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(CLI_OBJ) $(CAMPAIGN_OBJ): ALL_CFLAGS += $(CLI_CFLAGS)

$(BUILD)/solforge: $(CLI_OBJ) $(CAMPAIGN_OBJ) $(BUILD)/libsolforge.a
	$(CC) $(LDSAN) -o $@ $^ $(SQLITE_LIBS) $(CLI_LDLIBS) $(LDLIBS)

# Runners: full RELRO (the GOT the timer calls go through is read-only once loaded) and no exported
# symbols for a candidate to bind to (docs/security.md).
RUNNER_LDFLAGS := -Wl,-z,relro,-z,now
$(BUILD)/solforge-runner-cpu: $(BUILD)/src/runner/runner_cpu.o $(BUILD)/src/runner/runner_common.o \
		$(BUILD)/src/runner/runner_guard.o $(BUILD)/libsolforge.a
	$(CC) $(LDSAN) $(RUNNER_LDFLAGS) -o $@ $^ $(LDLIBS)

# The PyTorch bridge's input writer (docs/bridge.md): the cpu runner's draws, written as safetensors.
$(BUILD)/solforge-inputs: $(BUILD)/src/runner/inputs_main.o $(BUILD)/src/runner/runner_common.o \
		$(BUILD)/libsolforge.a
	$(CC) $(LDSAN) -rdynamic -o $@ $^ $(LDLIBS)

# The cuda runner: nvcc compiles src/runner/runner_cuda*.cu (runner_cuda.h: what they share; each
# launches only its own kernels, so no relocatable device code) and links them; the core C files it
# shares come from libsolforge.a (built by the host compiler; the runner never links the CLI).
# runner_cuda_diag.cu only in the diag runner below (even empty it would register a fat binary).
RUNNER_CUDA_SRC := $(filter-out src/runner/runner_cuda_diag.cu,$(wildcard src/runner/runner_cuda*.cu))
NVCCFLAGS := -std=c++17 -O2 -g $(SM) -Iinclude -Isrc -Xcompiler -Wall,-Wextra,-Werror,-fno-strict-aliasing \
	-Xcudafe --display_error_number --fmad=false
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/extras/CUPTI/lib64 -lcupti -lcudart -ldl -lpthread -lm \
	-Xlinker -rpath,$(CUDA_HOME)/lib64 -Xlinker -rpath,$(CUDA_HOME)/extras/CUPTI/lib64
$(BUILD)/solforge-runner-cuda: $(RUNNER_CUDA_SRC) $(wildcard src/runner/*.h src/core/*.h) $(BUILD)/src/runner/runner_common.o \
		$(BUILD)/src/runner/runner_guard.o $(BUILD)/libsolforge.a
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -o $@ $(RUNNER_CUDA_SRC) $(BUILD)/src/runner/runner_common.o \
		$(BUILD)/src/runner/runner_guard.o $(BUILD)/libsolforge.a $(CUDA_LIBS) -Xlinker -z,relro,-z,now

# The timing-parity runner (src/runner/runner_cuda_diag.cu; tools/gpu_knobs.sh's ENV: tokens): the cuda
# runner with the SF_RUNNER_DIAG modes compiled in, beside the other binaries it needs, in build/diag/
# (SOLFORGE_RUNNER_DIR=build/diag selects it). Never the runner `make` builds.
diag-runner: $(BUILD)/diag/solforge-runner-cuda
$(BUILD)/diag/solforge-runner-cuda: $(RUNNER_CUDA_SRC) src/runner/runner_cuda_diag.cu $(wildcard src/runner/*.h src/core/*.h) \
		$(BUILD)/src/runner/runner_common.o $(BUILD)/src/runner/runner_guard.o $(BUILD)/libsolforge.a \
		$(BUILD)/solforge-runner-cpu $(BUILD)/solforge-inputs
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -DRCU_DIAG -o $@ $(RUNNER_CUDA_SRC) src/runner/runner_cuda_diag.cu $(BUILD)/src/runner/runner_common.o \
		$(BUILD)/src/runner/runner_guard.o $(BUILD)/libsolforge.a $(CUDA_LIBS) -Xlinker -z,relro,-z,now
	cp $(BUILD)/solforge-runner-cpu $(BUILD)/solforge-inputs $(dir $@)

$(BUILD)/tests/unit/all_tests.h: $(TEST_SRC)
	@mkdir -p $(dir $@)
	@grep -ho 'SF_TEST([a-z0-9_]*)' $(TEST_SRC) | sed 's/SF_TEST(\(.*\))/X(\1)/' > $@.tmp && mv $@.tmp $@

$(BUILD)/tests/unit/main.o: tests/unit/main.c $(BUILD)/tests/unit/all_tests.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -I$(BUILD)/tests/unit -c $< -o $@

# the campaign's pure text functions (no SQLite) are unit-tested too
$(BUILD)/unit-tests: $(TEST_OBJ) $(BUILD)/src/campaign/parse.o $(BUILD)/libsolforge.a
	$(CC) $(LDSAN) -o $@ $^ $(LDLIBS)

unit: $(BUILD)/unit-tests
	$(BUILD)/unit-tests

# Everything CI runs (no GPU): unit tests, end-to-end cpu evaluations, the sanitizer build, the CUDA
# compile check. tools/test.sh prints the closing "N passed, N failed" line.
test:
	tools/test.sh

cuda-check:
	tools/cuda_check.sh

gpu-check:
	tools/gpu_check.sh

clean:
	rm -rf build build-asan

# the runners' objects too (session 23: a job.h change left runner_common.o stale, so the cpu runner read the new
# job layout with the old struct and lost out_dir)
RUNNER_C_OBJ := $(addprefix $(BUILD)/src/runner/,runner_cpu.o runner_common.o runner_guard.o inputs_main.o)
-include $(CORE_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(CAMPAIGN_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(RUNNER_C_OBJ:.o=.d)
