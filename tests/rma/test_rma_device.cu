/* Device-initiated notified RMA on the GPUs of one process (every visible GPU, or GCOMM_DEVICES):
 * put/get with and without notification, wildcard matching, overlapping windows, barriers, the
 * stress of millions of notifications from random sources and tags, and the error paths (a put
 * outside a window, a grid that cannot be resident, a wait that times out).
 *
 * Usage: test_rma_device [all | small | timeout] [stress notifications]. "timeout" runs only the
 * wait that can never be satisfied (run it with a short GCOMM_TIMEOUT_MS); "small" runs every
 * kernel on small grids (for compute-sanitizer). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gcomm/device.cuh"
#include "gcomm/gcomm.h"
#include "rma_test_kernels.cuh"
#include "testutil.h"

/* ---- the device log: printed by the host after the launch ---- */

__global__ void k_log(gcomm_param_t param, uint64_t *buf, unsigned *errs)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int rank, size;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_size(&ctx, GCOMM_COMM_WORLD, &size);
    if (rank == 0 || rank == size - 1)
        gcomm_log(&ctx, "test_rma_device: hello from rank %d of %d, pi ~ %.4f, %u%% done, ptr %p\n",
                  rank, size, 3.14159265, 100u, (const void *)buf);
    if (rank == 0) gcomm_log(&ctx, "test_rma_device: no arguments\n");
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
        if (e[0])
            fprintf(stderr, "GPU %d: %u device checks failed, the first at rma_test_kernels.cuh:%u\n",
                    i, e[0], e[1]);
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

/* k_inline_nowait: every window holds its left neighbour's two puts after the launch, though
 * nobody waited for them, and nothing else (the poison around them). */
static void test_inline_nowait(gpus_t *g, int blocks)
{
    zero_errs(g);
    TEST_OK(run3(g, gcomm_kernel(k_inline_nowait), blocks, 64));
    const int size = blocks * g->n;
    long bad = 0;
    for (int i = 0; i < g->n; i++) {
        unsigned char *h = (unsigned char *)malloc((size_t)blocks * 64);
        CUDA_OK(cudaSetDevice(g->dev[i]));
        CUDA_OK(cudaMemcpy(h, g->buf[i], (size_t)blocks * 64, cudaMemcpyDeviceToHost));
        for (int lr = 0; lr < blocks; lr++) {
            const int r = i * blocks + lr, l = (r + size - 1) % size;
            for (int b = 0; b < 64; b++) {
                unsigned char want = 0xA5;
                if (b >= l % 8 && b < 2 * (l % 8) + 1) want = inline_byte(l, 7, 0, b - l % 8);
                else if (b >= 16 && b < 24) want = inline_byte(l, 7, 0, b);
                bad += h[(size_t)lr * 64 + b] != want;
            }
        }
        free(h);
    }
    unsigned e = sum_errs(g);
    TEST_CHECK(e == 0 && bad == 0, "inline, no wait: %u failed device checks, %ld bytes differ", e,
               bad);
    printf("%-8s %d GPU(s) x %d blocks: %s\n", "inl-nowait", g->n, blocks,
           e || bad ? "FAILED" : "ok");
}

