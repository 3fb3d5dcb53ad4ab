/* Reference typemap expander for the datatype tests, independent of the gcomm engine.
 *
 * Expands a recipe (random_type.h) into its typemap, the list of (basic type, displacement) of
 * MPI-4.1 section 5.1, by the standard's definitions of each constructor, and computes the
 * standard's bounds from it: lb/ub markers (installed by resized, subarray and darray, erasing
 * older ones, and carried into parents), otherwise lb = min disp, ub = max(disp + size) rounded
 * up so that the extent is a multiple of the largest basic alignment (epsilon). Used to detect
 * overlapping typemaps, to count elements, to build flattened signatures, and as a third opinion
 * on pack bytes and bounds when gcomm and MPI disagree. */
#ifndef GCOMMT_TYPEMAP_REF_H
#define GCOMMT_TYPEMAP_REF_H

#include <stddef.h>
#include <stdint.h>

#include "random_type.h"

typedef struct {
    int64_t disp;
    int basic;                /* rt_basic_t */
} tm_entry;

typedef struct tm_map {
    tm_entry *e;              /* in typemap order */
    size_t n, cap;
    uint64_t size;            /* sum of basic sizes */
    int has_markers;          /* lb/ub markers present (they come in pairs) */
    int64_t lbm, ubm;         /* lowest lb marker, highest ub marker */
    int64_t lb, ub;           /* the standard's bounds */
    int64_t true_lb, true_ub; /* min disp, max disp + size (0, 0 when empty) */
    int align;                /* largest basic alignment (1 when empty) */
} tm_map;

/* Supplies the extent of a child, so that displacements follow the implementation's extents
 * (epsilon padding is implementation-defined). NULL: the reference's own standard bounds. */
typedef void (*tm_extent_fn)(const rt_node *n, void *ctx, int64_t *lb, int64_t *extent);

/* Expands n, caching the result in n->ref (and those of its subtree). Returns NULL when the
 * typemap of n or of a node below would hold more than max_entries entries. */
const tm_map *tm_expand(rt_node *n, tm_extent_fn fn, void *ctx, size_t max_entries);
/* Drops the cached expansions of the subtree (before expanding again with another fn). */
void tm_clear(rt_node *n);
/* Drops the cached expansion of n only (its parameters changed, its children did not). */
void tm_clear_node(rt_node *n);

size_t tm_basic_size(int basic);
int tm_basic_align(int basic);

/* Lowest and highest byte (exclusive) touched by count instances placed extent apart. */
void tm_span(const tm_map *m, size_t count, int64_t extent, int64_t *lo, int64_t *hi);
/* 1 when two entries of count instances cover a common byte. */
int tm_overlaps(const tm_map *m, size_t count, int64_t extent);
/* Pack/unpack by the typemap: base is the address of displacement 0. */
void tm_pack(const tm_map *m, size_t count, int64_t extent, const unsigned char *base,
             unsigned char *out);
void tm_unpack(const tm_map *m, size_t count, int64_t extent, const unsigned char *in,
               unsigned char *base);

#endif /* GCOMMT_TYPEMAP_REF_H */
