/* gcomm_launch_host: host threads as gcomm ranks. The same rank library as GPU blocks
 * (gcomm/detail/rank_impl.h compiled as C), over a runtime segment in host memory laid out like a
 * GPU's (segment.c): each process's host ranks are one "GPU" of the job, any memory of the
 * process is in its one region. Ranks of other processes are reached through the process's
 * proxy (proxy.h): their "GPUs" are marked remote, and their segments are local shadows that
 * hold the counters of the lanes the proxy fills with their notifications. Free of CUDA, so CI
 * runs the whole rank library, and the proxy, on the CPU. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "common/error.h"
#include "gcomm/rank.h"
#include "rma/devlog.h"
#include "rma/proxy.h"
#include "rma/runtime.h"
#include "rma/segment.h"

static __thread int host_rank_index = -1;

int gcommi_host_rank(void)
{
    return host_rank_index;
}

uint64_t gcommi_host_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void gcommi_host_pause(uint32_t spins)
{
    if (spins < 64) {
        sched_yield();
    } else { /* a long wait sleeps (up to 50 us a time) instead of burning a core */
        struct timespec ts = {0, spins < 1024 ? 1000 : 50000};
        nanosleep(&ts, NULL);
    }
}

#define GCOMMI_HOST_RANKS_MAX 4096 /* threads of one launch */

typedef struct {
    gcomm_host_fn_t fn;
    void *arg;
    const gcommi_param_t *param;
    int index;
} host_rank_t;

static void *host_rank_main(void *a)
{
    host_rank_t *r = (host_rank_t *)a;
    host_rank_index = r->index;
    r->fn(r->param, r->arg);
    host_rank_index = -1;
    return NULL;
}

/* One launch of host ranks in this process: the parameter, the segments (this process's and a
 * shadow per other process), the log, and the proxy when the job has several processes. */
typedef struct {
    gcommi_param_t *p;
    char *seg[GCOMMI_MAX_GPUS];
    gcommi_log_rec_t *log;
    gcommi_proxy_transport_t *transport;
    gcommi_proxy_t *proxy;
    gcommi_pq_t ring;
    int32_t *proc_of_rank;
} host_job_t;

/* The parameter and segments of a launch of counts[g] host ranks in process g. */
static int host_setup(host_job_t *j, const int *counts, int nprocs, int me, uint32_t launch_id)
{
    gcommi_param_t *p = j->p;
    gcommi_param_defaults(p, launch_id);
    p->ngpus = nprocs;
    p->gpu = me;
    int maxlocal = 0;
    for (int g = 0; g < nprocs; g++) {
        p->rank_base[g + 1] = p->rank_base[g] + counts[g];
        p->proc_of_gpu[g] = g;
        if (counts[g] > maxlocal) maxlocal = counts[g];
        if (g != me) p->remote_mask |= 1u << g;
    }
    p->world_size = p->rank_base[nprocs];
    p->nlocal = counts[me];
    gcommi_segment_layout(p, maxlocal);
    size_t bytes = (p->seg_bytes + 255) / 256 * 256;
    for (int g = 0; g < nprocs; g++) {
        /* any address of the process but NULL is window memory */
        p->nregions[g] = 1;
        p->region_base[g][0] = 1;
        p->region_size[g][0] = UINT64_MAX - 1;
        p->region_view[g][0] = (char *)1;
        j->seg[g] = aligned_alloc(256, bytes);
        if (!j->seg[g])
            return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory for the segment of %d host ranks "
                                "(%zu bytes)", p->nlocal, bytes);
        memset(j->seg[g], 0, bytes);
        p->seg[g] = j->seg[g];
    }
    j->log = calloc(GCOMMI_LOG_RECORDS, sizeof(gcommi_log_rec_t));
    if (!j->log) return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory for the gcomm_log records");
    p->log = j->log;
    return GCOMM_SUCCESS;
}

/* ---- the proxy's delivery into this process's windows and lanes ---- */

/* The address of [offset, offset + bytes) of local rank `target`'s part of world window `win`. */
static int host_window(host_job_t *j, int32_t target, int32_t win, uint64_t offset, size_t bytes,
                       char **addr)
{
    const gcommi_param_t *p = j->p;
    const gcommi_win_entry_t *e = NULL;
    GCOMMI_CHECK(gcommi_proxy_window(p, p->gpu, p->rank_base[p->gpu], p->rank_base[p->gpu + 1],
                                     target, win, offset, bytes, &e));
    *addr = (char *)(uintptr_t)e->addr + offset;
    return GCOMM_SUCCESS;
}

