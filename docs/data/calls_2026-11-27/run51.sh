#!/usr/bin/env bash
# 2 GPUs: gcomm's kernels at 10000 iterations per launch (the floor's run length, run50.sh),
# sweep 1 / 2 / 4: default 4 x 128, and bounded to 64 registers (8 x 128, spilled) lean and
# default.
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
R=$(mktemp -d); FINAL=$OUT
nvidia-smi -L; date -u
B=build-dev/bench/bench_overlap
sum() { grep -E "kernel|ratio both|VERIF|all verified|rror" "$1" | sed 's/(target <= \(....\): \([A-Za-z]*\)); no overlap at all would be/\2;/; s/ (compute alone.*//' | cut -c1-160; }
run() { n=$1; shift; timeout 150 $B "$@" --iters 10000 --sweep 1,2,4 --csv $R/$n.csv > $R/$n.log 2>&1; echo "== $n rc=$? ($*)"; sum $R/$n.log; }
run gpu2_gcomm_4x128 --ranks-per-sm 4
run gpu2_gcomm_lean_bounded_8x128 --lean --bounded 8 --ranks-per-sm 8
run gpu2_gcomm_bounded_8x128 --bounded 8 --ranks-per-sm 8
tar czf $FINAL/run51.tgz -C $R .
date -u
