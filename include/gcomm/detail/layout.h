/* The committed ("normalised") form of a datatype: what pack, unpack and the GPU kernels read.
 * (Public because device code reads it too: typed transfers of the device API; internal all
 * the same: user code never touches these fields.)
 *
 * A layout is a small tree of nodes stored in preorder in one array, with the variable-length
 * arrays (block displacements, prefix sums, member lists) in a separate int64 "lookaside" array.
 * Links are indices, never pointers, so the whole layout is position independent: the GPU engine
 * copies it to device memory as it is, and a block can load the node array into shared memory.
 *
 * Node kinds (one instance of a node describes `size` packed bytes whose first byte in memory is
 * `disp` bytes from the instance origin, plus the child's own disp):
 *   RUN  `size` contiguous bytes.
 *   VEC  `count` children; child i at disp + i * stride.
 *   IDX  `count` blocks over one child; block b holds prefix[b+1] - prefix[b] children starting at
 *        disp + displs[b], spaced by `stride` (the child's extent). prefix[] counts children.
 *   SEQ  `count` members, each a node of its own (a struct with differently shaped members);
 *        member m covers packed bytes [prefix[m], prefix[m+1]).
 * An IDX node whose block displacements and block lengths both step by a constant (a triangular
 * or banded matrix's rows: lengths that grow or shrink by the same count from row to row) carries
 * GCOMMI_DL_AFFINE in `flags`: the host engine then computes the blocks' places and lengths
 * instead of reading them (pack_host.c). The arrays stay: ranges and the GPU locate through them.
 * Every node records child_size (packed bytes of one child) and `unit`, the largest basic element
 * size that divides every run below it, so child_size / unit is the number of elements per child
 * and any byte (or element) of the packed stream is located independently: divide by child_size
 * at VEC nodes, binary-search prefix[] at IDX and SEQ nodes (point-based traversal).
 *
 * Normalisation (commit.c) merges adjacent blocks, folds contiguous runs (a vector whose stride
 * equals its block, a struct whose members abut), folds nested vectors whose outer stride spans the
 * inner one, turns regular indexed/struct shapes into vectors, and drops empty parts. */
#ifndef GCOMM_DETAIL_LAYOUT_H
#define GCOMM_DETAIL_LAYOUT_H

#include <stdint.h>

#include "gcomm/detail/hd.h"

typedef enum {
    GCOMMI_DL_RUN = 0,
    GCOMMI_DL_VEC = 1,
    GCOMMI_DL_IDX = 2,
    GCOMMI_DL_SEQ = 3
} gcommi_dl_kind_t;

#define GCOMMI_DL_AFFINE 1u /* flags of an IDX node: displs[] and the block lengths step evenly */

typedef struct {
    int16_t kind;       /* gcommi_dl_kind_t */
    uint16_t flags;     /* GCOMMI_DL_AFFINE */
    int32_t child;      /* VEC, IDX: node index of the child; -1 otherwise */
    int64_t count;      /* VEC: children; IDX: blocks; SEQ: members; RUN: 1 */
    int64_t disp;       /* bytes from the instance origin to this node's origin */
    int64_t size;       /* packed bytes of one instance */
    int64_t stride;     /* VEC: bytes between children; IDX: bytes between children in a block */
    int64_t child_size; /* VEC, IDX: packed bytes of one child; RUN: size */
    int64_t unit;       /* largest basic element size dividing every run below */
    int64_t aux;        /* IDX: aux[aux..] = displs[count], prefix[count+1]
                           SEQ: aux[aux..] = prefix[count+1] (bytes), member[count] (node index) */
} gcommi_dl_t;

#define GCOMMI_LAYOUT_VERSION 2

