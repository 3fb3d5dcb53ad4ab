/* Every datatype constructor and the edge semantics of issue 2, each against Open MPI.
 *
 * Each case is a hand-written recipe (random_type.h) built as an MPI type and as a gcomm type
 * with the same parameters and run through rt_check: size and bounds of every node, pack bytes,
 * unpack (gaps untouched), pack_range/unpack_range, copy, elements, signatures, and the import
 * with gcomm_type_from_mpi. A few cases also pin the values Open MPI gives (e.g. the padded
 * extent 24 of struct {double, int, int, char}). */
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "random_type.h"
#include "testutil.h"

static rt_check_opts opts = {.import = 0, .quiet = 0, .per_node = 1};
static uint64_t state;

/* use_reference: 0 = expect Open MPI's values; 1, 2 = the reference's (rt_check_opts), for
 * recipes that run into a known Open MPI defect (rt_ompi_defects) */
static void run_with(const char *name, rt_node *t, int use_reference)
{
    int before = gcommt_failures;
    if (rt_build(t)) {
        TEST_CHECK(0, "%s: could not be built", name);
    } else {
        int defects = rt_ompi_defects(t);
        int need = defects & RT_OMPI_STRIDE_MINUS_1 ? 2 : defects ? 1 : 0;
        TEST_CHECK(need == use_reference,
                   "%s: the case is marked use_reference = %d, rt_ompi_defects says %d", name,
                   use_reference, need);
        rt_check_opts o = opts;
        o.use_reference = use_reference;
        o.per_node = use_reference != 2;
        uint64_t s = state;
        rt_check(t, &state, &o);
        if (gcommt_failures != before) rt_minimise(t, s, &o);
    }
    if (gcommt_failures != before) {
        fprintf(stderr, "case '%s' failed; recipe:\n", name);
        rt_print(stderr, t, 2);
    }
    rt_free(t);
}

static void run(const char *name, rt_node *t) { run_with(name, t, 0); }

/* Runs a case and also checks MPI's (hence gcomm's) extent against a pinned value. */
static void run_pinned(const char *name, rt_node *t, ptrdiff_t lb, ptrdiff_t extent)
{
    if (rt_build(t) == 0) {
        MPI_Aint mlb, mext;
        ptrdiff_t glb = -1, gext = -1;
        MPI_Type_get_extent(t->mtype, &mlb, &mext);
        gcomm_type_get_extent(t->gtype, &glb, &gext);
        TEST_CHECK(mlb == lb && mext == extent, "%s: Open MPI lb/extent %ld/%ld, pinned %td/%td",
                   name, (long)mlb, (long)mext, lb, extent);
        TEST_CHECK(glb == lb && gext == extent, "%s: gcomm lb/extent %td/%td, pinned %td/%td",
                   name, glb, gext, lb, extent);
    }
    run(name, t);
}

#define B(x) rt_basic(RT_##x)

/* struct {double d; int i, j; char c;} as a C compiler lays it out */
static rt_node *dicc(void)
{
    rt_node *m[4] = {B(DOUBLE), B(INT), B(INT), B(CHAR)};
    return rt_struct(4, (int[]){1, 1, 1, 1}, (ptrdiff_t[]){0, 8, 12, 16}, m);
}

static void plain_constructors(void)
{
    run("contiguous", rt_contiguous(5, B(DOUBLE)));
    run("vector", rt_vector(4, 2, 3, B(INT)));
    run("vector stride = blocklength", rt_vector(3, 2, 2, B(FLOAT)));
    run("hvector", rt_hvector(3, 2, 20, B(FLOAT)));
    run("indexed", rt_indexed(3, (int[]){2, 1, 3}, (int[]){0, 5, 9}, B(INT16)));
    run("hindexed", rt_hindexed(3, (int[]){1, 2, 1}, (ptrdiff_t[]){3, 17, 40}, B(INT64)));
    run("indexed_block", rt_indexed_block(4, 2, (int[]){6, 0, 3, 9}, B(DOUBLE)));
    run("hindexed_block", rt_hindexed_block(3, 3, (ptrdiff_t[]){100, 0, 41}, B(CHAR)));
    run_pinned("struct {double,int,int,char}", dicc(), 0, 24);
    run_pinned("contiguous(3, struct {double,int,int,char})", rt_contiguous(3, dicc()), 0, 72);
    run("resized", rt_resized(B(INT), -4, 12));
    run("dup", rt_dup(B(DOUBLE)));
    run("dup of derived", rt_dup(rt_vector(3, 1, 2, dicc())));
    run("dup of dup of struct", rt_dup(rt_dup(dicc())));
    /* struct members of several basic types, unordered and with one handle used twice */
    rt_node *v = rt_vector(2, 1, 3, B(INT16));
    rt_node *m[5] = {B(CHAR), v, rt_ref(v), B(FLOAT), rt_contiguous(2, B(INT64))};
    run("struct, mixed members",
        rt_struct(5, (int[]){3, 1, 2, 1, 1}, (ptrdiff_t[]){-7, 40, 0, 101, -64}, m));
}

