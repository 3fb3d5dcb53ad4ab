/* The 128-byte move of the CPU probes' own copy loops (bench_pack_cpu_ceiling,
 * bench_prefetch_overrun, bench_page_jump): four unaligned 32-byte loads, then four stores. The
 * probes write their loops independently of the library's (src/datatype/pack_host.c), so that
 * they measure the hardware rather than gcomm's code; they share this one move among themselves.
 * x86-64 only; include after <immintrin.h>. */
#ifndef GCOMM_BENCH_MOVE_AVX2_H
#define GCOMM_BENCH_MOVE_AVX2_H

#include <immintrin.h>

__attribute__((target("avx2"), always_inline)) static inline void bench_move128_avx2(char *d,
                                                                                   const char *s)
{
    __m256i a = _mm256_loadu_si256((const __m256i *)s);
    __m256i b = _mm256_loadu_si256((const __m256i *)(s + 32));
    __m256i c = _mm256_loadu_si256((const __m256i *)(s + 64));
    __m256i e = _mm256_loadu_si256((const __m256i *)(s + 96));
    _mm256_storeu_si256((__m256i *)d, a);
    _mm256_storeu_si256((__m256i *)(d + 32), b);
    _mm256_storeu_si256((__m256i *)(d + 64), c);
    _mm256_storeu_si256((__m256i *)(d + 96), e);
}

#endif
