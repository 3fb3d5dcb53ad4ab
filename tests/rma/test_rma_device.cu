/* Device-initiated notified RMA on the GPUs of one process (every visible GPU, or GCOMM_DEVICES):
 * put/get with and without notification, wildcard matching, overlapping windows, barriers, the
 * stress of millions of notifications from random sources and tags, and the error paths (a put
 * outside a window, a grid that cannot be resident, a wait that times out).
 *
 * Usage: test_rma_device [all | timeout] [stress notifications]. "timeout" runs only the wait that
 * can never be satisfied (run it with a short GCOMM_TIMEOUT_MS). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gcomm/device.cuh"
#include "gcomm/gcomm.h"
#include "testutil.h"

#define CUDA_OK(call)                                                                          \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                      \
                    cudaGetErrorString(e_));                                                   \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

/* Counts a failed device check into errs[0] and keeps the line of the first in errs[1]. */
#define DCHECK(cond, errs)                                                                     \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            atomicAdd((errs), 1u);                                                             \
            atomicCAS((errs) + 1, 0u, (unsigned)__LINE__);                                     \
        }                                                                                      \
    } while (0)

__host__ __device__ static inline uint64_t mix(uint64_t x)
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

__global__ void k_ring(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int rank, size, lrank;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_size(&ctx, GCOMM_COMM_WORLD, &size);
    gcomm_comm_rank(&ctx, GCOMM_COMM_DEVICE, &lrank);
    /* per rank: [RING_ITERS messages received][one message to send] */
    uint64_t *mine = buf + (size_t)lrank * (RING_ITERS + 1) * RING_WORDS;
    uint64_t *send = mine + RING_ITERS * RING_WORDS;
    gcomm_win_t win;
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_WORLD, mine, RING_ITERS * RING_WORDS * 8, &win) ==
               GCOMM_SUCCESS, errs);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int it = 0; it < RING_ITERS; it++) {
        for (int w = threadIdx.x; w < RING_WORDS; w += blockDim.x)
            send[w] = mix(((uint64_t)rank << 32) ^ ((uint64_t)it << 16) ^ w);
        __syncthreads();
        DCHECK(gcomm_put_notify(&ctx, win, next, (size_t)it * RING_WORDS * 8, RING_WORDS * 8,
                                send, it) == GCOMM_SUCCESS, errs);
        /* the notification of iteration it from prev, and its data */
        DCHECK(gcomm_wait_notifications(&ctx, win, prev, it, 1) == GCOMM_SUCCESS, errs);
        for (int w = threadIdx.x; w < RING_WORDS; w += blockDim.x)
            DCHECK(mine[it * RING_WORDS + w] == mix(((uint64_t)prev << 32) ^ ((uint64_t)it << 16) ^ w),
                   errs);
    }
    int flag = 1;
    DCHECK(gcomm_test_notifications(&ctx, win, GCOMM_ANY_SOURCE, GCOMM_ANY_TAG, 1, &flag) ==
               GCOMM_SUCCESS && flag == 0, errs);
    DCHECK(gcomm_win_free(&ctx, &win) == GCOMM_SUCCESS && win == GCOMM_WIN_NULL, errs);
    gcomm_finish(&ctx);
}

/* ---- gather with wildcards: every rank put_notifies its id to rank 0 with tag rank % 3 ---- */

__global__ void k_gather(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int rank, size;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_size(&ctx, GCOMM_COMM_WORLD, &size);
    __shared__ uint64_t word;
    gcomm_win_t win;
    /* rank 0 exposes one word per rank; the others expose nothing (0 bytes) */
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_WORLD, rank == 0 ? buf : NULL,
                            rank == 0 ? (size_t)size * 8 : 0, &win) == GCOMM_SUCCESS, errs);
    if (rank != 0) {
        if (threadIdx.x == 0) word = mix(rank);
        __syncthreads();
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
        for (int r = 1 + threadIdx.x; r < size; r += blockDim.x) DCHECK(buf[r] == mix(r), errs);
    }
    gcomm_win_free(&ctx, &win);
    gcomm_finish(&ctx);
}

/* ---- get and get_notify; barriers between phases ---- */

