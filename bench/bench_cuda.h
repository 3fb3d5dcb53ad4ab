/* Checks for the GPU benchmarks: a failed CUDA or gcomm call ends the benchmark with where and why
 * (a benchmark that goes on after a failure reports figures of nothing). */
#ifndef GCOMM_BENCH_CUDA_H
#define GCOMM_BENCH_CUDA_H

#include <stdio.h>
#include <stdlib.h>

#include "gcomm/status.h"

#define CK(call)                                                                               \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

#define GK(call)                                                                               \
    do {                                                                                       \
        int r_ = (call);                                                                       \
        if (r_ != GCOMM_SUCCESS) {                                                             \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call,                 \
                    gcomm_error_string(r_), gcomm_last_error_detail());                        \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

/* Copies 16-byte words i, i + nt, ... below n from s to d with four loads in flight per thread
 * before the stores: enough bytes in flight to cover the DRAM latency when every SM copies (the
 * plain copy kernels the benchmarks compare with, and bench_overlap's memory-bound workload). */
static __device__ __forceinline__ void bench_copy_words(const uint4 *s, uint4 *d, size_t i,
                                                        size_t n, size_t nt)
{
    for (; i + 3 * nt < n; i += 4 * nt) {
        uint4 a = s[i], b = s[i + nt], c = s[i + 2 * nt], e = s[i + 3 * nt];
        d[i] = a;
        d[i + nt] = b;
        d[i + 2 * nt] = c;
        d[i + 3 * nt] = e;
    }
    for (; i < n; i += nt) d[i] = s[i];
}

#endif /* GCOMM_BENCH_CUDA_H */
