/* Implementation of the rank library (gcomm/rank.h, gcomm/device.cuh): one source for ranks that
 * are GPU thread blocks and ranks that are host threads, over the primitives of rank_prims.h.
 * Internal.
 *
 * Every API function is block-collective (a host rank is a block of one thread). Work that must
 * happen once (queue slots, barrier arrivals, error records) is done by thread 0, and its result
 * reaches the block through ctx->status between two block barriers. Each function begins with a
 * block barrier before thread 0 writes ctx->status, so a slow thread has always read the
 * previous result before it changes. Argument checks only read shared state, so every thread
 * runs them and all take the same path. */
#ifndef GCOMM_DETAIL_RANK_IMPL_H
#define GCOMM_DETAIL_RANK_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gcomm/detail/atomic.h"
#include "gcomm/detail/notif.h"
#include "gcomm/detail/proxy_queue.h"
#include "gcomm/detail/rank_prims.h"
#include "gcomm/detail/rt.h"
#include "gcomm/detail/typed_copy.h"

/* A profiling hook for benchmarks (bench/bench_rma_parts.cu defines it before including
 * gcomm/device.cuh): called by every thread at numbered points of the put path. */
#ifndef GCOMMI_PROF_MARK
#define GCOMMI_PROF_MARK(k) ((void)0)
#endif

/* gcomm_context_t.dirty without a target (see gcommi_dirty_add) */
#define GCOMMI_DIRTY_NONE (-1)
#define GCOMMI_DIRTY_SEVERAL (-2)

/* Host ranks reach the ranks of other processes through the process's proxy (host_ranks.c):
 * posting a command of this rank, and waiting until its commands up to `id` are done
 * (GCOMM_SUCCESS, a target's error, or GCOMM_ERR_TIMEOUT with a report of what is pending). */
#ifdef __cplusplus
extern "C" {
#endif
int gcommi_host_proxy_post(void *proxy, const gcommi_pq_cmd_t *cmd);
int gcommi_host_proxy_wait(void *proxy, int32_t source, uint32_t id);
#ifdef __cplusplus
}
#endif

/* Error and slow paths stay inline (calls would make thread 0 wait for the slot reservation
 * early: measured) but are marked unlikely, so that the compiler lays them out away from the
 * path every put and wait runs. */
#define GCOMMI_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- small helpers ---- */

/* Where the polling loops of barriers, credit waits and inline confirmations take in the rank's
 * notifications meanwhile (gcommi_progress_t0, a general drain of every lane): out of line by
 * default, so that its registers are not added to everything a kernel holds live around those
 * calls (the overlap benchmark's kernel: 106 registers instead of 137, the ping-pong's 112 instead
 * of 178). A kernel capped well below the device API's count by __launch_bounds__ may spill less
 * with it inlined, as it was before 2026-11-27: define GCOMM_POLL_INLINE 1 before including a
 * gcomm header (hdiff_gcomm, capped at 64 registers: 116.7 -> 107.5 us per iteration, H100;
 * docs/GUIDE.md). */
#ifndef GCOMM_POLL_INLINE
#define GCOMM_POLL_INLINE 0
#endif
#if GCOMM_POLL_INLINE
#define GCOMMI_POLL_FN GCOMM_HD_INLINE
#else
#define GCOMMI_POLL_FN GCOMM_HD_COLD
#endif

/* (defined below, with the barrier and the notification queues) */
GCOMM_HD_INLINE int gcommi_barrier_t0(gcomm_context_t *ctx, int comm);
GCOMM_HD_INLINE int gcommi_inline_confirm_t0(gcomm_context_t *ctx, int op, int win);
GCOMMI_POLL_FN void gcommi_progress_t0(gcomm_context_t *ctx);

/* Segment addressing from the block's shared copy of the parameter (rt.h has the same from the
 * parameter itself, for the host). */
GCOMM_HD_INLINE int gcommi_ctx_gpu_of_rank(const gcomm_context_t *ctx, int r)
{
    int g = 0;
    while (g + 1 < ctx->ngpus && r >= ctx->rank_base[g + 1]) g++;
    return g;
}

GCOMM_HD_INLINE uint32_t *gcommi_ctx_tail(const gcomm_context_t *ctx, int target)
{
    return (uint32_t *)(ctx->seg[ctx->gpu] + ctx->off_tail) + target;
}

GCOMM_HD_INLINE uint32_t *gcommi_ctx_consumed(const gcomm_context_t *ctx, int gpu,
                                                       int target)
{
    return (uint32_t *)(ctx->seg[gpu] + ctx->off_consumed) + target;
}

GCOMM_HD_INLINE uint64_t *gcommi_ctx_ring(const gcomm_context_t *ctx, int gpu, int local,
                                                   int src_gpu)
{
    return (uint64_t *)(ctx->seg[gpu] + ctx->off_ring) +
           ((int64_t)local * ctx->ngpus + src_gpu) * ctx->depth * GCOMMI_ENTRY_WORDS;
}

/* Ring of the lane from source GPU g into this rank, in this GPU's segment (the lanes from remote
 * GPUs too: their producer is the proxy, through the service block or a host rank's proxy). */
GCOMM_HD_INLINE uint64_t *gcommi_ctx_lane_ring(const gcomm_context_t *ctx, int g)
{
    return gcommi_ctx_ring(ctx, ctx->gpu, ctx->local_rank, g);
}

/* Nonzero once the launch has been stopped (an error or timeout anywhere); the value is the
 * negated GCOMM_ERR_* code of the cause. */
GCOMM_HD_INLINE int gcommi_aborted(const gcomm_context_t *ctx)
{
    return (int)gcommi_ld_relaxed_sys(&ctx->ctrl->abort.v);
}

/* Records the first error of this GPU and stops every GPU of the launch. Thread 0 only. */
GCOMM_HD_INLINE void gcommi_fail(gcomm_context_t *ctx, int code, int op, int win,
                                          int target, uint64_t offset, uint64_t bytes,
                                          uint64_t limit)
{
    const gcommi_param_t *p = ctx->p;
    gcommi_error_t *e = &ctx->ctrl->error;
    if (gcommi_xchg(&e->claimed, 1u) == 0) {
        e->code = code;
        e->rank = ctx->rank;
        e->win = win;
        e->target = target;
        e->op = op;
        e->offset = offset;
        e->bytes = bytes;
        e->limit = limit;
    }
    gcommi_fence_sys();
    for (int g = 0; g < p->ngpus; g++) {
        uint32_t *a = &gcommi_seg_ctrl(p, g)->abort.v;
        /* a remote GPU's control block is a shadow in host memory, read by the proxy, which
         * tells that GPU's process: a store (atomics on host memory are not for every bus) */
        if ((p->remote_mask >> g) & 1u) gcommi_st_release_sys(a, (uint32_t)(-code));
        else gcommi_cas_sys(a, 0u, (uint32_t)(-code));
    }
}

/* Records st (returned by a proxy wait) as this rank's failure unless the launch had been
 * stopped and st only says so: the cause is recorded where it happened (another GPU or process),
 * not as this rank's. Thread 0 only. */
GCOMM_HD_INLINE void gcommi_fail_proxy(gcomm_context_t *ctx, int st, int op, int win,
                                       int target, uint64_t offset, uint64_t bytes)
{
    int a = gcommi_aborted(ctx);
    if (a && st == -a) return;
    /* the target's window size is known in the target's process only */
    gcommi_fail(ctx, st, op, win, target, offset, bytes, GCOMMI_LIMIT_REMOTE);
}

/* Fills this rank's wait report (what it was blocked on when it gave up). Thread 0 only. */
GCOMM_HD_INLINE void gcommi_report(gcomm_context_t *ctx, int op, int win, int source,
                                            int tag, int want, int got, int target)
{
    const gcommi_param_t *p = ctx->p;
    gcommi_report_t *r = gcommi_seg_report(p, ctx->gpu, ctx->local_rank);
    r->op = op;
    r->win = win;
    r->source = source;
    r->tag = tag;
    r->want = want;
    r->got = got;
    r->pending = (int32_t)ctx->npending;
    r->target = target;
    for (int g = 0; g < GCOMMI_MAX_GPUS; g++) r->lane_next[g] = ctx->lane_next[g];
    gcommi_fence_sys();
}

/* Called in a polling loop by thread 0: GCOMM_SUCCESS while it may go on waiting, else the error
 * that ends the wait (the launch was stopped elsewhere, or this wait ran out of time; a timeout
 * is recorded as this rank's error and stops the launch). */
GCOMM_HD_INLINE int gcommi_poll_check(gcomm_context_t *ctx, uint64_t start, int op,
                                               int win, int target)
{
    int a = gcommi_aborted(ctx);
    if (a) return -a;
    if (gcommi_now_ns() - start > ctx->timeout_ns) {
        gcommi_fail(ctx, GCOMM_ERR_TIMEOUT, op, win, target, 0, 0, 0);
        return GCOMM_ERR_TIMEOUT;
    }
    return GCOMM_SUCCESS;
}

/* 16-byte loads each thread of a rank keeps in flight in a block copy (a put or get): 8 by
 * default, so that one block alone covers the latency of DRAM or a peer link. Their registers
 * (four per load) are part of every kernel that calls a put or get, and registers bound how many
 * ranks fit on an SM: a kernel that over-decomposes (many ranks per SM) and moves small messages
 * may define it smaller (1, 2 or 4) before including a gcomm header (bench_overlap --lean: 1,
 * 96 registers instead of 122; docs/GUIDE.md). */
#ifndef GCOMM_COPY_INFLIGHT
#define GCOMM_COPY_INFLIGHT 8
#endif
#if GCOMM_COPY_INFLIGHT != 1 && GCOMM_COPY_INFLIGHT != 2 && GCOMM_COPY_INFLIGHT != 4 &&          \
    GCOMM_COPY_INFLIGHT != 8
#error "GCOMM_COPY_INFLIGHT must be 1, 2, 4 or 8"
#endif

/* The bulk of gcommi_block_copy: the whole block, 16-byte accesses where source and destination
 * agree in alignment, bytes at the ragged ends. */
GCOMM_HD_INLINE void gcommi_block_copy_bulk(char *d, const char *s, size_t bytes)
{
#if !defined(__CUDA_ARCH__)
    memmove(d, s, bytes); /* a host rank: one thread, the C library's copy */
#else
    const int tid = gcommi_tid(), nt = gcommi_nthreads();
    size_t head = 0, nvec = 0;
    if ((((uintptr_t)d ^ (uintptr_t)s) & 15) == 0) {
        head = (16 - ((uintptr_t)d & 15)) & 15;
        if (head > bytes) head = bytes;
        nvec = (bytes - head) / 16;
    }
    const uint4 *vs = (const uint4 *)(s + head);
    uint4 *vd = (uint4 *)(d + head);
    /* GCOMM_COPY_INFLIGHT (then four) 16-byte loads in flight per thread before the stores:
     * one block alone has to keep enough bytes in flight to cover the latency of DRAM or a
     * peer link */
    size_t i = tid;
    const size_t step = GCOMM_COPY_INFLIGHT * (size_t)nt;
    for (; i + step - nt < nvec; i += step) {
        uint4 v[GCOMM_COPY_INFLIGHT];
GCOMMI_UNROLL
        for (int k = 0; k < GCOMM_COPY_INFLIGHT; k++) v[k] = vs[i + k * (size_t)nt];
GCOMMI_UNROLL
        for (int k = 0; k < GCOMM_COPY_INFLIGHT; k++) vd[i + k * (size_t)nt] = v[k];
    }
#if GCOMM_COPY_INFLIGHT > 4
    for (; i + 3 * (size_t)nt < nvec; i += 4 * (size_t)nt) {
        uint4 a = vs[i], b = vs[i + nt], c = vs[i + 2 * (size_t)nt], e = vs[i + 3 * (size_t)nt];
        vd[i] = a;
        vd[i + nt] = b;
        vd[i + 2 * (size_t)nt] = c;
        vd[i + 3 * (size_t)nt] = e;
    }
#endif
    for (; i < nvec; i += nt) vd[i] = vs[i];
    const size_t tail = head + nvec * 16;
    for (size_t k = tid; k < head; k += nt) d[k] = s[k];
    for (size_t k = tail + tid; k < bytes; k += nt) d[k] = s[k];
#endif
}

/* Copies bytes with the whole block, 16-byte accesses where source and destination agree in
 * alignment (the bulk), bytes at the ragged ends. Nothing when source and destination coincide
 * (overlapping windows of ranks that share memory). */
GCOMM_HD_INLINE void gcommi_block_copy(void *dst, const void *src, size_t bytes)
{
    char *d = (char *)dst;
    const char *s = (const char *)src;
    if (d == s || bytes == 0) return;
    if (bytes <= 8 && (((uintptr_t)d | (uintptr_t)s) & (bytes - 1)) == 0 &&
        (bytes & (bytes - 1)) == 0) { /* a small aligned word: one store, not one per byte */
        /* by the second warp when there is one: its load's latency then passes beside thread 0's
         * slot reservation instead of after it (the block barrier that follows orders the store
         * before thread 0's release of the notification) */
        if (gcommi_tid() == (gcommi_nthreads() > 32 ? 32 : 0)) switch (bytes) {
            case 1: *d = *s; break;
            case 2: *(uint16_t *)d = *(const uint16_t *)s; break;
            case 4: *(uint32_t *)d = *(const uint32_t *)s; break;
            default: *(uint64_t *)d = *(const uint64_t *)s; break;
            }
        return;
    }
#if defined(__CUDA_ARCH__)
    /* at most one aligned 16-byte word per thread (a halo line, up to 2 KiB for 128 threads):
     * one load and one store, not the bulk loop's head, unrolled body and tails (in
     * bench_overlap's exchange the bulk's bookkeeping was a fifth of all warp instructions) */
    if (((((uintptr_t)d | (uintptr_t)s | bytes) & 15) == 0) &&
        bytes <= 16 * (size_t)gcommi_nthreads()) {
        const size_t i = (size_t)gcommi_tid();
        if (16 * i < bytes) ((uint4 *)d)[i] = ((const uint4 *)s)[i];
        return;
    }
#endif
    gcommi_block_copy_bulk(d, s, bytes);
}

