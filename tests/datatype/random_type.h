/* Datatype recipes for the datatype tests.
 *
 * A recipe is a tree of constructor calls with their parameters (rt_node). The same recipe is
 * built twice, as an MPI type and as a gcomm type with the same parameters (rt_build), expanded
 * independently of both by typemap_ref.c, and printed in readable form when a check fails.
 * Recipes come from the hand-written builders below (test_dt_constructors.c) or from the seeded
 * random generator (test_dt_vs_mpi.c). rt_check compares one built recipe across gcomm, MPI and
 * the reference: bounds, pack, unpack, ranges, elements, signatures (and the MPI import). */
#ifndef GCOMMT_RANDOM_TYPE_H
#define GCOMMT_RANDOM_TYPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <mpi.h>

#include "gcomm/datatype.h"

/* Basic leaves: MPI_DOUBLE, MPI_FLOAT, MPI_INT, MPI_CHAR, MPI_INT16_T, MPI_INT64_T and their
 * gcomm twins. */
typedef enum { RT_DOUBLE, RT_FLOAT, RT_INT, RT_CHAR, RT_INT16, RT_INT64, RT_NBASIC } rt_basic_t;

typedef enum {
    RT_BASIC,
    RT_CONTIGUOUS,
    RT_VECTOR,
    RT_HVECTOR,
    RT_INDEXED,
    RT_HINDEXED,
    RT_INDEXED_BLOCK,
    RT_HINDEXED_BLOCK,
    RT_STRUCT,
    RT_SUBARRAY,
    RT_DARRAY,
    RT_RESIZED,
    RT_DUP,
    RT_NKINDS
} rt_kind_t;

#define RT_MAX_DIMS 4

struct tm_map; /* typemap_ref.h */

typedef struct rt_node {
    rt_kind_t kind;
    int refs;                 /* a struct may use one child for several members */
    rt_basic_t basic;         /* RT_BASIC */
    int count;                /* contiguous, vector, hvector, (h)indexed(_block), struct */
    int blocklength;          /* vector, hvector, (h)indexed_block */
    ptrdiff_t stride;         /* vector: in extents of the child; hvector: in bytes */
    int *blocklengths;        /* indexed, hindexed, struct: count entries */
    ptrdiff_t *displs;        /* (h)indexed(_block), struct: count entries; in extents for the
                                 non-h variants (then they fit an int) */
    int ndims, order;         /* subarray, darray: GCOMM_ORDER_C / GCOMM_ORDER_FORTRAN */
    int sizes[RT_MAX_DIMS];   /* subarray sizes; darray gsizes */
    int subsizes[RT_MAX_DIMS], starts[RT_MAX_DIMS];                        /* subarray */
    int distribs[RT_MAX_DIMS], dargs[RT_MAX_DIMS], psizes[RT_MAX_DIMS];    /* darray (gcomm enums) */
    int nprocs, rank;                                                      /* darray */
    ptrdiff_t lb, extent;     /* resized */
    int nchild;
    struct rt_node **child;   /* struct: count children; basic: none; others: one */

    /* filled by rt_build; owned by the node */
    gcomm_datatype gtype;
    MPI_Datatype mtype;
    int built;
    int commit_before_use;    /* commit both handles before a parent is built from them */
    /* reference expansion cache (typemap_ref.c) */
    struct tm_map *ref;
} rt_node;

/* --- hand-written recipes (each takes ownership of its children) --- */
rt_node *rt_basic(rt_basic_t b);
rt_node *rt_contiguous(int count, rt_node *c);
rt_node *rt_vector(int count, int blocklength, int stride, rt_node *c);
rt_node *rt_hvector(int count, int blocklength, ptrdiff_t stride, rt_node *c);
rt_node *rt_indexed(int count, const int *bl, const int *displs, rt_node *c);
rt_node *rt_hindexed(int count, const int *bl, const ptrdiff_t *displs, rt_node *c);
rt_node *rt_indexed_block(int count, int bl, const int *displs, rt_node *c);
rt_node *rt_hindexed_block(int count, int bl, const ptrdiff_t *displs, rt_node *c);
rt_node *rt_struct(int count, const int *bl, const ptrdiff_t *displs, rt_node **children);
rt_node *rt_subarray(int ndims, const int *sizes, const int *subsizes, const int *starts,
                     int order, rt_node *c);
