/* The proxy of a GPU launch: its host memory, its delivery into GPU windows and lanes, its start
 * and stop (see proxy_gpu.h). */
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "gcomm/detail/notif.h"
#include "gcomm/detail/rank_prims.h"
#include "gcomm/detail/svc.h"
#include "rma/cuda_try.h"
#include "rma/proxy_gpu.h"
#include "rma/segment.h"
#include "rma/rt_gpu.h"

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

static uint32_t ring_depth_config(void)
{
    long d = gcommi_config()->proxy_depth;
    uint32_t x = 2;
    while (x < (uint64_t)d && x < (1u << 20)) x <<= 1;
    return x;
}

uint32_t gcommi_gpu_remote_mask(const gcommi_rt_t *rt)
{
    uint32_t mask = 0;
    if (rt->nlocal == 0) return 0;
    int me = rt->node_of_gpu[rt->first];
    for (int g = 0; g < rt->ngpus; g++)
        if (rt->node_of_gpu[g] != me) mask |= 1u << g;
    return mask;
}

int gcommi_gpu_job_spans_nodes(const gcommi_rt_t *rt)
{
    for (int g = 1; g < rt->ngpus; g++)
        if (rt->node_of_gpu[g] != rt->node_of_gpu[0]) return 1;
    return 0;
}

/* ---- delivery into this process's GPU windows and lanes (called on the proxy thread) ---- */

static int gp_device(const gcommi_gpu_proxy_t *gp, int li)
{
    return gcommi_rt.local[li].device;
}

/* A copy between host memory and a local GPU's memory (either way: cudaMemcpyDefault), done
 * when it returns. */
static int gp_copy(gcommi_gpu_proxy_t *gp, int li, void *dst, const void *src, size_t bytes,
                   const char *what)
{
    CUDA_TRY(cudaSetDevice(gp_device(gp, li)), "cudaSetDevice");
    cudaStream_t s = (cudaStream_t)gp->stream[li];
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), what);
    CUDA_TRY(cudaStreamSynchronize(s), what);
    return GCOMM_SUCCESS;
}

/* Starts a copy like gp_copy's and records its end in an event; *ticket names it (copy_done). */
static int gp_copy_start(gcommi_gpu_proxy_t *gp, int li, void *dst, const void *src, size_t bytes,
                         const char *what, uint64_t *ticket)
{
    const uint64_t t = ++gp->tickets;
    const int k = (int)(t % GCOMMI_GPU_PROXY_COPIES);
    CUDA_TRY(cudaSetDevice(gp_device(gp, li)), "cudaSetDevice");
    cudaEvent_t ev = (cudaEvent_t)gp->events[k];
    if (!ev) {
        CUDA_TRY(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "proxy: a copy's event");
        gp->events[k] = ev;
    } else if (gp->ev_ticket[k]) {
        /* the proxy has fewer copies under way than slots, so this wait is not taken; if it
         * were, the slot's earlier copy is over once it returns (copy_done then says so) */
        CUDA_TRY(cudaEventSynchronize(ev), what);
    }
    cudaStream_t s = (cudaStream_t)gp->stream[li];
    gp->ev_ticket[k] = 0;
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), what);
    CUDA_TRY(cudaEventRecord(ev, s), what);
    gp->ev_ticket[k] = t;
    *ticket = t;
    return GCOMM_SUCCESS;
}

/* ---- the service blocks (svc.h): records posted by this thread, carried out by the GPU ---- */

/* Records local GPU li's service block has carried out (its word, written by the GPU). */
static uint32_t svc_done(const gcommi_gpu_proxy_t *gp, int li)
{
    return __atomic_load_n(&gp->svc_ctl[li]->done, __ATOMIC_ACQUIRE);
}

/* Waits up to the launch's timeout until local GPU li's service block has carried out `n`
 * records (the block does not run before its kernel starts). */
static int svc_wait(gcommi_gpu_proxy_t *gp, int li, uint32_t n, const char *what)
{
    uint64_t start = gcommi_host_now_ns();
    for (uint32_t spins = 1; (int32_t)(svc_done(gp, li) - n) < 0; spins++) {
        if (gcommi_host_now_ns() - start > gp->base->timeout_ns)
            return GCOMMI_ERROR(GCOMM_ERR_TIMEOUT, "the service block of local GPU %d %s (%u "
                                "posted, %u carried out)", li, what, gp->svc_pos[li],
                                svc_done(gp, li));
        gcommi_host_pause(spins);
    }
    return GCOMM_SUCCESS;
}