/* ---- through the proxy (ranks of other processes without load/store access) ---- */

/* Nonzero when world rank r is reached through the proxy. */
GCOMM_HD_INLINE int gcommi_remote(const gcomm_context_t *ctx, int r)
{
    return ctx->remote_mask && ((ctx->remote_mask >> gcommi_ctx_gpu_of_rank(ctx, r)) & 1u);
}

/* What a proxy command is, for error records and wait reports. */
GCOMM_HD_INLINE int gcommi_pq_opname(int pq_op)
{
    return pq_op == GCOMMI_PQ_PUT ? GCOMMI_OP_PUT
         : pq_op == GCOMMI_PQ_GET ? GCOMMI_OP_GET
         : pq_op == GCOMMI_PQ_BARRIER ? GCOMMI_OP_BARRIER : GCOMMI_OP_NOTIFY;
}

/* Thread 0 of a GPU rank: posts c into this GPU's ring to the proxy (rt.h) and, with `wait`,
 * polls its completion counter (mapped host memory) until c is done; then the proxy's first error
 * for this rank, if any, is this call's (and is cleared). A wait that gives up (timeout, or the
 * launch stopped) leaves a reserved slot unpublished: the launch is over by then. */
GCOMM_HD_INLINE int gcommi_proxy_cmd_gpu_t0(gcomm_context_t *ctx, const gcommi_pq_cmd_t *c,
                                            int wait)
{
    const gcommi_param_t *p = ctx->p;
    gcommi_pq_t q = p->proxy_q;
    if (GCOMMI_UNLIKELY(q.ring == NULL)) return GCOMM_ERR_UNSUPPORTED;
    const int op = gcommi_pq_opname(c->op);
    uint64_t start = 0;
    uint32_t spins = 0;
    int st;
    const uint32_t slot = gcommi_pq_reserve(&q);
    /* the credit last loaded usually covers the slot (a load would cross the bus) */
    if (GCOMMI_UNLIKELY((uint32_t)(slot - ctx->proxy_seen) >= q.depth))
        ctx->proxy_seen = gcommi_ld_acquire_sys(q.consumed);
    while (GCOMMI_UNLIKELY((uint32_t)(slot - ctx->proxy_seen) >= q.depth)) {
        if (start == 0) start = gcommi_now_ns();
        if ((st = gcommi_poll_check(ctx, start, op, c->win, c->target))) {
            gcommi_report(ctx, op, c->win, -1, c->tag, -2, (int)c->id, c->target);
            return st;
        }
        gcommi_pause(++spins);
        ctx->proxy_seen = gcommi_ld_acquire_sys(q.consumed);
    }
    gcommi_pq_publish(&q, slot, c);
    if (!wait) return GCOMM_SUCCESS;
    const uint32_t *done = &p->proxy_done[ctx->rank];
    start = 0;
    while (!gcommi_pq_done(done, c->id)) {
        if (start == 0) start = gcommi_now_ns();
        if ((st = gcommi_poll_check(ctx, start, op, c->win, c->target))) {
            gcommi_report(ctx, op, c->win, -1, c->tag, -1, (int)c->id, c->target);
            return st;
        }
    }
    ctx->proxy_flushed = c->id;
    uint32_t *err = (uint32_t *)&p->proxy_err[ctx->rank];
    st = (int32_t)gcommi_ld_acquire_sys(err);
    if (GCOMMI_UNLIKELY(st)) gcommi_st_release_sys(err, 0u);
    return st;
}

/* Thread 0: posts command c (its id assigned here) to the proxy; with `wait`, returns once it is
 * done (and every earlier command of this rank). */
GCOMM_HD_INLINE int gcommi_proxy_cmd_t0(gcomm_context_t *ctx, gcommi_pq_cmd_t *c, int wait)
{
    c->source = ctx->rank;
    c->id = ++ctx->proxy_ids;
#if defined(__CUDA_ARCH__)
    return gcommi_proxy_cmd_gpu_t0(ctx, c, wait);
#else
    int st = gcommi_host_proxy_post(ctx->p->proxy, c);
    if (st == GCOMM_SUCCESS && wait) {
        st = gcommi_host_proxy_wait(ctx->p->proxy, ctx->rank, c->id);
        ctx->proxy_flushed = c->id;
    }
    return st;
#endif
}

/* Thread 0: completes every command this rank gave the proxy (a FLUSH, when there are any). */
GCOMM_HD_INLINE int gcommi_proxy_flush_t0(gcomm_context_t *ctx)
{
    if (ctx->proxy_ids == ctx->proxy_flushed) return GCOMM_SUCCESS;
    gcommi_pq_cmd_t c;
    memset(&c, 0, sizeof(c));
    c.op = GCOMMI_PQ_FLUSH;
    c.target = ctx->rank;
    return gcommi_proxy_cmd_t0(ctx, &c, 1);
}

/* The command of a contiguous put, get or notification of `bytes` at `offset` of window `win` of
 * world rank tw: a put of up to GCOMMI_PQ_INLINE_MAX bytes carries its data, any other put or get
 * the origin's address. */
GCOMM_HD_INLINE void gcommi_proxy_cmd_make(gcommi_pq_cmd_t *c, int op, gcomm_win_t win, int tw,
                                          size_t offset, size_t bytes, const char *origin)
{
    memset(c, 0, sizeof(*c));
    c->op = op == GCOMMI_OP_GET ? GCOMMI_PQ_GET
          : op == GCOMMI_OP_NOTIFY ? GCOMMI_PQ_NOTIFY : GCOMMI_PQ_PUT;
    c->offset = offset;
    c->bytes = bytes;
    c->target = tw;
    c->win = (uint16_t)win;
    if (op == GCOMMI_OP_PUT && bytes <= GCOMMI_PQ_INLINE_MAX) {
        c->flags = GCOMMI_PQ_F_INLINE;
        if (bytes) memcpy(c->u.data, origin, bytes);
    } else if (op != GCOMMI_OP_NOTIFY) {
        c->u.origin = (uint64_t)(uintptr_t)origin;
    }
}

/* Thread 0: a put, get or notification to a rank of another process. A put or get returns once
 * done: its origin buffer may be reused, its errors (an access outside the target's window,
 * which the target's proxy checks) are this call's, and puts of one rank to one place land in
 * the order they were made (the proxies may deliver a rank's commands in any order). Small puts
 * still travel inside the command. A notification returns at once (its errors surface at the
 * next flush, barrier or gcomm_finish). */
GCOMM_HD_INLINE int gcommi_rma_proxy_t0(gcomm_context_t *ctx, int op, gcomm_win_t win, int tw,
                                        size_t offset, size_t bytes, void *origin, int notify,
                                        int tag)
{
    gcommi_pq_cmd_t c;
    gcommi_proxy_cmd_make(&c, op, win, tw, offset, bytes, (const char *)origin);
    if (notify && op != GCOMMI_OP_NOTIFY) c.flags |= GCOMMI_PQ_F_NOTIFY;
    c.tag = tag;
    int st = gcommi_proxy_cmd_t0(ctx, &c, op != GCOMMI_OP_NOTIFY);
    if (st) gcommi_fail_proxy(ctx, st, op, win, tw, offset, bytes);
    return st;
}

/* Thread 0, in gcomm_finish of a job with a service block: counts the rank out; the last rank
 * of the GPU tells the launch (svc.h), with the proxy ring's final reservation count (every
 * rank of the GPU has reserved its last command before counting itself out). */
GCOMM_HD_INLINE void gcommi_svc_finish_t0(gcomm_context_t *ctx)
{
    gcommi_svc_ctl_t *c = ctx->p->svc_ctl;
    if (!ctx->p->svc_ring) return;
    gcommi_fence_gpu();
    if (gcommi_fetch_add_gpu(&ctx->ctrl->ranks_done.v, 1) + 1 != (uint32_t)ctx->nlocal) return;
    gcommi_fence_gpu();
    gcommi_st_relaxed_sys(&c->final_tail, gcommi_ld_relaxed_gpu(&ctx->ctrl->proxy_tail.v));
    gcommi_st_release_sys(&c->ranks_done, 1);
}

/* ---- setup ---- */

GCOMMI_DEV int gcomm_rank_init(gcomm_param_t param, gcomm_context_t *ctx)
{
#if defined(__CUDA_ARCH__)
    /* the block after the ranks of a job over the proxy is its service block (svc.h): it runs
     * the service and ends there, never returning into the kernel */
    if (param && param->version == GCOMMI_RT_VERSION && param->svc_ring &&
        gcommi_block_index() == param->nlocal) {
        const int nt = gcommi_nthreads();
        if (gcommi_tid() < 32)
            gcommi_svc_loop(param->svc_ring, param->svc_depth, param->svc_ctl, nt < 32 ? nt : 32);
        asm volatile("exit;");
    }
#endif
    gcommi_block_sync();
    if (gcommi_tid() == 0) {
        const gcommi_param_t *p = param;
        int st = GCOMM_SUCCESS;
        if (p == NULL || p->version != GCOMMI_RT_VERSION || p->size != sizeof(gcommi_param_t) ||
            !gcommi_grid_ok() || gcommi_block_index() >= p->nlocal) {
            /* Not a parameter of this gcomm (or launched outside gcomm_launch): nothing can be
             * reported through it, so stop loudly. */
            gcommi_stop_loudly(p);
        }
        ctx->p = p;
        ctx->ctrl = gcommi_seg_ctrl(p, p->gpu);
        ctx->gpu = p->gpu;
        ctx->ngpus = p->ngpus;
        ctx->proc = p->proc_of_gpu[p->gpu];
        ctx->world_size = p->world_size;
        ctx->nlocal = p->nlocal;
        ctx->local_rank = gcommi_block_index();
        ctx->rank = p->rank_base[p->gpu] + ctx->local_rank;
        ctx->priv = gcommi_seg_priv(p, p->gpu, ctx->local_rank);
        ctx->pending = gcommi_priv_pending(ctx->priv);
        for (int g = 0; g < GCOMMI_MAX_GPUS; g++) {
            ctx->seg[g] = p->seg[g];
            ctx->lane_next[g] = 0;
            ctx->lane_returned[g] = 0;
        }
        for (int g = 0; g <= GCOMMI_MAX_GPUS; g++) ctx->rank_base[g] = p->rank_base[g];
        ctx->off_tail = p->off_tail;
        ctx->off_consumed = p->off_consumed;
        ctx->off_ring = p->off_ring;
        ctx->timeout_ns = p->timeout_ns;
        ctx->depth = p->depth;
        ctx->pending_cap = p->pending_cap;
        ctx->npending = 0;
        ctx->pending_head = 0;
        for (int c = 0; c < GCOMMI_RCACHE; c++) ctx->rcache[c].win = GCOMM_WIN_NULL;
        ctx->credit_target = -1;
        ctx->credit_seen = 0;
        ctx->credit_slot = 0;
        ctx->remote_mask = p->remote_mask;
        /* Inline puts go between GPU ranks that all reach each other with loads and stores:
         * not in a job over the proxy, nor on host ranks (then gcomm_finish needs no barrier) */
#if defined(__CUDA_ARCH__)
        ctx->inline_max = p->remote_mask ? 0 : p->inline_max;
#else
        ctx->inline_max = 0;
#endif
        ctx->inl_target = -1;
        ctx->inl_end = 0;
        ctx->inl_win = GCOMM_WIN_NULL;
        ctx->inl_base = NULL;
        ctx->dirty = GCOMMI_DIRTY_NONE;
        ctx->proxy_ids = 0;
        ctx->proxy_flushed = 0;
        ctx->proxy_seen = 0;
        for (int c = 0; c < GCOMMI_NCOMMS; c++) ctx->wins_used[c] = 0;
        ctx->status = st;
    }
    gcommi_block_sync();
    return ctx->status;
}

GCOMMI_DEV int gcomm_finish(gcomm_context_t *ctx)
{
    gcommi_block_sync();
    if (gcommi_tid() == 0) {
        /* Inline puts land in their windows when their targets take them from the lanes: a
         * target that ended without waiting for them would leave them there. So with inline
         * puts on, no rank ends before every rank has confirmed its own (a world barrier, whose
         * waits take in notifications meanwhile). */
        if (ctx->inline_max && !gcommi_aborted(ctx)) {
            int bst = gcommi_barrier_t0(ctx, GCOMM_COMM_WORLD);
            (void)bst; /* a failure is recorded (error report, abort word) and returned below */
        }
        gcommi_fence_sc_sys();
        int st = gcommi_proxy_flush_t0(ctx); /* what this rank gave the proxy is done */
        if (st) gcommi_fail_proxy(ctx, st, GCOMMI_OP_NOTIFY, -1, -1, 0, 0);
        gcommi_svc_finish_t0(ctx);
    }
    gcommi_block_sync();
    int a = gcommi_aborted(ctx);
    return a ? -a : GCOMM_SUCCESS;
}

