/* Datatype constructors with MPI semantics. Each validates its arguments, records the block list
 * (type.h), computes the bounds with the same sequence of adds as Open MPI (bounds.h) and the
 * element summary, and takes a reference on every child. Outputs are written only on success. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "datatype/type.h"

/* ---- shared helpers --------------------------------------------------------------------------- */

static int check_newtype(gcomm_datatype *newtype)
{
    if (!newtype) return GCOMMI_ERROR(GCOMM_ERR_ARG, "newtype is NULL");
    return GCOMM_SUCCESS;
}

static int check_count(int value, const char *name)
{
    if (value < 0) return GCOMMI_ERROR(GCOMM_ERR_COUNT, "%s = %d is negative", name, value);
    return GCOMM_SUCCESS;
}

static int check_array(const void *array, int count, const char *name)
{
    if (count > 0 && !array)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "%s is NULL with count = %d", name, count);
    return GCOMM_SUCCESS;
}

static int check_blocklengths(const int *blocklengths, int count)
{
    for (int i = 0; i < count; i++)
        if (blocklengths[i] < 0)
            return GCOMMI_ERROR(GCOMM_ERR_COUNT, "blocklengths[%d] = %d is negative", i,
                                blocklengths[i]);
    return GCOMM_SUCCESS;
}

/* A new derived type with nblocks blocks over `child` (NULL for struct). */
static int type_alloc(gcommi_combiner_t combiner, int64_t nblocks, gcomm_datatype child,
                      gcomm_datatype *out)
{
    struct gcomm_datatype_s *t = calloc(1, sizeof(*t));
    if (!t) return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "cannot allocate a datatype");
    t->magic = GCOMMI_TYPE_MAGIC;
    atomic_init(&t->refcount, 1);
    atomic_init(&t->committed, 0);
    t->combiner = combiner;
    t->basic_id = -1;
    t->nblocks = nblocks;
    t->child = child;
    if (child) gcommi_type_retain(child);
    *out = t;
    return GCOMM_SUCCESS;
}

/* Frees a type that never reached the user (construction failed). */
static void type_discard(gcomm_datatype t)
{
    if (t) gcommi_type_release(t);
}

/* Element summary (count, homogeneity, depth) from the block list, and the final overflow check
 * of size and bounds. `args` names the arguments that determine size and extent, for the detail
 * (the error prefix names the public constructor the user called). */
static int type_finish(gcomm_datatype t, const char *args)
{
    int64_t nelems = 0;
    int homog = -2; /* -2: no element seen yet */
    int depth = 0;
    /* Uniform blocks (contiguous, vector, resized, dup) are one block times nblocks: no loop over
     * what may be 2^31 identical blocks. */
    int uniform = !t->blocklens && !t->types;
    int64_t scan = uniform && t->nblocks > 0 ? 1 : t->nblocks;
    for (int64_t b = 0; b < scan; b++) {
        gcomm_datatype c = gcommi_blk_type(t, b);
        int64_t len = gcommi_blk_len(t, b), n;
        if (c->depth + 1 > depth) depth = c->depth + 1;
        if (len == 0 || c->nelems == 0) continue;
        if (__builtin_mul_overflow(len, c->nelems, &n) || __builtin_add_overflow(nelems, n, &nelems))
            return GCOMMI_ERROR(GCOMM_ERR_OVERFLOW, "the number of elements overflows (%s)", args);
        if (homog == -2) homog = c->homog_id;
        else if (homog != c->homog_id) homog = -1;
    }
    if (uniform && t->nblocks > 1 && __builtin_mul_overflow(nelems, t->nblocks, &nelems))
        return GCOMMI_ERROR(GCOMM_ERR_OVERFLOW, "the number of elements overflows (%s)", args);
    if (t->nblocks == 0) depth = 1;
    t->nelems = nelems;
    t->homog_id = homog < 0 ? -1 : homog;
    t->depth = depth;
    gcommi_bounds_finish(&t->bounds);
    if (t->bounds.overflow)
        return GCOMMI_ERROR(GCOMM_ERR_OVERFLOW,
                            "the size or extent of the new type overflows 63 bits (%s)", args);
    return GCOMM_SUCCESS;
}