/* Rows of every width class of the CPU copy loops (pack_host.c): up to 64 bytes as fixed moves,
 * 96..992 bytes in multiples of 32 through rows_vec on AVX2 (x86 other than AMD), other widths
 * below 1 KiB through memcpy, 1 KiB and more through the block copies; forwards, backwards, and
 * as the rows of a 4-D subarray. */
static void row_widths(void)
{
    static const int doubles[] = {4, 8, 12, 16, 20, 31, 32, 100, 124, 125, 128, 130};
    for (unsigned k = 0; k < sizeof(doubles) / sizeof(doubles[0]); k++) {
        const int bl = doubles[k];
        char name[64];
        snprintf(name, sizeof(name), "vector of %d-byte rows", 8 * bl);
        run(name, rt_vector(5, bl, bl + 3, B(DOUBLE)));
        snprintf(name, sizeof(name), "vector of %d-byte rows, negative stride", 8 * bl);
        run(name, rt_vector(4, bl, -(bl + 5), B(DOUBLE)));
    }
    run("hvector of 96-byte rows at odd byte offsets", rt_hvector(6, 24, 101, B(INT)));
    run("subarray 4-D, 256-byte rows",
        rt_subarray(4, (int[]){4, 4, 6, 64}, (int[]){2, 2, 3, 32}, (int[]){1, 2, 3, 16},
                    GCOMM_ORDER_C, B(DOUBLE)));
}

static void negative_strides(void)
{
    run_pinned("vector negative stride", rt_vector(3, 2, -3, B(DOUBLE)), -48, 64);
    run("vector negative stride of struct", rt_vector(4, 1, -2, dicc()));
    run("vector zero stride (overlapping)", rt_vector(3, 2, 0, B(INT)));
    run_pinned("hvector negative stride", rt_hvector(3, 1, -5, B(DOUBLE)), -10, 24);
    run("hvector negative stride, blocks", rt_hvector(4, 3, -40, B(INT)));
    run("indexed negative displacements",
        rt_indexed(3, (int[]){1, 2, 1}, (int[]){-5, 2, -1}, B(FLOAT)));
    run("hindexed negative displacements",
        rt_hindexed(2, (int[]){2, 1}, (ptrdiff_t[]){-33, -3}, B(INT64)));
    run("hindexed_block unaligned displacements",
        rt_hindexed_block(3, 1, (ptrdiff_t[]){-3, 5, 1}, B(DOUBLE)));
    rt_node *m[2] = {B(DOUBLE), B(CHAR)};
    run("struct negative displacements",
        rt_struct(2, (int[]){1, 1}, (ptrdiff_t[]){0, -9}, m));
}

