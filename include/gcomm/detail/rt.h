/* The runtime state that device code reads: the launch parameter the host fills (one per GPU) and
 * the layout of each GPU's runtime segment (notification queues, window tables, barriers, error
 * and wait reports). Internal: user code never touches these fields; they are here because the
 * device API is header-only. The parameter carries a version and its size, which gcomm_init on
 * the device checks, so a kernel built against other headers fails loudly instead of misreading.
 *
 * Ranks, GPUs, processes: the job's GPUs are numbered 0..ngpus-1 (by process, then by the
 * process's own order); GPU g runs ranks rank_base[g] .. rank_base[g+1]-1, one per thread block.
 *
 * Notification queues: a rank's queue lives in its own GPU's segment and has one lane per source
 * GPU (ngpus lanes), each a ring of `depth` 32-byte entries (notif.h). The ranks of one source GPU share the
 * lane: a producer reserves a slot with an atomic add on a counter in *its own* GPU's memory
 * (tail[target]) and publishes the entry (one 64-bit word with its sequence number) into the
 * target's ring with one release store. The consumer returns credits by storing how many entries of the lane it
 * has consumed into the source GPU's memory (consumed[target]); a producer whose slot is `depth`
 * or more ahead of that waits. Every producer step touches only its own GPU's memory except the
 * entry itself, so a notified put costs one one-way trip to the target. */
#ifndef GCOMM_DETAIL_RT_H
#define GCOMM_DETAIL_RT_H

#include <stdint.h>

#include "gcomm/detail/hd.h"
#include "gcomm/detail/proxy_queue.h"
#include "gcomm/detail/svc.h"

#define GCOMMI_RT_VERSION 4
#define GCOMMI_MAX_GPUS 8      /* GPUs of one job (peer-reachable) */
#define GCOMMI_MAX_REGIONS 64  /* gcomm_malloc'd or registered allocations per GPU */
#define GCOMMI_MAX_WINS 32     /* windows alive at once, per communicator */
#define GCOMMI_NCOMMS 2        /* GCOMM_COMM_WORLD, GCOMM_COMM_DEVICE */
/* 64-bit words per lane entry: the notification word, then an inline entry's three (notif.h) */
#define GCOMMI_ENTRY_WORDS 4
#define GCOMMI_RCACHE 4        /* window entries a rank keeps resolved (a power of two) */

/* One notification as matching sees it (the lanes carry it packed in 64 bits, notif.h). */
typedef struct {
    uint32_t seq;
    int32_t source; /* world rank of the origin */
    int32_t tag;
    int32_t win;    /* window id (comm * GCOMMI_MAX_WINS + slot) */
} gcommi_notif_t;

/* What one rank exposes in one window: `size` bytes at `addr` (an address in the owner process)
 * in region `region` of GPU `gpu`, driven by process `proc`. A rank of the same process uses addr
 * as it is (one load per put); others translate it through their mapping of the region. */
typedef struct {
    uint64_t addr;
    uint64_t size;
    int32_t gpu;
    int32_t region;
    int32_t valid;
    int32_t proc;
} gcommi_win_entry_t;

/* A 32-bit word alone on a 128-byte line (counters polled by many blocks). */
typedef struct {
    uint32_t v;
    uint32_t pad[31];
} gcommi_line_t;

/* Kinds of failure recorded in the error report; the host turns them into GCOMM_ERR_* codes. */
typedef struct {
    uint32_t claimed;  /* the first error wins (atomic exchange) */
    int32_t code;      /* GCOMM_ERR_* */
    int32_t rank;      /* world rank that found it */
    int32_t win;       /* window id, or -1 */
    int32_t target;    /* target rank given, or -1 */
    int32_t op;        /* gcommi_op_t */
    uint64_t offset;   /* target offset given */
    uint64_t bytes;    /* bytes asked for */
    uint64_t limit;    /* window size at the target (GCOMMI_LIMIT_REMOTE: another process's) */
} gcommi_error_t;

/* gcommi_error_t.limit of a refusal by another process's proxy, which knows the window's size */
#define GCOMMI_LIMIT_REMOTE UINT64_MAX
/* ... or: the target datatype reaches below the window's start (checked before any lookup) */
#define GCOMMI_LIMIT_BELOW (UINT64_MAX - 1)

typedef enum {
    GCOMMI_OP_NONE = 0,
    GCOMMI_OP_PUT,
    GCOMMI_OP_GET,
    GCOMMI_OP_NOTIFY,
    GCOMMI_OP_WAIT,
    GCOMMI_OP_BARRIER,
    GCOMMI_OP_WIN_CREATE,
    GCOMMI_OP_WIN_FREE,
    GCOMMI_OP_INIT
} gcommi_op_t;

