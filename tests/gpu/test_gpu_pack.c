/* The GPU datatype engine against the CPU engine (issue 3).
 *
 * Every GPU result is compared byte for byte with what the CPU gcomm_pack / gcomm_unpack /
 * gcomm_copy produce from host copies of the same data (the CPU engine is checked against Open MPI
 * by test_dt_vs_mpi). Types: thousands of random recipes (random_type.c, depth up to 4) and
 * directed types for each GPU plan kind (CONTIG; STRIDED with 0-3 dimensions and 1, 2, 4, 8, 17,
 * 32 and 2048-byte runs; UNITS; POINT), each with count 1 and 3 (directed: as listed), in every
 * direction the API supports:
 *   gcomm_pack / gcomm_unpack  device <-> device, device <-> mapped pinned host (zero-copy),
 *                              device <-> pageable host (staging), pageable and pinned host typed
 *                              <-> device packed;
 *   *_async                    on a user (non-blocking) stream, then cudaStreamSynchronize;
 *   *_range                    random cuts (empty and 1-byte pieces too), unpacked in random order;
 *   gcomm_copy                 the type and its packed layout (a flattened struct), the type and
 *                              itself, the type and its flattened struct at the same addresses,
 *                              a transpose; device <-> device, pinned and pageable.
 * Outputs are poisoned before every run and compared whole: margins, the bytes after the packed
 * stream, the gaps of unpacked types (unpack targets start as random bytes identical to the CPU
 * reference's). Data is random, never zero. Typed origins and packed positions are at random
 * alignments; directed tests offset them by 1, 4 and 8 bytes to force narrow accesses.
 * Types whose typemap overlaps itself are packed only (their unpack is erroneous in MPI).
 *
 * Usage: test_gpu_pack [ntypes]   (default 2000; 0 runs the directed tests only)
 * Exits 77 (skipped) without a usable GPU. A failing random type prints its recipe and its seed:
 * GCOMM_TEST_SEED=<seed> test_gpu_pack 1 replays it. GCOMMT_TRACE=1 prints every type before it
 * is checked (to attribute a crash). */
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "datatype/gpu_plan.h" /* plan kinds, for the census only */
#include "datatype/layout.h"
#include "gcomm/gcomm.h"
#include "random_type.h"
#include "testutil.h"
#include "typemap_ref.h"

#define MARGIN 64   /* poisoned bytes around every buffer; a multiple of 16 */
#define MAX_MSGS 10 /* failure lines printed per type */
#define MAX_CUTS 24

enum { DEV, PINNED, PAGEABLE, NKINDS };
static const char *kind_name[NKINDS] = {"device", "pinned", "pageable"};

/* ---- the type being checked: named in every failure and on a fatal CUDA error --------------- */

static struct {
    const char *name;      /* directed test, or NULL */
    const rt_node *recipe; /* random recipe, or NULL */
    long index;
    uint64_t seed;
    size_t count;
    char what[200]; /* the operation being checked */
    int fails;      /* failed checks of this type */
} cur;
static const char *prog;

static void print_current(void)
{
    if (cur.recipe) {
        fprintf(stderr, "random type %ld, count %zu; replay: GCOMM_TEST_SEED=0x%016" PRIx64 " %s 1\n",
                cur.index, cur.count, cur.seed, prog);
        rt_print(stderr, cur.recipe, 2);
    } else {
        fprintf(stderr, "directed test '%s', count %zu\n", cur.name ? cur.name : "?", cur.count);
    }
}

static void doing(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cur.what, sizeof cur.what, fmt, ap);
    va_end(ap);
}

#define CUDA_OK(call)                                                                          \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) cuda_fatal(#call, e_, __LINE__);                                \
    } while (0)

static void cuda_fatal(const char *call, cudaError_t e, int line)
{
    fprintf(stderr, "FATAL %s:%d: %s: %s (while checking: %s)\n", __FILE__, line, call,
            cudaGetErrorString(e), cur.what);
    print_current();
    exit(1);
}

/* A crash (the CPU touching device memory, say) names the type and the operation too. */
static void on_crash(int sig)
{
    fprintf(stderr, "CRASH (signal %d) while checking: %s\n", sig, cur.what);
    print_current();
    signal(sig, SIG_DFL);
    raise(sig);
}

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        gcommt_checks++;                                                                       \
        if (!(cond)) {                                                                         \
            gcommt_failures++;                                                                 \
            if (cur.fails++ < MAX_MSGS) {                                                      \
                fprintf(stderr, "FAIL %s:%d [%s, count %zu]: ", __FILE__, __LINE__, cur.what,  \
                        cur.count);                                                            \
                fprintf(stderr, __VA_ARGS__);                                                  \
                fputc('\n', stderr);                                                           \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* A gcomm call that must succeed; returns 1 when it did. A CUDA error may leave the context
 * unusable (a kernel fault is sticky): the test stops there, naming the type. */
static int gc_ok(int rc, const char *call, int line)
{
    gcommt_checks++;
    if (rc == GCOMM_SUCCESS) return 1;
    gcommt_failures++;
    if (cur.fails++ < MAX_MSGS)
        fprintf(stderr, "FAIL %s:%d [%s, count %zu]: %s returned %d (%s): %s\n", __FILE__, line,
                cur.what, cur.count, call, rc, gcomm_error_string(rc), gcomm_last_error_detail());
    if (rc == GCOMM_ERR_CUDA) {
        fprintf(stderr, "FATAL: a CUDA error; the context may be unusable, stopping\n");
        print_current();
        exit(1);
    }
    return 0;
}
#define GC(call) gc_ok((call), #call, __LINE__)

/* ---- random numbers -------------------------------------------------------------------------- */

static long rnd(uint64_t *s, long lo, long hi)
{
    return gcommt_rand_range(s, lo, hi);
}

static int chance(uint64_t *s, int percent)
{
    return rnd(s, 0, 99) < percent;
}

static uint64_t next_seed(uint64_t x) /* splitmix64, as test_dt_vs_mpi */
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x ? x : 1;
}

/* An alignment offset: half the time 0 (16-byte aligned, the widest accesses), else 1..15. */
static size_t random_shift(uint64_t *s)
{
    return chance(s, 50) ? 0 : (size_t)rnd(s, 1, 15);
}

/* ---- memory of each kind ---------------------------------------------------------------------- */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    return p;
}

/* p + off, where p + off may lie outside the object (a typed origin before or after its data) */
static unsigned char *at(const unsigned char *p, ptrdiff_t off)
{
    return (unsigned char *)((uintptr_t)p + (uintptr_t)off);
}

/* Mapped pinned host buffers, kept and grown: cudaHostAlloc is slow. */
#define PINNED_SLOTS 5
static unsigned char *pinned_mem[PINNED_SLOTS];
static size_t pinned_cap[PINNED_SLOTS];

static unsigned char *pinned(int slot, size_t n)
{
    if (n > pinned_cap[slot]) {
        if (pinned_mem[slot]) CUDA_OK(cudaFreeHost(pinned_mem[slot]));
        size_t cap = n < ((size_t)1 << 20) ? (size_t)1 << 20 : n;
        void *p;
        CUDA_OK(cudaHostAlloc(&p, cap, cudaHostAllocMapped));
        pinned_mem[slot] = p;
        pinned_cap[slot] = cap;
    }
    return pinned_mem[slot];
}

