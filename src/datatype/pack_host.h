/* CPU pack/unpack over a committed layout. */
#ifndef GCOMM_DATATYPE_PACK_HOST_H
#define GCOMM_DATATYPE_PACK_HOST_H

#include <stddef.h>

#include "datatype/layout.h"

/* Copies bytes [offset, offset + bytes) of the packed stream of instances of layout L whose first
 * instance has its origin at `typed`: pack != 0 gathers them from typed memory into `packed`,
 * pack == 0 scatters them from `packed` into typed memory. The caller has checked the range.
 * op_bytes: the size of the operation the range is part of (bytes when it is the whole of it),
 * which the loops are chosen for: a range of a pipelined 16 MiB pack moves typed data past the
 * caches as the whole pack does (streaming stores, blocks gathered eight at a time). */
void gcommi_host_copy(const gcommi_layout_t *L, char *typed, size_t offset, size_t bytes,
                      char *packed, int pack, size_t op_bytes);

/* The typed bytes of instances of L when they are their own packed stream (one run per instance,
 * the instances abutting), NULL otherwise: a copy to or from such a layout needs no bounce
 * buffer. */
static inline char *gcommi_host_contiguous(const gcommi_layout_t *L, char *typed)
{
    const gcommi_dl_t *root = &L->nodes[0];
    return root->kind == GCOMMI_DL_RUN && root->size == L->extent ? typed + root->disp : NULL;
}

/* Packed bytes at whose multiples a range of L's stream starts on a whole child of its outermost
 * vector (one instance of the type when the root is no vector): a column of a transpose, say.
 * A range that starts inside such a child walks part of it on its own, down every row for a
 * column. */
static inline int64_t gcommi_host_granule(const gcommi_layout_t *L)
{
    const gcommi_dl_t *root = &L->nodes[0];
    return root->kind == GCOMMI_DL_VEC ? root->child_size : L->size;
}

#endif /* GCOMM_DATATYPE_PACK_HOST_H */
