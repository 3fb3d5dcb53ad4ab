/* The command ring of the proxy (issue 5): many producers (GPU blocks, host rank threads), one
 * consumer (the proxy thread of the process). Written once for device and host code and
 * unit-tested on the CPU (tests/rma/test_proxy_queue.c).
 *
 * It works like a notification lane (notif.h), with 64-byte records instead of 64-bit entries:
 *   producer  reserve a slot (fetch-and-add on `tail`), wait until the consumer has freed it
 *             (the slot is fewer than `depth` ahead of `consumed`), write the record's body,
 *             then publish it with a release store of its sequence word, written LAST;
 *   consumer  poll the sequence word of the slot at its read position (acquire) until it reads
 *             position + 1, copy the record out, and return credits (its read position, into
 *             `consumed`) in batches of half a ring.
 * A record whose sequence word is current was written completely before it (release/acquire), so
 * the consumer never sees half a record; a record of the previous lap carries position + 1 - depth
 * and never looks current (gcommi_pq_init writes such values into a fresh ring, so no slot is
 * mistaken for published, at any starting position and across the 32-bit wrap).
 *
 * One record is one 64-byte line: producers writing neighbouring slots never share a line, and a
 * GPU writes a record into pinned host memory in a few full-width stores. */
#ifndef GCOMM_DETAIL_PROXY_QUEUE_H
#define GCOMM_DETAIL_PROXY_QUEUE_H

#include <stdint.h>

#include "gcomm/detail/atomic.h"
#include "gcomm/detail/hd.h"

/* Commands. A producer that reserved a slot and then cannot use it (its operation failed) still
 * publishes the slot, as a NOP, because the consumer reads the ring in order; a NOP carries no
 * id (the rank does not count it). */
enum {
    GCOMMI_PQ_NOP = 0,
    GCOMMI_PQ_PUT,     /* bytes from origin (or inline data) to (target, win, offset) */
    GCOMMI_PQ_GET,     /* bytes from (target, win, offset) to origin */
    GCOMMI_PQ_NOTIFY,  /* a notification (target, win, tag) without data */
    GCOMMI_PQ_FLUSH,   /* done once every earlier command of the source is done; later commands
                        * of the source start only then (an ordering point, MPI_Win_flush-like) */
    GCOMMI_PQ_BARRIER, /* a FLUSH that also waits until every process's proxy has reached its
                        * BARRIER (each process posts one per world barrier) */
    GCOMMI_PQ_NOPS
};

#define GCOMMI_PQ_F_NOTIFY 0x1u /* PUT: notify the target after the data; GET: notify the target
                                 * (whose memory was read) once the data has been read */
#define GCOMMI_PQ_F_INLINE 0x2u /* PUT: the payload is in the record (data[], bytes <= INLINE_MAX) */
#define GCOMMI_PQ_INLINE_MAX 24

/* One command. `id` numbers the commands of one source rank 1, 2, 3, ... (after the value its
 * completion counter starts at) in the order it posts them: the rank's own counter, so it knows
 * which id to wait for. The proxy checks the sequence and completes ids in that order (see
 * gcommi_pq_done). */
typedef struct __attribute__((aligned(64))) {
    uint64_t offset; /* PUT/GET: byte offset in the target's window */
    uint64_t bytes;  /* PUT/GET: length */
    union {
        uint64_t origin; /* PUT: where the data is; GET: where it goes (origin process address) */
        unsigned char data[GCOMMI_PQ_INLINE_MAX]; /* PUT with GCOMMI_PQ_F_INLINE */
    } u;
    int32_t source;  /* world rank that posts it */
    int32_t target;  /* world rank whose window is accessed / who is notified */
    int32_t tag;     /* notification tag */
    uint32_t id;     /* per-source command number (also the flush id) */
    uint8_t op;      /* GCOMMI_PQ_* */
    uint8_t flags;   /* GCOMMI_PQ_F_* */
    uint16_t win;    /* window id */
    uint32_t seq;    /* slot + 1: written last, with a release store */
} gcommi_pq_cmd_t;

/* 64 bytes exactly (a C11 _Static_assert is not C++; this works in both). */
typedef char gcommi_pq_cmd_size_check[sizeof(gcommi_pq_cmd_t) == 64 ? 1 : -1];

/* A ring as producers and the consumer address it. The three parts may live in different
 * memories: `ring` where the consumer polls cheaply (pinned host memory), `tail` where producers'
 * atomics are cheap (a GPU's own memory for its blocks), `consumed` where producers' loads are
 * cheap (it is written rarely, by the consumer). Device-visible: plain fields, no pointers to
 * host-only state. */
typedef struct {
    gcommi_pq_cmd_t *ring; /* depth records */
    uint32_t *tail;        /* slots reserved (producers) */
    uint32_t *consumed;    /* slots consumed (consumer -> producers) */
    uint32_t depth;        /* a power of two, < 2^31 */
    int32_t sys;           /* reservations at system scope: producers on several GPUs, or on a
                            * GPU and the host; else GPU scope (one GPU's blocks) or host */
} gcommi_pq_t;

