/* Pack and unpack at the sizes where the host engine changes its copies (issue 2).
 *
 * gcomm_pack picks its loops by the size of the operation: from stream_min() bytes (8 MiB or more,
 * GCOMM_PACK_STREAM_MIN) it writes with streaming stores, a pack gathering blocks eight at a time
 * (a group's remainder and the blocks of a range are the cases a byte can go missing in), and on
 * Zen 5 it moves 128-byte rows with 64-byte vectors. The random-type tests stay far below those sizes, so
 * this test packs the benchmark's shapes (bench_pack_cpu) at a size given on the command line and
 * compares every byte with a reference that copies block by block from a list of (offset, length)
 * written here from the shapes' definitions, not from the engine. The unpack is checked the same
 * way, into a poisoned buffer whose gaps must stay poisoned. ctest runs it at 12 MiB with the
 * default thresholds, at 2 MiB (below them: the copies of blocks that do not stream) and at 1 MiB
 * with GCOMM_PACK_STREAM_MIN=256K, so every path runs on every machine; each shape three times:
 * typed and packed buffers 16 bytes past a page (as malloc returns large buffers), the typed
 * buffers on a page and the packed one 16 past (blocks that begin whole cache lines take other
 * copies), and both on a page (a pack whose packed lines line up with the typed ones takes
 * another). Each pack and unpack is also done in three ranges cut inside blocks.
 *
 * ctest also runs the transpose alone at 40 MiB and at 32 MiB (N = 2048, packed streams a multiple
 * of 4 KiB apart), where Zen 4 changes its transposing tiles.
 *
 * Usage: test_dt_large [packed MiB, default 12] [shape, default all] */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcomm/datatype.h"
#include "block_check.h"
#include "testutil.h"

/* A gcomm call in a shape's construction: counted and reported by the harness; the shape is
 * abandoned when it fails. */
#define CHECK_GC(call)                                                                             \
    do {                                                                                           \
        const int failures_ = gcommt_failures;                                                     \
        TEST_OK(call);                                                                             \
        if (gcommt_failures != failures_) return -1;                                               \
    } while (0)

/* vector(n, bl, 2 bl) of doubles, 3 blocks more than the target needs: at the sizes ctest runs, n
 * is then no multiple of the group of blocks that a copy loop takes together */
static int shape_vector(size_t target, int bl, gcomm_datatype *t, blocks_t *l)
{
    size_t n = (target + 8 * (size_t)bl - 1) / (8 * (size_t)bl) + 3;
    CHECK_GC(gcomm_type_vector((int)n, bl, 2 * bl, GCOMM_DOUBLE, t));
    for (size_t i = 0; i < n; i++)
        if (blocks_add(l, i * 16 * (size_t)bl, 8 * (size_t)bl)) return -1;
    return 0;
}

/* indexed: row i of an N x N matrix of doubles holds i + 1 elements at i * N */
static int shape_lower_tri(size_t target, gcomm_datatype *t, blocks_t *l)
{
    size_t n = 1;
    while (8 * n * (n + 1) / 2 < target) n++;
    int *len = malloc(2 * n * sizeof *len), rc = -1;
    if (!len) return -1;
    int *disp = len + n; /* the type's arguments and the reference's blocks from one loop */
    size_t i = 0;
    for (; i < n && blocks_add(l, 8 * i * n, 8 * (i + 1)) == 0; i++) {
        len[i] = (int)(i + 1);
        disp[i] = (int)(i * n);
    }
    if (i == n) {
        rc = 0;
        TEST_OK(rc = gcomm_type_indexed((int)n, len, disp, GCOMM_DOUBLE, t));
    }
    free(len);
    return rc ? -1 : 0;
}

/* subarray: the inner half of each dimension of a 4-D volume of doubles, C order */
static int shape_subarray4d(size_t target, gcomm_datatype *t, blocks_t *l)
{
    int p = 0;
    while ((size_t)8 << p < target) p++;
    int sizes[4], sub[4], starts[4];
    for (int d = 0; d < 4; d++) {
        sub[d] = 1 << (p / 4 + (d >= 4 - p % 4 ? 1 : 0));
        sizes[d] = 2 * sub[d];
        starts[d] = sub[d] / 2;
    }
    CHECK_GC(gcomm_type_subarray(4, sizes, sub, starts, GCOMM_ORDER_C, GCOMM_DOUBLE, t));
    for (int a = 0; a < sub[0]; a++)
        for (int b = 0; b < sub[1]; b++)
            for (int c = 0; c < sub[2]; c++) {
                size_t idx = (((size_t)(a + starts[0]) * sizes[1] + (b + starts[1])) * sizes[2] +
                              (c + starts[2])) * sizes[3] + starts[3];
                if (blocks_add(l, 8 * idx, 8 * (size_t)sub[3])) return -1;
            }
    return 0;
}

