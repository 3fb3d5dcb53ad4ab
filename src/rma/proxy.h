/* The proxy (issue 5): one progress thread per process that carries out the RMA commands of its
 * ranks for targets they cannot reach with loads and stores (other nodes, or everything with
 * GCOMM_FORCE_PROXY), and serves the commands other processes' proxies send to its ranks.
 *
 *   producers (GPU blocks, host rank threads)
 *      | gcommi_pq_* (include/gcomm/detail/proxy_queue.h): 64-byte commands in rings
 *      v
 *   proxy thread (proxy.c)  -- protocol: headers, chunked payloads through bounce buffers,
 *      |                       get request/reply, batched acknowledgements, fences, barrier, stop
 *      | gcommi_proxy_transport_t: messages between processes (proxy_mpi.c: nonblocking MPI)
 *      v
 *   proxy thread of the target process
 *      | gcommi_proxy_local_ops_t: the caller's delivery into windows and notification lanes
 *
 * The core has no MPI: a transport is an operation table (as the bootstrap is), and so is the
 * local delivery, which the runtime fills (memcpy or cudaMemcpy into a window, a release store
 * into the target rank's proxy lane).
 *
 * Semantics a runtime builds on:
 * - A source rank's commands complete in id order as its counter sees them: done[source] = n
 *   means commands 1..n are complete (gcommi_pq_done). Puts and notifications are complete when
 *   delivered at the target and acknowledged; gets when the data is in the origin buffer.
 * - Commands of one source may be delivered at their targets in any order (a small notification
 *   overtakes a large put on its way), except across a FLUSH or BARRIER, which starts only after
 *   every earlier command of the source is complete and holds back every later one. A put's own
 *   notification always follows its data.
 * - Every wait has a timeout; on expiry the caller gets GCOMM_ERR_TIMEOUT and a report of what
 *   the proxy has in flight and for how long (gcommi_proxy_report).
 * - A target-side failure (a put outside the window: deliver_put returns GCOMM_ERR_WINDOW) comes
 *   back to the origin and is returned by the wait for that source's commands. */
#ifndef GCOMM_RMA_PROXY_H
#define GCOMM_RMA_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "gcomm/detail/proxy_queue.h"

#define GCOMMI_PROXY_MAX_RINGS 16 /* one per local GPU and one for the host ranks, with room */

/* ---- the transport: messages between the proxies of the job's processes ----
 *
 * Called by the proxy thread only, while it runs (create and destroy by the owner, before start
 * and after stop). Sends and receives are nonblocking; completions are reported by progress()
 * through a callback, each with the `ctx` given when the operation was posted. Messages between
 * two processes on one channel may be received in any order. */
enum { GCOMMI_PROXY_CHAN_SMALL = 0, GCOMMI_PROXY_CHAN_BULK = 1, GCOMMI_PROXY_NCHANS };

/* A completion: for a receive, the sending process and the bytes received; cancelled is set for a
 * receive cancelled by cancel_recvs. */
typedef void (*gcommi_proxy_event_fn)(void *arg, void *ctx, int peer, size_t len, int cancelled);

typedef struct gcommi_proxy_transport_s {
    const char *name;
    int nprocs; /* processes of the job */
    int me;     /* this process (0 .. nprocs-1) */
    /* Posts a send of len bytes to process `peer` (which may be `me`). buf stays untouched and
     * alive until the completion. */
    int (*isend)(struct gcommi_proxy_transport_s *t, int peer, int chan, const void *buf,
                 size_t len, void *ctx);
    /* Posts a receive of at most len bytes from any process on chan. */
    int (*irecv)(struct gcommi_proxy_transport_s *t, int chan, void *buf, size_t len, void *ctx);
    /* Starts a barrier of every process; it completes like a send. */
    int (*ibarrier)(struct gcommi_proxy_transport_s *t, void *ctx);
    /* Reports every completed operation to fn; returns how many, or a negative GCOMM_ERR_*. */
    int (*progress)(struct gcommi_proxy_transport_s *t, gcommi_proxy_event_fn fn, void *arg);
    /* Cancels every posted receive; their completions come through progress (cancelled = 1). */
    int (*cancel_recvs)(struct gcommi_proxy_transport_s *t);
    /* Releases the transport (owner's thread, proxy stopped). */
    void (*destroy)(struct gcommi_proxy_transport_s *t);
    void *state;
} gcommi_proxy_transport_t;

/* ---- local delivery at this process, provided by the caller (the runtime) ----
 *
 * Called on the proxy thread. Each returns GCOMM_SUCCESS or a GCOMM_ERR_* code (e.g.
 * GCOMM_ERR_WINDOW for an access outside the window), which travels back to the origin. A call
 * must have finished its effect when it returns: the notification and the acknowledgement that
 * follow a deliver_put promise the data is in place. bytes is never 0. */