GCOMMI_DEV int gcomm_comm_rank(gcomm_context_t *ctx, gcomm_comm_t comm, int *rank)
{
    if (comm == GCOMM_COMM_WORLD) *rank = ctx->rank;
    else if (comm == GCOMM_COMM_DEVICE) *rank = ctx->local_rank;
    else return GCOMM_ERR_ARG;
    return GCOMM_SUCCESS;
}

GCOMMI_DEV int gcomm_comm_size(gcomm_context_t *ctx, gcomm_comm_t comm, int *size)
{
    if (comm == GCOMM_COMM_WORLD) *size = ctx->world_size;
    else if (comm == GCOMM_COMM_DEVICE) *size = ctx->nlocal;
    else return GCOMM_ERR_ARG;
    return GCOMM_SUCCESS;
}

GCOMMI_DEV int gcomm_rank_thread(void)
{
    return gcommi_tid();
}

GCOMMI_DEV int gcomm_rank_nthreads(void)
{
    return gcommi_nthreads();
}

GCOMMI_DEV void gcomm_rank_sync(void)
{
    gcommi_block_sync();
}

GCOMMI_DEV uint64_t gcomm_rank_time_ns(void)
{
    return gcommi_now_ns();
}

/* ---- barrier ---- */

/* Thread 0's part of a barrier. Arrivals count up forever (no reset to race with): the rank that
 * brings this GPU's count to a multiple of nlocal is the GPU's last, joins the other GPUs' last
 * ranks on a counter in GPU 0's memory (world only) and releases the generation. */
GCOMM_HD_INLINE int gcommi_barrier_t0(gcomm_context_t *ctx, int comm)
{
    const gcommi_param_t *p = ctx->p;
    gcommi_ctrl_t *c = ctx->ctrl;
    /* this rank's inline puts are in their windows (every rank confirms its own before it
     * arrives, so none is left in a lane once the barrier is passed) */
    int st = gcommi_inline_confirm_t0(ctx, GCOMMI_OP_BARRIER, comm);
    if (st) return st;
    gcommi_fence_sys(); /* release everything the block wrote (it passed a bar.sync) */
    ctx->dirty = GCOMMI_DIRTY_NONE; /* every rank acquires when it leaves */
    /* and what it gave the proxy: its puts to other processes are in place before anybody passes */
    if (comm == GCOMM_COMM_WORLD && (st = gcommi_proxy_flush_t0(ctx))) {
        gcommi_fail_proxy(ctx, st, GCOMMI_OP_BARRIER, comm, -1, 0, 0);
        return st;
    }
    uint32_t old = gcommi_fetch_add_gpu(&c->bar_arrive[comm].v, 1);
    uint32_t epoch = old / (uint32_t)ctx->nlocal + 1;
    uint64_t start = gcommi_now_ns();
    uint32_t spins = 0;
    if ((old + 1) % (uint32_t)ctx->nlocal == 0) {
        if (comm == GCOMM_COMM_WORLD && ctx->remote_mask) {
            /* the other processes' ranks meet through the proxies (one BARRIER per process) */
            gcommi_pq_cmd_t bc;
            memset(&bc, 0, sizeof(bc));
            bc.op = GCOMMI_PQ_BARRIER;
            bc.target = ctx->rank;
            if ((st = gcommi_proxy_cmd_t0(ctx, &bc, 1))) {
                gcommi_fail_proxy(ctx, st, GCOMMI_OP_BARRIER, comm, -1, 0, 0);
                goto fail;
            }
        } else if (comm == GCOMM_COMM_WORLD && ctx->ngpus > 1) {
            /* tell every GPU (remote stores) and wait in this GPU's memory until all have told
             * it; a poll of another GPU's memory would put reads on the links that the ranks
             * still communicating (a ping-pong beside the barrier) pay for. One fence releases
             * the stores together (a st.release each fences again: 2.6 us more per barrier of
             * 2 GPUs, 2x H100) and acquires what this GPU's other ranks released before their
             * arrivals, whose count this rank's fetch-add read, so that the stores pass it on */
            const int me = ctx->gpu;
            gcommi_fence_sys();
            for (int g = 0; g < ctx->ngpus; g++)
                gcommi_st_relaxed_sys(&gcommi_seg_ctrl(p, g)->bar_seen.gen[me], epoch);
            for (int g = 0; g < ctx->ngpus; g++) {
                const uint32_t *seen = &c->bar_seen.gen[g];
                while ((int32_t)(gcommi_ld_acquire_sys(seen) - epoch) < 0) {
                    if ((st = gcommi_poll_check(ctx, start, GCOMMI_OP_BARRIER, comm, -1)))
                        goto fail;
                    gcommi_progress_t0(ctx);
                    gcommi_pause(++spins);
                }
            }
        }
        gcommi_st_release_sys(&c->bar_gen[comm].v, epoch);
    } else {
        while ((int32_t)(gcommi_ld_acquire_sys(&c->bar_gen[comm].v) - epoch) < 0) {
            if ((st = gcommi_poll_check(ctx, start, GCOMMI_OP_BARRIER, comm, -1))) goto fail;
            gcommi_progress_t0(ctx);
            gcommi_pause(++spins);
        }
    }
    gcommi_fence_sys();
    return GCOMM_SUCCESS;
fail:
    gcommi_report(ctx, GCOMMI_OP_BARRIER, comm, -1, -1, 0, 0, -1);
    return st;
}

GCOMMI_DEV int gcomm_barrier(gcomm_context_t *ctx, gcomm_comm_t comm)
{
    if (comm != GCOMM_COMM_WORLD && comm != GCOMM_COMM_DEVICE) return GCOMM_ERR_ARG;
    gcommi_block_sync();
    if (gcommi_tid() == 0) ctx->status = gcommi_barrier_t0(ctx, comm);
    gcommi_block_sync();
    return ctx->status;
}

/* ---- windows ---- */

GCOMM_HD_INLINE int gcommi_win_comm(gcomm_win_t win)
{
    return win / GCOMMI_MAX_WINS;
}

GCOMM_HD_INLINE int gcommi_win_valid(const gcomm_context_t *ctx, gcomm_win_t win)
{
    return win >= 0 && win < GCOMMI_NCOMMS * GCOMMI_MAX_WINS &&
           ((ctx->wins_used[win / GCOMMI_MAX_WINS] >> (win % GCOMMI_MAX_WINS)) & 1u);
}

GCOMM_HD_INLINE int gcommi_comm_size(const gcomm_context_t *ctx, int comm)
{
    return comm == GCOMM_COMM_WORLD ? ctx->world_size : ctx->nlocal;
}

/* World rank of rank r of the window's communicator. */
GCOMM_HD_INLINE int gcommi_world_rank(const gcomm_context_t *ctx, int comm, int r)
{
    return comm == GCOMM_COMM_WORLD ? r : ctx->rank_base[ctx->gpu] + r;
}

GCOMMI_DEV int gcomm_win_create(gcomm_context_t *ctx, gcomm_comm_t comm, void *base, size_t bytes,
                                gcomm_win_t *win)
{
    if (win == NULL) return GCOMM_ERR_ARG;
    *win = GCOMM_WIN_NULL; /* a failed create leaves no stale handle behind */
    if (comm != GCOMM_COMM_WORLD && comm != GCOMM_COMM_DEVICE) return GCOMM_ERR_ARG;
    gcommi_block_sync();
    if (gcommi_tid() == 0) {
        const gcommi_param_t *p = ctx->p;
        int st = GCOMM_SUCCESS, region = -1;
        uint64_t b = (uint64_t)(uintptr_t)base;
        for (int r = 0; r < p->nregions[ctx->gpu] && region < 0; r++) {
            uint64_t rb = p->region_base[ctx->gpu][r], rs = p->region_size[ctx->gpu][r];
            if (b >= rb && b - rb <= rs && bytes <= rs - (b - rb)) region = r;
        }
        uint32_t freebits = ~ctx->wins_used[comm];
        int slot = freebits ? gcommi_ffs(freebits) - 1 : -1;
        if (region < 0 && bytes > 0) {
            gcommi_fail(ctx, GCOMM_ERR_ARG, GCOMMI_OP_WIN_CREATE, -1, -1, b, bytes, 0);
            st = GCOMM_ERR_ARG;
        } else if (slot < 0) {
            gcommi_fail(ctx, GCOMM_ERR_UNSUPPORTED, GCOMMI_OP_WIN_CREATE, -1, -1, b, bytes,
                        GCOMMI_MAX_WINS);
            st = GCOMM_ERR_UNSUPPORTED;
        } else {
            int id = comm * GCOMMI_MAX_WINS + slot;
            int me = comm == GCOMM_COMM_WORLD ? ctx->rank : ctx->local_rank;
            gcommi_win_entry_t e;
            e.addr = region < 0 ? 0 : b;
            e.size = bytes;
            e.gpu = ctx->gpu;
            e.region = region < 0 ? 0 : region;
            e.valid = 1;
            e.proc = ctx->proc;
            /* every GPU that has ranks of the communicator keeps a copy of the table */
            for (int g = 0; g < ctx->ngpus; g++) {
                if (comm == GCOMM_COMM_DEVICE && g != ctx->gpu) continue;
                volatile gcommi_win_entry_t *t = gcommi_seg_win(p, g, id, me);
                t->addr = e.addr;
                t->size = e.size;
                t->gpu = e.gpu;
                t->region = e.region;
                t->proc = e.proc;
                t->valid = 1;
            }
            ctx->wins_used[comm] |= 1u << slot;
            ctx->value = id;
        }
        if (st == GCOMM_SUCCESS) st = gcommi_barrier_t0(ctx, comm);
        ctx->status = st;
    }
    gcommi_block_sync();
    const int st = ctx->status;
    if (st == GCOMM_SUCCESS) *win = ctx->value;
    return st;
}

GCOMMI_DEV int gcomm_win_free(gcomm_context_t *ctx, gcomm_win_t *win)
{
    if (win == NULL || !gcommi_win_valid(ctx, *win)) return GCOMM_ERR_WINDOW;
    gcommi_block_sync();
    if (gcommi_tid() == 0) {
        const gcommi_param_t *p = ctx->p;
        int id = *win, comm = gcommi_win_comm(id);
        /* everybody's accesses to the window are over before it goes */
        int st = gcommi_barrier_t0(ctx, comm);
        int me = comm == GCOMM_COMM_WORLD ? ctx->rank : ctx->local_rank;
        for (int g = 0; g < ctx->ngpus; g++) {
            if (comm == GCOMM_COMM_DEVICE && g != ctx->gpu) continue;
            ((volatile gcommi_win_entry_t *)gcommi_seg_win(p, g, id, me))->valid = 0;
        }
        ctx->wins_used[comm] &= ~(1u << (id % GCOMMI_MAX_WINS));
        for (int c = 0; c < GCOMMI_RCACHE; c++)
            if (ctx->rcache[c].win == id) ctx->rcache[c].win = GCOMM_WIN_NULL;
        if (ctx->inl_win == id) ctx->inl_win = GCOMM_WIN_NULL;
        ctx->status = st;
    }
    gcommi_block_sync();
    *win = GCOMM_WIN_NULL;
    return ctx->status;
}

/* Entry c of the window cache, whole. On the GPU three 16-byte loads issued together, before
 * anything looks at the key: written as plain loads, the compiler issued the value's loads only
 * after the key had compared equal (two shared-memory latencies before a put's reservation
 * instead of one). Volatile so that they are not moved behind that branch; no memory clobber,
 * so that they order nothing else. Shared-memory loads where the context is in shared memory
 * (as device.cuh shows it; the test folds away once inlined): the generic loads an asm
 * statement otherwise has to use made a notified put 0.01-0.02 us slower (2x H200). */
GCOMM_HD_INLINE gcommi_rcache_t gcommi_rcache_get(const gcomm_context_t *ctx, int c)
{
#if defined(__CUDA_ARCH__)
    gcommi_rcache_t r;
    const gcommi_rcache_t *e = &ctx->rcache[c];
    uint64_t a0, a1, b0, b1, c0, c1;
    if (__isShared(e)) {
        const uint32_t sa = (uint32_t)__cvta_generic_to_shared(e);
        asm volatile("ld.shared.v2.u64 {%0, %1}, [%2];" : "=l"(a0), "=l"(a1) : "r"(sa));
        asm volatile("ld.shared.v2.u64 {%0, %1}, [%2+16];" : "=l"(b0), "=l"(b1) : "r"(sa));
        asm volatile("ld.shared.v2.u64 {%0, %1}, [%2+32];" : "=l"(c0), "=l"(c1) : "r"(sa));
    } else {
        asm volatile("ld.v2.u64 {%0, %1}, [%2];" : "=l"(a0), "=l"(a1) : "l"(e));
        asm volatile("ld.v2.u64 {%0, %1}, [%2+16];" : "=l"(b0), "=l"(b1) : "l"(e));
        asm volatile("ld.v2.u64 {%0, %1}, [%2+32];" : "=l"(c0), "=l"(c1) : "l"(e));
    }
    r.win = (int32_t)(uint32_t)a0;
    r.target = (int32_t)(uint32_t)(a0 >> 32);
    r.tw = (int32_t)(uint32_t)a1;
    r.sys = (int32_t)(uint32_t)(a1 >> 32);
    r.addr = (char *)(uintptr_t)b0;
    r.size = b1;
    r.tail = (uint32_t *)(uintptr_t)c0;
    r.ring = (uint64_t *)(uintptr_t)c1;
    return r;
#else
    return ctx->rcache[c];
#endif
}

/* Checks what an operation's arguments say without reading memory: window handle, rank range,
 * tag. Run by every thread (same result everywhere); thread 0 records a failure. */
