#!/usr/bin/env bash
# 2x H200 only, session 27 (after run78): bench_rma's whole sweep (0 B to 64 MB, bandwidths,
# aggregate) with NVSHMEM to 1 MB in the same call, and the horizontal-diffusion sweep (gcomm
# against its MPI-CUDA twin, every run verified), with the new wait loop and small put.
cd "$(dirname "$0")/.."
nvidia-smi -L; date -u
if ! nvidia-smi -L | head -1 | grep -q H200 || [ "$(nvidia-smi -L | wc -l)" -lt 2 ]; then echo "not an H200 pair"; exit 0; fi
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
R=$(mktemp -d); FINAL=$OUT; logs=$R
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
step bench_rma_full 240 $b/bench/bench_rma --csv $R/rma_full.csv
OUT=$R BENCH_TIMEOUT=150 timeout 200 bash scripts/run-nvshmem-bench.sh --max-bytes 1M > $R/nvshmem_run.log 2>&1
echo "nvshmem rc=$?"
csv=$R/hdiff_sweep.csv
echo "nj_per_gpu,gpus,gcomm_us,twin_us,twin_halo_us,twin_halo_share,speedup,verified" >"$csv"
for nj in 32 320 1280 5120; do
  g=$(timeout 120 $b/apps/stencil/hdiff_gcomm --ni 128 --nj $nj --nk 26 --steps 100 2>&1)
  t=$(timeout 120 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH $b/apps/stencil/hdiff_mpicuda --ni 128 --nj $nj --nk 26 --steps 100 2>&1)
  gu=$(echo "$g" | sed -n 's/^time per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
  tu=$(echo "$t" | sed -n 's/^time per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
  hu=$(echo "$t" | sed -n 's/^halo exchange per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
  ok=$(echo "$g$t" | grep -c "verified: yes")
  echo "$nj,2,$gu,$tu,$hu,$(awk -v h="$hu" -v t="$tu" 'BEGIN{if(t>0)printf "%.3f",h/t}'),$(awk -v g="$gu" -v t="$tu" 'BEGIN{if(g>0)printf "%.3f",t/g}'),$([ "$ok" = 2 ] && echo yes || echo NO)" >>"$csv"
done
table "$csv"
tail -30 $R/bench_rma_full.log
awk -F, '$2 ~ /put_signal/ {print $2, $3, $6, $7}' $R/nvshmem.csv | tail -12
printf '%s\n' "${results[@]}"
tar czf $FINAL/run79.tgz -C $R .
date -u
