/* Reference typemap expander: MPI-4.1 section 5.1 definitions, written from the standard and
 * sharing no code with src/datatype. See typemap_ref.h. */
#include "typemap_ref.h"

#include <stdlib.h>
#include <string.h>

#include "gcomm/datatype.h"

size_t tm_basic_size(int basic)
{
    static const size_t sz[RT_NBASIC] = {8, 4, sizeof(int), 1, 2, 8};
    return sz[basic];
}

int tm_basic_align(int basic)
{
    static const int al[RT_NBASIC] = {_Alignof(double), _Alignof(float), _Alignof(int), 1,
                                      _Alignof(int16_t), _Alignof(int64_t)};
    return al[basic];
}

static tm_map *map_new(void)
{
    tm_map *m = calloc(1, sizeof *m);
    if (!m) abort();
    m->align = 1;
    return m;
}

static void map_free(tm_map *m)
{
    if (!m) return;
    free(m->e);
    free(m);
}

static void map_reserve(tm_map *m, size_t n)
{
    if (n <= m->cap) return;
    m->cap = n;
    m->e = realloc(m->e, n * sizeof *m->e);
    if (!m->e) abort();
}

/* Appends one copy of child c displaced by d (entries and markers). */
static void map_add_copy(tm_map *m, const tm_map *c, int64_t d)
{
    map_reserve(m, m->n + c->n);
    for (size_t i = 0; i < c->n; i++) {
        m->e[m->n + i].disp = c->e[i].disp + d;
        m->e[m->n + i].basic = c->e[i].basic;
    }
    m->n += c->n;
    m->size += c->size;
    if (c->has_markers) {
        if (!m->has_markers || c->lbm + d < m->lbm) m->lbm = c->lbm + d;
        if (!m->has_markers || c->ubm + d > m->ubm) m->ubm = c->ubm + d;
        m->has_markers = 1;
    }
}

/* The standard's bounds of a finished typemap. */
static void map_finish(tm_map *m)
{
    m->align = 1;
    if (m->n) {
        int64_t lo = m->e[0].disp, hi = m->e[0].disp + (int64_t)tm_basic_size(m->e[0].basic);
        for (size_t i = 0; i < m->n; i++) {
            int64_t a = m->e[i].disp, b = a + (int64_t)tm_basic_size(m->e[i].basic);
            if (a < lo) lo = a;
            if (b > hi) hi = b;
            if (tm_basic_align(m->e[i].basic) > m->align) m->align = tm_basic_align(m->e[i].basic);
        }
        m->true_lb = lo;
        m->true_ub = hi;
    } else {
        m->true_lb = m->true_ub = 0;
    }
    if (m->has_markers) {
        m->lb = m->lbm;
        m->ub = m->ubm;
    } else if (m->n) {
        m->lb = m->true_lb;
        m->ub = m->true_ub;
        int64_t ext = m->ub - m->lb, r = ext % m->align;
        if (r) m->ub += m->align - r;
    } else {
        m->lb = m->ub = 0;
    }
}

static void default_extent(const rt_node *n, void *ctx, int64_t *lb, int64_t *extent)
{
    (void)ctx;
    *lb = n->ref->lb;
    *extent = n->ref->ub - n->ref->lb;
}

/* Global indices that one process owns in one dimension of a darray, in increasing order. */
static int darray_owned(const rt_node *n, int d, int coord, int *idx)
{
    int g = n->sizes[d], p = n->psizes[d], k = 0;
    switch (n->distribs[d]) {
    case GCOMM_DISTRIBUTE_NONE:
        for (int i = 0; i < g; i++) idx[k++] = i;
        break;
    case GCOMM_DISTRIBUTE_BLOCK: {
        int b = n->dargs[d] == GCOMM_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : n->dargs[d];
        for (int i = coord * b; i < (coord + 1) * b && i < g; i++) idx[k++] = i;
        break;
    }
    default: { /* cyclic(b) */
        int b = n->dargs[d] == GCOMM_DISTRIBUTE_DFLT_DARG ? 1 : n->dargs[d];
        for (int i = 0; i < g; i++)
            if ((i / b) % p == coord) idx[k++] = i;
        break;
    }
    }
    return k;
}

/* Subarray and darray: copies of the child at linear index x extent, the indices of each
 * dimension taken from idx[d][0 .. cnt[d]), C order (last dimension fastest) or Fortran order
 * (first fastest); markers at 0 and prod(sizes) x extent. */
