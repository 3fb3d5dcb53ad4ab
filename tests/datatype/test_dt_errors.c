/* Bad arguments to the datatype API (issue 2): each call returns the right GCOMM_ERR_* code,
 * gcomm_last_error_detail() names the argument, and nothing is written: the output handle, the
 * output buffers and the position are left as they were. Needs no MPI; where gcomm_mpi is built
 * the errors of gcomm_type_from_mpi are checked too. */
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef GCOMMT_HAVE_IMPORT
#include "gcomm/gcomm_mpi.h"
#endif
#include "testutil.h"

/* A handle value no constructor returns: a failing constructor must leave it in place. */
#define SENTINEL ((gcomm_datatype)(uintptr_t)0x5eb)

/* 1 when the detail is non-empty and names one of the '|'-separated words of args (NULL: any
 * non-empty detail). */
static int names_arg(const char *detail, const char *args)
{
    if (!detail || !detail[0]) return 0;
    if (!args) return 1;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", args);
    for (char *save = NULL, *w = strtok_r(buf, "|", &save); w; w = strtok_r(NULL, "|", &save))
        if (strstr(detail, w)) return 1;
    return 0;
}

/* Checks the code and that the detail names the argument. */
#define EXPECT(code, arg, call)                                                                \
    do {                                                                                       \
        int rc_ = (call);                                                                      \
        const char *d_ = gcomm_last_error_detail();                                            \
        TEST_CHECK(rc_ == (code), "%s returned %d (%s), expected %s; detail: %s", #call, rc_,  \
                   gcomm_error_string(rc_), #code, d_ ? d_ : "(null)");                       \
        TEST_CHECK(names_arg(d_, arg), "%s: the detail '%s' does not name '%s'", #call,        \
                   d_ ? d_ : "(null)", (const char *)(arg) ? (const char *)(arg) : "");        \
    } while (0)

/* A constructor call that must fail and leave newtype untouched. */
#define EXPECT_CTOR(code, arg, call)                                                           \
    do {                                                                                       \
        nt = SENTINEL;                                                                         \
        EXPECT(code, arg, call);                                                               \
        TEST_CHECK(nt == SENTINEL, "%s changed the output handle", #call);                     \
        if (nt != SENTINEL && nt) gcomm_type_free(&nt);                                        \
    } while (0)

static gcomm_datatype nt;

static void counts(void)
{
    const int bl[2] = {1, 2}, neg[2] = {1, -1}, di[2] = {0, 4};
    const ptrdiff_t hd[2] = {0, 16};
    gcomm_datatype types[2] = {GCOMM_INT, GCOMM_DOUBLE};
    EXPECT_CTOR(GCOMM_ERR_COUNT, "count", gcomm_type_contiguous(-1, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_COUNT, "count", gcomm_type_vector(-3, 1, 2, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_COUNT, "blocklength", gcomm_type_vector(2, -1, 2, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_COUNT, "count", gcomm_type_hvector(-1, 1, 8, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_COUNT, "blocklength", gcomm_type_hvector(2, -2, 8, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_COUNT, "count", gcomm_type_indexed(-1, bl, di, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_COUNT, "blocklengths", gcomm_type_indexed(2, neg, di, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_COUNT, "count", gcomm_type_hindexed(-2, bl, hd, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_COUNT, "blocklengths", gcomm_type_hindexed(2, neg, hd, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_COUNT, "count", gcomm_type_indexed_block(-1, 1, di, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_COUNT, "blocklength",
                gcomm_type_indexed_block(2, -1, di, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_COUNT, "count", gcomm_type_hindexed_block(-1, 1, hd, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_COUNT, "blocklength",
                gcomm_type_hindexed_block(2, -4, hd, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_COUNT, "count", gcomm_type_struct(-1, bl, hd, types, &nt));
    EXPECT_CTOR(GCOMM_ERR_COUNT, "blocklengths", gcomm_type_struct(2, neg, hd, types, &nt));
}

static void overflows(void)
{
    gcomm_datatype big = GCOMM_DATATYPE_NULL;
    TEST_OK(gcomm_type_contiguous(INT_MAX, GCOMM_DOUBLE, &big)); /* 16 GiB: fine */
    /* 2^31 x 2^34 bytes: the size overflows 63 bits */
    EXPECT_CTOR(GCOMM_ERR_OVERFLOW, "count", gcomm_type_contiguous(INT_MAX, big, &nt));
    EXPECT_CTOR(GCOMM_ERR_OVERFLOW, "count|blocklength",
                gcomm_type_vector(INT_MAX, 2, 3, big, &nt));
    /* a huge stride: the extent overflows, the size does not */
    EXPECT_CTOR(GCOMM_ERR_OVERFLOW, "stride", gcomm_type_vector(2, 1, INT_MAX, big, &nt));
    EXPECT_CTOR(GCOMM_ERR_OVERFLOW, "stride", gcomm_type_vector(2, 1, INT_MIN, big, &nt));
    EXPECT_CTOR(GCOMM_ERR_OVERFLOW, "stride",
                gcomm_type_hvector(2, 1, PTRDIFF_MAX, GCOMM_DOUBLE, &nt));
    EXPECT_CTOR(GCOMM_ERR_OVERFLOW, "stride",
                gcomm_type_hvector(3, 1, PTRDIFF_MAX / 2 + 1, GCOMM_CHAR, &nt));
    const int bl[2] = {1, 1};
    const ptrdiff_t far[2] = {PTRDIFF_MIN + 8, PTRDIFF_MAX - 8};
    EXPECT_CTOR(GCOMM_ERR_OVERFLOW, "displacements",
                gcomm_type_hindexed(2, bl, far, GCOMM_DOUBLE, &nt));
    EXPECT_CTOR(GCOMM_ERR_OVERFLOW, "displacements",
                gcomm_type_hindexed_block(2, 1, far, GCOMM_DOUBLE, &nt));
    const int idi[2] = {INT_MIN, INT_MAX};
    EXPECT_CTOR(GCOMM_ERR_OVERFLOW, "displacements", gcomm_type_indexed(2, bl, idi, big, &nt));
    gcomm_datatype types[2] = {GCOMM_DOUBLE, GCOMM_DOUBLE};
    EXPECT_CTOR(GCOMM_ERR_OVERFLOW, "displacements", gcomm_type_struct(2, bl, far, types, &nt));
    EXPECT_CTOR(GCOMM_ERR_OVERFLOW, "extent",
                gcomm_type_resized(GCOMM_DOUBLE, PTRDIFF_MAX - 4, 16, &nt));
    const int sizes[3] = {INT_MAX, INT_MAX, INT_MAX}, sub[3] = {1, 1, 1}, st[3] = {0, 0, 0};
    EXPECT_CTOR(GCOMM_ERR_OVERFLOW, "sizes",
                gcomm_type_subarray(3, sizes, sub, st, GCOMM_ORDER_C, GCOMM_DOUBLE, &nt));
    size_t size = 12345;
    gcomm_type_commit(&big);
    EXPECT(GCOMM_ERR_OVERFLOW, "incount", gcomm_pack_size(SIZE_MAX / 4, big, &size));
    TEST_CHECK(size == 12345, "gcomm_pack_size wrote %zu on failure", size);
    gcomm_type_free(&big);
}

static void null_arguments(void)
{
    const int bl[2] = {1, 2}, di[2] = {0, 4};
    const ptrdiff_t hd[2] = {0, 16};
    gcomm_datatype types[2] = {GCOMM_INT, GCOMM_DOUBLE};
    /* NULL arrays with a nonzero count */
    EXPECT_CTOR(GCOMM_ERR_ARG, "blocklengths", gcomm_type_indexed(2, NULL, di, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "displacements", gcomm_type_indexed(2, bl, NULL, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "blocklengths", gcomm_type_hindexed(2, NULL, hd, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "displacements", gcomm_type_hindexed(2, bl, NULL, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "displacements",
                gcomm_type_indexed_block(2, 1, NULL, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "displacements",
                gcomm_type_hindexed_block(2, 1, NULL, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "blocklengths", gcomm_type_struct(2, NULL, hd, types, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "displacements", gcomm_type_struct(2, bl, NULL, types, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "types", gcomm_type_struct(2, bl, hd, NULL, &nt));
    /* ... but NULL arrays with count 0 are fine */
    nt = GCOMM_DATATYPE_NULL;
    TEST_OK(gcomm_type_indexed(0, NULL, NULL, GCOMM_INT, &nt));
    gcomm_type_free(&nt);
    TEST_OK(gcomm_type_struct(0, NULL, NULL, NULL, &nt));
    gcomm_type_free(&nt);
    /* NULL newtype */
    const int sz[1] = {4}, sub[1] = {2}, st[1] = {1};
    const int dist[1] = {GCOMM_DISTRIBUTE_BLOCK}, darg[1] = {GCOMM_DISTRIBUTE_DFLT_DARG};
    EXPECT(GCOMM_ERR_ARG, "newtype", gcomm_type_contiguous(1, GCOMM_INT, NULL));
    EXPECT(GCOMM_ERR_ARG, "newtype", gcomm_type_vector(1, 1, 1, GCOMM_INT, NULL));
    EXPECT(GCOMM_ERR_ARG, "newtype", gcomm_type_hvector(1, 1, 1, GCOMM_INT, NULL));
    EXPECT(GCOMM_ERR_ARG, "newtype", gcomm_type_indexed(2, bl, di, GCOMM_INT, NULL));
    EXPECT(GCOMM_ERR_ARG, "newtype", gcomm_type_hindexed(2, bl, hd, GCOMM_INT, NULL));
    EXPECT(GCOMM_ERR_ARG, "newtype", gcomm_type_indexed_block(2, 1, di, GCOMM_INT, NULL));
    EXPECT(GCOMM_ERR_ARG, "newtype", gcomm_type_hindexed_block(2, 1, hd, GCOMM_INT, NULL));
    EXPECT(GCOMM_ERR_ARG, "newtype", gcomm_type_struct(2, bl, hd, types, NULL));
    EXPECT(GCOMM_ERR_ARG, "newtype",
           gcomm_type_subarray(1, sz, sub, st, GCOMM_ORDER_C, GCOMM_INT, NULL));
    EXPECT(GCOMM_ERR_ARG, "newtype",
           gcomm_type_darray(2, 0, 1, sz, dist, darg, (int[]){2}, GCOMM_ORDER_C, GCOMM_INT, NULL));
    EXPECT(GCOMM_ERR_ARG, "newtype", gcomm_type_resized(GCOMM_INT, 0, 8, NULL));
    EXPECT(GCOMM_ERR_ARG, "newtype", gcomm_type_dup(GCOMM_INT, NULL));
    /* NULL output pointers of queries and the lifecycle calls */
    EXPECT(GCOMM_ERR_ARG, "size", gcomm_type_size(GCOMM_INT, NULL));
    EXPECT(GCOMM_ERR_ARG, NULL, gcomm_type_get_extent(GCOMM_INT, NULL, NULL));
    EXPECT(GCOMM_ERR_ARG, NULL, gcomm_type_get_true_extent(GCOMM_INT, NULL, NULL));
    EXPECT(GCOMM_ERR_ARG, "elements", gcomm_type_get_elements(GCOMM_INT, NULL));
    EXPECT(GCOMM_ERR_ARG, "match", gcomm_type_match(GCOMM_INT, 1, GCOMM_INT, 1, NULL));
    EXPECT(GCOMM_ERR_ARG, "size", gcomm_pack_size(1, GCOMM_INT, NULL));
    EXPECT(GCOMM_ERR_ARG, "type", gcomm_type_commit(NULL));
    EXPECT(GCOMM_ERR_ARG, "type", gcomm_type_free(NULL));
}

static void subarray_darray_args(void)
{
    const int sz[2] = {4, 5}, sub[2] = {2, 3}, st[2] = {1, 1};
    EXPECT_CTOR(GCOMM_ERR_ARG, "order",
                gcomm_type_subarray(2, sz, sub, st, 99, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "ndims",
                gcomm_type_subarray(0, sz, sub, st, GCOMM_ORDER_C, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "ndims",
                gcomm_type_subarray(-1, sz, sub, st, GCOMM_ORDER_C, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "sizes",
                gcomm_type_subarray(2, (int[]){4, 0}, sub, st, GCOMM_ORDER_C, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "subsizes",
                gcomm_type_subarray(2, sz, (int[]){0, 3}, st, GCOMM_ORDER_C, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "subsizes",
                gcomm_type_subarray(2, sz, (int[]){2, 6}, (int[]){1, 0}, GCOMM_ORDER_FORTRAN,
                                    GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "starts",
                gcomm_type_subarray(2, sz, sub, (int[]){-1, 0}, GCOMM_ORDER_C, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "starts",
                gcomm_type_subarray(2, sz, sub, (int[]){3, 0}, GCOMM_ORDER_C, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "sizes",
                gcomm_type_subarray(2, NULL, sub, st, GCOMM_ORDER_C, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_TYPE, "oldtype",
                gcomm_type_subarray(2, sz, sub, st, GCOMM_ORDER_C, GCOMM_DATATYPE_NULL, &nt));

    const int gs[2] = {8, 6}, dflt[2] = {GCOMM_DISTRIBUTE_DFLT_DARG, GCOMM_DISTRIBUTE_DFLT_DARG};
    const int blk[2] = {GCOMM_DISTRIBUTE_BLOCK, GCOMM_DISTRIBUTE_BLOCK};
    const int ps[2] = {2, 3};
    EXPECT_CTOR(GCOMM_ERR_ARG, "order",
                gcomm_type_darray(6, 0, 2, gs, blk, dflt, ps, 7, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "psizes",
                gcomm_type_darray(5, 0, 2, gs, blk, dflt, ps, GCOMM_ORDER_C, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "rank",
                gcomm_type_darray(6, 6, 2, gs, blk, dflt, ps, GCOMM_ORDER_C, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "rank",
                gcomm_type_darray(6, -1, 2, gs, blk, dflt, ps, GCOMM_ORDER_C, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "gsizes",
                gcomm_type_darray(6, 0, 2, (int[]){8, 0}, blk, dflt, ps, GCOMM_ORDER_C,
                                  GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "distribs",
                gcomm_type_darray(6, 0, 2, gs, (int[]){GCOMM_DISTRIBUTE_BLOCK, 5}, dflt, ps,
                                  GCOMM_ORDER_C, GCOMM_INT, &nt));
    /* a block darg too small to cover the dimension: darg x psize < gsize */
    EXPECT_CTOR(GCOMM_ERR_ARG, "dargs",
                gcomm_type_darray(6, 0, 2, gs, blk, (int[]){3, GCOMM_DISTRIBUTE_DFLT_DARG}, ps,
                                  GCOMM_ORDER_C, GCOMM_INT, &nt));
    EXPECT_CTOR(GCOMM_ERR_ARG, "dargs",
                gcomm_type_darray(6, 0, 2, gs, (int[]){GCOMM_DISTRIBUTE_CYCLIC,
                                                      GCOMM_DISTRIBUTE_BLOCK},
                                  (int[]){0, GCOMM_DISTRIBUTE_DFLT_DARG}, ps, GCOMM_ORDER_C,
                                  GCOMM_INT, &nt));
    /* DISTRIBUTE_NONE needs a process-grid size of 1 in that dimension */
    EXPECT_CTOR(GCOMM_ERR_ARG, "psizes",
                gcomm_type_darray(6, 0, 2, gs, (int[]){GCOMM_DISTRIBUTE_NONE,
                                                      GCOMM_DISTRIBUTE_BLOCK},
                                  dflt, ps, GCOMM_ORDER_C, GCOMM_INT, &nt));
}

static void bad_handles(void)
{
    EXPECT_CTOR(GCOMM_ERR_TYPE, "oldtype",
                gcomm_type_contiguous(2, GCOMM_DATATYPE_NULL, &nt));
    EXPECT_CTOR(GCOMM_ERR_TYPE, "oldtype", gcomm_type_resized(GCOMM_DATATYPE_NULL, 0, 4, &nt));
    gcomm_datatype types[2] = {GCOMM_INT, GCOMM_DATATYPE_NULL};
    EXPECT_CTOR(GCOMM_ERR_TYPE, "types",
                gcomm_type_struct(2, (int[]){1, 1}, (ptrdiff_t[]){0, 8}, types, &nt));
    size_t size = 7;
    EXPECT(GCOMM_ERR_TYPE, "type", gcomm_type_size(GCOMM_DATATYPE_NULL, &size));
    TEST_CHECK(size == 7, "gcomm_type_size wrote on failure");
    gcomm_datatype null = GCOMM_DATATYPE_NULL;
    EXPECT(GCOMM_ERR_TYPE, "type", gcomm_type_commit(&null));
    EXPECT(GCOMM_ERR_TYPE, "type", gcomm_type_free(&null));

    /* a predefined type cannot be freed; the handle stays */
    gcomm_datatype pre = GCOMM_DOUBLE;
    EXPECT(GCOMM_ERR_TYPE, "type", gcomm_type_free(&pre));
    TEST_CHECK(pre == GCOMM_DOUBLE, "freeing a predefined type changed the handle");
    TEST_OK(gcomm_type_size(GCOMM_DOUBLE, &size));
    TEST_CHECK(size == 8, "GCOMM_DOUBLE broken after the failed free: size %zu", size);

    /* free sets the handle to NULL; a stale copy of a handle whose object a parent keeps
     * alive is refused everywhere, and the parent keeps working */
    gcomm_datatype child = GCOMM_DATATYPE_NULL, parent = GCOMM_DATATYPE_NULL;
    TEST_OK(gcomm_type_vector(3, 1, 2, GCOMM_INT, &child));
    TEST_OK(gcomm_type_contiguous(2, child, &parent));
    gcomm_datatype stale = child;
    TEST_OK(gcomm_type_free(&child));
    TEST_CHECK(child == GCOMM_DATATYPE_NULL, "gcomm_type_free did not set the handle to NULL");
    EXPECT_CTOR(GCOMM_ERR_TYPE, "oldtype", gcomm_type_contiguous(1, stale, &nt));
    EXPECT_CTOR(GCOMM_ERR_TYPE, "oldtype", gcomm_type_dup(stale, &nt));
    size = 7;
    EXPECT(GCOMM_ERR_TYPE, "type", gcomm_type_size(stale, &size));
    TEST_CHECK(size == 7, "gcomm_type_size of a freed handle wrote %zu", size);
    ptrdiff_t lb = 3, ext = 4;
    EXPECT(GCOMM_ERR_TYPE, "type", gcomm_type_get_extent(stale, &lb, &ext));
    TEST_CHECK(lb == 3 && ext == 4, "gcomm_type_get_extent of a freed handle wrote");
    EXPECT(GCOMM_ERR_TYPE, "type", gcomm_type_commit(&stale));
    gcomm_datatype stale2 = stale;
    EXPECT(GCOMM_ERR_TYPE, "type", gcomm_type_free(&stale2));
    TEST_CHECK(stale2 == stale, "a failed free changed the handle");
    int in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    unsigned char out[64];
    memset(out, 0xab, sizeof out);
    size_t pos = 5;
    EXPECT(GCOMM_ERR_TYPE, "type", gcomm_pack(in, 1, stale, out, sizeof out, &pos));
    TEST_CHECK(pos == 5, "position moved on failure");
    int m = -7;
    EXPECT(GCOMM_ERR_TYPE, "type", gcomm_type_match(stale, 1, GCOMM_INT, 3, &m));
    TEST_CHECK(m == -7, "gcomm_type_match wrote on failure");
    TEST_OK(gcomm_type_commit(&parent));
    TEST_OK(gcomm_type_size(parent, &size));
    TEST_CHECK(size == 6 * sizeof(int), "the parent of a freed child: size %zu", size);
    int big[16];
    for (int i = 0; i < 16; i++) big[i] = i;
    int packed[6] = {0};
    pos = 0;
    TEST_OK(gcomm_pack(big, 1, parent, packed, sizeof packed, &pos));
    /* vector(3,1,2,int) has extent 5 ints: elements 0 2 4, then 5 7 9 */
    TEST_CHECK(packed[0] == 0 && packed[1] == 2 && packed[2] == 4 && packed[3] == 5 &&
                   packed[4] == 7 && packed[5] == 9,
               "pack of the parent of a freed child: %d %d %d %d %d %d", packed[0], packed[1],
               packed[2], packed[3], packed[4], packed[5]);
    gcomm_type_free(&parent);
}

/* Pack/unpack argument errors: nothing written, position unchanged. */
static void pack_errors(void)
{
    gcomm_datatype v = GCOMM_DATATYPE_NULL;
    TEST_OK(gcomm_type_vector(4, 2, 3, GCOMM_INT, &v)); /* 8 ints packed, 11 ints of extent */
    int in[16];
    for (int i = 0; i < 16; i++) in[i] = 100 + i;
    unsigned char out[128], ref[128];
    gcommt_fill_random(ref, sizeof ref, &(uint64_t){42});
    memcpy(out, ref, sizeof out);
    size_t pos = 3;
#define UNCHANGED(what)                                                                        \
    TEST_CHECK(memcmp(out, ref, sizeof out) == 0 && pos == 3, "%s wrote something (position "  \
               "%zu)", what, pos)

    /* uncommitted type */
    EXPECT(GCOMM_ERR_NOT_COMMITTED, "type", gcomm_pack(in, 1, v, out, sizeof out, &pos));
    UNCHANGED("pack with an uncommitted type");
    EXPECT(GCOMM_ERR_NOT_COMMITTED, "type", gcomm_unpack(in, sizeof in, &pos, out, 1, v));
    UNCHANGED("unpack with an uncommitted type");
    EXPECT(GCOMM_ERR_NOT_COMMITTED, "type", gcomm_pack_range(in, 1, v, 0, 8, out));
    UNCHANGED("pack_range with an uncommitted type");
    EXPECT(GCOMM_ERR_NOT_COMMITTED, "type", gcomm_unpack_range(in, 0, 8, out, 1, v));
    UNCHANGED("unpack_range with an uncommitted type");
    EXPECT(GCOMM_ERR_NOT_COMMITTED, "srctype", gcomm_copy(in, 1, v, out, 32, GCOMM_INT, NULL));
    UNCHANGED("copy from an uncommitted type");
    EXPECT(GCOMM_ERR_NOT_COMMITTED, "dsttype", gcomm_copy(in, 8, GCOMM_INT, out, 1, v, NULL));
    UNCHANGED("copy to an uncommitted type");
    TEST_OK(gcomm_type_commit(&v));

    /* too-short output / insufficient input: TRUNCATE, nothing written, position unchanged */
    EXPECT(GCOMM_ERR_TRUNCATE, "outsize", gcomm_pack(in, 1, v, out, 3 + 31, &pos));
    UNCHANGED("pack into a short buffer");
    EXPECT(GCOMM_ERR_TRUNCATE, "outsize", gcomm_pack(in, 2, v, out, 3 + 40, &pos));
    UNCHANGED("pack of count 2 into a buffer for 1");
    EXPECT(GCOMM_ERR_TRUNCATE, "insize", gcomm_unpack(in, 3 + 31, &pos, out, 1, v));
    UNCHANGED("unpack from a short input");
    /* a position beyond the buffer is a bad argument */
    pos = sizeof out + 1;
    EXPECT(GCOMM_ERR_ARG, "position", gcomm_pack(in, 1, v, out, sizeof out, &pos));
    TEST_CHECK(pos == sizeof out + 1 && memcmp(out, ref, sizeof out) == 0,
               "pack with a position beyond outsize wrote something");
    pos = 3;

    /* ranges beyond the packed size: GCOMM_ERR_ARG (the header: bytes [offset, offset + bytes)
     * of the packed stream; a range outside it is a bad argument, not a short buffer) */
    EXPECT(GCOMM_ERR_ARG, "range", gcomm_pack_range(in, 1, v, 30, 3, out));
    UNCHANGED("pack_range past the end");
    EXPECT(GCOMM_ERR_ARG, "range", gcomm_pack_range(in, 1, v, 33, 0, out));
    UNCHANGED("empty pack_range past the end");
    EXPECT(GCOMM_ERR_ARG, "range", gcomm_pack_range(in, 1, v, SIZE_MAX, 2, out));
    UNCHANGED("pack_range with offset + bytes wrapping around");
    EXPECT(GCOMM_ERR_ARG, "range", gcomm_unpack_range(in, 16, 17, out, 1, v));
    UNCHANGED("unpack_range past the end");
    TEST_OK(gcomm_pack_range(in, 1, v, 32, 0, out)); /* empty range at the end: fine */
    UNCHANGED("empty pack_range at the end");

    /* NULL buffers with data to move: GCOMM_ERR_BUFFER */
    EXPECT(GCOMM_ERR_BUFFER, "inbuf", gcomm_pack(NULL, 1, v, out, sizeof out, &pos));
    UNCHANGED("pack from NULL");
    EXPECT(GCOMM_ERR_BUFFER, "outbuf", gcomm_pack(in, 1, v, NULL, sizeof out, &pos));
    TEST_CHECK(pos == 3, "pack to NULL moved the position");
    EXPECT(GCOMM_ERR_BUFFER, "inbuf", gcomm_unpack(NULL, sizeof out, &pos, out, 1, v));
    UNCHANGED("unpack from NULL");
    EXPECT(GCOMM_ERR_BUFFER, "outbuf", gcomm_unpack(in, sizeof in, &pos, NULL, 1, v));
    TEST_CHECK(pos == 3, "unpack to NULL moved the position");
    EXPECT(GCOMM_ERR_BUFFER, "inbuf", gcomm_pack_range(NULL, 1, v, 0, 8, out));
    UNCHANGED("pack_range from NULL");
    EXPECT(GCOMM_ERR_BUFFER, "outbuf", gcomm_pack_range(in, 1, v, 0, 8, NULL));
    EXPECT(GCOMM_ERR_BUFFER, "inbuf", gcomm_unpack_range(NULL, 0, 8, out, 1, v));
    UNCHANGED("unpack_range from NULL");
    EXPECT(GCOMM_ERR_BUFFER, "outbuf", gcomm_unpack_range(in, 0, 8, NULL, 1, v));
    EXPECT(GCOMM_ERR_BUFFER, "src", gcomm_copy(NULL, 1, v, out, 8, GCOMM_INT, NULL));
    UNCHANGED("copy from NULL");
    EXPECT(GCOMM_ERR_BUFFER, "dst", gcomm_copy(in, 1, v, NULL, 8, GCOMM_INT, NULL));
    EXPECT(GCOMM_ERR_ARG, "position", gcomm_pack(in, 1, v, out, sizeof out, NULL));
    UNCHANGED("pack with a NULL position");
    /* NULL buffers with nothing to move are fine */
    TEST_OK(gcomm_pack(NULL, 0, v, NULL, 0, &(size_t){0}));
    TEST_OK(gcomm_unpack(NULL, 0, &(size_t){0}, NULL, 0, v));
    TEST_OK(gcomm_pack_range(NULL, 1, v, 4, 0, NULL));

    /* gcomm_copy with mismatched signatures: nothing written */
    EXPECT(GCOMM_ERR_TYPE_MISMATCH, NULL, gcomm_copy(in, 1, v, out, 4, GCOMM_DOUBLE, NULL));
    UNCHANGED("copy int -> double");
    EXPECT(GCOMM_ERR_TYPE_MISMATCH, NULL, gcomm_copy(in, 2, v, out, 8, GCOMM_INT, NULL));
    UNCHANGED("copy of 16 ints into 8");
    EXPECT(GCOMM_ERR_TYPE_MISMATCH, NULL, gcomm_copy(in, 8, GCOMM_INT32, out, 1, v, NULL));
    UNCHANGED("copy int32 -> int (different names)");
    /* a prefix is fine: 8 ints into room for 9 */
    TEST_OK(gcomm_copy(in, 1, v, out, 9, GCOMM_INT, NULL));
    int got[8];
    memcpy(got, out, sizeof got);
    TEST_CHECK(got[0] == 100 && got[1] == 101 && got[2] == 103 && got[7] == 110,
               "copy of a vector into ints: %d %d %d .. %d", got[0], got[1], got[2], got[7]);
    TEST_CHECK(memcmp(out + 32, ref + 32, sizeof out - 32) == 0,
               "copy wrote past the 8 ints of the source");
    gcomm_type_free(&v);
#undef UNCHANGED
}

#ifdef GCOMMT_HAVE_IMPORT
static void import_errors(void)
{
    EXPECT_CTOR(GCOMM_ERR_UNSUPPORTED, NULL, gcomm_type_from_mpi(MPI_LONG_DOUBLE, &nt));
    MPI_Datatype s;
    MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){0, 16},
                           (MPI_Datatype[]){MPI_INT, MPI_LONG_DOUBLE}, &s);
    EXPECT_CTOR(GCOMM_ERR_UNSUPPORTED, NULL, gcomm_type_from_mpi(s, &nt));
    MPI_Type_free(&s);
    EXPECT_CTOR(GCOMM_ERR_TYPE, NULL, gcomm_type_from_mpi(MPI_DATATYPE_NULL, &nt));
    EXPECT(GCOMM_ERR_ARG, "newtype", gcomm_type_from_mpi(MPI_INT, NULL));
}
#endif

/* Level `levels` of a nesting: struct {t, second(t)} at displacements 0 and extent + 8, where
 * second is t itself (kind 0), a dup of t (1) or contiguous(1, t) (2): the same layout as t, a
 * different handle. */
static gcomm_datatype nested_structs(int levels, int kind)
{
    gcomm_datatype t;
    TEST_OK(gcomm_type_contiguous(3, GCOMM_DOUBLE, &t));
    for (int level = 0; level < levels; level++) {
        gcomm_datatype other = t, next;
        if (kind == 1) TEST_OK(gcomm_type_dup(t, &other));
        if (kind == 2) TEST_OK(gcomm_type_contiguous(1, t, &other));
        const int bl[2] = {1, 1};
        ptrdiff_t ext, lb;
        gcomm_type_get_extent(t, &lb, &ext);
        const ptrdiff_t d[2] = {0, ext + 8};
        const gcomm_datatype types[2] = {t, other};
        TEST_OK(gcomm_type_struct(2, bl, d, types, &next));
        if (other != t) gcomm_type_free(&other);
        gcomm_type_free(&t);
        t = next;
    }
    return t;
}

/* A struct whose members reuse one child, nested 40 deep, is a small DAG whose tree expansion is
 * 2^40: commit must build the child's normal form once per level, also when the second member is
 * a dup of the first; and refuse, not hang, when a type's normal form really is too large (the
 * second member a contiguous(1, t): another type of the same layout, built again at every
 * level), leaving the handle as it was and the type uncommitted. */
static void commit_nested_structs(void)
{
    const int levels = 10; /* small enough to pack */
    gcomm_datatype t = nested_structs(levels, 0), d = nested_structs(levels, 1);
    size_t size = 0;
    gcomm_type_size(t, &size);
    TEST_CHECK(size == ((size_t)3 * 8) << levels, "nested struct size %zu", size);
    TEST_OK(gcomm_type_commit(&t));
    TEST_OK(gcomm_type_commit(&d));
    /* packs of the two are the same bytes, and the same as the type map's (the elements, in
     * order, are the doubles of the 2^levels copies of contiguous(3) at their displacements) */
    ptrdiff_t lb, ext;
    gcomm_type_get_true_extent(t, &lb, &ext);
    double *in = malloc((size_t)ext), *pt = malloc(size), *pd = malloc(size);
    for (size_t i = 0; i < (size_t)ext / sizeof(double); i++) in[i] = (double)i;
    size_t pos_t = 0, pos_d = 0;
    TEST_OK(gcomm_pack(in, 1, t, pt, size, &pos_t));
    TEST_OK(gcomm_pack(in, 1, d, pd, size, &pos_d));
    TEST_CHECK(pos_t == size && pos_d == size && memcmp(pt, pd, size) == 0,
               "struct {t, dup(t)} packs %zu bytes unlike struct {t, t} (%zu)", pos_d, pos_t);
    /* element k: copy k of the 3 doubles sits at sum over the bits b of k of (extent_b + 8),
     * where extent_b = 24 * 2^b + 8 * (2^b - 1) is the extent of level b */
    int bad = 0;
    for (size_t k = 0; k < ((size_t)1 << levels); k++) {
        size_t off = 0;
        for (int b = 0; b < levels; b++)
            if (k >> b & 1) off += 24 * ((size_t)1 << b) + 8 * (((size_t)1 << b) - 1) + 8;
        for (int e = 0; e < 3; e++) bad += pt[3 * k + e] != in[off / 8 + e];
    }
    TEST_CHECK(bad == 0, "nested struct pack: %d doubles differ from the type map", bad);
    free(in), free(pt), free(pd);
    gcomm_type_free(&t);
    gcomm_type_free(&d);

    t = nested_structs(40, 0);
    TEST_OK(gcomm_type_commit(&t)); /* 2^40 leaves as a tree; linear as blocks over one child */
    gcomm_type_free(&t);
    d = nested_structs(40, 1);
    TEST_OK(gcomm_type_commit(&d));
    gcomm_type_free(&d);

    gcomm_datatype c = nested_structs(24, 2), before = c;
    EXPECT(GCOMM_ERR_UNSUPPORTED, "nodes", gcomm_type_commit(&c));
    TEST_CHECK(c == before, "a refused commit changed the handle");
    size_t pos = 0;
    char out[8];
    EXPECT(GCOMM_ERR_NOT_COMMITTED, "commit", gcomm_pack(out, 0, c, out, sizeof out, &pos));
    gcomm_type_free(&c);
}

/* Predefined types are address constants: usable in static initialisers, before any call. */
static const gcomm_datatype static_table[] = {GCOMM_DOUBLE, GCOMM_INT16, GCOMM_CHAR};

static void predefined_static(void)
{
    size_t s[3];
    for (int i = 0; i < 3; i++) TEST_OK(gcomm_type_size(static_table[i], &s[i]));
    TEST_CHECK(s[0] == 8 && s[1] == 2 && s[2] == 1, "predefined sizes %zu %zu %zu", s[0], s[1], s[2]);
}

int main(int argc, char **argv)
{
    /* The refusal in commit_nested_structs at a node limit that is quick to reach (the default,
     * 4M nodes, takes seconds to build under the sanitizers); before gcomm reads its
     * configuration, unless the caller set one. */
    setenv("GCOMM_TYPE_MAX_NODES", "65536", 0);
    commit_nested_structs();
    predefined_static();
#ifdef GCOMMT_HAVE_IMPORT
    MPI_Init(&argc, &argv);
#else
    (void)argc;
    (void)argv;
#endif
    counts();
    overflows();
    null_arguments();
    subarray_darray_args();
    bad_handles();
    pack_errors();
#ifdef GCOMMT_HAVE_IMPORT
    import_errors();
    MPI_Finalize();
#endif
    return gcommt_finish("test_dt_errors");
}
