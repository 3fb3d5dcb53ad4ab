/* The proxy's progress thread and its protocol (see proxy.h). Sections: wire format and state,
 * command lifecycle (per-source order, fences, completion counters), outgoing messages (small
 * ones and chunked streams), incoming messages, the stop sequence, reports, the thread and the
 * API.
 *
 * Everything below the API runs on the proxy thread alone, so the state needs no lock; other
 * threads see it only through the completion counters (release stores), the per-source error
 * slots (written before the counter moves) and reports the thread writes on request. */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "common/timer.h"
#include "rma/proxy.h"

/* ---- wire format ----
 *
 * Every message starts with a 64-byte header. Small messages (<= SMALL_BYTES: notifications,
 * get requests, acknowledgements, puts and get replies of <= SMALL_DATA bytes) travel on the small
 * channel into many small receive buffers; larger puts and get replies travel as pieces of at
 * most `chunk` bytes on the bulk channel, each piece self-describing ([pos, pos + len) of the
 * operation), so pieces may arrive in any order and several transfers may interleave. */
#define HDR_BYTES 64
#define SMALL_BYTES 256
#define SMALL_DATA (SMALL_BYTES - HDR_BYTES)
#define SMALL_RECVS 64  /* posted small receives */
#define SMALL_SENDS 256 /* small send buffers */
#define RING_BATCH 64   /* commands taken from one ring before the next ring's turn */
#define SPIN_NS 50000ull             /* idle: poll this long before sleeping (a ping-pong's
                                      * round trip through two proxies stays within it) */
#define SLEEP_IDLE_MAX_NS 500000ull  /* idle with nothing in flight: sleep up to 500 us (also
                                      * how late a large message's first piece may be noticed:
                                      * MPI moves it only while we call into it) */
#define SLEEP_BUSY_MAX_NS 50000ull   /* waiting for peers: sleep up to 50 us */
#define REPORT_OPS 24                /* commands listed in a report */

enum { MSG_PUT = 1, MSG_NOTIFY, MSG_GET_REQ, MSG_GET_DATA, MSG_ACK, MSG_ABORT, MSG_KINDS };

/* The handle an ABORT message is acknowledged with (no command has it: indices stay < 65536). */
#define ABORT_XFER 0xffffffffu

typedef struct {
    uint8_t kind;
    uint8_t flags;   /* GCOMMI_PQ_F_NOTIFY */
    uint16_t win;
    int32_t status;  /* a failure met while reading the data (the piece then carries none) */
    int32_t source;  /* ranks of the command */
    int32_t target;
    int32_t tag;
    uint32_t xfer;   /* the origin's command handle: pool index | generation << 16 */
    uint32_t count;  /* MSG_ACK: entries after the header */
    uint32_t pad;
    uint64_t offset; /* window offset of the whole operation */
    uint64_t total;  /* bytes of the whole operation */
    uint64_t pos;    /* this piece: [pos, pos + len) of the operation */
    uint64_t len;
} msg_hdr_t;
_Static_assert(sizeof(msg_hdr_t) == HDR_BYTES, "the header is 64 bytes");

/* One acknowledgement: the command and how it ended at the target. */
typedef struct {
    uint32_t xfer;
    int32_t status;
} ack_t;
#define ACKS_MAX (SMALL_DATA / sizeof(ack_t))

/* ---- state ---- */

/* What a transport completion belongs to: the first member of each such object. */
enum { CTX_RECV = 1, CTX_SEND, CTX_OP_BARRIER, CTX_STOP_BARRIER };
typedef struct {
    int kind;
} ctx_t;

typedef struct buf_s {
    ctx_t ctx;
    int chan;
    size_t cap;
    unsigned char *mem; /* header, then data */
    struct buf_s *next_free; /* a free list, or a queue of buffers waiting for their copy */
    /* while an asynchronous copy runs (local ops' *_start): a received put's piece that waits for
     * its delivery before the buffer is posted again, or a message to send once its data is in */
    uint64_t ticket;
    int notified; /* ... a received notification (with its put) whose step is that copy */
    int peer;
    size_t len;
} buf_t;

/* Buffers waiting for their copies, oldest first. */
typedef struct {
    buf_t *head, *tail;
    int n;
} bufq_t;

/* An outgoing message stream: a command's message(s) or a get reply. */
enum { SRC_NONE, SRC_INLINE, SRC_ORIGIN, SRC_WINDOW };
typedef struct job_s {
    struct job_s *next;
    int peer;
    int is_reply;
    int data;           /* SRC_*: where the bytes come from */
    int32_t status;     /* a failure: what is left is sent as failed, without data */
    uint64_t pos;       /* next byte to send */
    uint64_t send_total;
    const unsigned char *inline_data;
    uint64_t origin;
    msg_hdr_t hdr;      /* template of every message */
} job_t;

typedef struct reply_s {
    job_t job;
    struct reply_s *next_free;
} reply_t;

enum { OP_FREE = 0, OP_BLOCKED, OP_SENDING, OP_WAIT_ACK, OP_WAIT_DATA, OP_WAIT_BARRIER, OP_DONE };
static const char *const op_state_words[] = {
    "free", "held behind an earlier flush or barrier of its rank", "sending",
    "waiting for the acknowledgement", "waiting for the data",
    "waiting in the barrier for the other processes",
    "done, waiting for earlier commands of its rank"};
static const char *const op_words[] = {"nop", "put", "get", "notify", "flush", "barrier"};

typedef struct op_s {
    ctx_t ctx;             /* CTX_OP_BARRIER while in a barrier */
    uint16_t gen;          /* changes when the slot is reused: stale handles are caught */
    uint8_t state;
    int32_t status;
    int peer;              /* process of the target */
    uint64_t got;          /* get: bytes arrived */
    uint64_t t_state;      /* when the state last changed */
    struct op_s *next_src; /* the source's list, in id order */
    struct op_s *next_free;
    job_t job;
    gcommi_pq_cmd_t cmd;
} op_t;

/* A put arriving in several pieces. */
typedef struct {
    int peer;
    int32_t status;
    uint64_t got;
    uint64_t t0;
    msg_hdr_t hdr;
} incoming_t;

typedef struct {
    ack_t *v;
    uint32_t n, cap;
} ackq_t;

/* Per source rank: its commands in id order, of which the head is the oldest not yet counted
 * done, and the first failure a wait has not returned yet (err_code written last, release). */
typedef struct {
    op_t *head, *tail;
    uint32_t next_id;
    uint32_t nfence; /* FLUSH/BARRIER commands in the list */
    int32_t err_code;
    uint32_t err_id;
    uint8_t err_op;
    uint16_t err_win;
    int32_t err_target;
    uint64_t err_offset, err_bytes;
} source_t;

enum { PH_RUN, PH_DRAIN, PH_BARRIER, PH_BARRIER_DONE, PH_CANCEL, PH_FINISHED };
static const char *const phase_words[] = {
    "running", "stopping: carrying out its last commands",
    "stopping: in the final barrier, waiting for the other processes' proxies",
    "stopping: barrier done, completing its last sends", "stopping: cancelling its receives",
    "stopped"};

struct gcommi_proxy_s {
    gcommi_proxy_params_t prm;
    gcommi_proxy_transport_t *t;
    int32_t *proc_of_rank;
    uint32_t *done, *own_done;
    size_t chunk;
    int bounce;
    uint32_t nops;
    /* rings */
    uint32_t next[GCOMMI_PROXY_MAX_RINGS], returned[GCOMMI_PROXY_MAX_RINGS];
    int ring_turn;
    /* commands */
    op_t *ops, *free_ops;
    uint32_t ops_used;
    source_t *src;
    /* buffers */
    unsigned char *bufmem;
    size_t bufbytes;
    buf_t *bufs, *free_small, *free_bulk;
    int nbufs, sends_out, recvs_posted;
    job_t *small_q, *small_q_tail, *bulk_q, *bulk_q_tail;
    bufq_t filling; /* send buffers whose data is being copied in (read_origin_start) */
    bufq_t held;    /* receive buffers whose data is being copied out (deliver_put_start) */
    reply_t *free_replies;
    void **reply_blocks;
    int nreply_blocks;
    incoming_t *in;
    size_t nin, capin;
    ackq_t *acks;
    uint32_t acks_pending;
    /* stop */
    int phase;
    ctx_t stop_ctx;
    uint64_t stop_t0;
    /* shared with other threads (atomics) */
    uint32_t stop_req, abort_req, running;
    int32_t fatal;
    char fatal_detail[400];
    const char *cb_name; /* the delivery callback the thread is in, for reports */
    uint64_t cb_t0;
    uint32_t report_req, report_done;
    /* the launch's stop between processes: sent once, acknowledged by every other process
     * before the final barrier (so that it never arrives after it); applied once */
    int abort_sent, abort_applied;
    uint32_t abort_acks;
    int report_source;
    char report[4096];
    pthread_mutex_t report_lock;
    pthread_t thread;
    int started, joined;
    uint64_t stat_cmds, stat_msgs_in, stat_msgs_out;
};

