/* bench_pack_gpu: the GPU datatype engine (issue 3) against the CUDA copies that do the same work,
 * each peer measured in the same run, the ratio printed beside the target.
 *
 * Cases (doubles unless said otherwise; "packed" is the byte count of the packed stream):
 *   1  vector, blocks of 64 B, 256 B, 2 KB (stride twice the block), packed 64M and 256M:
 *      gcomm_pack and gcomm_unpack device -> device vs cudaMemcpy of the packed bytes (>= 90%)
 *   2  vector of 8-byte blocks (blocklength 1, stride 2): vs one cudaMemcpy2DAsync (>= 20x)
 *   3  lower triangle, indexed (row i: i+1 elements at i*N), N = 4096, 8192, 16384: vs cudaMemcpy
 *      of the packed bytes (>= 80%) and vs one cudaMemcpyAsync per row (>= 50x)
 *   4  "stair 256": the lower triangle with row lengths rounded up to multiples of 256 (>= 90%)
 *   5  4-D subarrays of a 64^4 volume, the inner 32^4 and the interior 62^4: vs one
 *      cudaMemcpy3DAsync per index of the slowest dimension (>= 10x; the target is for 32^4)
 *   6  1M struct {double; int; int; char} (extent 24, 17 packed bytes): vs one cudaMemcpyAsync per
 *      struct, timed on the first 20000 structs and scaled (>= 5x)
 *   7  small packs (vector of 512 doubles stride 2, 240 structs: <= 4 KB packed): blocking
 *      gcomm_pack vs an empty kernel launch + cudaDeviceSynchronize, host clock (<= 2x the time)
 *   8  zero-copy pack into pinned host memory (cudaHostAlloc), vector of 64 B and 2 KB blocks,
 *      256M: vs cudaMemcpy device -> host of the packed bytes (>= 80%)
 *   9  gcomm_copy on the device: transpose of N x N doubles, contiguous(N, resized(vector(N, 1, N),
 *      extent 8)) to N*N contiguous doubles, N = 1024 .. 8192: vs the CPU gcomm_copy (>= 20x)
 *  10  case 1's vector of 2 KB blocks (64M) with GCOMM_PACK_MAX_BLOCKS = 1, 2, 4, ..., 264 and the
 *      default, one child process each (the library reads the variable once per process)
 *  11  vectors of 64 B, 256 B and 2 KB blocks (64M): vs cudaMemcpy2D, no target: records whether a
 *      2-D copy would ever be the better engine for a vector shape
 *
 * Measurement (bench_util.h): warm-up, then interleaved rounds of gcomm and its peers until each
 * has >= 5 samples and >= --min-time seconds; the median sample is reported. GPU operations time
 * themselves with CUDA events around a batch of calls on the legacy default stream: gcomm_pack_async
 * and gcomm_unpack_async with stream NULL, gcomm_copy with cudaStreamLegacy (a NULL stream makes
 * gcomm_copy wait for the GPU). Case 7 times blocking calls with the host clock. Data are random
 * with no zero byte, generated on the GPU. gcomm and the peers write separate buffers. After the
 * timed runs, what gcomm's timed calls left in its output, and then the output of one blocking call
 * into a buffer filled with a sentinel, must equal the CPU engine's result on a host copy
 * (gcomm_pack, gcomm_unpack, gcomm_copy): the packed bytes, the bytes unpack must not touch, and a
 * guard after each output. The peers that produce a packed stream (2-D, 3-D, per-row, per-struct
 * copies) are checked too, so each ratio compares equal work. Exit status: 0; 1 when a check or a
 * call failed; 77 without a usable GPU. Targets are printed, not part of the exit status. */
#include <cuda_runtime.h>
#include <errno.h>
#include <spawn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "gcomm/datatype.h"

extern char **environ;

#define GUARD 256         /* bytes after each output that nothing may write */
#define SENTINEL 0xA5     /* fill of outputs before a checked call, and of the guards */
#define MAX_ROWS 128

#define CK(call)                                                                               \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                      \
                    cudaGetErrorString(e_));                                                   \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

#define GC(call)                                                                               \
    do {                                                                                       \
        int rc_ = (call);                                                                      \
        if (rc_ != GCOMM_SUCCESS) {                                                            \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call,                 \
                    gcomm_error_string(rc_), gcomm_last_error_detail());                       \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

/* ---- results ---------------------------------------------------------------------------------- */

typedef enum {
    M_FRAC,    /* gcomm bandwidth as a fraction of the peer's (same bytes): peer_s / gcomm_s, >= */
    M_SPEEDUP, /* gcomm speed-up over the peer: peer_s / gcomm_s, >= */
    M_TIME     /* gcomm time over the peer's: gcomm_s / peer_s, <= */
} metric_t;

typedef struct {
    int kase;
    char shape[24];  /* series key of the CSV and the plot */
    char label[24];  /* table: shape and its parameter */
    const char *op;
    size_t bytes;    /* packed bytes per call */
    long param;      /* block bytes, N, sub-box edge, structs or thread blocks */
    char desc[80];
    double k;        /* bytes counted per packed byte: 2 device copies (read + write), 1 host link */
    double g_s, p_s, m_s; /* seconds per call: gcomm, peer, cudaMemcpy (m_s <= 0: not measured) */
    const char *peer;
    metric_t metric;
    double target;   /* 0: none */
    const char *note;
} row_t;

/* The run's state (one process, one thread). */
static struct {
    int quick;
    bench_opts_t opts;
    FILE *csv, *tab;
    row_t rows[MAX_ROWS];
    int nrows, failures, errors;
    cudaEvent_t ev0, ev1;
    int sms;
    double t_start;
} G;

static double ratio_of(const row_t *r)
{
    if (r->g_s <= 0 || r->p_s <= 0) return 0;
    return r->metric == M_TIME ? r->g_s / r->p_s : r->p_s / r->g_s;
}

static int met(const row_t *r)
{
    double x = ratio_of(r);
    return r->metric == M_TIME ? x <= r->target : x >= r->target;
}

static const char *metric_name(metric_t m)
{
    return m == M_FRAC ? "frac_of_peer_bw" : m == M_SPEEDUP ? "speedup" : "time_ratio";
}

/* "3712.4" GB/s, or "11.2us" for rows timed as latencies (case 7). */
static const char *fmt_value(const row_t *r, double s, char *buf, size_t len)
{
    if (s <= 0) snprintf(buf, len, "-");
    else if (r->metric == M_TIME) snprintf(buf, len, "%.1fus", s * 1e6);
    else snprintf(buf, len, "%.1f", bench_gbps((size_t)(r->k * (double)r->bytes), s));
    return buf;
}

static const char *fmt_ratio(metric_t m, double x, char *buf, size_t len)
{
    if (x <= 0) snprintf(buf, len, "-");
    else if (m == M_FRAC) snprintf(buf, len, "%.1f%%", 100 * x);
    else snprintf(buf, len, "%.*fx", x < 10 ? 2 : 1, x);
    return buf;
}

/* "64.0M", "1.03G", "4.0K": table only (the CSV has the exact count). */
static const char *fmt_bytes(size_t n, char *buf, size_t len)
{
    double v = (double)n;
    if (n >= ((size_t)1 << 30)) snprintf(buf, len, "%.2fG", v / (1 << 30));
    else if (n >= ((size_t)100 << 20)) snprintf(buf, len, "%.0fM", v / (1 << 20));
    else if (n >= ((size_t)1 << 20)) snprintf(buf, len, "%.1fM", v / (1 << 20));
    else if (n >= 1024) snprintf(buf, len, "%.1fK", v / 1024);
    else snprintf(buf, len, "%zuB", n);
    return buf;
}

static const char *fmt_target(const row_t *r, char *buf, size_t len)
{
    if (r->target <= 0) snprintf(buf, len, "-");
    else if (r->metric == M_FRAC) snprintf(buf, len, ">=%g%%", 100 * r->target);
    else snprintf(buf, len, "%s%gx", r->metric == M_TIME ? "<=" : ">=", r->target);
    return buf;
}

#define TABLE_FMT "%-2s %-16s %-6s %6s %8s %8s %7s %6s %-6s %7s  %s\n"

static void table_header(void)
{
    fprintf(G.tab, TABLE_FMT, "#", "shape", "op", "bytes", "gcomm", "peer", "ratio", "target",
            "", "memcpy", "peer is");
}

/* Writes s as one CSV field (commas become semicolons). */
static void csv_text(const char *s)
{
    for (; s && *s; s++) fputc(*s == ',' ? ';' : *s, G.csv);
    fputc(',', G.csv);
}

/* Records a row, prints it to the table and the CSV. */
static void row_emit(const row_t *r)
{
    if (G.nrows < MAX_ROWS) G.rows[G.nrows++] = *r;
    char kase[8], sz[24], gv[24], pv[24], ra[24], ta[24], mv[24];
    double x = ratio_of(r);
    /* the memcpy column: gcomm bandwidth as % of cudaMemcpy's, or gcomm time / cudaMemcpy time */
    if (r->m_s > 0 && r->g_s > 0)
        fmt_ratio(r->metric == M_TIME ? M_TIME : M_FRAC,
                  r->metric == M_TIME ? r->g_s / r->m_s : r->m_s / r->g_s, mv, sizeof mv);
    else
        snprintf(mv, sizeof mv, "-");
    snprintf(kase, sizeof kase, "%d", r->kase);
    fprintf(G.tab, TABLE_FMT, kase, r->label, r->op, fmt_bytes(r->bytes, sz, sizeof sz),
            fmt_value(r, r->g_s, gv, sizeof gv), fmt_value(r, r->p_s, pv, sizeof pv),
            fmt_ratio(r->metric, x, ra, sizeof ra), fmt_target(r, ta, sizeof ta),
            r->target > 0 ? (met(r) ? "met" : "MISSED") : "", mv, r->peer);
    fflush(G.tab);
    double kb = r->k * (double)r->bytes;
    fprintf(G.csv, "%d,", r->kase);
    csv_text(r->shape);
    csv_text(r->op);
    fprintf(G.csv, "%zu,%ld,", r->bytes, r->param);
    csv_text(r->desc);
    fprintf(G.csv, "%g,%.6e,", r->k, r->g_s);
    csv_text(r->peer);
    fprintf(G.csv, "%.6e,%.6e,%.4f,%.4f,%.4f,%s,%.4f,%g,%s,", r->p_s, r->m_s > 0 ? r->m_s : 0.0,
            r->g_s > 0 ? kb / r->g_s * 1e-9 : 0.0, r->p_s > 0 ? kb / r->p_s * 1e-9 : 0.0,
            r->m_s > 0 ? kb / r->m_s * 1e-9 : 0.0, metric_name(r->metric), x, r->target,
            r->target > 0 ? (met(r) ? "met" : "missed") : "");
    for (const char *c = r->note; c && *c; c++) fputc(*c == ',' ? ';' : *c, G.csv);
    fputc('\n', G.csv);
    fflush(G.csv);
}

static row_t row_make(int kase, const char *shape, const char *label, const char *op, size_t bytes,
                      long param, const char *desc)
{
    row_t r;
    memset(&r, 0, sizeof r);
    r.kase = kase;
    snprintf(r.shape, sizeof r.shape, "%s", shape);
    snprintf(r.label, sizeof r.label, "%s", label);
    r.op = op;
    r.bytes = bytes;
    r.param = param;
    snprintf(r.desc, sizeof r.desc, "%s", desc);
    r.k = 2;
    r.peer = "";
    return r;
}

/* ---- data on the GPU -------------------------------------------------------------------------- */

/* Random 64-bit words with no zero byte (splitmix64 of the index). */
__global__ void fill_random_kernel(uint64_t *p, size_t nwords, uint64_t seed)
{
    size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nwords; i += step) {
        uint64_t x = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        x ^= x >> 31;
        for (int b = 0; b < 64; b += 8)
            if (((x >> b) & 0xff) == 0) x |= 1ull << b;
        p[i] = x;
    }
}