__global__ void k_get(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int rank, size, lrank;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_size(&ctx, GCOMM_COMM_WORLD, &size);
    gcomm_comm_rank(&ctx, GCOMM_COMM_DEVICE, &lrank);
    const int words = 300; /* not a multiple of 16 bytes per thread: ragged ends */
    uint64_t *mine = buf + (size_t)lrank * 2 * words, *got = mine + words;
    gcomm_win_t win;
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_WORLD, mine, words * 8, &win) == GCOMM_SUCCESS, errs);
    for (int phase = 0; phase < 3; phase++) {
        for (int w = threadIdx.x; w < words; w += blockDim.x)
            mine[w] = mix(((uint64_t)rank << 20) ^ ((uint64_t)phase << 12) ^ w);
        DCHECK(gcomm_barrier(&ctx, GCOMM_COMM_WORLD) == GCOMM_SUCCESS, errs);
        int from = (rank + 1 + phase) % size;
        DCHECK(gcomm_get(&ctx, win, from, 8, (words - 1) * 8, got) == GCOMM_SUCCESS, errs);
        for (int w = threadIdx.x; w < words - 1; w += blockDim.x)
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

__global__ void k_overlap(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int lrank, lsize;
    gcomm_comm_rank(&ctx, GCOMM_COMM_DEVICE, &lrank);
    gcomm_comm_size(&ctx, GCOMM_COMM_DEVICE, &lsize);
    const int words = 128;
    gcomm_win_t win; /* every rank of the GPU exposes the whole array */
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_DEVICE, buf, (size_t)lsize * words * 8, &win) ==
               GCOMM_SUCCESS, errs);
    uint64_t *slice = buf + (size_t)lrank * words;
    for (int w = threadIdx.x; w < words; w += blockDim.x) slice[w] = mix(lrank * 1000 + w);
    __syncthreads();
    int next = (lrank + 1) % lsize;
    /* same address at origin and target: no copy, but a notification */
    DCHECK(gcomm_put_notify(&ctx, win, next, (size_t)lrank * words * 8, words * 8, slice, 1) ==
               GCOMM_SUCCESS, errs);
    DCHECK(gcomm_wait_notifications(&ctx, win, (lrank + lsize - 1) % lsize, 1, 1) == GCOMM_SUCCESS,
           errs);
    for (int w = threadIdx.x; w < words; w += blockDim.x) DCHECK(slice[w] == mix(lrank * 1000 + w), errs);
    gcomm_win_free(&ctx, &win);
    gcomm_finish(&ctx);
}

/* ---- stress: senders notify random receivers with random tags; payload = message count ---- */

#define STRESS_RECEIVERS 4
#define STRESS_TAGS 8

__host__ __device__ static inline void stress_msg(int src, long i, int *rcv, int *tag)
{
    uint64_t h = mix(((uint64_t)src << 32) ^ (uint64_t)i);
    *rcv = (int)(h % STRESS_RECEIVERS);
    *tag = (int)((h >> 20) % STRESS_TAGS);
}

