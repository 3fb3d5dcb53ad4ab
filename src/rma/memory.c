/* Memory that ranks on every GPU of the job can reach: gcomm_malloc'd and registered regions of
 * the process's GPUs. Each region gets a CUDA IPC handle when the job has several processes, so
 * that the others can map it at the next launch (launch.c). */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "common/memkind.h"
#include "rma/api_check.h"
#include "rma/runtime.h"

/* Start of the CUDA allocation that holds [ptr, ptr + bytes) (an IPC handle maps whole
 * allocations); an error when the range runs past the allocation. */
static int alloc_start(void *ptr, size_t bytes, uint64_t *start)
{
    typedef CUresult (*range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);
    static range_fn fn;
    if (!fn) {
        enum cudaDriverEntryPointQueryResult q;
        void *f = NULL;
        if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f, 12000, cudaEnableDefault,
                                             &q) != cudaSuccess || !f) {
            cudaGetLastError();
            return GCOMMI_ERROR(GCOMM_ERR_CUDA, "cuMemGetAddressRange is not available");
        }
        fn = (range_fn)f;
    }
    CUdeviceptr base = 0;
    size_t size = 0;
    if (fn(&base, &size, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "ptr = %p is not in a CUDA allocation", ptr);
    uint64_t p = (uint64_t)(uintptr_t)ptr;
    if (bytes > size - (p - (uint64_t)base))
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "ptr = %p, bytes = %zu runs %llu bytes past the end of "
                            "its allocation (%zu bytes at 0x%llx)", ptr, bytes,
                            (unsigned long long)(bytes - (size - (p - (uint64_t)base))), size,
                            (unsigned long long)base);
    *start = (uint64_t)base;
    return GCOMM_SUCCESS;
}

/* Adds [ptr, ptr + bytes) of local GPU `local` to the region table. */
static int region_add(int local, void *ptr, size_t bytes, int user_owned)
{
    gcommi_rt_t *rt = &gcommi_rt;
    gcommi_local_gpu_t *l = &rt->local[local];
    uint64_t b = (uint64_t)(uintptr_t)ptr;
    int slot = -1;
    for (int r = 0; r < GCOMMI_MAX_REGIONS; r++) {
        gcommi_region_desc_t *d = &l->regions[r];
        if (d->size == 0) {
            if (slot < 0) slot = r;
        } else if (b < d->base + d->size && d->base < b + bytes) {
            return GCOMMI_ERROR(GCOMM_ERR_ARG, "ptr = %p (%zu bytes) overlaps a region already "
                                "registered at 0x%llx", ptr, bytes, (unsigned long long)d->base);
        }
    }
    if (slot < 0)
        return GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED, "more than %d regions on device %d",
                            GCOMMI_MAX_REGIONS, l->device);
    gcommi_region_desc_t d;
    memset(&d, 0, sizeof(d));
    d.base = b;
    d.size = bytes;
    d.serial = ++rt->next_serial;
    uint64_t start = b;
    if (user_owned) GCOMMI_CHECK(alloc_start(ptr, bytes, &start)); /* within its allocation */
    if (rt->boot.size > 1) { /* other processes map it through CUDA IPC */
        cudaIpcMemHandle_t h;
        cudaError_t e = cudaIpcGetMemHandle(&h, (void *)(uintptr_t)start);
        if (e != cudaSuccess) {
            cudaGetLastError();
            return GCOMMI_ERROR(GCOMM_ERR_CUDA, "cudaIpcGetMemHandle(%p): %s", ptr,
                                cudaGetErrorString(e));
        }
        memcpy(d.ipc, &h, sizeof(h));
        d.alloc_offset = b - start;
    }
    l->regions[slot] = d;
    l->user_owned[slot] = user_owned;
    return GCOMM_SUCCESS;
}