#define LD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static int is_fence(const op_t *op)
{
    return op->cmd.op == GCOMMI_PQ_FLUSH || op->cmd.op == GCOMMI_PQ_BARRIER;
}

static int is_local_rank(const gcommi_proxy_t *p, int32_t r)
{
    return r >= 0 && r < p->prm.nranks && p->proc_of_rank[r] == p->t->me;
}

static void set_state(op_t *op, int state)
{
    op->state = (uint8_t)state;
    op->t_state = gcommi_time_ns();
}

/* The proxy cannot go on (transport failure, protocol violation): the first failure is kept,
 * every wait returns it, stop ends the thread at once. */
static void fail(gcommi_proxy_t *p, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(gcommi_proxy_t *p, int code, const char *fmt, ...)
{
    if (LD(&p->fatal)) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->fatal_detail, sizeof(p->fatal_detail), fmt, ap);
    va_end(ap);
    GCOMM_LOG_ERROR("proxy", "process %d: %s", p->t->me, p->fatal_detail);
    ST(&p->fatal, code);
}

/* Delivery callbacks are the caller's code: the thread names the one it is in, so that a report
 * asked while it hangs there says so. */
static void cb_enter(gcommi_proxy_t *p, const char *name)
{
    __atomic_store_n(&p->cb_t0, gcommi_time_ns(), __ATOMIC_RELAXED);
    __atomic_store_n(&p->cb_name, name, __ATOMIC_RELAXED);
}

static int cb_leave(gcommi_proxy_t *p, int rc)
{
    __atomic_store_n(&p->cb_name, (const char *)NULL, __ATOMIC_RELAXED);
    return rc;
}
#define CALLBACK(p, name, call) (cb_enter((p), (name)), cb_leave((p), (call)))

/* ---- command lifecycle ----
 *
 * A source's commands form a list in id order. Commands start when taken from the ring unless an
 * unfinished fence (FLUSH/BARRIER) precedes them; a fence starts when it reaches the head (every
 * earlier command done). The completion counter advances over the done commands at the head, so
 * it always names a prefix of the source's commands. */

static void start_op(gcommi_proxy_t *p, op_t *op);

static void pop_head(gcommi_proxy_t *p, source_t *s, int32_t source)
{
    op_t *op = s->head;
    s->head = op->next_src;
    if (!s->head) s->tail = NULL;
    if (op->status && !LD(&s->err_code)) {
        /* the waiter clears err_code only after copying these, and we write them only while it
         * is clear, so the two never overlap */
        s->err_id = op->cmd.id;
        s->err_op = op->cmd.op;
        s->err_win = op->cmd.win;
        s->err_target = op->cmd.target;
        s->err_offset = op->cmd.offset;
        s->err_bytes = op->cmd.bytes;
        ST(&s->err_code, op->status);
        /* a GPU producer's copy, read once the counter has passed the command */
        if (p->prm.errs && !gcommi_ld_acquire_sys((const uint32_t *)&p->prm.errs[source]))
            gcommi_st_release_sys((uint32_t *)&p->prm.errs[source], (uint32_t)op->status);
    }
    gcommi_st_release_sys(&p->done[source], op->cmd.id);
    op->state = OP_FREE;
    op->gen++;
    op->next_free = p->free_ops;
    p->free_ops = op;
    p->ops_used--;
}

static void source_advance(gcommi_proxy_t *p, int32_t source)
{
    source_t *s = &p->src[source];
    for (;;) {
        op_t *h = s->head;
        if (!h) return;
        if (h->state == OP_DONE) {
            int fence = is_fence(h);
            pop_head(p, s, source);
            if (fence) {
                s->nfence--;
                /* the commands held behind it start, up to the next fence */
                for (op_t *op = s->head; op && !is_fence(op); op = op->next_src) start_op(p, op);
            }
            continue;
        }
        if (is_fence(h) && h->state == OP_BLOCKED) {
            start_op(p, h);
            continue;
        }
        return;
    }
}

static void finish_op(gcommi_proxy_t *p, op_t *op, int32_t status)
{
    if (status && !op->status) op->status = status;
    set_state(op, OP_DONE);
    source_advance(p, op->cmd.source);
}

static void queue_job(job_t **head, job_t **tail, job_t *j)
{
    j->next = NULL;
    if (*tail) (*tail)->next = j;
    else *head = j;
    *tail = j;
}

static void enqueue(gcommi_proxy_t *p, job_t *j)
{
    if (j->send_total > SMALL_DATA) queue_job(&p->bulk_q, &p->bulk_q_tail, j);
    else queue_job(&p->small_q, &p->small_q_tail, j);
}

/* Starts a command: checks what the origin can check, then queues its message(s) or, for
 * fences, completes or joins the barrier. Never calls finish_op (its callers advance the source),
 * so no recursion. */
static void start_op(gcommi_proxy_t *p, op_t *op)
{
    const gcommi_pq_cmd_t *c = &op->cmd;
    if (c->op == GCOMMI_PQ_FLUSH) {
        set_state(op, OP_DONE);
        return;
    }
    if (c->op == GCOMMI_PQ_BARRIER) {
        op->ctx.kind = CTX_OP_BARRIER;
        int rc = p->t->ibarrier(p->t, &op->ctx);
        if (rc) {
            fail(p, rc, "barrier of rank %d (command %u) could not start", c->source, c->id);
            op->status = rc;
            set_state(op, OP_DONE);
            return;
        }
        set_state(op, OP_WAIT_BARRIER);
        return;
    }
    int32_t st = GCOMM_SUCCESS;
    if (c->target < 0 || c->target >= p->prm.nranks) st = GCOMM_ERR_RANK;
    else if ((c->flags & GCOMMI_PQ_F_INLINE) && (c->op != GCOMMI_PQ_PUT ||
                                                 c->bytes > GCOMMI_PQ_INLINE_MAX))
        st = GCOMM_ERR_ARG;
    else if (c->op != GCOMMI_PQ_NOTIFY &&
             (c->bytes > (uint64_t)INT64_MAX || c->offset > (uint64_t)INT64_MAX - c->bytes))
        st = GCOMM_ERR_OVERFLOW;
    if (st) {
        op->status = st;
        set_state(op, OP_DONE);
        return;
    }
    job_t *j = &op->job;
    memset(j, 0, sizeof(*j));
    op->peer = j->peer = p->proc_of_rank[c->target];
    op->got = 0;
    j->hdr.kind = c->op == GCOMMI_PQ_PUT ? MSG_PUT : c->op == GCOMMI_PQ_GET ? MSG_GET_REQ : MSG_NOTIFY;
    j->hdr.flags = c->flags & GCOMMI_PQ_F_NOTIFY;
    j->hdr.win = c->win;
    j->hdr.source = c->source;
    j->hdr.target = c->target;
    j->hdr.tag = c->tag;
    j->hdr.xfer = (uint32_t)(op - p->ops) | (uint32_t)op->gen << 16;
    j->hdr.offset = c->offset;
    j->hdr.total = c->op == GCOMMI_PQ_NOTIFY ? 0 : c->bytes;
    if (c->op == GCOMMI_PQ_PUT) {
        j->send_total = c->bytes;
        j->data = (c->flags & GCOMMI_PQ_F_INLINE) ? SRC_INLINE : SRC_ORIGIN;
        j->inline_data = c->u.data;
        j->origin = c->u.origin;
    }
    set_state(op, OP_SENDING);
    enqueue(p, j);
}

/* Takes one command from a ring. */
static void accept_cmd(gcommi_proxy_t *p, int ring, const gcommi_pq_cmd_t *c)
{
    if (c->op == GCOMMI_PQ_NOP) return; /* a slot its producer gave up */
    if (!is_local_rank(p, c->source) || c->op >= GCOMMI_PQ_NOPS) {
        fail(p, GCOMM_ERR_INTERNAL, "ring %d position %u: command %u from rank %d is not from "
             "a rank of this process, or its operation %u is unknown", ring, c->seq - 1, c->id,
             c->source, c->op);
        return;
    }
    source_t *s = &p->src[c->source];
    if (c->id != s->next_id) {
        fail(p, GCOMM_ERR_INTERNAL, "rank %d posted command id %u where %u was due (a command "
             "was lost, repeated or numbered wrongly)", c->source, c->id, s->next_id);
        return;
    }
    s->next_id++;
    op_t *op = p->free_ops;
    p->free_ops = op->next_free;
    p->ops_used++;
    op->cmd = *c;
    op->status = GCOMM_SUCCESS;
    op->next_src = NULL;
    if (s->tail) s->tail->next_src = op;
    else s->head = op;
    s->tail = op;
    p->stat_cmds++;
    if (is_fence(op)) {
        s->nfence++;
        set_state(op, OP_BLOCKED);
    } else if (s->nfence) {
        set_state(op, OP_BLOCKED);
    } else {
        start_op(p, op);
    }
    source_advance(p, c->source);
}