/* Wrapping arithmetic for the block-merging scans: a wrapped value can only disturb a merge
 * decision for a type whose bounds overflow, which gcommi_bounds_add reports anyway. */
static int64_t wrap_add(int64_t a, int64_t b)
{
    int64_t r;
    __builtin_add_overflow(a, b, &r);
    return r;
}

static int64_t wrap_mul(int64_t a, int64_t b)
{
    int64_t r;
    __builtin_mul_overflow(a, b, &r);
    return r;
}

/* ---- contiguous, vector ----------------------------------------------------------------------- */

int gcomm_type_contiguous(int count, gcomm_datatype oldtype, gcomm_datatype *newtype)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(check_newtype(newtype));
    GCOMMI_CHECK(check_count(count, "count"));
    GCOMMI_CHECK(gcommi_type_check(oldtype, "oldtype"));
    gcomm_datatype t = NULL;
    GCOMMI_CHECK(type_alloc(GCOMMI_COMBINER_CONTIGUOUS, 1, oldtype, &t));
    t->blocklen = count;
    gcommi_bounds_init(&t->bounds);
    if (count > 0 && oldtype->bounds.size > 0)
        gcommi_bounds_add(&t->bounds, &oldtype->bounds, count, 0, gcommi_type_extent(oldtype));
    char args[96];
    snprintf(args, sizeof(args), "count = %d, old size %lld, old extent %lld", count,
             (long long)oldtype->bounds.size, (long long)gcommi_type_extent(oldtype));
    int rc = type_finish(t, args);
    if (rc) {
        type_discard(t);
        return rc;
    }
    *newtype = t;
    return GCOMM_SUCCESS;
}

/* Shared by vector and hvector. `contiguous` is the constructor's own test for "blocks abut",
 * which Open MPI evaluates in elements for vector and in bytes for hvector. */
static int make_vector(int count, int blocklength, int64_t stride, int contiguous,
                       gcomm_datatype oldtype, gcomm_datatype *newtype)
{
    gcomm_datatype t = NULL;
    GCOMMI_CHECK(type_alloc(GCOMMI_COMBINER_VECTOR, count, oldtype, &t));
    t->blocklen = blocklength;
    t->stride = stride;
    int64_t ext = gcommi_type_extent(oldtype);
    gcommi_bounds_init(&t->bounds);
    if (count > 0 && blocklength > 0) {
        if (contiguous || count <= 1) {
            gcommi_bounds_add(&t->bounds, &oldtype->bounds, (int64_t)count * blocklength, 0, ext);
        } else if (blocklength == 1) {
            gcommi_bounds_add(&t->bounds, &oldtype->bounds, count, 0, stride);
        } else {
            gcommi_bounds_t block;
            gcommi_bounds_init(&block);
            gcommi_bounds_add(&block, &oldtype->bounds, blocklength, 0, ext);
            gcommi_bounds_add(&t->bounds, &block, count, 0, stride);
        }
    }
    char args[160];
    snprintf(args, sizeof(args),
             "count = %d, blocklength = %d, stride = %lld bytes, old size %lld, old extent %lld",
             count, blocklength, (long long)stride, (long long)oldtype->bounds.size,
             (long long)ext);
    int rc = type_finish(t, args);
    if (rc) {
        type_discard(t);
        return rc;
    }
    *newtype = t;
    return GCOMM_SUCCESS;
}

int gcomm_type_vector(int count, int blocklength, int stride, gcomm_datatype oldtype,
                      gcomm_datatype *newtype)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(check_newtype(newtype));
    GCOMMI_CHECK(check_count(count, "count"));
    GCOMMI_CHECK(check_count(blocklength, "blocklength"));
    GCOMMI_CHECK(gcommi_type_check(oldtype, "oldtype"));
    int64_t bytes;
    if (__builtin_mul_overflow((int64_t)stride, gcommi_type_extent(oldtype), &bytes))
        return GCOMMI_ERROR(GCOMM_ERR_OVERFLOW, "stride = %d times the old extent overflows",
                            stride);
    return make_vector(count, blocklength, bytes, blocklength == stride, oldtype, newtype);
}

