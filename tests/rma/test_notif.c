/* Notification lanes and matching (include/gcomm/detail/notif.h) on the CPU: the code the device
 * library runs, with host atomics. Matching order and wildcards; inline entries' words; then
 * producer threads sharing lanes into one consumer through small rings (credits must hold them
 * back), released and inline entries mixed, every notification counted once, per-source order
 * kept, and each payload visible once its notification is (an inline one written by the consumer
 * from the entry, as a target rank does). */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "gcomm/detail/notif.h"
#include "testutil.h"

/* The reference for the pending ring: a plain array. Number of entries of list[0..n) matching the query, counting at most `limit`. */
static uint32_t ref_count(const gcommi_notif_t *list, uint32_t n, int32_t win,
                                            int32_t source, int32_t tag, uint32_t limit)
{
    uint32_t found = 0;
    for (uint32_t i = 0; i < n && found < limit; i++)
        if (gcommi_notif_matches(&list[i], win, source, tag)) found++;
    return found;
}

/* Removes the first `want` matching entries (in list order) from list[0..*n), keeping the order
 * of the others; returns how many were removed (fewer than want when fewer match). */
static uint32_t ref_take(gcommi_notif_t *list, uint32_t *n, int32_t win,
                                           int32_t source, int32_t tag, uint32_t want)
{
    uint32_t kept = 0, taken = 0;
    for (uint32_t i = 0; i < *n; i++) {
        if (taken < want && gcommi_notif_matches(&list[i], win, source, tag)) {
            taken++;
            continue;
        }
        if (kept != i) list[kept] = list[i];
        kept++;
    }
    *n = kept;
    return taken;
}

static gcommi_notif_t mk(int src, int tag, int win)
{
    gcommi_notif_t n = {1, src, tag, win};
    return n;
}

static void test_packing(void)
{
    gcommi_notif_t n;
    /* extremes of every field, and the seq wrapping at 2^16 */
    gcommi_notif_unpack(gcommi_notif_pack(0xffffu, GCOMMI_SOURCE_MAX, GCOMMI_TAG_MAX, 63), &n);
    TEST_CHECK(n.seq == 0 && n.source == GCOMMI_SOURCE_MAX && n.tag == GCOMMI_TAG_MAX &&
               n.win == 63, "extremes: seq %u source %d tag %d win %d", n.seq, n.source, n.tag,
               n.win);
    gcommi_notif_unpack(gcommi_notif_pack(41, 0, 0, GCOMMI_WIN_VOID), &n);
    TEST_CHECK(n.seq == 42 && n.source == 0 && n.tag == 0 && n.win == GCOMMI_WIN_VOID,
               "void entry");
    /* a ring slot written one lap earlier never looks current */
    uint64_t ring[8 * GCOMMI_ENTRY_WORDS] = {0}, w4[4];
    gcommi_notif_t out;
    gcommi_lane_publish(ring, 8, 3, 7, 9, 1, 1);
    TEST_CHECK(gcommi_lane_poll(ring, 8, 3, &out, w4, 1) == 1 && out.source == 7 && out.tag == 9,
               "slot 3 published");
    TEST_CHECK(gcommi_lane_poll(ring, 8, 11, &out, w4, 1) == 0, "slot 11 (same place) not yet");
    TEST_CHECK(gcommi_lane_poll(ring, 8, 4, &out, w4, 1) == 0, "slot 4 not yet");
    for (uint32_t slot = 65530; slot < 65545; slot++) { /* across the 16-bit wrap */
        gcommi_lane_publish(ring, 8, slot, 1, (int)slot & 0xff, 2, 1);
        TEST_CHECK(gcommi_lane_poll(ring, 8, slot, &out, w4, 1) == 1 && out.tag == ((int)slot & 0xff),
                   "slot %u", slot);
        TEST_CHECK(gcommi_lane_poll(ring, 8, slot + 8, &out, w4, 1) == 0, "slot %u + 8", slot);
    }
}

/* Inline entries: the words carry offset, length and payload at their extremes; the notification
 * word says "inline" and gives the window without the flag; an entry with only some of its words
 * stored (or words of another lap) is not ready. */