static int expand_array(tm_map *m, const rt_node *n, const tm_map *c, int64_t ext,
                        int *const idx[], const int cnt[], size_t max_entries)
{
    int nd = n->ndims;
    int64_t stride[RT_MAX_DIMS], total = 1;
    size_t copies = 1;
    for (int d = 0; d < nd; d++) copies *= (size_t)cnt[d];
    if (c->n && copies > max_entries / c->n) return -1;
    if (n->order == GCOMM_ORDER_C) {
        for (int d = nd - 1; d >= 0; d--) stride[d] = total, total *= n->sizes[d];
    } else {
        for (int d = 0; d < nd; d++) stride[d] = total, total *= n->sizes[d];
    }
    int pos[RT_MAX_DIMS] = {0};
    for (size_t k = 0; k < copies; k++) {
        int64_t lin = 0;
        for (int d = 0; d < nd; d++) lin += (int64_t)idx[d][pos[d]] * stride[d];
        map_add_copy(m, c, lin * ext);
        /* next multi-index: fastest dimension first */
        if (n->order == GCOMM_ORDER_C) {
            for (int d = nd - 1; d >= 0 && ++pos[d] == cnt[d]; d--) pos[d] = 0;
        } else {
            for (int d = 0; d < nd && ++pos[d] == cnt[d]; d++) pos[d] = 0;
        }
    }
    /* the type is resized: older markers are erased */
    m->has_markers = 1;
    m->lbm = 0;
    m->ubm = total * ext;
    return 0;
}

static tm_map *expand(rt_node *n, tm_extent_fn fn, void *ctx, size_t max_entries)
{
    tm_map *m = map_new();
    const tm_map *c = NULL;
    int64_t clb = 0, ext = 0;
    if (n->kind != RT_BASIC && n->kind != RT_STRUCT) {
        c = tm_expand(n->child[0], fn, ctx, max_entries);
        if (!c) goto fail;
        fn(n->child[0], ctx, &clb, &ext);
    }
    size_t cn = c ? c->n : 0;
#define NEED(copies)                                                                         \
    do {                                                                                     \
        if (cn && (size_t)(copies) > max_entries / cn) goto fail;                            \
    } while (0)
    switch (n->kind) {
    case RT_BASIC:
        map_reserve(m, 1);
        m->e[0].disp = 0;
        m->e[0].basic = n->basic;
        m->n = 1;
        m->size = tm_basic_size(n->basic);
        break;
    case RT_CONTIGUOUS:
        NEED(n->count);
        for (int i = 0; i < n->count; i++) map_add_copy(m, c, i * ext);
        break;
    case RT_VECTOR:
    case RT_HVECTOR:
        NEED((size_t)n->count * (size_t)n->blocklength);
        for (int i = 0; i < n->count; i++) {
            int64_t start = n->kind == RT_VECTOR ? i * n->stride * ext : i * n->stride;
            for (int j = 0; j < n->blocklength; j++) map_add_copy(m, c, start + j * ext);
        }
        break;
    case RT_INDEXED:
    case RT_HINDEXED:
    case RT_INDEXED_BLOCK:
    case RT_HINDEXED_BLOCK: {
        size_t total = 0;
        int blocked = n->kind == RT_INDEXED_BLOCK || n->kind == RT_HINDEXED_BLOCK;
        int bytes = n->kind == RT_HINDEXED || n->kind == RT_HINDEXED_BLOCK;
        for (int i = 0; i < n->count; i++) total += blocked ? n->blocklength : n->blocklengths[i];
        NEED(total);
        for (int i = 0; i < n->count; i++) {
            int bl = blocked ? n->blocklength : n->blocklengths[i];
            int64_t start = bytes ? n->displs[i] : n->displs[i] * ext;
            for (int j = 0; j < bl; j++) map_add_copy(m, c, start + j * ext);
        }
        break;
    }
    case RT_STRUCT: {
        size_t total = 0;
        for (int i = 0; i < n->count; i++) {
            const tm_map *ci = tm_expand(n->child[i], fn, ctx, max_entries);
            if (!ci) goto fail;
            total += (size_t)n->blocklengths[i] * ci->n;
            if (total > max_entries) goto fail;
        }
        for (int i = 0; i < n->count; i++) {
            int64_t lbi, exti;
            fn(n->child[i], ctx, &lbi, &exti);
            for (int j = 0; j < n->blocklengths[i]; j++)
                map_add_copy(m, n->child[i]->ref, n->displs[i] + j * exti);
        }
        break;
    }
    case RT_SUBARRAY: {
        int buf[RT_MAX_DIMS][64], *idx[RT_MAX_DIMS], cnt[RT_MAX_DIMS];
        for (int d = 0; d < n->ndims; d++) {
            if (n->subsizes[d] > 64) goto fail;
            idx[d] = buf[d];
            cnt[d] = n->subsizes[d];
            for (int i = 0; i < cnt[d]; i++) idx[d][i] = n->starts[d] + i;
        }
        if (expand_array(m, n, c, ext, idx, cnt, max_entries)) goto fail;
        break;
    }
    case RT_DARRAY: {
        int buf[RT_MAX_DIMS][256], *idx[RT_MAX_DIMS], cnt[RT_MAX_DIMS], coord[RT_MAX_DIMS];
        /* process coordinates: row-major in the process grid, whatever the array order */
        for (int d = n->ndims - 1, r = n->rank; d >= 0; d--) {
            coord[d] = r % n->psizes[d];
            r /= n->psizes[d];
        }
        for (int d = 0; d < n->ndims; d++) {
            if (n->sizes[d] > 256) goto fail;
            idx[d] = buf[d];
            cnt[d] = darray_owned(n, d, coord[d], idx[d]);
        }
        if (expand_array(m, n, c, ext, idx, cnt, max_entries)) goto fail;
        break;
    }
    case RT_RESIZED:
        map_add_copy(m, c, 0);
        m->has_markers = 1; /* older markers are erased */
        m->lbm = n->lb;
        m->ubm = n->lb + n->extent;
        break;
    case RT_DUP:
        map_add_copy(m, c, 0);
        break;
    default:
        goto fail;
    }
#undef NEED
    if (m->n > max_entries) goto fail;
    map_finish(m);
    return m;
fail:
    map_free(m);
    return NULL;
}

