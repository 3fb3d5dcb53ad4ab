/* Notified put between two MPI processes (issue 5): the ping-pong of gcomm_put_notify between the
 * first rank of process 0 and the first rank of process 1, beside the stages of the host proxy's
 * path measured in the same run. Issue 5's targets, with the processes forced onto the proxy
 * (GCOMM_FORCE_PROXY=1): one-way latency of a 0-8 B notified put <= 10 us, and a 16 MiB notified
 * put at >= 70% of the slowest stage of its path.
 *
 *   gcomm   inside one gcomm_launch, world rank 0 (process 0's first block) put_notifies B (the
 *           first block of process 1), B waits and answers with a put_notify of the same size;
 *           `iters` round trips timed with %globaltimer on rank 0 after one untimed round;
 *           one-way = total / (2 iters). Median of --repeats launches after a warm-up launch.
 *           The payload is random (never zero) and new in every launch; each process checks on
 *           its GPU, after every launch, that its window holds exactly the other process's
 *           message and that the 256 bytes after it are untouched (poisoned with zeros before
 *           the launch); every gcomm call's result is checked on the device. The other blocks of
 *           each process only create and free the window.
 *   d2h     pinned device->host cudaMemcpyAsync (cudaHostAlloc'd buffer), CUDA events;
 *   h2d     pinned host->device likewise: each process measures its own, one after the other
 *           (the processes may share a GPU); the stage's figure is the mean of the two
 *           processes' median times, since a ping-pong round trip uses each process's copy once;
 *   mpi     MPI_Send/MPI_Recv ping-pong of pinned host buffers between the two processes,
 *           one-way = round trip / 2 (verified: each process checks what it received).
 * Stages are medians of --repeats samples after warm-up (default 20), at every size but 0 B
 * (MPI also at 0 B). For every size the table gives gcomm's bandwidth over the slowest stage's
 * (ratio); the figure of issue 5 is the ratio at 16 MiB, and gcomm's 0-8 B latency beside MPI's.
 *
 * The path is chosen by the library, not by this program: it prints which one the environment
 * asks for ("proxy (GCOMM_FORCE_PROXY=1)" or "CUDA IPC"). MPI is called only between launches
 * (the proxy thread uses MPI while a launch runs).
 *
 * Usage: mpirun -n 2 bench_proxy [--max-bytes N] [--repeats N] [--blocks N] [--threads N]
 *                                [--iters N] [--csv FILE]
 *   e.g. GCOMM_FORCE_PROXY=1 mpirun -n 2 -x GCOMM_FORCE_PROXY bench_proxy --csv proxy.csv
 * --repeats N sets both the gcomm launches (default 7) and the stage samples (default 20);
 * --iters N fixes the round trips per launch (default: 200 up to 4 KiB, then 64 MiB / size
 * within 5..200). Exit status: 0, 1 when a check failed, 2 for bad arguments, 77 (skipped) with
 * fewer than MPI_THREAD_SERIALIZED, not exactly 2 processes, or no GPU. */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench_cuda.h"
#include "bench_pingpong.cuh"
#include "bench_util.h"
#include "gcomm/device.cuh"
#include "gcomm/gcomm.h"
#include "gcomm/gcomm_mpi.h"

#define GUARD 256            /* bytes after each window that must stay untouched */
#define SLOT 256             /* window of each other block */
#define MAX_BYTES_LIMIT (1ul << 30) /* MPI counts are ints */
#define MAX_SIZES 16

/* Per launch, written by the ranks (device memory). */
typedef struct {
    unsigned long long ns; /* rank A: the timed round trips */
    unsigned errors;       /* gcomm calls that failed, all ranks of this process */
} result_t;

/* Word i of the payload of `seed`: random, none of its bytes zero. */
static __host__ __device__ inline uint64_t pattern_word(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull; /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    for (int k = 0; k < 64; k += 8)
        if (((z >> k) & 0xff) == 0) z |= 1ull << k;
    return z;
}

static __host__ __device__ inline unsigned char pattern_byte(uint64_t seed, size_t i)
{
    return (unsigned char)(pattern_word(seed, i / 8) >> (8 * (i % 8)));
}