GCOMM_HD_INLINE int gcommi_check_args(gcomm_context_t *ctx, int op, gcomm_win_t win,
                                               int target, int notify, int tag, size_t offset,
                                               size_t bytes)
{
    int st = GCOMM_SUCCESS;
    if (!gcommi_win_valid(ctx, win)) st = GCOMM_ERR_WINDOW;
    else if (target < 0 || target >= gcommi_comm_size(ctx, gcommi_win_comm(win)))
        st = GCOMM_ERR_RANK;
    else if (notify && (tag < 0 || tag > GCOMMI_TAG_MAX)) st = GCOMM_ERR_TAG;
    if (GCOMMI_UNLIKELY(st) && gcommi_tid() == 0)
        gcommi_fail(ctx, st, op, win, target, offset, bytes, 0);
    return st;
}

/* Where a window entry's memory is, as this GPU addresses it. */
GCOMM_HD_INLINE char *gcommi_win_base(const gcomm_context_t *ctx, const gcommi_win_entry_t *e)
{
    const gcommi_param_t *p = ctx->p;
    if (e->proc == ctx->proc) /* same process: the owner's address works here */
        return (char *)(uintptr_t)e->addr;
    return p->region_view[e->gpu][e->region] + (e->addr - p->region_base[e->gpu][e->region]);
}

/* The window table lookup behind gcommi_resolve's cache: base and size of target's part of a
 * window (0 if the entry is not valid), cached for the next call. All threads (block), or thread 0
 * alone. */
GCOMM_HD_INLINE int gcommi_resolve_miss(gcomm_context_t *ctx, gcomm_win_t win,
                                                 int target, int c, char **base_out,
                                                 uint64_t *size_out, int block)
{
    const gcommi_win_entry_t *e = gcommi_seg_win(ctx->p, ctx->gpu, win, target);
    int valid = e->valid;
    uint64_t size = e->size;
    char *base = gcommi_win_base(ctx, e);
    /* every thread has read the cache before thread 0 changes it */
    if (block) gcommi_block_sync();
    if (gcommi_tid() == 0 && valid) {
        const int tw = gcommi_world_rank(ctx, gcommi_win_comm(win), target);
        const int tgpu = gcommi_ctx_gpu_of_rank(ctx, tw);
        gcommi_rcache_t *r = &ctx->rcache[c];
        r->win = win;
        r->target = target;
        r->tw = tw;
        r->sys = tgpu != ctx->gpu;
        r->addr = base;
        r->size = size;
        r->tail = gcommi_ctx_tail(ctx, tw);
        r->ring = gcommi_ctx_ring(ctx, tgpu, tw - ctx->rank_base[tgpu], ctx->gpu);
    }
    *base_out = base;
    *size_out = size;
    return valid;
}

/* The end of a window lookup: the address of [offset, offset + bytes) in target's part (base,
 * size; valid: the entry was), or the error, recorded by thread 0. */
GCOMM_HD_INLINE int gcommi_resolve_bounds(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                          size_t offset, size_t bytes, int op, char *base,
                                          uint64_t size, int valid, char **addr)
{
    if (GCOMMI_UNLIKELY(!valid | (offset > size) | (bytes > size - offset))) {
        if (gcommi_tid() == 0)
            gcommi_fail(ctx, GCOMM_ERR_WINDOW, op, win, target, offset, bytes, size);
        return GCOMM_ERR_WINDOW;
    }
    *addr = base + offset;
    return GCOMM_SUCCESS;
}

/* Address (as this GPU sees it) of [offset, offset + bytes) of target's part of a window (a
 * checked window and rank), after checking the bounds. Run by every thread; thread 0 records a
 * failure. */
GCOMM_HD_INLINE int gcommi_resolve_in(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                      size_t offset, size_t bytes, int op, char **addr, int block)
{
    /* A hit in the block's cache saves a chain of global loads (which miss the L1 after any
     * acquire) and a block barrier. Entry target % GCOMMI_RCACHE: a ring's left and right
     * neighbours (two apart) keep an entry each. With one entry per parity of the target they
     * evicted each other on every put, and each put paid the window-table lookup
     * (bench_overlap, exchange only: 6.77 -> 6.30 us per iteration). Direct-mapped: a hit costs
     * two compares, on the latency path of every put. */
    const int c = target & (GCOMMI_RCACHE - 1);
    /* a plain copy: every thread of the block runs this; the single thread's chain that
     * gcommi_rcache_get shortens is the small put's */
    const gcommi_rcache_t r = ctx->rcache[c];
    char *base = r.addr;
    uint64_t size = r.size;
    int valid = 1;
    if (GCOMMI_UNLIKELY(r.win != win || r.target != target)) {
        valid = gcommi_resolve_miss(ctx, win, target, c, &base, &size, block);
    }
    return gcommi_resolve_bounds(ctx, win, target, offset, bytes, op, base, size, valid, addr);
}

GCOMM_HD_INLINE int gcommi_resolve(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                   size_t offset, size_t bytes, int op, char **addr)
{
    return gcommi_resolve_in(ctx, win, target, offset, bytes, op, addr, 1);
}

/* gcommi_resolve for thread 0 alone (the rest of the block is not in the call's path, so the
 * cache needs no barrier to change). */
GCOMM_HD_INLINE int gcommi_resolve_t0(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                      size_t offset, size_t bytes, int op, char **addr)
{
    return gcommi_resolve_in(ctx, win, target, offset, bytes, op, addr, 0);
}

/* One peer slot of gcommi_lane_load_peers per GPU of a job but the own. */
typedef char gcommi_peer_slots_check[GCOMMI_PEER_SLOTS == GCOMMI_MAX_GPUS - 1 ? 1 : -1];
/* Every lane's word offset from lane 0 fits 32 bits (gcommi_lanes_peek computes them so). */
typedef char gcommi_lane_offset_check[(uint64_t)GCOMMI_MAX_GPUS * GCOMMI_DEPTH_MAX *
                                                  GCOMMI_ENTRY_WORDS <= 0xffffffffu
                                              ? 1
                                              : -1];

/* What one look at the lanes found (gcommi_lanes_peek): one bit per lane whose head holds a
 * published entry, and the four words of the head of the first of them that drain takes
 * (`lane`; -1: none), so that taking it costs no second memory latency. One entry's words, not
 * one per lane: registers are what bounds the ranks an SM holds. */
typedef struct {
    uint32_t hits;
    int lane;
    uint64_t w[GCOMMI_ENTRY_WORDS];
} gcommi_peek_t;

/* gcommi_lanes_peek in a job of more than two GPUs: loads the own lane's head whole (into w) and
 * the notification word of every peer lane's head, `slots` (a constant once inlined) of them,
 * and returns the lanes that hold a published entry; *lane: the one whose head words w then
 * holds (the own lane's when it has an entry, else the last peer lane with one; -1: none).
 * Slot k is GPU k, or k + 1 from the own GPU on; a slot without a GPU loads the first
 * peer's head again. Without branches: with a branch per slot, ptxas moved the first slot's
 * load and its check into the first branch's block, and the other slots' loads waited for it
 * (SASS of the ping-pong kernel). */
GCOMM_HD_INLINE uint32_t gcommi_peek_peers(const gcomm_context_t *ctx, const uint64_t *lane0,
                                           const uint64_t *head, uint64_t w[GCOMMI_ENTRY_WORDS],
                                           uint32_t own_next, uint32_t lane_words, int slots,
                                           int *lane)
{
    const int own = ctx->gpu, ngpus = ctx->ngpus, first = own == 0;
    const uint32_t mask = ctx->depth - 1;
    const uint64_t *pa[GCOMMI_PEER_SLOTS];
    uint32_t pn[GCOMMI_PEER_SLOTS], hits = 0;
    uint64_t pv[GCOMMI_PEER_SLOTS];
    GCOMMI_UNROLL
    for (int k = 0; k < GCOMMI_PEER_SLOTS; k++) {
        if (k >= slots) break;
        const int g = k + (k >= own), gl = g < ngpus ? g : first;
        pn[k] = ctx->lane_next[gl];
        pa[k] = lane0 + ((uint32_t)gl * lane_words + (pn[k] & mask) * GCOMMI_ENTRY_WORDS);
    }
    gcommi_lane_load_peers(head, w, pa, pv, slots);
    /* Without an entry in the own lane, the words handed on are a peer lane's: its notification
     * word, and word 1 made unpublished (its seq inverted), so that whoever takes the entry
     * loads an inline entry's words then (gcommi_lane_take_inline) and a released entry needs
     * no load at all; the straight take (gcommi_take_one_t0) serves a peer lane that alone has
     * an entry. Through the drain's own reload, a notification between GPUs took 1,634 of
     * thread 0's cycles to take in a job of four, this way 298 (4x H100: 2.26 -> 1.88 us one
     * way; bench_rma_prof, BENCHMARKS.md). */
    const int own_hit = gcommi_lane_published(w[0], own_next);
    GCOMMI_UNROLL
    for (int k = 0; k < GCOMMI_PEER_SLOTS; k++) {
        if (k >= slots) break;
        const int g = k + (k >= own);
        if (g < ngpus && gcommi_lane_published(pv[k], pn[k])) {
            hits |= 1u << g;
            if (!own_hit) {
                w[0] = pv[k];
                *lane = g;
            }
        }
    }
    if (own_hit) {
        hits |= 1u << own;
        *lane = own;
    } else {
        w[1] = ~w[0];
    }
    return hits;
}

/* Empty polls of a wait between two looks at the clock, the abort word and its credits. */
#define GCOMMI_CHECK_POLLS 32

/* Polls of the lanes per trip of a wait's loop: on the GPU all of GCOMMI_CHECK_POLLS run in
 * gcommi_lanes_peek's loop, where the heads' addresses and read positions stay in registers
 * (each poll of the wait's loop read them from the shared context again: three dependent
 * shared-memory loads before every poll's global loads, a longer poll period, and a
 * notification waits on average half a period to be seen); on the host one poll per trip, since
 * a host rank lets the others run after every miss. */
#if defined(__CUDA_ARCH__)
#define GCOMMI_WAIT_POLLS GCOMMI_CHECK_POLLS
#else
#define GCOMMI_WAIT_POLLS 1
#endif

/* Thread 0: looks at the head entry of every lane into this rank, up to `polls` times until one
 * is published (a job of more than two GPUs: once); lane0 is
 * gcommi_ctx_lane_ring(ctx, 0), the lanes from the source GPUs following it `depth` entries
 * apart: a wait computes it once, so that an empty poll, which it repeats until its
 * notifications come, does not recompute the lanes' addresses from the shared context. Relaxed
 * loads (a hit is acquired by gcommi_drain_lanes when it is a released entry; an inline one needs
 * nothing); every load is issued before the first result is looked at, so that their latencies
 * overlap. The own lane's head and, with one peer GPU, the peer lane's are loaded
 * whole (an inline entry's words come with its notification word); with more GPUs the peer
 * lanes' notification words alone (one register pair per peer, not four), all in the same asm
 * statement as the own head (gcommi_peek_peers), and a peer lane's inline words are loaded when
 * its entry is taken. */
GCOMM_HD_INLINE void gcommi_lanes_peek(const gcomm_context_t *ctx, const uint64_t *lane0,
                                       gcommi_peek_t *pk, int polls)
{
    const uint32_t depth = ctx->depth, mask = depth - 1;
    /* word offsets in 32 bits (GCOMMI_MAX_GPUS lanes of GCOMMI_DEPTH_MAX entries are 2^20
     * words): fewer instructions between a poll's start and its loads than 64-bit products.
     * The same index as gcommi_lane_head's, but in this form: written with gcommi_lane_head here
     * and in gcommi_peek_peers, the lean overlap kernel took 102 registers instead of 96
     * (test_register_budget_lean, 2026-11-28) */
    const uint32_t lane_words = depth * GCOMMI_ENTRY_WORDS;
    const int own = ctx->gpu, ngpus = ctx->ngpus;
    const uint32_t n = ctx->lane_next[own];
    const uint64_t *head = lane0 + ((uint32_t)own * lane_words + (n & mask) * GCOMMI_ENTRY_WORDS);
    if (ngpus == 2) {
        /* both heads in one go (the read positions are read before the loads: a load's memory
         * clobber would order a shared-memory read written after it behind it) */
        const int peer = 1 - own;
        const uint32_t np = ctx->lane_next[peer];
        const uint64_t *phead =
            lane0 + ((uint32_t)peer * lane_words + (np & mask) * GCOMMI_ENTRY_WORDS);
        uint64_t pw[GCOMMI_ENTRY_WORDS];
        int own_hit, peer_hit;
        do {
            gcommi_lane_load_two(head, pk->w, phead, pw);
            own_hit = gcommi_lane_published(pk->w[0], n);
            peer_hit = gcommi_lane_published(pw[0], np);
        } while (!(own_hit | peer_hit) && --polls > 0);
        pk->hits = (uint32_t)own_hit << own | (uint32_t)peer_hit << peer;
        pk->lane = own_hit ? own : -1;
        if (peer_hit && (!own_hit || peer < own)) { /* drain takes the peer lane first */
            for (int k = 0; k < GCOMMI_ENTRY_WORDS; k++) pk->w[k] = pw[k];
            pk->lane = peer;
        }
        return;
    }
    if (GCOMMI_UNLIKELY(ngpus > 2)) {
        int lane = -1;
        if (ngpus <= GCOMMI_PEER_SLOTS_SMALL + 1)
            pk->hits = gcommi_peek_peers(ctx, lane0, head, pk->w, n, lane_words,
                                         GCOMMI_PEER_SLOTS_SMALL, &lane);
        else
            pk->hits = gcommi_peek_peers(ctx, lane0, head, pk->w, n, lane_words, GCOMMI_PEER_SLOTS,
                                         &lane);
        pk->lane = lane;
        return;
    }
    int own_hit;
    do {
        gcommi_lane_load(head, pk->w, 0);
        own_hit = gcommi_lane_published(pk->w[0], n);
    } while (!own_hit && --polls > 0);
    pk->lane = own_hit ? own : -1;
    pk->hits = (uint32_t)own_hit << own;
}

