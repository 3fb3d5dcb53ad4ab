/* gcomm_launch: runs a kernel as gcomm ranks on every GPU of the job.
 *
 * Per launch: agree on the ranks (blocks per GPU, checked against what can be resident at once),
 * lay out and (re)allocate each GPU's runtime segment, exchange segment and region handles and
 * map other processes' memory (CUDA IPC, cached), fill and upload each GPU's parameter, zero the
 * segments, wait until every process has, launch cooperatively, wait for the end, and turn
 * device-side errors and wait reports into one
 * status that every process returns. */
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "gcomm/detail/notif.h"
#include "rma/cuda_try.h"
#include "rma/api_check.h"
#include "rma/devlog.h"
#include "rma/proxy_gpu.h"
#include "rma/runtime.h"
#include "rma/segment.h"

/* What a process tells the others about each of its GPUs before a launch. */
typedef struct {
    int32_t blocks;
    int32_t pad;
    uint64_t seg_base, seg_serial;
    unsigned char seg_ipc[GCOMMI_IPC_HANDLE_BYTES];
    gcommi_region_desc_t regions[GCOMMI_MAX_REGIONS];
} gpu_info_t;

/* Maps (or reuses the mapping of) another process's allocation; *view = NULL on failure. */
static int ipc_map(gcommi_ipc_map_t *m, uint64_t serial, const unsigned char *handle,
                   uint64_t offset, void **view)
{
    if (m->serial != serial) {
        if (m->view) cudaIpcCloseMemHandle(m->view);
        m->view = NULL;
        m->serial = 0;
        cudaIpcMemHandle_t h;
        memcpy(&h, handle, sizeof(h));
        void *v = NULL;
        cudaError_t e = cudaIpcOpenMemHandle(&v, h, cudaIpcMemLazyEnablePeerAccess);
        if (e != cudaSuccess) {
            cudaGetLastError();
            return GCOMMI_ERROR(GCOMM_ERR_CUDA, "cudaIpcOpenMemHandle: %s", cudaGetErrorString(e));
        }
        m->view = v;
        m->serial = serial;
    }
    *view = (char *)m->view + offset;
    return GCOMM_SUCCESS;
}

int gcomm_launch_max_blocks(const void *kernel, int threads_per_block, size_t shared_bytes,
                            int gpu, int *blocks)
{
    GCOMMI_API_ENTRY();
    if (!kernel || !blocks) return GCOMMI_ERROR(GCOMM_ERR_ARG, "kernel or blocks is NULL");
    if (!gcommi_rt.initialized) return GCOMMI_ERROR(GCOMM_ERR_ARG, "gcomm is not initialised");
    if (gpu < 0 || gpu >= gcommi_rt.nlocal)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "gpu = %d; this process drives %d", gpu,
                            gcommi_rt.nlocal);
    if (threads_per_block < 1 || threads_per_block > 1024)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "threads_per_block = %d", threads_per_block);
    int dev = gcommi_rt.local[gpu].device, per_sm = 0, sms = 0, coop = 0;
    CUDA_TRY(cudaSetDevice(dev), "cudaSetDevice");
    CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "SM count");
    CUDA_TRY(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev), "attribute");
    if (!coop) return GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED, "device %d has no cooperative launch", dev);
    {
        cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel,
                                                                      threads_per_block,
                                                                      shared_bytes);
        if (e != cudaSuccess) {
            cudaGetLastError();
            return GCOMMI_ERROR(GCOMM_ERR_ARG, "kernel = %p: %s (pass gcomm_kernel(your_kernel))",
                                kernel, cudaGetErrorString(e));
        }
    }
    *blocks = per_sm * sms;
    /* a job over the proxy takes one block per GPU for its service block (svc.h) */
    if (gcommi_gpu_job_spans_nodes(&gcommi_rt)) *blocks -= 1;
    if (*blocks < 1)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "no block of %d threads (%zu bytes of shared memory) "
                            "of this kernel fits on device %d beside the proxy's service block",
                            threads_per_block, shared_bytes, dev);
    return GCOMM_SUCCESS;
}

