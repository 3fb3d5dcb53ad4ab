/* Rank bodies of the RMA tests, written once for ranks that are GPU blocks (wrapped in kernels by
 * rma_test_kernels.cuh: test_rma_device, test_rma_mpi) and ranks that are host threads
 * (test_host_ranks). Every body counts its failed checks with DCHECK into errs[0] (the line of the
 * first in errs[1]) and takes (param, buf, errs) unless said otherwise; `buf` is memory of
 * gcomm_malloc or gcomm_register on the rank's GPU, or any memory for host ranks. */
#ifndef GCOMM_TESTS_RMA_RANK_BODIES_H
#define GCOMM_TESTS_RMA_RANK_BODIES_H

#include <stdint.h>
#include <stdio.h>

#include "gcomm/rank.h"

/* Counts a failed check into errs[0] and keeps the line of the first in errs[1]. */
GCOMM_HD_INLINE void test_failed(unsigned *errs, unsigned line)
{
    gcommi_fetch_add_gpu(errs, 1u);
    gcommi_cas_sys(errs + 1, 0u, line);
}
#define DCHECK(cond, errs)                                                                     \
    do {                                                                                       \
        if (!(cond)) test_failed((errs), (unsigned)__LINE__);                                  \
    } while (0)

/* Adds to a block-shared 64-bit sum (a host rank is its only thread). */
GCOMM_HD_INLINE void test_add64(unsigned long long *p, unsigned long long v)
{
#if defined(__CUDA_ARCH__)
    atomicAdd(p, v);
#else
    *p += v;
#endif
}

/* A body's world rank, world size and rank on its GPU (its buffer's slot: `buf` is per GPU). */
GCOMM_HD_INLINE void test_rank_ids(gcomm_context_t *ctx, int *rank, int *size, int *lrank)
{
    gcomm_comm_rank(ctx, GCOMM_COMM_WORLD, rank);
    gcomm_comm_size(ctx, GCOMM_COMM_WORLD, size);
    gcomm_comm_rank(ctx, GCOMM_COMM_DEVICE, lrank);
}

GCOMM_HD_INLINE uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* ---- ring: put_notify to the next rank, one slot per iteration, checked at the target ---- */

#define RING_WORDS 64 /* 512 bytes per message */
#define RING_ITERS 16

GCOMM_HD_INLINE void body_ring(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(param, &ctx);
    int rank, size, lrank;
    test_rank_ids(&ctx, &rank, &size, &lrank);
    /* per rank: [RING_ITERS messages received][one message to send] */
    uint64_t *mine = buf + (size_t)lrank * (RING_ITERS + 1) * RING_WORDS;
    uint64_t *send = mine + RING_ITERS * RING_WORDS;
    gcomm_win_t win;
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_WORLD, mine, RING_ITERS * RING_WORDS * 8, &win) ==
               GCOMM_SUCCESS, errs);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int it = 0; it < RING_ITERS; it++) {
        for (int w = gcomm_rank_thread(); w < RING_WORDS; w += gcomm_rank_nthreads())
            send[w] = mix(((uint64_t)rank << 32) ^ ((uint64_t)it << 16) ^ w);
        gcomm_rank_sync();
        DCHECK(gcomm_put_notify(&ctx, win, next, (size_t)it * RING_WORDS * 8, RING_WORDS * 8,
                                send, it) == GCOMM_SUCCESS, errs);
        /* the notification of iteration it from prev, and its data */
        DCHECK(gcomm_wait_notifications(&ctx, win, prev, it, 1) == GCOMM_SUCCESS, errs);
        for (int w = gcomm_rank_thread(); w < RING_WORDS; w += gcomm_rank_nthreads())
            DCHECK(mine[it * RING_WORDS + w] ==
                       mix(((uint64_t)prev << 32) ^ ((uint64_t)it << 16) ^ w),
                   errs);
    }
    int flag = 1;
    DCHECK(gcomm_test_notifications(&ctx, win, GCOMM_ANY_SOURCE, GCOMM_ANY_TAG, 1, &flag) ==
               GCOMM_SUCCESS && flag == 0, errs);
    DCHECK(gcomm_win_free(&ctx, &win) == GCOMM_SUCCESS && win == GCOMM_WIN_NULL, errs);
    gcomm_finish(&ctx);
}

/* ---- gather with wildcards: every rank put_notifies its id to rank 0 with tag rank % 3 ---- */

GCOMM_HD_INLINE void body_gather(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(param, &ctx);
    int rank, size;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_size(&ctx, GCOMM_COMM_WORLD, &size);
    GCOMM_SHARED uint64_t word;
    gcomm_win_t win;
    /* rank 0 exposes one word per rank; the others expose nothing (0 bytes) */
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_WORLD, rank == 0 ? buf : NULL,
                            rank == 0 ? (size_t)size * 8 : 0, &win) == GCOMM_SUCCESS, errs);
    if (rank != 0) {
        if (gcomm_rank_thread() == 0) word = mix(rank);
        gcomm_rank_sync();
        DCHECK(gcomm_put_notify(&ctx, win, 0, (size_t)rank * 8, 8, &word, rank % 3) ==
                   GCOMM_SUCCESS, errs);
    } else {
        int flag = 1;
        /* never that many: test must say no and remove nothing */
        DCHECK(gcomm_test_notifications(&ctx, win, GCOMM_ANY_SOURCE, GCOMM_ANY_TAG, size, &flag) ==
                   GCOMM_SUCCESS && flag == 0, errs);
        int last = size - 1, got = 0;
        if (last > 0) {
            DCHECK(gcomm_wait_notifications(&ctx, win, last, last % 3, 1) == GCOMM_SUCCESS, errs);
            got++;
        }
        int tag0 = 0; /* senders with tag 0, excluding the one matched above */
        for (int r = 1; r < size; r++) tag0 += (r % 3 == 0 && r != last);
        DCHECK(gcomm_wait_notifications(&ctx, win, GCOMM_ANY_SOURCE, 0, tag0) == GCOMM_SUCCESS,
               errs);
        got += tag0;
        DCHECK(gcomm_wait_notifications(&ctx, GCOMM_ANY_WIN, GCOMM_ANY_SOURCE, GCOMM_ANY_TAG,
                                        size - 1 - got) == GCOMM_SUCCESS, errs);
        flag = 1;
        DCHECK(gcomm_test_notifications(&ctx, win, GCOMM_ANY_SOURCE, GCOMM_ANY_TAG, 1, &flag) ==
                   GCOMM_SUCCESS && flag == 0, errs);
        for (int r = 1 + gcomm_rank_thread(); r < size; r += gcomm_rank_nthreads())
            DCHECK(buf[r] == mix(r), errs);
    }
    gcomm_win_free(&ctx, &win);
    gcomm_finish(&ctx);
}

