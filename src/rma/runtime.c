/* Process-level runtime of notified RMA: initialisation over a bootstrap, the single-process
 * bootstrap, and the queries. Free of CUDA: the GPU side is gcommi_rt_gpu_setup (rt_gpu.c, or
 * rma_stub.c in a build without CUDA). */
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "rma/rt_gpu.h"
#include "rma/runtime.h"

gcommi_rt_t gcommi_rt = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- the single-process bootstrap ---- */

static int single_allgather(gcommi_bootstrap_t *b, const void *in, void *out, size_t bytes)
{
    if (out != in) memcpy(out, in, bytes);
    return GCOMM_SUCCESS;
}

static int single_barrier(gcommi_bootstrap_t *b)
{
    return GCOMM_SUCCESS;
}

static void single_finalize(gcommi_bootstrap_t *b)
{
}

int gcommi_parse_devices(const char *list, int *devices, int max)
{
    /* "none": host ranks only, also on a node with GPUs (e.g. several processes of a host-rank
     * job on a node with one GPU, which they would otherwise all be dealt) */
    if (list && strcmp(list, "none") == 0) return 0;
    int n = 0;
    const char *s = list;
    while (s && *s) {
        char *end;
        long d = strtol(s, &end, 10);
        if (end == s || d < 0 || d > 1024 || (*end != ',' && *end != '\0'))
            return GCOMMI_ERROR(GCOMM_ERR_ARG, "GCOMM_DEVICES = \"%s\" is not a list of device "
                                "numbers such as \"0,1\", nor \"none\"", list);
        if (n == max)
            return GCOMMI_ERROR(GCOMM_ERR_ARG, "GCOMM_DEVICES = \"%s\" names more than %d devices",
                                list, max);
        for (int i = 0; i < n; i++)
            if (devices[i] == (int)d)
                return GCOMMI_ERROR(GCOMM_ERR_ARG, "GCOMM_DEVICES = \"%s\" names device %ld twice",
                                    list, d);
        devices[n++] = (int)d;
        s = *end ? end + 1 : end;
    }
    return n;
}

int gcommi_rt_init(const gcommi_bootstrap_t *boot, int ndevices, const int *devices)
{
    gcommi_rt_t *rt = &gcommi_rt;
    pthread_mutex_lock(&rt->lock);
    int st = GCOMM_SUCCESS;
    if (rt->initialized) {
        st = GCOMMI_ERROR(GCOMM_ERR_ARG, "gcomm is already initialised (gcomm_finalize first)");
        goto out;
    }
    if (ndevices > GCOMMI_MAX_GPUS) {
        st = GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED, "%d devices in one process; at most %d",
                          ndevices, GCOMMI_MAX_GPUS);
        goto out;
    }
    rt->boot = *boot;
    rt->nlocal = ndevices;
    for (int i = 0; i < ndevices; i++) {
        memset(&rt->local[i], 0, sizeof(rt->local[i]));
        rt->local[i].device = devices[i];
    }
    /* the job's GPUs: numbered by process, then in each process's order */
    int *counts = calloc((size_t)boot->size, sizeof(int));
    int *nodes = calloc((size_t)boot->size, sizeof(int));
    if (!counts || !nodes) {
        free(counts);
        free(nodes);
        st = GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory for %d process entries", boot->size);
        goto out;
    }
    st = rt->boot.allgather(&rt->boot, &ndevices, counts, sizeof(int));
    if (st == GCOMM_SUCCESS) st = rt->boot.allgather(&rt->boot, &rt->boot.node, nodes, sizeof(int));
    if (st == GCOMM_SUCCESS) {
        int total = 0;
        for (int p = 0; p < boot->size; p++) {
            if (p == boot->rank) rt->first = total;
            for (int i = 0; i < counts[p] && total + i < GCOMMI_MAX_GPUS; i++) {
                rt->proc_of_gpu[total + i] = p;
                rt->node_of_gpu[total + i] = nodes[p];
            }
            total += counts[p];
        }
        rt->ngpus = total;
        if (total > GCOMMI_MAX_GPUS)
            st = GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED, "%d GPUs in the job; at most %d", total,
                              GCOMMI_MAX_GPUS);
    }
    free(counts);
    free(nodes);
    if (st == GCOMM_SUCCESS) st = gcommi_rt_gpu_setup(rt);
    if (st == GCOMM_SUCCESS) {
        rt->initialized = 1;
        GCOMM_LOG_INFO("rma", "process %d of %d drives %d GPU(s), job GPUs %d..%d of %d",
                       boot->rank, boot->size, rt->nlocal, rt->first,
                       rt->first + rt->nlocal - 1, rt->ngpus);
    }
out:
    pthread_mutex_unlock(&rt->lock);
    return st;
}

int gcomm_init(void)
{
    GCOMMI_API_ENTRY();
    int devices[GCOMMI_MAX_GPUS], n;
    const char *list = gcommi_config()->devices;
    if (list && *list) {
        n = gcommi_parse_devices(list, devices, GCOMMI_MAX_GPUS);
        if (n < 0) return n;
    } else {
        n = gcommi_rt_gpu_count();
        if (n > GCOMMI_MAX_GPUS) n = GCOMMI_MAX_GPUS;
        for (int i = 0; i < n; i++) devices[i] = i;
    }
    gcommi_bootstrap_t boot = {.rank = 0,
                               .size = 1,
                               .allgather = single_allgather,
                               .barrier = single_barrier,
                               .finalize = single_finalize};
    return gcommi_rt_init(&boot, n, devices);
}

int gcomm_finalize(void)
{
    GCOMMI_API_ENTRY();
    gcommi_rt_t *rt = &gcommi_rt;
    pthread_mutex_lock(&rt->lock);
    if (!rt->initialized) {
        pthread_mutex_unlock(&rt->lock);
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "gcomm is not initialised");
    }
    gcommi_rt_release();
    if (rt->boot.finalize) rt->boot.finalize(&rt->boot);
    rt->initialized = 0;
    pthread_mutex_unlock(&rt->lock);
    return GCOMM_SUCCESS;
}

int gcomm_initialized(int *flag)
{
    GCOMMI_API_ENTRY();
    if (!flag) return GCOMMI_ERROR(GCOMM_ERR_ARG, "flag is NULL");
    *flag = gcommi_rt.initialized;
    return GCOMM_SUCCESS;
}

int gcomm_local_devices(int *count, int devices[GCOMM_MAX_GPUS])
{
    GCOMMI_API_ENTRY();
    if (!count || !devices) return GCOMMI_ERROR(GCOMM_ERR_ARG, "count or devices is NULL");
    if (!gcommi_rt.initialized) return GCOMMI_ERROR(GCOMM_ERR_ARG, "gcomm is not initialised");
    *count = gcommi_rt.nlocal;
    for (int i = 0; i < gcommi_rt.nlocal; i++) devices[i] = gcommi_rt.local[i].device;
    return GCOMM_SUCCESS;
}

int gcomm_job_gpus(int *ngpus, int *first)
{
    GCOMMI_API_ENTRY();
    if (!ngpus || !first) return GCOMMI_ERROR(GCOMM_ERR_ARG, "ngpus or first is NULL");
    if (!gcommi_rt.initialized) return GCOMMI_ERROR(GCOMM_ERR_ARG, "gcomm is not initialised");
    *ngpus = gcommi_rt.ngpus;
    *first = gcommi_rt.first;
    return GCOMM_SUCCESS;
}

int gcommi_rt_local_of_device(int device)
{
    for (int i = 0; i < gcommi_rt.nlocal; i++)
        if (gcommi_rt.local[i].device == device) return i;
    return -1;
}