/* The payload of launch `launch` of process `proc`. */
static uint64_t payload_seed(unsigned long launch, int proc)
{
    return pattern_word(0x243F6A8885A308D3ull, 2 * (uint64_t)launch + (uint64_t)proc);
}

/* p[0, n) = the payload of `seed` (p 8-byte aligned). */
__global__ void k_fill(unsigned char *p, size_t n, uint64_t seed)
{
    size_t nt = (size_t)gridDim.x * blockDim.x, t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t *w = (uint64_t *)p;
    size_t nw = n / 8;
    for (size_t i = t; i < nw; i += nt) w[i] = pattern_word(seed, i);
    for (size_t i = nw * 8 + t; i < n; i += nt) p[i] = pattern_byte(seed, i);
}

/* Counts the bytes of p[0, n) that differ from the payload of `seed`, and the nonzero bytes of
 * p[n, n + guard) (p 8-byte aligned). */
__global__ void k_check(const unsigned char *p, size_t n, uint64_t seed, size_t guard,
                        unsigned *bad)
{
    size_t nt = (size_t)gridDim.x * blockDim.x, t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t *w = (const uint64_t *)p;
    size_t nw = n / 8;
    unsigned e = 0;
    for (size_t i = t; i < nw; i += nt) {
        uint64_t d = w[i] ^ pattern_word(seed, i);
        for (int k = 0; k < 64; k += 8) e += ((d >> k) & 0xff) != 0;
    }
    for (size_t i = nw * 8 + t; i < n; i += nt) e += p[i] != pattern_byte(seed, i);
    for (size_t i = n + t; i < n + guard; i += nt) e += p[i] != 0;
    if (e) atomicAdd(bad, e);
}

/* The ping-pong between world ranks 0 (A) and b (B), both the first block of their process.
 * Block 0 of each process has the window buf[0, bytes) and sends buf[msg_off, msg_off + bytes);
 * block k > 0 has the window buf[slot0 + (k - 1) SLOT, + SLOT) and only creates and frees it. */
__global__ void k_pingpong(gcomm_param_t param, char *buf, size_t msg_off, size_t slot0,
                           size_t bytes, int iters, int b, result_t *res)
{
    __shared__ gcomm_context_t ctx;
    unsigned err = gcomm_init(param, &ctx) != GCOMM_SUCCESS;
    int rank = -1, lrank = -1;
    err += gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank) != GCOMM_SUCCESS;
    err += gcomm_comm_rank(&ctx, GCOMM_COMM_DEVICE, &lrank) != GCOMM_SUCCESS;
    const int a = 0;
    int active = lrank == 0 && (rank == a || rank == b);
    char *mine = lrank == 0 ? buf : buf + slot0 + (size_t)(lrank - 1) * SLOT;
    gcomm_win_t win = GCOMM_WIN_NULL;
    err += gcomm_win_create(&ctx, GCOMM_COMM_WORLD, mine, active ? bytes : SLOT, &win) !=
           GCOMM_SUCCESS;
    unsigned long long t0 = 0, t1 = 0;
    if (active)
        err += bench_pingpong_rounds(&ctx, win, rank, a, b, bytes, buf + msg_off, iters, &t0,
                                     &t1);
    err += gcomm_win_free(&ctx, &win) != GCOMM_SUCCESS;
    err += gcomm_finish(&ctx) != GCOMM_SUCCESS;
    if (threadIdx.x == 0) {
        if (err) atomicAdd(&res->errors, err);
        if (rank == a) res->ns = t1 - t0;
    }
}

/* ---- host ---- */

typedef struct {
    int rank;                /* MPI rank: 0 or 1 */
    int dev, sms;
    int blocks, threads;
    int b;                   /* world rank of process 1's first block */
    int iters_fixed;         /* --iters, 0: by size */
    int stage_repeats, gcomm_repeats;
    size_t max_bytes;
    char *buf;               /* gcomm_malloc'd: [window][message][other blocks' slots] */
    size_t msg_off, slot0;
    result_t *res;           /* device */
    unsigned *bad;           /* device */
    unsigned char *h_src;    /* pinned: h2d source, MPI send buffer (random) */
    unsigned char *h_dst;    /* pinned: d2h destination */
    unsigned char *h_recv;   /* pinned: MPI receive buffer */
    cudaStream_t stream;
    cudaEvent_t e0, e1;
    unsigned long launches;  /* launches so far: the payload seeds */
    long errors;             /* failed checks, summed over the processes */
    int stop;                /* a launch failed: no more sizes (the same on both processes) */
} bench_t;

