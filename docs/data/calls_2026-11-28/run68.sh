#!/usr/bin/env bash
# 2x H200 (warm after run67), session 26: where the peer 0 B put's time goes on H200
# (bench_rma_prof, bench_rma_parts), and the overlap benchmark with the code of now.
cd "$(dirname "$0")/.."
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
R=$(mktemp -d); FINAL=$OUT; logs=$R
nvidia-smi -L | head -1; date -u
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
step prof_peer 60 $b/bench/bench_rma_prof --peer
step prof_same 60 $b/bench/bench_rma_prof
step parts_peer 90 $b/bench/bench_rma_parts --peer --csv $R/parts_peer.csv
step parts_same 90 $b/bench/bench_rma_parts --csv $R/parts_same.csv
step overlap 300 $b/bench/bench_overlap --csv $R/overlap.csv
tail -30 $R/prof_peer.log; tail -20 $R/parts_peer.log; tail -12 $R/overlap.log
printf '%s\n' "${results[@]}"
tar czf $FINAL/run68.tgz -C $R .
date -u
