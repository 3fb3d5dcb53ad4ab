#!/usr/bin/env bash
# 2x GPU (H200 asked): the small put's latency with the polling loops' drain out of line
# (bench_rma --max-bytes 8 --repeats 9, three runs) and NVSHMEM's put_signal in the same call
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
R=$(mktemp -d); FINAL=$OUT
nvidia-smi -L | head -2; date -u
pp() { awk -F, '($1=="gcomm" || $1=="flag") && $2 ~ /pingpong/ {printf "%s/%s/%s=%s  ", $1,$2,$3,$6}' "$1"; }
for r in 1 2 3; do
  timeout 120 build-dev/bench/bench_rma --max-bytes 8 --repeats 9 --csv $R/rma_$r.csv > $R/rma_$r.log 2>&1
  echo "$r rc=$?: $(pp $R/rma_$r.csv)"
done
OUT=$R timeout 300 bash scripts/run-nvshmem-bench.sh --max-bytes 1K > $R/nvshmem_run.log 2>&1
echo "nvshmem rc=$?: $(awk -F, '$2 == "pingpong_put_signal" && ($3 == 0 || $3 == 8) {printf "%s B %s us  ", $3, $6}' $R/nvshmem.csv)"
tar czf $FINAL/run34.tgz -C $R .
date -u
