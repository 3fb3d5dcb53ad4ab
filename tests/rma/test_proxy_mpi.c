/* The proxy (src/rma/proxy.c) between processes over MPI (src/rma/proxy_mpi.c), with host
 * threads as ranks, on one node (CI: mpiexec -n 2 and -n 4, oversubscribed).
 *
 * Windows live in shared memory that every process maps, so an origin can look at the target's
 * memory itself: that is how "done means the data is at the target" is checked, without asking
 * the target. Phases, each with its own proxies:
 *   1. traffic: THREADS producer ranks per process follow random plans (every process can compute
 *      every plan): puts of 0 B .. 3.5 MiB of random bytes (inline, one message, chunked), with
 *      and without notification, bare notifications, gets (small and chunked, some notifying the
 *      target), and flush + notification pairs. Targets check, when a notification arrives, that
 *      the data it covers is complete (for flush pairs: every earlier put of that source); origins
 *      check, once a put is done, that its bytes are in the target's window, then poison and free
 *      the origin buffer (a proxy reading it later would be caught); gets are compared with the
 *      target's pattern. Thread 0 of each process posts a barrier halfway and then checks that the
 *      other processes' thread-0 puts before it are in place. At the end every window is scanned:
 *      covered bytes hold their pattern, all others are still zero (the poison), and every
 *      notification arrived exactly once.
 *   2. errors and a peer that does not answer: a put outside the window and a get outside it
 *      return GCOMM_ERR_WINDOW, an unknown rank GCOMM_ERR_RANK; then the last process keeps its
 *      proxy stopped while process 0 puts to it: the wait and a stop return GCOMM_ERR_TIMEOUT with
 *      a report naming the command, and once the peer starts everything completes.
 *   3. notifications: every rank of the other processes sends its share of --notifications N
 *      (default 1000000, the spec's million) to rank 0, which counts each (source, tag) exactly
 *      once.
 * --thread-single: MPI initialised without thread support must be refused (GCOMM_ERR_UNSUPPORTED).
 * --chunk BYTES: the proxy's chunk size (default: GCOMM_PROXY_CHUNK).
 * --async: the local delivery offers the asynchronous copy forms (as the GPU runtime's does), whose
 *   copies happen late (50 us after their start).
 * --notified: --async, and a notification with a put of at most NOTIFIED_MAX bytes in one piece
 *   (or alone) goes by the one-step form (deliver_put_notify_start, the GPU's service block),
 *   carried out late with the copies: the notification is delivered only then, once. */
#include <fcntl.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rma/proxy.h"
#include "testutil.h"

#define THREADS 3                 /* producer ranks per process */
#define REGION (4u << 20)         /* bytes of a target window that one source writes */
#define GET_AREA (1u << 20)       /* a read-only pattern at the end of each window, for gets */
#define CTRL_BYTES 4096           /* control words at the start of each process's segment */
#define NSTEPS 96                 /* operations per rank in phase 1 */
#define NBUF 4                    /* puts a rank keeps in flight before waiting for the oldest */
#define PER_PAIR 256              /* notifications of one kind from one source to one target */
#define WAIT_NS (60ull * 1000000000ull)

enum { K_PUT, K_NOTIFY, K_GET, K_FENCE };
enum { CAT_PUT, CAT_NOTIFY, CAT_GET, CAT_FENCE, NCATS }; /* tag / 100000 */

typedef struct {
    int kind, target, notify, inl;
    int32_t tag;
    uint64_t off, bytes;
} step_t;

typedef struct {
    uint64_t off, bytes;
} span_t;

/* Everything about the job, the same in every process. */
static int me, nprocs, nranks;
static size_t win_bytes, seg_bytes;
static unsigned char **seg;       /* every process's segment, as mapped here */
static step_t *plans;             /* [nranks][NSTEPS] */
static span_t *put_list;         /* [source][target][PER_PAIR]: the puts in order */
static int *nputs;                /* [source][target] */
static int *fence_puts;           /* [source][target][PER_PAIR]: puts before each flush pair */
static unsigned char *counts;     /* [local target][source][NCATS][PER_PAIR] */
static long bad_notify, bad_data; /* written by the proxy thread, read after stop */
static long fails;                /* failures seen by producer threads (atomic) */
static uint64_t base_seed;

