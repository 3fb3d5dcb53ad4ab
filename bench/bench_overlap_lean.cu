/* bench_overlap's kernels compiled with the device API's block copy keeping one 16-byte load per
 * thread in flight (GCOMM_COPY_INFLIGHT=1, rank_impl.h) instead of eight: 64 registers a thread
 * instead of 96, so that 8 ranks of 128 threads fit on an SM without spilling (bench_overlap
 * --lean). The 1 KB halos of the benchmark's default need no deeper copy. */
#define GCOMM_COPY_INFLIGHT 1
#include "overlap_kernel.cuh"

OVERLAP_KERNELS(lean)
