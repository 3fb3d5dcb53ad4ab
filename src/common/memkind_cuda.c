/* Pointer kinds through the CUDA runtime (C API). The runtime is statically linked and loads the
 * driver lazily, so on a machine without a GPU or driver the first call fails and every pointer
 * is then host memory, without further CUDA calls. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/memkind.h"

static int gcommi_ngpus;
static uintptr_t gcommi_heap_start; /* the program break at exec; 0: unknown */
static pthread_once_t gcommi_gpu_once = PTHREAD_ONCE_INIT;
/* Set once the probe is done. Every host pack asks gcommi_gpu_count (through
 * gcommi_memkind_known_host): after the probe one acquiring load, not a call into libc. */
static int gcommi_gpu_probed;

/* start_brk, field 47 of /proc/self/stat (Linux 3.5 and later); 0 when it cannot be read. The
 * second field, the command's name in parentheses, may hold spaces: count from the last ')'. */
static uintptr_t read_start_brk(void)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *q = strrchr(buf, ')');
    if (!q) return 0;
    q++;
    for (int field = 3;; field++) { /* q: before field `field` */
        while (*q == ' ') q++;
        if (!*q) return 0;
        if (field == 47) return (uintptr_t)strtoull(q, NULL, 10);
        while (*q && *q != ' ') q++;
    }
}

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
    if (n > 0) gcommi_heap_start = read_start_brk();
    __atomic_store_n(&gcommi_gpu_probed, 1, __ATOMIC_RELEASE);
}

int gcommi_gpu_count(void)
{
    if (__builtin_expect(!__atomic_load_n(&gcommi_gpu_probed, __ATOMIC_ACQUIRE), 0))
        pthread_once(&gcommi_gpu_once, gpu_probe);
    return gcommi_ngpus;
}

int gcommi_memkind_known_host(const void *p)
{
    if (gcommi_gpu_count() == 0) return 1;
    const uintptr_t a = (uintptr_t)p;
    return gcommi_heap_start && a >= gcommi_heap_start && a < (uintptr_t)sbrk(0);
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