typedef struct {
    int kind;
    unsigned char *p;
} mem_t;

/* Device memory is allocated to the byte (so that compute-sanitizer sees overruns), pageable
 * memory with malloc, pinned memory from slot `slot`. */
static mem_t mem_get(int kind, int slot, size_t n)
{
    mem_t m = {kind, NULL};
    if (kind == DEV) {
        void *p;
        CUDA_OK(cudaMalloc(&p, n ? n : 1));
        m.p = p;
    } else if (kind == PINNED) {
        m.p = pinned(slot, n);
    } else {
        m.p = xmalloc(n);
    }
    return m;
}

static void mem_put(mem_t *m)
{
    if (m->kind == DEV) CUDA_OK(cudaFree(m->p));
    if (m->kind == PAGEABLE) free(m->p);
    m->p = NULL;
}

/* The user stream is non-blocking: it does not wait for the legacy default stream, where
 * cudaMemcpy from pageable memory and cudaMemset may still be running when they return. The test
 * waits for its own writes, so that only the library's ordering is put to the test. */
static void mem_upload(mem_t m, const void *src, size_t n)
{
    if (m.kind == DEV) {
        CUDA_OK(cudaMemcpy(m.p, src, n, cudaMemcpyHostToDevice));
        CUDA_OK(cudaDeviceSynchronize());
    } else {
        memcpy(m.p, src, n);
    }
}

static void mem_download(void *dst, mem_t m, size_t n)
{
    if (m.kind == DEV) CUDA_OK(cudaMemcpy(dst, m.p, n, cudaMemcpyDeviceToHost));
    else memcpy(dst, m.p, n);
}

static void mem_fill(mem_t m, int byte, size_t n)
{
    if (m.kind == DEV) {
        CUDA_OK(cudaMemset(m.p, byte, n));
        CUDA_OK(cudaDeviceSynchronize());
    } else {
        memset(m.p, byte, n);
    }
}

/* Compares a whole buffer; `origin` is the index that `unit` 0 refers to. */
static void compare(const unsigned char *got, const unsigned char *want, size_t n, ptrdiff_t origin,
                    const char *unit)
{
    size_t d = 0;
    while (d < n && got[d] == want[d]) d++;
    if (d == n) {
        gcommt_checks++;
        return;
    }
    size_t ndiff = 0;
    for (size_t i = d; i < n; i++) ndiff += got[i] != want[i];
    CHECK(d == n, "%zu of %zu bytes differ, the first at %s %td: got 0x%02x, expected 0x%02x",
          ndiff, n, unit, (ptrdiff_t)d - origin, got[d], want[d]);
}

/* ---- one type and count, every direction ------------------------------------------------------ */

enum { R_TIN, R_TOUT, R_PK, NROLES }; /* typed input, unpack target, packed buffer */

typedef struct {
    gcomm_datatype T;
    gcomm_datatype Fp; /* count x Fp is the packed stream of count x T (or NULL) */
    gcomm_datatype Fs; /* count x Fs has the typemap of count x T, another layout (or NULL) */
    size_t c, P;
    int unpack_ok; /* the typemap of c instances does not overlap itself */
    size_t rlen;               /* typed region: bytes */
    ptrdiff_t roff;            /* index of the origin (may be outside the region) */
    size_t pos0, extra, plen;  /* packed: start position, slack after the stream, buffer bytes */
    unsigned char *hin;        /* typed input */
    unsigned char *hpoison;    /* initial content of unpack targets */
    unsigned char *ref_pk;     /* CPU pack of hin (P bytes) */
    unsigned char *hsrc;       /* unpack source: plen random bytes, the stream at pos0 */
    unsigned char *ref_unpk;   /* CPU unpack of hsrc into hpoison */
    unsigned char *want, *got; /* scratch */
    mem_t m[NKINDS][NROLES];
    void *stream;
    uint64_t *rng;
} job_t;

static unsigned char *typed_in(job_t *j, int kind)
{
    mem_t m = j->m[kind][R_TIN];
    if (kind != DEV) mem_upload(m, j->hin, j->rlen); /* device: loaded once */
    return at(m.p, j->roff);
}

static void op_pack(job_t *j, int tk, int pk, int async)
{
    doing("%s %s typed -> %s packed (position %zu)", async ? "gcomm_pack_async" : "gcomm_pack",
          kind_name[tk], kind_name[pk], j->pos0);
    unsigned char *typed = typed_in(j, tk);
    mem_t o = j->m[pk][R_PK];
    int pat = (int)rnd(j->rng, 1, 255);
    mem_fill(o, pat, j->plen);
    size_t pos = j->pos0, outsize = j->pos0 + j->P + j->extra;
    int ok = async ? GC(gcomm_pack_async(typed, j->c, j->T, o.p, outsize, &pos, j->stream))
                   : GC(gcomm_pack(typed, j->c, j->T, o.p, outsize, &pos));
    if (async) CUDA_OK(cudaStreamSynchronize(j->stream));
    if (!ok) return;
    CHECK(pos == j->pos0 + j->P, "position %zu, expected %zu", pos, j->pos0 + j->P);
    mem_download(j->got, o, j->plen);
    memset(j->want, pat, j->plen);
    memcpy(j->want + j->pos0, j->ref_pk, j->P);
    compare(j->got, j->want, j->plen, j->pos0, "packed byte");
}

static void op_unpack(job_t *j, int tk, int pk, int async)
{
    doing("%s %s packed (position %zu) -> %s typed", async ? "gcomm_unpack_async" : "gcomm_unpack",
          kind_name[pk], j->pos0, kind_name[tk]);
    mem_t s = j->m[pk][R_PK], o = j->m[tk][R_TOUT];
    mem_upload(s, j->hsrc, j->plen);
    mem_upload(o, j->hpoison, j->rlen);
    size_t pos = j->pos0, insize = j->pos0 + j->P + j->extra;
    unsigned char *typed = at(o.p, j->roff);
    int ok = async ? GC(gcomm_unpack_async(s.p, insize, &pos, typed, j->c, j->T, j->stream))
                   : GC(gcomm_unpack(s.p, insize, &pos, typed, j->c, j->T));
    if (async) CUDA_OK(cudaStreamSynchronize(j->stream));
    if (!ok) return;
    CHECK(pos == j->pos0 + j->P, "position %zu, expected %zu", pos, j->pos0 + j->P);
    mem_download(j->got, o, j->rlen);
    compare(j->got, j->ref_unpk, j->rlen, j->roff, "displacement");
}

/* Cut points of [0, total], sorted: random, with empty and 1-byte pieces. */
static size_t make_cuts(uint64_t *s, size_t total, size_t *cuts)
{
    size_t k = 0;
    cuts[k++] = 0;
    cuts[k++] = total;
    int n = (int)rnd(s, 0, 6);
    for (int i = 0; i < n; i++) {
        size_t p = (size_t)rnd(s, 0, (long)total);
        cuts[k++] = p;
        if (chance(s, 30) && p < total) cuts[k++] = p + 1;
        if (chance(s, 20)) cuts[k++] = p;
    }
    for (size_t i = 1; i < k; i++)
        for (size_t q = i; q > 0 && cuts[q - 1] > cuts[q]; q--) {
            size_t t = cuts[q];
            cuts[q] = cuts[q - 1];
            cuts[q - 1] = t;
        }
    return k;
}

