#!/usr/bin/env bash
# 2 GPUs, session 26: hdiff_gcomm with its two kernels under mpirun (one process per GPU, CUDA IPC
# and through the proxy) and on one GPU, every run verified.
cd "$(dirname "$0")/.."
nvidia-smi -L; date -u
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
b=build-dev/apps/stencil
s() { grep -E "ranks of|time per iteration|verified"; }
for nj in 320 5120; do
  echo "== mpirun -n 2, nj $nj"; timeout 120 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH $b/hdiff_gcomm --ni 128 --nj $nj --nk 26 --steps 100 2>&1 | s
done
echo "== proxy"; timeout 120 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x GCOMM_FORCE_PROXY=1 $b/hdiff_gcomm --blocks-per-gpu 16 2>&1 | s
echo "== one GPU, nj 5120, --ranks-per-sm 3 --halo lines"; CUDA_VISIBLE_DEVICES=0 timeout 120 $b/hdiff_gcomm --ni 128 --nj 5120 --nk 26 --steps 50 --ranks-per-sm 3 --halo lines 2>&1 | s
echo "== bad option"; $b/hdiff_gcomm --ranks-per-sm 4; echo "rc=$?"
date -u
