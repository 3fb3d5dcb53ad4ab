/* Memory-ordering primitives for logic shared by host and device (queues, matching, barriers).
 *
 * On the device they are single PTX instructions with the scope written out: `_gpu` orders
 * against threads of the same GPU, `_sys` against other GPUs and host threads (peer memory over
 * NVLink/PCIe, mapped host memory). On the host they are C11-style __atomic builtins (the host is
 * one coherence domain, so both scopes are the same). Only 32-bit words: every flag and counter
 * the runtime shares fits, and 32-bit accesses are single-copy atomic everywhere. */
#ifndef GCOMM_DETAIL_ATOMIC_H
#define GCOMM_DETAIL_ATOMIC_H

#include <stdint.h>

#include "gcomm/detail/hd.h"

/* ThreadSanitizer does not model fences (GCC says so at compile time), and the runtime orders
 * most of its relaxed accesses with them: under TSan the host's relaxed loads, stores and
 * fetch-adds become acquire, release and acq_rel, which TSan does model, so that what it reports
 * is a race and not a fence it cannot see (make tsan: host ranks, queues, notifications). It then
 * finds plain accesses that nothing orders, not a fence that is missing: those are the GPU stress
 * tests' and compute-sanitizer's to find. Other builds keep relaxed (the same object code). */
#if !defined(__CUDA_ARCH__)
#if defined(__SANITIZE_THREAD__)
#define GCOMMI_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GCOMMI_TSAN 1
#endif
#endif
#ifdef GCOMMI_TSAN
#define GCOMMI_HOST_LD_RELAXED __ATOMIC_ACQUIRE
#define GCOMMI_HOST_ST_RELAXED __ATOMIC_RELEASE
#define GCOMMI_HOST_RMW_RELAXED __ATOMIC_ACQ_REL
#else
#define GCOMMI_HOST_LD_RELAXED __ATOMIC_RELAXED
#define GCOMMI_HOST_ST_RELAXED __ATOMIC_RELAXED
#define GCOMMI_HOST_RMW_RELAXED __ATOMIC_RELAXED
#endif
#endif

#if defined(__CUDA_ARCH__)
#define GCOMMI_LD(sem, scope, p, v)                                                               \
    asm volatile("ld." sem "." scope ".u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory")
#define GCOMMI_ST(sem, scope, p, v)                                                               \
    asm volatile("st." sem "." scope ".u32 [%0], %1;" ::"l"(p), "r"(v) : "memory")
#define GCOMMI_ADD(sem, scope, p, v, old)                                                         \
    asm volatile("atom." sem "." scope ".add.u32 %0, [%1], %2;"                                   \
                 : "=r"(old) : "l"(p), "r"(v) : "memory")
#endif

