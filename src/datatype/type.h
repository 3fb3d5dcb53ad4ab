/* The datatype object: constructor arguments in one uniform "block list" form, the summary
 * computed once at creation (size, bounds, element counts), and the committed layout.
 *
 * Every constructor is expressed as a list of blocks; block b holds blocklen(b) consecutive
 * instances of child(b) (spaced by the child's extent) starting at byte displacement disp(b):
 *   contiguous(n)          1 block of n at 0
 *   (h)vector(c, bl, s)    c blocks of bl at b * s (bytes)
 *   (h)indexed(_block)     the given blocks, displacements converted to bytes
 *   struct                 one block per member, each with its own child
 *   resized, dup           1 block of 1 at 0 (resized overrides lb/ub)
 * subarray and darray are built from these. Bounds, signatures and the committed layout are all
 * derived from this one form. */
#ifndef GCOMM_DATATYPE_TYPE_H
#define GCOMM_DATATYPE_TYPE_H

#include <stdatomic.h>
#include <stdint.h>

#include "datatype/bounds.h"
#include "datatype/layout.h"
#include "gcomm/datatype.h"

#define GCOMMI_TYPE_MAX_DEVICES 16 /* devices per process whose plans a type caches */

#define GCOMMI_TYPE_MAGIC 0x67636f6d6d445479ull /* "gcommDTy" */
#define GCOMMI_TYPE_DEAD 0x6465616464656164ull

typedef enum {
    GCOMMI_COMBINER_NAMED,
    GCOMMI_COMBINER_CONTIGUOUS,
    GCOMMI_COMBINER_VECTOR,  /* also hvector: the stride is kept in bytes */
    GCOMMI_COMBINER_INDEXED, /* also hindexed, (h)indexed_block */
    GCOMMI_COMBINER_STRUCT,
    GCOMMI_COMBINER_RESIZED,
    GCOMMI_COMBINER_DUP
} gcommi_combiner_t;

struct gcomm_datatype_s {
    uint64_t magic;
    atomic_int refcount; /* the user's handle (until freed) + one per parent */
    uint8_t predefined;
    uint8_t user_freed; /* the user called gcomm_type_free; parents may keep it alive */
    atomic_int committed;
    gcommi_combiner_t combiner;
    int basic_id; /* gcomm_typeid_t for predefined types, -1 otherwise */

    /* Summary, computed once at creation. */
    gcommi_bounds_t bounds; /* size, lb/ub, true bounds, alignment, sticky-marker flags */
    int64_t nelems;         /* basic elements in one instance */
    int homog_id;           /* basic id if all elements share one basic type, -1 if mixed/empty */
    int depth;              /* constructor nesting depth (predefined: 0) */

    /* Block list (see above). Uniform fields are used when the arrays are NULL. */
    int64_t nblocks;
    int64_t blocklen;      /* uniform blocklength (vector, *_block, contiguous, resized, dup) */
    int64_t stride;        /* uniform byte stride between blocks (vector) */
    int64_t *blocklens;    /* per-block blocklengths (indexed, hindexed, struct) or NULL */
    int64_t *displs;       /* per-block byte displacements or NULL (then b * stride) */
    gcomm_datatype *types; /* struct: one child per block; otherwise NULL and child is used */
    gcomm_datatype child;

    /* Committed layout (built by gcomm_type_commit). */
    gcommi_layout_t *layout;
    /* GPU plans (gpu_plan.c), one per device, built on first use there. */
    void *gpu_plans[GCOMMI_TYPE_MAX_DEVICES];
};

static inline int64_t gcommi_blk_len(const struct gcomm_datatype_s *t, int64_t b)
{
    return t->blocklens ? t->blocklens[b] : t->blocklen;
}
static inline int64_t gcommi_blk_disp(const struct gcomm_datatype_s *t, int64_t b)
{
    return t->displs ? t->displs[b] : b * t->stride;
}
static inline gcomm_datatype gcommi_blk_type(const struct gcomm_datatype_s *t, int64_t b)
{
    return t->types ? t->types[b] : t->child;
}
static inline int64_t gcommi_type_extent(const struct gcomm_datatype_s *t)
{
    return t->bounds.ub - t->bounds.lb;
}

/* Validates a handle given to a public function: not NULL, alive, not freed by the user.
 * Records the detail (naming `argname`) and returns GCOMM_ERR_TYPE otherwise. */
int gcommi_type_check(gcomm_datatype type, const char *argname);
/* As gcommi_type_check, and the type must be committed (GCOMM_ERR_NOT_COMMITTED). */
int gcommi_type_check_committed(gcomm_datatype type, const char *argname);

void gcommi_type_retain(gcomm_datatype type);
void gcommi_type_release(gcomm_datatype type);

/* The committed layout of a committed type. An atomic load: threads that commit one handle at
 * once install the layout by compare-and-swap (gcomm_type_commit), and this load pairs with it
 * directly (a plain mov on x86). */
static inline const gcommi_layout_t *gcommi_type_layout(const struct gcomm_datatype_s *type)
{
    return __atomic_load_n(&type->layout, __ATOMIC_ACQUIRE);
}

/* Builds the layout of a type (commit.c). */
int gcommi_layout_build(gcomm_datatype type, gcommi_layout_t **layout);
void gcommi_layout_free(gcommi_layout_t *layout);

/* Byte size of count instances, with overflow check (GCOMM_ERR_OVERFLOW, detail names argname). */
int gcommi_type_bytes(gcomm_datatype type, size_t count, const char *argname, size_t *bytes);

#endif /* GCOMM_DATATYPE_TYPE_H */
