#!/usr/bin/env bash
# one H200: the same-GPU ping-pong before (build-dev/head, db9c918) and after the polling loops'
# drain went out of line, alternating, three rounds
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
R=$(mktemp -d); FINAL=$OUT
nvidia-smi -L | head -1; date -u
pp() { awk -F, '($1=="gcomm" || $1=="flag") && $2 ~ /pingpong|aggregate/ {printf "%s/%s/%s=%s/%s  ", $1,$2,$3,$6,$7}' "$1"; }
for r in 1 2 3; do
  for v in head new; do
    bin=build-dev/bench/bench_rma; [ $v = head ] && bin=build-dev/head/bench_rma
    timeout 120 $bin --max-bytes 8 --repeats 9 --csv $R/rma_${v}_$r.csv > $R/rma_${v}_$r.log 2>&1
    echo "$r $v rc=$?: $(pp $R/rma_${v}_$r.csv)"
  done
done
tar czf $FINAL/run35.tgz -C $R .
date -u
