/* Implementation of the device API (gcomm/device.cuh). Internal.
 *
 * Every API function is block-collective. Work that must happen once (queue slots, barrier
 * arrivals, error records) is done by thread 0, and its result reaches the block through
 * ctx->status between two __syncthreads. Each function begins with a block barrier before thread 0
 * writes ctx->status, so a slow thread has always read the previous result before it changes.
 * Argument checks only read shared state, so every thread runs them and all take the same path. */
#ifndef GCOMM_DETAIL_DEVICE_IMPL_CUH
#define GCOMM_DETAIL_DEVICE_IMPL_CUH

#include "gcomm/detail/atomic.h"
#include "gcomm/detail/notif.h"
#include "gcomm/detail/rt.h"

/* ---- small helpers ---- */

static inline __device__ int gcommi_tid(void)
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

static inline __device__ int gcommi_nthreads(void)
{
    return blockDim.x * blockDim.y * blockDim.z;
}

static inline __device__ uint64_t gcommi_now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Segment addressing from the block's shared copy of the parameter (rt.h has the same from the
 * parameter itself, for the host). */
static inline __device__ int gcommi_ctx_gpu_of_rank(const gcomm_context_t *ctx, int r)
{
    int g = 0;
    while (g + 1 < ctx->ngpus && r >= ctx->rank_base[g + 1]) g++;
    return g;
}

static inline __device__ uint32_t *gcommi_ctx_tail(const gcomm_context_t *ctx, int target)
{
    return (uint32_t *)(ctx->seg[ctx->gpu] + ctx->off_tail) + target;
}

static inline __device__ uint32_t *gcommi_ctx_consumed(const gcomm_context_t *ctx, int gpu,
                                                       int target)
{
    return (uint32_t *)(ctx->seg[gpu] + ctx->off_consumed) + target;
}

static inline __device__ gcommi_notif_t *gcommi_ctx_ring(const gcomm_context_t *ctx, int gpu,
                                                         int local, int src_gpu)
{
    return (gcommi_notif_t *)(ctx->seg[gpu] + ctx->off_ring) +
           ((int64_t)local * ctx->ngpus + src_gpu) * ctx->depth;
}

/* Nonzero once the launch has been stopped (an error or timeout anywhere); the value is the
 * negated GCOMM_ERR_* code of the cause. */
static inline __device__ int gcommi_aborted(const gcomm_context_t *ctx)
{
    return (int)gcommi_ld_relaxed_sys(&ctx->ctrl->abort.v);
}

/* Records the first error of this GPU and stops every GPU of the launch. Thread 0 only. */
static inline __device__ void gcommi_fail(gcomm_context_t *ctx, int code, int op, int win,
                                          int target, uint64_t offset, uint64_t bytes,
                                          uint64_t limit)
{
    const gcommi_param_t *p = ctx->p;
    gcommi_error_t *e = &ctx->ctrl->error;
    if (atomicExch((unsigned int *)&e->claimed, 1u) == 0) {
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
        atomicCAS_system((unsigned int *)a, 0u, (unsigned int)(-code));
    }
}

