/* Column-major views of row-major matrices (transposes), packed and unpacked in the cache
 * (issue 2).
 *
 * The host engine packs a type whose instances lie a few bytes apart and whose elements lie rows
 * apart (contiguous(cols, resized(hvector(rows, sz, row bytes), ext))) in tiles of T columns,
 * column by column (transpose_tiles in src/datatype/pack_host.c); whole tiles of abutting 4- and
 * 8-byte elements (ext == sz) take loops written for each tile height (4, 8, 16, 32), the others
 * and a last partial tile a loop of run-time length, and unpacks that stream keep that loop too.
 * The benchmark's transpose has only doubles at ext 8 and column counts that fill their tiles, so
 * this test packs elements of 1-16 bytes at ext = sz and 2 sz, column counts below, at and past
 * every tile height, rows a few bytes past a multiple of 64 and a multiple of 4 KiB apart.
 * block_check.c compares every packed byte with a reference written element by element from the
 * geometry, checks that the unpack restores them and leaves every other byte as it was, and does
 * each operation also in three ranges cut at odd bytes. ctest runs it again with the streaming
 * threshold lowered (GCOMM_PACK_STREAM_MIN), so that the unpacks stream and, on Zen 4, packs of
 * doubles take 8 x 8 blocks transposed in registers and streamed (tile8_pack_nt). On Zen 4 every
 * other transpose of doubles takes such blocks with ordinary stores (tile8_pack, tile8_unpack). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_check.h"
#include "gcomm/datatype.h"
#include "testutil.h"

static uint64_t rng_state;

/* The committed type of cols columns of rows elements of sz bytes: column c starts at c * ext,
 * row r at r * row. The columns' types are freed here: the type keeps them alive. */
static gcomm_datatype transpose_type(int rows, int cols, int sz, int ext, long row)
{
    gcomm_datatype col = GCOMM_DATATYPE_NULL, colx = GCOMM_DATATYPE_NULL, t = GCOMM_DATATYPE_NULL;
    TEST_OK(gcomm_type_hvector(rows, sz, (ptrdiff_t)row, GCOMM_BYTE, &col));
    TEST_OK(gcomm_type_resized(col, 0, ext, &colx));
    TEST_OK(gcomm_type_contiguous(cols, colx, &t));
    TEST_OK(gcomm_type_commit(&t));
    gcomm_type_free(&colx);
    gcomm_type_free(&col);
    return t;
}

/* cols columns of rows elements of sz bytes; column c starts at c * ext, row r at r * row. */
static void check_transpose(int rows, int cols, int sz, int ext, long row)
{
    blocks_t l = {0};
    for (int c = 0; c < cols; c++)
        for (int r = 0; r < rows; r++)
            if (blocks_add(&l, (size_t)r * (size_t)row + (size_t)c * (size_t)ext, (size_t)sz)) {
                TEST_CHECK(0, "out of memory");
                free(l.b);
                return;
            }
    gcomm_datatype t = transpose_type(rows, cols, sz, ext, row);
    char name[96];
    snprintf(name, sizeof name, "%d x %d of %d bytes, ext %d, rows %ld apart", rows, cols, sz, ext,
             row);
    blocks_check(name, t, 1, &l, 0, 0, 0, 1, &rng_state);
    blocks_check(name, t, 1, &l, 0, 8, 16, 1, &rng_state);
    gcomm_type_free(&t);
    free(l.b);
}

/* Ranges of a transpose of doubles cut on elements inside two columns with 1 to 6 whole columns
 * between (on Zen 4: the cut columns element by element, the whole ones by tile8_rest, 8 rows at a
 * time): each range packed alone equals the same bytes of the whole stream, and unpacked alone
 * into a poisoned buffer writes exactly its elements. The cut rows fall inside and on the edges
 * of the 8-row blocks. */
