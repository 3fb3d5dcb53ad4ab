#!/usr/bin/env bash
# 4 GPUs: the released entry's straight take (586c3b5) in jobs of more than two GPUs, where the
# poll keeps only the own lane's head whole: test_rma_device on 4 GPUs (inline and released),
# test_rma_mpi on 4 processes over CUDA IPC and through the proxy
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
tar czf $FINAL/run44.tgz -C $R .
date -u
