/* What the MPI-CUDA twins (hdiff_mpicuda.cu, stencil_mpicuda.cu) share: MPI calls checked, the
 * skip when any process lacks a GPU, and one GPU per process of a node. Host code, CUDA and MPI;
 * include after app_util.h. */
#ifndef GCOMM_APPS_STENCIL_APP_MPI_H
#define GCOMM_APPS_STENCIL_APP_MPI_H

#include <stdio.h>

#include <mpi.h>

#define MPI_CHECK(call)                                                                        \
    do {                                                                                       \
        int e_ = (call);                                                                       \
        if (e_ != MPI_SUCCESS) {                                                               \
            char s_[MPI_MAX_ERROR_STRING];                                                     \
            int n_ = 0;                                                                        \
            MPI_Error_string(e_, s_, &n_);                                                     \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, s_);          \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                      \
        }                                                                                      \
    } while (0)

/* 1 when every process has a GPU; else 0, and process 0 says that `prog` skips: all skip together,
 * since none may wait in a collective for one that has gone. */
static inline int app_mpi_all_have_gpu(int rank, const char *prog)
{
    int have = app_have_gpu(), all = 0;
    MPI_CHECK(MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (!all && rank == 0) printf("%s: no usable GPU (cudaGetDeviceCount), skipped\n", prog);
    return all;
}

/* Makes GPU (rank on the node) mod (the node's GPUs) current; returns it, its SM count in *sms. */
static inline int app_mpi_bind_gpu(int rank, int *sms)
{
    MPI_Comm node;
    int lrank, ndev = 0;
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                                  &node));
    MPI_CHECK(MPI_Comm_rank(node, &lrank));
    MPI_CHECK(MPI_Comm_free(&node));
    CUDA_CHECK(cudaGetDeviceCount(&ndev));
    const int dev = lrank % ndev;
    CUDA_CHECK(cudaSetDevice(dev));
    CUDA_CHECK(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev));
    return dev;
}

#endif