static void check_spans(int rows, int cols, long row)
{
    gcomm_datatype t = transpose_type(rows, cols, 8, 8, row);
    const size_t span = (size_t)(rows - 1) * (size_t)row + (size_t)cols * 8;
    const size_t packed = (size_t)rows * (size_t)cols * 8;
    unsigned char *src = malloc(span), *whole = malloc(packed), *part = malloc(packed),
                  *dst = malloc(span), *poison = malloc(span);
    if (!src || !whole || !part || !dst || !poison) {
        TEST_CHECK(0, "out of memory");
    } else {
        gcommt_fill_random(src, span, &rng_state);
        gcommt_fill_random(poison, span, &rng_state);
        size_t pos = 0;
        TEST_OK(gcomm_pack(src, 1, t, whole, packed, &pos));
        const int cuts[] = {1, 5, 8, 9, 15, 16, rows - 1};
        const int ncut = (int)(sizeof cuts / sizeof *cuts);
        int bad = 0;
        for (int k = 1; k <= 6 && k + 2 <= cols; k++)
            for (int ia = 0; ia < ncut; ia++)
                for (int ib = 0; ib < ncut; ib++) {
                    const int c0 = (k + ia) % (cols - k - 1), a = cuts[ia], b = cuts[ib];
                    const size_t off = ((size_t)c0 * (size_t)rows + (size_t)a) * 8;
                    const size_t end = ((size_t)(c0 + k + 1) * (size_t)rows + (size_t)b) * 8;
                    memset(part, 0, end - off);
                    TEST_OK(gcomm_pack_range(src, 1, t, off, end - off, part));
                    bad += memcmp(part, whole + off, end - off) != 0;
                    memcpy(dst, poison, span);
                    TEST_OK(gcomm_unpack_range(whole + off, off, end - off, dst, 1, t));
                    for (size_t e = 0; e < (size_t)rows * (size_t)cols; e++) {
                        const size_t at = e % (size_t)rows * (size_t)row + e / (size_t)rows * 8;
                        const int in = e * 8 >= off && e * 8 < end;
                        bad += memcmp(dst + at, in ? src + at : poison + at, 8) != 0;
                    }
                    /* the bytes between the columns and after them (a row's gap) */
                    for (int r = 0; r < rows - 1; r++)
                        bad += memcmp(dst + (size_t)r * (size_t)row + (size_t)cols * 8,
                                      poison + (size_t)r * (size_t)row + (size_t)cols * 8,
                                      (size_t)row - (size_t)cols * 8) != 0;
                }
        TEST_CHECK(bad == 0, "%d x %d doubles, rows %ld apart: %d range checks failed", rows,
                   cols, row, bad);
    }
    free(src);
    free(whole);
    free(part);
    free(dst);
    free(poison);
    gcomm_type_free(&t);
}

int main(void)
{
    rng_state = gcommt_seed(0x6a09e667f3bcc909ull);
    static const int sizes[] = {1, 2, 4, 8, 12, 16};
    /* below, at and past the tile heights 4, 8, 16 and 32, and several tiles with a part left */
    static const int col_counts[] = {2, 3, 4, 5, 8, 9, 16, 17, 31, 32, 33, 100};
    /* 20: packed streams 32-byte multiples apart with 4 rows past a multiple of 8, the rows the
     * streaming pack of doubles (8 x 8 blocks in registers, tile8_pack_nt) leaves to its tail */
    static const int row_counts[] = {16, 20, 67};
    int geometries = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (int wide = 0; wide < 2; wide++) {
            const int sz = sizes[i], ext = wide ? 2 * sz : sz;
            for (size_t j = 0; j < sizeof col_counts / sizeof *col_counts; j++)
                for (size_t k = 0; k < sizeof row_counts / sizeof *row_counts; k++) {
                    const int cols = col_counts[j];
                    /* rows 8 bytes past a multiple of 64 (and more than 256 bytes: a
                     * transpose), and a multiple of 4 KiB */
                    const long span = (long)cols * ext;
                    const long row = span < 256 ? 264 : (span + 63) / 64 * 64 + 8;
                    check_transpose(row_counts[k], cols, sz, ext, row);
                    check_transpose(row_counts[k], cols, sz, ext, 4096);
                    geometries += 2;
                }
        }
    /* ranges cut inside two columns with 1 to 6 whole ones between */
    check_spans(37, 12, 12 * 8 + 264);
    check_spans(67, 9, 4096);
    check_spans(16, 40, 40 * 8 + 8);
    geometries += 3;
    /* a larger one: about 1 MiB of doubles, 1000 columns (a partial last tile) */
    check_transpose(131, 1000, 8, 8, 8000 + 8);
    geometries++;
    printf("%d geometries checked\n", geometries);
    return gcommt_finish("test_dt_transpose");
}