static int consume_rings(gcommi_proxy_t *p)
{
    int work = 0;
    for (int k = 0; k < p->prm.nrings; k++) {
        int r = (p->ring_turn + k) % p->prm.nrings;
        gcommi_pq_t *q = &p->prm.rings[r];
        uint32_t first = p->next[r];
        gcommi_pq_cmd_t c;
        while (p->free_ops && p->next[r] - first < RING_BATCH && gcommi_pq_poll(q, p->next[r], &c)) {
            p->next[r]++;
            accept_cmd(p, r, &c);
        }
        if (gcommi_pq_credit_due(p->next[r], p->returned[r], q->depth, p->next[r] == first)) {
            gcommi_pq_return_credit(q, p->next[r]);
            p->returned[r] = p->next[r];
        }
        work += p->next[r] != first;
    }
    p->ring_turn++;
    return work;
}

/* ---- outgoing messages ---- */

static int send_buf(gcommi_proxy_t *p, int peer, buf_t *b, size_t len)
{
    int rc = p->t->isend(p->t, peer, b->chan, b->mem, len, &b->ctx);
    if (rc) {
        fail(p, rc, "sending %zu bytes to process %d failed", len, peer);
        return rc;
    }
    p->sends_out++;
    p->stat_msgs_out++;
    return 0;
}

static void bufq_push(bufq_t *q, buf_t *b)
{
    b->next_free = NULL;
    if (q->tail) q->tail->next_free = b;
    else q->head = b;
    q->tail = b;
    q->n++;
}

static buf_t *bufq_pop(bufq_t *q)
{
    buf_t *b = q->head;
    q->head = b->next_free;
    if (!q->head) q->tail = NULL;
    q->n--;
    return b;
}

/* The oldest buffer of q whose copy is over, taken off q, with the copy's outcome in *st; NULL
 * while it runs. */
static buf_t *bufq_copied(gcommi_proxy_t *p, bufq_t *q, int32_t *st)
{
    if (!q->head) return NULL;
    const gcommi_proxy_local_ops_t *l = &p->prm.local;
    int rc = CALLBACK(p, "copy_done", l->copy_done(l->ctx, q->head->ticket));
    if (rc == 0) return NULL;
    *st = rc == 1 ? GCOMM_SUCCESS : rc < 0 ? rc : GCOMM_ERR_INTERNAL;
    return bufq_pop(q);
}

static int32_t read_job(gcommi_proxy_t *p, const job_t *j, unsigned char *dst, uint64_t pos,
                        size_t n)
{
    const gcommi_proxy_local_ops_t *l = &p->prm.local;
    switch (j->data) {
    case SRC_INLINE: memcpy(dst, j->inline_data + pos, n); return 0;
    case SRC_ORIGIN: return CALLBACK(p, "read_origin", l->read_origin(l->ctx, dst, j->origin + pos, n));
    case SRC_WINDOW:
        return CALLBACK(p, "read_window", l->read_window(l->ctx, j->hdr.target, j->hdr.win,
                                                         j->hdr.offset + pos, dst, n));
    }
    return 0;
}

/* Reads [pos, pos + n) of a job into b after the header: at once, or, for a put's origin when
 * the local ops copy asynchronously, by starting the copy (*ticket then names it). */
static int32_t read_piece(gcommi_proxy_t *p, const job_t *j, buf_t *b, uint64_t pos, size_t n,
                          uint64_t *ticket)
{
    const gcommi_proxy_local_ops_t *l = &p->prm.local;
    *ticket = 0;
    if (j->data == SRC_ORIGIN && l->read_origin_start)
        return CALLBACK(p, "read_origin_start", l->read_origin_start(l->ctx, b->mem + HDR_BYTES,
                                                                     j->origin + pos, n, ticket));
    return read_job(p, j, b->mem + HDR_BYTES, pos, n);
}

/* Sends b's message now, or, while its data is being copied in, once the copy is over
 * (pump_filled, in the order the copies started). */
static int send_piece(gcommi_proxy_t *p, int peer, buf_t *b, size_t len, uint64_t ticket)
{
    if (!ticket) return send_buf(p, peer, b, len);
    b->peer = peer;
    b->len = len;
    b->ticket = ticket;
    bufq_push(&p->filling, b);
    return 0;
}

/* Sends the messages whose data has been copied in; a failed copy sends its piece as failed,
 * without data (the target records the failure, the origin hears it with the acknowledgement). */
static int pump_filled(gcommi_proxy_t *p)
{
    int work = 0;
    buf_t *b;
    int32_t st;
    while ((b = bufq_copied(p, &p->filling, &st))) {
        size_t len = b->len;
        if (st) {
            msg_hdr_t h;
            memcpy(&h, b->mem, HDR_BYTES);
            h.status = st;
            memcpy(b->mem, &h, HDR_BYTES);
            len = HDR_BYTES;
        }
        if (send_buf(p, b->peer, b, len)) return work;
        work = 1;
    }
    return work;
}

/* The last message of a job is about to be sent. A command now waits for its answer; a get reply
 * notifies its target first (every byte has been read), so that the notification precedes the
 * origin's completion; if that fails, the last piece carries the failure instead of its data. */
static void job_last(gcommi_proxy_t *p, job_t *j, msg_hdr_t *h)
{
    if (j->is_reply) {
        if (!h->status && (h->flags & GCOMMI_PQ_F_NOTIFY)) {
            const gcommi_proxy_local_ops_t *l = &p->prm.local;
            h->status = CALLBACK(p, "deliver_notify", l->deliver_notify(l->ctx, h->target,
                                                                         h->source, h->win, h->tag));
        }
        return;
    }
    op_t *op = (op_t *)((char *)j - offsetof(op_t, job));
    set_state(op, op->cmd.op == GCOMMI_PQ_GET ? OP_WAIT_DATA : OP_WAIT_ACK);
}

static void free_reply(gcommi_proxy_t *p, job_t *j)
{
    reply_t *r = (reply_t *)j;
    r->next_free = p->free_replies;
    p->free_replies = r;
}

static int pump_small(gcommi_proxy_t *p)
{
    int work = 0;
    while (p->small_q && p->free_small) {
        job_t *j = p->small_q;
        p->small_q = j->next;
        if (!p->small_q) p->small_q_tail = NULL;
        buf_t *b = p->free_small;
        p->free_small = b->next_free;
        msg_hdr_t h = j->hdr;
        h.pos = 0;
        h.len = j->send_total;
        h.status = j->status;
        uint64_t ticket = 0;
        if (!h.status && h.len) h.status = read_piece(p, j, b, 0, h.len, &ticket);
        job_last(p, j, &h);
        memcpy(b->mem, &h, HDR_BYTES);
        if (send_piece(p, j->peer, b, HDR_BYTES + (h.status ? 0 : h.len), ticket)) return work;
        if (j->is_reply) free_reply(p, j);
        work = 1;
    }
    return work;
}

/* Large transfers, one stream at a time in order, each piece through its own bounce buffer, so
 * that reading piece k + 1 overlaps the transfer of piece k (and with asynchronous copies, the
 * copies of several pieces run while earlier ones are on the wire). */
static int pump_bulk(gcommi_proxy_t *p)
{
    int work = 0;
    while (p->bulk_q && p->free_bulk) {
        job_t *j = p->bulk_q;
        buf_t *b = p->free_bulk;
        p->free_bulk = b->next_free;
        msg_hdr_t h = j->hdr;
        uint64_t left = j->send_total - j->pos;
        h.pos = j->pos;
        h.len = left < p->chunk ? left : p->chunk;
        uint64_t ticket = 0;
        if (!j->status) j->status = read_piece(p, j, b, j->pos, h.len, &ticket);
        if (j->status) h.len = left; /* the rest is sent as failed, in this one message */
        h.status = j->status;
        j->pos += h.len;
        int last = j->pos == j->send_total;
        if (last) {
            p->bulk_q = j->next;
            if (!p->bulk_q) p->bulk_q_tail = NULL;
            job_last(p, j, &h);
        }
        memcpy(b->mem, &h, HDR_BYTES);
        if (send_piece(p, j->peer, b, HDR_BYTES + (h.status ? 0 : h.len), ticket)) return work;
        if (last && j->is_reply) free_reply(p, j);
        work = 1;
    }
    return work;
}