/* Writes one record into local GPU li's delivery ring once it has room: up to GCOMMI_SVC_DATA
 * bytes of src for dst (GPU memory), then `entry` into the lane slot `at` (0: none).
 *
 * A record is complete once posted: the service block carries out a GPU's records in order, so
 * whatever reaches that GPU through this proxy later (a notification, another put) lands after
 * it. What could overtake it is fenced: a get reads the window only once the GPU's service block
 * has caught up, and a barrier completes only then (gp_fence). */
static int svc_post(gcommi_gpu_proxy_t *gp, int li, void *dst, const void *src, size_t bytes,
                    uint64_t *at, uint64_t entry)
{
    const uint32_t pos = gp->svc_pos[li], depth = GCOMMI_SVC_DEPTH;
    if (pos - svc_done(gp, li) >= depth)
        GCOMMI_CHECK(svc_wait(gp, li, pos - depth + 1, "takes no deliveries"));
    gcommi_svc_rec_write(&gp->svc_ring[li][pos & (depth - 1)], pos, (uint64_t)(uintptr_t)dst,
                         (uint64_t)(uintptr_t)at, entry, src, (uint32_t)bytes);
    gp->svc_pos[li] = pos + 1;
    return GCOMM_SUCCESS;
}

static int gp_fence(void *ctx)
{
    gcommi_gpu_proxy_t *gp = ctx;
    for (int li = 0; li < gp->nlocal; li++)
        GCOMMI_CHECK(svc_wait(gp, li, gp->svc_pos[li], "did not catch up"));
    return GCOMM_SUCCESS;
}

static int gp_copy_done(void *ctx, uint64_t ticket)
{
    gcommi_gpu_proxy_t *gp = ctx;
    const int k = (int)(ticket % GCOMMI_GPU_PROXY_COPIES);
    if (gp->ev_ticket[k] != ticket) return 1; /* the slot was reused after waiting for it */
    cudaError_t e = cudaEventQuery((cudaEvent_t)gp->events[k]);
    if (e == cudaErrorNotReady) return 0;
    gp->ev_ticket[k] = 0;
    CUDA_TRY(e, "proxy: a copy between host and GPU memory");
    return 1;
}

/* [offset, offset + bytes) of local rank `target`'s part of world window `win`: its address (in
 * this process) and local GPU, from the copy of the window table in a shadow segment. */
static int gp_window(gcommi_gpu_proxy_t *gp, int32_t target, int32_t win, uint64_t offset,
                     size_t bytes, char **addr, int *li)
{
    const gcommi_param_t *p = gp->base;
    const gcommi_win_entry_t *e = NULL;
    GCOMMI_CHECK(gcommi_proxy_window(p, gp->wtab, p->rank_base[gp->first],
                                     p->rank_base[gp->first + gp->nlocal], target, win, offset,
                                     bytes, &e));
    *addr = (char *)(uintptr_t)e->addr + offset;
    *li = e->gpu - gp->first;
    return GCOMM_SUCCESS;
}

/* A small payload goes by the service block, a larger one by a copy engine. */
static int gp_deliver_put_start(void *ctx, int32_t target, int32_t win, uint64_t offset,
                                const void *src, size_t bytes, uint64_t *ticket)
{
    gcommi_gpu_proxy_t *gp = ctx;
    char *dst = NULL;
    int li = 0;
    GCOMMI_CHECK(gp_window(gp, target, win, offset, bytes, &dst, &li));
    if (bytes <= GCOMMI_SVC_DATA) {
        *ticket = 0; /* complete once posted (svc_post) */
        return svc_post(gp, li, dst, src, bytes, NULL, 0);
    }
    return gp_copy_start(gp, li, dst, src, bytes, "proxy: put into a GPU window", ticket);
}

static int gp_read_window(void *ctx, int32_t target, int32_t win, uint64_t offset, void *dst,
                          size_t bytes)
{
    gcommi_gpu_proxy_t *gp = ctx;
    char *src = NULL;
    int li = 0;
    GCOMMI_CHECK(gp_window(gp, target, win, offset, bytes, &src, &li));
    /* the small puts before it are in the window */
    GCOMMI_CHECK(svc_wait(gp, li, gp->svc_pos[li], "did not catch up"));
    return gp_copy(gp, li, dst, src, bytes, "proxy: get from a GPU window");
}

/* The proxy is the producer of the lane from the source's GPU into the target: it reserves a slot
 * with that lane's counter in the source GPU's shadow and waits for the credit the target rank
 * returns there; the service block stores the notification (with a small put's payload before
 * it) into the lane's ring in the target's segment. */