static void fail_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail_msg(const char *fmt, ...)
{
    if (__atomic_fetch_add(&fails, 1, __ATOMIC_RELAXED) >= 10) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL process %d: ", me);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- data: byte i of a stream `key`, never zero (zero is the poison of unwritten memory) ---- */

static unsigned char pattern_at(uint64_t key, uint64_t i, uint64_t *word, uint64_t *word_i)
{
    if (*word_i != i >> 3) {
        *word_i = i >> 3;
        *word = mix(key ^ ((i >> 3) * 0x2545f4914f6cdd1dull));
    }
    unsigned char b = (unsigned char)(*word >> ((i & 7) * 8));
    return b ? b : 1;
}

static void fill_pattern(uint64_t key, uint64_t pos, unsigned char *dst, uint64_t n)
{
    uint64_t w = 0, wi = UINT64_MAX;
    for (uint64_t i = 0; i < n; i++) dst[i] = pattern_at(key, pos + i, &w, &wi);
}

/* Index of the first byte of src[0..n) that differs from the stream at pos, or -1. */
static long check_pattern(uint64_t key, uint64_t pos, const unsigned char *src, uint64_t n)
{
    uint64_t w = 0, wi = UINT64_MAX;
    for (uint64_t i = 0; i < n; i++)
        if (src[i] != pattern_at(key, pos + i, &w, &wi)) return (long)i;
    return -1;
}

static uint64_t put_key(int s, int t) { return mix(base_seed ^ ((uint64_t)s << 20 | (uint64_t)t)); }
static uint64_t get_key(int t) { return mix(base_seed ^ 0x6e7 ^ ((uint64_t)t << 40)); }

static unsigned char *window(int r) { return seg[r / THREADS] + CTRL_BYTES + (size_t)(r % THREADS) * win_bytes; }
static int is_local(int r) { return r >= 0 && r < nranks && r / THREADS == me; }
static span_t *put_span(int s, int t, int k) { return &put_list[((size_t)s * nranks + t) * PER_PAIR + k]; }
static int *fence_at(int s, int t, int f) { return &fence_puts[((size_t)s * nranks + t) * PER_PAIR + f]; }
static unsigned char *count_at(int tl, int s, int cat, int j)
{
    return &counts[(((size_t)tl * nranks + s) * NCATS + cat) * PER_PAIR + j];
}

/* Is put k of s to t in t's window (read through the shared mapping)? */
static int put_in_place(int s, int t, int k, const char *when)
{
    span_t *p = put_span(s, t, k);
    const unsigned char *w = window(t) + (size_t)s * REGION;
    long bad = check_pattern(put_key(s, t), p->off, w + p->off, p->bytes);
    if (bad >= 0) {
        fail_msg("%s: put %d of rank %d to rank %d (%llu bytes at %llu): byte %ld is %u", when, k,
                 s, t, (unsigned long long)p->bytes, (unsigned long long)p->off, bad,
                 w[p->off + (uint64_t)bad]);
        return 0;
    }
    return 1;
}

/* ---- the plans ---- */

static void make_plans(void)
{
    plans = calloc((size_t)nranks * NSTEPS, sizeof(step_t));
    put_list = calloc((size_t)nranks * nranks * PER_PAIR, sizeof(span_t));
    fence_puts = calloc((size_t)nranks * nranks * PER_PAIR, sizeof(int));
    nputs = calloc((size_t)nranks * nranks, sizeof(int));
    int *nnotify = calloc((size_t)nranks, sizeof(int)), *nget = calloc((size_t)nranks, sizeof(int)),
        *nfence = calloc((size_t)nranks, sizeof(int));
    uint64_t *cursor = calloc((size_t)nranks, sizeof(uint64_t));
    for (int s = 0; s < nranks; s++) {
        uint64_t rng = mix(base_seed + 977 * (uint64_t)s + 1);
        memset(nnotify, 0, (size_t)nranks * sizeof(int));
        memset(nget, 0, (size_t)nranks * sizeof(int));
        memset(nfence, 0, (size_t)nranks * sizeof(int));
        memset(cursor, 0, (size_t)nranks * sizeof(uint64_t));
        for (int i = 0; i < NSTEPS; i++) {
            step_t *st = &plans[(size_t)s * NSTEPS + i];
            int t = (int)gcommt_rand_range(&rng, 0, nranks - 1);
            long r = gcommt_rand_range(&rng, 0, 99);
            st->target = t;
            st->kind = r < 55 ? K_PUT : r < 75 ? K_NOTIFY : r < 88 ? K_GET : K_FENCE;
            int *np = &nputs[(size_t)s * nranks + t];
            if (st->kind == K_PUT) {
                long z = gcommt_rand_range(&rng, 0, 99);
                uint64_t bytes = z < 20   ? (uint64_t)gcommt_rand_range(&rng, 0, 24)
                                 : z < 55 ? (uint64_t)gcommt_rand_range(&rng, 25, 4096)
                                 : z < 85 ? (uint64_t)gcommt_rand_range(&rng, 4097, 256 << 10)
                                          : (uint64_t)gcommt_rand_range(&rng, 256 << 10, 7 << 19);
                uint64_t off = cursor[t] + (uint64_t)gcommt_rand_range(&rng, 0, 100);
                if (off > REGION) off = REGION;
                if (bytes > REGION - off) bytes = REGION - off;
                cursor[t] = off + bytes;
                st->off = off;
                st->bytes = bytes;
                st->inl = bytes <= GCOMMI_PQ_INLINE_MAX && gcommt_rand_range(&rng, 0, 1);
                st->notify = gcommt_rand_range(&rng, 0, 9) < 7;
                st->tag = CAT_PUT * 100000 + *np;
                *put_span(s, t, *np) = (span_t){off, bytes};
                (*np)++;
            } else if (st->kind == K_NOTIFY) {
                st->tag = CAT_NOTIFY * 100000 + nnotify[t]++;
            } else if (st->kind == K_GET) {
                long z = gcommt_rand_range(&rng, 0, 99);
                uint64_t bytes = z < 40   ? (uint64_t)gcommt_rand_range(&rng, 0, 200)
                                 : z < 75 ? (uint64_t)gcommt_rand_range(&rng, 201, 60000)
                                          : (uint64_t)gcommt_rand_range(&rng, 60001, GET_AREA);
                st->bytes = bytes;
                st->off = (uint64_t)gcommt_rand_range(&rng, 0, (long)(GET_AREA - bytes));
                st->notify = gcommt_rand_range(&rng, 0, 1);
                st->tag = CAT_GET * 100000 + nget[t]++;
            } else {
                *fence_at(s, t, nfence[t]) = *np;
                st->tag = CAT_FENCE * 100000 + nfence[t]++;
            }
        }
    }
    free(nnotify);
    free(nget);
    free(nfence);
    free(cursor);
}

/* ---- local delivery (the runtime's part), on the proxy thread ---- */

static int win_check(int32_t target, int32_t win, uint64_t offset, size_t bytes)
{
    if (!is_local(target) || win != 0 || offset > win_bytes || bytes > win_bytes - offset)
        return GCOMM_ERR_WINDOW;
    return GCOMM_SUCCESS;
}

static int deliver_put(void *ctx, int32_t target, int32_t win, uint64_t offset, const void *src,
                       size_t bytes)
{
    (void)ctx;
    int rc = win_check(target, win, offset, bytes);
    if (rc) return rc;
    if (!bytes || !src) {
        bad_data++; /* the proxy promised never to deliver nothing */
        return GCOMM_SUCCESS;
    }
    memcpy(window(target) + offset, src, bytes);
    return GCOMM_SUCCESS;
}

static int read_window(void *ctx, int32_t target, int32_t win, uint64_t offset, void *dst,
                       size_t bytes)
{
    (void)ctx;
    int rc = win_check(target, win, offset, bytes);
    if (rc) return rc;
    memcpy(dst, window(target) + offset, bytes);
    return GCOMM_SUCCESS;
}

static int read_origin(void *ctx, void *dst, uint64_t origin, size_t bytes)
{
    (void)ctx;
    memcpy(dst, (const void *)(uintptr_t)origin, bytes);
    return GCOMM_SUCCESS;
}

static int write_origin(void *ctx, uint64_t origin, const void *src, size_t bytes)
{
    (void)ctx;
    memcpy((void *)(uintptr_t)origin, src, bytes);
    return GCOMM_SUCCESS;
}

/* Phase 1's notifications: counted, and the data they cover checked on arrival. */
static int deliver_notify_traffic(void *ctx, int32_t target, int32_t source, int32_t win, int32_t tag)
{
    (void)ctx;
    int cat = tag / 100000, j = tag % 100000;
    if (!is_local(target) || source < 0 || source >= nranks || win != 0 || cat >= NCATS ||
        j >= PER_PAIR) {
        bad_notify++;
        return GCOMM_SUCCESS;
    }
    unsigned char *c = count_at(target % THREADS, source, cat, j);
    if (*c < 255) (*c)++;
    if (cat == CAT_PUT) {
        if (j >= nputs[(size_t)source * nranks + target] || !put_in_place(source, target, j, "notified put"))
            bad_data++;
    } else if (cat == CAT_FENCE) {
        /* a flush went before this notification: every earlier put of the source is complete */
        for (int k = 0; k < *fence_at(source, target, j); k++)
            if (!put_in_place(source, target, k, "notification after a flush")) bad_data++;
    }
    return GCOMM_SUCCESS;
}

/* --async: the asynchronous forms, as a DMA engine would run them. A start queues the copy; it
 * is carried out, in order, when the proxy asks about it (or a later one) at least
 * ASYNC_DELAY_NS after it started, so meanwhile the proxy goes on with the buffers in the copy's
 * hands: a receive buffer posted again, or a send buffer sent, before its copy is over would
 * deliver the wrong bytes (caught by the data checks). Proxy thread only, one proxy at a time. */
#define ASYNC_MAX 4096
#define ASYNC_DELAY_NS 50000ull
typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
    uint64_t ticket, t0;
    int notify; /* --notified: then deliver this notification */
    int32_t target, source, win, tag;
    unsigned char data[32]; /* ... and the payload was copied here at the start */
} async_copy_t;
#define NOTIFIED_MAX 24
static int (*async_notify)(void *, int32_t, int32_t, int32_t, int32_t);
static long async_notified;
static async_copy_t async_q[ASYNC_MAX];
static uint64_t async_issued, async_done; /* tickets 1..issued started, 1..done carried out */
static long async_started, async_max_pending;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int async_start(void *dst, const void *src, size_t bytes, uint64_t *ticket)
{
    if (async_issued - async_done >= ASYNC_MAX) return GCOMM_ERR_NOMEM;
    uint64_t t = ++async_issued;
    async_q[t % ASYNC_MAX] = (async_copy_t){.dst = dst, .src = src, .bytes = bytes, .ticket = t,
                                            .t0 = now_ns()};
    async_started++;
    if ((long)(async_issued - async_done) > async_max_pending)
        async_max_pending = (long)(async_issued - async_done);
    *ticket = t;
    return GCOMM_SUCCESS;
}

