#!/usr/bin/env bash
# 2 GPUs, session 26. On 2x H200: the current code's 0/8 B one-way times against NVSHMEM's
# put_signal in the same call (bench_rma, NVSHMEM, bench_rma), then bench_rma's whole sweep (0 B to
# 64 MB, bandwidths) for the H200 figures of the code of now. Otherwise: the device tests of this
# fresh build only.
cd "$(dirname "$0")/.."
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
R=$(mktemp -d); FINAL=$OUT; logs=$R
nvidia-smi -L; date -u
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
step test_rma_device 120 $b/tests/rma/test_rma_device all 1000000
tail -1 $R/test_rma_device.log
if ! nvidia-smi -L | head -1 | grep -q H200; then
  printf '%s\n' "${results[@]}"; tar czf $FINAL/run67.tgz -C $R .; exit 0
fi
pp() { awk -F, '($1=="gcomm" || $1=="flag") && ($2 ~ /pingpong/) && $3 <= 8 {printf "%s/%s/%s=%s  ", $1,$2,$3,$6}' "$1"; }
timeout 90 $b/bench/bench_rma --max-bytes 8 --repeats 9 --csv $R/rma_1.csv > $R/rma_1.log 2>&1
echo "1 rc=$?: $(pp $R/rma_1.csv)"
OUT=$R BENCH_TIMEOUT=100 timeout 200 bash scripts/run-nvshmem-bench.sh --max-bytes 1M > $R/nvshmem_run.log 2>&1
echo "nvshmem rc=$?: $(awk -F, '$2 == "pingpong_put_signal" && ($3 == 0 || $3 == 8) {printf "%s B %s us  ", $3, $6}' $R/nvshmem.csv)"
timeout 90 $b/bench/bench_rma --max-bytes 8 --repeats 9 --csv $R/rma_2.csv > $R/rma_2.log 2>&1
echo "2 rc=$?: $(pp $R/rma_2.csv)"
step bench_rma_full 240 $b/bench/bench_rma --csv $R/rma_full.csv
timeout 90 $b/bench/bench_rma --max-bytes 8 --repeats 9 --csv $R/rma_3.csv > $R/rma_3.log 2>&1
echo "3 rc=$?: $(pp $R/rma_3.csv)"
tail -25 $R/bench_rma_full.log
printf '%s\n' "${results[@]}"
tar czf $FINAL/run67.tgz -C $R .
date -u