/* Prepares a ring before any producer or consumer uses it, with counters starting at `start`
 * (the consumer's first read position): every slot looks published one lap ago. */
GCOMM_HD_INLINE void gcommi_pq_init(gcommi_pq_t *q, uint32_t start)
{
    for (uint32_t i = 0; i < q->depth; i++) {
        uint32_t pos = start + i;
        q->ring[pos & (q->depth - 1)].seq = pos + 1 - q->depth;
    }
    *q->tail = start;
    *q->consumed = start;
}

/* ---- producer ---- */

/* Reserves the next slot. */
GCOMM_HD_INLINE uint32_t gcommi_pq_reserve(gcommi_pq_t *q)
{
    return q->sys ? gcommi_fetch_add_sys(q->tail, 1) : gcommi_fetch_add_gpu(q->tail, 1);
}

/* Nonzero when `slot` may be written: the consumer is fewer than depth slots behind. An acquire
 * load orders our writes of the record after the consumer's reads of the record that was there
 * (which precede its release of the credit). notif.h gets away with a relaxed load because its
 * whole entry is one atomic word; a record is written with plain stores, so without the acquire
 * C11 would call the overwrite a race. */
GCOMM_HD_INLINE int gcommi_pq_has_credit(const gcommi_pq_t *q, uint32_t slot)
{
    return (uint32_t)(slot - gcommi_ld_acquire_sys(q->consumed)) < q->depth;
}

/* Writes `c` (everything but its seq) into `slot` and publishes it. The release store covers the
 * record's body and every write the calling thread made or observed before (the origin data of a
 * put, which the proxy reads later): system scope, because the consumer is a host thread. Fields
 * are stored one by one, as the wide words they are, not by a byte-wise copy (a GPU writing
 * pinned host memory pays per store). */
GCOMM_HD_INLINE void gcommi_pq_publish(gcommi_pq_t *q, uint32_t slot, const gcommi_pq_cmd_t *c)
{
    gcommi_pq_cmd_t *r = &q->ring[slot & (q->depth - 1)];
    r->offset = c->offset;
    r->bytes = c->bytes;
    r->u = c->u;
    r->source = c->source;
    r->target = c->target;
    r->tag = c->tag;
    r->id = c->id;
    r->op = c->op;
    r->flags = c->flags;
    r->win = c->win;
    gcommi_st_release_sys(&r->seq, slot + 1);
}

/* Nonzero when command `id` of a source is done: every command of the source up to `id` has
 * completed (for puts and notifications: delivered at the target and acknowledged, so the origin
 * buffer may be reused and the data is at the target; for gets: the data is in the origin
 * buffer). `done` is the source's completion counter, which the proxy advances with a release
 * store; the acquire makes the results of those commands (data of a get) visible to the caller. */
GCOMM_HD_INLINE int gcommi_pq_done(const uint32_t *done, uint32_t id)
{
    return (int32_t)(gcommi_ld_acquire_sys(done) - id) >= 0;
}

/* ---- consumer ---- */

/* Copies the record at read position `next` into *out and returns 1 once it is published, else
 * returns 0. The record stays in the ring (its slot is not reused) until the credit for it is
 * returned. The sequence word is read with an acquire load, which orders the reads of the body
 * after it: on the host (the consumer is the proxy thread) it costs what a relaxed load costs,
 * and unlike a relaxed load plus a fence, ThreadSanitizer understands it. */
GCOMM_HD_INLINE int gcommi_pq_poll(const gcommi_pq_t *q, uint32_t next, gcommi_pq_cmd_t *out)
{
    const gcommi_pq_cmd_t *r = &q->ring[next & (q->depth - 1)];
    if (gcommi_ld_acquire_sys(&r->seq) != next + 1) return 0;
    out->offset = r->offset;
    out->bytes = r->bytes;
    out->u = r->u;
    out->source = r->source;
    out->target = r->target;
    out->tag = r->tag;
    out->id = r->id;
    out->op = r->op;
    out->flags = r->flags;
    out->win = r->win;
    out->seq = next + 1;
    return 1;
}

/* Credits are due when half a ring has been consumed since the last return, or, when the consumer
 * found nothing new (idle), any. As for lanes: a producer waiting for credit has reserved slots a
 * whole ring ahead of the last return, so the consumer drains past half a ring and returns them. */
GCOMM_HD_INLINE int gcommi_pq_credit_due(uint32_t next, uint32_t returned, uint32_t depth, int idle)
{
    uint32_t d = next - returned;
    return idle ? d != 0 : d >= depth / 2;
}

/* Returns credits: `next` slots consumed. A release store, so the reads of the consumed records
 * happen before any producer overwrites them. */
GCOMM_HD_INLINE void gcommi_pq_return_credit(gcommi_pq_t *q, uint32_t next)
{
    gcommi_st_release_sys(q->consumed, next);
}

#endif /* GCOMM_DETAIL_PROXY_QUEUE_H */
