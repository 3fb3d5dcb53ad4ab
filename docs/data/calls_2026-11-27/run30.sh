#!/usr/bin/env bash
# 2x GPU: gcommi_progress_t0 out of line (registers of k_overlap: lean 137 -> 106, default
# 160 -> 124) against HEAD (build-dev/head): the ping-pong alternating, three rounds; the overlap
# benchmark at the crossover for both, then the new build's sweep 1,2,4; the device tests,
# memcheck and racecheck, test_rma_mpi over CUDA IPC and through the proxy. One tarball.
cd "$(dirname "$0")/.."
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
R=$(mktemp -d); FINAL=$OUT; logs=$R
nvidia-smi -L | head -2; date -u
pp() { awk -F, '$1=="gcomm" && $2 ~ /pingpong/ {printf "%s/%s=%s  ", $2,$3,$6}' "$1"; }
for r in 1 2 3; do
  for v in head new; do
    bin=build-dev/bench/bench_rma; [ $v = head ] && bin=build-dev/head/bench_rma
    timeout 120 $bin --max-bytes 8 --repeats 9 --csv $R/rma_${v}_$r.csv > $R/rma_${v}_$r.log 2>&1
    echo "$r $v rc=$?: $(pp $R/rma_${v}_$r.csv)"
  done
done
ov() { # name binary args...
  local n=$1 bin=$2; shift 2
  timeout 200 $bin "$@" --csv $R/ovl_$n.csv > $R/ovl_$n.log 2>&1; echo "$n rc=$? $(grep -m1 'kernel' $R/ovl_$n.log | sed 's/.*kernel //')"
  grep "ratio both/max" $R/ovl_$n.log
}
for v in head new; do
  bin=build-dev/bench/bench_overlap; [ $v = head ] && bin=build-dev/head/bench_overlap
  ov ${v}_default $bin
  ov ${v}_lean128 $bin --lean --ranks-per-sm 8
  ov ${v}_lean64 $bin --lean --threads 64 --ranks-per-sm 16
done
date -u
ov sweep_default build-dev/bench/bench_overlap --sweep 1,2,4
ov sweep_lean64 build-dev/bench/bench_overlap --lean --threads 64 --ranks-per-sm 16 --sweep 1,2,4
date -u
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
step test_rma_device 120 $b/tests/rma/test_rma_device all 1000000
step memcheck 150 $cs --tool memcheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step racecheck 150 $cs --tool racecheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step test_rma_mpi2 90 mpirun -n 2 --bind-to none $b/tests/rma/test_rma_mpi all 200000
step test_rma_mpi2_proxy 90 mpirun -n 2 --bind-to none -x GCOMM_FORCE_PROXY=1 $b/tests/rma/test_rma_mpi all 30000
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $R/memcheck.log $R/racecheck.log
grep -hE "checks|FAIL" $R/test_rma_*.log | tail -n 8
printf '%s\n' "${results[@]}"
tar czf $FINAL/run30.tgz -C $R .
date -u
