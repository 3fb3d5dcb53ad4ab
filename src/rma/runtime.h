/* The host runtime of notified RMA: the process's GPUs, the memory ranks can reach (regions), the
 * per-GPU runtime segments and their mappings in this process, and the bootstrap. One instance
 * per process, guarded by one lock (the API is not meant to be called concurrently, the lock
 * keeps it safe if it is). */
#ifndef GCOMM_RMA_RUNTIME_H
#define GCOMM_RMA_RUNTIME_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "gcomm/detail/rt.h"
#include "gcomm/gcomm.h"
#include "rma/bootstrap.h"

#define GCOMMI_IPC_HANDLE_BYTES 64 /* cudaIpcMemHandle_t */

/* A region as every process learns it at launch. */
typedef struct {
    uint64_t base;       /* in the owner process */
    uint64_t size;       /* 0: unused slot */
    uint64_t serial;     /* changes when the slot is reused, so stale mappings are dropped */
    uint64_t alloc_offset; /* base - start of the CUDA allocation the IPC handle maps */
    unsigned char ipc[GCOMMI_IPC_HANDLE_BYTES];
} gcommi_region_desc_t;

/* A mapping of another process's memory (CUDA IPC), cached across launches. */
typedef struct {
    uint64_t serial; /* of the region or segment it maps; 0: none */
    void *view;      /* where this process sees it */
} gcommi_ipc_map_t;

typedef struct {
    int device;                                   /* CUDA ordinal */
    gcommi_region_desc_t regions[GCOMMI_MAX_REGIONS];
    int user_owned[GCOMMI_MAX_REGIONS];           /* gcomm_register (not freed by gcomm) */
    char *seg;                                    /* runtime segment */
    size_t seg_bytes;
    uint64_t seg_serial;
    gcommi_param_t *param_dev;                    /* device copy of the launch parameter */
    gcommi_log_rec_t *log;                        /* gcomm_log records (mapped pinned memory) */
    /* allocations other processes may still map: freed at the next launch, once every process
     * has moved its mappings on, or at gcomm_finalize after a barrier */
    void *retired[GCOMMI_MAX_REGIONS + 1];
    int nretired;
    void *stream;                                 /* cudaStream_t of launches */
} gcommi_local_gpu_t;

typedef struct {
    int initialized;
    pthread_mutex_t lock;
    gcommi_bootstrap_t boot;
    int nlocal;                                   /* GPUs of this process */
    gcommi_local_gpu_t local[GCOMMI_MAX_GPUS];
    int ngpus;                                    /* GPUs of the job */
    int first;                                    /* job index of local[0] */
    int proc_of_gpu[GCOMMI_MAX_GPUS];
    int node_of_gpu[GCOMMI_MAX_GPUS];             /* bootstrap node of each GPU's process */
    uint64_t next_serial;
    /* mappings of other processes' segments and regions */
    gcommi_ipc_map_t seg_map[GCOMMI_MAX_GPUS];
    gcommi_ipc_map_t region_map[GCOMMI_MAX_GPUS][GCOMMI_MAX_REGIONS];
    uint32_t launches;
} gcommi_rt_t;

extern gcommi_rt_t gcommi_rt;

/* Local index of CUDA device `device` in this process, or -1. */
int gcommi_rt_local_of_device(int device);

/* Defers cudaFree of an allocation of local GPU i that other processes may map (freed directly
 * when the job has one process). */
void gcommi_rt_retire(int i, void *ptr);

/* Releases every GPU resource of the runtime (gcomm_finalize). */
void gcommi_rt_release(void);

#endif /* GCOMM_RMA_RUNTIME_H */