/* Thread 0: the base of this rank's part of window `win`, where inline payloads land (the last
 * window's is kept in the context). */
GCOMM_HD_INLINE char *gcommi_inline_base(gcomm_context_t *ctx, int win)
{
    if (ctx->inl_win != win) {
        const int comm = gcommi_win_comm(win);
        const int me = comm == GCOMM_COMM_WORLD ? ctx->rank : ctx->local_rank;
        ctx->inl_base = gcommi_win_base(ctx, gcommi_seg_win(ctx->p, ctx->gpu, win, me));
        ctx->inl_win = win;
    }
    return ctx->inl_base;
}

/* An unaligned or odd-sized inline payload, byte by byte: out of line with the polling loops'
 * drain (GCOMMI_POLL_FN), since its loop in every wait took registers from the common case (the
 * lean overlap kernel's count is what sets its ranks per SM). */
GCOMMI_POLL_FN void gcommi_inline_store_bytes(char *d, uint32_t len, uint64_t payload)
{
    for (uint32_t k = 0; k < len; k++) d[k] = (char)(payload >> (8 * k));
}

/* Writes an inline entry's or a released small put's payload (len <= 8 bytes) at d: one store
 * when aligned, so that a reader racing with a later put sees whole old or new words. */
GCOMM_HD_INLINE void gcommi_inline_store(char *d, uint32_t len, uint64_t payload)
{
    if ((len == 8) & (((uintptr_t)d & 7) == 0)) {
        *(uint64_t *)d = payload;
    } else if (len == 4 && ((uintptr_t)d & 3) == 0) {
        *(uint32_t *)d = (uint32_t)payload;
    } else {
        gcommi_inline_store_bytes(d, len, payload);
    }
}

/* Thread 0: writes the payload of an inline entry (its words at e, read position next, in the
 * lane from a GPU at scope sys) into this rank's part of window e->win, where its producer
 * checked that it fits. The producer stored nothing into the window: the data land when the
 * entry leaves the lane, in the lane's order, so a later put of the same producer (which waits
 * until this entry has been taken, gcommi_inline_confirm_t0) is never overwritten by it. */
GCOMM_HD_INLINE void gcommi_inline_apply(gcomm_context_t *ctx, const uint64_t *e, uint32_t next,
                                         uint64_t w[4], int win, int sys)
{
    uint64_t offset, payload;
    uint32_t len;
    gcommi_lane_take_inline(e, next, w, &offset, &len, &payload, sys);
    if (len) gcommi_inline_store(gcommi_inline_base(ctx, win) + offset, len, payload);
}

/* Thread 0: lane g's entries are consumed up to `next` (in the lane from a GPU at scope sys;
 * `returned`: ctx->lane_returned[g], read by the caller): its read position moves there, and
 * its producers get credit when due (in batches). */
GCOMM_HD_INLINE void gcommi_lane_consumed_t0(gcomm_context_t *ctx, int g, uint32_t next,
                                             uint32_t returned, uint32_t depth, int sys)
{
    ctx->lane_next[g] = next;
    if (GCOMMI_UNLIKELY(gcommi_lane_credit_due(next, returned, depth, 0))) {
        gcommi_lane_return_credit(gcommi_ctx_consumed(ctx, g, ctx->rank), next, sys);
        ctx->lane_returned[g] = next;
    }
}

/* Thread 0: moves published notifications out of the lanes where gcommi_lanes_peek found them
 * (pk: the hits, and the head words it loaded whole). A released entry is acquired, an inline
 * one's payload written into the window (gcommi_inline_apply). While *need > 0, those matching
 * (win, source, tag) are consumed on the spot and counted down; void ones are dropped; the
 * others are appended to the pending list (in order of arrival) until it is full: then the
 * lanes fill and their producers wait for credit (back-pressure). need == NULL: everything is
 * appended. Returns how many entries left the lanes (credits that are due are returned, in
 * batches). */
GCOMM_HD_INLINE uint32_t gcommi_drain_lanes(gcomm_context_t *ctx, int win, int source, int tag,
                                            uint32_t *need, const gcommi_peek_t *pk)
{
    gcommi_plist_t pl = {ctx->pending_head, ctx->npending, ctx->pending_cap};
    uint32_t moved = 0;
    const int own = ctx->gpu;
GCOMMI_UNROLL
    for (int g = 0; g < GCOMMI_MAX_GPUS; g++) {
        if (g >= ctx->ngpus) break;
        if (!(pk->hits >> g & 1u)) continue;
        const int sys = g != own;
        uint64_t *ring = gcommi_ctx_lane_ring(ctx, g);
        uint32_t next = ctx->lane_next[g], first = next;
        gcommi_notif_t e;
        uint64_t w[4];
        /* the head was seen published by gcommi_lanes_peek (loaded again unless the peek kept
         * its words) */
        int hit;
        if (g == pk->lane) {
            for (int k = 0; k < GCOMMI_ENTRY_WORDS; k++) w[k] = pk->w[k];
            hit = gcommi_lane_check(w[0], next, &e, sys);
        } else {
            hit = gcommi_lane_poll(ring, ctx->depth, next, &e, w, sys);
        }
        while (hit) {
            /* a full pending list keeps the entry in the lane, and with it its payload */
            const int keep = !(need && *need && gcommi_notif_matches(&e, win, source, tag));
            if (keep && e.win != GCOMMI_WIN_VOID && pl.n >= pl.cap) break;
            if (hit == 2) gcommi_inline_apply(ctx, gcommi_lane_entry(ring, ctx->depth, next), next,
                                              w, e.win, sys);
            if (e.win == GCOMMI_WIN_VOID) {
                /* dropped */
            } else if (!keep) {
                (*need)--;
            } else {
                gcommi_plist_push(ctx->pending, &pl, &e);
            }
            next++;
            /* a wait that has what it needs returns now: looking at the next entry would put
             * one more memory latency on every notification's path (later entries stay in the
             * lane, behind the held ones, so the order of arrival is kept) */
            if (need && *need == 0) break;
            hit = gcommi_lane_poll(ring, ctx->depth, next, &e, w, sys);
        }
        gcommi_lane_consumed_t0(ctx, g, next, ctx->lane_returned[g], ctx->depth, sys);
        moved += next - first;
        if (need && *need == 0) break;
    }
    ctx->npending = pl.n;
    return moved;
}

/* The head entry (read position next) of lane g among the lanes from lane0 (each depth entries
 * long), its index computed in 32 bits. */
GCOMM_HD_INLINE const uint64_t *gcommi_lane_head(const uint64_t *lane0, int g, uint32_t depth,
                                                 uint32_t next)
{
    return lane0 + ((uint32_t)g * depth + (next & (depth - 1))) * GCOMMI_ENTRY_WORDS;
}

/* Thread 0, a wait's common case taken straight (what gcommi_drain_lanes would do with it, in
 * fewer dependent instructions: a thread-0 chain is the latency of a notification, measured): the
 * peek found one lane with an entry, its head an entry that matches (win, source, tag): an inline
 * one (its payload written into the window) or a released one (acquired: a put of more than
 * GCOMM_INLINE_MAX bytes; through the general drain it took 1000-1130 of thread 0's cycles, here
 * 280-350, bench_rma_prof). Consumes the entry, returns credit when due; returns 1. Anything else
 * (several lanes, a void entry, no match): 0, nothing done. */
GCOMM_HD_INLINE int gcommi_take_one_t0(gcomm_context_t *ctx, const uint64_t *lane0,
                                       const gcommi_peek_t *pk, int win, int source, int tag)
{
    const int g = pk->lane;
    gcommi_notif_t e;
    gcommi_notif_unpack(pk->w[0], &e);
    const int inl = gcommi_notif_inline(pk->w[0]);
    /* every condition at once (bitwise): one branch on thread 0's chain, not five (a void entry,
     * which a failed put leaves, matches GCOMM_ANY_WIN but is dropped by the general drain) */
    if (!((g >= 0) & (pk->hits == 1u << (g & 31)) & (e.win != GCOMMI_WIN_VOID) &
          gcommi_notif_matches(&e, win, source, tag)))
        return 0;
    /* what the take reads of the shared context, read together first: the entry's reload below
     * (rare) is a load with a memory clobber, which would order every later load after it */
    const uint32_t depth = ctx->depth, next = ctx->lane_next[g];
    const uint32_t returned = ctx->lane_returned[g];
    const int sys = g != ctx->gpu, iwin = ctx->inl_win;
    char *base = ctx->inl_base;
    if (inl) {
        const uint64_t *head = gcommi_lane_head(lane0, g, depth, next);
        uint64_t w[GCOMMI_ENTRY_WORDS], offset, payload;
        uint32_t len;
        for (int k = 0; k < GCOMMI_ENTRY_WORDS; k++) w[k] = pk->w[k];
        gcommi_lane_take_inline(head, next, w, &offset, &len, &payload, sys);
        GCOMMI_PROF_MARK(16);
        if (len) {
            if (GCOMMI_UNLIKELY(iwin != e.win)) base = gcommi_inline_base(ctx, e.win);
            gcommi_inline_store(base + offset, len, payload);
        }
        GCOMMI_PROF_MARK(17);
    } else {
        /* what the producer wrote before its release is visible to this thread, and to the
         * block after the wait's closing barrier (as gcommi_lane_check) */
        gcommi_fence_acquire(sys);
    }
    gcommi_lane_consumed_t0(ctx, g, next + 1, returned, depth, sys);
    return 1;
}

/* Thread 0: one poll of every lane (lane0: gcommi_ctx_lane_ring(ctx, 0), which a wait computes
 * once), and what it finds moved out (gcommi_drain_lanes); an empty poll is gcommi_lanes_peek
 * alone. */
GCOMM_HD_INLINE uint32_t gcommi_drain_from(gcomm_context_t *ctx, const uint64_t *lane0, int win,
                                           int source, int tag, uint32_t *need)
{
    gcommi_peek_t pk;
    gcommi_lanes_peek(ctx, lane0, &pk, 1);
    return pk.hits ? gcommi_drain_lanes(ctx, win, source, tag, need, &pk) : 0;
}

GCOMM_HD_INLINE uint32_t gcommi_drain(gcomm_context_t *ctx, int win, int source, int tag,
                                      uint32_t *need)
{
    return gcommi_drain_from(ctx, gcommi_ctx_lane_ring(ctx, 0), win, source, tag, need);
}

/* Thread 0, idle: returns every credit not yet returned. */
GCOMM_HD_INLINE void gcommi_return_credits(gcomm_context_t *ctx)
{
    for (int g = 0; g < ctx->ngpus; g++)
        if (ctx->lane_next[g] != ctx->lane_returned[g]) {
            gcommi_lane_return_credit(gcommi_ctx_consumed(ctx, g, ctx->rank), ctx->lane_next[g],
                                      g != ctx->gpu);
            ctx->lane_returned[g] = ctx->lane_next[g];
        }
}

/* Thread 0: the lanes whose head entry is published, from their notification words alone (one
 * 8-byte relaxed load per lane; in a job of two GPUs both in one asm statement, so that the
 * second load does not wait for the first): what gcommi_progress_t0 drains. */
GCOMM_HD_INLINE uint32_t gcommi_lanes_published(const gcomm_context_t *ctx, const uint64_t *lane0)
{
    const uint32_t depth = ctx->depth;
    const int n = ctx->ngpus, own = ctx->gpu;
#if defined(__CUDA_ARCH__)
    if (n == 2) {
        const int peer = own ^ 1;
        const uint32_t no = ctx->lane_next[own], np = ctx->lane_next[peer];
        const uint64_t *ho = gcommi_lane_head(lane0, own, depth, no);
        const uint64_t *hp = gcommi_lane_head(lane0, peer, depth, np);
        uint64_t wo, wp;
        asm volatile("ld.relaxed.sys.u64 %1, [%3];\n\t"
                     "ld.relaxed.gpu.u64 %0, [%2];"
                     : "=l"(wo), "=l"(wp)
                     : "l"(ho), "l"(hp)
                     : "memory");
        return (uint32_t)gcommi_lane_published(wo, no) << own |
               (uint32_t)gcommi_lane_published(wp, np) << peer;
    }
#endif
    uint32_t hits = 0;
    for (int g = 0; g < n; g++) {
        const uint32_t next = ctx->lane_next[g];
        const uint64_t *h = gcommi_lane_head(lane0, g, depth, next);
        hits |= (uint32_t)gcommi_lane_published(gcommi_ld_relaxed64(h, g != own), next) << g;
    }
    return hits;
}

/* Thread 0, in polling loops (barriers, credit and confirmation waits): takes in this rank's
 * notifications (and the payloads of inline ones) and returns its credits, so that a rank
 * confirming its inline puts (gcommi_inline_confirm_t0) is not kept waiting by one that waits
 * in a barrier for it. It looks at the heads' notification words only, not at whole entries as
 * the wait's peek does (gcommi_lanes_peek): it runs while thread 0 waits anyway, and the peek's
 * words, held in registers across the drain, set the register count of every kernel that
 * calls a barrier or a put (the overlap benchmark's lean kernel 110 -> 96, hdiff_kernel's
 * spills 1,260 -> 1,068 bytes loaded; BENCHMARKS.md). */
