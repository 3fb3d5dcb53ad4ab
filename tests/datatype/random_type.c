/* Datatype recipes: builders, random generation, building as MPI and gcomm types, printing,
 * and the checks that compare gcomm with Open MPI and the reference expander. See
 * random_type.h. */
#include "random_type.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#ifdef GCOMMT_HAVE_IMPORT
#include "gcomm/gcomm_mpi.h"
#endif
#include "testutil.h"
#include "typemap_ref.h"

rt_ref_stats rt_stats;

/* ------------------------------------------------------------------------------------------ */
/* basic types                                                                                 */

const char *rt_basic_name(rt_basic_t b)
{
    static const char *names[RT_NBASIC] = {"double", "float", "int", "char", "int16", "int64"};
    return names[b];
}

MPI_Datatype rt_basic_mpi(rt_basic_t b)
{
    switch (b) {
    case RT_DOUBLE: return MPI_DOUBLE;
    case RT_FLOAT: return MPI_FLOAT;
    case RT_INT: return MPI_INT;
    case RT_CHAR: return MPI_CHAR;
    case RT_INT16: return MPI_INT16_T;
    default: return MPI_INT64_T;
    }
}

gcomm_datatype rt_basic_gcomm(rt_basic_t b)
{
    switch (b) {
    case RT_DOUBLE: return GCOMM_DOUBLE;
    case RT_FLOAT: return GCOMM_FLOAT;
    case RT_INT: return GCOMM_INT;
    case RT_CHAR: return GCOMM_CHAR;
    case RT_INT16: return GCOMM_INT16;
    default: return GCOMM_INT64;
    }
}

