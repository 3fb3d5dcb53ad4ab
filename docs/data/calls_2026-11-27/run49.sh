#!/usr/bin/env bash
# The overlap floor on one GPU and with smaller ranks: gcomm 4x128 and the floor (--exchange
# floor) at 4, 8 and 16 ranks of 128 threads per SM on GPU 0 alone, 10000 iterations, sweep
# 1 / 2 / 4; then on both GPUs the floor with 32 ranks of 64 threads per SM (32 registers).
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
R=$(mktemp -d); FINAL=$OUT
nvidia-smi -L; date -u
B=build-dev/bench/bench_overlap
sum() { grep -E "ratio both|VERIF|all verified|rror" "$1" | cut -c1-200; }
run() { n=$1; shift; timeout 120 $B "$@" --csv $R/$n.csv > $R/$n.log 2>&1; echo "== $n rc=$? ($*)"; sum $R/$n.log; }
export CUDA_VISIBLE_DEVICES=0
run gpu1_gcomm_4x128 --ranks-per-sm 4 --iters 10000 --sweep 1,2,4
run gpu1_floor_4x128 --exchange floor --ranks-per-sm 4 --iters 10000 --sweep 1,2,4
run gpu1_floor_8x128 --exchange floor --ranks-per-sm 8 --iters 10000 --sweep 1,2,4
run gpu1_floor_16x128 --exchange floor --bounded 16 --ranks-per-sm 16 --iters 10000 --sweep 1,2,4
unset CUDA_VISIBLE_DEVICES
run gpu2_floor_32x64 --exchange floor --bounded 16 --threads 64 --ranks-per-sm 32 --iters 10000 --sweep 1,2,4
tar czf $FINAL/run49.tgz -C $R .
date -u