static int notified_post(gcommi_gpu_proxy_t *gp, int32_t target, int32_t source, int32_t win,
                         int32_t tag, char *dst, const void *src, size_t bytes)
{
    const gcommi_param_t *p = gp->base;
    const int sg = gcommi_gpu_of_rank(p, source), tg = gcommi_gpu_of_rank(p, target);
    const int li = tg - gp->first;
    if (li < 0 || li >= gp->nlocal || !((p->remote_mask >> sg) & 1u))
        return GCOMMI_ERROR(GCOMM_ERR_RANK, "notification from rank %d (GPU %d) to rank %d (GPU "
                            "%d): not from a remote GPU to this process", source, sg, target, tg);
    uint32_t slot;
    GCOMMI_CHECK(gcommi_proxy_lane_reserve(p, sg, target, &slot));
    uint64_t *ring = (uint64_t *)(gp->dev_seg[li] + p->off_ring) +
                     ((int64_t)(target - p->rank_base[tg]) * p->ngpus + sg) * p->depth *
                         GCOMMI_ENTRY_WORDS;
    return svc_post(gp, li, dst, src, bytes, gcommi_lane_entry(ring, p->depth, slot),
                    gcommi_notif_pack(slot, source, tag, win));
}

/* A notification after a large put or a get (complete once posted, svc_post). */
static int gp_deliver_notify(void *ctx, int32_t target, int32_t source, int32_t win, int32_t tag)
{
    return notified_post(ctx, target, source, win, tag, NULL, NULL, 0);
}

static int gp_deliver_put_notify_start(void *ctx, int32_t target, int32_t source, int32_t win,
                                       int32_t tag, uint64_t offset, const void *src,
                                       size_t bytes, uint64_t *ticket)
{
    gcommi_gpu_proxy_t *gp = ctx;
    char *dst = NULL;
    int li = 0;
    if (bytes) GCOMMI_CHECK(gp_window(gp, target, win, offset, bytes, &dst, &li));
    *ticket = 0; /* complete once posted (svc_post) */
    return notified_post(gp, target, source, win, tag, dst, src, bytes);
}

/* Origins are in this process's memory: a GPU's (a rank's buffer) or the host's. */
static int gp_read_origin_start(void *ctx, void *dst, uint64_t origin, size_t bytes,
                                uint64_t *ticket)
{
    return gp_copy_start(ctx, 0, dst, (const void *)(uintptr_t)origin, bytes,
                         "proxy: reading a put's origin", ticket);
}

static int gp_write_origin(void *ctx, uint64_t origin, const void *src, size_t bytes)
{
    return gp_copy(ctx, 0, (void *)(uintptr_t)origin, src, bytes, "proxy: writing a get's origin");
}

/* A failing rank records the stop in every GPU's control block as it sees them, shadows too. */
static int gp_local_abort(void *ctx)
{
    gcommi_gpu_proxy_t *gp = ctx;
    return -(int32_t)gcommi_ld_acquire_sys(&gcommi_seg_ctrl(gp->base, gp->wtab)->abort.v);
}

static void gp_remote_abort(void *ctx, int code)
{
    gcommi_gpu_proxy_t *gp = ctx;
    uint32_t v = (uint32_t)(-code);
    for (int i = 0; i < gp->nlocal; i++) {
        char *w = gp->dev_seg[i] + gp->base->off_ctrl + offsetof(gcommi_ctrl_t, abort);
        if (gp_copy(gp, i, w, &v, sizeof(v), "proxy: stopping the local ranks"))
            GCOMM_LOG_ERROR("proxy", "%s", gcomm_last_error_detail());
    }
}

/* ---- setup, start, stop ---- */