static int host_deliver_put(void *ctx, int32_t target, int32_t win, uint64_t offset,
                            const void *src, size_t bytes)
{
    char *dst = NULL;
    GCOMMI_CHECK(host_window((host_job_t *)ctx, target, win, offset, bytes, &dst));
    memcpy(dst, src, bytes);
    return GCOMM_SUCCESS;
}

static int host_read_window(void *ctx, int32_t target, int32_t win, uint64_t offset, void *dst,
                            size_t bytes)
{
    char *src = NULL;
    GCOMMI_CHECK(host_window((host_job_t *)ctx, target, win, offset, bytes, &src));
    memcpy(dst, src, bytes);
    return GCOMM_SUCCESS;
}

/* The proxy produces into the lane from the source's process into the target, whose ring is in
 * this process's segment. */
static int host_deliver_notify(void *ctx, int32_t target, int32_t source, int32_t win,
                               int32_t tag)
{
    const gcommi_param_t *p = ((host_job_t *)ctx)->p;
    const int me = p->gpu, sg = gcommi_gpu_of_rank(p, source);
    return gcommi_proxy_lane_publish(p, sg, gcommi_seg_ring(p, me, target - p->rank_base[me], sg),
                                     target, source, win, tag);
}

static int host_read_origin(void *ctx, void *dst, uint64_t origin, size_t bytes)
{
    memcpy(dst, (const void *)(uintptr_t)origin, bytes);
    return GCOMM_SUCCESS;
}

static int host_write_origin(void *ctx, uint64_t origin, const void *src, size_t bytes)
{
    memcpy((void *)(uintptr_t)origin, src, bytes);
    return GCOMM_SUCCESS;
}

/* The launch's stop between processes: this process's ranks stopped (the code), or another
 * process's did and ours stop too. */
static int host_local_abort(void *ctx)
{
    const gcommi_param_t *p = ((host_job_t *)ctx)->p;
    return -(int32_t)gcommi_ld_acquire_sys(&gcommi_seg_ctrl(p, p->gpu)->abort.v);
}

static void host_remote_abort(void *ctx, int code)
{
    const gcommi_param_t *p = ((host_job_t *)ctx)->p;
    gcommi_cas_sys(&gcommi_seg_ctrl(p, p->gpu)->abort.v, 0u, (uint32_t)(-code));
}

int gcommi_host_proxy_post(void *proxy, const gcommi_pq_cmd_t *cmd)
{
    return gcommi_proxy_post((gcommi_proxy_t *)proxy, 0, cmd, 0);
}

int gcommi_host_proxy_wait(void *proxy, int32_t source, uint32_t id)
{
    return gcommi_proxy_wait((gcommi_proxy_t *)proxy, source, id, 0);
}

/* The proxy of a launch over several processes (collective). */
static int host_proxy_start(host_job_t *j, gcommi_bootstrap_t *boot)
{
    const gcommi_param_t *p = j->p;
    GCOMMI_CHECK(boot->proxy_transport(boot, &j->transport));
    j->proc_of_rank = malloc((size_t)p->world_size * sizeof(int32_t));
    if (!j->proc_of_rank) return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory for the rank table");
    for (int r = 0; r < p->world_size; r++) j->proc_of_rank[r] = gcommi_gpu_of_rank(p, r);
    GCOMMI_CHECK(gcommi_proxy_ring_alloc(0, &j->ring));
    gcommi_proxy_params_t pp;
    memset(&pp, 0, sizeof(pp));
    pp.transport = j->transport;
    /* plain memcpy: no asynchronous forms */
    pp.local = (gcommi_proxy_local_ops_t){.ctx = j,
                                          .deliver_put = host_deliver_put,
                                          .deliver_notify = host_deliver_notify,
                                          .read_origin = host_read_origin,
                                          .write_origin = host_write_origin,
                                          .read_window = host_read_window,
                                          .local_abort = host_local_abort,
                                          .remote_abort = host_remote_abort};
    pp.nranks = p->world_size;
    pp.proc_of_rank = j->proc_of_rank;
    pp.rings[0] = j->ring;
    pp.nrings = 1;
    GCOMMI_CHECK(gcommi_proxy_create(&pp, &j->proxy));
    GCOMMI_CHECK(gcommi_proxy_start(j->proxy));
    j->p->proxy = j->proxy;
    return GCOMM_SUCCESS;
}

