/* bench_page_jump: what a copy pays for each 4 KiB page it enters by a jump (issue 2: why the
 * in-cache pack of vector_bl256 at 4 MiB stays under 90% of memcpy on 4 KiB pages).
 *
 * Copies --bytes bytes from a source laid out as chunks of C bytes every S bytes (each chunk
 * starts a page) into a contiguous destination, with one loop of 128-byte AVX2 moves, and times
 * it against glibc's memcpy of the same bytes and against the same loop over contiguous chunks,
 * all interleaved in one bench_measure call (bench_util.h: warm-up, medians of per-round ratios,
 * descheduled samples dropped). Layouts (C/S):
 *   4K/4K    contiguous chunks: the loop's own cost against memcpy, no jump
 *   2K/4K    the first half of every page (vector_bl256's layout: adjacent pages, each entered
 *            after skipping the rest of the one before)
 *   4K/8K    whole pages, every other page (memcpy's page count, no partial page)
 *   4K/16K   whole pages, every fourth page
 *   8K/16K   two pages, then two skipped
 * Each layout is timed twice: plain, and with the first line of the chunk two ahead prefetched
 * (`+pf`, what gcomm does on Zen 4 in the cache for most blocks). Reported per layout: % of memcpy
 * (median of the per-round ratios) and the cost per jump, (median time - memcpy's median time) /
 * jumps, in ns. With --huge-pages every buffer (memcpy's too) is on transparent huge pages. Every
 * layout's output is compared byte for byte with the source chunks after the timed runs; exit
 * status 1 when one differs.
 *
 * x86-64 with AVX2 only. CTest runs --quick for the checks; the BENCHMARKS.md commands:
 *   bench_page_jump --bytes 4M; bench_page_jump --bytes 4M --huge-pages */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "bench_move_avx2.h"

typedef struct {
    const char *name;
    size_t chunk, stride;
} layout_t;

static const layout_t layouts[] = {{"4K/4K", 4096, 4096},   {"2K/4K", 2048, 4096},
                                   {"4K/8K", 4096, 8192},   {"4K/16K", 4096, 16384},
                                   {"8K/16K", 8192, 16384}};
enum { NLAYOUTS = sizeof layouts / sizeof layouts[0] };

typedef struct {
    char *dst;
    const char *src;
    size_t bytes;
    const layout_t *l;
    int prefetch;
} job_t;

/* n bytes (a multiple of 128) by 128-byte moves. */
__attribute__((target("avx2"))) static inline void move_bytes(char *d, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i += 128) bench_move128_avx2(d + i, s + i);
}

__attribute__((target("avx2"))) static int op_chunks(void *arg)
{
    const job_t *j = arg;
    const size_t n = j->bytes / j->l->chunk;
    const char *s = j->src;
    char *d = j->dst;
    for (size_t k = 0; k < n; k++, s += j->l->stride, d += j->l->chunk) {
        if (j->prefetch && k + 2 < n) __builtin_prefetch(s + 2 * j->l->stride, 0, 3);
        move_bytes(d, s, j->l->chunk);
    }
    return 0;
}

static int op_memcpy(void *arg)
{
    const job_t *j = arg;
    memcpy(j->dst, j->src, j->bytes);
    return 0;
}

/* Index of the first chunk of dst that differs from its source chunk, or -1. */
static long check(const job_t *j)
{
    const size_t n = j->bytes / j->l->chunk;
    for (size_t k = 0; k < n; k++)
        if (memcmp(j->dst + k * j->l->chunk, j->src + k * j->l->stride, j->l->chunk) != 0)
            return (long)k;
    return -1;
}

