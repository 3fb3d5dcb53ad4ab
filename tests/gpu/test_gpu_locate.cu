/* The committed layout is position independent and its point-based traversal
 * (gcommi_dl_locate, a GCOMM_HD function) runs unchanged on the device: a kernel with one thread
 * per packed byte gathers a packed stream that must equal the CPU gcomm_pack output byte for byte.
 * This is the contract the GPU datatype engine builds on. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datatype/layout.h"
#include "gcomm/gcomm.h"
#include "gpu_testutil.h"
#include "testutil.h"


__global__ void gather_bytes(const gcommi_dl_t *nodes, const int64_t *aux, int64_t size,
                             int64_t extent, const char *typed, char *packed, int64_t total)
{
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < total;
         k += (int64_t)gridDim.x * blockDim.x) {
        int64_t contig;
        int64_t inst = k / size;
        int64_t off = gcommi_dl_locate(nodes, aux, 0, k - inst * size, &contig);
        packed[k] = typed[inst * extent + off];
    }
}

/* Packs `count` instances on the GPU and on the CPU and compares. */
static void check_type(const char *name, gcomm_datatype t, size_t count, uint64_t *rng)
{
    TEST_OK(gcomm_type_commit(&t));
    const gcommi_layout_t *L = gcommi_type_get_layout(t);
    ptrdiff_t tlb, text, lb, ext;
    gcomm_type_get_true_extent(t, &tlb, &text);
    gcomm_type_get_extent(t, &lb, &ext);
    size_t total;
    gcomm_pack_size(count, t, &total);
    int64_t lo = tlb + (ext < 0 ? (int64_t)(count - 1) * ext : 0);
    int64_t hi = tlb + text + (ext > 0 ? (int64_t)(count - 1) * ext : 0);
    size_t span = (size_t)(hi - lo);
    char *host = (char *)malloc(span), *ref = (char *)malloc(total), *got = (char *)malloc(total);
    gcommt_fill_random(host, span, rng);
    size_t pos = 0;
    TEST_OK(gcomm_pack(host - lo, count, t, ref, total, &pos));

    char *d_typed, *d_packed;
    gcommi_dl_t *d_nodes;
    int64_t *d_aux;
    CUDA_OK(cudaMalloc(&d_typed, span));
    CUDA_OK(cudaMalloc(&d_packed, total));
    CUDA_OK(cudaMalloc(&d_nodes, L->nnodes * sizeof(gcommi_dl_t)));
    CUDA_OK(cudaMalloc(&d_aux, (L->naux ? L->naux : 1) * sizeof(int64_t)));
    CUDA_OK(cudaMemcpy(d_typed, host, span, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_nodes, L->nodes, L->nnodes * sizeof(gcommi_dl_t), cudaMemcpyHostToDevice));
    if (L->naux)
        CUDA_OK(cudaMemcpy(d_aux, L->aux, L->naux * sizeof(int64_t), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(d_packed, 0xa5, total)); /* poison */
    gather_bytes<<<256, 256>>>(d_nodes, d_aux, L->size, L->extent, d_typed - lo, d_packed,
                               (int64_t)total);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(got, d_packed, total, cudaMemcpyDeviceToHost));
    TEST_CHECK(memcmp(got, ref, total) == 0, "%s: GPU gather differs from gcomm_pack", name);
    printf("%-24s %zu x, %zu packed bytes, %d nodes: %s\n", name, count, total, L->nnodes,
           memcmp(got, ref, total) ? "MISMATCH" : "ok");
    cudaFree(d_typed);
    cudaFree(d_packed);
    cudaFree(d_nodes);
    cudaFree(d_aux);
    free(host);
    free(ref);
    free(got);
    gcomm_type_free(&t);
}

int main(void)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("SKIP: no usable GPU (cudaGetDeviceCount reports %d)\n", ndev);
        return GCOMM_TEST_SKIP;
    }
    uint64_t rng = gcommt_seed(12345);
    gcomm_datatype t, a, b;

    gcomm_type_vector(1000, 3, 7, GCOMM_DOUBLE, &t);
    check_type("vector", t, 3, &rng);

    int n = 300, bl[300], d[300];
    for (int i = 0; i < n; i++) bl[i] = i + 1, d[i] = i * n;
    gcomm_type_indexed(n, bl, d, GCOMM_DOUBLE, &t);
    check_type("lower triangle", t, 1, &rng);

    int mbl[4] = {1, 1, 1, 1};
    ptrdiff_t md[4] = {0, 8, 12, 16};
    gcomm_datatype mt[4] = {GCOMM_DOUBLE, GCOMM_INT, GCOMM_INT, GCOMM_CHAR};
    gcomm_type_struct(4, mbl, md, mt, &t);
    check_type("struct {d,i,i,c}", t, 1000, &rng);

    int sz[4] = {12, 11, 10, 9}, sub[4] = {6, 5, 4, 3}, st[4] = {3, 2, 1, 4};
    gcomm_type_subarray(4, sz, sub, st, GCOMM_ORDER_C, GCOMM_FLOAT, &t);
    check_type("4-D subarray", t, 2, &rng);

    gcomm_type_vector(512, 1, 512, GCOMM_DOUBLE, &a);
    gcomm_type_resized(a, 0, 8, &b);
    gcomm_type_contiguous(512, b, &t);
    gcomm_type_free(&a);
    gcomm_type_free(&b);
    check_type("transpose 512^2", t, 1, &rng);

    gcomm_type_hvector(40, 2, -24, GCOMM_INT16, &t);
    check_type("negative hvector", t, 4, &rng);
    return gcommt_finish("test_gpu_locate");
}
