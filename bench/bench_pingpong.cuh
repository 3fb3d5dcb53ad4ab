/* The timed loop of the notified-put ping-pong benchmarks (bench_rma, bench_proxy): one device
 * function, so that both measure the same thing. Header only, CUDA. */
#ifndef GCOMM_BENCH_PINGPONG_CUH
#define GCOMM_BENCH_PINGPONG_CUH

#include "gcomm/device.cuh"

/* Ranks a and b (this is one of them) send `bytes` of msg into each other's window `win` at
 * offset 0 with a notification and wait for the other's, `iters` times after one untimed round
 * (so that both sides run before the clock starts). Rank a reads %globaltimer before the first
 * timed round into *t0 and after the last into *t1. Returns the number of calls that failed. */
static __device__ unsigned bench_pingpong_rounds(gcomm_context_t *ctx, gcomm_win_t win, int rank,
                                                 int a, int b, size_t bytes, const char *msg,
                                                 int iters, unsigned long long *t0,
                                                 unsigned long long *t1)
{
    unsigned err = 0;
    const int peer = rank == a ? b : a;
    for (int i = -1; i < iters; i++) { /* round -1 is untimed: both sides are running */
        if (i == 0 && rank == a) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(*t0));
        if (rank == a) {
            err += gcomm_put_notify(ctx, win, peer, 0, bytes, msg, 0) != GCOMM_SUCCESS;
            err += gcomm_wait_notifications(ctx, win, peer, 0, 1) != GCOMM_SUCCESS;
        } else {
            err += gcomm_wait_notifications(ctx, win, peer, 0, 1) != GCOMM_SUCCESS;
            err += gcomm_put_notify(ctx, win, peer, 0, bytes, msg, 0) != GCOMM_SUCCESS;
        }
    }
    if (rank == a) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(*t1));
    return err;
}

#endif /* GCOMM_BENCH_PINGPONG_CUH */