static void op_pack_range(job_t *j, int pk)
{
    size_t cuts[MAX_CUTS], n = make_cuts(j->rng, j->P, cuts);
    doing("gcomm_pack_range device typed -> %s packed, %zu pieces", kind_name[pk], n - 1);
    unsigned char *typed = at(j->m[DEV][R_TIN].p, j->roff);
    mem_t o = j->m[pk][R_PK];
    int pat = (int)rnd(j->rng, 1, 255);
    mem_fill(o, pat, j->plen);
    for (size_t i = 0; i + 1 < n; i++)
        if (!GC(gcomm_pack_range(typed, j->c, j->T, cuts[i], cuts[i + 1] - cuts[i],
                                 o.p + j->pos0 + cuts[i]))) {
            fprintf(stderr, "    (piece [%zu, %zu) of %zu)\n", cuts[i], cuts[i + 1], j->P);
            return;
        }
    mem_download(j->got, o, j->plen);
    memset(j->want, pat, j->plen);
    memcpy(j->want + j->pos0, j->ref_pk, j->P);
    compare(j->got, j->want, j->plen, j->pos0, "packed byte");
}

static void op_unpack_range(job_t *j, int pk)
{
    size_t cuts[MAX_CUTS], n = make_cuts(j->rng, j->P, cuts), order[MAX_CUTS];
    doing("gcomm_unpack_range %s packed -> device typed, %zu pieces in random order",
          kind_name[pk], n - 1);
    for (size_t i = 0; i + 1 < n; i++) order[i] = i;
    for (size_t i = n - 1; i > 1; i--) { /* shuffle the n - 1 pieces */
        size_t r = (size_t)rnd(j->rng, 0, (long)i - 1), t = order[i - 1];
        order[i - 1] = order[r];
        order[r] = t;
    }
    mem_t s = j->m[pk][R_PK], o = j->m[DEV][R_TOUT];
    mem_upload(s, j->hsrc, j->plen);
    mem_upload(o, j->hpoison, j->rlen);
    for (size_t k = 0; k + 1 < n; k++) {
        size_t i = order[k];
        if (!GC(gcomm_unpack_range(s.p + j->pos0 + cuts[i], cuts[i], cuts[i + 1] - cuts[i],
                                   at(o.p, j->roff), j->c, j->T))) {
            fprintf(stderr, "    (piece [%zu, %zu) of %zu)\n", cuts[i], cuts[i + 1], j->P);
            return;
        }
    }
    mem_download(j->got, o, j->rlen);
    compare(j->got, j->ref_unpk, j->rlen, j->roff, "displacement");
}

/* A buffer for one side of gcomm_copy: content (host), bytes, index of the origin. */
typedef struct {
    const unsigned char *host;
    size_t len;
    ptrdiff_t off;
} side_t;

/* gcomm_copy(count x S from src in memory of kind ks -> count x D to dst in memory of kind kd),
 * on `stream` (then synchronised) or NULL, against the CPU's gcomm_copy of the host copies. The
 * whole destination buffer is compared (what S does not reach stays as it was). */
static void copy_case(gcomm_datatype S, side_t src, int ks, gcomm_datatype D, side_t dst, int kd,
                      size_t count, void *stream, unsigned char *want, unsigned char *got)
{
    memcpy(want, dst.host, dst.len);
    int ok = GC(gcomm_copy(at(src.host, src.off), count, S, at(want, dst.off), count, D, NULL));
    if (!ok) return; /* the CPU refused: no reference */
    mem_t s = mem_get(ks, 3, src.len), d = mem_get(kd, 4, dst.len);
    mem_upload(s, src.host, src.len);
    mem_upload(d, dst.host, dst.len);
    ok = GC(gcomm_copy(at(s.p, src.off), count, S, at(d.p, dst.off), count, D, stream));
    if (stream) CUDA_OK(cudaStreamSynchronize(stream));
    if (ok) {
        mem_download(got, d, dst.len);
        compare(got, want, dst.len, dst.off, "destination displacement");
    }
    mem_put(&s);
    mem_put(&d);
}

static void op_copy(job_t *j, const char *sname, gcomm_datatype S, int s_packed, int ks,
                    const char *dname, gcomm_datatype D, int d_packed, int kd, int use_stream)
{
    doing("gcomm_copy %s %s -> %s %s%s", kind_name[ks], sname, kind_name[kd], dname,
          use_stream ? " on a user stream" : "");
    /* packed side: the stream at a random alignment after MARGIN random bytes */
    size_t flen = j->P + 2 * MARGIN + 16;
    ptrdiff_t foff = MARGIN + (ptrdiff_t)random_shift(j->rng);
    unsigned char *fsrc = xmalloc(flen), *fdst = xmalloc(flen);
    gcommt_fill_random(fsrc, flen, j->rng);
    gcommt_fill_random(fdst, flen, j->rng);
    side_t src = s_packed ? (side_t){fsrc, flen, foff} : (side_t){j->hin, j->rlen, j->roff};
    side_t dst = d_packed ? (side_t){fdst, flen, foff} : (side_t){j->hpoison, j->rlen, j->roff};
    copy_case(S, src, ks, D, dst, kd, j->c, use_stream ? j->stream : NULL, j->want, j->got);
    free(fsrc);
    free(fdst);
}

/* Checks count x T in every direction. lo/hi: bytes the caller knows the type touches (besides
 * its true extent), relative to the origin. tshift / pshift: alignment offsets of the typed
 * origin and of the packed position (-1: random). R: the reference typemap, or NULL. */
