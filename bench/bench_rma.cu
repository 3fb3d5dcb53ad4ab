/* Notified put benchmarks (issue 4): device-initiated gcomm_put_notify between ranks of the same
 * GPU and of peer GPUs, with the plain copies that bound them measured in the same run.
 *
 *   pingpong   one-way latency and bandwidth: rank A put_notifies B, B waits and answers, many
 *              round trips inside one launch timed with %globaltimer; one-way = round trip / 2.
 *   stream     one rank streams put_notifies of one size to another, which acknowledges the last.
 *   aggregate  every rank of GPU 0 put_notifies its slice to a rank of the peer GPU (peer) or of
 *              GPU 0 itself (same); a copy kernel with the same grid, cudaMemcpy and
 *              cudaMemcpyPeer move the same bytes as the ceiling.
 *   barrier    back-to-back world barriers of every rank of the job, 2 ranks per GPU and 2 per
 *              SM (what the other tests' ranks wait in), timed by rank 0.
 * Every figure is the median of --repeats launches after a warm-up launch; the received data are
 * random, checked after the timed runs.
 *
 * Usage: bench_rma [--quick] [--max-bytes N] [--repeats N] [--threads N] [--agg-threads N]
 *                  [--csv FILE] */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_cuda.h"
#include "bench_pingpong.cuh"
#include "bench_util.h"
#include "gcomm/device.cuh"
#include "gcomm/gcomm.h"


/* Per launch results written by the measuring rank. */
typedef struct {
    unsigned long long ns;   /* timed interval */
    unsigned errors;         /* failed calls or bad data */
} result_t;

/* Ping-pong between world ranks a and b; everybody else only takes part in the collectives.
 * Each rank's window is its slice [0, bytes) of the GPU buffer; the message is the sender's
 * slice [bytes, 2 bytes). The last message of each direction is checked. */
__global__ void k_pingpong(gcomm_param_t param, char *buf, size_t slice, size_t bytes, int iters,
                           int a, int b, result_t *res)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int rank, lrank;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_rank(&ctx, GCOMM_COMM_DEVICE, &lrank);
    char *mine = buf + (size_t)lrank * slice;
    gcomm_win_t win;
    unsigned err = gcomm_win_create(&ctx, GCOMM_COMM_WORLD, mine, bytes, &win) != GCOMM_SUCCESS;
    unsigned long long t0 = 0, t1 = 0;
    if (rank == a || rank == b)
        err += bench_pingpong_rounds(&ctx, win, rank, a, b, bytes, mine + bytes, iters, &t0,
                                     &t1);
    gcomm_barrier(&ctx, GCOMM_COMM_WORLD);
    gcomm_win_free(&ctx, &win);
    if (threadIdx.x == 0 && (rank == a || rank == b)) atomicAdd(&res->errors, err);
    if (threadIdx.x == 0 && rank == a) res->ns = t1 - t0;
}

/* Rank a streams `iters` put_notifies of `bytes` to b (all to the same place); b waits for all and
 * notifies a, whose clock stops at that notification. */
__global__ void k_stream(gcomm_param_t param, char *buf, size_t slice, size_t bytes, int iters,
                         int a, int b, result_t *res)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int rank, lrank;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_rank(&ctx, GCOMM_COMM_DEVICE, &lrank);
    char *mine = buf + (size_t)lrank * slice;
    gcomm_win_t win;
    unsigned err = gcomm_win_create(&ctx, GCOMM_COMM_WORLD, mine, bytes, &win) != GCOMM_SUCCESS;
    err += gcomm_barrier(&ctx, GCOMM_COMM_WORLD) != GCOMM_SUCCESS;
    unsigned long long t0 = 0, t1 = 0;
    if (rank == a) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        for (int i = 0; i < iters; i++)
            err += gcomm_put_notify(&ctx, win, b, 0, bytes, mine + bytes, 1) != GCOMM_SUCCESS;
        err += gcomm_wait_notifications(&ctx, win, b, 2, 1) != GCOMM_SUCCESS;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    } else if (rank == b) {
        err += gcomm_wait_notifications(&ctx, win, a, 1, iters) != GCOMM_SUCCESS;
        err += gcomm_notify(&ctx, win, a, 2) != GCOMM_SUCCESS;
    }
    gcomm_barrier(&ctx, GCOMM_COMM_WORLD);
    gcomm_win_free(&ctx, &win);
    if (threadIdx.x == 0 && (rank == a || rank == b)) atomicAdd(&res->errors, err);
    if (threadIdx.x == 0 && rank == a) res->ns = t1 - t0;
}

