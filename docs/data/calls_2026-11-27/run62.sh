#!/usr/bin/env bash
# 4 GPUs, session 24: run61's change (a lone peer lane's notification word handed on by the peek
# in jobs of more than two GPUs) with the inline payload's byte loop out of line only where the
# drain is (GCOMMI_POLL_FN: hdiff_gcomm, which inlines it, keeps its 576-byte stack; run61's
# plain call cost it 1.3%). The whole GPU suite on the four GPUs; the device tests on 4 GPUs;
# then base (d7712bf) and new alternating, two rounds: bench_rma --max-bytes 8 in a job of four
# and a pair's job (GCOMM_DEVICES=0,1), hdiff_gcomm nj 320/1280 and stencil_dcuda on the pair,
# and the lean overlap kernel (8 x 128 asked, 5 per SM) on the pair at 1/2/4x.
cd "$(dirname "$0")/.."
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
R=$(mktemp -d); FINAL=$OUT; logs=$R
nvidia-smi -L; date -u
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
export LD_LIBRARY_PATH=$PWD/build-dev/src
OUT=$R/suite timeout 200 bash scripts/gpu-check.sh --no-build --no-cpu --no-bench > $R/gpu-check.out 2>&1
echo "gpu-check rc=$?"; tail -21 $R/gpu-check.out
step test_rma_device4 120 $b/tests/rma/test_rma_device all 1000000
step test_rma_device4_rel 120 env GCOMM_INLINE_MAX=0 $b/tests/rma/test_rma_device all 300000
step memcheck4 150 $cs --tool memcheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step test_rma_mpi4 90 mpirun -n 4 --bind-to none -x LD_LIBRARY_PATH $b/tests/rma/test_rma_mpi all 100000
step test_rma_mpi4_proxy 90 mpirun -n 4 --bind-to none -x LD_LIBRARY_PATH -x GCOMM_FORCE_PROXY=1 $b/tests/rma/test_rma_mpi all 30000
grep -hE "ERROR SUMMARY" $R/memcheck4.log
grep -hE "checks|FAIL" $R/test_rma_*.log | sort | uniq -c | head -n 12
printf '%s\n' "${results[@]}"
pp() { awk -F, '$1=="gcomm" && ($2 ~ /pingpong/ || $2 ~ /barrier/) && $3 <= 8 {printf "%s/%s/%s=%s  ", $2,$3,$5,$6}' "$1"; }
for r in 1 2; do
  for v in base new; do
    bd=build-dev; [ $v = base ] && bd=build-dev/base
    rb=$bd/bench/bench_rma; [ $v = base ] && rb=$bd/bench_rma
    timeout 90 $rb --max-bytes 8 --repeats 9 --csv $R/rma4_${v}_$r.csv > $R/rma4_${v}_$r.log 2>&1
    echo "$r $v job4 rc=$?: $(pp $R/rma4_${v}_$r.csv)"
    GCOMM_DEVICES=0,1 timeout 90 $rb --max-bytes 8 --repeats 9 --csv $R/rma2_${v}_$r.csv > $R/rma2_${v}_$r.log 2>&1
    echo "$r $v job2 rc=$?: $(pp $R/rma2_${v}_$r.csv)"
    st=build-dev/apps/stencil/stencil_dcuda; hd=build-dev/apps/stencil/hdiff_gcomm
    [ $v = base ] && st=build-dev/base/stencil_dcuda && hd=build-dev/base/hdiff_gcomm
    s=$(GCOMM_DEVICES=0,1 timeout 60 $st --ni 512 --nj-per-rank 16 --steps 100 2>&1 | grep -E "^time per" | sed 's/in-kernel.*//')
    h=""; for nj in 320 1280; do h="$h nj$nj: $(GCOMM_DEVICES=0,1 timeout 60 $hd --ni 128 --nj $nj --nk 26 --steps 100 2>&1 | grep -E "^time per|verified" | sed 's/in-kernel.*//;s/(max abs.*//;s/time per iteration//' | tr '\n' ' ')"; done
    echo "$r $v pair: stencil $s | hdiff $h"
  done
done
sum() { grep -E "ratio both|VERIF|rror" "$1" | sed 's/ (compute alone.*//' | cut -c1-150; }
for v in base new; do
  ob=build-dev/bench/bench_overlap; [ $v = base ] && ob=build-dev/base/bench_overlap
  GCOMM_DEVICES=0,1 timeout 150 $ob --lean --ranks-per-sm 8 --sweep 1,2,4 --csv $R/ov_lean_$v.csv > $R/ov_lean_$v.log 2>&1
  echo "== overlap lean $v rc=$?"; grep -E "ranks|kernel" $R/ov_lean_$v.log | head -2 | cut -c1-150; sum $R/ov_lean_$v.log
done
tar czf $FINAL/run62.tgz -C $R .
date -u
