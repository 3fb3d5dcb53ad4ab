#!/usr/bin/env bash
# 2x H200 (warm after run69), session 26: the overlap benchmark's sweep of the amount of
# computation (the paper's Figs. 7 and 8) with the code of now: the default kernel (4 ranks of
# 128 threads per SM) and the lean one at 8 x 128.
cd "$(dirname "$0")/.."
nvidia-smi -L | head -1; date -u
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
R=$(mktemp -d)
timeout 280 build-dev/bench/bench_overlap --sweep --csv $R/sweep_default.csv > $R/sweep_default.log 2>&1; echo "default rc=$?"
grep -E "ratio both/max" $R/sweep_default.log
timeout 280 build-dev/bench/bench_overlap --lean --ranks-per-sm 8 --sweep --csv $R/sweep_lean8.csv > $R/sweep_lean8.log 2>&1; echo "lean8 rc=$?"
grep -E "ratio both/max" $R/sweep_lean8.log
tar czf $OUT/run70.tgz -C $R .
date -u
