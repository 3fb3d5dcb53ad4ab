/* The proxy's command ring (include/gcomm/detail/proxy_queue.h) on the CPU: the code GPU blocks
 * and host ranks run, with host atomics. First its rules one step at a time (publication order,
 * credit, a fresh ring started anywhere including just before the 32-bit wrap); then producer
 * threads posting hundreds of thousands of commands into a small ring that one consumer drains
 * the way the proxy does: every record seen exactly once, intact, in per-producer order, with
 * the data written before it visible, across thousands of wrap-arounds and the counter wrap,
 * while credits hold the producers back. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "gcomm/detail/proxy_queue.h"
#include "testutil.h"

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The command producer `source` posts as its id-th: every field a function of (source, id). */
static gcommi_pq_cmd_t expected_cmd(int32_t source, uint32_t id)
{
    uint64_t h = mix((uint64_t)source << 32 | id);
    gcommi_pq_cmd_t c;
    memset(&c, 0, sizeof(c));
    c.op = (uint8_t)(GCOMMI_PQ_PUT + h % 5);
    c.flags = (uint8_t)((h >> 8) & 3);
    c.win = (uint16_t)(h >> 16);
    c.source = source;
    c.target = (int32_t)(mix(h) & 0x7fffffff);
    c.tag = (int32_t)(h >> 33) & 0xfffff;
    c.id = id;
    c.offset = mix(h + 1);
    c.bytes = mix(h + 2) >> 20;
    if (c.flags & GCOMMI_PQ_F_INLINE) {
        for (int k = 0; k < GCOMMI_PQ_INLINE_MAX; k++) c.u.data[k] = (unsigned char)(mix(h + 3 + k) | 1);
    } else {
        c.u.origin = mix(h + 3);
        /* the bytes of the union past origin are not part of a non-inline record's contents */
    }
    return c;
}

static int same_cmd(const gcommi_pq_cmd_t *a, const gcommi_pq_cmd_t *b)
{
    if (a->op != b->op || a->flags != b->flags || a->win != b->win || a->source != b->source ||
        a->target != b->target || a->tag != b->tag || a->id != b->id || a->offset != b->offset ||
        a->bytes != b->bytes)
        return 0;
    if (a->flags & GCOMMI_PQ_F_INLINE) return memcmp(a->u.data, b->u.data, GCOMMI_PQ_INLINE_MAX) == 0;
    return a->u.origin == b->u.origin;
}

typedef struct {
    gcommi_pq_cmd_t ring[64] __attribute__((aligned(64)));
    uint32_t tail __attribute__((aligned(64)));
    uint32_t consumed __attribute__((aligned(64)));
} small_ring_t;

static gcommi_pq_t ring_of(small_ring_t *r, uint32_t depth)
{
    gcommi_pq_t q = {r->ring, &r->tail, &r->consumed, depth, 0};
    return q;
}

