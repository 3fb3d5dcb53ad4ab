/* Device-initiated notified RMA with one MPI process per GPU (gcomm_init_mpi): the kernels of
 * test_rma_device (rma_test_kernels.cuh), with every GPU driven by its own process, so that ranks
 * reach the other GPUs' windows, queues and control words through CUDA IPC mappings. Checks: a
 * ring of put_notify, an exchange where every rank talks to the other process only, gather with
 * wildcards, get and get_notify, barriers, overlapping windows, window memory of gcomm_register
 * (an interior pointer of a larger cudaMalloc: the mapping's allocation offset), the stress of
 * ~500k notifications from random senders of every process into a few receivers, a put outside
 * a window (by a rank of the same process and by a rank of another one: every process returns the
 * same error and detail, nothing is written) and a launch after the errors.
 *
 * With GCOMM_FORCE_PROXY=1 every process is its own pretend node: the same kernels then reach
 * the other processes through the host proxies over MPI (issue 5), the processes may share one
 * GPU (which time-slices between their kernels), and the grids are smaller.
 *
 * Every process counts its failed device checks; the processes agree on every result (MPI).
 * Skipped (exit 77 on every process) without a GPU, or with fewer visible GPUs than processes on
 * the node (unless through the proxy).
 *
 * Usage: mpiexec -n 2 test_rma_mpi [all | timeout] [stress notifications]. "timeout" runs only
 * waits that can never be satisfied (run it with a short GCOMM_TIMEOUT_MS), then a ring. */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gcomm/device.cuh"
#include "gcomm/gcomm.h"
#include "gcomm/gcomm_mpi.h"
#include "rma_test_kernels.cuh"
#include "testutil.h"

/* ---- kernels of this test only ---- */

/* Every rank exchanges with the rank of the same local index on the next GPU (another process
 * when there are several): put_notify into its window, then get of its send buffer. */
#define CROSS_WORDS 97 /* 776 bytes: ragged ends */

__global__ void k_cross(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int rank, size, lrank, lsize;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_size(&ctx, GCOMM_COMM_WORLD, &size);
    gcomm_comm_rank(&ctx, GCOMM_COMM_DEVICE, &lrank);
    gcomm_comm_size(&ctx, GCOMM_COMM_DEVICE, &lsize);
    /* per rank: [received][to send][got] */
    uint64_t *mine = buf + (size_t)lrank * 3 * CROSS_WORDS;
    uint64_t *send = mine + CROSS_WORDS, *got = mine + 2 * CROSS_WORDS;
    gcomm_win_t win;
    DCHECK(gcomm_win_create(&ctx, GCOMM_COMM_WORLD, mine, 2 * CROSS_WORDS * 8, &win) ==
               GCOMM_SUCCESS, errs);
    int next = (rank + lsize) % size, prev = (rank + size - lsize) % size;
    for (int w = threadIdx.x; w < CROSS_WORDS; w += blockDim.x)
        send[w] = mix(((uint64_t)rank << 32) ^ 0xC0550000ull ^ w);
    __syncthreads();
    DCHECK(gcomm_put_notify(&ctx, win, next, 0, CROSS_WORDS * 8, send, 9) == GCOMM_SUCCESS, errs);
    DCHECK(gcomm_wait_notifications(&ctx, win, prev, 9, 1) == GCOMM_SUCCESS, errs);
    for (int w = threadIdx.x; w < CROSS_WORDS; w += blockDim.x)
        DCHECK(mine[w] == mix(((uint64_t)prev << 32) ^ 0xC0550000ull ^ w), errs);
    /* the partner's send buffer: written before the barrier (the partner is prev itself only
     * with two GPUs) */
    DCHECK(gcomm_barrier(&ctx, GCOMM_COMM_WORLD) == GCOMM_SUCCESS, errs);
    DCHECK(gcomm_get(&ctx, win, next, CROSS_WORDS * 8, CROSS_WORDS * 8, got) == GCOMM_SUCCESS,
           errs);
    for (int w = threadIdx.x; w < CROSS_WORDS; w += blockDim.x)
        DCHECK(got[w] == mix(((uint64_t)next << 32) ^ 0xC0550000ull ^ w), errs);
    DCHECK(gcomm_win_free(&ctx, &win) == GCOMM_SUCCESS, errs);
    gcomm_finish(&ctx);
}

/* k_outside with the culprit chosen by the host: rank `culprit` puts 16 bytes at offset 56 of
 * rank 0's 64-byte window; everybody else waits for a notification that never comes. */