/* ---- get and get_notify; barriers between phases ---- */

GCOMM_HD_INLINE void body_get(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(param, &ctx);
    int rank, size, lrank;
    test_rank_ids(&ctx, &rank, &size, &lrank);
    const int words = 300; /* not a multiple of 16 bytes per thread: ragged ends */
    uint64_t *mine = buf + (size_t)lrank * 2 * words, *got = mine + words;
    gcomm_win_t win;
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_WORLD, mine, words * 8, &win) == GCOMM_SUCCESS, errs);
    for (int phase = 0; phase < 3; phase++) {
        for (int w = gcomm_rank_thread(); w < words; w += gcomm_rank_nthreads())
            mine[w] = mix(((uint64_t)rank << 20) ^ ((uint64_t)phase << 12) ^ w);
        DCHECK(gcomm_barrier(&ctx, GCOMM_COMM_WORLD) == GCOMM_SUCCESS, errs);
        int from = (rank + 1 + phase) % size;
        DCHECK(gcomm_get(&ctx, win, from, 8, (words - 1) * 8, got) == GCOMM_SUCCESS, errs);
        for (int w = gcomm_rank_thread(); w < words - 1; w += gcomm_rank_nthreads())
            DCHECK(got[w] == mix(((uint64_t)from << 20) ^ ((uint64_t)phase << 12) ^ (w + 1)), errs);
        DCHECK(gcomm_barrier(&ctx, GCOMM_COMM_WORLD) == GCOMM_SUCCESS, errs);
    }
    /* get_notify tells the rank read from */
    int from = (rank + 1) % size, reader = (rank + size - 1) % size;
    DCHECK(gcomm_get_notify(&ctx, win, from, 0, 8, got, 7) == GCOMM_SUCCESS, errs);
    DCHECK(gcomm_wait_notifications(&ctx, win, reader, 7, 1) == GCOMM_SUCCESS, errs);
    DCHECK(gcomm_barrier(&ctx, GCOMM_COMM_DEVICE) == GCOMM_SUCCESS, errs);
    gcomm_win_free(&ctx, &win);
    gcomm_finish(&ctx);
}

/* ---- overlapping windows of one GPU's ranks: a put onto itself copies nothing ---- */

GCOMM_HD_INLINE void body_overlap(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(param, &ctx);
    int lrank, lsize;
    gcomm_comm_rank(&ctx, GCOMM_COMM_DEVICE, &lrank);
    gcomm_comm_size(&ctx, GCOMM_COMM_DEVICE, &lsize);
    const int words = 128;
    gcomm_win_t win; /* every rank of the GPU exposes the whole array */
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_DEVICE, buf, (size_t)lsize * words * 8, &win) ==
               GCOMM_SUCCESS, errs);
    uint64_t *slice = buf + (size_t)lrank * words;
    for (int w = gcomm_rank_thread(); w < words; w += gcomm_rank_nthreads())
        slice[w] = mix(lrank * 1000 + w);
    gcomm_rank_sync();
    int next = (lrank + 1) % lsize;
    /* same address at origin and target: no copy, but a notification */
    DCHECK(gcomm_put_notify(&ctx, win, next, (size_t)lrank * words * 8, words * 8, slice, 1) ==
               GCOMM_SUCCESS, errs);
    DCHECK(gcomm_wait_notifications(&ctx, win, (lrank + lsize - 1) % lsize, 1, 1) == GCOMM_SUCCESS,
           errs);
    for (int w = gcomm_rank_thread(); w < words; w += gcomm_rank_nthreads())
        DCHECK(slice[w] == mix(lrank * 1000 + w), errs);
    gcomm_win_free(&ctx, &win);
    gcomm_finish(&ctx);
}

/* ---- stress: senders notify random receivers with random tags; payload = message count ---- */

#define STRESS_RECEIVERS 4
#define STRESS_TAGS 8
/* Every sender has two counters in each receiver's window and writes its k-th message to the
 * receiver into counter k % 2: while it writes one (bytes a put is still writing are undefined to
 * the target's loads), the other holds its last completed message, so the larger of the two is
 * at least every message of it the receiver has matched. With one counter a receiver read it
 * torn (the next value's low bytes, the last one's high bytes; host ranks under ASan). */
#define STRESS_SLOTS 2
/* receiver r's counters in a buffer of every receiver's window, size ranks */
#define STRESS_WINDOW_WORDS(size) ((size_t)STRESS_SLOTS * (size_t)(size))
/* bytes of every receiver's window together (what a test zeroes before and reads after) */
#define STRESS_BUFFER_BYTES(size) ((size_t)STRESS_RECEIVERS * STRESS_WINDOW_WORDS(size) * 8)

/* Messages of one sender that its two counters at c vouch for: the larger. */
GCOMM_HD_INLINE uint64_t stress_counter(const volatile uint64_t *c)
{
    const uint64_t a = c[0], b = c[1];
    return a > b ? a : b;
}

