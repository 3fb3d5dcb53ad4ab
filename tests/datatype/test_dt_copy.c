/* gcomm_copy between host layouts of doubles past its 256 KiB bounce buffer (issue 2).
 *
 * On the host gcomm_copy takes one of two ways (src/datatype/pack.c): when one side is its own
 * packed stream (a contiguous array), one unpack from it or one pack into it; otherwise chunks
 * through a bounce buffer, each a whole number of the larger granule that fits it (a column of a
 * transpose: gcommi_host_granule), the last one shorter. test_dt_vs_mpi's random types stay far
 * below a chunk, so this test copies matrices of N x N doubles (N odd, so that no chunk, column or
 * row is a power of two) between
 *   C: the contiguous array,
 *   P: the rows of a matrix whose rows are PAD doubles longer (vector(N, N, N + PAD)),
 *   T: the columns of that padded matrix (contiguous(N, resized(vector(N, 1, N + PAD), 8)))
 * and a vector whose blocks (40000 doubles, 312.5 KiB) are larger than a chunk, so that the
 * granule of the other side is taken. Each element of the destination is compared with the
 * source element of the same index in the signature, computed here from the geometry, and every
 * other byte of the destination buffer (the padding, and a margin after it) must keep its random
 * poison. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcomm/datatype.h"
#include "testutil.h"

#define PAD 3
#define MARGIN 256

typedef enum { LAYOUT_C, LAYOUT_P, LAYOUT_T, LAYOUT_V } layout_kind;

typedef struct {
    layout_kind kind;
    const char *name;
    long n;            /* C, P, T: the matrix side; V: blocks */
    long bl, stride;   /* V: doubles per block, doubles between block starts */
    gcomm_datatype t;  /* one instance covers the whole layout (C: n * n doubles, count n * n) */
    size_t count;      /* instances in the copy */
    size_t span;       /* bytes from the buffer's start to past the last element */
} layout_t;

static uint64_t rng;

/* Byte offset of element k of the layout's signature. */
static size_t elem_offset(const layout_t *l, size_t k)
{
    const size_t n = (size_t)l->n, pitch = n + PAD;
    switch (l->kind) {
    case LAYOUT_C: return k * 8;
    case LAYOUT_P: return (k / n * pitch + k % n) * 8;
    case LAYOUT_T: return (k % n * pitch + k / n) * 8; /* column k / n, row k % n */
    default: return ((k / (size_t)l->bl) * (size_t)l->stride + k % (size_t)l->bl) * 8;
    }
}

static int make_layout(layout_t *l)
{
    gcomm_datatype col = GCOMM_DATATYPE_NULL, colx = GCOMM_DATATYPE_NULL;
    const long n = l->n;
    l->t = GCOMM_DATATYPE_NULL;
    l->count = 1;
    switch (l->kind) {
    case LAYOUT_C:
        l->t = GCOMM_DOUBLE;
        l->count = (size_t)(n * n);
        l->span = (size_t)(n * n) * 8;
        return 0;
    case LAYOUT_P:
        TEST_OK(gcomm_type_vector((int)n, (int)n, (int)(n + PAD), GCOMM_DOUBLE, &l->t));
        l->span = (size_t)((n - 1) * (n + PAD) + n) * 8;
        break;
    case LAYOUT_T:
        TEST_OK(gcomm_type_vector((int)n, 1, (int)(n + PAD), GCOMM_DOUBLE, &col));
        TEST_OK(gcomm_type_resized(col, 0, 8, &colx));
        TEST_OK(gcomm_type_contiguous((int)n, colx, &l->t));
        gcomm_type_free(&colx);
        gcomm_type_free(&col);
        l->span = (size_t)((n - 1) * (n + PAD) + n) * 8;
        break;
    default:
        TEST_OK(gcomm_type_vector((int)n, (int)l->bl, (int)l->stride, GCOMM_DOUBLE, &l->t));
        l->span = (size_t)((n - 1) * l->stride + l->bl) * 8;
        break;
    }
    TEST_OK(gcomm_type_commit(&l->t));
    return l->t == GCOMM_DATATYPE_NULL ? -1 : 0;
}

/* Copies src into dst with gcomm_copy and checks every element and every other byte. */
static void check_copy(const layout_t *s, const layout_t *d, size_t elems)
{
    unsigned char *src = malloc(s->span + MARGIN), *dst = malloc(d->span + MARGIN),
                  *want = malloc(d->span + MARGIN);
    if (!src || !dst || !want) {
        TEST_CHECK(0, "out of memory");
        free(src);
        free(dst);
        free(want);
        return;
    }
    gcommt_fill_random(src, s->span + MARGIN, &rng);
    gcommt_fill_random(dst, d->span + MARGIN, &rng);
    memcpy(want, dst, d->span + MARGIN);
    for (size_t k = 0; k < elems; k++)
        memcpy(want + elem_offset(d, k), src + elem_offset(s, k), 8);
    TEST_OK(gcomm_copy(src, s->count, s->t, dst, d->count, d->t, NULL));
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < d->span + MARGIN; i++)
        if (dst[i] != want[i] && bad++ == 0) first = i;
    TEST_CHECK(bad == 0, "%s -> %s (%zu doubles): %zu bytes differ, the first at byte %zu", s->name,
               d->name, elems, bad, first);
    free(src);
    free(dst);
    free(want);
}

int main(void)
{
    rng = gcommt_seed(0x3c6ef372fe94f82bull);
    static const long sides[] = {301, 1023}; /* 0.7 and 8 MiB: 3 and 32 chunks */
    for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) {
        const long n = sides[i];
        layout_t c = {LAYOUT_C, "contiguous", n, 0, 0, 0, 0, 0};
        layout_t p = {LAYOUT_P, "rows", n, 0, 0, 0, 0, 0};
        layout_t t = {LAYOUT_T, "columns", n, 0, 0, 0, 0, 0};
        if (make_layout(&c) || make_layout(&p) || make_layout(&t)) break;
        const size_t elems = (size_t)(n * n);
        check_copy(&c, &t, elems); /* one unpack from the contiguous source */
        check_copy(&t, &c, elems); /* one pack into the contiguous destination */
        check_copy(&p, &t, elems); /* chunks of whole columns */
        check_copy(&t, &p, elems);
        check_copy(&t, &t, elems);
        gcomm_type_free(&p.t);
        gcomm_type_free(&t.t);
    }
    /* blocks larger than a chunk: chunks of the other side's granule (a column), or unrounded */
    layout_t v = {LAYOUT_V, "blocks of 40000", 0, 40000, 40003, 0, 0, 0};
    layout_t t = {LAYOUT_T, "columns", 0, 0, 0, 0, 0, 0};
    layout_t p = {LAYOUT_P, "rows", 0, 0, 0, 0, 0, 0};
    t.n = p.n = 400;
    v.n = 4; /* 160000 doubles = 400 x 400 */
    if (!make_layout(&v) && !make_layout(&t) && !make_layout(&p)) {
        check_copy(&v, &t, 160000);
        check_copy(&t, &v, 160000);
        check_copy(&v, &p, 160000);
    }
    gcomm_type_free(&v.t);
    gcomm_type_free(&t.t);
    gcomm_type_free(&p.t);
    return gcommt_finish("test_dt_copy");
}
