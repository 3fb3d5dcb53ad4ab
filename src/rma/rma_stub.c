/* The GPU side of the RMA runtime in a build without CUDA: no GPUs; memory and launches report
 * GCOMM_ERR_NO_DEVICE (host ranks, which need no GPU, come with the proxy). */
#include "common/error.h"
#include "rma/api_check.h"
#include "rma/rt_gpu.h"
#include "rma/runtime.h"

int gcommi_rt_gpu_count(void)
{
    return 0;
}

int gcommi_rt_gpu_setup(gcommi_rt_t *rt)
{
    if (rt->nlocal > 0)
        return GCOMMI_ERROR(GCOMM_ERR_NO_DEVICE, "GCOMM_DEVICES names %d device(s) but gcomm was "
                            "built without CUDA", rt->nlocal);
    return GCOMM_SUCCESS;
}

void gcommi_rt_release(void)
{
}

void gcommi_rt_gpu_pci(int device, char *out, size_t size)
{
    if (size) out[0] = '\0';
}

#define NO_GPU(name)                                                                           \
    return GCOMMI_ERROR(GCOMM_ERR_NO_DEVICE, "%s needs a GPU; gcomm was built without CUDA", name)

/* The same argument checks as the CUDA build first; then there is no GPU to use. */
int gcomm_malloc(size_t bytes, void **ptr)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(gcommi_check_malloc(bytes, ptr));
    NO_GPU("gcomm_malloc");
}

int gcomm_free(void *ptr)
{
    GCOMMI_API_ENTRY();
    if (!ptr) return GCOMM_SUCCESS;
    return GCOMMI_ERROR(GCOMM_ERR_ARG, "ptr = %p was not returned by gcomm_malloc", ptr);
}

int gcomm_register(void *ptr, size_t bytes)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(gcommi_check_register(ptr, bytes));
    NO_GPU("gcomm_register");
}

int gcomm_deregister(void *ptr)
{
    GCOMMI_API_ENTRY();
    return GCOMMI_ERROR(GCOMM_ERR_ARG, "ptr = %p was not registered with gcomm_register", ptr);
}

int gcomm_launch(const gcomm_launch_t *launch)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(gcommi_check_launch(launch)); /* no GPU in the job: GCOMM_ERR_NO_DEVICE */
    NO_GPU("gcomm_launch");
}

int gcomm_launch_max_blocks(const void *kernel, int threads_per_block, size_t shared_bytes,
                            int gpu, int *blocks)
{
    GCOMMI_API_ENTRY();
    if (!kernel || !blocks) return GCOMMI_ERROR(GCOMM_ERR_ARG, "kernel or blocks is NULL");
    NO_GPU("gcomm_launch_max_blocks");
}
