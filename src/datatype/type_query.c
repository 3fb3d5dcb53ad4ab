/* Datatype lifetime (reference counts, commit, free) and the summary queries. */
#include <stdlib.h>

#include "common/error.h"
#include "datatype/gpu.h"
#include "datatype/type.h"

_Static_assert(sizeof(ptrdiff_t) == sizeof(int64_t), "gcomm assumes a 64-bit ptrdiff_t");

int gcommi_type_check(gcomm_datatype type, const char *argname)
{
    if (!type) return GCOMMI_ERROR(GCOMM_ERR_TYPE, "%s is GCOMM_DATATYPE_NULL", argname);
    if (type->magic != GCOMMI_TYPE_MAGIC)
        return GCOMMI_ERROR(GCOMM_ERR_TYPE, "%s = %p is not a live datatype", argname,
                            (void *)type);
    if (type->user_freed)
        return GCOMMI_ERROR(GCOMM_ERR_TYPE, "%s = %p was freed with gcomm_type_free", argname,
                            (void *)type);
    return GCOMM_SUCCESS;
}

int gcommi_type_check_committed(gcomm_datatype type, const char *argname)
{
    GCOMMI_CHECK(gcommi_type_check(type, argname));
    if (!atomic_load_explicit(&type->committed, memory_order_acquire))
        return GCOMMI_ERROR(GCOMM_ERR_NOT_COMMITTED,
                            "%s = %p is not committed (call gcomm_type_commit)", argname,
                            (void *)type);
    return GCOMM_SUCCESS;
}

void gcommi_type_retain(gcomm_datatype type)
{
    if (!type->predefined) atomic_fetch_add_explicit(&type->refcount, 1, memory_order_relaxed);
}

void gcommi_type_release(gcomm_datatype type)
{
    if (type->predefined) return;
    if (atomic_fetch_sub_explicit(&type->refcount, 1, memory_order_acq_rel) != 1) return;
    if (type->types)
        for (int64_t b = 0; b < type->nblocks; b++)
            if (type->types[b]) gcommi_type_release(type->types[b]);
    if (type->child) gcommi_type_release(type->child);
    gcommi_gpu_type_release(type);
    gcommi_layout_free(type->layout);
    free(type->types);
    free(type->blocklens);
    free(type->displs);
    type->magic = GCOMMI_TYPE_DEAD; /* a stale handle to reused memory is then likelier caught */
    free(type);
}

int gcomm_type_commit(gcomm_datatype *type)
{
    GCOMMI_API_ENTRY();
    if (!type) return GCOMMI_ERROR(GCOMM_ERR_ARG, "type is NULL");
    GCOMMI_CHECK(gcommi_type_check(*type, "*type"));
    gcomm_datatype t = *type;
    if (atomic_load_explicit(&t->committed, memory_order_acquire)) return GCOMM_SUCCESS;
    gcommi_layout_t *layout;
    GCOMMI_CHECK(gcommi_layout_build(t, &layout));
    /* Threads may commit one handle at once (a type shared before its first use): the first
     * layout installed wins and the others are dropped, so every caller packs with the same one
     * and none leaks. The layout is complete before the release store that publishes it. */
    gcommi_layout_t *none = NULL;
    if (!__atomic_compare_exchange_n(&t->layout, &none, layout, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        gcommi_layout_free(layout);
    atomic_store_explicit(&t->committed, 1, memory_order_release);
    return GCOMM_SUCCESS;
}

int gcomm_type_free(gcomm_datatype *type)
{
    GCOMMI_API_ENTRY();
    if (!type) return GCOMMI_ERROR(GCOMM_ERR_ARG, "type is NULL");
    GCOMMI_CHECK(gcommi_type_check(*type, "*type"));
    if ((*type)->predefined)
        return GCOMMI_ERROR(GCOMM_ERR_TYPE, "*type is a predefined datatype and cannot be freed");
    gcomm_datatype t = *type;
    /* Parents may keep the object alive; mark the user's handle dead either way. */
    t->user_freed = 1;
    *type = GCOMM_DATATYPE_NULL;
    gcommi_type_release(t);
    return GCOMM_SUCCESS;
}

int gcomm_type_size(gcomm_datatype type, size_t *size)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(gcommi_type_check(type, "type"));
    if (!size) return GCOMMI_ERROR(GCOMM_ERR_ARG, "size is NULL");
    *size = (size_t)type->bounds.size;
    return GCOMM_SUCCESS;
}

int gcomm_type_get_extent(gcomm_datatype type, ptrdiff_t *lb, ptrdiff_t *extent)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(gcommi_type_check(type, "type"));
    if (!lb || !extent) return GCOMMI_ERROR(GCOMM_ERR_ARG, "%s is NULL", lb ? "extent" : "lb");
    *lb = type->bounds.lb;
    *extent = type->bounds.ub - type->bounds.lb;
    return GCOMM_SUCCESS;
}

int gcomm_type_get_true_extent(gcomm_datatype type, ptrdiff_t *true_lb, ptrdiff_t *true_extent)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(gcommi_type_check(type, "type"));
    if (!true_lb || !true_extent)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "%s is NULL", true_lb ? "true_extent" : "true_lb");
    *true_lb = type->bounds.true_lb;
    *true_extent = type->bounds.true_ub - type->bounds.true_lb;
    return GCOMM_SUCCESS;
}

int gcomm_type_get_elements(gcomm_datatype type, size_t *elements)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(gcommi_type_check(type, "type"));
    if (!elements) return GCOMMI_ERROR(GCOMM_ERR_ARG, "elements is NULL");
    *elements = (size_t)type->nelems;
    return GCOMM_SUCCESS;
}

const gcommi_layout_t *gcommi_type_get_layout(const struct gcomm_datatype_s *type)
{
    return atomic_load_explicit(&((struct gcomm_datatype_s *)type)->committed, memory_order_acquire)
               ? gcommi_type_layout(type)
               : NULL;
}

int gcommi_type_bytes(gcomm_datatype type, size_t count, const char *argname, size_t *bytes)
{
    uint64_t b;
    if (count > (size_t)INT64_MAX || __builtin_mul_overflow((uint64_t)count,
                                                            (uint64_t)type->bounds.size, &b) ||
        b > (uint64_t)INT64_MAX)
        return GCOMMI_ERROR(GCOMM_ERR_OVERFLOW, "%s = %zu times the type size %lld overflows",
                            argname, count, (long long)type->bounds.size);
    *bytes = (size_t)b;
    return GCOMM_SUCCESS;
}
