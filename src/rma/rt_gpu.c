/* The GPU side of the runtime: the process's devices, peer access between them, their streams,
 * and releasing everything at gcomm_finalize. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "common/memkind.h"
#include "rma/cuda_try.h"
#include "rma/rt_gpu.h"
#include "rma/runtime.h"

int gcommi_rt_gpu_count(void)
{
    return gcommi_gpu_count();
}

void gcommi_rt_gpu_pci(int device, char *out, size_t size)
{
    if (size == 0) return;
    out[0] = '\0';
    if (device < 0 || cudaDeviceGetPCIBusId(out, (int)size, device) != cudaSuccess) {
        cudaGetLastError();
        out[0] = '\0';
    }
}

int gcommi_rt_gpu_setup(gcommi_rt_t *rt)
{
    int visible = gcommi_gpu_count();
    for (int i = 0; i < rt->nlocal; i++) {
        int d = rt->local[i].device;
        if (d >= visible)
            return GCOMMI_ERROR(GCOMM_ERR_NO_DEVICE, "device %d does not exist (%d visible)", d,
                                visible);
        CUDA_TRY(cudaSetDevice(d), "cudaSetDevice");
        cudaStream_t s;
        CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
        rt->local[i].stream = s;
    }
    /* ranks of one process's GPUs store straight into each other's memory */
    for (int i = 0; i < rt->nlocal; i++)
        for (int j = 0; j < rt->nlocal; j++) {
            if (i == j) continue;
            int can = 0, d = rt->local[i].device, peer = rt->local[j].device;
            CUDA_TRY(cudaDeviceCanAccessPeer(&can, d, peer), "cudaDeviceCanAccessPeer");
            if (!can)
                return GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED,
                                    "device %d cannot reach device %d by peer access", d, peer);
            CUDA_TRY(cudaSetDevice(d), "cudaSetDevice");
            cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
            if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
            else if (e != cudaSuccess) {
                cudaGetLastError();
                return GCOMMI_ERROR(GCOMM_ERR_CUDA, "peer access %d -> %d: %s", d, peer,
                                    cudaGetErrorString(e));
            }
        }
    return GCOMM_SUCCESS;
}

void gcommi_rt_retire(int i, void *ptr)
{
    gcommi_local_gpu_t *l = &gcommi_rt.local[i];
    cudaSetDevice(l->device);
    if (gcommi_rt.boot.size == 1 || l->nretired == GCOMMI_MAX_REGIONS + 1) {
        if (l->nretired == GCOMMI_MAX_REGIONS + 1)
            GCOMM_LOG_WARN("rma", "too many allocations waiting to be freed: freeing %p now", ptr);
        cudaFree(ptr);
        cudaGetLastError();
        return;
    }
    l->retired[l->nretired++] = ptr;
}

void gcommi_rt_release(void)
{
    gcommi_rt_t *rt = &gcommi_rt;
    for (int g = 0; g < GCOMMI_MAX_GPUS; g++) {
        if (rt->seg_map[g].view) cudaIpcCloseMemHandle(rt->seg_map[g].view);
        for (int r = 0; r < GCOMMI_MAX_REGIONS; r++)
            if (rt->region_map[g][r].view) cudaIpcCloseMemHandle(rt->region_map[g][r].view);
    }
    memset(rt->seg_map, 0, sizeof(rt->seg_map));
    memset(rt->region_map, 0, sizeof(rt->region_map));
    /* nobody frees memory another process still maps (CUDA leaves that undefined) */
    if (rt->boot.size > 1 && rt->boot.barrier(&rt->boot) != GCOMM_SUCCESS)
        GCOMM_LOG_WARN("rma", "gcomm_finalize: the processes did not meet before freeing");
    for (int i = 0; i < rt->nlocal; i++) {
        gcommi_local_gpu_t *l = &rt->local[i];
        cudaSetDevice(l->device);
        for (int r = 0; r < GCOMMI_MAX_REGIONS; r++)
            if (l->regions[r].size && !l->user_owned[r])
                cudaFree((void *)(uintptr_t)l->regions[r].base);
        for (int k = 0; k < l->nretired; k++) cudaFree(l->retired[k]);
        if (l->seg) cudaFree(l->seg);
        if (l->param_dev) cudaFree(l->param_dev);
        if (l->log) cudaFreeHost(l->log);
        if (l->stream) cudaStreamDestroy((cudaStream_t)l->stream);
        memset(l, 0, sizeof(*l));
    }
    cudaGetLastError();
    rt->nlocal = 0;
}
