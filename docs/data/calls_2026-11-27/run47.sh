#!/usr/bin/env bash
# 2 GPUs: the overlap benchmark's floor (--exchange floor: halo stores into the neighbours'
# windows, one release flag per neighbour) against gcomm's exchange, same call, ring over both
# GPUs, 1 KiB halos, sweep 1/2/4 x the calibrated computation.
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
R=$(mktemp -d); FINAL=$OUT
nvidia-smi -L; date -u
B=build-dev/bench/bench_overlap
sum() { grep -E "^bench_overlap: (kernel|[0-9])|ratio both|traced|VERIF|all verified|rror" "$1" | cut -c1-230; }
timeout 60 $B --exchange floor --quick --sweep 1 > $R/floor_quick.log 2>&1; echo "floor quick rc=$?"; sum $R/floor_quick.log
run() { n=$1; shift; timeout 170 $B "$@" --sweep 1,2,4 --csv $R/$n.csv > $R/$n.log 2>&1; echo "== $n rc=$? ($*)"; sum $R/$n.log; }
run gcomm_4x128 --ranks-per-sm 4
run floor_4x128 --exchange floor --ranks-per-sm 4
run floor_8x128 --exchange floor --ranks-per-sm 8
run floor_16x128 --exchange floor --bounded 16 --ranks-per-sm 16
tar czf $FINAL/run47.tgz -C $R .
date -u
