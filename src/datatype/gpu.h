/* The GPU datatype engine's interface to the rest of the library (pack.c). In a build without
 * CUDA, gpu_stub.c implements it and reports GCOMM_ERR_NO_DEVICE. */
#ifndef GCOMM_DATATYPE_GPU_H
#define GCOMM_DATATYPE_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "gcomm/datatype.h"

/* Copies bytes [offset, offset + bytes) of the packed stream of a committed type between typed
 * memory (instance 0's origin at `typed`) and `packed` (pack != 0: typed -> packed) with a kernel
 * on `device`, enqueued on `stream` (a cudaStream_t; NULL: the legacy default stream). Both
 * pointers must be reachable by kernels on that device (device, managed or mapped pinned host
 * memory). max_blocks > 0 limits the kernel's grid (0: the configured default). Does not wait
 * for completion. */
int gcommi_gpu_copy(gcomm_datatype type, int device, char *typed, size_t offset, size_t bytes,
                    char *packed, int pack, void *stream, int max_blocks);

/* Copies `bytes` bytes of the packed stream from one layout to another in one kernel (gcomm_copy):
 * the packed stream never exists in memory. Enqueued on `stream`. */
int gcommi_gpu_relayout(gcomm_datatype srctype, const char *src, gcomm_datatype dsttype,
                        char *dst, size_t bytes, int device, void *stream);

/* The device copy of a committed type's layout on `device` (uploaded on first use) and the widest
 * aligned access of a word-by-word traversal: what gcomm_type_device hands to kernels. */
int gcommi_gpu_type_view(gcomm_datatype type, int device, const void **nodes, const int64_t **aux,
                         int64_t *align);

/* Frees the device copies of a type (called when the type is destroyed). */
void gcommi_gpu_type_release(gcomm_datatype type);

/* Stream-ordered staging and synchronisation for the pack.c paths that cross pageable memory. */
int gcommi_gpu_alloc(int device, size_t bytes, void *stream, void **ptr);
int gcommi_gpu_free(int device, void *ptr, void *stream);
/* dir: 0 host -> device, 1 device -> host; completes before returning (pageable memory). */
int gcommi_gpu_memcpy_sync(int device, void *dst, const void *src, size_t bytes, int dir,
                           void *stream);
int gcommi_gpu_sync(int device, void *stream);
/* Lets kernels on `device` reach the memory of `peer` (once; GCOMM_ERR_UNSUPPORTED if the link
 * does not allow it). */
int gcommi_gpu_enable_peer(int device, int peer);

#endif /* GCOMM_DATATYPE_GPU_H */
