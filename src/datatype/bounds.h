/* Bounds of a datatype (size, lb/ub, true lb/ub, alignment), computed the way MPI defines them and
 * bit-for-bit the way Open MPI computes them, since Open MPI is the reference gcomm is tested
 * against. A type is built by a sequence of "adds": `count` instances of a child spaced by
 * `extent` bytes, starting at byte `disp`. After each add the upper bound is padded so that the
 * extent is a multiple of the largest basic-type alignment seen (MPI's epsilon), unless an
 * explicit upper bound (from resized) is present. Explicit ("sticky") lb/ub markers of children
 * win over data bounds, as MPI's lb/ub markers do. */
#ifndef GCOMM_DATATYPE_BOUNDS_H
#define GCOMM_DATATYPE_BOUNDS_H

#include <stdint.h>

typedef struct {
    int64_t size;             /* packed bytes */
    int64_t lb, ub;           /* extent = ub - lb */
    int64_t true_lb, true_ub; /* span of the data alone */
    int32_t align;            /* largest natural alignment of the basic types in it */
    uint8_t user_lb, user_ub; /* explicit markers (set by resized, inherited by parents) */
    uint8_t touched;          /* at least one add with a nonzero count happened */
    uint8_t overflow;         /* some bound or the size left the 63-bit range */
} gcommi_bounds_t;

/* An empty accumulator (a type with no entries has all bounds 0). */
void gcommi_bounds_init(gcommi_bounds_t *acc);
/* Bounds of a predefined type of the given size and alignment. */
void gcommi_bounds_basic(gcommi_bounds_t *b, int64_t size, int32_t align);
/* Adds count instances of `child` at disp, disp + extent, ... (extent may be negative). */
void gcommi_bounds_add(gcommi_bounds_t *acc, const gcommi_bounds_t *child, int64_t count,
                       int64_t disp, int64_t extent);
/* Normalises an accumulator that saw no add to all-zero bounds. */
void gcommi_bounds_finish(gcommi_bounds_t *acc);
/* resized: explicit lb and ub = lb + extent; true bounds unchanged. */
void gcommi_bounds_resize(gcommi_bounds_t *b, int64_t lb, int64_t extent);

#endif /* GCOMM_DATATYPE_BOUNDS_H */
