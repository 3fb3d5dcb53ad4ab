#!/usr/bin/env bash
# 4 GPUs, session 24: the wait's peek in jobs of more than two GPUs hands on a lone peer lane's
# notification word (its inline words marked unpublished), so that the straight take serves a
# notification between GPUs there too (was: the drain's reload, 1,734 cycles). Tests on 4, 3
# and 2 GPUs (device and processes, memcheck, racecheck), then base (d7712bf) and new
# alternating, two rounds: bench_rma --max-bytes 8 in a job of four and in a pair's job
# (GCOMM_DEVICES=0,1), and bench_rma_prof --peer (cycles of the take) in a job of four.
cd "$(dirname "$0")/.."
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
R=$(mktemp -d); FINAL=$OUT; logs=$R
nvidia-smi -L; date -u
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
export LD_LIBRARY_PATH=$PWD/build-dev/src
step test_rma_device4 120 $b/tests/rma/test_rma_device all 1000000
step test_rma_device4_rel 120 env GCOMM_INLINE_MAX=0 $b/tests/rma/test_rma_device all 300000
step test_rma_device3 120 env GCOMM_DEVICES=0,1,2 $b/tests/rma/test_rma_device all 1000000
step test_rma_device2 120 env GCOMM_DEVICES=2,3 $b/tests/rma/test_rma_device all 1000000
step memcheck4 150 $cs --tool memcheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step racecheck4 150 $cs --tool racecheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step test_rma_mpi4 90 mpirun -n 4 --bind-to none -x LD_LIBRARY_PATH $b/tests/rma/test_rma_mpi all 100000
step test_rma_mpi4_rel 90 mpirun -n 4 --bind-to none -x LD_LIBRARY_PATH -x GCOMM_INLINE_MAX=0 $b/tests/rma/test_rma_mpi all 100000
step test_rma_mpi4_proxy 90 mpirun -n 4 --bind-to none -x LD_LIBRARY_PATH -x GCOMM_FORCE_PROXY=1 $b/tests/rma/test_rma_mpi all 30000
step test_rma_mpi3 90 mpirun -n 3 --bind-to none -x LD_LIBRARY_PATH $b/tests/rma/test_rma_mpi all 100000
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $R/memcheck4.log $R/racecheck4.log
grep -hE "checks|FAIL" $R/test_rma_*.log | sort | uniq -c | head -n 20
printf '%s\n' "${results[@]}"
pp() { awk -F, '$1=="gcomm" && ($2 ~ /pingpong/ || $2 ~ /barrier/) && $3 <= 8 {printf "%s/%s/%s=%s  ", $2,$3,$5,$6}' "$1"; }
for r in 1 2; do
  for v in base new; do
    rb=build-dev/bench/bench_rma; [ $v = base ] && rb=build-dev/base/bench_rma
    timeout 90 $rb --max-bytes 8 --repeats 9 --csv $R/rma4_${v}_$r.csv > $R/rma4_${v}_$r.log 2>&1
    echo "$r $v job4 rc=$?: $(pp $R/rma4_${v}_$r.csv)"
    GCOMM_DEVICES=0,1 timeout 90 $rb --max-bytes 8 --repeats 9 --csv $R/rma2_${v}_$r.csv > $R/rma2_${v}_$r.log 2>&1
    echo "$r $v job2 rc=$?: $(pp $R/rma2_${v}_$r.csv)"
  done
done
for r in 1 2; do
  for v in base new; do
    st=build-dev/apps/stencil/stencil_dcuda; hd=build-dev/apps/stencil/hdiff_gcomm
    [ $v = base ] && st=build-dev/base/stencil_dcuda && hd=build-dev/base/hdiff_gcomm
    s=$(GCOMM_DEVICES=0,1 timeout 60 $st --ni 512 --nj-per-rank 16 --steps 100 2>&1 | grep -E "^time per" | sed 's/in-kernel.*//')
    h=""; for nj in 320 1280; do h="$h nj$nj: $(GCOMM_DEVICES=0,1 timeout 60 $hd --ni 128 --nj $nj --nk 26 --steps 100 2>&1 | grep -E "^time per|verified" | sed 's/in-kernel.*//;s/(max abs.*//;s/time per iteration//' | tr '\n' ' ')"; done
    echo "$r $v pair: stencil $s | hdiff $h"
  done
done
for v in base new; do
  rp=build-dev/bench/bench_rma_prof; [ $v = base ] && rp=build-dev/base/bench_rma_prof
  timeout 90 $rp --peer --repeats 5 > $R/prof4_$v.log 2>&1; echo "prof $v rc=$?"; grep -E "^gcomm |put path|verified" $R/prof4_$v.log
done
tar czf $FINAL/run61.tgz -C $R .
date -u