int main(int argc, char **argv)
{
    size_t bytes = (size_t)4 << 20;
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc &&
            bench_parse_size(argv[i + 1], &bytes) == 0 && bytes >= 16384 && bytes % 16384 == 0) {
            i++;
        } else if (strcmp(argv[i], "--huge-pages") == 0) {
            bench_set_huge_pages(1);
        } else if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else {
            fprintf(stderr,
                    "usage: %s [--bytes N] [--huge-pages] [--quick]\n"
                    "  --bytes N       bytes copied, a multiple of 16K (default 4M; K/M suffixes)\n"
                    "  --huge-pages    every buffer on transparent huge pages, memcpy's too\n"
                    "  --quick         smoke run: 0.02 s per layout\n",
                    argv[0]);
            return 2;
        }
    }
    if (!__builtin_cpu_supports("avx2")) {
        printf("bench_page_jump: needs AVX2; skipped\n");
        return 0;
    }
    /* The widest layout spans 4x the bytes; memcpy reads the first `bytes` of the same source. */
    const size_t span = 4 * bytes;
    char *src = bench_alloc(span), *dst = bench_alloc(bytes);
    if (!src || !dst) {
        fprintf(stderr, "bench_page_jump: out of memory\n");
        return 2;
    }
    bench_fill_random(src, span, 0x5eed + bytes);

    /* ops: memcpy, then each layout plain and with the prefetch. */
    job_t jobs[1 + 2 * NLAYOUTS];
    bench_op_t ops[1 + 2 * NLAYOUTS];
    char names[2 * NLAYOUTS][24];
    jobs[0] = (job_t){dst, src, bytes, &layouts[0], 0};
    ops[0] = (bench_op_t){"memcpy", op_memcpy, NULL, &jobs[0]};
    for (int l = 0; l < NLAYOUTS; l++)
        for (int pf = 0; pf < 2; pf++) {
            const int k = 1 + 2 * l + pf;
            jobs[k] = (job_t){dst, src, bytes, &layouts[l], pf};
            snprintf(names[k - 1], sizeof names[k - 1], "%s%s", layouts[l].name, pf ? "+pf" : "");
            ops[k] = (bench_op_t){names[k - 1], op_chunks, NULL, &jobs[k]};
        }
    bench_opts_t opts = BENCH_OPTS_DEFAULT;
    opts.warm_calls = quick ? 1 : 10;
    opts.warm_max_s = 0.05;
    if (quick) {
        opts.min_time_s = 0.02;
        opts.max_time_s = 1.0;
    }
    bench_result_t res[1 + 2 * NLAYOUTS];
    if (bench_measure(ops, 1 + 2 * NLAYOUTS, &opts, res) != 0) return 2;

    int bad = 0;
    for (int k = 1; k < 1 + 2 * NLAYOUTS; k++) {
        memset(dst, 0, bytes);
        op_chunks(&jobs[k]);
        const long at = check(&jobs[k]);
        if (at >= 0) {
            fprintf(stderr, "bench_page_jump: %s: chunk %ld differs from its source\n",
                    ops[k].name, at);
            bad = 1;
        }
    }
    char sz[32];
    printf("# bench_page_jump: %s copied, huge pages %s (the process holds %zu MiB on them);"
           " memcpy %.2f GB/s (median)\n",
           bench_format_size(bytes, sz, sizeof sz), bench_huge_pages() ? "asked" : "not asked",
           bench_huge_page_bytes() >> 20, bench_gbps(bytes, res[0].median_s));
    printf("%-10s %8s %12s %10s %14s\n", "layout", "jumps", "% of memcpy", "[q1-q3]",
           "ns per jump");
    for (int k = 1; k < 1 + 2 * NLAYOUTS; k++) {
        const layout_t *l = jobs[k].l;
        const size_t jumps = l->chunk == l->stride ? 0 : bytes / l->chunk;
        char q[24];
        snprintf(q, sizeof q, "[%.0f-%.0f]", 100.0 * res[k].ratio_p25, 100.0 * res[k].ratio_p75);
        printf("%-10s %8zu %11.1f%% %10s", ops[k].name, jumps, 100.0 * res[k].ratio_median, q);
        if (jumps)
            printf(" %14.1f\n", 1e9 * (res[k].median_s - res[0].median_s) / (double)jumps);
        else
            printf(" %14s\n", "-");
    }
    printf("%s\n", bad ? "CHECK FAILED" : "all layouts checked against their source");
    free(src);
    free(dst);
    return bad;
}
#else
int main(void)
{
    printf("bench_page_jump: x86-64 only; skipped\n");
    return 0;
}
#endif
