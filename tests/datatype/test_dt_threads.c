/* The datatype engine from several threads at once (docs/GUIDE.md, "Threads").
 *
 * An MPI program with MPI_THREAD_MULTIPLE packs one committed datatype from many threads and builds
 * new types over shared ones; gcomm promises the same. The main thread builds shapes that take
 * different CPU loops (strided rows, page-sized vector blocks, triangular rows, structs, a
 * transpose, a negative stride, a subarray, 65536 irregular blocks) with a block list written from
 * each shape's definition (block_check.h: the reference is not the engine). Then the threads (8 by
 * default), started together, each with its own buffers and seed:
 *   - commit the same uncommitted twin of every shape at the same moment (each call must succeed
 *     and all must pack alike; the sanitizer build reports a layout that leaks);
 *   - pack, pack in three ranges, unpack and unpack in three ranges, on the committed type or its
 *     twin, and compare byte for byte with the block list: the packed stream and the guard after
 *     it, and the whole typed span (bytes outside the blocks keep their poison);
 *   - build dup and contiguous(1) over the shared type, commit, pack, check and free them (the
 *     shared type's reference count is updated from every thread);
 *   - make a call fail with an argument only that thread uses and check that
 *     gcomm_last_error_detail names it, after the other threads' failures.
 * Failures are counted per thread and reported by the main thread (the harness's counters are not
 * thread-safe). With GCOMM_PACK_STREAM_MIN=4096 (the second CTest entry) the streaming loops run
 * concurrently too. Usage: test_dt_threads [threads] [iterations per thread]. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_check.h"
#include "gcomm/datatype.h"
#include "testutil.h"

#define POISON 0x5a
#define GUARD 64

typedef struct {
    const char *name;
    gcomm_datatype t;    /* committed by the main thread */
    gcomm_datatype twin; /* the same constructors, committed by every thread at once */
    blocks_t l;          /* the typemap as blocks, offsets from the span's start */
    size_t origin;       /* bytes from the span's start to the type's displacement 0 */
    unsigned char *typed;      /* random data over the span */
    unsigned char *packed;     /* the blocks of typed, concatenated */
    unsigned char *unpacked;   /* POISON with the blocks of typed: what an unpack leaves */
} shape_t;

#define MAX_SHAPES 8
static shape_t shapes[MAX_SHAPES];
static int nshapes;
static size_t max_span, max_packed;
static pthread_barrier_t start_line;

