/* gcomm_type_from_mpi: rebuilds an MPI datatype with the gcomm constructors.
 *
 * The MPI type is decoded with MPI_Type_get_envelope / MPI_Type_get_contents, which report the
 * constructor call that made it (its combiner and arguments), recursively down to named types.
 * Each level calls the matching gcomm constructor, so the gcomm type has the same type map and the
 * same bounds as the MPI type; commit normalises it afterwards. Named types map to the gcomm
 * predefined type of the same representation (integers and reals by size), MINLOC/MAXLOC pairs to
 * the struct MPI defines them as, complex numbers to two reals.
 *
 * Ownership: MPI_Type_get_contents returns new handles for derived children, which must be freed
 * with MPI_Type_free (named ones must not be); gcomm children are released once the parent holds
 * its own reference. Both happen on every path, errors included. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>

#include "common/error.h"
#include "gcomm/gcomm_mpi.h"

/* Errors are recorded under the public name, whatever helper found them. */
#define IMPORT_ERROR(code, ...)                                                                \
    gcommi_error_set((code), __FILE__, __LINE__, "gcomm_type_from_mpi", __VA_ARGS__)

/* The MPI-1 combiners for Fortran INTEGER displacements were removed in MPI-3.0. Open MPI keeps
 * their enum slots, right before the MPI-2 combiners, under names that depend on how it was
 * configured (the removed names expand to a static assertion); MPICH keeps the names. Decoding
 * them costs little. */
#if defined(OPEN_MPI)
#define IMPORT_COMBINER_HVECTOR_INTEGER (MPI_COMBINER_HVECTOR - 1)
#define IMPORT_COMBINER_HINDEXED_INTEGER (MPI_COMBINER_HINDEXED - 1)
#define IMPORT_COMBINER_STRUCT_INTEGER (MPI_COMBINER_STRUCT - 1)
#elif defined(MPI_COMBINER_HVECTOR_INTEGER)
#define IMPORT_COMBINER_HVECTOR_INTEGER MPI_COMBINER_HVECTOR_INTEGER
#define IMPORT_COMBINER_HINDEXED_INTEGER MPI_COMBINER_HINDEXED_INTEGER
#define IMPORT_COMBINER_STRUCT_INTEGER MPI_COMBINER_STRUCT_INTEGER
#endif

static int import_mpi_error(int rc, const char *call)
{
    char msg[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS || len < 0 || len > MPI_MAX_ERROR_STRING)
        len = 0;
    msg[len] = '\0';
    return IMPORT_ERROR(GCOMM_ERR_MPI, "%s failed with MPI error %d: %s", call, rc, msg);
}

/* A name for error details: MPI's own name of the type (named types have one). */
static const char *import_type_name(MPI_Datatype type, char buf[MPI_MAX_OBJECT_NAME])
{
    int len = 0;
    if (MPI_Type_get_name(type, buf, &len) != MPI_SUCCESS || len == 0)
        snprintf(buf, MPI_MAX_OBJECT_NAME, "(unnamed datatype)");
    return buf;
}

