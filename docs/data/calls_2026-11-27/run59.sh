#!/usr/bin/env bash
# One GPU machine, its host CPU (issue 2): the pack benchmark's target shapes (vector_bl256,
# lower_tri, 1-256 MiB) pinned to one core, then the ceiling (read-only strided pass, hand
# loops) for vector_bl256 at 64-256 MiB; the CPU build carried from this VM (build-bench).
cd "$(dirname "$0")/.."
R=$(mktemp -d)
export LD_LIBRARY_PATH=$PWD/build-bench/src
lscpu | grep -E "Model name|^CPU\(s\)|L2|L3|NUMA node\(s\)"; date -u; uptime
taskset -c 2 timeout 300 build-bench/bench/bench_pack_cpu --shapes vector_bl256,lower_tri --min-bytes 1M --max-bytes 256M --csv $R/pack_targets.csv > $R/pack_targets.log 2>&1
echo "pack rc=$?"; grep -vE "^(vector|lower)[a-z_0-9]*," $R/pack_targets.log | tail -30
taskset -c 2 timeout 200 build-bench/bench/bench_pack_cpu_ceiling --shapes vector_bl256 --min-bytes 64M --max-bytes 256M --repeat 2 --csv $R/ceiling.csv > $R/ceiling.log 2>&1
echo "ceiling rc=$?"; tail -40 $R/ceiling.log
tar czf $OUT/run59.tgz -C $R .
date -u