GCOMM_HD_INLINE void stress_msg(int src, long i, int *rcv, int *tag)
{
    uint64_t h = mix(((uint64_t)src << 32) ^ (uint64_t)i);
    *rcv = (int)(h % STRESS_RECEIVERS);
    *tag = (int)((h >> 20) % STRESS_TAGS);
}

/* Host side of the stress (every driver): expect[r * STRESS_TAGS + t] = notifications receiver r
 * gets with tag t when senders STRESS_RECEIVERS .. size-1 send per_sender each. */
static inline void stress_expect(int size, long per_sender, long *expect)
{
    for (int k = 0; k < STRESS_RECEIVERS * STRESS_TAGS; k++) expect[k] = 0;
    for (int s = STRESS_RECEIVERS; s < size; s++)
        for (long i = 0; i < per_sender; i++) {
            int r, t;
            stress_msg(s, i, &r, &t);
            expect[r * STRESS_TAGS + t]++;
        }
}

/* Host side: the final counters of receivers [r0, r1) (receiver r's window starts at slots +
 * r * STRESS_WINDOW_WORDS(size); the larger of sender s's two counters = messages s sent to r)
 * against what the senders sent; returns how many differ (the first few printed). */
static inline long stress_check(const uint64_t *slots, int size, long per_sender, int r0, int r1)
{
    long bad = 0;
    for (int s = STRESS_RECEIVERS; s < size; s++) {
        long cnt[STRESS_RECEIVERS] = {0};
        for (long i = 0; i < per_sender; i++) {
            int r, t;
            stress_msg(s, i, &r, &t);
            cnt[r]++;
        }
        for (int r = r0; r < r1 && r < STRESS_RECEIVERS; r++) {
            const uint64_t got =
                stress_counter(slots + (size_t)r * STRESS_WINDOW_WORDS(size) + STRESS_SLOTS * s);
            if (got != (uint64_t)cnt[r] && bad++ < 4)
                fprintf(stderr, "stress: receiver %d holds %llu from sender %d, sent %ld\n", r,
                        (unsigned long long)got, s, cnt[r]);
        }
    }
    return bad;
}

/* expect[r * STRESS_TAGS + t]: notifications receiver r gets with tag t (from the host). */
GCOMM_HD_INLINE void body_stress(gcomm_param_t param, uint64_t *buf, long per_sender,
                                 const long *expect, unsigned *errs)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(param, &ctx);
    int rank, size;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_size(&ctx, GCOMM_COMM_WORLD, &size);
    /* receivers (on GPU 0) expose two counters per sender (STRESS_SLOTS): how many messages it
     * sent them */
    gcomm_win_t win;
    int receiver = rank < STRESS_RECEIVERS;
    uint64_t *slots = buf + (size_t)rank * STRESS_WINDOW_WORDS(size);
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_WORLD, receiver ? slots : NULL,
                            receiver ? STRESS_WINDOW_WORDS(size) * 8 : 0, &win) == GCOMM_SUCCESS,
           errs);
    if (!receiver) {
        GCOMM_SHARED uint64_t sent[STRESS_RECEIVERS];
        for (int i = gcomm_rank_thread(); i < STRESS_RECEIVERS; i += gcomm_rank_nthreads())
            sent[i] = 0; /* (a host rank is one thread) */
        for (long i = 0; i < per_sender; i++) {
            int rcv, tag;
            stress_msg(rank, i, &rcv, &tag);
            gcomm_rank_sync();
            if (gcomm_rank_thread() == 0) sent[rcv]++;
            gcomm_rank_sync();
            const size_t at =
                (STRESS_SLOTS * (size_t)rank + (size_t)(sent[rcv] % STRESS_SLOTS)) * 8;
            if (gcomm_put_notify(&ctx, win, rcv, at, 8, &sent[rcv], tag) != GCOMM_SUCCESS) {
                DCHECK(0, errs);
                break;
            }
        }
    } else {
        /* Waiting for one tag while senders keep sending others would fill any finite list of
         * held notifications (and then stop the senders): test for a random tag, and when it is
         * not there, wait for the next notification of any tag. */
        long remaining[STRESS_TAGS], consumed = 0, total = 0, by_tag = 0;
        for (int t = 0; t < STRESS_TAGS; t++)
            total += remaining[t] = expect[rank * STRESS_TAGS + t];
        uint64_t rng = mix(rank + 12345);
        GCOMM_SHARED unsigned long long sum;
        if (gcomm_rank_thread() == 0) sum = 0;
        while (consumed < total) {
            rng = mix(rng);
            int t = (int)(rng % STRESS_TAGS), flag = 0;
            long n = 1 + (long)((rng >> 8) % 4);
            if (n > total - consumed) n = total - consumed;
            if (remaining[t] >= n &&
                gcomm_test_notifications(&ctx, win, GCOMM_ANY_SOURCE, t, (int)n, &flag) !=
                    GCOMM_SUCCESS) {
                DCHECK(0, errs);
                break;
            }
            if (flag) {
                remaining[t] -= n;
                by_tag += n;
            } else {
                n = 1;
                if (gcomm_wait_notifications(&ctx, win, GCOMM_ANY_SOURCE, GCOMM_ANY_TAG, 1) !=
                    GCOMM_SUCCESS) {
                    DCHECK(0, errs);
                    break;
                }
            }
            consumed += n;
            /* every consumed notification's payload is visible: the counters sum to at least
             * the number consumed */
            if (gcomm_rank_thread() == 0) sum = 0;
            gcomm_rank_sync();
            unsigned long long part = 0;
            for (int s = gcomm_rank_thread(); s < size; s += gcomm_rank_nthreads())
                part += stress_counter(slots + STRESS_SLOTS * s);
            test_add64(&sum, part);
            gcomm_rank_sync();
            DCHECK(sum >= (unsigned long long)consumed, errs);
            gcomm_rank_sync();
        }
        DCHECK(by_tag > 0, errs);
        int flag = 1;
        DCHECK(gcomm_test_notifications(&ctx, win, GCOMM_ANY_SOURCE, GCOMM_ANY_TAG, 1, &flag) ==
                   GCOMM_SUCCESS && flag == 0, errs);
        DCHECK(sum == (unsigned long long)total, errs);
    }
    gcomm_win_free(&ctx, &win);
    gcomm_finish(&ctx);
}

