/* The hardware ceiling of the vector access pattern on a GPU: hand-written gather (pack) and
 * scatter (unpack) kernels for blocks of B bytes at a stride of 2B, with nothing but a shift and a
 * division by a constant per 16-byte word and four words in flight per thread, timed against
 * cudaMemcpy in the same run. If these ideal kernels miss a target, no datatype engine can meet it
 * on that GPU; docs/BENCHMARKS.md compares gcomm with them.
 * Usage: bench_strided_ceiling   (256 MiB packed; exit 77 without a GPU) */
#include <cuda_runtime.h>
#include <stdio.h>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));        \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

/* dir 1: gather typed -> packed; dir 0: scatter packed -> typed. wpb: 16-byte words per block. */
__global__ void strided_ideal(uint4 *__restrict__ typed, uint4 *__restrict__ packed, long n,
                              int wpb, int dir)
{
    long g = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += 4 * g) {
        uint4 v[4];
        long t[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            long ii = i + u * g < n ? i + u * g : i;
            long b = ii / wpb;
            t[u] = 2 * b * wpb + (ii - b * wpb);
            v[u] = dir ? typed[t[u]] : packed[ii];
        }
#pragma unroll
        for (int u = 0; u < 4; u++)
            if (i + u * g < n) {
                if (dir) packed[i + u * g] = v[u];
                else typed[t[u]] = v[u];
            }
    }
}

int main(void)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("SKIP: no usable GPU\n");
        return 77;
    }
    const long bytes = 256l << 20, n = bytes / 16;
    char *typed, *packed;
    CK(cudaMalloc((void **)&typed, 2 * bytes));
    CK(cudaMalloc((void **)&packed, bytes));
    CK(cudaMemset(typed, 1, 2 * bytes));
    CK(cudaMemset(packed, 2, bytes));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int blocks[4] = {16, 64, 256, 2048}, per_sm[3] = {8, 16, 32};
    printf("# GB/s count read + write; median-free best of 10 runs (a ceiling)\n");
    printf("%-8s %-7s %10s %8s %10s %8s %10s\n", "block", "grid", "gather", "%memcpy", "scatter",
           "%memcpy", "memcpy");
    for (int bi = 0; bi < 4; bi++)
        for (int gi = 0; gi < 3; gi++) {
            int grid = per_sm[gi] * sms, wpb = blocks[bi] / 16;
            float best[3] = {1e9f, 1e9f, 1e9f}, ms;
            for (int r = 0; r < 10; r++)
                for (int k = 0; k < 3; k++) {
                    CK(cudaEventRecord(a));
                    if (k < 2)
                        strided_ideal<<<grid, 256>>>((uint4 *)typed, (uint4 *)packed, n, wpb, k == 0);
                    else
                        CK(cudaMemcpyAsync(packed, typed, bytes, cudaMemcpyDeviceToDevice));
                    CK(cudaEventRecord(b));
                    CK(cudaEventSynchronize(b));
                    CK(cudaEventElapsedTime(&ms, a, b));
                    if (ms < best[k]) best[k] = ms;
                }
            CK(cudaGetLastError());
            printf("%5d B  %-7d %10.0f %7.1f%% %10.0f %7.1f%% %10.0f\n", blocks[bi], grid,
                   2 * bytes / best[0] / 1e6, 100 * best[2] / best[0], 2 * bytes / best[1] / 1e6,
                   100 * best[2] / best[1], 2 * bytes / best[2] / 1e6);
        }
    return 0;
}
