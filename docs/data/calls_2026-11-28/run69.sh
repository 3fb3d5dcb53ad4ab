#!/usr/bin/env bash
# 2x H200 only (exits at once on anything else), session 26: the rest of issue 4's H200 figures
# with the code of now: device tests and the 1,000,000-notification stress, the multi-process
# test over CUDA IPC, the unsatisfiable wait's report, memcheck and racecheck, the stencil demo,
# and the horizontal-diffusion sweep (gcomm against its MPI-CUDA twin).
cd "$(dirname "$0")/.."
nvidia-smi -L; date -u
if ! nvidia-smi -L | head -1 | grep -q H200 || [ "$(nvidia-smi -L | wc -l)" -lt 2 ]; then echo "not an H200 pair"; exit 0; fi
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
R=$(mktemp -d); FINAL=$OUT; logs=$R
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
step test_rma_device 150 $b/tests/rma/test_rma_device all 1000000
step test_rma_mpi 150 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH $b/tests/rma/test_rma_mpi all 500000
step rma_timeout 60 env GCOMM_TIMEOUT_MS=1500 $b/tests/rma/test_rma_device timeout
step memcheck 200 $cs --tool memcheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step racecheck 200 $cs --tool racecheck --error-exitcode 9 --report-api-errors no $b/tests/rma/test_rma_device small 3000
step stencil_demo 60 $b/apps/stencil/stencil_dcuda --ni 512 --nj-per-rank 16 --steps 100
csv=$R/hdiff_sweep.csv
echo "nj_per_gpu,gpus,gcomm_us,gcomm_lines_us,twin_us,twin_halo_us,twin_halo_share,speedup,verified" >"$csv"
for nj in 32 64 128 320 640 1280 2560 5120; do
  g=$(timeout 120 $b/apps/stencil/hdiff_gcomm --ni 128 --nj $nj --nk 26 --steps 100 2>&1)
  gl=$(timeout 120 $b/apps/stencil/hdiff_gcomm --ni 128 --nj $nj --nk 26 --steps 100 --halo lines 2>&1)
  t=$(timeout 120 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH $b/apps/stencil/hdiff_mpicuda --ni 128 --nj $nj --nk 26 --steps 100 2>&1)
  gu=$(echo "$g" | sed -n 's/^time per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
  glu=$(echo "$gl" | sed -n 's/^time per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
  tu=$(echo "$t" | sed -n 's/^time per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
  hu=$(echo "$t" | sed -n 's/^halo exchange per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
  ok=$(echo "$g$gl$t" | grep -c "verified: yes")
  echo "$nj,2,$gu,$glu,$tu,$hu,$(awk -v h="$hu" -v t="$tu" 'BEGIN{if(t>0)printf "%.3f",h/t}'),$(awk -v g="$gu" -v t="$tu" 'BEGIN{if(g>0)printf "%.3f",t/g}'),$([ "$ok" = 3 ] && echo yes || echo NO)" >>"$csv"
  [ $nj = 32 ] && { echo "$g" > $R/hdiff_gcomm_32.log; echo "$t" > $R/hdiff_twin_32.log; }
done
table "$csv"
grep -hE "^(ring|gather|get|overlap|log|typed|stress|errors|timeout|test_rma)|FAIL|checks" $R/test_rma_*.log $R/rma_timeout.log | head -40
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $R/memcheck.log $R/racecheck.log
grep -hE "time per|verified" $R/stencil_demo.log
printf '%s\n' "${results[@]}"
tar czf $FINAL/run69.tgz -C $R .
date -u
