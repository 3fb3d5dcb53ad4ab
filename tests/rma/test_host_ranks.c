/* Host ranks (gcomm_launch_host): the rank bodies of the GPU tests (rank_bodies.h), unchanged, as
 * host threads — put/get with and without notification, wildcard matching, overlapping windows,
 * barriers, typed put/get with host type handles, a stress of random sources and tags, the device
 * log, and the error paths (a put outside a window, a wait that times out, bad arguments). No GPU
 * needed: this is how CI runs the rank library.
 *
 * Built twice: test_host_ranks (one process) and, with HOST_RANKS_MPI, test_host_ranks_mpi, run
 * under mpiexec: every process runs the same number of host ranks, and the ranks of different
 * processes reach each other through the proxies (typed transfers between processes travel as
 * their contiguous pieces; an error does not stop other processes' ranks, so those cases differ).
 *
 * Usage: test_host_ranks[_mpi] [all | timeout] [stress notifications] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gcomm/gcomm.h"
#include "gcomm/rank.h"
#ifdef HOST_RANKS_MPI
#include <mpi.h>

#include "gcomm/gcomm_mpi.h"
#endif
#include "rank_bodies.h"
#include "testutil.h"

typedef struct {
    uint64_t *buf;
    unsigned errs[2];
    /* stress */
    long per_sender;
    const long *expect;
    /* typed */
    gcomm_device_type_t col, dbl, rev, row;
    int mode;
} args_t;

/* The bodies of (param, buf, errs) as host-rank functions: run_ring, run_gather, ... */
#define HOST_RANK_BODIES(X)                                                                        \
    X(ring) X(gather) X(get) X(overlap) X(flush) X(inline) X(flushinl) X(rewin) X(outside)        \
    X(outside_remote)
#define HOST_RANK_FN(name)                                                                         \
    static void run_##name(gcomm_param_t p, void *a)                                               \
    {                                                                                              \
        body_##name(p, ((args_t *)a)->buf, ((args_t *)a)->errs);                                   \
    }
HOST_RANK_BODIES(HOST_RANK_FN)

static void run_never(gcomm_param_t p, void *a)
{
    body_never(p, ((args_t *)a)->errs);
}

static int nprocs = 1, me = 0; /* processes of the job (mpiexec) and this one */
#ifdef HOST_RANKS_MPI
#define HOST_RANKS_STRESS 20000
#else
#define HOST_RANKS_STRESS 100000
#endif

static void run_stress(gcomm_param_t p, void *a)
{
    args_t *x = (args_t *)a;
    body_stress(p, x->buf, x->per_sender, x->expect, x->errs);
}

static void run_typed(gcomm_param_t p, void *a)
{
    args_t *x = (args_t *)a;
    body_typed(p, (double *)x->buf, x->errs, x->col, x->dbl, x->rev, x->row);
}

static void run_typed_bad(gcomm_param_t p, void *a)
{
    args_t *x = (args_t *)a;
    body_typed_bad(p, (double *)x->buf, x->errs, x->col, x->dbl, x->rev, x->mode);
}

