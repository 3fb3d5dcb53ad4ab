/* GCOMM_HD marks logic shared by host and device: __host__ __device__ under nvcc, nothing under a
 * C compiler. Such functions are written once, in headers, and unit-tested on the CPU.
 * (Public because the header-only device API is built from such functions.) */
#ifndef GCOMM_DETAIL_HD_H
#define GCOMM_DETAIL_HD_H

/* GCOMM_HD_COLD: a function of a rarely taken path kept out of line on the device (a call),
 * so that its registers are not added to those its callers hold live around it: a kernel's
 * register count is its most crowded point, and it bounds how many ranks an SM holds. Not
 * `inline` under nvcc (gcc warns about an inline function declared noinline), hence `unused`
 * for translation units that never call it; a C compiler inlines it as any other. */
#if defined(__CUDACC__)
#define GCOMM_HD __host__ __device__
#define GCOMM_HD_INLINE static inline __host__ __device__
#define GCOMM_HD_COLD static __noinline__ __host__ __device__ __attribute__((unused))
#else
#define GCOMM_HD
#define GCOMM_HD_INLINE static inline
#define GCOMM_HD_COLD static inline
#endif

#endif /* GCOMM_DETAIL_HD_H */