static void test_inline(void)
{
    uint64_t ring[8 * GCOMMI_ENTRY_WORDS] = {0}, off, pay, w4[4];
    uint32_t len;
    gcommi_notif_t out = {0, 0, 0, 0};
    const uint64_t offs[3] = {0, 12345, GCOMMI_INLINE_OFFSET_MAX};
    const uint64_t pays[3] = {0, 0x0123456789abcdefull, ~0ull};
    for (uint32_t slot = 65534; slot < 65534 + 12; slot++) { /* across the 16-bit wrap */
        const int k = (int)(slot % 3);
        const uint32_t n = slot % (GCOMMI_INLINE_MAX + 1);
        gcommi_lane_publish_inline(ring, 8, slot, GCOMMI_SOURCE_MAX, 77, 63, offs[k], n, pays[k], 1);
        TEST_CHECK(gcommi_lane_poll(ring, 8, slot, &out, w4, 1) == 2 && out.win == 63 &&
                       out.source == GCOMMI_SOURCE_MAX && out.tag == 77,
                   "slot %u: inline entry seen, win %d", slot, out.win);
        TEST_CHECK(gcommi_lane_poll(ring, 8, slot + 8, &out, w4, 1) == 0, "slot %u + 8", slot);
        /* as polled, and with only the notification word seen (the rest loaded again) */
        gcommi_lane_take_inline(gcommi_lane_entry(ring, 8, slot), slot, w4, &off, &len, &pay, 1);
        TEST_CHECK(off == offs[k] && len == n && pay == pays[k], "slot %u as polled", slot);
        w4[1] = w4[2] = w4[3] = gcommi_lane_seq(slot + 8); /* words of another lap */
        gcommi_lane_take_inline(gcommi_lane_entry(ring, 8, slot), slot, w4, &off, &len, &pay, 1);
        TEST_CHECK(off == offs[k] && len == n && pay == pays[k],
                   "slot %u: offset %llu len %u payload %llx", slot, (unsigned long long)off, len,
                   (unsigned long long)pay);
    }
    /* words of an earlier lap (the payload words not yet rewritten) are not ready */
    uint64_t x[3];
    gcommi_inline_pack(5, 1, 1, 1, x);
    TEST_CHECK(gcommi_inline_ready(x, 5) && !gcommi_inline_ready(x, 13), "ready by seq");
    x[2] = gcommi_lane_seq(13) | 1;
    TEST_CHECK(!gcommi_inline_ready(x, 5), "one word of another lap");
    /* a void entry is never inline; a released entry is not */
    TEST_CHECK(!gcommi_notif_inline(gcommi_notif_pack(1, 1, 1, GCOMMI_WIN_VOID)) &&
                   !gcommi_notif_inline(gcommi_notif_pack(1, 1, 1, 63)) &&
                   gcommi_notif_inline(gcommi_notif_pack(1, 1, 1, 5 | GCOMMI_WIN_INLINE)),
               "inline flag");
}

static void test_matching(void)
{
    /* a ring of 8 whose oldest entry sits at index 6: the list wraps */
    gcommi_notif_t r[8];
    gcommi_plist_t l = {6, 0, 8};
    gcommi_notif_t in[5] = {mk(1, 5, 0), mk(2, 5, 0), mk(1, 6, 1), mk(3, 5, 0), mk(1, 5, 1)};
    for (int i = 0; i < 5; i++) gcommi_plist_push(r, &l, &in[i]);
    TEST_CHECK(gcommi_plist_count(r, &l, 0, GCOMMI_ANY, 5, 10) == 3, "win 0 tag 5");
    TEST_CHECK(gcommi_plist_count(r, &l, GCOMMI_ANY, 1, GCOMMI_ANY, 10) == 3, "source 1");
    TEST_CHECK(gcommi_plist_count(r, &l, GCOMMI_ANY, GCOMMI_ANY, GCOMMI_ANY, 2) == 2, "limit");
    TEST_CHECK(gcommi_plist_count(r, &l, 2, GCOMMI_ANY, GCOMMI_ANY, 10) == 0, "no window 2");
    /* take the first two of source 1: (1,5,0) and (1,6,1); the rest keep their order */
    TEST_CHECK(gcommi_plist_take(r, &l, GCOMMI_ANY, 1, GCOMMI_ANY, 2) == 2, "take 2");
    TEST_CHECK(l.n == 3, "3 left, got %u", l.n);
    TEST_CHECK(gcommi_plist_at(r, &l, 0)->source == 2 && gcommi_plist_at(r, &l, 1)->source == 3 &&
                   gcommi_plist_at(r, &l, 2)->source == 1 && gcommi_plist_at(r, &l, 2)->win == 1,
               "order after take");
    TEST_CHECK(gcommi_plist_take(r, &l, 0, GCOMMI_ANY, 5, 5) == 2, "take what there is");
    TEST_CHECK(l.n == 1 && gcommi_plist_at(r, &l, 0)->source == 1 &&
                   gcommi_plist_at(r, &l, 0)->win == 1, "last one left");
}