/* A basic type of the same size but a different name (signature mismatch tests). */
static gcomm_datatype basic_twin(rt_basic_t b)
{
    switch (b) {
    case RT_DOUBLE: return GCOMM_INT64;
    case RT_FLOAT: return GCOMM_INT32;
    case RT_INT: return GCOMM_FLOAT;
    case RT_CHAR: return GCOMM_INT8;
    case RT_INT16: return GCOMM_UINT16;
    default: return GCOMM_DOUBLE;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* recipes                                                                                     */

static rt_node *node_new(rt_kind_t kind, int nchild)
{
    rt_node *n = calloc(1, sizeof *n);
    if (!n) abort();
    n->kind = kind;
    n->refs = 1;
    n->nchild = nchild;
    if (nchild) {
        n->child = calloc((size_t)nchild, sizeof *n->child);
        if (!n->child) abort();
    }
    n->gtype = GCOMM_DATATYPE_NULL;
    n->mtype = MPI_DATATYPE_NULL;
    return n;
}

static int *dup_ints(int count, const int *v)
{
    int *r = malloc(sizeof(int) * (size_t)(count ? count : 1));
    if (!r) abort();
    if (count) memcpy(r, v, sizeof(int) * (size_t)count);
    return r;
}

static ptrdiff_t *new_displs(int count)
{
    ptrdiff_t *r = calloc((size_t)(count ? count : 1), sizeof *r);
    if (!r) abort();
    return r;
}

rt_node *rt_basic(rt_basic_t b)
{
    rt_node *n = node_new(RT_BASIC, 0);
    n->basic = b;
    return n;
}

rt_node *rt_contiguous(int count, rt_node *c)
{
    rt_node *n = node_new(RT_CONTIGUOUS, 1);
    n->count = count;
    n->child[0] = c;
    return n;
}

rt_node *rt_vector(int count, int blocklength, int stride, rt_node *c)
{
    rt_node *n = node_new(RT_VECTOR, 1);
    n->count = count;
    n->blocklength = blocklength;
    n->stride = stride;
    n->child[0] = c;
    return n;
}

rt_node *rt_hvector(int count, int blocklength, ptrdiff_t stride, rt_node *c)
{
    rt_node *n = rt_vector(count, blocklength, 0, c);
    n->kind = RT_HVECTOR;
    n->stride = stride;
    return n;
}

rt_node *rt_indexed(int count, const int *bl, const int *displs, rt_node *c)
{
    rt_node *n = node_new(RT_INDEXED, 1);
    n->count = count;
    n->blocklengths = dup_ints(count, bl);
    n->displs = new_displs(count);
    for (int i = 0; i < count; i++) n->displs[i] = displs[i];
    n->child[0] = c;
    return n;
}

rt_node *rt_hindexed(int count, const int *bl, const ptrdiff_t *displs, rt_node *c)
{
    rt_node *n = node_new(RT_HINDEXED, 1);
    n->count = count;
    n->blocklengths = dup_ints(count, bl);
    n->displs = new_displs(count);
    for (int i = 0; i < count; i++) n->displs[i] = displs[i];
    n->child[0] = c;
    return n;
}

rt_node *rt_indexed_block(int count, int bl, const int *displs, rt_node *c)
{
    rt_node *n = node_new(RT_INDEXED_BLOCK, 1);
    n->count = count;
    n->blocklength = bl;
    n->displs = new_displs(count);
    for (int i = 0; i < count; i++) n->displs[i] = displs[i];
    n->child[0] = c;
    return n;
}

rt_node *rt_hindexed_block(int count, int bl, const ptrdiff_t *displs, rt_node *c)
{
    rt_node *n = node_new(RT_HINDEXED_BLOCK, 1);
    n->count = count;
    n->blocklength = bl;
    n->displs = new_displs(count);
    for (int i = 0; i < count; i++) n->displs[i] = displs[i];
    n->child[0] = c;
    return n;
}

rt_node *rt_struct(int count, const int *bl, const ptrdiff_t *displs, rt_node **children)
{
    rt_node *n = node_new(RT_STRUCT, count);
    n->count = count;
    n->blocklengths = dup_ints(count, bl);
    n->displs = new_displs(count);
    for (int i = 0; i < count; i++) {
        n->displs[i] = displs[i];
        n->child[i] = children[i];
    }
    return n;
}

rt_node *rt_subarray(int ndims, const int *sizes, const int *subsizes, const int *starts,
                     int order, rt_node *c)
{
    rt_node *n = node_new(RT_SUBARRAY, 1);
    n->ndims = ndims;
    n->order = order;
    for (int d = 0; d < ndims; d++) {
        n->sizes[d] = sizes[d];
        n->subsizes[d] = subsizes[d];
        n->starts[d] = starts[d];
    }
    n->child[0] = c;
    return n;
}

rt_node *rt_darray(int nprocs, int rank, int ndims, const int *gsizes, const int *distribs,
                   const int *dargs, const int *psizes, int order, rt_node *c)
{
    rt_node *n = node_new(RT_DARRAY, 1);
    n->nprocs = nprocs;
    n->rank = rank;
    n->ndims = ndims;
    n->order = order;
    for (int d = 0; d < ndims; d++) {
        n->sizes[d] = gsizes[d];
        n->distribs[d] = distribs[d];
        n->dargs[d] = dargs[d];
        n->psizes[d] = psizes[d];
    }
    n->child[0] = c;
    return n;
}

rt_node *rt_resized(rt_node *c, ptrdiff_t lb, ptrdiff_t extent)
{
    rt_node *n = node_new(RT_RESIZED, 1);
    n->lb = lb;
    n->extent = extent;
    n->child[0] = c;
    return n;
}

rt_node *rt_dup(rt_node *c)
{
    rt_node *n = node_new(RT_DUP, 1);
    n->child[0] = c;
    return n;
}

rt_node *rt_ref(rt_node *n)
{
    n->refs++;
    return n;
}

void rt_free(rt_node *n)
{
    if (!n || --n->refs > 0) return;
    if (n->built && n->kind != RT_BASIC) {
        MPI_Type_free(&n->mtype);
        gcomm_type_free(&n->gtype);
    }
    tm_clear_node(n);
    for (int i = 0; i < n->nchild; i++) rt_free(n->child[i]);
    free(n->child);
    free(n->blocklengths);
    free(n->displs);
    free(n);
}

/* ------------------------------------------------------------------------------------------ */
/* printing                                                                                    */

static const char *kind_name(rt_kind_t k)
{
    static const char *names[RT_NKINDS] = {
        "basic",   "contiguous",    "vector",         "hvector",   "indexed",
        "hindexed", "indexed_block", "hindexed_block", "struct",    "subarray",
        "darray",  "resized",       "dup"};
    return names[k];
}

static const char *distrib_name(int d)
{
    return d == GCOMM_DISTRIBUTE_BLOCK ? "block" : d == GCOMM_DISTRIBUTE_CYCLIC ? "cyclic" : "none";
}

static void print_ints(FILE *f, const char *name, int n, const int *v)
{
    fprintf(f, " %s=[", name);
    for (int i = 0; i < n; i++) fprintf(f, "%s%d", i ? "," : "", v[i]);
    fprintf(f, "]");
}

static void print_displs(FILE *f, int n, const ptrdiff_t *v)
{
    fprintf(f, " displs=[");
    for (int i = 0; i < n; i++) fprintf(f, "%s%td", i ? "," : "", v[i]);
    fprintf(f, "]");
}

void rt_print(FILE *f, const rt_node *n, int indent)
{
    fprintf(f, "%*s", indent, "");
    if (n->kind == RT_BASIC) {
        fprintf(f, "%s\n", rt_basic_name(n->basic));
        return;
    }
    fprintf(f, "%s(", kind_name(n->kind));
    switch (n->kind) {
    case RT_CONTIGUOUS: fprintf(f, "count=%d", n->count); break;
    case RT_VECTOR:
    case RT_HVECTOR:
        fprintf(f, "count=%d blocklength=%d stride=%td%s", n->count, n->blocklength, n->stride,
                n->kind == RT_HVECTOR ? " bytes" : "");
        break;
    case RT_INDEXED:
    case RT_HINDEXED:
    case RT_STRUCT:
        fprintf(f, "count=%d", n->count);
        print_ints(f, "blocklengths", n->count, n->blocklengths);
        print_displs(f, n->count, n->displs);
        break;
    case RT_INDEXED_BLOCK:
    case RT_HINDEXED_BLOCK:
        fprintf(f, "count=%d blocklength=%d", n->count, n->blocklength);
        print_displs(f, n->count, n->displs);
        break;
    case RT_SUBARRAY:
        fprintf(f, "ndims=%d", n->ndims);
        print_ints(f, "sizes", n->ndims, n->sizes);
        print_ints(f, "subsizes", n->ndims, n->subsizes);
        print_ints(f, "starts", n->ndims, n->starts);
        fprintf(f, " order=%s", n->order == GCOMM_ORDER_C ? "C" : "Fortran");
        break;
    case RT_DARRAY:
        fprintf(f, "size=%d rank=%d ndims=%d", n->nprocs, n->rank, n->ndims);
        print_ints(f, "gsizes", n->ndims, n->sizes);
        fprintf(f, " distribs=[");
        for (int d = 0; d < n->ndims; d++)
            fprintf(f, "%s%s", d ? "," : "", distrib_name(n->distribs[d]));
        fprintf(f, "] dargs=[");
        for (int d = 0; d < n->ndims; d++) {
            if (n->dargs[d] == GCOMM_DISTRIBUTE_DFLT_DARG)
                fprintf(f, "%sdflt", d ? "," : "");
            else
                fprintf(f, "%s%d", d ? "," : "", n->dargs[d]);
        }
        fprintf(f, "]");
        print_ints(f, "psizes", n->ndims, n->psizes);
        fprintf(f, " order=%s", n->order == GCOMM_ORDER_C ? "C" : "Fortran");
        break;
    case RT_RESIZED: fprintf(f, "lb=%td extent=%td", n->lb, n->extent); break;
    default: break;
    }
    fprintf(f, ")%s\n", n->commit_before_use ? " [committed before use]" : "");
    for (int i = 0; i < n->nchild; i++) {
        int same = -1;
        for (int j = 0; j < i; j++)
            if (n->child[j] == n->child[i]) same = j;
        if (n->kind == RT_STRUCT) fprintf(f, "%*s[%d]%s\n", indent + 2, "", i,
                                          same >= 0 ? " (the same handle as above)" : "");
        if (same < 0 || n->kind != RT_STRUCT) rt_print(f, n->child[i], indent + 4);
        else fprintf(f, "%*s= member [%d]\n", indent + 4, "", same);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* building                                                                                    */

static int mpi_order(int order)
{
    return order == GCOMM_ORDER_C ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
}

static int mpi_distrib(int d)
{
    return d == GCOMM_DISTRIBUTE_BLOCK    ? MPI_DISTRIBUTE_BLOCK
           : d == GCOMM_DISTRIBUTE_CYCLIC ? MPI_DISTRIBUTE_CYCLIC
                                          : MPI_DISTRIBUTE_NONE;
}

static int mpi_darg(int d)
{
    return d == GCOMM_DISTRIBUTE_DFLT_DARG ? MPI_DISTRIBUTE_DFLT_DARG : d;
}

int rt_build(rt_node *n)
{
    if (n->built) return 0;
    for (int i = 0; i < n->nchild; i++)
        if (rt_build(n->child[i])) return -1;
    if (n->kind == RT_BASIC) {
        n->mtype = rt_basic_mpi(n->basic);
        n->gtype = rt_basic_gcomm(n->basic);
        n->built = 1;
        return 0;
    }
    int cnt = n->count > 0 ? n->count : 1;
    int *idispl = malloc(sizeof(int) * (size_t)cnt);
    MPI_Aint *adispl = malloc(sizeof(MPI_Aint) * (size_t)cnt);
    MPI_Datatype *mtypes = malloc(sizeof(MPI_Datatype) * (size_t)cnt);
    gcomm_datatype *gtypes = malloc(sizeof(gcomm_datatype) * (size_t)cnt);
    if (!idispl || !adispl || !mtypes || !gtypes) abort();
    for (int i = 0; i < n->count && n->displs; i++) {
        idispl[i] = (int)n->displs[i];
        adispl[i] = (MPI_Aint)n->displs[i];
    }
    for (int i = 0; i < n->nchild; i++) {
        mtypes[i] = n->child[i]->mtype;
        gtypes[i] = n->child[i]->gtype;
    }
    int dist[RT_MAX_DIMS], darg[RT_MAX_DIMS];
    for (int d = 0; d < n->ndims; d++) {
        dist[d] = mpi_distrib(n->distribs[d]);
        darg[d] = mpi_darg(n->dargs[d]);
    }
    MPI_Datatype cm = mtypes[0];
    gcomm_datatype cg = gtypes[0];
    int mrc = MPI_ERR_OTHER, grc = GCOMM_ERR_INTERNAL;
    switch (n->kind) {
    case RT_CONTIGUOUS:
        mrc = MPI_Type_contiguous(n->count, cm, &n->mtype);
        grc = gcomm_type_contiguous(n->count, cg, &n->gtype);
        break;
    case RT_VECTOR:
        mrc = MPI_Type_vector(n->count, n->blocklength, (int)n->stride, cm, &n->mtype);
        grc = gcomm_type_vector(n->count, n->blocklength, (int)n->stride, cg, &n->gtype);
        break;
    case RT_HVECTOR:
        mrc = MPI_Type_create_hvector(n->count, n->blocklength, (MPI_Aint)n->stride, cm,
                                      &n->mtype);
        grc = gcomm_type_hvector(n->count, n->blocklength, n->stride, cg, &n->gtype);
        break;
    case RT_INDEXED:
        mrc = MPI_Type_indexed(n->count, n->blocklengths, idispl, cm, &n->mtype);
        grc = gcomm_type_indexed(n->count, n->blocklengths, idispl, cg, &n->gtype);
        break;
    case RT_HINDEXED:
        mrc = MPI_Type_create_hindexed(n->count, n->blocklengths, adispl, cm, &n->mtype);
        grc = gcomm_type_hindexed(n->count, n->blocklengths, n->displs, cg, &n->gtype);
        break;
    case RT_INDEXED_BLOCK:
        mrc = MPI_Type_create_indexed_block(n->count, n->blocklength, idispl, cm, &n->mtype);
        grc = gcomm_type_indexed_block(n->count, n->blocklength, idispl, cg, &n->gtype);
        break;
    case RT_HINDEXED_BLOCK:
        mrc = MPI_Type_create_hindexed_block(n->count, n->blocklength, adispl, cm, &n->mtype);
        grc = gcomm_type_hindexed_block(n->count, n->blocklength, n->displs, cg, &n->gtype);
        break;
    case RT_STRUCT:
        mrc = MPI_Type_create_struct(n->count, n->blocklengths, adispl, mtypes, &n->mtype);
        grc = gcomm_type_struct(n->count, n->blocklengths, n->displs, gtypes, &n->gtype);
        break;
    case RT_SUBARRAY:
        mrc = MPI_Type_create_subarray(n->ndims, n->sizes, n->subsizes, n->starts,
                                       mpi_order(n->order), cm, &n->mtype);
        grc = gcomm_type_subarray(n->ndims, n->sizes, n->subsizes, n->starts, n->order, cg,
                                  &n->gtype);
        break;
    case RT_DARRAY:
        mrc = MPI_Type_create_darray(n->nprocs, n->rank, n->ndims, n->sizes, dist, darg,
                                     n->psizes, mpi_order(n->order), cm, &n->mtype);
        grc = gcomm_type_darray(n->nprocs, n->rank, n->ndims, n->sizes, n->distribs, n->dargs,
                                n->psizes, n->order, cg, &n->gtype);
        break;
    case RT_RESIZED:
        mrc = MPI_Type_create_resized(cm, (MPI_Aint)n->lb, (MPI_Aint)n->extent, &n->mtype);
        grc = gcomm_type_resized(cg, n->lb, n->extent, &n->gtype);
        break;
    case RT_DUP:
        mrc = MPI_Type_dup(cm, &n->mtype);
        grc = gcomm_type_dup(cg, &n->gtype);
        break;
    default: break;
    }
    free(idispl);
    free(adispl);
    free(mtypes);
    free(gtypes);
    if (mrc != MPI_SUCCESS || grc != GCOMM_SUCCESS) {
        fprintf(stderr, "rt_build: %s: MPI returned %d, gcomm returned %d (%s; %s)\n",
                kind_name(n->kind), mrc, grc, gcomm_error_string(grc),
                gcomm_last_error_detail());
        if (mrc == MPI_SUCCESS) MPI_Type_free(&n->mtype);
        if (grc == GCOMM_SUCCESS) gcomm_type_free(&n->gtype);
        n->mtype = MPI_DATATYPE_NULL;
        n->gtype = GCOMM_DATATYPE_NULL;
        return -1;
    }
    n->built = 1;
    if (n->commit_before_use) {
        MPI_Type_commit(&n->mtype);
        if (gcomm_type_commit(&n->gtype) != GCOMM_SUCCESS) {
            fprintf(stderr, "rt_build: gcomm_type_commit of %s failed: %s\n",
                    kind_name(n->kind), gcomm_last_error_detail());
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* random recipes                                                                              */

static long rnd(uint64_t *s, long lo, long hi)
{
    return gcommt_rand_range(s, lo, hi);
}

static int chance(uint64_t *s, int percent)
{
    return rnd(s, 0, 99) < percent;
}

/* Memory one instance touches, bounds included (so that count > 1 stays small too). */
static int64_t map_span(const tm_map *m)
{
    int64_t lo = m->lb < m->true_lb ? m->lb : m->true_lb;
    int64_t hi = m->ub > m->true_ub ? m->ub : m->true_ub;
    return hi - lo;
}

static int64_t child_extent(rt_node *c)
{
    return c->ref->ub - c->ref->lb;
}

static int64_t child_mag(rt_node *c)
{
    int64_t e = child_extent(c);
    if (e < 0) e = -e;
    return e ? e : 8;
}

/* Draws the parameters of n (children fixed). */
static void random_params(rt_node *n, uint64_t *s)
{
    int64_t e = n->kind == RT_STRUCT ? 8 : child_mag(n->child[0]);
    switch (n->kind) {
    case RT_CONTIGUOUS:
        n->count = chance(s, 8) ? 0 : (int)rnd(s, 1, 5);
        break;
    case RT_VECTOR:
        n->count = chance(s, 6) ? 0 : (int)rnd(s, 1, 4);
        n->blocklength = chance(s, 6) ? 0 : (int)rnd(s, 1, 3);
        n->stride = rnd(s, -6, 6);
        break;
    case RT_HVECTOR:
        n->count = chance(s, 6) ? 0 : (int)rnd(s, 1, 4);
        n->blocklength = chance(s, 6) ? 0 : (int)rnd(s, 1, 3);
        if (chance(s, 50))
            n->stride = (chance(s, 30) ? -1 : 1) * (n->blocklength * e + rnd(s, 0, 16));
        else
            n->stride = rnd(s, -3 * e - 16, 3 * e + 16);
        break;
    case RT_INDEXED:
    case RT_HINDEXED:
    case RT_INDEXED_BLOCK:
    case RT_HINDEXED_BLOCK: {
        int bytes = n->kind == RT_HINDEXED || n->kind == RT_HINDEXED_BLOCK;
        n->blocklength = chance(s, 6) ? 0 : (int)rnd(s, 1, 3);
        for (int i = 0; i < n->count; i++) {
            if (n->blocklengths) n->blocklengths[i] = chance(s, 25) ? 0 : (int)rnd(s, 1, 3);
            n->displs[i] = bytes ? rnd(s, -2 * e - 16, 2 * e + 16) : rnd(s, -8, 8);
        }
        break;
    }
    case RT_STRUCT: {
        int clike = chance(s, 40);
        int64_t off = 0;
        for (int i = 0; i < n->count; i++) {
            rt_node *c = n->child[i];
            n->blocklengths[i] = chance(s, 20) ? 0 : (int)rnd(s, 1, 3);
            if (clike) { /* members laid out as a C compiler would */
                int64_t al = c->ref->align;
                off = (off + al - 1) / al * al;
                n->displs[i] = off - c->ref->lb;
                off += n->blocklengths[i] * child_extent(c);
            } else {
                int64_t ce = child_mag(c);
                n->displs[i] = rnd(s, -2 * ce - 16, 2 * ce + 16);
            }
        }
        break;
    }
    case RT_SUBARRAY:
        n->ndims = (int)rnd(s, 1, 4);
        n->order = chance(s, 50) ? GCOMM_ORDER_C : GCOMM_ORDER_FORTRAN;
        for (int d = 0; d < n->ndims; d++) {
            n->sizes[d] = (int)rnd(s, 1, n->ndims > 2 ? 4 : 7);
            n->subsizes[d] = (int)rnd(s, 1, n->sizes[d]);
            n->starts[d] = (int)rnd(s, 0, n->sizes[d] - n->subsizes[d]);
        }
        break;
    case RT_DARRAY: {
        n->ndims = (int)rnd(s, 1, 3);
        n->order = chance(s, 50) ? GCOMM_ORDER_C : GCOMM_ORDER_FORTRAN;
        n->nprocs = 1;
        for (int d = 0; d < n->ndims; d++) {
            int g = (int)rnd(s, 1, n->ndims > 2 ? 6 : 9);
            int kind = (int)rnd(s, 0, 2);
            n->sizes[d] = g;
            n->distribs[d] = kind == 0   ? GCOMM_DISTRIBUTE_BLOCK
                             : kind == 1 ? GCOMM_DISTRIBUTE_CYCLIC
                                         : GCOMM_DISTRIBUTE_NONE;
            n->psizes[d] = kind == 2 ? 1 : (int)rnd(s, 1, 3);
            n->dargs[d] = GCOMM_DISTRIBUTE_DFLT_DARG;
            if (kind == 0 && chance(s, 50))
                n->dargs[d] = (g + n->psizes[d] - 1) / n->psizes[d] + (int)rnd(s, 0, 2);
            if (kind == 1 && chance(s, 60)) n->dargs[d] = (int)rnd(s, 1, 3);
            n->nprocs *= n->psizes[d];
        }
        n->rank = (int)rnd(s, 0, n->nprocs - 1);
        break;
    }
    case RT_RESIZED: {
        const tm_map *c = n->child[0]->ref;
        n->lb = chance(s, 50) ? c->lb + rnd(s, -16, 16) : rnd(s, -e - 8, e + 8);
        if (chance(s, 10))
            n->extent = 0;
        else if (chance(s, 50))
            n->extent = (c->ub - c->lb) + rnd(s, -8, 16);
        else
            n->extent = rnd(s, 1, 2 * e + 8);
        if (n->extent < 0) n->extent = 0;
        break;
    }
    default: break;
    }
}

static rt_node *gen(uint64_t *s, int depth, const rt_limits *lim);

static int fits(rt_node *n, const rt_limits *lim)
{
    const tm_map *m = tm_expand(n, NULL, NULL, lim->max_size);
    return m && m->size <= lim->max_size && map_span(m) <= (int64_t)lim->max_span;
}

static rt_node *gen(uint64_t *s, int depth, const rt_limits *lim)
{
    int leaf = depth >= lim->max_depth ? 100 : depth == 0 ? 3 : 15 + 15 * depth;
    if (chance(s, leaf)) {
        rt_node *b = rt_basic((rt_basic_t)rnd(s, 0, RT_NBASIC - 1));
        tm_expand(b, NULL, NULL, 1);
        return b;
    }
    /* weights: struct and the vector family a bit more often */
    static const rt_kind_t kinds[] = {
        RT_CONTIGUOUS,  RT_VECTOR,         RT_VECTOR,   RT_HVECTOR, RT_HVECTOR,  RT_INDEXED,
        RT_HINDEXED,    RT_INDEXED_BLOCK,  RT_HINDEXED_BLOCK, RT_STRUCT, RT_STRUCT, RT_STRUCT,
        RT_SUBARRAY,    RT_SUBARRAY,       RT_DARRAY,   RT_DARRAY,  RT_RESIZED,  RT_RESIZED,
        RT_RESIZED,     RT_DUP};
    rt_kind_t kind = kinds[rnd(s, 0, (long)(sizeof kinds / sizeof kinds[0]) - 1)];
    int count = 0;
    rt_node *n;
    if (kind == RT_STRUCT) {
        count = chance(s, 4) ? 0 : (int)rnd(s, 1, 4);
        n = node_new(RT_STRUCT, count);
        for (int i = 0; i < count; i++)
            n->child[i] = i > 0 && chance(s, 20) ? rt_ref(n->child[i - 1]) : gen(s, depth + 1, lim);
    } else {
        if (kind >= RT_INDEXED && kind <= RT_HINDEXED_BLOCK)
            count = chance(s, 5) ? 0 : (int)rnd(s, 1, 4);
        n = node_new(kind, 1);
        n->child[0] = gen(s, depth + 1, lim);
        /* Open MPI 4.1 refuses a darray of a type without data (MPI_ERR_TYPE); gcomm accepts
         * it (test_dt_constructors checks that against the reference) */
        if (kind == RT_DARRAY && n->child[0]->ref->size == 0) n->kind = kind = RT_SUBARRAY;
    }
    n->count = count;
    if (kind == RT_INDEXED || kind == RT_HINDEXED || kind == RT_STRUCT)
        n->blocklengths = dup_ints(count, (int[4]){0});
    if (count) n->displs = new_displs(count);
    else if (kind == RT_STRUCT || (kind >= RT_INDEXED && kind <= RT_HINDEXED_BLOCK)) {
        n->displs = new_displs(0);
        if (!n->blocklengths && kind != RT_INDEXED_BLOCK && kind != RT_HINDEXED_BLOCK)
            n->blocklengths = dup_ints(0, NULL);
    }
    n->commit_before_use = chance(s, 40);
    for (int attempt = 0; attempt < 8; attempt++) {
        random_params(n, s);
        tm_clear_node(n);
        if (fits(n, lim)) return n;
    }
    /* nothing fitted: keep the first child instead (a struct has one: count 0 always fits) */
    rt_node *c = rt_ref(n->child[0]);
    rt_free(n);
    return c;
}

rt_node *rt_random(uint64_t *state, const rt_limits *lim)
{
    return gen(state, 0, lim);
}

/* ------------------------------------------------------------------------------------------ */
/* checks                                                                                      */

#define MARGIN 32          /* poisoned bytes around every buffer */
#define MAX_PRINTED 12     /* failure lines printed per rt_check */

typedef struct {
    int fails;
    int quiet;
    int printed;
    int use_reference;     /* see rt_check_opts */
    const char *what;      /* which gcomm handle: "constructed" or "imported" */
} chk_t;

#define CHK(cx, cond, ...)                                                                   \
    do {                                                                                     \
        if ((cx)->quiet == 0) gcommt_checks++;                                               \
        if (!(cond)) {                                                                       \
            (cx)->fails++;                                                                   \
            if ((cx)->quiet == 0) gcommt_failures++;                                         \
            if ((cx)->quiet != 1 && (cx)->printed++ < MAX_PRINTED) {                         \
                fprintf(stderr, "FAIL %s:%d [%s]: %s: ", __FILE__, __LINE__, (cx)->what,     \
                        #cond);                                                              \
                fprintf(stderr, __VA_ARGS__);                                                \
                fprintf(stderr, "\n");                                                       \
            }                                                                                \
        }                                                                                    \
    } while (0)

typedef struct {
    MPI_Count size, lb, extent, tlb, textent;
} mprops;

static void mpi_props(MPI_Datatype t, mprops *p)
{
    MPI_Type_size_x(t, &p->size);
    MPI_Type_get_extent_x(t, &p->lb, &p->extent);
    MPI_Type_get_true_extent_x(t, &p->tlb, &p->textent);
}

static void mpi_extent_fn(const rt_node *n, void *ctx, int64_t *lb, int64_t *extent)
{
    (void)ctx;
    MPI_Count l, e;
    MPI_Type_get_extent_x(n->mtype, &l, &e);
    *lb = l;
    *extent = e;
}

typedef struct {
    rt_node **v;
    size_t n, cap;
} node_list;

/* Unique nodes, children before parents. */
static void collect(rt_node *n, node_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == n) return;
    for (int i = 0; i < n->nchild; i++) collect(n->child[i], l);
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 32;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        if (!l->v) abort();
    }
    l->v[l->n++] = n;
}

/* What gcomm must report for node n: Open MPI's values, except that a type with no data has
 * true bounds 0/0 (Open MPI 4.1 reports its uninitialised LONG_MAX / 1 for many of them, e.g.
 * an empty darray part; the standard has no true bounds for an empty typemap and Open MPI itself
 * says 0/0 for contiguous(0)). With use_reference 2: the reference's standard values. */
static void expected_props(const rt_node *n, int use_reference, mprops *p)
{
    if (use_reference == 2) {
        const tm_map *m = n->ref;
        p->size = (MPI_Count)m->size;
        p->lb = m->lb;
        p->extent = m->ub - m->lb;
        p->tlb = m->true_lb;
        p->textent = m->true_ub - m->true_lb;
        return;
    }
    mpi_props(n->mtype, p);
    if (p->size == 0) p->tlb = p->textent = 0;
}

static void check_bounds(chk_t *cx, rt_node *n, gcomm_datatype g)
{
    mprops p;
    expected_props(n, cx->use_reference, &p);
    size_t size = 0;
    ptrdiff_t lb = 0, ext = 0, tlb = 0, text = 0;
    int rc1 = gcomm_type_size(g, &size);
    int rc2 = gcomm_type_get_extent(g, &lb, &ext);
    int rc3 = gcomm_type_get_true_extent(g, &tlb, &text);
    int before = cx->fails;
    CHK(cx, rc1 == GCOMM_SUCCESS && rc2 == GCOMM_SUCCESS && rc3 == GCOMM_SUCCESS,
        "%s: queries returned %d %d %d (%s)", kind_name(n->kind), rc1, rc2, rc3,
        gcomm_last_error_detail());
    const char *who = cx->use_reference == 2 ? "reference" : "MPI";
    CHK(cx, (MPI_Count)size == p.size, "%s: size gcomm %zu, %s %lld", kind_name(n->kind), size,
        who, (long long)p.size);
    CHK(cx, lb == p.lb && ext == p.extent, "%s: lb/extent gcomm %td/%td, %s %lld/%lld",
        kind_name(n->kind), lb, ext, who, (long long)p.lb, (long long)p.extent);
    CHK(cx, tlb == p.tlb && text == p.textent,
        "%s: true lb/extent gcomm %td/%td, %s %lld/%lld", kind_name(n->kind), tlb, text, who,
        (long long)p.tlb, (long long)p.textent);
    if (cx->fails != before && cx->quiet != 1 && cx->printed <= MAX_PRINTED) {
        const tm_map *m = n->ref;
        if (m)
            fprintf(stderr, "    reference (standard): size %" PRIu64 " lb %" PRId64
                            " extent %" PRId64 " true lb %" PRId64 " true extent %" PRId64 "\n",
                    m->size, m->lb, m->ub - m->lb, m->true_lb, m->true_ub - m->true_lb);
        fprintf(stderr, "    at node:\n");
        rt_print(stderr, n, 6);
    }
}

/* Open MPI's bounds against the standard's, for the report (see rt_ref_stats). */
static int notes_printed;

static void ref_bounds_stats(rt_node *n)
{
    const tm_map *m = n->ref;
    mprops p;
    mpi_props(n->mtype, &p);
    rt_stats.nodes++;
    if (p.size == 0 && (p.tlb != 0 || p.textent != 0)) rt_stats.empty_true_garbage++;
    if (p.size == 0) p.tlb = p.textent = 0; /* counted above; see expected_props */
    int64_t mub = p.lb + p.extent;
    int same_true = m->true_lb == p.tlb && m->true_ub == p.tlb + p.textent;
    if ((MPI_Count)m->size == p.size && same_true && m->lb == p.lb && m->ub == mub) return;
    if ((MPI_Count)m->size == p.size && same_true && m->lb == p.lb && !m->has_markers &&
        mub > m->ub && (mub - m->ub) % m->align == 0) {
        rt_stats.eps_differs++;
        return;
    }
    rt_stats.bounds_differs++;
    static long max_notes = -1;
    if (max_notes < 0) /* GCOMMT_NOTES=n prints n of them (default 3) */
        max_notes = getenv("GCOMMT_NOTES") ? atol(getenv("GCOMMT_NOTES")) : 3;
    if (notes_printed++ < max_notes) {
        fprintf(stderr,
                "NOTE: Open MPI and the standard's bounds differ: MPI size %lld lb %lld "
                "extent %lld true %lld/%lld; reference size %" PRIu64 " lb %" PRId64
                " extent %" PRId64 " true %" PRId64 "/%" PRId64 "\n",
                (long long)p.size, (long long)p.lb, (long long)p.extent, (long long)p.tlb,
                (long long)p.textent, m->size, m->lb, m->ub - m->lb, m->true_lb,
                m->true_ub - m->true_lb);
        rt_print(stderr, n, 4);
    }
}

typedef struct {
    unsigned char *mem;
    size_t len;
    unsigned char *base;   /* address of displacement 0 */
} region;

static void region_alloc(region *r, int64_t lo, int64_t hi)
{
    r->len = (size_t)(hi - lo) + 2 * MARGIN;
    r->mem = malloc(r->len);
    if (!r->mem) abort();
    r->base = (unsigned char *)((uintptr_t)r->mem + (uintptr_t)(MARGIN - lo));
}

static void region_copy(region *dst, const region *src)
{
    *dst = *src;
    dst->mem = malloc(src->len);
    if (!dst->mem) abort();
    memcpy(dst->mem, src->mem, src->len);
    dst->base = dst->mem + (src->base - src->mem);
}

static size_t first_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return i;
    return n;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    return p;
}

/* Struct of the reference typemap's entries, runs of one basic type at consecutive addresses
 * merged into blocks. packed: displacements are offsets in the packed stream and the struct is
 * resized to extent = size (so count copies are the packed stream of count instances).
 * mutate >= 0: that entry gets a basic type of the same size but another name. */
static int flatten(const tm_map *R, int packed, long mutate, gcomm_datatype *out)
{
    size_t n = R->n, k = 0;
    int *bl = xmalloc(n * sizeof *bl);
    ptrdiff_t *disp = xmalloc(n * sizeof *disp);
    gcomm_datatype *types = xmalloc(n * sizeof *types);
    int64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        rt_basic_t b = (rt_basic_t)R->e[i].basic;
        gcomm_datatype t = (long)i == mutate ? basic_twin(b) : rt_basic_gcomm(b);
        int64_t sz = (int64_t)tm_basic_size(b), d = packed ? off : R->e[i].disp;
        off += sz;
        if (k && types[k - 1] == t && disp[k - 1] + bl[k - 1] * sz == d) {
            bl[k - 1]++;
        } else {
            types[k] = t;
            disp[k] = d;
            bl[k] = 1;
            k++;
        }
    }
    gcomm_datatype s = GCOMM_DATATYPE_NULL;
    int rc = gcomm_type_struct((int)k, bl, disp, types, &s);
    if (rc == GCOMM_SUCCESS && packed) {
        rc = gcomm_type_resized(s, 0, off, out);
        gcomm_type_free(&s);
    } else if (rc == GCOMM_SUCCESS) {
        *out = s;
    }
    free(bl);
    free(disp);
    free(types);
    return rc;
}

static int match(gcomm_datatype a, size_t ac, gcomm_datatype b, size_t bc)
{
    int m = -1;
    int rc = gcomm_type_match(a, ac, b, bc, &m);
    return rc == GCOMM_SUCCESS ? m : 1000 + rc;
}

static void check_match(chk_t *cx, const tm_map *R, gcomm_datatype g, size_t c, size_t size,
                        uint64_t *s)
{
    int empty = size == 0;
    size_t els = (size_t)-1;
    int rc = gcomm_type_get_elements(g, &els);
    CHK(cx, rc == GCOMM_SUCCESS && els == R->n, "elements: gcomm %zu (rc %d), reference %zu",
        els, rc, R->n);
    CHK(cx, match(g, c, g, c) == 1, "type does not match itself (count %zu)", c);
    CHK(cx, match(g, 1, g, 2) == 1, "1 x T is not a prefix of 2 x T");
    CHK(cx, match(g, 2, g, 1) == empty, "2 x T vs 1 x T: %d, expected %d", match(g, 2, g, 1),
        empty);

    int n = (int)rnd(s, 1, 4);
    gcomm_datatype C = GCOMM_DATATYPE_NULL;
    rc = gcomm_type_contiguous(n, g, &C);
    CHK(cx, rc == GCOMM_SUCCESS, "contiguous(%d, T): %s", n, gcomm_last_error_detail());
    if (rc == GCOMM_SUCCESS) {
        CHK(cx, match(C, 1, g, (size_t)n) == 1, "contiguous(%d,T) vs %d x T: %d", n, n,
            match(C, 1, g, (size_t)n));
        CHK(cx, match(g, (size_t)n, C, 1) == 1, "%d x T vs contiguous(%d,T): %d", n, n,
            match(g, (size_t)n, C, 1));
        CHK(cx, match(g, (size_t)n + 1, C, 1) == empty, "%d x T vs contiguous(%d,T): %d", n + 1,
            n, match(g, (size_t)n + 1, C, 1));
        CHK(cx, match(C, 1, g, (size_t)n + 1) == 1, "contiguous(%d,T) vs %d x T: %d", n, n + 1,
            match(C, 1, g, (size_t)n + 1));
        gcomm_type_free(&C);
    }

    gcomm_datatype F = GCOMM_DATATYPE_NULL;
    rc = flatten(R, 0, -1, &F);
    CHK(cx, rc == GCOMM_SUCCESS, "flattened struct: %s", gcomm_last_error_detail());
    if (rc == GCOMM_SUCCESS) {
        CHK(cx, match(g, 1, F, 1) == 1, "T vs its flattened struct: %d", match(g, 1, F, 1));
        CHK(cx, match(F, 1, g, 1) == 1, "flattened struct vs T: %d", match(F, 1, g, 1));
        CHK(cx, match(g, c, F, c) == 1, "%zu x T vs %zu x flattened: %d", c, c,
            match(g, c, F, c));
        size_t fe = (size_t)-1;
        gcomm_type_get_elements(F, &fe);
        CHK(cx, fe == R->n, "elements of the flattened struct %zu, reference %zu", fe, R->n);
        gcomm_type_free(&F);
    }
    if (R->n) {
        long k = rnd(s, 0, (long)R->n - 1);
        rc = flatten(R, 0, k, &F);
        CHK(cx, rc == GCOMM_SUCCESS, "mutated flattened struct: %s", gcomm_last_error_detail());
        if (rc == GCOMM_SUCCESS) {
            CHK(cx, match(g, 1, F, 1) == 0, "T matches a struct with entry %ld changed from %s",
                k, rt_basic_name((rt_basic_t)R->e[k].basic));
            CHK(cx, match(F, 1, g, 1) == 0, "a struct with entry %ld changed from %s matches T",
                k, rt_basic_name((rt_basic_t)R->e[k].basic));
            gcomm_type_free(&F);
        }
    }
}

/* Cut points of [0, total]: random, with 1-byte and empty ranges. */
static size_t make_cuts(uint64_t *s, size_t total, size_t *cuts)
{
    size_t k = 0;
    cuts[k++] = 0;
    cuts[k++] = total;
    int n = (int)rnd(s, 0, 6);
    for (int i = 0; i < n; i++) {
        size_t p = (size_t)rnd(s, 0, (long)total);
        cuts[k++] = p;
        if (chance(s, 30) && p < total) cuts[k++] = p + 1;
        if (chance(s, 20)) cuts[k++] = p;
    }
    if (chance(s, 20)) cuts[k++] = total;
    for (size_t i = 1; i < k; i++) /* insertion sort */
        for (size_t j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
            size_t t = cuts[j];
            cuts[j] = cuts[j - 1];
            cuts[j - 1] = t;
        }
    return k;
}

/* Every pack/unpack check of one gcomm handle g against MPI's handle of root. */
static void check_handle(chk_t *cx, rt_node *root, const tm_map *R, gcomm_datatype g,
                         uint64_t *s)
{
    mprops p;
    expected_props(root, cx->use_reference, &p);
    size_t size = (size_t)p.size;
    int64_t mext = p.extent;

    /* count: 0 sometimes, else 1..3 within the memory limits */
    size_t c = chance(s, 5) ? 0 : (size_t)rnd(s, 1, 3);
    int64_t lo, hi, mlo, mhi;
    for (;;) {
        tm_span(R, c, mext, &lo, &hi);
        int64_t last = c ? (int64_t)(c - 1) * mext : 0;
        mlo = p.tlb + (last < 0 ? last : 0);
        mhi = p.tlb + p.textent + (last > 0 ? last : 0);
        if (c <= 1 || ((hi - lo) < (8 << 20) && c * size < (1 << 20))) break;
        c--;
    }
    if (c && size) { /* trust no side for the allocation: cover all three views */
        if (mlo < lo) lo = mlo;
        if (mhi > hi) hi = mhi;
        ptrdiff_t glb = 0, gext = 0, gtlb = 0, gtext = 0;
        if (gcomm_type_get_extent(g, &glb, &gext) == GCOMM_SUCCESS &&
            gcomm_type_get_true_extent(g, &gtlb, &gtext) == GCOMM_SUCCESS) {
            int64_t last = (int64_t)(c - 1) * gext;
            int64_t glo = gtlb + (last < 0 ? last : 0), ghi = gtlb + gtext + (last > 0 ? last : 0);
            if (ghi - glo < ((int64_t)64 << 20)) {
                if (glo < lo) lo = glo;
                if (ghi > hi) hi = ghi;
            }
        }
    }
    size_t P = c * size;

    size_t psz = (size_t)-1;
    int rc = gcomm_pack_size(c, g, &psz);
    CHK(cx, rc == GCOMM_SUCCESS && psz == P, "pack_size(%zu) = %zu (rc %d), expected %zu", c, psz,
        rc, P);

    /* --- pack: whole buffers (poison included) and positions equal --- */
    region in;
    region_alloc(&in, lo, hi);
    gcommt_fill_random(in.mem, in.len, s);
    size_t pos0 = (size_t)rnd(s, 0, 15);
    size_t outsize = pos0 + P + (chance(s, 50) ? 0 : (size_t)rnd(s, 1, 16));
    unsigned char *mout = xmalloc(outsize), *gout = xmalloc(outsize);
    gcommt_fill_random(mout, outsize, s);
    memcpy(gout, mout, outsize);
    int mpos = (int)pos0, mrc = MPI_SUCCESS;
    if (cx->use_reference) {
        tm_pack(R, c, mext, in.base, mout + pos0);
        mpos += (int)P;
    } else {
        mrc = MPI_Pack(in.base, (int)c, root->mtype, mout, (int)outsize, &mpos, MPI_COMM_SELF);
    }
    size_t gpos = pos0;
    rc = gcomm_pack(in.base, c, g, gout, outsize, &gpos);
    CHK(cx, mrc == MPI_SUCCESS, "MPI_Pack returned %d", mrc);
    CHK(cx, rc == GCOMM_SUCCESS, "gcomm_pack: %d (%s)", rc, gcomm_last_error_detail());
    CHK(cx, gpos == (size_t)mpos, "pack position gcomm %zu, MPI %d (start %zu, count %zu)", gpos,
        mpos, pos0, c);
    unsigned char *refp = xmalloc(P);
    tm_pack(R, c, mext, in.base, refp);
    const unsigned char *packed = mout + pos0; /* MPI's packed stream */
    int ref_ok = memcmp(refp, packed, P) == 0;
    rt_stats.packs++;
    if (!ref_ok) rt_stats.pack_differs++;
    size_t d = first_diff(mout, gout, outsize);
    const char *who = cx->use_reference ? "expected (reference)" : "MPI";
    CHK(cx, d == outsize,
        "pack output differs at byte %zu of %zu (stream byte %td; start %zu, count %zu): gcomm "
        "0x%02x, %s 0x%02x; the reference typemap agrees with %s",
        d, outsize, (ptrdiff_t)d - (ptrdiff_t)pos0, pos0, c, gout[d < outsize ? d : 0], who,
        mout[d < outsize ? d : 0],
        ref_ok                                     ? "MPI"
        : memcmp(refp, gout + pos0, P) == 0        ? "gcomm"
                                                   : "neither");

    /* --- pack ranges: concatenate to the whole stream --- */
    size_t cuts[32];
    size_t ncut = make_cuts(s, P, cuts);
    unsigned char *rng = xmalloc(P + MARGIN);
    gcommt_fill_random(rng, P + MARGIN, s);
    unsigned char tail[MARGIN];
    memcpy(tail, rng + P, MARGIN);
    int range_rc = GCOMM_SUCCESS;
    for (size_t i = 0; i + 1 < ncut; i++) {
        rc = gcomm_pack_range(in.base, c, g, cuts[i], cuts[i + 1] - cuts[i], rng + cuts[i]);
        if (rc != GCOMM_SUCCESS && range_rc == GCOMM_SUCCESS) {
            range_rc = rc;
            CHK(cx, rc == GCOMM_SUCCESS, "pack_range(%zu, %zu) of %zu: %d (%s)", cuts[i],
                cuts[i + 1] - cuts[i], P, rc, gcomm_last_error_detail());
        }
    }
    d = first_diff(rng, packed, P);
    CHK(cx, d == P, "pack_range pieces (%zu cuts) differ from the packed stream at byte %zu of %zu",
        ncut, d, P);
    CHK(cx, memcmp(rng + P, tail, MARGIN) == 0, "pack_range wrote past the stream end");

    /* --- copy into the packed layout (a struct with other displacements) --- */
    gcomm_datatype Fp = GCOMM_DATATYPE_NULL;
    rc = flatten(R, 1, -1, &Fp);
    if (rc == GCOMM_SUCCESS) rc = gcomm_type_commit(&Fp);
    CHK(cx, rc == GCOMM_SUCCESS, "packed-layout struct: %d (%s)", rc, gcomm_last_error_detail());
    if (rc == GCOMM_SUCCESS) {
        gcommt_fill_random(rng, P + MARGIN, s);
        memcpy(tail, rng + P, MARGIN);
        rc = gcomm_copy(in.base, c, g, rng, c, Fp, NULL);
        CHK(cx, rc == GCOMM_SUCCESS, "gcomm_copy(T -> packed layout): %d (%s)", rc,
            gcomm_last_error_detail());
        d = first_diff(rng, packed, P);
        CHK(cx, d == P && memcmp(rng + P, tail, MARGIN) == 0,
            "gcomm_copy(T -> packed layout) differs from MPI_Pack at byte %zu of %zu", d, P);
    }

    /* --- unpack: only where the typemap of c instances does not overlap --- */
    if (!tm_overlaps(R, c, mext)) {
        size_t insize = pos0 + P + (chance(s, 50) ? 0 : (size_t)rnd(s, 1, 16));
        unsigned char *src = xmalloc(insize);
        gcommt_fill_random(src, insize, s);
        const unsigned char *stream = src + pos0;
        region poison, mo, go, ro;
        region_alloc(&poison, lo, hi);
        gcommt_fill_random(poison.mem, poison.len, s);
        region_copy(&mo, &poison);
        region_copy(&go, &poison);
        region_copy(&ro, &poison);
        mpos = (int)pos0;
        if (cx->use_reference) {
            tm_unpack(R, c, mext, stream, mo.base);
            mpos += (int)P;
        } else {
            mrc = MPI_Unpack(src, (int)insize, &mpos, mo.base, (int)c, root->mtype,
                             MPI_COMM_SELF);
        }
        gpos = pos0;
        rc = gcomm_unpack(src, insize, &gpos, go.base, c, g);
        CHK(cx, mrc == MPI_SUCCESS, "MPI_Unpack returned %d", mrc);
        CHK(cx, rc == GCOMM_SUCCESS, "gcomm_unpack: %d (%s)", rc, gcomm_last_error_detail());
        CHK(cx, gpos == (size_t)mpos, "unpack position gcomm %zu, MPI %d", gpos, mpos);
        tm_unpack(R, c, mext, stream, ro.base);
        ref_ok = memcmp(ro.mem, mo.mem, mo.len) == 0;
        if (!ref_ok) rt_stats.unpack_differs++;
        d = first_diff(go.mem, mo.mem, mo.len);
        CHK(cx, d == mo.len,
            "unpack output differs at displacement %td (count %zu, start %zu): gcomm 0x%02x, "
            "%s 0x%02x, was 0x%02x; the reference typemap agrees with %s",
            (ptrdiff_t)d - (go.base - go.mem), c, pos0, go.mem[d < go.len ? d : 0], who,
            mo.mem[d < mo.len ? d : 0], poison.mem[d < poison.len ? d : 0],
            ref_ok                                ? "MPI"
            : memcmp(ro.mem, go.mem, go.len) == 0 ? "gcomm"
                                                  : "neither");

        /* unpack ranges, in random order, rebuild the whole unpack */
        region rg;
        region_copy(&rg, &poison);
        ncut = make_cuts(s, P, cuts);
        size_t order[32], nr = ncut - 1;
        for (size_t i = 0; i < nr; i++) order[i] = i;
        for (size_t i = nr; i > 1; i--) {
            size_t j = (size_t)rnd(s, 0, (long)i - 1), t = order[i - 1];
            order[i - 1] = order[j];
            order[j] = t;
        }
        for (size_t k = 0; k < nr; k++) {
            size_t i = order[k];
            rc = gcomm_unpack_range(stream + cuts[i], cuts[i], cuts[i + 1] - cuts[i], rg.base, c,
                                    g);
            if (rc != GCOMM_SUCCESS) {
                CHK(cx, rc == GCOMM_SUCCESS, "unpack_range(%zu, %zu) of %zu: %d (%s)", cuts[i],
                    cuts[i + 1] - cuts[i], P, rc, gcomm_last_error_detail());
                break;
            }
        }
        d = first_diff(rg.mem, mo.mem, mo.len);
        CHK(cx, d == mo.len,
            "unpack_range pieces (%zu cuts, random order) differ from MPI_Unpack at "
            "displacement %td",
            ncut, (ptrdiff_t)d - (rg.base - rg.mem));
        free(rg.mem);

        /* copy from the packed layout into T: what MPI_Unpack wrote, gaps untouched */
        if (Fp) {
            region cp;
            region_copy(&cp, &poison);
            rc = gcomm_copy(stream, c, Fp, cp.base, c, g, NULL);
            CHK(cx, rc == GCOMM_SUCCESS, "gcomm_copy(packed layout -> T): %d (%s)", rc,
                gcomm_last_error_detail());
            d = first_diff(cp.mem, mo.mem, mo.len);
            CHK(cx, d == mo.len,
                "gcomm_copy(packed layout -> T) differs from MPI_Unpack at displacement %td",
                (ptrdiff_t)d - (cp.base - cp.mem));
            free(cp.mem);
        }
        free(src);
        free(poison.mem);
        free(mo.mem);
        free(go.mem);
        free(ro.mem);
    }
    if (Fp) gcomm_type_free(&Fp);

    check_match(cx, R, g, c, size, s);

    free(refp);
    free(rng);
    free(mout);
    free(gout);
    free(in.mem);
}

#ifdef GCOMMT_HAVE_IMPORT
/* An import of a named MPI type may be the predefined gcomm handle, which must not be freed. */
static void free_import(gcomm_datatype *t)
{
#define GCOMMT_IS_PREDEF(name, size, align) || *t == GCOMM_##name
    if (0 GCOMM_BASIC_TYPE_LIST(GCOMMT_IS_PREDEF)) return;
#undef GCOMMT_IS_PREDEF
    gcomm_type_free(t);
}
#endif

static MPI_Count mpi_size(MPI_Datatype t)
{
    MPI_Count size;
    MPI_Type_size_x(t, &size);
    return size;
}

int rt_ompi_defects(rt_node *n)
{
    int found = 0;
    for (int i = 0; i < n->nchild; i++) found |= rt_ompi_defects(n->child[i]);
    if ((n->kind == RT_VECTOR || n->kind == RT_HVECTOR) && n->count >= 2 && n->blocklength) {
        MPI_Count lb, ext;
        MPI_Type_get_extent_x(n->child[0]->mtype, &lb, &ext);
        if (n->kind == RT_VECTOR && n->blocklength != n->stride && n->stride * ext == -1)
            found |= RT_OMPI_STRIDE_MINUS_1;
        if (n->kind == RT_HVECTOR && ext * n->blocklength != n->stride && n->stride == -1)
            found |= RT_OMPI_STRIDE_MINUS_1;
    }
    if (n->kind == RT_STRUCT) {
        int data = 0;
        for (int i = 0; i < n->count; i++) {
            if (!n->blocklengths[i]) continue;
            if (mpi_size(n->child[i]->mtype)) data = 1;
            else if (data) found |= RT_OMPI_EMPTY_AFTER_DATA;
        }
    }
    return found;
}

int rt_check(rt_node *root, uint64_t *state, const rt_check_opts *opts)
{
    chk_t cx = {0, opts->quiet, 0, opts->use_reference, "constructed"};
    tm_clear(root);
    const tm_map *R =
        tm_expand(root, opts->use_reference == 2 ? NULL : mpi_extent_fn, NULL, (size_t)1 << 22);
    CHK(&cx, R != NULL, "the reference expansion is too large");
    if (!R) return cx.fails;

    MPI_Type_commit(&root->mtype);
    int rc = gcomm_type_commit(&root->gtype);
    CHK(&cx, rc == GCOMM_SUCCESS, "gcomm_type_commit: %d (%s)", rc, gcomm_last_error_detail());
    if (rc != GCOMM_SUCCESS) return cx.fails;

    node_list nodes = {0};
    if (opts->per_node) collect(root, &nodes);
    if (opts->per_node) {
        for (size_t i = 0; i < nodes.n; i++) {
            check_bounds(&cx, nodes.v[i], nodes.v[i]->gtype);
            if (opts->quiet == 0 && !opts->use_reference) ref_bounds_stats(nodes.v[i]);
        }
    } else {
        check_bounds(&cx, root, root->gtype);
    }
    check_handle(&cx, root, R, root->gtype, state);

#ifdef GCOMMT_HAVE_IMPORT
    if (opts->import) {
        cx.what = "imported";
        for (size_t i = 0; i < nodes.n; i++) { /* every inner node, committed or not */
            rt_node *n = nodes.v[i];
            if (n == root) continue;
            gcomm_datatype imp = GCOMM_DATATYPE_NULL;
            rc = gcomm_type_from_mpi(n->mtype, &imp);
            CHK(&cx, rc == GCOMM_SUCCESS, "gcomm_type_from_mpi(%s): %d (%s)", kind_name(n->kind),
                rc, gcomm_last_error_detail());
            if (rc != GCOMM_SUCCESS) continue;
            check_bounds(&cx, n, imp);
            free_import(&imp);
        }
        gcomm_datatype imp = GCOMM_DATATYPE_NULL;
        rc = gcomm_type_from_mpi(root->mtype, &imp);
        CHK(&cx, rc == GCOMM_SUCCESS, "gcomm_type_from_mpi(root): %d (%s)", rc,
            gcomm_last_error_detail());
        if (rc == GCOMM_SUCCESS) {
            rc = gcomm_type_commit(&imp);
            CHK(&cx, rc == GCOMM_SUCCESS, "commit of the import: %d (%s)", rc,
                gcomm_last_error_detail());
            check_bounds(&cx, root, imp);
            size_t c = (size_t)rnd(state, 1, 3);
            CHK(&cx, match(imp, c, root->gtype, c) == 1, "import vs constructed: %d",
                match(imp, c, root->gtype, c));
            CHK(&cx, match(root->gtype, c, imp, c) == 1, "constructed vs import: %d",
                match(root->gtype, c, imp, c));
            if (rc == GCOMM_SUCCESS) check_handle(&cx, root, R, imp, state);
            free_import(&imp);
        }
    }
#endif
    free(nodes.v);
    return cx.fails;
}

void rt_minimise(rt_node *root, uint64_t seed, const rt_check_opts *opts)
{
    node_list nodes = {0};
    collect(root, &nodes);
    rt_check_opts q = *opts;
    q.quiet = 1;
    q.per_node = 0;
    for (size_t i = 0; i < nodes.n; i++) {
        uint64_t s = seed;
        if (rt_check(nodes.v[i], &s, &q) == 0) continue;
        fprintf(stderr, "smallest failing subtree (%s):\n",
                nodes.v[i] == root ? "the whole type" : "children pass");
        rt_print(stderr, nodes.v[i], 4);
        s = seed;
        q.quiet = 2;
        rt_check(nodes.v[i], &s, &q);
        break;
    }
    free(nodes.v);
    tm_clear(root);
}