__global__ void empty_kernel(void) {}

static size_t round8(size_t n) { return (n + 7) & ~(size_t)7; }

/* Device memory of n bytes (rounded up to 8) filled with random bytes. */
static int dev_alloc_random(char **p, size_t n, uint64_t seed)
{
    size_t words = round8(n) / 8;
    CK(cudaMalloc((void **)p, words * 8));
    void *args[3] = {p, &words, &seed};
    CK(cudaLaunchKernel((const void *)fill_random_kernel, dim3(1024), dim3(256), args, 0, 0));
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    return 0;
}

/* ---- shapes ----------------------------------------------------------------------------------- */

typedef struct {
    gcomm_datatype t;
    size_t count;  /* incount */
    size_t packed; /* packed bytes of count x t */
    size_t span;   /* typed bytes: everything lies in [0, span) from the origin */
    char desc[80];
} shape_t;

/* Commits s->t and derives packed and span; checks the packed size is the expected one. */
static int shape_finish(shape_t *s, size_t expect_packed)
{
    size_t size;
    ptrdiff_t lb, ext, tlb, text;
    GC(gcomm_type_commit(&s->t));
    GC(gcomm_pack_size(s->count, s->t, &s->packed));
    GC(gcomm_type_size(s->t, &size));
    GC(gcomm_type_get_extent(s->t, &lb, &ext));
    GC(gcomm_type_get_true_extent(s->t, &tlb, &text));
    if (tlb < 0 || ext < 0 || s->packed != expect_packed) {
        fprintf(stderr, "shape %s: packed %zu bytes (expected %zu), true lb %td, extent %td\n",
                s->desc, s->packed, expect_packed, tlb, ext);
        return -1;
    }
    s->span = (size_t)(tlb + text) + (s->count - 1) * (size_t)ext;
    return 0;
}

static void shape_free(shape_t *s)
{
    if (s->t) gcomm_type_free(&s->t);
}

/* vector(packed / block, bl, 2 * bl) of doubles. */
static int shape_vector(shape_t *s, int bl, size_t packed)
{
    size_t count = packed / (8 * (size_t)bl);
    GC(gcomm_type_vector((int)count, bl, 2 * bl, GCOMM_DOUBLE, &s->t));
    s->count = 1;
    snprintf(s->desc, sizeof s->desc, "vector count=%zu bl=%d stride=%d double", count, bl, 2 * bl);
    return shape_finish(s, count * (size_t)bl * 8);
}

/* Row i of an n x n matrix of doubles: len[i] elements at i * n. stair > 0 rounds the lengths up
 * to multiples of stair (at most n). Fills the per-row copy list when copies != NULL. */
static int shape_triangle(shape_t *s, int n, int stair, int64_t *copies)
{
    int *len = (int *)malloc((size_t)n * sizeof(int)), *disp = (int *)malloc((size_t)n * sizeof(int));
    if (!len || !disp) {
        free(len);
        free(disp);
        fprintf(stderr, "out of host memory\n");
        return -1;
    }
    size_t packed = 0;
    for (int i = 0; i < n; i++) {
        int l = i + 1;
        if (stair > 0) l = (l + stair - 1) / stair * stair;
        len[i] = l < n ? l : n;
        disp[i] = i * n;
        if (copies) {
            copies[3 * i] = 8 * (int64_t)disp[i];
            copies[3 * i + 1] = (int64_t)packed;
            copies[3 * i + 2] = 8 * (int64_t)len[i];
        }
        packed += 8 * (size_t)len[i];
    }
    int rc = gcomm_type_indexed(n, len, disp, GCOMM_DOUBLE, &s->t);
    free(len);
    free(disp);
    GC(rc);
    s->count = 1;
    snprintf(s->desc, sizeof s->desc, "%s N=%d indexed double", stair ? "stair-256 triangle" :
             "lower triangle", n);
    return shape_finish(s, packed);
}

/* The sub^4 box at start^4 of a size^4 volume of doubles, C order. */
static int shape_subarray4d(shape_t *s, int size, int sub, int start)
{
    int sizes[4] = {size, size, size, size}, subs[4] = {sub, sub, sub, sub};
    int starts[4] = {start, start, start, start};
    GC(gcomm_type_subarray(4, sizes, subs, starts, GCOMM_ORDER_C, GCOMM_DOUBLE, &s->t));
    s->count = 1;
    snprintf(s->desc, sizeof s->desc, "subarray %d^4 at %d of %d^4 double", sub, start, size);
    return shape_finish(s, 8 * (size_t)sub * sub * sub * sub);
}