/* The region whose base is ptr, on any local GPU: returns 0 and sets *local, *slot, else -1. */
static int region_find(const void *ptr, int *local, int *slot)
{
    for (int i = 0; i < gcommi_rt.nlocal; i++)
        for (int r = 0; r < GCOMMI_MAX_REGIONS; r++)
            if (gcommi_rt.local[i].regions[r].size &&
                gcommi_rt.local[i].regions[r].base == (uint64_t)(uintptr_t)ptr) {
                *local = i;
                *slot = r;
                return 0;
            }
    return -1;
}

int gcomm_malloc(size_t bytes, void **ptr)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(gcommi_check_malloc(bytes, ptr));
    int dev = -1;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        cudaGetLastError();
        return GCOMMI_ERROR(GCOMM_ERR_NO_DEVICE, "no current CUDA device");
    }
    pthread_mutex_lock(&gcommi_rt.lock);
    int st = GCOMM_SUCCESS, local = gcommi_rt_local_of_device(dev);
    void *p = NULL;
    if (local < 0) {
        st = GCOMMI_ERROR(GCOMM_ERR_NO_DEVICE, "the current device %d is not one gcomm drives "
                          "(GCOMM_DEVICES, gcomm_local_devices)", dev);
    } else if (cudaMalloc(&p, bytes) != cudaSuccess) {
        cudaGetLastError();
        st = GCOMMI_ERROR(GCOMM_ERR_NOMEM, "cudaMalloc of %zu bytes on device %d failed", bytes,
                          dev);
    } else if ((st = region_add(local, p, bytes, 0)) != GCOMM_SUCCESS) {
        cudaFree(p);
    } else {
        *ptr = p;
    }
    pthread_mutex_unlock(&gcommi_rt.lock);
    return st;
}

int gcomm_free(void *ptr)
{
    GCOMMI_API_ENTRY();
    if (!ptr) return GCOMM_SUCCESS;
    pthread_mutex_lock(&gcommi_rt.lock);
    int local, slot, st = GCOMM_SUCCESS;
    if (region_find(ptr, &local, &slot) || gcommi_rt.local[local].user_owned[slot]) {
        st = GCOMMI_ERROR(GCOMM_ERR_ARG, "ptr = %p was not returned by gcomm_malloc", ptr);
    } else {
        /* other processes may map it until their next launch: freed after that */
        gcommi_rt_retire(local, ptr);
        memset(&gcommi_rt.local[local].regions[slot], 0, sizeof(gcommi_region_desc_t));
    }
    pthread_mutex_unlock(&gcommi_rt.lock);
    return st;
}

int gcomm_register(void *ptr, size_t bytes)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(gcommi_check_register(ptr, bytes));
    int dev;
    if (gcommi_memkind(ptr, &dev) != GCOMMI_MEM_DEVICE)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "ptr = %p is not device memory (cudaMalloc)", ptr);
    pthread_mutex_lock(&gcommi_rt.lock);
    int local = gcommi_rt_local_of_device(dev), st;
    if (local < 0)
        st = GCOMMI_ERROR(GCOMM_ERR_NO_DEVICE, "ptr = %p is on device %d, not one gcomm drives",
                          ptr, dev);
    else
        st = region_add(local, ptr, bytes, 1);
    pthread_mutex_unlock(&gcommi_rt.lock);
    return st;
}

int gcomm_deregister(void *ptr)
{
    GCOMMI_API_ENTRY();
    pthread_mutex_lock(&gcommi_rt.lock);
    int local, slot, st = GCOMM_SUCCESS;
    if (!ptr || region_find(ptr, &local, &slot) || !gcommi_rt.local[local].user_owned[slot])
        st = GCOMMI_ERROR(GCOMM_ERR_ARG, "ptr = %p was not registered with gcomm_register", ptr);
    else
        memset(&gcommi_rt.local[local].regions[slot], 0, sizeof(gcommi_region_desc_t));
    pthread_mutex_unlock(&gcommi_rt.lock);
    return st;
}
