#!/usr/bin/env bash
# 2x H200 only, session 27: the overlap's floor on the issue's machine (until now measured on
# 2x H100, session 23): bench_overlap with the exchange written by hand (--exchange floor: stores,
# one flag per neighbour, no runtime) at 4, 8 and 16 ranks of 128 threads per SM, and gcomm at 4,
# the calibrated computation x1, x2, x4, 10,000 iterations, both GPUs.
cd "$(dirname "$0")/.."
nvidia-smi -L | head -1; date -u
if ! nvidia-smi -L | head -1 | grep -q H200 || [ "$(nvidia-smi -L | wc -l)" -lt 2 ]; then echo "not an H200 pair"; exit 0; fi
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
R=$(mktemp -d); FINAL=$OUT
B=build-dev/bench/bench_overlap
sum() { grep -E "kernel|ratio both|VERIF|all verified|rror" "$1" | sed 's/(target <= \(....\): \([A-Za-z]*\)); no overlap at all would be/\2;/; s/ (compute alone.*//' | cut -c1-170; }
run() { n=$1; shift; timeout 150 $B "$@" --iters 10000 --sweep 1,2,4 --csv $R/$n.csv > $R/$n.log 2>&1; echo "== $n rc=$? ($*)"; sum $R/$n.log; }
run gpu2_floor_16x128 --exchange floor --bounded 16 --ranks-per-sm 16
run gpu2_floor_8x128 --exchange floor --ranks-per-sm 8
run gpu2_floor_4x128 --exchange floor --ranks-per-sm 4
run gpu2_gcomm_4x128 --ranks-per-sm 4
tar czf $FINAL/run81.tgz -C $R .
date -u
