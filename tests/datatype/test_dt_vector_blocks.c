/* Vectors of 1-4 KiB blocks at strides around a page, packed and unpacked in the cache (issue 2).
 *
 * In operations that fit the caches the host engine copies such blocks with its own loops and
 * prefetches the blocks ahead; on Zen 4, blocks of 1.5-3 KiB a page or more apart that span at
 * most 8 MiB take a loop that also prefetches the block ahead from its end down
 * (strided_vec_walk in src/datatype/pack_host.c), and a block that crosses a page boundary is
 * prefetched in two parts. The random-type tests rarely build blocks this long, and the
 * benchmark's vector_bl256 has blocks of whole 128-byte chunks, so this test packs hvectors of
 * bytes whose blocks end at every kind of remainder (whole 128-byte chunks, 32-byte moves, an
 * overlapping last move), at strides of exactly a page, a page plus 8 bytes (blocks drift across
 * page boundaries), two pages, less than a page, and negative. block_check.c compares every packed
 * byte with a reference written block by block from the geometry, checks that the unpack restores
 * the blocks and leaves every gap byte as it was, and does each operation also in three ranges cut
 * inside blocks. Rows of 96-160 bytes at short strides, and of 192-1000 bytes in operations just
 * above and below 2 MiB, cover the rows loop (rows_vec) and its prefetch of the row ahead; rows of
 * multiples of 64 bytes in operations of up to 64 KiB, the 64-byte moves of packs (rows_zmm).
 * Elements of 1-63 bytes at most 64 apart cover the byte compress and expand loops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "block_check.h"
#include "gcomm/datatype.h"
#include "testutil.h"

static uint64_t rng_state;

/* One geometry: count blocks of bl bytes, stride bytes apart (negative: the blocks descend from
 * the type's origin, which then lies at the last block of the typed span). The typed buffers lie
 * on a page, so that the strides put the blocks where the name says; the packed one on a page and
 * 16 bytes past one (as malloc returns large buffers). The cuts of the ranges fall on odd bytes. */
static void check_vector(int count, int bl, long stride)
{
    const size_t astride = (size_t)(stride < 0 ? -stride : stride);
    const size_t origin = stride < 0 ? (size_t)(count - 1) * astride : 0;
    blocks_t l = {0};
    for (int b = 0; b < count; b++)
        if (blocks_add(&l, origin + (size_t)((long)b * stride), (size_t)bl)) {
            TEST_CHECK(0, "out of memory");
            free(l.b);
            return;
        }
    gcomm_datatype t = GCOMM_DATATYPE_NULL;
    TEST_OK(gcomm_type_hvector(count, bl, (ptrdiff_t)stride, GCOMM_BYTE, &t));
    TEST_OK(gcomm_type_commit(&t));
    char name[64];
    snprintf(name, sizeof name, "bl %d x %d, stride %ld", bl, count, stride);
    blocks_check(name, t, 1, &l, origin, 0, 0, 1, &rng_state);
    blocks_check(name, t, 1, &l, origin, 0, 16, 1, &rng_state);
    gcomm_type_free(&t);
    free(l.b);
}

/* Rows of growing length, as lower_tri's (an hindexed of bytes: row b holds first + b * step bytes
 * at b * stride, every third row jog bytes further): the indexed node's loop, where Intel CPUs
 * copy rows from 256 bytes with aligned stores in operations of 64 KiB to 1 MiB (indexed_adst),
 * Zen 4 prefetches the row ahead (whole, in unpacks, where it starts a page after the row before
 * it: indexed_vec_unpack_walk), and the packed rows start at every offset within a line. */