int gcomm_type_hvector(int count, int blocklength, ptrdiff_t stride, gcomm_datatype oldtype,
                       gcomm_datatype *newtype)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(check_newtype(newtype));
    GCOMMI_CHECK(check_count(count, "count"));
    GCOMMI_CHECK(check_count(blocklength, "blocklength"));
    GCOMMI_CHECK(gcommi_type_check(oldtype, "oldtype"));
    int64_t span;
    int contiguous = !__builtin_mul_overflow(gcommi_type_extent(oldtype), (int64_t)blocklength,
                                             &span) && span == (int64_t)stride;
    return make_vector(count, blocklength, stride, contiguous, oldtype, newtype);
}

/* ---- indexed family --------------------------------------------------------------------------- */

/* Shared by the four indexed constructors. displs are bytes; blocklens NULL means `blocklen` for
 * every block. Bounds are added per run of abutting blocks, as Open MPI merges them. */
static int make_indexed(int count, const int *blocklens, int blocklen, const int64_t *displs,
                        gcomm_datatype oldtype, gcomm_datatype *newtype)
{
    gcomm_datatype t = NULL;
    GCOMMI_CHECK(type_alloc(GCOMMI_COMBINER_INDEXED, count, oldtype, &t));
    int rc = GCOMM_SUCCESS;
    if (count > 0) {
        t->displs = malloc((size_t)count * sizeof(int64_t));
        t->blocklens = malloc((size_t)count * sizeof(int64_t));
        if (!t->displs || !t->blocklens) {
            rc = GCOMMI_ERROR(GCOMM_ERR_NOMEM, "cannot allocate %d blocks", count);
            goto err;
        }
        for (int i = 0; i < count; i++) {
            t->displs[i] = displs[i];
            t->blocklens[i] = blocklens ? blocklens[i] : blocklen;
        }
    }
    int64_t ext = gcommi_type_extent(oldtype);
    gcommi_bounds_init(&t->bounds);
    /* Open MPI adds nothing for (h)indexed over a zero-size old type (its bounds stay 0), while
     * the _block forms do add its markers; mirrored so that bounds match the reference. */
    if (count > 0 && (blocklens == NULL || oldtype->bounds.size > 0)) {
        int64_t disp = t->displs[0], len = t->blocklens[0];
        int64_t end = wrap_add(disp, wrap_mul(len, ext));
        for (int i = 1; i < count; i++) {
            if (t->displs[i] == end) {
                len = wrap_add(len, t->blocklens[i]);
                end = wrap_add(end, wrap_mul(t->blocklens[i], ext));
            } else {
                gcommi_bounds_add(&t->bounds, &oldtype->bounds, len, disp, ext);
                disp = t->displs[i];
                len = t->blocklens[i];
                end = wrap_add(disp, wrap_mul(len, ext));
            }
        }
        gcommi_bounds_add(&t->bounds, &oldtype->bounds, len, disp, ext);
    }
    char args[128];
    snprintf(args, sizeof(args), "count = %d blocks: blocklengths and displacements, old extent %lld",
             count, (long long)ext);
    rc = type_finish(t, args);
    if (rc) goto err;
    *newtype = t;
    return GCOMM_SUCCESS;
err:
    type_discard(t);
    return rc;
}

/* Element displacements to bytes, with overflow check. */
static int displs_to_bytes(int count, const int *displs, int64_t ext,
                           int64_t **out)
{
    int64_t *d = malloc((size_t)(count > 0 ? count : 1) * sizeof(int64_t));
    if (!d) return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "cannot allocate %d displacements", count);
    for (int i = 0; i < count; i++)
        if (__builtin_mul_overflow((int64_t)displs[i], ext, &d[i])) {
            free(d);
            return GCOMMI_ERROR(GCOMM_ERR_OVERFLOW,
                                "displacements[%d] = %d times the old extent overflows",
                                i, displs[i]);
        }
    *out = d;
    return GCOMM_SUCCESS;
}