typedef struct {
    void *ctx;
    /* A put's bytes [offset, offset + bytes) of window `win` of local rank `target`. Large puts
     * arrive in several calls (pieces in any order), each covering its own range. May be NULL
     * when deliver_put_start is given (as read_origin when read_origin_start is). */
    int (*deliver_put)(void *ctx, int32_t target, int32_t win, uint64_t offset, const void *src,
                       size_t bytes);
    /* A notification for local rank `target` from `source`. */
    int (*deliver_notify)(void *ctx, int32_t target, int32_t source, int32_t win, int32_t tag);
    /* Reads bytes of a local origin buffer (a put's data; D2H staging for a GPU origin). */
    int (*read_origin)(void *ctx, void *dst, uint64_t origin, size_t bytes);
    /* Writes bytes into a local origin buffer (a get's data arriving). */
    int (*write_origin)(void *ctx, uint64_t origin, const void *src, size_t bytes);
    /* Reads bytes [offset, offset + bytes) of window `win` of local rank `target` (a get). */
    int (*read_window)(void *ctx, int32_t target, int32_t win, uint64_t offset, void *dst,
                       size_t bytes);
    /* Optional (both or neither): the launch's stop between processes. local_abort returns the
     * GCOMM_ERR_* code that stopped this process's ranks (0 while they run); the proxy then tells
     * every other process once, whose proxy calls remote_abort(code) to stop its ranks at once
     * instead of letting them wait for their timeouts. */
    int (*local_abort)(void *ctx);
    void (*remote_abort)(void *ctx, int code);
    /* Optional, all three or none: deliver_put and read_origin as copies that run while the proxy
     * goes on (a DMA engine's, between GPU and pinned host memory), so that it keeps receiving,
     * sending and starting copies meanwhile. A start checks what the synchronous form checks and
     * returns its failure at once; on success the copy is under way and *ticket names it (0: it
     * is over already), and the proxy keeps src (a receive buffer) and dst (a send buffer)
     * untouched until copy_done(ticket) returns 1 (0: not yet; a GCOMM_ERR_* code: the copy
     * failed). The proxy asks about its oldest copies first, and no more about a ticket once it
     * was told that it is over. */
    int (*deliver_put_start)(void *ctx, int32_t target, int32_t win, uint64_t offset,
                             const void *src, size_t bytes, uint64_t *ticket);
    int (*read_origin_start)(void *ctx, void *dst, uint64_t origin, size_t bytes,
                             uint64_t *ticket);
    int (*copy_done)(void *ctx, uint64_t ticket);
    /* Optional (with copy_done): a notification together with the put it follows, when that put
     * is at most put_notify_max bytes in one piece (bytes 0, src NULL: a notification alone), in
     * one asynchronous step (a GPU's service block stores both, svc.h), so that neither waits
     * for a copy. Checks like deliver_put; *ticket as deliver_put_start's: once copy_done says
     * so, the data and the notification are in place and the proxy acknowledges the put. */
    int (*deliver_put_notify_start)(void *ctx, int32_t target, int32_t source, int32_t win,
                                    int32_t tag, uint64_t offset, const void *src, size_t bytes,
                                    uint64_t *ticket);
    size_t put_notify_max;
    /* Optional: returns once every delivery made so far is in place, for local ops whose
     * deliveries complete after they are reported complete but in order among themselves (a
     * GPU's service block). Called before a barrier lets this process's ranks go. */
    int (*fence)(void *ctx);
} gcommi_proxy_local_ops_t;

typedef struct {
    gcommi_proxy_transport_t *transport; /* owned by the caller; outlives the proxy */
    gcommi_proxy_local_ops_t local;
    int32_t nranks;                      /* world ranks */
    const int32_t *proc_of_rank;         /* [nranks]: the process (transport peer) of each rank */
    /* [nranks] completion counters, where producers can read them (e.g. memory mapped into the
     * GPU). They hold the last id already complete per source; a fresh job zeroes them, so ids
     * start at 1. NULL: the proxy keeps its own, zeroed (gcommi_proxy_done_counters). */
    uint32_t *done;
    /* [nranks] or NULL: for producers that cannot call gcommi_proxy_wait (GPU ranks), the code of
     * the first failed command of each source, written (release) before the completion counter
     * passes it; the producer reads it once its command is done and clears it. Zeroed by the
     * owner. */
    int32_t *errs;
    /* Polled round robin; counters as in gcommi_pq_init. The proxy reads `tail` only to know that
     * a stopping ring is drained and for reports: for producers whose counter it cannot read (a
     * GPU's), a host word the owner sets to the final count before gcommi_proxy_stop. */
    gcommi_pq_t rings[GCOMMI_PROXY_MAX_RINGS];
    int nrings;
    uint32_t ring_start[GCOMMI_PROXY_MAX_RINGS]; /* first read position of each ring */
    size_t chunk;        /* 0: GCOMM_PROXY_CHUNK */
    int bounce;          /* 0: GCOMM_PROXY_BOUNCE */
    uint32_t inflight;   /* commands carried out at once; 0: GCOMM_PROXY_DEPTH */
} gcommi_proxy_params_t;

