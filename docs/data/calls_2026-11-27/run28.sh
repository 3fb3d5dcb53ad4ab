#!/usr/bin/env bash
# 2x H200: issue 4 in one call - the small put's latency, HEAD (build-dev) and the lone-peer take
# (build-dev/lone, bench_rma_lone) alternating, inline and released, three rounds, NVSHMEM's
# put_signal in the same call (scripts/rma-latency.sh); the overlap benchmark at the crossover:
# default kernel, lean 8 x 128 and 16 x 64 per SM
cd "$(dirname "$0")/.."
export GPU_DIR=build-dev
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
nvidia-smi -L | head -2; date -u
mkdir -p $OUT/lat $OUT/ovl
OUT=$OUT/lat B=$PWD/build-dev/lone/bench/bench_rma_lone bash scripts/rma-latency.sh --rounds 3 --no-prof 2>&1 | tail -n 16
date -u
b=build-dev; o=$OUT/ovl
timeout 200 $b/bench/bench_overlap --csv $o/overlap_default.csv > $o/overlap_default.log 2>&1; echo "default rc=$?"
timeout 200 $b/bench/bench_overlap --lean --ranks-per-sm 8 --csv $o/overlap_lean_128x8.csv > $o/overlap_lean_128x8.log 2>&1; echo "lean 128x8 rc=$?"
timeout 200 $b/bench/bench_overlap --lean --threads 64 --ranks-per-sm 16 --csv $o/overlap_lean_64x16.csv > $o/overlap_lean_64x16.log 2>&1; echo "lean 64x16 rc=$?"
for f in default lean_128x8 lean_64x16; do echo "== $f"; tail -n 6 $o/overlap_$f.log; done
date -u