typedef struct {
    int32_t version;    /* GCOMMI_LAYOUT_VERSION: device copies check it */
    int32_t nnodes;     /* nodes[0] is the root */
    int32_t depth;      /* longest root-to-RUN path, in nodes */
    int32_t reserved;
    int64_t naux;
    int64_t size;       /* packed bytes of one instance of the type */
    int64_t extent;     /* distance between consecutive instances */
    int64_t nruns;      /* contiguous pieces in one instance (after merging) */
    gcommi_dl_t *nodes; /* points into this allocation */
    int64_t *aux;       /* points into this allocation */
} gcommi_layout_t;

/* Index of the block of an IDX/SEQ node that holds item `k` (0 <= k < prefix[count]): the largest b
 * with prefix[b] <= k. Written once for host and device. */
GCOMM_HD_INLINE int64_t gcommi_dl_find_block(const int64_t *prefix, int64_t count, int64_t k)
{
    int64_t lo = 0, hi = count - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (prefix[mid] <= k) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* Greatest common divisor of |a| and |b| (gcd(0, b) = |b|). */
GCOMM_HD_INLINE int64_t gcommi_gcd64(int64_t a, int64_t b)
{
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The largest power of two <= 16 dividing g (g == 0 divides everything). */
GCOMM_HD_INLINE int64_t gcommi_pow2_align(int64_t g)
{
    int64_t a = 16;
    while (a > 1 && g % a != 0) a /= 2;
    return a;
}

/* A divisor of every offset and length a word-by-word traversal of the layout meets (extent,
 * size, every node's displacement, stride, sizes and unit, every indexed block displacement):
 * the access width that is always aligned relative to the instance origin is
 * gcommi_pow2_align of it. */
GCOMM_HD_INLINE int64_t gcommi_layout_gcd(const gcommi_layout_t *L)
{
    int64_t g = gcommi_gcd64(L->extent, L->size);
    for (int32_t i = 0; i < L->nnodes; i++) {
        const gcommi_dl_t *n = &L->nodes[i];
        g = gcommi_gcd64(g, gcommi_gcd64(n->disp, gcommi_gcd64(n->stride, gcommi_gcd64(n->size,
                             gcommi_gcd64(n->child_size, n->unit)))));
        if (n->kind == GCOMMI_DL_IDX)
            for (int64_t b = 0; b < n->count; b++) g = gcommi_gcd64(g, L->aux[n->aux + b]);
    }
    return g;
}

/* Memory offset (from the instance origin) of packed byte `k` of one instance of node n, and the
 * number of bytes that are contiguous from there within the enclosing RUN. Point-based traversal:
 * O(depth) plus a binary search per IDX/SEQ level, no state. */
GCOMM_HD_INLINE int64_t gcommi_dl_locate(const gcommi_dl_t *nodes, const int64_t *aux,
                                         int32_t node, int64_t k, int64_t *contig)
{
    int64_t off = 0;
    for (;;) {
        const gcommi_dl_t *n = &nodes[node];
        off += n->disp;
        switch (n->kind) {
        case GCOMMI_DL_RUN:
            *contig = n->size - k;
            return off + k;
        case GCOMMI_DL_VEC: {
            int64_t i = k / n->child_size;
            off += i * n->stride;
            k -= i * n->child_size;
            node = n->child;
            break;
        }
        case GCOMMI_DL_IDX: {
            const int64_t *displs = aux + n->aux;
            const int64_t *prefix = displs + n->count;
            int64_t item = k / n->child_size;
            int64_t b = gcommi_dl_find_block(prefix, n->count, item);
            off += displs[b] + (item - prefix[b]) * n->stride;
            k -= item * n->child_size;
            node = n->child;
            break;
        }
        default: { /* GCOMMI_DL_SEQ */
            const int64_t *prefix = aux + n->aux;
            const int64_t *member = prefix + n->count + 1;
            int64_t m = gcommi_dl_find_block(prefix, n->count, k);
            k -= prefix[m];
            node = (int32_t)member[m];
            break;
        }
        }
    }
}

#endif /* GCOMM_DETAIL_LAYOUT_H */
