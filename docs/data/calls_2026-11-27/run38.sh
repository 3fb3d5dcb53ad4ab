#!/usr/bin/env bash
# one GPU: where the exchange's instructions go. bench_overlap (-lineinfo build), exchange only,
# default 4 x 128 and bounded 8 x 128: ncu SourceCounters of one launch, per-SASS counts as CSV.
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/build-dev/src:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0 GCOMM_TIMEOUT_MS=20000
R=$(mktemp -d)
nvidia-smi -L | head -1; date -u
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
B=build-dev/bench/bench_overlap
$B --no-compute --iters 500 --repeats 5 > $R/plain_default.txt 2>&1; tail -4 $R/plain_default.txt
$B --no-compute --iters 500 --repeats 5 --bounded 8 --ranks-per-sm 8 > $R/plain_b8.txt 2>&1; tail -4 $R/plain_b8.txt
for cfg in "default|k_overlap_deep$|" "b8|k_overlap_deep_bounded8|--bounded 8 --ranks-per-sm 8"; do
  IFS='|' read name kre extra <<<"$cfg"
  timeout 240 $NCU --kernel-name regex:"$kre" --launch-skip 1 --launch-count 1 --section SourceCounters \
    --metrics smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum \
    -o $R/x_$name $B --no-compute --iters 200 --repeats 5 $extra > $R/ncu_$name.log 2>&1
  echo "$name ncu rc=$?"; tail -3 $R/ncu_$name.log
  $NCU -i $R/x_$name.ncu-rep --page source --csv --print-source sass > $R/src_sass_$name.csv 2>&1
  $NCU -i $R/x_$name.ncu-rep --page source --csv --print-source cuda,sass > $R/src_cuda_$name.csv 2>&1
  $NCU -i $R/x_$name.ncu-rep --page details --csv > $R/details_$name.csv 2>&1
  grep -E "inst_executed.sum|issue_active|time_duration" $R/details_$name.csv | head -5
  wc -l $R/src_*_$name.csv
done
rm -f $R/*.ncu-rep
tar czf $OUT/run38.tgz -C $R .
date -u