/* One size's figures (valid on process 0). */
typedef struct {
    size_t bytes;
    int iters;
    double gcomm_us;           /* one-way */
    double d2h_us[2], h2d_us[2]; /* per process; 0: not measured */
    double d2h_us_mean, h2d_us_mean, mpi_us;
    long errors;
} row_t;

static double gbps(size_t bytes, double us)
{
    return us > 0 ? (double)bytes / (us * 1e3) : 0.0;
}

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

static long sum_long(long v)
{
    long s = 0;
    MPI_Allreduce(&v, &s, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

static int grid_for(bench_t *b)
{
    return 4 * b->sms;
}

/* Median time of one cudaMemcpyAsync of `bytes` (us), this process alone. */
static double time_copy(bench_t *b, size_t bytes, int to_host)
{
    double *v = (double *)malloc(sizeof(double) * (size_t)b->stage_repeats);
    if (!v) {
        fprintf(stderr, "bench_proxy: out of memory\n");
        exit(1);
    }
    void *dst = to_host ? (void *)b->h_dst : (void *)b->buf;
    const void *src = to_host ? (const void *)(b->buf + b->msg_off) : (const void *)b->h_src;
    cudaMemcpyKind kind = to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
    for (int r = -3; r < b->stage_repeats; r++) { /* 3 warm-up copies */
        CK(cudaEventRecord(b->e0, b->stream));
        CK(cudaMemcpyAsync(dst, src, bytes, kind, b->stream));
        CK(cudaEventRecord(b->e1, b->stream));
        CK(cudaEventSynchronize(b->e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, b->e0, b->e1));
        if (r >= 0) v[r] = (double)ms * 1e3;
    }
    double m = bench_median(v, (size_t)b->stage_repeats);
    free(v);
    return m;
}

/* The copy stages: each process in turn (they may share a GPU or its link). */
static void stage_copies(bench_t *b, row_t *row)
{
    CK(cudaSetDevice(b->dev));
    memset(b->h_dst, 0, row->bytes); /* poison */
    double mine[2] = {0, 0}, all[4];
    for (int p = 0; p < 2; p++) {
        if (p == b->rank) {
            mine[0] = time_copy(b, row->bytes, 1);
            mine[1] = time_copy(b, row->bytes, 0);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Allgather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int p = 0; p < 2; p++) {
        row->d2h_us[p] = all[2 * p];
        row->h2d_us[p] = all[2 * p + 1];
    }
    row->d2h_us_mean = 0.5 * (row->d2h_us[0] + row->d2h_us[1]);
    row->h2d_us_mean = 0.5 * (row->h2d_us[0] + row->h2d_us[1]);
}

/* MPI ping-pong of pinned host buffers: median one-way time (us), and checks what arrived.
 * Returns the number of wrong bytes over both processes. */
static long stage_mpi(bench_t *b, row_t *row)
{
    size_t bytes = row->bytes;
    int count = (int)bytes, peer = 1 - b->rank, tag = 7;
    int rounds = bytes <= 65536 ? 100 : bytes <= (1u << 20) ? 10 : 2; /* per sample */
    double *v = (double *)malloc(sizeof(double) * (size_t)b->stage_repeats);
    if (!v) {
        fprintf(stderr, "bench_proxy: out of memory\n");
        exit(1);
    }
    memset(b->h_recv, 0, bytes); /* poison */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = -1; r < b->stage_repeats; r++) { /* one warm-up sample */
        double t0 = MPI_Wtime();
        for (int k = 0; k < rounds; k++) {
            if (b->rank == 0) {
                MPI_Send(b->h_src, count, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
                MPI_Recv(b->h_recv, count, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(b->h_recv, count, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                MPI_Send(b->h_recv, count, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
            }
        }
        double dt = MPI_Wtime() - t0;
        if (r >= 0) v[r] = dt * 1e6 / (2.0 * rounds);
    }
    double m = bench_median(v, (size_t)b->stage_repeats);
    free(v);
    MPI_Bcast(&m, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* process 0's clock */
    row->mpi_us = m;
    /* process 1 received process 0's buffer, which came back to process 0: both hold h_src,
     * which both filled alike */
    long wrong = 0;
    for (size_t i = 0; i < bytes; i++) wrong += b->h_recv[i] != b->h_src[i];
    if (wrong)
        fprintf(stderr, "bench_proxy: process %d: MPI ping-pong of %zu bytes: %ld bytes wrong\n",
                b->rank, bytes, wrong);
    return sum_long(wrong);
}

static int iters_for(const bench_t *b, size_t bytes)
{
    if (b->iters_fixed > 0) return b->iters_fixed;
    if (bytes <= 4096) return 200;
    size_t n = (64ul << 20) / bytes;
    return n < 5 ? 5 : n > 200 ? 200 : (int)n;
}

/* The gcomm ping-pong of one size: a warm-up launch and gcomm_repeats timed ones, each verified.
 * Sets row->gcomm_us (process 0) and returns the failed checks over both processes. */
static long run_gcomm(bench_t *b, row_t *row)
{
    size_t bytes = row->bytes;
    int iters = iters_for(b, bytes);
    row->iters = iters;
    double *v = (double *)malloc(sizeof(double) * (size_t)b->gcomm_repeats);
    if (!v) {
        fprintf(stderr, "bench_proxy: out of memory\n");
        exit(1);
    }
    void *argv[8] = {NULL, &b->buf, &b->msg_off, &b->slot0, &bytes, &iters, &b->b, &b->res};
    gcomm_launch_t l;
    memset(&l, 0, sizeof(l));
    l.kernel = gcomm_kernel(k_pingpong);
    l.blocks_per_gpu = b->blocks;
    l.threads_per_block = b->threads;
    l.args[0] = argv;
    long failed = 0;
    int done = 0;
    CK(cudaSetDevice(b->dev));
    for (int r = -1; r < b->gcomm_repeats; r++) { /* launch -1: warm-up (also checked) */
        unsigned long launch = b->launches++;
        uint64_t mine = payload_seed(launch, b->rank), theirs = payload_seed(launch, 1 - b->rank);
        /* poison the window and the guard after it, new payload, zero the results */
        CK(cudaMemset(b->buf, 0, round_up(bytes, 8) + GUARD));
        if (bytes) {
            k_fill<<<grid_for(b), 256>>>((unsigned char *)b->buf + b->msg_off, bytes, mine);
            CK(cudaGetLastError());
        }
        CK(cudaMemset(b->res, 0, sizeof(result_t)));
        CK(cudaMemset(b->bad, 0, sizeof(unsigned)));
        /* gcomm launches on its own stream: all of this is done before any process's kernel
         * starts (the barrier) */
        CK(cudaDeviceSynchronize());
        MPI_Barrier(MPI_COMM_WORLD);
        int rc = gcomm_launch(&l); /* no MPI from here until it returns */
        if (rc != GCOMM_SUCCESS)
            fprintf(stderr, "bench_proxy: process %d: %zu bytes, launch %d: gcomm_launch: %s "
                    "(%s)\n", b->rank, bytes, r, gcomm_error_string(rc),
                    gcomm_last_error_detail());
        CK(cudaSetDevice(b->dev));
        result_t res;
        CK(cudaMemcpy(&res, b->res, sizeof(res), cudaMemcpyDeviceToHost));
        k_check<<<grid_for(b), 256>>>((const unsigned char *)b->buf, bytes, theirs, GUARD,
                                      b->bad);
        CK(cudaGetLastError());
        unsigned bad = 0;
        CK(cudaMemcpy(&bad, b->bad, sizeof(bad), cudaMemcpyDeviceToHost));
        if (res.errors || bad)
            fprintf(stderr, "bench_proxy: process %d: %zu bytes, launch %d: %u gcomm calls "
                    "failed on the device, %u bytes of the window (or the %d after it) "
                    "wrong\n", b->rank, bytes, r, res.errors, bad, GUARD);
        failed += sum_long((long)res.errors + (long)bad);
        if (r >= 0) v[done++] = (double)res.ns * 1e-3 / (2.0 * iters);
        /* a failed launch (a timeout takes GCOMM_TIMEOUT_MS) ends the benchmark */
        long launch_failed = sum_long(rc != GCOMM_SUCCESS);
        if (launch_failed) {
            failed += launch_failed;
            b->stop = 1;
            break;
        }
    }
    row->gcomm_us = b->rank == 0 && done ? bench_median(v, (size_t)done) : 0.0;
    free(v);
    return failed;
}

static const char *slowest_stage(const row_t *row, double *bw)
{
    double d = gbps(row->bytes, row->d2h_us_mean), m = gbps(row->bytes, row->mpi_us);
    double h = gbps(row->bytes, row->h2d_us_mean);
    const char *name = "d2h";
    *bw = d;
    if (m < *bw) {
        *bw = m;
        name = "mpi";
    }
    if (h < *bw) {
        *bw = h;
        name = "h2d";
    }
    return name;
}

static void print_row(const row_t *row, FILE *csv, int gcomm_repeats, int stage_repeats)
{
    char sz[32];
    bench_format_size(row->bytes, sz, sizeof(sz));
    double g = gbps(row->bytes, row->gcomm_us);
    if (row->bytes == 0) {
        printf("%8s %10.2f %10s %6d %9.2f %9s %9s %9s %8s %6s  %s\n", sz, row->gcomm_us, "-",
               row->iters, row->mpi_us, "-", "-", "-", "-", "-", row->errors ? "NO" : "yes");
    } else {
        double slow_bw = 0;
        const char *slow = slowest_stage(row, &slow_bw);
        printf("%8s %10.2f %10.2f %6d %9.2f %9.2f %9.2f %9.2f %8s %6.2f  %s\n", sz, row->gcomm_us,
               g, row->iters, row->mpi_us, gbps(row->bytes, row->d2h_us_mean),
               gbps(row->bytes, row->mpi_us), gbps(row->bytes, row->h2d_us_mean), slow,
               slow_bw > 0 ? g / slow_bw : 0.0, row->errors ? "NO" : "yes");
    }
    if (!csv) return;
    fprintf(csv, "gcomm_put_notify,%zu,%.3f,%.3f,%d\n", row->bytes, row->gcomm_us, g,
            gcomm_repeats);
    if (row->bytes) {
        fprintf(csv, "d2h,%zu,%.3f,%.3f,%d\n", row->bytes, row->d2h_us_mean,
                gbps(row->bytes, row->d2h_us_mean), stage_repeats);
        fprintf(csv, "h2d,%zu,%.3f,%.3f,%d\n", row->bytes, row->h2d_us_mean,
                gbps(row->bytes, row->h2d_us_mean), stage_repeats);
    }
    fprintf(csv, "mpi,%zu,%.3f,%.3f,%d\n", row->bytes, row->mpi_us,
            gbps(row->bytes, row->mpi_us), stage_repeats);
    fflush(csv);
}

/* What the environment asks gcomm for between these two processes (GCOMM_FORCE_PROXY=N: every
 * N consecutive processes form one pretend node; 0 or unset: the real nodes). */
static void path_name(char *out, size_t n, int same_node)
{
    const char *env = getenv("GCOMM_FORCE_PROXY");
    long force = env && *env ? strtol(env, NULL, 0) : 0;
    if (env && *env && force >= 1 && 0 / force != 1 / force)
        snprintf(out, n, "proxy (GCOMM_FORCE_PROXY=%s)", env);
    else if (env && *env && force >= 1)
        snprintf(out, n, "CUDA IPC (GCOMM_FORCE_PROXY=%s puts both processes on one node)", env);
    else if (!same_node)
        snprintf(out, n, "proxy (processes on different nodes)");
    else
        snprintf(out, n, "CUDA IPC");
}

static int usage(int rank)
{
    if (rank == 0)
        fprintf(stderr, "usage: mpirun -n 2 bench_proxy [--max-bytes N] [--repeats N] "
                        "[--blocks N] [--threads N] [--iters N] [--csv FILE]\n");
    MPI_Finalize();
    return 2;
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE, nproc = 0, rank = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided < MPI_THREAD_SERIALIZED) {
        if (rank == 0)
            printf("bench_proxy: MPI provides thread level %d, below MPI_THREAD_SERIALIZED (the "
                   "proxy thread calls MPI), skipped\n", provided);
        MPI_Finalize();
        return 77;
    }
    if (nproc != 2) {
        if (rank == 0)
            printf("bench_proxy: needs exactly 2 processes (mpirun -n 2), got %d, skipped\n",
                   nproc);
        MPI_Finalize();
        return 77;
    }

    bench_t b;
    memset(&b, 0, sizeof(b));
    b.rank = rank;
    b.blocks = 4;
    b.threads = 128;
    b.stage_repeats = 20;
    b.gcomm_repeats = 7;
    b.max_bytes = 16ul << 20;
    const char *csv_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--max-bytes") && more) {
            if (bench_parse_size(argv[++i], &b.max_bytes) != 0) return usage(rank);
        } else if (!strcmp(a, "--repeats") && more) {
            b.stage_repeats = b.gcomm_repeats = atoi(argv[++i]);
        } else if (!strcmp(a, "--blocks") && more) {
            b.blocks = atoi(argv[++i]);
        } else if (!strcmp(a, "--threads") && more) {
            b.threads = atoi(argv[++i]);
        } else if (!strcmp(a, "--iters") && more) {
            b.iters_fixed = atoi(argv[++i]);
        } else if (!strcmp(a, "--csv") && more) {
            csv_path = argv[++i];
        } else {
            return usage(rank);
        }
    }
    if (b.stage_repeats < 1 || b.blocks < 1 || b.threads < 32 || b.threads > 1024 ||
        b.iters_fixed < 0 || b.max_bytes > MAX_BYTES_LIMIT) {
        if (rank == 0)
            fprintf(stderr, "bench_proxy: --repeats and --blocks >= 1, --threads 32..1024, "
                            "--iters >= 0, --max-bytes <= 1G\n");
        return usage(rank);
    }

    /* a GPU on every process */
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        ndev = 0;
    }
    int min_dev = 0;
    MPI_Allreduce(&ndev, &min_dev, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (min_dev == 0) {
        if (ndev == 0)
            printf("bench_proxy: process %d: no GPU (%s), skipped\n", rank,
                   ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
        MPI_Finalize();
        return 77;
    }

    int rc = gcomm_init_mpi(MPI_COMM_WORLD);
    if (rc != GCOMM_SUCCESS)
        fprintf(stderr, "bench_proxy: process %d: gcomm_init_mpi: %s (%s)\n", rank,
                gcomm_error_string(rc), gcomm_last_error_detail());
    if (sum_long(rc != GCOMM_SUCCESS)) {
        if (rc == GCOMM_SUCCESS) gcomm_finalize();
        MPI_Finalize();
        return 1;
    }
    int nlocal = 0, devs[GCOMM_MAX_GPUS], ngpus = 0, first = 0;
    GK(gcomm_local_devices(&nlocal, devs));
    GK(gcomm_job_gpus(&ngpus, &first));
    int firsts[2] = {0, 0};
    MPI_Allgather(&first, 1, MPI_INT, firsts, 1, MPI_INT, MPI_COMM_WORLD);
    int bad_setup = nlocal != 1 || ngpus != 2;
    if (bad_setup)
        fprintf(stderr, "bench_proxy: process %d drives %d GPUs of a job of %d; expected one "
                "each, 2 in all\n", rank, nlocal, ngpus);
    b.dev = devs[0];
    CK(cudaSetDevice(b.dev));
    CK(cudaDeviceGetAttribute(&b.sms, cudaDevAttrMultiProcessorCount, b.dev));
    int maxb = 0;
    GK(gcomm_launch_max_blocks(gcomm_kernel(k_pingpong), b.threads, 0, 0, &maxb));
    if (b.blocks > maxb) {
        fprintf(stderr, "bench_proxy: process %d: --blocks %d: at most %d blocks of %d threads "
                "are resident\n", rank, b.blocks, maxb, b.threads);
        bad_setup = 1;
    }
    if (sum_long(bad_setup)) {
        gcomm_finalize();
        MPI_Finalize();
        return 1;
    }
    b.b = b.blocks * firsts[1];

    /* which GPU each process drives, and whether they are on one node */
    char pci[2][32];
    memset(pci, 0, sizeof(pci));
    CK(cudaDeviceGetPCIBusId(pci[rank], (int)sizeof(pci[0]), b.dev));
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, pci, (int)sizeof(pci[0]), MPI_CHAR,
                  MPI_COMM_WORLD);
    char host[2][MPI_MAX_PROCESSOR_NAME];
    int hlen = 0;
    memset(host, 0, sizeof(host));
    MPI_Get_processor_name(host[rank], &hlen);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                  MPI_COMM_WORLD);
    int same_node = strcmp(host[0], host[1]) == 0;
    int same_gpu = same_node && strcmp(pci[0], pci[1]) == 0;
    char path[160];
    path_name(path, sizeof(path), same_node);

    /* sizes: 0, 8, 64, 1K, 64K, 1M, 16M, then x4, and --max-bytes itself */
    static const size_t listed[] = {0, 8, 64, 1024, 65536, 1u << 20, 16u << 20};
    size_t sizes[MAX_SIZES];
    int nsizes = 0;
    for (size_t i = 0; i < sizeof(listed) / sizeof(listed[0]); i++)
        if (listed[i] <= b.max_bytes) sizes[nsizes++] = listed[i];
    for (size_t s = 64u << 20; s <= b.max_bytes && nsizes < MAX_SIZES - 1; s *= 4)
        sizes[nsizes++] = s;
    if (b.max_bytes > sizes[nsizes - 1]) sizes[nsizes++] = b.max_bytes;
    size_t maxs = sizes[nsizes - 1];

    /* memory: [window | guard ...][message][slots of blocks 1..] */
    size_t region = round_up(maxs, 256) + GUARD;
    b.msg_off = region;
    b.slot0 = region + round_up(maxs, 256);
    size_t total = b.slot0 + (size_t)b.blocks * SLOT;
    GK(gcomm_malloc(total, (void **)&b.buf));
    CK(cudaMemset(b.buf, 0, total));
    CK(cudaMalloc(&b.res, sizeof(result_t)));
    CK(cudaMalloc(&b.bad, sizeof(unsigned)));
    size_t hbytes = maxs ? maxs : 8;
    CK(cudaHostAlloc((void **)&b.h_src, hbytes, cudaHostAllocDefault));
    CK(cudaHostAlloc((void **)&b.h_dst, hbytes, cudaHostAllocDefault));
    CK(cudaHostAlloc((void **)&b.h_recv, hbytes, cudaHostAllocDefault));
    bench_fill_random(b.h_src, hbytes, 0x5eed); /* the same on both processes */
    memset(b.h_dst, 0, hbytes);
    memset(b.h_recv, 0, hbytes);
    CK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    CK(cudaEventCreate(&b.e0));
    CK(cudaEventCreate(&b.e1));

    FILE *csv = NULL;
    if (rank == 0 && csv_path) {
        static const char *const cols[] = {"what", "bytes", "oneway_us", "gbps", "median_of"};
        csv = bench_csv_open(csv_path, cols, 5);
        if (!csv) perror(csv_path);
    }
    int csv_ok = rank != 0 || !csv_path || csv;
    MPI_Bcast(&csv_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!csv_ok) {
        gcomm_free(b.buf);
        gcomm_finalize();
        MPI_Finalize();
        return 1;
    }

    if (rank == 0) {
        cudaDeviceProp prop;
        CK(cudaGetDeviceProperties(&prop, b.dev));
        bench_print_environment(stdout, argc, argv);
        printf("bench_proxy: 2 processes (%s), GPUs %s / %s (%s), path: %s\n",
               same_node ? host[0] : "two nodes", pci[0], pci[1], prop.name, path);
        printf("bench_proxy: %d blocks x %d threads per process, ping-pong between world ranks 0 "
               "and %d; gcomm: median of %d launches, stages: median of %d\n", b.blocks,
               b.threads, b.b, b.gcomm_repeats, b.stage_repeats);
        if (same_gpu && getenv("CUDA_MPS_PIPE_DIRECTORY"))
            printf("bench_proxy: note: both processes drive the same GPU, through MPS (their "
                   "kernels run at once)\n");
        else if (same_gpu)
            printf("bench_proxy: note: both processes drive the same GPU; without MPS their "
                   "kernels time-share it, which can dominate the latency\n");
        printf("%8s %10s %10s %6s %9s %9s %9s %9s %8s %6s  %s\n", "bytes", "gcomm_us",
               "gcomm_GB/s", "iters", "mpi_us", "d2h_GB/s", "mpi_GB/s", "h2d_GB/s", "slowest",
               "ratio", "verified");
        fflush(stdout);
    }

    row_t rows[MAX_SIZES];
    memset(rows, 0, sizeof(rows));
    double t_start = bench_now();
    for (int s = 0; s < nsizes; s++) {
        row_t *row = &rows[s];
        row->bytes = sizes[s];
        if (row->bytes) stage_copies(&b, row);
        row->errors += stage_mpi(&b, row);
        row->errors += run_gcomm(&b, row);
        b.errors += row->errors;
        if (rank == 0) {
            print_row(row, csv, b.gcomm_repeats, b.stage_repeats);
            fflush(stdout);
        }
        if (b.stop) {
            if (rank == 0) printf("bench_proxy: a launch failed; the larger sizes are skipped\n");
            nsizes = s + 1;
            break;
        }
    }

    if (rank == 0) {
        /* issue 5: 0-8 B latency beside MPI's, and the largest size against its slowest stage */
        const row_t *r0 = NULL, *r8 = NULL, *big = NULL;
        for (int s = 0; s < nsizes; s++) {
            if (rows[s].bytes == 0) r0 = &rows[s];
            if (rows[s].bytes == 8) r8 = &rows[s];
            if (rows[s].bytes == (16u << 20)) big = &rows[s];
        }
        if (!big && rows[nsizes - 1].bytes) big = &rows[nsizes - 1];
        printf("\npath: %s\n", path);
        if (r8)
            printf("8 B one-way: gcomm %.2f us, MPI host-to-host %.2f us\n", r8->gcomm_us,
                   r8->mpi_us);
        if (r0 || r8) {
            double lat = r0 && r8 ? (r0->gcomm_us > r8->gcomm_us ? r0->gcomm_us : r8->gcomm_us)
                                  : r0 ? r0->gcomm_us : r8->gcomm_us;
            printf("0-8 B one-way latency: %.2f us (issue 5 target on the proxy path: <= 10 us: "
                   "%s)\n", lat, lat <= 10.0 ? "met" : "missed");
        }
        if (big) {
            char sz[32];
            bench_format_size(big->bytes, sz, sizeof(sz));
            double slow_bw = 0;
            const char *slow = slowest_stage(big, &slow_bw);
            double g = gbps(big->bytes, big->gcomm_us), ratio = slow_bw > 0 ? g / slow_bw : 0;
            printf("%s: gcomm %.2f GB/s; stages: d2h %.2f GB/s (process 0 %.2f, process 1 %.2f), "
                   "mpi %.2f GB/s, h2d %.2f GB/s (process 0 %.2f, process 1 %.2f)\n", sz, g,
                   gbps(big->bytes, big->d2h_us_mean), gbps(big->bytes, big->d2h_us[0]),
                   gbps(big->bytes, big->d2h_us[1]), gbps(big->bytes, big->mpi_us),
                   gbps(big->bytes, big->h2d_us_mean), gbps(big->bytes, big->h2d_us[0]),
                   gbps(big->bytes, big->h2d_us[1]));
            printf("%s: slowest stage %s, %.2f GB/s; ratio %.2f (issue 5 target on the proxy "
                   "path at 16M: >= 0.70: %s)\n", sz, slow, slow_bw, ratio,
                   ratio >= 0.70 ? "met" : "missed");
        }
        printf("verification: %s (%ld failed checks); %.1f s\n", b.errors ? "FAILED" : "ok",
               b.errors, bench_now() - t_start);
        fflush(stdout);
        if (csv) bench_csv_close(csv);
    }

    /* every process is done with the other's memory before either frees its own */
    MPI_Barrier(MPI_COMM_WORLD);
    CK(cudaEventDestroy(b.e0));
    CK(cudaEventDestroy(b.e1));
    CK(cudaStreamDestroy(b.stream));
    CK(cudaFreeHost(b.h_src));
    CK(cudaFreeHost(b.h_dst));
    CK(cudaFreeHost(b.h_recv));
    CK(cudaFree(b.res));
    CK(cudaFree(b.bad));
    GK(gcomm_free(b.buf));
    GK(gcomm_finalize());
    MPI_Finalize();
    return b.errors ? 1 : 0;
}
