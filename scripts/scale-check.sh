#!/usr/bin/env bash
# Scale-out runs of issue 6 on every GPU of the machine (1, 2, 4 or 8), over a carried build-gpu:
#   1. notified-put latency (0 and 8 B one-way) and bandwidth (all ranks of one GPU to another)
#      between every pair of GPUs, same-GPU on the diagonal: bench_rma with GCOMM_DEVICES=i,j;
#      with more than two GPUs also the latency and the world barrier in a job of all of them
#      (job_latency.csv);
#   2. weak scaling 1 -> 2 -> 4 -> 8 GPUs (as many as there are) of the horizontal diffusion
#      mini-app and of the dCUDA stencil, each on gcomm and as its MPI-CUDA twin (with the twin's
#      halo-exchange time), a fixed domain per GPU;
#   3. collectives against NCCL: none exist yet (listed, so that the script grows with them).
# CSVs and logs go to $OUT (or build-gpu/logs); short tables come last.
# Usage: scripts/scale-check.sh [--quick] [--no-matrix] [--no-weak]
set -uo pipefail
exec </dev/null
cd "$(dirname "$0")/.."
. scripts/gpu-lib.sh
quick=0 matrix=1 weak=1
for a in "$@"; do
    case $a in
    --quick) quick=1 ;;
    --no-matrix) matrix=0 ;;
    --no-weak) weak=0 ;;
    *) echo "scale-check.sh: unknown argument $a (--quick, --no-matrix, --no-weak)" >&2; exit 2 ;;
    esac
done
gpus_or_skip scale-check.sh
nvidia-smi topo -m >"$logs/topo.txt" 2>&1
reps=$([ $quick = 1 ] && echo 5 || echo 7)

# field LOG IMPL TEST BYTES COLUMN: a column (5 us, 6 GB/s) of bench_rma's table row
field() {
    awk -v i="$2" -v t="$3" -v n="$4" -v c="$5" '$1 == i && $2 == t && $3 == n { print $c; exit }' "$1"
}

if [ $matrix = 1 ]; then
    lat=$logs/matrix_latency.csv bw=$logs/matrix_bandwidth.csv
    echo "from,to,oneway_0B_us,oneway_8B_us" >"$lat"
    echo "from,to,all_ranks_GBps,copy_kernel_GBps" >"$bw"
    for i in $(seq 0 $((ngpu - 1))); do
        for j in $(seq 0 $((ngpu - 1))); do
            log=$logs/rma_${i}_${j}.log
            if [ "$i" = "$j" ]; then
                GCOMM_DEVICES=$i timeout 300 "$b/bench/bench_rma" --max-bytes 8 --repeats "$reps" \
                    >"$log" 2>&1
                t=pingpong_same a=aggregate_same
            else
                GCOMM_DEVICES=$i,$j timeout 300 "$b/bench/bench_rma" --max-bytes 8 --repeats "$reps" \
                    >"$log" 2>&1
                t=pingpong_peer a=aggregate_peer
            fi
            echo "$i,$j,$(field "$log" gcomm $t 0 5),$(field "$log" gcomm $t 8 5)" >>"$lat"
            agg=$(awk -v a="$a" '$1 == "gcomm" && $2 == a { print $6; exit }' "$log")
            ck=$(awk -v a="$a" '$1 == "copykern" && $2 == a { print $6; exit }' "$log")
            echo "$i,$j,$agg,$ck" >>"$bw"
            grep -q "NO" "$log" && echo "rma $i -> $j: a result did not verify (see $log)"
        done
    done
    # the same ping-pong in a job of every GPU (GPU 0 to itself and to GPU 1): with more than two
    # GPUs a wait polls every peer lane, which the pairs above never do
    if [ "$ngpu" -gt 2 ]; then
        job=$logs/job_latency.csv log=$logs/rma_job.log
        echo "gpus,same_0B_us,same_8B_us,peer_0B_us,peer_8B_us,barrier_2_per_gpu_us,barrier_2_per_sm_us" >"$job"
        GCOMM_DEVICES=$(seq -s, 0 $((ngpu - 1))) timeout 300 "$b/bench/bench_rma" --max-bytes 8 \
            --repeats "$reps" >"$log" 2>&1
        row=$ngpu
        for t in pingpong_same pingpong_peer; do
            for n in 0 8; do row=$row,$(field "$log" gcomm $t $n 5); done
        done
        # the world barrier of the whole job: 2 ranks per GPU, then 2 per SM (bench_rma's rows)
        for k in 1 2; do
            row=$row,$(awk -v k=$k '$1 == "gcomm" && $2 == "barrier_world" && ++n == k { print $5 }' "$log")
        done
        echo "$row" >>"$job"
        grep -q "NO" "$log" && echo "rma, job of $ngpu GPUs: a result did not verify (see $log)"
    fi