static void check_type(gcomm_datatype T, size_t count, gcomm_datatype Fp, gcomm_datatype Fs,
                       int unpack_ok, int64_t xlo, int64_t xhi, int tshift, int pshift,
                       const tm_map *R, uint64_t *rng, void *stream)
{
    job_t jj = {.T = T, .Fp = Fp, .Fs = Fs, .c = count, .unpack_ok = unpack_ok,
                .stream = stream, .rng = rng};
    job_t *j = &jj;
    cur.count = count;
    doing("type queries");
    size_t size;
    ptrdiff_t lb, ext, tlb, text;
    if (!GC(gcomm_type_size(T, &size)) || !GC(gcomm_type_get_extent(T, &lb, &ext)) ||
        !GC(gcomm_type_get_true_extent(T, &tlb, &text)))
        return;
    j->P = count * size;
    if (j->P == 0) return;

    /* typed region: the data of count instances, the origin, margins */
    int64_t last = (int64_t)(count - 1) * ext;
    int64_t lo = tlb + (last < 0 ? last : 0), hi = tlb + text + (last > 0 ? last : 0);
    if (xlo < lo) lo = xlo;
    if (xhi > hi) hi = xhi;
    /* Usually the origin is inside the buffer; sometimes (random tests) it is outside, before or
     * after the data, as MPI allows: the engine must find the memory from the data. */
    if (tshift >= 0 || chance(rng, 70)) {
        if (lo > 0) lo = 0;
        if (hi < 0) hi = 0;
    }
    int64_t base = MARGIN - lo; /* index of the origin, rounded up to a multiple of 16 */
    base += ((16 - base % 16) % 16 + 16) % 16;
    j->roff = base + (tshift >= 0 ? tshift : (ptrdiff_t)random_shift(rng));
    j->rlen = (size_t)(j->roff + hi + MARGIN);
    j->pos0 = pshift >= 0 ? (size_t)pshift : random_shift(rng);
    j->extra = chance(rng, 50) ? 0 : (size_t)rnd(rng, 1, 16);
    j->plen = j->pos0 + j->P + MARGIN;
    size_t scratch = j->rlen > j->plen ? j->rlen : j->plen;
    if (scratch < j->P + 2 * MARGIN + 16) scratch = j->P + 2 * MARGIN + 16;

    j->hin = xmalloc(j->rlen);
    j->hpoison = xmalloc(j->rlen);
    j->ref_unpk = xmalloc(j->rlen);
    j->hsrc = xmalloc(j->plen);
    j->ref_pk = xmalloc(j->P);
    j->want = xmalloc(scratch);
    j->got = xmalloc(scratch);
    gcommt_fill_random(j->hin, j->rlen, rng);
    gcommt_fill_random(j->hpoison, j->rlen, rng);
    gcommt_fill_random(j->hsrc, j->plen, rng);

    /* the CPU references */
    doing("CPU reference pack and unpack");
    size_t pos = 0;
    int ok = GC(gcomm_pack(at(j->hin, j->roff), count, T, j->ref_pk, j->P, &pos));
    memcpy(j->ref_unpk, j->hpoison, j->rlen);
    pos = 0;
    if (ok && j->unpack_ok)
        ok = GC(gcomm_unpack(j->hsrc + j->pos0, j->P, &pos, at(j->ref_unpk, j->roff), count, T));
    if (ok && R) {
        /* the typemap decides overlaps and builds the twins: it must describe what gcomm does */
        tm_pack(R, count, ext, at(j->hin, j->roff), j->got);
        if (memcmp(j->got, j->ref_pk, j->P) != 0) {
            fprintf(stderr, "NOTE: the reference typemap and the CPU pack differ; only the GPU "
                            "pack is checked\n");
            print_current();
            j->unpack_ok = 0;
            j->Fp = j->Fs = GCOMM_DATATYPE_NULL;
        }
    }
    if (!ok) goto out;

    for (int k = 0; k < NKINDS; k++)
        for (int r = 0; r < NROLES; r++)
            j->m[k][r] = mem_get(k, r, r == R_PK ? j->plen : j->rlen);
    mem_upload(j->m[DEV][R_TIN], j->hin, j->rlen);

    /* pack: device typed to every kind, every host kind to device; async on the stream */
    op_pack(j, DEV, DEV, 0);
    op_pack(j, DEV, PINNED, 0);
    op_pack(j, DEV, PAGEABLE, 0);
    op_pack(j, PAGEABLE, DEV, 0);
    op_pack(j, PINNED, DEV, 0);
    op_pack(j, DEV, DEV, 1);
    op_pack(j, DEV, PINNED, 1);
    op_pack(j, DEV, PAGEABLE, 1);
    op_pack_range(j, DEV);
    op_pack_range(j, PAGEABLE);
    if (j->unpack_ok) {
        op_unpack(j, DEV, DEV, 0);
        op_unpack(j, DEV, PINNED, 0);
        op_unpack(j, DEV, PAGEABLE, 0);
        op_unpack(j, PAGEABLE, DEV, 0);
        op_unpack(j, PINNED, DEV, 0);
        op_unpack(j, DEV, DEV, 1);
        op_unpack(j, DEV, PINNED, 1);
        op_unpack(j, DEV, PAGEABLE, 1);
        op_unpack_range(j, DEV);
        op_unpack_range(j, PINNED);
    }

    /* gcomm_copy: the relayout kernel (device and pinned), the staged path (pageable) */
    if (j->Fp) {
        op_copy(j, "type", T, 0, DEV, "packed layout", j->Fp, 1, DEV, 0);
        op_copy(j, "type", T, 0, DEV, "packed layout", j->Fp, 1, PINNED, 1);
        op_copy(j, "type", T, 0, DEV, "packed layout", j->Fp, 1, PAGEABLE, 0);
        if (j->unpack_ok) {
            op_copy(j, "packed layout", j->Fp, 1, DEV, "type", T, 0, DEV, 1);
            op_copy(j, "packed layout", j->Fp, 1, PINNED, "type", T, 0, DEV, 0);
            op_copy(j, "packed layout", j->Fp, 1, PAGEABLE, "type", T, 0, DEV, 0);
        }
    }
    if (j->unpack_ok) {
        op_copy(j, "type", T, 0, DEV, "type", T, 0, DEV, 1);
        if (j->Fs) {
            op_copy(j, "type", T, 0, DEV, "flattened struct", j->Fs, 0, DEV, 0);
            op_copy(j, "flattened struct", j->Fs, 0, DEV, "type", T, 0, DEV, 1);
        }
    }

    doing("the device typed input is unchanged");
    mem_download(j->got, j->m[DEV][R_TIN], j->rlen);
    compare(j->got, j->hin, j->rlen, j->roff, "displacement");

    for (int k = 0; k < NKINDS; k++)
        for (int r = 0; r < NROLES; r++) mem_put(&j->m[k][r]);
out:
    free(j->hin);
    free(j->hpoison);
    free(j->ref_unpk);
    free(j->hsrc);
    free(j->ref_pk);
    free(j->want);
    free(j->got);
}

/* ---- plan census: the plan gpu_plan.c chooses, recomputed from the layout -------------------- */

/* gpu_plan.c's limits of the UNITS plan (repeated here: the census only reports, never fails) */
#define CENSUS_UNITS_MAX ((int64_t)1 << 22)
#define CENSUS_UNITS_MIN_AVG 64

static const char *plan_name[] = {"CONTIG", "STRIDED", "UNITS", "POINT"};
static long plan_seen[4], strided_dims_seen[GCOMMI_GPU_MAX_DIMS + 1];

static int plan_of(gcomm_datatype t, int *dims)
{
    const gcommi_layout_t *L = gcommi_type_get_layout(t);
    *dims = 0;
    if (!L || L->size == 0) return -1;
    const gcommi_dl_t *n = &L->nodes[0];
    while (n->kind == GCOMMI_DL_VEC && *dims < GCOMMI_GPU_MAX_DIMS) {
        ++*dims;
        n = &L->nodes[n->child];
    }
    if (n->kind == GCOMMI_DL_RUN)
        return *dims == 0 && n->size == L->extent ? GCOMMI_PLAN_CONTIG : GCOMMI_PLAN_STRIDED;
    if (L->nruns <= CENSUS_UNITS_MAX && L->size / L->nruns >= CENSUS_UNITS_MIN_AVG)
        return GCOMMI_PLAN_UNITS;
    return GCOMMI_PLAN_POINT;
}

static void census(gcomm_datatype t)
{
    int dims, k = plan_of(t, &dims);
    if (k < 0) return;
    plan_seen[k]++;
    if (k == GCOMMI_PLAN_STRIDED) strided_dims_seen[dims]++;
}

/* ---- random recipes ---------------------------------------------------------------------------- */

static void gcomm_extent_fn(const rt_node *n, void *ctx, int64_t *lb, int64_t *extent)
{
    (void)ctx;
    ptrdiff_t l = 0, e = 0;
    gcomm_type_get_extent(n->gtype, &l, &e);
    *lb = l;
    *extent = e;
}

/* A struct of the typemap's entries, runs of one basic type at consecutive addresses merged.
 * packed: at their offsets in the packed stream, resized to extent = size (count copies are the
 * packed stream of count instances); else at their displacements, resized to lb/extent (the
 * memory map of the type, another layout). Committed. */
