/* GPU datatype kernels, one per plan kind (gpu_plan.h), each instantiated for the access widths
 * 1, 2, 4, 8 and 16 bytes (a bounded family: 4 kinds x 5 widths, independent of nesting depth).
 *
 * - strided: runs of a nested-vector shape; a thread per packed word for short runs (coalesced on
 *   the packed side), a warp per piece of a run for long ones.
 * - units:   a warp per work unit (typed offset, packed offset, length <= 4 KB) of an irregular
 *   type; the unit list is computed once per type on the host.
 * - point:   a thread per word, located independently in the layout (gcommi_dl_locate): any type.
 * - relayout: a thread per word located in two layouts (gcomm_copy in one pass).
 * All kernels take a byte range [offset, offset + bytes) of the packed stream and grid-stride over
 * it; `pack` selects the direction (uniform across the grid, so the branch costs nothing). */
#include <cuda_runtime.h>
#include <stdint.h>

#include "datatype/gpu_plan.h"

#define GCOMMI_THREADS 256
#define GCOMMI_WARP 32
#ifndef GCOMMI_UNROLL
#define GCOMMI_UNROLL 4 /* independent words per thread and iteration */
#endif

/* Word types by width. */
#define GCOMMI_WORD_1 uint8_t
#define GCOMMI_WORD_2 uint16_t
#define GCOMMI_WORD_4 uint32_t
#define GCOMMI_WORD_8 uint2
#define GCOMMI_WORD_16 uint4

/* Offset of run r of a strided plan, the instance level outermost. 64-bit integer division is
 * emulated on the GPU (dozens of instructions); when the run index fits 32 bits (`narrow`, decided
 * once per launch) the 32-bit hardware path is used instead. */
static __device__ __forceinline__ int64_t strided_offset(const gcommi_gpu_plan_t &p, int64_t r,
                                                         int narrow)
{
    int64_t off = p.disp;
    if (narrow) {
        uint32_t q32 = (uint32_t)r;
        for (int k = p.ndims - 1; k >= 0; k--) {
            uint32_t c = (uint32_t)p.counts[k];
            uint32_t q = q32 / c;
            off += (int64_t)(q32 - q * c) * p.strides[k];
            q32 = q;
        }
        return off + (int64_t)q32 * p.extent;
    }
    for (int k = p.ndims - 1; k >= 0; k--) {
        int64_t c = p.counts[k];
        int64_t q = r / c;
        off += (r - q * c) * p.strides[k];
        r = q;
    }
    return off + r * p.extent;
}

/* Address of packed word w (of `width` bytes, wpr words per run) in typed memory. */
static __device__ __forceinline__ char *strided_word_addr(const gcommi_gpu_plan_t &p, char *typed,
                                                          int64_t w, int64_t wpr, int width,
                                                          int narrow)
{
    int64_t r, j;
    if (narrow) {
        uint32_t q = (uint32_t)w / (uint32_t)wpr;
        r = q;
        j = (int64_t)((uint32_t)w - q * (uint32_t)wpr);
    } else {
        r = w / wpr;
        j = w - r * wpr;
    }
    return typed + strided_offset(p, r, narrow) + j * width;
}

/* dst[i] = src[i] for i = start, start + step, ... < n, four loads in flight per thread so that
 * enough memory requests are outstanding to approach the bandwidth. */
#define GCOMMI_COPY_STRIDED(T, dst, src, start, n, step)                                       \
    do {                                                                                       \
        T *__restrict__ d_ = (dst);                                                            \
        const T *__restrict__ s_ = (src);                                                      \
        int64_t i_ = (start);                                                                  \
        for (; i_ + 3 * (step) < (n); i_ += 4 * (step)) {                                      \
            T a_ = s_[i_], b_ = s_[i_ + (step)], c_ = s_[i_ + 2 * (step)], e_ = s_[i_ + 3 * (step)]; \
            d_[i_] = a_;                                                                       \
            d_[i_ + (step)] = b_;                                                              \
            d_[i_ + 2 * (step)] = c_;                                                          \
            d_[i_ + 3 * (step)] = e_;                                                          \
        }                                                                                      \
        for (; i_ < (n); i_ += (step)) d_[i_] = s_[i_];                                        \
    } while (0)

