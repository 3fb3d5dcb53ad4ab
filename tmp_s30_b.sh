#!/bin/bash
# temporary (session 30): machine B's Xeon, CPU only: tests of the gathering pack, then the whole bench
set -u
lscpu | grep -E "Model name|^CPU\(s\)|L3|L2"; date -u
cmake -S . -B /tmp/bcpu -DGCOMM_CUDA=OFF -DCMAKE_BUILD_TYPE=Release > $OUT/cmake.log 2>&1 || { tail $OUT/cmake.log; exit 1; }
make -C /tmp/bcpu -j16 > $OUT/make.log 2>&1 || { tail -20 $OUT/make.log; exit 1; }
(cd /tmp/bcpu && ctest -R "test_dt_" -j8 2>&1 | tail -3)
date -u
taskset -c 2 /tmp/bcpu/bench/bench_pack_cpu --min-bytes 1M --csv $OUT/pack_cpu_xeon_b_s30_2026-11-29.csv 2> $OUT/whole_b.log
date -u
grep -E "targets|memcpy:|MPI on|rows," $OUT/whole_b.log
grep -E "^(vector_bl256|lower_tri) " $OUT/whole_b.log
