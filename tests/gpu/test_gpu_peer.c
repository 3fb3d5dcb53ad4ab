/* Packs, unpacks and re-layouts between two GPUs: typed data on device 0, packed data on device 1
 * (the kernel on device 0 reaches device 1's memory through peer access, which gcomm enables), and
 * a gcomm_copy transpose from device 0 into device 1. Results are compared with the CPU engine.
 * Skips (77) with fewer than two GPUs. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcomm/gcomm.h"
#include "gpu_testutil.h"
#include "testutil.h"


static void *dev_alloc(int dev, size_t bytes)
{
    void *p;
    CUDA_OK(cudaSetDevice(dev));
    CUDA_OK(cudaMalloc(&p, bytes));
    return p;
}

/* typed on device 0, packed on device 1, and back. */
static void check_pack_across(const char *name, gcomm_datatype t, size_t count, uint64_t *rng)
{
    ptrdiff_t tlb, text, lb, ext;
    size_t total;
    gcomm_type_get_true_extent(t, &tlb, &text);
    gcomm_type_get_extent(t, &lb, &ext);
    gcomm_pack_size(count, t, &total);
    size_t span = (size_t)(text + (ptrdiff_t)(count - 1) * ext);
    char *host = malloc(span), *ref = malloc(total), *got = malloc(total);
    char *back = malloc(span), *refback = malloc(span);
    gcommt_fill_random(host, span, rng);
    size_t pos = 0;
    TEST_OK(gcomm_pack(host - tlb, count, t, ref, total, &pos));

    char *typed0 = dev_alloc(0, span), *packed1 = dev_alloc(1, total);
    CUDA_OK(cudaMemcpy(typed0, host, span, cudaMemcpyHostToDevice));
    CUDA_OK(cudaSetDevice(1));
    CUDA_OK(cudaMemset(packed1, 0x5a, total));
    CUDA_OK(cudaDeviceSynchronize());
    pos = 0;
    TEST_OK(gcomm_pack(typed0 - tlb, count, t, packed1, total, &pos));
    CUDA_OK(cudaMemcpy(got, packed1, total, cudaMemcpyDeviceToHost));
    TEST_CHECK(memcmp(got, ref, total) == 0, "%s: pack device 0 -> device 1 differs", name);

    /* unpack device 1 -> device 0 over a random background; gaps must stay */
    gcommt_fill_random(back, span, rng);
    memcpy(refback, back, span);
    pos = 0;
    TEST_OK(gcomm_unpack(ref, total, &pos, refback - tlb, count, t));
    CUDA_OK(cudaMemcpy(typed0, back, span, cudaMemcpyHostToDevice));
    pos = 0;
    TEST_OK(gcomm_unpack(packed1, total, &pos, typed0 - tlb, count, t));
    CUDA_OK(cudaMemcpy(back, typed0, span, cudaMemcpyDeviceToHost));
    TEST_CHECK(memcmp(back, refback, span) == 0, "%s: unpack device 1 -> device 0 differs", name);
    printf("%-20s %zu bytes across GPUs: %s\n", name, total,
           memcmp(got, ref, total) || memcmp(back, refback, span) ? "MISMATCH" : "ok");
    cudaFree(typed0);
    cudaFree(packed1);
    free(host), free(ref), free(got), free(back), free(refback);
}

int main(void)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 2) {
        printf("SKIP: needs two GPUs (found %d)\n", ndev);
        return GCOMM_TEST_SKIP;
    }
    int can = 0;
    cudaDeviceCanAccessPeer(&can, 0, 1);
    if (!can) {
        printf("SKIP: device 0 cannot access device 1 (no peer access)\n");
        return GCOMM_TEST_SKIP;
    }
    uint64_t rng = gcommt_seed(777);
    gcomm_datatype t, a, b, c;

    gcomm_type_vector(4096, 8, 16, GCOMM_DOUBLE, &t);
    gcomm_type_commit(&t);
    check_pack_across("vector 64B", t, 3, &rng);
    gcomm_type_free(&t);

    int n = 500, bl[500], d[500];
    for (int i = 0; i < n; i++) bl[i] = i + 1, d[i] = i * n;
    gcomm_type_indexed(n, bl, d, GCOMM_DOUBLE, &t);
    gcomm_type_commit(&t);
    check_pack_across("lower triangle", t, 1, &rng);
    gcomm_type_free(&t);

    /* transpose N x N doubles from device 0 into device 1 with one gcomm_copy */
    const int N = 1024;
    gcomm_type_vector(N, 1, N, GCOMM_DOUBLE, &a);
    gcomm_type_resized(a, 0, 8, &b);
    gcomm_type_contiguous(N, b, &t);
    gcomm_type_contiguous(N * N, GCOMM_DOUBLE, &c);
    gcomm_type_commit(&t);
    gcomm_type_commit(&c);
    size_t bytes = (size_t)N * N * 8;
    double *h = malloc(bytes), *ref = malloc(bytes), *got = malloc(bytes);
    gcommt_fill_random(h, bytes, &rng);
    TEST_OK(gcomm_copy(h, 1, t, ref, 1, c, NULL)); /* CPU reference */
    char *s0 = dev_alloc(0, bytes), *d1 = dev_alloc(1, bytes);
    CUDA_OK(cudaMemcpy(s0, h, bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(d1, 0x5a, bytes));
    CUDA_OK(cudaDeviceSynchronize());
    TEST_OK(gcomm_copy(s0, 1, t, d1, 1, c, NULL));
    CUDA_OK(cudaMemcpy(got, d1, bytes, cudaMemcpyDeviceToHost));
    TEST_CHECK(memcmp(got, ref, bytes) == 0, "transpose device 0 -> device 1 differs");
    printf("%-20s %zu bytes device 0 -> device 1: %s\n", "transpose copy", bytes,
           memcmp(got, ref, bytes) ? "MISMATCH" : "ok");
    cudaFree(s0);
    cudaFree(d1);
    free(h), free(ref), free(got);
    gcomm_type_free(&a), gcomm_type_free(&b), gcomm_type_free(&t), gcomm_type_free(&c);
    return gcommt_finish("test_gpu_peer");
}
