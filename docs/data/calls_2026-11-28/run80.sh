#!/usr/bin/env bash
# 2x H200 only, session 27 (after run79): the overlap benchmark (1056 ranks of 128 threads, 4 per
# SM, 1 KB halos, calibrated 1x) with the new wait loop and small put.
cd "$(dirname "$0")/.."
nvidia-smi -L | head -1; date -u
if ! nvidia-smi -L | head -1 | grep -q H200 || [ "$(nvidia-smi -L | wc -l)" -lt 2 ]; then echo "not an H200 pair"; exit 0; fi
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
R=$(mktemp -d)
timeout 300 build-dev/bench/bench_overlap --csv $R/overlap.csv > $R/overlap.log 2>&1; echo "overlap rc=$?"
tail -14 $R/overlap.log
tar czf $OUT/run80.tgz -C $R .
date -u
