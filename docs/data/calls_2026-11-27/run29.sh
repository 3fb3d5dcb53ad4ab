#!/usr/bin/env bash
# 2x GPU (H200 asked): issue 4's figures in one call - the small put's latency (HEAD, inline and
# released, three rounds) with NVSHMEM's put_signal in the same call; the overlap benchmark at the
# crossover (default kernel, lean 8 x 128 and 16 x 64 per SM); the mini-apps of 4f4a0cd
# (app_step_time, app_grid) on 1 and 2 GPUs with verification (scale-check.sh --no-matrix);
# everything in one tarball (the call brings back few files)
cd "$(dirname "$0")/.."
export GPU_DIR=build-dev
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
R=$(mktemp -d); FINAL=$OUT
nvidia-smi -L | head -2; date -u
mkdir -p $R/lat $R/ovl $R/scale
OUT=$R/lat bash scripts/rma-latency.sh --rounds 3 --no-prof > $R/lat/summary.txt 2>&1
grep -A12 "one-way" $R/lat/summary.txt
date -u
b=build-dev; o=$R/ovl
timeout 200 $b/bench/bench_overlap --csv $o/overlap_default.csv > $o/overlap_default.log 2>&1; echo "default rc=$?"
timeout 200 $b/bench/bench_overlap --lean --ranks-per-sm 8 --csv $o/overlap_lean_128x8.csv > $o/overlap_lean_128x8.log 2>&1; echo "lean 128x8 rc=$?"
timeout 200 $b/bench/bench_overlap --lean --threads 64 --ranks-per-sm 16 --csv $o/overlap_lean_64x16.csv > $o/overlap_lean_64x16.log 2>&1; echo "lean 64x16 rc=$?"
for f in default lean_128x8 lean_64x16; do echo "== $f"; grep -E "ratio both/max" $o/overlap_$f.log; tail -n 1 $o/overlap_$f.log; done
date -u
OUT=$R/scale timeout 400 bash scripts/scale-check.sh --no-matrix > $R/scale/summary.txt 2>&1; echo "scale rc=$?"
tail -n 12 $R/scale/summary.txt
tar czf $FINAL/run29.tgz -C $R .
date -u