/* count x struct {double d; int i, j; char c;}: extent 24, 17 packed bytes. */
static int shape_structs(shape_t *s, size_t count)
{
    int bl[4] = {1, 1, 1, 1};
    ptrdiff_t disp[4] = {0, 8, 12, 16};
    gcomm_datatype types[4] = {GCOMM_DOUBLE, GCOMM_INT, GCOMM_INT, GCOMM_CHAR};
    gcomm_datatype raw;
    GC(gcomm_type_struct(4, bl, disp, types, &raw));
    int rc = gcomm_type_resized(raw, 0, 24, &s->t);
    gcomm_type_free(&raw);
    GC(rc);
    s->count = count;
    snprintf(s->desc, sizeof s->desc, "%zu x struct {d;i;i;c} extent 24", count);
    return shape_finish(s, 17 * count);
}

/* contiguous(n, resized(vector(n, 1, n, double), 0, 8)): packing it transposes. */
static int shape_transpose(shape_t *s, int n)
{
    gcomm_datatype col, col8;
    GC(gcomm_type_vector(n, 1, n, GCOMM_DOUBLE, &col));
    int rc = gcomm_type_resized(col, 0, 8, &col8);
    gcomm_type_free(&col);
    GC(rc);
    rc = gcomm_type_contiguous(n, col8, &s->t);
    gcomm_type_free(&col8);
    GC(rc);
    s->count = 1;
    snprintf(s->desc, sizeof s->desc, "transpose N=%d contiguous(N resized(vector(N 1 N) 8))", n);
    return shape_finish(s, 8 * (size_t)n * n);
}

/* ---- buffers and operations ------------------------------------------------------------------- */

typedef struct {
    shape_t s;
    char *typed;   /* device, random: the typed input of pack */
    char *out;     /* gcomm's packed stream + GUARD: device memory, or pinned host memory */
    char *dst;     /* device: gcomm's typed output of unpack / gcomm_copy + GUARD, or NULL */
    char *pout;    /* the peers' packed output + GUARD, as out (peers never write gcomm's) */
    char *pdst;    /* the peers' typed output of unpack (span + GUARD), or NULL */
    char *h_typed; /* host copy of typed */
    char *h_ref;   /* the CPU engine's packed stream (or gcomm_copy output) + GUARD */
    char *h_got;   /* device results copied back */
    int pinned;    /* out and pout are pinned host memory */
    gcomm_datatype dsttype; /* gcomm_copy: the destination type (count 1) */
    /* peers */
    long ncopies;   /* (typed offset, packed offset, bytes) triples: one cudaMemcpyAsync each */
    int64_t *copies;
    size_t width, spitch, dpitch, height; /* one cudaMemcpy2DAsync */
    int n3d;
    cudaMemcpy3DParms *p3d; /* one cudaMemcpy3DAsync each */
} bufs_t;

/* A packed-size output + GUARD, filled with the sentinel: device or pinned host memory. */
static int alloc_out(char **p, size_t n, int pinned)
{
    if (pinned) {
        CK(cudaHostAlloc((void **)p, n, cudaHostAllocMapped));
        memset(*p, SENTINEL, n);
    } else {
        CK(cudaMalloc((void **)p, n));
        CK(cudaMemset(*p, SENTINEL, n));
    }
    return 0;
}

/* Allocates and fills: typed (random) and its host copy, the packed outputs, gcomm's typed output
 * when with_dst (and the peers' when with_dst is 2), and the CPU engine's packed stream when
 * with_ref. */
static int bufs_init(bufs_t *b, int with_dst, int pinned, int with_ref, uint64_t seed)
{
    size_t span = b->s.span, packed = b->s.packed;
    size_t got = (with_dst && span > packed ? span : packed) + GUARD;
    b->pinned = pinned;
    if (dev_alloc_random(&b->typed, span + GUARD, seed) || alloc_out(&b->out, packed + GUARD, pinned) ||
        alloc_out(&b->pout, packed + GUARD, pinned))
        return -1;
    if (with_dst && alloc_out(&b->dst, span + GUARD, 0)) return -1;
    if (with_dst > 1 && alloc_out(&b->pdst, span + GUARD, 0)) return -1;
    b->h_typed = (char *)bench_alloc(span);
    b->h_ref = (char *)bench_alloc(packed + GUARD);
    b->h_got = (char *)bench_alloc(got);
    if (!b->h_typed || !b->h_ref || !b->h_got) {
        fprintf(stderr, "out of host memory (%zu + %zu + %zu bytes)\n", span, packed, got);
        return -1;
    }
    CK(cudaMemcpy(b->h_typed, b->typed, span, cudaMemcpyDeviceToHost));
    memset(b->h_ref, SENTINEL, packed + GUARD);
    if (with_ref) {
        size_t pos = 0;
        GC(gcomm_pack(b->h_typed, b->s.count, b->s.t, b->h_ref, packed, &pos));
    }
    return 0;
}

static void bufs_free(bufs_t *b)
{
    cudaFree(b->typed);
    if (b->pinned) {
        cudaFreeHost(b->out);
        cudaFreeHost(b->pout);
    } else {
        cudaFree(b->out);
        cudaFree(b->pout);
    }
    cudaFree(b->dst);
    cudaFree(b->pdst);
    free(b->h_typed);
    free(b->h_ref);
    free(b->h_got);
    free(b->copies);
    free(b->p3d);
    if (b->dsttype) gcomm_type_free(&b->dsttype);
    shape_free(&b->s);
    memset(b, 0, sizeof *b);
}

/* One call of an operation, enqueued on the legacy default stream (blocking where said). */
typedef int (*enqueue_fn)(bufs_t *b);

static int gcomm_failed(int rc, const char *call, size_t pos, size_t expect)
{
    if (rc == GCOMM_SUCCESS && pos == expect) return 0;
    fprintf(stderr, "%s: %s (%s), position %zu of %zu\n", call, gcomm_error_string(rc),
            gcomm_last_error_detail(), pos, expect);
    return -1;
}

static int e_gcomm_pack(bufs_t *b)
{
    size_t pos = 0;
    int rc = gcomm_pack_async(b->typed, b->s.count, b->s.t, b->out, b->s.packed, &pos, NULL);
    return gcomm_failed(rc, "gcomm_pack_async", pos, b->s.packed);
}

static int e_gcomm_pack_blocking(bufs_t *b)
{
    size_t pos = 0;
    int rc = gcomm_pack(b->typed, b->s.count, b->s.t, b->out, b->s.packed, &pos);
    return gcomm_failed(rc, "gcomm_pack", pos, b->s.packed);
}

static int e_gcomm_unpack(bufs_t *b)
{
    size_t pos = 0;
    int rc = gcomm_unpack_async(b->out, b->s.packed, &pos, b->dst, b->s.count, b->s.t, NULL);
    return gcomm_failed(rc, "gcomm_unpack_async", pos, b->s.packed);
}

static int e_gcomm_unpack_blocking(bufs_t *b)
{
    size_t pos = 0;
    int rc = gcomm_unpack(b->out, b->s.packed, &pos, b->dst, b->s.count, b->s.t);
    return gcomm_failed(rc, "gcomm_unpack", pos, b->s.packed);
}

/* gcomm_copy typed -> dst. cudaStreamLegacy is the legacy default stream, as NULL is for the
 * other calls, but gcomm_copy waits for the GPU when given NULL. */
static int e_gcomm_copy(bufs_t *b)
{
    int rc = gcomm_copy(b->typed, b->s.count, b->s.t, b->dst, 1, b->dsttype, (void *)cudaStreamLegacy);
    return gcomm_failed(rc, "gcomm_copy", 0, 0);
}

static int e_gcomm_copy_blocking(bufs_t *b)
{
    int rc = gcomm_copy(b->typed, b->s.count, b->s.t, b->dst, 1, b->dsttype, NULL);
    return gcomm_failed(rc, "gcomm_copy", 0, 0);
}