static void zero_counts(void)
{
    run_pinned("contiguous count 0", rt_contiguous(0, B(DOUBLE)), 0, 0);
    run_pinned("vector count 0", rt_vector(0, 2, 3, B(DOUBLE)), 0, 0);
    run_pinned("vector blocklength 0", rt_vector(3, 0, 3, B(DOUBLE)), 0, 0);
    run("hvector count 0", rt_hvector(0, 1, 8, B(INT)));
    run("indexed count 0", rt_indexed(0, NULL, NULL, B(INT)));
    run("hindexed count 0", rt_hindexed(0, NULL, NULL, B(INT)));
    run("indexed_block blocklength 0", rt_indexed_block(2, 0, (int[]){4, -4}, B(INT)));
    run("hindexed_block count 0", rt_hindexed_block(0, 3, NULL, B(INT)));
    run_pinned("struct count 0", rt_struct(0, NULL, NULL, NULL), 0, 0);
    /* zero blocklength blocks: no effect on the bounds */
    run_pinned("indexed {0@-50, 1@3, 0@100}",
               rt_indexed(3, (int[]){0, 1, 0}, (int[]){-50, 3, 100}, B(DOUBLE)), 24, 8);
    run("hindexed with zero blocks",
        rt_hindexed(4, (int[]){0, 2, 0, 1}, (ptrdiff_t[]){-1000, 4, 9, 20}, B(INT)));
    rt_node *m[3] = {B(DOUBLE), B(INT), B(CHAR)};
    run_pinned("struct {0 x double @-100, int @0, 0 x char @1000}",
               rt_struct(3, (int[]){0, 1, 0}, (ptrdiff_t[]){-100, 0, 1000}, m), 0, 4);
    /* all-zero types: every block empty */
    run_pinned("indexed, all blocklengths 0",
               rt_indexed(2, (int[]){0, 0}, (int[]){5, -5}, B(INT)), 0, 0);
    rt_node *z[2] = {B(DOUBLE), rt_resized(B(CHAR), -50, 200)};
    run_pinned("struct, all blocklengths 0 (resized member ignored)",
               rt_struct(2, (int[]){0, 0}, (ptrdiff_t[]){-50, 0}, z), 0, 0);
    run_pinned("contiguous of empty", rt_contiguous(5, rt_contiguous(0, B(INT))), 0, 0);
    run_pinned("resized empty", rt_resized(rt_contiguous(0, B(INT)), 3, 7), 3, 7);
    run("vector of resized empty", rt_vector(3, 2, 4, rt_resized(rt_contiguous(0, B(INT)), 3, 7)));
    rt_node *e[2] = {rt_contiguous(0, B(DOUBLE)), B(CHAR)};
    run("struct with an empty member", rt_struct(2, (int[]){2, 1}, (ptrdiff_t[]){-40, 5}, e));
}

/* Known Open MPI 4.1 defects (random_type.h): gcomm must follow the standard (the reference). */
static void ompi_defects(void)
{
    /* a byte stride of -1 is taken for "the default extent" by Open MPI */
    run_with("vector(2, 1, -1, char)", rt_vector(2, 1, -1, B(CHAR)), 2);
    run_with("vector(4, 3, -1, char)", rt_vector(4, 3, -1, B(CHAR)), 2);
    run_with("hvector(4, 1, -1 bytes, float)", rt_hvector(4, 1, -1, B(FLOAT)), 2);
    run_with("hvector(3, 2, -1 bytes, int16)", rt_hvector(3, 2, -1, B(INT16)), 2);
    run_with("contiguous(2, vector(3, 2, -1, char))",
             rt_contiguous(2, rt_vector(3, 2, -1, B(CHAR))), 2);
    /* an empty member after data leaves Open MPI's no-gaps flag set: count 2 packs wrong */
    rt_node *m[2] = {B(INT), rt_resized(rt_contiguous(0, B(INT)), 0, 16)};
    run_with("struct {int @0, resized(contiguous(0,int),0,16) @0}",
             rt_struct(2, (int[]){1, 1}, (ptrdiff_t[]){0, 0}, m), 1);
    rt_node *m2[2] = {rt_contiguous(2, B(DOUBLE)), rt_contiguous(0, B(CHAR))};
    run_with("struct {2 doubles @0, contiguous(0) @40}",
             rt_struct(2, (int[]){1, 1}, (ptrdiff_t[]){0, 40}, m2), 1);
    /* Open MPI refuses a darray of a type without data; gcomm accepts it. The standard's
     * result: no data, lb 0 and extent prod(gsizes) x extent(oldtype). */
    gcomm_datatype e = GCOMM_DATATYPE_NULL, r = GCOMM_DATATYPE_NULL, d = GCOMM_DATATYPE_NULL;
    TEST_OK(gcomm_type_contiguous(0, GCOMM_INT, &e));
    TEST_OK(gcomm_type_resized(e, 0, 4, &r));
    TEST_OK(gcomm_type_darray(2, 1, 1, (int[]){7}, (int[]){GCOMM_DISTRIBUTE_CYCLIC},
                              (int[]){2}, (int[]){2}, GCOMM_ORDER_C, r, &d));
    size_t size = 1;
    ptrdiff_t lb = -1, ext = -1;
    if (d) {
        gcomm_type_size(d, &size);
        gcomm_type_get_extent(d, &lb, &ext);
        gcomm_type_free(&d);
    }
    TEST_CHECK(size == 0 && lb == 0 && ext == 28,
               "darray of resized(contiguous(0),0,4): size %zu lb %td extent %td, expected 0 0 28",
               size, lb, ext);
    gcomm_type_free(&r);
    gcomm_type_free(&e);
}

