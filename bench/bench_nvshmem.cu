/* bench_nvshmem: the NVSHMEM 3 peer that gcomm's device-initiated notified put is compared with
 * (SPEC "Performance": "NVSHMEM 3, 2 PEs: put-with-signal ping-pong, one 128-thread block" and
 * "NVSHMEM block puts from 132 blocks, 256 MiB").
 *
 * Two processes, one GPU each, started by mpirun; NVSHMEM boots with its unique-ID plugin (rank 0
 * makes the ID, MPI_Bcast hands it out), so it needs no NVSHMEM-aware MPI. Tests:
 *   pingpong_put_signal   one 128-thread block per PE. PE 0: nvshmemx_putmem_signal_block to
 *                         PE 1, then waits for PE 1's answer on its own signal word; PE 1 does the
 *                         mirror image. All round trips of a sample run inside ONE kernel launch
 *                         per PE, timed with %globaltimer on PE 0 from the end of an untimed first
 *                         round trip (which only proves that both kernels run, so launch skew
 *                         between the processes is not timed) to the end of the last. Nothing is
 *                         subtracted; reported: one-way time = round trip / 2.
 *                         Sizes 0 (the signal alone), 8, 64 B, 1K, 4K, 64K, 256K, 1M, 4M, 16M, 64M.
 *   stream_put_signal     one 128-thread block on PE 0 streams puts-with-signal of S bytes
 *                         (64K .. 64M) to PE 1; PE 1 acknowledges every ACK_EVERY-th put and the
 *                         last, PE 0 keeps at most WINDOW puts unacknowledged (receiver-paced, as
 *                         a notified put with flow control must be). Timed on PE 0 from PE 1's
 *                         "ready" to the last acknowledgement: time per put and GB/s.
 *   allblocks_put_block   one 128-thread block per SM on PE 0 (a cooperative launch, so all are
 *                         resident); each block puts its slice of 256 MiB with
 *                         nvshmemx_putmem_block, then thread 0 does nvshmem_fence and adds 1 to
 *                         PE 1's counter; PE 1 acknowledges each complete 256 MiB. Time per
 *                         256 MiB (including that acknowledgement) and GB/s.
 *
 * Measurement (SPEC "Performance"): two warm-up runs, then the iteration count is scaled so one
 * sample takes about 50 ms (5 ms with --quick); >= 5 samples, the median is reported (min and max
 * are printed too). Data: random, never-zero bytes generated on the host (bench_fill_random, a new
 * seed per measurement) and copied to the source; the destination and a GUARD after it are
 * poisoned with zeros before the timed runs, and after them the destination must equal the
 * sender's bytes (regenerated from its seed) and the guard must still be zero (byte compare on the
 * host). Signal words are never reset: every value only grows, and both PEs advance the same
 * counters, so no barrier is needed between kernels.
 *
 * Output: a table on stdout (rank 0); --csv FILE: impl,test,bytes,threads,blocks,median_us,gbps,
 * verified. Options: --quick, --max-bytes N (largest ping-pong / stream size; also caps the
 * all-blocks total), --repeats N, --same-gpu (try 2 PEs on one GPU anyway), --csv FILE.
 * Exit status: 0; 1 when a check or a call failed; 2 for bad usage (not exactly 2 processes);
 * 77 without a GPU, or with one GPU for both PEs (NVSHMEM runs 2 PEs on one GPU concurrently only
 * under CUDA MPS: without it the two spinning kernels would be time-sliced, and the latency would
 * measure the scheduler).
 * Run: scripts/run-nvshmem-bench.sh, i.e. mpirun -n 2 --bind-to none bench_nvshmem --csv FILE.
 * NVLink multicast (NVLS) is never used: NVSHMEM_DISABLE_NVLS=1 is set here unless already set. */

/* Open MPI's and MPICH's C++ bindings are not wanted in a .cu file: the C API is enough. */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1

#include <cuda_runtime.h>
#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define THREADS 128            /* threads of the one-block tests (the SPEC's peer row) */
#define ACK_EVERY 8            /* stream: PE 1 acknowledges every 8th put (and the last) */
#define WINDOW 32              /* stream: at most 32 puts unacknowledged */
#define GUARD 256              /* bytes after each destination that nobody may write */
#define MAX_REPEATS 64
#define BW_TOTAL ((size_t)256 << 20)
#define MAX_ITERS 100000000L