/* The device log from host ranks: printed by gcomm_launch_host when it returns. */
static void run_log(gcomm_param_t p, void *a)
{
    GCOMM_SHARED gcomm_context_t ctx;
    gcomm_rank_init(p, &ctx);
    int rank, size;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_size(&ctx, GCOMM_COMM_WORLD, &size);
    if (rank == size - 1)
        gcomm_log(&ctx, "test_host_ranks: hello from host rank %d of %d, e ~ %.3f, %u%%\n", rank,
                  size, 2.71828, 100u);
    (void)a;
    gcomm_finish(&ctx);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define BUF_WORDS (1u << 20)

static void poison(args_t *a)
{
    memset(a->buf, 0xA5, BUF_WORDS * 8);
    a->errs[0] = a->errs[1] = 0;
}

static void run_case(args_t *a, const char *name, gcomm_host_fn_t fn, int nranks)
{
    poison(a);
    double t0 = now_s();
    TEST_OK(gcomm_launch_host(fn, nranks, a));
    TEST_CHECK(a->errs[0] == 0, "%s: %u failed checks, the first at rank_bodies.h:%u", name,
               a->errs[0], a->errs[1]);
    printf("%-8s %3d host ranks: %s (%.3f s)\n", name, nranks, a->errs[0] ? "FAILED" : "ok",
           now_s() - t0);
}

/* nranks per process; the receivers are world ranks 0..STRESS_RECEIVERS-1, each process checks
 * the counters of its own. */
static void test_stress(args_t *a, long total, int per_proc)
{
    int nranks = per_proc * nprocs, first = per_proc * me;
    int senders = nranks - STRESS_RECEIVERS;
    long per_sender = (total + senders - 1) / senders; /* at least the number asked for */
    long expect[STRESS_RECEIVERS * STRESS_TAGS];
    stress_expect(nranks, per_sender, expect);
    poison(a);
    memset(a->buf, 0, STRESS_BUFFER_BYTES(nranks));
    a->per_sender = per_sender;
    a->expect = expect;
    double t0 = now_s();
    TEST_OK(gcomm_launch_host(run_stress, per_proc, a));
    double dt = now_s() - t0;
    TEST_CHECK(a->errs[0] == 0, "stress: %u failed checks, the first at rank_bodies.h:%u",
               a->errs[0], a->errs[1]);
    long bad = stress_check(a->buf, nranks, per_sender, first, first + per_proc);
    TEST_CHECK(bad == 0, "stress: %ld final counters wrong", bad);
    printf("stress   %3d host ranks: %ld notifications from %d senders to %d receivers, %d tags: "
           "%s (%.2f s, %.2f M/s)\n",
           nranks, per_sender * senders, senders, STRESS_RECEIVERS, STRESS_TAGS,
           (a->errs[0] || bad) ? "FAILED" : "ok", dt, per_sender * senders / dt * 1e-6);
}

/* Typed put/get between neighbours (in other processes too: through the proxies), then the
 * three typed error paths with `bad_ranks` ranks per process: the culprit, rank 1, targets rank 0,
 * in its own process (4 ranks) or in another one (1 rank per process, through the proxies).
 * The mismatch and the type below the window are refused before anything moves, so nothing is
 * written; a column past the end of another process's window is cut into pieces that its proxy
 * checks one by one, so the pieces inside land and only the status is checked there. */
static void test_typed(args_t *a, int nranks, int bad_ranks)
{
    typed_types_t t;
    gcomm_device_type_t h[4];
    TEST_OK(typed_types_make(&t));
    TEST_OK(typed_handles(&t, GCOMM_DEVICE_HOST, h));
    a->col = h[0];
    a->dbl = h[1];
    a->rev = h[2];
    a->row = h[3];
    run_case(a, "typed", run_typed, nranks);
    const int remote = bad_ranks == 1;
    for (int mode = 0; mode < 3; mode++) {
        poison(a);
        a->mode = mode;
        int rc = gcomm_launch_host(run_typed_bad, bad_ranks, a);
        const char *d = gcomm_last_error_detail();
        TEST_CHECK(rc == typed_bad_want[mode] && (remote || strstr(d, "rank 1")) &&
                       (remote || mode != 2 || strstr(d, "below the window's start")),
                   "typed error %d: rc = %d (%s)", mode, rc, d);
        int touched = typed_touched(a->buf);
        TEST_CHECK(touched == 0 || (remote && mode == 0), "typed error %d: %d bytes written",
                   mode, touched);
        TEST_CHECK(a->errs[0] == 0, "typed error %d: failed checks (line %u)", mode, a->errs[1]);
        printf("errors   typed %s%s -> %s: %s\n", typed_bad_what[mode],
               remote ? " (another process)" : "", gcomm_error_string(rc), d);
    }
    TEST_OK(typed_types_free(&t));
}

/* A put outside the window of a rank of another process: refused by its proxy, reported by the
 * origin's flush, in every process's status. */
static void test_errors_remote(args_t *a, int per_proc)
{
    poison(a);
    int rc = gcomm_launch_host(run_outside_remote, per_proc, a);
    const char *d = gcomm_last_error_detail();
    TEST_CHECK(rc == GCOMM_ERR_WINDOW, "outside (remote): rc = %d (%s)", rc, d);
    const unsigned char *bytes = (const unsigned char *)a->buf;
    int touched = 0;
    for (int i = 0; i < 128; i++) touched += bytes[i] != 0xA5;
    TEST_CHECK(touched == 0, "outside (remote): %d bytes written", touched);
    TEST_CHECK(a->errs[0] == 0, "outside (remote): failed checks (line %u)", a->errs[1]);
    printf("errors   put outside a window of another process -> %s: %s\n", gcomm_error_string(rc),
           d);
}

static void test_errors(args_t *a)
{
    poison(a);
    int rc = gcomm_launch_host(run_outside, 4, a);
    const char *d = gcomm_last_error_detail();
    TEST_CHECK(rc == GCOMM_ERR_WINDOW && strstr(d, "rank 1") && strstr(d, "window 0") &&
                   strstr(d, "offset 56"),
               "outside: rc = %d (%s)", rc, d);
    const unsigned char *bytes = (const unsigned char *)a->buf;
    int touched = 0;
    for (int i = 0; i < 128; i++) touched += bytes[i] != 0xA5;
    TEST_CHECK(touched == 0, "outside: %d bytes written", touched);
    TEST_CHECK(a->errs[0] == 0, "outside: failed checks (line %u)", a->errs[1]);
    printf("errors   put outside a window -> %s: %s\n", gcomm_error_string(rc), d);
    TEST_RC(GCOMM_ERR_ARG, gcomm_launch_host(NULL, 4, a));
    TEST_RC(GCOMM_ERR_ARG, gcomm_launch_host(run_ring, 0, a));
    TEST_RC(GCOMM_ERR_ARG, gcomm_launch_host(run_ring, 1 << 20, a));
}

/* What the polling loops' drain looks at first (rank_impl.h, gcommi_lanes_published): the lanes
 * whose head entry (at the read position) is published, for jobs of 1 to GCOMMI_MAX_GPUS GPUs
 * (on the GPU a job of two reads both words in one asm statement; every other count, and the
 * host, takes the loop checked here). Random read positions; each lane's head published, or an
 * entry one slot after it, or one a lap before it (neither may count), or nothing (the draws
 * from testutil's generator: GCOMM_TEST_SEED replays a failing set). */
static void test_lanes_published(void)
{
    enum { DEPTH = 8 };
    const size_t words = (size_t)GCOMMI_MAX_GPUS * DEPTH * GCOMMI_ENTRY_WORDS;
    uint64_t *lanes = calloc(words, 8);
    TEST_CHECK(lanes != NULL, "lanes: out of memory");
    if (!lanes) return;
    uint64_t rng = gcommt_seed(0x9E3779B97F4A7C15ull);
    for (int round = 0; round < 200; round++) {
        gcomm_context_t ctx;
        memset(&ctx, 0, sizeof(ctx));
        memset(lanes, 0, words * 8);
        const uint64_t r = gcommt_rand(&rng);
        ctx.ngpus = 1 + (int)(r % GCOMMI_MAX_GPUS);
        ctx.gpu = (int)((r >> 8) % (uint64_t)ctx.ngpus);
        ctx.depth = DEPTH;
        uint32_t want = 0;
        for (int g = 0; g < ctx.ngpus; g++) {
            const uint64_t rg = gcommt_rand(&rng);
            const uint32_t next = (uint32_t)(rg % 1000) + DEPTH;
            ctx.lane_next[g] = next;
            uint64_t *ring = lanes + (size_t)g * DEPTH * GCOMMI_ENTRY_WORDS;
            switch ((rg >> 20) % 4) {
            case 0: /* the head: counts */
                gcommi_lane_publish(ring, DEPTH, next, 1, 2, 0, 0);
                want |= 1u << g;
                break;
            case 1: /* the slot after the head: the head is still empty */
                gcommi_lane_publish(ring, DEPTH, next + 1, 1, 2, 0, 0);
                break;
            case 2: /* the head's slot one lap earlier: already taken */
                gcommi_lane_publish(ring, DEPTH, next - DEPTH, 1, 2, 0, 0);
                break;
            default: /* nothing */
                break;
            }
        }
        const uint32_t got = gcommi_lanes_published(&ctx, lanes);
        TEST_CHECK(got == want, "lanes published: %d GPUs (own %d), got mask %#x, want %#x",
                   ctx.ngpus, ctx.gpu, got, want);
    }
    free(lanes);
}

/* The rule that decides whether a small notified put may go inline without an acquire at its
 * target (rank_impl.h, gcommi_dirty_*): a target is dirty while the block's plain puts to it are
 * not covered by a released notification to it or by a barrier; tracked exactly for one target,
 * "several" for more. Checked step by step on one context. */
static void test_dirty_rule(void)
{
    gcomm_context_t ctx;
    memset(&ctx, 0, sizeof(ctx));
    ctx.dirty = GCOMMI_DIRTY_NONE;
    TEST_CHECK(!gcommi_dirty_for(&ctx, 3) && !gcommi_dirty_for(&ctx, 0), "dirty: clean at start");
    gcommi_dirty_add(&ctx, 3); /* a plain put to 3 */
    TEST_CHECK(gcommi_dirty_for(&ctx, 3) && !gcommi_dirty_for(&ctx, 5), "dirty: one target");
    gcommi_dirty_released(&ctx, 5); /* a release to another rank covers nothing for 3 */
    TEST_CHECK(gcommi_dirty_for(&ctx, 3), "dirty: a release to another target cleared it");
    gcommi_dirty_add(&ctx, 3); /* more puts to the same target */
    TEST_CHECK(ctx.dirty == 3, "dirty: second put to the same target");
    gcommi_dirty_released(&ctx, 3);
    TEST_CHECK(!gcommi_dirty_for(&ctx, 3) && ctx.dirty == GCOMMI_DIRTY_NONE,
               "dirty: the release to the target did not clear it");
    gcommi_dirty_add(&ctx, 3);
    gcommi_dirty_add(&ctx, 7); /* two targets: every target counts as dirty */
    TEST_CHECK(gcommi_dirty_for(&ctx, 3) && gcommi_dirty_for(&ctx, 7) && gcommi_dirty_for(&ctx, 9),
               "dirty: several targets");
    gcommi_dirty_released(&ctx, 3); /* not enough: 7 is still uncovered */
    TEST_CHECK(gcommi_dirty_for(&ctx, 7) && gcommi_dirty_for(&ctx, 3),
               "dirty: several, one released");
    gcommi_dirty_add(&ctx, 0); /* rank 0 is a rank like the others */
    TEST_CHECK(ctx.dirty == GCOMMI_DIRTY_SEVERAL, "dirty: several stays several");
    printf("dirty    the inline rule's bookkeeping: ok\n");
}

/* The poll's look at the lanes (gcommi_lanes_peek) for jobs of 1..GCOMMI_MAX_GPUS GPUs: every own
 * GPU, every set of lanes whose head holds a published entry, read positions that wrap: the hits
 * must be exactly those lanes, the words handed on those of the lane named, and a take of that
 * entry must find its payload. The GPU build runs the same logic with the loads in one asm
 * statement (notif.h); the slots of jobs of 3-4 and of 5-8 GPUs are different statements, both
 * covered here. */
static void test_peek_lanes(void)
{
    enum { DEPTH = 8 };
    static uint64_t lanes[GCOMMI_MAX_GPUS * DEPTH * GCOMMI_ENTRY_WORDS];
    unsigned cases = 0;
    for (int ngpus = 1; ngpus <= GCOMMI_MAX_GPUS; ngpus++) {
        for (int own = 0; own < ngpus; own++) {
            for (uint32_t set = 0; set < 1u << ngpus; set++) {
                gcomm_context_t ctx;
                memset(&ctx, 0, sizeof(ctx));
                memset(lanes, 0, sizeof(lanes));
                ctx.depth = DEPTH;
                ctx.gpu = own;
                ctx.ngpus = ngpus;
                for (int g = 0; g < ngpus; g++) {
                    /* read positions past one wrap, different per lane */
                    const uint32_t next = (uint32_t)(DEPTH + 3 * g + (int)set % 5);
                    ctx.lane_next[g] = next;
                    uint64_t *ring = lanes + (size_t)g * DEPTH * GCOMMI_ENTRY_WORDS;
                    /* the entry one round before stays in the slot: not published for `next` */
                    gcommi_lane_publish_inline(ring, DEPTH, next - DEPTH, 1, 2, 3, 0, 8, 0, 0);
                    if (set >> g & 1u)
                        gcommi_lane_publish_inline(ring, DEPTH, next, g, 5, 1, 16, 8,
                                                   0x0102030405060708ull + (uint64_t)g, 0);
                }
                gcommi_peek_t pk;
                /* one to three polls: a wait's loop stops at the first hit, or after its polls */
                gcommi_lanes_peek(&ctx, lanes, &pk, 1 + (int)(set % 3));
                TEST_CHECK(pk.hits == set, "peek: %d GPUs, own %d, lanes %#x: hits %#x", ngpus,
                           own, set, pk.hits);
                /* the lane whose words come back: the own lane's; with two GPUs, whichever
                 * of the two the drain takes first (the lower); with more, when the own lane
                 * has nothing, the last peer lane with an entry, its notification word alone
                 * (its inline words marked unpublished, loaded by whoever takes it) */
                const int own_hit = (int)(set >> own & 1u), peer = 1 - own;
                int lane = own_hit ? own : -1, word_only = 0;
                if (ngpus == 2 && (set >> peer & 1u) && (!own_hit || peer < own)) lane = peer;
                if (ngpus > 2 && !own_hit && set != 0) {
                    for (int g = 0; g < ngpus; g++)
                        if (set >> g & 1u) lane = g;
                    word_only = 1;
                }
                TEST_CHECK(pk.lane == lane, "peek: %d GPUs, own %d, lanes %#x: lane %d, not %d",
                           ngpus, own, set, pk.lane, lane);
                if (pk.lane >= 0 && pk.lane < ngpus) {
                    const uint32_t next = ctx.lane_next[pk.lane];
                    gcommi_notif_t e;
                    gcommi_notif_unpack(pk.w[0], &e);
                    TEST_CHECK(gcommi_lane_published(pk.w[0], next) && e.source == pk.lane &&
                                   e.tag == 5 && gcommi_notif_inline(pk.w[0]),
                               "peek: %d GPUs, own %d, lanes %#x: notification word of lane %d",
                               ngpus, own, set, pk.lane);
                    TEST_CHECK(gcommi_inline_ready(pk.w + 1, next) == !word_only,
                               "peek: %d GPUs, own %d, lanes %#x: lane %d's inline words %s",
                               ngpus, own, set, pk.lane, word_only ? "not marked" : "missing");
                    /* what a take does with these words: loads what is missing */
                    uint64_t w[GCOMMI_ENTRY_WORDS], offset, payload;
                    uint32_t len;
                    memcpy(w, pk.w, sizeof(w));
                    gcommi_lane_take_inline(gcommi_lane_head(lanes, pk.lane, DEPTH, next), next, w,
                                            &offset, &len, &payload, pk.lane != own);
                    TEST_CHECK(offset == 16 && len == 8 &&
                                   payload == 0x0102030405060708ull + (uint64_t)pk.lane,
                               "peek: %d GPUs, own %d, lanes %#x: words of lane %d", ngpus, own,
                               set, pk.lane);
                }
                cases++;
            }
        }
    }
    printf("peek     lanes of 1-%d GPUs, %u cases: ok\n", GCOMMI_MAX_GPUS, cases);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    /* (between processes every put waits for its round trip through the proxies: fewer) */
    long stress_n = argc > 2 ? atol(argv[2]) : HOST_RANKS_STRESS;
    args_t a;
    memset(&a, 0, sizeof(a));
    TEST_RC(GCOMM_ERR_ARG, gcomm_launch_host(run_ring, 4, &a)); /* before gcomm_init */
#ifdef HOST_RANKS_MPI
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    TEST_OK(gcomm_init_mpi(MPI_COMM_WORLD));
#else
    TEST_OK(gcomm_init());
#endif
    a.buf = (uint64_t *)malloc(BUF_WORDS * 8);
    TEST_CHECK(a.buf != NULL, "malloc");
    test_dirty_rule();
    test_lanes_published();
    test_peek_lanes();
    if (strcmp(mode, "timeout") == 0) {
        poison(&a);
        double t0 = now_s();
        int rc = gcomm_launch_host(run_never, 6, &a);
        double dt = now_s() - t0;
        TEST_CHECK(rc == GCOMM_ERR_TIMEOUT, "never: rc = %d (%s)", rc, gcomm_last_error_detail());
        TEST_CHECK(a.errs[0] == 0, "never: failed checks (line %u)", a.errs[1]);
        printf("timeout  -> %s after %.2f s: %s\n", gcomm_error_string(rc), dt,
               gcomm_last_error_detail());
        run_case(&a, "ring", run_ring, 5); /* works again after a timeout */
    } else if (nprocs > 1) {
        run_case(&a, "ring", run_ring, 1);
        run_case(&a, "ring", run_ring, 6);
        run_case(&a, "gather", run_gather, 5);
        run_case(&a, "get", run_get, 4);
        run_case(&a, "overlap", run_overlap, 3);
        run_case(&a, "log", run_log, 2);
        run_case(&a, "flush", run_flush, 3);
        run_case(&a, "inline", run_inline, 4); /* across processes: released entries instead */
        run_case(&a, "rewin", run_rewin, 3);
        run_case(&a, "flushinl", run_flushinl, 3);
        test_typed(&a, 3, 1); /* neighbours and culprits in other processes: the proxies */
        test_stress(&a, stress_n, 4);
        test_errors_remote(&a, 3);
        run_case(&a, "ring", run_ring, 4); /* still works after errors */
    } else {
        run_case(&a, "ring", run_ring, 1);
        run_case(&a, "ring", run_ring, 7);
        run_case(&a, "ring", run_ring, 64); /* far more ranks than cores */
        run_case(&a, "gather", run_gather, 13);
        run_case(&a, "get", run_get, 9);
        run_case(&a, "overlap", run_overlap, 6);
        run_case(&a, "log", run_log, 3);
        run_case(&a, "flush", run_flush, 7);
        run_case(&a, "inline", run_inline, 6); /* the payload inside the notification */
        run_case(&a, "inline", run_inline, 3);
        run_case(&a, "rewin", run_rewin, 5); /* windows freed and created again */
        run_case(&a, "flushinl", run_flushinl, 4); /* a small put_notify after a flush */
        test_typed(&a, 5, 4);
        test_stress(&a, stress_n, 12);
        test_errors(&a);
        run_case(&a, "ring", run_ring, 8); /* still works after errors */
    }
    free(a.buf);
    TEST_OK(gcomm_finalize());
#ifdef HOST_RANKS_MPI
    int bad = gcommt_failures, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (any && !bad) return 1; /* another process failed */
#endif
    return gcommt_finish(nprocs > 1 ? "test_host_ranks_mpi" : "test_host_ranks");
}
