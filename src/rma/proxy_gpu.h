/* The proxy of a GPU launch (issue 5): GPU ranks reach the ranks of GPUs they cannot load from and
 * store to (other nodes, or other pretend nodes under GCOMM_FORCE_PROXY) through the process's
 * proxy (proxy.h). What such a launch adds to gcomm_launch lives here:
 *   - mapped pinned host memory for each local GPU's command ring and credit word, the completion
 *     counters and error words of the ranks, the rings of the lanes the proxy fills (from remote
 *     GPUs into local ranks), and one shadow segment per remote GPU (the counters of those lanes
 *     and a copy of the local ranks' window entries, which win_create writes into every GPU's
 *     segment as the kernel sees it);
 *   - the proxy's delivery into GPU windows and lanes: each GPU's service block (svc.h) stores
 *     small payloads (up to GCOMMI_SVC_DATA bytes) and every notification, from records the
 *     proxy writes into a ring in mapped memory; larger payloads go by cudaMemcpyAsync on
 *     streams of the proxy's own (the copy engines work beside a running cooperative kernel),
 *     asynchronous at both ends (the proxy polls each copy's event and goes on meanwhile);
 *   - the proxy's start just before the kernels, and its collective stop once every rank has
 *     finished (the service block still delivers meanwhile), then the service block's end.
 * The gcomm_launch phases call these in order: setup (after the layout), params (per GPU, before
 * the upload), start (after the last agreement, no MPI on the calling thread until stop), stop. */
#ifndef GCOMM_RMA_PROXY_GPU_H
#define GCOMM_RMA_PROXY_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "gcomm/detail/rt.h"
#include "rma/proxy.h"
#include "rma/runtime.h"

/* Copies the proxy has under way at once: more than its buffers (each copy holds one). */
#define GCOMMI_GPU_PROXY_COPIES 512

typedef struct {
    const gcommi_param_t *base; /* the launch's shared parameter (seg[] holds the shadows) */
    int nlocal, first;          /* local GPUs, job index of the first */
    int wtab;                   /* a remote GPU whose shadow holds our ranks' window entries */
    char *host;                 /* one mapped pinned allocation for all of the below */
    size_t host_bytes;
    char *shadow[GCOMMI_MAX_GPUS];
    gcommi_pq_cmd_t *ring[GCOMMI_MAX_GPUS];
    uint32_t *consumed[GCOMMI_MAX_GPUS];
    /* each local GPU's service block (svc.h): its delivery ring and words, records posted */
    gcommi_svc_rec_t *svc_ring[GCOMMI_MAX_GPUS];
    gcommi_svc_ctl_t *svc_ctl[GCOMMI_MAX_GPUS];
    uint32_t svc_pos[GCOMMI_MAX_GPUS];
    uint32_t tail_mirror[GCOMMI_MAX_GPUS]; /* final reservation counts, from the last rank */
    uint32_t *done;
    int32_t *errs;
    void *stream[GCOMMI_MAX_GPUS];         /* cudaStream_t of the proxy's copies, per local GPU */
    uint32_t ring_depth;                   /* records of each command ring */
    /* asynchronous copies: ticket t (1, 2, ...) ends with event events[t % COPIES] while
     * ev_ticket[t % COPIES] == t (0: the slot is free) */
    uint64_t tickets;
    void *events[GCOMMI_GPU_PROXY_COPIES];
    uint64_t ev_ticket[GCOMMI_GPU_PROXY_COPIES];
    char *dev_seg[GCOMMI_MAX_GPUS];        /* local GPUs' segments (their control blocks) */
    int32_t *proc_of_rank;
    gcommi_proxy_transport_t *transport;
    gcommi_proxy_t *proxy;
    void *pinned;                          /* the proxy's buffers, registered with CUDA */
} gcommi_gpu_proxy_t;

/* The GPUs of the job that the GPUs of this process reach through the proxy (bit g). */
uint32_t gcommi_gpu_remote_mask(const gcommi_rt_t *rt);

/* Nonzero when the job's GPUs are on more than one node (the same answer in every process, also
 * in one without GPUs): then every process takes part in setting up the proxies. */
int gcommi_gpu_job_spans_nodes(const gcommi_rt_t *rt);

/* Allocates and lays out the host memory of a launch whose parameter `base` (layout done) has
 * remote GPUs, points base->seg[g] of each remote GPU at its shadow and fills the proxy fields
 * every GPU shares (local: no other process takes part). */
int gcommi_gpu_proxy_setup(gcommi_gpu_proxy_t *gp, gcommi_rt_t *rt, gcommi_param_t *base);

/* Creates the transport and the proxy (collective over the processes). */
int gcommi_gpu_proxy_create(gcommi_gpu_proxy_t *gp, gcommi_rt_t *rt);

/* Fills the per-GPU fields of local GPU i's parameter (its ring, the rings of its lanes). */
void gcommi_gpu_proxy_param(gcommi_gpu_proxy_t *gp, int i, gcommi_param_t *prm);

/* Starts the proxy thread: call after the processes' last agreement before the kernels. */
int gcommi_gpu_proxy_start(gcommi_gpu_proxy_t *gp);

/* Nonzero once every rank of local GPU i has called gcomm_finish (the last one says so through
 * the service block's words): the launch then stops the proxy, while the kernel still runs. */
int gcommi_gpu_proxy_ranks_done(const gcommi_gpu_proxy_t *gp, int i);

/* Once the ranks are done: tells the proxy how many commands each ring received and stops it
 * (collective: it carries out what is left and meets the other processes' proxies). */
int gcommi_gpu_proxy_stop(gcommi_gpu_proxy_t *gp);

/* Ends the service blocks (after the stop, also a failed one): then the kernels can end. */
void gcommi_gpu_proxy_end_service(gcommi_gpu_proxy_t *gp);

/* Frees what setup made (also after a failure part way). */
void gcommi_gpu_proxy_free(gcommi_gpu_proxy_t *gp);

#endif /* GCOMM_RMA_PROXY_GPU_H */