/* Multiplies of blocklength x extent must stay in range for every block. */
static int check_block_span(int count, const int *blocklens, int blocklen, gcomm_datatype old)
{
    int64_t ext = gcommi_type_extent(old), span;
    for (int i = 0; i < count; i++) {
        int64_t len = blocklens ? blocklens[i] : blocklen;
        if (__builtin_mul_overflow(len, ext, &span))
            return GCOMMI_ERROR(GCOMM_ERR_OVERFLOW, "block %d spans more than 63 bits",
                                i);
    }
    return GCOMM_SUCCESS;
}

int gcomm_type_indexed(int count, const int blocklengths[], const int displacements[],
                       gcomm_datatype oldtype, gcomm_datatype *newtype)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(check_newtype(newtype));
    GCOMMI_CHECK(check_count(count, "count"));
    GCOMMI_CHECK(check_array(blocklengths, count, "blocklengths"));
    GCOMMI_CHECK(check_array(displacements, count, "displacements"));
    GCOMMI_CHECK(check_blocklengths(blocklengths, count));
    GCOMMI_CHECK(gcommi_type_check(oldtype, "oldtype"));
    GCOMMI_CHECK(check_block_span(count, blocklengths, 0, oldtype));
    int64_t *d;
    GCOMMI_CHECK(displs_to_bytes(count, displacements, gcommi_type_extent(oldtype), &d));
    int rc = make_indexed(count, blocklengths, 0, d, oldtype, newtype);
    free(d);
    return rc;
}

int gcomm_type_hindexed(int count, const int blocklengths[], const ptrdiff_t displacements[],
                        gcomm_datatype oldtype, gcomm_datatype *newtype)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(check_newtype(newtype));
    GCOMMI_CHECK(check_count(count, "count"));
    GCOMMI_CHECK(check_array(blocklengths, count, "blocklengths"));
    GCOMMI_CHECK(check_array(displacements, count, "displacements"));
    GCOMMI_CHECK(check_blocklengths(blocklengths, count));
    GCOMMI_CHECK(gcommi_type_check(oldtype, "oldtype"));
    GCOMMI_CHECK(check_block_span(count, blocklengths, 0, oldtype));
    return make_indexed(count, blocklengths, 0, (const int64_t *)displacements, oldtype,
                        newtype);
}

int gcomm_type_indexed_block(int count, int blocklength, const int displacements[],
                             gcomm_datatype oldtype, gcomm_datatype *newtype)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(check_newtype(newtype));
    GCOMMI_CHECK(check_count(count, "count"));
    GCOMMI_CHECK(check_count(blocklength, "blocklength"));
    GCOMMI_CHECK(check_array(displacements, count, "displacements"));
    GCOMMI_CHECK(gcommi_type_check(oldtype, "oldtype"));
    GCOMMI_CHECK(check_block_span(1, NULL, blocklength, oldtype));
    int64_t *d;
    GCOMMI_CHECK(displs_to_bytes(count, displacements, gcommi_type_extent(oldtype), &d));
    int rc = make_indexed(count, NULL, blocklength, d, oldtype, newtype);
    free(d);
    return rc;
}

int gcomm_type_hindexed_block(int count, int blocklength, const ptrdiff_t displacements[],
                              gcomm_datatype oldtype, gcomm_datatype *newtype)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(check_newtype(newtype));
    GCOMMI_CHECK(check_count(count, "count"));
    GCOMMI_CHECK(check_count(blocklength, "blocklength"));
    GCOMMI_CHECK(check_array(displacements, count, "displacements"));
    GCOMMI_CHECK(gcommi_type_check(oldtype, "oldtype"));
    GCOMMI_CHECK(check_block_span(1, NULL, blocklength, oldtype));
    return make_indexed(count, NULL, blocklength, (const int64_t *)displacements, oldtype,
                        newtype);
}

/* ---- struct ----------------------------------------------------------------------------------- */

