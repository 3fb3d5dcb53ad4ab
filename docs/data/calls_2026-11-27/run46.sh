#!/usr/bin/env bash
# 2 GPUs, session 23: HEAD b82c989's device tests (STRESS_BUFFER_BYTES mend, compiled but never
# GPU-run): test_rma_device all 1000000 and GCOMM_INLINE_MAX=0, test_rma_mpi -n 2 IPC + proxy.
# If H200s came: issue 4's pair figures (bench_rma 0/8 B x3, all sizes, NVSHMEM, overlap).
cd "$(dirname "$0")/.."
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
R=$(mktemp -d); FINAL=$OUT; logs=$R
nvidia-smi -L; date -u
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
step test_rma_device 150 $b/tests/rma/test_rma_device all 1000000
step test_rma_device_rel 150 env GCOMM_INLINE_MAX=0 $b/tests/rma/test_rma_device all 300000
step test_rma_mpi2 90 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH $b/tests/rma/test_rma_mpi all 200000
step test_rma_mpi2_proxy 90 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x GCOMM_FORCE_PROXY=1 $b/tests/rma/test_rma_mpi all 30000
grep -hE "checks|FAIL" $R/*test_rma_*.log | tail -n 8
printf '%s\n' "${results[@]}"
if nvidia-smi -L | head -1 | grep -q H200; then
  pp() { awk -F, '($1=="gcomm" || $1=="flag") && $2 ~ /pingpong/ && $3 <= 8 {printf "%s/%s/%s=%s  ", $1,$2,$3,$6}' "$1"; }
  for r in 1 2 3; do
    timeout 120 build-dev/bench/bench_rma --max-bytes 8 --repeats 9 --csv $R/rma_$r.csv > $R/rma_$r.log 2>&1
    echo "$r rc=$?: $(pp $R/rma_$r.csv)"
  done
  OUT=$R timeout 240 bash scripts/run-nvshmem-bench.sh --max-bytes 1M > $R/nvshmem_run.log 2>&1
  echo "nvshmem rc=$?: $(awk -F, '$2 == "pingpong_put_signal" && ($3 == 0 || $3 == 8) {printf "%s B %s us  ", $3, $6}' $R/nvshmem.csv)"
  timeout 150 build-dev/bench/bench_rma --csv $R/rma_all.csv > $R/rma_all.log 2>&1; echo "rma_all rc=$?"; tail -25 $R/rma_all.log
else echo "not H200: no pair figures"; fi
tar czf $FINAL/run46.tgz -C $R .
date -u