static int ack_push(gcommi_proxy_t *p, int peer, uint32_t xfer, int32_t status)
{
    ackq_t *q = &p->acks[peer];
    if (q->n == q->cap) {
        uint32_t cap = q->cap ? 2 * q->cap : 64;
        ack_t *v = realloc(q->v, cap * sizeof(*v));
        if (!v) {
            fail(p, GCOMM_ERR_NOMEM, "no memory for acknowledgements");
            return GCOMM_ERR_NOMEM;
        }
        q->v = v;
        q->cap = cap;
    }
    q->v[q->n++] = (ack_t){xfer, status};
    p->acks_pending++;
    return 0;
}

/* Acknowledgements go out once per round of the loop, as many per message as fit: a stream of
 * small notifications costs a fraction of a message each way. */
static int flush_acks(gcommi_proxy_t *p)
{
    int work = 0;
    for (int peer = 0; p->acks_pending && peer < p->t->nprocs; peer++) {
        ackq_t *q = &p->acks[peer];
        while (q->n && p->free_small) {
            buf_t *b = p->free_small;
            p->free_small = b->next_free;
            uint32_t n = q->n < ACKS_MAX ? q->n : (uint32_t)ACKS_MAX;
            msg_hdr_t h;
            memset(&h, 0, sizeof(h));
            h.kind = MSG_ACK;
            h.count = n;
            memcpy(b->mem, &h, HDR_BYTES);
            memcpy(b->mem + HDR_BYTES, q->v + q->n - n, n * sizeof(ack_t));
            q->n -= n;
            p->acks_pending -= n;
            if (send_buf(p, peer, b, HDR_BYTES + n * sizeof(ack_t))) return work;
            work = 1;
        }
    }
    return work;
}

/* ---- incoming messages ---- */

static op_t *lookup(gcommi_proxy_t *p, uint32_t xfer, int state, int peer)
{
    uint32_t i = xfer & 0xffffu;
    if (i >= p->nops) return NULL;
    op_t *op = &p->ops[i];
    if (op->gen != (uint16_t)(xfer >> 16) || op->state != state || op->peer != peer) return NULL;
    return op;
}

/* A put is complete at the target: its notification, then the acknowledgement. */
static void put_complete(gcommi_proxy_t *p, int peer, const msg_hdr_t *h, int32_t st)
{
    if (!st && (h->flags & GCOMMI_PQ_F_NOTIFY)) {
        const gcommi_proxy_local_ops_t *l = &p->prm.local;
        st = CALLBACK(p, "deliver_notify", l->deliver_notify(l->ctx, h->target, h->source,
                                                              h->win, h->tag));
    }
    ack_push(p, peer, h->xfer, st);
}

/* A piece of a put has been delivered (or failed, st): once all of it is, the put is complete. */
static void put_piece_done(gcommi_proxy_t *p, int peer, const msg_hdr_t *h, int32_t st)
{
    if (h->pos == 0 && h->len == h->total) {
        put_complete(p, peer, h, st);
        return;
    }
    size_t i = 0;
    while (i < p->nin && !(p->in[i].peer == peer && p->in[i].hdr.xfer == h->xfer)) i++;
    if (i == p->nin) {
        if (p->nin == p->capin) {
            size_t cap = p->capin ? 2 * p->capin : 16;
            incoming_t *v = realloc(p->in, cap * sizeof(*v));
            if (!v) {
                fail(p, GCOMM_ERR_NOMEM, "no memory for incoming transfers");
                return;
            }
            p->in = v;
            p->capin = cap;
        }
        p->in[i] = (incoming_t){.peer = peer, .hdr = *h, .t0 = gcommi_time_ns()};
        p->nin++;
    }
    incoming_t *in = &p->in[i];
    if (h->total != in->hdr.total || h->len > in->hdr.total - in->got) {
        fail(p, GCOMM_ERR_INTERNAL, "piece [%llu, +%llu) of a put from process %d does not fit "
             "its transfer (%llu of %llu bytes arrived)", (unsigned long long)h->pos,
             (unsigned long long)h->len, peer, (unsigned long long)in->got,
             (unsigned long long)in->hdr.total);
        return;
    }
    in->got += h->len;
    if (st && !in->status) in->status = st;
    if (in->got == in->hdr.total) {
        put_complete(p, peer, &in->hdr, in->status);
        p->in[i] = p->in[--p->nin];
    }
}

/* A notification, alone (len 0) or with its put in one piece, by the local ops' one asynchronous
 * step (deliver_put_notify_start): acknowledged once that is over (pump_held). Returns 1 when b
 * is held. */
static int deliver_notified(gcommi_proxy_t *p, buf_t *b, int peer, const msg_hdr_t *h,
                            const unsigned char *data, size_t len)
{
    const gcommi_proxy_local_ops_t *l = &p->prm.local;
    uint64_t ticket = 0;
    int32_t st = CALLBACK(p, "deliver_put_notify_start",
                          l->deliver_put_notify_start(l->ctx, h->target, h->source, h->win, h->tag,
                                                      h->offset, len ? data : NULL, len, &ticket));
    if (!st && ticket) {
        b->peer = peer;
        b->ticket = ticket;
        b->notified = 1;
        bufq_push(&p->held, b);
        return 1;
    }
    ack_push(p, peer, h->xfer, st);
    return 0;
}

/* A piece of a put arrived in b: delivered at once, or by a copy that b waits for (returns 1:
 * b is held, pump_held posts it again). */
static int on_put(gcommi_proxy_t *p, buf_t *b, int peer, const msg_hdr_t *h,
                  const unsigned char *data)
{
    int32_t st = h->status;
    if (!st && !is_local_rank(p, h->target)) st = GCOMM_ERR_RANK;
    if (!st && (h->flags & GCOMMI_PQ_F_NOTIFY) && p->prm.local.deliver_put_notify_start &&
        h->pos == 0 && h->len == h->total && h->len <= p->prm.local.put_notify_max)
        return deliver_notified(p, b, peer, h, data, h->len);
    if (!st && h->len) {
        const gcommi_proxy_local_ops_t *l = &p->prm.local;
        if (l->deliver_put_start) {
            uint64_t ticket = 0;
            st = CALLBACK(p, "deliver_put_start",
                          l->deliver_put_start(l->ctx, h->target, h->win, h->offset + h->pos, data,
                                               h->len, &ticket));
            if (!st && ticket) { /* (0: the copy was over at once) */
                b->peer = peer;
                b->ticket = ticket;
                bufq_push(&p->held, b);
                return 1;
            }
        } else {
            st = CALLBACK(p, "deliver_put", l->deliver_put(l->ctx, h->target, h->win,
                                                            h->offset + h->pos, data, h->len));
        }
    }
    put_piece_done(p, peer, h, st);
    return 0;
}

static int post_recv(gcommi_proxy_t *p, buf_t *b);

/* Received pieces whose delivery copies are over: the put's accounting, and the buffer goes back
 * to the transport. */
static int pump_held(gcommi_proxy_t *p)
{
    int work = 0;
    buf_t *b;
    int32_t st;
    while ((b = bufq_copied(p, &p->held, &st))) {
        msg_hdr_t h;
        memcpy(&h, b->mem, HDR_BYTES);
        if (b->notified) /* its notification is in place too */
            ack_push(p, b->peer, h.xfer, st);
        else
            put_piece_done(p, b->peer, &h, st);
        b->notified = 0;
        post_recv(p, b);
        work = 1;
    }
    return work;
}

static void on_get_req(gcommi_proxy_t *p, int peer, const msg_hdr_t *h)
{
    if (!p->free_replies) {
        /* replies live until their last piece is posted; grow the pool by a block */
        enum { BLOCK = 64 };
        void **blocks = realloc(p->reply_blocks, (size_t)(p->nreply_blocks + 1) * sizeof(void *));
        reply_t *r = blocks ? calloc(BLOCK, sizeof(reply_t)) : NULL;
        if (blocks) p->reply_blocks = blocks;
        if (!r) {
            fail(p, GCOMM_ERR_NOMEM, "no memory for get replies");
            return;
        }
        p->reply_blocks[p->nreply_blocks++] = r;
        for (int k = 0; k < BLOCK; k++) free_reply(p, &r[k].job);
    }
    reply_t *r = p->free_replies;
    p->free_replies = r->next_free;
    job_t *j = &r->job;
    memset(j, 0, sizeof(*j));
    j->peer = peer;
    j->is_reply = 1;
    j->data = SRC_WINDOW;
    j->hdr = *h;
    j->hdr.kind = MSG_GET_DATA;
    j->send_total = h->total;
    if (!is_local_rank(p, h->target)) j->status = GCOMM_ERR_RANK;
    enqueue(p, j);
}