/* The rules, step by step, from a start just before the 32-bit wrap. */
static void test_rules(void)
{
    TEST_CHECK(sizeof(gcommi_pq_cmd_t) == 64 && _Alignof(gcommi_pq_cmd_t) == 64,
               "a record is one 64-byte line (%zu, aligned %zu)", sizeof(gcommi_pq_cmd_t),
               (size_t)_Alignof(gcommi_pq_cmd_t));
    static small_ring_t r;
    const uint32_t depth = 8, start = 0xfffffffcu;
    memset(&r, 0, sizeof(r)); /* a zeroed slot would read "published" at position 0xffffffff */
    gcommi_pq_t q = ring_of(&r, depth);
    gcommi_pq_init(&q, start);
    gcommi_pq_cmd_t out;
    int seen = 0;
    for (uint32_t k = 0; k < 2 * depth; k++) seen += gcommi_pq_poll(&q, start + k, &out);
    TEST_CHECK(seen == 0, "a fresh ring shows %d published records", seen);

    /* two producers reserve in order but publish out of order: the consumer waits for the
     * first, then takes both */
    uint32_t s0 = gcommi_pq_reserve(&q), s1 = gcommi_pq_reserve(&q);
    TEST_CHECK(s0 == start && s1 == start + 1, "reservations %u %u", s0, s1);
    gcommi_pq_cmd_t c1 = expected_cmd(1, 1), c0 = expected_cmd(0, 1);
    gcommi_pq_publish(&q, s1, &c1);
    TEST_CHECK(gcommi_pq_poll(&q, start, &out) == 0, "slot %u seen before it was published", start);
    gcommi_pq_publish(&q, s0, &c0);
    TEST_CHECK(gcommi_pq_poll(&q, start, &out) == 1 && same_cmd(&out, &c0) && out.seq == start + 1,
               "first record");
    TEST_CHECK(gcommi_pq_poll(&q, start + 1, &out) == 1 && same_cmd(&out, &c1), "second record");
    TEST_CHECK(gcommi_pq_poll(&q, start + 2, &out) == 0, "nothing third");

    /* credit: slots up to consumed + depth - 1 may be written, not one more */
    uint32_t slot = 0;
    for (uint32_t k = 2; k < depth; k++) slot = gcommi_pq_reserve(&q);
    TEST_CHECK(gcommi_pq_has_credit(&q, slot), "slot %u (consumed %u + depth - 1)", slot, r.consumed);
    slot = gcommi_pq_reserve(&q);
    TEST_CHECK(!gcommi_pq_has_credit(&q, slot), "slot %u is a whole ring ahead", slot);
    gcommi_pq_return_credit(&q, start + 2);
    TEST_CHECK(gcommi_pq_has_credit(&q, slot), "slot %u after two credits came back", slot);
    TEST_CHECK(r.tail == start + depth + 1 && r.tail < start, "the reservation counter wrapped");

    /* credits go back in half rings, or all of them when idle */
    TEST_CHECK(!gcommi_pq_credit_due(start + 3, start, depth, 0), "3 of 8: not due");
    TEST_CHECK(gcommi_pq_credit_due(start + 4, start, depth, 0), "4 of 8: due");
    TEST_CHECK(gcommi_pq_credit_due(start + 1, start, depth, 1), "idle: any");
    TEST_CHECK(!gcommi_pq_credit_due(start, start, depth, 1), "idle, none: not due");

    /* completion counters compare across the wrap */
    uint32_t done = 0xfffffffeu;
    TEST_CHECK(gcommi_pq_done(&done, 0xfffffffdu) && gcommi_pq_done(&done, 0xfffffffeu) &&
               !gcommi_pq_done(&done, 0xffffffffu) && !gcommi_pq_done(&done, 3),
               "done counter comparisons");
    done = 2;
    TEST_CHECK(gcommi_pq_done(&done, 0xffffffffu) && !gcommi_pq_done(&done, 3), "after the wrap");
}

#define MAX_PRODUCERS 8

typedef struct {
    gcommi_pq_t q;
    long count;          /* commands per producer */
    uint32_t *payload;   /* [producer][count], written before each command is published */
    long credit_waits;   /* producers' polls that found no credit */
} world_t;

typedef struct {
    world_t *w;
    int id;
} producer_arg_t;

static void *producer(void *argp)
{
    producer_arg_t *a = argp;
    world_t *w = a->w;
    long waits = 0;
    for (long i = 0; i < w->count; i++) {
        uint32_t id = (uint32_t)i + 1;
        gcommi_pq_cmd_t c = expected_cmd(a->id, id);
        w->payload[(size_t)a->id * w->count + i] = (uint32_t)mix(c.offset);
        uint32_t slot = gcommi_pq_reserve(&w->q);
        while (!gcommi_pq_has_credit(&w->q, slot)) {
            waits++;
            sched_yield();
        }
        /* the consumer must not rely on anything but the sequence word: scribble the slot's
         * other words first, as a slow or torn writer could leave them */
        gcommi_pq_cmd_t *r = &w->q.ring[slot & (w->q.depth - 1)];
        r->source = -7;
        r->id = 0;
        gcommi_pq_publish(&w->q, slot, &c);
    }
    __atomic_fetch_add(&w->credit_waits, waits, __ATOMIC_RELAXED);
    return NULL;
}

/* `producers` threads, `count` commands each, through a ring of `depth`, started `before_wrap`
 * positions ahead of the 32-bit wrap; the consumer drains like the proxy (credits in half rings,
 * all of them when a poll finds nothing). */
