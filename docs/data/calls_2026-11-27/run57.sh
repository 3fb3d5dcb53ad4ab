#!/usr/bin/env bash
# 2 GPUs, session 24: HEAD d7712bf (gcommi_lane_head helper; compiled, SASS-compared, never GPU-run):
# test_rma_device all 1000000 and GCOMM_INLINE_MAX=0, test_rma_mpi -n 2 IPC + proxy, bench_rma
# 0/8 B twice, then the whole GPU suite (ctest -L gpu). If H200s came: also NVSHMEM's pair figures.
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
pp() { awk -F, '($1=="gcomm" || $1=="flag") && ($2 ~ /pingpong/ || $2 ~ /barrier/) && $3 <= 8 {printf "%s/%s/%s=%s  ", $1,$2,$3,$6}' "$1"; }
for r in 1 2; do
  timeout 90 build-dev/bench/bench_rma --max-bytes 8 --repeats 9 --csv $R/rma_$r.csv > $R/rma_$r.log 2>&1
  echo "$r rc=$?: $(pp $R/rma_$r.csv)"
done
if nvidia-smi -L | head -1 | grep -q H200; then
  OUT=$R timeout 200 bash scripts/run-nvshmem-bench.sh --max-bytes 1M > $R/nvshmem_run.log 2>&1
  echo "nvshmem rc=$?: $(awk -F, '$2 == "pingpong_put_signal" && ($3 == 0 || $3 == 8) {printf "%s B %s us  ", $3, $6}' $R/nvshmem.csv)"
fi
OUT=$R/suite timeout 330 bash scripts/gpu-check.sh --no-build --no-cpu --no-bench > $R/gpu-check.out 2>&1
echo "gpu-check rc=$?"; tail -25 $R/gpu-check.out
tar czf $FINAL/run57.tgz -C $R .
date -u