static void on_get_data(gcommi_proxy_t *p, int peer, const msg_hdr_t *h, const unsigned char *data)
{
    op_t *op = lookup(p, h->xfer, OP_WAIT_DATA, peer);
    if (!op || h->total != op->cmd.bytes || h->len > op->cmd.bytes - op->got) {
        fail(p, GCOMM_ERR_INTERNAL, "get reply from process %d for unknown command 0x%x (stale "
             "or repeated)", peer, h->xfer);
        return;
    }
    int32_t st = h->status;
    if (!st && h->len) {
        const gcommi_proxy_local_ops_t *l = &p->prm.local;
        st = CALLBACK(p, "write_origin", l->write_origin(l->ctx, op->cmd.u.origin + h->pos, data,
                                                          h->len));
    }
    if (st && !op->status) op->status = st;
    op->got += h->len;
    if (op->got == op->cmd.bytes) finish_op(p, op, op->status);
}

static void on_ack(gcommi_proxy_t *p, int peer, const msg_hdr_t *h, const unsigned char *data)
{
    for (uint32_t k = 0; k < h->count; k++) {
        ack_t a;
        memcpy(&a, data + k * sizeof(ack_t), sizeof(a));
        if (a.xfer == ABORT_XFER) {
            if (p->abort_acks) p->abort_acks--;
            continue;
        }
        op_t *op = lookup(p, a.xfer, OP_WAIT_ACK, peer);
        if (!op) {
            fail(p, GCOMM_ERR_INTERNAL, "acknowledgement from process %d for unknown command "
                 "0x%x (stale or repeated)", peer, a.xfer);
            return;
        }
        finish_op(p, op, a.status);
    }
}

/* Checks a received message against its header before anything trusts it. */
static int msg_valid(const msg_hdr_t *h, size_t len, size_t cap)
{
    size_t dlen = len - HDR_BYTES;
    if (len < HDR_BYTES || len > cap || h->kind < MSG_PUT || h->kind >= MSG_KINDS) return 0;
    if (h->kind == MSG_ACK) return h->count <= ACKS_MAX && dlen == h->count * sizeof(ack_t);
    if (h->kind == MSG_PUT || h->kind == MSG_GET_DATA)
        return h->len <= h->total && h->pos <= h->total - h->len &&
               dlen == (h->status ? 0 : h->len);
    return dlen == 0;
}

/* Returns 1 when b is held (its data is being copied out), 0 when it can be posted again. */
static int on_message(gcommi_proxy_t *p, buf_t *b, int peer, size_t len)
{
    msg_hdr_t h;
    if (len >= HDR_BYTES) memcpy(&h, b->mem, HDR_BYTES);
    if (len < HDR_BYTES || peer < 0 || peer >= p->t->nprocs || !msg_valid(&h, len, b->cap)) {
        fail(p, GCOMM_ERR_INTERNAL, "malformed message of %zu bytes from process %d", len, peer);
        return 0;
    }
    p->stat_msgs_in++;
    const unsigned char *data = b->mem + HDR_BYTES;
    switch (h.kind) {
    case MSG_PUT: return on_put(p, b, peer, &h, data);
    case MSG_NOTIFY: {
        int32_t st = is_local_rank(p, h.target) ? GCOMM_SUCCESS : GCOMM_ERR_RANK;
        const gcommi_proxy_local_ops_t *l = &p->prm.local;
        if (!st && l->deliver_put_notify_start) return deliver_notified(p, b, peer, &h, NULL, 0);
        if (!st)
            st = CALLBACK(p, "deliver_notify", l->deliver_notify(l->ctx, h.target, h.source,
                                                                  h.win, h.tag));
        ack_push(p, peer, h.xfer, st);
        break;
    }
    case MSG_GET_REQ: on_get_req(p, peer, &h); break;
    case MSG_GET_DATA: on_get_data(p, peer, &h, data); break;
    case MSG_ACK: on_ack(p, peer, &h, data); break;
    case MSG_ABORT: {
        const gcommi_proxy_local_ops_t *l = &p->prm.local;
        if (!p->abort_applied && l->remote_abort) {
            p->abort_applied = 1;
            GCOMM_LOG_INFO("proxy", "process %d: process %d stopped its ranks (%s); stopping ours",
                           p->t->me, peer, gcomm_error_string(h.status));
            cb_enter(p, "remote_abort");
            l->remote_abort(l->ctx, h.status);
            cb_leave(p, 0);
        }
        ack_push(p, peer, ABORT_XFER, GCOMM_SUCCESS);
        break;
    }
    }
    return 0;
}

static int post_recv(gcommi_proxy_t *p, buf_t *b)
{
    int rc = p->t->irecv(p->t, b->chan, b->mem, b->cap, &b->ctx);
    if (rc) fail(p, rc, "posting a receive failed");
    else p->recvs_posted++;
    return rc;
}

static void on_event(void *arg, void *ctx, int peer, size_t len, int cancelled)
{
    gcommi_proxy_t *p = arg;
    switch (((ctx_t *)ctx)->kind) {
    case CTX_RECV: {
        buf_t *b = ctx;
        p->recvs_posted--;
        if (cancelled) return;
        if (p->phase >= PH_CANCEL) {
            fail(p, GCOMM_ERR_INTERNAL, "a message from process %d arrived after the final "
                 "barrier", peer);
            return;
        }
        if (!on_message(p, b, peer, len)) post_recv(p, b);
        return;
    }
    case CTX_SEND: {
        buf_t *b = ctx;
        p->sends_out--;
        buf_t **list = b->chan == GCOMMI_PROXY_CHAN_SMALL ? &p->free_small : &p->free_bulk;
        b->next_free = *list;
        *list = b;
        return;
    }
    case CTX_OP_BARRIER: {
        op_t *op = (op_t *)((char *)ctx - offsetof(op_t, ctx));
        const gcommi_proxy_local_ops_t *l = &p->prm.local;
        /* what the others put here before they entered is in place before our ranks go */
        int32_t st = l->fence ? CALLBACK(p, "fence", l->fence(l->ctx)) : GCOMM_SUCCESS;
        finish_op(p, op, st);
        return;
    }
    case CTX_STOP_BARRIER: p->phase = PH_BARRIER_DONE; return;
    }
}

/* ---- the launch's stop between processes ---- */

/* Once this process's ranks have stopped (an error or timeout), tells every other process, one
 * small message each, so that their ranks stop now rather than at their own timeouts. A process
 * that was told does not tell the others again. */
static int send_abort(gcommi_proxy_t *p)
{
    const gcommi_proxy_local_ops_t *l = &p->prm.local;
    if (p->abort_sent || p->abort_applied || !l->local_abort) return 0;
    int code = l->local_abort(l->ctx);
    if (!code) return 0;
    /* all or nothing: the buffers first, so that no process is told twice */
    int nfree = 0;
    for (buf_t *b = p->free_small; b && nfree < p->t->nprocs; b = b->next_free) nfree++;
    if (nfree < p->t->nprocs - 1) return 0;
    p->abort_sent = 1;
    GCOMM_LOG_WARN("proxy", "process %d: its ranks stopped (%s): telling the other processes",
                   p->t->me, gcomm_error_string(code));
    for (int peer = 0; peer < p->t->nprocs; peer++) {
        if (peer == p->t->me) continue;
        buf_t *b = p->free_small;
        p->free_small = b->next_free;
        msg_hdr_t h;
        memset(&h, 0, sizeof(h));
        h.kind = MSG_ABORT;
        h.status = code;
        memcpy(b->mem, &h, HDR_BYTES);
        if (send_buf(p, peer, b, HDR_BYTES)) return 1;
        p->abort_acks++;
    }
    return 1;
}

/* ---- stop: every local command done, then a barrier while serving the others, then nothing is
 * in flight anywhere: each process entered it only once all its commands were answered ---- */

static int rings_drained(gcommi_proxy_t *p)
{
    for (int r = 0; r < p->prm.nrings; r++)
        if (p->next[r] != gcommi_ld_acquire_sys(p->prm.rings[r].tail)) return 0;
    return 1;
}

