/* Vectors of 1-4 KiB blocks at strides around a page, packed and unpacked in the cache (issue 2).
 *
 * In operations that fit the caches the host engine copies such blocks with its own loops and
 * prefetches the blocks ahead; on Zen 4, blocks of 1.5-3 KiB a page or more apart in operations of
 * up to 2 MiB take a loop that also prefetches the block ahead from its end down
 * (strided_vec_walk in src/datatype/pack_host.c), and a block that crosses a page boundary is
 * prefetched in two parts. The random-type tests rarely build blocks this long, and the
 * benchmark's vector_bl256 has blocks of whole 128-byte chunks, so this test packs hvectors of
 * bytes whose blocks end at every kind of remainder (whole 128-byte chunks, 32-byte moves, an
 * overlapping last move), at strides of exactly a page, a page plus 8 bytes (blocks drift across
 * page boundaries), two pages, less than a page, and negative. Every packed byte is compared with
 * a reference written block by block here, the unpack must restore the blocks and leave every
 * gap byte as it was, and each operation is also done in three ranges cut inside blocks. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcomm/datatype.h"
#include "testutil.h"

#define POISON 0x5A

static uint64_t rng_state;

/* One geometry: count blocks of bl bytes, stride bytes apart (negative: the blocks descend from
 * the buffer's origin). */
static void check_vector(int count, int bl, long stride)
{
    const size_t packed = (size_t)count * (size_t)bl;
    const size_t astride = (size_t)(stride < 0 ? -stride : stride);
    const size_t span = (size_t)(count - 1) * astride + (size_t)bl;
    /* typed buffer on a page, so that the strides put the blocks where the name says */
    unsigned char *typed = NULL, *back = NULL, *out = malloc(packed), *ref = malloc(packed);
    if (posix_memalign((void **)&typed, 4096, span) || posix_memalign((void **)&back, 4096, span) ||
        !out || !ref) {
        TEST_CHECK(0, "out of memory (%zu bytes)", span);
        goto out;
    }
    /* the origin of block 0: the start of the span, or its last block when descending */
    const size_t origin = stride < 0 ? (size_t)(count - 1) * astride : 0;
    gcomm_datatype t = GCOMM_DATATYPE_NULL;
    TEST_OK(gcomm_type_hvector(count, bl, (ptrdiff_t)stride, GCOMM_BYTE, &t));
    TEST_OK(gcomm_type_commit(&t));
    gcommt_fill_random(typed, span, &rng_state);
    for (int b = 0; b < count; b++)
        memcpy(ref + (size_t)b * bl, typed + origin + (long)b * stride, (size_t)bl);

    /* whole pack */
    memset(out, POISON, packed);
    size_t pos = 0;
    TEST_OK(gcomm_pack(typed + origin, 1, t, out, packed, &pos));
    TEST_CHECK(pos == packed, "bl %d stride %ld: position %zu, expected %zu", bl, stride, pos,
               packed);
    TEST_CHECK(memcmp(out, ref, packed) == 0, "bl %d stride %ld: packed bytes differ", bl, stride);

    /* whole unpack into a poisoned copy: the blocks come back, the gaps stay as they were */
    memset(back, POISON, span);
    pos = 0;
    TEST_OK(gcomm_unpack(ref, packed, &pos, back + origin, 1, t));
    TEST_CHECK(pos == packed, "bl %d stride %ld: unpack position %zu", bl, stride, pos);
    size_t bad = 0;
    for (int b = 0; b < count; b++) {
        const size_t at = origin + (size_t)((long)b * stride);
        if (memcmp(back + at, ref + (size_t)b * bl, (size_t)bl) != 0) bad++;
        memset(back + at, POISON, (size_t)bl); /* leave only the gaps for the next check */
    }
    TEST_CHECK(bad == 0, "bl %d stride %ld: %zu blocks not restored", bl, stride, bad);
    size_t touched = 0;
    for (size_t i = 0; i < span; i++) touched += back[i] != POISON;
    TEST_CHECK(touched == 0, "bl %d stride %ld: unpack wrote %zu gap bytes", bl, stride, touched);

    /* three ranges cut inside blocks: packed, then unpacked */
    const size_t cut1 = packed / 3 + 7, cut2 = 2 * packed / 3 + 13;
    const size_t cuts[4] = {0, cut1, cut2, packed};
    memset(out, POISON, packed);
    memset(back, POISON, span);
    for (int r = 0; r < 3; r++) {
        const size_t off = cuts[r], len = cuts[r + 1] - cuts[r];
        TEST_OK(gcomm_pack_range(typed + origin, 1, t, off, len, out + off));
        TEST_OK(gcomm_unpack_range(ref + off, off, len, back + origin, 1, t));
    }
    TEST_CHECK(memcmp(out, ref, packed) == 0, "bl %d stride %ld: ranges packed differ", bl, stride);
    bad = 0;
    for (int b = 0; b < count; b++) {
        const size_t at = origin + (size_t)((long)b * stride);
        if (memcmp(back + at, ref + (size_t)b * bl, (size_t)bl) != 0) bad++;
        memset(back + at, POISON, (size_t)bl);
    }
    touched = 0;
    for (size_t i = 0; i < span; i++) touched += back[i] != POISON;
    TEST_CHECK(bad == 0 && touched == 0, "bl %d stride %ld: ranges unpacked %zu bad blocks, %zu gap "
               "bytes written", bl, stride, bad, touched);
    gcomm_type_free(&t);
out:
    free(typed);
    free(back);
    free(out);
    free(ref);
}

int main(void)
{
    rng_state = gcommt_seed(0x2545F4914F6CDD1Dull);
    /* block lengths: whole 128-byte chunks, + a 32-byte move, + an overlapping last move, below
     * and above the 1.5-3 KiB of strided_vec_walk and at a page */
    static const int bls[] = {1024, 1544, 1536, 2000, 2048, 2056, 2600, 3072, 3080, 3840, 4096};
    static const long strides[] = {4096, 4104, 8192, 3072 + 512, -4096, -6152};
    /* about 1 MiB packed (in the caches, below 2 MiB), and a few blocks (the prefetch's end) */
    int geometries = 0;
    for (size_t i = 0; i < sizeof bls / sizeof *bls; i++)
        for (size_t j = 0; j < sizeof strides / sizeof *strides; j++) {
            const long as = strides[j] < 0 ? -strides[j] : strides[j];
            if (as < bls[i]) continue; /* blocks must not overlap */
            check_vector((1 << 20) / bls[i], bls[i], strides[j]);
            check_vector(3, bls[i], strides[j]);
            geometries += 2;
        }
    printf("%d geometries checked\n", geometries);
    return gcommt_finish("test_dt_vector_blocks");
}