static int flatten(const tm_map *R, int packed, ptrdiff_t lb, ptrdiff_t extent, gcomm_datatype *out)
{
    size_t n = R->n, k = 0;
    int *bl = xmalloc(n * sizeof *bl);
    ptrdiff_t *disp = xmalloc(n * sizeof *disp);
    gcomm_datatype *types = xmalloc(n * sizeof *types);
    int64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        rt_basic_t b = (rt_basic_t)R->e[i].basic;
        gcomm_datatype t = rt_basic_gcomm(b);
        int64_t sz = (int64_t)tm_basic_size(b), d = packed ? off : R->e[i].disp;
        off += sz;
        if (k && types[k - 1] == t && disp[k - 1] + bl[k - 1] * sz == d) {
            bl[k - 1]++;
        } else {
            types[k] = t;
            disp[k] = d;
            bl[k] = 1;
            k++;
        }
    }
    gcomm_datatype s = GCOMM_DATATYPE_NULL;
    int rc = gcomm_type_struct((int)k, bl, disp, types, &s);
    if (rc == GCOMM_SUCCESS) {
        rc = packed ? gcomm_type_resized(s, 0, off, out) : gcomm_type_resized(s, lb, extent, out);
        gcomm_type_free(&s);
    }
    if (rc == GCOMM_SUCCESS) rc = gcomm_type_commit(out);
    free(bl);
    free(disp);
    free(types);
    return rc;
}

static long overlapping[2], typemap_notes; /* overlapping: at count 1, at count 3 */

static void check_random(rt_node *t, uint64_t *s, void *stream)
{
    doing("commit");
    if (!GC(gcomm_type_commit(&t->gtype))) return;
    gcomm_datatype T = t->gtype;
    census(T);
    size_t size;
    ptrdiff_t lb, ext;
    gcomm_type_size(T, &size);
    gcomm_type_get_extent(T, &lb, &ext);
    /* the typemap with gcomm's extents: overlaps, twins of other layouts */
    tm_clear(t);
    const tm_map *R = tm_expand(t, gcomm_extent_fn, NULL, (size_t)1 << 22);
    gcomm_datatype Fp = GCOMM_DATATYPE_NULL, Fs = GCOMM_DATATYPE_NULL;
    if (!R || R->size != size) {
        typemap_notes++;
        fprintf(stderr, "NOTE: no usable typemap for type %ld (%s): pack only\n", cur.index,
                R ? "its size differs from gcomm's" : "too large");
        R = NULL;
    } else if (R->n) {
        doing("flattened twins");
        GC(flatten(R, 1, 0, 0, &Fp));
        GC(flatten(R, 0, lb, ext, &Fs));
    }
    for (size_t c = 1; c <= 3; c += 2) {
        cur.count = c;
        int64_t lo = 0, hi = 0;
        int unpack_ok = 0;
        if (R) {
            tm_span(R, c, ext, &lo, &hi);
            unpack_ok = !tm_overlaps(R, c, ext);
        }
        overlapping[c == 3] += !unpack_ok;
        check_type(T, c, Fp, Fs, unpack_ok, lo, hi, -1, -1, R, s, stream);
    }
    if (Fp) gcomm_type_free(&Fp);
    if (Fs) gcomm_type_free(&Fs);
}

/* ---- directed types ---------------------------------------------------------------------------- */

typedef struct {
    uint64_t *rng;
    void *stream;
    int failed;
} dctx;

/* Checks count x t (taking ownership of t and fp, fp may be NULL). expect: the plan kind the
 * test is meant for (a mismatch is reported as a note: the test then covers another kind). */
static void directed(dctx *d, const char *name, gcomm_datatype t, size_t count, gcomm_datatype fp,
                     int expect, int tshift, int pshift)
{
    memset(&cur, 0, sizeof cur);
    cur.name = name;
    cur.count = count;
    int before = gcommt_failures;
    doing("building");
    if (!t) {
        CHECK(t != NULL, "the type could not be built: %s", gcomm_last_error_detail());
        d->failed++;
        return;
    }
    int ok = GC(gcomm_type_commit(&t));
    if (ok && fp) ok = GC(gcomm_type_commit(&fp));
    int dims = 0, kind = ok ? plan_of(t, &dims) : -1;
    if (ok) {
        check_type(t, count, fp, GCOMM_DATATYPE_NULL, 1, 0, 0, tshift, pshift, NULL, d->rng,
                   d->stream);
        if (kind >= 0) census(t);
    }
    size_t size = 0;
    gcomm_type_size(t, &size);
    printf("  %-52s x%-4zu %8zu B  %-7s %s%s\n", name, count, count * size,
           kind >= 0 ? plan_name[kind] : "-", gcommt_failures == before ? "ok" : "FAILED",
           kind != expect ? " (NOTE: not the plan kind this test is meant for)" : "");
    if (gcommt_failures != before) d->failed++;
    gcomm_type_free(&t);
    if (fp) gcomm_type_free(&fp);
}

/* Type builders for the directed tests: NULL on failure (directed() reports it). */
static gcomm_datatype t_contig(int n, gcomm_datatype b)
{
    gcomm_datatype t = NULL;
    return gcomm_type_contiguous(n, b, &t) == GCOMM_SUCCESS ? t : NULL;
}

static gcomm_datatype t_vector(int n, int bl, int stride, gcomm_datatype b)
{
    gcomm_datatype t = NULL;
    return gcomm_type_vector(n, bl, stride, b, &t) == GCOMM_SUCCESS ? t : NULL;
}

static gcomm_datatype t_hvector(int n, int bl, ptrdiff_t stride, gcomm_datatype b)
{
    gcomm_datatype t = NULL;
    return gcomm_type_hvector(n, bl, stride, b, &t) == GCOMM_SUCCESS ? t : NULL;
}

static gcomm_datatype t_struct(int n, const int *bl, const ptrdiff_t *d, const gcomm_datatype *ty)
{
    gcomm_datatype t = NULL;
    return gcomm_type_struct(n, bl, d, ty, &t) == GCOMM_SUCCESS ? t : NULL;
}

static gcomm_datatype t_resized(gcomm_datatype b, ptrdiff_t lb, ptrdiff_t extent)
{
    gcomm_datatype t = NULL;
    return b && gcomm_type_resized(b, lb, extent, &t) == GCOMM_SUCCESS ? t : NULL;
}

static gcomm_datatype t_subarray(int nd, const int *sizes, const int *sub, const int *starts,
                                 int order, gcomm_datatype b)
{
    gcomm_datatype t = NULL;
    return gcomm_type_subarray(nd, sizes, sub, starts, order, b, &t) == GCOMM_SUCCESS ? t : NULL;
}

/* The contiguous twin of a type of `elements` elements of basic type b (its packed layout). */
static gcomm_datatype t_twin(gcomm_datatype t, gcomm_datatype b)
{
    size_t els = 0;
    if (!t || gcomm_type_get_elements(t, &els) != GCOMM_SUCCESS) return NULL;
    return t_contig((int)els, b);
}