static int copy_done(void *ctx, uint64_t ticket)
{
    (void)ctx;
    if (ticket == 0 || ticket > async_issued) {
        bad_data++; /* a ticket never given */
        return GCOMM_ERR_INTERNAL;
    }
    if (ticket <= async_done) return 1;
    if (now_ns() - async_q[ticket % ASYNC_MAX].t0 < ASYNC_DELAY_NS) return 0;
    while (async_done < ticket) { /* in order, as on one stream */
        async_copy_t *c = &async_q[++async_done % ASYNC_MAX];
        if (c->bytes) memcpy(c->dst, c->src, c->bytes);
        if (c->notify) {
            int rc = async_notify(NULL, c->target, c->source, c->win, c->tag);
            if (rc) return rc;
            async_notified++;
        }
    }
    return 1;
}

/* --notified: the payload is taken at the start (the proxy may reuse its buffer at once, as the
 * service block's record holds a copy), stored and notified late. */
static int deliver_put_notify_start(void *ctx, int32_t target, int32_t source, int32_t win,
                                    int32_t tag, uint64_t offset, const void *src, size_t bytes,
                                    uint64_t *ticket)
{
    (void)ctx;
    if (bytes > NOTIFIED_MAX || (bytes && !src) || (!bytes && src)) {
        bad_data++;
        return GCOMM_ERR_INTERNAL;
    }
    if (bytes) {
        int rc = win_check(target, win, offset, bytes);
        if (rc) return rc;
    }
    int rc = async_start(bytes ? window(target) + offset : NULL, NULL, bytes, ticket);
    if (rc) return rc;
    async_copy_t *c = &async_q[*ticket % ASYNC_MAX];
    if (bytes) memcpy(c->data, src, bytes);
    c->src = c->data;
    c->notify = 1;
    c->target = target;
    c->source = source;
    c->win = win;
    c->tag = tag;
    return GCOMM_SUCCESS;
}

