#!/usr/bin/env bash
# 2 GPUs: gcommi_progress_t0 with the heads' notification words only (gcommi_lanes_published:
# both lanes' words in one asm statement) instead of run52's per-lane polls, which made the
# world barrier 0.2-0.35 us slower. Device tests on it; then base (91841cc), new1 (run52's
# per-lane polls) and new2 (this) alternating: bench_rma --max-bytes 8 (ping-pong, barrier),
# hdiff_gcomm nj 320 and 1280, stencil_dcuda; bench_overlap --lean for new2.
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
printf '%s\n' "${results[@]}"
pp() { awk -F, '$1=="gcomm" && ($2 ~ /pingpong/ || $2 ~ /barrier/) && $3 <= 8 {printf "%s/%s/%s=%s  ", $2,$3,$4,$6}' "$1"; }
for r in 1 2; do
  for v in base new1 new2; do
    [ $v = new1 ] && [ $r = 2 ] && continue
    case $v in
      base) rb=build-dev/base/bench_rma; st=build-dev/base/stencil_dcuda; hd=build-dev/base/hdiff_gcomm ;;
      new1) rb=build-dev/new1/bench_rma; st=; hd=build-dev/new1/hdiff_gcomm ;;
      new2) rb=build-dev/bench/bench_rma; st=build-dev/apps/stencil/stencil_dcuda; hd=build-dev/apps/stencil/hdiff_gcomm ;;
    esac
    timeout 90 $rb --max-bytes 8 --repeats 9 --csv $R/rma_${v}_$r.csv > $R/rma_${v}_$r.log 2>&1
    echo "$r $v rma rc=$?: $(pp $R/rma_${v}_$r.csv)"
    s=""; [ -n "$st" ] && s=$(timeout 60 $st --ni 512 --nj-per-rank 16 --steps 100 2>&1 | grep -E "^time per" | sed 's/in-kernel.*//')
    h=""; for nj in 320 1280; do h="$h nj$nj: $(timeout 60 $hd --ni 128 --nj $nj --nk 26 --steps 100 2>&1 | grep -E "^time per|verified" | sed 's/in-kernel.*//;s/(max abs.*//;s/time per iteration//' | tr '\n' ' ')"; done
    echo "$r $v stencil: $s | hdiff $h"
  done
done
sum() { grep -E "kernel|ratio both|VERIF|all verified|rror" "$1" | sed 's/(target <= \(....\): \([A-Za-z]*\)); no overlap at all would be/\2;/; s/ (compute alone.*//' | cut -c1-160; }
timeout 120 build-dev/bench/bench_overlap --lean --ranks-per-sm 8 --iters 10000 --sweep 1,2,4 --csv $R/ov_new2_lean.csv > $R/ov_new2_lean.log 2>&1
echo "== new2 lean rc=$?"; sum $R/ov_new2_lean.log
tar czf $FINAL/run53.tgz -C $R .
date -u