/* Every rank of GPU 0 sends its slice `iters` times: peer = 1: to rank r + lsize (a rank of
 * GPU 1); peer = 0: to rank (r + lsize / 2) mod lsize of GPU 0 (every rank sends and receives).
 * The receivers wait for all. Timed by rank 0 between two world barriers. */
__global__ void k_aggregate(gcomm_param_t param, char *buf, size_t slice, int iters, int peer,
                            result_t *res)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int rank, lrank, lsize;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_rank(&ctx, GCOMM_COMM_DEVICE, &lrank);
    gcomm_comm_size(&ctx, GCOMM_COMM_DEVICE, &lsize);
    /* layout per GPU: [lsize receive slices][lsize send slices] */
    char *recv = buf + (size_t)lrank * slice, *send = buf + (size_t)(lsize + lrank) * slice;
    gcomm_win_t win;
    unsigned err = gcomm_win_create(&ctx, GCOMM_COMM_WORLD, recv, slice, &win) != GCOMM_SUCCESS;
    /* GPUs 0 and 1 only (in a job of more GPUs the others just take part in the barriers) */
    int half = lsize / 2, on0 = rank < lsize, on1 = rank >= lsize && rank < 2 * lsize;
    int sender = on0, target = peer ? rank + lsize : (lrank + half) % lsize;
    int receiver = peer ? on1 : on0, source = peer ? rank - lsize : (lrank + lsize - half) % lsize;
    unsigned long long t0 = 0, t1 = 0;
    err += gcomm_barrier(&ctx, GCOMM_COMM_WORLD) != GCOMM_SUCCESS;
    if (rank == 0) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    if (sender)
        for (int i = 0; i < iters; i++)
            err += gcomm_put_notify(&ctx, win, target, 0, slice, send, 3) != GCOMM_SUCCESS;
    if (receiver) err += gcomm_wait_notifications(&ctx, win, source, 3, iters) != GCOMM_SUCCESS;
    err += gcomm_barrier(&ctx, GCOMM_COMM_WORLD) != GCOMM_SUCCESS;
    if (rank == 0) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    gcomm_win_free(&ctx, &win);
    if (threadIdx.x == 0) atomicAdd(&res->errors, err);
    if (threadIdx.x == 0 && rank == 0) res->ns = t1 - t0;
}

/* `iters` world barriers back to back, timed by rank 0 from the first one's end (every rank
 * running) to the last one's. */
__global__ void k_barrier(gcomm_param_t param, char *buf, int iters, result_t *res)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int rank;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    unsigned err = gcomm_barrier(&ctx, GCOMM_COMM_WORLD) != GCOMM_SUCCESS;
    unsigned long long t0 = 0, t1 = 0;
    if (rank == 0) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (int i = 0; i < iters; i++)
        err += gcomm_barrier(&ctx, GCOMM_COMM_WORLD) != GCOMM_SUCCESS;
    if (rank == 0) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    if (threadIdx.x == 0) atomicAdd(&res->errors, err);
    if (threadIdx.x == 0 && rank == 0) res->ns = t1 - t0;
    (void)buf;
}

/* The ceilings of the aggregate test, no notifications, 16-byte accesses: the same grid copying
 * the same slices (what the ranks' block copies do), and a plain grid-stride copy kernel with a
 * full GPU of threads and four loads in flight per thread. */
__global__ void k_copy(const uint4 *src, uint4 *dst, size_t words_per_block, int iters)
{
    const uint4 *s = src + (size_t)blockIdx.x * words_per_block;
    uint4 *d = dst + (size_t)blockIdx.x * words_per_block;
    for (int it = 0; it < iters; it++)
        for (size_t i = threadIdx.x; i < words_per_block; i += blockDim.x) d[i] = s[i];
}

