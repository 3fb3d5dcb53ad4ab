/* How the GPU engine moves one committed type: the plan chosen from the layout's shape, and the
 * kernel launchers (gpu_kernels.cu). Shared by C host code and CUDA code. */
#ifndef GCOMM_DATATYPE_GPU_PLAN_H
#define GCOMM_DATATYPE_GPU_PLAN_H

#include <stdint.h>

#include "datatype/layout.h"

#define GCOMMI_GPU_MAX_DIMS 3 /* VEC levels inside one instance for the strided kernel */
#define GCOMMI_GPU_UNIT_MAX 4096 /* bytes per work unit of the irregular kernel */

typedef enum {
    GCOMMI_PLAN_CONTIG,  /* one run per instance that abuts the next: a plain copy */
    GCOMMI_PLAN_STRIDED, /* up to GCOMMI_GPU_MAX_DIMS nested vectors over one run length */
    GCOMMI_PLAN_UNITS,   /* irregular but long runs: a precomputed list of (typed, packed, len) */
    GCOMMI_PLAN_POINT    /* anything else: every word located independently in the layout */
} gcommi_plan_kind_t;

typedef struct {
    int32_t kind;
    int32_t ndims;                         /* STRIDED: levels, outermost first */
    int64_t counts[GCOMMI_GPU_MAX_DIMS];
    int64_t strides[GCOMMI_GPU_MAX_DIMS];
    int64_t run;                           /* STRIDED: bytes of one contiguous run */
    int64_t disp;                          /* STRIDED, CONTIG: first byte from the origin */
    int64_t size, extent;                  /* packed bytes and extent of one instance */
    int64_t align;                         /* largest power of two <= 16 dividing every typed
                                              offset and run length of the plan */
    int64_t point_align;                   /* the same for word-by-word location (relayout) */
    int64_t nunits;                        /* UNITS: units per instance */
    const int64_t *units;                  /* UNITS, device: nunits x {typed, packed, len} */
    const gcommi_dl_t *nodes;              /* POINT, device copy of the layout */
    const int64_t *aux;
    int32_t sms;                           /* multiprocessors of the device */
    int32_t device;
} gcommi_gpu_plan_t;

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueue the copy of packed bytes [offset, offset + bytes) (pack: typed -> packed). width is the
 * access size in bytes (1, 2, 4, 8 or 16), dividing the offsets of both sides. Returns a
 * cudaError_t. */
int gcommi_gpu_launch(const gcommi_gpu_plan_t *p, char *typed, int64_t offset, int64_t bytes,
                      char *packed, int pack, int width, int max_blocks, void *stream);
/* Enqueue a copy of `bytes` packed bytes from layout `src` (at s) to layout `dst` (at d). */
int gcommi_gpu_launch_relayout(const gcommi_gpu_plan_t *src, const char *s,
                               const gcommi_gpu_plan_t *dst, char *d, int64_t bytes, int width,
                               int max_blocks, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GCOMM_DATATYPE_GPU_PLAN_H */
