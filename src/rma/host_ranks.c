/* gcomm_launch_host: host threads as gcomm ranks. The same rank library as GPU blocks
 * (gcomm/detail/rank_impl.h compiled as C), over a runtime segment in host memory laid out like a
 * GPU's (segment.c): one "GPU" (this process's host ranks), any memory of the process in its one
 * region. Free of CUDA, so CI runs the whole rank library on the CPU. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "common/error.h"
#include "gcomm/rank.h"
#include "rma/devlog.h"
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

/* The parameter and segment of a launch of nranks host ranks; *seg and *log to free. */
static int host_setup(int nranks, uint32_t launch_id, int proc, gcommi_param_t *p, char **seg,
                      gcommi_log_rec_t **log)
{
    gcommi_param_defaults(p, launch_id);
    p->ngpus = 1;
    p->gpu = 0;
    p->nlocal = nranks;
    p->world_size = nranks;
    p->rank_base[0] = 0;
    p->rank_base[1] = nranks;
    p->proc_of_gpu[0] = proc;
    gcommi_segment_layout(p, nranks);
    /* any address of the process but NULL is window memory */
    p->nregions[0] = 1;
    p->region_base[0][0] = 1;
    p->region_size[0][0] = UINT64_MAX - 1;
    p->region_view[0][0] = (char *)1;
    size_t bytes = (p->seg_bytes + 255) / 256 * 256;
    *seg = aligned_alloc(256, bytes);
    *log = calloc(GCOMMI_LOG_RECORDS, sizeof(gcommi_log_rec_t));
    if (!*seg || !*log) {
        free(*seg);
        free(*log);
        return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory for the segment of %d host ranks (%zu "
                            "bytes)", nranks, bytes);
    }
    memset(*seg, 0, bytes);
    p->seg[0] = *seg;
    p->log = *log;
    return GCOMM_SUCCESS;
}

int gcomm_launch_host(gcomm_host_fn_t fn, int nranks, void *arg)
{
    GCOMMI_API_ENTRY();
    gcommi_rt_t *rt = &gcommi_rt;
    if (!fn) return GCOMMI_ERROR(GCOMM_ERR_ARG, "fn is NULL");
    if (nranks < 1 || nranks > GCOMMI_HOST_RANKS_MAX)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "nranks = %d (1 .. %d)", nranks, GCOMMI_HOST_RANKS_MAX);
    if (!rt->initialized) return GCOMMI_ERROR(GCOMM_ERR_ARG, "gcomm is not initialised");
    if (rt->boot.size > 1)
        return GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED, "host ranks of %d processes: between "
                            "processes they need the proxy, which is not built yet",
                            rt->boot.size);
    if (host_rank_index >= 0)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "called from host rank %d", host_rank_index);

    pthread_mutex_lock(&rt->lock);
    gcommi_param_t *p = calloc(1, sizeof(*p));
    host_rank_t *ranks = calloc((size_t)nranks, sizeof(*ranks));
    pthread_t *threads = calloc((size_t)nranks, sizeof(*threads));
    char *seg = NULL;
    gcommi_log_rec_t *log = NULL;
    int st = (!p || !ranks || !threads)
                 ? GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory for %d host ranks", nranks)
                 : host_setup(nranks, ++rt->launches, rt->boot.rank, p, &seg, &log);
    int started = 0;
    for (; st == GCOMM_SUCCESS && started < nranks; started++) {
        ranks[started] = (host_rank_t){fn, arg, p, started};
        int e = pthread_create(&threads[started], NULL, host_rank_main, &ranks[started]);
        if (e) {
            /* the ranks already running wait for the missing ones until their timeout */
            st = GCOMMI_ERROR(GCOMM_ERR_NOMEM, "pthread_create of host rank %d: %s", started,
                              strerror(e));
            break;
        }
    }
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    if (seg) {
        gcommi_ctrl_t *c = gcommi_seg_ctrl(p, 0);
        gcommi_launch_result_t res;
        memset(&res, 0, sizeof(res));
        res.abort = (int32_t)c->abort.v;
        res.error = c->error;
        if (c->log_next.v) gcommi_devlog_print(gcommi_config_log_stream(), log, c->log_next.v, 0);
        if (c->abort.v) gcommi_print_reports(p, gcommi_seg_report(p, 0, 0), 1);
        int rst = gcommi_launch_status(&res, 1, "host");
        if (st == GCOMM_SUCCESS) st = rst;
    }
    pthread_mutex_unlock(&rt->lock);
    free(seg);
    free(log);
    free(p);
    free(ranks);
    free(threads);
    return st;
}