/* ---- typed put/get: halo columns, a column into a packed array, a reversed array, a row ----
 *
 * Per rank: a TR x TC grid of doubles (row-major; columns 0 and TC-1 are halos), then P (TR
 * doubles), Q (TR doubles) and S (TC doubles), all in one window. Types (handles of this GPU):
 * col = vector(TR, 1, TC) of double, dbl = double, rev = hvector(TR, 1, -8) of double (reversed,
 * true lb < 0), row = contiguous(TC - 2) of double. */

#define TR 40
#define TC 24
#define TYPED_WORDS (TR * TC + 2 * TR + TC)

GCOMM_HD_INLINE double typed_val(int rank, int i, int j)
{
    return rank * 100000.0 + i * 100.0 + j;
}

GCOMM_HD_INLINE void body_typed(gcomm_param_t param, double *buf, unsigned *errs,
                                gcomm_device_type_t col, gcomm_device_type_t dbl,
                                gcomm_device_type_t rev, gcomm_device_type_t row)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(param, &ctx);
    int rank, size, lrank;
    test_rank_ids(&ctx, &rank, &size, &lrank);
    double *A = buf + (size_t)lrank * TYPED_WORDS, *P = A + TR * TC, *Q = P + TR, *S = Q + TR;
    for (int k = gcomm_rank_thread(); k < TR * TC; k += gcomm_rank_nthreads()) {
        int i = k / TC, j = k % TC;
        if (j > 0 && j < TC - 1) A[k] = typed_val(rank, i, j);
    }
    gcomm_win_t win;
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_WORLD, A, TYPED_WORDS * 8, &win) == GCOMM_SUCCESS,
           errs);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const size_t offP = TR * TC * 8, offQ = offP + TR * 8;
    /* my column TC-2 -> right's halo column 0 (same shape at both ends) */
    DCHECK(gcomm_put_typed_notify(&ctx, win, right, 0, 1, col, &A[TC - 2], 1, col, 7) ==
               GCOMM_SUCCESS, errs);
    /* left's column 1 -> my halo column TC-1 */
    DCHECK(gcomm_get_typed(&ctx, win, left, 8, 1, col, &A[TC - 1], 1, col) == GCOMM_SUCCESS, errs);
    /* my column 1 -> right's P, packed (one column = TR doubles) */
    DCHECK(gcomm_put_typed_notify(&ctx, win, right, offP, TR, dbl, &A[1], 1, col, 8) ==
               GCOMM_SUCCESS, errs);
    /* my column 1 -> right's Q reversed (the target type reaches below its origin) */
    DCHECK(gcomm_put_typed_notify(&ctx, win, right, offQ + (TR - 1) * 8, 1, rev, &A[1], 1, col,
                                  10) == GCOMM_SUCCESS, errs);
    /* right's row 2 (columns 1..TC-2) -> my S, notifying right that it was read */
    DCHECK(gcomm_get_typed_notify(&ctx, win, right, (2 * TC + 1) * 8, 1, row, S, TC - 2, dbl, 9) ==
               GCOMM_SUCCESS, errs);
    DCHECK(gcomm_wait_notifications(&ctx, win, left, 7, 1) == GCOMM_SUCCESS, errs);
    DCHECK(gcomm_wait_notifications(&ctx, win, left, 8, 1) == GCOMM_SUCCESS, errs);
    DCHECK(gcomm_wait_notifications(&ctx, win, left, 10, 1) == GCOMM_SUCCESS, errs);
    DCHECK(gcomm_wait_notifications(&ctx, win, left, 9, 1) == GCOMM_SUCCESS, errs);
    for (int k = gcomm_rank_thread(); k < TR * TC; k += gcomm_rank_nthreads()) {
        int i = k / TC, j = k % TC;
        double want = j == 0 ? typed_val(left, i, TC - 2)
                    : j == TC - 1 ? typed_val(left, i, 1) : typed_val(rank, i, j);
        DCHECK(A[k] == want, errs);
    }
    for (int i = gcomm_rank_thread(); i < TR; i += gcomm_rank_nthreads()) {
        DCHECK(P[i] == typed_val(left, i, 1), errs);
        DCHECK(Q[TR - 1 - i] == typed_val(left, i, 1), errs);
    }
    for (int j = gcomm_rank_thread(); j < TC - 2; j += gcomm_rank_nthreads())
        DCHECK(S[j] == typed_val(right, 2, j + 1), errs);
    gcomm_win_free(&ctx, &win);
    gcomm_finish(&ctx);
}

/* Host side of the typed test (every driver): the types of body_typed, their handles for one
 * device (or GCOMM_DEVICE_HOST) in the order the bodies take them (col, dbl, rev, row), what each
 * error mode of body_typed_bad must return, and how many bytes of a rank's area an erroneous
 * call wrote (the area is poisoned with 0xA5 before). */
typedef struct {
    gcomm_datatype col, rev, row;
} typed_types_t;

static inline int typed_types_make(typed_types_t *t)
{
    int rc;
    if ((rc = gcomm_type_vector(TR, 1, TC, GCOMM_DOUBLE, &t->col)) ||
        (rc = gcomm_type_commit(&t->col)) ||
        (rc = gcomm_type_hvector(TR, 1, -8, GCOMM_DOUBLE, &t->rev)) ||
        (rc = gcomm_type_commit(&t->rev)) ||
        (rc = gcomm_type_contiguous(TC - 2, GCOMM_DOUBLE, &t->row)) ||
        (rc = gcomm_type_commit(&t->row)))
        return rc;
    return GCOMM_SUCCESS;
}