fi

if [ $weak = 1 ]; then
    csv=$logs/weak_scaling.csv
    echo "app,nj_per_gpu,gpus,gcomm_us,twin_us,twin_halo_us,verified" >"$csv"
    steps=$([ $quick = 1 ] && echo 20 || echo 100)
    # hdiff per GPU: 128 x nj x 26; nj = 320 (the paper's) and, unless --quick, 1280 (a smaller
    # halo share); the stencil 512 x 16 lines per rank
    njs=$([ $quick = 1 ] && echo 320 || echo "320 1280")
    for k in 1 2 4 8; do
        [ "$k" -gt "$ngpu" ] && break
        devs=$(seq -s, 0 $((k - 1)))
        for nj in $njs; do
            g=$(GCOMM_DEVICES=$devs timeout 300 "$b/apps/stencil/hdiff_gcomm" --ni 128 --nj "$nj" \
                --nk 26 --steps "$steps" 2>&1)
            t=$(CUDA_VISIBLE_DEVICES=$devs timeout 300 mpirun -n "$k" --bind-to none \
                "$b/apps/stencil/hdiff_mpicuda" --ni 128 --nj "$nj" --nk 26 --steps "$steps" 2>&1)
            echo "$g" >"$logs/hdiff_gcomm_${k}_$nj.log"
            echo "$t" >"$logs/hdiff_mpicuda_${k}_$nj.log"
            gu=$(echo "$g" | sed -n 's/^time per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
            tu=$(echo "$t" | sed -n 's/^time per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
            hu=$(echo "$t" | sed -n 's/^halo exchange per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
            ok=$(echo "$g$t" | grep -c "verified: yes")
            echo "hdiff,$nj,$k,$gu,$tu,$hu,$([ "$ok" = 2 ] && echo yes || echo NO)" >>"$csv"
        done
        s=$(GCOMM_DEVICES=$devs timeout 300 "$b/apps/stencil/stencil_dcuda" --ni 512 --nj-per-rank 16 \
            --steps "$steps" 2>&1)
        echo "$s" >"$logs/stencil_$k.log"
        # its twin on the same domain: stencil_dcuda's ranks per GPU (as many as its kernel has
        # resident, which the twin cannot compute) from its first line, "k GPU(s) x R ranks"
        rpg=$(echo "$s" | sed -n 's/.* GPU(s) x \([0-9]*\) ranks of .*/\1/p' | head -1)
        if [ -n "$rpg" ]; then
            t=$(CUDA_VISIBLE_DEVICES=$devs timeout 300 mpirun -n "$k" --bind-to none \
                "$b/apps/stencil/stencil_mpicuda" --ni 512 --nj-per-rank 16 --ranks-per-gpu "$rpg" \
                --steps "$steps" 2>&1)
        else
            t="stencil_dcuda printed no ranks per GPU: stencil_mpicuda not run"
        fi
        echo "$t" >"$logs/stencil_mpicuda_$k.log"
        su=$(echo "$s" | sed -n 's/^time per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
        tu=$(echo "$t" | sed -n 's/^time per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
        hu=$(echo "$t" | sed -n 's/^halo exchange per iteration: \([0-9.]*\) us.*/\1/p' | head -1)
        ok=$(printf '%s\n%s\n' "$s" "$t" | grep -c "^verified: yes")
        # both must have run the same global domain ("global NI x NJ values")
        ds=$(echo "$s" | sed -n 's/.*; global \([0-9]* x [0-9]*\) values.*/\1/p' | head -1)
        dt=$(echo "$t" | sed -n 's/.*; global \([0-9]* x [0-9]*\) values.*/\1/p' | head -1)
        if [ "$ds" != "$dt" ]; then
            echo "stencil on $k GPU(s): stencil_mpicuda's domain ($dt) is not stencil_dcuda's ($ds)"
            ok=0
        fi
        echo "stencil,16/rank,$k,$su,$tu,$hu,$([ "$ok" = 2 ] && echo yes || echo NO)" >>"$csv"
    done
fi

echo "collectives against NCCL: none in gcomm yet (nothing to run)"
[ $matrix = 1 ] && { echo "one-way latency (us), from,to:"; table "$logs/matrix_latency.csv";
                     echo "bandwidth (GB/s):"; table "$logs/matrix_bandwidth.csv"; }
[ $matrix = 1 ] && [ -f "$logs/job_latency.csv" ] && {
    echo "one-way latency and world barrier (us) in a job of every GPU:"; table "$logs/job_latency.csv"; }
[ $weak = 1 ] && { echo "weak scaling (us per iteration):"; table "$logs/weak_scaling.csv"; }
exit 0
