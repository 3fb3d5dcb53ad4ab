/* Geometry of issue 2's benchmark shapes, and their datatypes through a table of constructors
 * (bench_shapes.h). */
#include "bench_shapes.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const bench_shape_t bench_shapes[] = {
    {"vector_bl1", BENCH_SHAPE_VECTOR, 1},       {"vector_bl16", BENCH_SHAPE_VECTOR, 16},
    {"vector_bl256", BENCH_SHAPE_VECTOR, 256},   {"lower_tri", BENCH_SHAPE_LOWER_TRI, 0},
    {"subarray4d", BENCH_SHAPE_SUBARRAY4D, 0},   {"struct", BENCH_SHAPE_STRUCT, 0},
    {"transpose", BENCH_SHAPE_TRANSPOSE, 0},
};
const int bench_nshapes = (int)(sizeof bench_shapes / sizeof bench_shapes[0]);

/* The matrix side of lower_tri and transpose: N * N must fit an int displacement. */
#define BENCH_SIDE_MAX 46340

const bench_shape_t *bench_shape_find(const char *name)
{
    for (int i = 0; i < bench_nshapes; i++)
        if (strcmp(bench_shapes[i].name, name) == 0)
            return &bench_shapes[i];
    return NULL;
}

static int geom_vector(size_t bl, size_t target, bench_geom_t *g)
{
    size_t count = target / (8 * bl);
    if (count == 0 || count > INT_MAX / 2) /* the stride 2 bl times count stays an int */
        return 1;
    g->n = count;
    g->block = bl;
    g->stride = 2 * bl;
    g->incount = 1;
    g->packed = count * bl * 8;
    g->span = ((count - 1) * 2 * bl + bl) * 8;
    snprintf(g->desc, sizeof g->desc, "count=%zu bl=%zu stride=%zu", count, bl, 2 * bl);
    return 0;
}

static int geom_lower_tri(size_t target, bench_geom_t *g)
{
    size_t n = 1;
    while (8 * n * (n + 1) / 2 < target)
        n++;
    if (n > BENCH_SIDE_MAX)
        return 1;
    g->n = n;
    g->stride = n; /* the row pitch */
    g->incount = 1;
    g->packed = 8 * n * (n + 1) / 2;
    g->span = 8 * n * n;
    snprintf(g->desc, sizeof g->desc, "N=%zu", n);
    return 0;
}

/* Inner half of each dimension; power-of-two subsizes as even as possible, the larger ones
 * innermost (C order), so the packed size is exactly the target when it is 8 * 2^p. */
static int geom_subarray4d(size_t target, bench_geom_t *g)
{
    int p = 0;
    while ((size_t)8 << p < target)
        p++;
    size_t volume = 1, sub = 1;
    for (int d = 0; d < 4; d++) {
        int e = p / 4 + (d >= 4 - p % 4 ? 1 : 0);
        if (e > 29) /* sizes[d] = 2^(e+1) must fit an int */
            return 1;
        g->subsizes[d] = 1 << e;
        g->sizes[d] = 2 * g->subsizes[d];
        g->starts[d] = g->subsizes[d] / 2;
        volume *= (size_t)g->sizes[d];
        sub *= (size_t)g->subsizes[d];
    }
    g->incount = 1;
    g->packed = 8 * sub;
    g->span = 8 * volume;
    snprintf(g->desc, sizeof g->desc, "%dx%dx%dx%d of %dx%dx%dx%d", g->subsizes[0],
             g->subsizes[1], g->subsizes[2], g->subsizes[3], g->sizes[0], g->sizes[1],
             g->sizes[2], g->sizes[3]);
    return 0;
}

static int geom_struct(size_t target, bench_geom_t *g)
{
    size_t count = (target + BENCH_ELEM_PACKED - 1) / BENCH_ELEM_PACKED;
    if (count > INT_MAX)
        return 1;
    g->n = count;
    g->incount = count;
    g->packed = count * BENCH_ELEM_PACKED;
    g->span = count * sizeof(bench_elem_t);
    snprintf(g->desc, sizeof g->desc, "%zu x {d,i,i,c} extent %zu", count, sizeof(bench_elem_t));
    return 0;
}

static int geom_transpose(size_t target, bench_geom_t *g)
{
    size_t n = 1;
    while (8 * n * n < target)
        n++;
    if (n > BENCH_SIDE_MAX)
        return 1;
    g->n = n;
    g->incount = 1;
    g->packed = 8 * n * n;
    g->span = 8 * n * n;
    snprintf(g->desc, sizeof g->desc, "N=%zu", n);
    return 0;
}