static void stop_step(gcommi_proxy_t *p)
{
    switch (p->phase) {
    case PH_RUN:
        if (!LD(&p->stop_req)) return;
        p->phase = PH_DRAIN;
        /* fall through */
    case PH_DRAIN: {
        /* our own commands only: what others ask of us is served in the barrier phase too;
         * a stop of our ranks reached the others (its acknowledgements are in) */
        send_abort(p);
        if (p->ops_used || !rings_drained(p) || p->abort_acks) return;
        p->stop_ctx.kind = CTX_STOP_BARRIER;
        p->stop_t0 = gcommi_time_ns();
        p->phase = PH_BARRIER;
        int rc = p->t->ibarrier(p->t, &p->stop_ctx);
        if (rc) fail(p, rc, "the final barrier could not start");
        return;
    }
    case PH_BARRIER_DONE: {
        if (p->acks_pending || p->small_q || p->bulk_q || p->nin || p->sends_out ||
            p->filling.n || p->held.n)
            return;
        p->phase = PH_CANCEL;
        int rc = p->t->cancel_recvs(p->t);
        if (rc) fail(p, rc, "cancelling the receives failed");
    }
        /* fall through */
    case PH_CANCEL:
        if (p->recvs_posted == 0) p->phase = PH_FINISHED;
        return;
    }
}

/* ---- reports ---- */

typedef struct {
    char *buf;
    size_t len, used;
} text_t;

static void say(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(text_t *t, const char *fmt, ...)
{
    if (t->used + 1 >= t->len) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->used, t->len - t->used, fmt, ap);
    va_end(ap);
    if (n > 0) t->used += (size_t)n < t->len - t->used ? (size_t)n : t->len - t->used - 1;
}

static void say_op(gcommi_proxy_t *p, text_t *t, const op_t *op, uint64_t now)
{
    const gcommi_pq_cmd_t *c = &op->cmd;
    say(t, "  rank %d command %u: %s", c->source, c->id, op_words[c->op]);
    if (c->op <= GCOMMI_PQ_NOTIFY)
        say(t, " %s rank %d (process %d), window %u, %s %d, %llu bytes at offset %llu",
            c->op == GCOMMI_PQ_GET ? "from" : "to", c->target,
            c->target >= 0 && c->target < p->prm.nranks ? p->proc_of_rank[c->target] : -1,
            c->win, "tag", c->tag, (unsigned long long)c->bytes, (unsigned long long)c->offset);
    say(t, ": %s", op_state_words[op->state]);
    if (op->state == OP_SENDING)
        say(t, " (%llu of %llu bytes posted)", (unsigned long long)op->job.pos,
            (unsigned long long)op->job.send_total);
    if (op->state == OP_WAIT_DATA)
        say(t, " (%llu of %llu bytes arrived)", (unsigned long long)op->got,
            (unsigned long long)c->bytes);
    say(t, ", for %llu ms\n", (unsigned long long)((now - op->t_state) / 1000000));
}

/* What the proxy has in flight; the commands of rank `source` first (-1: in pool order). */
static void build_report(gcommi_proxy_t *p, int source, char *buf, size_t len)
{
    text_t t = {buf, len, 0};
    uint64_t now = gcommi_time_ns();
    buf[0] = '\0';
    say(&t, "proxy of process %d of %d (%s transport): %s; %u commands in flight, %d sends and "
        "%d receives posted, %zu partial incoming puts, %u acknowledgements to send (so far %llu "
        "commands, %llu messages sent, %llu received)\n", p->t->me, p->t->nprocs, p->t->name,
        phase_words[p->phase], p->ops_used, p->sends_out, p->recvs_posted, p->nin,
        p->acks_pending, (unsigned long long)p->stat_cmds, (unsigned long long)p->stat_msgs_out,
        (unsigned long long)p->stat_msgs_in);
    if (p->filling.n || p->held.n)
        say(&t, "  copies under way: %d messages waiting for their data, %d received pieces for "
            "their delivery\n", p->filling.n, p->held.n);
    if (LD(&p->fatal)) say(&t, "  failed: %s\n", p->fatal_detail);
    if (p->abort_sent || p->abort_applied)
        say(&t, "  the launch was stopped %s (%u acknowledgements of the stop outstanding)\n",
            p->abort_sent ? "here and the others told" : "by another process", p->abort_acks);
    int listed = 0;
    if (source >= 0 && source < p->prm.nranks)
        for (op_t *op = p->src[source].head; op && listed < REPORT_OPS; op = op->next_src, listed++)
            say_op(p, &t, op, now);
    for (uint32_t i = 0; i < p->nops && listed < REPORT_OPS; i++)
        if (p->ops[i].state != OP_FREE && p->ops[i].cmd.source != source) {
            say_op(p, &t, &p->ops[i], now);
            listed++;
        }
    if (p->ops_used > (uint32_t)listed) say(&t, "  ... and %u more commands\n", p->ops_used - listed);
    for (size_t i = 0; i < p->nin; i++)
        say(&t, "  incoming put from process %d: rank %d to rank %d, %llu of %llu bytes, for %llu ms\n",
            p->in[i].peer, p->in[i].hdr.source, p->in[i].hdr.target,
            (unsigned long long)p->in[i].got, (unsigned long long)p->in[i].hdr.total,
            (unsigned long long)((now - p->in[i].t0) / 1000000));
    for (int r = 0; r < p->prm.nrings; r++)
        say(&t, "  ring %d: %u commands taken, %u reserved\n", r, p->next[r],
            gcommi_ld_acquire_sys(p->prm.rings[r].tail));
    if (p->phase == PH_BARRIER)
        say(&t, "  final barrier entered %llu ms ago\n",
            (unsigned long long)((now - p->stop_t0) / 1000000));
}

static void answer_report(gcommi_proxy_t *p)
{
    uint32_t req = LD(&p->report_req);
    if (req == p->report_done) return;
    build_report(p, p->report_source, p->report, sizeof(p->report));
    ST(&p->report_done, req);
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    nanosleep(&ts, NULL);
}

/* ---- the thread ---- */

static int post_all_recvs(gcommi_proxy_t *p)
{
    for (int i = 0; i < p->nbufs; i++)
        if (p->bufs[i].ctx.kind == CTX_RECV) GCOMMI_CHECK(post_recv(p, &p->bufs[i]));
    return 0;
}

static void *proxy_main(void *arg)
{
    gcommi_proxy_t *p = arg;
    uint64_t idle_since = 0, nap = 0;
#if defined(PR_SET_TIMERSLACK)
    /* Linux rounds short sleeps up by the timer slack (50 us by default): a proxy that naps for a
     * microsecond must wake after about one, not fifty */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
#endif
    post_all_recvs(p);
    while (!LD(&p->abort_req)) {
        int work = 0;
        if (!LD(&p->fatal)) {
            int n = p->t->progress(p->t, on_event, p);
            if (n < 0) fail(p, n, "the %s transport failed to make progress", p->t->name);
            work = n > 0;
            if (p->phase <= PH_DRAIN) work |= consume_rings(p) | send_abort(p);
            work |= pump_small(p);
            work |= pump_bulk(p);
            work |= pump_filled(p);
            work |= pump_held(p);
            work |= flush_acks(p);
            stop_step(p);
        } else if (LD(&p->stop_req)) {
            break;
        }
        answer_report(p);
        if (p->phase == PH_FINISHED) break;
        /* Back off when idle: spin briefly (a command or message usually follows soon), then
         * sleep, doubling up to 500 us with nothing in flight, 50 us while peers owe us answers.
         * Never while data moves: copies end within microseconds, and a large message between
         * processes moves only while the transport is called (a nap in the middle of a 1 MiB
         * piece cost it hundreds of microseconds, measured on H200 through MPS). */
        uint64_t now = gcommi_time_ns();
        if (work || p->filling.n || p->held.n || p->sends_out || p->nin) {
            idle_since = 0;
            nap = 0;
        } else if (!idle_since) {
            idle_since = now;
        } else if (now - idle_since > SPIN_NS) {
            int busy = p->ops_used || p->phase != PH_RUN;
            uint64_t cap = busy ? SLEEP_BUSY_MAX_NS : SLEEP_IDLE_MAX_NS;
            nap = nap ? (2 * nap < cap ? 2 * nap : cap) : 1000;
            sleep_ns(nap);
        }
    }
    if (LD(&p->abort_req) && p->recvs_posted) {
        /* abandoned: take our receive buffers back from the transport if it lets us */
        p->phase = PH_CANCEL;
        p->t->cancel_recvs(p->t);
        for (int k = 0; k < 1000 && p->recvs_posted; k++) {
            p->t->progress(p->t, on_event, p);
            sleep_ns(100000);
        }
    }
    answer_report(p);
    ST(&p->running, 0);
    return NULL;
}

/* ---- API ---- */

