/* The two-dimensional stencil program of the dCUDA paper (Gysi, Baer, Hoefler, SC'16, Section
 * II-C, Fig. 2) ported line by line to gcomm (dcuda_X -> gcomm_X, the context passed as &ctx,
 * window sizes and offsets in bytes), written once as a rank body that runs as the thread blocks
 * of a kernel (stencil_dcuda.cu) and as host ranks (stencil_host.c). The numbered comments are
 * Fig. 2's line numbers; lines marked "added" are not in the figure: rank-local pointers (the
 * figure receives them ready), the loop over i when the rank has fewer threads than jstride (the
 * figure assumes one thread per i; a host rank is one thread), a barrier over the rank's threads
 * before the puts, error exits and the timing barriers. See stencil_dcuda.cu for the domain and
 * its decomposition. */
#ifndef GCOMM_APPS_STENCIL_FIG2_H
#define GCOMM_APPS_STENCIL_FIG2_H

#include <stdint.h>

#include "gcomm/rank.h"

/* Timestamps of one group of ranks (a GPU, or the host ranks), taken by its rank 0 right after
 * the barrier before the step loop and right after the barrier behind it (ns). */
typedef struct {
    uint64_t start, end;
} stencil_clock_t;

GCOMM_HD_INLINE void stencil_fig2(gcomm_param_t param, double *in, double *out, int jstride,
                                  int len, int steps, stencil_clock_t *clk)
{
    const int tag = 0;
    int size, rank, lrank;
    /* 1 */ GCOMM_SHARED gcomm_context_t ctx;
    /* 2 */ gcomm_rank_init(param, &ctx);
    /* 3 */ gcomm_comm_size(&ctx, GCOMM_COMM_WORLD, &size);
    /* 4 */ gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    /* added: rank-local pointers; the group's array holds its ranks' lines back to back, so this
     * rank's window starts len values after the previous rank's (Fig. 3's overlap) */
    gcomm_comm_rank(&ctx, GCOMM_COMM_DEVICE, &lrank);
    in += (size_t)lrank * len;
    out += (size_t)lrank * len;
    /* 5 */
    /* 6 */ gcomm_win_t win, wout;
    /* 7 */ gcomm_win_create(&ctx, GCOMM_COMM_WORLD,
    /* 8 */     &in[0], (len + 2 * jstride) * sizeof(double), &win);
    /* 9 */ gcomm_win_create(&ctx, GCOMM_COMM_WORLD,
    /* 10 */    &out[0], (len + 2 * jstride) * sizeof(double), &wout);
    /* 11 */
    /* 12 */ int lsend = rank - 1 >= 0;
    /* 13 */ int rsend = rank + 1 < size;
    /* 14 */
    /* added: every rank has started and created its windows before the clock starts */
    gcomm_barrier(&ctx, GCOMM_COMM_WORLD);
    if (lrank == 0 && gcomm_rank_thread() == 0) clk->start = gcomm_rank_time_ns();

    /* 18 */ for (int i = 0; i < steps; ++i) {
        /* added: columns i0 + thread, nthreads at a time */
        for (int i0 = 0; i0 < jstride; i0 += gcomm_rank_nthreads()) {
            if (i0 + gcomm_rank_thread() >= jstride) break;
            /* 15 */ int from = i0 + gcomm_rank_thread() + jstride;
            /* 16 */ int to = from + len;
            /* 17 */
            /* 19 */ for (int idx = from; idx < to; idx += jstride)
            /* 20 */     out[idx] = -4.0 * in[idx] +
            /* 21 */         in[idx + 1] + in[idx - 1] +
            /* 22 */         in[idx + jstride] + in[idx - jstride];
        }
        /* added: gcomm_put copies with all threads of the rank in its own order, so every
         * thread's part of out must be written before the copy starts */
        gcomm_rank_sync();
        /* 23 */
        /* 24 */ if (lsend)
        /* 25 */     gcomm_put_notify(&ctx, wout, rank - 1,
        /* 26 */         (len + jstride) * sizeof(double), jstride * sizeof(double),
                         &out[jstride], tag);
        /* 27 */ if (rsend)
        /* 28 */     gcomm_put_notify(&ctx, wout, rank + 1,
        /* 29 */         0, jstride * sizeof(double), &out[len], tag);
        /* 30 */
        /* 31 */ int rc = gcomm_wait_notifications(&ctx, wout,
        /* 32 */     GCOMM_ANY_SOURCE, tag, lsend + rsend);
        /* 33 */
        /* 34 */ double *t = in; in = out; out = t; gcomm_win_t tw = win; win = wout; wout = tw;
        /* added: after an error anywhere (a failed put stops the launch, and every wait
         * returns an error) there is no point going on; the launch reports the cause */
        if (rc != GCOMM_SUCCESS) break;
        /* 35 */ }

    /* added: the clock stops when the last rank has finished its last step */
    gcomm_barrier(&ctx, GCOMM_COMM_WORLD);
    if (lrank == 0 && gcomm_rank_thread() == 0) clk->end = gcomm_rank_time_ns();
    /* 36 */
    /* 37 */ gcomm_win_free(&ctx, &win);
    /* 38 */ gcomm_win_free(&ctx, &wout);
    /* 39 */ gcomm_finish(&ctx);
}

#endif /* GCOMM_APPS_STENCIL_FIG2_H */
