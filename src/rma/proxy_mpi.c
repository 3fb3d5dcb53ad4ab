/* The proxy's MPI transport (library gcomm_mpi): messages of the proxy protocol (proxy.c) as
 * nonblocking MPI point-to-point operations on a duplicate of the job's communicator, one tag per
 * channel, and MPI_Ibarrier for barriers. All completions are collected with one MPI_Testsome per
 * call of progress, so a poll costs one pass through MPI's progress engine however many
 * operations are posted.
 *
 * Only the proxy thread calls these operations while it runs; create and destroy are called by
 * the owner around it. MPI_THREAD_SERIALIZED is therefore enough, provided the application does
 * not call MPI itself while the proxy runs (with MPI_THREAD_MULTIPLE it may). */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "rma/proxy.h"

/* Tags on the duplicate communicator (nobody else sends on it): TAG_BASE + channel. */
#define TAG_BASE 0x4770

typedef struct {
    void *ctx;
    int peer;
    size_t len;
    int cancelled;
} mpi_event_t;

typedef struct {
    gcommi_proxy_transport_t t;
    MPI_Comm comm;
    int cap;  /* request slots */
    int hi;   /* slots [0, hi) were ever used: what Testsome scans */
    MPI_Request *reqs;
    void **ctx;
    unsigned char *is_recv;
    int *free_slots, nfree;
    int *idx;          /* Testsome's outputs */
    MPI_Status *st;
    mpi_event_t *ev;   /* completions, copied out before the callbacks post new operations */
} mpi_tp_t;

static const char *thread_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    }
    return "an unknown thread level";
}

/* Doubles the request slots. Slots are few (posted receives, send buffers, a barrier): growth
 * happens a few times at start, never per message. */
static int grow(mpi_tp_t *m)
{
    int cap = m->cap ? 2 * m->cap : 128;
    MPI_Request *reqs = realloc(m->reqs, (size_t)cap * sizeof(*reqs));
    if (reqs) m->reqs = reqs;
    void **ctx = realloc(m->ctx, (size_t)cap * sizeof(*ctx));
    if (ctx) m->ctx = ctx;
    unsigned char *is_recv = realloc(m->is_recv, (size_t)cap);
    if (is_recv) m->is_recv = is_recv;
    int *free_slots = realloc(m->free_slots, (size_t)cap * sizeof(int));
    if (free_slots) m->free_slots = free_slots;
    int *idx = realloc(m->idx, (size_t)cap * sizeof(int));
    if (idx) m->idx = idx;
    MPI_Status *st = realloc(m->st, (size_t)cap * sizeof(*st));
    if (st) m->st = st;
    mpi_event_t *ev = realloc(m->ev, (size_t)cap * sizeof(*ev));
    if (ev) m->ev = ev;
    if (!reqs || !ctx || !is_recv || !free_slots || !idx || !st || !ev)
        return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory for %d MPI requests", cap);
    /* free slots are taken from the end: push the new ones highest first so low slots go first
     * and Testsome scans few */
    for (int i = cap - 1; i >= m->cap; i--) {
        m->reqs[i] = MPI_REQUEST_NULL;
        m->free_slots[m->nfree++] = i;
    }
    m->cap = cap;
    return GCOMM_SUCCESS;
}

static int take_slot(mpi_tp_t *m, void *ctx, int is_recv, int *slot)
{
    if (!m->nfree) GCOMMI_CHECK(grow(m));
    int s = m->free_slots[--m->nfree];
    m->ctx[s] = ctx;
    m->is_recv[s] = (unsigned char)is_recv;
    if (s >= m->hi) m->hi = s + 1;
    *slot = s;
    return GCOMM_SUCCESS;
}

static void give_slot(mpi_tp_t *m, int s)
{
    m->reqs[s] = MPI_REQUEST_NULL;
    m->ctx[s] = NULL;
    m->free_slots[m->nfree++] = s;
}

static void free_tp(mpi_tp_t *m)
{
    if (!m) return;
    free(m->reqs);
    free(m->ctx);
    free(m->is_recv);
    free(m->free_slots);
    free(m->idx);
    free(m->st);
    free(m->ev);
    free(m);
}

static int mpi_isend(gcommi_proxy_transport_t *t, int peer, int chan, const void *buf, size_t len,
                     void *ctx)
{
    mpi_tp_t *m = t->state;
    if (len > INT_MAX) return GCOMMI_ERROR(GCOMM_ERR_OVERFLOW, "message of %zu bytes", len);
    int s;
    GCOMMI_CHECK(take_slot(m, ctx, 0, &s));
    int rc = MPI_Isend(buf, (int)len, MPI_BYTE, peer, TAG_BASE + chan, m->comm, &m->reqs[s]);
    if (rc != MPI_SUCCESS) {
        give_slot(m, s);
        return GCOMMI_ERROR(GCOMM_ERR_MPI, "MPI_Isend of %zu bytes to %d failed (%d)", len, peer, rc);
    }
    return GCOMM_SUCCESS;
}

static int mpi_irecv(gcommi_proxy_transport_t *t, int chan, void *buf, size_t len, void *ctx)
{
    mpi_tp_t *m = t->state;
    if (len > INT_MAX) return GCOMMI_ERROR(GCOMM_ERR_OVERFLOW, "receive of %zu bytes", len);
    int s;
    GCOMMI_CHECK(take_slot(m, ctx, 1, &s));
    int rc = MPI_Irecv(buf, (int)len, MPI_BYTE, MPI_ANY_SOURCE, TAG_BASE + chan, m->comm,
                       &m->reqs[s]);
    if (rc != MPI_SUCCESS) {
        give_slot(m, s);
        return GCOMMI_ERROR(GCOMM_ERR_MPI, "MPI_Irecv failed (%d)", rc);
    }
    return GCOMM_SUCCESS;
}

