/* GCOMM_HD marks logic shared by host and device: __host__ __device__ under nvcc, nothing under a
 * C compiler. Such functions are written once, in headers, and unit-tested on the CPU.
 * (Public because the header-only device API is built from such functions.) */
#ifndef GCOMM_DETAIL_HD_H
#define GCOMM_DETAIL_HD_H

#if defined(__CUDACC__)
#define GCOMM_HD __host__ __device__
#define GCOMM_HD_INLINE static inline __host__ __device__
#else
#define GCOMM_HD
#define GCOMM_HD_INLINE static inline
#endif

#endif /* GCOMM_DETAIL_HD_H */