static int deliver_put_start(void *ctx, int32_t target, int32_t win, uint64_t offset,
                             const void *src, size_t bytes, uint64_t *ticket)
{
    (void)ctx;
    int rc = win_check(target, win, offset, bytes);
    if (rc) return rc;
    if (!bytes || !src) {
        bad_data++;
        return GCOMM_ERR_INTERNAL;
    }
    return async_start(window(target) + offset, src, bytes, ticket);
}

static int read_origin_start(void *ctx, void *dst, uint64_t origin, size_t bytes, uint64_t *ticket)
{
    (void)ctx;
    return async_start(dst, (const void *)(uintptr_t)origin, bytes, ticket);
}

/* ---- a job's proxy ---- */

typedef struct {
    gcommi_proxy_transport_t *t;
    gcommi_proxy_t *p;
    gcommi_pq_t ring;
    int32_t *proc_of_rank;
} proxy_set_t;

static size_t opt_chunk;
static int opt_async, opt_notified;

static void proxy_open(proxy_set_t *ps, uint32_t depth, gcommi_proxy_local_ops_t local)
{
    memset(ps, 0, sizeof(*ps));
    TEST_OK(gcommi_proxy_mpi_create(MPI_COMM_WORLD, &ps->t));
    TEST_OK(gcommi_proxy_ring_alloc(depth, &ps->ring));
    ps->proc_of_rank = malloc((size_t)nranks * sizeof(int32_t));
    for (int r = 0; r < nranks; r++) ps->proc_of_rank[r] = r / THREADS;
    gcommi_proxy_params_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.transport = ps->t;
    prm.local = local;
    prm.nranks = nranks;
    prm.proc_of_rank = ps->proc_of_rank;
    prm.rings[0] = ps->ring;
    prm.nrings = 1;
    prm.chunk = opt_chunk;
    TEST_OK(gcommi_proxy_create(&prm, &ps->p));
}

static void proxy_close(proxy_set_t *ps)
{
    gcommi_proxy_destroy(ps->p);
    gcommi_proxy_ring_free(&ps->ring);
    ps->t->destroy(ps->t);
    free(ps->proc_of_rank);
}

static gcommi_proxy_local_ops_t local_ops(int (*notify)(void *, int32_t, int32_t, int32_t, int32_t))
{
    gcommi_proxy_local_ops_t l = {.deliver_put = deliver_put,
                                  .deliver_notify = notify,
                                  .read_origin = read_origin,
                                  .write_origin = write_origin,
                                  .read_window = read_window}; /* no launch to stop */
    if (opt_async) {
        l.deliver_put_start = deliver_put_start;
        l.read_origin_start = read_origin_start;
        l.copy_done = copy_done;
    }
    if (opt_notified) {
        async_notify = notify;
        l.deliver_put_notify_start = deliver_put_notify_start;
        l.put_notify_max = NOTIFIED_MAX;
    }
    return l;
}

/* ---- phase 1: traffic ---- */

typedef struct {
    proxy_set_t *ps;
    int rank;
    uint32_t next_id;
} producer_t;

static gcommi_pq_cmd_t cmd_of(producer_t *pr, int op, int target)
{
    gcommi_pq_cmd_t c;
    memset(&c, 0, sizeof(c));
    c.op = (uint8_t)op;
    c.source = pr->rank;
    c.target = target;
    c.id = ++pr->next_id;
    return c;
}

static void post(producer_t *pr, const gcommi_pq_cmd_t *c)
{
    int rc = gcommi_proxy_post(pr->ps->p, 0, c, WAIT_NS);
    if (rc) fail_msg("rank %d: post of command %u: %s", pr->rank, c->id, gcomm_last_error_detail());
}

static int wait_id(producer_t *pr, uint32_t id)
{
    int rc = gcommi_proxy_wait(pr->ps->p, pr->rank, id, WAIT_NS);
    if (rc) fail_msg("rank %d: wait for command %u: %s", pr->rank, id, gcomm_last_error_detail());
    return rc;
}

typedef struct {
    unsigned char *buf;
    uint32_t id;
    int target, k;
} inflight_t;

/* A put is done: its bytes must be at the target; the origin buffer is then poisoned and freed,
 * so a proxy still reading it would deliver poison (seen by the final scan) or be caught by
 * AddressSanitizer. */
static void put_retire(producer_t *pr, inflight_t *f)
{
    if (!f->id) return;
    if (wait_id(pr, f->id) == GCOMM_SUCCESS) put_in_place(pr->rank, f->target, f->k, "after done");
    if (f->buf) {
        memset(f->buf, 0xee, put_span(pr->rank, f->target, f->k)->bytes);
        free(f->buf);
    }
    f->id = 0;
    f->buf = NULL;
}