static uint64_t timeout_or_default(uint64_t ns)
{
    if (ns) return ns;
    long ms = gcommi_config()->timeout_ms;
    return (uint64_t)(ms > 0 ? ms : 1) * 1000000ull;
}

static uint32_t pow2_at_least(uint64_t v)
{
    uint32_t x = 1;
    while (x < v && x < (1u << 30)) x <<= 1;
    return x;
}

static int setup_buffers(gcommi_proxy_t *p)
{
    size_t big = HDR_BYTES + p->chunk;
    p->nbufs = SMALL_RECVS + SMALL_SENDS + 2 * p->bounce;
    size_t bytes = (size_t)(SMALL_RECVS + SMALL_SENDS) * SMALL_BYTES + 2 * (size_t)p->bounce * big;
    p->bufbytes = bytes;
    p->bufs = calloc((size_t)p->nbufs, sizeof(buf_t));
    if (!p->bufs || posix_memalign((void **)&p->bufmem, 64, bytes))
        return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory for %zu bytes of proxy buffers", bytes);
    unsigned char *m = p->bufmem;
    for (int i = 0; i < p->nbufs; i++) {
        buf_t *b = &p->bufs[i];
        int small = i < SMALL_RECVS + SMALL_SENDS;
        int recv = i < SMALL_RECVS || (!small && i < SMALL_RECVS + SMALL_SENDS + p->bounce);
        b->ctx.kind = recv ? CTX_RECV : CTX_SEND;
        b->chan = small ? GCOMMI_PROXY_CHAN_SMALL : GCOMMI_PROXY_CHAN_BULK;
        b->cap = small ? SMALL_BYTES : big;
        b->mem = m;
        m += b->cap;
        if (!recv) {
            buf_t **list = small ? &p->free_small : &p->free_bulk;
            b->next_free = *list;
            *list = b;
        }
    }
    return GCOMM_SUCCESS;
}

int gcommi_proxy_create(const gcommi_proxy_params_t *prm, gcommi_proxy_t **out)
{
    if (!prm || !out || !prm->transport || !prm->proc_of_rank || prm->nranks <= 0)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "proxy parameters missing (transport, ranks)");
    const gcommi_proxy_local_ops_t *l = &prm->local;
    if ((!l->deliver_put && !l->deliver_put_start) || !l->deliver_notify ||
        (!l->read_origin && !l->read_origin_start) || !l->write_origin || !l->read_window ||
        !l->local_abort != !l->remote_abort || !l->deliver_put_start != !l->copy_done ||
        !l->read_origin_start != !l->copy_done ||
        (l->deliver_put_notify_start && !l->copy_done))
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "a local delivery operation is missing");
    if (prm->nrings < 0 || prm->nrings > GCOMMI_PROXY_MAX_RINGS)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "nrings = %d (0 .. %d)", prm->nrings,
                            GCOMMI_PROXY_MAX_RINGS);
    for (int r = 0; r < prm->nrings; r++) {
        const gcommi_pq_t *q = &prm->rings[r];
        if (!q->ring || !q->tail || !q->consumed || !q->depth || (q->depth & (q->depth - 1)) ||
            q->depth > (1u << 30))
            return GCOMMI_ERROR(GCOMM_ERR_ARG, "ring %d: missing memory or depth %u not a power "
                                "of two", r, q->depth);
    }
    const gcommi_proxy_transport_t *t = prm->transport;
    for (int32_t r = 0; r < prm->nranks; r++)
        if (prm->proc_of_rank[r] < 0 || prm->proc_of_rank[r] >= t->nprocs)
            return GCOMMI_ERROR(GCOMM_ERR_ARG, "rank %d: process %d of %d", r, prm->proc_of_rank[r],
                                t->nprocs);
    const gcommi_config_t *cfg = gcommi_config();
    gcommi_proxy_t *p = calloc(1, sizeof(*p));
    if (!p) return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory for the proxy");
    p->prm = *prm;
    p->t = prm->transport;
    size_t chunk = prm->chunk ? prm->chunk : cfg->proxy_chunk;
    /* at least a small message's worth (so a bulk message is never a small one), at most what
     * a transport's int-sized count takes */
    p->chunk = chunk < 2 * SMALL_BYTES ? 2 * SMALL_BYTES : chunk > (1u << 30) ? (1u << 30) : chunk;
    long bounce = prm->bounce ? prm->bounce : cfg->proxy_bounce;
    p->bounce = bounce < 1 ? 1 : bounce > 64 ? 64 : (int)bounce;
    long depth = cfg->proxy_depth > 16 ? cfg->proxy_depth : 16;
    p->nops = pow2_at_least(prm->inflight ? prm->inflight : (uint64_t)depth);
    if (p->nops > 65536) p->nops = 65536; /* the index part of a handle */
    int rc = GCOMM_SUCCESS;
    p->proc_of_rank = malloc((size_t)prm->nranks * sizeof(int32_t));
    p->src = calloc((size_t)prm->nranks, sizeof(source_t));
    p->acks = calloc((size_t)t->nprocs, sizeof(ackq_t));
    p->done = prm->done;
    if (!p->done) p->done = p->own_done = calloc((size_t)prm->nranks, sizeof(uint32_t));
    if (posix_memalign((void **)&p->ops, 64, p->nops * sizeof(op_t))) p->ops = NULL;
    if (!p->proc_of_rank || !p->src || !p->acks || !p->done || !p->ops) {
        rc = GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory for the proxy's tables");
        goto err;
    }
    memcpy(p->proc_of_rank, prm->proc_of_rank, (size_t)prm->nranks * sizeof(int32_t));
    memset(p->ops, 0, p->nops * sizeof(op_t));
    for (uint32_t i = p->nops; i-- > 0;) {
        p->ops[i].next_free = p->free_ops;
        p->free_ops = &p->ops[i];
    }
    for (int32_t r = 0; r < prm->nranks; r++) p->src[r].next_id = p->done[r] + 1;
    for (int r = 0; r < prm->nrings; r++) p->next[r] = p->returned[r] = prm->ring_start[r];
    rc = setup_buffers(p);
    if (rc) goto err;
    pthread_mutex_init(&p->report_lock, NULL);
    *out = p;
    return GCOMM_SUCCESS;
err:
    free(p->proc_of_rank);
    free(p->src);
    free(p->acks);
    free(p->own_done);
    free(p->ops);
    free(p->bufs);
    free(p->bufmem);
    free(p);
    return rc;
}

int gcommi_proxy_start(gcommi_proxy_t *p)
{
    if (!p || p->started) return GCOMMI_ERROR(GCOMM_ERR_ARG, "proxy missing or already started");
    p->started = 1;
    ST(&p->running, 1);
    int rc = pthread_create(&p->thread, NULL, proxy_main, p);
    if (rc) {
        ST(&p->running, 0);
        p->joined = 1;
        return GCOMMI_ERROR(GCOMM_ERR_INTERNAL, "cannot start the proxy thread (%s)", strerror(rc));
    }
    return GCOMM_SUCCESS;
}

/* Copies at most the first two lines of a report (for the one-line error detail). */
static const char *report_head(const char *r, char *buf, size_t len)
{
    size_t n = 0;
    int lines = 0;
    while (r[n] && n + 1 < len && lines < 2) {
        buf[n] = r[n] == '\n' ? (++lines < 2 ? ' ' : '\0') : r[n];
        n++;
    }
    buf[n < len ? n : len - 1] = '\0';
    return buf;
}

static void log_report(const char *r)
{
    for (const char *line = r; *line;) {
        size_t n = strcspn(line, "\n");
        GCOMM_LOG_WARN("proxy", "%.*s", (int)n, line);
        line += n + (line[n] == '\n');
    }
}

static int report_for(gcommi_proxy_t *p, int source, char *buf, size_t len)
{
    if (!buf || !len) return GCOMM_SUCCESS;
    pthread_mutex_lock(&p->report_lock);
    int rc = GCOMM_SUCCESS, answered = 0;
    if (LD(&p->running)) {
        p->report_source = source;
        uint32_t req = LD(&p->report_req) + 1;
        ST(&p->report_req, req);
        uint64_t t0 = gcommi_time_ns();
        while (LD(&p->report_done) != req && LD(&p->running) &&
               gcommi_time_ns() - t0 < 1000000000ull)
            sleep_ns(100000);
        if (LD(&p->report_done) == req) {
            snprintf(buf, len, "%s", p->report);
            answered = 1;
        } else if (LD(&p->running)) {
            const char *cb = __atomic_load_n(&p->cb_name, __ATOMIC_RELAXED);
            uint64_t since = __atomic_load_n(&p->cb_t0, __ATOMIC_RELAXED);
            if (cb)
                snprintf(buf, len, "proxy of process %d: its thread did not answer within 1 s (in "
                         "the callback %s for %llu ms)\n", p->t->me, cb,
                         (unsigned long long)((gcommi_time_ns() - since) / 1000000));
            else
                snprintf(buf, len, "proxy of process %d: its thread did not answer within 1 s "
                         "(stuck in the %s transport?)\n", p->t->me, p->t->name);
            rc = GCOMM_ERR_TIMEOUT;
            answered = 1;
        }
    }
    /* not started, or ended: the state is ours to read */
    if (!answered) build_report(p, source, buf, len);
    pthread_mutex_unlock(&p->report_lock);
    return rc;
}

