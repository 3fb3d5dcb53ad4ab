/* Launch bookkeeping shared by GPU and host ranks (segment.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "gcomm/detail/notif.h"
#include "gcomm/detail/rank_prims.h"
#include "rma/segment.h"

const char *gcommi_op_name(int op)
{
    switch (op) {
    case GCOMMI_OP_PUT: return "put";
    case GCOMMI_OP_GET: return "get";
    case GCOMMI_OP_NOTIFY: return "notify";
    case GCOMMI_OP_WAIT: return "wait_notifications";
    case GCOMMI_OP_BARRIER: return "barrier";
    case GCOMMI_OP_WIN_CREATE: return "win_create";
    case GCOMMI_OP_WIN_FREE: return "win_free";
    case GCOMMI_OP_INIT: return "init";
    default: return "operation";
    }
}


static uint32_t pow2_at_least(long v)
{
    uint32_t p = 1;
    while (p < (uint32_t)v && p < (1u << 20)) p <<= 1;
    return p;
}


static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}


void gcommi_param_defaults(gcommi_param_t *p, uint32_t launch_id)
{
    const gcommi_config_t *cfg = gcommi_config();
    p->version = GCOMMI_RT_VERSION;
    p->size = sizeof(gcommi_param_t);
    p->depth = pow2_at_least(cfg->queue_depth > 1 ? cfg->queue_depth : 2);
    if (p->depth > GCOMMI_DEPTH_MAX) p->depth = GCOMMI_DEPTH_MAX;
    p->pending_cap = (uint32_t)(cfg->pending_max > 1 ? cfg->pending_max : 1);
    p->launch_id = launch_id;
    p->timeout_ns = (uint64_t)(cfg->timeout_ms > 0 ? cfg->timeout_ms : 1) * 1000000ull;
    p->inline_max = cfg->inline_max <= 0 ? 0
                    : cfg->inline_max > GCOMMI_INLINE_MAX ? GCOMMI_INLINE_MAX
                                                          : (uint32_t)cfg->inline_max;
}

void gcommi_segment_layout(gcommi_param_t *p, int maxlocal)
{
    size_t W = (size_t)p->world_size, off = 0;
    p->off_ctrl = off;
    off = round_up(off + sizeof(gcommi_ctrl_t), 256);
    p->off_win = off;
    off = round_up(off + (size_t)GCOMMI_NCOMMS * GCOMMI_MAX_WINS * W * sizeof(gcommi_win_entry_t),
                   256);
    p->off_tail = off;
    off = round_up(off + W * sizeof(uint32_t), 256);
    p->off_consumed = off;
    off = round_up(off + W * sizeof(uint32_t), 256);
    p->off_ring = off;
    off = round_up(off + (size_t)maxlocal * p->ngpus * p->depth * GCOMMI_ENTRY_WORDS *
                             sizeof(uint64_t), 256);
    p->priv_stride = round_up(sizeof(gcommi_priv_t) + p->pending_cap * sizeof(gcommi_notif_t), 128);
    p->off_priv = off;
    off = round_up(off + (size_t)maxlocal * p->priv_stride, 256);
    p->off_report = off;
    off = round_up(off + (size_t)maxlocal * sizeof(gcommi_report_t), 256);
    p->seg_bytes = off;
}


int gcommi_proxy_window(const gcommi_param_t *p, int g, int32_t lo, int32_t hi, int32_t target,
                        int32_t win, uint64_t offset, size_t bytes,
                        const gcommi_win_entry_t **entry)
{
    /* only world windows are reached through the proxy */
    if (win < 0 || win >= GCOMMI_MAX_WINS || target < lo || target >= hi)
        return GCOMMI_ERROR(GCOMM_ERR_WINDOW, "window %d of rank %d is not a world window of "
                            "this process", win, target);
    const gcommi_win_entry_t *e = gcommi_seg_win(p, g, win, target);
    if (!__atomic_load_n(&e->valid, __ATOMIC_ACQUIRE) || offset > e->size ||
        bytes > e->size - offset)
        return GCOMMI_ERROR(GCOMM_ERR_WINDOW, "rank %d, window %d: [%llu, +%zu) outside its %llu "
                            "bytes", target, win, (unsigned long long)offset, bytes,
                            (unsigned long long)e->size);
    *entry = e;
    return GCOMM_SUCCESS;
}

int gcommi_proxy_lane_reserve(const gcommi_param_t *p, int sg, int32_t target, uint32_t *slot)
{
    *slot = gcommi_lane_reserve(gcommi_seg_tail(p, sg, target));
    const uint32_t *consumed = gcommi_seg_consumed(p, sg, target);
    uint64_t start = gcommi_host_now_ns();
    for (uint32_t spins = 1; !gcommi_lane_has_credit(consumed, *slot, p->depth, 1); spins++) {
        if (gcommi_host_now_ns() - start > p->timeout_ns)
            return GCOMMI_ERROR(GCOMM_ERR_TIMEOUT, "rank %d takes no notifications (its lane "
                                "from GPU or process %d is full)", target, sg);
        gcommi_host_pause(spins);
    }
    return GCOMM_SUCCESS;
}