/* Signal words, one per 128-byte line so that polling one does not share a line with another. */
enum { SIG_PP, SIG_READY, SIG_DATA, SIG_ACK, SIG_CNT, SIG_COUNT };
#define SIG_STRIDE 16 /* uint64_t words = 128 bytes */

/* ---- checks: print file:line and take the whole job down (a peer may be spinning in a kernel
 * waiting for this process, and MPI_Abort makes mpirun end it) -------------------------------- */

static void die(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    fflush(stdout);
    fflush(stderr);
    if (init && !fin)
        MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

#define CK_CUDA(call)                                                                          \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "bench_nvshmem: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,       \
                    cudaGetErrorString(e_));                                                   \
            die();                                                                             \
        }                                                                                      \
    } while (0)

#define CK_MPI(call)                                                                           \
    do {                                                                                       \
        int r_ = (call);                                                                       \
        if (r_ != MPI_SUCCESS) {                                                               \
            char s_[MPI_MAX_ERROR_STRING];                                                     \
            int n_ = 0;                                                                        \
            MPI_Error_string(r_, s_, &n_);                                                     \
            fprintf(stderr, "bench_nvshmem: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, s_);  \
            die();                                                                             \
        }                                                                                      \
    } while (0)

/* NVSHMEM host calls return 0 on success. */
#define CK_SHMEM(call)                                                                         \
    do {                                                                                       \
        int r_ = (call);                                                                       \
        if (r_ != 0) {                                                                         \
            fprintf(stderr, "bench_nvshmem: %s:%d: %s returned %d\n", __FILE__, __LINE__,      \
                    #call, r_);                                                                \
            die();                                                                             \
        }                                                                                      \
    } while (0)

#define CK_PTR(p, what)                                                                        \
    do {                                                                                       \
        if (!(p)) {                                                                            \
            fprintf(stderr, "bench_nvshmem: %s:%d: %s failed\n", __FILE__, __LINE__, what);    \
            die();                                                                             \
        }                                                                                      \
    } while (0)

/* ---- kernels --------------------------------------------------------------------------------- */

/* The GPU's nanosecond clock, common to all SMs (clock64 is per SM and stops nowhere useful). */
__device__ static __forceinline__ unsigned long long gtimer(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* iters + 1 round trips; round 0 is the untimed handshake. Signal values seq0+1 .. seq0+iters+1. */
__global__ void pingpong_kernel(char *dst, const char *src, size_t bytes, uint64_t *sig,
                                uint64_t seq0, long iters, int mype, int peer,
                                unsigned long long *ns)
{
    unsigned long long t0 = 0;
    for (long i = 0; i <= iters; i++) {
        uint64_t s = seq0 + 1 + (uint64_t)i;
        if (mype == 0) {
            nvshmemx_putmem_signal_block(dst, src, bytes, sig, s, NVSHMEM_SIGNAL_SET, peer);
            /* One thread polls: 128 threads spinning on one word only add traffic. */
            if (threadIdx.x == 0)
                nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, s);
            __syncthreads();
        } else {
            if (threadIdx.x == 0)
                nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, s);
            __syncthreads();
            nvshmemx_putmem_signal_block(dst, src, bytes, sig, s, NVSHMEM_SIGNAL_SET, peer);
        }
        if (i == 0)
            t0 = gtimer();
    }
    if (mype == 0 && threadIdx.x == 0)
        *ns = gtimer() - t0;
}

/* PE 0: count puts-with-signal (data signal data0+1 .. data0+count), at most WINDOW ahead of PE 1's
 * acknowledgements (ack0 + number of puts received). */
__global__ void stream_send_kernel(char *dst, const char *src, size_t bytes, long count,
                                   uint64_t *data_sig, uint64_t *ack_sig, uint64_t *ready_sig,
                                   uint64_t data0, uint64_t ack0, uint64_t epoch, int peer,
                                   unsigned long long *ns)
{
    /* Start the clock only once PE 1's kernel runs: its launch may come later than ours. */
    if (threadIdx.x == 0)
        nvshmem_signal_wait_until(ready_sig, NVSHMEM_CMP_GE, epoch);
    __syncthreads();
    unsigned long long t0 = gtimer();
    for (long i = 1; i <= count; i++) {
        if (i > WINDOW) {
            /* Acknowledgements come every ACK_EVERY puts: this waits for the first one at or
             * after put i - WINDOW, which was sent long ago, so it cannot deadlock. */
            if (threadIdx.x == 0)
                nvshmem_signal_wait_until(ack_sig, NVSHMEM_CMP_GE, ack0 + (uint64_t)(i - WINDOW));
            __syncthreads();
        }
        nvshmemx_putmem_signal_block(dst, src, bytes, data_sig, data0 + (uint64_t)i,
                                     NVSHMEM_SIGNAL_SET, peer);
    }
    if (threadIdx.x == 0) {
        nvshmem_signal_wait_until(ack_sig, NVSHMEM_CMP_GE, ack0 + (uint64_t)count);
        *ns = gtimer() - t0;
    }
}

/* PE 1, one thread: says ready, then acknowledges every ACK_EVERY-th put and the last. */
__global__ void stream_recv_kernel(uint64_t *data_sig, uint64_t *ack_sig, uint64_t *ready_sig,
                                   long count, uint64_t data0, uint64_t ack0, uint64_t epoch,
                                   int peer)
{
    nvshmemx_signal_op(ready_sig, epoch, NVSHMEM_SIGNAL_SET, peer);
    for (long j = 0; j < count;) {
        j = j + ACK_EVERY < count ? j + ACK_EVERY : count;
        nvshmem_signal_wait_until(data_sig, NVSHMEM_CMP_GE, data0 + (uint64_t)j);
        nvshmemx_signal_op(ack_sig, ack0 + (uint64_t)j, NVSHMEM_SIGNAL_SET, peer);
    }
}

/* PE 0, one block per SM: reps rounds of `total` bytes, each block its slice (16-byte aligned, the
 * last block takes the remainder), then fence + add 1 to PE 1's counter; a block starts the next
 * round only after PE 1 acknowledged the whole round (ack0 + r), so each round is a complete,
 * delivered 256 MiB. */
__global__ void allblocks_send_kernel(char *dst, const char *src, size_t total, long reps,
                                      uint64_t *cnt_sig, uint64_t *ack_sig, uint64_t *ready_sig,
                                      uint64_t ack0, uint64_t epoch, int peer,
                                      unsigned long long *ns)
{
    size_t slice = (total / gridDim.x) & ~(size_t)15;
    size_t off = slice * blockIdx.x;
    size_t len = blockIdx.x == gridDim.x - 1 ? total - off : slice;
    if (threadIdx.x == 0)
        nvshmem_signal_wait_until(ready_sig, NVSHMEM_CMP_GE, epoch);
    __syncthreads();
    unsigned long long t0 = gtimer();
    for (long r = 1; r <= reps; r++) {
        /* Ends with a block barrier, so thread 0's fence below orders every thread's stores
         * (fences are cumulative) before the counter update. */
        nvshmemx_putmem_block(dst + off, src + off, len, peer);
        if (threadIdx.x == 0) {
            nvshmem_fence();
            nvshmemx_signal_op(cnt_sig, 1, NVSHMEM_SIGNAL_ADD, peer);
            nvshmem_signal_wait_until(ack_sig, NVSHMEM_CMP_GE, ack0 + (uint64_t)r);
        }
        __syncthreads();
    }
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *ns = gtimer() - t0;
}

/* PE 1, one thread: ready, then acknowledges each round once all nblocks blocks have added 1. */
__global__ void allblocks_recv_kernel(uint64_t *cnt_sig, uint64_t *ack_sig, uint64_t *ready_sig,
                                      long reps, int nblocks, uint64_t cnt0, uint64_t ack0,
                                      uint64_t epoch, int peer)
{
    nvshmemx_signal_op(ready_sig, epoch, NVSHMEM_SIGNAL_SET, peer);
    for (long r = 1; r <= reps; r++) {
        nvshmem_signal_wait_until(cnt_sig, NVSHMEM_CMP_GE, cnt0 + (uint64_t)r * (uint64_t)nblocks);
        nvshmemx_signal_op(ack_sig, ack0 + (uint64_t)r, NVSHMEM_SIGNAL_SET, peer);
    }
}

/* ---- host state ------------------------------------------------------------------------------ */

typedef struct {
    int mype, peer, nblocks;
    size_t cap;                 /* bytes usable in src and dst (each has GUARD more) */
    char *src, *dst;            /* symmetric */
    uint64_t *sig;              /* symmetric, SIG_COUNT words SIG_STRIDE apart */
    unsigned long long *d_ns;   /* PE 0's kernels write the timed nanoseconds here */
    unsigned char *h_src, *h_expect, *h_dst;
    /* Signal values only grow; both PEs advance these alike (see the file comment). */
    uint64_t pp_seq, data_seq, ack_seq, cnt_seq, ready_epoch;
    uint64_t measurement;       /* seeds: a new data set per measurement */
    double target_s;
    int repeats;
    FILE *csv;
    int failures;
} ctx_t;

typedef struct {
    double med_s, min_s, max_s; /* seconds per iteration */
    long iters;
} meas_t;

static uint64_t *sigw(ctx_t *c, int which) { return c->sig + (size_t)which * SIG_STRIDE; }

/* After both PEs launched their kernel: waits for it, and hands PE 0's time to both PEs so that
 * they take the same decisions (iteration counts) from it. */
static double finish_run(ctx_t *c)
{
    CK_CUDA(cudaGetLastError());
    CK_CUDA(cudaDeviceSynchronize());
    double s = 0;
    if (c->mype == 0) {
        unsigned long long ns = 0;
        CK_CUDA(cudaMemcpy(&ns, c->d_ns, sizeof ns, cudaMemcpyDeviceToHost));
        s = (double)ns * 1e-9;
    }
    CK_MPI(MPI_Bcast(&s, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    return s;
}

typedef double (*run_fn)(ctx_t *c, size_t bytes, long iters);

static double pingpong_run(ctx_t *c, size_t bytes, long iters)
{
    pingpong_kernel<<<1, THREADS>>>(c->dst, c->src, bytes, sigw(c, SIG_PP), c->pp_seq, iters,
                                    c->mype, c->peer, c->d_ns);
    c->pp_seq += (uint64_t)iters + 1;
    return finish_run(c);
}

static double stream_run(ctx_t *c, size_t bytes, long count)
{
    c->ready_epoch++;
    if (c->mype == 0)
        stream_send_kernel<<<1, THREADS>>>(c->dst, c->src, bytes, count, sigw(c, SIG_DATA),
                                           sigw(c, SIG_ACK), sigw(c, SIG_READY), c->data_seq,
                                           c->ack_seq, c->ready_epoch, c->peer, c->d_ns);
    else
        stream_recv_kernel<<<1, 1>>>(sigw(c, SIG_DATA), sigw(c, SIG_ACK), sigw(c, SIG_READY),
                                     count, c->data_seq, c->ack_seq, c->ready_epoch, c->peer);
    c->data_seq += (uint64_t)count;
    c->ack_seq += (uint64_t)count;
    return finish_run(c);
}

static double allblocks_run(ctx_t *c, size_t total, long reps)
{
    c->ready_epoch++;
    if (c->mype == 0) {
        uint64_t *cnt = sigw(c, SIG_CNT), *ack = sigw(c, SIG_ACK), *ready = sigw(c, SIG_READY);
        void *args[] = {&c->dst, &c->src, &total, &reps, &cnt, &ack, &ready,
                        &c->ack_seq, &c->ready_epoch, &c->peer, &c->d_ns};
        /* Cooperative: every block polls for the acknowledgement, so all must be resident at
         * once; the launch fails instead of hanging when they cannot be. */
        CK_CUDA(cudaLaunchCooperativeKernel((const void *)allblocks_send_kernel,
                                            dim3((unsigned)c->nblocks), dim3(THREADS), args, 0,
                                            0));
    } else {
        allblocks_recv_kernel<<<1, 1>>>(sigw(c, SIG_CNT), sigw(c, SIG_ACK), sigw(c, SIG_READY),
                                        reps, c->nblocks, c->cnt_seq, c->ack_seq, c->ready_epoch,
                                        c->peer);
    }
    c->cnt_seq += (uint64_t)reps * (uint64_t)c->nblocks;
    c->ack_seq += (uint64_t)reps;
    return finish_run(c);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Warm-up, calibration (iterations x8 until a run takes >= a tenth of the target), then
 * c->repeats samples of about target_s each. Both PEs run the same sequence. */
static void measure(ctx_t *c, run_fn run, size_t bytes, meas_t *m)
{
    run(c, bytes, 1);
    run(c, bytes, 1);
    long it = 1;
    double t = run(c, bytes, it);
    while (t < c->target_s / 10 && it < MAX_ITERS) {
        it = it * 8 < MAX_ITERS ? it * 8 : MAX_ITERS;
        t = run(c, bytes, it);
    }
    if (t <= 0)
        t = 1e-9;
    double want = (double)it * c->target_s / t;
    m->iters = want < 1 ? 1 : want > (double)MAX_ITERS ? MAX_ITERS : (long)(want + 0.5);
    double v[MAX_REPEATS];
    for (int k = 0; k < c->repeats; k++)
        v[k] = run(c, bytes, m->iters) / (double)m->iters;
    qsort(v, (size_t)c->repeats, sizeof v[0], cmp_double);
    m->min_s = v[0];
    m->max_s = v[c->repeats - 1];
    m->med_s = c->repeats % 2 ? v[c->repeats / 2]
                              : 0.5 * (v[c->repeats / 2 - 1] + v[c->repeats / 2]);
}

/* SplitMix64 of (measurement, pe): a different data set for every measurement and sender. */
static uint64_t seed_of(uint64_t measurement, int pe)
{
    uint64_t z = measurement * 0x9e3779b97f4a7c15ull + (uint64_t)pe * 0xbf58476d1ce4e5b9ull + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* New random source bytes, destination + guard poisoned with zeros (the data have no zero byte),
 * then a barrier: the peer's puts into our destination may start only after our poison. */
static void prepare(ctx_t *c, size_t bytes)
{
    c->measurement++;
    bench_fill_random(c->h_src, bytes, seed_of(c->measurement, c->mype));
    if (bytes)
        CK_CUDA(cudaMemcpy(c->src, c->h_src, bytes, cudaMemcpyHostToDevice));
    CK_CUDA(cudaMemset(c->dst, 0, bytes + GUARD));
    CK_CUDA(cudaDeviceSynchronize());
    CK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* After the timed runs: a PE that received checks its destination against the peer's bytes
 * (regenerated from the peer's seed) and its guard against the poison. Returns 1 when every PE
 * is content. */
static int verify(ctx_t *c, size_t bytes, int received, const char *test)
{
    int ok = 1;
    if (received) {
        CK_CUDA(cudaMemcpy(c->h_dst, c->dst, bytes + GUARD, cudaMemcpyDeviceToHost));
        bench_fill_random(c->h_expect, bytes, seed_of(c->measurement, c->peer));
        if (memcmp(c->h_dst, c->h_expect, bytes) != 0) {
            size_t i = 0;
            while (i < bytes && c->h_dst[i] == c->h_expect[i])
                i++;
            fprintf(stderr, "bench_nvshmem: PE %d: %s %zu B: byte %zu is 0x%02x, expected 0x%02x\n",
                    c->mype, test, bytes, i, c->h_dst[i], c->h_expect[i]);
            ok = 0;
        }
        size_t g = bench_find_not(c->h_dst + bytes, GUARD, 0);
        if (g != GUARD) {
            fprintf(stderr, "bench_nvshmem: PE %d: %s %zu B: guard byte %zu written (0x%02x)\n",
                    c->mype, test, bytes, g, c->h_dst[bytes + g]);
            ok = 0;
        }
    }
    int all = 0;
    CK_MPI(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    return all;
}

/* One result line (table on stdout, CSV row), rank 0 prints. scale turns seconds per iteration
 * into the time reported (0.5: one-way from a round trip); GB/s is bytes over that time. */
static void report(ctx_t *c, const char *test, size_t bytes, int threads, int blocks,
                   const meas_t *m, double scale, int ok)
{
    if (!ok)
        c->failures++;
    if (c->mype != 0)
        return;
    double med = m->med_s * scale, lo = m->min_s * scale, hi = m->max_s * scale;
    double gbps = bytes && med > 0 ? bench_gbps(bytes, med) : 0.0;
    char sz[32];
    printf("%-22s %8s %7d %6d %11.3f %10.3f %10.3f %9.2f %10ld  %s\n", test,
           bench_format_size(bytes, sz, sizeof sz), threads, blocks, med * 1e6, lo * 1e6,
           hi * 1e6, gbps, m->iters, ok ? "yes" : "NO");
    fflush(stdout);
    if (c->csv) {
        fprintf(c->csv, "nvshmem,%s,%zu,%d,%d,%.4f,%.3f,%s\n", test, bytes, threads, blocks,
                med * 1e6, gbps, ok ? "yes" : "no");
        fflush(c->csv);
    }
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -n 2 --bind-to none bench_nvshmem [--quick] [--max-bytes N] "
            "[--repeats N] [--same-gpu] [--csv FILE]\n"
            "  --quick        5 ms per sample, sizes up to 1M (unless --max-bytes)\n"
            "  --max-bytes N  largest ping-pong / stream size (default 64M); also caps the\n"
            "                 all-blocks total (default 256M)\n"
            "  --repeats N    samples per measurement, median reported (default 7, quick 5)\n"
            "  --same-gpu     run both PEs on one GPU anyway (needs CUDA MPS to mean anything)\n"
            "  --csv FILE     rows impl,test,bytes,threads,blocks,median_us,gbps,verified\n");
}

int main(int argc, char **argv)
{
    const char *csv_path = NULL;
    int quick = 0, same_gpu = 0, repeats = 0;
    size_t max_bytes = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            quick = 1;
        } else if (strcmp(a, "--same-gpu") == 0) {
            same_gpu = 1;
        } else if (strcmp(a, "--csv") == 0 && v) {
            csv_path = v, i++;
        } else if (strcmp(a, "--max-bytes") == 0 && v) {
            if (bench_parse_size(v, &max_bytes) != 0 || max_bytes == 0) {
                fprintf(stderr, "bench_nvshmem: bad --max-bytes '%s'\n", v);
                return 2;
            }
            i++;
        } else if (strcmp(a, "--repeats") == 0 && v) {
            repeats = atoi(v), i++;
            if (repeats < 1 || repeats > MAX_REPEATS) {
                fprintf(stderr, "bench_nvshmem: --repeats must be 1..%d\n", MAX_REPEATS);
                return 2;
            }
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "bench_nvshmem: bad argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }

    /* Never NVLink multicast (not available on the lent machines); must be set before NVSHMEM
     * reads its environment. */
    setenv("NVSHMEM_DISABLE_NVLS", "1", 0);

    CK_MPI(MPI_Init(&argc, &argv));
    int rank = 0, nranks = 0, local_rank = 0, local_size = 0;
    CK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
    MPI_Comm local;
    CK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local));
    CK_MPI(MPI_Comm_rank(local, &local_rank));
    CK_MPI(MPI_Comm_size(local, &local_size));
    CK_MPI(MPI_Comm_free(&local));

    /* A GPU first: without one (or without a driver) say so and skip, on every rank alike. */
    int ndev = 0, min_dev = 0;
    cudaError_t de = cudaGetDeviceCount(&ndev);
    if (de != cudaSuccess)
        ndev = 0;
    CK_MPI(MPI_Allreduce(&ndev, &min_dev, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (min_dev == 0) {
        if (rank == 0)
            printf("SKIP: bench_nvshmem: no usable GPU (%s)\n",
                   de != cudaSuccess ? cudaGetErrorString(de) : "no device on some rank");
        MPI_Finalize();
        return 77;
    }
    if (nranks != 2) {
        if (rank == 0)
            fprintf(stderr, "bench_nvshmem: needs exactly 2 processes (mpirun -n 2), got %d\n",
                    nranks);
        MPI_Finalize();
        return 2;
    }
    if (local_size > ndev && !same_gpu) {
        if (rank == 0)
            printf("SKIP: bench_nvshmem: %d PEs on this node but %d GPU(s): NVSHMEM runs 2 PEs "
                   "on one GPU concurrently only under CUDA MPS, and the ping-pong needs both "
                   "kernels running at once (--same-gpu to try anyway)\n",
                   local_size, ndev);
        MPI_Finalize();
        return 77;
    }
    /* One GPU per local rank, chosen before NVSHMEM initialises (it uses the current device). */
    CK_CUDA(cudaSetDevice(local_rank % ndev));
    CK_CUDA(cudaFree(0));

    ctx_t c;
    memset(&c, 0, sizeof c);
    c.target_s = quick ? 0.005 : 0.050;
    c.repeats = repeats ? repeats : quick ? 5 : 7;
    int explicit_max = max_bytes != 0;
    if (!explicit_max)
        max_bytes = quick ? ((size_t)1 << 20) : ((size_t)64 << 20);
    size_t bw_total = explicit_max || quick ? (max_bytes < BW_TOTAL ? max_bytes : BW_TOTAL)
                                            : BW_TOTAL;
    static const size_t pp_sizes[] = {0, 8, 64, 1 << 10, 4 << 10, 64 << 10, 256 << 10, 1 << 20,
                                      4 << 20, 16 << 20, 64 << 20};
    static const size_t st_sizes[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
    c.cap = bw_total;
    for (size_t i = 0; i < sizeof pp_sizes / sizeof pp_sizes[0]; i++)
        if (pp_sizes[i] <= max_bytes && pp_sizes[i] > c.cap)
            c.cap = pp_sizes[i];

    /* The default symmetric heap (1 GiB) holds 2 x 256 MiB; ask for more only when needed. */
    size_t need = 2 * (c.cap + GUARD) + ((size_t)64 << 20);
    if (need > ((size_t)1 << 30) && !getenv("NVSHMEM_SYMMETRIC_SIZE")) {
        char buf[32];
        snprintf(buf, sizeof buf, "%zu", need);
        setenv("NVSHMEM_SYMMETRIC_SIZE", buf, 0);
    }

    /* Unique-ID bootstrap: rank 0 makes the ID, MPI hands it to the others. */
    nvshmemx_uniqueid_t uid = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (rank == 0)
        CK_SHMEM(nvshmemx_get_uniqueid(&uid));
    CK_MPI(MPI_Bcast(&uid, (int)sizeof uid, MPI_BYTE, 0, MPI_COMM_WORLD));
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    CK_SHMEM(nvshmemx_set_attr_uniqueid_args(rank, nranks, &uid, &attr));
    CK_SHMEM(nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr));
    c.mype = nvshmem_my_pe();
    c.peer = 1 - c.mype;
    if (nvshmem_n_pes() != 2 || c.mype != rank) {
        fprintf(stderr, "bench_nvshmem: rank %d: NVSHMEM says PE %d of %d\n", rank, c.mype,
                nvshmem_n_pes());
        die();
    }

    c.src = (char *)nvshmem_malloc(c.cap + GUARD);
    CK_PTR(c.src, "nvshmem_malloc(src)");
    c.dst = (char *)nvshmem_malloc(c.cap + GUARD);
    CK_PTR(c.dst, "nvshmem_malloc(dst)");
    c.sig = (uint64_t *)nvshmem_malloc(SIG_COUNT * SIG_STRIDE * sizeof(uint64_t));
    CK_PTR(c.sig, "nvshmem_malloc(signals)");
    CK_CUDA(cudaMemset(c.sig, 0, SIG_COUNT * SIG_STRIDE * sizeof(uint64_t)));
    CK_CUDA(cudaMalloc((void **)&c.d_ns, sizeof *c.d_ns));
    CK_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all(); /* both PEs' signal words are zero before anyone signals */
    c.h_src = (unsigned char *)bench_alloc(c.cap + GUARD);
    c.h_expect = (unsigned char *)bench_alloc(c.cap + GUARD);
    c.h_dst = (unsigned char *)bench_alloc(c.cap + GUARD);
    CK_PTR(c.h_src && c.h_expect && c.h_dst, "bench_alloc");

    /* Both PEs must agree on the grid of the all-blocks test (the receiver counts its blocks). */
    int dev = 0, sms = 0;
    cudaDeviceProp prop;
    CK_CUDA(cudaGetDevice(&dev));
    CK_CUDA(cudaGetDeviceProperties(&prop, dev));
    CK_MPI(MPI_Allreduce(&prop.multiProcessorCount, &sms, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    c.nblocks = sms;
    int occ = 0;
    CK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, allblocks_send_kernel, THREADS, 0));
    if (occ < 1) {
        fprintf(stderr, "bench_nvshmem: allblocks_send_kernel does not fit on an SM\n");
        die();
    }

    /* Header: GPUs of both PEs, NVSHMEM library and whether the peer is load/store reachable. */
    char mine[320], names[2][320];
    snprintf(mine, sizeof mine, "%.255s (device %d, %d SMs)", prop.name, dev,
             prop.multiProcessorCount);
    CK_MPI(MPI_Gather(mine, (int)sizeof mine, MPI_CHAR, &names[0][0], (int)sizeof mine, MPI_CHAR,
                      0, MPI_COMM_WORLD));
    int p2p = nvshmem_ptr(c.dst, c.peer) != NULL, p2p_all = 0;
    CK_MPI(MPI_Allreduce(&p2p, &p2p_all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (rank == 0) {
        char lib[NVSHMEM_MAX_NAME_LEN] = "";
        nvshmem_info_get_name(lib);
        bench_print_environment(stdout, argc, argv);
        printf("# PE 0: %s; PE 1: %s\n", names[0], names[1]);
        printf("# %s (headers %s), unique-ID bootstrap, NVSHMEM_DISABLE_NVLS=%s, peer %s\n", lib,
               NVSHMEM_VENDOR_STRING, getenv("NVSHMEM_DISABLE_NVLS"),
               p2p_all ? "load/store reachable (P2P)" : "NOT P2P-reachable (proxy transport)");
        printf("# median of %d samples of ~%.0f ms each after warm-up; pingpong: one-way = round "
               "trip / 2; stream: per put; allblocks: per %zu B round\n",
               c.repeats, c.target_s * 1e3, bw_total);
        printf("%-22s %8s %7s %6s %11s %10s %10s %9s %10s  %s\n", "test", "bytes", "threads",
               "blocks", "median_us", "min_us", "max_us", "GB/s", "iters", "verified");
        if (csv_path) {
            static const char *const cols[] = {"impl",   "test",      "bytes", "threads",
                                               "blocks", "median_us", "gbps",  "verified"};
            c.csv = bench_csv_open(csv_path, cols, 8);
            CK_PTR(c.csv, "opening the CSV file");
        }
    }

    /* 1. Ping-pong latency of put-with-signal; both directions carry data, both are checked. */
    for (size_t i = 0; i < sizeof pp_sizes / sizeof pp_sizes[0]; i++) {
        size_t b = pp_sizes[i];
        if (b > max_bytes)
            continue;
        meas_t m;
        prepare(&c, b);
        measure(&c, pingpong_run, b, &m);
        int ok = verify(&c, b, 1, "pingpong");
        report(&c, "pingpong_put_signal", b, THREADS, 1, &m, 0.5, ok);
    }
    /* 2a. One block streaming puts-with-signal to PE 1. */
    for (size_t i = 0; i < sizeof st_sizes / sizeof st_sizes[0]; i++) {
        size_t b = st_sizes[i];
        if (b > max_bytes)
            continue;
        meas_t m;
        prepare(&c, b);
        measure(&c, stream_run, b, &m);
        int ok = verify(&c, b, c.mype == 1, "stream");
        report(&c, "stream_put_signal", b, THREADS, 1, &m, 1.0, ok);
    }
    /* 2b. All SMs putting one 256 MiB buffer. */
    {
        meas_t m;
        prepare(&c, bw_total);
        measure(&c, allblocks_run, bw_total, &m);
        int ok = verify(&c, bw_total, c.mype == 1, "allblocks");
        report(&c, "allblocks_put_block", bw_total, THREADS, c.nblocks, &m, 1.0, ok);
    }

    if (c.csv)
        bench_csv_close(c.csv);
    CK_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    nvshmem_free(c.sig);
    nvshmem_free(c.dst);
    nvshmem_free(c.src);
    CK_CUDA(cudaFree(c.d_ns));
    free(c.h_src);
    free(c.h_expect);
    free(c.h_dst);
    nvshmem_finalize();
    int failures = c.failures;
    if (rank == 0)
        printf("bench_nvshmem: %s\n", failures ? "VERIFICATION FAILED" : "all data verified");
    MPI_Finalize();
    return failures ? 1 : 0;
}
