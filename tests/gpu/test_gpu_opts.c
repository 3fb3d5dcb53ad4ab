/* gcomm_pack_range_opts / gcomm_unpack_range_opts: pipelined ranges enqueued on a user stream
 * without waiting, with a limit on the kernel's thread blocks, must produce the packed stream of
 * gcomm_pack; bad options are refused. The host part runs everywhere; the GPU part needs a GPU
 * (exit 77 after the host part otherwise). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcomm/gcomm.h"
#include "gpu_testutil.h"
#include "testutil.h"


/* Packs [0, total) in chunks with opts, then unpacks the chunks into `back` in reverse order. */
static void chunked(const char *typed, char *packed, char *back, gcomm_datatype t, size_t count,
                    size_t total, size_t chunk, const gcomm_pack_opts_t *opts)
{
    for (size_t off = 0; off < total; off += chunk) {
        size_t n = total - off < chunk ? total - off : chunk;
        TEST_OK(gcomm_pack_range_opts(typed, count, t, off, n, packed + off, opts));
    }
    for (size_t off = (total - 1) / chunk * chunk;; off -= chunk) {
        size_t n = total - off < chunk ? total - off : chunk;
        TEST_OK(gcomm_unpack_range_opts(packed + off, off, n, back, count, t, opts));
        if (off == 0) break;
    }
}

int main(void)
{
    uint64_t rng = gcommt_seed(4242);
    gcomm_datatype t;
    gcomm_type_vector(20000, 3, 7, GCOMM_DOUBLE, &t);
    gcomm_type_commit(&t);
    size_t count = 2, total, span = (size_t)(20000 * 7 * 8) * count;
    gcomm_pack_size(count, t, &total);
    char *host = malloc(span), *ref = malloc(total), *got = malloc(total);
    char *back = malloc(span), *refback = malloc(span);
    gcommt_fill_random(host, span, &rng);
    size_t pos = 0;
    TEST_OK(gcomm_pack(host, count, t, ref, total, &pos));

    /* host memory: options are accepted, the copy is done on return */
    gcomm_pack_opts_t o = GCOMM_PACK_OPTS_INIT;
    o.max_blocks = 3;
    memset(got, 0, total);
    gcommt_fill_random(back, span, &rng);
    memcpy(refback, back, span);
    pos = 0;
    TEST_OK(gcomm_unpack(ref, total, &pos, refback, count, t));
    chunked(host, got, back, t, count, total, 10007, &o);
    TEST_CHECK(memcmp(got, ref, total) == 0, "host: chunked pack differs");
    TEST_CHECK(memcmp(back, refback, span) == 0, "host: chunked unpack differs");
    o.max_blocks = -1;
    TEST_RC(GCOMM_ERR_ARG, gcomm_pack_range_opts(host, count, t, 0, 8, got, &o));
    TEST_RC(GCOMM_ERR_ARG, gcomm_unpack_range_opts(got, 0, 8, back, count, t, &o));
    TEST_OK(gcomm_pack_range_opts(host, count, t, 0, total, got, NULL));
    TEST_CHECK(memcmp(got, ref, total) == 0, "host: opts NULL pack differs");

    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        gcommt_finish("test_gpu_opts (host part)");
        printf("SKIP: no usable GPU for the device part\n");
        return gcommt_failures ? 1 : GCOMM_TEST_SKIP;
    }
    char *d_typed, *d_packed, *d_back;
    CUDA_OK(cudaMalloc((void **)&d_typed, span));
    CUDA_OK(cudaMalloc((void **)&d_packed, total));
    CUDA_OK(cudaMalloc((void **)&d_back, span));
    CUDA_OK(cudaMemcpy(d_typed, host, span, cudaMemcpyHostToDevice));
    cudaStream_t st;
    CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    int limits[4] = {1, 4, 0, 100000};
    for (int i = 0; i < 4; i++) {
        gcommt_fill_random(back, span, &rng);
        memcpy(refback, back, span);
        pos = 0;
        TEST_OK(gcomm_unpack(ref, total, &pos, refback, count, t));
        CUDA_OK(cudaMemcpy(d_back, back, span, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemset(d_packed, 0xa5, total));
        CUDA_OK(cudaDeviceSynchronize());
        gcomm_pack_opts_t g = {st, limits[i], 0};
        chunked(d_typed, d_packed, d_back, t, count, total, 65536 + 8 * i, &g);
        CUDA_OK(cudaStreamSynchronize(st));
        CUDA_OK(cudaMemcpy(got, d_packed, total, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(back, d_back, span, cudaMemcpyDeviceToHost));
        TEST_CHECK(memcmp(got, ref, total) == 0, "GPU: chunked pack on a stream, %d blocks", limits[i]);
        TEST_CHECK(memcmp(back, refback, span) == 0, "GPU: chunked unpack, %d blocks", limits[i]);
        printf("GPU chunked pack/unpack on a stream, max_blocks %d: %s\n", limits[i],
               memcmp(got, ref, total) || memcmp(back, refback, span) ? "MISMATCH" : "ok");
    }
    cudaStreamDestroy(st);
    cudaFree(d_typed), cudaFree(d_packed), cudaFree(d_back);
    free(host), free(ref), free(got), free(back), free(refback);
    gcomm_type_free(&t);
    return gcommt_finish("test_gpu_opts");
}