const tm_map *tm_expand(rt_node *n, tm_extent_fn fn, void *ctx, size_t max_entries)
{
    if (n->ref) return n->ref;
    n->ref = expand(n, fn ? fn : default_extent, ctx, max_entries);
    return n->ref;
}

void tm_clear(rt_node *n)
{
    if (!n) return;
    map_free(n->ref);
    n->ref = NULL;
    for (int i = 0; i < n->nchild; i++) tm_clear(n->child[i]);
}

void tm_clear_node(rt_node *n)
{
    map_free(n->ref);
    n->ref = NULL;
}

void tm_span(const tm_map *m, size_t count, int64_t extent, int64_t *lo, int64_t *hi)
{
    if (!m->n || !count) {
        *lo = *hi = 0;
        return;
    }
    int64_t last = (int64_t)(count - 1) * extent;
    *lo = m->true_lb + (last < 0 ? last : 0);
    *hi = m->true_ub + (last > 0 ? last : 0);
}

static int cmp_entry(const void *a, const void *b)
{
    const tm_entry *x = a, *y = b;
    return x->disp < y->disp ? -1 : x->disp > y->disp;
}

int tm_overlaps(const tm_map *m, size_t count, int64_t extent)
{
    size_t n = m->n * count;
    if (n < 2) return 0;
    tm_entry *all = malloc(n * sizeof *all);
    if (!all) abort();
    for (size_t k = 0; k < count; k++)
        for (size_t i = 0; i < m->n; i++) {
            all[k * m->n + i] = m->e[i];
            all[k * m->n + i].disp += (int64_t)k * extent;
        }
    qsort(all, n, sizeof *all, cmp_entry);
    int overlap = 0;
    for (size_t i = 1; i < n && !overlap; i++)
        overlap = all[i - 1].disp + (int64_t)tm_basic_size(all[i - 1].basic) > all[i].disp;
    free(all);
    return overlap;
}

void tm_pack(const tm_map *m, size_t count, int64_t extent, const unsigned char *base,
             unsigned char *out)
{
    for (size_t k = 0; k < count; k++)
        for (size_t i = 0; i < m->n; i++) {
            size_t sz = tm_basic_size(m->e[i].basic);
            memcpy(out, base + m->e[i].disp + (int64_t)k * extent, sz);
            out += sz;
        }
}

void tm_unpack(const tm_map *m, size_t count, int64_t extent, const unsigned char *in,
               unsigned char *base)
{
    for (size_t k = 0; k < count; k++)
        for (size_t i = 0; i < m->n; i++) {
            size_t sz = tm_basic_size(m->e[i].basic);
            memcpy(base + m->e[i].disp + (int64_t)k * extent, in, sz);
            in += sz;
        }
}
