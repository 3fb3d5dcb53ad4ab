#!/usr/bin/env bash
# 1 GPU: hdiff_gcomm and stencil_dcuda before (build-dev/head: db9c918) and after the polling
# loops' drain went out of line (4b09d88), alternating, three rounds (hdiff_kernel is bounded to
# 64 registers: stack 736 -> 800 bytes)
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH
nvidia-smi -L | head -1; date -u
for r in 1 2 3; do
  for v in head new; do
    d=build-dev/apps/stencil; [ $v = head ] && d=build-dev/head
    for nj in 320 1280; do
      t=$(timeout 60 $d/hdiff_gcomm --ni 128 --nj $nj --nk 26 --steps 100 2>&1 | grep -E "^time per|verified" | sed 's/in-kernel.*//' | tr '\n' ' ')
      echo "$r $v hdiff nj=$nj: $t"
    done
    t=$(timeout 60 $d/stencil_dcuda --ni 512 --nj-per-rank 16 --steps 100 2>&1 | grep -E "^time per|verified" | sed 's/in-kernel.*//' | tr '\n' ' ')
    echo "$r $v stencil: $t"
  done
done
date -u
