/* bench_prefetch_overrun: which lines past a copied block do the hardware prefetchers fetch?
 * (issue 2: why a pack of vector_bl256 in the cache ran at 80-90% of one memcpy of its bytes).
 *
 * For each block length, the source is `--blocks` blocks, one at the start of each `--stride`
 * span (4 KiB pages, no huge pages), as a vector of that block length packs it. Each trial flushes
 * the source and the packed buffer from every cache level (clflush), copies the blocks once with
 * the loop under test, then loads line k of every span in a random order and times each load
 * with rdtscp (after 200 untimed passes of the same loop: the prefetchers adapt to the code that
 * ran before). A line that was fetched loads from the caches, one that was not from DRAM. Reported
 * per line k of the span: the median over the spans (and over --trials trials) in TSC ticks; the
 * summary counts the lines past the block that loaded from the caches (below half-way between the
 * block's own lines and a line loaded right after a flush).
 *
 * Loops (the same 128-byte moves of four 32-byte loads and stores):
 *   forward    each block from its start, its first line prefetched two blocks ahead (gcomm's
 *              in-cache vector loop on Zen 4 before 2026-11-29)
 *   down       each block from its start, the whole block two ahead prefetched from its end down,
 *              two lines per 128 bytes copied (strided_vec_pf in src/datatype/pack_host.c now)
 *   backward   each block from its end down, no software prefetch
 *
 * x86-64 only (clflush, rdtscp). Not a CTest: it times single loads. Typical run (docs/BENCHMARKS.md):
 *   bench_prefetch_overrun --lines   (the per-line table for 2 KiB blocks)
 *   bench_prefetch_overrun           (the summary for blocks of 256 B to 3 KiB) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__x86_64__)
#include <immintrin.h>
#include <x86intrin.h>

#include "bench_move_avx2.h"

#define LINE 64

typedef enum { LOOP_FORWARD, LOOP_DOWN, LOOP_BACKWARD, NLOOPS } loop_t;
static const char *const loop_names[NLOOPS] = {"forward", "down", "backward"};


/* One pass of `loop` over nb blocks of blk bytes (a multiple of 128) every stride bytes. */
__attribute__((target("avx2"))) static void pack_blocks(loop_t loop, char *dst, const char *src,
                                                       size_t blk, size_t stride, size_t nb)
{
    for (size_t b = 0; b < nb; b++, dst += blk, src += stride) {
        const char *ahead = b + 2 < nb ? src + 2 * stride : NULL;
        if (loop == LOOP_BACKWARD) {
            for (size_t i = blk; i >= 128; i -= 128) bench_move128_avx2(dst + i - 128, src + i - 128);
            continue;
        }
        if (loop == LOOP_FORWARD && ahead) __builtin_prefetch(ahead, 0, 3);
        const char *q = ahead ? ahead + blk : NULL;
        for (size_t i = 0; i < blk; i += 128) {
            if (loop == LOOP_DOWN && q) {
                __builtin_prefetch(q - LINE, 0, 3);
                __builtin_prefetch(q - 2 * LINE, 0, 3);
                q -= 2 * LINE;
            }
            bench_move128_avx2(dst + i, src + i);
        }
    }
}

