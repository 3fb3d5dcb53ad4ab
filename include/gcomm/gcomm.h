/* gcomm host C API: everything a host program needs. Device code includes gcomm/device.cuh. */
#ifndef GCOMM_H
#define GCOMM_H

#include "gcomm/status.h"
#include "gcomm/datatype.h"

#include <stddef.h>

#define GCOMM_VERSION_MAJOR 0
#define GCOMM_VERSION_MINOR 1
#define GCOMM_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* Prints every GCOMM_* configuration variable with its current value, default and description
 * to the given FILE* (passed as void* so this header needs no <stdio.h>). */
int gcomm_config_print(void *file);

/* ---- processes, GPUs and memory (notified RMA runtime, docs/GUIDE.md "Device-initiated RMA") ----
 *
 * gcomm_init: a single process drives every visible GPU (GCOMM_DEVICES="0,1" picks some).
 * Under mpirun, gcomm_init_mpi (gcomm_mpi.h) makes every process one part of the job instead (one
 * GPU per process by default: the process's rank on its node, modulo the node's GPUs). A process
 * without a usable GPU initialises with zero GPUs; gcomm_launch then returns GCOMM_ERR_NO_DEVICE.
 * Calling gcomm_init twice is an error; gcomm_finalize frees what gcomm allocated. */
int gcomm_init(void);
int gcomm_finalize(void);
int gcomm_initialized(int *flag);
/* The CUDA devices this process drives, in job order; *count of them (at most GCOMM_MAX_GPUS). */
#define GCOMM_MAX_GPUS 8
int gcomm_local_devices(int *count, int devices[GCOMM_MAX_GPUS]);
/* Job-wide: GPUs of all processes, and the index of this process's first GPU among them. */
int gcomm_job_gpus(int *ngpus, int *first);

/* GPU memory that ranks on every GPU of the job can reach (peer access, CUDA IPC): allocated on
 * the calling thread's current CUDA device, which must be one this process drives. Not zeroed. */
int gcomm_malloc(size_t bytes, void **ptr);
int gcomm_free(void *ptr);
/* Makes a user allocation (cudaMalloc'd memory of a device this process drives) usable for
 * windows; gcomm_deregister undoes it (the memory itself stays the user's). */
int gcomm_register(void *ptr, size_t bytes);
int gcomm_deregister(void *ptr);

/* ---- launch: one host call runs a kernel as gcomm ranks (one per block) on all GPUs ----
 *
 * The kernel's first parameter is a gcomm_param_t (gcomm/device.cuh); args[g][0] may be anything,
 * gcomm points it at the parameter it made for local GPU g. args[g] are the kernel arguments for
 * local GPU g (args[g] == NULL: args[0] is used). `kernel` is a cudaKernel_t: in a .cu file that
 * includes gcomm/device.cuh, write `.kernel = gcomm_kernel(my_kernel)`.
 * All ranks must be resident at once (they synchronise with each other): blocks_per_gpu = 0 asks
 * for as many as fit; a larger grid than fits is refused with GCOMM_ERR_ARG before anything runs.
 * Collective over the processes of the job; returns when the kernel has finished on every GPU,
 * with GCOMM_SUCCESS, the first device-side error (its rank, window and offset in the detail), or
 * GCOMM_ERR_TIMEOUT (with each waiting rank's report printed at log level error). */
typedef struct {
    const void *kernel;
    int blocks_per_gpu;      /* 0: the most that are resident at once */
    int threads_per_block;   /* 1..1024 */
    size_t shared_bytes;     /* dynamic shared memory per block */
    void **args[GCOMM_MAX_GPUS];
} gcomm_launch_t;
int gcomm_launch(const gcomm_launch_t *launch);
/* The largest blocks_per_gpu that gcomm_launch accepts for this kernel and block size on local
 * GPU index `gpu`. */
int gcomm_launch_max_blocks(const void *kernel, int threads_per_block, size_t shared_bytes,
                            int gpu, int *blocks);

/* ---- host ranks: host threads as gcomm ranks (gcomm/rank.h) ----
 *
 * Runs fn(param, arg) on `nranks` new threads of this process, each one rank with the semantics
 * of a GPU block of one thread: the same rank library (windows, put/get/notify, wait/test,
 * flush, barriers, the log), so one rank body (GCOMM_HD) can run as GPU blocks under gcomm_launch
 * or as host threads here. Ranks are numbered 0 .. nranks-1 in GCOMM_COMM_WORLD and
 * GCOMM_COMM_DEVICE alike. Their windows may be any memory of the process. Returns when every
 * thread has returned, with the first rank error or GCOMM_ERR_TIMEOUT like gcomm_launch (and the
 * ranks' wait reports printed). Needs gcomm_init; for now the job is this process alone (host
 * ranks of several processes need the proxy). */
struct gcommi_param_s;
typedef void (*gcomm_host_fn_t)(const struct gcommi_param_s *param, void *arg);
int gcomm_launch_host(gcomm_host_fn_t fn, int nranks, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* GCOMM_H */