static void *producer_traffic(void *arg)
{
    producer_t *pr = arg;
    int s = pr->rank;
    inflight_t fl[NBUF];
    memset(fl, 0, sizeof(fl));
    int nb = 0;
    int *kput = calloc((size_t)nranks, sizeof(int));
    for (int i = 0; i < NSTEPS; i++) {
        if (s % THREADS == 0 && i == NSTEPS / 2) {
            /* the world barrier: afterwards every process's thread 0 has its earlier puts done */
            gcommi_pq_cmd_t c = cmd_of(pr, GCOMMI_PQ_BARRIER, -1);
            post(pr, &c);
            if (wait_id(pr, c.id) == GCOMM_SUCCESS) {
                for (int q = 0; q < nprocs; q++) {
                    int s0 = q * THREADS;
                    int *seen = calloc((size_t)nranks, sizeof(int));
                    for (int k = 0; k < NSTEPS / 2; k++) {
                        step_t *st = &plans[(size_t)s0 * NSTEPS + k];
                        if (st->kind == K_PUT)
                            put_in_place(s0, st->target, seen[st->target]++, "after the barrier");
                    }
                    free(seen);
                }
            }
        }
        step_t *st = &plans[(size_t)s * NSTEPS + i];
        int t = st->target;
        switch (st->kind) {
        case K_PUT: {
            inflight_t *f = &fl[nb];
            put_retire(pr, f);
            nb = (nb + 1) % NBUF;
            gcommi_pq_cmd_t c = cmd_of(pr, GCOMMI_PQ_PUT, t);
            c.offset = (uint64_t)s * REGION + st->off;
            c.bytes = st->bytes;
            c.tag = st->tag;
            c.flags = st->notify ? GCOMMI_PQ_F_NOTIFY : 0;
            if (st->inl) {
                c.flags |= GCOMMI_PQ_F_INLINE;
                fill_pattern(put_key(s, t), st->off, c.u.data, st->bytes);
            } else {
                f->buf = malloc(st->bytes ? st->bytes : 1);
                fill_pattern(put_key(s, t), st->off, f->buf, st->bytes);
                c.u.origin = (uint64_t)(uintptr_t)f->buf;
            }
            f->id = c.id;
            f->target = t;
            f->k = kput[t]++;
            post(pr, &c);
            break;
        }
        case K_NOTIFY: {
            gcommi_pq_cmd_t c = cmd_of(pr, GCOMMI_PQ_NOTIFY, t);
            c.tag = st->tag;
            post(pr, &c);
            break;
        }
        case K_GET: {
            unsigned char *buf = calloc(1, st->bytes ? st->bytes : 1);
            gcommi_pq_cmd_t c = cmd_of(pr, GCOMMI_PQ_GET, t);
            c.offset = win_bytes - GET_AREA + st->off;
            c.bytes = st->bytes;
            c.tag = st->tag;
            c.flags = st->notify ? GCOMMI_PQ_F_NOTIFY : 0;
            c.u.origin = (uint64_t)(uintptr_t)buf;
            post(pr, &c);
            if (wait_id(pr, c.id) == GCOMM_SUCCESS) {
                long bad = check_pattern(get_key(t), st->off, buf, st->bytes);
                if (bad >= 0)
                    fail_msg("rank %d: get of %llu bytes at %llu from rank %d: byte %ld is %u", s,
                             (unsigned long long)st->bytes, (unsigned long long)st->off, t, bad,
                             buf[bad]);
            }
            free(buf);
            break;
        }
        case K_FENCE: {
            gcommi_pq_cmd_t f = cmd_of(pr, GCOMMI_PQ_FLUSH, -1);
            post(pr, &f);
            gcommi_pq_cmd_t c = cmd_of(pr, GCOMMI_PQ_NOTIFY, t);
            c.tag = st->tag;
            post(pr, &c);
            break;
        }
        }
    }
    for (int k = 0; k < NBUF; k++) put_retire(pr, &fl[(nb + k) % NBUF]);
    wait_id(pr, pr->next_id);
    free(kput);
    return NULL;
}

/* After the traffic: every window holds exactly the puts' bytes and zero elsewhere, and every
 * notification arrived once. */
static void verify_traffic(void)
{
    long scanned = 0;
    for (int tl = 0; tl < THREADS; tl++) {
        int t = me * THREADS + tl;
        const unsigned char *w = window(t);
        for (int s = 0; s < nranks; s++) {
            const unsigned char *r = w + (size_t)s * REGION;
            uint64_t pos = 0;
            long stray = 0;
            for (int k = 0; k < nputs[(size_t)s * nranks + t]; k++) {
                span_t *p = put_span(s, t, k);
                for (; pos < p->off; pos++) stray += r[pos] != 0;
                long bad = check_pattern(put_key(s, t), p->off, r + p->off, p->bytes);
                TEST_CHECK(bad < 0, "rank %d, put %d of rank %d (%llu bytes at %llu): byte %ld wrong",
                           t, k, s, (unsigned long long)p->bytes, (unsigned long long)p->off, bad);
                pos = p->off + p->bytes;
                scanned += (long)p->bytes;
            }
            for (; pos < REGION; pos++) stray += r[pos] != 0;
            TEST_CHECK(stray == 0, "rank %d, region of rank %d: %ld bytes written outside every put",
                       t, s, stray);
        }
        long bad = check_pattern(get_key(t), 0, w + win_bytes - GET_AREA, GET_AREA);
        TEST_CHECK(bad < 0, "rank %d: get area changed at %ld", t, bad);
        /* notifications: the plans say which (source, tag) must have come, once each */
        long wrong = 0, expected = 0;
        for (int s = 0; s < nranks; s++) {
            unsigned char want[NCATS][PER_PAIR];
            memset(want, 0, sizeof(want));
            for (int i = 0; i < NSTEPS; i++) {
                step_t *st = &plans[(size_t)s * NSTEPS + i];
                if (st->target == t && (st->kind == K_NOTIFY || st->kind == K_FENCE || st->notify))
                    want[st->tag / 100000][st->tag % 100000] = 1;
            }
            for (int cat = 0; cat < NCATS; cat++)
                for (int j = 0; j < PER_PAIR; j++) {
                    expected += want[cat][j];
                    if (*count_at(tl, s, cat, j) != want[cat][j]) {
                        if (wrong++ < 5)
                            fprintf(stderr, "rank %d: notification (rank %d, tag %d) came %d times, "
                                    "expected %d\n", t, s, cat * 100000 + j,
                                    *count_at(tl, s, cat, j), want[cat][j]);
                    }
                }
        }
        TEST_CHECK(wrong == 0, "rank %d: %ld notifications missing or repeated (of %ld)", t, wrong,
                   expected);
    }
    TEST_CHECK(bad_notify == 0, "%ld notifications with a bad rank, window or tag", bad_notify);
    TEST_CHECK(bad_data == 0, "%ld notifications came before the data they cover", bad_data);
    if (me == 0) printf("traffic: windows scanned (%ld bytes of puts at process 0)\n", scanned);
}

