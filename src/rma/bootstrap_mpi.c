/* The MPI bootstrap (library gcomm_mpi): the processes of a communicator form the job. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/error.h"
#include "gcomm/gcomm.h"
#include "gcomm/gcomm_mpi.h"
#include "rma/bootstrap.h"
#include "rma/proxy.h"
#include "rma/rt_gpu.h"
#include "rma/runtime.h"

typedef struct {
    MPI_Comm comm;
} mpi_boot_t;

static int mpi_allgather(gcommi_bootstrap_t *b, const void *in, void *out, size_t bytes)
{
    mpi_boot_t *m = b->state;
    if (bytes > (size_t)0x7fffffff)
        return GCOMMI_ERROR(GCOMM_ERR_OVERFLOW, "allgather of %zu bytes", bytes);
    int rc = MPI_Allgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, m->comm);
    if (rc != MPI_SUCCESS) return GCOMMI_ERROR(GCOMM_ERR_MPI, "MPI_Allgather failed (%d)", rc);
    return GCOMM_SUCCESS;
}

static int mpi_barrier(gcommi_bootstrap_t *b)
{
    mpi_boot_t *m = b->state;
    int rc = MPI_Barrier(m->comm);
    if (rc != MPI_SUCCESS) return GCOMMI_ERROR(GCOMM_ERR_MPI, "MPI_Barrier failed (%d)", rc);
    return GCOMM_SUCCESS;
}

static int mpi_proxy_transport(gcommi_bootstrap_t *b, gcommi_proxy_transport_t **out)
{
    mpi_boot_t *m = b->state;
    return gcommi_proxy_mpi_create(m->comm, out);
}

static void mpi_finalize(gcommi_bootstrap_t *b)
{
    mpi_boot_t *m = b->state;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&m->comm);
    free(m);
    b->state = NULL;
}

int gcomm_init_mpi(MPI_Comm comm)
{
    GCOMMI_API_ENTRY();
    int flag = 0;
    MPI_Initialized(&flag);
    if (!flag) return GCOMMI_ERROR(GCOMM_ERR_MPI, "MPI is not initialised");
    if (comm == MPI_COMM_NULL) return GCOMMI_ERROR(GCOMM_ERR_ARG, "comm is MPI_COMM_NULL");
    mpi_boot_t *m = calloc(1, sizeof(*m));
    if (!m) return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory");
    MPI_Comm node;
    int rank, size, local, nlocal_procs;
    if (MPI_Comm_dup(comm, &m->comm) != MPI_SUCCESS ||
        MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) {
        free(m);
        return GCOMMI_ERROR(GCOMM_ERR_MPI, "MPI_Comm_dup / MPI_Comm_split_type failed");
    }
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &nlocal_procs);
    /* The node of this process: processes of one node reach each other's GPUs through CUDA IPC,
     * those of other nodes through the proxy. GCOMM_FORCE_PROXY = N pretends that every N
     * consecutive processes form a node, so that the proxy path can be run on one machine. */
    long pretend = gcommi_config()->force_proxy;
    int node_id = rank, leader = rank, node_local = local; /* GPUs are dealt by the real node */
    MPI_Allreduce(&rank, &leader, 1, MPI_INT, MPI_MIN, node); /* a real node: its first process */
    node_id = pretend > 0 ? (int)(rank / pretend) : leader;
    if (pretend > 0) { /* the processes of this pretend node that share the real node */
        MPI_Comm pn;
        MPI_Comm_split(node, node_id, rank, &pn);
        MPI_Comm_free(&node);
        node = pn;
        MPI_Comm_rank(node, &local);
        MPI_Comm_size(node, &nlocal_procs);
    }
    int list[GCOMM_MAX_GPUS], n;
    const char *env = gcommi_config()->devices;
    if (env && *env) {
        n = gcommi_parse_devices(env, list, GCOMM_MAX_GPUS);
        if (n < 0) {
            MPI_Comm_free(&node);
            MPI_Comm_free(&m->comm);
            free(m);
            return n;
        }
    } else {
        n = gcommi_rt_gpu_count();
        if (n > GCOMM_MAX_GPUS) n = GCOMM_MAX_GPUS;
        for (int i = 0; i < n; i++) list[i] = i;
    }
    int device = n > 0 ? list[node_local % n] : -1;
    /* Two processes of one node on one GPU would each size their grid to the whole GPU, so neither
     * grid could be resident with the other's while they wait for each other: refuse (by the
     * GPU's PCI address, which CUDA_VISIBLE_DEVICES does not renumber). Processes of different
     * (pretend) nodes may share one: they meet only through the proxies, and the GPU time-slices
     * between their kernels. */
    char pci[32], *all_pci = calloc((size_t)nlocal_procs, sizeof(pci));
    int shared_gpu = -1;
    gcommi_rt_gpu_pci(device, pci, sizeof(pci));
    if (all_pci) {
        MPI_Allgather(pci, (int)sizeof(pci), MPI_CHAR, all_pci, (int)sizeof(pci), MPI_CHAR, node);
        for (int p = 0; p < nlocal_procs && shared_gpu < 0; p++)
            if (p != local && pci[0] && strcmp(pci, all_pci + (size_t)p * sizeof(pci)) == 0)
                shared_gpu = p;
        free(all_pci);
    }
    MPI_Comm_free(&node);
    gcommi_bootstrap_t boot = {.rank = rank,
                               .size = size,
                               .node = node_id,
                               .allgather = mpi_allgather,
                               .barrier = mpi_barrier,
                               .finalize = mpi_finalize,
                               .proxy_transport = mpi_proxy_transport,
                               .state = m};
    int st = shared_gpu >= 0
                 ? GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED, "this process and process %d of the node "
                                "would both drive GPU %s (device %d): give each process its own "
                                "GPU (GCOMM_DEVICES, CUDA_VISIBLE_DEVICES)", shared_gpu, pci, device)
                 : gcommi_rt_init(&boot, device >= 0 ? 1 : 0, &device);
    /* all processes succeed or all fail: one that went on alone would wait in every collective */
    int worst = st;
    MPI_Allreduce(&st, &worst, 1, MPI_INT, MPI_MIN, comm);
    if (st == GCOMM_SUCCESS && worst != GCOMM_SUCCESS) {
        /* nothing was mapped by anyone yet, and the failed processes will not meet us in
         * gcomm_finalize's barrier: tear down as a process of its own */
        gcommi_rt.boot.size = 1;
        gcomm_finalize(); /* frees m through mpi_finalize */
        gcommi_api_name = "gcomm_init_mpi";
        return GCOMMI_ERROR(worst, "another process failed to initialise (%s)",
                            gcomm_error_string(worst));
    }
    if (st) {
        MPI_Comm_free(&m->comm);
        free(m);
    }
    return st;
}
