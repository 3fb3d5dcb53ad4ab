/* Notification lanes and matching, written once for the device library and host code (and
 * unit-tested on the CPU, tests/rma/test_notif.c).
 *
 * A lane is a ring of `depth` 32-byte entries with many producers and one consumer (see rt.h).
 * Producer: reserve a slot, wait for credit, publish. Consumer: poll the entry at its read
 * position; an entry is valid when its seq equals position + 1, which no stale entry of an earlier
 * lap can hold. Matching runs over the rank's private pending list, in order of arrival, and removes the
 * entries it matches, keeping the order of the rest.
 *
 * Two kinds of entry. A *released* entry is word 0 alone, stored with a release after the data it
 * notifies of; the consumer acquires it (a fence after its relaxed poll). An *inline* entry
 * (a put of at most GCOMMI_INLINE_MAX bytes) carries the put's target offset and payload in words
 * 1-3 and is stored with relaxed stores only: no fence on either side, which is what a
 * notification's latency is made of (bench_rma_parts: 0.93 -> 0.56 us on one GPU, 2.36 -> 0.97
 * us between two). Every word carries the entry's sequence number, so the consumer knows when all
 * of them have arrived (each 64-bit word is single-copy atomic, the entry is not: NCCL's LL
 * protocol); it then writes the payload into its own window itself (rank_impl.h). */
#ifndef GCOMM_DETAIL_NOTIF_H
#define GCOMM_DETAIL_NOTIF_H

#include <stdint.h>

#include "gcomm/detail/atomic.h"
#include "gcomm/detail/hd.h"
#include "gcomm/detail/rt.h"

#define GCOMMI_ANY (-1) /* wildcard value of window, source and tag queries */

/* A notification is one 64-bit word, stored and loaded with one access, so a consumer never sees
 * half of it: seq (16 bits: lane slot + 1, modulo 2^16; a stale entry of the previous lap differs
 * by depth < 2^16), window (8, its top bit: inline entry), source rank (20), tag (20). */
#define GCOMMI_TAG_BITS 20
#define GCOMMI_SOURCE_BITS 20
#define GCOMMI_WIN_BITS 8
#define GCOMMI_TAG_MAX ((1 << GCOMMI_TAG_BITS) - 1)
#define GCOMMI_SOURCE_MAX ((1 << GCOMMI_SOURCE_BITS) - 1)
#define GCOMMI_DEPTH_MAX 32768
/* The window value of a slot that carries nothing (its operation failed after the slot was
 * reserved): consumers drop it. */
#define GCOMMI_WIN_VOID ((1 << GCOMMI_WIN_BITS) - 1)
/* Window ids are below 2 * 32 (rt.h): the top bit of the field marks an inline entry. */
#define GCOMMI_WIN_INLINE 0x80

/* The largest put whose payload travels inside its notification, and the largest target offset
 * an inline entry can carry (2^44 bytes: 16 TiB into the window). */
#define GCOMMI_INLINE_MAX 8
#define GCOMMI_INLINE_OFFSET_MAX ((1ull << 44) - 1)

/* The entry of `slot` in a lane's ring. */
GCOMM_HD_INLINE uint64_t *gcommi_lane_entry(uint64_t *ring, uint32_t depth, uint32_t slot)
{
    return ring + (size_t)(slot & (depth - 1)) * GCOMMI_ENTRY_WORDS;
}

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

/* Nonzero for an inline entry's notification word. */
GCOMM_HD_INLINE int gcommi_notif_inline(uint64_t w)
{
    const uint32_t win = (uint32_t)(w >> 40) & 0xff;
    return (win != GCOMMI_WIN_VOID) & ((win & GCOMMI_WIN_INLINE) != 0);
}