/* Fills this rank's wait report (what it was blocked on when it gave up). Thread 0 only. */
static inline __device__ void gcommi_report(gcomm_context_t *ctx, int op, int win, int source,
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
static inline __device__ int gcommi_poll_check(gcomm_context_t *ctx, uint64_t start, int op,
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

/* Copies bytes with the whole block, 16-byte accesses where source and destination agree in
 * alignment (the bulk), bytes at the ragged ends. Nothing when source and destination coincide
 * (overlapping windows of ranks that share memory). */
static inline __device__ void gcommi_block_copy(void *dst, const void *src, size_t bytes)
{
    char *d = (char *)dst;
    const char *s = (const char *)src;
    if (d == s || bytes == 0) return;
    const int tid = gcommi_tid(), nt = gcommi_nthreads();
    size_t head = 0, nvec = 0;
    if ((((uintptr_t)d ^ (uintptr_t)s) & 15) == 0) {
        head = (16 - ((uintptr_t)d & 15)) & 15;
        if (head > bytes) head = bytes;
        nvec = (bytes - head) / 16;
    }
    const uint4 *vs = (const uint4 *)(s + head);
    uint4 *vd = (uint4 *)(d + head);
    /* eight (then four) 16-byte loads in flight per thread before the stores: one block alone
     * has to keep enough bytes in flight to cover the latency of DRAM or a peer link */
    size_t i = tid;
    for (; i + 7 * (size_t)nt < nvec; i += 8 * (size_t)nt) {
        uint4 v[8];
#pragma unroll
        for (int k = 0; k < 8; k++) v[k] = vs[i + k * (size_t)nt];
#pragma unroll
        for (int k = 0; k < 8; k++) vd[i + k * (size_t)nt] = v[k];
    }
    for (; i + 3 * (size_t)nt < nvec; i += 4 * (size_t)nt) {
        uint4 a = vs[i], b = vs[i + nt], c = vs[i + 2 * (size_t)nt], e = vs[i + 3 * (size_t)nt];
        vd[i] = a;
        vd[i + nt] = b;
        vd[i + 2 * (size_t)nt] = c;
        vd[i + 3 * (size_t)nt] = e;
    }
    for (; i < nvec; i += nt) vd[i] = vs[i];
    const size_t tail = head + nvec * 16;
    for (size_t k = tid; k < head; k += nt) d[k] = s[k];
    for (size_t k = tail + tid; k < bytes; k += nt) d[k] = s[k];
}

/* ---- setup ---- */

GCOMMI_DEV int gcomm_init(gcomm_param_t param, gcomm_context_t *ctx)
{
    __syncthreads();
    if (gcommi_tid() == 0) {
        const gcommi_param_t *p = param;
        int st = GCOMM_SUCCESS;
        if (p == NULL || p->version != GCOMMI_RT_VERSION || p->size != sizeof(gcommi_param_t) ||
            gridDim.y != 1 || gridDim.z != 1 || (int)blockIdx.x >= p->nlocal) {
            /* Not a parameter of this gcomm (or launched outside gcomm_launch): nothing can be
             * reported through it, so stop loudly. */
            printf("gcomm: block %d: gcomm_init: the kernel was not launched by gcomm_launch with "
                   "matching gcomm headers (parameter %p)\n",
                   (int)blockIdx.x, (const void *)p);
            __trap();
        }
        ctx->p = p;
        ctx->ctrl = gcommi_seg_ctrl(p, p->gpu);
        ctx->gpu = p->gpu;
        ctx->ngpus = p->ngpus;
        ctx->proc = p->proc_of_gpu[p->gpu];
        ctx->world_size = p->world_size;
        ctx->nlocal = p->nlocal;
        ctx->local_rank = blockIdx.x;
        ctx->rank = p->rank_base[p->gpu] + (int)blockIdx.x;
        ctx->priv = gcommi_seg_priv(p, p->gpu, blockIdx.x);
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
        for (int c = 0; c < GCOMMI_NCOMMS; c++) ctx->wins_used[c] = 0;
        ctx->status = st;
    }
    __syncthreads();
    return ctx->status;
}

GCOMMI_DEV int gcomm_finish(gcomm_context_t *ctx)
{
    __syncthreads();
    if (gcommi_tid() == 0) gcommi_fence_sc_sys();
    __syncthreads();
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

/* ---- barrier ---- */

/* Thread 0's part of a barrier. Arrivals count up forever (no reset to race with): the rank that
 * brings this GPU's count to a multiple of nlocal is the GPU's last, joins the other GPUs' last
 * ranks on a counter in GPU 0's memory (world only) and releases the generation. */
static inline __device__ int gcommi_barrier_t0(gcomm_context_t *ctx, int comm)
{
    const gcommi_param_t *p = ctx->p;
    gcommi_ctrl_t *c = ctx->ctrl;
    gcommi_fence_sys(); /* release everything the block wrote (it passed a bar.sync) */
    uint32_t old = gcommi_fetch_add_gpu(&c->bar_arrive[comm].v, 1);
    uint32_t epoch = old / (uint32_t)ctx->nlocal + 1;
    uint64_t start = gcommi_now_ns();
    int st;
    if ((old + 1) % (uint32_t)ctx->nlocal == 0) {
        if (comm == GCOMM_COMM_WORLD && ctx->ngpus > 1) {
            uint32_t *cross = &gcommi_seg_ctrl(p, 0)->bar_cross.v;
            gcommi_fence_sys();
            gcommi_fetch_add_sys(cross, 1);
            while ((int32_t)(gcommi_ld_acquire_sys(cross) - epoch * (uint32_t)ctx->ngpus) < 0) {
                if ((st = gcommi_poll_check(ctx, start, GCOMMI_OP_BARRIER, comm, -1))) goto fail;
                __nanosleep(32);
            }
        }
        gcommi_st_release_sys(&c->bar_gen[comm].v, epoch);
    } else {
        while ((int32_t)(gcommi_ld_acquire_sys(&c->bar_gen[comm].v) - epoch) < 0) {
            if ((st = gcommi_poll_check(ctx, start, GCOMMI_OP_BARRIER, comm, -1))) goto fail;
            __nanosleep(32);
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
    __syncthreads();
    if (gcommi_tid() == 0) ctx->status = gcommi_barrier_t0(ctx, comm);
    __syncthreads();
    return ctx->status;
}

/* ---- windows ---- */

static inline __device__ int gcommi_win_comm(gcomm_win_t win)
{
    return win / GCOMMI_MAX_WINS;
}

static inline __device__ int gcommi_win_valid(const gcomm_context_t *ctx, gcomm_win_t win)
{
    return win >= 0 && win < GCOMMI_NCOMMS * GCOMMI_MAX_WINS &&
           ((ctx->wins_used[win / GCOMMI_MAX_WINS] >> (win % GCOMMI_MAX_WINS)) & 1u);
}

static inline __device__ int gcommi_comm_size(const gcomm_context_t *ctx, int comm)
{
    return comm == GCOMM_COMM_WORLD ? ctx->world_size : ctx->nlocal;
}

/* World rank of rank r of the window's communicator. */
static inline __device__ int gcommi_world_rank(const gcomm_context_t *ctx, int comm, int r)
{
    return comm == GCOMM_COMM_WORLD ? r : ctx->rank_base[ctx->gpu] + r;
}

GCOMMI_DEV int gcomm_win_create(gcomm_context_t *ctx, gcomm_comm_t comm, void *base, size_t bytes,
                                gcomm_win_t *win)
{
    if (comm != GCOMM_COMM_WORLD && comm != GCOMM_COMM_DEVICE) return GCOMM_ERR_ARG;
    __syncthreads();
    if (gcommi_tid() == 0) {
        const gcommi_param_t *p = ctx->p;
        int st = GCOMM_SUCCESS, region = -1;
        uint64_t b = (uint64_t)(uintptr_t)base;
        for (int r = 0; r < p->nregions[ctx->gpu] && region < 0; r++) {
            uint64_t rb = p->region_base[ctx->gpu][r], rs = p->region_size[ctx->gpu][r];
            if (b >= rb && b - rb <= rs && bytes <= rs - (b - rb)) region = r;
        }
        uint32_t freebits = ~ctx->wins_used[comm];
        int slot = freebits ? __ffs(freebits) - 1 : -1;
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
    __syncthreads();
    if (ctx->status == GCOMM_SUCCESS) *win = ctx->value;
    return ctx->status;
}

GCOMMI_DEV int gcomm_win_free(gcomm_context_t *ctx, gcomm_win_t *win)
{
    if (win == NULL || !gcommi_win_valid(ctx, *win)) return GCOMM_ERR_WINDOW;
    __syncthreads();
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
        ctx->status = st;
    }
    __syncthreads();
    *win = GCOMM_WIN_NULL;
    return ctx->status;
}

/* Address (as this GPU sees it) of [offset, offset + bytes) of target's part of a window, after
 * checking window, rank and bounds. Run by every thread; only thread 0 records a failure. */
static inline __device__ int gcommi_resolve(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                            size_t offset, size_t bytes, int op, char **addr,
                                            int *target_world)
{
    const gcommi_param_t *p = ctx->p;
    const int t0 = gcommi_tid() == 0;
    if (!gcommi_win_valid(ctx, win)) {
        if (t0) gcommi_fail(ctx, GCOMM_ERR_WINDOW, op, win, target, offset, bytes, 0);
        return GCOMM_ERR_WINDOW;
    }
    int comm = gcommi_win_comm(win);
    if (target < 0 || target >= gcommi_comm_size(ctx, comm)) {
        if (t0) gcommi_fail(ctx, GCOMM_ERR_RANK, op, win, target, offset, bytes, 0);
        return GCOMM_ERR_RANK;
    }
    const gcommi_win_entry_t *e = gcommi_seg_win(p, ctx->gpu, win, target);
    uint64_t size = e->size;
    if (!e->valid || offset > size || bytes > size - offset) {
        if (t0) gcommi_fail(ctx, GCOMM_ERR_WINDOW, op, win, target, offset, bytes, size);
        return GCOMM_ERR_WINDOW;
    }
    if (e->proc == ctx->proc) /* same process: the owner's address works here */
        *addr = (char *)(uintptr_t)e->addr + offset;
    else
        *addr = p->region_view[e->gpu][e->region] + (e->addr - p->region_base[e->gpu][e->region]) +
                offset;
    *target_world = gcommi_world_rank(ctx, comm, target);
    return GCOMM_SUCCESS;
}

/* Thread 0: moves newly published notifications of every lane into the rank's pending list (in
 * order of arrival) and returns credits that are due (in batches). Stops when the list is full:
 * the lanes then fill and producers wait (back-pressure). Returns how many were moved. With
 * `idle` it polls nothing and returns every credit not yet returned (the caller has nothing to
 * do but wait). */
static inline __device__ uint32_t gcommi_drain(gcomm_context_t *ctx, int idle)
{
    gcommi_notif_t *pending = ctx->pending;
    uint32_t n = ctx->npending, moved = 0;
    for (int g = 0; g < ctx->ngpus; g++) {
        const int sys = g != ctx->gpu;
        gcommi_notif_t *ring = gcommi_ctx_ring(ctx, ctx->gpu, ctx->local_rank, g);
        uint32_t next = ctx->lane_next[g], first = next;
        if (!idle)
            while (n < ctx->pending_cap &&
                   gcommi_lane_poll(ring, ctx->depth, next, &pending[n], sys)) {
                n++;
                next++;
            }
        ctx->lane_next[g] = next;
        moved += next - first;
        if (gcommi_lane_credit_due(next, ctx->lane_returned[g], ctx->depth, idle)) {
            gcommi_lane_return_credit(gcommi_ctx_consumed(ctx, g, ctx->rank), next, sys);
            ctx->lane_returned[g] = next;
        }
    }
    ctx->npending = n;
    return moved;
}

/* Thread 0: posts a notification (window, this rank, tag) into target's queue, after everything
 * the block wrote before its last barrier. Waits for a credit when the lane is full. */
static inline __device__ int gcommi_notify_t0(gcomm_context_t *ctx, gcomm_win_t win,
                                              int target_world, int tag)
{
    int tgpu = gcommi_ctx_gpu_of_rank(ctx, target_world);
    const int sys = tgpu != ctx->gpu;
    uint32_t slot = gcommi_lane_reserve(gcommi_ctx_tail(ctx, target_world));
    const uint32_t *consumed = gcommi_ctx_consumed(ctx, ctx->gpu, target_world);
    if (!gcommi_lane_has_credit(consumed, slot, ctx->depth, sys)) {
        uint64_t start = gcommi_now_ns();
        while (!gcommi_lane_has_credit(consumed, slot, ctx->depth, sys)) {
            /* Take in our own notifications meanwhile: two ranks that fill each other's
             * queues before either waits would otherwise wait for each other forever. */
            gcommi_drain(ctx, 0);
            gcommi_drain(ctx, 1);
            int st = gcommi_poll_check(ctx, start, GCOMMI_OP_NOTIFY, win, target_world);
            if (st) {
                gcommi_report(ctx, GCOMMI_OP_NOTIFY, win, -1, tag, 0, 0, target_world);
                return st;
            }
            __nanosleep(64);
        }
        gcommi_fence(sys); /* acquire the credit properly on this slow path */
    }
    gcommi_notif_t *ring =
        gcommi_ctx_ring(ctx, tgpu, target_world - ctx->rank_base[tgpu], ctx->gpu);
    gcommi_lane_publish(ring, ctx->depth, slot, ctx->rank, tag, win, sys);
    return GCOMM_SUCCESS;
}

static inline __device__ int gcommi_check_tag(gcomm_context_t *ctx, int tag, int op, int win,
                                              int target)
{
    if (tag >= 0) return GCOMM_SUCCESS;
    if (gcommi_tid() == 0) gcommi_fail(ctx, GCOMM_ERR_TAG, op, win, target, 0, 0, 0);
    return GCOMM_ERR_TAG;
}

/* ---- one-sided operations ---- */

GCOMMI_DEV int gcomm_put(gcomm_context_t *ctx, gcomm_win_t win, int target, size_t target_offset,
                         size_t bytes, const void *origin)
{
    __syncthreads(); /* what the block wrote to the origin before the call goes */
    char *dst;
    int tw;
    int st = gcommi_resolve(ctx, win, target, target_offset, bytes, GCOMMI_OP_PUT, &dst, &tw);
    if (st) return st;
    gcommi_block_copy(dst, origin, bytes);
    __syncthreads();
    return GCOMM_SUCCESS;
}

GCOMMI_DEV int gcomm_put_notify(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                size_t target_offset, size_t bytes, const void *origin, int tag)
{
    __syncthreads(); /* what the block wrote to the origin before the call goes */
    char *dst;
    int tw;
    int st = gcommi_check_tag(ctx, tag, GCOMMI_OP_PUT, win, target);
    if (st) return st;
    st = gcommi_resolve(ctx, win, target, target_offset, bytes, GCOMMI_OP_PUT, &dst, &tw);
    if (st) return st;
    gcommi_block_copy(dst, origin, bytes);
    __syncthreads();
    if (gcommi_tid() == 0) ctx->status = gcommi_notify_t0(ctx, win, tw, tag);
    __syncthreads();
    return ctx->status;
}

GCOMMI_DEV int gcomm_get(gcomm_context_t *ctx, gcomm_win_t win, int target, size_t target_offset,
                         size_t bytes, void *origin)
{
    __syncthreads(); /* what the block wrote to the origin before the call goes */
    char *src;
    int tw;
    int st = gcommi_resolve(ctx, win, target, target_offset, bytes, GCOMMI_OP_GET, &src, &tw);
    if (st) return st;
    gcommi_block_copy(origin, src, bytes);
    __syncthreads();
    return GCOMM_SUCCESS;
}

GCOMMI_DEV int gcomm_get_notify(gcomm_context_t *ctx, gcomm_win_t win, int target,
                                size_t target_offset, size_t bytes, void *origin, int tag)
{
    __syncthreads(); /* what the block wrote to the origin before the call goes */
    char *src;
    int tw;
    int st = gcommi_check_tag(ctx, tag, GCOMMI_OP_GET, win, target);
    if (st) return st;
    st = gcommi_resolve(ctx, win, target, target_offset, bytes, GCOMMI_OP_GET, &src, &tw);
    if (st) return st;
    gcommi_block_copy(origin, src, bytes);
    __syncthreads();
    if (gcommi_tid() == 0) ctx->status = gcommi_notify_t0(ctx, win, tw, tag);
    __syncthreads();
    return ctx->status;
}

GCOMMI_DEV int gcomm_notify(gcomm_context_t *ctx, gcomm_win_t win, int target, int tag)
{
    char *dst;
    int tw;
    int st = gcommi_check_tag(ctx, tag, GCOMMI_OP_NOTIFY, win, target);
    if (st) return st;
    st = gcommi_resolve(ctx, win, target, 0, 0, GCOMMI_OP_NOTIFY, &dst, &tw);
    if (st) return st;
    __syncthreads();
    if (gcommi_tid() == 0) ctx->status = gcommi_notify_t0(ctx, win, tw, tag);
    __syncthreads();
    return ctx->status;
}

GCOMMI_DEV int gcomm_win_flush(gcomm_context_t *ctx, gcomm_win_t win)
{
    if (!gcommi_win_valid(ctx, win)) return GCOMM_ERR_WINDOW;
    __syncthreads();
    if (gcommi_tid() == 0) gcommi_fence_sc_sys();
    __syncthreads();
    return GCOMM_SUCCESS;
}

/* ---- notifications ---- */

/* Checks a notification query; converts the source to a world rank. */
static inline __device__ int gcommi_query(gcomm_context_t *ctx, gcomm_win_t win, int *source,
                                          int tag, int count)
{
    if (count < 0) return GCOMM_ERR_COUNT;
    if (win != GCOMM_ANY_WIN && !gcommi_win_valid(ctx, win)) return GCOMM_ERR_WINDOW;
    if (tag < 0 && tag != GCOMM_ANY_TAG) return GCOMM_ERR_TAG;
    int comm = win == GCOMM_ANY_WIN ? GCOMM_COMM_WORLD : gcommi_win_comm(win);
    if (*source != GCOMM_ANY_SOURCE) {
        if (*source < 0 || *source >= gcommi_comm_size(ctx, comm)) return GCOMM_ERR_RANK;
        *source = gcommi_world_rank(ctx, comm, *source);
    }
    return GCOMM_SUCCESS;
}

/* Thread 0 of wait (once = 0) and test (once = 1). A wait removes matches as they come, so it
 * can wait for more notifications than a rank can hold; a test removes nothing unless all
 * `count` are there (so a test for more than GCOMM_PENDING_MAX never succeeds). */
static inline __device__ int gcommi_wait_t0(gcomm_context_t *ctx, gcomm_win_t win, int source,
                                            int tag, int count, int once, int *flag)
{
    gcommi_notif_t *pending = ctx->pending;
    uint32_t need = (uint32_t)count, spins = 0;
    uint64_t start = 0;
    for (;;) {
        uint32_t n = ctx->npending;
        if (n) {
            if (!once) {
                need -= gcommi_notif_take(pending, &n, win, source, tag, need);
                ctx->npending = n;
            } else if (gcommi_notif_count(pending, n, win, source, tag, need) == need) {
                gcommi_notif_take(pending, &n, win, source, tag, need);
                ctx->npending = n;
                need = 0;
            }
        }
        if (need == 0) {
            *flag = 1;
            return GCOMM_SUCCESS;
        }
        if (gcommi_drain(ctx, 0)) continue;
        if (once) {
            *flag = 0;
            return GCOMM_SUCCESS;
        }
        /* nothing new: the clock, the abort word and the credits only now and then */
        if ((spins++ & 31) != 0) continue;
        gcommi_drain(ctx, 1);
        if (start == 0) start = gcommi_now_ns();
        int st = gcommi_poll_check(ctx, start, GCOMMI_OP_WAIT, win, -1);
        if (st) {
            gcommi_report(ctx, GCOMMI_OP_WAIT, win, source, tag, count, count - (int)need, -1);
            return st;
        }
    }
}

GCOMMI_DEV int gcomm_wait_notifications(gcomm_context_t *ctx, gcomm_win_t win, int source,
                                        int tag, int count)
{
    int st = gcommi_query(ctx, win, &source, tag, count);
    if (st) {
        if (gcommi_tid() == 0) gcommi_fail(ctx, st, GCOMMI_OP_WAIT, win, source, 0, 0, 0);
        return st;
    }
    __syncthreads();
    if (gcommi_tid() == 0) {
        int flag;
        ctx->status = gcommi_wait_t0(ctx, win, source, tag, count, 0, &flag);
    }
    __syncthreads();
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
    __syncthreads();
    if (gcommi_tid() == 0) {
        int f = 0;
        ctx->status = gcommi_wait_t0(ctx, win, source, tag, count, 1, &f);
        ctx->value = f;
    }
    __syncthreads();
    *flag = ctx->value;
    return ctx->status;
}

#endif /* GCOMM_DETAIL_DEVICE_IMPL_CUH */
