/* Pointer kinds through the CUDA runtime (C API). The runtime is statically linked and loads the
 * driver lazily, so on a machine without a GPU or driver the first call fails and every pointer
 * is then host memory, without further CUDA calls. */
#include <cuda_runtime_api.h>
#include <pthread.h>

#include "common/log.h"
#include "common/memkind.h"

static int gcommi_ngpus;
static pthread_once_t gcommi_gpu_once = PTHREAD_ONCE_INIT;

static void gpu_probe(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        GCOMM_LOG_INFO("gpu", "no usable GPU (%s): host paths only", cudaGetErrorString(e));
        cudaGetLastError(); /* clear the sticky-free error state */
        n = 0;
    }
    gcommi_ngpus = n;
}

int gcommi_gpu_count(void)
{
    pthread_once(&gcommi_gpu_once, gpu_probe);
    return gcommi_ngpus;
}

gcommi_memkind_t gcommi_memkind(const void *p, int *device)
{
    *device = -1;
    if (!p || gcommi_gpu_count() == 0) return GCOMMI_MEM_HOST;
    struct cudaPointerAttributes attr;
    if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
        cudaGetLastError();
        return GCOMMI_MEM_HOST;
    }
    switch (attr.type) {
    case cudaMemoryTypeDevice: *device = attr.device; return GCOMMI_MEM_DEVICE;
    case cudaMemoryTypeManaged: *device = attr.device; return GCOMMI_MEM_MANAGED;
    case cudaMemoryTypeHost:
        /* Registered without cudaHostRegisterMapped, a host pointer may have no device address. */
        return attr.devicePointer == p ? GCOMMI_MEM_HOST_PINNED : GCOMMI_MEM_HOST;
    default: return GCOMMI_MEM_HOST;
    }
}