GCOMM_HD_INLINE void gcommi_notif_unpack(uint64_t w, gcommi_notif_t *out)
{
    const int32_t win = (int32_t)((w >> 40) & 0xff);
    out->seq = (uint32_t)(w >> 48);
    out->win = win == GCOMMI_WIN_VOID ? win : (win & ~GCOMMI_WIN_INLINE);
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
    gcommi_st_release64(gcommi_lane_entry(ring, depth, slot),
                        gcommi_notif_pack(slot, source, tag, win), sys);
}

/* An inline entry's words 1-3: the target offset (44 bits) and length (4 bits), then the
 * payload's low and high 4 bytes, each word with the entry's seq on top. */
GCOMM_HD_INLINE void gcommi_inline_pack(uint32_t slot, uint64_t offset, uint32_t len,
                                        uint64_t payload, uint64_t x[3])
{
    const uint64_t seq = gcommi_lane_seq(slot);
    x[0] = seq | (uint64_t)(len & 0xf) << 44 | (offset & GCOMMI_INLINE_OFFSET_MAX);
    x[1] = seq | (payload & 0xffffffffu);
    x[2] = seq | (payload >> 32);
}

/* Nonzero when the three words x of the inline entry at read position `next` have all arrived. */
GCOMM_HD_INLINE int gcommi_inline_ready(const uint64_t x[3], uint32_t next)
{
    /* bitwise: one branch for the caller, not one per word (each costs a predicate's latency
     * on thread 0's chain) */
    return gcommi_lane_published(x[0], next) & gcommi_lane_published(x[1], next) &
           gcommi_lane_published(x[2], next);
}

GCOMM_HD_INLINE void gcommi_inline_unpack(const uint64_t x[3], uint64_t *offset, uint32_t *len,
                                          uint64_t *payload)
{
    *offset = x[0] & GCOMMI_INLINE_OFFSET_MAX;
    *len = (uint32_t)(x[0] >> 44) & 0xf;
    *payload = (x[1] & 0xffffffffu) | (x[2] & 0xffffffffu) << 32;
}

/* Publishes an inline entry: a put of len <= GCOMMI_INLINE_MAX bytes (payload: its bytes, the
 * first in the low byte) at `offset` of the target's part of window `win`. Relaxed stores only:
 * words 2-3, then 0-1 (the order is for the common case, not relied on). */
GCOMM_HD_INLINE void gcommi_lane_publish_inline(uint64_t *ring, uint32_t depth, uint32_t slot,
                                                int32_t source, int32_t tag, int32_t win,
                                                uint64_t offset, uint32_t len, uint64_t payload,
                                                int sys)
{
    uint64_t *e = gcommi_lane_entry(ring, depth, slot), x[3];
    gcommi_inline_pack(slot, offset, len, payload, x);
    gcommi_st_relaxed64x2(e + 2, x[1], x[2], sys);
    gcommi_st_relaxed64x2(e, gcommi_notif_pack(slot, source, tag, win | GCOMMI_WIN_INLINE), x[0],
                          sys);
}

/* Loads a lane entry's four words with two relaxed 16-byte loads (one memory latency, not one
 * for the notification word and another for the inline words after it). One asm statement: as
 * two, the compiler may look at the first load's words (or move them) before it issues the
 * second, and then the second waits for the first. */
GCOMM_HD_INLINE void gcommi_lane_load(const uint64_t *e, uint64_t w[4], int sys)
{
#if defined(__CUDA_ARCH__)
    uint64_t a0, a1, a2, a3;
    if (sys)
        asm volatile("ld.relaxed.sys.v2.u64 {%0, %1}, [%4];\n\t"
                     "ld.relaxed.sys.v2.u64 {%2, %3}, [%4+16];"
                     : "=l"(a0), "=l"(a1), "=l"(a2), "=l"(a3) : "l"(e) : "memory");
    else
        asm volatile("ld.relaxed.gpu.v2.u64 {%0, %1}, [%4];\n\t"
                     "ld.relaxed.gpu.v2.u64 {%2, %3}, [%4+16];"
                     : "=l"(a0), "=l"(a1), "=l"(a2), "=l"(a3) : "l"(e) : "memory");
    w[0] = a0, w[1] = a1, w[2] = a2, w[3] = a3;
#else
    gcommi_ld_relaxed64x2(e, &w[0], &w[1], sys);
    gcommi_ld_relaxed64x2(e + 2, &w[2], &w[3], sys);
#endif
}

