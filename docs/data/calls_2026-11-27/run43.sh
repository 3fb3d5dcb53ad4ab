#!/usr/bin/env bash
# 2 GPUs: a wait takes a matching released entry (a put of more than 8 B) straight, as it took
# inline ones (gcommi_take_one_t0). Before (build-dev/base: 8af2717) and after, alternating, two
# rounds: bench_rma ping-pong 0 B .. 8 KiB and released 0/8 B (GCOMM_INLINE_MAX=0);
# bench_overlap at the crossover; stencil_dcuda, hdiff_gcomm; bench_rma_prof (thread 0's cycles);
# NVSHMEM's put_signal 0 B .. 8 KiB in the same call; the device tests on the new build.
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
    if [ $v = base ]; then d=build-dev/base; lib=$PWD/build-dev/base; rb=$d/bench_rma; ob=$d/bench_overlap; st=$d/stencil_dcuda; hd=$d/hdiff_gcomm
    else d=build-dev; lib=$PWD/build-dev/src; rb=$d/bench/bench_rma; ob=$d/bench/bench_overlap; st=$d/apps/stencil/stencil_dcuda; hd=$d/apps/stencil/hdiff_gcomm; fi
    export LD_LIBRARY_PATH=$lib
    timeout 90 $rb --max-bytes 8K --repeats 7 --csv $R/rma_${v}_$r.csv > $R/rma_${v}_$r.log 2>&1
    echo "$r $v rma rc=$?: $(pp $R/rma_${v}_$r.csv)"
    GCOMM_INLINE_MAX=0 timeout 60 $rb --max-bytes 8 --repeats 7 --csv $R/rel_${v}_$r.csv > $R/rel_${v}_$r.log 2>&1
    echo "$r $v released rc=$?: $(pp $R/rel_${v}_$r.csv)"
    timeout 120 $ob --csv $R/ov_${v}_$r.csv > $R/ov_${v}_$r.log 2>&1; echo "$r $v ov4x128 rc=$?: $(ov $R/ov_${v}_$r.log)"
    s=$(timeout 60 $st --ni 512 --nj-per-rank 16 --steps 100 2>&1 | grep -E "^time per|verified" | sed 's/in-kernel.*//;s/(max abs.*//' | tr '\n' ' ')
    h=$(timeout 60 $hd --ni 128 --nj 320 --nk 26 --steps 100 2>&1 | grep -E "^time per|verified" | sed 's/in-kernel.*//;s/(max abs.*//' | tr '\n' ' ')
    echo "$r $v stencil: $s | hdiff320: $h"
  done
done
for v in base new; do
  if [ $v = base ]; then pb=build-dev/base/bench_rma_prof; export LD_LIBRARY_PATH=$PWD/build-dev/base; else pb=build-dev/bench/bench_rma_prof; export LD_LIBRARY_PATH=$PWD/build-dev/src; fi
  for p in "" --peer; do
    GCOMM_INLINE_MAX=0 timeout 60 $pb $p > $R/prof_${v}_rel$p.log 2>&1
    echo "prof $v released $p: $(grep -E '^gcomm ' $R/prof_${v}_rel$p.log | head -1) $(grep 'put path' $R/prof_${v}_rel$p.log | sed 's/.*rank_impl.h)://')"
  done
done
export LD_LIBRARY_PATH=$PWD/build-dev/src
OUT=$R timeout 300 bash scripts/run-nvshmem-bench.sh --max-bytes 8K > $R/nvshmem_run.log 2>&1
echo "nvshmem rc=$?: $(awk -F, '$2 == "pingpong_put_signal" && $3 <= 8192 {printf "%s=%s ", $3, $6}' $R/nvshmem.csv)"
step test_rma_device 120 $b/tests/rma/test_rma_device all 1000000
step test_rma_device_rel 120 env GCOMM_INLINE_MAX=0 $b/tests/rma/test_rma_device all 300000
step memcheck 150 $cs --tool memcheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step racecheck 150 $cs --tool racecheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step racecheck_rel 150 env GCOMM_INLINE_MAX=0 $cs --tool racecheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step test_rma_mpi2 90 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH $b/tests/rma/test_rma_mpi all 200000
step test_rma_mpi2_proxy 90 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x GCOMM_FORCE_PROXY=1 $b/tests/rma/test_rma_mpi all 30000
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $R/memcheck.log $R/racecheck*.log
grep -hE "checks|FAIL" $R/test_rma_*.log | tail -n 8
printf '%s\n' "${results[@]}"
tar czf $FINAL/run43.tgz -C $R .
date -u
