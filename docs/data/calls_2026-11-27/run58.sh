#!/usr/bin/env bash
# 4 GPUs, session 24: the polling loops' drain with the heads' notification words (76bca51, and
# d7712bf's gcommi_lane_head), whose loop for jobs of more than two GPUs runs only there:
# test_rma_device on 4 GPUs (inline and released), memcheck and racecheck on 4 GPUs, test_rma_mpi
# on 4 processes over CUDA IPC (inline, released) and through the proxy; bench_rma (ping-pong,
# barrier) of a 4-GPU job twice.
cd "$(dirname "$0")/.."
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
R=$(mktemp -d); FINAL=$OUT; logs=$R
nvidia-smi -L; date -u
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
export LD_LIBRARY_PATH=$PWD/build-dev/src
step test_rma_device4 120 $b/tests/rma/test_rma_device all 1000000
step test_rma_device4_rel 120 env GCOMM_INLINE_MAX=0 $b/tests/rma/test_rma_device all 300000
step memcheck4 150 $cs --tool memcheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step racecheck4 150 $cs --tool racecheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step test_rma_mpi4 90 mpirun -n 4 --bind-to none -x LD_LIBRARY_PATH $b/tests/rma/test_rma_mpi all 100000
step test_rma_mpi4_rel 90 mpirun -n 4 --bind-to none -x LD_LIBRARY_PATH -x GCOMM_INLINE_MAX=0 $b/tests/rma/test_rma_mpi all 100000
step test_rma_mpi4_proxy 90 mpirun -n 4 --bind-to none -x LD_LIBRARY_PATH -x GCOMM_FORCE_PROXY=1 $b/tests/rma/test_rma_mpi all 30000
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $R/memcheck4.log $R/racecheck4.log
grep -hE "checks|FAIL" $R/test_rma_*.log | tail -n 16
printf '%s\n' "${results[@]}"
pp() { awk -F, '$1=="gcomm" && ($2 ~ /pingpong/ || $2 ~ /barrier/) && $3 <= 8 {printf "%s/%s/%s=%s  ", $2,$3,$4,$6}' "$1"; }
for r in 1 2; do
  timeout 90 build-dev/bench/bench_rma --max-bytes 8 --repeats 9 --csv $R/rma4_$r.csv > $R/rma4_$r.log 2>&1
  echo "$r rma rc=$?: $(pp $R/rma4_$r.csv)"
done
tar czf $FINAL/run58.tgz -C $R .
date -u