/* expect[r * STRESS_TAGS + t]: notifications receiver r gets with tag t (from the host). */
__global__ void k_stress(gcomm_param_t param, uint64_t *buf, long per_sender, const long *expect,
                         unsigned *errs)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int rank, size;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_size(&ctx, GCOMM_COMM_WORLD, &size);
    /* receivers (on GPU 0) expose one counter per sender: how many messages it sent them */
    gcomm_win_t win;
    int receiver = rank < STRESS_RECEIVERS;
    uint64_t *slots = buf + (size_t)rank * size;
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_WORLD, receiver ? slots : NULL,
                            receiver ? (size_t)size * 8 : 0, &win) == GCOMM_SUCCESS, errs);
    if (!receiver) {
        __shared__ uint64_t sent[STRESS_RECEIVERS];
        if (threadIdx.x < STRESS_RECEIVERS) sent[threadIdx.x] = 0;
        for (long i = 0; i < per_sender; i++) {
            int rcv, tag;
            stress_msg(rank, i, &rcv, &tag);
            __syncthreads();
            if (threadIdx.x == 0) sent[rcv]++;
            __syncthreads();
            if (gcomm_put_notify(&ctx, win, rcv, (size_t)rank * 8, 8, &sent[rcv], tag) !=
                GCOMM_SUCCESS) {
                DCHECK(0, errs);
                break;
            }
        }
    } else {
        /* Waiting for one tag while senders keep sending others would fill any finite list of
         * held notifications (and then stop the senders): test for a random tag, and when it is
         * not there, wait for the next notification of any tag. */
        long remaining[STRESS_TAGS], consumed = 0, total = 0, by_tag = 0;
        for (int t = 0; t < STRESS_TAGS; t++) total += remaining[t] = expect[rank * STRESS_TAGS + t];
        uint64_t rng = mix(rank + 12345);
        __shared__ unsigned long long sum;
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
            if (threadIdx.x == 0) sum = 0;
            __syncthreads();
            unsigned long long part = 0;
            for (int s = threadIdx.x; s < size; s += blockDim.x)
                part += ((volatile uint64_t *)slots)[s];
            atomicAdd(&sum, part);
            __syncthreads();
            DCHECK(sum >= (unsigned long long)consumed, errs);
            __syncthreads();
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

/* ---- errors ---- */

__global__ void k_outside(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int rank;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_win_t win;
    gcomm_win_create(&ctx, GCOMM_COMM_WORLD, buf, 64, &win); /* every rank: the GPU's first 64 B */
    __shared__ uint64_t data[2];
    if (threadIdx.x < 2) data[threadIdx.x] = 0x5555;
    __syncthreads();
    if (rank == 1) /* 16 bytes at offset 56 of a 64-byte window */
        DCHECK(gcomm_put(&ctx, win, 0, 56, 16, data) == GCOMM_ERR_WINDOW, errs);
    /* everybody else waits for a notification that never comes: the error must end it */
    if (rank != 1)
        DCHECK(gcomm_wait_notifications(&ctx, win, GCOMM_ANY_SOURCE, 3, 1) != GCOMM_SUCCESS, errs);
    gcomm_finish(&ctx);
}

__global__ void k_never(gcomm_param_t param, unsigned *errs)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int rank;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    if (rank == 0) { /* rank 0 waits in a barrier nobody else enters */
        int rc = gcomm_barrier(&ctx, GCOMM_COMM_WORLD);
        DCHECK(rc != GCOMM_SUCCESS, errs);
    } else /* the others wait for a notification nobody sends */
        DCHECK(gcomm_wait_notifications(&ctx, GCOMM_ANY_WIN, 0, 5, 2) != GCOMM_SUCCESS, errs);
    gcomm_finish(&ctx);
}

/* ---- host ---- */

static double gcommt_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    int n;
    int dev[GCOMM_MAX_GPUS];
    uint64_t *buf[GCOMM_MAX_GPUS];
    unsigned *errs[GCOMM_MAX_GPUS];
    size_t bytes;
} gpus_t;

static void zero_errs(gpus_t *g)
{
    for (int i = 0; i < g->n; i++) {
        CUDA_OK(cudaSetDevice(g->dev[i]));
        CUDA_OK(cudaMemset(g->errs[i], 0, 2 * sizeof(unsigned)));
        CUDA_OK(cudaMemset(g->buf[i], 0xA5, g->bytes)); /* poison */
    }
}

static unsigned sum_errs(gpus_t *g)
{
    unsigned total = 0;
    for (int i = 0; i < g->n; i++) {
        unsigned e[2];
        CUDA_OK(cudaSetDevice(g->dev[i]));
        CUDA_OK(cudaMemcpy(e, g->errs[i], sizeof(e), cudaMemcpyDeviceToHost));
        if (e[0]) fprintf(stderr, "GPU %d: %u device checks failed, the first at line %u\n", i, e[0], e[1]);
        total += e[0];
    }
    return total;
}

/* Launches kernel(param, buf[g], errs[g]) on every GPU; returns the launch status. */
static int run3(gpus_t *g, const void *kernel, int blocks, int threads)
{
    void *argv[GCOMM_MAX_GPUS][3];
    gcomm_launch_t l;
    memset(&l, 0, sizeof(l));
    l.kernel = kernel;
    l.blocks_per_gpu = blocks;
    l.threads_per_block = threads;
    for (int i = 0; i < g->n; i++) {
        argv[i][0] = NULL;
        argv[i][1] = &g->buf[i];
        argv[i][2] = &g->errs[i];
        l.args[i] = argv[i];
    }
    return gcomm_launch(&l);
}