/* The pending ring against the plain array version, under random pushes and takes. */
static void test_plist(void)
{
    enum { CAP = 13 };
    gcommi_notif_t ring[CAP], ref[CAP];
    gcommi_plist_t l = {5, 0, CAP};
    uint32_t nref = 0;
    uint64_t rng = gcommt_seed(11);
    long bad = 0;
    for (int step = 0; step < 200000; step++) {
        if (gcommt_rand_range(&rng, 0, 2) && l.n < CAP) {
            gcommi_notif_t e = mk((int)gcommt_rand_range(&rng, 0, 3), (int)gcommt_rand_range(&rng, 0, 3), 0);
            e.seq = (uint32_t)step;
            gcommi_plist_push(ring, &l, &e);
            ref[nref++] = e;
        } else {
            int src = gcommt_rand_range(&rng, 0, 4) == 0 ? GCOMMI_ANY : (int)gcommt_rand_range(&rng, 0, 3);
            int tag = gcommt_rand_range(&rng, 0, 2) == 0 ? GCOMMI_ANY : (int)gcommt_rand_range(&rng, 0, 3);
            uint32_t want = (uint32_t)gcommt_rand_range(&rng, 1, 4);
            uint32_t c1 = gcommi_plist_count(ring, &l, GCOMMI_ANY, src, tag, want);
            uint32_t c2 = ref_count(ref, nref, GCOMMI_ANY, src, tag, want);
            uint32_t t1 = gcommi_plist_take(ring, &l, GCOMMI_ANY, src, tag, want);
            uint32_t t2 = ref_take(ref, &nref, GCOMMI_ANY, src, tag, want);
            bad += c1 != c2 || t1 != t2;
        }
        bad += l.n != nref;
        for (uint32_t i = 0; i < nref && i < l.n; i++)
            bad += gcommi_plist_at(ring, &l, i)->seq != ref[i].seq;
    }
    TEST_CHECK(bad == 0, "pending ring differs from the reference %ld times", bad);
}

#define PRODUCERS 4
#define LANES 2
#define DEPTH 8
#define PENDING_CAP 16

typedef struct {
    uint64_t ring[LANES][DEPTH * GCOMMI_ENTRY_WORDS];
    uint32_t tail[LANES];      /* per lane: producers' reservation counter */
    uint32_t consumed[LANES];  /* per lane: consumer's credit return */
    uint32_t *payload;         /* [PRODUCERS][count]: written before each notification */
    long count;
} world_t;

typedef struct {
    world_t *w;
    int id;
} producer_arg_t;

static void *producer(void *argp)
{
    producer_arg_t *a = argp;
    world_t *w = a->w;
    int lane = a->id % LANES;
    for (long i = 0; i < w->count; i++) {
        const uint32_t value = (uint32_t)(i * 2654435761u) ^ (uint32_t)a->id;
        /* every third notification carries its payload inline (the consumer writes it) */
        const int inl = i % 3 == 1;
        if (!inl) w->payload[(size_t)a->id * w->count + i] = value;
        uint32_t slot = gcommi_lane_reserve(&w->tail[lane]);
        while (!gcommi_lane_has_credit(&w->consumed[lane], slot, DEPTH, 1)) sched_yield();
        if (inl)
            gcommi_lane_publish_inline(w->ring[lane], DEPTH, slot, a->id, (int)(i % 1000000), 0,
                                       (uint64_t)i, 4, value, 1);
        else
            gcommi_lane_publish(w->ring[lane], DEPTH, slot, a->id, (int)(i % 1000000), 0, 1);
    }
    return NULL;
}