static void host_job_free(host_job_t *j)
{
    if (j->proxy) gcommi_proxy_destroy(j->proxy);
    if (j->transport) j->transport->destroy(j->transport);
    if (j->ring.ring) gcommi_proxy_ring_free(&j->ring);
    for (int g = 0; g < GCOMMI_MAX_GPUS; g++) free(j->seg[g]);
    free(j->log);
    free(j->proc_of_rank);
    free(j->p);
}

int gcomm_launch_host(gcomm_host_fn_t fn, int nranks, void *arg)
{
    GCOMMI_API_ENTRY();
    gcommi_rt_t *rt = &gcommi_rt;
    if (!fn) return GCOMMI_ERROR(GCOMM_ERR_ARG, "fn is NULL");
    if (nranks < 1 || nranks > GCOMMI_HOST_RANKS_MAX)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "nranks = %d (1 .. %d)", nranks, GCOMMI_HOST_RANKS_MAX);
    if (!rt->initialized) return GCOMMI_ERROR(GCOMM_ERR_ARG, "gcomm is not initialised");
    if (host_rank_index >= 0)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "called from host rank %d", host_rank_index);
    gcommi_bootstrap_t *boot = &rt->boot;
    const int nprocs = boot->size, me = boot->rank;
    if (nprocs > GCOMMI_MAX_GPUS)
        return GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED, "host ranks of %d processes (at most %d for "
                            "now)", nprocs, GCOMMI_MAX_GPUS);

    pthread_mutex_lock(&rt->lock);
    host_job_t job;
    memset(&job, 0, sizeof(job));
    job.p = calloc(1, sizeof(*job.p));
    host_rank_t *ranks = calloc((size_t)nranks, sizeof(*ranks));
    pthread_t *threads = calloc((size_t)nranks, sizeof(*threads));
    int counts[GCOMMI_MAX_GPUS] = {0};
    int st = (!job.p || !ranks || !threads)
                 ? GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory for %d host ranks", nranks)
                 : GCOMM_SUCCESS;
    /* every process's rank count, then the segments and (several processes) the proxies */
    if ((st = gcommi_launch_agree(boot, st)) != GCOMM_SUCCESS) goto out;
    if ((st = boot->allgather(boot, &nranks, counts, sizeof(int)))) goto out;
    st = host_setup(&job, counts, nprocs, me, ++rt->launches);
    if (st == GCOMM_SUCCESS && nprocs > 1)
        st = boot->proxy_transport ? host_proxy_start(&job, boot)
                                   : GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED, "this bootstrap has "
                                                  "no transport for the proxy");
    if ((st = gcommi_launch_agree(boot, st)) != GCOMM_SUCCESS) goto out;

    int started = 0;
    for (; st == GCOMM_SUCCESS && started < nranks; started++) {
        ranks[started] = (host_rank_t){fn, arg, job.p, started};
        int e = pthread_create(&threads[started], NULL, host_rank_main, &ranks[started]);
        if (e) {
            /* the ranks already running wait for the missing ones until their timeout */
            st = GCOMMI_ERROR(GCOMM_ERR_NOMEM, "pthread_create of host rank %d: %s", started,
                              strerror(e));
            break;
        }
    }
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    /* every rank has finished (and flushed what it gave the proxy): the proxies meet and stop */
    int pst = job.proxy ? gcommi_proxy_stop(job.proxy, 0) : GCOMM_SUCCESS;
    gcommi_ctrl_t *c = gcommi_seg_ctrl(job.p, me);
    gcommi_launch_result_t res;
    memset(&res, 0, sizeof(res));
    res.abort = (int32_t)c->abort.v;
    res.error = c->error;
    if (c->log_next.v) gcommi_devlog_print(gcommi_config_log_stream(), job.log, c->log_next.v, me);
    if (c->abort.v) gcommi_print_reports(job.p, gcommi_seg_report(job.p, me, 0), 1);
    int rst = gcommi_launch_status(&res, 1, "host", me);
    if (st == GCOMM_SUCCESS) st = rst;
    if (st == GCOMM_SUCCESS) st = pst;
    st = gcommi_launch_agree(boot, st);
out:
    pthread_mutex_unlock(&rt->lock);
    host_job_free(&job);
    free(ranks);
    free(threads);
    return st;
}
