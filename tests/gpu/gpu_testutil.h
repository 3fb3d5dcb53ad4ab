/* Shared by the GPU tests: CUDA_OK stops the test with the failing call, file, line and CUDA's
 * error string (a test cannot go on sensibly after a CUDA error). */
#ifndef GCOMM_GPU_TESTUTIL_H
#define GCOMM_GPU_TESTUTIL_H

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDA_OK(call)                                                                          \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

#endif /* GCOMM_GPU_TESTUTIL_H */