static void test_threads(int producers, long count, uint32_t depth, uint32_t before_wrap)
{
    world_t *w = calloc(1, sizeof(*w));
    gcommi_pq_cmd_t *ring = aligned_alloc(64, depth * sizeof(gcommi_pq_cmd_t));
    uint32_t *counters = aligned_alloc(64, 128);
    memset(ring, 0, depth * sizeof(gcommi_pq_cmd_t));
    w->q = (gcommi_pq_t){ring, counters, counters + 16, depth, 0};
    w->count = count;
    w->payload = calloc((size_t)producers * count, sizeof(uint32_t));
    uint32_t start = 0u - before_wrap;
    gcommi_pq_init(&w->q, start);

    pthread_t t[MAX_PRODUCERS];
    producer_arg_t args[MAX_PRODUCERS];
    for (int p = 0; p < producers; p++) {
        args[p] = (producer_arg_t){w, p};
        pthread_create(&t[p], NULL, producer, &args[p]);
    }
    long next_id[MAX_PRODUCERS] = {0}, bad_field = 0, bad_order = 0, bad_payload = 0,
         bad_source = 0, empty_polls = 0, credit_returns = 0;
    uint32_t next = start, returned = start;
    long total = (long)producers * count;
    for (long got = 0; got < total;) {
        uint32_t first = next;
        gcommi_pq_cmd_t c;
        while (gcommi_pq_poll(&w->q, next, &c)) {
            next++;
            got++;
            if (c.source < 0 || c.source >= producers) {
                bad_source++;
                continue;
            }
            long i = next_id[c.source]++;
            if (c.id != (uint32_t)i + 1) bad_order++;
            gcommi_pq_cmd_t want = expected_cmd(c.source, c.id);
            if (!same_cmd(&c, &want)) bad_field++;
            if (c.id >= 1 && (long)c.id <= count &&
                w->payload[(size_t)c.source * count + c.id - 1] != (uint32_t)mix(want.offset))
                bad_payload++;
        }
        if (gcommi_pq_credit_due(next, returned, depth, next == first)) {
            gcommi_pq_return_credit(&w->q, next);
            returned = next;
            credit_returns++;
        }
        if (next == first) {
            empty_polls++;
            sched_yield();
        }
    }
    for (int p = 0; p < producers; p++) pthread_join(t[p], NULL);
    TEST_CHECK(bad_source == 0, "%ld records with a foreign source", bad_source);
    TEST_CHECK(bad_order == 0, "%ld records out of order, repeated or missing", bad_order);
    TEST_CHECK(bad_field == 0, "%ld records not intact", bad_field);
    TEST_CHECK(bad_payload == 0, "%ld records whose data written before was not visible", bad_payload);
    for (int p = 0; p < producers; p++)
        TEST_CHECK(next_id[p] == count, "producer %d: %ld of %ld records", p, next_id[p], count);
    TEST_CHECK(next == *w->q.tail, "consumed %u, reserved %u", next, *w->q.tail);
    TEST_CHECK(next - start == (uint32_t)total, "positions advanced %u", next - start);
    TEST_CHECK(next < start, "the positions crossed the 32-bit wrap (%u -> %u)", start, next);
    TEST_CHECK(w->credit_waits > 0, "credits never held a producer back");
    uint32_t one_more = next;
    gcommi_pq_cmd_t c;
    TEST_CHECK(!gcommi_pq_poll(&w->q, one_more, &c), "a record past the end");
    printf("threads: %ld records from %d producers through a ring of %u (%.0f laps), %ld credit "
           "returns, producers waited for credit %ld times, consumer found nothing %ld times\n",
           total, producers, depth, (double)total / depth, credit_returns, w->credit_waits,
           empty_polls);
    free(w->payload);
    free(ring);
    free(counters);
    free(w);
}

int main(int argc, char **argv)
{
    long count = argc > 1 ? atol(argv[1]) : 100000;
    test_rules();
    test_threads(4, count, 64, (uint32_t)(2 * count)); /* 4 x count records, wrap halfway */
    test_threads(MAX_PRODUCERS, count / 8 + 1, 2, 5); /* the smallest ring: every post waits */
    return gcommt_finish("test_proxy_queue");
}