/* What a rank was blocked on when the launch stopped (filled on timeout or abort). */
typedef struct {
    int32_t op;        /* gcommi_op_t: WAIT, BARRIER (win = comm), PUT/NOTIFY (no credit) */
    int32_t win;
    int32_t source;
    int32_t tag;
    int32_t want;
    int32_t got;       /* matched so far */
    int32_t pending;   /* unmatched notifications held by the rank */
    int32_t target;    /* PUT/NOTIFY waiting for credit: the target rank */
    uint32_t lane_next[GCOMMI_MAX_GPUS]; /* entries consumed per lane */
} gcommi_report_t;

/* One gcomm_log record (written by the device into mapped pinned host memory, printed by the
 * host after the launch). Arguments are 64-bit words; the format says how to read them. */
#define GCOMMI_LOG_ARGS 8
#define GCOMMI_LOG_FMT 112
#define GCOMMI_LOG_RECORDS 4096 /* per GPU and launch; later records are counted, not kept */
typedef struct {
    uint32_t valid;
    int32_t rank;
    int32_t nargs;
    uint32_t pad;
    uint64_t args[GCOMMI_LOG_ARGS];
    char fmt[GCOMMI_LOG_FMT];
} gcommi_log_rec_t;

typedef struct {
    gcommi_line_t abort;       /* nonzero: stop; every wait returns (value: -GCOMM_ERR_*) */
    gcommi_error_t error;
    uint32_t pad_error[32 - sizeof(gcommi_error_t) / 4];
    gcommi_line_t bar_arrive[GCOMMI_NCOMMS]; /* monotonic arrival counters */
    gcommi_line_t bar_gen[GCOMMI_NCOMMS];    /* generation released */
    /* the world barrier between GPUs: slot g holds the last generation GPU g's last rank has
     * arrived at, stored there by that rank (a remote store) so that every GPU's last rank polls
     * only its own memory; one line, written by all GPUs' last ranks */
    struct {
        uint32_t gen[GCOMMI_MAX_GPUS];
        uint32_t pad[32 - GCOMMI_MAX_GPUS];
    } bar_seen;
    gcommi_line_t log_next;                  /* gcomm_log records claimed on this GPU */
    gcommi_line_t proxy_tail;                /* slots reserved in this GPU's proxy ring */
    gcommi_line_t ranks_done;                /* jobs over the proxy: ranks that have finished */
} gcommi_ctrl_t;

/* The private state of one rank (only its own block touches it): lanes' read positions and the
 * notifications drained from the lanes but not matched yet, in order of arrival. */
typedef struct {
    uint32_t lane_next[GCOMMI_MAX_GPUS];     /* entries consumed per lane */
    uint32_t lane_returned[GCOMMI_MAX_GPUS]; /* ... of which the producers have been told */
    uint32_t npending;
    uint32_t pad[15];
    /* gcommi_notif_t pending[pending_cap] follows */
} gcommi_priv_t;

