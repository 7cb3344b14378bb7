#!/usr/bin/env bash
# gpu_xval.sh - the PyTorch bridge's every-workload cross-validation alone (tools/gpu_bridge.sh with
# PHASES=xval), so that tools/gpu_round.sh can run it in its own lane beside a gpu_bridge.sh run of the
# other phases. XVAL_BUDGET (seconds, default 200) is its wall-time budget and XVAL_PROBLEMS its
# problem regex (gpu_bridge.sh's ONLY_PROBLEMS, which a script beside it may set); XVAL_JOBS and
# XVAL_SKIP as in gpu_bridge.sh.
set -u
cd "$(dirname "$0")/.."
BUDGET=${XVAL_BUDGET:-200} PHASES=xval ONLY_PROBLEMS="${XVAL_PROBLEMS:-.}" exec tools/gpu_bridge.sh
