/* The GPU side of the runtime that runtime.c calls (rt_gpu.c with CUDA, rma_stub.c without). */
#ifndef GCOMM_RMA_RT_GPU_H
#define GCOMM_RMA_RT_GPU_H

#include <stddef.h>

#include "rma/runtime.h"

/* Visible CUDA devices (0 without a usable GPU). */
int gcommi_rt_gpu_count(void);
/* Checks the process's devices, makes them reach each other (peer access) and creates their
 * streams. */
int gcommi_rt_gpu_setup(gcommi_rt_t *rt);

/* A string that names the physical GPU behind CUDA device `device` (its PCI address), so that
 * processes can tell whether they drive the same one; "" when unknown. */
void gcommi_rt_gpu_pci(int device, char *out, size_t size);

#endif /* GCOMM_RMA_RT_GPU_H */