int gcommi_gpu_proxy_setup(gcommi_gpu_proxy_t *gp, gcommi_rt_t *rt, gcommi_param_t *base)
{
    memset(gp, 0, sizeof(*gp));
    gp->base = base;
    gp->nlocal = rt->nlocal;
    gp->first = rt->first;
    gp->wtab = -1;
    if (rt->nlocal != 1)
        return GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED, "this process drives %d GPUs in a job that "
                            "reaches GPUs of other nodes through the proxy: one GPU per process "
                            "for now (mpirun with a process per GPU)", rt->nlocal);
    for (int g = 0; g < base->ngpus && gp->wtab < 0; g++)
        if ((base->remote_mask >> g) & 1u) gp->wtab = g;
    if (gp->wtab < 0) return GCOMMI_ERROR(GCOMM_ERR_INTERNAL, "proxy setup without remote GPUs");
    if (!rt->boot.proxy_transport)
        return GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED, "this bootstrap has no transport for the proxy");
    const uint32_t depth = gp->ring_depth = ring_depth_config();
    const size_t seg = round_up(base->seg_bytes, 256), W = (size_t)base->world_size;
    size_t bytes = 0, off_shadow[GCOMMI_MAX_GPUS], off_ring[GCOMMI_MAX_GPUS];
    size_t off_cons[GCOMMI_MAX_GPUS], off_svc[GCOMMI_MAX_GPUS];
    for (int g = 0; g < base->ngpus; g++)
        if ((base->remote_mask >> g) & 1u) {
            off_shadow[g] = bytes;
            bytes += seg;
        }
    for (int i = 0; i < gp->nlocal; i++) {
        off_ring[i] = bytes;
        bytes += round_up((size_t)depth * sizeof(gcommi_pq_cmd_t), 256);
        off_cons[i] = bytes;
        bytes += 256;
        off_svc[i] = bytes;
        bytes += round_up((size_t)GCOMMI_SVC_DEPTH * sizeof(gcommi_svc_rec_t) +
                          sizeof(gcommi_svc_ctl_t), 256);
    }
    size_t off_done = bytes;
    bytes += round_up(W * sizeof(uint32_t), 256);
    size_t off_errs = bytes;
    bytes += round_up(W * sizeof(int32_t), 256);

    CUDA_TRY(cudaSetDevice(rt->local[0].device), "cudaSetDevice");
    CUDA_TRY(cudaHostAlloc((void **)&gp->host, bytes, cudaHostAllocMapped | cudaHostAllocPortable),
             "proxy: mapped host memory");
    gp->host_bytes = bytes;
    memset(gp->host, 0, bytes);
    /* the device addresses the memory where the host does (unified addressing), so the one
     * parameter serves the kernels and the proxy */
    void *dview = NULL;
    CUDA_TRY(cudaHostGetDevicePointer(&dview, gp->host, 0), "proxy: device view of host memory");
    if (dview != (void *)gp->host)
        return GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED, "mapped host memory has another address on the "
                            "device (no unified addressing)");
    for (int g = 0; g < base->ngpus; g++)
        if ((base->remote_mask >> g) & 1u) base->seg[g] = gp->shadow[g] = gp->host + off_shadow[g];
    for (int i = 0; i < gp->nlocal; i++) {
        gp->ring[i] = (gcommi_pq_cmd_t *)(gp->host + off_ring[i]);
        gp->consumed[i] = (uint32_t *)(gp->host + off_cons[i]);
        gp->svc_ring[i] = (gcommi_svc_rec_t *)(gp->host + off_svc[i]);
        gp->svc_ctl[i] = (gcommi_svc_ctl_t *)(gp->svc_ring[i] + GCOMMI_SVC_DEPTH);
        uint32_t tail = 0;
        gcommi_pq_t q = {gp->ring[i], &tail, gp->consumed[i], depth, 0};
        gcommi_pq_init(&q, 0);
        cudaStream_t s;
        CUDA_TRY(cudaSetDevice(rt->local[i].device), "cudaSetDevice");
        CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "proxy: stream");
        gp->stream[i] = s;
    }
    gp->done = (uint32_t *)(gp->host + off_done);
    gp->errs = (int32_t *)(gp->host + off_errs);
    base->proxy_done = gp->done;
    base->proxy_err = gp->errs;
    gp->proc_of_rank = malloc(W * sizeof(int32_t));
    if (!gp->proc_of_rank) return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory for the rank table");
    for (size_t r = 0; r < W; r++)
        gp->proc_of_rank[r] = base->proc_of_gpu[gcommi_gpu_of_rank(base, (int)r)];
    return GCOMM_SUCCESS;
}

int gcommi_gpu_proxy_create(gcommi_gpu_proxy_t *gp, gcommi_rt_t *rt)
{
    GCOMMI_CHECK(rt->boot.proxy_transport(&rt->boot, &gp->transport));
    gcommi_proxy_params_t pp;
    memset(&pp, 0, sizeof(pp));
    pp.transport = gp->transport;
    pp.local = (gcommi_proxy_local_ops_t){.ctx = gp,
                                          .deliver_notify = gp_deliver_notify,
                                          .write_origin = gp_write_origin,
                                          .read_window = gp_read_window,
                                          .local_abort = gp_local_abort,
                                          .remote_abort = gp_remote_abort,
                                          .deliver_put_start = gp_deliver_put_start,
                                          .read_origin_start = gp_read_origin_start,
                                          .copy_done = gp_copy_done,
                                          .deliver_put_notify_start = gp_deliver_put_notify_start,
                                          .put_notify_max = GCOMMI_SVC_DATA,
                                          .fence = gp_fence};
    pp.nranks = gp->base->world_size;
    pp.proc_of_rank = gp->proc_of_rank;
    pp.done = gp->done;
    pp.errs = gp->errs;
    pp.nrings = gp->nlocal;
    for (int i = 0; i < gp->nlocal; i++)
        pp.rings[i] = (gcommi_pq_t){gp->ring[i], &gp->tail_mirror[i], gp->consumed[i],
                                    gp->ring_depth, 0};
    GCOMMI_CHECK(gcommi_proxy_create(&pp, &gp->proxy));
    /* payloads move between the proxy's buffers and GPU memory: pinned, they go by DMA at once */
    void *mem;
    size_t bytes;
    gcommi_proxy_buffers(gp->proxy, &mem, &bytes);
    CUDA_TRY(cudaHostRegister(mem, bytes, cudaHostRegisterPortable), "proxy: pinning its buffers");
    gp->pinned = mem;
    return GCOMM_SUCCESS;
}

