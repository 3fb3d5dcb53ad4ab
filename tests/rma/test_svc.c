/* The service block's delivery records (include/gcomm/detail/svc.h) on the CPU: the encoding the
 * proxy writes and the decoding and payload stores the block runs, with host atomics.
 *
 *   1. Random records (payload 0..32 bytes at aligned and unaligned addresses) written, decoded
 *      and stored: every field as written, the payload byte for byte, the bytes around it
 *      untouched.
 *   2. A record with any one word still carrying an older lap's flag (or the zero of fresh memory)
 *      is not taken; once every word is rewritten it is.
 *   3. A writer thread and a reader thread through a small ring, as proxy and block: the reader
 *      reads the words one by one with relaxed 8-byte loads while the writer may be rewriting
 *      them, takes a record only when every word carries its flag, and returns the credit;
 *      every record arrives once, in order, intact (a torn record would fail the check).
 *
 * Usage: test_svc [records for the threaded part] */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gcomm/detail/svc.h"
#include "testutil.h"

static void random_record(uint64_t *rng, uint64_t *dst, uint64_t *at, uint64_t *entry,
                          unsigned char *data, uint32_t *bytes)
{
    *dst = gcommt_rand(rng) & 0x0000ffffffffffffull;
    *at = gcommt_rand(rng) & 0x0000fffffffffff8ull;
    *entry = gcommt_rand(rng);
    *bytes = (uint32_t)gcommt_rand_range(rng, 0, GCOMMI_SVC_DATA);
    for (uint32_t k = 0; k < GCOMMI_SVC_DATA; k++) data[k] = (unsigned char)gcommt_rand(rng);
}

static void test_roundtrip(void)
{
    uint64_t rng = 0x5eed;
    gcommi_svc_rec_t rec;
    long bad = 0, stores = 0;
    for (int i = 0; i < 20000; i++) {
        uint64_t dst, at, entry;
        uint32_t bytes;
        unsigned char data[GCOMMI_SVC_DATA];
        random_record(&rng, &dst, &at, &entry, data, &bytes);
        const uint32_t pos = (uint32_t)gcommt_rand(&rng); /* any position, the wrap included */
        gcommi_svc_rec_write(&rec, pos, dst, at, entry, data, bytes);
        gcommi_svc_item_t it;
        memset(&it, 0xa5, sizeof(it));
        if (!gcommi_svc_rec_decode(rec.w, pos + 1, &it) || it.dst != dst || it.at != at ||
            it.entry != entry || it.bytes != bytes || memcmp(it.data, data, bytes) != 0) {
            if (bad++ < 5) TEST_CHECK(0, "record %d (pos %u, %u bytes) decoded wrong", i, pos, bytes);
            continue;
        }
        /* the payload into a poisoned buffer at offsets 0..7 (4-byte stores or byte stores) */
        unsigned char buf[GCOMMI_SVC_DATA + 16], ref[sizeof(buf)];
        const int off = (int)gcommt_rand_range(&rng, 0, 7);
        memset(buf, 0xee, sizeof(buf));
        memcpy(ref, buf, sizeof(buf));
        memcpy(ref + off, data, bytes);
        it.dst = (uint64_t)(uintptr_t)(buf + off);
        gcommi_svc_store_payload(&it);
        stores++;
        if (memcmp(buf, ref, sizeof(buf)) != 0 && bad++ < 5)
            TEST_CHECK(0, "payload of %u bytes at offset %d stored wrong", bytes, off);
    }
    TEST_CHECK(bad == 0, "%ld of 20000 records wrong", bad);
    printf("roundtrip 20000 random records encoded, decoded and stored (%ld payload checks): %s\n",
           stores, bad ? "FAILED" : "ok");
}