/* Decodes the inline entry `e` at read position `next` (its notification word has been seen):
 * w holds its four words as loaded with it; words that had not arrived yet (they were stored
 * beside the notification word and are on their way) are loaded again until they have. */
GCOMM_HD_INLINE void gcommi_lane_take_inline(const uint64_t *e, uint32_t next, uint64_t w[4],
                                             uint64_t *offset, uint32_t *len, uint64_t *payload,
                                             int sys)
{
    while (!gcommi_inline_ready(w + 1, next)) gcommi_lane_load(e, w, sys);
    gcommi_inline_unpack(w + 1, offset, len, payload);
}

/* Loads two lane entries at once: `own` (written by this GPU's producers: GPU scope) into w and
 * `peer` (written by another GPU: system scope) into pw, four relaxed 16-byte loads issued by one
 * asm statement. Written as two gcommi_lane_load calls, the compiler copied the first entry's
 * words to other registers before it issued the second entry's loads, so that every poll waited
 * for one memory latency after the other (SASS of the ping-pong kernel; a wait in a job of two
 * GPUs was 0.13 us slower than in a job of one, bench_rma on 2x H200). */
GCOMM_HD_INLINE void gcommi_lane_load_two(const uint64_t *own, uint64_t w[4], const uint64_t *peer,
                                          uint64_t pw[4])
{
#if defined(__CUDA_ARCH__)
    uint64_t a0, a1, a2, a3, b0, b1, b2, b3;
    asm volatile("ld.relaxed.sys.v2.u64 {%4, %5}, [%9];\n\t"
                 "ld.relaxed.sys.v2.u64 {%6, %7}, [%9+16];\n\t"
                 "ld.relaxed.gpu.v2.u64 {%0, %1}, [%8];\n\t"
                 "ld.relaxed.gpu.v2.u64 {%2, %3}, [%8+16];"
                 : "=l"(a0), "=l"(a1), "=l"(a2), "=l"(a3), "=l"(b0), "=l"(b1), "=l"(b2), "=l"(b3)
                 : "l"(own), "l"(peer)
                 : "memory");
    w[0] = a0, w[1] = a1, w[2] = a2, w[3] = a3;
    pw[0] = b0, pw[1] = b1, pw[2] = b2, pw[3] = b3;
#else
    gcommi_lane_load(peer, pw, 1);
    gcommi_lane_load(own, w, 0);
#endif
}

/* Loads the own lane's head entry whole (GPU scope, into w) and the notification words of the
 * heads of peer lanes (system scope, into pv), all in one asm statement, for a job of more than
 * two GPUs: GCOMMI_PEER_SLOTS_SMALL slots (up to 4 GPUs) or GCOMMI_PEER_SLOTS (up to 8). As a loop
 * of single loads, each load's result was moved to another register before the next load issued,
 * so that a poll waited for one memory latency per peer GPU (SASS of the ping-pong kernel); one
 * statement leaves the compiler nothing to put between them. */