/* Types without data as oldtypes: Open MPI's contiguous, indexed and hindexed return an empty
 * type (lb = ub = 0) for them, dropping resized markers; the other constructors place the
 * empty type's (0, 0) bounds (or its markers) at each displacement. gcomm follows Open MPI. */
static void empty_oldtypes(void)
{
    for (int k = 0; k < 2; k++) {
        const char *cn = k ? "resized(contiguous(0,int),3,7)" : "contiguous(0,int)";
        char name[160];
#define EMPTY_CHILD() (k ? rt_resized(rt_contiguous(0, B(INT)), 3, 7) : rt_contiguous(0, B(INT)))
        snprintf(name, sizeof name, "contiguous(3, %s)", cn);
        run(name, rt_contiguous(3, EMPTY_CHILD()));
        snprintf(name, sizeof name, "vector(3, 1, 2, %s)", cn);
        run(name, rt_vector(3, 1, 2, EMPTY_CHILD()));
        snprintf(name, sizeof name, "vector(2, 2, 1, %s)", cn);
        run(name, rt_vector(2, 2, 1, EMPTY_CHILD()));
        snprintf(name, sizeof name, "hvector(3, 1, 10, %s)", cn);
        run(name, rt_hvector(3, 1, 10, EMPTY_CHILD()));
        snprintf(name, sizeof name, "indexed(2, [1,1], [0,3], %s)", cn);
        run(name, rt_indexed(2, (int[]){1, 1}, (int[]){0, 3}, EMPTY_CHILD()));
        snprintf(name, sizeof name, "hindexed(2, [1,1], [0,30], %s)", cn);
        run(name, rt_hindexed(2, (int[]){1, 1}, (ptrdiff_t[]){0, 30}, EMPTY_CHILD()));
        snprintf(name, sizeof name, "indexed_block(2, 1, [0,3], %s)", cn);
        run(name, rt_indexed_block(2, 1, (int[]){0, 3}, EMPTY_CHILD()));
        snprintf(name, sizeof name, "hindexed_block(2, 1, [0,30], %s)", cn);
        run(name, rt_hindexed_block(2, 1, (ptrdiff_t[]){0, 30}, EMPTY_CHILD()));
        snprintf(name, sizeof name, "struct {%s @-40, char @5}", cn);
        run(name, rt_struct(2, (int[]){1, 1}, (ptrdiff_t[]){-40, 5},
                            (rt_node *[]){EMPTY_CHILD(), B(CHAR)}));
        snprintf(name, sizeof name, "subarray of %s", cn);
        run(name, rt_subarray(1, (int[]){4}, (int[]){2}, (int[]){1}, GCOMM_ORDER_C,
                              EMPTY_CHILD()));
        snprintf(name, sizeof name, "dup(%s)", cn);
        run(name, rt_dup(EMPTY_CHILD()));
#undef EMPTY_CHILD
    }
}