/* The peers. They write pout / pdst only: what gcomm's timed runs leave in out / dst is checked. */
static int e_memcpy_pack(bufs_t *b) /* also device -> pinned host; the copy of gcomm_copy too */
{
    CK(cudaMemcpyAsync(b->pout, b->typed, b->s.packed, cudaMemcpyDefault, 0));
    return 0;
}

static int e_memcpy_unpack(bufs_t *b)
{
    CK(cudaMemcpyAsync(b->pdst, b->out, b->s.packed, cudaMemcpyDeviceToDevice, 0));
    return 0;
}

static int e_memcpy_blocking(bufs_t *b)
{
    CK(cudaMemcpy(b->pout, b->typed, b->s.packed, cudaMemcpyDeviceToDevice));
    return 0;
}

static int e_memcpy2d_pack(bufs_t *b)
{
    CK(cudaMemcpy2DAsync(b->pout, b->dpitch, b->typed, b->spitch, b->width, b->height,
                         cudaMemcpyDeviceToDevice, 0));
    return 0;
}

static int e_memcpy2d_unpack(bufs_t *b)
{
    CK(cudaMemcpy2DAsync(b->pdst, b->spitch, b->out, b->dpitch, b->width, b->height,
                         cudaMemcpyDeviceToDevice, 0));
    return 0;
}

static int e_copies(bufs_t *b)
{
    for (long i = 0; i < b->ncopies; i++) {
        const int64_t *c = b->copies + 3 * i;
        CK(cudaMemcpyAsync(b->pout + c[1], b->typed + c[0], (size_t)c[2], cudaMemcpyDeviceToDevice, 0));
    }
    return 0;
}

static int e_memcpy3d(bufs_t *b)
{
    for (int i = 0; i < b->n3d; i++) CK(cudaMemcpy3DAsync(&b->p3d[i], 0));
    return 0;
}

static int e_launch_sync(bufs_t *b)
{
    void *none[1] = {NULL};
    CK(cudaLaunchKernel((const void *)empty_kernel, dim3(1), dim3(1), none, 0, 0));
    CK(cudaDeviceSynchronize());
    return 0;
}

typedef struct {
    enqueue_fn fn;
    bufs_t *b;
} op_arg_t;

/* reps calls between two CUDA events. */
static double run_events(void *arg, long reps)
{
    op_arg_t *a = (op_arg_t *)arg;
    float ms = 0;
    cudaError_t e = cudaEventRecord(G.ev0, 0);
    for (long i = 0; i < reps && e == cudaSuccess; i++)
        if (a->fn(a->b)) return -1;
    if (e == cudaSuccess) e = cudaEventRecord(G.ev1, 0);
    if (e == cudaSuccess) e = cudaEventSynchronize(G.ev1);
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, G.ev0, G.ev1);
    if (e != cudaSuccess) {
        fprintf(stderr, "timing with CUDA events: %s\n", cudaGetErrorString(e));
        return -1;
    }
    return 1e-3 * ms;
}

/* reps blocking calls, host clock. */
static double run_host(void *arg, long reps)
{
    op_arg_t *a = (op_arg_t *)arg;
    double t0 = bench_now();
    for (long i = 0; i < reps; i++)
        if (a->fn(a->b)) return -1;
    return bench_now() - t0;
}

/* Times n operations on b in interleaved rounds; sec[i]: median seconds per call. One untimed call
 * of each first (plans are built, errors surface here). */
static int measure(bufs_t *b, int n, const char *const *names, const enqueue_fn *fns, int host_clock,
                   double *sec)
{
    op_arg_t args[4];
    bench_op_t ops[4];
    bench_result_t res[4];
    for (int i = 0; i < n; i++) {
        if (fns[i](b)) return -1;
        CK(cudaDeviceSynchronize());
        args[i].fn = fns[i];
        args[i].b = b;
        ops[i].name = names[i];
        ops[i].call = NULL;
        ops[i].run = host_clock ? run_host : run_events;
        ops[i].arg = &args[i];
    }
    if (bench_measure(ops, n, &G.opts, res) != 0) return -1;
    for (int i = 0; i < n; i++) sec[i] = res[i].median_s;
    return 0;
}

/* ---- checks ----------------------------------------------------------------------------------- */

/* Index of the first byte where a and b differ, or n. */
static size_t first_diff(const char *a, const char *b, size_t n)
{
    if (memcmp(a, b, n) == 0) return n;
    size_t i = 0;
    while (a[i] == b[i]) i++;
    return i;
}

/* Compares the first n bytes of the packed stream at out (device or pinned host memory) with the
 * CPU engine's, and the guard after it when n is the whole stream. Returns 0, 1 (a failure,
 * printed) or -1. */
static int compare_packed(bufs_t *b, const char *out, size_t n, const char *who, const char *what)
{
    size_t packed = b->s.packed;
    CK(cudaDeviceSynchronize());
    const char *got = out;
    if (!b->pinned) {
        CK(cudaMemcpy(b->h_got, out, packed + GUARD, cudaMemcpyDeviceToHost));
        got = b->h_got;
    }
    size_t at = first_diff(got, b->h_ref, n);
    if (at != n) {
        fprintf(stderr, "FAIL %s: %s output differs from the CPU engine at packed byte %zu of %zu\n",
                what, who, at, n);
        return 1;
    }
    if (n == packed && bench_find_not(got + packed, GUARD, SENTINEL) != GUARD) {
        fprintf(stderr, "FAIL %s: %s wrote past the packed stream\n", what, who);
        return 1;
    }
    return 0;
}

/* Fills out with the sentinel, calls fn once and compares as compare_packed. */
static int rerun_packed(bufs_t *b, enqueue_fn fn, char *out, size_t n, const char *who,
                        const char *what)
{
    if (b->pinned) memset(out, SENTINEL, b->s.packed + GUARD);
    else CK(cudaMemset(out, SENTINEL, b->s.packed + GUARD));
    CK(cudaDeviceSynchronize());
    if (fn(b)) return -1;
    return compare_packed(b, out, n, who, what);
}

/* gcomm's pack: the stream its timed runs left in out, then a blocking gcomm_pack into the
 * sentinel. out then holds the checked stream (the input of the unpack measurements). */
static int check_pack(bufs_t *b, const char *what)
{
    int rc = compare_packed(b, b->out, b->s.packed, "gcomm_pack (timed runs)", what);
    if (rc == 0) rc = rerun_packed(b, e_gcomm_pack_blocking, b->out, b->s.packed, "gcomm_pack", what);
    return rc;
}

/* A peer that produces the packed stream (its first n bytes) into pout. */
static int check_peer(bufs_t *b, enqueue_fn fn, size_t n, const char *who, const char *what)
{
    return rerun_packed(b, fn, b->pout, n, who, what);
}

/* gcomm's unpack: dst as its timed runs left it (it started as the sentinel), then after a blocking
 * gcomm_unpack into the sentinel; every byte of [0, span + GUARD) must equal the CPU unpack of the
 * same stream into the sentinel. */
static int check_unpack(bufs_t *b, const char *what)
{
    size_t span = b->s.span, n = span + GUARD, pos = 0;
    char *want = (char *)bench_alloc(n);
    if (!want) {
        fprintf(stderr, "out of host memory\n");
        return -1;
    }
    memset(want, SENTINEL, n);
    int rc = gcomm_unpack(b->h_ref, b->s.packed, &pos, want, b->s.count, b->s.t);
    if (rc != GCOMM_SUCCESS) {
        fprintf(stderr, "CPU gcomm_unpack: %s\n", gcomm_last_error_detail());
        free(want);
        return -1;
    }
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        const char *who = pass ? "gcomm_unpack" : "gcomm_unpack (timed runs)";
        if (pass && (cudaMemset(b->dst, SENTINEL, n) != cudaSuccess ||
                     cudaDeviceSynchronize() != cudaSuccess || e_gcomm_unpack_blocking(b))) {
            rc = -1;
            break;
        }
        if (cudaDeviceSynchronize() != cudaSuccess ||
            cudaMemcpy(b->h_got, b->dst, n, cudaMemcpyDeviceToHost) != cudaSuccess) {
            fprintf(stderr, "%s: copying the unpacked data back failed\n", what);
            rc = -1;
            break;
        }
        size_t at = first_diff(b->h_got, want, n);
        if (at != n) {
            fprintf(stderr, "FAIL %s: %s output differs from the CPU engine at byte %zu of %zu "
                    "(%s)\n", what, who, at, span, at < span ? "in the typed span" : "in the guard");
            rc = 1;
        }
    }
    free(want);
    return rc;
}

