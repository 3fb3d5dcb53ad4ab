/* CUDA_TRY(call, what): returns GCOMM_ERR_CUDA with "what: CUDA's message" as the detail when a
 * CUDA runtime call fails (and clears CUDA's sticky last error). For the runtime's CUDA files. */
#ifndef GCOMM_RMA_CUDA_TRY_H
#define GCOMM_RMA_CUDA_TRY_H

#include <cuda_runtime_api.h>

#include "common/error.h"

#define CUDA_TRY(call, what)                                                                   \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            cudaGetLastError();                                                                \
            return GCOMMI_ERROR(GCOMM_ERR_CUDA, "%s: %s", what, cudaGetErrorString(e_));       \
        }                                                                                      \
    } while (0)

#endif /* GCOMM_RMA_CUDA_TRY_H */