static void run_case(gpus_t *g, const char *name, const void *kernel, int blocks, int threads)
{
    zero_errs(g);
    TEST_OK(run3(g, kernel, blocks, threads));
    unsigned e = sum_errs(g);
    TEST_CHECK(e == 0, "%s: %u failed device checks", name, e);
    printf("%-8s %d GPU(s) x %d blocks of %d threads: %s\n", name, g->n, blocks, threads,
           e ? "FAILED" : "ok");
}

static void test_stress(gpus_t *g, long total_notifications)
{
    int blocks = 64, ngpus = g->n, size = blocks * ngpus;
    int senders = size - STRESS_RECEIVERS;
    long per_sender = total_notifications / senders;
    long expect[STRESS_RECEIVERS * STRESS_TAGS] = {0};
    for (int s = STRESS_RECEIVERS; s < size; s++)
        for (long i = 0; i < per_sender; i++) {
            int r, t;
            stress_msg(s, i, &r, &t);
            expect[r * STRESS_TAGS + t]++;
        }
    long *d_expect;
    CUDA_OK(cudaSetDevice(g->dev[0]));
    CUDA_OK(cudaMalloc(&d_expect, sizeof(expect)));
    CUDA_OK(cudaMemcpy(d_expect, expect, sizeof(expect), cudaMemcpyHostToDevice));
    zero_errs(g);
    CUDA_OK(cudaSetDevice(g->dev[0]));
    CUDA_OK(cudaMemset(g->buf[0], 0, (size_t)STRESS_RECEIVERS * size * 8));
    void *argv[GCOMM_MAX_GPUS][5];
    gcomm_launch_t l;
    memset(&l, 0, sizeof(l));
    l.kernel = gcomm_kernel(k_stress);
    l.blocks_per_gpu = blocks;
    l.threads_per_block = 128;
    for (int i = 0; i < g->n; i++) {
        argv[i][0] = NULL;
        argv[i][1] = &g->buf[i];
        argv[i][2] = &per_sender;
        argv[i][3] = &d_expect;
        argv[i][4] = &g->errs[i];
        l.args[i] = argv[i];
    }
    double t0 = gcommt_now();
    TEST_OK(gcomm_launch(&l));
    double dt = gcommt_now() - t0;
    unsigned e = sum_errs(g);
    TEST_CHECK(e == 0, "stress: %u failed device checks", e);
    /* final counters: receiver r's slot s = messages s sent to r */
    uint64_t *slots = (uint64_t *)malloc((size_t)STRESS_RECEIVERS * size * 8);
    CUDA_OK(cudaSetDevice(g->dev[0]));
    CUDA_OK(cudaMemcpy(slots, g->buf[0], (size_t)STRESS_RECEIVERS * size * 8, cudaMemcpyDeviceToHost));
    long bad = 0;
    for (int s = STRESS_RECEIVERS; s < size; s++) {
        long cnt[STRESS_RECEIVERS] = {0};
        for (long i = 0; i < per_sender; i++) {
            int r, t;
            stress_msg(s, i, &r, &t);
            cnt[r]++;
        }
        for (int r = 0; r < STRESS_RECEIVERS; r++) bad += slots[(size_t)r * size + s] != (uint64_t)cnt[r];
    }
    TEST_CHECK(bad == 0, "stress: %ld final counters wrong", bad);
    printf("stress   %d GPU(s): %ld notifications from %d senders to %d receivers, %d tags: %s "
           "(%.2f s, %.2f M notifications/s)\n", g->n, per_sender * senders, senders,
           STRESS_RECEIVERS, STRESS_TAGS, (e || bad) ? "FAILED" : "ok", dt,
           per_sender * senders / dt * 1e-6);
    free(slots);
    cudaFree(d_expect);
}