__global__ void k_copy_plain(const uint4 *src, uint4 *dst, size_t words, int iters)
{
    size_t nt = (size_t)gridDim.x * blockDim.x, t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int it = 0; it < iters; it++) bench_copy_words(src, dst, t, words, nt);
}

/* The floor of a one-way notification: thread 0 of one block stores a flag with release
 * semantics, thread 0 of the other polls it with acquire loads and answers (SPEC "flag one-way").
 * Each side polls a flag in its own GPU's memory; `sys` for flags across GPUs. */
__global__ void k_flag(unsigned *mine, unsigned *theirs, int iters, int first, int sys,
                       unsigned long long *ns)
{
    if (threadIdx.x != 0) return;
    if (blockIdx.x == 1) { /* same GPU: block 1 plays the other side */
        unsigned *t = mine;
        mine = theirs;
        theirs = t;
        first = !first;
    }
    unsigned long long t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (unsigned i = 1; i <= (unsigned)iters; i++) {
        if (first) {
            gcommi_st_release(theirs, i, sys);
            while (gcommi_ld_acquire(mine, sys) != i) {}
        } else {
            while (gcommi_ld_acquire(mine, sys) != i) {}
            gcommi_st_release(theirs, i, sys);
        }
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    if (first && blockIdx.x == 0) *ns = t1 - t0;
}

/* ---- host ---- */

typedef struct {
    int ngpus;
    int dev[GCOMM_MAX_GPUS];
    char *buf[GCOMM_MAX_GPUS];
    size_t bytes;
    result_t *res; /* mapped pinned host memory, one per GPU */
    int threads;     /* per rank, ping-pong and stream */
    int agg_threads; /* per rank, aggregate */
    int repeats;
    FILE *csv;
} bench_t;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void fill_random(bench_t *b, uint64_t seed)
{
    size_t n = b->bytes;
    unsigned char *h = (unsigned char *)malloc(n);
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        h[i] = (unsigned char)(1 + s % 255);
    }
    for (int g = 0; g < b->ngpus; g++) {
        CK(cudaSetDevice(b->dev[g]));
        CK(cudaMemcpy(b->buf[g], h, n, cudaMemcpyHostToDevice));
    }
    free(h);
}

/* Runs one gcomm kernel `repeats` times after one warm-up; returns the median of res->ns / div
 * (in microseconds) and adds errors. */
static double run_median(bench_t *b, const void *kernel, int blocks, void **args_tail, int ntail,
                         double div, unsigned *errors)
{
    double *v = (double *)malloc(sizeof(double) * (size_t)(b->repeats + 1));
    void *argv[GCOMM_MAX_GPUS][12];
    gcomm_launch_t l;
    memset(&l, 0, sizeof(l));
    l.kernel = kernel;
    l.blocks_per_gpu = blocks;
    l.threads_per_block = b->threads;
    result_t *resp = b->res;
    for (int g = 0; g < b->ngpus; g++) {
        argv[g][0] = NULL;
        argv[g][1] = &b->buf[g];
        for (int k = 0; k < ntail; k++) argv[g][2 + k] = args_tail[k];
        argv[g][2 + ntail] = &resp;
        l.args[g] = argv[g];
    }
    for (int r = 0; r <= b->repeats; r++) {
        memset(b->res, 0, sizeof(result_t));
        GK(gcomm_launch(&l));
        *errors += b->res->errors;
        if (r > 0) v[r - 1] = (double)b->res->ns * 1e-3 / div;
    }
    double m = bench_median(v, (size_t)b->repeats);
    free(v);
    return m;
}

static void row(bench_t *b, const char *impl, const char *test, size_t bytes, int blocks,
                double us, double gbps, int ok)
{
    printf("%-8s %-22s %10zu %7d %12.2f %10.2f  %s\n", impl, test, bytes, blocks, us, gbps,
           ok ? "yes" : "NO");
    if (b->csv)
        fprintf(b->csv, "%s,%s,%zu,%d,%d,%.3f,%.3f,%s\n", impl, test, bytes, b->threads, blocks,
                us, gbps, ok ? "yes" : "no");
}