static int import_is_predefined(gcomm_datatype type)
{
#define IMPORT_IS_BASIC(name, size, align)                                                      \
    if (type == GCOMM_##name) return 1;
    GCOMM_BASIC_TYPE_LIST(IMPORT_IS_BASIC)
#undef IMPORT_IS_BASIC
    return 0;
}

/* Drops our reference to a decoded child; predefined types are not reference counted. */
static void import_release(gcomm_datatype *type)
{
    if (*type != GCOMM_DATATYPE_NULL && !import_is_predefined(*type)) gcomm_type_free(type);
    *type = GCOMM_DATATYPE_NULL;
}

/* ---- named types ------------------------------------------------------------------------ */

typedef enum {
    NAMED_FIXED,    /* `basic` is the equivalent */
    NAMED_SIGNED,   /* a signed integer of the size MPI reports */
    NAMED_UNSIGNED, /* an unsigned integer (or logical) of the size MPI reports */
    NAMED_REAL,     /* a binary floating point number of the size MPI reports */
    NAMED_COMPLEX,  /* two reals, together of the size MPI reports */
    NAMED_PAIR_INT, /* MINLOC/MAXLOC pair {basic value; int index} at int_disp */
    NAMED_TWO       /* Fortran pairs: two of `kind` (NAMED_SIGNED or NAMED_REAL) */
} import_named_kind_t;

typedef struct {
    MPI_Datatype mpi;
    import_named_kind_t kind;
    gcomm_datatype basic;
    ptrdiff_t int_disp;
    import_named_kind_t two_of;
} import_named_t;

/* The C layouts MPI defines its pair types by. */
struct import_float_int { float v; int i; };
struct import_double_int { double v; int i; };
struct import_long_int { long v; int i; };
struct import_short_int { short v; int i; };
struct import_int_int { int v; int i; };

#define FIXED(m, g) {(m), NAMED_FIXED, (g), 0, NAMED_FIXED}
#define BYSIZE(m, kind) {(m), (kind), GCOMM_DATATYPE_NULL, 0, NAMED_FIXED}
#define PAIR(m, g, s) {(m), NAMED_PAIR_INT, (g), offsetof(s, i), NAMED_FIXED}
#define TWO(m, kind) {(m), NAMED_TWO, GCOMM_DATATYPE_NULL, 0, (kind)}

/* Finds the entry for a named type; 0 when gcomm has no equivalent. The table is built at run
 * time because MPI handles need not be constant expressions. */
static int import_named_lookup(MPI_Datatype type, import_named_t *entry)
{
    const import_named_kind_t wchar_kind = WCHAR_MIN < 0 ? NAMED_SIGNED : NAMED_UNSIGNED;
    const gcomm_datatype short_type = sizeof(short) == 2 ? GCOMM_INT16 : GCOMM_INT32;
    const import_named_t table[] = {
        FIXED(MPI_BYTE, GCOMM_BYTE),
        FIXED(MPI_PACKED, GCOMM_BYTE),
        FIXED(MPI_CHAR, GCOMM_CHAR),
        FIXED(MPI_SIGNED_CHAR, GCOMM_INT8),
        FIXED(MPI_UNSIGNED_CHAR, GCOMM_UINT8),
        FIXED(MPI_INT, GCOMM_INT),
        FIXED(MPI_LONG, GCOMM_LONG),
        FIXED(MPI_FLOAT, GCOMM_FLOAT),
        FIXED(MPI_DOUBLE, GCOMM_DOUBLE),
        FIXED(MPI_INT8_T, GCOMM_INT8),
        FIXED(MPI_UINT8_T, GCOMM_UINT8),
        FIXED(MPI_INT16_T, GCOMM_INT16),
        FIXED(MPI_UINT16_T, GCOMM_UINT16),
        FIXED(MPI_INT32_T, GCOMM_INT32),
        FIXED(MPI_UINT32_T, GCOMM_UINT32),
        FIXED(MPI_INT64_T, GCOMM_INT64),
        FIXED(MPI_UINT64_T, GCOMM_UINT64),
        BYSIZE(MPI_SHORT, NAMED_SIGNED),
        BYSIZE(MPI_UNSIGNED_SHORT, NAMED_UNSIGNED),
        BYSIZE(MPI_UNSIGNED, NAMED_UNSIGNED),
        BYSIZE(MPI_UNSIGNED_LONG, NAMED_UNSIGNED),
        BYSIZE(MPI_LONG_LONG_INT, NAMED_SIGNED),
        BYSIZE(MPI_LONG_LONG, NAMED_SIGNED),
        BYSIZE(MPI_UNSIGNED_LONG_LONG, NAMED_UNSIGNED),
        BYSIZE(MPI_AINT, NAMED_SIGNED),
        BYSIZE(MPI_OFFSET, NAMED_SIGNED),
        BYSIZE(MPI_COUNT, NAMED_SIGNED),
        BYSIZE(MPI_C_BOOL, NAMED_UNSIGNED),
        BYSIZE(MPI_WCHAR, wchar_kind),
        BYSIZE(MPI_C_COMPLEX, NAMED_COMPLEX),
        BYSIZE(MPI_C_FLOAT_COMPLEX, NAMED_COMPLEX),
        BYSIZE(MPI_C_DOUBLE_COMPLEX, NAMED_COMPLEX),
        PAIR(MPI_FLOAT_INT, GCOMM_FLOAT, struct import_float_int),
        PAIR(MPI_DOUBLE_INT, GCOMM_DOUBLE, struct import_double_int),
        PAIR(MPI_LONG_INT, GCOMM_LONG, struct import_long_int),
        PAIR(MPI_SHORT_INT, short_type, struct import_short_int),
        PAIR(MPI_2INT, GCOMM_INT, struct import_int_int),
#ifdef MPI_CXX_BOOL
        BYSIZE(MPI_CXX_BOOL, NAMED_UNSIGNED),
        BYSIZE(MPI_CXX_FLOAT_COMPLEX, NAMED_COMPLEX),
        BYSIZE(MPI_CXX_DOUBLE_COMPLEX, NAMED_COMPLEX),
#endif
        /* Fortran types: their sizes are the Fortran compiler's, so MPI is asked. */
        BYSIZE(MPI_CHARACTER, NAMED_UNSIGNED),
        BYSIZE(MPI_LOGICAL, NAMED_UNSIGNED),
        BYSIZE(MPI_INTEGER, NAMED_SIGNED),
        BYSIZE(MPI_REAL, NAMED_REAL),
        BYSIZE(MPI_DOUBLE_PRECISION, NAMED_REAL),
        BYSIZE(MPI_COMPLEX, NAMED_COMPLEX),
        BYSIZE(MPI_DOUBLE_COMPLEX, NAMED_COMPLEX),
        TWO(MPI_2INTEGER, NAMED_SIGNED),
        TWO(MPI_2REAL, NAMED_REAL),
        TWO(MPI_2DOUBLE_PRECISION, NAMED_REAL),
#ifdef MPI_INTEGER1
        BYSIZE(MPI_INTEGER1, NAMED_SIGNED),
#endif
#ifdef MPI_INTEGER2
        BYSIZE(MPI_INTEGER2, NAMED_SIGNED),
#endif
#ifdef MPI_INTEGER4
        BYSIZE(MPI_INTEGER4, NAMED_SIGNED),
#endif
#ifdef MPI_INTEGER8
        BYSIZE(MPI_INTEGER8, NAMED_SIGNED),
#endif
#ifdef MPI_REAL2
        BYSIZE(MPI_REAL2, NAMED_REAL),
#endif
#ifdef MPI_REAL4
        BYSIZE(MPI_REAL4, NAMED_REAL),
#endif
#ifdef MPI_REAL8
        BYSIZE(MPI_REAL8, NAMED_REAL),
#endif
#ifdef MPI_COMPLEX8
        BYSIZE(MPI_COMPLEX8, NAMED_COMPLEX),
#endif
#ifdef MPI_COMPLEX16
        BYSIZE(MPI_COMPLEX16, NAMED_COMPLEX),
#endif
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (table[i].mpi != MPI_DATATYPE_NULL && table[i].mpi == type) {
            *entry = table[i];
            return 1;
        }
    }
    return 0;
}

/* The gcomm basic type of a kind and size; NULL when there is none (e.g. a 16-byte real). */
static gcomm_datatype import_basic_by_size(import_named_kind_t kind, int size)
{
    switch (kind) {
    case NAMED_SIGNED:
        return size == 1 ? GCOMM_INT8 : size == 2 ? GCOMM_INT16 : size == 4 ? GCOMM_INT32
             : size == 8 ? GCOMM_INT64 : GCOMM_DATATYPE_NULL;
    case NAMED_UNSIGNED:
        return size == 1 ? GCOMM_UINT8 : size == 2 ? GCOMM_UINT16 : size == 4 ? GCOMM_UINT32
             : size == 8 ? GCOMM_UINT64 : GCOMM_DATATYPE_NULL;
    case NAMED_REAL:
        return size == 2 ? GCOMM_FLOAT16 : size == 4 ? GCOMM_FLOAT : size == 8 ? GCOMM_DOUBLE
             : GCOMM_DATATYPE_NULL;
    default: return GCOMM_DATATYPE_NULL;
    }
}

/* A type known by the size MPI reports: the basic type of that kind and size, or for pairs
 * (complex numbers, Fortran 2REAL and friends) two of half that size. */
static int import_sized(MPI_Datatype type, import_named_kind_t kind, int pair,
                        gcomm_datatype *out)
{
    int size = 0, rc = MPI_Type_size(type, &size);
    if (rc != MPI_SUCCESS) return import_mpi_error(rc, "MPI_Type_size");
    gcomm_datatype basic = !pair ? import_basic_by_size(kind, size)
                           : size % 2 == 0 ? import_basic_by_size(kind, size / 2)
                                           : GCOMM_DATATYPE_NULL;
    if (basic == GCOMM_DATATYPE_NULL) {
        char name[MPI_MAX_OBJECT_NAME];
        return IMPORT_ERROR(GCOMM_ERR_UNSUPPORTED, "%s (%d bytes) has no gcomm equivalent",
                            import_type_name(type, name), size);
    }
    if (pair) return gcomm_type_contiguous(2, basic, out);
    *out = basic;
    return GCOMM_SUCCESS;
}

static int import_named(MPI_Datatype type, gcomm_datatype *out)
{
    import_named_t e;
    if (!import_named_lookup(type, &e)) {
        char name[MPI_MAX_OBJECT_NAME];
        return IMPORT_ERROR(GCOMM_ERR_UNSUPPORTED, "%s has no gcomm equivalent",
                            import_type_name(type, name));
    }
    switch (e.kind) {
    case NAMED_FIXED: *out = e.basic; return GCOMM_SUCCESS;
    case NAMED_PAIR_INT: { /* MPI defines these as this struct */
        const int blocklens[2] = {1, 1};
        const ptrdiff_t displs[2] = {0, e.int_disp};
        const gcomm_datatype members[2] = {e.basic, GCOMM_INT};
        return gcomm_type_struct(2, blocklens, displs, members, out);
    }
    case NAMED_COMPLEX: return import_sized(type, NAMED_REAL, 1, out);
    case NAMED_TWO: return import_sized(type, e.two_of, 1, out);
    default: return import_sized(type, e.kind, 0, out);
    }
}

/* Types from MPI_Type_create_f90_{integer,real,complex}: predefined-like, known by their size. */
static int import_f90(MPI_Datatype type, int combiner, gcomm_datatype *out)
{
    if (combiner == MPI_COMBINER_F90_INTEGER) return import_sized(type, NAMED_SIGNED, 0, out);
    return import_sized(type, NAMED_REAL, combiner == MPI_COMBINER_F90_COMPLEX, out);
}

/* ---- derived types ---------------------------------------------------------------------- */

/* What MPI_Type_get_contents returned, and the gcomm equivalents of its datatypes. */
typedef struct {
    int combiner, ni, na, nd;
    int *ints;
    MPI_Aint *aints;
    ptrdiff_t *addrs;        /* aints converted */
    MPI_Datatype *types;     /* to be freed with MPI_Type_free unless named */
    gcomm_datatype *children; /* children[i] decodes types[i]; runs of one handle share one */
} import_contents_t;

static int import_type(MPI_Datatype type, gcomm_datatype *out);

static void import_contents_free(import_contents_t *c)
{
    gcomm_datatype last = GCOMM_DATATYPE_NULL;
    for (int i = 0; c->children && i < c->nd; i++) {
        gcomm_datatype child = c->children[i];
        if (child != last) import_release(&c->children[i]); /* a run shares one reference */
        last = child;
    }
    for (int i = 0; c->types && i < c->nd; i++) {
        int ni, na, nd, combiner;
        if (c->types[i] == MPI_DATATYPE_NULL) continue;
        if (MPI_Type_get_envelope(c->types[i], &ni, &na, &nd, &combiner) == MPI_SUCCESS &&
            combiner != MPI_COMBINER_NAMED)
            MPI_Type_free(&c->types[i]);
    }
    free(c->ints);
    free(c->aints);
    free(c->addrs);
    free(c->types);
    free(c->children);
}

static int import_contents_get(MPI_Datatype type, import_contents_t *c)
{
    /* Zero-length arrays are allocated with one element so that malloc never returns NULL for
     * success. */
    c->ints = malloc(sizeof(int) * (size_t)(c->ni > 0 ? c->ni : 1));
    c->aints = malloc(sizeof(MPI_Aint) * (size_t)(c->na > 0 ? c->na : 1));
    c->addrs = malloc(sizeof(ptrdiff_t) * (size_t)(c->na > 0 ? c->na : 1));
    c->types = calloc((size_t)(c->nd > 0 ? c->nd : 1), sizeof(MPI_Datatype));
    c->children = calloc((size_t)(c->nd > 0 ? c->nd : 1), sizeof(gcomm_datatype));
    for (int i = 0; c->types && i < c->nd; i++) c->types[i] = MPI_DATATYPE_NULL;
    if (!c->ints || !c->aints || !c->addrs || !c->types || !c->children)
        return IMPORT_ERROR(GCOMM_ERR_NOMEM, "no memory for the contents of a datatype "
                            "(%d integers, %d addresses, %d datatypes)", c->ni, c->na, c->nd);

    int rc = MPI_Type_get_contents(type, c->ni, c->na, c->nd, c->ints, c->aints, c->types);
    if (rc != MPI_SUCCESS) {
        for (int i = 0; i < c->nd; i++) c->types[i] = MPI_DATATYPE_NULL; /* nothing to free */
        return import_mpi_error(rc, "MPI_Type_get_contents");
    }
    for (int i = 0; i < c->na; i++) {
        if (c->aints[i] > PTRDIFF_MAX || c->aints[i] < PTRDIFF_MIN)
            return IMPORT_ERROR(GCOMM_ERR_OVERFLOW, "address argument %d = %lld does not fit "
                                "in ptrdiff_t", i, (long long)c->aints[i]);
        c->addrs[i] = (ptrdiff_t)c->aints[i];
    }
    for (int i = 0; i < c->nd; i++) {
        if (i > 0 && c->types[i] == c->types[i - 1]) { /* e.g. a struct of one type repeated */
            c->children[i] = c->children[i - 1];
            continue;
        }
        int status = import_type(c->types[i], &c->children[i]);
        if (status != GCOMM_SUCCESS) return status;
    }
    return GCOMM_SUCCESS;
}

/* The argument counts a combiner must come with; a mismatch means a broken MPI. */
static int import_expect(const import_contents_t *c, const char *what, int ni, int na, int nd)
{
    if (c->ni == ni && c->na == na && c->nd == nd) return GCOMM_SUCCESS;
    return IMPORT_ERROR(GCOMM_ERR_MPI, "MPI_Type_get_envelope reported %d integers, %d addresses "
                        "and %d datatypes for %s, expected %d, %d and %d",
                        c->ni, c->na, c->nd, what, ni, na, nd);
}

static int import_order(int mpi_order, int *order)
{
    if (mpi_order == MPI_ORDER_C) *order = GCOMM_ORDER_C;
    else if (mpi_order == MPI_ORDER_FORTRAN) *order = GCOMM_ORDER_FORTRAN;
    else return IMPORT_ERROR(GCOMM_ERR_MPI, "MPI reported array order %d", mpi_order);
    return GCOMM_SUCCESS;
}

static int import_subarray(import_contents_t *c, gcomm_datatype *out)
{
    int ndims = c->ni > 0 ? c->ints[0] : -1;
    int status = import_expect(c, "MPI_COMBINER_SUBARRAY", 3 * ndims + 2, 0, 1);
    int order = 0;
    if (status == GCOMM_SUCCESS) status = import_order(c->ints[3 * ndims + 1], &order);
    if (status != GCOMM_SUCCESS) return status;
    const int *v = c->ints + 1;
    return gcomm_type_subarray(ndims, v, v + ndims, v + 2 * ndims, order, c->children[0], out);
}

static int import_darray(import_contents_t *c, gcomm_datatype *out)
{
    int ndims = c->ni > 2 ? c->ints[2] : -1;
    int status = import_expect(c, "MPI_COMBINER_DARRAY", 4 * ndims + 4, 0, 1);
    int order = 0;
    if (status == GCOMM_SUCCESS) status = import_order(c->ints[4 * ndims + 3], &order);
    if (status != GCOMM_SUCCESS) return status;
    int *gsizes = c->ints + 3, *distribs = gsizes + ndims, *dargs = distribs + ndims;
    for (int i = 0; i < ndims; i++) { /* our copy of the contents: translate in place */
        int d = distribs[i];
        distribs[i] = d == MPI_DISTRIBUTE_BLOCK    ? GCOMM_DISTRIBUTE_BLOCK
                      : d == MPI_DISTRIBUTE_CYCLIC ? GCOMM_DISTRIBUTE_CYCLIC
                      : d == MPI_DISTRIBUTE_NONE   ? GCOMM_DISTRIBUTE_NONE
                                                   : d;
        if (dargs[i] == MPI_DISTRIBUTE_DFLT_DARG) dargs[i] = GCOMM_DISTRIBUTE_DFLT_DARG;
    }
    return gcomm_type_darray(c->ints[0], c->ints[1], ndims, gsizes, distribs, dargs,
                             dargs + ndims, order, c->children[0], out);
}

/* The h-constructors with Fortran INTEGER displacements report them as integers (MPI-2) or, in
 * Open MPI, as addresses; both forms are accepted. */
#ifdef IMPORT_COMBINER_HVECTOR_INTEGER
static int import_integer_displs(import_contents_t *c, int count, int first)
{
    if (c->na == count) return GCOMM_SUCCESS;
    if (c->na != 0 || c->ni < first + count)
        return IMPORT_ERROR(GCOMM_ERR_MPI, "unexpected contents for an MPI-1 combiner: %d "
                            "integers, %d addresses", c->ni, c->na);
    ptrdiff_t *addrs = realloc(c->addrs, sizeof(ptrdiff_t) * (size_t)(count > 0 ? count : 1));
    if (!addrs) return IMPORT_ERROR(GCOMM_ERR_NOMEM, "no memory for %d displacements", count);
    c->addrs = addrs;
    for (int i = 0; i < count; i++) c->addrs[i] = c->ints[first + i];
    c->na = count;
    c->ni = first;
    return GCOMM_SUCCESS;
}
#endif

/* The byte-displacement constructors, shared with their MPI-1 INTEGER forms. */
static int import_hvector(import_contents_t *c, gcomm_datatype *out)
{
    GCOMMI_CHECK(import_expect(c, "MPI_COMBINER_HVECTOR", 2, 1, 1));
    return gcomm_type_hvector(c->ints[0], c->ints[1], c->addrs[0], c->children[0], out);
}

static int import_hindexed(import_contents_t *c, gcomm_datatype *out)
{
    const int n = c->ni > 0 ? c->ints[0] : 0;
    GCOMMI_CHECK(import_expect(c, "MPI_COMBINER_HINDEXED", n + 1, n, 1));
    return gcomm_type_hindexed(n, c->ints + 1, c->addrs, c->children[0], out);
}

static int import_struct(import_contents_t *c, gcomm_datatype *out)
{
    const int n = c->ni > 0 ? c->ints[0] : 0;
    GCOMMI_CHECK(import_expect(c, "MPI_COMBINER_STRUCT", n + 1, n, n));
    return gcomm_type_struct(n, c->ints + 1, c->addrs, c->children, out);
}

/* Calls the gcomm constructor of a decoded combiner. */
static int import_build(import_contents_t *c, gcomm_datatype *out)
{
    const int *v = c->ints;
    const int n = c->ni > 0 ? v[0] : 0;
    switch (c->combiner) {
    case MPI_COMBINER_DUP:
        GCOMMI_CHECK(import_expect(c, "MPI_COMBINER_DUP", 0, 0, 1));
        return gcomm_type_dup(c->children[0], out);
    case MPI_COMBINER_CONTIGUOUS:
        GCOMMI_CHECK(import_expect(c, "MPI_COMBINER_CONTIGUOUS", 1, 0, 1));
        return gcomm_type_contiguous(n, c->children[0], out);
    case MPI_COMBINER_VECTOR:
        GCOMMI_CHECK(import_expect(c, "MPI_COMBINER_VECTOR", 3, 0, 1));
        return gcomm_type_vector(n, v[1], v[2], c->children[0], out);
#ifdef IMPORT_COMBINER_HVECTOR_INTEGER
    case IMPORT_COMBINER_HVECTOR_INTEGER:
        GCOMMI_CHECK(import_integer_displs(c, 1, 2));
        return import_hvector(c, out);
#endif
    case MPI_COMBINER_HVECTOR: return import_hvector(c, out);
    case MPI_COMBINER_INDEXED:
        GCOMMI_CHECK(import_expect(c, "MPI_COMBINER_INDEXED", 2 * n + 1, 0, 1));
        return gcomm_type_indexed(n, v + 1, v + 1 + n, c->children[0], out);
#ifdef IMPORT_COMBINER_HINDEXED_INTEGER
    case IMPORT_COMBINER_HINDEXED_INTEGER:
        GCOMMI_CHECK(import_integer_displs(c, n, n + 1));
        return import_hindexed(c, out);
#endif
    case MPI_COMBINER_HINDEXED: return import_hindexed(c, out);
    case MPI_COMBINER_INDEXED_BLOCK:
        GCOMMI_CHECK(import_expect(c, "MPI_COMBINER_INDEXED_BLOCK", n + 2, 0, 1));
        return gcomm_type_indexed_block(n, v[1], v + 2, c->children[0], out);
    case MPI_COMBINER_HINDEXED_BLOCK:
        GCOMMI_CHECK(import_expect(c, "MPI_COMBINER_HINDEXED_BLOCK", 2, n, 1));
        return gcomm_type_hindexed_block(n, v[1], c->addrs, c->children[0], out);
#ifdef IMPORT_COMBINER_STRUCT_INTEGER
    case IMPORT_COMBINER_STRUCT_INTEGER:
        GCOMMI_CHECK(import_integer_displs(c, n, n + 1));
        return import_struct(c, out);
#endif
    case MPI_COMBINER_STRUCT: return import_struct(c, out);
    case MPI_COMBINER_SUBARRAY: return import_subarray(c, out);
    case MPI_COMBINER_DARRAY: return import_darray(c, out);
    case MPI_COMBINER_RESIZED:
        GCOMMI_CHECK(import_expect(c, "MPI_COMBINER_RESIZED", 0, 2, 1));
        return gcomm_type_resized(c->children[0], c->addrs[0], c->addrs[1], out);
    default:
        return IMPORT_ERROR(GCOMM_ERR_UNSUPPORTED, "MPI combiner %d is not supported",
                            c->combiner);
    }
}

/* Decodes one MPI type into a gcomm reference owned by the caller (a predefined type for most
 * named types: release it with import_release). */
static int import_type(MPI_Datatype type, gcomm_datatype *out)
{
    import_contents_t c = {0};
    int rc = MPI_Type_get_envelope(type, &c.ni, &c.na, &c.nd, &c.combiner);
    if (rc != MPI_SUCCESS) return import_mpi_error(rc, "MPI_Type_get_envelope");
    switch (c.combiner) {
    case MPI_COMBINER_NAMED: return import_named(type, out);
    case MPI_COMBINER_F90_REAL:
    case MPI_COMBINER_F90_COMPLEX:
    case MPI_COMBINER_F90_INTEGER: return import_f90(type, c.combiner, out);
    default: break;
    }
    if (c.ni < 0 || c.na < 0 || c.nd < 0)
        return IMPORT_ERROR(GCOMM_ERR_MPI, "MPI_Type_get_envelope reported negative counts "
                            "(%d, %d, %d)", c.ni, c.na, c.nd);
    int status = import_contents_get(type, &c);
    if (status == GCOMM_SUCCESS) status = import_build(&c, out);
    import_contents_free(&c);
    return status;
}

int gcomm_type_from_mpi(MPI_Datatype mpitype, gcomm_datatype *newtype)
{
    GCOMMI_API_ENTRY();
    if (newtype == NULL) return IMPORT_ERROR(GCOMM_ERR_ARG, "newtype is NULL");
    if (mpitype == MPI_DATATYPE_NULL)
        return IMPORT_ERROR(GCOMM_ERR_TYPE, "mpitype is MPI_DATATYPE_NULL");
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return IMPORT_ERROR(GCOMM_ERR_MPI, "MPI is %s: datatypes cannot be decoded",
                            finalized ? "finalized" : "not initialized");

    gcomm_datatype type = GCOMM_DATATYPE_NULL;
    int status = import_type(mpitype, &type);
    if (status != GCOMM_SUCCESS) return status;
    /* The caller frees the result, and predefined types cannot be freed: give it its own. */
    if (import_is_predefined(type)) return gcomm_type_dup(type, newtype);
    *newtype = type;
    return GCOMM_SUCCESS;
}