static inline int typed_handles(const typed_types_t *t, int device, gcomm_device_type_t h[4])
{
    int rc;
    if ((rc = gcomm_type_device(t->col, device, &h[0])) ||
        (rc = gcomm_type_device(GCOMM_DOUBLE, device, &h[1])) ||
        (rc = gcomm_type_device(t->rev, device, &h[2])) ||
        (rc = gcomm_type_device(t->row, device, &h[3])))
        return rc;
    return GCOMM_SUCCESS;
}

static inline int typed_types_free(typed_types_t *t)
{
    int rc;
    if ((rc = gcomm_type_free(&t->col)) || (rc = gcomm_type_free(&t->rev)) ||
        (rc = gcomm_type_free(&t->row)))
        return rc;
    return GCOMM_SUCCESS;
}

static const int typed_bad_want[3] = {GCOMM_ERR_WINDOW, GCOMM_ERR_TYPE_MISMATCH, GCOMM_ERR_WINDOW};
static const char *const typed_bad_what[3] = {"column past the window end", "packed sizes differ",
                                              "reversed type below the window"};

static inline int typed_touched(const void *area)
{
    const unsigned char *b = (const unsigned char *)area;
    int touched = 0;
    for (size_t k = 0; k < (size_t)TYPED_WORDS * 8; k++) touched += b[k] != 0xA5;
    return touched;
}

/* Typed errors (mode): 0 a target column that runs past the end of the window, 1 packed sizes
 * that differ, 2 a reversed target type reaching below the window's start. Rank 1 makes the bad
 * call (targeting rank 0); the others wait for what never comes and must be released. Nothing
 * may be written. */
GCOMM_HD_INLINE void body_typed_bad(gcomm_param_t param, double *buf, unsigned *errs,
                                    gcomm_device_type_t col, gcomm_device_type_t dbl,
                                    gcomm_device_type_t rev, int mode)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(param, &ctx);
    int rank, lrank;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_rank(&ctx, GCOMM_COMM_DEVICE, &lrank);
    double *A = buf + (size_t)lrank * TYPED_WORDS;
    GCOMM_SHARED double src[TR * TC];
    for (int k = gcomm_rank_thread(); k < TR * TC; k += gcomm_rank_nthreads()) src[k] = 1.0;
    gcomm_win_t win;
    /* another rank may still be in the tail of its win_create when rank 1's failed put stops
     * the launch (as in body_outside): its win_create then returns the launch's error (4x H100
     * under memcheck, where GPUs 2 and 3 ran late) */
    const int wrc = gcomm_win_create(&ctx, GCOMM_COMM_WORLD, A, TR * TC * 8, &win);
    DCHECK(wrc == GCOMM_SUCCESS ||
               (rank != 1 && wrc == (mode == 1 ? GCOMM_ERR_TYPE_MISMATCH : GCOMM_ERR_WINDOW)),
           errs);
    if (rank == 1) {
        /* (mode 0's origin is packed: 2 columns' worth of src, all of it inside src, so that a
         * put to another process, whose pieces leave before its target refuses the last ones,
         * reads nothing outside the origin buffer) */
        int rc = mode == 0 ? gcomm_put_typed(&ctx, win, 0, 8, 2, col, src, 2 * TR, dbl)
               : mode == 1 ? gcomm_put_typed_notify(&ctx, win, 0, 8, 1, col, src, TR - 1, dbl, 3)
                           : gcomm_put_typed(&ctx, win, 0, 8, 1, rev, src, TR, dbl);
        DCHECK(rc == (mode == 1 ? GCOMM_ERR_TYPE_MISMATCH : GCOMM_ERR_WINDOW), errs);
    } else {
        DCHECK(gcomm_wait_notifications(&ctx, win, GCOMM_ANY_SOURCE, 3, 1) != GCOMM_SUCCESS, errs);
    }
    gcomm_finish(&ctx);
}

/* ---- errors ---- */

GCOMM_HD_INLINE void body_outside(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(param, &ctx);
    int rank;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_win_t win;
    /* every rank: the GPU's first 64 B. The culprit's own win_create cannot be stopped (nothing
     * fails before its put), but another rank may still be in the tail of its win_create (through
     * the proxy, another process's ranks wait there for their flush) when the culprit's failed
     * put stops the launch: its win_create then returns the launch's error (2x H200, through the
     * proxy, once the put's failure came 0.1 us sooner) */
    const int wrc = gcomm_win_create(&ctx, GCOMM_COMM_WORLD, buf, 64, &win);
    DCHECK(wrc == GCOMM_SUCCESS || (rank != 1 && wrc == GCOMM_ERR_WINDOW), errs);
    GCOMM_SHARED uint64_t data[2];
    for (int i = gcomm_rank_thread(); i < 2; i += gcomm_rank_nthreads()) data[i] = 0x5555;
    gcomm_rank_sync();
    if (rank == 1) /* 16 bytes at offset 56 of a 64-byte window */
        DCHECK(gcomm_put(&ctx, win, 0, 56, 16, data) == GCOMM_ERR_WINDOW, errs);
    /* everybody else waits for a notification that never comes: the error must end it */
    if (rank != 1)
        DCHECK(gcomm_wait_notifications(&ctx, win, GCOMM_ANY_SOURCE, 3, 1) != GCOMM_SUCCESS, errs);
    gcomm_finish(&ctx);
}

GCOMM_HD_INLINE void body_never(gcomm_param_t param, unsigned *errs)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(param, &ctx);
    int rank;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    if (rank == 0) { /* rank 0 waits in a barrier nobody else enters */
        int rc = gcomm_barrier(&ctx, GCOMM_COMM_WORLD);
        DCHECK(rc != GCOMM_SUCCESS, errs);
    } else /* the others wait for a notification nobody sends */
        DCHECK(gcomm_wait_notifications(&ctx, GCOMM_ANY_WIN, 0, 5, 2) != GCOMM_SUCCESS, errs);
    gcomm_finish(&ctx);
}