#define GCOMMI_DEFINE_KERNELS(W)                                                               \
    typedef GCOMMI_WORD_##W word##W##_t;                                                       \
                                                                                               \
    /* A thread per word (short runs): consecutive threads take consecutive words of the       \
     * packed stream, so the packed side is fully coalesced and each run is read by adjacent     \
     * lanes. Each thread moves GCOMMI_UNROLL words a grid stride apart, loads first, so that     \
     * several independent requests are in flight per thread. */                               \
    __global__ void strided_word_##W(gcommi_gpu_plan_t p, char *typed, int64_t offset,         \
                                     int64_t bytes, char *packed, int pack, int narrow)        \
    {                                                                                          \
        int64_t wpr = p.run / W, w0 = offset / W, n = bytes / W;                               \
        int64_t grid = (int64_t)gridDim.x * blockDim.x;                                        \
        word##W##_t *kp = (word##W##_t *)packed;                                               \
        for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;                \
             i += GCOMMI_UNROLL * grid) {                                                      \
            word##W##_t *t[GCOMMI_UNROLL];                                                     \
            word##W##_t v[GCOMMI_UNROLL];                                                      \
            _Pragma("unroll") for (int u = 0; u < GCOMMI_UNROLL; u++) {                        \
                int64_t ii = i + u * grid;                                                     \
                if (ii >= n) ii = i; /* past the end: repeat word i (harmless, same value) */  \
                t[u] = (word##W##_t *)strided_word_addr(p, typed, w0 + ii, wpr, W, narrow);    \
            }                                                                                  \
            if (pack) {                                                                        \
                _Pragma("unroll") for (int u = 0; u < GCOMMI_UNROLL; u++) v[u] = *t[u];        \
                _Pragma("unroll") for (int u = 0; u < GCOMMI_UNROLL; u++)                      \
                    if (i + u * grid < n) kp[i + u * grid] = v[u];                             \
            } else {                                                                           \
                _Pragma("unroll") for (int u = 0; u < GCOMMI_UNROLL; u++)                      \
                    v[u] = kp[i + u * grid < n ? i + u * grid : i];                            \
                _Pragma("unroll") for (int u = 0; u < GCOMMI_UNROLL; u++)                      \
                    if (i + u * grid < n) *t[u] = v[u];                                        \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    /* The same, one word per thread and iteration: for nested shapes, where computing several \
     * words' addresses up front (a division per level each) costs more than it hides. */      \
    __global__ void strided_word1_##W(gcommi_gpu_plan_t p, char *typed, int64_t offset,        \
                                      int64_t bytes, char *packed, int pack, int narrow)       \
    {                                                                                          \
        int64_t wpr = p.run / W, w0 = offset / W, n = bytes / W;                               \
        for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;                \
             i += (int64_t)gridDim.x * blockDim.x) {                                           \
            word##W##_t *t = (word##W##_t *)strided_word_addr(p, typed, w0 + i, wpr, W, narrow);  \
            word##W##_t *k = (word##W##_t *)packed + i;                                        \
            if (pack) *k = *t;                                                                 \
            else *t = *k;                                                                      \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    /* A warp per piece of a run (long runs, cut in pieces of at most GCOMMI_GPU_UNIT_MAX     \
     * bytes so that a few long runs still spread over the GPU): lanes copy consecutive words. */ \
    __global__ void strided_warp_##W(gcommi_gpu_plan_t p, char *typed, int64_t offset,         \
                                     int64_t bytes, char *packed, int pack, int narrow)        \
    {                                                                                          \
        int lane = threadIdx.x % GCOMMI_WARP;                                                  \
        int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / GCOMMI_WARP;         \
        int64_t warps = (int64_t)gridDim.x * blockDim.x / GCOMMI_WARP;                         \
        int64_t pieces = (p.run + GCOMMI_GPU_UNIT_MAX - 1) / GCOMMI_GPU_UNIT_MAX;              \
        int64_t r0 = offset / p.run, r1 = (offset + bytes + p.run - 1) / p.run;                \
        for (int64_t g = r0 * pieces + warp; g < r1 * pieces; g += warps) {                    \
            int64_t r = pieces == 1 ? g : g / pieces;                                          \
            int64_t c = (g - r * pieces) * GCOMMI_GPU_UNIT_MAX;                                \
            int64_t p0 = r * p.run;                                                            \
            int64_t lo = max(offset, p0 + c) - p0;                                             \
            int64_t hi = min(min(offset + bytes, p0 + p.run), p0 + c + GCOMMI_GPU_UNIT_MAX) - p0; \
            if (hi <= lo) continue;                                                            \
            word##W##_t *t = (word##W##_t *)(typed + strided_offset(p, r, narrow) + lo);       \
            word##W##_t *k = (word##W##_t *)(packed + (p0 + lo - offset));                     \
            int64_t n = (hi - lo) / W;                                                         \
            if (pack) GCOMMI_COPY_STRIDED(word##W##_t, k, t, lane, n, GCOMMI_WARP);             \
            else GCOMMI_COPY_STRIDED(word##W##_t, t, k, lane, n, GCOMMI_WARP);                  \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    /* A warp per work unit. The width W divides every unit here (checked on the host). */     \
    __global__ void units_##W(gcommi_gpu_plan_t p, char *typed, int64_t offset, int64_t bytes, \
                              char *packed, int pack, int64_t g0, int64_t g1)                  \
    {                                                                                          \
        int lane = threadIdx.x % GCOMMI_WARP;                                                  \
        int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / GCOMMI_WARP;         \
        int64_t warps = (int64_t)gridDim.x * blockDim.x / GCOMMI_WARP;                         \
        for (int64_t g = g0 + warp; g < g1; g += warps) {                                      \
            int64_t inst = g / p.nunits, u = g - inst * p.nunits;                              \
            const int64_t *unit = p.units + 3 * u;                                             \
            int64_t p0 = inst * p.size + unit[1], len = unit[2];                               \
            int64_t lo = max(offset, p0) - p0, hi = min(offset + bytes, p0 + len) - p0;        \
            if (hi <= lo) continue;                                                            \
            word##W##_t *t = (word##W##_t *)(typed + inst * p.extent + unit[0] + lo);          \
            word##W##_t *k = (word##W##_t *)(packed + (p0 + lo - offset));                     \
            int64_t n = (hi - lo) / W;                                                         \
            if (pack) GCOMMI_COPY_STRIDED(word##W##_t, k, t, lane, n, GCOMMI_WARP);             \
            else GCOMMI_COPY_STRIDED(word##W##_t, t, k, lane, n, GCOMMI_WARP);                  \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    /* A thread per word, located in the layout. */                                            \
    __global__ void point_##W(gcommi_gpu_plan_t p, char *typed, int64_t offset, int64_t bytes, \
                              char *packed, int pack)                                          \
    {                                                                                          \
        int64_t n = bytes / W;                                                                 \
        for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;                \
             i += (int64_t)gridDim.x * blockDim.x) {                                           \
            int64_t b = offset + i * W, inst = b / p.size, contig;                             \
            int64_t off = inst * p.extent +                                                    \
                          gcommi_dl_locate(p.nodes, p.aux, 0, b - inst * p.size, &contig);     \
            word##W##_t *t = (word##W##_t *)(typed + off);                                     \
            word##W##_t *k = (word##W##_t *)(packed + i * W);                                  \
            if (pack) *k = *t;                                                                 \
            else *t = *k;                                                                      \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    /* A thread per word, located in both layouts. */                                          \
    __global__ void relayout_##W(gcommi_gpu_plan_t ps, const char *s, gcommi_gpu_plan_t pd,    \
                                 char *d, int64_t bytes)                                       \
    {                                                                                          \
        int64_t n = bytes / W;                                                                 \
        for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;                \
             i += (int64_t)gridDim.x * blockDim.x) {                                           \
            int64_t b = i * W, c;                                                              \
            int64_t is = b / ps.size, id = b / pd.size;                                        \
            int64_t so = is * ps.extent + gcommi_dl_locate(ps.nodes, ps.aux, 0, b - is * ps.size, &c); \
            int64_t dof = id * pd.extent + gcommi_dl_locate(pd.nodes, pd.aux, 0, b - id * pd.size, &c); \
            *(word##W##_t *)(d + dof) = *(const word##W##_t *)(s + so);                        \
        }                                                                                      \
    }

GCOMMI_DEFINE_KERNELS(1)
GCOMMI_DEFINE_KERNELS(2)
GCOMMI_DEFINE_KERNELS(4)
GCOMMI_DEFINE_KERNELS(8)
GCOMMI_DEFINE_KERNELS(16)

static int grid_for(int64_t items_per_block_unit, int64_t items, int max_blocks)
{
    int64_t blocks = (items + items_per_block_unit - 1) / items_per_block_unit;
    if (blocks < 1) blocks = 1;
    if (blocks > max_blocks) blocks = max_blocks;
    return (int)blocks;
}

/* Dispatch by width: expands to a switch calling NAME_<W><<<grid, GCOMMI_THREADS, 0, st>>>(ARGS). */
#define GCOMMI_LAUNCH(NAME, width, grid, st, ...)                                              \
    switch (width) {                                                                           \
    case 16: NAME##_16<<<grid, GCOMMI_THREADS, 0, st>>>(__VA_ARGS__); break;                   \
    case 8: NAME##_8<<<grid, GCOMMI_THREADS, 0, st>>>(__VA_ARGS__); break;                     \
    case 4: NAME##_4<<<grid, GCOMMI_THREADS, 0, st>>>(__VA_ARGS__); break;                     \
    case 2: NAME##_2<<<grid, GCOMMI_THREADS, 0, st>>>(__VA_ARGS__); break;                     \
    default: NAME##_1<<<grid, GCOMMI_THREADS, 0, st>>>(__VA_ARGS__); break;                    \
    }

extern "C" int gcommi_gpu_launch(const gcommi_gpu_plan_t *p, char *typed, int64_t offset,
                                 int64_t bytes, char *packed, int pack, int width, int max_blocks,
                                 void *stream)
{
    cudaStream_t st = (cudaStream_t)stream;
    const int64_t warps_per_block = GCOMMI_THREADS / GCOMMI_WARP;
    switch (p->kind) {
    case GCOMMI_PLAN_STRIDED: {
        int64_t r1 = (offset + bytes + p->run - 1) / p->run;
        int64_t runs = r1 - offset / p->run;
        /* 32-bit index arithmetic when every word index (+ the grid stride) fits. */
        int64_t w1 = (offset + bytes) / width;
        int narrow = w1 + (int64_t)max_blocks * GCOMMI_THREADS < ((int64_t)1 << 32);
        for (int k = 0; k < p->ndims; k++) narrow &= p->counts[k] < ((int64_t)1 << 32);
        /* Fewer words than lanes: a thread per word. Measured on an H200: a vector of 64-byte
         * runs packs at 88% of cudaMemcpy with 4 words per thread in flight, 77% with one; a 4-D
         * subarray of 256-byte runs (3 divisions per word) at 2680 GB/s with one word per thread,
         * 1050 GB/s with 4 and 1100 GB/s with a warp per run. */
        if (p->run < GCOMMI_WARP * width && p->ndims <= 1) {
            int grid = grid_for(GCOMMI_THREADS, bytes / width, max_blocks);
            GCOMMI_LAUNCH(strided_word, width, grid, st, *p, typed, offset, bytes, packed, pack,
                          narrow);
        } else if (p->run < GCOMMI_WARP * width) {
            int grid = grid_for(GCOMMI_THREADS, bytes / width, max_blocks);
            GCOMMI_LAUNCH(strided_word1, width, grid, st, *p, typed, offset, bytes, packed, pack,
                          narrow);
        } else {
            int64_t pieces = (p->run + GCOMMI_GPU_UNIT_MAX - 1) / GCOMMI_GPU_UNIT_MAX;
            int grid = grid_for(warps_per_block, runs * pieces, max_blocks);
            GCOMMI_LAUNCH(strided_warp, width, grid, st, *p, typed, offset, bytes, packed, pack,
                          narrow);
        }
        break;
    }
    case GCOMMI_PLAN_UNITS: {
        /* Units are in packed order within an instance, so the range covers instances
         * [offset / size, (offset + bytes - 1) / size]; clamping skips units outside it. */
        int64_t g0 = (offset / p->size) * p->nunits;
        int64_t g1 = ((offset + bytes - 1) / p->size + 1) * p->nunits;
        int grid = grid_for(warps_per_block, g1 - g0, max_blocks);
        GCOMMI_LAUNCH(units, width, grid, st, *p, typed, offset, bytes, packed, pack, g0, g1);
        break;
    }
    default: {
        int grid = grid_for(GCOMMI_THREADS, bytes / width, max_blocks);
        GCOMMI_LAUNCH(point, width, grid, st, *p, typed, offset, bytes, packed, pack);
        break;
    }
    }
    return (int)cudaGetLastError();
}

extern "C" int gcommi_gpu_launch_relayout(const gcommi_gpu_plan_t *src, const char *s,
                                          const gcommi_gpu_plan_t *dst, char *d, int64_t bytes,
                                          int width, int max_blocks, void *stream)
{
    cudaStream_t st = (cudaStream_t)stream;
    int grid = grid_for(GCOMMI_THREADS, bytes / width, max_blocks);
    GCOMMI_LAUNCH(relayout, width, grid, st, *src, s, *dst, d, bytes);
    return (int)cudaGetLastError();
}