#define CHECK_GC(call)                                                                        \
    do {                                                                                    \
        int rc_ = (call);                                                                   \
        if (rc_ != GCOMM_SUCCESS) {                                                         \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call,              \
                    gcomm_error_string(rc_), gcomm_last_error_detail());                    \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

/* ---- shapes: the type twice (t, twin) and its blocks ----------------------------------------- */

typedef void (*build_fn)(gcomm_datatype *out, blocks_t *l, size_t *origin);

/* vector(4096, 16, 32) of doubles: rows of 128 bytes 256 apart (512 KiB packed) */
static void build_rows(gcomm_datatype *out, blocks_t *l, size_t *origin)
{
    CHECK_GC(gcomm_type_vector(4096, 16, 32, GCOMM_DOUBLE, out));
    if (l)
        for (size_t i = 0; i < 4096; i++) blocks_add(l, 256 * i, 128);
    *origin = 0;
}

/* vector(256, 256, 512) of doubles: blocks of 2 KiB a page apart (512 KiB packed) */
static void build_pages(gcomm_datatype *out, blocks_t *l, size_t *origin)
{
    CHECK_GC(gcomm_type_vector(256, 256, 512, GCOMM_DOUBLE, out));
    if (l)
        for (size_t i = 0; i < 256; i++) blocks_add(l, 4096 * i, 2048);
    *origin = 0;
}

/* the lower triangle of a 256 x 256 matrix of doubles, row by row (indexed) */
static void build_lower_tri(gcomm_datatype *out, blocks_t *l, size_t *origin)
{
    enum { N = 256 };
    int len[N], disp[N];
    for (int i = 0; i < N; i++) {
        len[i] = i + 1;
        disp[i] = i * N;
    }
    CHECK_GC(gcomm_type_indexed(N, len, disp, GCOMM_DOUBLE, out));
    if (l)
        for (size_t i = 0; i < N; i++) blocks_add(l, 8 * i * N, 8 * (i + 1));
    *origin = 0;
}

/* contiguous(8192, struct {double, int, int, char} resized to 24 bytes) */
static void build_struct(gcomm_datatype *out, blocks_t *l, size_t *origin)
{
    const int len[4] = {1, 1, 1, 1};
    const ptrdiff_t disp[4] = {0, 8, 12, 16};
    gcomm_datatype types[4] = {GCOMM_DOUBLE, GCOMM_INT, GCOMM_INT, GCOMM_CHAR}, raw, rs;
    CHECK_GC(gcomm_type_struct(4, len, disp, types, &raw));
    CHECK_GC(gcomm_type_resized(raw, 0, 24, &rs));
    CHECK_GC(gcomm_type_contiguous(8192, rs, out));
    CHECK_GC(gcomm_type_free(&raw));
    CHECK_GC(gcomm_type_free(&rs));
    if (l)
        for (size_t i = 0; i < 8192; i++) blocks_add(l, 24 * i, 17);
    *origin = 0;
}

/* contiguous(N, resized(vector(N, 1, N), 0, 8)) of doubles: an N x N matrix packed transposed */
static void build_transpose(gcomm_datatype *out, blocks_t *l, size_t *origin)
{
    enum { N = 192 };
    gcomm_datatype col, col8;
    CHECK_GC(gcomm_type_vector(N, 1, N, GCOMM_DOUBLE, &col));
    CHECK_GC(gcomm_type_resized(col, 0, 8, &col8));
    CHECK_GC(gcomm_type_contiguous(N, col8, out));
    CHECK_GC(gcomm_type_free(&col));
    CHECK_GC(gcomm_type_free(&col8));
    if (l)
        for (size_t j = 0; j < N; j++)
            for (size_t i = 0; i < N; i++) blocks_add(l, 8 * (i * N + j), 8);
    *origin = 0;
}

/* hvector(3000, 3, -40 bytes) of int: 12 bytes every 40, each block below the one before */
static void build_negative(gcomm_datatype *out, blocks_t *l, size_t *origin)
{
    CHECK_GC(gcomm_type_hvector(3000, 3, -40, GCOMM_INT, out));
    *origin = 40 * 2999; /* block i at -40 i */
    if (l)
        for (size_t i = 0; i < 3000; i++) blocks_add(l, *origin - 40 * i, 12);
}

/* subarray 40 x 50 x 60 of floats, C order: [5, 37) x [3, 45) x [7, 58) */
static void build_subarray(gcomm_datatype *out, blocks_t *l, size_t *origin)
{
    const int sizes[3] = {40, 50, 60}, sub[3] = {32, 42, 51}, starts[3] = {5, 3, 7};
    CHECK_GC(gcomm_type_subarray(3, sizes, sub, starts, GCOMM_ORDER_C, GCOMM_FLOAT, out));
    if (l)
        for (size_t i = 0; i < 32; i++)
            for (size_t j = 0; j < 42; j++)
                blocks_add(l, 4 * (((i + 5) * 50 + (j + 3)) * 60 + 7), 4 * 51);
    *origin = 0;
}

/* hindexed of 65536 blocks of 1-4 doubles with gaps of 1-3 doubles: a layout of that many blocks
 * takes long enough to build that the threads' commits of its twin overlap */
enum { IRREGULAR_N = 65536 };
static int irregular_len[IRREGULAR_N];
static ptrdiff_t irregular_disp[IRREGULAR_N];
static void build_irregular(gcomm_datatype *out, blocks_t *l, size_t *origin)
{
    CHECK_GC(gcomm_type_hindexed(IRREGULAR_N, irregular_len, irregular_disp, GCOMM_DOUBLE, out));
    if (l)
        for (size_t i = 0; i < IRREGULAR_N; i++)
            blocks_add(l, (size_t)irregular_disp[i], 8 * (size_t)irregular_len[i]);
    *origin = 0;
}
static void make_irregular(uint64_t *rng)
{
    ptrdiff_t at = 0;
    for (int i = 0; i < IRREGULAR_N; i++) {
        irregular_len[i] = (int)gcommt_rand_range(rng, 1, 4);
        irregular_disp[i] = at;
        at += 8 * (irregular_len[i] + gcommt_rand_range(rng, 1, 3));
    }
}

static void add_shape(const char *name, build_fn build, uint64_t *rng)
{
    if (nshapes == MAX_SHAPES) {
        fprintf(stderr, "more than %d shapes\n", MAX_SHAPES);
        exit(1);
    }
    shape_t *s = &shapes[nshapes++];
    s->name = name;
    build(&s->t, &s->l, &s->origin);
    size_t origin2;
    build(&s->twin, NULL, &origin2);
    CHECK_GC(gcomm_type_commit(&s->t));
    if (s->l.span < s->origin) s->l.span = s->origin;
    size_t size;
    CHECK_GC(gcomm_type_size(s->t, &size));
    if (size != s->l.packed || origin2 != s->origin) {
        fprintf(stderr, "%s: type size %zu, block list %zu bytes\n", name, size, s->l.packed);
        exit(1);
    }
    s->typed = malloc(s->l.span);
    s->packed = malloc(s->l.packed);
    s->unpacked = malloc(s->l.span);
    if (!s->typed || !s->packed || !s->unpacked) exit(1);
    gcommt_fill_random(s->typed, s->l.span, rng);
    memset(s->unpacked, POISON, s->l.span);
    size_t at = 0;
    for (size_t b = 0; b < s->l.n; b++) {
        memcpy(s->packed + at, s->typed + s->l.b[b].off, s->l.b[b].len);
        memcpy(s->unpacked + s->l.b[b].off, s->typed + s->l.b[b].off, s->l.b[b].len);
        at += s->l.b[b].len;
    }
    if (s->l.span > max_span) max_span = s->l.span;
    if (s->l.packed > max_packed) max_packed = s->l.packed;
}

/* ---- the threads ---------------------------------------------------------------------------- */

typedef struct {
    int id, iters;
    uint64_t rng;
    long checks, failures;
    unsigned char *out, *typed;
} worker_t;

#define WCHECK(w, cond, ...)                                                                  \
    do {                                                                                    \
        (w)->checks++;                                                                      \
        if (!(cond)) {                                                                      \
            if ((w)->failures++ < 8) {                                                      \
                fprintf(stderr, "FAIL thread %d %s:%d: %s: ", (w)->id, __FILE__, __LINE__,  \
                        #cond);                                                             \
                fprintf(stderr, __VA_ARGS__);                                               \
                fprintf(stderr, "\n");                                                      \
            }                                                                               \
        }                                                                                   \
    } while (0)
#define WCALL(w, call) WCHECK(w, (call) == GCOMM_SUCCESS, "%s", gcomm_last_error_detail())

/* Two sorted cuts in (0, n): three ranges, some of them empty when n is small. */
static void cuts(worker_t *w, size_t n, size_t c[4])
{
    size_t a = (size_t)gcommt_rand_range(&w->rng, 0, (long)n);
    size_t b = (size_t)gcommt_rand_range(&w->rng, 0, (long)n);
    c[0] = 0;
    c[1] = a < b ? a : b;
    c[2] = a < b ? b : a;
    c[3] = n;
}

static void check_pack(worker_t *w, const shape_t *s, gcomm_datatype t, int ranges)
{
    const size_t n = s->l.packed;
    memset(w->out, POISON, n + GUARD);
    if (ranges) {
        size_t c[4];
        cuts(w, n, c);
        for (int k = 0; k < 3; k++)
            WCALL(w, gcomm_pack_range(s->typed + s->origin, 1, t, c[k], c[k + 1] - c[k],
                                      w->out + c[k]));
    } else {
        size_t pos = 0;
        WCALL(w, gcomm_pack(s->typed + s->origin, 1, t, w->out, n + GUARD, &pos));
        WCHECK(w, pos == n, "%s: position %zu, expected %zu", s->name, pos, n);
    }
    WCHECK(w, memcmp(w->out, s->packed, n) == 0, "%s: packed stream differs (ranges %d)",
           s->name, ranges);
    int guard_ok = 1;
    for (size_t i = n; i < n + GUARD; i++) guard_ok &= w->out[i] == POISON;
    WCHECK(w, guard_ok, "%s: bytes written past the packed stream", s->name);
}

static void check_unpack(worker_t *w, const shape_t *s, gcomm_datatype t, int ranges)
{
    const size_t n = s->l.packed;
    memset(w->typed, POISON, s->l.span);
    if (ranges) {
        size_t c[4];
        cuts(w, n, c);
        for (int k = 0; k < 3; k++)
            WCALL(w, gcomm_unpack_range(s->packed + c[k], c[k], c[k + 1] - c[k],
                                        w->typed + s->origin, 1, t));
    } else {
        size_t pos = 0;
        WCALL(w, gcomm_unpack(s->packed, n, &pos, w->typed + s->origin, 1, t));
        WCHECK(w, pos == n, "%s: position %zu, expected %zu", s->name, pos, n);
    }
    WCHECK(w, memcmp(w->typed, s->unpacked, s->l.span) == 0,
           "%s: typed span differs after unpack (ranges %d)", s->name, ranges);
}

/* dup and contiguous(1) over the shared type: built, committed, used and freed by this thread. */
static void check_derived(worker_t *w, const shape_t *s)
{
    gcomm_datatype d = GCOMM_DATATYPE_NULL, c = GCOMM_DATATYPE_NULL;
    WCALL(w, gcomm_type_dup(s->t, &d));
    WCALL(w, gcomm_type_contiguous(1, s->t, &c));
    WCALL(w, gcomm_type_commit(&d));
    WCALL(w, gcomm_type_commit(&c));
    if (d) check_pack(w, s, d, 0);
    if (c) check_unpack(w, s, c, 1);
    if (d) WCALL(w, gcomm_type_free(&d));
    if (c) WCALL(w, gcomm_type_free(&c));
}

/* A failing call with a count only this thread uses; its detail must survive the other threads'
 * failures and this thread's successful calls in between. */
static void check_error_detail(worker_t *w, const shape_t *s)
{
    const int bad = -(1000 + w->id);
    gcomm_datatype x = GCOMM_DATATYPE_NULL;
    WCHECK(w, gcomm_type_contiguous(bad, GCOMM_DOUBLE, &x) == GCOMM_ERR_COUNT,
           "contiguous(%d) did not return GCOMM_ERR_COUNT", bad);
    WCHECK(w, x == GCOMM_DATATYPE_NULL, "contiguous(%d) wrote a type", bad);
    check_pack(w, s, s->t, 0);
    char want[16];
    snprintf(want, sizeof want, "%d", bad);
    const char *detail = gcomm_last_error_detail();
    WCHECK(w, detail && strstr(detail, want), "detail \"%s\" does not name %s",
           detail ? detail : "(null)", want);
}

static void *worker(void *arg)
{
    worker_t *w = arg;
    pthread_barrier_wait(&start_line);
    for (int k = 0; k < nshapes; k++) WCALL(w, gcomm_type_commit(&shapes[k].twin));
    for (int it = 0; it < w->iters; it++) {
        const shape_t *s = &shapes[gcommt_rand_range(&w->rng, 0, nshapes - 1)];
        gcomm_datatype t = it & 1 ? s->twin : s->t;
        switch (gcommt_rand_range(&w->rng, 0, 5)) {
        case 0: check_pack(w, s, t, 0); break;
        case 1: check_pack(w, s, t, 1); break;
        case 2: check_unpack(w, s, t, 0); break;
        case 3: check_unpack(w, s, t, 1); break;
        case 4: check_derived(w, s); break;
        default: check_error_detail(w, s); break;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const int nthreads = argc > 1 ? atoi(argv[1]) : 8;
    const int iters = argc > 2 ? atoi(argv[2]) : 200;
    if (nthreads < 1 || nthreads > 256 || iters < 1) {
        fprintf(stderr, "usage: %s [threads 1-256] [iterations >= 1]\n", argv[0]);
        return 2;
    }
    uint64_t rng = gcommt_seed(0x5eed7423u);
    add_shape("rows_128B", build_rows, &rng);
    add_shape("blocks_2KiB_per_page", build_pages, &rng);
    add_shape("lower_tri", build_lower_tri, &rng);
    add_shape("struct", build_struct, &rng);
    add_shape("transpose", build_transpose, &rng);
    add_shape("negative_stride", build_negative, &rng);
    add_shape("subarray3d", build_subarray, &rng);
    make_irregular(&rng);
    add_shape("irregular", build_irregular, &rng);
    const char *env = getenv("GCOMM_PACK_STREAM_MIN");
    printf("%d threads x %d iterations over %d shapes (largest span %zu bytes), "
           "GCOMM_PACK_STREAM_MIN=%s\n",
           nthreads, iters, nshapes, max_span, env ? env : "(default)");

    worker_t *w = calloc((size_t)nthreads, sizeof *w);
    pthread_t *tid = calloc((size_t)nthreads, sizeof *tid);
    if (!w || !tid || pthread_barrier_init(&start_line, NULL, (unsigned)nthreads)) return 1;
    for (int i = 0; i < nthreads; i++) {
        w[i].id = i;
        w[i].iters = iters;
        w[i].rng = rng ^ (0x9e3779b97f4a7c15ull * (uint64_t)(i + 1));
        w[i].out = malloc(max_packed + GUARD);
        w[i].typed = malloc(max_span);
        if (!w[i].out || !w[i].typed) return 1;
        if (pthread_create(&tid[i], NULL, worker, &w[i])) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    }
    long checks = 0, failures = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(tid[i], NULL);
        checks += w[i].checks;
        failures += w[i].failures;
        free(w[i].out);
        free(w[i].typed);
    }
    pthread_barrier_destroy(&start_line);
    gcommt_checks += checks;
    gcommt_failures += (int)failures;
    TEST_CHECK(checks >= (long)nthreads * iters, "%ld checks ran", checks);

    /* every twin ended committed, and packs as its shape (checked here in one thread too) */
    for (int k = 0; k < nshapes; k++) {
        shape_t *s = &shapes[k];
        unsigned char *out = malloc(s->l.packed);
        size_t pos = 0;
        TEST_OK(gcomm_pack(s->typed + s->origin, 1, s->twin, out, s->l.packed, &pos));
        TEST_CHECK(pos == s->l.packed && memcmp(out, s->packed, s->l.packed) == 0,
                   "%s: the twin packs differently", s->name);
        free(out);
        TEST_OK(gcomm_type_free(&s->t));
        TEST_OK(gcomm_type_free(&s->twin));
        free(s->typed);
        free(s->packed);
        free(s->unpacked);
        free(s->l.b);
    }
    free(w);
    free(tid);
    return gcommt_finish("test_dt_threads");
}