static void resized_cases(void)
{
    /* markers are sticky: the struct's bounds are the resized member's, however far the
     * other members lie */
    rt_node *m1[2] = {rt_resized(B(DOUBLE), 4, 4), B(CHAR)};
    run_pinned("struct {resized(double,4,4) @0, char @100}",
               rt_struct(2, (int[]){1, 1}, (ptrdiff_t[]){0, 100}, m1), 4, 4);
    rt_node *m2[2] = {B(CHAR), rt_resized(B(DOUBLE), 4, 4)};
    run_pinned("struct {char @-50, resized(double,4,4) @0}",
               rt_struct(2, (int[]){1, 1}, (ptrdiff_t[]){-50, 0}, m2), 4, 4);
    rt_node *m3[3] = {rt_resized(B(INT), -2, 3), B(DOUBLE), rt_resized(B(CHAR), 10, 5)};
    run_pinned("struct of two resized members and a double",
               rt_struct(3, (int[]){2, 1, 1}, (ptrdiff_t[]){0, 40, 100}, m3), -2, 117);
    run_pinned("contiguous(2, resized(char,0,3))", rt_contiguous(2, rt_resized(B(CHAR), 0, 3)),
               0, 6);
    run_pinned("resized smaller than the data (overlapping copies)",
               rt_vector(2, 1, 1, rt_resized(B(DOUBLE), 0, 3)), 0, 6);
    run("resized zero extent", rt_contiguous(3, rt_resized(B(INT), 0, 0)));
    run("resized negative lb", rt_vector(3, 2, -2, rt_resized(B(FLOAT), -6, 10)));
    /* nested resized: only the outermost markers count */
    run_pinned("resized(resized(vector))",
               rt_resized(rt_resized(rt_vector(3, 1, 2, B(INT)), -8, 40), 2, 10), 2, 10);
    run("contiguous(3, resized(resized(struct)))",
        rt_contiguous(3, rt_resized(rt_resized(dicc(), 0, 32), -8, 48)));
    rt_node *m4[2] = {rt_dup(rt_resized(rt_vector(2, 1, -3, B(INT16)), -12, 20)), B(INT64)};
    run("struct of dup(resized(vector negative stride))",
        rt_struct(2, (int[]){3, 1}, (ptrdiff_t[]){5, -16}, m4));
    run("subarray of resized", rt_subarray(2, (int[]){3, 4}, (int[]){2, 2}, (int[]){1, 1},
                                           GCOMM_ORDER_C, rt_resized(B(CHAR), -5, 10)));
}

static void subarrays(void)
{
    static const int orders[2] = {GCOMM_ORDER_C, GCOMM_ORDER_FORTRAN};
    for (int o = 0; o < 2; o++) {
        int ord = orders[o];
        const char *on = o ? "Fortran" : "C";
        char name[96];
        snprintf(name, sizeof name, "subarray 1-d %s", on);
        run(name, rt_subarray(1, (int[]){10}, (int[]){4}, (int[]){3}, ord, B(DOUBLE)));
        snprintf(name, sizeof name, "subarray 1-d whole %s", on);
        run(name, rt_subarray(1, (int[]){6}, (int[]){6}, (int[]){0}, ord, B(INT)));
        snprintf(name, sizeof name, "subarray 2-d %s", on);
        run_pinned(name,
                   rt_subarray(2, (int[]){5, 7}, (int[]){2, 3}, (int[]){1, 4}, ord, B(FLOAT)), 0,
                   140);
        snprintf(name, sizeof name, "subarray 2-d of struct %s", on);
        run(name, rt_subarray(2, (int[]){3, 4}, (int[]){3, 1}, (int[]){0, 2}, ord, dicc()));
        snprintf(name, sizeof name, "subarray 3-d %s", on);
        run(name, rt_subarray(3, (int[]){4, 3, 5}, (int[]){2, 3, 2}, (int[]){2, 0, 3}, ord,
                              B(INT16)));
        snprintf(name, sizeof name, "subarray 4-d %s", on);
        run(name, rt_subarray(4, (int[]){3, 4, 2, 5}, (int[]){2, 2, 1, 3}, (int[]){1, 0, 1, 2},
                              ord, B(INT64)));
        snprintf(name, sizeof name, "subarray 4-d of vector %s", on);
        run(name, rt_subarray(4, (int[]){2, 2, 3, 2}, (int[]){1, 2, 2, 1}, (int[]){1, 0, 0, 1},
                              ord, rt_vector(2, 1, 2, B(CHAR))));
        snprintf(name, sizeof name, "contiguous(2, subarray 2-d) %s", on);
        run(name, rt_contiguous(2, rt_subarray(2, (int[]){4, 4}, (int[]){2, 2}, (int[]){1, 1},
                                                ord, B(DOUBLE))));
    }
}

