/* Notification lanes and matching, written once for the device library and host code (and
 * unit-tested on the CPU, tests/rma/test_notif.c).
 *
 * A lane is a ring of `depth` 64-bit entries with many producers and one consumer (see rt.h).
 * Producer: reserve a slot, wait for credit, publish. Consumer: poll the entry at its read
 * position; an entry is valid when its seq equals position + 1, which no stale entry of an earlier
 * lap can hold. Matching runs over the rank's private pending list, in order of arrival, and removes the
 * entries it matches, keeping the order of the rest. */
#ifndef GCOMM_DETAIL_NOTIF_H
#define GCOMM_DETAIL_NOTIF_H

#include <stdint.h>

#include "gcomm/detail/atomic.h"
#include "gcomm/detail/hd.h"
#include "gcomm/detail/rt.h"

#define GCOMMI_ANY (-1) /* wildcard value of window, source and tag queries */

/* A published notification is one 64-bit word, written with one release store and read with one
 * load, so a consumer never sees half of it: seq (16 bits: lane slot + 1, modulo 2^16; a stale
 * entry of the previous lap differs by depth < 2^16), window (8), source rank (20), tag (20). */
#define GCOMMI_TAG_BITS 20
#define GCOMMI_SOURCE_BITS 20
#define GCOMMI_WIN_BITS 8
#define GCOMMI_TAG_MAX ((1 << GCOMMI_TAG_BITS) - 1)
#define GCOMMI_SOURCE_MAX ((1 << GCOMMI_SOURCE_BITS) - 1)
#define GCOMMI_DEPTH_MAX 32768
/* The window value of a slot that carries nothing (its operation failed after the slot was
 * reserved): consumers drop it. */
#define GCOMMI_WIN_VOID ((1 << GCOMMI_WIN_BITS) - 1)

/* The sequence number a lane's entry carries once slot `slot` has been published into it (its top
 * 16 bits): the consumer knows what to expect at its read position, so a stale entry of the
 * previous round (depth slots earlier) never passes for a new one. */
GCOMM_HD_INLINE uint64_t gcommi_lane_seq(uint32_t slot)
{
    return (uint64_t)((slot + 1) & 0xffffu) << 48;
}

/* Nonzero when w, the entry at read position `next`, has been published (compared as 32-bit
 * values: a 64-bit mask and compare put 0.03 us on the same-GPU ping-pong, bench_rma). */
GCOMM_HD_INLINE int gcommi_lane_published(uint64_t w, uint32_t next)
{
    return (uint32_t)(w >> 48) == (uint32_t)(gcommi_lane_seq(next) >> 48);
}

GCOMM_HD_INLINE uint64_t gcommi_notif_pack(uint32_t slot, int32_t source, int32_t tag, int32_t win)
{
    return gcommi_lane_seq(slot) | ((uint64_t)(win & 0xff) << 40) |
           ((uint64_t)(source & GCOMMI_SOURCE_MAX) << 20) | (uint64_t)(tag & GCOMMI_TAG_MAX);
}

GCOMM_HD_INLINE void gcommi_notif_unpack(uint64_t w, gcommi_notif_t *out)
{
    out->seq = (uint32_t)(w >> 48);
    out->win = (int32_t)((w >> 40) & 0xff);
    out->source = (int32_t)((w >> 20) & GCOMMI_SOURCE_MAX);
    out->tag = (int32_t)(w & GCOMMI_TAG_MAX);
}

/* ---- producer ---- */

/* Reserves the next slot of a lane; `tail` lives in the producer's own memory. */
GCOMM_HD_INLINE uint32_t gcommi_lane_reserve(uint32_t *tail)
{
    return gcommi_fetch_add_gpu(tail, 1);
}

/* Nonzero when slot may be written: the consumer has consumed the entry `depth` slots earlier.
 * `sys` when the consumer is on another GPU or the host. A relaxed load: the consumer read the
 * old entry before it released the credit, and our overwrite depends on the loaded value (a
 * store is never made visible speculatively); an acquire here would cost the latency of an L1
 * invalidation on every notification. Waiters that loop on it acquire with a fence. */
GCOMM_HD_INLINE int gcommi_lane_has_credit(const uint32_t *consumed, uint32_t slot, uint32_t depth,
                                           int sys)
{
    return (uint32_t)(slot - gcommi_ld_relaxed(consumed, sys)) < depth;
}

/* Publishes the notification of `slot`. The release covers every write the calling thread has
 * observed or made before (the payload, after the block's barrier): `sys` when the consumer is on
 * another GPU or the host, else the cheaper GPU scope. */
GCOMM_HD_INLINE void gcommi_lane_publish(uint64_t *ring, uint32_t depth, uint32_t slot,
                                         int32_t source, int32_t tag, int32_t win, int sys)
{
    gcommi_st_release64(&ring[slot & (depth - 1)], gcommi_notif_pack(slot, source, tag, win), sys);
}

/* ---- consumer ---- */

/* The entry at read position `next` (at `entry`), already loaded as w: 1 and *out filled when it
 * has been published, else 0. `acquired`: w was loaded with acquire semantics; otherwise (a
 * consumer that loads the heads of several lanes at once with relaxed loads, so that their
 * latencies overlap) a hit loads the entry again with acquire semantics (at system scope when the
 * producers are on another GPU or the host). That load reads the value the producer's release
 * wrote (the slot is not written again before this consumer returns its credit), so it
 * synchronizes with it and makes the payload visible to the caller and, after a block barrier,
 * to its block. It costs one memory latency; a fence at system scope instead (MEMBAR.SYS) waits
 * for the whole memory system and was measured slower (bench_rma_parts --peer). entry == NULL
 * (a ring in host memory, where a second load would cross the bus again): a fence. */
