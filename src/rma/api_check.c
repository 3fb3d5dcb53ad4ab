/* Argument checks of the notified-RMA host API, shared by the CUDA runtime (launch.c, memory.c)
 * and the build without CUDA (rma_stub.c), so both answer a bad argument the same way. */
#include "common/error.h"
#include "rma/api_check.h"
#include "rma/runtime.h"

int gcommi_check_launch(const gcomm_launch_t *launch)
{
    if (!launch) return GCOMMI_ERROR(GCOMM_ERR_ARG, "launch is NULL");
    if (!gcommi_rt.initialized) return GCOMMI_ERROR(GCOMM_ERR_ARG, "gcomm is not initialised");
    if (!launch->kernel) return GCOMMI_ERROR(GCOMM_ERR_ARG, "launch->kernel is NULL");
    if (launch->threads_per_block < 1 || launch->threads_per_block > 1024)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "launch->threads_per_block = %d (1..1024)",
                            launch->threads_per_block);
    if (launch->blocks_per_gpu < 0)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "launch->blocks_per_gpu = %d is negative",
                            launch->blocks_per_gpu);
    if (gcommi_rt.ngpus == 0) return GCOMMI_ERROR(GCOMM_ERR_NO_DEVICE, "no GPU in the job");
    return GCOMM_SUCCESS;
}

int gcommi_check_malloc(size_t bytes, void **ptr)
{
    if (!ptr) return GCOMMI_ERROR(GCOMM_ERR_ARG, "ptr is NULL");
    if (!gcommi_rt.initialized) return GCOMMI_ERROR(GCOMM_ERR_ARG, "gcomm is not initialised");
    if (bytes == 0) return GCOMMI_ERROR(GCOMM_ERR_ARG, "bytes = 0");
    return GCOMM_SUCCESS;
}

int gcommi_check_register(const void *ptr, size_t bytes)
{
    if (!ptr || bytes == 0) return GCOMMI_ERROR(GCOMM_ERR_ARG, "ptr = %p, bytes = %zu", ptr, bytes);
    if (!gcommi_rt.initialized) return GCOMMI_ERROR(GCOMM_ERR_ARG, "gcomm is not initialised");
    return GCOMM_SUCCESS;
}