/* Every rank of one darray configuration. */
static void darray_all_ranks(const char *what, int ndims, const int *gsizes, const int *distribs,
                             const int *dargs, const int *psizes, rt_node *(*old)(void))
{
    int nprocs = 1;
    for (int d = 0; d < ndims; d++) nprocs *= psizes[d];
    static const int orders[2] = {GCOMM_ORDER_C, GCOMM_ORDER_FORTRAN};
    for (int o = 0; o < 2; o++)
        for (int r = 0; r < nprocs; r++) {
            char name[128];
            snprintf(name, sizeof name, "darray %s, %s order, rank %d of %d", what,
                     o ? "Fortran" : "C", r, nprocs);
            run(name, rt_darray(nprocs, r, ndims, gsizes, distribs, dargs, psizes, orders[o],
                                old()));
        }
}

static rt_node *old_int(void) { return B(INT); }
static rt_node *old_double(void) { return B(DOUBLE); }
static rt_node *old_resized(void) { return rt_resized(B(INT16), -2, 6); }

static void darrays(void)
{
    enum { BLK = GCOMM_DISTRIBUTE_BLOCK, CYC = GCOMM_DISTRIBUTE_CYCLIC, NON = GCOMM_DISTRIBUTE_NONE,
           DFLT = GCOMM_DISTRIBUTE_DFLT_DARG };
    darray_all_ranks("1-d block default", 1, (int[]){10}, (int[]){BLK}, (int[]){DFLT},
                     (int[]){3}, old_int);
    darray_all_ranks("1-d block darg 4", 1, (int[]){10}, (int[]){BLK}, (int[]){4}, (int[]){3},
                     old_int);
    darray_all_ranks("1-d block darg 5 (last rank empty)", 1, (int[]){10}, (int[]){BLK},
                     (int[]){5}, (int[]){3}, old_int);
    darray_all_ranks("1-d cyclic default", 1, (int[]){10}, (int[]){CYC}, (int[]){DFLT},
                     (int[]){3}, old_double);
    darray_all_ranks("1-d cyclic(2)", 1, (int[]){11}, (int[]){CYC}, (int[]){2}, (int[]){3},
                     old_double);
    darray_all_ranks("1-d cyclic(4), fewer elements than processes x 4", 1, (int[]){6},
                     (int[]){CYC}, (int[]){4}, (int[]){2}, old_double);
    darray_all_ranks("1-d none", 1, (int[]){7}, (int[]){NON}, (int[]){DFLT}, (int[]){1},
                     old_int);
    darray_all_ranks("2-d block x cyclic(2)", 2, (int[]){5, 7}, (int[]){CYC, BLK},
                     (int[]){2, DFLT}, (int[]){2, 3}, old_int);
    darray_all_ranks("2-d block x block", 2, (int[]){7, 9}, (int[]){BLK, BLK},
                     (int[]){DFLT, 4}, (int[]){2, 3}, dicc);
    darray_all_ranks("2-d cyclic x none", 2, (int[]){8, 3}, (int[]){CYC, NON}, (int[]){3, DFLT},
                     (int[]){3, 1}, old_resized);
    darray_all_ranks("3-d none x block x cyclic", 3, (int[]){3, 5, 7}, (int[]){NON, BLK, CYC},
                     (int[]){DFLT, DFLT, 2}, (int[]){1, 2, 2}, old_double);
    darray_all_ranks("3-d cyclic x cyclic x block", 3, (int[]){4, 6, 5}, (int[]){CYC, CYC, BLK},
                     (int[]){DFLT, 1, 3}, (int[]){2, 3, 2}, old_int);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
#ifdef GCOMMT_HAVE_IMPORT
    opts.import = 1;
#endif
    state = gcommt_seed(0x636f6e7374727563ull);
    printf("test_dt_constructors: seed 0x%016llx, import %s\n", (unsigned long long)state,
           opts.import ? "checked" : "NOT BUILT (no gcomm_mpi)");
    plain_constructors();
    row_widths();
    negative_strides();
    zero_counts();
    resized_cases();
    empty_oldtypes();
    ompi_defects();
    subarrays();
    darrays();
    MPI_Finalize();
    return gcommt_finish("test_dt_constructors");
}