GCOMM_HD_INLINE int gcommi_lane_check(const uint64_t *entry, uint64_t w, uint32_t next,
                                      gcommi_notif_t *out, int sys, int acquired)
{
    if (!gcommi_lane_published(w, next)) return 0;
    if (!acquired) {
        if (entry) w = gcommi_ld_acquire64(entry, sys);
        else gcommi_fence(sys);
    }
    gcommi_notif_unpack(w, out);
    return 1;
}

/* Takes the entry at read position `next` when it has been published: returns 1 and fills *out,
 * else 0. One acquire load: a miss costs that load, a hit needs no fence after it. */
GCOMM_HD_INLINE int gcommi_lane_poll(uint64_t *ring, uint32_t depth, uint32_t next,
                                     gcommi_notif_t *out, int sys)
{
    const uint64_t *entry = &ring[next & (depth - 1)];
    return gcommi_lane_check(entry, gcommi_ld_acquire64(entry, sys), next, out, sys, 1);
}

/* Returns credits to the producers of a lane: `next` entries consumed (a store into the source's
 * memory). Consumers return them in batches (see gcommi_lane_credit_due): a release costs a fence,
 * too much to pay on every notification. */
GCOMM_HD_INLINE void gcommi_lane_return_credit(uint32_t *consumed, uint32_t next, int sys)
{
    gcommi_st_release(consumed, next, sys);
}

/* Credits are due when half a ring has been consumed since the last return, or (idle) any. No
 * producer can starve: one that waits has depth slots reserved ahead of the last return, so the
 * consumer will drain past half a ring and return them. */
GCOMM_HD_INLINE int gcommi_lane_credit_due(uint32_t next, uint32_t returned, uint32_t depth,
                                           int idle)
{
    uint32_t d = next - returned;
    return idle ? d != 0 : d >= depth / 2;
}

/* ---- matching ---- */

GCOMM_HD_INLINE int gcommi_notif_matches(const gcommi_notif_t *e, int32_t win, int32_t source,
                                         int32_t tag)
{
    return (win == GCOMMI_ANY || e->win == win) && (source == GCOMMI_ANY || e->source == source) &&
           (tag == GCOMMI_ANY || e->tag == tag);
}

/* ---- the pending list: held notifications in order of arrival, a ring of `cap` entries ----
 *
 * Matching mostly takes the oldest entries, so removal shifts only the entries in front of the
 * last one removed (towards the back) and then advances the head: taking the first entry costs
 * O(1), not a move of the whole list. */

typedef struct {
    uint32_t head; /* ring index of the oldest entry */
    uint32_t n;    /* entries held */
    uint32_t cap;  /* ring size */
} gcommi_plist_t;

GCOMM_HD_INLINE gcommi_notif_t *gcommi_plist_at(gcommi_notif_t *ring, const gcommi_plist_t *l,
                                                uint32_t i)
{
    uint32_t k = l->head + i;
    return &ring[k >= l->cap ? k - l->cap : k];
}

/* Appends e; the caller has checked l->n < l->cap. */
GCOMM_HD_INLINE void gcommi_plist_push(gcommi_notif_t *ring, gcommi_plist_t *l,
                                       const gcommi_notif_t *e)
{
    *gcommi_plist_at(ring, l, l->n) = *e;
    l->n++;
}

/* Matching entries, counting at most `limit`. */
GCOMM_HD_INLINE uint32_t gcommi_plist_count(gcommi_notif_t *ring, const gcommi_plist_t *l,
                                            int32_t win, int32_t source, int32_t tag,
                                            uint32_t limit)
{
    uint32_t found = 0;
    for (uint32_t i = 0; i < l->n && found < limit; i++)
        if (gcommi_notif_matches(gcommi_plist_at(ring, l, i), win, source, tag)) found++;
    return found;
}

/* Removes the first `want` matching entries, keeping the order of the others; returns how many
 * were removed. */
GCOMM_HD_INLINE uint32_t gcommi_plist_take(gcommi_notif_t *ring, gcommi_plist_t *l, int32_t win,
                                           int32_t source, int32_t tag, uint32_t want)
{
    uint32_t taken = 0, last = 0;
    for (uint32_t i = 0; i < l->n && taken < want; i++)
        if (gcommi_notif_matches(gcommi_plist_at(ring, l, i), win, source, tag)) {
            taken++;
            last = i;
        }
    if (taken == 0) return 0;
    /* [0, last] holds exactly the `taken` entries to remove: move the others back, behind it */
    uint32_t w = last;
    for (uint32_t i = last; i-- > 0;) {
        gcommi_notif_t *e = gcommi_plist_at(ring, l, i);
        if (gcommi_notif_matches(e, win, source, tag)) continue;
        *gcommi_plist_at(ring, l, w) = *e;
        w--;
    }
    l->head += taken;
    if (l->head >= l->cap) l->head -= l->cap;
    l->n -= taken;
    return taken;
}

#endif /* GCOMM_DETAIL_NOTIF_H */
