/* The RMA test bodies (rank_bodies.h) as kernels: every GPU block runs one rank. Shared by
 * test_rma_device (one process drives every GPU) and test_rma_mpi (one MPI process per GPU). */
#ifndef GCOMM_TESTS_RMA_TEST_KERNELS_CUH
#define GCOMM_TESTS_RMA_TEST_KERNELS_CUH

#include <stdio.h>
#include <stdlib.h>

#include "gcomm/device.cuh"
#include "../gpu/gpu_testutil.h" /* CUDA_OK */
#include "rank_bodies.h"


__global__ void k_ring(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    body_ring(param, buf, errs);
}

__global__ void k_gather(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    body_gather(param, buf, errs);
}

__global__ void k_get(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    body_get(param, buf, errs);
}

__global__ void k_overlap(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    body_overlap(param, buf, errs);
}

__global__ void k_stress(gcomm_param_t param, uint64_t *buf, long per_sender, const long *expect,
                         unsigned *errs)
{
    body_stress(param, buf, per_sender, expect, errs);
}

__global__ void k_typed(gcomm_param_t param, double *buf, unsigned *errs, gcomm_device_type_t col,
                        gcomm_device_type_t dbl, gcomm_device_type_t rev, gcomm_device_type_t row)
{
    body_typed(param, buf, errs, col, dbl, rev, row);
}

__global__ void k_typed_bad(gcomm_param_t param, double *buf, unsigned *errs,
                            gcomm_device_type_t col, gcomm_device_type_t dbl,
                            gcomm_device_type_t rev, int mode)
{
    body_typed_bad(param, buf, errs, col, dbl, rev, mode);
}

__global__ void k_flush(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    body_flush(param, buf, errs);
}

__global__ void k_inline(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    body_inline(param, buf, errs);
}

__global__ void k_flushinl(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    body_flushinl(param, buf, errs);
}

__global__ void k_rewin(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    body_rewin(param, buf, errs);
}

__global__ void k_inline_nowait(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    body_inline_nowait(param, buf, errs);
}

__global__ void k_outside(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    body_outside(param, buf, errs);
}

__global__ void k_never(gcomm_param_t param, unsigned *errs)
{
    body_never(param, errs);
}

#endif /* GCOMM_TESTS_RMA_TEST_KERNELS_CUH */