/* ---- put without notification, then flush and a world barrier: the data is in place ---- */

GCOMM_HD_INLINE void body_flush(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(param, &ctx);
    int rank, size, lrank;
    test_rank_ids(&ctx, &rank, &size, &lrank);
    const int words = 40; /* 320 bytes: more than a proxy command carries inline */
    uint64_t *mine = buf + (size_t)lrank * 2 * words, *send = mine + words;
    gcomm_win_t win;
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_WORLD, mine, words * 8, &win) == GCOMM_SUCCESS, errs);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int round = 0; round < 3; round++) {
        for (int w = gcomm_rank_thread(); w < words; w += gcomm_rank_nthreads())
            send[w] = mix(((uint64_t)rank << 24) ^ ((uint64_t)round << 12) ^ (uint64_t)w);
        /* a small put and a large one, no notification */
        DCHECK(gcomm_put(&ctx, win, right, 0, 8, send) == GCOMM_SUCCESS, errs);
        DCHECK(gcomm_put(&ctx, win, right, 8, (words - 1) * 8, send + 1) == GCOMM_SUCCESS, errs);
        DCHECK(gcomm_win_flush(&ctx, win) == GCOMM_SUCCESS, errs);
        DCHECK(gcomm_barrier(&ctx, GCOMM_COMM_WORLD) == GCOMM_SUCCESS, errs);
        for (int w = gcomm_rank_thread(); w < words; w += gcomm_rank_nthreads())
            DCHECK(mine[w] == mix(((uint64_t)left << 24) ^ ((uint64_t)round << 12) ^ (uint64_t)w),
                   errs);
        /* everybody has checked before the next round overwrites */
        DCHECK(gcomm_barrier(&ctx, GCOMM_COMM_WORLD) == GCOMM_SUCCESS, errs);
    }
    gcomm_win_free(&ctx, &win);
    gcomm_finish(&ctx);
}

/* ---- inline puts (notif.h): a put_notify of at most 8 bytes carries its payload inside the
 * notification and the target writes it into its window when it takes the entry. Checked: every
 * size 1..8 at odd offsets, neighbouring bytes untouched; a larger put over the same bytes after
 * small ones lands last (the origin waits until its inline entries have landed); a barrier makes
 * inline puts visible without any wait; a flushed inline put is read by a third rank's get; and
 * (k_inline_nowait, checked by the host) puts nobody waits for are in the windows after
 * gcomm_finish. ---- */

#define INLINE_WORDS 64 /* 512-byte window per rank */
#define INLINE_POISON 0x5Au

GCOMM_HD_INLINE unsigned char inline_byte(int rank, int round, int k, int b)
{
    return (unsigned char)(mix(((uint64_t)rank << 32) ^ ((uint64_t)round << 16) ^
                               ((uint64_t)k << 8) ^ (uint64_t)b) | 1u);
}

GCOMM_HD_INLINE void body_inline(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(param, &ctx);
    int rank, size, lrank;
    test_rank_ids(&ctx, &rank, &size, &lrank);
    /* per rank: the window, 1 KiB to send from, 8 bytes to get into */
    uint64_t *area = buf + (size_t)lrank * 4 * INLINE_WORDS;
    unsigned char *mine = (unsigned char *)area, *send = (unsigned char *)(area + INLINE_WORDS);
    uint64_t *got = area + 3 * INLINE_WORDS;
    const int tid = gcomm_rank_thread(), nt = gcomm_rank_nthreads();
    for (int b = tid; b < INLINE_WORDS * 8; b += nt) mine[b] = INLINE_POISON;
    gcomm_win_t win;
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_WORLD, mine, INLINE_WORDS * 8, &win) ==
               GCOMM_SUCCESS, errs);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int round = 0; round < 4; round++) {
        /* sizes 1..8 at offsets 64k + k (odd alignments), from send + 64k + (k & 3) */
        for (int b = tid; b < 9 * 64; b += nt) send[b] = inline_byte(rank, round, b >> 6, b & 63);
        gcomm_rank_sync();
        for (int k = 0; k < 8; k++)
            DCHECK(gcomm_put_notify(&ctx, win, right, 64 * k + k, (size_t)k + 1,
                                    send + 64 * k + (k & 3), round) == GCOMM_SUCCESS, errs);
        /* 16 bytes over the first two small puts' bytes (and more): this one must win */
        DCHECK(gcomm_put_notify(&ctx, win, right, 0, 16, send + 8 * 64, round) == GCOMM_SUCCESS,
               errs);
        DCHECK(gcomm_wait_notifications(&ctx, win, left, round, 9) == GCOMM_SUCCESS, errs);
        /* (bytes 480.. take the next phases' puts, which the left rank may send already) */
        for (int b = tid; b < 8 * 60; b += nt) {
            const int k = b >> 6, o = b & 63;
            unsigned char want = INLINE_POISON;
            if (b < 16) want = inline_byte(left, round, 8, b);
            else if (o >= k && o < 2 * k + 1) want = inline_byte(left, round, k, o - k + (k & 3));
            DCHECK(mine[b] == want, errs);
        }
        /* inline puts with no wait before a barrier: in the window after it */
        DCHECK(gcomm_put_notify(&ctx, win, right, 8 * 60, 8, send + 9 * 8, 1000 + round) ==
                   GCOMM_SUCCESS, errs);
        DCHECK(gcomm_barrier(&ctx, GCOMM_COMM_WORLD) == GCOMM_SUCCESS, errs);
        for (int b = tid; b < 8; b += nt)
            DCHECK(mine[8 * 60 + b] == inline_byte(left, round, 1, 8 + b), errs);
        DCHECK(gcomm_wait_notifications(&ctx, win, left, 1000 + round, 1) == GCOMM_SUCCESS, errs);
        /* a flushed inline put, read by the rank after its target */
        DCHECK(gcomm_put_notify(&ctx, win, right, 8 * 62, 4, send + 7, 2000 + round) ==
                   GCOMM_SUCCESS, errs);
        DCHECK(gcomm_win_flush(&ctx, win) == GCOMM_SUCCESS, errs);
        const int right2 = (rank + 2) % size;
        DCHECK(gcomm_notify(&ctx, win, right2, 3000 + round) == GCOMM_SUCCESS, errs);
        const int left2 = (rank + 2 * size - 2) % size;
        DCHECK(gcomm_wait_notifications(&ctx, win, left2, 3000 + round, 1) == GCOMM_SUCCESS, errs);
        /* left2's put went to left's window */
        DCHECK(gcomm_get(&ctx, win, left, 8 * 62, 4, got) == GCOMM_SUCCESS, errs);
        gcomm_rank_sync();
        for (int b = tid; b < 4; b += nt)
            DCHECK(((unsigned char *)got)[b] == inline_byte(left2, round, 0, 7 + b), errs);
        DCHECK(gcomm_wait_notifications(&ctx, win, left, 2000 + round, 1) == GCOMM_SUCCESS, errs);
        /* everybody has read before the windows are poisoned again */
        DCHECK(gcomm_barrier(&ctx, GCOMM_COMM_WORLD) == GCOMM_SUCCESS, errs);
        for (int b = tid; b < INLINE_WORDS * 8; b += nt) mine[b] = INLINE_POISON;
        DCHECK(gcomm_barrier(&ctx, GCOMM_COMM_WORLD) == GCOMM_SUCCESS, errs);
    }
    int flag = 1;
    DCHECK(gcomm_test_notifications(&ctx, win, GCOMM_ANY_SOURCE, GCOMM_ANY_TAG, 1, &flag) ==
               GCOMM_SUCCESS && flag == 0, errs);
    gcomm_win_free(&ctx, &win);
    gcomm_finish(&ctx);
}