typedef struct gcommi_param_s {
    uint32_t version;          /* GCOMMI_RT_VERSION */
    uint32_t size;             /* sizeof(gcommi_param_t) */
    int32_t world_size;
    int32_t ngpus;
    int32_t gpu;               /* the GPU this parameter was made for */
    int32_t nlocal;            /* ranks on that GPU */
    int32_t rank_base[GCOMMI_MAX_GPUS + 1];
    int32_t proc_of_gpu[GCOMMI_MAX_GPUS]; /* process that drives each GPU */
    uint32_t depth;            /* entries per lane, a power of two */
    uint32_t pending_cap;      /* unmatched notifications a rank can hold */
    int32_t log_level;
    uint32_t launch_id;        /* counts launches, for reports */
    /* GPUs (or host-rank groups of other processes) that this one reaches through its proxy,
     * not with loads and stores: bit g. Their seg[g] is a local shadow that holds only the
     * counters of the lanes between them and this GPU (the proxy produces into those lanes). */
    uint32_t remote_mask;
    /* puts of at most this many bytes with a notification travel inside it (inline entries,
     * notif.h; GCOMM_INLINE_MAX, 0..GCOMMI_INLINE_MAX; 0: never) */
    uint32_t inline_max;
    void *proxy;               /* host ranks: the process's proxy (gcommi_proxy_t), or NULL */
    /* GPU ranks with remote GPUs in the job: this GPU's command ring to the process's proxy
     * (device view: records and credit word in mapped pinned host memory, the reservation
     * counter in this GPU's control block; ring NULL: no proxy), the proxy's completion counter
     * and first error code per source rank (world_size each, mapped pinned), and the delivery
     * ring and words of this GPU's service block (svc.h; svc_ring NULL: none). The lanes from
     * remote GPUs are the segment's own, filled by the service block. */
    gcommi_pq_t proxy_q;
    uint32_t *proxy_done;
    int32_t *proxy_err;
    gcommi_svc_rec_t *svc_ring;
    gcommi_svc_ctl_t *svc_ctl;
    uint32_t svc_depth;
    uint32_t pad_svc;
    uint64_t timeout_ns;       /* every wait gives up after this long (GCOMM_TIMEOUT_MS) */
    /* segment layout (identical on every GPU of the launch) */
    uint64_t off_ctrl, off_win, off_tail, off_consumed, off_ring, off_priv, priv_stride;
    uint64_t off_report, seg_bytes;
    char *seg[GCOMMI_MAX_GPUS];        /* each GPU's segment as this GPU addresses it */
    gcommi_log_rec_t *log;             /* GCOMMI_LOG_RECORDS records (mapped pinned host memory) */
    int32_t nregions[GCOMMI_MAX_GPUS];
    uint64_t region_base[GCOMMI_MAX_GPUS][GCOMMI_MAX_REGIONS]; /* in the owner process */
    uint64_t region_size[GCOMMI_MAX_GPUS][GCOMMI_MAX_REGIONS];
    char *region_view[GCOMMI_MAX_GPUS][GCOMMI_MAX_REGIONS];    /* as this GPU addresses it */
} gcommi_param_t;

/* ---- segment addressing, shared by the host runtime and the device library ---- */

GCOMM_HD_INLINE gcommi_ctrl_t *gcommi_seg_ctrl(const gcommi_param_t *p, int gpu)
{
    return (gcommi_ctrl_t *)(p->seg[gpu] + p->off_ctrl);
}

/* Window table entry of `rank` (rank in the window's communicator) in window `win`, on `gpu`. */
GCOMM_HD_INLINE gcommi_win_entry_t *gcommi_seg_win(const gcommi_param_t *p, int gpu, int win,
                                                   int rank)
{
    return (gcommi_win_entry_t *)(p->seg[gpu] + p->off_win) +
           ((int64_t)win * p->world_size + rank);
}

/* Slot reservation counter of the lane from `gpu` to world rank `target` (in gpu's memory). */
GCOMM_HD_INLINE uint32_t *gcommi_seg_tail(const gcommi_param_t *p, int gpu, int target)
{
    return (uint32_t *)(p->seg[gpu] + p->off_tail) + target;
}

/* Entries of the lane from `gpu` to `target` consumed by target (in gpu's memory). */
GCOMM_HD_INLINE uint32_t *gcommi_seg_consumed(const gcommi_param_t *p, int gpu, int target)
{
    return (uint32_t *)(p->seg[gpu] + p->off_consumed) + target;
}

/* Ring of the lane from source GPU `src_gpu` into world rank `target` (in target's GPU memory,
 * also for a remote source GPU: the service block or the host proxy fills those). */
GCOMM_HD_INLINE uint64_t *gcommi_seg_ring(const gcommi_param_t *p, int target_gpu,
                                          int target_local, int src_gpu)
{
    return (uint64_t *)(p->seg[target_gpu] + p->off_ring) +
           ((int64_t)target_local * p->ngpus + src_gpu) * p->depth * GCOMMI_ENTRY_WORDS;
}

GCOMM_HD_INLINE gcommi_priv_t *gcommi_seg_priv(const gcommi_param_t *p, int gpu, int local)
{
    return (gcommi_priv_t *)(p->seg[gpu] + p->off_priv + (uint64_t)local * p->priv_stride);
}

GCOMM_HD_INLINE gcommi_notif_t *gcommi_priv_pending(gcommi_priv_t *priv)
{
    return (gcommi_notif_t *)(priv + 1);
}

GCOMM_HD_INLINE gcommi_report_t *gcommi_seg_report(const gcommi_param_t *p, int gpu, int local)
{
    return (gcommi_report_t *)(p->seg[gpu] + p->off_report) + local;
}

/* GPU that runs world rank r (ngpus <= 8: a linear scan). */
GCOMM_HD_INLINE int gcommi_gpu_of_rank(const gcommi_param_t *p, int r)
{
    int g = 0;
    while (g + 1 < p->ngpus && r >= p->rank_base[g + 1]) g++;
    return g;
}

#endif /* GCOMM_DETAIL_RT_H */
