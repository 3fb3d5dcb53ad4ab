/* The check of pack and unpack against a block list (block_check.h). */
#include "block_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

int blocks_add(blocks_t *l, size_t off, size_t len)
{
    if (l->n && l->b[l->n - 1].off + l->b[l->n - 1].len == off) { /* merge contiguous runs */
        l->b[l->n - 1].len += len;
    } else {
        if (l->n == l->cap) {
            size_t cap = l->cap ? 2 * l->cap : 1024;
            block_t *nb = realloc(l->b, cap * sizeof *nb);
            if (!nb) return -1;
            l->b = nb;
            l->cap = cap;
        }
        l->b[l->n].off = off;
        l->b[l->n].len = len;
        l->n++;
    }
    l->packed += len;
    if (off + len > l->span) l->span = off + len;
    return 0;
}

static size_t first_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return i;
    return n;
}

void blocks_check(const char *name, gcomm_datatype t, size_t count, const blocks_t *l,
                  size_t origin, size_t shift, size_t packed_shift, int odd_cuts, uint64_t *rng)
{
    const int failures = gcommt_failures;
    size_t size = 0;
    TEST_OK(gcomm_pack_size(count, t, &size));
    TEST_CHECK(size == l->packed, "%s: gcomm_pack_size %zu, reference %zu", name, size, l->packed);
    /* the typed buffers `shift` and the packed one `packed_shift` bytes past a page (malloc's
     * large buffers are 16 past one; the engine takes other copies for blocks that begin whole
     * cache lines, and a pack whose packed lines line up with the typed ones as well another) */
    void *typed_base = NULL, *back_base = NULL, *packed_base = NULL;
    if (posix_memalign(&typed_base, 4096, l->span + shift) != 0) typed_base = NULL;
    if (posix_memalign(&back_base, 4096, l->span + shift) != 0) back_base = NULL;
    if (posix_memalign(&packed_base, 4096, l->packed + packed_shift) != 0) packed_base = NULL;
    unsigned char *typed = typed_base ? (unsigned char *)typed_base + shift : NULL,
                  *back = back_base ? (unsigned char *)back_base + shift : NULL,
                  *packed = packed_base ? (unsigned char *)packed_base + packed_shift : NULL,
                  *ref = malloc(l->packed),
                  *back_ref = malloc(l->span);
    TEST_CHECK(typed && packed && ref && back && back_ref, "%s: out of memory", name);
    if (gcommt_failures != failures) goto out;

    gcommt_fill_random(typed, l->span, rng);
    memset(packed, 0x5a, l->packed); /* poison: a byte left unwritten shows */
    size_t pos = 0;
    int rc = gcomm_pack(typed + origin, count, t, packed, l->packed, &pos);
    size_t at = 0;
    for (size_t i = 0; i < l->n; i++) {
        memcpy(ref + at, typed + l->b[i].off, l->b[i].len);
        at += l->b[i].len;
    }
    size_t d = first_diff(packed, ref, l->packed);
    TEST_CHECK(rc == GCOMM_SUCCESS && pos == l->packed && d == l->packed,
               "%s pack %zu bytes: rc %d, position %zu, first wrong byte %zu", name, l->packed, rc,
               pos, d);

    /* The same stream in three ranges cut inside blocks (gcomm_pack_range), each written at its
     * offset of the poisoned buffer: the loops then start and stop at block counts that no group
     * of blocks divides. */
    size_t cut[4] = {0, (l->packed / 3) & ~(size_t)7, (2 * l->packed / 3 + 24) & ~(size_t)7,
                     l->packed};
    if (odd_cuts) {
        cut[1] = l->packed / 3 + 7;
        cut[2] = 2 * l->packed / 3 + 13;
    }
    for (int r = 1; r < 3; r++)
        if (cut[r] > l->packed) cut[r] = l->packed;
    memset(packed, 0x5a, l->packed);
    /* last range first: a range that wrote past its end would clobber the one after it, which
     * the comparison then sees (the loops may store past an element inside their own range) */
    for (int r = 2; r >= 0; r--)
        TEST_OK(gcomm_pack_range(typed + origin, count, t, cut[r], cut[r + 1] - cut[r],
                                 packed + cut[r]));
    d = first_diff(packed, ref, l->packed);
    TEST_CHECK(d == l->packed, "%s pack in 3 ranges (cuts %zu, %zu): first wrong byte %zu", name,
               cut[1], cut[2], d);

    /* Unpack packed data that differs from the typed source, into a poisoned buffer. */
    gcommt_fill_random(ref, l->packed, rng);
    memset(back, 0xa5, l->span);
    memset(back_ref, 0xa5, l->span);
    at = 0;
    for (size_t i = 0; i < l->n; i++) {
        memcpy(back_ref + l->b[i].off, ref + at, l->b[i].len);
        at += l->b[i].len;
    }
    pos = 0;
    rc = gcomm_unpack(ref, l->packed, &pos, back + origin, count, t);
    d = first_diff(back, back_ref, l->span);
    TEST_CHECK(rc == GCOMM_SUCCESS && pos == l->packed && d == l->span,
               "%s unpack %zu bytes: rc %d, position %zu, first wrong byte %zu", name, l->packed,
               rc, pos, d);
    memset(back, 0xa5, l->span);
    for (int r = 0; r < 3; r++)
        TEST_OK(gcomm_unpack_range(ref + cut[r], cut[r], cut[r + 1] - cut[r], back + origin,
                                   count, t));
    d = first_diff(back, back_ref, l->span);
    TEST_CHECK(d == l->span, "%s unpack in 3 ranges: first wrong byte %zu", name, d);
    if (gcommt_failures == failures)
        printf("ok %-12s %10zu packed bytes, %9zu blocks, typed buffers page + %zu, packed page "
               "+ %zu\n",
               name, l->packed, l->n, shift, packed_shift);
out:
    free(typed_base);
    free(packed_base);
    free(ref);
    free(back_base);
    free(back_ref);
}