static void check_rows(int count, int first, int step, long stride, long jog)
{
    int *lens = malloc((size_t)count * sizeof *lens);
    ptrdiff_t *displs = malloc((size_t)count * sizeof *displs);
    blocks_t l = {0};
    int ok = lens && displs;
    for (int b = 0; ok && b < count; b++) {
        lens[b] = first + b * step;
        displs[b] = (ptrdiff_t)b * stride + (b % 3 == 2 ? jog : 0);
        ok = !blocks_add(&l, (size_t)displs[b], (size_t)lens[b]);
    }
    if (!ok) {
        TEST_CHECK(0, "out of memory");
    } else {
        gcomm_datatype t = GCOMM_DATATYPE_NULL;
        TEST_OK(gcomm_type_hindexed(count, lens, displs, GCOMM_BYTE, &t));
        TEST_OK(gcomm_type_commit(&t));
        char name[64];
        snprintf(name, sizeof name, "rows %d + %d b x %d, stride %ld, jog %ld", first, step, count,
                 stride, jog);
        blocks_check(name, t, 1, &l, 0, 0, 0, 1, &rng_state);
        blocks_check(name, t, 1, &l, 0, 0, 16, 1, &rng_state);
        gcomm_type_free(&t);
    }
    free(l.b);
    free(displs);
    free(lens);
}

/* planes instances, pstride bytes apart, of count blocks of bl bytes a page apart (an hvector of
 * hvectors): the inner vector is met once per plane, at the same place of its pages when pstride
 * is a multiple of a page, so that Intel's split streaming judges it once and reuses its mask. */
static void check_planes(int planes, int count, int bl, long pstride)
{
    blocks_t l = {0};
    int ok = 1;
    for (int q = 0; ok && q < planes; q++)
        for (int b = 0; ok && b < count; b++)
            ok = !blocks_add(&l, (size_t)q * (size_t)pstride + (size_t)b * 4096, (size_t)bl);
    if (!ok) {
        TEST_CHECK(0, "out of memory");
        free(l.b);
        return;
    }
    gcomm_datatype in = GCOMM_DATATYPE_NULL, t = GCOMM_DATATYPE_NULL;
    TEST_OK(gcomm_type_hvector(count, bl, 4096, GCOMM_BYTE, &in));
    TEST_OK(gcomm_type_hvector(planes, 1, (ptrdiff_t)pstride, in, &t));
    TEST_OK(gcomm_type_commit(&t));
    char name[64];
    snprintf(name, sizeof name, "%d planes of bl %d x %d, %ld apart", planes, bl, count, pstride);
    blocks_check(name, t, 1, &l, 0, 0, 0, 1, &rng_state);
    gcomm_type_free(&t);
    gcomm_type_free(&in);
    free(l.b);
}

/* Memory of `bytes` bytes that ends where an inaccessible page begins: a load or store past its
 * end faults. *map and *maplen: the mapping, for munmap. */
static char *before_guard(size_t bytes, void **map, size_t *maplen)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t body = (bytes + page - 1) / page * page;
    *maplen = body + page;
    char *m = mmap(NULL, *maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    if (mprotect(m + body, page, PROT_NONE) != 0) {
        munmap(m, *maplen);
        return NULL;
    }
    *map = m;
    return m + body - bytes;
}

/* count elements of n bytes, stride apart, whose last byte is the last one before an inaccessible
 * page, packed into a packed buffer that ends at one too and unpacked from it: the byte compress
 * and expand loops must not load or store past the last element nor past the packed bytes (a
 * fault ends the test). The packed bytes and the unpacked elements are checked, the gaps too. */