/* Adds a check's outcome to the totals; returns 0 when it passed. */
static int tally(int rc)
{
    if (rc < 0) G.errors++;
    else G.failures += rc;
    return rc != 0;
}

/* ---- cases ------------------------------------------------------------------------------------ */

static uint64_t seed_of(int kase, size_t a, size_t b) { return 0x1234567ull * (kase * 1000003ull + a) + b; }

/* Case 1 (and 10's child): vector of bl doubles per block; pack, and unpack when with_unpack. The
 * rows are printed when emit; *pack_row is the pack row either way. Returns 0, 1 (a check failed)
 * or -1. */
static int run_vector(int kase, int bl, size_t packed, int with_unpack, int emit, row_t *pack_row)
{
    bufs_t b;
    memset(&b, 0, sizeof b);
    int rc = -1;
    char label[24], shape[24];
    snprintf(shape, sizeof shape, "vec_%dB", 8 * bl);
    snprintf(label, sizeof label, "vec %dB blocks", 8 * bl);
    static const char *const pnames[2] = {"gcomm_pack", "cudaMemcpy"};
    static const char *const unames[2] = {"gcomm_unpack", "cudaMemcpy"};
    const enqueue_fn pfns[2] = {e_gcomm_pack, e_memcpy_pack};
    const enqueue_fn ufns[2] = {e_gcomm_unpack, e_memcpy_unpack};
    double sec[2];
    if (shape_vector(&b.s, bl, packed) || bufs_init(&b, with_unpack ? 2 : 0, 0, 1, seed_of(kase, bl, packed)))
        goto out;
    if (measure(&b, 2, pnames, pfns, 0, sec)) goto out;
    *pack_row = row_make(kase, shape, label, "pack", packed, 8 * bl, b.s.desc);
    pack_row->g_s = sec[0];
    pack_row->p_s = pack_row->m_s = sec[1];
    pack_row->peer = "memcpy D2D";
    pack_row->metric = M_FRAC;
    pack_row->target = 0.9;
    rc = check_pack(&b, b.s.desc);
    if (rc) goto out;
    if (emit) row_emit(pack_row);
    if (with_unpack) {
        rc = -1;
        if (measure(&b, 2, unames, ufns, 0, sec)) goto out;
        row_t u = *pack_row;
        u.op = "unpack";
        u.g_s = sec[0];
        u.p_s = u.m_s = sec[1];
        rc = check_unpack(&b, b.s.desc);
        if (rc == 0 && emit) row_emit(&u);
    }
out:
    bufs_free(&b);
    return rc;
}

static void case_vector(void)
{
    static const int bls[3] = {8, 32, 256};
    size_t sizes[2] = {(size_t)64 << 20, (size_t)256 << 20};
    int nsizes = 2;
    if (G.quick) sizes[0] = (size_t)4 << 20, nsizes = 1;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < nsizes; j++) {
            row_t p;
            tally(run_vector(1, bls[i], sizes[j], 1, 1, &p));
        }
}

/* gcomm against cudaMemcpy2D on a vector of bl doubles per block with stride 2 bl (case 2: 8-byte
 * blocks, target 20x; case 11: wider blocks, no target: whether a 2-D copy would ever be the better
 * engine for a vector, recorded for the engine's choice). */
static void run_vs_2d(int kase, int bl, size_t packed, double target)
{
    static const char *const pnames[3] = {"gcomm_pack", "cudaMemcpy2D", "cudaMemcpy"};
    static const char *const unames[3] = {"gcomm_unpack", "cudaMemcpy2D", "cudaMemcpy"};
    const enqueue_fn pfns[3] = {e_gcomm_pack, e_memcpy2d_pack, e_memcpy_pack};
    const enqueue_fn ufns[3] = {e_gcomm_unpack, e_memcpy2d_unpack, e_memcpy_unpack};
    bufs_t b;
    memset(&b, 0, sizeof b);
    double sec[3];
    char shape[24], label[24];
    snprintf(shape, sizeof shape, "vec_%dB", 8 * bl);
    snprintf(label, sizeof label, "vec %dB blocks", 8 * bl);
    if (shape_vector(&b.s, bl, packed) || bufs_init(&b, 2, 0, 1, seed_of(kase, bl, packed))) {
        G.errors++;
        bufs_free(&b);
        return;
    }
    b.width = (size_t)8 * bl;
    b.spitch = (size_t)16 * bl;
    b.dpitch = (size_t)8 * bl;
    b.height = packed / b.width;
    row_t r = row_make(kase, shape, label, "pack", packed, 8 * bl, b.s.desc);
    r.peer = "memcpy2D";
    r.metric = M_SPEEDUP;
    r.target = target;
    if (measure(&b, 3, pnames, pfns, 0, sec) == 0) {
        r.g_s = sec[0], r.p_s = sec[1], r.m_s = sec[2];
        int bad = tally(check_peer(&b, e_memcpy2d_pack, packed, "cudaMemcpy2D", b.s.desc));
        bad |= tally(check_pack(&b, b.s.desc));
        if (!bad) {
            row_emit(&r);
            if (measure(&b, 3, unames, ufns, 0, sec) == 0) {
                r.op = "unpack";
                r.g_s = sec[0], r.p_s = sec[1], r.m_s = sec[2];
                if (!tally(check_unpack(&b, b.s.desc))) row_emit(&r);
            } else {
                G.errors++;
            }
        }
    } else {
        G.errors++;
    }
    bufs_free(&b);
}

static void case_vector8(void)
{
    size_t sizes[2] = {(size_t)64 << 20, (size_t)256 << 20};
    int nsizes = G.quick ? 1 : 2;
    if (G.quick) sizes[0] = (size_t)4 << 20;
    for (int j = 0; j < nsizes; j++) run_vs_2d(2, 1, sizes[j], 20);
}

static void case_wide_2d(void)
{
    static const int bls[3] = {8, 32, 256};
    size_t packed = G.quick ? (size_t)4 << 20 : (size_t)64 << 20;
    for (int i = 0; i < 3; i++) run_vs_2d(11, bls[i], packed, 0);
}

/* Cases 3 (stair 0) and 4 (stair 256). */
static void case_triangle(int kase, int stair)
{
    int ns[3] = {4096, 8192, 16384}, nn = 3;
    if (G.quick) ns[0] = 1024, nn = 1;
    static const char *const names[3] = {"gcomm_pack", "cudaMemcpy", "cudaMemcpy/row"};
    const enqueue_fn fns[3] = {e_gcomm_pack, e_memcpy_pack, e_copies};
    for (int j = 0; j < nn; j++) {
        int n = ns[j];
        bufs_t b;
        memset(&b, 0, sizeof b);
        double sec[3];
        char label[24];
        b.copies = (int64_t *)malloc(3 * sizeof(int64_t) * (size_t)n);
        b.ncopies = n;
        if (!b.copies || shape_triangle(&b.s, n, stair, b.copies) ||
            bufs_init(&b, 2, 0, 1, seed_of(kase, n, 0))) {
            G.errors++;
            bufs_free(&b);
            continue;
        }
        int nops = stair ? 2 : 3;
        snprintf(label, sizeof label, "%s N=%d", stair ? "stair" : "tri", n);
        row_t r = row_make(kase, stair ? "stair256" : "lower_tri", label, "pack", b.s.packed, n,
                           b.s.desc);
        if (measure(&b, nops, names, fns, 0, sec) == 0) {
            int bad = stair ? 0 : tally(check_peer(&b, e_copies, b.s.packed, "cudaMemcpy/row", b.s.desc));
            bad |= tally(check_pack(&b, b.s.desc));
            if (!bad) {
                r.g_s = sec[0];
                r.p_s = r.m_s = sec[1];
                r.peer = "memcpy D2D";
                r.metric = M_FRAC;
                r.target = stair ? 0.9 : 0.8;
                row_emit(&r);
                row_t u = r; /* the unpack row, against cudaMemcpy too (issue 3: "unpack the same") */
                if (!stair) {
                    r.p_s = sec[2];
                    r.peer = "memcpy/row";
                    r.metric = M_SPEEDUP;
                    r.target = 50;
                    row_emit(&r);
                }
                static const char *const unames[2] = {"gcomm_unpack", "cudaMemcpy"};
                const enqueue_fn ufns[2] = {e_gcomm_unpack, e_memcpy_unpack};
                if (measure(&b, 2, unames, ufns, 0, sec) == 0) {
                    u.op = "unpack";
                    u.g_s = sec[0];
                    u.p_s = u.m_s = sec[1];
                    if (!tally(check_unpack(&b, b.s.desc))) row_emit(&u);
                } else {
                    G.errors++;
                }
            }
        } else {
            G.errors++;
        }
        bufs_free(&b);
    }
}

