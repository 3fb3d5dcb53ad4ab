#!/usr/bin/env bash
# The overlap floor with relaxed polls (one fence.acquire on the hit; run49's acquire polls
# invalidated the SM's L1 on every poll): 4, 8, 16 ranks of 128 threads per SM, 10000
# iterations, sweep 1 / 2 / 4, on GPU 0 alone and on both GPUs.
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
R=$(mktemp -d); FINAL=$OUT
nvidia-smi -L; date -u
B=build-dev/bench/bench_overlap
sum() { grep -E "ratio both|VERIF|all verified|rror" "$1" | sed 's/(target <= \(....\): \([A-Za-z]*\)); no overlap at all would be/\2;/; s/ (compute alone.*//' | cut -c1-160; }
run() { n=$1; shift; timeout 100 $B "$@" --iters 10000 --sweep 1,2,4 --csv $R/$n.csv > $R/$n.log 2>&1; echo "== $n rc=$? ($*)"; sum $R/$n.log; }
for g in 1 2; do
  [ $g = 1 ] && export CUDA_VISIBLE_DEVICES=0 || unset CUDA_VISIBLE_DEVICES
  run gpu${g}_floor_4x128 --exchange floor --ranks-per-sm 4
  run gpu${g}_floor_8x128 --exchange floor --ranks-per-sm 8
  run gpu${g}_floor_16x128 --exchange floor --bounded 16 --ranks-per-sm 16
done
tar czf $FINAL/run50.tgz -C $R .
date -u