/* Phase 1 (local): ranks per local GPU, as asked or as many as can be resident at once. */
static int phase_ranks(gcommi_rt_t *rt, const gcomm_launch_t *launch, gpu_info_t *mine)
{
    for (int i = 0; i < rt->nlocal; i++) {
        int max;
        int st = gcomm_launch_max_blocks(launch->kernel, launch->threads_per_block,
                                         launch->shared_bytes, i, &max);
        gcommi_api_name = "gcomm_launch";
        if (st) return st;
        int b = launch->blocks_per_gpu ? launch->blocks_per_gpu : max;
        if (b > max || b < 1)
            return GCOMMI_ERROR(GCOMM_ERR_ARG, "blocks_per_gpu = %d: at most %d blocks of %d "
                                "threads (%zu bytes of shared memory) of this kernel are resident "
                                "at once on device %d (one is the proxy's service block in a job "
                                "over the proxy); ranks that are not resident could deadlock",
                                b, max, launch->threads_per_block, launch->shared_bytes,
                                rt->local[i].device);
        mine[i].blocks = b;
    }
    return GCOMM_SUCCESS;
}

/* Frees what was retired (replaced segments, gcomm_free'd regions) once every process has
 * dropped its mapping of it (called after the processes agreed past their mapping phase). */
static void free_retired(gcommi_rt_t *rt)
{
    for (int i = 0; i < rt->nlocal; i++) {
        gcommi_local_gpu_t *l = &rt->local[i];
        cudaSetDevice(l->device);
        for (int k = 0; k < l->nretired; k++) cudaFree(l->retired[k]);
        l->nretired = 0;
    }
    cudaGetLastError();
}

/* Phase 2 (local): segments large enough for this launch, the log, what the others must know. */
static int phase_segments(gcommi_rt_t *rt, const gcommi_param_t *base, gpu_info_t *mine)
{
    for (int i = 0; i < rt->nlocal; i++) {
        gcommi_local_gpu_t *l = &rt->local[i];
        CUDA_TRY(cudaSetDevice(l->device), "cudaSetDevice");
        if (l->seg_bytes < base->seg_bytes) {
            /* the others may still map the old one: it is freed after they have moved on */
            if (l->seg) gcommi_rt_retire(i, l->seg);
            l->seg = NULL;
            l->seg_bytes = 0;
            CUDA_TRY(cudaMalloc((void **)&l->seg, base->seg_bytes), "runtime segment");
            l->seg_bytes = base->seg_bytes;
            l->seg_serial = ++rt->next_serial;
        }
        if (!l->param_dev)
            CUDA_TRY(cudaMalloc((void **)&l->param_dev, sizeof(gcommi_param_t)), "launch parameter");
        if (!l->log)
            CUDA_TRY(cudaHostAlloc((void **)&l->log, GCOMMI_LOG_RECORDS * sizeof(gcommi_log_rec_t),
                                   cudaHostAllocMapped | cudaHostAllocPortable),
                     "gcomm_log records");
        memset(l->log, 0, GCOMMI_LOG_RECORDS * sizeof(gcommi_log_rec_t));
        mine[i].seg_base = (uint64_t)(uintptr_t)l->seg;
        mine[i].seg_serial = l->seg_serial;
        if (rt->boot.size > 1) {
            cudaIpcMemHandle_t h;
            CUDA_TRY(cudaIpcGetMemHandle(&h, l->seg), "cudaIpcGetMemHandle(segment)");
            memcpy(mine[i].seg_ipc, &h, sizeof(h));
        }
        memcpy(mine[i].regions, l->regions, sizeof(l->regions));
    }
    return GCOMM_SUCCESS;
}

/* Phase 3 (local): every GPU's segment and regions as this process addresses them (other
 * processes' through CUDA IPC, opened in the context of this process's GPU). */
