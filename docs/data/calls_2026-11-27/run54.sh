#!/usr/bin/env bash
# 4 GPUs: the polling loops' drain with the heads' notification words (76bca51), whose loop for
# jobs of more than two GPUs runs only there: test_rma_device on 4 GPUs (inline and released),
# test_rma_mpi on 4 processes over CUDA IPC (inline, released) and through the proxy; the world
# barrier and ping-pong of a 4-GPU job, base (91841cc) and new alternating, two rounds.
cd "$(dirname "$0")/.."
export GPU_DIR=build-dev
. scripts/gpu-lib.sh
R=$(mktemp -d); FINAL=$OUT; logs=$R
nvidia-smi -L; date -u
export LD_LIBRARY_PATH=$PWD/build-dev/src
step test_rma_device4 120 $b/tests/rma/test_rma_device all 1000000
step test_rma_device4_rel 120 env GCOMM_INLINE_MAX=0 $b/tests/rma/test_rma_device all 300000
step test_rma_mpi4 90 mpirun -n 4 --bind-to none -x LD_LIBRARY_PATH $b/tests/rma/test_rma_mpi all 100000
step test_rma_mpi4_rel 90 mpirun -n 4 --bind-to none -x LD_LIBRARY_PATH -x GCOMM_INLINE_MAX=0 $b/tests/rma/test_rma_mpi all 100000
step test_rma_mpi4_proxy 90 mpirun -n 4 --bind-to none -x LD_LIBRARY_PATH -x GCOMM_FORCE_PROXY=1 $b/tests/rma/test_rma_mpi all 30000
grep -hE "checks|FAIL" $R/test_rma_*.log | tail -n 16
printf '%s\n' "${results[@]}"
pp() { awk -F, '$1=="gcomm" && ($2 ~ /pingpong/ || $2 ~ /barrier/) && $3 <= 8 {printf "%s/%s/%s=%s  ", $2,$3,$4,$6}' "$1"; }
for r in 1 2; do
  for v in base new; do
    rb=build-dev/bench/bench_rma; [ $v = base ] && rb=build-dev/base/bench_rma
    timeout 90 $rb --max-bytes 8 --repeats 9 --csv $R/rma4_${v}_$r.csv > $R/rma4_${v}_$r.log 2>&1
    echo "$r $v rma rc=$?: $(pp $R/rma4_${v}_$r.csv)"
  done
done
tar czf $FINAL/run54.tgz -C $R .
date -u
