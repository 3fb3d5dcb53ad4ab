/* gcomm_type_darray: MPI_Type_create_darray (MPI-4.1 section 5.1.4), built only from the public
 * constructors, the way ROMIO and Open MPI build it.
 *
 * The dimensions are taken from the fastest varying (the last in C order, the first in Fortran
 * order) to the slowest. Each one wraps the type of the dimensions before it, whose extent is
 * exactly one step along the new dimension:
 *   block   one run of this process's elements: contiguous(local, prev);
 *   cyclic  hvector(count, darg, psize * darg steps, prev) for the whole blocks, plus a struct
 *           member for a last, shorter block;
 *   none    a block distribution over a single process (the whole dimension);
 * and is resized to lb 0 and the extent of the whole dimension, so that the next dimension can
 * step over it. Every per-dimension type starts at the dimension's origin; the offset of this
 * process's first element is accumulated on the side and applied once at the end (hindexed_block
 * of one block), and the result is resized to lb 0 and the extent of the whole global array.
 * A process that owns nothing in some dimension owns nothing at all: it gets an empty type with
 * those bounds directly, rather than a tower of types built on empty ones.
 *
 * Processes are numbered in row-major order over the grid whatever the array order, as in
 * MPI_Cart_create.
 *
 * Error classes follow the constructors' rule: a negative count or size is GCOMM_ERR_COUNT, any
 * other value out of its range GCOMM_ERR_ARG, a byte offset that does not fit in 63 bits
 * GCOMM_ERR_OVERFLOW. */
#include <stdint.h>

#include "common/error.h"
#include "gcomm/datatype.h"

/* Errors found by the helpers below are recorded under the public name, so that the detail reads
 * "gcomm_type_darray: ..." rather than naming an internal function. */
#define DARRAY_ERROR(code, ...)                                                                \
    gcommi_error_set((code), __FILE__, __LINE__, "gcomm_type_darray", __VA_ARGS__)

/* One dimension as seen by this process. A block distribution is the cyclic one with a single
 * block per process (darg * psize >= gsize), and an undistributed dimension is a block
 * distribution over one process. */
typedef struct {
    int gsize;      /* elements along the dimension */
    int64_t psize;  /* processes along the dimension */
    int64_t blksize;
    int64_t first;  /* this process's first element (coord * blksize) */
    int64_t local;  /* elements this process owns */
    ptrdiff_t step; /* bytes between consecutive elements along the dimension */
} darray_dim_t;

static int darray_check_dim(int i, int gsize, int distrib, int darg, int psize)
{
    if (gsize < 0)
        return DARRAY_ERROR(GCOMM_ERR_COUNT, "gsizes[%d] = %d is negative", i, gsize);
    if (gsize == 0)
        return DARRAY_ERROR(GCOMM_ERR_ARG, "gsizes[%d] = 0 must be positive", i);
    if (psize < 0)
        return DARRAY_ERROR(GCOMM_ERR_COUNT, "psizes[%d] = %d is negative", i, psize);
    if (psize == 0)
        return DARRAY_ERROR(GCOMM_ERR_ARG, "psizes[%d] = 0 must be positive", i);
    if (distrib != GCOMM_DISTRIBUTE_BLOCK && distrib != GCOMM_DISTRIBUTE_CYCLIC &&
        distrib != GCOMM_DISTRIBUTE_NONE)
        return DARRAY_ERROR(GCOMM_ERR_ARG,
                            "distribs[%d] = %d is not GCOMM_DISTRIBUTE_BLOCK, _CYCLIC or _NONE",
                            i, distrib);
    if (darg != GCOMM_DISTRIBUTE_DFLT_DARG && darg < 1)
        return DARRAY_ERROR(GCOMM_ERR_ARG,
                            "dargs[%d] = %d must be positive or GCOMM_DISTRIBUTE_DFLT_DARG", i,
                            darg);
    /* An undistributed dimension lives on one process; MPICH enforces the same. */
    if (distrib == GCOMM_DISTRIBUTE_NONE && psize != 1)
        return DARRAY_ERROR(GCOMM_ERR_ARG,
                            "psizes[%d] = %d must be 1 for distribs[%d] = GCOMM_DISTRIBUTE_NONE",
                            i, psize, i);
    /* A block distribution gives each process at most one block: the blocks must cover the
     * dimension. */
    if (distrib == GCOMM_DISTRIBUTE_BLOCK && darg != GCOMM_DISTRIBUTE_DFLT_DARG &&
        (int64_t)darg * psize < gsize)
        return DARRAY_ERROR(GCOMM_ERR_ARG,
                            "dargs[%d] * psizes[%d] = %d * %d is less than gsizes[%d] = %d for a "
                            "block distribution",
                            i, i, darg, psize, i, gsize);
    return GCOMM_SUCCESS;
}