/* Checks that receiver slice [0, bytes) on GPU gr (block lr) equals sender slice
 * [bytes, 2 bytes) on GPU gs (block ls). */
static int check_copy(bench_t *b, int gr, size_t roff, int gs, size_t soff, size_t bytes)
{
    if (bytes == 0) return 1;
    unsigned char *x = (unsigned char *)malloc(bytes), *y = (unsigned char *)malloc(bytes);
    CK(cudaMemcpy(x, b->buf[gr] + roff, bytes, cudaMemcpyDefault));
    CK(cudaMemcpy(y, b->buf[gs] + soff, bytes, cudaMemcpyDefault));
    int ok = memcmp(x, y, bytes) == 0;
    free(x);
    free(y);
    return ok;
}

static void bench_pingpong(bench_t *b, int peer, size_t max_bytes)
{
    const char *name = peer ? "pingpong_peer" : "pingpong_same";
    int a = 0, bb = peer ? 2 : 1; /* 2 blocks per GPU: rank 2 is GPU 1's first */
    for (size_t bytes = 0; bytes <= max_bytes; bytes = bytes ? bytes * 4 : 8) {
        size_t slice = 2 * bytes + 256;
        if (2 * slice > b->bytes) break;
        /* about 20 ms per launch */
        int iters = bytes <= 65536 ? 4000 : (int)(2e10 / (double)bytes / 200.0);
        if (iters < 20) iters = 20;
        if (iters > 4000) iters = 4000;
        fill_random(b, bytes + 1);
        for (int g = 0; g < b->ngpus; g++) { /* poison the windows */
            CK(cudaSetDevice(b->dev[g]));
            CK(cudaMemset(b->buf[g], 0, bytes));
            CK(cudaMemset(b->buf[g] + slice, 0, bytes));
        }
        unsigned errors = 0;
        void *tail[] = {&slice, &bytes, &iters, &a, &bb};
        double us = run_median(b, gcomm_kernel(k_pingpong), 2, tail, 5, 2.0 * iters, &errors);
        /* A's window holds B's message and B's holds A's */
        int gb = peer ? 1 : 0;
        size_t ob = peer ? 0 : slice;
        int ok = errors == 0 && check_copy(b, 0, 0, gb, ob + bytes, bytes) &&
                 check_copy(b, gb, ob, 0, bytes, bytes);
        row(b, "gcomm", name, bytes, 2, us, bytes ? bytes / us * 1e-3 : 0, ok);
        if (bytes == 0) bytes = 2; /* 0, 8, 32, ... */
    }
}

static void bench_flag(bench_t *b, int peer)
{
    const int iters = 20000;
    unsigned *f0, *f1;
    unsigned long long *ns;
    CK(cudaSetDevice(b->dev[0]));
    CK(cudaMalloc(&f0, 256));
    CK(cudaHostAlloc((void **)&ns, sizeof(*ns), cudaHostAllocMapped | cudaHostAllocPortable));
    if (peer) {
        CK(cudaSetDevice(b->dev[1]));
        CK(cudaMalloc(&f1, 256));
    } else {
        f1 = f0 + 32; /* another 128-byte line */
    }
    double *v = (double *)malloc(sizeof(double) * (size_t)b->repeats);
    for (int r = -1; r < b->repeats; r++) {
        CK(cudaSetDevice(b->dev[0]));
        CK(cudaMemset(f0, 0, 256));
        if (peer) {
            CK(cudaSetDevice(b->dev[1]));
            CK(cudaMemset(f1, 0, 256));
            CK(cudaDeviceSynchronize());
            k_flag<<<1, 32>>>(f1, f0, iters, 0, 1, ns);
            CK(cudaSetDevice(b->dev[0]));
            k_flag<<<1, 32>>>(f0, f1, iters, 1, 1, ns);
        } else {
            k_flag<<<2, 32>>>(f0, f1, iters, 1, 0, ns);
        }
        CK(cudaGetLastError());
        for (int g = 0; g < (peer ? 2 : 1); g++) {
            CK(cudaSetDevice(b->dev[g]));
            CK(cudaDeviceSynchronize());
        }
        if (r >= 0) v[r] = (double)*ns * 1e-3 / (2.0 * iters);
    }
    double m = bench_median(v, (size_t)b->repeats);
    row(b, "flag", peer ? "pingpong_peer" : "pingpong_same", 0, peer ? 1 : 2, m, 0, 1);
    free(v);
    cudaFree(f0);
    if (peer) cudaFree(f1);
    cudaFreeHost(ns);
}

