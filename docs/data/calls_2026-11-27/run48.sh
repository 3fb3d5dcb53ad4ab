#!/usr/bin/env bash
# 2 GPUs: is the overlap benchmark's time per iteration a steady state? The same points as
# run47.sh (gcomm 4x128, floor 8x128 and 16x128, 1x the calibrated computation) with 1000 and
# 10000 iterations per launch: a ring of thousands of ranks takes many iterations to settle
# (iteration starts spread over ms), and the launch's time / iterations includes that.
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
R=$(mktemp -d); FINAL=$OUT
nvidia-smi -L; date -u
B=build-dev/bench/bench_overlap
sum() { grep -E "ratio both|traced|VERIF|all verified|rror" "$1" | cut -c1-250; }
run() { n=$1; shift; timeout 170 $B "$@" --csv $R/$n.csv > $R/$n.log 2>&1; echo "== $n rc=$? ($*)"; sum $R/$n.log; }
for it in 10000 3000; do
  run gcomm_4x128_i$it --ranks-per-sm 4 --iters $it
  run floor_8x128_i$it --exchange floor --ranks-per-sm 8 --iters $it
  run floor_16x128_i$it --exchange floor --bounded 16 --ranks-per-sm 16 --iters $it
done
tar czf $FINAL/run48.tgz -C $R .
date -u
