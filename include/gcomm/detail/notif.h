/* Notification lanes and matching, written once for the device library and host code (and
 * unit-tested on the CPU, tests/rma/test_notif.c).
 *
 * A lane is a ring of `depth` entries with many producers and one consumer (see rt.h). Producer:
 * reserve a slot, wait for credit, publish. Consumer: poll the entry at its read position; an
 * entry is valid when its seq equals position + 1, which no stale entry of an earlier lap can
 * hold. Matching runs over the rank's private pending list, in order of arrival, and removes the
 * entries it matches, keeping the order of the rest. */
#ifndef GCOMM_DETAIL_NOTIF_H
#define GCOMM_DETAIL_NOTIF_H

#include <stdint.h>

#include "gcomm/detail/atomic.h"
#include "gcomm/detail/hd.h"
#include "gcomm/detail/rt.h"

#define GCOMMI_ANY (-1) /* wildcard value of window, source and tag queries */

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
 * invalidation on every notification. */
GCOMM_HD_INLINE int gcommi_lane_has_credit(const uint32_t *consumed, uint32_t slot, uint32_t depth,
                                           int sys)
{
    return (uint32_t)(slot - gcommi_ld_relaxed(consumed, sys)) < depth;
}

/* Writes the entry of `slot` and publishes it. The release covers every write the calling
 * thread has observed or made before (the payload, after the block's barrier): `sys` when the
 * consumer is on another GPU or the host, else the cheaper GPU scope. */
GCOMM_HD_INLINE void gcommi_lane_publish(gcommi_notif_t *ring, uint32_t depth, uint32_t slot,
                                         int32_t source, int32_t tag, int32_t win, int sys)
{
    gcommi_notif_t *e = &ring[slot & (depth - 1)];
    gcommi_st_relaxed_sys((uint32_t *)&e->source, (uint32_t)source);
    gcommi_st_relaxed_sys((uint32_t *)&e->tag, (uint32_t)tag);
    gcommi_st_relaxed_sys((uint32_t *)&e->win, (uint32_t)win);
    if (sys)
        gcommi_st_release_sys(&e->seq, slot + 1);
    else
        gcommi_st_release_gpu(&e->seq, slot + 1);
}

/* ---- consumer ---- */

/* Takes the entry at read position `next` when it has been published: returns 1 and fills *out,
 * else 0. The acquire (at system scope when the producers are on another GPU or the host) makes
 * the payload published with the entry visible to the caller (and, after a block barrier, to its
 * whole block). */
GCOMM_HD_INLINE int gcommi_lane_poll(gcommi_notif_t *ring, uint32_t depth, uint32_t next,
                                     gcommi_notif_t *out, int sys)
{
    gcommi_notif_t *e = &ring[next & (depth - 1)];
    /* poll relaxed (a miss costs one cache-bypassing load), acquire by a fence on a hit */
    if (gcommi_ld_relaxed(&e->seq, sys) != next + 1) return 0;
    gcommi_fence(sys);
    out->seq = next + 1;
    out->source = (int32_t)gcommi_ld_relaxed_sys((const uint32_t *)&e->source);
    out->tag = (int32_t)gcommi_ld_relaxed_sys((const uint32_t *)&e->tag);
    out->win = (int32_t)gcommi_ld_relaxed_sys((const uint32_t *)&e->win);
    return 1;
}

/* Returns credits to the producers of a lane: `next` entries consumed (a store into the source's
 * memory). Consumers return them in batches (see gcommi_lane_credit_due): a release at system
 * scope costs about a microsecond, too much to pay on every notification. */
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

/* Number of entries of list[0..n) matching the query, counting at most `limit`. */
GCOMM_HD_INLINE uint32_t gcommi_notif_count(const gcommi_notif_t *list, uint32_t n, int32_t win,
                                            int32_t source, int32_t tag, uint32_t limit)
{
    uint32_t found = 0;
    for (uint32_t i = 0; i < n && found < limit; i++)
        if (gcommi_notif_matches(&list[i], win, source, tag)) found++;
    return found;
}

/* Removes the first `want` matching entries (in list order) from list[0..*n), keeping the order
 * of the others; returns how many were removed (fewer than want when fewer match). */
GCOMM_HD_INLINE uint32_t gcommi_notif_take(gcommi_notif_t *list, uint32_t *n, int32_t win,
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

#endif /* GCOMM_DETAIL_NOTIF_H */
