/* The estimate behind Intel's split streaming (crowded_mask and its callers in
 * src/datatype/pack_host_loops.h): which lines of a 4 KiB page a pack's typed lines crowd, and
 * whether streaming only the packed lines of those cache sets lets the typed lines stay in the L2.
 * The mask chooses stores, not bytes, so no output test can see a wrong one: this test checks the
 * decision itself on geometries whose answer is known by hand, on the CPU.
 *   - vector_bl256 (2 KiB at the start of every page), 1 MiB: lines 0-31 on a 2 MiB L2; nothing on
 *     a 4 MiB L2 (the lines fit with the packed ones) nor on a 1 MiB L2 (the typed lines alone do
 *     not fit their sets);
 *   - the same blocks from 3 KiB into a page: one run across the page boundary, lines 48-63 and
 *     0-15;
 *   - blocks that drift through the page (4160 and 4352 bytes apart; 32 blocks are sampled of
 *     512, and every 16th block of the second lies at the same place): no crowding;
 *   - a third of the blocks judged as the whole operation (a range): the same mask as the whole;
 *   - lower_tri at 1 MiB (rows of 8 (i + 1) bytes a page apart), from 32 rows of 512: one run from
 *     line 0 of 28-32 lines;
 *   - rows of 1 KiB at two places of a page by turns (sampled every 16 rows, all at one place
 *     unless the sample moves): two runs, no mask. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "testutil.h"

#if defined(__x86_64__)
#pragma GCC diagnostic ignored "-Wunused-function"
#include "datatype/pack_host_loops.h"

#define KIB ((int64_t)1 << 10)
#define MIB ((int64_t)1 << 20)

/* Bits lo..hi of a page's 64 lines, cyclic (hi < lo wraps past line 63). */
static uint64_t lines(int lo, int hi)
{
    uint64_t m = 0;
    for (int k = lo;; k = (k + 1) & 63) {
        m |= (uint64_t)1 << k;
        if (k == hi) break;
    }
    return m;
}

static void check_vectors(const char *page)
{
    const int64_t n = MIB / (2 * KIB);
    uint64_t m = crowded_strided(page, 2 * KIB, 4 * KIB, n, MIB, 2 * MIB);
    TEST_CHECK(m == lines(0, 31), "2 KiB a page apart, 1 MiB, 2 MiB L2: mask %016llx",
               (unsigned long long)m);
    m = crowded_strided(page, 2 * KIB, 4 * KIB, n, MIB, 4 * MIB);
    TEST_CHECK(m == 0, "the same on a 4 MiB L2 (fits): mask %016llx", (unsigned long long)m);
    m = crowded_strided(page, 2 * KIB, 4 * KIB, n, MIB, 1 * MIB);
    TEST_CHECK(m == 0, "the same on a 1 MiB L2 (typed lines alone too many): mask %016llx",
               (unsigned long long)m);
    m = crowded_strided(page + 3 * KIB, 2 * KIB, 4 * KIB, n, MIB, 2 * MIB);
    TEST_CHECK(m == lines(48, 15), "2 KiB from 3 KiB into a page: mask %016llx",
               (unsigned long long)m);
    m = crowded_strided(page, 2 * KIB, -4 * KIB, n, MIB, 2 * MIB);
    TEST_CHECK(m == lines(0, 31), "negative stride: mask %016llx", (unsigned long long)m);
    m = crowded_strided(page, 2 * KIB, 4160, n, MIB, 2 * MIB);
    TEST_CHECK(m == 0, "blocks drifting 64 bytes a page: mask %016llx", (unsigned long long)m);
    m = crowded_strided(page, 2 * KIB, 4352, n, MIB, 2 * MIB);
    TEST_CHECK(m == 0, "blocks drifting 256 bytes a page (every 16th at one place): mask %016llx",
               (unsigned long long)m);
    m = crowded_strided(page + n / 3 * 4 * KIB, 2 * KIB, 4 * KIB, n / 3, MIB, 2 * MIB);
    TEST_CHECK(m == lines(0, 31), "a third of the blocks judged as the operation: mask %016llx",
               (unsigned long long)m);
    m = crowded_strided(page, 2 * KIB, 4 * KIB, n / 3, n / 3 * 2 * KIB, 2 * MIB);
    TEST_CHECK(m == 0, "the same third as an operation of its own (fits): mask %016llx",
               (unsigned long long)m);
    m = crowded_strided(page, 2 * KIB, 4 * KIB, 0, MIB, 2 * MIB);
    TEST_CHECK(m == 0, "no blocks, a page apart: mask %016llx", (unsigned long long)m);
    m = crowded_strided(page, 2 * KIB, 4160, 0, MIB, 2 * MIB);
    TEST_CHECK(m == 0, "no blocks, drifting: mask %016llx", (unsigned long long)m);
}

static void check_rows(const char *page)
{
    enum { N = 512 };
    static int64_t displs[N], prefix[N + 1];
    for (int i = 0; i < N; i++) {
        displs[i] = (int64_t)i * N * 8;
        prefix[i + 1] = prefix[i] + i + 1;
    }
    const int64_t op = prefix[N] * 8;
    uint64_t m = crowded_indexed(page, displs, prefix, N, 8, op, 2 * MIB);
    const int n = __builtin_popcountll(m);
    TEST_CHECK((m & 1) && n >= 28 && n <= 32 && m == lines(0, n - 1),
               "lower_tri, 1 MiB, 2 MiB L2: mask %016llx", (unsigned long long)m);
    /* rows of 1 KiB at the start and in the middle of their pages by turns */
    for (int i = 0; i < N; i++) {
        displs[i] = (int64_t)i * 4 * KIB + (i & 1) * 2 * KIB;
        prefix[i + 1] = prefix[i] + 128;
    }
    m = crowded_indexed(page, displs, prefix, N, 8, prefix[N] * 8, 2 * MIB);
    TEST_CHECK(m == 0, "rows at two places of a page: mask %016llx", (unsigned long long)m);
}

int main(void)
{
    /* only addresses are computed: a page-aligned origin, never dereferenced */
    const char *page = (const char *)(uintptr_t)((uintptr_t)1 << 32);
    check_vectors(page);
    check_rows(page);
    return gcommt_finish("test_dt_crowded_sets");
}
#else
int main(void)
{
    printf("test_dt_crowded_sets: x86-64 only (the split streams on Intel)\n");
    return 77;
}
#endif
