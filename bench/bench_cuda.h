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

#endif /* GCOMM_BENCH_CUDA_H */