typedef struct gcommi_proxy_s gcommi_proxy_t;

/* Creates a proxy (not started). The params are copied; the rings, counters and transport must
 * outlive it. */
int gcommi_proxy_create(const gcommi_proxy_params_t *params, gcommi_proxy_t **out);

/* Starts the progress thread. From here until gcommi_proxy_stop returns, only the proxy thread
 * uses the transport. */
int gcommi_proxy_start(gcommi_proxy_t *p);

/* Collective quiesce and stop: call once every local producer has posted its last command. The
 * proxy carries out what is in its rings, waits until every command it sent is acknowledged,
 * meets the other processes' proxies in a barrier (serving their commands meanwhile), so that no
 * message is in flight, and ends its thread. On timeout (timeout_ns, 0: GCOMM_TIMEOUT_MS) it
 * returns GCOMM_ERR_TIMEOUT with a report and keeps running: call stop again, or destroy it
 * (which abandons what is in flight; the job should then abort). */
int gcommi_proxy_stop(gcommi_proxy_t *p, uint64_t timeout_ns);

/* Frees the proxy; a running one is abandoned first (see stop). */
void gcommi_proxy_destroy(gcommi_proxy_t *p);

/* The proxy's message buffers (bounce buffers included), so that the owner can pin them
 * (cudaHostRegister) for copies between them and GPU memory. */
void gcommi_proxy_buffers(gcommi_proxy_t *p, void **mem, size_t *bytes);

/* The completion counters (params.done, or the proxy's own). */
uint32_t *gcommi_proxy_done_counters(gcommi_proxy_t *p);

/* Host producers: posts *cmd into ring `ring` (reserve, wait for credit, publish). A timeout
 * waiting for credit returns GCOMM_ERR_TIMEOUT with a report; the reserved slot then stays
 * unpublished and the ring cannot be used again (the proxy is stuck: abort). */
int gcommi_proxy_post(gcommi_proxy_t *p, int ring, const gcommi_pq_cmd_t *cmd,
                      uint64_t timeout_ns);

/* Waits until command `id` of `source` is done (gcommi_pq_done), timeout_ns (0: GCOMM_TIMEOUT_MS).
 * Returns GCOMM_SUCCESS, the first error of the source's commands since the last wait that
 * returned one (with its detail), the proxy's own failure, or GCOMM_ERR_TIMEOUT with a report of
 * what is pending (also logged as a warning). */
int gcommi_proxy_wait(gcommi_proxy_t *p, int32_t source, uint32_t id, uint64_t timeout_ns);

/* Writes a report of what the proxy has in flight into buf (always NUL-terminated): commands with
 * their state and age, partial incoming transfers, ring positions, the stop barrier. Asked of the
 * running proxy thread, which alone may read its state; returns GCOMM_ERR_TIMEOUT when the thread
 * does not answer within a second (stuck in a delivery callback). */
int gcommi_proxy_report(gcommi_proxy_t *p, char *buf, size_t len);

/* Ring memory in host memory for host producers and tests: depth records (a power of two; 0:
 * GCOMM_PROXY_DEPTH), initialised with gcommi_pq_init(q, 0). */
int gcommi_proxy_ring_alloc(uint32_t depth, gcommi_pq_t *q);
void gcommi_proxy_ring_free(gcommi_pq_t *q);

/* The MPI transport (library gcomm_mpi; declared where mpi.h was included first): proxies over
 * a duplicate of comm, one process per rank of comm. MPI must provide MPI_THREAD_SERIALIZED or
 * better (the proxy thread calls MPI; the application must not call MPI while a proxy runs unless
 * it has MPI_THREAD_MULTIPLE); otherwise GCOMM_ERR_UNSUPPORTED. Collective over comm. */
#if defined(MPI_VERSION)
int gcommi_proxy_mpi_create(MPI_Comm comm, gcommi_proxy_transport_t **out);
#endif

#endif /* GCOMM_RMA_PROXY_H */