static void check_guarded(int count, int n, long stride)
{
    const size_t span = (size_t)(count - 1) * (size_t)stride + (size_t)n;
    const size_t packed = (size_t)count * (size_t)n;
    void *mt = NULL, *mp = NULL, *mu = NULL;
    size_t lt = 0, lp = 0, lu = 0;
    char *typed = before_guard(span, &mt, &lt), *pk = before_guard(packed, &mp, &lp);
    char *out = before_guard(span, &mu, &lu);
    gcomm_datatype t = GCOMM_DATATYPE_NULL;
    if (!typed || !pk || !out) {
        TEST_CHECK(0, "mmap of guarded buffers failed");
        goto done;
    }
    for (size_t i = 0; i < span; i++) typed[i] = (char)(1 + gcommt_rand(&rng_state) % 255);
    memset(out, 0x5a, span);
    TEST_OK(gcomm_type_hvector(count, n, (ptrdiff_t)stride, GCOMM_BYTE, &t));
    TEST_OK(gcomm_type_commit(&t));
    size_t pos = 0;
    TEST_OK(gcomm_pack(typed, 1, t, pk, packed, &pos));
    TEST_CHECK(pos == packed, "guarded %d x %d, stride %ld: position %zu", count, n, stride, pos);
    int bad = 0;
    for (int e = 0; e < count; e++)
        bad += memcmp(pk + (size_t)e * n, typed + (size_t)e * stride, (size_t)n) != 0;
    pos = 0;
    TEST_OK(gcomm_unpack(pk, packed, &pos, out, 1, t));
    for (size_t i = 0; i < span; i++) {
        const int in_elem = (long)(i % (size_t)stride) < n;
        bad += in_elem ? out[i] != typed[i] : out[i] != 0x5a;
    }
    TEST_CHECK(bad == 0, "guarded %d x %d, stride %ld: %d wrong elements or bytes", count, n,
               stride, bad);
done:
    gcomm_type_free(&t);
    if (mt) munmap(mt, lt);
    if (mp) munmap(mp, lp);
    if (mu) munmap(mu, lu);
}