int gcommi_proxy_lane_publish(const gcommi_param_t *p, int sg, uint64_t *ring, int32_t target,
                              int32_t source, int32_t win, int32_t tag)
{
    uint32_t slot;
    GCOMMI_CHECK(gcommi_proxy_lane_reserve(p, sg, target, &slot));
    gcommi_fence_sys();
    gcommi_lane_publish(ring, p->depth, slot, source, tag, win, 1);
    return GCOMM_SUCCESS;
}

void gcommi_print_reports(const gcommi_param_t *p, const gcommi_report_t *r, int host)
{
    size_t n = (size_t)p->nlocal;
    int shown = 0, waiting = 0;
    for (size_t k = 0; k < n; k++) {
        if (r[k].op == GCOMMI_OP_NONE) continue;
        waiting++;
        if (shown++ >= 32) continue;
        char lanes[128] = "";
        size_t len = 0;
        for (int g = 0; g < p->ngpus && len < sizeof(lanes) - 12; g++)
            len += (size_t)snprintf(lanes + len, sizeof(lanes) - len, "%s%u", g ? "," : "",
                                    r[k].lane_next[g]);
        int rank = p->rank_base[p->gpu] + (int)k;
        if (r[k].op == GCOMMI_OP_WAIT)
            GCOMM_LOG_ERROR("rma", "rank %d (%s %d %s %zu) waits for %d notification(s) of "
                            "window %d, source %d, tag %d: %d matched so far, %d other(s) held%s; "
                            "entries consumed per source GPU: %s", rank, host ? "host" : "GPU", p->gpu,
                            host ? "thread" : "block", k, r[k].want,
                            r[k].win, r[k].source, r[k].tag, r[k].got, r[k].pending,
                            (uint32_t)r[k].pending >= p->pending_cap
                                ? " (as many as it can hold: GCOMM_PENDING_MAX; the senders of "
                                  "what it waits for are held back)"
                                : "",
                            lanes);
        else if (r[k].op == GCOMMI_OP_BARRIER)
            GCOMM_LOG_ERROR("rma", "rank %d (%s %d %s %zu) waits in a barrier of %s",
                            rank, host ? "host" : "GPU", p->gpu, host ? "thread" : "block", k,
                            r[k].win ? "GCOMM_COMM_DEVICE" : "GCOMM_COMM_WORLD");
        else if (r[k].want < 0) /* a command to the proxy: -1 its completion, -2 room */
            GCOMM_LOG_ERROR("rma", "rank %d (%s %d %s %zu) waits for the proxy %s its %s "
                            "(command %d, %s rank %d)", rank, host ? "host" : "GPU", p->gpu,
                            host ? "thread" : "block", k,
                            r[k].want == -1 ? "to complete" : "to take (its ring is full)",
                            r[k].op == GCOMMI_OP_BARRIER ? "barrier"
                            : r[k].target == rank ? "flush" : gcommi_op_name(r[k].op),
                            r[k].got, r[k].op == GCOMMI_OP_GET ? "from" : "to", r[k].target);
        else
            GCOMM_LOG_ERROR("rma", "rank %d (%s %d %s %zu) waits for queue credit to notify "
                            "rank %d (its queue is full: the target does not consume)", rank,
                            host ? "host" : "GPU", p->gpu, host ? "thread" : "block", k,
                            r[k].target);
    }
    if (shown > 32)
        GCOMM_LOG_ERROR("rma", "... and %d more waiting ranks on %s %d", shown - 32,
                        host ? "host" : "GPU", p->gpu);
    GCOMM_LOG_ERROR("rma", "%s %d: %d of %d ranks were waiting when the launch stopped",
                    host ? "host" : "GPU", p->gpu, waiting, p->nlocal);
}