static void phase_traffic(void)
{
    proxy_set_t ps;
    proxy_open(&ps, 64, local_ops(deliver_notify_traffic)); /* a small ring: credits hold back */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_s();
    TEST_OK(gcommi_proxy_start(ps.p));
    pthread_t th[THREADS];
    producer_t pr[THREADS];
    for (int k = 0; k < THREADS; k++) {
        pr[k] = (producer_t){&ps, me * THREADS + k, 0};
        pthread_create(&th[k], NULL, producer_traffic, &pr[k]);
    }
    for (int k = 0; k < THREADS; k++) pthread_join(th[k], NULL);
    TEST_OK(gcommi_proxy_stop(ps.p, WAIT_NS));
    double t1 = now_s();
    proxy_close(&ps);
    MPI_Barrier(MPI_COMM_WORLD); /* every process's proxy is done: the windows are final */
    TEST_CHECK(fails == 0, "%ld failures in the producer threads", fails);
    verify_traffic();
    if (me == 0)
        printf("traffic: %d ranks x %d operations in %.2f s\n", nranks, NSTEPS, t1 - t0);
}

/* ---- phase 2: errors, and a peer that does not answer ---- */

static long timeout_notified;

static int deliver_notify_count(void *ctx, int32_t target, int32_t source, int32_t win, int32_t tag)
{
    (void)ctx;
    (void)win;
    if (target == (nprocs - 1) * THREADS && source == 0 && tag == 7) timeout_notified++;
    else bad_notify++;
    return GCOMM_SUCCESS;
}

/* The local delivery table: each of deliver_put and read_origin in one form at least, and the
 * asynchronous forms with copy_done or not at all. */
static void check_local_ops(const proxy_set_t *ps)
{
    gcommi_proxy_params_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.transport = ps->t;
    prm.nranks = nranks;
    prm.proc_of_rank = ps->proc_of_rank;
    gcommi_proxy_t *p = NULL;
    const gcommi_proxy_local_ops_t sync = {.deliver_put = deliver_put,
                                           .deliver_notify = deliver_notify_count,
                                           .read_origin = read_origin,
                                           .write_origin = write_origin,
                                           .read_window = read_window};
    gcommi_proxy_local_ops_t l = sync;
    l.deliver_put = NULL; /* neither form */
    prm.local = l;
    TEST_RC(GCOMM_ERR_ARG, gcommi_proxy_create(&prm, &p));
    l = sync;
    l.read_origin = NULL;
    prm.local = l;
    TEST_RC(GCOMM_ERR_ARG, gcommi_proxy_create(&prm, &p));
    l = sync;
    l.deliver_put_start = deliver_put_start; /* a start without copy_done */
    l.read_origin_start = read_origin_start;
    prm.local = l;
    TEST_RC(GCOMM_ERR_ARG, gcommi_proxy_create(&prm, &p));
    l.copy_done = copy_done; /* the asynchronous forms alone are enough */
    l.deliver_put = NULL;
    l.read_origin = NULL;
    prm.local = l;
    TEST_OK(gcommi_proxy_create(&prm, &p));
    gcommi_proxy_destroy(p);
}

