#!/usr/bin/env bash
# 2 GPUs: the whole GPU test suite (ctest -L gpu) on HEAD 76bca51 build, carried (build-dev is a slim
# copy of build-gpu: binaries, libraries and CTest files)
cd "$(dirname "$0")/.."
nvidia-smi -L; date -u
R=$(mktemp -d)
OUT=$R GPU_DIR=build-dev timeout 500 bash scripts/gpu-check.sh --no-build --no-cpu --no-bench > $R/gpu-check.out 2>&1
echo "gpu-check rc=$?"; tail -35 $R/gpu-check.out
tar czf $OUT/run55.tgz -C $R .
date -u
