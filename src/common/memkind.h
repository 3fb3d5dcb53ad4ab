/* Where a pointer points: pageable host memory, pinned host memory that kernels can reach, device
 * memory (and which device), or managed memory. Answered by the CUDA runtime in a CUDA build with
 * a usable driver; everything is host memory otherwise (memkind_stub.c). */
#ifndef GCOMM_COMMON_MEMKIND_H
#define GCOMM_COMMON_MEMKIND_H

typedef enum {
    GCOMMI_MEM_HOST = 0,        /* pageable host memory: only the CPU may touch it */
    GCOMMI_MEM_HOST_PINNED = 1, /* page-locked, mapped: the CPU and kernels may touch it */
    GCOMMI_MEM_DEVICE = 2,      /* device memory of `device` */
    GCOMMI_MEM_MANAGED = 3      /* managed memory: the CPU and kernels may touch it */
} gcommi_memkind_t;

/* Kind of memory at p; *device is the owning device for DEVICE/MANAGED memory, -1 otherwise.
 * Never fails: a pointer CUDA does not know is host memory. */
gcommi_memkind_t gcommi_memkind(const void *p, int *device);

/* Number of usable GPUs (0 without a driver or device); evaluated once. */
int gcommi_gpu_count(void);

#endif /* GCOMM_COMMON_MEMKIND_H */