static void phase_errors_and_timeout(void)
{
    proxy_set_t ps;
    proxy_open(&ps, 16, local_ops(deliver_notify_count));
    check_local_ops(&ps);
    volatile uint32_t *go = (volatile uint32_t *)seg[0]; /* process 0's control word */
    int last = nprocs - 1, quiet = me == last && nprocs > 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (!quiet) TEST_OK(gcommi_proxy_start(ps.p));
    /* an idle proxy backs off: it must not take a core */
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    usleep(500000);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    double cpu = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    TEST_CHECK(cpu < 0.1, "an idle proxy used %.3f s of CPU in 0.5 s", cpu);
    if (me == 0) printf("idle: the process used %.1f ms of CPU in 500 ms\n", 1e3 * cpu);
    if (me == 0) {
        producer_t pr = {&ps, 0, 0};
        char report[4096];
        /* errors found at the target come back to the origin's wait */
        gcommi_pq_cmd_t c = cmd_of(&pr, GCOMMI_PQ_PUT, 1);
        c.offset = win_bytes - 8;
        c.bytes = 16;
        unsigned char data[16] = {1};
        c.u.origin = (uint64_t)(uintptr_t)data;
        TEST_OK(gcommi_proxy_post(ps.p, 0, &c, WAIT_NS));
        TEST_RC(GCOMM_ERR_WINDOW, gcommi_proxy_wait(ps.p, 0, c.id, WAIT_NS));
        TEST_CHECK(strstr(gcomm_last_error_detail(), "put to rank 1") != NULL,
                   "detail names the put: %s", gcomm_last_error_detail());
        c = cmd_of(&pr, GCOMMI_PQ_GET, 0);
        c.offset = win_bytes;
        c.bytes = 1 << 20; /* chunked: the failure cuts the stream short */
        unsigned char *sink = calloc(1, c.bytes);
        c.u.origin = (uint64_t)(uintptr_t)sink;
        TEST_OK(gcommi_proxy_post(ps.p, 0, &c, WAIT_NS));
        TEST_RC(GCOMM_ERR_WINDOW, gcommi_proxy_wait(ps.p, 0, c.id, WAIT_NS));
        free(sink);
        c = cmd_of(&pr, GCOMMI_PQ_NOTIFY, nranks + 5);
        TEST_OK(gcommi_proxy_post(ps.p, 0, &c, WAIT_NS));
        TEST_RC(GCOMM_ERR_RANK, gcommi_proxy_wait(ps.p, 0, c.id, WAIT_NS));
        TEST_OK(gcommi_proxy_wait(ps.p, 0, c.id, WAIT_NS)); /* an error is returned once */
        if (nprocs > 1) {
            /* the last process has not started its proxy: it never answers */
            c = cmd_of(&pr, GCOMMI_PQ_PUT, last * THREADS);
            c.flags = GCOMMI_PQ_F_NOTIFY;
            c.tag = 7;
            c.bytes = 100;
            c.offset = 4096;
            unsigned char msg[100];
            fill_pattern(7, 0, msg, sizeof(msg));
            c.u.origin = (uint64_t)(uintptr_t)msg;
            TEST_OK(gcommi_proxy_post(ps.p, 0, &c, WAIT_NS));
            double t0 = now_s();
            TEST_RC(GCOMM_ERR_TIMEOUT, gcommi_proxy_wait(ps.p, 0, c.id, 300000000ull));
            double waited = now_s() - t0;
            char d[512];
            snprintf(d, sizeof(d), "%s", gcomm_last_error_detail());
            char want[64];
            snprintf(want, sizeof(want), "(process %d)", last);
            TEST_CHECK(strstr(d, "waiting for the acknowledgement") && strstr(d, want) &&
                           strstr(d, "put to rank"), "the timeout names the pending put: %s", d);
            TEST_CHECK(waited >= 0.29 && waited < 5, "timed out after %.2f s (limit 0.3 s)", waited);
            TEST_OK(gcommi_proxy_report(ps.p, report, sizeof(report)));
            TEST_CHECK(strstr(report, "1 commands in flight") != NULL, "report: %s", report);
            /* stop cannot finish either, and says why */
            TEST_RC(GCOMM_ERR_TIMEOUT, gcommi_proxy_stop(ps.p, 200000000ull));
            TEST_CHECK(strstr(gcomm_last_error_detail(), "carrying out its last commands") != NULL,
                       "stop's timeout: %s", gcomm_last_error_detail());
            printf("timeout: %s\n", d);
            __atomic_store_n(go, 1, __ATOMIC_RELEASE); /* now the peer may start */
            TEST_OK(gcommi_proxy_wait(ps.p, 0, c.id, WAIT_NS));
            TEST_CHECK(memcmp(window(last * THREADS) + 4096, msg, sizeof(msg)) == 0,
                       "the late put arrived");
        }
    } else if (quiet) {
        double t0 = now_s();
        while (!__atomic_load_n(go, __ATOMIC_ACQUIRE) && now_s() - t0 < 60) usleep(1000);
        TEST_CHECK(*go == 1, "process 0 never finished its timeout test");
        TEST_OK(gcommi_proxy_start(ps.p));
    }
    TEST_OK(gcommi_proxy_stop(ps.p, WAIT_NS));
    proxy_close(&ps);
    if (quiet) TEST_CHECK(timeout_notified == 1, "the late put's notification came %ld times", timeout_notified);
    TEST_CHECK(bad_notify == 0, "%ld unexpected notifications", bad_notify);
}

/* ---- phase 3: many small notifications to one rank ---- */

static unsigned char *ncount; /* [source][j] at process 0 */
static long per_source;       /* the stride of ncount: the most one source sends */
static long many_total;       /* --notifications: shared by the sending ranks */

/* Notifications rank s sends in phase 3 (the first ranks take one more when it does not divide). */
static long share_of(int s)
{
    long sources = (long)(nprocs - 1) * THREADS, k = s - THREADS;
    return many_total / sources + (k < many_total % sources);
}

static int deliver_notify_many(void *ctx, int32_t target, int32_t source, int32_t win, int32_t tag)
{
    (void)ctx;
    (void)win;
    if (target != 0 || source < THREADS || source >= nranks || tag < 0 || tag >= share_of(source)) {
        bad_notify++;
        return GCOMM_SUCCESS;
    }
    unsigned char *c = &ncount[(size_t)source * per_source + tag];
    if (*c < 255) (*c)++;
    return GCOMM_SUCCESS;
}

static void *producer_notify(void *arg)
{
    producer_t *pr = arg;
    for (long j = 0; j < share_of(pr->rank); j++) {
        gcommi_pq_cmd_t c = cmd_of(pr, GCOMMI_PQ_NOTIFY, 0);
        c.tag = (int32_t)j;
        post(pr, &c);
    }
    wait_id(pr, pr->next_id);
    return NULL;
}

static void phase_notifications(long total)
{
    if (nprocs < 2) return;
    int sources = (nprocs - 1) * THREADS;
    /* tags are 20 bits in the lanes */
    many_total = total < (long)sources << 20 ? total : (long)sources << 20;
    per_source = (many_total + sources - 1) / sources;
    if (me == 0) ncount = calloc((size_t)nranks * per_source, 1);
    proxy_set_t ps;
    proxy_open(&ps, 1024, local_ops(deliver_notify_many));
    bad_notify = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_s();
    TEST_OK(gcommi_proxy_start(ps.p));
    if (me > 0) {
        pthread_t th[THREADS];
        producer_t pr[THREADS];
        for (int k = 0; k < THREADS; k++) {
            pr[k] = (producer_t){&ps, me * THREADS + k, 0};
            pthread_create(&th[k], NULL, producer_notify, &pr[k]);
        }
        for (int k = 0; k < THREADS; k++) pthread_join(th[k], NULL);
    }
    TEST_OK(gcommi_proxy_stop(ps.p, WAIT_NS));
    double t1 = now_s();
    proxy_close(&ps);
    TEST_CHECK(fails == 0, "%ld failures in the producer threads", fails);
    if (me == 0) {
        long missing = 0, repeated = 0;
        for (int s = THREADS; s < nranks; s++)
            for (long j = 0; j < share_of(s); j++) {
                unsigned char c = ncount[(size_t)s * per_source + j];
                missing += c == 0;
                repeated += c > 1;
            }
        TEST_CHECK(missing == 0 && repeated == 0 && bad_notify == 0,
                   "notifications: %ld missing, %ld repeated, %ld foreign", missing, repeated,
                   bad_notify);
        long n = many_total;
        printf("notifications: %ld from %d ranks of %d processes to rank 0 in %.2f s (%.0f per s), "
               "every one exactly once\n", n, sources, nprocs - 1, t1 - t0, (double)n / (t1 - t0));
        free(ncount);
    }
}