int gcomm_type_struct(int count, const int blocklengths[], const ptrdiff_t displacements[],
                      const gcomm_datatype types[], gcomm_datatype *newtype)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(check_newtype(newtype));
    GCOMMI_CHECK(check_count(count, "count"));
    GCOMMI_CHECK(check_array(blocklengths, count, "blocklengths"));
    GCOMMI_CHECK(check_array(displacements, count, "displacements"));
    GCOMMI_CHECK(check_array(types, count, "types"));
    GCOMMI_CHECK(check_blocklengths(blocklengths, count));
    for (int i = 0; i < count; i++) {
        char name[32];
        snprintf(name, sizeof(name), "types[%d]", i);
        GCOMMI_CHECK(gcommi_type_check(types[i], name));
        GCOMMI_CHECK(check_block_span(1, NULL, blocklengths[i], types[i]));
    }

    gcomm_datatype t = NULL;
    GCOMMI_CHECK(type_alloc(GCOMMI_COMBINER_STRUCT, count, NULL, &t));
    int rc = GCOMM_SUCCESS;
    if (count > 0) {
        t->displs = malloc((size_t)count * sizeof(int64_t));
        t->blocklens = malloc((size_t)count * sizeof(int64_t));
        t->types = calloc((size_t)count, sizeof(gcomm_datatype));
        if (!t->displs || !t->blocklens || !t->types) {
            rc = GCOMMI_ERROR(GCOMM_ERR_NOMEM, "cannot allocate %d members", count);
            goto err;
        }
        for (int i = 0; i < count; i++) {
            t->displs[i] = displacements[i];
            t->blocklens[i] = blocklengths[i];
            t->types[i] = types[i];
            gcommi_type_retain(types[i]);
        }
    }

    /* Bounds: skip leading empty members, merge members of the same type that abut. */
    gcommi_bounds_init(&t->bounds);
    int first = 0;
    while (first < count && blocklengths[first] == 0) first++;
    if (first < count) {
        gcomm_datatype last = types[first];
        int64_t len = blocklengths[first], disp = displacements[first];
        int64_t ext = gcommi_type_extent(last);
        int64_t end = wrap_add(disp, wrap_mul(ext, len));
        for (int i = first + 1; i < count; i++) {
            if (types[i] == last && displacements[i] == end) {
                len += blocklengths[i];
                end = wrap_add(disp, wrap_mul(len, ext));
            } else {
                gcommi_bounds_add(&t->bounds, &last->bounds, len, disp, ext);
                last = types[i];
                ext = gcommi_type_extent(last);
                len = blocklengths[i];
                disp = displacements[i];
                end = wrap_add(disp, wrap_mul(ext, len));
            }
        }
        gcommi_bounds_add(&t->bounds, &last->bounds, len, disp, ext);
    }
    char args[96];
    snprintf(args, sizeof(args), "count = %d members: blocklengths, displacements and types", count);
    rc = type_finish(t, args);
    if (rc) goto err;
    *newtype = t;
    return GCOMM_SUCCESS;
err:
    type_discard(t);
    return rc;
}

/* ---- resized, dup ----------------------------------------------------------------------------- */

static int make_wrapper(gcommi_combiner_t combiner, gcomm_datatype oldtype,
                        gcomm_datatype *newtype)
{
    gcomm_datatype t = NULL;
    GCOMMI_CHECK(type_alloc(combiner, 1, oldtype, &t));
    t->blocklen = 1;
    t->bounds = oldtype->bounds;
    *newtype = t;
    return GCOMM_SUCCESS;
}

int gcomm_type_resized(gcomm_datatype oldtype, ptrdiff_t lb, ptrdiff_t extent,
                       gcomm_datatype *newtype)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(check_newtype(newtype));
    GCOMMI_CHECK(gcommi_type_check(oldtype, "oldtype"));
    gcomm_datatype t = NULL;
    GCOMMI_CHECK(make_wrapper(GCOMMI_COMBINER_RESIZED, oldtype, &t));
    gcommi_bounds_resize(&t->bounds, lb, extent);
    char args[96];
    snprintf(args, sizeof(args), "lb = %lld, extent = %lld", (long long)lb, (long long)extent);
    int rc = type_finish(t, args);
    if (rc) {
        type_discard(t);
        return rc;
    }
    *newtype = t;
    return GCOMM_SUCCESS;
}

