/* gcomm device API: notified remote memory access from CUDA kernels (the dCUDA model).
 *
 * A kernel launched with gcomm_launch (gcomm.h) runs every thread block as one gcomm rank. Ranks
 * expose memory in windows, move data with put and get, and synchronise with notifications: a
 * put_notify lands the data in the target's window and then a notification (window, source, tag)
 * in the target's queue; the target's gcomm_wait_notifications returns once the matching
 * notifications (and so their data) have arrived. Ranks on the same GPU and on peer GPUs of the
 * node (NVLink/PCIe, also across processes through CUDA IPC) communicate without any host thread.
 *
 * Header-only: include this file in your .cu; no -rdc, no device library.
 *
 *     __global__ void step(gcomm_param_t param, double *in, double *out, ...)
 *     {
 *         __shared__ gcomm_context_t ctx;
 *         gcomm_init(param, &ctx);
 *         int rank, size;
 *         gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
 *         gcomm_comm_size(&ctx, GCOMM_COMM_WORLD, &size);
 *         gcomm_win_t win;
 *         gcomm_win_create(&ctx, GCOMM_COMM_WORLD, in, bytes, &win);
 *         ...
 *         gcomm_put_notify(&ctx, win, rank + 1, offset, bytes, &out[i], tag);
 *         gcomm_wait_notifications(&ctx, win, GCOMM_ANY_SOURCE, tag, 1);
 *         ...
 *         gcomm_win_free(&ctx, &win);
 *         gcomm_finish(&ctx);
 *     }
 *
 * Rules (as in dCUDA):
 * - Every function is called by all threads of the block, with the same arguments (collective
 *   over the block, like __syncthreads). The grid must be one-dimensional; blocks may be 1-3-D.
 * - Offsets and sizes are in bytes. A window's target offsets count from the base the target
 *   rank gave to gcomm_win_create. Window memory must come from gcomm_malloc or gcomm_register
 *   and belong to the calling rank's GPU.
 * - Ranks of GCOMM_COMM_WORLD are all blocks of all GPUs of the job; ranks of GCOMM_COMM_DEVICE
 *   are the blocks of this GPU. A window's ranks (targets and sources) are ranks of the
 *   communicator it was created on.
 * - put and get complete at the origin when they return (the origin buffer may be reused); a
 *   put's data is in the target's memory after gcomm_win_flush (a get of any rank reads it) and
 *   visible to the target's own loads once it matches a later notification of the same block
 *   (a *_notify operation to it, published only after its data) or after a barrier.
 * - Notifications are matched in order of arrival; wildcards GCOMM_ANY_WIN, GCOMM_ANY_SOURCE,
 *   GCOMM_ANY_TAG. Tags are 0 .. GCOMM_TAG_UB (a notification is one 64-bit word).
 * - Every call begins with a block barrier, so data the block wrote just before a put is sent.
 * - A rank whose notifications to one target are GCOMM_QUEUE_DEPTH ahead of what the target has
 *   taken waits for credit (and meanwhile takes in its own notifications); a rank holds at most
 *   GCOMM_PENDING_MAX notifications that match none of its waits, then its senders wait.
 * - Every function returns GCOMM_SUCCESS or a GCOMM_ERR_* code (gcomm/status.h). Errors (an
 *   access outside a window, a bad rank or tag) write nothing, are reported to the host with rank,
 *   window and offset, and make gcomm_launch return the error; every rank's waits then return
 *   with an error too. Every wait gives up after GCOMM_TIMEOUT_MS and gcomm_launch prints what
 *   each rank was waiting for. */
#ifndef GCOMM_DEVICE_CUH
#define GCOMM_DEVICE_CUH

#ifndef __CUDACC__
#error "gcomm/device.cuh is the device API: include it from CUDA code (.cu) only"
#endif

#include <stdio.h>

#include "gcomm/rank.h"

/* The dCUDA name of gcomm_rank_init, for kernels (an overload: gcomm_init(void) of gcomm.h
 * initialises the library on the host). */
static inline __device__ int gcomm_init(gcomm_param_t param, gcomm_context_t *ctx)
{
    return gcomm_rank_init(param, ctx);
}

/* Host: the handle gcomm_launch takes for a __global__ function (resolved by the CUDA runtime of
 * the calling program, so gcomm's own runtime can launch it). NULL if it is not a kernel. */
#define gcomm_kernel(fn) gcommi_kernel_handle((const void *)(fn))
static inline __host__ const void *gcommi_kernel_handle(const void *fn)
{
    cudaKernel_t k = NULL;
    if (cudaGetKernel(&k, fn) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return (const void *)k;
}

#endif /* GCOMM_DEVICE_CUH */