/* Lower triangle of an n x n matrix of b: block i holds i + 1 elements at i * n. */
static gcomm_datatype t_lower(int n, gcomm_datatype b)
{
    int *bl = xmalloc(sizeof(int) * (size_t)n), *d = xmalloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) bl[i] = i + 1, d[i] = i * n;
    gcomm_datatype t = NULL;
    if (gcomm_type_indexed(n, bl, d, b, &t) != GCOMM_SUCCESS) t = NULL;
    free(bl);
    free(d);
    return t;
}

/* A struct and its packed twin (the same members at packed offsets, extent = size), each made
 * contiguous n times. */
static void t_struct_pair(int m, const int *bl, const ptrdiff_t *disp, const gcomm_datatype *ty,
                          int n, gcomm_datatype *t, gcomm_datatype *fp)
{
    ptrdiff_t pd[8], off = 0;
    for (int i = 0; i < m; i++) {
        size_t sz = 0;
        gcomm_type_size(ty[i], &sz);
        pd[i] = off;
        off += bl[i] * (ptrdiff_t)sz;
    }
    gcomm_datatype s = t_struct(m, bl, disp, ty), p = t_struct(m, bl, pd, ty);
    gcomm_datatype pr = t_resized(p, 0, off);
    *t = s ? t_contig(n, s) : NULL;
    *fp = pr ? t_contig(n, pr) : NULL;
    if (s) gcomm_type_free(&s);
    if (p) gcomm_type_free(&p);
    if (pr) gcomm_type_free(&pr);
}

enum { CONTIG = GCOMMI_PLAN_CONTIG, STRIDED = GCOMMI_PLAN_STRIDED, UNITS = GCOMMI_PLAN_UNITS,
       POINT = GCOMMI_PLAN_POINT };