void gcommi_gpu_proxy_param(gcommi_gpu_proxy_t *gp, int i, gcommi_param_t *prm)
{
    gp->dev_seg[i] = gcommi_rt.local[i].seg;
    uint32_t *tail = (uint32_t *)(gp->dev_seg[i] + prm->off_ctrl +
                                  offsetof(gcommi_ctrl_t, proxy_tail));
    prm->proxy_q = (gcommi_pq_t){gp->ring[i], tail, gp->consumed[i], gp->ring_depth, 0};
    prm->svc_ring = gp->svc_ring[i];
    prm->svc_ctl = gp->svc_ctl[i];
    prm->svc_depth = GCOMMI_SVC_DEPTH;
}

int gcommi_gpu_proxy_start(gcommi_gpu_proxy_t *gp)
{
    return gcommi_proxy_start(gp->proxy);
}

int gcommi_gpu_proxy_ranks_done(const gcommi_gpu_proxy_t *gp, int i)
{
    return (int)__atomic_load_n(&gp->svc_ctl[i]->ranks_done, __ATOMIC_ACQUIRE);
}

int gcommi_gpu_proxy_stop(gcommi_gpu_proxy_t *gp)
{
    /* every rank has finished: every reservation is final (the last rank wrote the count; a
     * kernel that failed is over, and its count is read from the GPU) */
    for (int i = 0; i < gp->nlocal; i++) {
        if (gcommi_gpu_proxy_ranks_done(gp, i)) {
            gp->tail_mirror[i] = __atomic_load_n(&gp->svc_ctl[i]->final_tail, __ATOMIC_RELAXED);
            continue;
        }
        CUDA_TRY(cudaSetDevice(gp_device(gp, i)), "cudaSetDevice");
        CUDA_TRY(cudaMemcpyAsync(&gp->tail_mirror[i], gp->dev_seg[i] + gp->base->off_ctrl +
                                 offsetof(gcommi_ctrl_t, proxy_tail), sizeof(uint32_t),
                                 cudaMemcpyDeviceToHost, (cudaStream_t)gp->stream[i]),
                 "proxy: reading the ring's reservations");
        CUDA_TRY(cudaStreamSynchronize((cudaStream_t)gp->stream[i]),
                 "proxy: reading the ring's reservations");
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return gcommi_proxy_stop(gp->proxy, 0);
}

void gcommi_gpu_proxy_end_service(gcommi_gpu_proxy_t *gp)
{
    for (int i = 0; i < gp->nlocal; i++)
        if (gp->svc_ctl[i]) __atomic_store_n(&gp->svc_ctl[i]->stop, 1, __ATOMIC_RELEASE);
}

void gcommi_gpu_proxy_free(gcommi_gpu_proxy_t *gp)
{
    /* a proxy abandoned with copies under way: they end before their memory goes */
    for (int i = 0; i < GCOMMI_MAX_GPUS; i++)
        if (gp->stream[i]) cudaStreamSynchronize((cudaStream_t)gp->stream[i]);
    if (gp->pinned) cudaHostUnregister(gp->pinned);
    if (gp->proxy) gcommi_proxy_destroy(gp->proxy); /* abandons a proxy that did not stop */
    if (gp->transport) gp->transport->destroy(gp->transport);
    for (int i = 0; i < GCOMMI_MAX_GPUS; i++)
        if (gp->stream[i]) cudaStreamDestroy((cudaStream_t)gp->stream[i]);
    for (int k = 0; k < GCOMMI_GPU_PROXY_COPIES; k++)
        if (gp->events[k]) cudaEventDestroy((cudaEvent_t)gp->events[k]);
    if (gp->host) cudaFreeHost(gp->host);
    free(gp->proc_of_rank);
    cudaGetLastError();
    memset(gp, 0, sizeof(*gp));
}