GCOMMI_POLL_FN void gcommi_progress_t0(gcomm_context_t *ctx)
{
    gcommi_peek_t pk;
    pk.hits = gcommi_lanes_published(ctx, gcommi_ctx_lane_ring(ctx, 0));
    pk.lane = -1; /* no head words kept: the drain loads the heads it takes */
    if (pk.hits) gcommi_drain_lanes(ctx, GCOMMI_ANY, GCOMMI_ANY, GCOMMI_ANY, NULL, &pk);
    gcommi_return_credits(ctx);
}

/* Nonzero when target t has taken this rank's inline entries up to ctx->inl_end (its credit
 * count says so). */
GCOMM_HD_INLINE int gcommi_inline_taken(const gcomm_context_t *ctx, int t)
{
    const uint32_t consumed = gcommi_ld_relaxed(gcommi_ctx_consumed(ctx, ctx->gpu, t), 1);
    return (int32_t)(consumed - ctx->inl_end) >= 0;
}

/* Thread 0: waits until the inline entries this rank has outstanding (to ctx->inl_target) have
 * left the target's lane, i.e. their payloads are in its window: the target says so when it
 * returns credits (which it does at the latest when it waits idle, in a barrier or in a loop
 * like this one, so this one drains its own lanes meanwhile). Before any access of this rank to
 * that target's window that is not inline (a later inline entry follows the earlier ones in the
 * lane), and in a flush or barrier: a flushed put is in the window. `op`, `win`: what the caller
 * is, for a report. */
GCOMM_HD_INLINE int gcommi_inline_confirm_t0(gcomm_context_t *ctx, int op, int win)
{
    const int t = ctx->inl_target;
    if (t < 0) return GCOMM_SUCCESS;
    const int sys = gcommi_ctx_gpu_of_rank(ctx, t) != ctx->gpu;
    uint64_t start = 0;
    uint32_t spins = 0;
    while (!gcommi_inline_taken(ctx, t)) {
        gcommi_progress_t0(ctx);
        if (start == 0) start = gcommi_now_ns();
        int st = gcommi_poll_check(ctx, start, op, win, t);
        if (st) {
            gcommi_report(ctx, op, win, -1, -1, 0, 0, t);
            return st;
        }
        gcommi_pause(++spins);
    }
    gcommi_fence_acquire(sys); /* the target's window writes happen before what follows */
    ctx->inl_target = -1;
    return GCOMM_SUCCESS;
}

/* Thread 0: waits until `slot` of the lane into target_world has credit (its consumer has taken
 * the entry `depth` slots earlier). */
GCOMM_HD_INLINE int gcommi_wait_credit(gcomm_context_t *ctx, const uint32_t *consumed,
                                                uint32_t slot, int sys, int win, int tag,
                                                int target_world)
{
    if (gcommi_lane_has_credit(consumed, slot, ctx->depth, sys)) return GCOMM_SUCCESS;
    uint64_t start = gcommi_now_ns();
    uint32_t spins = 0;
    while (!gcommi_lane_has_credit(consumed, slot, ctx->depth, sys)) {
        /* Take in our own notifications meanwhile: two ranks that fill each other's queues
         * before either waits would otherwise wait for each other forever. */
        gcommi_progress_t0(ctx);
        int st = gcommi_poll_check(ctx, start, GCOMMI_OP_NOTIFY, win, target_world);
        if (st) {
            gcommi_report(ctx, GCOMMI_OP_NOTIFY, win, -1, tag, 0, 0, target_world);
            return st;
        }
        gcommi_pause(++spins);
    }
    gcommi_fence(sys); /* acquire the credit properly on this slow path */
    return GCOMM_SUCCESS;
}

/* Thread 0, before publishing `slot` in world rank tw's lane (on another GPU: sys): waits for
 * credit unless `seen`, the credit count loaded when the slot was reserved, covers the slot
 * (usually enough). */
GCOMM_HD_INLINE int gcommi_slot_credit_t0(gcomm_context_t *ctx, int tw, uint32_t slot,
                                          uint32_t seen, uint32_t depth, int sys, int win, int tag)
{
    if ((uint32_t)(slot - seen) < depth) return GCOMM_SUCCESS;
    return gcommi_wait_credit(ctx, gcommi_ctx_consumed(ctx, ctx->gpu, tw), slot, sys, win, tag,
                              tw);
}

/* Thread 0: publishes (window, this rank, tag) in the slot reserved earlier in target's lane, once
 * the lane has credit for it (`seen`: the consumed count loaded at reservation); everything the
 * block wrote before its last barrier is visible to the target before the notification is.
 * win = GCOMMI_WIN_VOID fills the slot with nothing. */
GCOMM_HD_INLINE int gcommi_publish_t0(gcomm_context_t *ctx, int target_world, uint32_t slot,
                                      uint32_t seen, int win, int tag)
{
    int tgpu = gcommi_ctx_gpu_of_rank(ctx, target_world);
    const int sys = tgpu != ctx->gpu;
    int st = gcommi_slot_credit_t0(ctx, target_world, slot, seen, ctx->depth, sys, win, tag);
    if (st) return st;
    uint64_t *ring = gcommi_ctx_ring(ctx, tgpu, target_world - ctx->rank_base[tgpu], ctx->gpu);
    gcommi_lane_publish(ring, ctx->depth, slot, ctx->rank, tag, win, sys);
    return GCOMM_SUCCESS;
}

/* ---- one-sided operations ---- */

/* A typed transfer: both layouts and the bytes of the target window the target instances touch,
 * [offset + lo, offset + hi). */
typedef struct {
    gcommi_tview_t o, t;
    int64_t lo, hi;
    int contig; /* both sides one run per instance that abuts the next: a plain block copy */
} gcommi_xfer_t;

GCOMM_HD_INLINE gcommi_tview_t gcommi_dtype_view(const gcomm_device_type_t *h)
{
    gcommi_tview_t v;
    v.nodes = (const gcommi_dl_t *)h->nodes;
    v.aux = h->aux;
    v.size = h->size;
    v.extent = h->extent;
    v.align = h->align;
    return v;
}

/* Nonzero when a type is one run per instance that abuts the next (a plain copy). */
GCOMM_HD_INLINE int gcommi_dtype_contig(const gcomm_device_type_t *h)
{
    const gcommi_dl_t *n = (const gcommi_dl_t *)h->nodes;
    return n[0].kind == GCOMMI_DL_RUN && n[0].size == h->extent && n[0].disp == 0;
}

/* Checks the types of a typed transfer and derives its packed bytes and target span. Run by every
 * thread (same result everywhere); thread 0 records a failure. */
GCOMM_HD_INLINE int gcommi_xfer_prepare(gcomm_context_t *ctx, int op, gcomm_win_t win,
                                                 int target, size_t offset, size_t tcount,
                                                 const gcomm_device_type_t *tt, size_t ocount,
                                                 const gcomm_device_type_t *ot, gcommi_xfer_t *x,
                                                 size_t *bytes)
{
    const int64_t big = INT64_MAX / 2;
    int st = GCOMM_SUCCESS;
    int64_t tb = 0, ob = 0;
    if (tt->nodes == NULL || ot->nodes == NULL || tt->size < 0 || ot->size < 0) {
        st = GCOMM_ERR_TYPE;
    } else if (tcount > (size_t)big || ocount > (size_t)big ||
               (tt->size && (int64_t)tcount > big / tt->size) ||
               (ot->size && (int64_t)ocount > big / ot->size) ||
               (tcount > 1 && (tt->extent > big / (int64_t)(tcount - 1) ||
                               -tt->extent > big / (int64_t)(tcount - 1)))) {
        st = GCOMM_ERR_OVERFLOW;
    } else {
        tb = (int64_t)tcount * tt->size;
        ob = (int64_t)ocount * ot->size;
        if (tb != ob) st = GCOMM_ERR_TYPE_MISMATCH;
    }
    if (st) {
        if (gcommi_tid() == 0)
            gcommi_fail(ctx, st, op, win, target, offset, (uint64_t)ob, (uint64_t)tb);
        return st;
    }
    x->o = gcommi_dtype_view(ot);
    x->t = gcommi_dtype_view(tt);
    x->lo = x->hi = 0;
    if (tb > 0) {
        int64_t span = (int64_t)(tcount - 1) * tt->extent;
        x->lo = tt->true_lb + (span < 0 ? span : 0);
        x->hi = tt->true_ub + (span > 0 ? span : 0);
    }
    x->contig = tb > 0 && gcommi_dtype_contig(tt) && gcommi_dtype_contig(ot);
    *bytes = (size_t)tb;
    return GCOMM_SUCCESS;
}

/* The data movement of a typed transfer; `remote`: the target instances' origin. All threads. */
GCOMM_HD_INLINE void gcommi_xfer_copy(const gcommi_xfer_t *x, int op, char *remote,
                                               char *o, size_t bytes)
{
    if (x->contig) {
        if (op == GCOMMI_OP_GET) gcommi_block_copy(o, remote, bytes);
        else gcommi_block_copy(remote, o, bytes);
    } else if (op == GCOMMI_OP_GET) {
        gcommi_typed_copy(&x->t, remote, &x->o, o, (int64_t)bytes, gcommi_tid(), gcommi_nthreads());
    } else if (!(remote == o && x->o.nodes == x->t.nodes)) { /* not onto itself */
        gcommi_typed_copy(&x->o, o, &x->t, remote, (int64_t)bytes, gcommi_tid(), gcommi_nthreads());
    }
}

/* Thread 0: a typed put or get to a rank of another process. The transfer is cut into the
 * pieces that are contiguous in both layouts (a halo face of nk lines: nk pieces), each a
 * contiguous proxy command posted without waiting (the proxies move them concurrently; small
 * pieces travel inside their command), then one flush (every piece done at the target, the
 * origin reusable, the target's refusals this call's error) and, with `notify`, the notification,
 * which therefore follows all the data. A piece outside the target's window is refused by the
 * target's proxy while the others land. */
GCOMM_HD_INLINE int gcommi_rma_proxy_typed_t0(gcomm_context_t *ctx, int op, gcomm_win_t win,
                                              int tw, size_t offset, size_t bytes, char *origin,
                                              int notify, int tag, const gcommi_xfer_t *x)
{
    int st = GCOMM_SUCCESS;
    for (int64_t K = 0; K < (int64_t)bytes && st == GCOMM_SUCCESS;) {
        int64_t co, ct;
        const int64_t oo = gcommi_tview_locate(&x->o, K, &co);
        const int64_t to = gcommi_tview_locate(&x->t, K, &ct);
        int64_t n = (int64_t)bytes - K;
        if (co < n) n = co;
        if (ct < n) n = ct;
        gcommi_pq_cmd_t c;
        gcommi_proxy_cmd_make(&c, op, win, tw, (size_t)((int64_t)offset + to), (size_t)n,
                              origin + oo);
        st = gcommi_proxy_cmd_t0(ctx, &c, 0);
        K += n;
    }
    if (st == GCOMM_SUCCESS) st = gcommi_proxy_flush_t0(ctx);
    if (st) {
        gcommi_fail_proxy(ctx, st, op, win, tw, offset, bytes);
        return st;
    }
    return notify ? gcommi_rma_proxy_t0(ctx, GCOMMI_OP_NOTIFY, win, tw, 0, 0, NULL, 1, tag)
                  : GCOMM_SUCCESS;
}

/* ---- what a target's loads need before an inline notification (notif.h) ----
 * A target sees the data of a block's plain puts in its loads only through an acquire: when it
 * takes a released notification of that block, or when it leaves a barrier. An inline entry
 * gives it none, so a small notified put is inline only when every earlier put of the block to
 * the same target has been covered since by a released notification to it or by a barrier (a
 * flush completes the puts in memory but makes nobody acquire). Tracked exactly for one target,
 * conservatively for more: `dirty` holds the world rank of the one target with uncovered puts,
 * GCOMMI_DIRTY_NONE or GCOMMI_DIRTY_SEVERAL (defined at the top). */

/* Thread 0: the block put data to world rank tw with no notification. */
GCOMM_HD_INLINE void gcommi_dirty_add(gcomm_context_t *ctx, int tw)
{
    if (ctx->dirty == GCOMMI_DIRTY_NONE) ctx->dirty = tw;
    else if (ctx->dirty != tw) ctx->dirty = GCOMMI_DIRTY_SEVERAL;
}

/* Thread 0: a released notification to tw was published (it covers every earlier put). */
GCOMM_HD_INLINE void gcommi_dirty_released(gcomm_context_t *ctx, int tw)
{
    if (ctx->dirty == tw) ctx->dirty = GCOMMI_DIRTY_NONE;
}

/* Nonzero when tw may hold data of the block's puts that no acquire of its own covers. */
GCOMM_HD_INLINE int gcommi_dirty_for(const gcomm_context_t *ctx, int tw)
{
    return (ctx->dirty == tw) | (ctx->dirty == GCOMMI_DIRTY_SEVERAL);
}

/* Thread 0, beside a slot reservation in target tw's lane: the credit count to check the slot
 * against. The last value loaded for this target while it still covers the slot (a stale count
 * only understates it; decided without the reservation's result: no wait here), else a load
 * issued now, beside the atomic. */
