/* bench_overlap's kernels compiled with the device API's block copy keeping one 16-byte load per
 * thread in flight (GCOMM_COPY_INFLIGHT=1, rank_impl.h) instead of eight (bench_overlap --lean):
 * fewer registers a thread, so that more ranks fit on an SM (64 instead of 96 when it was made,
 * 8 ranks of 128 threads instead of 5; 96 instead of 122 on 2026-11-28: 5 ranks of 128 against 4).
 * The 1 KB halos of the benchmark's default need no deeper copy. */
#define GCOMM_COPY_INFLIGHT 1
#include "overlap_kernel.cuh"

OVERLAP_KERNELS(lean)