static inline uint64_t timed_load(const volatile char *a)
{
    unsigned aux;
    _mm_lfence();
    uint64_t t0 = __rdtscp(&aux);
    (void)*a;
    uint64_t t1 = __rdtscp(&aux);
    _mm_lfence();
    return t1 - t0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A random order of the spans (Fisher-Yates, xorshift64): a probe in a fixed stride would train
 * the stride prefetcher, which then fetches the lines it is to time. */
static void shuffle(size_t *order, size_t n, uint64_t *rng)
{
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        size_t j = (size_t)(*rng % (i + 1));
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

static void flush(const char *p, size_t n)
{
    for (size_t o = 0; o < n; o += LINE) _mm_clflush(p + o);
    _mm_mfence();
}

/* med[k]: median load time of line k of the spans after one pass of `loop`; *cold: the same of
 * line 0 after a flush and no pass (a load from DRAM). */
static int probe(loop_t loop, size_t blk, size_t stride, size_t nb, int trials, double *med,
                 double *cold)
{
    size_t span = nb * stride, lines = stride / LINE;
    char *src = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *dst = mmap(NULL, nb * blk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint64_t *lat = malloc(nb * (size_t)trials * sizeof *lat), rng = 0x9E3779B97F4A7C15ull;
    size_t *order = malloc(nb * sizeof *order);
    if (src == MAP_FAILED || dst == MAP_FAILED || !lat || !order) {
        fprintf(stderr, "out of memory\n");
        return -1;
    }
#ifdef MADV_NOHUGEPAGE
    madvise(src, span, MADV_NOHUGEPAGE); /* 4 KiB pages, where the prefetchers stop */
    madvise(dst, nb * blk, MADV_NOHUGEPAGE);
#endif
    memset(src, 1, span);
    memset(dst, 2, nb * blk);
    /* The prefetchers adapt to what ran before (a loop probed after another can find them
     * throttled): passes of this loop first. */
    for (int w = 0; w < 200; w++) pack_blocks(loop, dst, src, blk, stride, nb);
    for (size_t k = 0; k < lines; k++) {
        size_t n = 0;
        for (int t = 0; t < trials; t++) {
            flush(src, span);
            flush(dst, nb * blk);
            pack_blocks(loop, dst, src, blk, stride, nb);
            _mm_mfence();
            shuffle(order, nb, &rng);
            for (size_t i = 0; i < nb; i++) lat[n++] = timed_load(src + order[i] * stride + k * LINE);
        }
        qsort(lat, n, sizeof *lat, cmp_u64);
        med[k] = (double)lat[n / 2];
    }
    size_t n = 0;
    for (int t = 0; t < trials; t++) {
        flush(src, span);
        shuffle(order, nb, &rng);
        for (size_t i = 0; i < nb; i++) lat[n++] = timed_load(src + order[i] * stride);
    }
    qsort(lat, n, sizeof *lat, cmp_u64);
    *cold = (double)lat[n / 2];
    free(lat);
    free(order);
    munmap(src, span);
    munmap(dst, nb * blk);
    return 0;
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K' || *end == 'k') v *= 1024;
    return v > 0 ? (size_t)v : 0;
}

int main(int argc, char **argv)
{
    size_t stride = 4096, nb = 512, one_blk = 0;
    int trials = 3, per_line = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--stride") && i + 1 < argc) stride = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "--blocks") && i + 1 < argc) nb = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "--block") && i + 1 < argc) one_blk = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "--trials") && i + 1 < argc) trials = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--lines")) per_line = 1;
        else {
            fprintf(stderr,
                    "usage: %s [--block B] [--stride S] [--blocks N] [--trials T] [--lines]\n"
                    "  --block B   one block length (a multiple of 128 below the stride; default:\n"
                    "              256, 512, 1K, 2K, 3K, or 2K with --lines)\n"
                    "  --stride S  bytes from one block to the next (default 4K)\n"
                    "  --blocks N  blocks per pass (default 512)\n"
                    "  --trials T  passes per line probed (default 3)\n"
                    "  --lines     print the median load time of every line of the span\n",
                    argv[0]);
            return 2;
        }
    }
    if (!__builtin_cpu_supports("avx2")) {
        printf("bench_prefetch_overrun: skipped, this CPU has no AVX2\n");
        return 77;
    }
    size_t blks[8], nblk = 0;
    if (one_blk) blks[nblk++] = one_blk;
    else if (per_line) blks[nblk++] = 2048;
    else {
        static const size_t def[] = {256, 512, 1024, 2048, 3072};
        for (size_t i = 0; i < sizeof def / sizeof *def; i++)
            if (def[i] < stride) blks[nblk++] = def[i];
    }
    size_t lines = stride / LINE;
    if (stride % LINE || lines < 2 || nb < 3 || trials < 1) {
        fprintf(stderr, "bad --stride, --blocks or --trials\n");
        return 2;
    }
    double *med = malloc(lines * sizeof *med);
    if (!med) return 1;
    printf("# bench_prefetch_overrun: %zu blocks every %zu bytes, %d trials; load times in TSC "
           "ticks (rdtscp), median over the spans\n", nb, stride, trials);
    if (!per_line)
        printf("%-8s %6s %10s %10s %10s %14s %12s\n", "loop", "block", "own_lines", "block_ld",
               "cold_ld", "past_cached", "furthest");
    for (size_t bi = 0; bi < nblk; bi++) {
        size_t blk = blks[bi], own = blk / LINE;
        if (blk % 128 || blk >= stride) {
            fprintf(stderr, "block %zu: not a multiple of 128 below the stride\n", blk);
            return 2;
        }
        for (int l = 0; l < NLOOPS; l++) {
            double cold;
            if (probe((loop_t)l, blk, stride, nb, trials, med, &cold)) return 1;
            double own_ld = med[own / 2], cut = (own_ld + cold) / 2;
            size_t past = 0, furthest = 0;
            for (size_t k = own; k < lines; k++)
                if (med[k] < cut) {
                    past++;
                    furthest = k;
                }
            if (per_line) {
                printf("%s, block %zu (lines 0-%zu):\n", loop_names[l], blk, own - 1);
                for (size_t k = 0; k < lines; k++)
                    printf("%3zu:%5.0f%s", k, med[k], k % 8 == 7 ? "\n" : "  ");
            } else if (past) {
                printf("%-8s %6zu %10zu %10.0f %10.0f %14zu %12zu\n", loop_names[l], blk, own,
                       own_ld, cold, past, furthest);
            } else {
                printf("%-8s %6zu %10zu %10.0f %10.0f %14zu %12s\n", loop_names[l], blk, own,
                       own_ld, cold, past, "-");
            }
        }
    }
    free(med);
    return 0;
}
#else
int main(void)
{
    printf("bench_prefetch_overrun: skipped, x86-64 only\n");
    return 77;
}
#endif