int main(void)
{
    rng_state = gcommt_seed(0x2545F4914F6CDD1Dull);
    /* block lengths: whole 128-byte chunks, + a 32-byte move, + an overlapping last move, below
     * and above the 1.5-3 KiB of strided_vec_walk and at a page */
    static const int bls[] = {1024, 1544, 1536, 2000, 2048, 2056, 2600, 3072, 3080, 3840, 4096};
    static const long strides[] = {4096, 4104, 8192, 3072 + 512, -4096, -6152};
    /* about 1 MiB packed (in the caches, the blocks over at most 8 MiB), and a few blocks (the
     * prefetch's end) */
    int geometries = 0;
    for (size_t i = 0; i < sizeof bls / sizeof *bls; i++)
        for (size_t j = 0; j < sizeof strides / sizeof *strides; j++) {
            const long as = strides[j] < 0 ? -strides[j] : strides[j];
            if (as < bls[i]) continue; /* blocks must not overlap */
            check_vector((1 << 20) / bls[i], bls[i], strides[j]);
            check_vector(3, bls[i], strides[j]);
            geometries += 2;
        }
    /* rows of 96-128 bytes (rows_vec, which prefetches the row 8 ahead on Zen 4 in the cache)
     * and just past them, at strides of two rows, one row plus 8 bytes and negative; counts up to
     * and past the prefetch distance */
    static const int rows[] = {96, 128, 100, 160};
    static const long row_strides[] = {256, 136, 168, -256};
    static const int row_counts[] = {8, 9, 17, 8192};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        for (size_t j = 0; j < sizeof row_strides / sizeof *row_strides; j++)
            for (size_t k = 0; k < sizeof row_counts / sizeof *row_counts; k++) {
                const long as = row_strides[j] < 0 ? -row_strides[j] : row_strides[j];
                if (as < rows[i]) continue;
                check_vector(row_counts[k], rows[i], row_strides[j]);
                geometries++;
            }
    /* rows of 136-1000 bytes in operations of more than 2 MiB (rows_vec with the row prefetch on
     * Zen 4 from GCOMMI_ROWS_WIDE_MIN, for sizes that are not multiples of 32 too, with an
     * overlapping last move; one memcpy each below it) and one just below, at strides of two
     * rows, one row plus 32 bytes and negative */
    static const int wide_rows[] = {192, 256, 512, 992, 1000, 136, 200, 360, 520, 993};
    for (size_t i = 0; i < sizeof wide_rows / sizeof *wide_rows; i++) {
        const long r = wide_rows[i];
        const long wide_strides[] = {2 * r, r + 32, -2 * r};
        for (size_t j = 0; j < sizeof wide_strides / sizeof *wide_strides; j++) {
            check_vector((int)(((2 << 20) + 3 * r) / r), (int)r, wide_strides[j]);
            check_vector((int)(((2 << 20) - r) / r), (int)r, wide_strides[j]);
            geometries += 2;
        }
    }
    /* rows of multiples of 64 bytes (and one not) in operations in the cache: packs on Intel with
     * AVX-512 move them 64 bytes at a time below the streaming size (rows_zmm), a 128-byte chunk
     * then a last 64 bytes; few rows and about 64 KiB, at the strides above */
    static const int zmm_rows[] = {192, 256, 320, 448, 960, 992, 224};
    for (size_t i = 0; i < sizeof zmm_rows / sizeof *zmm_rows; i++) {
        const long r = zmm_rows[i];
        const long zmm_strides[] = {2 * r, r + 32, r + 8, -2 * r};
        for (size_t j = 0; j < sizeof zmm_strides / sizeof *zmm_strides; j++) {
            check_vector(3, (int)r, zmm_strides[j]);
            check_vector((int)((64 << 10) / r), (int)r, zmm_strides[j]);
            geometries += 2;
        }
    }
    /* elements of 3 to 64 bytes, as in arrays of structs (on Zen 4 packed with one move of the
     * next power of two that runs on into the next elements' packed bytes, and unpacked with two
     * exact moves chosen once per call), at strides of one byte more, seven more, twice plus
     * three, and negative; few elements (the last ones take the exact copy) and many (some
     * elements end near a page boundary, where the wide load would cross it) */
    static const int small[] = {3, 5, 7, 9, 12, 15, 17, 20, 24, 31, 33, 40, 48, 63, 64};
    static const int small_counts[] = {1, 2, 3, 5, 9, 4099};
    for (size_t i = 0; i < sizeof small / sizeof *small; i++) {
        const long n = small[i];
        const long small_strides[] = {n + 1, n + 7, 2 * n + 3, -(n + 5)};
        for (size_t j = 0; j < sizeof small_strides / sizeof *small_strides; j++)
            for (size_t k = 0; k < sizeof small_counts / sizeof *small_counts; k++) {
                check_vector(small_counts[k], (int)n, small_strides[j]);
                geometries++;
            }
    }
    /* elements of 1 to 63 bytes at most 64 apart, as AVX-512 VBMI2 CPUs pack them by byte
     * compress and unpack them by byte expand with masked stores (pack_compress, unpack_expand:
     * whole periods of stride / gcd(stride, 64) chunks of 64 bytes; the elements after the last
     * whole period, or whose chunk loads would pass the last element's end, by the other loops),
     * at strides of one byte more, twice the size, 8, 16, 24, 40 and 64 bytes: every period
     * length from 1 to 16 chunks, and periods too long for the plan (17 bytes apart) */
    static const int compress_counts[] = {1, 7, 33, 1000};
    for (long n = 1; n < 64; n++) {
        const long compress_strides[] = {n + 1, 2 * n, 8, 16, 24, 40, 64};
        for (size_t j = 0; j < sizeof compress_strides / sizeof *compress_strides; j++) {
            const long st = compress_strides[j];
            if (st <= n || st > 64 || (j > 1 && (st == n + 1 || st == 2 * n))) continue;
            for (size_t k = 0; k < sizeof compress_counts / sizeof *compress_counts; k++) {
                check_vector(compress_counts[k], (int)n, st);
                geometries++;
            }
        }
    }
    for (long n = 1; n < 64; n += 2) /* against inaccessible pages, odd sizes and a few even */
        for (long st = n + 1; st <= 64; st += 3) {
            check_guarded(1000, (int)n, st);
            check_guarded(1000, (int)n + 1 < 64 ? (int)n + 1 : (int)n, st > n + 1 ? st : st + 1);
            geometries += 2;
        }
    /* 4- and 8-byte elements every other one (pack_pairs, unpack_pairs on AVX-512 CPUs): packed
     * sizes that are multiples of 64 bytes and not */
    static const int pair_counts[] = {1000, 1024, 1031, 16, 17};
    for (size_t k = 0; k < sizeof pair_counts / sizeof *pair_counts; k++) {
        check_guarded(pair_counts[k], 4, 8);
        check_guarded(pair_counts[k], 8, 16);
        geometries += 2;
    }
    /* rows of growing length (an indexed node's blocks), a page apart: lower_tri's (8-byte steps,
     * every packed row 8-byte aligned) in operations of 66 KiB, just under 1 MiB and just over
     * it, and odd steps (packed rows starting anywhere in a line) in operations of 10 KiB, 26 KiB
     * and 571 KiB; rows of 5 bytes to 4 KiB; and every third row 64 bytes further, so that rows
     * a page apart and rows not alternate */
    static const int row_geoms[][3] = {{128, 8, 8},  {500, 8, 8},  {512, 8, 8},
                                       {24, 100, 29}, {64, 8, 13}, {300, 5, 13}};
    for (size_t i = 0; i < sizeof row_geoms / sizeof *row_geoms; i++) {
        check_rows(row_geoms[i][0], row_geoms[i][1], row_geoms[i][2], 4096, 0);
        geometries++;
    }
    check_rows(300, 5, 13, 4096, 64);
    check_rows(500, 8, 8, 4096, -64);
    /* rows that shrink (an upper triangle's: 4 KiB down to 8 bytes, and odd lengths 13 bytes
     * shorter each row, rows a page and 8 bytes apart): affine indexed nodes (GCOMMI_DL_AFFINE)
     * whose packs compute each row's place and length (indexed_affine_walk), as the growing
     * rows above without a jog do */
    check_rows(512, 4096, -8, 4096, 0);
    check_rows(300, 3900, -13, 4104, 0);
    check_rows(3, 700, 9, 4096, 0);
    geometries += 5;
    /* packs on Intel between 3/8 of the L2 and the L2 whose blocks crowd the cache sets of a run
     * of lines of a page stream only the packed lines of those sets (copy_split, by the place of
     * each packed line in its page): blocks of 2 KiB and of 2 KiB - 8 bytes (a packed stream
     * whose blocks start anywhere in a line) a page apart, sized for L2s of 1, 2 and 4 MiB (448,
     * 896 and 1792 KiB packed), and lower_tri's rows of 571 KiB above */
    static const int split_blocks[] = {2048, 2040};
    static const int split_kib[] = {448, 896, 1792};
    for (size_t i = 0; i < sizeof split_blocks / sizeof *split_blocks; i++)
        for (size_t k = 0; k < sizeof split_kib / sizeof *split_kib; k++) {
            check_vector((split_kib[k] << 10) / split_blocks[i], split_blocks[i], 4096);
            geometries++;
        }
    /* the same blocks two to a plane, planes three pages apart (the inner vector's mask judged
     * once, reused for every plane) and three pages and 64 bytes apart (other places: the split
     * ends after the first plane) */
    for (size_t k = 0; k < sizeof split_kib / sizeof *split_kib; k++) {
        check_planes((split_kib[k] << 10) / 4096, 2, 2048, 3 * 4096);
        check_planes((split_kib[k] << 10) / 4096, 2, 2048, 3 * 4096 + 64);
        geometries += 2;
    }
    /* about 6.5 MiB: each of block_check's three ranges, cut at odd bytes, is itself more than
     * 2 MiB and starts inside a row */
    check_vector(26630, 256, 512);
    check_vector(6660, 992, -1024);
    geometries += 2;
    printf("%d geometries checked\n", geometries);
    return gcommt_finish("test_dt_vector_blocks");
}