/* ---- setup ---- */

static int map_segments(void)
{
    /* each process's windows in a shared-memory file every process maps (all on one node) */
    long job = (long)getpid();
    MPI_Bcast(&job, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    char name[96];
    snprintf(name, sizeof(name), "/gcomm_test_proxy_%ld_%d", job, me);
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    int ok = fd >= 0 && ftruncate(fd, (off_t)seg_bytes) == 0, all = 0;
    if (fd >= 0) close(fd);
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    seg = calloc((size_t)nprocs, sizeof(*seg));
    for (int q = 0; all && q < nprocs; q++) {
        snprintf(name, sizeof(name), "/gcomm_test_proxy_%ld_%d", job, q);
        int f = shm_open(name, O_RDWR, 0600);
        void *m = f >= 0 ? mmap(NULL, seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0) : MAP_FAILED;
        if (f >= 0) close(f);
        if (m == MAP_FAILED) {
            all = 0;
            break;
        }
        seg[q] = m;
    }
    ok = all;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    snprintf(name, sizeof(name), "/gcomm_test_proxy_%ld_%d", job, me);
    shm_unlink(name); /* mapped everywhere (or failed): nothing must outlive the job */
    if (!all) return 0;
    for (int tl = 0; tl < THREADS; tl++) {
        int t = me * THREADS + tl;
        fill_pattern(get_key(t), 0, window(t) + win_bytes - GET_AREA, GET_AREA);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return 1;
}

int main(int argc, char **argv)
{
    int single = 0;
    long notifications = 1000000; /* the spec's million: about a second here */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--thread-single") == 0) single = 1;
        else if (strcmp(argv[i], "--notifications") == 0 && i + 1 < argc) notifications = atol(argv[++i]);
        else if (strcmp(argv[i], "--chunk") == 0 && i + 1 < argc) opt_chunk = (size_t)atol(argv[++i]);
        else if (strcmp(argv[i], "--async") == 0) opt_async = 1;
        else if (strcmp(argv[i], "--notified") == 0) opt_async = opt_notified = 1;
    }
    int provided = 0;
    MPI_Init_thread(&argc, &argv, single ? MPI_THREAD_SINGLE : MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    nranks = nprocs * THREADS;
    int rc = 0;
    if (single) {
        gcommi_proxy_transport_t *t = NULL;
        if (provided >= MPI_THREAD_SERIALIZED) {
            if (me == 0) printf("MPI gave thread level %d for MPI_THREAD_SINGLE: nothing to test\n", provided);
            MPI_Finalize();
            return GCOMM_TEST_SKIP;
        }
        TEST_RC(GCOMM_ERR_UNSUPPORTED, gcommi_proxy_mpi_create(MPI_COMM_WORLD, &t));
        TEST_CHECK(strstr(gcomm_last_error_detail(), "MPI_THREAD_SERIALIZED") != NULL, "detail: %s",
                   gcomm_last_error_detail());
        TEST_CHECK(t == NULL, "no transport on failure");
    } else {
        MPI_Comm node;
        int nlocal = 0;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_size(node, &nlocal);
        MPI_Comm_free(&node);
        base_seed = gcommt_seed(0x5eed);
        win_bytes = (size_t)nranks * REGION + GET_AREA;
        seg_bytes = CTRL_BYTES + THREADS * win_bytes;
        if (nlocal != nprocs || !map_segments()) {
            if (me == 0) printf("test_proxy_mpi: needs its processes on one node with shared memory\n");
            MPI_Finalize();
            return GCOMM_TEST_SKIP;
        }
        counts = calloc((size_t)THREADS * nranks * NCATS * PER_PAIR, 1);
        make_plans();
        phase_traffic();
        phase_errors_and_timeout();
        phase_notifications(notifications);
        if (opt_async) {
            /* the proxy took the asynchronous forms, and had several copies under way at once */
            TEST_CHECK(async_started > 0 && async_max_pending > 1,
                       "asynchronous copies: %ld started, at most %ld at once", async_started,
                       async_max_pending);
            printf("process %d: %ld asynchronous copies, at most %ld under way at once\n", me,
                   async_started, async_max_pending);
        }
        if (opt_notified) {
            /* notifications (rank 0 receives a share of the million) took the one-step form */
            long all = 0;
            MPI_Allreduce(&async_notified, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            TEST_CHECK(all >= notifications / 2, "%ld notifications by the one-step form", all);
            printf("process %d: %ld notifications by the one-step form (%ld in the job)\n", me,
                   async_notified, all);
        }
        for (int q = 0; q < nprocs; q++) munmap(seg[q], seg_bytes);
        free(seg);
        free(counts);
        free(plans);
        free(put_list);
        free(fence_puts);
        free(nputs);
    }
    int bad = gcommt_failures, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    rc = gcommt_finish("test_proxy_mpi");
    MPI_Finalize();
    return rc || any != 0;
}