static void directed_plans(dctx *d)
{
    gcomm_datatype D = GCOMM_DOUBLE, F = GCOMM_FLOAT, I = GCOMM_INT, C = GCOMM_CHAR,
                   S = GCOMM_INT16, L = GCOMM_INT64, t, fp;
    printf("directed types (name, count, packed bytes, plan, result):\n");

    /* CONTIG: one run per instance abutting the next (cudaMemcpyAsync) */
    t = t_contig(1000, D);
    directed(d, "contiguous(1000, double)", t, 3, t_twin(t, D), CONTIG, -1, -1);
    {
        int bl[3] = {1, 1, 1};
        ptrdiff_t dp[3] = {0, 8, 12};
        gcomm_datatype ty[3] = {D, I, I};
        t_struct_pair(3, bl, dp, ty, 1, &t, &fp);
        directed(d, "struct {double, int, int} (size = extent 16)", t, 1000, fp, CONTIG, -1, -1);
    }
    {
        int bl = 10;
        ptrdiff_t dp = 24;
        if (gcomm_type_hindexed(1, &bl, &dp, D, &t) != GCOMM_SUCCESS) t = NULL;
        directed(d, "hindexed 10 doubles at byte 24 (lb 24)", t, 3, t_twin(t, D), CONTIG, -1,
                 -1);
    }

    /* STRIDED, one dimension: narrow (thread per run), odd and wide (warp per run) runs */
    t = t_vector(1000, 1, 2, C);
    directed(d, "vector(1000, 1, 2, char): 1-byte runs", t, 3, t_twin(t, C), STRIDED, -1, -1);
    t = t_vector(1000, 1, 3, S);
    directed(d, "vector(1000, 1, 3, int16): 2-byte runs", t, 3, t_twin(t, S), STRIDED, -1, -1);
    t = t_vector(1000, 1, 2, F);
    directed(d, "vector(1000, 1, 2, float): 4-byte runs", t, 3, t_twin(t, F), STRIDED, -1, -1);
    t = t_vector(1000, 1, 3, D);
    directed(d, "vector(1000, 1, 3, double): 8-byte runs", t, 3, t_twin(t, D), STRIDED, -1, -1);
    t = t_hvector(500, 17, 20, C);
    directed(d, "hvector(500, 17, 20 B, char): 17-byte runs", t, 3, t_twin(t, C), STRIDED, -1,
             -1);
    {
        int bl[4] = {1, 1, 1, 1};
        ptrdiff_t dp[4] = {0, 8, 12, 16};
        gcomm_datatype ty[4] = {D, I, I, C};
        t_struct_pair(4, bl, dp, ty, 1000, &t, &fp);
        directed(d, "contiguous(1000, struct {d,i,i,c}): 17 B of 24", t, 1, fp, STRIDED, -1, -1);
    }
    t = t_vector(200, 4, 6, D);
    directed(d, "vector(200, 4, 6, double): 32-byte runs", t, 3, t_twin(t, D), STRIDED, 0, 0);
    t = t_vector(100, 9, 10, F);
    directed(d, "vector(100, 9, 10, float): 36-byte runs", t, 3, t_twin(t, F), STRIDED, -1, -1);
    t = t_vector(64, 256, 300, D);
    directed(d, "vector(64, 256, 300, double): 2 KB runs", t, 3, t_twin(t, D), STRIDED, -1, -1);
    t = t_hvector(40, 2, -24, S);
    directed(d, "hvector(40, 2, -24 B, int16): negative stride", t, 4, t_twin(t, S), STRIDED, -1,
             -1);
    t = t_vector(100, 2, -5, D);
    directed(d, "vector(100, 2, -5, double): negative stride", t, 3, t_twin(t, D), STRIDED, -1,
             -1);
    {
        gcomm_datatype c5 = t_contig(5, D);
        t = t_resized(c5, 0, 48);
        gcomm_type_free(&c5);
        directed(d, "resized(contiguous(5, double), 0, 48): 0 dims", t, 7, t_twin(t, D), STRIDED,
                 -1, -1);
    }

    /* STRIDED, two and three dimensions (subarrays) */
    {
        int sz[3] = {8, 9, 10}, sub[3] = {5, 6, 7}, st[3] = {1, 2, 3};
        t = t_subarray(3, sz, sub, st, GCOMM_ORDER_C, F);
        directed(d, "subarray 5x6x7 of 8x9x10 float: 2 dims", t, 3, t_twin(t, F), STRIDED, -1, -1);
    }
    {
        int sz[3] = {10, 12, 40}, sub[3] = {4, 5, 20}, st[3] = {3, 0, 7};
        t = t_subarray(3, sz, sub, st, GCOMM_ORDER_C, D);
        directed(d, "subarray 4x5x20 of 10x12x40 double: 160 B runs", t, 3, t_twin(t, D), STRIDED,
                 -1, -1);
    }
    {
        gcomm_datatype in = t_vector(20, 1, 2, C);
        t = in ? t_vector(10, 1, 3, in) : NULL;
        if (in) gcomm_type_free(&in);
        directed(d, "vector(10, 1, 3, vector(20, 1, 2, char))", t, 3, t_twin(t, C), STRIDED, -1,
                 -1);
    }
    {
        int sz[4] = {6, 7, 8, 9}, sub[4] = {3, 4, 5, 6}, st[4] = {1, 1, 2, 3};
        t = t_subarray(4, sz, sub, st, GCOMM_ORDER_FORTRAN, S);
        directed(d, "subarray 3x4x5x6 of 6x7x8x9 int16 (Fortran): 3 dims", t, 2, t_twin(t, S),
                 STRIDED, -1, -1);
    }
    {
        int sz[4] = {5, 6, 7, 64}, sub[4] = {2, 3, 4, 40}, st[4] = {2, 1, 3, 5};
        t = t_subarray(4, sz, sub, st, GCOMM_ORDER_C, D);
        directed(d, "subarray 2x3x4x40 of 5x6x7x64 double: 3 dims, 320 B", t, 3, t_twin(t, D),
                 STRIDED, -1, -1);
    }

    /* UNITS: irregular types of long runs */
    t = t_lower(300, D);
    directed(d, "lower triangle 300x300 double", t, 1, t_twin(t, D), UNITS, -1, -1);
    t = t_lower(200, D);
    directed(d, "lower triangle 200x200 double", t, 2, t_twin(t, D), UNITS, -1, -1);
    {
        int bl[3] = {100, 257, 999}, dp[3] = {0, 200, 600};
        if (gcomm_type_indexed(3, bl, dp, C, &t) != GCOMM_SUCCESS) t = NULL;
        directed(d, "indexed runs of 100, 257, 999 chars", t, 3, t_twin(t, C), UNITS, -1, -1);
    }
    {
        int bl[2] = {10000, 5000};
        ptrdiff_t dp[2] = {0, 20000};
        if (gcomm_type_hindexed(2, bl, dp, C, &t) != GCOMM_SUCCESS) t = NULL;
        directed(d, "hindexed runs of 10000, 5000 chars (split units)", t, 3, t_twin(t, C), UNITS,
                 -1, -1);
    }
    {
        gcomm_datatype a = t_contig(100, D), b = t_vector(10, 20, 30, F);
        gcomm_datatype pa = t_contig(100, D), pb = t_contig(200, F);
        int bl[2] = {1, 1};
        ptrdiff_t dp[2] = {0, 1000}, pdp[2] = {0, 800};
        gcomm_datatype ty[2] = {a, b}, pty[2] = {pa, pb};
        t = t_struct(2, bl, dp, ty);
        gcomm_datatype p = t_struct(2, bl, pdp, pty);
        fp = t_resized(p, 0, 1600);
        gcomm_type_free(&a), gcomm_type_free(&b), gcomm_type_free(&pa), gcomm_type_free(&pb);
        if (p) gcomm_type_free(&p);
        directed(d, "struct {100 doubles, vector(10, 20, 30, float)}", t, 3, fp, UNITS, -1, -1);
    }

    /* POINT: short irregular runs, mixed members */
    {
        int bl[4] = {1, 1, 1, 1};
        ptrdiff_t dp[4] = {0, 8, 20, 24};
        gcomm_datatype ty[4] = {C, D, S, F};
        t_struct_pair(4, bl, dp, ty, 500, &t, &fp);
        directed(d, "contiguous(500, struct {c@0,d@8,s@20,f@24})", t, 1, fp, POINT, -1, -1);
    }
    {
        int bl[4] = {1, 1, 1, 1};
        ptrdiff_t dp[4] = {0, 8, 16, 24};
        gcomm_datatype ty[4] = {D, I, F, L};
        t_struct_pair(4, bl, dp, ty, 500, &t, &fp);
        directed(d, "contiguous(500, struct {d@0,i@8,f@16,l@24})", t, 3, fp, POINT, -1, -1);
    }
    {
        gcomm_datatype v = t_vector(3, 1, 2, I), pv = t_contig(3, I);
        int bl[2] = {1, 1};
        ptrdiff_t dp[2] = {0, 40}, pdp[2] = {0, 12};
        gcomm_datatype ty[2] = {v, D}, pty[2] = {pv, D};
        gcomm_datatype s = t_struct(2, bl, dp, ty), p = t_struct(2, bl, pdp, pty);
        gcomm_datatype pr = t_resized(p, 0, 20);
        t = s ? t_contig(300, s) : NULL;
        fp = pr ? t_contig(300, pr) : NULL;
        gcomm_type_free(&v), gcomm_type_free(&pv);
        if (s) gcomm_type_free(&s);
        if (p) gcomm_type_free(&p);
        if (pr) gcomm_type_free(&pr);
        directed(d, "contiguous(300, struct {vector(3,1,2,int), d@40})", t, 2, fp, POINT, -1, -1);
    }
    t = t_lower(100, C);
    directed(d, "lower triangle 100x100 char", t, 2, t_twin(t, C), POINT, -1, -1);
    {
        int sz[5] = {4, 5, 4, 5, 6}, sub[5] = {2, 3, 2, 3, 4}, st[5] = {1, 1, 1, 1, 1};
        t = t_subarray(5, sz, sub, st, GCOMM_ORDER_C, C);
        directed(d, "subarray 2x3x2x3x4 of 4x5x4x5x6 char: 4 dims", t, 3, t_twin(t, C), POINT,
                 -1, -1);
    }

    /* Misaligned buffers: the access width follows the pointers' alignment */
    static const int shifts[][2] = {{1, 0}, {4, 0}, {8, 0}, {0, 1}, {0, 4}, {0, 8}, {2, 12}};
    for (size_t i = 0; i < sizeof shifts / sizeof shifts[0]; i++) {
        char name[96];
        int ts = shifts[i][0], ps = shifts[i][1];
        snprintf(name, sizeof name, "vector(200, 4, 6, double), typed +%d, packed +%d", ts, ps);
        t = t_vector(200, 4, 6, D);
        directed(d, name, t, 3, t_twin(t, D), STRIDED, ts, ps);
        snprintf(name, sizeof name, "lower triangle 64 double, typed +%d, packed +%d", ts, ps);
        t = t_lower(64, D);
        directed(d, name, t, 1, t_twin(t, D), UNITS, ts, ps);
        snprintf(name, sizeof name, "struct {d@0,i@8,f@16,l@24} x 50, typed +%d, packed +%d", ts,
                 ps);
        int bl[4] = {1, 1, 1, 1};
        ptrdiff_t dp[4] = {0, 8, 16, 24};
        gcomm_datatype ty[4] = {D, I, F, L};
        t_struct_pair(4, bl, dp, ty, 50, &t, &fp);
        directed(d, name, t, 3, fp, POINT, ts, ps);
        snprintf(name, sizeof name, "contiguous(100, double), typed +%d, packed +%d", ts, ps);
        t = t_contig(100, D);
        directed(d, name, t, 3, t_twin(t, D), CONTIG, ts, ps);
    }
}

/* gcomm_copy between two different layouts of one signature, both directions, on the device
 * (and device -> pinned), against the CPU's gcomm_copy. Takes ownership of a and b. */