/* Case 5: one cudaMemcpy3DAsync per index of the slowest dimension. */
static void case_subarray(void)
{
    static const int boxes[2][3] = {{64, 32, 16}, {64, 62, 1}}; /* size, sub, start */
    static const char *const names[3] = {"gcomm_pack", "cudaMemcpy3D", "cudaMemcpy"};
    const enqueue_fn fns[3] = {e_gcomm_pack, e_memcpy3d, e_memcpy_pack};
    for (int j = 0; j < 2; j++) {
        int size = boxes[j][0], sub = boxes[j][1], start = boxes[j][2];
        bufs_t b;
        memset(&b, 0, sizeof b);
        double sec[3];
        char shape[24], label[24], peer[24];
        if (shape_subarray4d(&b.s, size, sub, start) || bufs_init(&b, 0, 0, 1, seed_of(5, sub, size))) {
            G.errors++;
            bufs_free(&b);
            continue;
        }
        b.n3d = sub;
        b.p3d = (cudaMemcpy3DParms *)calloc((size_t)sub, sizeof(cudaMemcpy3DParms));
        if (!b.p3d) {
            G.errors++;
            bufs_free(&b);
            continue;
        }
        size_t row = 8 * (size_t)size, subrow = 8 * (size_t)sub;
        for (int i = 0; i < sub; i++) {
            cudaMemcpy3DParms *p = &b.p3d[i];
            /* the 3-D volume of index start + i of the slowest dimension */
            p->srcPtr = make_cudaPitchedPtr(b.typed + (size_t)(start + i) * size * size * row, row,
                                            (size_t)size, (size_t)size);
            p->srcPos = make_cudaPos(8 * (size_t)start, (size_t)start, (size_t)start);
            p->dstPtr = make_cudaPitchedPtr(b.pout + (size_t)i * sub * sub * subrow, subrow,
                                            (size_t)sub, (size_t)sub);
            p->dstPos = make_cudaPos(0, 0, 0);
            p->extent = make_cudaExtent(subrow, (size_t)sub, (size_t)sub);
            p->kind = cudaMemcpyDeviceToDevice;
        }
        snprintf(shape, sizeof shape, "sub4d_%dof%d", sub, size);
        snprintf(label, sizeof label, "sub %d^4 of %d^4", sub, size);
        snprintf(peer, sizeof peer, "memcpy3D x%d", sub);
        row_t r = row_make(5, shape, label, "pack", b.s.packed, sub, b.s.desc);
        if (measure(&b, 3, names, fns, 0, sec) == 0) {
            int bad = tally(check_peer(&b, e_memcpy3d, b.s.packed, "cudaMemcpy3D", b.s.desc));
            bad |= tally(check_pack(&b, b.s.desc));
            if (!bad) {
                r.g_s = sec[0], r.p_s = sec[1], r.m_s = sec[2];
                r.peer = "memcpy3D/slab";
                r.metric = M_SPEEDUP;
                r.target = sub == 32 ? 10 : 0; /* the issue's yardstick; the interior is a report */
                row_emit(&r);
            }
        } else {
            G.errors++;
        }
        bufs_free(&b);
    }
}

/* Case 6: one cudaMemcpyAsync per struct, timed on a subset and scaled. */
static void case_structs(void)
{
    size_t count = G.quick ? 65536 : 1048576, subset = G.quick ? 2000 : 20000;
    static const char *const names[3] = {"gcomm_pack", "cudaMemcpy/struct", "cudaMemcpy"};
    const enqueue_fn fns[3] = {e_gcomm_pack, e_copies, e_memcpy_pack};
    static char note[64];
    bufs_t b;
    memset(&b, 0, sizeof b);
    double sec[3];
    b.ncopies = (long)subset;
    b.copies = (int64_t *)malloc(3 * sizeof(int64_t) * subset);
    if (!b.copies || shape_structs(&b.s, count) || bufs_init(&b, 0, 0, 1, seed_of(6, count, 0))) {
        G.errors++;
        bufs_free(&b);
        return;
    }
    for (size_t i = 0; i < subset; i++) {
        b.copies[3 * i] = 24 * (int64_t)i;
        b.copies[3 * i + 1] = 17 * (int64_t)i;
        b.copies[3 * i + 2] = 17;
    }
    row_t r = row_make(6, "struct", "struct {d,i,i,c}", "pack", b.s.packed, (long)count, b.s.desc);
    if (measure(&b, 3, names, fns, 0, sec) == 0) {
        int bad = tally(check_peer(&b, e_copies, 17 * subset, "cudaMemcpy/struct", b.s.desc));
        bad |= tally(check_pack(&b, b.s.desc));
        if (!bad) {
            snprintf(note, sizeof note, "peer timed on %zu structs and scaled x%.2f", subset,
                     (double)count / (double)subset);
            r.g_s = sec[0];
            r.p_s = sec[1] * (double)count / (double)subset;
            r.m_s = sec[2];
            r.peer = "memcpy/struct*";
            r.note = note;
            r.metric = M_SPEEDUP;
            r.target = 5;
            row_emit(&r);
        }
    } else {
        G.errors++;
    }
    bufs_free(&b);
}

/* Case 7: latency of small blocking packs. */
static void case_small(void)
{
    static const char *const names[3] = {"gcomm_pack", "launch+sync", "cudaMemcpy"};
    const enqueue_fn fns[3] = {e_gcomm_pack_blocking, e_launch_sync, e_memcpy_blocking};
    for (int j = 0; j < 2; j++) {
        bufs_t b;
        memset(&b, 0, sizeof b);
        double sec[3];
        int rc = j == 0 ? shape_vector(&b.s, 1, 4096) : shape_structs(&b.s, 240);
        if (rc || bufs_init(&b, 0, 0, 1, seed_of(7, j, 0))) {
            G.errors++;
            bufs_free(&b);
            continue;
        }
        row_t r = row_make(7, j == 0 ? "small_vec" : "small_struct",
                           j == 0 ? "vec 512x8B" : "240 structs", "pack", b.s.packed, 0, b.s.desc);
        if (measure(&b, 3, names, fns, 1, sec) == 0) {
            if (!tally(check_pack(&b, b.s.desc))) {
                r.g_s = sec[0], r.p_s = sec[1], r.m_s = sec[2];
                r.peer = "launch+sync";
                r.metric = M_TIME;
                r.target = 2;
                r.note = "blocking calls; host clock";
                row_emit(&r);
            }
        } else {
            G.errors++;
        }
        bufs_free(&b);
    }
}