static void test_stress(gpus_t *g, long total_notifications)
{
    int blocks = total_notifications < 100000 ? 8 : 64, ngpus = g->n, size = blocks * ngpus;
    int senders = size - STRESS_RECEIVERS;
    /* at least the number asked for: "a million" means no fewer */
    long per_sender = (total_notifications + senders - 1) / senders;
    long expect[STRESS_RECEIVERS * STRESS_TAGS];
    stress_expect(size, per_sender, expect);
    long *d_expect;
    CUDA_OK(cudaSetDevice(g->dev[0]));
    CUDA_OK(cudaMalloc(&d_expect, sizeof(expect)));
    CUDA_OK(cudaMemcpy(d_expect, expect, sizeof(expect), cudaMemcpyHostToDevice));
    zero_errs(g);
    CUDA_OK(cudaSetDevice(g->dev[0]));
    const size_t slot_bytes = STRESS_BUFFER_BYTES(size);
    CUDA_OK(cudaMemset(g->buf[0], 0, slot_bytes));
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
    /* final counters: receiver r's two counters of sender s (stress_check reads the larger) */
    uint64_t *slots = (uint64_t *)malloc(slot_bytes);
    CUDA_OK(cudaSetDevice(g->dev[0]));
    CUDA_OK(cudaMemcpy(slots, g->buf[0], slot_bytes, cudaMemcpyDeviceToHost));
    long bad = stress_check(slots, size, per_sender, 0, STRESS_RECEIVERS);
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

/* Typed put/get: halo columns and reshaped copies checked by every rank (k_typed), then the three
 * typed error paths, each of which must leave the windows untouched. */
static void test_typed(gpus_t *g, int blocks)
{
    typed_types_t t;
    gcomm_device_type_t h[GCOMM_MAX_GPUS][4];
    TEST_OK(typed_types_make(&t));
    for (int i = 0; i < g->n; i++) TEST_OK(typed_handles(&t, g->dev[i], h[i]));
    gcomm_device_type_t none;
    TEST_RC(GCOMM_ERR_ARG, gcomm_type_device(t.col, -5, &none));
    TEST_RC(GCOMM_ERR_ARG, gcomm_type_device(t.col, 0, NULL));
    TEST_RC(GCOMM_ERR_TYPE, gcomm_type_device(NULL, 0, &none));

    void *argv[GCOMM_MAX_GPUS][8];
    gcomm_launch_t l;
    memset(&l, 0, sizeof(l));
    l.kernel = gcomm_kernel(k_typed);
    l.blocks_per_gpu = blocks;
    l.threads_per_block = 128;
    for (int i = 0; i < g->n; i++) {
        argv[i][0] = NULL;
        argv[i][1] = &g->buf[i];
        argv[i][2] = &g->errs[i];
        for (int k = 0; k < 4; k++) argv[i][3 + k] = &h[i][k];
        l.args[i] = argv[i];
    }
    zero_errs(g);
    TEST_OK(gcomm_launch(&l));
    unsigned e = sum_errs(g);
    TEST_CHECK(e == 0, "typed: %u failed device checks", e);
    printf("typed    %d GPU(s) x %d blocks: halo columns, packed, reversed, row get: %s\n", g->n,
           blocks, e ? "FAILED" : "ok");

    for (int mode = 0; mode < 3; mode++) {
        int m = mode;
        l.kernel = gcomm_kernel(k_typed_bad);
        l.blocks_per_gpu = 4;
        l.threads_per_block = 64;
        for (int i = 0; i < g->n; i++) argv[i][6] = &m;
        zero_errs(g);
        int rc = gcomm_launch(&l);
        TEST_CHECK(rc == typed_bad_want[mode], "typed error %d: rc = %d (%s)", mode, rc,
                   gcomm_last_error_detail());
        TEST_CHECK(strstr(gcomm_last_error_detail(), "rank 1") != NULL, "typed error %d: detail '%s'",
                   mode, gcomm_last_error_detail());
        unsigned char *host = (unsigned char *)malloc(TYPED_WORDS * 8);
        CUDA_OK(cudaSetDevice(g->dev[0]));
        CUDA_OK(cudaMemcpy(host, g->buf[0], TYPED_WORDS * 8, cudaMemcpyDeviceToHost));
        int touched = typed_touched(host);
        free(host);
        TEST_CHECK(touched == 0, "typed error %d: %d bytes written", mode, touched);
        TEST_CHECK(sum_errs(g) == 0, "typed error %d: device checks failed", mode);
        printf("errors   typed %s -> %s: %s\n", typed_bad_what[mode], gcomm_error_string(rc),
               gcomm_last_error_detail());
    }
    TEST_OK(typed_types_free(&t));
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
    } else if (strcmp(mode, "small") == 0) {
        /* every kernel on small grids, for compute-sanitizer (scripts/rma-check.sh --sanitize) */
        run_case(&g, "ring", gcomm_kernel(k_ring), 4, 32);
        run_case(&g, "gather", gcomm_kernel(k_gather), 8, 64);
        run_case(&g, "get", gcomm_kernel(k_get), 8, 64);
        run_case(&g, "overlap", gcomm_kernel(k_overlap), 8, 64);
        run_case(&g, "log", gcomm_kernel(k_log), 4, 64);
        run_case(&g, "flush", gcomm_kernel(k_flush), 4, 64);
        run_case(&g, "inline", gcomm_kernel(k_inline), 4, 64);
        run_case(&g, "rewin", gcomm_kernel(k_rewin), 4, 64);
        run_case(&g, "flushinl", gcomm_kernel(k_flushinl), 4, 64);
        test_inline_nowait(&g, 4);
        test_typed(&g, 4);
        test_stress(&g, stress_n);
        test_errors(&g);
    } else {
        int sms = 0;
        CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g.dev[0]));
        run_case(&g, "ring", gcomm_kernel(k_ring), 2, 32);
        run_case(&g, "ring", gcomm_kernel(k_ring), 2 * sms, 128);
        run_case(&g, "gather", gcomm_kernel(k_gather), sms, 96);
        run_case(&g, "get", gcomm_kernel(k_get), sms, 128);
        run_case(&g, "overlap", gcomm_kernel(k_overlap), 64, 128);
        run_case(&g, "log", gcomm_kernel(k_log), 4, 64);
        run_case(&g, "flush", gcomm_kernel(k_flush), sms, 128);
        run_case(&g, "inline", gcomm_kernel(k_inline), 2, 32);
        run_case(&g, "inline", gcomm_kernel(k_inline), sms, 128);
        run_case(&g, "rewin", gcomm_kernel(k_rewin), 3, 32);
        run_case(&g, "rewin", gcomm_kernel(k_rewin), sms, 128);
        run_case(&g, "flushinl", gcomm_kernel(k_flushinl), 3, 32);
        run_case(&g, "flushinl", gcomm_kernel(k_flushinl), sms, 128);
        test_inline_nowait(&g, sms);
        test_typed(&g, sms);
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