static int darray_check_args(int size, int rank, int ndims, const int gsizes[],
                             const int distribs[], const int dargs[], const int psizes[],
                             int order, gcomm_datatype *newtype)
{
    if (newtype == NULL) return DARRAY_ERROR(GCOMM_ERR_ARG, "newtype is NULL");
    if (ndims < 0) return DARRAY_ERROR(GCOMM_ERR_COUNT, "ndims = %d is negative", ndims);
    if (ndims == 0) return DARRAY_ERROR(GCOMM_ERR_ARG, "ndims = 0 must be positive");
    if (size < 0) return DARRAY_ERROR(GCOMM_ERR_COUNT, "size = %d is negative", size);
    if (size == 0) return DARRAY_ERROR(GCOMM_ERR_ARG, "size = 0 must be positive");
    if (rank < 0 || rank >= size)
        return DARRAY_ERROR(GCOMM_ERR_ARG, "rank = %d is outside [0, size = %d)", rank, size);
    if (order != GCOMM_ORDER_C && order != GCOMM_ORDER_FORTRAN)
        return DARRAY_ERROR(GCOMM_ERR_ARG, "order = %d is not GCOMM_ORDER_C or GCOMM_ORDER_FORTRAN",
                            order);
    if (gsizes == NULL) return DARRAY_ERROR(GCOMM_ERR_ARG, "gsizes is NULL");
    if (distribs == NULL) return DARRAY_ERROR(GCOMM_ERR_ARG, "distribs is NULL");
    if (dargs == NULL) return DARRAY_ERROR(GCOMM_ERR_ARG, "dargs is NULL");
    if (psizes == NULL) return DARRAY_ERROR(GCOMM_ERR_ARG, "psizes is NULL");

    int64_t nprocs = 1;
    for (int i = 0; i < ndims; i++) {
        int status = darray_check_dim(i, gsizes[i], distribs[i], dargs[i], psizes[i]);
        if (status != GCOMM_SUCCESS) return status;
        /* Stop multiplying once past size: the product of psizes can overflow 64 bits. */
        if (nprocs <= size) nprocs *= psizes[i];
    }
    if (nprocs != size)
        return DARRAY_ERROR(GCOMM_ERR_ARG,
                            "the product of psizes[0..%d] is not size = %d (the process grid "
                            "must hold exactly size processes)",
                            ndims - 1, size);
    return GCOMM_SUCCESS;
}

/* a * b into *out, or GCOMM_ERR_OVERFLOW naming what was computed. */
static int darray_mul(ptrdiff_t a, int64_t b, const char *what, ptrdiff_t *out)
{
    ptrdiff_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return DARRAY_ERROR(GCOMM_ERR_OVERFLOW, "%s (%td * %lld bytes) overflows 63 bits", what,
                            a, (long long)b);
    *out = r;
    return GCOMM_SUCCESS;
}

/* Dimension i for the process at row-major rank `rank` of the grid. */
static darray_dim_t darray_dim(int i, int rank, int ndims, const int gsizes[],
                               const int distribs[], const int dargs[], const int psizes[],
                               ptrdiff_t step)
{
    int64_t after = 1; /* processes in the dimensions after i */
    for (int j = i + 1; j < ndims; j++) after *= psizes[j];
    darray_dim_t d = {.gsize = gsizes[i], .psize = psizes[i], .step = step};
    int64_t coord = (rank / after) % psizes[i];
    if (distribs[i] == GCOMM_DISTRIBUTE_NONE) {
        d.psize = 1;
        coord = 0;
        d.blksize = d.gsize;
    } else if (distribs[i] == GCOMM_DISTRIBUTE_BLOCK) {
        d.blksize = dargs[i] == GCOMM_DISTRIBUTE_DFLT_DARG ? (d.gsize + d.psize - 1) / d.psize
                                                            : dargs[i];
    } else {
        d.blksize = dargs[i] == GCOMM_DISTRIBUTE_DFLT_DARG ? 1 : dargs[i];
    }
    d.first = coord * d.blksize;
    if (d.first < d.gsize) {
        int64_t span = d.gsize - d.first, cycle = d.blksize * d.psize, tail = span % cycle;
        d.local = (span / cycle) * d.blksize + (tail < d.blksize ? tail : d.blksize);
    } else {
        d.local = 0;
    }
    return d;
}

/* This process's elements of one dimension, starting at the dimension's origin: whole blocks of
 * blksize elements every psize * blksize, and a last, shorter block. prev's extent is one step. */
static int darray_part(const darray_dim_t *d, gcomm_datatype prev, gcomm_datatype *type)
{
    int64_t count = d->local / d->blksize, rem = d->local % d->blksize;
    /* A single, possibly short block needs no vector (and no struct). */
    if (count == 0) return gcomm_type_contiguous((int)rem, prev, type);
    if (count == 1 && rem == 0) return gcomm_type_contiguous((int)d->blksize, prev, type);

    ptrdiff_t stride = 0, tail_disp = 0;
    int status = darray_mul(d->step, d->blksize * d->psize, "the cyclic stride", &stride);
    if (status != GCOMM_SUCCESS) return status;
    status = darray_mul(stride, count, "the offset of the last cyclic block", &tail_disp);
    if (status != GCOMM_SUCCESS) return status;

    gcomm_datatype whole = GCOMM_DATATYPE_NULL;
    status = gcomm_type_hvector((int)count, (int)d->blksize, stride, prev, &whole);
    if (status != GCOMM_SUCCESS || rem == 0) {
        if (status == GCOMM_SUCCESS) *type = whole;
        return status;
    }
    const int blocklens[2] = {1, (int)rem};
    const ptrdiff_t displs[2] = {0, tail_disp};
    const gcomm_datatype members[2] = {whole, prev};
    status = gcomm_type_struct(2, blocklens, displs, members, type);
    gcomm_type_free(&whole); /* the struct holds its own reference */
    return status;
}

