#!/usr/bin/env bash
# 2 GPUs, session 25: the guide's complete programs, built as tests (tests/docs/extract_examples.py):
# the GPU one on both GPUs, on one, and under memcheck; the host ones.
cd "$(dirname "$0")/.."
nvidia-smi -L; date -u
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH GCOMM_TIMEOUT_MS=20000
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
t=build-dev/tests
for x in doc_guide_datatypes doc_guide_device_initiated_notified_rma_host_ranks doc_guide_device_initiated_notified_rma; do
  timeout 60 $t/$x > $OUT/$x.log 2>&1; echo "$x rc=$? $(tail -1 $OUT/$x.log)"
done
CUDA_VISIBLE_DEVICES=0 timeout 60 $t/doc_guide_device_initiated_notified_rma > $OUT/one.log 2>&1; echo "one GPU rc=$? $(tail -1 $OUT/one.log)"
timeout 120 $cs --tool memcheck --error-exitcode 9 $t/doc_guide_device_initiated_notified_rma > $OUT/mc.log 2>&1; echo "memcheck rc=$? $(grep SUMMARY $OUT/mc.log)"
date -u
