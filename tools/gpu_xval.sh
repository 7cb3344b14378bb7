#!/usr/bin/env bash
# gpu_xval.sh - the PyTorch bridge's every-workload cross-validation alone (tools/gpu_bridge.sh with
# PHASES=xval), so that tools/gpu_round.sh can run it in its own lane beside a gpu_bridge.sh run of the
# other phases. XVAL_BUDGET (seconds, default 200) is its wall-time budget; XVAL_JOBS, XVAL_SKIP as in
# gpu_bridge.sh.
set -u
cd "$(dirname "$0")/.."
BUDGET=${XVAL_BUDGET:-200} PHASES=xval exec tools/gpu_bridge.sh