int gcomm_type_dup(gcomm_datatype oldtype, gcomm_datatype *newtype)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(check_newtype(newtype));
    GCOMMI_CHECK(gcommi_type_check(oldtype, "oldtype"));
    gcomm_datatype t = NULL;
    GCOMMI_CHECK(make_wrapper(GCOMMI_COMBINER_DUP, oldtype, &t));
    int rc = type_finish(t, "oldtype");
    if (rc) {
        type_discard(t);
        return rc;
    }
    *newtype = t;
    return GCOMM_SUCCESS;
}

/* ---- subarray --------------------------------------------------------------------------------- */

/* Built as MPI describes it: nested hvectors over the fastest dimension, shifted to the start
 * corner, resized to the whole array. Normalisation later folds full dimensions together. */
int gcomm_type_subarray(int ndims, const int sizes[], const int subsizes[], const int starts[],
                        int order, gcomm_datatype oldtype, gcomm_datatype *newtype)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(check_newtype(newtype));
    if (ndims <= 0) return GCOMMI_ERROR(GCOMM_ERR_ARG, "ndims = %d must be positive", ndims);
    GCOMMI_CHECK(check_array(sizes, ndims, "sizes"));
    GCOMMI_CHECK(check_array(subsizes, ndims, "subsizes"));
    GCOMMI_CHECK(check_array(starts, ndims, "starts"));
    if (order != GCOMM_ORDER_C && order != GCOMM_ORDER_FORTRAN)
        return GCOMMI_ERROR(GCOMM_ERR_ARG,
                            "order = %d is neither GCOMM_ORDER_C nor GCOMM_ORDER_FORTRAN", order);
    for (int i = 0; i < ndims; i++) {
        if (sizes[i] < 1)
            return GCOMMI_ERROR(GCOMM_ERR_ARG, "sizes[%d] = %d must be >= 1", i, sizes[i]);
        if (subsizes[i] < 1 || subsizes[i] > sizes[i])
            return GCOMMI_ERROR(GCOMM_ERR_ARG, "subsizes[%d] = %d must be in [1, sizes[%d] = %d]",
                                i, subsizes[i], i, sizes[i]);
        if (starts[i] < 0 || starts[i] > sizes[i] - subsizes[i])
            return GCOMMI_ERROR(GCOMM_ERR_ARG,
                                "starts[%d] = %d must be in [0, sizes - subsizes = %d]", i,
                                starts[i], sizes[i] - subsizes[i]);
    }
    GCOMMI_CHECK(gcommi_type_check(oldtype, "oldtype"));

    /* Dimension k from fastest to slowest: index into the arrays. */
#define DIM(k) (order == GCOMM_ORDER_C ? ndims - 1 - (k) : (k))
    int64_t ext = gcommi_type_extent(oldtype);
    int64_t stride = ext, start = 0, total;
    for (int k = 0; k < ndims; k++) {
        int64_t s;
        if (__builtin_mul_overflow((int64_t)starts[DIM(k)], stride, &s) ||
            __builtin_add_overflow(start, s, &start) ||
            __builtin_mul_overflow(stride, (int64_t)sizes[DIM(k)], &stride))
            return GCOMMI_ERROR(GCOMM_ERR_OVERFLOW,
                                "the extent of the whole array (sizes x old extent %lld) "
                                "overflows 63 bits", (long long)ext);
    }
    total = stride;

    gcomm_datatype cur = NULL, next = NULL;
    int rc = gcomm_type_contiguous(subsizes[DIM(0)], oldtype, &cur);
    stride = ext * sizes[DIM(0)];
    for (int k = 1; k < ndims && rc == GCOMM_SUCCESS; k++) {
        rc = gcomm_type_hvector(subsizes[DIM(k)], 1, stride, cur, &next);
        gcommi_type_release(cur);
        cur = next;
        stride *= sizes[DIM(k)];
    }
#undef DIM
    if (rc) return rc;
    int one = 1;
    ptrdiff_t disp = start;
    rc = gcomm_type_hindexed(1, &one, &disp, cur, &next);
    gcommi_type_release(cur);
    if (rc) return rc;
    rc = gcomm_type_resized(next, 0, total, newtype);
    gcommi_type_release(next);
    return rc;
}
