/* gcomm rank library: notified remote memory access between ranks (the dCUDA model), for ranks
 * that are GPU thread blocks (a kernel launched with gcomm_launch, see gcomm/device.cuh) and ranks
 * that are host threads (gcomm_launch_host, gcomm.h). One rank body can run as either: the calls
 * below are written once for both (host-and-device code under nvcc, plain C elsewhere).
 *
 *     GCOMM_HD void body(gcomm_param_t param, double *in, ...)   (GCOMM_HD: gcomm/detail/hd.h)
 *     {
 *         gcomm_context_t ctx;            (__shared__ in a kernel)
 *         gcomm_rank_init(param, &ctx);
 *         int rank, size;
 *         gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
 *         ...
 *         gcomm_put_notify(&ctx, win, rank + 1, offset, bytes, &out[i], tag);
 *         gcomm_wait_notifications(&ctx, win, GCOMM_ANY_SOURCE, tag, 1);
 *         ...
 *         gcomm_finish(&ctx);
 *     }
 *
 * Rules (as in dCUDA):
 * - Every function is called by all threads of the block, with the same arguments (collective
 *   over the block, like __syncthreads); a host rank is a block of one thread. A GPU grid must be
 *   one-dimensional; blocks may be 1-3-D.
 * - Offsets and sizes are in bytes. A window's target offsets count from the base the target
 *   rank gave to gcomm_win_create. Window memory must come from gcomm_malloc or gcomm_register
 *   and belong to the calling rank's GPU.
 * - Ranks of GCOMM_COMM_WORLD are all blocks of all GPUs of the job; ranks of GCOMM_COMM_DEVICE
 *   are the blocks of this GPU. A window's ranks (targets and sources) are ranks of the
 *   communicator it was created on.
 * - put and get complete at the origin when they return (the origin buffer may be reused); their
 *   data is visible at the target after gcomm_win_flush (or with the notification of a *_notify
 *   operation, which is published only after its data).
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
#ifndef GCOMM_RANK_H
#define GCOMM_RANK_H

#include <stddef.h>
#include <stdint.h>

#include "gcomm/datatype.h"
#include "gcomm/detail/hd.h"
#include "gcomm/detail/rt.h"
#include "gcomm/status.h"

/* Every function of the rank library is host-and-device code (a rank is a GPU thread block or a
 * host thread). */
#define GCOMMI_DEV GCOMM_HD_INLINE

/* The kernel parameter gcomm_launch fills (the kernel's first parameter). */
typedef const struct gcommi_param_s *gcomm_param_t;

/* A window: a small integer valid in every rank of its communicator. */
typedef int gcomm_win_t;
#define GCOMM_WIN_NULL (-1)

typedef enum { GCOMM_COMM_WORLD = 0, GCOMM_COMM_DEVICE = 1 } gcomm_comm_t;

#define GCOMM_ANY_SOURCE (-1)
#define GCOMM_ANY_TAG (-1)
#define GCOMM_ANY_WIN (-1)
#define GCOMM_TAG_UB 1048575 /* largest tag */

/* Block-shared variables of a rank body: __shared__ in a GPU block, an ordinary local variable in
 * a host rank (the block's only thread). Declare the rank's gcomm_context_t with it. */
#if defined(__CUDA_ARCH__)
#define GCOMM_SHARED __shared__
#else
#define GCOMM_SHARED
#endif

#if defined(__cplusplus)
#define GCOMMI_ALIGN16 alignas(16)
#else
#define GCOMMI_ALIGN16 _Alignas(16)
#endif

/* One entry of a rank's window cache: (window, target) -> the target's part of the window as
 * this GPU addresses it, and the target's lane from this GPU (world rank, reservation counter
 * here, ring in the target's segment, whether that is on another GPU): a small put_notify's
 * whole route. Three 16-byte words, 16-byte aligned, so that a put loads the key, the bounds and
 * the route together (one shared-memory latency before its reservation, not four in a row). */
typedef struct {
    int32_t win, target; /* the key (win GCOMM_WIN_NULL: empty) */
    int32_t tw, sys;
    char *addr;
    uint64_t size;
    uint32_t *tail;
    uint64_t *ring;
} gcommi_rcache_t;

/* 48 bytes: key and lane in the first 16-byte word, the bounds in the second, the route in the
 * third (gcommi_rcache_get loads and splits them so) */