static int phase_map(gcommi_rt_t *rt, const gpu_info_t *all, gcommi_param_t *base)
{
    for (int p = 0, gg = 0; p < rt->boot.size; p++)
        for (int i = 0; gg < rt->ngpus && rt->proc_of_gpu[gg] == p; i++, gg++) {
            const gpu_info_t *info = &all[(size_t)p * GCOMMI_MAX_GPUS + i];
            base->nregions[gg] = 0;
            for (int r = 0; r < GCOMMI_MAX_REGIONS; r++) {
                const gcommi_region_desc_t *d = &info->regions[r];
                base->region_base[gg][r] = d->base;
                base->region_size[gg][r] = d->size;
                base->region_view[gg][r] = NULL;
                if (d->size) base->nregions[gg] = r + 1;
            }
            if ((base->remote_mask >> gg) & 1u) continue; /* through the proxy: a shadow */
            if (p == rt->boot.rank) {
                base->seg[gg] = rt->local[i].seg;
                for (int r = 0; r < GCOMMI_MAX_REGIONS; r++)
                    base->region_view[gg][r] = (char *)(uintptr_t)info->regions[r].base;
                continue;
            }
            if (rt->nlocal == 0) continue; /* nothing here runs kernels */
            CUDA_TRY(cudaSetDevice(rt->local[0].device), "cudaSetDevice");
            void *v;
            GCOMMI_CHECK(ipc_map(&rt->seg_map[gg], info->seg_serial, info->seg_ipc, 0, &v));
            base->seg[gg] = v;
            for (int r = 0; r < GCOMMI_MAX_REGIONS; r++) {
                const gcommi_region_desc_t *d = &info->regions[r];
                gcommi_ipc_map_t *m = &rt->region_map[gg][r];
                if (!d->size) { /* gone: drop our mapping (the owner frees it after agreeing) */
                    if (m->view) cudaIpcCloseMemHandle(m->view);
                    m->view = NULL;
                    m->serial = 0;
                    continue;
                }
                GCOMMI_CHECK(ipc_map(m, d->serial, d->ipc, d->alloc_offset, &v));
                base->region_view[gg][r] = v;
            }
        }
    return GCOMM_SUCCESS;
}

/* Phase 4 (local): each GPU's parameter, zeroed segments; everything queued before the launch
 * (the user's work on the default stream too) done. gp: the launch's proxy, or NULL. */
static int phase_upload(gcommi_rt_t *rt, const gcommi_param_t *base, gcommi_param_t *prm,
                        gcommi_gpu_proxy_t *gp)
{
    for (int i = 0; i < rt->nlocal; i++) {
        gcommi_local_gpu_t *l = &rt->local[i];
        prm[i] = *base;
        prm[i].gpu = rt->first + i;
        prm[i].nlocal = base->rank_base[prm[i].gpu + 1] - base->rank_base[prm[i].gpu];
        if (gp) gcommi_gpu_proxy_param(gp, i, &prm[i]);
        CUDA_TRY(cudaHostGetDevicePointer((void **)&prm[i].log, l->log, 0), "gcomm_log records");
        CUDA_TRY(cudaSetDevice(l->device), "cudaSetDevice");
        CUDA_TRY(cudaMemcpyAsync(l->param_dev, &prm[i], sizeof(prm[i]), cudaMemcpyHostToDevice,
                                 (cudaStream_t)l->stream), "parameter upload");
        CUDA_TRY(cudaMemsetAsync(l->seg, 0, base->seg_bytes, (cudaStream_t)l->stream),
                 "segment reset");
        CUDA_TRY(cudaDeviceSynchronize(), "synchronising before the launch");
    }
    return GCOMM_SUCCESS;
}

/* Launches on every local GPU, with the service block after the ranks when svc (a job over the
 * proxy); returns how many were launched (st: the first failure). */
static int launch_all(gcommi_rt_t *rt, const gcomm_launch_t *launch, const gpu_info_t *mine,
                      int svc, int *st)
{
    int launched = 0;
    for (int i = 0; i < rt->nlocal; i++) {
        gcommi_local_gpu_t *l = &rt->local[i];
        void **args = launch->args[i] ? launch->args[i] : launch->args[0];
        void *own_args[1];
        if (!args) args = own_args;
        void *saved = args[0];
        args[0] = &l->param_dev;
        dim3 grid = {(unsigned)(mine[i].blocks + (svc ? 1 : 0)), 1, 1};
        dim3 block = {(unsigned)launch->threads_per_block, 1, 1};
        cudaSetDevice(l->device);
        cudaError_t e = cudaLaunchCooperativeKernel(launch->kernel, grid, block, args,
                                                    launch->shared_bytes,
                                                    (cudaStream_t)l->stream);
        args[0] = saved;
        if (e != cudaSuccess) {
            cudaGetLastError();
            /* the ranks already running elsewhere stop at their timeout */
            *st = GCOMMI_ERROR(GCOMM_ERR_CUDA, "cudaLaunchCooperativeKernel on device %d: %s",
                               l->device, cudaGetErrorString(e));
            break;
        }
        launched = i + 1;
    }
    return launched;
}

/* Waits for the launched kernels, or with gp (a job over the proxy, whose service blocks run until
 * told to end) until every rank of each has finished or its kernel has ended (failed). Their own
 * waits time out (GCOMM_TIMEOUT_MS) and stop every GPU's ranks, so the host only sleeps here; a
 * kernel may compute for as long as it likes. */