int gcommi_proxy_report(gcommi_proxy_t *p, char *buf, size_t len)
{
    if (!p) return GCOMMI_ERROR(GCOMM_ERR_ARG, "proxy is NULL");
    if (buf && len) buf[0] = '\0';
    int rc = report_for(p, -1, buf, len);
    return rc ? GCOMMI_ERROR(rc, "%s", buf) : GCOMM_SUCCESS;
}

int gcommi_proxy_stop(gcommi_proxy_t *p, uint64_t timeout_ns)
{
    if (!p || !p->started) return GCOMMI_ERROR(GCOMM_ERR_ARG, "proxy missing or not started");
    if (!p->joined) {
        ST(&p->stop_req, 1);
        uint64_t t0 = gcommi_time_ns(), limit = timeout_or_default(timeout_ns), nap = 1000;
        while (LD(&p->running) && gcommi_time_ns() - t0 < limit) {
            sleep_ns(nap);
            nap = nap < 1000000 ? 2 * nap : nap;
        }
        if (LD(&p->running)) {
            char r[4096] = "", head[400];
            report_for(p, -1, r, sizeof(r));
            log_report(r);
            return GCOMMI_ERROR(GCOMM_ERR_TIMEOUT, "proxy not stopped after %llu ms: %s",
                                (unsigned long long)(limit / 1000000),
                                report_head(r, head, sizeof(head)));
        }
        pthread_join(p->thread, NULL);
        p->joined = 1;
    }
    int fatal = LD(&p->fatal);
    if (fatal) return GCOMMI_ERROR(fatal, "the proxy failed: %s", p->fatal_detail);
    return GCOMM_SUCCESS;
}

void gcommi_proxy_destroy(gcommi_proxy_t *p)
{
    if (!p) return;
    if (p->started && !p->joined) {
        ST(&p->abort_req, 1);
        pthread_join(p->thread, NULL);
        p->joined = 1;
    }
    if (p->sends_out || p->recvs_posted) {
        /* the transport may still touch these buffers: leaking them is the safe choice */
        GCOMM_LOG_WARN("proxy", "abandoned with %d sends and %d receives in flight; their buffers "
                       "are not freed", p->sends_out, p->recvs_posted);
    } else {
        free(p->bufmem);
    }
    for (int i = 0; i < p->nreply_blocks; i++) free(p->reply_blocks[i]);
    free(p->reply_blocks);
    for (int i = 0; i < p->t->nprocs; i++) free(p->acks[i].v);
    free(p->acks);
    free(p->in);
    free(p->bufs);
    free(p->ops);
    free(p->src);
    free(p->own_done);
    free(p->proc_of_rank);
    pthread_mutex_destroy(&p->report_lock);
    free(p);
}

uint32_t *gcommi_proxy_done_counters(gcommi_proxy_t *p) { return p ? p->done : NULL; }

void gcommi_proxy_buffers(gcommi_proxy_t *p, void **mem, size_t *bytes)
{
    *mem = p ? p->bufmem : NULL;
    *bytes = p ? p->bufbytes : 0;
}

int gcommi_proxy_post(gcommi_proxy_t *p, int ring, const gcommi_pq_cmd_t *cmd, uint64_t timeout_ns)
{
    if (!p || !cmd || ring < 0 || ring >= p->prm.nrings)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "proxy, command or ring %d invalid", ring);
    gcommi_pq_t *q = &p->prm.rings[ring];
    uint32_t slot = gcommi_pq_reserve(q);
    if (!gcommi_pq_has_credit(q, slot)) {
        uint64_t t0 = gcommi_time_ns(), limit = timeout_or_default(timeout_ns);
        int spins = 0;
        while (!gcommi_pq_has_credit(q, slot)) {
            if (LD(&p->fatal)) return GCOMMI_ERROR(LD(&p->fatal), "the proxy failed: %s", p->fatal_detail);
            if (gcommi_time_ns() - t0 > limit) {
                char r[4096] = "", head[400];
                report_for(p, cmd->source, r, sizeof(r));
                log_report(r);
                return GCOMMI_ERROR(GCOMM_ERR_TIMEOUT, "rank %d: no room in proxy ring %d for %llu "
                                    "ms (slot %u): %s", cmd->source, ring,
                                    (unsigned long long)(limit / 1000000), slot,
                                    report_head(r, head, sizeof(head)));
            }
            /* the proxy frees half a ring at a time: yield to it first (it may share our core),
             * then sleep briefly */
            if (++spins < 64) sched_yield();
            else sleep_ns(20000);
        }
    }
    gcommi_pq_publish(q, slot, cmd);
    return GCOMM_SUCCESS;
}

int gcommi_proxy_wait(gcommi_proxy_t *p, int32_t source, uint32_t id, uint64_t timeout_ns)
{
    if (!p || source < 0 || source >= p->prm.nranks)
        return GCOMMI_ERROR(GCOMM_ERR_RANK, "source rank %d out of range", source);
    uint64_t t0 = 0, limit = timeout_or_default(timeout_ns), nap = 0;
    int spins = 0;
    while (!gcommi_pq_done(&p->done[source], id)) {
        int fatal = LD(&p->fatal);
        if (fatal) return GCOMMI_ERROR(fatal, "the proxy failed: %s", p->fatal_detail);
        uint64_t now = gcommi_time_ns();
        if (!t0) t0 = now;
        if (now - t0 > limit) {
            char r[4096] = "", head[400];
            report_for(p, source, r, sizeof(r));
            log_report(r);
            return GCOMMI_ERROR(GCOMM_ERR_TIMEOUT, "rank %d: command %u not done after %llu ms "
                                "(done up to %u): %s", source, id,
                                (unsigned long long)(limit / 1000000),
                                gcommi_ld_acquire_sys(&p->done[source]),
                                report_head(r, head, sizeof(head)));
        }
        if (++spins < 64) {
            sched_yield();
        } else {
            nap = nap ? (nap < 200000 ? 2 * nap : nap) : 1000;
            sleep_ns(nap);
        }
    }
    source_t *s = &p->src[source];
    int32_t code = LD(&s->err_code);
    if (code) {
        int rc = GCOMMI_ERROR(code, "rank %d command %u (%s %s rank %d, window %u, %llu bytes at "
                              "offset %llu) failed: %s", source, s->err_id,
                              op_words[s->err_op < GCOMMI_PQ_NOPS ? s->err_op : 0],
                              s->err_op == GCOMMI_PQ_GET ? "from" : "to", s->err_target, s->err_win,
                              (unsigned long long)s->err_bytes, (unsigned long long)s->err_offset,
                              gcomm_error_string(code));
        ST(&s->err_code, 0);
        return rc;
    }
    return GCOMM_SUCCESS;
}

int gcommi_proxy_ring_alloc(uint32_t depth, gcommi_pq_t *q)
{
    if (!depth) {
        long d = gcommi_config()->proxy_depth;
        depth = pow2_at_least(d > 2 ? (uint64_t)d : 2);
    }
    if (!q || depth < 2 || (depth & (depth - 1)) || depth > (1u << 24))
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "ring depth %u: a power of two in 2 .. 2^24", depth);
    memset(q, 0, sizeof(*q));
    void *ring = NULL, *counters = NULL;
    /* tail and consumed on lines of their own: producers hammer one, the consumer writes the other */
    if (posix_memalign(&ring, 64, depth * sizeof(gcommi_pq_cmd_t)) || posix_memalign(&counters, 64, 128)) {
        free(ring);
        return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory for a ring of %u commands", depth);
    }
    memset(ring, 0, depth * sizeof(gcommi_pq_cmd_t));
    memset(counters, 0, 128);
    q->ring = ring;
    q->tail = counters;
    q->consumed = (uint32_t *)((char *)counters + 64);
    q->depth = depth;
    q->sys = 0;
    gcommi_pq_init(q, 0);
    return GCOMM_SUCCESS;
}

void gcommi_proxy_ring_free(gcommi_pq_t *q)
{
    if (!q) return;
    free(q->ring);
    free(q->tail);
    memset(q, 0, sizeof(*q));
}