GCOMM_HD_INLINE uint32_t gcommi_ld_acquire_gpu(const uint32_t *p)
{
#if defined(__CUDA_ARCH__)
    uint32_t v;
    GCOMMI_LD("acquire", "gpu", p, v);
    return v;
#else
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

GCOMM_HD_INLINE uint32_t gcommi_ld_acquire_sys(const uint32_t *p)
{
#if defined(__CUDA_ARCH__)
    uint32_t v;
    GCOMMI_LD("acquire", "sys", p, v);
    return v;
#else
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

GCOMM_HD_INLINE uint32_t gcommi_ld_acquire(const uint32_t *p, int sys)
{
    return sys ? gcommi_ld_acquire_sys(p) : gcommi_ld_acquire_gpu(p);
}

/* A load that is never served from a stale cache line and orders nothing: for polling, where
 * an acquire fence follows once the value is the one waited for. */
GCOMM_HD_INLINE uint32_t gcommi_ld_relaxed_sys(const uint32_t *p)
{
#if defined(__CUDA_ARCH__)
    uint32_t v;
    GCOMMI_LD("relaxed", "sys", p, v);
    return v;
#else
    return __atomic_load_n(p, GCOMMI_HOST_LD_RELAXED);
#endif
}

GCOMM_HD_INLINE uint32_t gcommi_ld_relaxed_gpu(const uint32_t *p)
{
#if defined(__CUDA_ARCH__)
    uint32_t v;
    GCOMMI_LD("relaxed", "gpu", p, v);
    return v;
#else
    return __atomic_load_n(p, GCOMMI_HOST_LD_RELAXED);
#endif
}

GCOMM_HD_INLINE uint32_t gcommi_ld_relaxed(const uint32_t *p, int sys)
{
    return sys ? gcommi_ld_relaxed_sys(p) : gcommi_ld_relaxed_gpu(p);
}

GCOMM_HD_INLINE void gcommi_st_release_gpu(uint32_t *p, uint32_t v)
{
#if defined(__CUDA_ARCH__)
    GCOMMI_ST("release", "gpu", p, v);
#else
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

GCOMM_HD_INLINE void gcommi_st_release_sys(uint32_t *p, uint32_t v)
{
#if defined(__CUDA_ARCH__)
    GCOMMI_ST("release", "sys", p, v);
#else
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

GCOMM_HD_INLINE void gcommi_st_relaxed_sys(uint32_t *p, uint32_t v)
{
#if defined(__CUDA_ARCH__)
    GCOMMI_ST("relaxed", "sys", p, v);
#else
    __atomic_store_n(p, v, GCOMMI_HOST_ST_RELAXED);
#endif
}

GCOMM_HD_INLINE void gcommi_st_release(uint32_t *p, uint32_t v, int sys)
{
    if (sys) gcommi_st_release_sys(p, v);
    else gcommi_st_release_gpu(p, v);
}

/* 64-bit words: a notification is one of them, written and read in one single-copy-atomic
 * access. */
GCOMM_HD_INLINE uint64_t gcommi_ld_relaxed64(const uint64_t *p, int sys)
{
#if defined(__CUDA_ARCH__)
    uint64_t v;
    if (sys) asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    else asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
#else
    (void)sys;
    return __atomic_load_n(p, GCOMMI_HOST_LD_RELAXED);
#endif
}

/* An acquire load of a 64-bit word: a single poller's load that also orders what follows (cheaper
 * than a relaxed load followed by a fence, measured by bench/bench_rma_parts.cu). */
GCOMM_HD_INLINE uint64_t gcommi_ld_acquire64(const uint64_t *p, int sys)
{
#if defined(__CUDA_ARCH__)
    uint64_t v;
    if (sys) asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    else asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
#else
    (void)sys;
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

GCOMM_HD_INLINE void gcommi_st_release64(uint64_t *p, uint64_t v, int sys)
{
#if defined(__CUDA_ARCH__)
    if (sys) asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
    else asm volatile("st.release.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
    (void)sys;
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

/* Fetch-and-add, relaxed: reservations of queue slots and barrier arrivals, whose ordering comes
 * from the fences and release/acquire pairs around them. */
GCOMM_HD_INLINE uint32_t gcommi_fetch_add_gpu(uint32_t *p, uint32_t v)
{
#if defined(__CUDA_ARCH__)
    uint32_t old;
    GCOMMI_ADD("relaxed", "gpu", p, v, old);
    return old;
#else
    return __atomic_fetch_add(p, v, GCOMMI_HOST_RMW_RELAXED);
#endif
}

GCOMM_HD_INLINE uint32_t gcommi_fetch_add_sys(uint32_t *p, uint32_t v)
{
#if defined(__CUDA_ARCH__)
    uint32_t old;
    GCOMMI_ADD("relaxed", "sys", p, v, old);
    return old;
#else
    return __atomic_fetch_add(p, v, GCOMMI_HOST_RMW_RELAXED);
#endif
}

/* Acquire-release fences. */
GCOMM_HD_INLINE void gcommi_fence_gpu(void)
{
#if defined(__CUDA_ARCH__)
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_ACQ_REL);
#endif
}

GCOMM_HD_INLINE void gcommi_fence_sys(void)
{
#if defined(__CUDA_ARCH__)
    asm volatile("fence.acq_rel.sys;" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_ACQ_REL);
#endif
}

GCOMM_HD_INLINE void gcommi_fence(int sys)
{
    if (sys) gcommi_fence_sys();
    else gcommi_fence_gpu();
}

/* The acquire half of a fence (PTX 8.6): after a relaxed load that saw a release, it makes what
 * the releasing thread wrote visible to this one. On a hit it costs less than having polled with
 * acquire loads (bench_rma_parts, acqfence: 0.85 against 0.93 us on one GPU), and far less than
 * fence.acq_rel (which also waits for this thread's own stores). */
GCOMM_HD_INLINE void gcommi_fence_acquire(int sys)
{
#if defined(__CUDA_ARCH__)
    if (sys) asm volatile("fence.acquire.sys;" ::: "memory");
    else asm volatile("fence.acquire.gpu;" ::: "memory");
#else
    (void)sys;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
}

/* Two adjacent 64-bit words (16-byte aligned) stored or loaded with one relaxed vector access.
 * Only each word is single-copy atomic, not the pair: the inline notifications (notif.h) put a
 * sequence number into every word for that reason. */
GCOMM_HD_INLINE void gcommi_st_relaxed64x2(uint64_t *p, uint64_t a, uint64_t b, int sys)
{
#if defined(__CUDA_ARCH__)
    if (sys) asm volatile("st.relaxed.sys.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b)
                          : "memory");
    else asm volatile("st.relaxed.gpu.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b)
                      : "memory");
#else
    (void)sys;
    __atomic_store_n(p, a, GCOMMI_HOST_ST_RELAXED);
    __atomic_store_n(p + 1, b, GCOMMI_HOST_ST_RELAXED);
#endif
}

GCOMM_HD_INLINE void gcommi_ld_relaxed64x2(const uint64_t *p, uint64_t *a, uint64_t *b, int sys)
{
#if defined(__CUDA_ARCH__)
    uint64_t x, y;
    if (sys) asm volatile("ld.relaxed.sys.v2.u64 {%0, %1}, [%2];" : "=l"(x), "=l"(y)
                          : "l"(p) : "memory");
    else asm volatile("ld.relaxed.gpu.v2.u64 {%0, %1}, [%2];" : "=l"(x), "=l"(y)
                      : "l"(p) : "memory");
    *a = x;
    *b = y;
#else
    (void)sys;
    *a = __atomic_load_n(p, GCOMMI_HOST_LD_RELAXED);
    *b = __atomic_load_n(p + 1, GCOMMI_HOST_LD_RELAXED);
#endif
}

/* Sequentially consistent fence at system scope: what a flush waits for (every earlier store of
 * this thread performed for every observer). */
GCOMM_HD_INLINE void gcommi_fence_sc_sys(void)
{
#if defined(__CUDA_ARCH__)
    asm volatile("fence.sc.sys;" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

#endif /* GCOMM_DETAIL_ATOMIC_H */