static void wait_all(gcommi_rt_t *rt, int launched, const gcommi_gpu_proxy_t *gp)
{
    double nap = 20e-6;
    for (;;) {
        int busy = 0;
        for (int i = 0; i < launched; i++) {
            if (gp && gcommi_gpu_proxy_ranks_done(gp, i)) continue;
            cudaSetDevice(rt->local[i].device);
            if (cudaStreamQuery((cudaStream_t)rt->local[i].stream) == cudaErrorNotReady) busy = 1;
        }
        if (!busy) break;
        struct timespec ts = {0, (long)(nap * 1e9)};
        nanosleep(&ts, NULL);
        if (nap < 1e-3) nap *= 2;
    }
}

/* How local GPU i's ranks ended: kernel failure, abort word, first error; prints its gcomm_log
 * records and, after a stop, what each rank was waiting for. */
static void collect(gcommi_rt_t *rt, int i, const gcommi_param_t *prm, gcommi_launch_result_t *res)
{
    gcommi_local_gpu_t *l = &rt->local[i];
    cudaSetDevice(l->device);
    cudaError_t e = cudaStreamSynchronize((cudaStream_t)l->stream);
    gcommi_ctrl_t c;
    if (e == cudaSuccess)
        e = cudaMemcpy(&c, l->seg + prm->off_ctrl, sizeof(c), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        res->cuda_error = (int32_t)e;
        cudaGetLastError();
        return;
    }
    res->abort = (int32_t)c.abort.v;
    res->error = c.error;
    if (c.log_next.v)
        gcommi_devlog_print(gcommi_config_log_stream(), l->log, c.log_next.v, prm->gpu);
    if (c.abort.v) { /* what every rank was waiting for */
        size_t n = (size_t)prm->nlocal;
        gcommi_report_t *r = malloc(n * sizeof(*r));
        if (r && cudaMemcpy(r, l->seg + prm->off_report, n * sizeof(*r),
                            cudaMemcpyDeviceToHost) == cudaSuccess)
            gcommi_print_reports(prm, r, 0);
        cudaGetLastError();
        free(r);
    }
}