/* Case 8: pack straight into pinned host memory. */
static void case_pinned(void)
{
    static const int bls[2] = {8, 256};
    size_t packed = G.quick ? (size_t)16 << 20 : (size_t)256 << 20;
    static const char *const names[2] = {"gcomm_pack", "cudaMemcpy D2H"};
    const enqueue_fn fns[2] = {e_gcomm_pack, e_memcpy_pack};
    for (int j = 0; j < 2; j++) {
        bufs_t b;
        memset(&b, 0, sizeof b);
        double sec[2];
        char shape[24], label[24];
        if (shape_vector(&b.s, bls[j], packed) || bufs_init(&b, 0, 1, 1, seed_of(8, bls[j], packed))) {
            G.errors++;
            bufs_free(&b);
            continue;
        }
        cudaPointerAttributes at;
        memset(&at, 0, sizeof at);
        if (cudaPointerGetAttributes(&at, b.out) != cudaSuccess || at.devicePointer != b.out)
            fprintf(stderr, "note: pinned buffer %p has device address %p: gcomm stages the pack\n",
                    (void *)b.out, at.devicePointer);
        snprintf(shape, sizeof shape, "pinned_vec_%dB", 8 * bls[j]);
        snprintf(label, sizeof label, "->host %dB blk", 8 * bls[j]);
        row_t r = row_make(8, shape, label, "pack", packed, 8 * bls[j], b.s.desc);
        r.k = 1;
        if (measure(&b, 2, names, fns, 0, sec) == 0) {
            if (!tally(check_pack(&b, b.s.desc))) {
                r.g_s = sec[0], r.p_s = sec[1];
                r.peer = "memcpy D2H";
                r.metric = M_FRAC;
                r.target = 0.8;
                r.note = "GB/s count the packed bytes once (host link)";
                row_emit(&r);
            }
        } else {
            G.errors++;
        }
        bufs_free(&b);
    }
}

/* Case 9: transpose with gcomm_copy on the device vs the CPU gcomm_copy. */
static void case_transpose(void)
{
    int ns[4] = {1024, 2048, 4096, 8192}, nn = G.quick ? 1 : 4;
    static const char *const names[2] = {"gcomm_copy", "cudaMemcpy"};
    const enqueue_fn fns[2] = {e_gcomm_copy, e_memcpy_pack};
    for (int j = 0; j < nn; j++) {
        int n = ns[j];
        bufs_t b;
        memset(&b, 0, sizeof b);
        double sec[2], cpu[3];
        char label[24];
        if (shape_transpose(&b.s, n) || bufs_init(&b, 1, 0, 0, seed_of(9, n, 0)) ||
            gcomm_type_contiguous(n * n, GCOMM_DOUBLE, &b.dsttype) != GCOMM_SUCCESS ||
            gcomm_type_commit(&b.dsttype) != GCOMM_SUCCESS) {
            fprintf(stderr, "transpose N=%d: setup failed (%s)\n", n, gcomm_last_error_detail());
            G.errors++;
            bufs_free(&b);
            continue;
        }
        snprintf(label, sizeof label, "transpose N=%d", n);
        row_t r = row_make(9, "transpose", label, "copy", b.s.packed, n, b.s.desc);
        if (measure(&b, 2, names, fns, 0, sec) != 0) {
            G.errors++;
            bufs_free(&b);
            continue;
        }
        /* The CPU path on the host copy, timed a few times (once for the largest); its output is
         * the reference. h_ref was written once by bufs_init, so no page faults are timed. */
        int reps = G.quick || n >= 8192 ? 1 : n >= 4096 ? 2 : 3, bad = 0;
        for (int i = 0; i < reps && !bad; i++) {
            double t0 = bench_now();
            int rc = gcomm_copy(b.h_typed, 1, b.s.t, b.h_ref, 1, b.dsttype, NULL);
            cpu[i] = bench_now() - t0;
            if (rc != GCOMM_SUCCESS) {
                fprintf(stderr, "CPU gcomm_copy: %s\n", gcomm_last_error_detail());
                bad = -1;
            }
        }
        if (bad) {
            G.errors++;
            bufs_free(&b);
            continue;
        }
        /* the device result as the timed runs left it, then from a blocking gcomm_copy into the
         * sentinel: the CPU's bytes, and the guard untouched (h_ref has the sentinel after them) */
        size_t total = b.s.packed + GUARD;
        int rc = 0;
        for (int pass = 0; pass < 2 && rc == 0; pass++) {
            if (pass && (cudaMemset(b.dst, SENTINEL, total) != cudaSuccess ||
                         cudaDeviceSynchronize() != cudaSuccess || e_gcomm_copy_blocking(&b))) {
                rc = -1;
                break;
            }
            if (cudaDeviceSynchronize() != cudaSuccess ||
                cudaMemcpy(b.h_got, b.dst, total, cudaMemcpyDeviceToHost) != cudaSuccess) {
                rc = -1;
                break;
            }
            size_t at = first_diff(b.h_got, b.h_ref, total);
            if (at != total) {
                fprintf(stderr, "FAIL %s: gcomm_copy%s on the device differs from the CPU gcomm_copy "
                        "at byte %zu of %zu\n", b.s.desc, pass ? "" : " (timed runs)", at, b.s.packed);
                rc = 1;
            }
        }
        if (rc < 0) fprintf(stderr, "%s: checking gcomm_copy failed\n", b.s.desc);
        if (!tally(rc)) {
            r.g_s = sec[0];
            r.m_s = sec[1];
            r.p_s = bench_median(cpu, (size_t)reps);
            r.peer = "CPU gcomm_copy";
            r.metric = M_SPEEDUP;
            r.target = 20;
            r.note = reps == 1 ? "CPU timed once" : "";
            row_emit(&r);
        }
        bufs_free(&b);
    }
}

/* Case 10, in the child: the vector of 2 KB blocks under this process's GCOMM_PACK_MAX_BLOCKS.
 * Prints "RESULT gcomm_s memcpy_s packed failures" on stdout (a pipe to the parent). */
static int child_blocks(void)
{
    row_t p;
    size_t packed = G.quick ? (size_t)4 << 20 : (size_t)64 << 20;
    int rc = run_vector(10, 256, packed, 0, 0, &p);
    if (rc < 0) return 1;
    printf("RESULT %.9e %.9e %zu %d\n", rc == 0 ? p.g_s : 0.0, rc == 0 ? p.p_s : 0.0, packed, rc);
    fflush(stdout);
    return rc ? 1 : 0;
}

/* Case 10, in the parent: one child process per value of GCOMM_PACK_MAX_BLOCKS. */
static void case_blocks(const char *list, char **argv)
{
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, "case 10: cannot find this executable (%s)\n", strerror(errno));
        G.errors++;
        return;
    }
    self[len] = '\0';
    char mt[32];
    snprintf(mt, sizeof mt, "%g", G.opts.min_time_s);
    for (const char *p = list; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        p = *end ? end + 1 : end; /* the list was checked in main */
        /* the environment of the child: ours with GCOMM_PACK_MAX_BLOCKS replaced */
        size_t nenv = 0;
        while (environ[nenv]) nenv++;
        char **envp = (char **)calloc(nenv + 2, sizeof(char *));
        char var[64], vstr[32];
        if (!envp) {
            G.errors++;
            return;
        }
        size_t k = 0;
        for (size_t i = 0; i < nenv; i++)
            if (strncmp(environ[i], "GCOMM_PACK_MAX_BLOCKS=", 22) != 0) envp[k++] = environ[i];
        snprintf(var, sizeof var, "GCOMM_PACK_MAX_BLOCKS=%ld", v);
        envp[k++] = var;
        envp[k] = NULL;
        snprintf(vstr, sizeof vstr, "%ld", v);
        char *cargv[8];
        int c = 0;
        cargv[c++] = argv[0];
        cargv[c++] = (char *)"--blocks-child";
        cargv[c++] = vstr;
        cargv[c++] = (char *)"--min-time";
        cargv[c++] = mt;
        if (G.quick) cargv[c++] = (char *)"--quick";
        cargv[c] = NULL;
        int fds[2], err = 0;
        pid_t pid = -1;
        posix_spawn_file_actions_t fa;
        if (pipe(fds) != 0) {
            err = errno;
        } else {
            posix_spawn_file_actions_init(&fa);
            posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
            posix_spawn_file_actions_addclose(&fa, fds[0]);
            posix_spawn_file_actions_addclose(&fa, fds[1]);
            fflush(NULL);
            err = posix_spawn(&pid, self, &fa, NULL, cargv, envp);
            posix_spawn_file_actions_destroy(&fa);
            close(fds[1]);
            if (err) close(fds[0]);
        }
        free(envp);
        int ok = err == 0;
        double g = 0, m = 0;
        size_t bytes = 0;
        int fails = -1, status = 0;
        if (ok) {
            FILE *f = fdopen(fds[0], "r");
            char line[256];
            while (f && fgets(line, sizeof line, f))
                if (sscanf(line, "RESULT %lf %lf %zu %d", &g, &m, &bytes, &fails) == 4) break;
            if (f) fclose(f);
            else close(fds[0]);
            waitpid(pid, &status, 0);
        } else {
            fprintf(stderr, "case 10: cannot start %s (%s)\n", self, strerror(err));
        }
        if (!ok || fails < 0 || !WIFEXITED(status) || (WEXITSTATUS(status) != 0 && fails == 0)) {
            fprintf(stderr, "case 10: the child with GCOMM_PACK_MAX_BLOCKS=%ld failed\n", v);
            G.errors++;
            continue;
        }
        G.failures += fails;
        if (fails) continue;
        char label[24], desc[80];
        if (v > 0) snprintf(label, sizeof label, "vec 2KB b=%d", (int)v);
        else snprintf(label, sizeof label, "vec 2KB b=dflt");
        snprintf(desc, sizeof desc, "vector bl=256 stride=512 double GCOMM_PACK_MAX_BLOCKS=%ld%s", v,
                 v ? "" : " (16 per SM)");
        row_t r = row_make(10, "blocks_vec_2048B", label, "pack", bytes, v > 0 ? v : 8L * G.sms, desc);
        r.g_s = g;
        r.p_s = r.m_s = m;
        r.peer = "memcpy D2D";
        r.metric = M_FRAC;
        row_emit(&r);
    }
}

