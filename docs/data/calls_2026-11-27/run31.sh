#!/usr/bin/env bash
# 2x GPU: the overlap benchmark with its kernels bounded to 64 registers (__launch_bounds__(128, 8),
# bench_overlap --bounded 8; spills 288 B lean / 320 B default with the drain out of line, 512 /
# 528 B at HEAD~1) against unbounded (106 / 124 registers: 4 ranks of 128 per SM), sweep 1,2,4
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
R=$(mktemp -d); FINAL=$OUT
nvidia-smi -L | head -2; date -u
ov() { # name binary args...
  local n=$1 bin=$2; shift 2
  timeout 200 $bin "$@" --csv $R/ovl_$n.csv > $R/ovl_$n.log 2>&1
  echo "$n rc=$? $(grep -m1 'ranks per GPU' $R/ovl_$n.log | sed 's/.*SMs), //; s/, [0-9]* ranks on.*//') | $(grep -m1 'kernel' $R/ovl_$n.log | sed 's/.*kernel //')"
  grep "ratio both/max" $R/ovl_$n.log | sed 's/ (target.*dependency bound / bound /; s/ (compute alone.*//'
}
B=build-dev/bench/bench_overlap
ov lean128_b8 $B --lean --bounded 8 --ranks-per-sm 8 --sweep 1,2,4
ov lean64_b8 $B --lean --threads 64 --bounded 8 --ranks-per-sm 16 --sweep 1,2,4
ov deep128_b8 $B --bounded 8 --ranks-per-sm 8 --sweep 1,2,4
ov lean128 $B --lean --ranks-per-sm 8 --sweep 1,2,4
ov head_lean128_b8 build-dev/head/bench_overlap --lean --bounded 8 --ranks-per-sm 8 --sweep 1,2,4
tar czf $FINAL/run31.tgz -C $R .
date -u