int gcomm_launch(const gcomm_launch_t *launch)
{
    GCOMMI_API_ENTRY();
    gcommi_rt_t *rt = &gcommi_rt;
    GCOMMI_CHECK(gcommi_check_launch(launch));

    const int nproc = rt->boot.size;
    gcommi_gpu_proxy_t gp; /* GPUs of other nodes in the job: the proxy's part of the launch */
    memset(&gp, 0, sizeof(gp));
    int use_proxy = 0;
    pthread_mutex_lock(&rt->lock);
    gpu_info_t *mine = calloc(GCOMMI_MAX_GPUS, sizeof(*mine));
    gpu_info_t *all = calloc((size_t)nproc * GCOMMI_MAX_GPUS, sizeof(*all));
    gcommi_launch_result_t *res_mine = calloc(GCOMMI_MAX_GPUS, sizeof(*res_mine));
    gcommi_launch_result_t *res_all = calloc((size_t)nproc * GCOMMI_MAX_GPUS, sizeof(*res_all));
    gcommi_param_t *prm = calloc(GCOMMI_MAX_GPUS, sizeof(*prm));
    gcommi_param_t *base = calloc(1, sizeof(*base));
    int st = (!mine || !all || !res_mine || !res_all || !prm || !base)
                 ? GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory for the launch tables")
                 : GCOMM_SUCCESS;

    /* 1. ranks: checked locally, agreed, then everybody's counts everywhere */
    if (st == GCOMM_SUCCESS) st = phase_ranks(rt, launch, mine);
    if ((st = gcommi_launch_agree(&rt->boot, st)) != GCOMM_SUCCESS) goto out;
    if ((st = rt->boot.allgather(&rt->boot, mine, all, GCOMMI_MAX_GPUS * sizeof(*mine))))
        goto out;
    gcommi_param_defaults(base, ++rt->launches);
    base->ngpus = rt->ngpus;
    int maxlocal = 0;
    for (int p = 0, g = 0; p < nproc; p++)
        for (int i = 0; g < rt->ngpus && rt->proc_of_gpu[g] == p; i++, g++) {
            int b = all[(size_t)p * GCOMMI_MAX_GPUS + i].blocks;
            base->rank_base[g + 1] = base->rank_base[g] + b;
            base->proc_of_gpu[g] = p;
            if (b > maxlocal) maxlocal = b;
        }
    base->world_size = base->rank_base[rt->ngpus];
    if (base->world_size > GCOMMI_SOURCE_MAX) { /* the same verdict everywhere */
        st = GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED, "%d ranks in the job; a notification names at "
                          "most %d", base->world_size, GCOMMI_SOURCE_MAX);
        goto out;
    }
    gcommi_segment_layout(base, maxlocal);
    base->remote_mask = gcommi_gpu_remote_mask(rt);
    use_proxy = gcommi_gpu_job_spans_nodes(rt); /* the same verdict in every process */

    /* 2. segments; 3. exchange and map; 4. upload and reset, then free what was retired (every
     * process has moved its mappings on by then) */
    st = phase_segments(rt, base, mine);
    if ((st = gcommi_launch_agree(&rt->boot, st)) != GCOMM_SUCCESS) goto out;
    if ((st = rt->boot.allgather(&rt->boot, mine, all, GCOMMI_MAX_GPUS * sizeof(*mine))))
        goto out;
    if (use_proxy) { /* its memory (the remote GPUs' shadows), then the proxy (collective) */
        st = gcommi_gpu_proxy_setup(&gp, rt, base);
        if ((st = gcommi_launch_agree(&rt->boot, st)) != GCOMM_SUCCESS) goto out;
        st = gcommi_gpu_proxy_create(&gp, rt);
        if ((st = gcommi_launch_agree(&rt->boot, st)) != GCOMM_SUCCESS) goto out;
    }
    st = phase_map(rt, all, base);
    if ((st = gcommi_launch_agree(&rt->boot, st)) != GCOMM_SUCCESS) goto out;
    st = phase_upload(rt, base, prm, use_proxy ? &gp : NULL);
    if ((st = gcommi_launch_agree(&rt->boot, st)) != GCOMM_SUCCESS) goto out;
    free_retired(rt);

    /* 5. launch, wait, and the results of every GPU everywhere (always exchanged). From the
     * proxy's start to its stop this thread calls no MPI (the proxy thread does). */
    int lst = GCOMM_SUCCESS, pst = GCOMM_SUCCESS;
    if (use_proxy) lst = gcommi_gpu_proxy_start(&gp);
    int launched = lst == GCOMM_SUCCESS ? launch_all(rt, launch, mine, use_proxy, &lst) : 0;
    if (use_proxy) {
        /* the ranks finish, the proxies stop (collective; the service blocks deliver until
         * then), and the service blocks end, so that the kernels can */
        wait_all(rt, launched, &gp);
        if (gp.proxy) pst = gcommi_gpu_proxy_stop(&gp);
        gcommi_gpu_proxy_end_service(&gp);
    }
    wait_all(rt, launched, NULL);
    for (int i = 0; i < launched; i++) collect(rt, i, &prm[i], &res_mine[i]);
    st = rt->boot.allgather(&rt->boot, res_mine, res_all, GCOMMI_MAX_GPUS * sizeof(*res_mine));
    if (st == GCOMM_SUCCESS) {
        gcommi_launch_result_t res[GCOMMI_MAX_GPUS];
        for (int p = 0, gg = 0; p < nproc; p++)
            for (int i = 0; gg < rt->ngpus && rt->proc_of_gpu[gg] == p; i++, gg++)
                res[gg] = res_all[(size_t)p * GCOMMI_MAX_GPUS + i];
        st = GCOMM_SUCCESS;
        for (int g = 0; g < rt->ngpus && st == GCOMM_SUCCESS; g++)
            if (res[g].cuda_error)
                st = GCOMMI_ERROR(GCOMM_ERR_CUDA, "the kernel failed on GPU %d: %s", g,
                                  cudaGetErrorString((cudaError_t)res[g].cuda_error));
        if (st == GCOMM_SUCCESS) st = gcommi_launch_status(res, rt->ngpus, "GPU", 0);
        if (st == GCOMM_SUCCESS) st = pst;
    }
    if ((st = gcommi_launch_agree(&rt->boot, lst != GCOMM_SUCCESS ? lst : st)) != GCOMM_SUCCESS) goto out;
out:
    if (use_proxy) gcommi_gpu_proxy_free(&gp);
    pthread_mutex_unlock(&rt->lock);
    free(mine);
    free(all);
    free(res_mine);
    free(res_all);
    free(prm);
    free(base);
    return st;
}