int gcommi_launch_status(const gcommi_launch_result_t *res, int ngpus, const char *what,
                         int first)
{
    int best = -1;
    for (int g = 0; g < ngpus; g++) {
        if (res[g].cuda_error) /* (launch.c names CUDA's errors before it gets here) */
            return GCOMMI_ERROR(GCOMM_ERR_CUDA, "the kernel failed on %s %d: CUDA error %d", what,
                                first + g, (int)res[g].cuda_error);
        if (!res[g].error.claimed) continue;
        /* the cause is an error that is not a timeout, if there is one */
        if (best < 0 || (res[best].error.code == GCOMM_ERR_TIMEOUT &&
                         res[g].error.code != GCOMM_ERR_TIMEOUT))
            best = g;
    }
    if (best >= 0) {
        const gcommi_error_t *e = &res[best].error;
        if (e->code == GCOMM_ERR_TIMEOUT)
            return GCOMMI_ERROR(GCOMM_ERR_TIMEOUT, "rank %d (%s %d) timed out in %s after "
                                "GCOMM_TIMEOUT_MS = %ld ms; the ranks' waits are reported above",
                                e->rank, what, first + best, gcommi_op_name(e->op), gcommi_config()->timeout_ms);
        if (e->op == GCOMMI_OP_WIN_CREATE)
            return GCOMMI_ERROR(e->code, "rank %d (%s %d): win_create over %llu bytes at 0x%llx: %s",
                                e->rank, what, first + best, (unsigned long long)e->bytes,
                                (unsigned long long)e->offset,
                                e->code == GCOMM_ERR_UNSUPPORTED
                                    ? "too many windows alive at once"
                                    : "not memory of gcomm_malloc or gcomm_register on this GPU");
        if (e->code == GCOMM_ERR_TYPE_MISMATCH || e->code == GCOMM_ERR_TYPE ||
            e->code == GCOMM_ERR_OVERFLOW) /* typed put/get: bytes = origin's, limit = target's */
            return GCOMMI_ERROR(e->code, "rank %d (%s %d): typed %s to rank %d of window %d at "
                                "offset %llu: the origin's instances pack %llu bytes, the "
                                "target's %llu: %s", e->rank, what, first + best, gcommi_op_name(e->op), e->target,
                                e->win, (unsigned long long)e->offset,
                                (unsigned long long)e->bytes, (unsigned long long)e->limit,
                                gcomm_error_string(e->code));
        if (e->target < 0) /* a flush found it: one of the rank's earlier commands to another process */
            return GCOMMI_ERROR(e->code, "rank %d (%s %d): a notification to another process, "
                                "seen at a flush, barrier or gcomm_finish: %s", e->rank, what,
                                first + best, gcomm_error_string(e->code));
        if (e->limit == GCOMMI_LIMIT_BELOW)
            return GCOMMI_ERROR(e->code, "rank %d (%s %d): typed %s to rank %d of window %d at "
                                "offset %llu, %llu bytes: the target datatype reaches below the "
                                "window's start: %s", e->rank, what, first + best,
                                gcommi_op_name(e->op), e->target, e->win,
                                (unsigned long long)e->offset, (unsigned long long)e->bytes,
                                gcomm_error_string(e->code));
        if (e->limit == GCOMMI_LIMIT_REMOTE) /* refused by the target process's proxy */
            return GCOMMI_ERROR(e->code, "rank %d (%s %d): %s to rank %d of window %d at offset "
                                "%llu, %llu bytes, refused by the target's process: %s", e->rank,
                                what, first + best, gcommi_op_name(e->op), e->target, e->win,
                                (unsigned long long)e->offset, (unsigned long long)e->bytes,
                                gcomm_error_string(e->code));
        return GCOMMI_ERROR(e->code, "rank %d (%s %d): %s to rank %d of window %d at offset %llu, "
                            "%llu bytes (window there: %llu bytes): %s", e->rank, what, first + best,
                            gcommi_op_name(e->op), e->target, e->win, (unsigned long long)e->offset,
                            (unsigned long long)e->bytes, (unsigned long long)e->limit,
                            gcomm_error_string(e->code));
    }
    for (int g = 0; g < ngpus; g++)
        if (res[g].abort)
            return GCOMMI_ERROR(-res[g].abort, "the launch was stopped on %s %d (%s)", what, first + g,
                                gcomm_error_string(-res[g].abort));
    return GCOMM_SUCCESS;
}

/* Every process runs the same sequence of collectives whatever fails locally: after each phase
 * the processes agree on its status (an allgather of one int), and a failure anywhere sends
 * every process out with an error that names it. */
int gcommi_launch_agree(gcommi_bootstrap_t *boot, int st)
{
    int n = boot->size, *all = calloc((size_t)n, sizeof(int));
    if (!all) return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory to agree on a status");
    int rc = boot->allgather(boot, &st, all, sizeof(int));
    int first = -1;
    for (int p = 0; p < n && rc == GCOMM_SUCCESS; p++)
        if (all[p] != GCOMM_SUCCESS && first < 0) first = p;
    int code = first >= 0 ? all[first] : GCOMM_SUCCESS;
    free(all);
    if (rc != GCOMM_SUCCESS) return rc;
    if (st != GCOMM_SUCCESS) return st; /* our own detail is recorded */
    if (first >= 0)
        return GCOMMI_ERROR(code, "process %d of the job failed (%s); its detail says why", first,
                            gcomm_error_string(code));
    return GCOMM_SUCCESS;
}