static void directed_relayout(dctx *d, const char *name, gcomm_datatype a, gcomm_datatype b,
                              size_t count)
{
    memset(&cur, 0, sizeof cur);
    cur.name = name;
    cur.count = count;
    int before = gcommt_failures;
    doing("building");
    CHECK(a && b, "the types could not be built: %s", gcomm_last_error_detail());
    if (!a || !b || !GC(gcomm_type_commit(&a)) || !GC(gcomm_type_commit(&b))) goto out;
    gcomm_datatype ty[2] = {a, b};
    unsigned char *host[2], *poison[2], *want, *got;
    size_t len[2], off[2], maxlen = 0;
    for (int i = 0; i < 2; i++) {
        ptrdiff_t lb, ext, tlb, text;
        gcomm_type_get_extent(ty[i], &lb, &ext);
        gcomm_type_get_true_extent(ty[i], &tlb, &text);
        int64_t last = (int64_t)(count - 1) * ext;
        int64_t lo = tlb + (last < 0 ? last : 0), hi = tlb + text + (last > 0 ? last : 0);
        if (lo > 0) lo = 0;
        if (hi < 0) hi = 0;
        off[i] = (size_t)((MARGIN - lo + 15) / 16 * 16);
        len[i] = off[i] + (size_t)hi + MARGIN;
        host[i] = xmalloc(len[i]);
        poison[i] = xmalloc(len[i]);
        gcommt_fill_random(host[i], len[i], d->rng);
        gcommt_fill_random(poison[i], len[i], d->rng);
        if (len[i] > maxlen) maxlen = len[i];
    }
    want = xmalloc(maxlen);
    got = xmalloc(maxlen);
    for (int i = 0; i < 2; i++) {
        side_t src = {host[i], len[i], off[i]}, dst = {poison[1 - i], len[1 - i], off[1 - i]};
        const char *dir = i ? "second -> first" : "first -> second";
        doing("gcomm_copy %s, device -> device", dir);
        copy_case(ty[i], src, DEV, ty[1 - i], dst, DEV, count, NULL, want, got);
        doing("gcomm_copy %s, device -> device on a user stream", dir);
        copy_case(ty[i], src, DEV, ty[1 - i], dst, DEV, count, d->stream, want, got);
        doing("gcomm_copy %s, device -> pinned", dir);
        copy_case(ty[i], src, DEV, ty[1 - i], dst, PINNED, count, NULL, want, got);
        doing("gcomm_copy %s, pinned -> device", dir);
        copy_case(ty[i], src, PINNED, ty[1 - i], dst, DEV, count, d->stream, want, got);
    }
    for (int i = 0; i < 2; i++) free(host[i]), free(poison[i]);
    free(want);
    free(got);
out:
    printf("  %-52s x%-4zu %s\n", name, count, gcommt_failures == before ? "ok" : "FAILED");
    if (gcommt_failures != before) d->failed++;
    if (a) gcomm_type_free(&a);
    if (b) gcomm_type_free(&b);
}

static void directed_relayouts(dctx *d)
{
    printf("directed relayouts (gcomm_copy between two layouts):\n");
    for (int n = 64; n <= 512; n *= 8) { /* a transpose: column-major view of a row-major array */
        char name[96];
        gcomm_datatype col = t_vector(n, 1, n, GCOMM_DOUBLE);
        gcomm_datatype colr = t_resized(col, 0, 8);
        gcomm_datatype tr = colr ? t_contig(n, colr) : NULL;
        if (col) gcomm_type_free(&col);
        if (colr) gcomm_type_free(&colr);
        snprintf(name, sizeof name, "transpose %dx%d double <-> contiguous", n, n);
        directed_relayout(d, name, tr, t_contig(n * n, GCOMM_DOUBLE), 1);
    }
    directed_relayout(d, "vector(100, 3, 7, float) <-> contiguous(300, float)",
                      t_vector(100, 3, 7, GCOMM_FLOAT), t_contig(300, GCOMM_FLOAT), 3);
    {
        int sz[3] = {10, 12, 14}, sub[3] = {4, 5, 6}, st[3] = {1, 2, 3}, st2[3] = {5, 6, 7};
        directed_relayout(d, "subarray 4x5x6 of 10x12x14 float, two offsets",
                          t_subarray(3, sz, sub, st, GCOMM_ORDER_C, GCOMM_FLOAT),
                          t_subarray(3, sz, sub, st2, GCOMM_ORDER_FORTRAN, GCOMM_FLOAT), 2);
    }
    directed_relayout(d, "lower triangle 100 double <-> contiguous", t_lower(100, GCOMM_DOUBLE),
                      t_contig(5050, GCOMM_DOUBLE), 1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- main -------------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    prog = argv[0];
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        printf("SKIP: no usable GPU (cudaGetDeviceCount: %s, %d devices)\n",
               e == cudaSuccess ? "success" : cudaGetErrorString(e), ndev);
        return GCOMM_TEST_SKIP;
    }
    MPI_Init(&argc, &argv); /* the recipes are built as MPI types too */
    signal(SIGSEGV, on_crash); /* after MPI_Init, which installs its own handlers */
    signal(SIGBUS, on_crash);
    long ntypes = argc > 1 ? atol(argv[1]) : 2000;
    uint64_t seed = gcommt_seed(0x6770755f7061636bull);
    struct cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    printf("test_gpu_pack: %s, %ld random types, seed 0x%016" PRIx64 "\n", prop.name, ntypes, seed);

    cudaStream_t stream; /* non-blocking, as a performance-minded program would use */
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    uint64_t drng = seed;
    dctx d = {&drng, stream, 0};
    double t0 = now();
    directed_plans(&d);
    directed_relayouts(&d);
    double t1 = now();

    rt_limits lim = {.max_depth = 4, .max_size = 64 * 1024, .max_span = 1 << 20};
    int trace = getenv("GCOMMT_TRACE") != NULL;
    long failed_types = 0;
    long before_plans[4];
    memcpy(before_plans, plan_seen, sizeof before_plans);
    memset(strided_dims_seen, 0, sizeof strided_dims_seen);
    uint64_t tseed = seed;
    for (long i = 0; i < ntypes; i++, tseed = next_seed(tseed)) {
        uint64_t s = tseed;
        rt_node *t = rt_random(&s, &lim);
        memset(&cur, 0, sizeof cur);
        cur.recipe = t;
        cur.index = i;
        cur.seed = tseed;
        if (trace) {
            fprintf(stderr, "type %ld seed 0x%016" PRIx64 "\n", i, tseed);
            rt_print(stderr, t, 2);
        }
        int before = gcommt_failures;
        doing("rt_build");
        if (rt_build(t)) CHECK(0, "the recipe could not be built");
        else check_random(t, &s, stream);
        if (gcommt_failures != before && failed_types++ < 3) {
            int dims, kind = t->built ? plan_of(t->gtype, &dims) : -1;
            fprintf(stderr, "type %ld failed (GPU plan %s); replay with GCOMM_TEST_SEED=0x%016" PRIx64
                            " %s 1\nrecipe:\n", i, kind >= 0 ? plan_name[kind] : "-", tseed, prog);
            rt_print(stderr, t, 2);
        }
        rt_free(t);
    }
    if (ntypes > 0) {
        printf("random types by GPU plan:");
        for (int k = 0; k < 4; k++) printf(" %s %ld", plan_name[k], plan_seen[k] - before_plans[k]);
        printf(" (STRIDED by dimensions:");
        for (int k = 0; k <= GCOMMI_GPU_MAX_DIMS; k++) printf(" %d: %ld", k, strided_dims_seen[k]);
        printf("); overlapping typemaps (pack only): %ld at count 1, %ld at count 3; %ld "
               "without a usable typemap\n", overlapping[0], overlapping[1], typemap_notes);
    }
    printf("time: directed tests %.1f s, random types %.1f s\n", t1 - t0, now() - t1);
    if (d.failed) printf("%d directed tests failed\n", d.failed);
    if (failed_types) printf("%ld of %ld random types failed\n", failed_types, ntypes);

    CUDA_OK(cudaStreamDestroy(stream));
    for (int i = 0; i < PINNED_SLOTS; i++)
        if (pinned_mem[i]) CUDA_OK(cudaFreeHost(pinned_mem[i]));
    MPI_Finalize();
    return gcommt_finish("test_gpu_pack");
}
