#!/usr/bin/env bash
# tests/suites/bridge.sh - the PyTorch bridge (docs/bridge.md) on the cpu backend, without torch.
#
# CI has numpy but no torch. The bridge's I/O layer is tested with numpy (tests/bridge/test_sf_io.py);
# the protocol, the C side's spawn, time limit and error handling run end to end with
# tests/fixtures/bridge/fake_torch (a numpy stand-in that marks itself fake: tensors are numpy
# arrays, torch.compile is "unavailable"), with no torch at all, with no python, and with fake
# bridges that hang or leave malformed results. Prints `ok NAME` / `FAIL NAME` per case, then
# `N passed, M failed`; exits non-zero when anything failed.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SF=$BUILD/solforge
FX=tests/fixtures/bridge
FAKE=$ROOT/$FX/fake_torch
pass=0 fail=0
ok() { echo "ok $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }

if [ ! -x "$SF" ] || [ ! -x "$BUILD/solforge-inputs" ]; then
	echo "bridge.sh: no $SF or $BUILD/solforge-inputs (run make first)" >&2
	echo "0 passed, 1 failed"
	exit 2
fi
if ! python3 -c 'import numpy' 2>/dev/null; then
	echo "bridge.sh: needs python3 with numpy (tools/deps.sh installs python3-numpy)" >&2
	echo "0 passed, 1 failed"
	exit 2
fi
TMP=$(mktemp -d /tmp/solforge-bridge-tests.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$TMP/cache}
export SOLFORGE_SCRATCH=$TMP/scratch
mkdir -p "$SOLFORGE_SCRATCH"
EV=(--backend cpu --budget-ms 30 --min-iters 6 --max-iters 200)

# field FILE EXPR: evaluates a python expression over the trace lines `t` (list of dicts)
field() { python3 -c "import json,sys; t=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]; print($2)" "$1"; }

# 1. the I/O layer with numpy
if out=$(python3 tests/bridge/test_sf_io.py 2>&1); then ok io_layer; else bad io_layer "$(echo "$out" | grep FAIL | head -5)"; fi
# the device-span timing's trace cutting (tools/bridge/sf_kspan.py) on random synthetic traces
if out=$(python3 tests/bridge/test_kspan.py 2>&1); then ok kernel_spans; else bad kernel_spans "$(echo "$out" | grep -E 'FAIL|seed|Error' | head -5)"; fi
# a long task message keeps its first line (what failed) and its end (tools/bridge/solforge_bridge.py clip_message)
if out=$(python3 tests/bridge/test_clip_message.py 2>&1); then ok clip_message; else bad clip_message "$(echo "$out" | grep FAIL | head -3)"; fi

# 2. protocol of the bridge program itself
out=$(python3 tools/bridge/solforge_bridge.py 2>&1); rc=$?
[ $rc -eq 2 ] && [[ $out == *usage* ]] && ok bridge_usage || bad bridge_usage "rc=$rc $out"
echo '{not json' > "$TMP/bad.json"
out=$(python3 tools/bridge/solforge_bridge.py "$TMP/bad.json" "$TMP/bad.json" 2>&1); rc=$?
[ $rc -eq 2 ] && [[ $out == *"bad job"* ]] && ok bridge_malformed_job || bad bridge_malformed_job "rc=$rc $out"
out=$(env -u PYTHONPATH python3 tools/bridge/solforge_bridge.py --probe --device cpu 2>&1); rc=$?
if python3 -c 'import torch' 2>/dev/null; then
	echo "ok probe_without_torch # SKIP torch is installed here"
else
	[ $rc -eq 3 ] && [[ $out == *"torch is not importable"* ]] && ok probe_without_torch || bad probe_without_torch "rc=$rc $out"
fi
out=$(PYTHONPATH=$FAKE python3 tools/bridge/solforge_bridge.py --probe --device cpu 2>&1); rc=$?
[ $rc -eq 0 ] && [[ $out == *'"fake": true'* ]] && ok probe_fake_torch || bad probe_fake_torch "rc=$rc $out"
out=$(PYTHONPATH=$FAKE python3 tools/bridge/solforge_bridge.py --probe --device cuda 2>&1); rc=$?
[ $rc -eq 3 ] && [[ $out == *"no CUDA device"* ]] && ok probe_no_device || bad probe_no_device "rc=$rc $out"

# 3. torch baselines and --xval end to end with the numpy stand-in
T=$TMP/bscale.jsonl
PYTHONPATH=$FAKE "$SF" eval $FX/bscale $FX/bscale/correct.c "${EV[@]}" --xval --json -o "$T" >"$TMP/log" 2>&1; rc=$?
if [ $rc -eq 0 ] && [ "$(field "$T" "' '.join(x['evaluation']['status'] for x in t)")" = "PASSED PASSED" ]; then
	ok fake_torch_eval_passes
else
	bad fake_torch_eval_passes "rc=$rc $(tail -5 "$TMP/log")"
fi
st() { field "$T" "' '.join(b['status'] for x in t for b in x['evaluation']['solforge'].get('baselines', []) if b['name'] == '$1')"; }
[ "$(st torch-ok)" = "PASSED PASSED" ] && ok baseline_correct_timed || bad baseline_correct_timed "$(st torch-ok)"
# T_b: the fastest PASSED baseline of the same run (torch-ok or the cpu backend's oracle-c), never a wrong one
tb_ok=$(field "$T" "all(x['evaluation']['solforge'].get('baseline') == min((b for b in x['evaluation']['solforge']['baselines'] if b['status'] == 'PASSED'), key=lambda b: b['median_ms'])['name'] for x in t)")
[ "$tb_ok" = True ] && ok tb_is_fastest_correct || bad tb_is_fastest_correct "$(field "$T" "[x['evaluation']['solforge'].get('baselines') for x in t]")"
[ "$(st torch-wrong)" = "INCORRECT_NUMERICAL INCORRECT_NUMERICAL" ] && ok baseline_wrong_left_out || bad baseline_wrong_left_out "$(st torch-wrong)"
[ "$(st torch-raises)" = "RUNTIME_ERROR RUNTIME_ERROR" ] && ok baseline_raising_left_out || bad baseline_raising_left_out "$(st torch-raises)"
[ "$(field "$T" "int('ValueError: this baseline fails on purpose' in t[0]['evaluation']['log'])")" = 1 ] &&
	ok baseline_error_in_log || bad baseline_error_in_log "$(field "$T" "t[0]['evaluation']['log']")"
[ "$(st torch.compile)" = "UNAVAILABLE UNAVAILABLE" ] && ok compile_unavailable_on_fake || bad compile_unavailable_on_fake "$(st torch.compile)"
[ "$(field "$T" "' '.join(b['status'] for x in t for b in x['evaluation']['solforge']['baselines'] if b.get('role') == 'xval')")" = "AGREE AGREE" ] &&
	ok xval_agrees || bad xval_agrees "$(field "$T" "t[0]['evaluation']['log']")"
# bit-exact inputs: workload n4 has tolerance 0 and alpha = 2, so the C-drawn bf16 inputs must reach
# the bridge unchanged and come back bit for bit (a change of one input bit fails it)
[ "$(field "$T" "t[0]['evaluation']['correctness']['max_absolute_error']")" = 0 ] &&
	ok inputs_identical_bitexact || bad inputs_identical_bitexact "$(field "$T" "t[0]['evaluation']['correctness']")"

# 3b. the device slot: the bridge takes it itself after its start-up (tests/bridge/test_gpu_slot.py
#     checks the waiting); end to end, its hold is logged by the python process (its own pid) and no two
#     holds of the slot overlap
if out=$(python3 tests/bridge/test_gpu_slot.py 2>&1); then ok gpu_slot_protocol; else bad gpu_slot_protocol "$(echo "$out" | grep FAIL | head -3)"; fi
# inductor's autotuning benchmarks routed through the slot when torch.compile runs before it
# (tests/bridge/test_bench_hook.py: the harness hook, the shared-benchmarker patch, neither)
if out=$(python3 tests/bridge/test_bench_hook.py 2>&1); then ok compile_benchmarks_hold_slot; else bad compile_benchmarks_hold_slot "$(echo "$out" | grep FAIL | head -3)"; fi
# what is counted and held: torch 2.11's benchmarker classes and counters modelled, every call path held,
# a planted bypass reported as benchmarks outside the slot, compiles during warm calls let the slot go,
# compile_task warms every round and timing set (tests/bridge/test_bench_gate.py, random seed printed)
if out=$(python3 tests/bridge/test_bench_gate.py 2>&1); then ok bench_gate_counts_and_holds; else bad bench_gate_counts_and_holds "$(echo "$out" | grep -E 'FAIL|seed' | head -4)"; fi
L=$TMP/locks
mkdir -p "$L"
SOLFORGE_GPU_LOCKS=$L PYTHONPATH=$FAKE "$SF" eval $FX/bscale $FX/bscale/correct.c "${EV[@]}" --only n4 >"$TMP/log" 2>&1; rc=$?
slot_ok=$(python3 - "$L/timing.log" <<'PY' 2>&1
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
py = [r for r in rows if r[6] == "pytorch"]
c = [r for r in rows if r[6] != "pytorch"]
iv = sorted((float(r[0]), float(r[0]) + float(r[4])) for r in rows if r[1] == "cpu-host")
overlap = any(b[0] < a[1] - 0.0015 for a, b in zip(iv, iv[1:]))
print(len(py) == 1 and len(c) >= 2 and py[0][2] not in {r[2] for r in c} and not overlap)
PY
)
[ $rc -eq 0 ] && [ "$slot_ok" = True ] && ok bridge_holds_its_own_slot || bad bridge_holds_its_own_slot "rc=$rc $slot_ok $(cat "$L/timing.log" 2>/dev/null | head -5)"

# 3c. --baseline NAME: only the named baselines run (a random two of the definition's four, in either
#     order on the command line), T_b is the best of those, the log says so; the bridge's progress trail
#     (SOLFORGE_BRIDGE_PROGRESS) has start (naming the problem and workload, no device slot here), inputs, then task_begin / task_end per task of each bridge
#     process, named as the tasks were; a name the definition lacks stops the eval (exit 2) naming those it has
mapfile -t pick < <(python3 -c "import random; b=['torch-ok','torch-wrong','torch-raises','torch.compile']; print(*sorted(random.sample(b, 2), key=b.index), sep='\n')")
want_order=("${pick[@]}") # the definition's order (the bridge's tasks and the log line follow it)
[ $((RANDOM % 2)) = 1 ] && pick=("${pick[1]}" "${pick[0]}") # named on the command line in either order
T=$TMP/subset.jsonl
PR=$TMP/progress.jsonl
SOLFORGE_BRIDGE_PROGRESS=$PR PYTHONPATH=$FAKE "$SF" eval $FX/bscale $FX/bscale/correct.c "${EV[@]}" --only n4 \
	--baseline "${pick[0]}" --baseline "${pick[1]}" --json -o "$T" >"$TMP/log" 2>&1; rc=$?
names=$(field "$T" "' '.join(sorted(b['name'] for b in t[0]['evaluation']['solforge'].get('baselines', [])))")
want=$(printf '%s\n' "${pick[@]}" | sort | tr '\n' ' ' | sed 's/ $//')
tb=$(field "$T" "t[0]['evaluation']['solforge'].get('baseline')")
[ $rc -eq 0 ] && [ "$names" = "$want" ] && [[ $(field "$T" "t[0]['evaluation']['log']") == *"baselines: only ${want_order[0]}, ${want_order[1]} (--baseline)"* ]] &&
	{ [[ " ${pick[*]} " == *" torch-ok "* ]] && [ "$tb" = torch-ok ] || { [[ " ${pick[*]} " != *" torch-ok "* ]] && [ "$tb" = None ]; }; } &&
	ok baseline_subset || bad baseline_subset "rc=$rc picked ${pick[*]} got '$names' T_b $tb $(tail -3 "$TMP/log")"
trail_ok=$(python3 - "$PR" "${want_order[@]}" <<'PY' 2>&1
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
want = sys.argv[2:]
procs = {}
for e in ev:
    procs.setdefault(e["pid"], []).append(e)
good = bool(procs)
for p in procs.values():
    kinds = [e["event"] for e in p]
    tasks = [e["task"] for e in p if e["event"] == "task_begin"]
    good &= (kinds[:2] == ["start", "inputs"] and p[0]["tasks"] == want and tasks == want
             and p[0].get("what") == "bscale-n4" and p[0].get("problem") == "bscale"
             and kinds[2:] == ["task_begin", "task_end"] * len(want)
             and all(a["t_s"] <= b["t_s"] for a, b in zip(p, p[1:])))
print(good, len(procs))
PY
)
[[ $trail_ok == "True "* ]] && ok bridge_progress_trail || bad bridge_progress_trail "$trail_ok $(head -c 600 "$PR")"
out=$(PYTHONPATH=$FAKE "$SF" eval $FX/bscale $FX/bscale/correct.c "${EV[@]}" --only n4 --baseline torch-okk 2>&1); rc=$?
[ $rc -eq 2 ] && [[ $out == *"--baseline torch-okk: bscale has no baseline of that name (it has: torch-ok, torch-wrong, torch-raises, torch.compile, oracle-c)"* ]] &&
	ok baseline_unknown_name || bad baseline_unknown_name "rc=$rc $out"

# 4. no torch: baselines say why, the cpu baseline (the C oracle) stays; no python: the same
if ! python3 -c 'import torch' 2>/dev/null; then
	T=$TMP/notorch.jsonl
	env -u PYTHONPATH "$SF" eval $FX/bscale $FX/bscale/correct.c "${EV[@]}" --only n4 --json -o "$T" >"$TMP/log" 2>&1; rc=$?
	[ $rc -eq 0 ] && [ "$(st torch-ok)" = UNAVAILABLE ] && [[ $(field "$T" "t[0]['evaluation']['log']") == *"torch is not importable"* ]] &&
		[ "$(field "$T" "t[0]['evaluation']['solforge'].get('baseline')")" = oracle-c ] &&
		ok missing_torch_clear_status || bad missing_torch_clear_status "rc=$rc $(head -c 600 "$T")"
fi
T=$TMP/nopy.jsonl
SOLFORGE_PYTHON=/nonexistent/python3 "$SF" eval $FX/bscale $FX/bscale/correct.c "${EV[@]}" --only n4 --json -o "$T" >"$TMP/log" 2>&1; rc=$?
[ $rc -eq 0 ] && [ "$(st torch-ok)" = UNAVAILABLE ] && [[ $(field "$T" "t[0]['evaluation']['log']") == *"cannot start"* ]] &&
	ok missing_python_clear_status || bad missing_python_clear_status "rc=$rc $(head -c 600 "$T") $(tail -3 "$TMP/log")"

# 5. a problem whose oracle is its PyTorch reference
out=$(env -u PYTHONPATH SOLFORGE_PYTHON=/nonexistent/python3 "$SF" eval $FX/pub_scale $FX/pub_scale/correct.c "${EV[@]}" 2>&1); rc=$?
[ $rc -eq 6 ] && [[ $out == *"needs the bridge"* ]] && ok torch_reference_unavailable_exit6 || bad torch_reference_unavailable_exit6 "rc=$rc $out"
out=$(PYTHONPATH=$FAKE "$SF" eval $FX/pub_scale $FX/pub_scale/correct.c "${EV[@]}" 2>&1); rc=$?
[ $rc -eq 0 ] && ok torch_reference_correct_passes || bad torch_reference_correct_passes "rc=$rc $out"
out=$(PYTHONPATH=$FAKE "$SF" eval $FX/pub_scale $FX/pub_scale/wrong.c "${EV[@]}" 2>&1); rc=$?
[ $rc -eq 1 ] && [[ $out == *INCORRECT_NUMERICAL* ]] && ok torch_reference_wrong_fails || bad torch_reference_wrong_fails "rc=$rc $out"

# 6. a bridge that hangs is killed at its limit; one that leaves garbage is an error, not a pass
T=$TMP/hang.jsonl
start=$(date +%s)
SOLFORGE_BRIDGE_TIMEOUT=3 SOLFORGE_BRIDGE=$ROOT/$FX/fake_bridges/hang.py "$SF" eval $FX/bscale $FX/bscale/correct.c "${EV[@]}" --only n4 --json -o "$T" >"$TMP/log" 2>&1; rc=$?
took=$(( $(date +%s) - start ))
[ $rc -eq 0 ] && [ "$took" -lt 60 ] && [ "$(st torch-ok)" = TIMEOUT ] && ok hanging_bridge_killed || bad hanging_bridge_killed "rc=$rc took=${took}s $(head -c 400 "$T")"
T=$TMP/garbage.jsonl
SOLFORGE_BRIDGE=$ROOT/$FX/fake_bridges/garbage.py "$SF" eval $FX/bscale $FX/bscale/correct.c "${EV[@]}" --only n4 --json -o "$T" >"$TMP/log" 2>&1; rc=$?
[ $rc -eq 0 ] && [ "$(st torch-ok)" = RUNTIME_ERROR ] && [ "$(field "$T" "t[0]['evaluation']['solforge'].get('baseline')")" = oracle-c ] &&
	ok malformed_reply_is_error || bad malformed_reply_is_error "rc=$rc $(head -c 600 "$T")"
out=$(SOLFORGE_BRIDGE=$ROOT/$FX/fake_bridges/garbage.py "$SF" eval $FX/pub_scale $FX/pub_scale/correct.c "${EV[@]}" 2>&1); rc=$?
[ $rc -eq 1 ] && [[ $out == *INVALID_REFERENCE* ]] && ok malformed_reference_invalid || bad malformed_reference_invalid "rc=$rc $out"
leftover=$(pgrep -f "$FX/fake_bridges/hang.py" || true)
[ -z "$leftover" ] && ok no_leftover_bridge || bad no_leftover_bridge "pids $leftover"

# 7. import
out=$("$SF" import tests/fixtures/public/sol 2>&1); rc=$?
[ $rc -eq 0 ] && [[ $out == *"2 of 2 problems evaluable"* ]] && ok import_sol_layout || bad import_sol_layout "rc=$rc $out"
out=$("$SF" import tests/fixtures/public/fib -o "$TMP/imp" 2>&1); rc=$?
[ $rc -eq 0 ] && [ -f "$TMP/imp/fib_gemm_n256_k512/workload.jsonl" ] && "$SF" list "$TMP/imp" >/dev/null 2>&1 &&
	ok import_fib_layout || bad import_fib_layout "rc=$rc $out"
mkdir -p "$TMP/blob/p"
cp tests/fixtures/public/sol/pub_softmax_scaled_v1000/definition.json "$TMP/blob/p/"
echo '{"uuid": "b1", "axes": {"rows": 2}, "inputs": {"logits": {"type": "safetensors", "path": "blob/x.safetensors", "tensor_key": "x"}, "scale": {"type": "scalar", "value": 1}}}' >"$TMP/blob/p/workload.jsonl"
out=$("$SF" import "$TMP/blob" 2>&1); rc=$?
[ $rc -eq 1 ] && [[ $out == *"blob(s) absent"* ]] && ok import_missing_blob || bad import_missing_blob "rc=$rc $out"
# eval pointed straight at a FlashInfer-Bench definition finds its workloads (then refuses the .cu on cpu)
out=$("$SF" eval tests/fixtures/public/fib/definitions/gemm/fib_gemm_n256_k512.json tests/fixtures/public/solutions/fib_gemm_n256_k512.cu --backend cpu 2>&1); rc=$?
[ $rc -eq 2 ] && [[ $out == *"is a cuda solution"* ]] && ok eval_fib_definition_path || bad eval_fib_definition_path "rc=$rc $out"
out=$("$SF" import "$TMP/nothing-here" 2>&1); rc=$?
[ $rc -eq 3 ] && ok import_nothing || bad import_nothing "rc=$rc $out"
# the persisting-L2 reset the bridge's timer does before its flush (as the runner does): with a stand-in
# libcuda whose reset fails it is called once per flush and noted once; without the entry point, noted
out=$(cd tools/bridge && python3 -c '
import ctypes, sys
import solforge_bridge as b
calls = [0]
class Fake:
    def __init__(self, name):
        if name != "libcuda.so.1":
            raise OSError(name)
    @property
    def cuCtxResetPersistingL2Cache(self):
        def f():
            calls[0] += 1
            return 999
        return f
ctypes.CDLL = Fake
r = b.persisting_l2_reset()
for _ in range(3):
    r()
print("calls", calls[0])
class NoEntry:
    def __init__(self, name):
        pass
ctypes.CDLL = NoEntry
r2 = b.persisting_l2_reset()
r2()
print("ok")
' 2>&1)
[[ $out == *"calls 3"* ]] && [ "$(grep -c 'CUresult 999' <<<"$out")" = 1 ] && [[ $out == *"cannot reset the persisting L2 state: "*"ok" ]] &&
	ok bridge_l2_reset || bad bridge_l2_reset "$out"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