static void bench_stream(bench_t *b, int peer, size_t max_bytes)
{
    const char *name = peer ? "stream_peer" : "stream_same";
    int a = 0, bb = peer ? 2 : 1;
    for (size_t bytes = 65536; bytes <= max_bytes; bytes *= 4) {
        size_t slice = 2 * bytes + 256;
        if (2 * slice > b->bytes) break;
        int iters = (int)(4e9 / (double)bytes / 100.0);
        if (iters < 8) iters = 8;
        if (iters > 2000) iters = 2000;
        fill_random(b, bytes + 7);
        unsigned errors = 0;
        void *tail[] = {&slice, &bytes, &iters, &a, &bb};
        double us = run_median(b, gcomm_kernel(k_stream), 2, tail, 5, 1.0, &errors);
        int gb = peer ? 1 : 0;
        size_t ob = peer ? 0 : slice;
        int ok = errors == 0 && check_copy(b, gb, ob, 0, bytes, bytes);
        double per = us / iters;
        row(b, "gcomm", name, bytes, 2, per, bytes / per * 1e-3, ok);
    }
}

/* World barrier latency: with 2 ranks per GPU and with 2 per SM (every rank of the launch in
 * the barrier; verified: every call of every rank returned GCOMM_SUCCESS). */
static void bench_barrier(bench_t *b)
{
    int sms = 0, full = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, b->dev[0]));
    GK(gcomm_launch_max_blocks(gcomm_kernel(k_barrier), b->threads, 0, 0, &full));
    if (full > 2 * sms) full = 2 * sms;
    const int iters = 2000;
    int counts[2] = {2, full};
    for (int k = 0; k < 2; k++) {
        unsigned errors = 0;
        int it = iters;
        void *tail[] = {&it};
        double us = run_median(b, gcomm_kernel(k_barrier), counts[k], tail, 1, iters, &errors);
        row(b, "gcomm", "barrier_world", 0, counts[k], us, 0, errors == 0);
    }
}

static void bench_aggregate(bench_t *b, int peer, size_t total)
{
    int dev0 = b->dev[0], sms = 0, blocks = 0, threads = b->agg_threads;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev0));
    GK(gcomm_launch_max_blocks(gcomm_kernel(k_aggregate), threads, 0, 0, &blocks));
    if (blocks > 2 * sms) blocks = 2 * sms; /* 2 ranks per SM: over-decomposed, all resident */
    size_t slice = total / (size_t)blocks / 256 * 256;
    if ((size_t)2 * blocks * slice > b->bytes) slice = b->bytes / (2 * (size_t)blocks) / 256 * 256;
    size_t moved = slice * (size_t)blocks;
    int iters = 4;
    fill_random(b, 99);
    unsigned errors = 0;
    int saved = b->threads;
    b->threads = threads;
    void *tail[] = {&slice, &iters, &peer};
    double us = run_median(b, gcomm_kernel(k_aggregate), blocks, tail, 3, iters, &errors);
    /* receiver slices hold their senders' send slices */
    int ok = errors == 0;
    for (int k = 0; k < blocks && ok; k += blocks / 7 + 1) {
        int gr = peer ? 1 : 0, r = peer ? k : (k + blocks / 2) % blocks;
        ok = check_copy(b, gr, (size_t)r * slice, 0, (size_t)(blocks + k) * slice, slice);
    }
    const char *name = peer ? "aggregate_peer" : "aggregate_same";
    row(b, "gcomm", name, moved, blocks, us, moved / us * 1e-3, ok);

    char *dst = peer ? b->buf[1] : b->buf[0];
    char *src = b->buf[0] + (size_t)blocks * slice;
    cudaEvent_t e0, e1;
    CK(cudaSetDevice(dev0));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    double *v = (double *)malloc(sizeof(double) * (size_t)b->repeats);
    for (int which = 0; which < 3; which++) {
        int grid = which == 0 ? blocks : which == 1 ? 8 * sms : 0;
        for (int r = -1; r < b->repeats; r++) {
            CK(cudaEventRecord(e0));
            if (which == 0)
                k_copy<<<blocks, threads>>>((const uint4 *)src, (uint4 *)dst, slice / 16, iters);
            else if (which == 1)
                k_copy_plain<<<grid, 512>>>((const uint4 *)src, (uint4 *)dst, moved / 16, iters);
            else
                for (int it = 0; it < iters; it++)
                    CK(cudaMemcpyAsync(dst, src, moved, cudaMemcpyDefault));
            CK(cudaGetLastError());
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r >= 0) v[r] = ms * 1e3 / iters;
        }
        double m = bench_median(v, (size_t)b->repeats);
        const char *impl = which == 0 ? "copygrid" : which == 1 ? "copykern" : peer ? "memcpyP" : "memcpy";
        row(b, impl, name, moved, grid, m, moved / m * 1e-3, 1);
    }
    b->threads = saved;
    free(v);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
}