GCOMM_HD_INLINE uint32_t gcommi_credit_seen_t0(gcomm_context_t *ctx, int tw)
{
    if ((ctx->credit_target == tw) &
        ((uint32_t)(ctx->credit_slot - ctx->credit_seen) < ctx->depth / 2))
        return ctx->credit_seen;
    ctx->credit_target = tw;
    ctx->credit_seen = gcommi_ld_relaxed(gcommi_ctx_consumed(ctx, ctx->gpu, tw), 1);
    return ctx->credit_seen;
}

/* Thread 0: gcomm_put_notify of at most GCOMMI_INLINE_MAX bytes, the whole call (the block's
 * writes to the origin are visible to thread 0 after the call's opening barrier, so the rest of
 * the block has nothing to do). Its route comes from the block's window cache, whose entry also
 * holds the target's lane (filled by a first call, which checks the arguments; an entry means a
 * valid window and rank on a GPU this one reaches with loads and stores: ranks behind the proxy
 * are never cached). The payload travels inside the notification (an inline entry, notif.h: no
 * fence on either side) when
 *   - GCOMM_INLINE_MAX allows the size,
 *   - no earlier plain put of the block to this target is uncovered (gcommi_dirty_for: its
 *     data would reach the target's loads only through an acquire, which an inline entry does
 *     not give),
 *   - this rank has no inline entries outstanding to another target (one target is tracked:
 *     gcommi_inline_confirm_t0), and
 *   - the target bytes are not the origin bytes (overlapping windows: the target would write
 *     them later, over whatever the origin wrote there meanwhile).
 * Otherwise thread 0 copies the bytes and publishes a released entry, after this rank's inline
 * entries to the same target have landed (they must not land over these bytes). */
GCOMM_HD_INLINE int gcommi_put_small_t0(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                        size_t offset, size_t bytes, const char *origin, int tag)
{
    const int c = target & (GCOMMI_RCACHE - 1);
    int st;
    /* the entry whole (key, bounds and route in one shared-memory latency) */
    gcommi_rcache_t r = gcommi_rcache_get(ctx, c);
    if (GCOMMI_UNLIKELY((r.win != win) | (r.target != target))) {
        st = gcommi_check_args(ctx, GCOMMI_OP_PUT, win, target, 1, tag, offset, bytes);
        if (st) return st;
        const int tw = gcommi_world_rank(ctx, gcommi_win_comm(win), target);
        if (gcommi_remote(ctx, tw)) /* another process's rank: through the proxy */
            return gcommi_rma_proxy_t0(ctx, GCOMMI_OP_PUT, win, tw, offset, bytes,
                                       (void *)origin, 1, tag);
        char *unused;
        st = gcommi_resolve_t0(ctx, win, target, offset, bytes, GCOMMI_OP_PUT, &unused);
        if (st) return st; /* else the entry is cached now */
        r = gcommi_rcache_get(ctx, c);
    } else if (GCOMMI_UNLIKELY((uint32_t)tag > (uint32_t)GCOMMI_TAG_MAX)) { /* or negative */
        gcommi_fail(ctx, GCOMM_ERR_TAG, GCOMMI_OP_PUT, win, target, offset, bytes, 0);
        return GCOMM_ERR_TAG;
    }
    char *remote;
    st = gcommi_resolve_bounds(ctx, win, target, offset, bytes, GCOMMI_OP_PUT, r.addr, r.size, 1,
                               &remote);
    if (st) return st;
    GCOMMI_PROF_MARK(2);
    /* nothing fails from here on (but a timeout waiting for credit, which stops the launch) */
    const int tw = r.tw;
    /* what the publish needs besides the slot, in registers before the reservation's atomic
     * returns: read after it, each was a shared-memory latency after the atomic's (the inline
     * decision's asm statements, which clobber memory, made the compiler load them again) */
    const uint32_t depth = ctx->depth;
    const int32_t me = ctx->rank;
    const uint32_t slot = gcommi_lane_reserve(r.tail);
    const uint32_t seen = gcommi_credit_seen_t0(ctx, tw);
    /* the payload is loaded now, beside the reservation (origin bytes beyond `bytes` are not
     * read: the buffer may end there) */
    uint64_t payload = 0;
    if ((bytes == 8) & (((uintptr_t)origin & 7) == 0)) {
        payload = *(const uint64_t *)origin;
    } else {
        for (size_t k = 0; k < bytes; k++)
            payload |= (uint64_t)(unsigned char)origin[k] << (8 * k);
    }
    GCOMMI_PROF_MARK(3);
    /* bitwise, as every condition of this chain: the compiler combines the predicates and
     * branches once (each branch costs a predicate's latency on thread 0's chain; the take's
     * conditions so written made a notified put 0.08-0.09 us faster, 2x H200) */
    int inl = (ctx->inline_max != 0) & (bytes <= ctx->inline_max) & !gcommi_dirty_for(ctx, tw) &
              (offset <= GCOMMI_INLINE_OFFSET_MAX) & ((bytes == 0) | (remote != origin));
    if (inl & (ctx->inl_target >= 0) & (ctx->inl_target != tw)) {
        /* the other target may have taken them by now (then that one is forgotten) */
        if (gcommi_inline_taken(ctx, ctx->inl_target)) ctx->inl_target = -1;
        else inl = 0;
    }
    GCOMMI_PROF_MARK(4);
    if (inl) {
        const int sys = r.sys;
        uint64_t *ring = r.ring;
        /* the first use of the atomic's result is this compare (a store of it to the context
         * before the publish would be one more instruction that waits for it) */
        st = gcommi_slot_credit_t0(ctx, tw, slot, seen, depth, sys, win, tag);
        ctx->credit_slot = slot;
        if (st) return st; /* the launch stops: the slot stays empty */
        gcommi_lane_publish_inline(ring, depth, slot, me, tag, win, offset, (uint32_t)bytes,
                                   payload, sys);
        ctx->inl_target = tw;
        ctx->inl_end = slot + 1;
        GCOMMI_PROF_MARK(5);
        return GCOMM_SUCCESS;
    }
    ctx->credit_slot = slot;
    if (ctx->inl_target == tw) st = gcommi_inline_confirm_t0(ctx, GCOMMI_OP_PUT, win);
    /* as the target writes an inline entry's payload: one store when aligned, so that a reader
     * racing with a later put to the same bytes sees the old value or the new one, never a mix
     * (a byte loop let test_host_ranks' stress read a counter torn across a 256 boundary) */
    if (st == GCOMM_SUCCESS && remote != origin)
        gcommi_inline_store(remote, (uint32_t)bytes, payload);
    int pst = gcommi_publish_t0(ctx, tw, slot, seen, st ? GCOMMI_WIN_VOID : win, tag);
    if (pst == GCOMM_SUCCESS) gcommi_dirty_released(ctx, tw);
    return st ? st : pst;
}

/* gcomm_put_notify of at most GCOMMI_INLINE_MAX bytes (the whole block): thread 0 alone. */
GCOMM_HD_INLINE int gcommi_put_small(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                     size_t offset, size_t bytes, const void *origin, int tag)
{
    gcommi_block_sync(); /* what the block wrote to the origin before the call goes */
    GCOMMI_PROF_MARK(0);
    if (gcommi_tid() == 0)
        ctx->status = gcommi_put_small_t0(ctx, win, target, offset, bytes, (const char *)origin,
                                          tag);
    gcommi_block_sync();
    GCOMMI_PROF_MARK(6);
    return ctx->status;
}

/* Every put and get: op PUT copies origin -> target window, GET the other way; with `notify` a
 * notification (win, this rank, tag) follows the data into the target's queue. x: a typed
 * transfer (NULL: `bytes` contiguous bytes at both ends). */
GCOMM_HD_INLINE int gcommi_rma(gcomm_context_t *ctx, int op, gcomm_win_t win, int target,
                                        size_t offset, size_t bytes, void *origin, int notify,
                                        int tag, const gcommi_xfer_t *x)
{
    /* read before the barrier: thread 0 may change it in this call once the barrier is passed */
    const int inl_target = ctx->inl_target;
    gcommi_block_sync(); /* what the block wrote to the origin before the call goes */
    GCOMMI_PROF_MARK(0);
    const int t0 = gcommi_tid() == 0;
    int st = gcommi_check_args(ctx, op, win, target, notify, tag, offset, bytes);
    if (GCOMMI_UNLIKELY(st)) return st;
    GCOMMI_PROF_MARK(1);
    if (GCOMMI_UNLIKELY(x && (int64_t)offset + x->lo < 0)) { /* a target type below the window */
        if (t0)
            gcommi_fail(ctx, GCOMM_ERR_WINDOW, op, win, target, offset, bytes, GCOMMI_LIMIT_BELOW);
        return GCOMM_ERR_WINDOW;
    }
    const int tw = gcommi_world_rank(ctx, gcommi_win_comm(win), target);
    if (GCOMMI_UNLIKELY(gcommi_remote(ctx, tw))) { /* another process's rank: through the proxy */
        if (t0)
            ctx->status = x ? gcommi_rma_proxy_typed_t0(ctx, op, win, tw, offset, bytes,
                                                        (char *)origin, notify, tag, x)
                            : gcommi_rma_proxy_t0(ctx, op, win, tw, offset, bytes, origin, notify,
                                                  tag);
        gcommi_block_sync();
        return ctx->status;
    }
    if (op != GCOMMI_OP_NOTIFY && inl_target == tw) {
        /* this rank's inline puts to the target land first (not over these data) */
        if (t0) ctx->status = gcommi_inline_confirm_t0(ctx, op, win);
        gcommi_block_sync();
        if (ctx->status) return ctx->status;
    }
    if (op == GCOMMI_OP_PUT && !notify && t0) gcommi_dirty_add(ctx, tw);
    /* the slot is reserved first: the atomic's latency passes while the window is looked up and
     * the data move (a failure below publishes the slot void, so the lane never stalls) */
    uint32_t slot = 0, seen = 0;
    if (notify && t0) {
        slot = gcommi_lane_reserve(gcommi_ctx_tail(ctx, tw));
        seen = gcommi_credit_seen_t0(ctx, tw);
    }
    GCOMMI_PROF_MARK(2);
    char *remote;
    if (x == NULL) {
        st = gcommi_resolve(ctx, win, target, offset, bytes, op, &remote);
        GCOMMI_PROF_MARK(3);
        if (st == GCOMM_SUCCESS) {
            if (op == GCOMMI_OP_GET) gcommi_block_copy(origin, remote, bytes);
            else gcommi_block_copy(remote, origin, bytes);
        }
        GCOMMI_PROF_MARK(4);
    } else {
        /* the window must hold every byte the target instances touch */
        st = gcommi_resolve(ctx, win, target, offset + x->lo, (size_t)(x->hi - x->lo), op, &remote);
        if (st == GCOMM_SUCCESS) gcommi_xfer_copy(x, op, remote - x->lo, (char *)origin, bytes);
    }
    gcommi_block_sync();
    GCOMMI_PROF_MARK(5);
    if (!notify) return st;
    if (t0) {
        int pst = gcommi_publish_t0(ctx, tw, slot, seen, st ? GCOMMI_WIN_VOID : win, tag);
        ctx->status = st ? st : pst;
        ctx->credit_slot = slot;
        if (pst == GCOMM_SUCCESS) gcommi_dirty_released(ctx, tw);
    }
    GCOMMI_PROF_MARK(6);
    gcommi_block_sync();
    GCOMMI_PROF_MARK(7);
    return ctx->status;
}

GCOMMI_DEV int gcomm_put(gcomm_context_t *ctx, gcomm_win_t win, int target, size_t target_offset,
                         size_t bytes, const void *origin)
{
    return gcommi_rma(ctx, GCOMMI_OP_PUT, win, target, target_offset, bytes, (void *)origin, 0, 0,
                      NULL);
}

GCOMMI_DEV int gcomm_put_notify(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                size_t target_offset, size_t bytes, const void *origin, int tag)
{
    if (bytes <= GCOMMI_INLINE_MAX)
        return gcommi_put_small(ctx, win, target, target_offset, bytes, origin, tag);
    return gcommi_rma(ctx, GCOMMI_OP_PUT, win, target, target_offset, bytes, (void *)origin, 1,
                      tag, NULL);
}

GCOMMI_DEV int gcomm_get(gcomm_context_t *ctx, gcomm_win_t win, int target, size_t target_offset,
                         size_t bytes, void *origin)
{
    return gcommi_rma(ctx, GCOMMI_OP_GET, win, target, target_offset, bytes, origin, 0, 0, NULL);
}

GCOMMI_DEV int gcomm_get_notify(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                size_t target_offset, size_t bytes, void *origin, int tag)
{
    return gcommi_rma(ctx, GCOMMI_OP_GET, win, target, target_offset, bytes, origin, 1, tag, NULL);
}

GCOMMI_DEV int gcomm_notify(gcomm_context_t *ctx, gcomm_win_t win, int target, int tag)
{
    return gcommi_rma(ctx, GCOMMI_OP_NOTIFY, win, target, 0, 0, NULL, 1, tag, NULL);
}

/* The typed operations: prepare the transfer, then the common path with its packed size. */
GCOMM_HD_INLINE int gcommi_rma_typed(gcomm_context_t *ctx, int op, gcomm_win_t win,
                                              int target, size_t offset, size_t tcount,
                                              const gcomm_device_type_t *tt, void *origin,
                                              size_t ocount, const gcomm_device_type_t *ot,
                                              int notify, int tag)
{
    gcommi_xfer_t x;
    size_t bytes = 0;
    gcommi_block_sync(); /* the previous call's status is read before a failure is recorded */
    int st = gcommi_xfer_prepare(ctx, op, win, target, offset, tcount, tt, ocount, ot, &x, &bytes);
    if (st) return st;
    return gcommi_rma(ctx, op, win, target, offset, bytes, origin, notify, tag, &x);
}