static void test_errors(gpus_t *g)
{
    /* a put outside its window: an error naming rank, window and offset; nothing written */
    zero_errs(g);
    int rc = run3(g, gcomm_kernel(k_outside), 4, 64);
    const char *d = gcomm_last_error_detail();
    TEST_CHECK(rc == GCOMM_ERR_WINDOW, "outside: rc = %d (%s)", rc, d);
    TEST_CHECK(strstr(d, "rank 1") && strstr(d, "window 0") && strstr(d, "offset 56"),
               "outside: detail '%s'", d);
    unsigned char host[128];
    CUDA_OK(cudaSetDevice(g->dev[0]));
    CUDA_OK(cudaMemcpy(host, g->buf[0], sizeof(host), cudaMemcpyDeviceToHost));
    int touched = 0;
    for (int i = 0; i < 128; i++) touched += host[i] != 0xA5;
    TEST_CHECK(touched == 0, "outside: %d bytes written", touched);
    TEST_CHECK(sum_errs(g) == 0, "outside: device checks failed");
    printf("errors   put outside a window -> %s: %s\n", gcomm_error_string(rc), d);

    /* a grid that cannot be resident is refused before anything runs */
    int max = 0;
    TEST_OK(gcomm_launch_max_blocks(gcomm_kernel(k_ring), 256, 0, 0, &max));
    rc = run3(g, gcomm_kernel(k_ring), max + 1, 256);
    TEST_CHECK(rc == GCOMM_ERR_ARG && strstr(gcomm_last_error_detail(), "resident"),
               "too many blocks: rc = %d (%s)", rc, gcomm_last_error_detail());
    printf("errors   %d blocks of 256 threads (max %d) -> %s\n", max + 1, max,
           gcomm_error_string(rc));
    /* a raw function pointer instead of gcomm_kernel(...) */
    rc = run3(g, (const void *)k_ring, 1, 32);
    TEST_CHECK(rc != GCOMM_SUCCESS, "raw kernel pointer accepted");
    gcomm_launch_t bad;
    memset(&bad, 0, sizeof(bad));
    TEST_RC(GCOMM_ERR_ARG, gcomm_launch(&bad));
    TEST_RC(GCOMM_ERR_ARG, gcomm_launch(NULL));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    long stress_n = argc > 2 ? atol(argv[2]) : 2000000;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("test_rma_device: no GPU, skipped\n");
        return GCOMM_TEST_SKIP;
    }
    TEST_OK(gcomm_init());
    gpus_t g;
    memset(&g, 0, sizeof(g));
    TEST_OK(gcomm_local_devices(&g.n, g.dev));
    g.bytes = 64u << 20;
    for (int i = 0; i < g.n; i++) {
        CUDA_OK(cudaSetDevice(g.dev[i]));
        TEST_OK(gcomm_malloc(g.bytes, (void **)&g.buf[i]));
        CUDA_OK(cudaMalloc(&g.errs[i], 2 * sizeof(unsigned)));
    }
    if (strcmp(mode, "timeout") == 0) {
        zero_errs(&g);
        double t0 = gcommt_now();
        int rc = run3(&g, gcomm_kernel(k_never), 8, 64);
        double dt = gcommt_now() - t0;
        TEST_CHECK(rc == GCOMM_ERR_TIMEOUT, "never: rc = %d (%s)", rc, gcomm_last_error_detail());
        TEST_CHECK(sum_errs(&g) == 0, "never: device checks failed");
        printf("timeout  -> %s after %.2f s: %s\n", gcomm_error_string(rc), dt,
               gcomm_last_error_detail());
        /* the runtime works again after a timeout */
        run_case(&g, "ring", gcomm_kernel(k_ring), 8, 64);
    } else {
        int sms = 0;
        CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g.dev[0]));
        run_case(&g, "ring", gcomm_kernel(k_ring), 2, 32);
        run_case(&g, "ring", gcomm_kernel(k_ring), 2 * sms, 128);
        run_case(&g, "gather", gcomm_kernel(k_gather), sms, 96);
        run_case(&g, "get", gcomm_kernel(k_get), sms, 128);
        run_case(&g, "overlap", gcomm_kernel(k_overlap), 64, 128);
        run_case(&g, "ring", gcomm_kernel(k_ring), 0, 256); /* as many as fit */
        test_stress(&g, stress_n);
        test_errors(&g);
        run_case(&g, "ring", gcomm_kernel(k_ring), 16, 64); /* still works after errors */
    }
    for (int i = 0; i < g.n; i++) {
        TEST_OK(gcomm_free(g.buf[i]));
        cudaFree(g.errs[i]);
    }
    TEST_OK(gcomm_finalize());
    return gcommt_finish("test_rma_device");
}