int bench_shape_geom(const bench_shape_t *sh, size_t target, bench_geom_t *g)
{
    memset(g, 0, sizeof *g);
    g->kind = sh->kind;
    switch (sh->kind) {
    case BENCH_SHAPE_VECTOR: return geom_vector((size_t)sh->param, target, g);
    case BENCH_SHAPE_LOWER_TRI: return geom_lower_tri(target, g);
    case BENCH_SHAPE_SUBARRAY4D: return geom_subarray4d(target, g);
    case BENCH_SHAPE_STRUCT: return geom_struct(target, g);
    case BENCH_SHAPE_TRANSPOSE: return geom_transpose(target, g);
    case BENCH_SHAPE_ROWS: break; /* sized by bench_shape_rows */
    }
    return 1;
}

int bench_shape_rows(size_t row, size_t stride, size_t target, bench_geom_t *g)
{
    memset(g, 0, sizeof *g);
    g->kind = BENCH_SHAPE_ROWS;
    size_t count = row ? target / row : 0;
    if (count == 0 || count > INT_MAX || row > INT_MAX || stride < row)
        return 1;
    g->n = count;
    g->block = row;
    g->stride = stride;
    g->incount = 1;
    g->packed = count * row;
    g->span = (count - 1) * stride + row;
    snprintf(g->desc, sizeof g->desc, "%zu rows of %zu bytes, %zu apart", count, row, stride);
    return 0;
}

int bench_shape_pad(bench_geom_t *g, size_t pad)
{
    if (pad == 0)
        return 0;
    if (g->kind != BENCH_SHAPE_VECTOR && g->kind != BENCH_SHAPE_LOWER_TRI)
        return 1;
    size_t stride = g->stride + pad;
    size_t last = g->kind == BENCH_SHAPE_VECTOR ? g->block : g->n; /* doubles of the last row */
    if (stride > INT_MAX || (g->n - 1) * stride + last > INT_MAX) /* int displacements */
        return 1;
    g->stride = stride;
    g->span = 8 * ((g->n - 1) * stride + last);
    size_t at = strlen(g->desc);
    snprintf(g->desc + at, sizeof g->desc - at, " pitch+%zu doubles", pad);
    return 0;
}

int bench_lower_tri_blocks(size_t n, size_t pitch, int **len, int **disp)
{
    *len = malloc(n * sizeof **len);
    *disp = malloc(n * sizeof **disp);
    if (!*len || !*disp) {
        free(*len);
        free(*disp);
        *len = *disp = NULL;
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        (*len)[i] = (int)(i + 1);
        (*disp)[i] = (int)(i * pitch);
    }
    return 0;
}

/* A constructor's status, or the first of two (the second one still runs: it frees). */
#define BENCH_FIRST(a, b) ((a) != 0 ? (a) : (b))

int bench_shape_type(const bench_type_api_t *api, const bench_geom_t *g, gcomm_datatype *t)
{
    switch (g->kind) {
    case BENCH_SHAPE_VECTOR:
        return api->vector((int)g->n, (int)g->block, (int)g->stride, api->dbl, t);
    case BENCH_SHAPE_ROWS:
        return api->hvector((int)g->n, (int)g->block, (ptrdiff_t)g->stride, api->byte, t);
    case BENCH_SHAPE_LOWER_TRI: {
        int *len, *disp;
        if (bench_lower_tri_blocks(g->n, g->stride, &len, &disp) != 0)
            return GCOMM_ERR_NOMEM;
        int rc = api->indexed((int)g->n, len, disp, api->dbl, t);
        free(len);
        free(disp);
        return rc;
    }
    case BENCH_SHAPE_SUBARRAY4D:
        return api->subarray(4, g->sizes, g->subsizes, g->starts, GCOMM_ORDER_C, api->dbl, t);
    case BENCH_SHAPE_STRUCT: {
        int len[4] = {1, 1, 1, 1};
        ptrdiff_t disp[4] = {offsetof(bench_elem_t, d), offsetof(bench_elem_t, i),
                             offsetof(bench_elem_t, j), offsetof(bench_elem_t, c)};
        gcomm_datatype types[4] = {api->dbl, api->i32, api->i32, api->chr};
        gcomm_datatype raw;
        int rc = api->strct(4, len, disp, types, &raw);
        if (rc != 0)
            return rc;
        rc = api->resized(raw, 0, sizeof(bench_elem_t), t);
        return BENCH_FIRST(rc, api->tfree(&raw));
    }
    case BENCH_SHAPE_TRANSPOSE: {
        gcomm_datatype col, col8;
        int rc = api->vector((int)g->n, 1, (int)g->n, api->dbl, &col);
        if (rc != 0)
            return rc;
        rc = api->resized(col, 0, 8, &col8);
        rc = BENCH_FIRST(rc, api->tfree(&col));
        if (rc != 0)
            return rc;
        rc = api->contiguous((int)g->n, col8, t);
        return BENCH_FIRST(rc, api->tfree(&col8));
    }
    }
    return GCOMM_ERR_ARG;
}