GCOMMI_DEV int gcomm_put_typed(gcomm_context_t *ctx, gcomm_win_t win, int target,
                               size_t target_offset, size_t target_count,
                               gcomm_device_type_t target_type, const void *origin,
                               size_t origin_count, gcomm_device_type_t origin_type)
{
    return gcommi_rma_typed(ctx, GCOMMI_OP_PUT, win, target, target_offset, target_count,
                            &target_type, (void *)origin, origin_count, &origin_type, 0, 0);
}

GCOMMI_DEV int gcomm_put_typed_notify(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                      size_t target_offset, size_t target_count,
                                      gcomm_device_type_t target_type, const void *origin,
                                      size_t origin_count, gcomm_device_type_t origin_type,
                                      int tag)
{
    return gcommi_rma_typed(ctx, GCOMMI_OP_PUT, win, target, target_offset, target_count,
                            &target_type, (void *)origin, origin_count, &origin_type, 1, tag);
}

GCOMMI_DEV int gcomm_get_typed(gcomm_context_t *ctx, gcomm_win_t win, int target,
                               size_t target_offset, size_t target_count,
                               gcomm_device_type_t target_type, void *origin, size_t origin_count,
                               gcomm_device_type_t origin_type)
{
    return gcommi_rma_typed(ctx, GCOMMI_OP_GET, win, target, target_offset, target_count,
                            &target_type, origin, origin_count, &origin_type, 0, 0);
}

GCOMMI_DEV int gcomm_get_typed_notify(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                      size_t target_offset, size_t target_count,
                                      gcomm_device_type_t target_type, void *origin,
                                      size_t origin_count, gcomm_device_type_t origin_type,
                                      int tag)
{
    return gcommi_rma_typed(ctx, GCOMMI_OP_GET, win, target, target_offset, target_count,
                            &target_type, origin, origin_count, &origin_type, 1, tag);
}

GCOMMI_DEV int gcomm_win_flush(gcomm_context_t *ctx, gcomm_win_t win)
{
    if (!gcommi_win_valid(ctx, win)) return GCOMM_ERR_WINDOW;
    gcommi_block_sync();
    if (gcommi_tid() == 0) {
        int st = gcommi_inline_confirm_t0(ctx, GCOMMI_OP_PUT, win);
        /* the block's puts are complete at their targets; `dirty` stays: a target sees them in
         * its loads only through an acquire, which a fence-free inline notification would not
         * give it (the next notified put of the block releases, test "flushinl") */
        gcommi_fence_sc_sys();
        if (st == GCOMM_SUCCESS) {
            st = gcommi_proxy_flush_t0(ctx);
            if (st) gcommi_fail_proxy(ctx, st, GCOMMI_OP_NOTIFY, win, -1, 0, 0);
        }
        ctx->status = st;
    }
    gcommi_block_sync();
    return ctx->status;
}

/* ---- notifications ---- */

/* Checks a notification query; converts the source to a world rank. */
GCOMM_HD_INLINE int gcommi_query(gcomm_context_t *ctx, gcomm_win_t win, int *source,
                                          int tag, int count)
{
    if (count < 0) return GCOMM_ERR_COUNT;
    if (win != GCOMM_ANY_WIN && !gcommi_win_valid(ctx, win)) return GCOMM_ERR_WINDOW;
    if ((tag < 0 || tag > GCOMMI_TAG_MAX) && tag != GCOMM_ANY_TAG) return GCOMM_ERR_TAG;
    int comm = win == GCOMM_ANY_WIN ? GCOMM_COMM_WORLD : gcommi_win_comm(win);
    if (*source != GCOMM_ANY_SOURCE) {
        if (*source < 0 || *source >= gcommi_comm_size(ctx, comm)) return GCOMM_ERR_RANK;
        *source = gcommi_world_rank(ctx, comm, *source);
    }
    return GCOMM_SUCCESS;
}

/* Thread 0 of wait: matches held notifications first (they arrived first), then new ones as
 * they come, consuming matches on the spot; so it can wait for more notifications than a rank
 * can hold. */
GCOMM_HD_INLINE int gcommi_wait_t0(gcomm_context_t *ctx, gcomm_win_t win, int source,
                                            int tag, int count)
{
    uint32_t need = (uint32_t)count, spins = 0, idle = 0;
    uint64_t start = 0;
    if (ctx->npending && need) {
        gcommi_plist_t pl = {ctx->pending_head, ctx->npending, ctx->pending_cap};
        need -= gcommi_plist_take(ctx->pending, &pl, win, source, tag, need);
        ctx->pending_head = pl.head;
        ctx->npending = pl.n;
    }
    const uint64_t *lane0 = gcommi_ctx_lane_ring(ctx, 0); /* once, not on every poll */
    while (need) {
        gcommi_peek_t pk;
        gcommi_lanes_peek(ctx, lane0, &pk, GCOMMI_WAIT_POLLS);
        if (pk.hits) {
            GCOMMI_PROF_MARK(12);
            uint32_t moved;
            if (gcommi_take_one_t0(ctx, lane0, &pk, win, source, tag)) {
                need--;
                moved = 1;
            } else {
                moved = gcommi_drain_lanes(ctx, win, source, tag, &need, &pk);
            }
            GCOMMI_PROF_MARK(13);
            if (moved) {
                idle = 0;
                continue;
            }
        }
        gcommi_poll_idle(++idle); /* a host rank lets the others run */
        spins += GCOMMI_WAIT_POLLS;
        /* nothing new: the clock, the abort word and the credits only now and then (every
         * GCOMMI_CHECK_POLLS polls), and not at the first miss: a notification that arrives
         * meanwhile would wait for them */
        if (spins % GCOMMI_CHECK_POLLS != 0) continue;
        gcommi_return_credits(ctx);
        if (start == 0) start = gcommi_now_ns();
        int st = gcommi_poll_check(ctx, start, GCOMMI_OP_WAIT, win, -1);
        if (st) {
            gcommi_report(ctx, GCOMMI_OP_WAIT, win, source, tag, count, count - (int)need, -1);
            return st;
        }
    }
    return GCOMM_SUCCESS;
}

/* Thread 0 of test: removes `count` matches only when all are there (so a test for more than
 * GCOMM_PENDING_MAX never succeeds). */
GCOMM_HD_INLINE int gcommi_test_t0(gcomm_context_t *ctx, gcomm_win_t win, int source,
                                            int tag, int count)
{
    gcommi_drain(ctx, win, source, tag, NULL);
    gcommi_plist_t pl = {ctx->pending_head, ctx->npending, ctx->pending_cap};
    if (gcommi_plist_count(ctx->pending, &pl, win, source, tag, (uint32_t)count) < (uint32_t)count)
        return 0;
    gcommi_plist_take(ctx->pending, &pl, win, source, tag, (uint32_t)count);
    ctx->pending_head = pl.head;
    ctx->npending = pl.n;
    return 1;
}

GCOMMI_DEV int gcomm_wait_notifications(gcomm_context_t *ctx, gcomm_win_t win, int source,
                                        int tag, int count)
{
    GCOMMI_PROF_MARK(8);
    int st = gcommi_query(ctx, win, &source, tag, count);
    if (st) {
        if (gcommi_tid() == 0) gcommi_fail(ctx, st, GCOMMI_OP_WAIT, win, source, 0, 0, 0);
        return st;
    }
    gcommi_block_sync();
    GCOMMI_PROF_MARK(9);
    if (gcommi_tid() == 0) ctx->status = gcommi_wait_t0(ctx, win, source, tag, count);
    GCOMMI_PROF_MARK(10);
    gcommi_block_sync();
    GCOMMI_PROF_MARK(11);
    return ctx->status;
}

GCOMMI_DEV int gcomm_test_notifications(gcomm_context_t *ctx, gcomm_win_t win, int source,
                                        int tag, int count, int *flag)
{
    int st = gcommi_query(ctx, win, &source, tag, count);
    if (st) {
        if (gcommi_tid() == 0) gcommi_fail(ctx, st, GCOMMI_OP_WAIT, win, source, 0, 0, 0);
        return st;
    }
    gcommi_block_sync();
    if (gcommi_tid() == 0) {
        int a = gcommi_aborted(ctx);
        ctx->value = a ? 0 : gcommi_test_t0(ctx, win, source, tag, count);
        ctx->status = a ? -a : GCOMM_SUCCESS;
    }
    gcommi_block_sync();
    *flag = ctx->value;
    return ctx->status;
}

/* ---- device log ---- */

/* Argument words of gcomm_log: integers widened (signed ones sign-extended), floating point as the
 * bits of a double, pointers as their address. */
#if defined(__cplusplus)
GCOMM_HD_INLINE uint64_t gcommi_log_word(int v) { return (uint64_t)(int64_t)v; }
GCOMM_HD_INLINE uint64_t gcommi_log_word(unsigned v) { return v; }
GCOMM_HD_INLINE uint64_t gcommi_log_word(long v) { return (uint64_t)(int64_t)v; }
GCOMM_HD_INLINE uint64_t gcommi_log_word(unsigned long v) { return v; }
GCOMM_HD_INLINE uint64_t gcommi_log_word(long long v) { return (uint64_t)v; }
GCOMM_HD_INLINE uint64_t gcommi_log_word(unsigned long long v) { return v; }
GCOMM_HD_INLINE uint64_t gcommi_log_word(double v)
{
    uint64_t w;
    memcpy(&w, &v, sizeof(w));
    return w;
}
GCOMM_HD_INLINE uint64_t gcommi_log_word(float v) { return gcommi_log_word((double)v); }
GCOMM_HD_INLINE uint64_t gcommi_log_word(const void *v) { return (uint64_t)(uintptr_t)v; }
#define GCOMMI_LW(x) gcommi_log_word(x)
#else /* C: the same by _Generic */
static inline uint64_t gcommi_log_signed(long long v) { return (uint64_t)v; }
static inline uint64_t gcommi_log_unsigned(unsigned long long v) { return v; }
static inline uint64_t gcommi_log_double(double v)
{
    uint64_t w;
    memcpy(&w, &v, sizeof(w));
    return w;
}
static inline uint64_t gcommi_log_ptr(const void *v) { return (uint64_t)(uintptr_t)v; }
#define GCOMMI_LW(x)                                                                           \
    _Generic((x), float: gcommi_log_double, double: gcommi_log_double,                         \
             char: gcommi_log_signed, signed char: gcommi_log_signed, short: gcommi_log_signed,  \
             int: gcommi_log_signed, long: gcommi_log_signed, long long: gcommi_log_signed,      \
             unsigned char: gcommi_log_unsigned, unsigned short: gcommi_log_unsigned,            \
             unsigned: gcommi_log_unsigned, unsigned long: gcommi_log_unsigned,                  \
             unsigned long long: gcommi_log_unsigned, default: gcommi_log_ptr)(x)
#endif

#define GCOMMI_CAT(a, b) GCOMMI_CAT_(a, b)
#define GCOMMI_CAT_(a, b) a##b
#define GCOMMI_NARG(...) GCOMMI_NARG_(_0, ##__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define GCOMMI_NARG_(_0, _1, _2, _3, _4, _5, _6, _7, _8, N, ...) N
#define GCOMMI_LOG_MAP0()
#define GCOMMI_LOG_MAP1(a) GCOMMI_LW(a)
#define GCOMMI_LOG_MAP2(a, b) GCOMMI_LW(a), GCOMMI_LW(b)
#define GCOMMI_LOG_MAP3(a, b, c) GCOMMI_LOG_MAP2(a, b), GCOMMI_LW(c)
#define GCOMMI_LOG_MAP4(a, b, c, d) GCOMMI_LOG_MAP3(a, b, c), GCOMMI_LW(d)
#define GCOMMI_LOG_MAP5(a, b, c, d, e) GCOMMI_LOG_MAP4(a, b, c, d), GCOMMI_LW(e)
#define GCOMMI_LOG_MAP6(a, b, c, d, e, f) GCOMMI_LOG_MAP5(a, b, c, d, e), GCOMMI_LW(f)
#define GCOMMI_LOG_MAP7(a, b, c, d, e, f, g) GCOMMI_LOG_MAP6(a, b, c, d, e, f), GCOMMI_LW(g)
#define GCOMMI_LOG_MAP8(a, b, c, d, e, f, g, h) GCOMMI_LOG_MAP7(a, b, c, d, e, f, g), GCOMMI_LW(h)

/* Thread 0 claims a record of this GPU's log and fills it; the host prints the records in the
 * order they were claimed. */
GCOMM_HD_INLINE void gcommi_log_write(gcomm_context_t *ctx, const char *fmt,
                                      const uint64_t *args, int nargs)
{
    gcommi_block_sync();
    if (gcommi_tid() == 0 && ctx->p->log) {
        uint32_t slot = gcommi_fetch_add_gpu(&ctx->ctrl->log_next.v, 1u);
        if (slot < GCOMMI_LOG_RECORDS) {
            volatile gcommi_log_rec_t *r = ctx->p->log + slot;
            r->rank = ctx->rank;
            r->nargs = nargs;
            for (int i = 0; i < nargs && i < GCOMMI_LOG_ARGS; i++) r->args[i] = args[i];
            int k = 0;
            for (; fmt && fmt[k] && k < GCOMMI_LOG_FMT - 1; k++) r->fmt[k] = fmt[k];
            r->fmt[k] = '\0';
            gcommi_fence_sys();
            r->valid = 1;
        }
    }
    gcommi_block_sync();
}

#endif /* GCOMM_DETAIL_RANK_IMPL_H */