__global__ void k_outside_from(gcomm_param_t param, uint64_t *buf, unsigned *errs, int culprit)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int rank;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_win_t win;
    gcomm_win_create(&ctx, GCOMM_COMM_WORLD, buf, 64, &win);
    __shared__ uint64_t data[2];
    if (threadIdx.x < 2) data[threadIdx.x] = 0x5555;
    __syncthreads();
    if (rank == culprit)
        DCHECK(gcomm_put(&ctx, win, 0, 56, 16, data) == GCOMM_ERR_WINDOW, errs);
    else
        DCHECK(gcomm_wait_notifications(&ctx, win, GCOMM_ANY_SOURCE, 3, 1) != GCOMM_SUCCESS, errs);
    gcomm_finish(&ctx);
}

/* ---- host ---- */

typedef struct {
    int rank, nproc;  /* MPI_COMM_WORLD */
    int proxy;        /* GCOMM_FORCE_PROXY: the processes meet through the proxies */
    int dev;          /* the CUDA device this process drives */
    int ngpus, first; /* GPUs of the job; this process's GPU among them */
    uint64_t *buf;    /* window memory the kernels get */
    size_t bytes;
    unsigned *errs;
} proc_t;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static long sum_long(long v)
{
    long s = 0;
    MPI_Allreduce(&v, &s, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

/* 1 when every process passes the same v. */
static int same_everywhere(int v)
{
    int lo = 0, hi = 0;
    MPI_Allreduce(&v, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&v, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

/* 1 when every process has the same string as process 0 (compared up to 511 characters). */
static int same_string_everywhere(const char *s)
{
    char mine[512], root[512];
    memset(mine, 0, sizeof(mine));
    strncpy(mine, s ? s : "", sizeof(mine) - 1);
    memcpy(root, mine, sizeof(root));
    MPI_Bcast(root, (int)sizeof(root), MPI_CHAR, 0, MPI_COMM_WORLD);
    int same = strcmp(mine, root) == 0, all = 0;
    MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

static void zero_errs(proc_t *p)
{
    CUDA_OK(cudaSetDevice(p->dev));
    CUDA_OK(cudaMemset(p->errs, 0, 2 * sizeof(unsigned)));
    CUDA_OK(cudaMemset(p->buf, 0xA5, p->bytes)); /* poison */
    /* gcomm launches on its own stream: have this done before any process's kernel starts */
    CUDA_OK(cudaDeviceSynchronize());
}

/* Failed device checks of every process (each prints its own). */
static unsigned sum_errs(proc_t *p, const char *name)
{
    unsigned e[2], total = 0;
    CUDA_OK(cudaSetDevice(p->dev));
    CUDA_OK(cudaMemcpy(e, p->errs, sizeof(e), cudaMemcpyDeviceToHost));
    if (e[0])
        fprintf(stderr, "%s: process %d (job GPU %d): %u device checks failed, the first at "
                "rma_test_kernels.cuh or test_rma_mpi.cu line %u\n", name, p->rank, p->first,
                e[0], e[1]);
    MPI_Allreduce(&e[0], &total, 1, MPI_UNSIGNED, MPI_SUM, MPI_COMM_WORLD);
    return total;
}

/* Launches kernel with the arguments argv (argv[0]: gcomm's parameter) on this process's GPU. */
static int launch(const void *kernel, int blocks, int threads, void **argv)
{
    gcomm_launch_t l;
    memset(&l, 0, sizeof(l));
    l.kernel = kernel;
    l.blocks_per_gpu = blocks;
    l.threads_per_block = threads;
    l.args[0] = argv;
    return gcomm_launch(&l);
}

/* Launches kernel(param, buf, errs[, extra]) on the job's GPUs; returns the launch status. */
static int run_kernel(proc_t *p, const void *kernel, int blocks, int threads, int *extra)
{
    void *argv[4] = {NULL, &p->buf, &p->errs, extra};
    return launch(kernel, blocks, threads, argv);
}

static void check_launch(proc_t *p, const char *name, int rc, int expected)
{
    TEST_CHECK(rc == expected, "%s: process %d: gcomm_launch returned %d (%s), expected %d: %s",
               name, p->rank, rc, gcomm_error_string(rc), expected, gcomm_last_error_detail());
    TEST_CHECK(same_everywhere(rc), "%s: the processes' launches returned different statuses "
               "(process %d: %d)", name, p->rank, rc);
}

static void run_case(proc_t *p, const char *name, const void *kernel, int blocks, int threads)
{
    zero_errs(p);
    int rc = run_kernel(p, kernel, blocks, threads, NULL);
    check_launch(p, name, rc, GCOMM_SUCCESS);
    unsigned e = sum_errs(p, name);
    TEST_CHECK(e == 0, "%s: %u failed device checks", name, e);
    if (p->rank == 0) {
        char b[16];
        snprintf(b, sizeof(b), "%d", blocks);
        printf("%-8s %d process(es) x %s blocks of %d threads: %s\n", name, p->nproc,
               blocks ? b : "max", threads, (e || rc) ? "FAILED" : "ok");
        fflush(stdout);
    }
}

/* Typed put/get (rank_bodies.h: halo columns, a column packed, reversed, a row get) with the
 * neighbours of the first and last rank of every GPU in the other processes: through CUDA IPC,
 * or through the proxies as the pieces contiguous in both layouts. */
static void test_typed(proc_t *p, int blocks)
{
    typed_types_t t;
    gcomm_device_type_t h[4];
    TEST_OK(typed_types_make(&t));
    TEST_OK(typed_handles(&t, p->dev, h));
    void *argv[7] = {NULL, &p->buf, &p->errs, &h[0], &h[1], &h[2], &h[3]};
    zero_errs(p);
    int rc = launch(gcomm_kernel(k_typed), blocks, 128, argv);
    check_launch(p, "typed", rc, GCOMM_SUCCESS);
    unsigned e = sum_errs(p, "typed");
    TEST_CHECK(e == 0, "typed: %u failed device checks", e);
    if (p->rank == 0) {
        printf("typed    %d process(es) x %d blocks: halo columns, packed, reversed, row get: %s\n",
               p->nproc, blocks, (e || rc) ? "FAILED" : "ok");
        fflush(stdout);
    }
    TEST_OK(typed_types_free(&t));
}

/* Window memory of gcomm_register: 4 KiB into a larger cudaMalloc, so that the other processes'
 * mapping (which maps the whole allocation) must add the offset. Guards around it stay intact. */
static void test_registered(proc_t *p, int sms)
{
    const size_t pad = 4096, ubytes = 16u << 20;
    unsigned char *raw = NULL;
    CUDA_OK(cudaSetDevice(p->dev));
    CUDA_OK(cudaMalloc(&raw, ubytes + 2 * pad));
    CUDA_OK(cudaMemset(raw, 0x5A, ubytes + 2 * pad));
    CUDA_OK(cudaDeviceSynchronize());
    uint64_t *ubuf = (uint64_t *)(raw + pad);
    int rc = gcomm_register(ubuf, ubytes);
    TEST_CHECK(rc == GCOMM_SUCCESS, "gcomm_register(cudaMalloc + %zu, %zu): %d (%s)", pad, ubytes,
               rc, gcomm_last_error_detail());
    if (!same_everywhere(rc) || sum_long(rc != GCOMM_SUCCESS)) {
        TEST_CHECK(0, "registered: gcomm_register failed on some process; case skipped");
        if (rc == GCOMM_SUCCESS) gcomm_deregister(ubuf);
        cudaFree(raw);
        return;
    }
    uint64_t *saved = p->buf;
    size_t saved_bytes = p->bytes;
    p->buf = ubuf;
    p->bytes = ubytes;
    run_case(p, "reg ring", gcomm_kernel(k_ring), 2 * sms, 128);
    run_case(p, "reg crs", gcomm_kernel(k_cross), sms, 128);
    run_case(p, "reg gath", gcomm_kernel(k_gather), sms, 96);
    run_case(p, "reg get", gcomm_kernel(k_get), sms, 128);
    p->buf = saved;
    p->bytes = saved_bytes;
    /* nothing landed outside [ubuf, ubuf + ubytes) on this GPU */
    unsigned char *guard = (unsigned char *)malloc(2 * pad);
    CUDA_OK(cudaMemcpy(guard, raw, pad, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(guard + pad, raw + pad + ubytes, pad, cudaMemcpyDeviceToHost));
    long touched = 0;
    for (size_t i = 0; i < 2 * pad; i++) touched += guard[i] != 0x5A;
    free(guard);
    if (touched)
        fprintf(stderr, "registered: process %d: %ld guard bytes around the registered memory "
                "were written\n", p->rank, touched);
    touched = sum_long(touched);
    TEST_CHECK(touched == 0, "registered: %ld guard bytes written (mapping offset wrong?)", touched);
    TEST_OK(gcomm_deregister(ubuf));
    /* the other processes drop their mapping of it at the next launch; freeing the memory before
     * they have is undefined behaviour in CUDA IPC, so free it only after one */
    run_case(p, "ring", gcomm_kernel(k_ring), 4, 64);
    CUDA_OK(cudaFree(raw));
    if (p->rank == 0) printf("registered (interior pointer, offset %zu): guards %s\n", pad,
                             touched ? "WRITTEN" : "intact");
}

static void test_stress(proc_t *p, long total_notifications)
{
    int blocks = 64, size = blocks * p->ngpus;
    int senders = size - STRESS_RECEIVERS;
    /* at least the number asked for: "a million" means no fewer */
    long per_sender = (total_notifications + senders - 1) / senders;
    long expect[STRESS_RECEIVERS * STRESS_TAGS];
    stress_expect(size, per_sender, expect);
    long *d_expect;
    CUDA_OK(cudaSetDevice(p->dev));
    CUDA_OK(cudaMalloc(&d_expect, sizeof(expect)));
    CUDA_OK(cudaMemcpy(d_expect, expect, sizeof(expect), cudaMemcpyHostToDevice));
    zero_errs(p);
    /* the receivers (ranks 0..STRESS_RECEIVERS-1) are on job GPU 0 */
    const size_t slot_bytes = STRESS_BUFFER_BYTES(size);
    if (p->first == 0) {
        CUDA_OK(cudaMemset(p->buf, 0, slot_bytes));
        CUDA_OK(cudaDeviceSynchronize());
    }
    void *argv[5] = {NULL, &p->buf, &per_sender, &d_expect, &p->errs};
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_s();
    int rc = launch(gcomm_kernel(k_stress), blocks, 128, argv);
    double dt = now_s() - t0;
    check_launch(p, "stress", rc, GCOMM_SUCCESS);
    unsigned e = sum_errs(p, "stress");
    TEST_CHECK(e == 0, "stress: %u failed device checks", e);
    /* final counters on GPU 0: receiver r's slot s = messages s sent to r */
    long bad = 0;
    if (p->first == 0) {
        uint64_t *slots = (uint64_t *)malloc(slot_bytes);
        CUDA_OK(cudaMemcpy(slots, p->buf, slot_bytes, cudaMemcpyDeviceToHost));
        bad = stress_check(slots, size, per_sender, 0, STRESS_RECEIVERS);
        free(slots);
    }
    bad = sum_long(bad);
    TEST_CHECK(bad == 0, "stress: %ld final counters wrong", bad);
    if (p->rank == 0)
        printf("stress   %d process(es): %ld notifications from %d senders (%d on other GPUs) to "
               "%d receivers, %d tags: %s (%.2f s, %.2f M notifications/s)\n", p->nproc,
               per_sender * senders, senders, size - blocks, STRESS_RECEIVERS, STRESS_TAGS,
               (e || bad || rc) ? "FAILED" : "ok", dt, per_sender * senders / dt * 1e-6);
    cudaFree(d_expect);
}

/* A put outside a window by rank `culprit` (any process): the error, its detail and "nothing
 * written" everywhere. */
static void test_outside(proc_t *p, const char *name, int culprit, int blocks)
{
    zero_errs(p);
    int rc = culprit == 1 ? run_kernel(p, gcomm_kernel(k_outside), blocks, 64, NULL)
                          : run_kernel(p, gcomm_kernel(k_outside_from), blocks, 64, &culprit);
    char d[512];
    strncpy(d, gcomm_last_error_detail(), sizeof(d) - 1);
    d[sizeof(d) - 1] = '\0';
    check_launch(p, name, rc, GCOMM_ERR_WINDOW);
    char who[32];
    snprintf(who, sizeof(who), "rank %d", culprit);
    TEST_CHECK(strstr(d, who) && strstr(d, "window 0") && strstr(d, "offset 56"),
               "%s: process %d: detail '%s'", name, p->rank, d);
    TEST_CHECK(same_string_everywhere(d), "%s: process %d has a different detail: '%s'", name,
               p->rank, d);
    unsigned char host[128];
    CUDA_OK(cudaMemcpy(host, p->buf, sizeof(host), cudaMemcpyDeviceToHost));
    long touched = 0;
    for (int i = 0; i < 128; i++) touched += host[i] != 0xA5;
    touched = sum_long(touched);
    TEST_CHECK(touched == 0, "%s: %ld bytes written", name, touched);
    TEST_CHECK(sum_errs(p, name) == 0, "%s: device checks failed", name);
    if (p->rank == 0) printf("errors   %s -> %s: %s\n", name, gcomm_error_string(rc), d);
}

static void test_errors(proc_t *p)
{
    const int blocks = 4;
    /* origin (rank 1) and target (rank 0) both on job GPU 0 */
    test_outside(p, "put outside a window (same process)", 1, blocks);
    /* origin: the last rank (last process); target: rank 0 (first process) */
    test_outside(p, "put outside a window (other process)", blocks * p->ngpus - 1, blocks);
    gcomm_launch_t bad;
    memset(&bad, 0, sizeof(bad));
    TEST_RC(GCOMM_ERR_ARG, gcomm_launch(&bad));
    TEST_RC(GCOMM_ERR_ARG, gcomm_launch(NULL));
}

static void test_timeout(proc_t *p)
{
    CUDA_OK(cudaSetDevice(p->dev));
    CUDA_OK(cudaMemset(p->errs, 0, 2 * sizeof(unsigned)));
    CUDA_OK(cudaDeviceSynchronize());
    void *argv[2] = {NULL, &p->errs};
    gcomm_launch_t l;
    memset(&l, 0, sizeof(l));
    l.kernel = gcomm_kernel(k_never);
    l.blocks_per_gpu = 8;
    l.threads_per_block = 64;
    l.args[0] = argv;
    double t0 = now_s();
    int rc = gcomm_launch(&l);
    double dt = now_s() - t0;
    check_launch(p, "never", rc, GCOMM_ERR_TIMEOUT);
    TEST_CHECK(same_string_everywhere(gcomm_last_error_detail()), "never: details differ");
    TEST_CHECK(sum_errs(p, "never") == 0, "never: device checks failed");
    if (p->rank == 0)
        printf("timeout  -> %s after %.2f s: %s\n", gcomm_error_string(rc), dt,
               gcomm_last_error_detail());
}

static int getenv_int(const char *name)
{
    const char *v = getenv(name);
    return v ? atoi(v) : 0;
}

/* Why this process cannot run the test ("" if it can). */
static void skip_reason(char *why, size_t n)
{
    MPI_Comm node;
    int nlocal = 1, ndev = 0;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_size(node, &nlocal);
        MPI_Comm_free(&node);
    }
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(why, n, "no GPU (%s)", cudaGetErrorString(e));
        ndev = 0;
    } else if (ndev == 0) {
        snprintf(why, n, "no GPU");
    } else if (ndev < nlocal && !getenv_int("GCOMM_FORCE_PROXY")) {
        snprintf(why, n, "%d GPU(s) visible to %d processes on this node; one GPU per process "
                 "is needed", ndev, nlocal);
    } else {
        why[0] = '\0';
    }
}

/* 1 when the processes of this node drive distinct GPUs (by PCI bus id, which does not depend on
 * CUDA_VISIBLE_DEVICES). */
static int distinct_gpus(int dev)
{
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int n = 0, me = 0;
    MPI_Comm_size(node, &n);
    MPI_Comm_rank(node, &me);
    char id[32];
    memset(id, 0, sizeof(id));
    if (cudaDeviceGetPCIBusId(id, (int)sizeof(id), dev) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(id, sizeof(id), "device %d", dev);
    }
    char *all = (char *)calloc((size_t)n, sizeof(id));
    MPI_Allgather(id, (int)sizeof(id), MPI_CHAR, all, (int)sizeof(id), MPI_CHAR, node);
    int ok = 1;
    for (int q = 0; q < n; q++)
        if (q != me && strcmp(all + (size_t)q * sizeof(id), id) == 0) {
            fprintf(stderr, "test_rma_mpi: processes %d and %d of this node drive the same GPU %s\n",
                    me, q, id);
            ok = 0;
        }
    free(all);
    MPI_Comm_free(&node);
    int every = 0;
    MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return every;
}

int main(int argc, char **argv)
{
    int provided = 0; /* the proxy thread calls MPI while the application waits in gcomm_launch */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    const char *mode = argc > 1 ? argv[1] : "all";
    long stress_n = argc > 2 ? atol(argv[2]) : 500000;
    proc_t p;
    memset(&p, 0, sizeof(p));
    MPI_Comm_rank(MPI_COMM_WORLD, &p.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p.nproc);

    char why[256];
    skip_reason(why, sizeof(why));
    int ok = why[0] == '\0', all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (!ok) printf("test_rma_mpi: process %d of %d: %s, skipped\n", p.rank, p.nproc, why);
        else if (p.rank == 0) printf("test_rma_mpi: another process cannot run, skipped\n");
        fflush(stdout);
        MPI_Finalize();
        return GCOMM_TEST_SKIP;
    }

    int rc = gcomm_init_mpi(MPI_COMM_WORLD);
    if (rc != GCOMM_SUCCESS)
        fprintf(stderr, "test_rma_mpi: process %d: gcomm_init_mpi: %s: %s\n", p.rank,
                gcomm_error_string(rc), gcomm_last_error_detail());
    if (sum_long(rc != GCOMM_SUCCESS)) {
        if (rc == GCOMM_SUCCESS) gcomm_finalize();
        MPI_Finalize();
        return 1;
    }
    int n = 0, devs[GCOMM_MAX_GPUS];
    TEST_OK(gcomm_local_devices(&n, devs));
    TEST_OK(gcomm_job_gpus(&p.ngpus, &p.first));
    TEST_CHECK(n == 1, "process %d drives %d GPUs, expected 1", p.rank, n);
    TEST_CHECK(p.ngpus == p.nproc && p.first == p.rank, "job GPUs %d, this process's first %d "
               "(%d processes, rank %d)", p.ngpus, p.first, p.nproc, p.rank);
    int usable = sum_long(!(n == 1 && p.ngpus == p.nproc)) == 0;
    p.proxy = getenv_int("GCOMM_FORCE_PROXY") > 0;
    if (usable && !p.proxy) {
        p.dev = devs[0];
        usable = distinct_gpus(p.dev); /* the same answer everywhere */
        TEST_CHECK(usable, "the processes must drive distinct GPUs (GCOMM_DEVICES?)");
    }
    if (usable) {
        p.dev = devs[0];
        p.bytes = 64u << 20;
        CUDA_OK(cudaSetDevice(p.dev));
        TEST_OK(gcomm_malloc(p.bytes, (void **)&p.buf));
        CUDA_OK(cudaMalloc(&p.errs, 2 * sizeof(unsigned)));
        if (p.rank == 0) {
            printf("test_rma_mpi: %d process(es), %s\n", p.nproc,
                   p.proxy ? "through the host proxies over MPI (GCOMM_FORCE_PROXY)"
                           : "one GPU each (CUDA IPC between them)");
            fflush(stdout);
        }
        if (strcmp(mode, "timeout") == 0) {
            test_timeout(&p);
            run_case(&p, "ring", gcomm_kernel(k_ring), 8, 64); /* works again after a timeout */
        } else {
            int sms = 0;
            CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, p.dev));
            int sms_all = 0; /* the same grid on every GPU */
            MPI_Allreduce(&sms, &sms_all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            sms = sms_all;
            /* through the proxy the GPU may be shared: grids that leave room for the other's */
            if (p.proxy) sms = 8;
            /* growing grids: each launch needs larger segments, which the processes remap */
            run_case(&p, "ring", gcomm_kernel(k_ring), 2, 32);
            run_case(&p, "ring", gcomm_kernel(k_ring), 2 * sms, 128);
            run_case(&p, "cross", gcomm_kernel(k_cross), sms, 128);
            run_case(&p, "gather", gcomm_kernel(k_gather), sms, 96);
            run_case(&p, "get", gcomm_kernel(k_get), sms, 128);
            run_case(&p, "overlap", gcomm_kernel(k_overlap), 64, 128);
            run_case(&p, "flushinl", gcomm_kernel(k_flushinl), sms, 128);
            test_typed(&p, 4);
            if (!p.proxy) run_case(&p, "ring", gcomm_kernel(k_ring), 0, 256); /* as many as fit */
            test_registered(&p, sms);
            test_stress(&p, stress_n);
            test_errors(&p);
            run_case(&p, "ring", gcomm_kernel(k_ring), 16, 64); /* still works after errors */
            run_case(&p, "cross", gcomm_kernel(k_cross), 16, 64);
        }
        /* every process is done with the others' memory before any frees its own */
        MPI_Barrier(MPI_COMM_WORLD);
        TEST_OK(gcomm_free(p.buf));
        cudaFree(p.errs);
    }
    TEST_OK(gcomm_finalize());
    char name[48];
    snprintf(name, sizeof(name), "test_rma_mpi (process %d)", p.rank);
    int result = gcommt_finish(name), worst = 0;
    MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return worst;
}
