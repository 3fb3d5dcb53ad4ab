#!/usr/bin/env bash
# 2 GPUs: where the released notified put's time goes between the GPUs (a put > 8 B takes this
# path; 1 KiB: 3.9 us one way against NVSHMEM put_signal's 2.8): bench_rma_parts --peer (the
# ingredients stacked) and bench_rma_prof --peer (thread 0's cycles between the put's marks),
# inline (default) and released (GCOMM_INLINE_MAX=0); same GPU once each for comparison
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/build-dev/src
R=$(mktemp -d); FINAL=$OUT
nvidia-smi -L; date -u
for m in 8 0; do
  for p in --peer ""; do
    n=$([ -n "$p" ] && echo peer || echo same)
    GCOMM_INLINE_MAX=$m timeout 60 build-dev/bench/bench_rma_parts $p --csv $R/parts_${n}_$m.csv > $R/parts_${n}_$m.log 2>&1
    echo "== parts $n inline_max=$m rc=$?"; grep -E "^(flag|relaxed|barriers|payload|entry|reserve|credit|origin|acqfence|gcomm) " $R/parts_${n}_$m.log
    GCOMM_INLINE_MAX=$m timeout 60 build-dev/bench/bench_rma_prof $p > $R/prof_${n}_$m.log 2>&1
    echo "== prof $n inline_max=$m rc=$?"; grep -A12 "put path of the last" $R/prof_${n}_$m.log | head -14
  done
done
tar czf $FINAL/run42.tgz -C $R .
date -u
