/* How the processes of a job find each other: an operation table the runtime calls for its few
 * collective steps (exchanging GPU counts, segment and IPC handles, launch results). The core
 * library ships the single-process table; gcomm_mpi (gcomm_init_mpi) plugs in MPI's. */
#ifndef GCOMM_RMA_BOOTSTRAP_H
#define GCOMM_RMA_BOOTSTRAP_H

#include <stddef.h>

struct gcommi_proxy_transport_s; /* rma/proxy.h */

typedef struct gcommi_bootstrap_s {
    int rank; /* this process */
    int size; /* processes in the job */
    int node; /* this process's node: GPUs of processes of other nodes are reached through the
               * proxy (a real node, or a pretend one under GCOMM_FORCE_PROXY) */
    /* out receives `bytes` from every process, in rank order. Returns GCOMM_SUCCESS or an error
     * with its detail recorded. */
    int (*allgather)(struct gcommi_bootstrap_s *b, const void *in, void *out, size_t bytes);
    int (*barrier)(struct gcommi_bootstrap_s *b);
    void (*finalize)(struct gcommi_bootstrap_s *b);
    /* Creates the transport of the proxies (proxy.h) over the job's processes, collectively;
     * NULL in a job of one process (nothing to carry). */
    int (*proxy_transport)(struct gcommi_bootstrap_s *b, struct gcommi_proxy_transport_s **out);
    void *state;
} gcommi_bootstrap_t;

/* Initialises the runtime over a bootstrap (copied). `devices`: the CUDA devices this process
 * drives (ndevices may be 0: no GPU). Called by gcomm_init and gcomm_init_mpi. */
int gcommi_rt_init(const gcommi_bootstrap_t *boot, int ndevices, const int *devices);

/* Parses GCOMM_DEVICES ("0,2,3") into devices[] (at most max); returns the count, 0 when empty,
 * or a negative GCOMM_ERR_* code with its detail recorded. */
int gcommi_parse_devices(const char *list, int *devices, int max);

#endif /* GCOMM_RMA_BOOTSTRAP_H */