static void test_threads(long count)
{
    world_t *w = calloc(1, sizeof(*w));
    w->count = count;
    w->payload = calloc((size_t)PRODUCERS * count, sizeof(uint32_t));
    pthread_t t[PRODUCERS];
    producer_arg_t args[PRODUCERS];
    for (int p = 0; p < PRODUCERS; p++) {
        args[p] = (producer_arg_t){w, p};
        pthread_create(&t[p], NULL, producer, &args[p]);
    }
    gcommi_notif_t pending[PENDING_CAP];
    uint32_t npending = 0, next[LANES] = {0}, returned[LANES] = {0};
    long expect[PRODUCERS] = {0}, total = 0, bad_payload = 0, bad_order = 0, rounds = 0;
    long bad_inline = 0;
    uint64_t rng = gcommt_seed(7);
    while (total < PRODUCERS * count) {
        /* drain like the device library does */
        for (int l = 0; l < LANES; l++) {
            uint32_t first = next[l];
            int hit;
            uint64_t w4[4];
            while (npending < PENDING_CAP &&
                   (hit = gcommi_lane_poll(w->ring[l], DEPTH, next[l], &pending[npending], w4,
                                           1))) {
                if (hit == 2) { /* the target writes an inline payload where it belongs */
                    uint64_t off, pay;
                    uint32_t len;
                    gcommi_lane_take_inline(gcommi_lane_entry(w->ring[l], DEPTH, next[l]),
                                            next[l], w4, &off, &len, &pay, 1);
                    if (len == 4 && off < (uint64_t)count)
                        w->payload[(size_t)pending[npending].source * count + off] = (uint32_t)pay;
                    else
                        bad_inline++;
                }
                npending++;
                next[l]++;
            }
            /* batched like the device library; all of it when nothing new came (idle) */
            if (gcommi_lane_credit_due(next[l], returned[l], DEPTH, next[l] == first)) {
                gcommi_lane_return_credit(&w->consumed[l], next[l], 1);
                returned[l] = next[l];
            }
        }
        /* match: mostly a specific source's next tag (out of arrival order), sometimes ANY */
        int src = (int)gcommt_rand_range(&rng, 0, PRODUCERS - 1);
        int any = gcommt_rand_range(&rng, 0, 3) == 0;
        for (uint32_t k = 0; k < npending; k++) {
            gcommi_notif_t e = pending[k];
            if (!any && e.source != src) continue;
            uint32_t one = npending;
            if (ref_take(pending, &one, GCOMMI_ANY, e.source, e.tag, 1) != 1) {
                bad_order++;
                break;
            }
            npending = one;
            long i = expect[e.source];
            if (e.tag != (int)(i % 1000000)) bad_order++;
            uint32_t want = (uint32_t)(i * 2654435761u) ^ (uint32_t)e.source;
            if (w->payload[(size_t)e.source * count + i] != want) bad_payload++;
            expect[e.source]++;
            total++;
            break;
        }
        rounds++;
    }
    for (int p = 0; p < PRODUCERS; p++) pthread_join(t[p], NULL);
    TEST_CHECK(bad_order == 0, "%ld notifications out of per-source order", bad_order);
    TEST_CHECK(bad_payload == 0, "%ld payloads not visible with their notification", bad_payload);
    TEST_CHECK(bad_inline == 0, "%ld inline entries with a wrong length or offset", bad_inline);
    for (int p = 0; p < PRODUCERS; p++)
        TEST_CHECK(expect[p] == count, "producer %d: %ld of %ld matched", p, expect[p], count);
    TEST_CHECK(npending == 0, "%u left pending", npending);
    for (int l = 0; l < LANES; l++)
        TEST_CHECK(next[l] == w->tail[l], "lane %d: consumed %u, reserved %u", l, next[l],
                   w->tail[l]);
    printf("threads: %ld notifications from %d producers over %d lanes of depth %d (%ld rounds)\n",
           total, PRODUCERS, LANES, DEPTH, rounds);
    free(w->payload);
    free(w);
}

int main(int argc, char **argv)
{
    long count = argc > 1 ? atol(argv[1]) : 250000;
    test_packing();
    test_inline();
    test_matching();
    test_plist();
    test_threads(count);
    return gcommt_finish("test_notif");
}