typedef char gcommi_rcache_layout_check[sizeof(gcommi_rcache_t) == 48 &&
                                                offsetof(gcommi_rcache_t, sys) == 12 &&
                                                offsetof(gcommi_rcache_t, addr) == 16 &&
                                                offsetof(gcommi_rcache_t, tail) == 32
                                            ? 1
                                            : -1];

/* Per-block state; declare it GCOMM_SHARED (__shared__ in a kernel). Its fields are internal: the
 * launch parameter's hot fields and the rank's queue positions live here, in shared memory,
 * because global loads on the notification path would miss the L1 after every acquire and cost
 * an L2 round trip each. */
typedef struct {
    const gcommi_param_t *p;
    gcommi_ctrl_t *ctrl;                      /* this GPU's control block */
    gcommi_priv_t *priv;                      /* this rank's queue state (for reports) */
    gcommi_notif_t *pending;                  /* this rank's held notifications */
    char *seg[GCOMMI_MAX_GPUS];               /* every GPU's segment */
    int32_t rank_base[GCOMMI_MAX_GPUS + 1];
    uint64_t off_tail, off_consumed, off_ring, timeout_ns;
    uint32_t depth, pending_cap;
    uint32_t lane_next[GCOMMI_MAX_GPUS];      /* entries consumed per lane */
    uint32_t lane_returned[GCOMMI_MAX_GPUS];  /* ... and returned as credit */
    uint32_t npending, pending_head;          /* held notifications: a ring (notif.h) */
    /* the last window entries resolved, entry target % GCOMMI_RCACHE (gcommi_rcache_t); a
     * window's entries do not change while it lives */
    GCOMMI_ALIGN16 gcommi_rcache_t rcache[GCOMMI_RCACHE];
    /* the credit last loaded for one target (consumed count of its lane from this GPU) */
    int32_t credit_target;
    uint32_t credit_seen;
    uint32_t credit_slot;                     /* the slot last published to that target */
    uint32_t remote_mask;                     /* GPUs reached through the proxy (rt.h) */
    /* inline puts (notif.h): the largest payload that travels inside a notification (0: none),
     * the one target this rank may have inline entries outstanding to (-1: none) and the slot
     * after its last one, the own window whose base an inline entry last wrote into, and
     * `dirty`: the world rank of the one target the block has put data to (plain puts) that no
     * released notification to it has covered since the last barrier, -1 none, -2 several */
    uint32_t inline_max;
    int32_t inl_target;
    uint32_t inl_end;
    int32_t inl_win;
    char *inl_base;
    int32_t dirty;
    uint32_t proxy_ids;                       /* proxy commands this rank has posted ... */
    uint32_t proxy_flushed;                   /* ... and the last one known to be done */
    uint32_t proxy_seen;                      /* the proxy ring's credit last loaded */
    int32_t rank, world_size, gpu, local_rank, nlocal, ngpus, proc;
    uint32_t wins_used[GCOMMI_NCOMMS];
    int32_t status;                           /* thread 0's result, read by the block */
    int32_t value;
} gcomm_context_t;

/* Setup and queries. gcomm_rank_init is the entry of every rank body (CUDA code may also call it
 * gcomm_init(param, &ctx), the dCUDA name, from device code: gcomm/device.cuh). */
GCOMMI_DEV int gcomm_rank_init(gcomm_param_t param, gcomm_context_t *ctx);
GCOMMI_DEV int gcomm_finish(gcomm_context_t *ctx);
GCOMMI_DEV int gcomm_comm_rank(gcomm_context_t *ctx, gcomm_comm_t comm, int *rank);
GCOMMI_DEV int gcomm_comm_size(gcomm_context_t *ctx, gcomm_comm_t comm, int *size);

/* Windows (collective over the communicator). A create that fails sets *win to GCOMM_WIN_NULL. */
GCOMMI_DEV int gcomm_win_create(gcomm_context_t *ctx, gcomm_comm_t comm, void *base,
                                size_t bytes, gcomm_win_t *win);
GCOMMI_DEV int gcomm_win_free(gcomm_context_t *ctx, gcomm_win_t *win);

/* One-sided operations: `target` is a rank of the window's communicator. */
GCOMMI_DEV int gcomm_put(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                size_t target_offset, size_t bytes, const void *origin);
GCOMMI_DEV int gcomm_put_notify(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                size_t target_offset, size_t bytes, const void *origin,
                                int tag);
