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

/* 1 when p is known to be host memory without asking CUDA: always without a usable GPU; with one,
 * when p lies in the process's heap, between the program break at exec and the current one. Only
 * malloc's brk heap grows there, and the CUDA driver maps device, managed and its own pinned
 * memory elsewhere (a mapping above the break would stop the heap from growing into it). Whether
 * such memory was registered (cudaHostRegister) is not told: callers take it only to choose the
 * CPU path when both sides are host memory. A CUDA query for host memory costs 170-210 ns on an
 * H200 machine's host (cudaPointerGetAttributes, cuPointerGetAttributes; 2026-11-30), three
 * times a 1 KiB pack. 0 means "ask gcommi_memkind". */
int gcommi_memkind_known_host(const void *p);

/* Number of usable GPUs (0 without a driver or device); evaluated once. */
int gcommi_gpu_count(void);

#endif /* GCOMM_COMMON_MEMKIND_H */