#define GCOMMI_PEER_SLOTS 7
#define GCOMMI_PEER_SLOTS_SMALL 3
GCOMM_HD_INLINE void gcommi_lane_load_peers(const uint64_t *own, uint64_t w[4],
                                            const uint64_t *const p[GCOMMI_PEER_SLOTS],
                                            uint64_t pv[GCOMMI_PEER_SLOTS], int slots)
{
#if defined(__CUDA_ARCH__)
    uint64_t a0, a1, a2, a3;
    if (slots == GCOMMI_PEER_SLOTS_SMALL) {
        asm volatile("ld.relaxed.gpu.v2.u64 {%0, %1}, [%7];\n\t"
                     "ld.relaxed.gpu.v2.u64 {%2, %3}, [%7+16];\n\t"
                     "ld.relaxed.sys.u64 %4, [%8];\n\t"
                     "ld.relaxed.sys.u64 %5, [%9];\n\t"
                     "ld.relaxed.sys.u64 %6, [%10];"
                     : "=l"(a0), "=l"(a1), "=l"(a2), "=l"(a3), "=l"(pv[0]), "=l"(pv[1]),
                       "=l"(pv[2])
                     : "l"(own), "l"(p[0]), "l"(p[1]), "l"(p[2])
                     : "memory");
    } else {
        asm volatile("ld.relaxed.gpu.v2.u64 {%0, %1}, [%11];\n\t"
                     "ld.relaxed.gpu.v2.u64 {%2, %3}, [%11+16];\n\t"
                     "ld.relaxed.sys.u64 %4, [%12];\n\t"
                     "ld.relaxed.sys.u64 %5, [%13];\n\t"
                     "ld.relaxed.sys.u64 %6, [%14];\n\t"
                     "ld.relaxed.sys.u64 %7, [%15];\n\t"
                     "ld.relaxed.sys.u64 %8, [%16];\n\t"
                     "ld.relaxed.sys.u64 %9, [%17];\n\t"
                     "ld.relaxed.sys.u64 %10, [%18];"
                     : "=l"(a0), "=l"(a1), "=l"(a2), "=l"(a3), "=l"(pv[0]), "=l"(pv[1]),
                       "=l"(pv[2]), "=l"(pv[3]), "=l"(pv[4]), "=l"(pv[5]), "=l"(pv[6])
                     : "l"(own), "l"(p[0]), "l"(p[1]), "l"(p[2]), "l"(p[3]), "l"(p[4]),
                       "l"(p[5]), "l"(p[6])
                     : "memory");
    }
    w[0] = a0, w[1] = a1, w[2] = a2, w[3] = a3;
#else
    for (int k = 0; k < slots; k++) pv[k] = gcommi_ld_relaxed64(p[k], 1);
    gcommi_lane_load(own, w, 0);
#endif
}

/* ---- consumer ---- */

/* The entry at read position `next`, its notification word already loaded (relaxed) as w:
 * 0 when it has not been published; else *out is filled and the result is 1 for a released
 * entry, which this acquires (a fence: what the producer wrote before its release is now
 * visible to the caller and, after a block barrier, to its block; `sys` when the producers are
 * on another GPU or the host), or 2 for an inline entry, which needs no fence: the caller takes
 * its words (gcommi_lane_take_inline). */
GCOMM_HD_INLINE int gcommi_lane_check(uint64_t w, uint32_t next, gcommi_notif_t *out, int sys)
{
    if (!gcommi_lane_published(w, next)) return 0;
    gcommi_notif_unpack(w, out);
    if (gcommi_notif_inline(w)) return 2;
    gcommi_fence_acquire(sys);
    return 1;
}

/* Takes the entry at read position `next` when it has been published (see gcommi_lane_check);
 * its words go to w. One pair of relaxed loads, so a miss costs one memory latency. */
GCOMM_HD_INLINE int gcommi_lane_poll(uint64_t *ring, uint32_t depth, uint32_t next,
                                     gcommi_notif_t *out, uint64_t w[4], int sys)
{
    gcommi_lane_load(gcommi_lane_entry(ring, depth, next), w, sys);
    return gcommi_lane_check(w[0], next, out, sys);
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
    /* bitwise, no short circuit: the compiler combines the predicates and branches once */
    return ((win == GCOMMI_ANY) | (e->win == win)) &
           ((source == GCOMMI_ANY) | (e->source == source)) &
           ((tag == GCOMMI_ANY) | (e->tag == tag));
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