/* n x struct {double, int, int, char} resized to its C extent (24 bytes, 17 packed) */
static int shape_struct(size_t target, gcomm_datatype *t, blocks_t *l, size_t *count)
{
    const size_t n = (target + 16) / 17;
    const int len[4] = {1, 1, 1, 1};
    const ptrdiff_t disp[4] = {0, 8, 12, 16};
    gcomm_datatype types[4] = {GCOMM_DOUBLE, GCOMM_INT, GCOMM_INT, GCOMM_CHAR}, raw;
    CHECK_GC(gcomm_type_struct(4, len, disp, types, &raw));
    CHECK_GC(gcomm_type_resized(raw, 0, 24, t));
    CHECK_GC(gcomm_type_free(&raw));
    for (size_t i = 0; i < n; i++)
        if (blocks_add(l, 24 * i, 17)) return -1; /* 8 + 4 + 4 + 1 bytes, contiguous */
    *count = n;
    return 0;
}

/* contiguous(N, resized(vector(N, 1, N), 0, 8)): an N x N matrix of doubles packed transposed */
static int shape_transpose(size_t target, gcomm_datatype *t, blocks_t *l)
{
    size_t n = 1;
    while (8 * n * n < target) n++;
    gcomm_datatype col, col8;
    CHECK_GC(gcomm_type_vector((int)n, 1, (int)n, GCOMM_DOUBLE, &col));
    CHECK_GC(gcomm_type_resized(col, 0, 8, &col8));
    CHECK_GC(gcomm_type_contiguous((int)n, col8, t));
    CHECK_GC(gcomm_type_free(&col));
    CHECK_GC(gcomm_type_free(&col8));
    for (size_t j = 0; j < n; j++)
        for (size_t i = 0; i < n; i++)
            if (blocks_add(l, 8 * (i * n + j), 8)) return -1;
    return 0;
}

static uint64_t rng_state;

int main(int argc, char **argv)
{
    const double mib = argc > 1 ? atof(argv[1]) : 12.0;
    if (!(mib > 0 && mib <= 1024)) {
        fprintf(stderr, "usage: %s [packed MiB, 0 < x <= 1024] [shape]\n", argv[0]);
        return 2;
    }
    const size_t target = (size_t)(mib * 1048576.0);
    rng_state = gcommt_seed(0x9e3779b97f4a7c15ull);
    const char *env = getenv("GCOMM_PACK_STREAM_MIN");
    printf("packed size ~%zu bytes, GCOMM_PACK_STREAM_MIN=%s\n", target, env ? env : "(default)");
    int ran = 0;
    for (int s = 0; s < 7; s++) {
        static const char *const names[] = {"vector_bl1", "vector_bl16", "vector_bl256", "lower_tri",
                                            "subarray4d", "struct",      "transpose"};
        static const int bls[] = {1, 16, 256};
        if (argc > 2 && strcmp(argv[2], names[s]) != 0) continue;
        ran++;
        blocks_t l = {0};
        gcomm_datatype t = GCOMM_DATATYPE_NULL;
        size_t count = 1;
        int rc = s < 3   ? shape_vector(target, bls[s], &t, &l)
                 : s == 3 ? shape_lower_tri(target, &t, &l)
                 : s == 4 ? shape_subarray4d(target, &t, &l)
                 : s == 5 ? shape_struct(target, &t, &l, &count)
                          : shape_transpose(target, &t, &l);
        TEST_CHECK(rc == 0, "%s: building the type or its reference", names[s]);
        if (rc == 0) {
            TEST_OK(gcomm_type_commit(&t));
            blocks_check(names[s], t, count, &l, 0, 16, 16, 0, &rng_state);
            blocks_check(names[s], t, count, &l, 0, 0, 16, 0, &rng_state);
            blocks_check(names[s], t, count, &l, 0, 0, 0, 0, &rng_state);
            gcomm_type_free(&t);
        }
        free(l.b);
    }
    TEST_CHECK(ran > 0, "no shape is called %s", argc > 2 ? argv[2] : "");
    return gcommt_finish("test_dt_large");
}