/* This process's part of one dimension, resized to span the whole dimension. */
static int darray_dimension(const darray_dim_t *d, gcomm_datatype prev, gcomm_datatype *type)
{
    gcomm_datatype part = GCOMM_DATATYPE_NULL;
    int status = darray_part(d, prev, &part);
    if (status != GCOMM_SUCCESS) return status;
    ptrdiff_t span = 0;
    status = darray_mul(d->step, d->gsize, "the extent of a dimension", &span);
    if (status == GCOMM_SUCCESS) status = gcomm_type_resized(part, 0, span, type);
    gcomm_type_free(&part);
    return status;
}

/* A process that owns nothing: no data, lb 0 and the extent of the whole array (as MPI). */
static int darray_empty(gcomm_datatype oldtype, ptrdiff_t total, gcomm_datatype *newtype)
{
    gcomm_datatype none = GCOMM_DATATYPE_NULL;
    int status = gcomm_type_contiguous(0, oldtype, &none);
    if (status != GCOMM_SUCCESS) return status;
    status = gcomm_type_resized(none, 0, total, newtype);
    gcomm_type_free(&none);
    return status;
}

/* Moves the local part (which starts at the array's origin) to byte offset disp and gives the
 * result lb 0 and the extent of the whole array. Consumes *type. */
static int darray_place(gcomm_datatype *type, ptrdiff_t disp, ptrdiff_t total,
                        gcomm_datatype *newtype)
{
    if (disp == 0) { /* already at the origin, with lb 0 and extent total */
        *newtype = *type;
        *type = GCOMM_DATATYPE_NULL;
        return GCOMM_SUCCESS;
    }
    gcomm_datatype shifted = GCOMM_DATATYPE_NULL;
    int status = gcomm_type_hindexed_block(1, 1, &disp, *type, &shifted);
    gcomm_type_free(type);
    if (status != GCOMM_SUCCESS) return status;
    status = gcomm_type_resized(shifted, 0, total, newtype);
    gcomm_type_free(&shifted);
    return status;
}

int gcomm_type_darray(int size, int rank, int ndims, const int gsizes[], const int distribs[],
                      const int dargs[], const int psizes[], int order, gcomm_datatype oldtype,
                      gcomm_datatype *newtype)
{
    GCOMMI_API_ENTRY();
    int status = darray_check_args(size, rank, ndims, gsizes, distribs, dargs, psizes, order,
                                   newtype);
    if (status != GCOMM_SUCCESS) return status;
    ptrdiff_t lb, extent; /* only the extent matters: element j lies j extents from the first */
    status = gcomm_type_get_extent(oldtype, &lb, &extent); /* also validates oldtype */
    if (status != GCOMM_SUCCESS) return status;

    /* Every byte offset below is at most the extent of the whole array in magnitude, so checking
     * that one product is enough for all but the cyclic strides (checked where made). */
    ptrdiff_t total = extent;
    for (int i = 0; i < ndims; i++) {
        status = darray_mul(total, gsizes[i], "the extent of the global array", &total);
        if (status != GCOMM_SUCCESS) return status;
    }

    /* An empty part in any dimension empties the whole: skip building on empty types. */
    for (int i = 0; i < ndims; i++) {
        if (darray_dim(i, rank, ndims, gsizes, distribs, dargs, psizes, 0).local == 0)
            return darray_empty(oldtype, total, newtype);
    }

    const int first = order == GCOMM_ORDER_C ? ndims - 1 : 0;
    const int step = order == GCOMM_ORDER_C ? -1 : 1;
    gcomm_datatype type = oldtype; /* borrowed until the first dimension is built */
    ptrdiff_t elem_step = extent, disp = 0;
    for (int n = 0, i = first; n < ndims; n++, i += step) {
        darray_dim_t d = darray_dim(i, rank, ndims, gsizes, distribs, dargs, psizes, elem_step);
        gcomm_datatype next = GCOMM_DATATYPE_NULL;
        status = darray_dimension(&d, type, &next);
        if (type != oldtype) gcomm_type_free(&type);
        if (status != GCOMM_SUCCESS) return status;
        type = next;
        disp += (ptrdiff_t)d.first * elem_step; /* < total: first < gsize, cannot overflow */
        elem_step *= gsizes[i];
    }
    return darray_place(&type, disp, total, newtype);
}
