/* gcomm against Open MPI on thousands of random nested datatypes (issue 2).
 *
 * Each random recipe (random_type.c: depth up to 4, every constructor, negative strides and
 * displacements, zero counts and blocklengths, resized bounds seen by parents, mixed struct
 * members) is built as an MPI type and as a gcomm type with the same parameters, and rt_check
 * compares: size and bounds of every node, pack bytes (count > 1, nonzero start position, the
 * whole output buffer), unpack (whole buffer, gaps untouched; non-overlapping typemaps only),
 * pack_range / unpack_range over random cuts, gcomm_copy, elements and signature matching —
 * for the constructed type and for its import with gcomm_type_from_mpi.
 *
 * Usage: test_dt_vs_mpi [ntypes]   (default 3000)
 * A failure prints the type's seed; GCOMM_TEST_SEED=<that seed> test_dt_vs_mpi 1 rebuilds it.
 * GCOMMT_MINIMISE_ALL=1 prints the smallest failing subtree of every failing type (not only
 * the first); GCOMMT_TRACE=1 prints every type before it is checked (to attribute a crash). */
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "random_type.h"
#include "testutil.h"

static uint64_t next_seed(uint64_t x)
{
    /* splitmix64 */
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x ? x : 1;
}

static long kinds_seen[RT_NKINDS];
static long depth_seen[8];

static int census(const rt_node *n)
{
    kinds_seen[n->kind]++;
    int d = 0;
    for (int i = 0; i < n->nchild; i++) {
        int cd = census(n->child[i]);
        if (cd > d) d = cd;
    }
    return n->kind == RT_BASIC ? 0 : d + 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    long ntypes = argc > 1 ? atol(argv[1]) : 3000;
    uint64_t seed = gcommt_seed(0x6763306d6d5f6474ull);
    rt_limits lim = {.max_depth = 4, .max_size = 64 * 1024, .max_span = 1 << 20};
    rt_check_opts opts = {.import = 0, .quiet = 0, .per_node = 1};
#ifdef GCOMMT_HAVE_IMPORT
    opts.import = 1;
#endif
    printf("test_dt_vs_mpi: %ld random types, seed 0x%016llx, import %s\n", ntypes,
           (unsigned long long)seed, opts.import ? "checked" : "NOT BUILT (no gcomm_mpi)");

    /* GCOMMT_MINIMISE_ALL=1: print the smallest failing subtree of every failing type */
    int minimise_all = getenv("GCOMMT_MINIMISE_ALL") != NULL;
    /* GCOMMT_TRACE=1: print every type before checking it */
    int trace = getenv("GCOMMT_TRACE") != NULL;
    int reported = 0;
    long failed_types = 0, stride_bug_types = 0, empty_member_types = 0;
    uint64_t tseed = seed;
    for (long i = 0; i < ntypes; i++, tseed = next_seed(tseed)) {
        uint64_t s = tseed;
        rt_node *t = rt_random(&s, &lim);
        if (trace) { /* a crash is then attributed to its type */
            fprintf(stderr, "type %ld seed 0x%016llx\n", i, (unsigned long long)tseed);
            rt_print(stderr, t, 2);
        }
        int d = census(t);
        depth_seen[d < 7 ? d : 7]++;
        int failed, defects;
        if (rt_build(t)) {
            TEST_CHECK(0, "type %ld could not be built", i);
            failed = 1;
        } else if ((defects = rt_ompi_defects(t)) & RT_OMPI_STRIDE_MINUS_1) {
            /* Open MPI is wrong, and the standard leaves the epsilon padding of such types to
             * the implementation: no oracle. test_dt_constructors covers the class with types
             * whose bounds are unambiguous. */
            stride_bug_types++;
            failed = 0;
        } else if (defects & RT_OMPI_EMPTY_AFTER_DATA) {
            /* Open MPI packs these wrong: the data comes from the reference typemap */
            uint64_t check_seed = s;
            rt_check_opts ref_opts = opts;
            ref_opts.use_reference = 1;
            empty_member_types++;
            failed = rt_check(t, &s, &ref_opts) != 0;
            if (failed && (reported == 0 || minimise_all)) rt_minimise(t, check_seed, &ref_opts);
        } else {
            uint64_t check_seed = s;
            failed = rt_check(t, &s, &opts) != 0;
            if (failed && (reported == 0 || minimise_all)) rt_minimise(t, check_seed, &opts);
        }
        if (failed) {
            failed_types++;
            if (reported++ < 3) {
                fprintf(stderr,
                        "type %ld failed; replay with GCOMM_TEST_SEED=0x%016llx %s 1\n"
                        "recipe:\n",
                        i, (unsigned long long)tseed, argv[0]);
                rt_print(stderr, t, 2);
            }
        }
        rt_free(t);
    }

    printf("types by depth:");
    for (int d = 0; d < 8; d++) printf(" %d:%ld", d, depth_seen[d]);
    printf("\nnodes by kind:");
    static const char *kn[RT_NKINDS] = {"basic",   "contig",   "vector", "hvector", "indexed",
                                        "hindexed", "idx_block", "hidx_block", "struct",
                                        "subarray", "darray",  "resized", "dup"};
    for (int k = 0; k < RT_NKINDS; k++) printf(" %s:%ld", kn[k], kinds_seen[k]);
    printf("\nOpen MPI vs the standard (reference): %ld nodes, %ld with Open MPI's per-block "
           "alignment padding of ub, %ld other bounds differences; %ld packs, %ld pack and %ld "
           "unpack differences\n",
           rt_stats.nodes, rt_stats.eps_differs, rt_stats.bounds_differs, rt_stats.packs,
           rt_stats.pack_differs, rt_stats.unpack_differs);
    printf("known Open MPI defects (random_type.h): %ld empty types with garbage true bounds "
           "(0/0 expected instead); %ld types with a -1 byte stride skipped; %ld types with an "
           "empty struct member after data packed by the reference\n",
           rt_stats.empty_true_garbage, stride_bug_types, empty_member_types);
    if (failed_types) printf("%ld of %ld types failed\n", failed_types, ntypes);
    MPI_Finalize();
    return gcommt_finish("test_dt_vs_mpi");
}