static int mpi_ibarrier(gcommi_proxy_transport_t *t, void *ctx)
{
    mpi_tp_t *m = t->state;
    int s;
    GCOMMI_CHECK(take_slot(m, ctx, 0, &s));
    int rc = MPI_Ibarrier(m->comm, &m->reqs[s]);
    if (rc != MPI_SUCCESS) {
        give_slot(m, s);
        return GCOMMI_ERROR(GCOMM_ERR_MPI, "MPI_Ibarrier failed (%d)", rc);
    }
    return GCOMM_SUCCESS;
}

static int mpi_progress(gcommi_proxy_transport_t *t, gcommi_proxy_event_fn fn, void *arg)
{
    mpi_tp_t *m = t->state;
    if (!m->hi) return 0;
    int n = 0;
    int rc = MPI_Testsome(m->hi, m->reqs, &n, m->idx, m->st);
    if (rc != MPI_SUCCESS) return GCOMMI_ERROR(GCOMM_ERR_MPI, "MPI_Testsome failed (%d)", rc);
    if (n == MPI_UNDEFINED || n <= 0) return 0;
    for (int k = 0; k < n; k++) {
        int s = m->idx[k];
        mpi_event_t *e = &m->ev[k];
        e->ctx = m->ctx[s];
        e->peer = -1;
        e->len = 0;
        e->cancelled = 0;
        if (m->is_recv[s]) {
            MPI_Test_cancelled(&m->st[k], &e->cancelled);
            if (!e->cancelled) {
                int count = 0;
                MPI_Get_count(&m->st[k], MPI_BYTE, &count);
                e->peer = m->st[k].MPI_SOURCE;
                e->len = count > 0 ? (size_t)count : 0;
            }
        }
        give_slot(m, s);
    }
    for (int k = 0; k < n; k++) fn(arg, m->ev[k].ctx, m->ev[k].peer, m->ev[k].len, m->ev[k].cancelled);
    return n;
}

static int mpi_cancel_recvs(gcommi_proxy_transport_t *t)
{
    mpi_tp_t *m = t->state;
    for (int s = 0; s < m->hi; s++)
        if (m->reqs[s] != MPI_REQUEST_NULL && m->is_recv[s] && MPI_Cancel(&m->reqs[s]) != MPI_SUCCESS)
            return GCOMMI_ERROR(GCOMM_ERR_MPI, "MPI_Cancel of a posted receive failed");
    return GCOMM_SUCCESS;
}

static void mpi_destroy(gcommi_proxy_transport_t *t)
{
    if (!t) return;
    mpi_tp_t *m = t->state;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        /* normally nothing is left (the proxy stopped cleanly); after an abandoned proxy, let
         * sends finish in the background and take receives back */
        for (int s = 0; s < m->hi; s++) {
            if (m->reqs[s] == MPI_REQUEST_NULL) continue;
            if (m->is_recv[s]) {
                MPI_Cancel(&m->reqs[s]);
                MPI_Wait(&m->reqs[s], MPI_STATUS_IGNORE);
            } else {
                MPI_Request_free(&m->reqs[s]);
            }
        }
        MPI_Comm_free(&m->comm);
    }
    free_tp(m);
}

int gcommi_proxy_mpi_create(MPI_Comm comm, gcommi_proxy_transport_t **out)
{
    int flag = 0, finalized = 0;
    MPI_Initialized(&flag);
    MPI_Finalized(&finalized);
    if (!flag || finalized) return GCOMMI_ERROR(GCOMM_ERR_MPI, "MPI is not initialised, or finalised");
    if (comm == MPI_COMM_NULL || !out) return GCOMMI_ERROR(GCOMM_ERR_ARG, "comm is MPI_COMM_NULL");
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    mpi_tp_t *m = calloc(1, sizeof(*m));
    int st = GCOMM_SUCCESS;
    if (provided < MPI_THREAD_SERIALIZED)
        st = GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED, "MPI provides %s; the proxy thread calls MPI and "
                          "needs MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE (initialise MPI with "
                          "MPI_Init_thread)", thread_level_name(provided));
    else if (!m || grow(m) != GCOMM_SUCCESS)
        st = GCOMMI_ERROR(GCOMM_ERR_NOMEM, "no memory for the MPI transport");
    /* all processes succeed or all fail: one that went on alone would wait in MPI_Comm_dup */
    int worst = st;
    if (MPI_Allreduce(&st, &worst, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS && !st)
        st = worst = GCOMMI_ERROR(GCOMM_ERR_MPI, "MPI_Allreduce on comm failed");
    if (worst == GCOMM_SUCCESS && MPI_Comm_dup(comm, &m->comm) != MPI_SUCCESS)
        worst = GCOMMI_ERROR(GCOMM_ERR_MPI, "MPI_Comm_dup failed");
    if (worst != GCOMM_SUCCESS) {
        free_tp(m);
        if (st == GCOMM_SUCCESS)
            return GCOMMI_ERROR(worst, "another process failed to create its proxy transport (%s)",
                                gcomm_error_string(worst));
        return st;
    }
    /* failures come back as codes, which the proxy reports, instead of aborting the job */
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->comm, &m->t.me);
    MPI_Comm_size(m->comm, &m->t.nprocs);
    m->t.name = "MPI";
    m->t.isend = mpi_isend;
    m->t.irecv = mpi_irecv;
    m->t.ibarrier = mpi_ibarrier;
    m->t.progress = mpi_progress;
    m->t.cancel_recvs = mpi_cancel_recvs;
    m->t.destroy = mpi_destroy;
    m->t.state = m;
    *out = &m->t;
    return GCOMM_SUCCESS;
}