GCOMMI_DEV int gcomm_get(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                size_t target_offset, size_t bytes, void *origin);
/* get, then notify the target (whose memory was read) that the data has been taken. */
GCOMMI_DEV int gcomm_get_notify(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                size_t target_offset, size_t bytes, void *origin, int tag);
GCOMMI_DEV int gcomm_notify(gcomm_context_t *ctx, gcomm_win_t win, int target, int tag);
/* Typed put/get: origin_count instances of origin_type at `origin` move to (or from) target_count
 * instances of target_type whose origin lies target_offset bytes into the target's part of the
 * window, located element by element by the GPU datatype engine inside the calling block (a halo
 * face, a column, a transpose). The packed sizes must agree (GCOMM_ERR_TYPE_MISMATCH); every byte
 * the target instances touch (their true extent) must lie in the window (GCOMM_ERR_WINDOW).
 * Handles come from gcomm_type_device for this rank's GPU (GCOMM_DEVICE_HOST for a host rank):
 * the origin applies both shapes. */
GCOMMI_DEV int gcomm_put_typed(gcomm_context_t *ctx, gcomm_win_t win, int target,
                               size_t target_offset, size_t target_count,
                               gcomm_device_type_t target_type, const void *origin,
                               size_t origin_count, gcomm_device_type_t origin_type);
GCOMMI_DEV int gcomm_put_typed_notify(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                      size_t target_offset, size_t target_count,
                                      gcomm_device_type_t target_type, const void *origin,
                                      size_t origin_count, gcomm_device_type_t origin_type,
                                      int tag);
GCOMMI_DEV int gcomm_get_typed(gcomm_context_t *ctx, gcomm_win_t win, int target,
                               size_t target_offset, size_t target_count,
                               gcomm_device_type_t target_type, void *origin, size_t origin_count,
                               gcomm_device_type_t origin_type);
GCOMMI_DEV int gcomm_get_typed_notify(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                      size_t target_offset, size_t target_count,
                                      gcomm_device_type_t target_type, void *origin,
                                      size_t origin_count, gcomm_device_type_t origin_type,
                                      int tag);
/* Completes every put of this rank on the window at its targets. */
GCOMMI_DEV int gcomm_win_flush(gcomm_context_t *ctx, gcomm_win_t win);

/* Notifications: wait blocks until `count` matching notifications have arrived and removes them;
 * test removes them and sets *flag = 1 only when `count` are there already, else sets 0. */
GCOMMI_DEV int gcomm_wait_notifications(gcomm_context_t *ctx, gcomm_win_t win, int source,
                                        int tag, int count);
GCOMMI_DEV int gcomm_test_notifications(gcomm_context_t *ctx, gcomm_win_t win, int source,
                                        int tag, int count, int *flag);

/* The calling thread's index in its rank (0 .. gcomm_rank_nthreads() - 1), the rank's thread count
 * and a barrier over them: threadIdx, blockDim and __syncthreads in a GPU block, 0, 1 and nothing
 * in a host rank. For rank bodies that run as both. */
GCOMMI_DEV int gcomm_rank_thread(void);
GCOMMI_DEV int gcomm_rank_nthreads(void);
GCOMMI_DEV void gcomm_rank_sync(void);
/* A clock for timing inside a rank body (ns): %globaltimer on a GPU, CLOCK_MONOTONIC on a host. */
GCOMMI_DEV uint64_t gcomm_rank_time_ns(void);

/* Synchronisation of all ranks of a communicator. */
GCOMMI_DEV int gcomm_barrier(gcomm_context_t *ctx, gcomm_comm_t comm);

/* A printf-like log from device code, printed by the host (with the rank) when gcomm_launch
 * returns: gcomm_log(&ctx, "step %d: residual %g\n", step, r). Block-collective like every call.
 * Up to 8 arguments: integers, floating point, pointers (%s prints the pointer, not the string);
 * the format string is copied (up to 111 characters). At most 4096 records per GPU and launch. */
#define gcomm_log(ctx, fmt, ...)                                                                   \
    do {                                                                                           \
        const uint64_t gcommi_log_args_[GCOMMI_LOG_ARGS + 1] = {                                   \
            0, GCOMMI_CAT(GCOMMI_LOG_MAP, GCOMMI_NARG(__VA_ARGS__))(__VA_ARGS__)};                 \
        gcommi_log_write((ctx), (fmt), gcommi_log_args_ + 1, GCOMMI_NARG(__VA_ARGS__));            \
    } while (0)

#include "gcomm/detail/rank_impl.h"

#endif /* GCOMM_RANK_H */
