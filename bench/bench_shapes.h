/* The shapes of issue 2's CPU benchmark as plain geometry, written once for the three programs
 * that time them: bench_pack_cpu (gcomm and MPI types of each shape), bench_pack_ab (the same
 * shapes built in two loaded copies of libgcomm) and bench_pack_cpu_ceiling (hand-written loops
 * over the same addresses). A geometry says where the data is; bench_shape_type() turns it into
 * a gcomm datatype through a table of constructors, so that a program linked with gcomm and one
 * that loads it with dlopen build identical types from the same code.
 *
 * Shapes (doubles unless said otherwise), scaled so that one pack moves about `target` bytes:
 *   vector_bl1/16/256  vector(count, bl, 2 bl): half of the buffer, blocks of bl doubles
 *   lower_tri          indexed: row i of an N x N matrix has i + 1 elements at i N
 *   subarray4d         the inner half of each dimension of a 4-D volume (16x the packed bytes)
 *   struct             array of struct {double; int; int; char} (extent 24, 17 packed bytes)
 *   transpose          contiguous(N, resized(vector(N, 1, N), extent 8)): packing transposes
 *   rows (no name)     hvector of R-byte rows S bytes apart (bench_shape_rows) */
#ifndef GCOMM_BENCH_SHAPES_H
#define GCOMM_BENCH_SHAPES_H

#include <stddef.h>

#include "gcomm/datatype.h"

typedef enum {
    BENCH_SHAPE_VECTOR,
    BENCH_SHAPE_LOWER_TRI,
    BENCH_SHAPE_SUBARRAY4D,
    BENCH_SHAPE_STRUCT,
    BENCH_SHAPE_TRANSPOSE,
    BENCH_SHAPE_ROWS,
} bench_shape_kind_t;

typedef struct {
    const char *name;
    bench_shape_kind_t kind;
    int param; /* vector: doubles per block */
} bench_shape_t;

/* The seven shapes of issue 2, in the order the benchmarks report them. */
extern const bench_shape_t bench_shapes[];
extern const int bench_nshapes;

/* One shape at one size. Every byte of the type lies in [0, span) of the typed buffer. */
typedef struct {
    bench_shape_kind_t kind;
    size_t n;      /* vector, rows: blocks; lower_tri, transpose: the matrix side; struct: elements */
    size_t block;  /* vector: doubles per block; rows: bytes per row */
    size_t stride; /* vector: doubles between blocks; lower_tri: between rows (N unless padded);
                      rows: bytes between rows */
    int sizes[4], subsizes[4], starts[4]; /* subarray4d, C order */
    size_t incount; /* count of the type in one pack */
    size_t packed;  /* packed bytes of incount x type */
    size_t span;    /* bytes of the typed buffer */
    char desc[96];
} bench_geom_t;

/* The element of the struct shape. */
typedef struct {
    double d;
    int i, j;
    char c;
} bench_elem_t;
#define BENCH_ELEM_PACKED (sizeof(double) + 2 * sizeof(int) + 1)

/* The shape named `name` (exactly), or NULL. */
const bench_shape_t *bench_shape_find(const char *name);

/* The smallest geometry of the shape at or above `target` packed bytes (exactly target where the
 * shape can hit it). 0: *g set; 1: no geometry of the shape fits (counts past an int). */
int bench_shape_geom(const bench_shape_t *sh, size_t target, bench_geom_t *g);

/* hvector(target / row, row, stride, byte): the rows of bench_pack_ab --rows. Same returns. */
int bench_shape_rows(size_t row, size_t stride, size_t target, bench_geom_t *g);

/* The constructors a geometry is built with: those of the linked library
 * (bench_type_api_linked) or of a copy loaded with dlopen (bench_pack_ab). */
typedef struct {
    int (*contiguous)(int, gcomm_datatype, gcomm_datatype *);
    int (*vector)(int, int, int, gcomm_datatype, gcomm_datatype *);
    int (*hvector)(int, int, ptrdiff_t, gcomm_datatype, gcomm_datatype *);
    int (*indexed)(int, const int *, const int *, gcomm_datatype, gcomm_datatype *);
    int (*strct)(int, const int *, const ptrdiff_t *, const gcomm_datatype *, gcomm_datatype *);
    int (*subarray)(int, const int *, const int *, const int *, int, gcomm_datatype,
                    gcomm_datatype *);
    int (*resized)(gcomm_datatype, ptrdiff_t, ptrdiff_t, gcomm_datatype *);
    int (*tfree)(gcomm_datatype *);
    gcomm_datatype dbl, i32, chr, byte;
} bench_type_api_t;

/* The geometry as a datatype (not committed). Returns 0, or the failing constructor's status
 * (GCOMM_ERR_NOMEM when the arrays of lower_tri cannot be allocated). */
int bench_shape_type(const bench_type_api_t *api, const bench_geom_t *g, gcomm_datatype *t);

/* lower_tri's block lengths (i + 1) and displacements (i pitch), in elements; free() both. 0, or
 * -1 when out of memory. */
int bench_lower_tri_blocks(size_t n, size_t pitch, int **len, int **disp);
/* Moves the blocks of a vector or the rows of lower_tri `pad` doubles further apart than the shape
 * has them (bench_pack_cpu_ceiling --pad: a stride that is not a multiple of 4 KiB spreads the
 * blocks' lines over every set of a cache). 0: done (nothing for pad 0); 1: another shape, or a
 * displacement past an int. */
int bench_shape_pad(bench_geom_t *g, size_t pad);

/* The constructors of the library this program links (static inline: programs that load gcomm
 * instead never call it, and then never reference gcomm's symbols). */
static inline bench_type_api_t bench_type_api_linked(void)
{
    bench_type_api_t api = {gcomm_type_contiguous, gcomm_type_vector,   gcomm_type_hvector,
                            gcomm_type_indexed,    gcomm_type_struct,   gcomm_type_subarray,
                            gcomm_type_resized,    gcomm_type_free,     GCOMM_DOUBLE,
                            GCOMM_INT,             GCOMM_CHAR,          GCOMM_BYTE};
    return api;
}

#endif /* GCOMM_BENCH_SHAPES_H */
