#!/usr/bin/env bash
# 2 GPUs (2x H100 host), session 24, given inline as the run command: 7a0d766's build (new) against
# d7712bf's (base), alternating, two rounds of bench_rma --max-bytes 8, after test_rma_device.
export LD_LIBRARY_PATH=$PWD/build-dev/src; R=$(mktemp -d); nvidia-smi -L | head -1; date -u
timeout 60 build-dev/tests/rma/test_rma_device all 1000000 2>&1 | tail -1
for r in 1 2; do for v in base new; do
  rb=build-dev/bench/bench_rma; [ $v = base ] && rb=build-dev/base/bench_rma
  timeout 60 $rb --max-bytes 8 --repeats 9 --csv $R/rma_${v}_$r.csv > /dev/null 2>&1
  echo "$r $v rc=$?: $(awk -F, '$1=="gcomm" && ($2 ~ /pingpong/ || $2 ~ /barrier/) && $3 <= 8 {printf "%s/%s/%s=%s  ", $2,$3,$5,$6}' $R/rma_${v}_$r.csv)"
done; done
tar czf $OUT/run64.tgz -C $R .; date -u
