#!/usr/bin/env bash
# 2 GPUs: main HEAD 9efea3b's device tests with the two-counter stress (04ac532/9efea3b, never
# GPU-run) from build-dev/head, then the branch wip/released-payload-store (released small put's
# payload as one 8-byte store): test_rma_device INLINE_MAX 8 and 0, memcheck, racecheck,
# test_rma_mpi IPC + proxy; bench_rma inline/released head vs branch alternating, two rounds.
cd "$(dirname "$0")/.."
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
R=$(mktemp -d); FINAL=$OUT; logs=$R
nvidia-smi -L; date -u
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
H=build-dev/head
(export LD_LIBRARY_PATH=$PWD/$H:$LD_LIBRARY_PATH
 step head_test_rma_device 120 $H/test_rma_device all 1000000
 step head_test_rma_device_rel 120 env GCOMM_INLINE_MAX=0 $H/test_rma_device all 300000
 step head_test_rma_mpi2 90 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH $H/test_rma_mpi all 200000
 step head_test_rma_mpi2_proxy 90 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x GCOMM_FORCE_PROXY=1 $H/test_rma_mpi all 30000
 printf '%s\n' "${results[@]}" > $R/head_results.txt)
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
pp() { awk -F, '$1=="gcomm" && $2 ~ /pingpong/ {printf "%s/%s=%s  ", $2,$3,$6}' "$1"; }
for r in 1 2; do
  for v in head new; do
    bin=build-dev/bench/bench_rma; [ $v = head ] && bin=$H/bench_rma
    for m in 8 0; do
      LD_LIBRARY_PATH=$PWD/$([ $v = head ] && echo $H || echo build-dev/src) GCOMM_INLINE_MAX=$m timeout 60 $bin --max-bytes 8 --repeats 7 --csv $R/rma_${v}_${m}_$r.csv > $R/rma_${v}_${m}_$r.log 2>&1
      echo "$r $v inline_max=$m rc=$?: $(pp $R/rma_${v}_${m}_$r.csv)"
    done
  done
done
step test_rma_device 120 $b/tests/rma/test_rma_device all 1000000
step test_rma_device_rel 120 env GCOMM_INLINE_MAX=0 $b/tests/rma/test_rma_device all 300000
step memcheck 150 $cs --tool memcheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step racecheck 150 $cs --tool racecheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step memcheck_rel 150 env GCOMM_INLINE_MAX=0 $cs --tool memcheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step test_rma_mpi2 90 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH $b/tests/rma/test_rma_mpi all 200000
step test_rma_mpi2_proxy 90 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x GCOMM_FORCE_PROXY=1 $b/tests/rma/test_rma_mpi all 30000
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $R/memcheck*.log $R/racecheck.log
grep -hE "checks|FAIL" $R/*test_rma_*.log | tail -n 16
echo "== head (main 9efea3b)"; cat $R/head_results.txt
echo "== branch"; printf '%s\n' "${results[@]}"
tar czf $FINAL/run37.tgz -C $R .
date -u