int main(int argc, char **argv)
{
    size_t max_bytes = 64u << 20;
    int quick = 0;
    bench_t b;
    memset(&b, 0, sizeof(b));
    b.threads = 128;
    b.agg_threads = 512;
    b.repeats = 7;
    const char *csv = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) bench_parse_size(argv[++i], &max_bytes);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) b.repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) b.threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--agg-threads") && i + 1 < argc) b.agg_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
        else {
            fprintf(stderr, "usage: bench_rma [--quick] [--max-bytes N] [--repeats N] "
                            "[--threads N] [--agg-threads N] [--csv FILE]\n");
            return 2;
        }
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("bench_rma: no GPU, skipped\n");
        return 77;
    }
    if (quick) {
        max_bytes = max_bytes < (1u << 20) ? max_bytes : (1u << 20);
        b.repeats = 3;
    }
    GK(gcomm_init());
    GK(gcomm_local_devices(&b.ngpus, b.dev));
    b.bytes = 2 * (2 * max_bytes + 256) + (64u << 20);
    if (b.bytes < (600u << 20)) b.bytes = 600u << 20;
    for (int g = 0; g < b.ngpus; g++) {
        CK(cudaSetDevice(b.dev[g]));
        GK(gcomm_malloc(b.bytes, (void **)&b.buf[g]));
    }
    CK(cudaSetDevice(b.dev[0]));
    CK(cudaHostAlloc((void **)&b.res, sizeof(result_t), cudaHostAllocMapped | cudaHostAllocPortable));
    if (csv) {
        b.csv = fopen(csv, "w");
        if (!b.csv) {
            perror(csv);
            return 1;
        }
        fprintf(b.csv, "impl,test,bytes,threads,blocks,median_us,gbps,verified\n");
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, b.dev[0]));
    printf("bench_rma: %d x %s, %d threads per rank, median of %d launches\n", b.ngpus, prop.name,
           b.threads, b.repeats);
    printf("%-8s %-22s %10s %7s %12s %10s  %s\n", "impl", "test", "bytes", "blocks", "median_us",
           "GB/s", "verified");
    double t0 = now_s();
    bench_flag(&b, 0);
    bench_pingpong(&b, 0, max_bytes);
    if (b.ngpus > 1) {
        bench_flag(&b, 1);
        bench_pingpong(&b, 1, max_bytes);
    }
    bench_stream(&b, 0, max_bytes);
    if (b.ngpus > 1) bench_stream(&b, 1, max_bytes);
    bench_aggregate(&b, 0, quick ? (64u << 20) : (256u << 20));
    if (b.ngpus > 1) bench_aggregate(&b, 1, quick ? (64u << 20) : (256u << 20));
    bench_barrier(&b);
    printf("bench_rma: %.1f s\n", now_s() - t0);
    if (b.csv) fclose(b.csv);
    for (int g = 0; g < b.ngpus; g++) gcomm_free(b.buf[g]);
    cudaFreeHost(b.res);
    gcomm_finalize();
    return 0;
}