/* ---- driver ----------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_pack_gpu [--csv FILE] [--quick] [--cases LIST] [--blocks LIST]\n"
            "                      [--min-time S]\n"
            "  --csv FILE     CSV output (default stdout; the table then goes to stderr)\n"
            "  --quick        smoke run (~20 s): small sizes, 0.01 s per operation\n"
            "  --cases LIST   cases to run, e.g. 1,3,9 (default all: 1-11)\n"
            "  --blocks LIST  case 10's GCOMM_PACK_MAX_BLOCKS values, 0 = default\n"
            "                 (default 1,2,4,8,16,32,132,264,0; --quick: 1,264)\n"
            "  --min-time S   timed seconds per operation and measurement (default 0.1)\n"
            "Exit status: 0; 1 when a result check or a call failed; 77 without a usable GPU.\n");
}

/* Whether case v is in the comma-separated list (NULL: all). */
static int in_list(const char *list, int v)
{
    if (!list) return 1;
    for (const char *p = list; *p;) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p) return 0;
        if (x == v) return 1;
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* A non-empty comma-separated list of integers in [lo, hi]? */
static int valid_list(const char *list, long lo, long hi)
{
    if (!*list) return 0;
    for (const char *p = list; *p;) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || x < lo || x > hi || (*end && *end != ',')) return 0;
        p = *end ? end + 1 : end;
    }
    return 1;
}

static void print_summary(void)
{
    int with = 0, ok = 0, missed[11] = {0};
    for (int i = 0; i < G.nrows; i++)
        if (G.rows[i].target > 0) {
            with++;
            if (met(&G.rows[i])) ok++;
            else missed[G.rows[i].kase % 11]++;
        }
    fprintf(G.tab, "targets: %d of %d rows met", ok, with);
    for (int k = 0, first = 1; k < 11; k++)
        if (missed[k]) {
            fprintf(G.tab, "%s case %d (%d)", first ? "; missed in" : ",", k, missed[k]);
            first = 0;
        }
    fprintf(G.tab, "\n%d rows, %d check failures, %d errors, %.0f s\n", G.nrows, G.failures,
            G.errors, bench_now() - G.t_start);
}

int main(int argc, char **argv)
{
    const char *csv_path = NULL, *cases = NULL, *blocks = NULL;
    double min_time = -1;
    long child = -1;
    G.t_start = bench_now();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            G.quick = 1;
        } else if (strcmp(a, "--csv") == 0 && v) {
            csv_path = v, i++;
        } else if (strcmp(a, "--cases") == 0 && v) {
            cases = v, i++;
        } else if (strcmp(a, "--blocks") == 0 && v) {
            blocks = v, i++;
        } else if (strcmp(a, "--min-time") == 0 && v) {
            min_time = atof(v), i++;
        } else if (strcmp(a, "--blocks-child") == 0 && v) { /* internal: case 10's child */
            child = atol(v), i++;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "bench_pack_gpu: bad argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if ((cases && !valid_list(cases, 1, 11)) || (blocks && !valid_list(blocks, 0, 1000000))) {
        fprintf(stderr, "bench_pack_gpu: bad --%s list '%s'\n",
                cases && !valid_list(cases, 1, 11) ? "cases" : "blocks",
                cases && !valid_list(cases, 1, 11) ? cases : blocks);
        usage(stderr);
        return 2;
    }
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        printf("SKIP: no usable GPU (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "no device");
        return 77;
    }
    bench_opts_t defaults = BENCH_OPTS_DEFAULT;
    G.opts = defaults;
    G.opts.min_time_s = min_time >= 0 ? min_time : G.quick ? 0.01 : 0.1;
    G.opts.max_time_s = G.quick ? 0.5 : 3.0;
    cudaDeviceProp prop;
    int drv = 0, rt = 0;
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess ||
        cudaGetDeviceProperties(&prop, 0) != cudaSuccess || cudaEventCreate(&G.ev0) != cudaSuccess ||
        cudaEventCreate(&G.ev1) != cudaSuccess) {
        fprintf(stderr, "bench_pack_gpu: cannot set up device 0: %s\n",
                cudaGetErrorString(cudaGetLastError()));
        return 1;
    }
    G.sms = prop.multiProcessorCount;
    if (child >= 0) {
        G.tab = G.csv = stderr; /* unused: the child reports on its RESULT line */
        return child_blocks();
    }
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    G.tab = csv_path ? stdout : stderr;
    static const char *const cols[] = {
        "case", "shape", "op", "bytes", "param", "desc", "traffic_factor", "gcomm_s", "peer",
        "peer_s", "memcpy_s", "gcomm_GBps", "peer_GBps", "memcpy_GBps", "metric", "ratio", "target",
        "verdict", "note"};
    G.csv = bench_csv_open(csv_path, cols, (int)(sizeof cols / sizeof cols[0]));
    if (!G.csv) {
        perror(csv_path);
        return 2;
    }
    const char *mb = getenv("GCOMM_PACK_MAX_BLOCKS");
    bench_print_environment(G.tab, argc, argv);
    fprintf(G.tab, "# GPU: %s, %d SMs, %.1f GiB, driver %d.%d, runtime %d.%d; GCOMM_PACK_MAX_BLOCKS=%s\n",
            prop.name, G.sms, (double)prop.totalGlobalMem / (1 << 30), drv / 1000, drv % 1000 / 10,
            rt / 1000, rt % 1000 / 10, mb ? mb : "(unset: 16 per SM)");
    fprintf(G.tab,
            "# median of >= %d runs and >= %.2f s per op, CUDA events (case 7: host clock); random "
            "data; every result checked after timing\n"
            "# GB/s: 2 x packed bytes / s (read + write; case 8: packed bytes / s over the host link); "
            "case 7 in us\n"
            "# ratio: gcomm bandwidth as %% of the peer's, or speed-up x, or (case 7) time / peer "
            "time; memcpy: gcomm vs cudaMemcpy of the packed bytes; * peer scaled from a subset\n",
            G.opts.min_runs, G.opts.min_time_s);
    table_header();
    if (in_list(cases, 1)) case_vector();
    if (in_list(cases, 2)) case_vector8();
    if (in_list(cases, 3)) case_triangle(3, 0);
    if (in_list(cases, 4)) case_triangle(4, 256);
    if (in_list(cases, 5)) case_subarray();
    if (in_list(cases, 6)) case_structs();
    if (in_list(cases, 7)) case_small();
    if (in_list(cases, 8)) case_pinned();
    if (in_list(cases, 9)) case_transpose();
    if (in_list(cases, 11)) case_wide_2d();
    if (in_list(cases, 10))
        case_blocks(blocks ? blocks : G.quick ? "1,264" : "1,2,4,8,16,32,132,264,0", argv);
    print_summary();
    bench_csv_close(G.csv);
    return G.failures || G.errors ? 1 : 0;
}