/* ---- plain puts, then a put_notify small enough to be inline: matching the notification makes
 * the puts' data visible to the target's threads, also where the target's L1 still holds the old
 * lines. Ranks pair up (2k sends to 2k + 1; an odd last rank only takes part in the rest); the
 * receiver reads its window (into L1), tells the sender, and reads it again after the
 * notification, with no fence of its own in between. Between the sender's put and its small
 * put_notify: a flush (even rounds), or a released notification to another target, itself (odd
 * rounds). Neither makes the receiver acquire, so the small notification must not be a
 * fence-free inline entry: both failed before 2026-11-27 (the flush and any release cleared the
 * block's one "dirty" flag). ---- */

#define FLUSHINL_WORDS 256 /* 2 KiB of data, then 8 bytes for the small put */

GCOMM_HD_INLINE uint64_t flushinl_word(int rank, int round, int w)
{
    return mix(((uint64_t)rank << 40) ^ ((uint64_t)round << 20) ^ (uint64_t)w);
}

GCOMM_HD_INLINE void body_flushinl(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(param, &ctx);
    int rank, size, lrank;
    test_rank_ids(&ctx, &rank, &size, &lrank);
    const int words = FLUSHINL_WORDS;
    uint64_t *mine = buf + (size_t)lrank * 2 * (words + 8), *send = mine + words + 8;
    const int tid = gcomm_rank_thread(), nt = gcomm_rank_nthreads();
    for (int w = tid; w < words + 3; w += nt) mine[w] = 0;
    gcomm_win_t win; /* the data, the small put's 8 bytes, 16 bytes the sender puts to itself */
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_WORLD, mine, (words + 3) * 8, &win) ==
               GCOMM_SUCCESS, errs);
    const int sender = rank % 2 == 0, peer = sender ? rank + 1 : rank - 1;
    for (int round = 0; round < 8 && peer < size; round++) {
        if (sender) {
            DCHECK(gcomm_wait_notifications(&ctx, win, peer, 100 + round, 1) == GCOMM_SUCCESS,
                   errs);
            for (int w = tid; w < words; w += nt) send[w] = flushinl_word(rank, round, w);
            DCHECK(gcomm_put(&ctx, win, peer, 0, (size_t)words * 8, send) == GCOMM_SUCCESS, errs);
            if (round % 2 == 0) {
                DCHECK(gcomm_win_flush(&ctx, win) == GCOMM_SUCCESS, errs);
            } else {
                DCHECK(gcomm_put_notify(&ctx, win, rank, (size_t)(words + 1) * 8, 16, send,
                                        300 + round) == GCOMM_SUCCESS, errs);
                DCHECK(gcomm_wait_notifications(&ctx, win, rank, 300 + round, 1) ==
                           GCOMM_SUCCESS, errs);
            }
            DCHECK(gcomm_put_notify(&ctx, win, peer, (size_t)words * 8, 8, send, 200 + round) ==
                       GCOMM_SUCCESS, errs);
        } else {
            /* read the window (into L1): last round's data */
            for (int w = tid; w < words; w += nt)
                DCHECK(mine[w] == (round ? flushinl_word(peer, round - 1, w) : 0), errs);
            /* read: the sender may write it now (0 bytes, inline) */
            DCHECK(gcomm_put_notify(&ctx, win, peer, (size_t)words * 8, 0, send, 100 + round) ==
                       GCOMM_SUCCESS, errs);
            DCHECK(gcomm_wait_notifications(&ctx, win, peer, 200 + round, 1) == GCOMM_SUCCESS,
                   errs);
            for (int w = tid; w < words; w += nt)
                DCHECK(mine[w] == flushinl_word(peer, round, w), errs);
            DCHECK(mine[words] == flushinl_word(peer, round, 0), errs);
        }
    }
    gcomm_win_free(&ctx, &win);
    gcomm_finish(&ctx);
}

