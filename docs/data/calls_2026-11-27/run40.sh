#!/usr/bin/env bash
# 2 GPUs: a block copy of at most one aligned 16-byte word per thread takes one load and one
# store (no bulk loop). Before (build-dev/base: 20d4213) and after, alternating, two rounds:
# bench_rma ping-pong 0 B .. 8 KiB; bench_overlap exchange only and the crossover, default 4x128
# and bounded 8x128; stencil_dcuda, hdiff_gcomm on both GPUs. Then the device tests on the new.
cd "$(dirname "$0")/.."
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
R=$(mktemp -d); FINAL=$OUT; logs=$R
nvidia-smi -L; date -u
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
pp() { awk -F, '$1=="gcomm" && $2 ~ /pingpong/ {printf "%s/%s=%s ", substr($2,10),$3,$6}' "$1"; }
ov() { awk '$2=="both" || $2=="exchange" || $2=="compute" {printf "%s/%s=%s%s ", $1,$2,$8,($2=="both"?"("$9")":"")}' "$1"; }
for r in 1 2; do
  for v in base new; do
    if [ $v = base ]; then d=build-dev/base; lib=$PWD/build-dev/base; else d=build-dev; lib=$PWD/build-dev/src; fi
    rb=$d/bench_rma; [ $v = new ] && rb=$d/bench/bench_rma
    ob=$d/bench_overlap; [ $v = new ] && ob=$d/bench/bench_overlap
    st=$d/stencil_dcuda; [ $v = new ] && st=$d/apps/stencil/stencil_dcuda
    hd=$d/hdiff_gcomm; [ $v = new ] && hd=$d/apps/stencil/hdiff_gcomm
    export LD_LIBRARY_PATH=$lib
    timeout 90 $rb --max-bytes 8K --repeats 7 --csv $R/rma_${v}_$r.csv > $R/rma_${v}_$r.log 2>&1
    echo "$r $v rma rc=$?: $(pp $R/rma_${v}_$r.csv)"
    timeout 120 $ob --csv $R/ov_${v}_$r.csv > $R/ov_${v}_$r.log 2>&1; echo "$r $v ov4x128 rc=$?: $(ov $R/ov_${v}_$r.log)"
    timeout 120 $ob --bounded 8 --ranks-per-sm 8 --csv $R/ovb8_${v}_$r.csv > $R/ovb8_${v}_$r.log 2>&1; echo "$r $v ovb8 rc=$?: $(ov $R/ovb8_${v}_$r.log)"
    s=$(timeout 60 $st --ni 512 --nj-per-rank 16 --steps 100 2>&1 | grep -E "^time per|verified" | sed 's/in-kernel.*//' | tr '\n' ' ')
    h=$(timeout 60 $hd --ni 128 --nj 320 --nk 26 --steps 100 2>&1 | grep -E "^time per|verified" | sed 's/in-kernel.*//' | tr '\n' ' ')
    echo "$r $v stencil: $s"; echo "$r $v hdiff320: $h"
  done
done
export LD_LIBRARY_PATH=$PWD/build-dev/src
step test_rma_device 120 $b/tests/rma/test_rma_device all 1000000
step test_rma_device_rel 120 env GCOMM_INLINE_MAX=0 $b/tests/rma/test_rma_device all 300000
step memcheck 150 $cs --tool memcheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step racecheck 150 $cs --tool racecheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step test_rma_mpi2 90 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH $b/tests/rma/test_rma_mpi all 200000
step test_rma_mpi2_proxy 90 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x GCOMM_FORCE_PROXY=1 $b/tests/rma/test_rma_mpi all 30000
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $R/memcheck.log $R/racecheck.log
grep -hE "checks|FAIL" $R/test_rma_*.log | tail -n 8
printf '%s\n' "${results[@]}"
tar czf $FINAL/run40.tgz -C $R .
date -u
