#!/usr/bin/env bash
# 2 GPUs: gcommi_progress_t0 polling each lane's head itself (no peek): lean overlap kernel 110
# -> 96 registers. The device tests on the new build; then base (build-dev/base: HEAD 91841cc's
# binaries) and new alternating, two rounds: bench_rma --max-bytes 8 (ping-pong, barrier),
# stencil_dcuda, hdiff_gcomm nj 320; bench_overlap --lean (4 -> 5 ranks of 128 per SM) and the
# default kernel, 10000 iterations, sweep 1 / 2 / 4, once each.
cd "$(dirname "$0")/.."
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
R=$(mktemp -d); FINAL=$OUT; logs=$R
nvidia-smi -L; date -u
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
export LD_LIBRARY_PATH=$PWD/build-dev/src
step test_rma_device 150 $b/tests/rma/test_rma_device all 1000000
step test_rma_device_rel 150 env GCOMM_INLINE_MAX=0 $b/tests/rma/test_rma_device all 300000
step memcheck 150 $cs --tool memcheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step racecheck 150 $cs --tool racecheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step test_rma_mpi2 90 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH $b/tests/rma/test_rma_mpi all 200000
step test_rma_mpi2_proxy 90 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x GCOMM_FORCE_PROXY=1 $b/tests/rma/test_rma_mpi all 30000
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $R/memcheck.log $R/racecheck.log
grep -hE "checks|FAIL" $R/*test_rma_*.log | tail -n 8
printf '%s\n' "${results[@]}"
pp() { awk -F, '$1=="gcomm" && ($2 ~ /pingpong/ || $2 ~ /barrier/) && $3 <= 8 {printf "%s/%s/%s=%s  ", $2,$3,$4,$6}' "$1"; }
for r in 1 2; do
  for v in base new; do
    if [ $v = base ]; then d=build-dev/base; rb=$d/bench_rma; st=$d/stencil_dcuda; hd=$d/hdiff_gcomm
    else d=build-dev; rb=$d/bench/bench_rma; st=$d/apps/stencil/stencil_dcuda; hd=$d/apps/stencil/hdiff_gcomm; fi
    timeout 90 $rb --max-bytes 8 --repeats 9 --csv $R/rma_${v}_$r.csv > $R/rma_${v}_$r.log 2>&1
    echo "$r $v rma rc=$?: $(pp $R/rma_${v}_$r.csv)"
    s=$(timeout 60 $st --ni 512 --nj-per-rank 16 --steps 100 2>&1 | grep -E "^time per|verified" | sed 's/in-kernel.*//;s/(max abs.*//' | tr '\n' ' ')
    h=$(timeout 60 $hd --ni 128 --nj 320 --nk 26 --steps 100 2>&1 | grep -E "^time per|verified" | sed 's/in-kernel.*//;s/(max abs.*//' | tr '\n' ' ')
    echo "$r $v stencil: $s | hdiff320: $h"
  done
done
sum() { grep -E "kernel|ratio both|VERIF|all verified|rror" "$1" | sed 's/(target <= \(....\): \([A-Za-z]*\)); no overlap at all would be/\2;/; s/ (compute alone.*//' | cut -c1-160; }
for v in base new; do
  ob=build-dev/bench/bench_overlap; [ $v = base ] && ob=build-dev/base/bench_overlap
  for k in lean default; do
    a=""; [ $k = lean ] && a="--lean --ranks-per-sm 8"
    timeout 120 $ob $a --iters 10000 --sweep 1,2,4 --csv $R/ov_${v}_$k.csv > $R/ov_${v}_$k.log 2>&1
    echo "== $v $k rc=$?"; sum $R/ov_${v}_$k.log
  done
done
tar czf $FINAL/run52.tgz -C $R .
date -u
