/* The few things the rank library (rank_impl.h) needs from the agent that runs a rank: a thread
 * block of a GPU, or a host thread (host ranks, gcomm_launch_host). Everything else in the rank
 * library is written once over these, for both.
 *
 *                   GPU block                      host thread
 *   block sync      __syncthreads                  nothing (one thread is the whole rank)
 *   thread index    threadIdx (0 .. nthreads-1)    0 of 1
 *   rank index      blockIdx.x                     the index gcomm_launch_host gave the thread
 *   clock           %globaltimer                   CLOCK_MONOTONIC
 *   pause           __nanosleep                    sched_yield, then nanosleep (host ranks may
 *                                                  outnumber the cores: a waiting rank must let
 *                                                  the rank it waits for run)
 *   atomics         atomicExch, atomicCAS_system   __atomic builtins
 * Internal; public because the rank library is header-only. */
#ifndef GCOMM_DETAIL_RANK_PRIMS_H
#define GCOMM_DETAIL_RANK_PRIMS_H

#include <stdint.h>

#include "gcomm/detail/hd.h"

#if !defined(__CUDA_ARCH__)
#include <stdio.h>
#include <stdlib.h>
#endif

/* The host side lives in libgcomm (host_ranks.c), so this header needs nothing beyond C11. */
#ifdef __cplusplus
extern "C" {
#endif
/* The rank index of the calling host thread (set by gcomm_launch_host; -1 outside a host rank). */
int gcommi_host_rank(void);
/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t gcommi_host_now_ns(void);
/* A polling host rank that found nothing `spins` times in a row lets the others run. */
void gcommi_host_pause(uint32_t spins);
#ifdef __cplusplus
}
#endif

/* Loops whose trip count the device code wants unrolled (lanes, vector loads). */
#if defined(__CUDA_ARCH__)
#define GCOMMI_UNROLL _Pragma("unroll")
#else
#define GCOMMI_UNROLL
#endif

GCOMM_HD_INLINE void gcommi_block_sync(void)
{
#if defined(__CUDA_ARCH__)
    __syncthreads();
#endif
}

GCOMM_HD_INLINE int gcommi_tid(void)
{
#if defined(__CUDA_ARCH__)
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
#else
    return 0;
#endif
}

GCOMM_HD_INLINE int gcommi_nthreads(void)
{
#if defined(__CUDA_ARCH__)
    return blockDim.x * blockDim.y * blockDim.z;
#else
    return 1;
#endif
}

/* This rank's index among the ranks of its GPU (or of its process's host ranks). */
GCOMM_HD_INLINE int gcommi_block_index(void)
{
#if defined(__CUDA_ARCH__)
    return (int)blockIdx.x;
#else
    return gcommi_host_rank();
#endif
}

/* The grid is one-dimensional (a GPU launch) or this is a host rank. */
GCOMM_HD_INLINE int gcommi_grid_ok(void)
{
#if defined(__CUDA_ARCH__)
    return gridDim.y == 1 && gridDim.z == 1;
#else
    return gcommi_host_rank() >= 0;
#endif
}

GCOMM_HD_INLINE uint64_t gcommi_now_ns(void)
{
#if defined(__CUDA_ARCH__)
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#else
    return gcommi_host_now_ns();
#endif
}

/* Backs off in a polling loop that found nothing `spins` times in a row. */
GCOMM_HD_INLINE void gcommi_pause(uint32_t spins)
{
#if defined(__CUDA_ARCH__)
    if (spins > 0) __nanosleep(32);
#else
    gcommi_host_pause(spins);
#endif
}

/* Polling loops of the rank library that are tight on the GPU (a miss costs a memory latency)
 * but must let other threads run on the host. */
GCOMM_HD_INLINE void gcommi_poll_idle(uint32_t spins)
{
#if defined(__CUDA_ARCH__)
    (void)spins;
#else
    gcommi_pause(spins);
#endif
}

GCOMM_HD_INLINE uint32_t gcommi_xchg(uint32_t *p, uint32_t v)
{
#if defined(__CUDA_ARCH__)
    return atomicExch((unsigned int *)p, v);
#else
    return __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL);
#endif
}

/* Compare-and-swap visible to every GPU and the host. */
GCOMM_HD_INLINE uint32_t gcommi_cas_sys(uint32_t *p, uint32_t expected, uint32_t desired)
{
#if defined(__CUDA_ARCH__)
    return atomicCAS_system((unsigned int *)p, expected, desired);
#else
    __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return expected;
#endif
}

/* Position of the least significant set bit, from 1; 0 for 0. */
GCOMM_HD_INLINE int gcommi_ffs(uint32_t x)
{
#if defined(__CUDA_ARCH__)
    return __ffs((int)x);
#else
    return __builtin_ffs((int)x);
#endif
}

/* A rank body that was not started by gcomm: nothing can be reported, so stop loudly. */
GCOMM_HD_INLINE void gcommi_stop_loudly(const void *param)
{
#if defined(__CUDA_ARCH__)
    printf("gcomm: block %d: gcomm_init: the kernel was not launched by gcomm_launch with "
           "matching gcomm headers (parameter %p)\n",
           (int)blockIdx.x, param);
    __trap();
#else
    fprintf(stderr, "gcomm: gcomm_rank_init: not called from a rank started by gcomm_launch_host "
            "with matching gcomm headers (parameter %p, host rank %d)\n",
            param, gcommi_host_rank());
    abort();
#endif
}

#endif /* GCOMM_DETAIL_RANK_PRIMS_H */