/* ---- windows freed and created again: puts after gcomm_win_free + gcomm_win_create go to the
 * new window. Each round creates a window over the other of two areas (the freed window's id
 * comes back), puts 8 bytes (the small put's cached route) and 16 bytes (the general path) into
 * the right neighbour's, and checks what came from the left in the new area and that the old
 * area did not change: a block that kept the freed window's cache entries would put into the old
 * area. The window's size changes every round too. ---- */

#define REWIN_WORDS 32
#define REWIN_POISON 0x5A5A5A5A5A5A5A5Aull

GCOMM_HD_INLINE uint64_t rewin_word(int rank, int w) { return mix(((uint64_t)rank << 32) ^ w); }

GCOMM_HD_INLINE void body_rewin(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(param, &ctx);
    int rank, size, lrank;
    test_rank_ids(&ctx, &rank, &size, &lrank);
    /* per rank: areas a and b, then the words to send */
    uint64_t *area = buf + (size_t)lrank * 3 * REWIN_WORDS;
    uint64_t *send = area + 2 * REWIN_WORDS;
    const int tid = gcomm_rank_thread(), nt = gcomm_rank_nthreads();
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int w = tid; w < 2 * REWIN_WORDS; w += nt) area[w] = REWIN_POISON;
    for (int w = tid; w < REWIN_WORDS; w += nt) send[w] = rewin_word(rank, w);
    gcomm_rank_sync();
    for (int round = 0; round < 4; round++) {
        uint64_t *mine = area + (round & 1) * REWIN_WORDS, *old = area + (~round & 1) * REWIN_WORDS;
        const size_t words = REWIN_WORDS - 8 * (size_t)(round & 1);
        gcomm_win_t win;
        DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_WORLD, mine, words * 8, &win) == GCOMM_SUCCESS,
               errs);
        DCHECK(gcomm_put_notify(&ctx, win, right, 8 * (size_t)round, 8, send + round, round) ==
                   GCOMM_SUCCESS, errs);
        DCHECK(gcomm_put_notify(&ctx, win, right, 8 * (size_t)(8 + 2 * round), 16,
                                send + 8 + 2 * round, round) == GCOMM_SUCCESS, errs);
        DCHECK(gcomm_wait_notifications(&ctx, win, left, round, 2) == GCOMM_SUCCESS, errs);
        if (tid == 0) {
            DCHECK(mine[round] == rewin_word(left, round), errs);
            DCHECK(mine[8 + 2 * round] == rewin_word(left, 8 + 2 * round), errs);
            DCHECK(mine[9 + 2 * round] == rewin_word(left, 9 + 2 * round), errs);
            DCHECK(old[round] == REWIN_POISON, errs);
            DCHECK(old[8 + 2 * round] == REWIN_POISON && old[9 + 2 * round] == REWIN_POISON,
                   errs);
        }
        DCHECK(gcomm_win_free(&ctx, &win) == GCOMM_SUCCESS && win == GCOMM_WIN_NULL, errs);
    }
    gcomm_finish(&ctx);
}

/* Inline puts nobody waits for: rank r puts 1 + r % 8 bytes at offset r % 8 and 8 bytes at
 * offset 16 into its right neighbour's 64-byte window and ends. The host checks the windows after
 * the launch (test_rma_device.cu, test_inline_nowait). */
GCOMM_HD_INLINE void body_inline_nowait(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(param, &ctx);
    int rank, size, lrank;
    test_rank_ids(&ctx, &rank, &size, &lrank);
    unsigned char *mine = (unsigned char *)(buf + (size_t)lrank * 8);
    unsigned char *send = (unsigned char *)(buf + (size_t)1024 * 1024 + (size_t)lrank * 4);
    if (gcomm_rank_thread() < 32) send[gcomm_rank_thread()] = inline_byte(rank, 7, 0, gcomm_rank_thread());
    gcomm_win_t win;
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_WORLD, mine, 64, &win) == GCOMM_SUCCESS, errs);
    const int right = (rank + 1) % size;
    DCHECK(gcomm_put_notify(&ctx, win, right, rank % 8, 1 + rank % 8, send, 5) == GCOMM_SUCCESS,
           errs);
    DCHECK(gcomm_put_notify(&ctx, win, right, 16, 8, send + 16, 6) == GCOMM_SUCCESS, errs);
    gcomm_finish(&ctx);
}

/* A put outside the window of a rank of another process (host ranks through the proxy): the
 * target's proxy refuses it, the put returns the error; nothing is written. The error stops every
 * process's ranks, also those that have not yet seen win_create's barrier end (its release reaches
 * ranks one after another): their win_create returns the stop. */
GCOMM_HD_INLINE void body_outside_remote(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(param, &ctx);
    int rank, size;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_size(&ctx, GCOMM_COMM_WORLD, &size);
    gcomm_win_t win;
    int rc = gcomm_win_create(&ctx, GCOMM_COMM_WORLD, buf, 64, &win);
    /* the culprit's own win_create cannot be stopped: nothing fails before its put */
    DCHECK(rc == GCOMM_SUCCESS || (rank != size - 1 && rc == GCOMM_ERR_WINDOW), errs);
    GCOMM_SHARED uint64_t data[2];
    for (int i = gcomm_rank_thread(); i < 2; i += gcomm_rank_nthreads()) data[i] = 0x5555;
    gcomm_rank_sync();
    if (rank == size - 1) /* 16 bytes at offset 56 of rank 0's 64-byte window */
        DCHECK(gcomm_put(&ctx, win, 0, 56, 16, data) == GCOMM_ERR_WINDOW, errs);
    gcomm_finish(&ctx);
}

#endif /* GCOMM_TESTS_RMA_RANK_BODIES_H */