static void test_stale_words(void)
{
    uint64_t rng = 0xfeed;
    long bad = 0;
    const uint32_t depth = GCOMMI_SVC_DEPTH;
    for (int i = 0; i < 2000; i++) {
        gcommi_svc_rec_t rec, old;
        uint64_t dst, at, entry;
        uint32_t bytes;
        unsigned char data[GCOMMI_SVC_DATA];
        const uint32_t pos = (uint32_t)gcommt_rand(&rng);
        random_record(&rng, &dst, &at, &entry, data, &bytes);
        /* the slot's previous record (one lap before), or fresh zeroed memory */
        if (i % 4 == 0) memset(&old, 0, sizeof(old));
        else gcommi_svc_rec_write(&old, pos - depth, dst ^ 1, at, entry ^ 1, data, bytes);
        gcommi_svc_rec_write(&rec, pos, dst, at, entry, data, bytes);
        gcommi_svc_item_t it;
        for (int k = 0; k < GCOMMI_SVC_WORDS; k++) {
            gcommi_svc_rec_t torn = rec;
            torn.w[k] = old.w[k]; /* word k not yet rewritten */
            if (gcommi_svc_rec_decode(torn.w, pos + 1, &it) && bad++ < 5)
                TEST_CHECK(0, "record at pos %u taken with word %d of the previous lap", pos, k);
        }
        if (!gcommi_svc_rec_decode(rec.w, pos + 1, &it) && bad++ < 5)
            TEST_CHECK(0, "complete record at pos %u not taken", pos);
        if (gcommi_svc_rec_decode(rec.w, pos + 2, &it) && bad++ < 5)
            TEST_CHECK(0, "record at pos %u taken for pos %u", pos, pos + 1);
    }
    TEST_CHECK(bad == 0, "%ld wrong decisions", bad);
    printf("stale     a record with one word of the previous lap (or fresh memory) is refused, "
           "a complete one taken (2000 x %d): %s\n", GCOMMI_SVC_WORDS, bad ? "FAILED" : "ok");
}

/* ---- proxy and block as two threads ---- */

#define RING 8 /* small, so that the writer laps the reader often */

typedef struct {
    gcommi_svc_rec_t ring[RING];
    uint32_t done; /* reader -> writer */
    uint32_t n;
    long bad;
} pair_t;

static uint64_t expect_entry(uint32_t i) { return ((uint64_t)i << 20) ^ 0x9e3779b97f4a7c15ull; }

static void *writer(void *arg)
{
    pair_t *p = arg;
    for (uint32_t i = 0; i < p->n; i++) {
        while (i - __atomic_load_n(&p->done, __ATOMIC_ACQUIRE) >= RING) sched_yield();
        unsigned char data[GCOMMI_SVC_DATA];
        const uint32_t bytes = i % (GCOMMI_SVC_DATA + 1);
        for (uint32_t k = 0; k < GCOMMI_SVC_DATA; k++) data[k] = (unsigned char)(i * 31 + k);
        gcommi_svc_rec_write(&p->ring[i % RING], i, (uint64_t)i * 3, (uint64_t)i * 5,
                             expect_entry(i), data, bytes);
    }
    return NULL;
}

static void *reader(void *arg)
{
    pair_t *p = arg;
    uint32_t pos = 0;
    unsigned long spins = 0;
    while (pos < p->n) {
        uint64_t x[GCOMMI_SVC_WORDS];
        for (int k = 0; k < GCOMMI_SVC_WORDS; k++)
            x[k] = __atomic_load_n(&p->ring[pos % RING].w[k], __ATOMIC_RELAXED);
        gcommi_svc_item_t it;
        if (!gcommi_svc_rec_decode(x, pos + 1, &it)) {
            if ((++spins & 255u) == 0) sched_yield();
            continue;
        }
        const uint32_t bytes = pos % (GCOMMI_SVC_DATA + 1);
        int ok = it.dst == (uint64_t)pos * 3 && it.at == (uint64_t)pos * 5 &&
                 it.entry == expect_entry(pos) && it.bytes == bytes;
        const unsigned char *d = (const unsigned char *)it.data;
        for (uint32_t k = 0; k < bytes && ok; k++) ok = d[k] == (unsigned char)(pos * 31 + k);
        if (!ok && p->bad++ < 5) TEST_CHECK(0, "record %u torn or wrong", pos);
        pos++;
        __atomic_store_n(&p->done, pos, __ATOMIC_RELEASE);
    }
    return NULL;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void test_threads(uint32_t n)
{
    pair_t *p = calloc(1, sizeof(*p));
    TEST_CHECK(p != NULL, "no memory");
    if (!p) return;
    p->n = n;
    pthread_t w, r;
    double t0 = now_s();
    pthread_create(&r, NULL, reader, p);
    pthread_create(&w, NULL, writer, p);
    pthread_join(w, NULL);
    pthread_join(r, NULL);
    TEST_CHECK(p->done == n, "reader took %u of %u records", p->done, n);
    TEST_CHECK(p->bad == 0, "%ld records torn or wrong", p->bad);
    printf("threads   %u records through a %d-deep ring, writer and reader racing: %s (%.2f s)\n",
           n, RING, p->done == n && p->bad == 0 ? "ok" : "FAILED", now_s() - t0);
    free(p);
}

int main(int argc, char **argv)
{
    const uint32_t n = argc > 1 ? (uint32_t)atol(argv[1]) : 200000;
    test_roundtrip();
    test_stale_words();
    test_threads(n);
    return gcommt_finish("test_svc");
}