rt_node *rt_darray(int nprocs, int rank, int ndims, const int *gsizes, const int *distribs,
                   const int *dargs, const int *psizes, int order, rt_node *c);
rt_node *rt_resized(rt_node *c, ptrdiff_t lb, ptrdiff_t extent);
rt_node *rt_dup(rt_node *c);
/* Another reference to n (for a struct that uses one child twice). */
rt_node *rt_ref(rt_node *n);
void rt_free(rt_node *n);

/* --- random recipes --- */
typedef struct {
    int max_depth;            /* constructor levels above the leaves (issue: up to 4) */
    size_t max_size;          /* packed bytes of one instance */
    size_t max_span;          /* bytes of memory one instance may touch */
} rt_limits;

/* A random recipe within the limits (checked with the reference expansion). */
rt_node *rt_random(uint64_t *state, const rt_limits *lim);

/* --- build, print, check --- */
/* Builds every node bottom-up as MPI and gcomm types with the same parameters. Returns 0, or -1
 * after printing which constructor refused (that is a test failure for valid recipes). */
int rt_build(rt_node *n);
/* Prints the recipe as an indented tree. */
void rt_print(FILE *f, const rt_node *n, int indent);
const char *rt_basic_name(rt_basic_t b);
MPI_Datatype rt_basic_mpi(rt_basic_t b);
gcomm_datatype rt_basic_gcomm(rt_basic_t b);

typedef struct {
    int import;               /* also check gcomm_type_from_mpi (needs GCOMMT_HAVE_IMPORT) */
    int quiet;                /* 0: print and count failures; 1: silent, not counted (while
                                 minimising); 2: print but do not count */
    int per_node;             /* compare the bounds of every inner node too */
    int use_reference;        /* for recipes that hit a known Open MPI defect: 1 = expect the
                                 reference's packed/unpacked bytes (bounds still Open MPI's);
                                 2 = the reference's values for everything */
} rt_check_opts;

/* Open MPI against the reference expander (the MPI standard's definitions), for the report.
 * Not test failures: the tests compare gcomm with Open MPI; these say who is right. */
typedef struct {
    long nodes;               /* nodes whose bounds were compared */
    long eps_differs;         /* ub larger only by Open MPI's per-block alignment padding */
    long bounds_differs;      /* any other bounds/size difference */
    long packs;               /* packs compared */
    long pack_differs;        /* Open MPI's packed bytes differ from the typemap's */
    long unpack_differs;      /* Open MPI's unpacked buffer differs from the typemap's */
    long empty_true_garbage;  /* empty types whose true bounds Open MPI leaves at LONG_MAX/1 */
} rt_ref_stats;

extern rt_ref_stats rt_stats;

/* Runs every check on a built recipe; failures go through TEST_CHECK (counted in
 * gcommt_failures) unless opts->quiet. Returns the number of failed checks. */
int rt_check(rt_node *root, uint64_t *state, const rt_check_opts *opts);

/* Known Open MPI 4.1 defects a built recipe runs into (a bit mask); such recipes are checked
 * against the reference (rt_check_opts.use_reference) instead of Open MPI:
 * RT_OMPI_STRIDE_MINUS_1: a (h)vector with a byte stride of exactly -1 between blocks. Open MPI
 *   passes the stride as the extent to opal_datatype_add, where -1 means "the default extent",
 *   so bounds and packed bytes are wrong (MPI_Type_vector(2, 1, -1, MPI_CHAR) packs bytes 0, 1
 *   instead of 0, -1). Use the reference for everything.
 * RT_OMPI_EMPTY_AFTER_DATA: a struct member with no data but count > 0 after a member with data.
 *   Open MPI returns early from opal_datatype_add for a size-0 type after updating lb/ub but
 *   before clearing the contiguous/no-gaps flags, so with count > 1 it packs the instances
 *   back to back: struct {int @0, resized(contiguous(0, int), 0, 16) @0} x 2 packs bytes 0-7
 *   instead of 0-3 and 16-19. Its bounds are right: use the reference for data only. */
enum { RT_OMPI_STRIDE_MINUS_1 = 1, RT_OMPI_EMPTY_AFTER_DATA = 2 };
int rt_ompi_defects(rt_node *root);

/* After a failed rt_check: re-checks every subtree quietly and prints the smallest failing one
 * (a minimal reproducer). */
void rt_minimise(rt_node *root, uint64_t seed, const rt_check_opts *opts);

#endif /* GCOMMT_RANDOM_TYPE_H */
