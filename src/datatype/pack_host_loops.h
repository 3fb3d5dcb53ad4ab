/* The block copy loops of the CPU engine (pack_host.c): fixed-size and vector moves, streaming
 * stores, rows of 96-992 bytes, blocks gathered eight at a time past the caches, and the loops
 * that prefetch the block or row ahead. Which of them an operation uses is decided once per
 * operation by select_copies() (pack_host_select.h), from measurements recorded beside each loop
 * and in docs/BENCHMARKS.md.
 *
 * Private to pack_host.c, which includes it once: the loops are static so that the walker's calls
 * to them are inlined where the compiler finds it pays, as when they shared one file. */
#ifndef GCOMM_DATATYPE_PACK_HOST_LOOPS_H
#define GCOMM_DATATYPE_PACK_HOST_LOOPS_H

#include <stdint.h>
#include <string.h>

#include "datatype/layout.h"

typedef void (*copy_fn_t)(char *dst, const char *src, size_t n);

/* Zen 4, operations in the cache: a vector's blocks of _BLOCK_MIN to _BLOCK_MAX bytes, a page or
 * more apart, spanning at most _SPAN_MAX bytes (_SPAN_MAX_PAGE for blocks exactly a page apart),
 * prefetch the block ahead whole from its end down (strided_vec_walk). */
#define GCOMMI_PF_WALK_SPAN_MAX ((int64_t)8 << 20)
#define GCOMMI_PF_WALK_SPAN_MAX_PAGE ((int64_t)16 << 20)
#define GCOMMI_PF_WALK_BLOCK_MIN 1536
#define GCOMMI_PF_WALK_BLOCK_MAX 3072
#define GCOMMI_PAGE 4096 /* where the hardware prefetchers stop */

static void copy_plain(char *dst, const char *src, size_t n) { memcpy(dst, src, n); }

static int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

/* n bytes, sizeof(T) <= n <= 2 sizeof(T), from src to dst as two overlapping moves of one T each
 * (both inside [0, n), both loads first); T of a constant size, so that each move is one
 * instruction. */
#define GCOMMI_COPY_PAIR(dst, src, n, T)                                                       \
    do {                                                                                       \
        T a_, b_;                                                                              \
        memcpy(&a_, (src), sizeof a_);                                                         \
        memcpy(&b_, (src) + (n) - sizeof b_, sizeof b_);                                       \
        memcpy((dst), &a_, sizeof a_);                                                         \
        memcpy((dst) + (n) - sizeof b_, &b_, sizeof b_);                                       \
    } while (0)

/* The pairs' temporaries. copy_small's below 32 bytes are byte arrays, which leave GCC's object
 * code as it was measured: typed ones there changed it throughout the file and moved packs of 5- to
 * 24-byte elements by 0.69-1.48x from run to run (2026-11-29). The unpack of small elements
 * (small_exact_loop) takes integers and a 16-byte vector (GCC's vector extension, also in clang):
 * with byte arrays there clang 14 kept the 16-byte pair on the stack and unpacked 17-byte struct
 * elements at 0.69x (bench_pack_ab, machine D, 2026-11-29); GCC compiles both alike. */
typedef char gcommi_bytes2_t[2];
typedef char gcommi_bytes4_t[4];
typedef char gcommi_bytes8_t[8];
typedef char gcommi_bytes16_t[16];
typedef char gcommi_bytes32_t[32];
typedef uint8_t gcommi_v16_t __attribute__((vector_size(16)));

/* Copies 1 <= n <= 64 bytes as two overlapping fixed-size moves instead of a memcpy call per
 * odd-sized element, e.g. a 17-byte struct. From 32 bytes, four 16-byte vectors, all loaded before
 * the first store: with a pair of 32-byte byte arrays GCC 12 also stored all four halves to the
 * stack (dead stores, one per move), and on Emerald Rapids (machine B, 2026-11-30, bench_pack_ab
 * against that) elements of 33-64 bytes that take this copy moved 1.24-3.17x faster at 4 KiB-16
 * MiB (64 bytes every 128, 33 or 63 every 72), subarray4d's 64-byte rows at 16 KiB packed 1.77x and
 * unpacked 2.32x faster (0.80 / 0.72x MPI_Pack before); elements that take other loops even. */
static inline void copy_small(char *dst, const char *src, size_t n)
{
    if (n >= 32) {
        gcommi_v16_t a, b, x, y;
        memcpy(&a, src, 16);
        memcpy(&b, src + 16, 16);
        memcpy(&x, src + n - 32, 16);
        memcpy(&y, src + n - 16, 16);
        memcpy(dst, &a, 16);
        memcpy(dst + 16, &b, 16);
        memcpy(dst + n - 32, &x, 16);
        memcpy(dst + n - 16, &y, 16);
        return;
    }
    if (n >= 16) GCOMMI_COPY_PAIR(dst, src, n, gcommi_bytes16_t);
    else if (n >= 8) GCOMMI_COPY_PAIR(dst, src, n, gcommi_bytes8_t);
    else if (n >= 4) GCOMMI_COPY_PAIR(dst, src, n, gcommi_bytes4_t);
    else if (n >= 2) GCOMMI_COPY_PAIR(dst, src, n, gcommi_bytes2_t);
    else *dst = *src;
}

/* A line of a block ahead: to be read when packing, written when unpacking. The write hint
 * compiles to prefetcht0 as these loops are built (target avx2 or avx512f without prfchw: the
 * library holds no prefetchw), so every figure measured for an unpack's prefetch is prefetcht0's.
 * A real prefetchw in its place (inline asm, here and in tile8_unpack) measured the same:
 * bench_pack_ab, 2026-11-30, unpacks of vector_bl16, vector_bl256, lower_tri, subarray4d and
 * the transpose at 256 KiB-16 MiB, 0.98-1.03x on machine D (Zen 4) and 0.995-1.010x on machine
 * B (Emerald Rapids): a line read by the one core that then writes it arrives exclusive, and the
 * store does not ask for it again. */
static inline void prefetch_line(const char *a, int pack)
{
    if (pack) __builtin_prefetch(a, 0, 3);
    else __builtin_prefetch(a, 1, 3);
}

#if defined(__x86_64__)
#include <immintrin.h>
/* 32 and 128 bytes through 32-byte unaligned loads and stores (the loads of 128 first). */
__attribute__((target("avx2"))) static inline void move32_avx2(char *dst, const char *src)
{
    _mm256_storeu_si256((__m256i *)dst, _mm256_loadu_si256((const __m256i *)src));
}
__attribute__((target("avx2"))) static inline void move128_avx2(char *dst, const char *src)
{
    __m256i a = _mm256_loadu_si256((const __m256i *)src);
    __m256i b = _mm256_loadu_si256((const __m256i *)(src + 32));
    __m256i x = _mm256_loadu_si256((const __m256i *)(src + 64));
    __m256i y = _mm256_loadu_si256((const __m256i *)(src + 96));
    _mm256_storeu_si256((__m256i *)dst, a);
    _mm256_storeu_si256((__m256i *)(dst + 32), b);
    _mm256_storeu_si256((__m256i *)(dst + 64), x);
    _mm256_storeu_si256((__m256i *)(dst + 96), y);
}

/* Blocks of 1 KiB and more that do not stream, when packing: 32-byte unaligned loads and stores,
 * not one libc memcpy call per block. glibc chooses its path on every call by size (on the
 * CI-class EPYC: a vector loop below 2112 bytes, rep movsb above), which per block cost gcomm the
 * last points against one memcpy of the packed bytes: bench_pack_cpu_ceiling (docs/BENCHMARKS.md,
 * "CPU ceiling of the access patterns") measured memcpy per block at 87-92% of one memcpy when
 * packing vector_bl256 and lower_tri at 1 MiB, and this loop at 93-100%. */
__attribute__((target("avx2"), always_inline)) static inline void
vec_bytes(char *dst, const char *src, size_t n)
{
    if (n < 32) {
        if (n) copy_small(dst, src, n);
        return;
    }
    size_t i = 0;
    for (; i + 128 <= n; i += 128) move128_avx2(dst + i, src + i);
    for (; i + 32 <= n; i += 32) move32_avx2(dst + i, src + i);
    if (i < n) move32_avx2(dst + n - 32, src + n - 32); /* the last 32, overlapping: same values */
}
__attribute__((target("avx2"))) static void copy_vec(char *dst, const char *src, size_t n)
{
    vec_bytes(dst, src, n);
}

/* A pack of rows of a multiple of 64 bytes (c->rows_zmm: the longest such row it takes) by 64-byte
 * moves instead of rows_vec's 32-byte ones:
 * - Zen 5, 128-byte rows past the cache, as glibc's memcpy moves them there. bench_pack_cpu, the
 *   Zen 5 VM, this loop against rows_vec in the same binary, alternating, two rounds (2026-11-27):
 *   vector_bl16 pack 0.97-1.04x -> 1.13-1.27x MPI_Pack at 16 MiB and 0.94-1.05x -> 1.07-1.13x at
 *   64 MiB, but 1.03-1.06x -> 0.97-1.02x at 4 MiB, in the cache (hence only from stream_min(1));
 *   the same moves for every row of 128-512 bytes, unpack too, packed subarray4d's 256- and
 *   512-byte rows at 0.73-0.84x at 16-64 MiB.
 * - Intel with AVX-512, rows of up to GCOMMI_ROWS_VEC_MAX_OTHER bytes in packs that do not stream
 *   (below 1 MiB on machine B). bench_pack_ab on Emerald Rapids (machine B, 2026-11-30, pinned),
 *   against rows_vec, packs: vector_bl16 (128-byte rows 256 apart) 1 KiB 1.07-1.20x, 4 KiB
 *   1.31-1.75x, 16 KiB 1.17-1.22x, 64 KiB-1 MiB 1.00-1.03x (four runs); hvectors of R-byte rows
 *   S apart, 2-8 KiB: 128 / 256 1.21-1.61x, 256 / 512 1.06-1.26x, 512 / 1024 1.04-1.13x,
 *   192 / 400 1.55-1.99x, and 1.00-1.04x at 32 KiB-1 MiB; subarray4d at 64-256 KiB
 *   1.14-1.24x, 1-16 KiB 0.98-1.00x. Unpacks stay with rows_vec: the same moves unpacked
 *   vector_bl16 at 1-4 KiB 0.92-0.97x, rows of 128-512 bytes 0.93-1.06x, and 192-byte rows 400
 *   apart (most 64-byte stores across two lines) 1.18-1.59x at 2-8 KiB but 0.74x at 32 KiB. */
__attribute__((target("avx512f"), always_inline)) static inline void
rows_zmm_loop(char *p, const char *mem, int64_t size, int64_t stride, int64_t count)
{
    for (int64_t r = 0; r < count; r++, p += size, mem += stride) {
        int64_t i = 0;
        for (; i + 128 <= size; i += 128) {
            const __m512i a = _mm512_loadu_si512((const void *)(mem + i));
            const __m512i b = _mm512_loadu_si512((const void *)(mem + i + 64));
            _mm512_storeu_si512((void *)(p + i), a);
            _mm512_storeu_si512((void *)(p + i + 64), b);
        }
        if (i < size) /* a last 64 bytes */
            _mm512_storeu_si512((void *)(p + i), _mm512_loadu_si512((const void *)(mem + i)));
    }
}
/* 128-byte rows keep a loop of their own, the one Zen 5 was measured with. */
__attribute__((target("avx512f"))) static void rows_zmm(char *p, const char *mem, int64_t size,
                                                       int64_t stride, int64_t count)
{
    if (size == 128) rows_zmm_loop(p, mem, 128, stride, count);
    else rows_zmm_loop(p, mem, size, stride, count);
}

/* count rows of `size` bytes (96 to 992: multiples of 32, and on Zen 4 from 2 MiB any size from
 * 129, c->rows_odd, whose last 32-byte move overlaps the one before) at mem, mem + stride, ... to
 * or from the packed stream p, in one call: 32-byte moves, no libc call and size dispatch per
 * row. On the
 * Xeon of machine C (bench_pack_cpu, this loop against memcpy per row in the same binary,
 * alternating, 2026-11-26): subarray4d (256- and 512-byte rows) pack 1.00-1.03x MPI_Pack at 1-16
 * MiB and 0.97-0.99x at 64 MiB against 0.94-1.00x with memcpy, unpack 1.11-1.14x against
 * 0.99-1.00x at 1-4 MiB; vector_bl16 (128-byte blocks) unpack 1.09-1.11x against 0.97-1.01x at
 * 1-4 MiB, pack unchanged or better. Eight loads before the eight stores of a 256-byte row
 * instead of four and four: 0.92-0.97x. On the Zen 5 VM (2026-11-26, the same A/B, two rounds)
 * only for rows up to 128 bytes: vector_bl16 pack 0.92-0.93x -> 0.98-1.05x MPI_Pack at 1-4 MiB
 * and 0.82-0.93x -> 0.96-0.98x at 64-256 MiB, but subarray4d's 256-byte rows packed at 0.76x
 * against 1.00-1.16x with memcpy at 16-64 MiB (GCOMMI_ROWS_VEC_MAX_AMD). Streaming stores for
 * such rows (aligned whole lines) measured 0.71-0.74x at 64-256 MiB: see stream_min_block.
 * ahead > 0 (c->pf_strided: Zen 4, operations in the cache from GCOMMI_PF_STRIDED_MIN): the first
 * line of the row `ahead` rows on is prefetched (GCOMMI_ROWS_PF_AHEAD). bench_pack_cpu on machine D
 * (2026-11-29, this against no prefetch in one build, three alternating rounds), vector_bl16
 * (128-byte rows 256 bytes apart), x MPI_Pack / % of memcpy: 1 MiB pack 0.96-1.04x / 83-85% ->
 * 1.13-1.16x / 97-98%, unpack 0.98-1.01x / 79-80% -> 1.16-1.25x / 96-98%; 4 MiB pack 1.03-1.05x /
 * 68-72% -> 1.09-1.14x / 75-78%, unpack 1.03-1.09x / 65-69% -> 1.17-1.25x / 77-78%; 64 KiB
 * unchanged. Distances of 8 to 32 rows measured alike from 1 MiB, 2 and 4 lower in some rounds; 8
 * was the best at 256 KiB (unpack 89-90% -> 97%). The same for subarray4d's 256-byte rows
 * (rows_vec_max raised on Zen 4 in the cache) gained at 4 MiB (1.03-1.04x -> 1.14-1.15x pack)
 * but not at 64 KiB-1 MiB (0.83-1.12x against 0.88-1.15x), and the prefetch in their memcpy per
 * row lost 0.03-0.06x at 1 MiB (docs/BENCHMARKS.md, session 32): below GCOMMI_ROWS_WIDE_MIN those
 * rows keep one memcpy each, without it; from there they come here (select_copies). */
__attribute__((target("avx2"), always_inline)) static inline void
rows_vec_loop(char *p, char *mem, int64_t size, int64_t stride, int64_t count, int pack,
              int64_t ahead, const int odd)
{
    for (int64_t r = 0; r < count; r++, p += size, mem += stride) {
        char *d = pack ? p : mem;
        const char *s = pack ? mem : p;
        int64_t i = 0;
        if (ahead && r + ahead < count) prefetch_line(mem + ahead * stride, pack);
        for (; i + 128 <= size; i += 128) move128_avx2(d + i, s + i);
        if (!odd) {
            for (; i < size; i += 32) move32_avx2(d + i, s + i);
        } else { /* the last move ends the row, overlapping the one before (same values) */
            for (; i + 32 < size; i += 32) move32_avx2(d + i, s + i);
            move32_avx2(d + size - 32, s + size - 32);
        }
    }
}
/* Multiples of 32 keep a loop without the overlapping move: one shared loop packed vector_bl16
 * (128-byte rows) 1-3% slower at 1-4 MiB (bench_pack_ab, three runs, 2026-11-29). */
__attribute__((target("avx2"))) static void rows_vec(char *p, char *mem, int64_t size,
                                                     int64_t stride, int64_t count, int pack,
                                                     int64_t ahead)
{
    if (size % 32 == 0) rows_vec_loop(p, mem, size, stride, count, pack, ahead, 0);
    else rows_vec_loop(p, mem, size, stride, count, pack, ahead, 1);
}
#define GCOMMI_HAVE_ROWS_VEC 1

/* A pack of count elements of 3 to 64 bytes (not 4, 8, 16 or 32: those have fixed-size loops)
 * at mem, mem + stride, ... (stride >= size), as for an array of structs: each element is moved
 * with one load and one store of the next power of two w (8, 16, 32 or 64 bytes), the store
 * running on into the packed bytes of the elements after it, which their own stores then
 * overwrite, where copy_small needs two loads and two stores per element. Elements whose w-byte
 * store would pass the end of this run's packed bytes, or whose w-byte load would pass the end of
 * the run's last element or cross into a page after the element's last byte (the gap between two
 * elements need not be memory at all), take copy_small. The move size is chosen once per call
 * (small_over_loop is specialised for each, and this function is not inlined: with the choice
 * made per element, 17-28-byte elements packed 11-28% slower than with copy_small).
 * bench_pack_ab on the Zen 4 VM (2026-11-29, against copy_small per element, 1 and 4 MiB),
 * speed: 3-byte elements 4 apart 2.95-2.98x, 5 / 8 2.00-2.08x, 7 / 16 1.76-2.00x, 12 / 16
 * 1.97-1.99x, 17 / 24 (the struct {double, int, int, char} of bench_pack_cpu) 1.23-1.27x, 24 / 32
 * 0.99-1.00x, 40 / 48 1.98x, 63 / 72 1.47-1.51x; in packs that stream (16-256 MiB) 5-byte
 * 1.72-2.62x, 12- to 48-byte 1.00-1.22x, 63-byte 0.90-0.96x (strided_any keeps copy_small there
 * from 33 bytes). Unpacks cannot store past an element (the typed
 * buffer's gaps must stay as they are): unpack_small_exact below. */
__attribute__((target("avx2"), always_inline)) static inline void
small_over_loop(char *p, const char *mem, int64_t size, int64_t stride, int64_t fast,
                const int w)
{
    for (int64_t i = 0; i < fast; i++) {
        const char *s = mem + i * stride;
        char *d = p + i * size;
        if (__builtin_expect((((uintptr_t)(s + size - 1)) ^ ((uintptr_t)(s + w - 1))) >=
                                 GCOMMI_PAGE, 0)) {
            copy_small(d, s, (size_t)size); /* the load would enter the next page */
        } else if (w == 8) {
            uint64_t v;
            memcpy(&v, s, 8);
            memcpy(d, &v, 8);
        } else if (w == 16) {
            _mm_storeu_si128((__m128i *)d, _mm_loadu_si128((const __m128i *)s));
        } else if (w == 32) {
            _mm256_storeu_si256((__m256i *)d, _mm256_loadu_si256((const __m256i *)s));
        } else {
            const __m256i a = _mm256_loadu_si256((const __m256i *)s);
            const __m256i b = _mm256_loadu_si256((const __m256i *)(s + 32));
            _mm256_storeu_si256((__m256i *)d, a);
            _mm256_storeu_si256((__m256i *)(d + 32), b);
        }
    }
}
__attribute__((target("avx2"), noinline)) static void pack_small_over(char *p, const char *mem,
                                                                     int64_t size, int64_t stride,
                                                                     int64_t count)
{
    const int w = size <= 8 ? 8 : size <= 16 ? 16 : size <= 32 ? 32 : 64;
    /* elements 0 .. fast - 1: store inside [0, count * size), load inside the run */
    int64_t fast = 0;
    if (count * size >= w) {
        const int64_t by_store = (count * size - w) / size + 1;
        const int64_t span_end = (count - 1) * stride + size; /* end of the last element */
        const int64_t by_load = span_end >= w ? (span_end - w) / stride + 1 : 0;
        fast = by_store < by_load ? by_store : by_load;
    }
    if (w == 8) small_over_loop(p, mem, size, stride, fast, 8);
    else if (w == 16) small_over_loop(p, mem, size, stride, fast, 16);
    else if (w == 32) small_over_loop(p, mem, size, stride, fast, 32);
    else small_over_loop(p, mem, size, stride, fast, 64);
    for (int64_t i = fast; i < count; i++) copy_small(p + i * size, mem + i * stride, (size_t)size);
}

/* The unpack of such elements (3 to 64 bytes, not 4, 8, 16 or 32): copy_small's two overlapping
 * moves, exact (the typed buffer's gaps stay untouched), with the move size chosen once per call
 * instead of per element. bench_pack_ab on the Zen 4 VM (2026-11-29, against copy_small per
 * element, 1 and 4 MiB), speed: 3-byte elements 3.00-3.05x, 5-byte 3.21-3.61x, 7-byte
 * 2.50-3.02x, 12-byte 2.33x, 17-byte 1.02-1.03x, 24-, 40- and 63-byte 1.00x. (With the packs
 * above alone, copy_small's loop for unpacks moved in the code and unpacked 5- and 7-byte elements
 * 14-17% slower.) Elements of 32 bytes and more move as two 32-byte halves (both loads first);
 * written as arrays and memcpy, GCC and clang made them four 16-byte moves and stored the
 * values to the stack as well: 33- to 63-byte elements unpacked 1.4-2.0x faster this way at 256
 * KiB-4 MiB and 1.10-1.15x at 16 MiB (bench_pack_ab, 2026-11-29), but at 64 MiB 48- to 64-byte
 * elements lost 2-18% (64-byte elements 72 apart: 0.82-0.84x), so unpacks that stream keep four
 * 16-byte moves (split). */
__attribute__((target("avx2"), always_inline)) static inline void
small_exact_loop(char *p, char *mem, int64_t size, int64_t stride, int64_t count, const int w,
                 const int split)
{
    for (int64_t i = 0; i < count; i++) {
        const char *s = p + i * size;
        char *d = mem + i * stride;
        if (w == 32 && split) {
            const __m128i a0 = _mm_loadu_si128((const __m128i *)s);
            const __m128i a1 = _mm_loadu_si128((const __m128i *)(s + 16));
            const __m128i b0 = _mm_loadu_si128((const __m128i *)(s + size - 32));
            const __m128i b1 = _mm_loadu_si128((const __m128i *)(s + size - 16));
            _mm_storeu_si128((__m128i *)d, a0);
            _mm_storeu_si128((__m128i *)(d + 16), a1);
            _mm_storeu_si128((__m128i *)(d + size - 32), b0);
            _mm_storeu_si128((__m128i *)(d + size - 16), b1);
        } else if (w == 32) {
            const __m256i a = _mm256_loadu_si256((const __m256i *)s);
            const __m256i b = _mm256_loadu_si256((const __m256i *)(s + size - 32));
            _mm256_storeu_si256((__m256i *)d, a);
            _mm256_storeu_si256((__m256i *)(d + size - 32), b);
        } else if (w == 16) {
            GCOMMI_COPY_PAIR(d, s, size, gcommi_v16_t);
        } else if (w == 8) {
            GCOMMI_COPY_PAIR(d, s, size, uint64_t);
        } else if (w == 4) {
            GCOMMI_COPY_PAIR(d, s, size, uint32_t);
        } else {
            GCOMMI_COPY_PAIR(d, s, size, uint16_t);
        }
    }
}
#undef GCOMMI_COPY_PAIR
__attribute__((target("avx2"), noinline)) static void unpack_small_exact(char *p, char *mem,
                                                                        int64_t size,
                                                                        int64_t stride,
                                                                        int64_t count,
                                                                        int streams)
{
    if (size >= 32 && streams) small_exact_loop(p, mem, size, stride, count, 32, 1);
    else if (size >= 32) small_exact_loop(p, mem, size, stride, count, 32, 0);
    else if (size >= 16) small_exact_loop(p, mem, size, stride, count, 16, 0);
    else if (size >= 8) small_exact_loop(p, mem, size, stride, count, 8, 0);
    else if (size >= 4) small_exact_loop(p, mem, size, stride, count, 4, 0);
    else small_exact_loop(p, mem, size, stride, count, 2, 0);
}
#define GCOMMI_HAVE_SMALL_OVER 1

/* Elements of fewer than 64 bytes at most 64 apart (arrays of structs, strided scalars), with
 * AVX-512 VBMI2's byte compress and expand: the typed side is read in 64-byte chunks from the
 * first element on, and the bytes of a chunk that belong to elements are gathered by one byte
 * permute (a pack, vpermb, its indices from one vpcompressb per chunk of the period) or spread by
 * one vpexpandb and a masked store that leaves the gaps as they are (an unpack). Which bytes of
 * a chunk are element bytes repeats every stride / gcd(stride, 64) chunks (the plan: that many
 * masks, at most GCOMMI_COMPRESS_PERIOD_MAX). */
#define GCOMMI_COMPRESS_PERIOD_MAX 16
typedef struct {
    uint64_t mask[GCOMMI_COMPRESS_PERIOD_MAX]; /* element bytes of chunk j of a period */
    int64_t bytes[GCOMMI_COMPRESS_PERIOD_MAX]; /* their number */
    int64_t period; /* chunks a period */
    int64_t elems;  /* elements a period */
} compress_plan_t;

/* The plan for size-byte elements stride bytes apart (0 < size < stride <= 64); 0 when their
 * period is longer than GCOMMI_COMPRESS_PERIOD_MAX chunks. */
static int compress_plan(int64_t size, int64_t stride, compress_plan_t *pl)
{
    pl->period = stride / gcommi_gcd64(stride, 64);
    if (pl->period > GCOMMI_COMPRESS_PERIOD_MAX) return 0;
    pl->elems = 64 * pl->period / stride;
    memset(pl->mask, 0, sizeof pl->mask);
    for (int64_t e = 0; e < pl->elems; e++) {
        /* bytes [at, at + size): at most two chunks, as size < 64 */
        const int64_t at = e * stride, j = at / 64, lo = at % 64;
        const uint64_t bits = ((uint64_t)1 << size) - 1;
        pl->mask[j] |= bits << lo;
        if (lo + size > 64) pl->mask[j + 1] |= bits >> (64 - lo);
    }
    for (int64_t j = 0; j < pl->period; j++) pl->bytes[j] = __builtin_popcountll(pl->mask[j]);
    return 1;
}

/* Periods that the compress loops may take: their loads stay inside [mem, mem + span), the typed
 * bytes up to the last element's end, and their 64-byte stores (a pack) or loads (an unpack) of
 * the packed side inside the run's count * size packed bytes. */
static int64_t compress_periods(const compress_plan_t *pl, int64_t size, int64_t stride,
                                int64_t count)
{
    const int64_t span = (count - 1) * stride + size, packed = count * size;
    const int64_t last = pl->elems * size - pl->bytes[pl->period - 1]; /* last chunk's offset */
    int64_t n = span / (64 * pl->period);
    while (n > 0 && (n - 1) * pl->elems * size + last + 64 > packed) n--;
    return n;
}

/* A pack gathers each chunk's element bytes with a byte permute (vpermb) whose indices, the
 * places of the mask's bits, one compress of 0..63 per chunk of the period gives once per call.
 * Against a compress (vpcompressb) per chunk: on Zen 4 (machine D, 2026-11-30) packs 1.03-1.30x
 * faster at 4 KiB-4 MiB (1.0-1.2x at 1 KiB, 0.96-1.02x at 16 MiB); on Emerald Rapids (machine B,
 * 2026-11-30, bench_pack_ab, 1 KiB-16 MiB, nine element shapes) 1.016x in geometric mean
 * (0.97-1.21x; the unchanged unpacks 0.991x in the same runs).
 * The chunk's packed bytes go out in one 64-byte store that runs on into the next chunk's (which
 * its own store then overwrites), or, with `exact`, in a masked store of just those bytes: on
 * Intel (machine B, 2026-11-30) the struct {double, int, int, char} packed 0.86-0.88x the loop
 * before at 4-16 MiB with the store that runs on and 1.08x with the exact one, which in the caches
 * costs 12-22% for 12- and 20-byte elements there; on Zen 4 the two are even, or the exact one
 * 1.2x faster (12-byte elements 16 apart). */
#define GCOMMI_TARGET_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi,avx512vbmi2")))
GCOMMI_TARGET_VBMI __attribute__((always_inline)) static inline void
pack_compress_loop(char *p, const char *mem, const compress_plan_t *pl, int64_t periods,
                   const int exact)
{
    const __m512i iota = _mm512_set_epi8(
        63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41,
        40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18,
        17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    __m512i idx[GCOMMI_COMPRESS_PERIOD_MAX];
    for (int64_t j = 0; j < pl->period; j++) idx[j] = _mm512_maskz_compress_epi8(pl->mask[j], iota);
    for (int64_t g = 0; g < periods; g++)
        for (int64_t j = 0; j < pl->period; j++, mem += 64) {
            const __m512i v = _mm512_loadu_si512((const void *)mem);
            const __m512i c = _mm512_permutexvar_epi8(idx[j], v);
            if (exact) _mm512_mask_storeu_epi8((void *)p, ((uint64_t)1 << pl->bytes[j]) - 1, c);
            else _mm512_storeu_si512((void *)p, c);
            p += pl->bytes[j];
        }
}
GCOMMI_TARGET_VBMI static void
pack_compress(char *p, const char *mem, const compress_plan_t *pl, int64_t periods, int exact)
{
    if (exact) pack_compress_loop(p, mem, pl, periods, 1);
    else pack_compress_loop(p, mem, pl, periods, 0);
}

GCOMMI_TARGET_VBMI static void
unpack_expand(const char *p, char *mem, const compress_plan_t *pl, int64_t periods)
{
    for (int64_t g = 0; g < periods; g++)
        for (int64_t j = 0; j < pl->period; j++, mem += 64) {
            const __m512i v = _mm512_loadu_si512((const void *)p);
            _mm512_mask_storeu_epi8((void *)mem, pl->mask[j],
                                    _mm512_maskz_expand_epi8(pl->mask[j], v));
            p += pl->bytes[j];
        }
}
#define GCOMMI_HAVE_COMPRESS 1

/* Elements of 4 or 8 bytes every other one (stride twice the size: the real parts of complex
 * numbers, one field of two, vector_bl1's doubles): a pack turns 128 typed bytes into 64 packed
 * ones with one two-source permute (vpermt2d/q) and one store; an unpack spreads 64 packed bytes
 * with two one-source permutes and writes them with two masked stores that leave the other
 * elements untouched. Returns the elements done: whole groups of 64 packed bytes, whose loads stay
 * inside the last element (a pack reads the 128 typed bytes of a group, the last element's gap
 * after it included, so the group after the last must still hold an element) and the run's packed
 * bytes (an unpack). bench_pack_ab against the loops before (strided_8; byte compress for 4-byte
 * elements), 2026-11-30: vector_bl1 at 4 KiB-1 MiB 1.10-2.27x on Zen 4 (machine D) and 1.25-2.02x
 * at 4-256 KiB on Intel (machine B), 4-byte elements 8 apart 1.33-2.41x and 0.99-2.55x; in
 * operations that stream 0.76-0.99x on Zen 4 (16-64 MiB), so only operations that do not stream
 * take them (c->pairs). */
__attribute__((target("avx512f"))) static int64_t pack_pairs(char *p, const char *mem,
                                                             int64_t size, int64_t count)
{
    const int64_t span = (2 * count - 1) * size, groups = span / 128;
    const __m512i idx = size == 8 ? _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0)
                                  : _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10,
                                                     8, 6, 4, 2, 0);
    for (int64_t g = 0; g < groups; g++, mem += 128, p += 64) {
        const __m512i lo = _mm512_loadu_si512((const void *)mem);
        const __m512i hi = _mm512_loadu_si512((const void *)(mem + 64));
        _mm512_storeu_si512((void *)p, size == 8 ? _mm512_permutex2var_epi64(lo, idx, hi)
                                                 : _mm512_permutex2var_epi32(lo, idx, hi));
    }
    return groups * 64 / size;
}
__attribute__((target("avx512f"))) static int64_t unpack_pairs(const char *p, char *mem,
                                                               int64_t size, int64_t count)
{
    const int64_t groups = count * size / 64;
    const __m512i lo8 = _mm512_set_epi64(3, 3, 2, 2, 1, 1, 0, 0);
    const __m512i hi8 = _mm512_set_epi64(7, 7, 6, 6, 5, 5, 4, 4);
    const __m512i lo4 = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    const __m512i hi4 = _mm512_set_epi32(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9,
                                         8, 8);
    for (int64_t g = 0; g < groups; g++, p += 64, mem += 128) {
        const __m512i v = _mm512_loadu_si512((const void *)p);
        if (size == 8) {
            _mm512_mask_storeu_epi64((void *)mem, 0x55, _mm512_permutexvar_epi64(lo8, v));
            _mm512_mask_storeu_epi64((void *)(mem + 64), 0x55, _mm512_permutexvar_epi64(hi8, v));
        } else {
            _mm512_mask_storeu_epi32((void *)mem, 0x5555, _mm512_permutexvar_epi32(lo4, v));
            _mm512_mask_storeu_epi32((void *)(mem + 64), 0x5555,
                                     _mm512_permutexvar_epi32(hi4, v));
        }
    }
    return groups * 64 / size;
}
#define GCOMMI_ROWS_PF_AHEAD 8
#define GCOMMI_ROWS_VEC_MAX_AMD 128
#define GCOMMI_ROWS_VEC_MAX_OTHER 992 /* below GCOMMI_MID_MIN */

/* Blocks that do not stream, when unpacking: rep movsb. Scattering into blocks,
 * bench_pack_cpu_ceiling measured rep movsb per block at 94-110% of one memcpy (vector_bl256 and
 * lower_tri, 1-4 MiB) and copy_vec 3-12 points lower: with copy_vec, gcomm_unpack of lower_tri at
 * 4 MiB fell to 0.92x MPI_Unpack, whose libc memcpy turns to rep movsb for rows above 2 KiB. */
static void copy_movsb(char *dst, const char *src, size_t n)
{
    __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

/* Blocks that do not stream on Intel CPUs with AVX2, in operations of GCOMMI_VEC_ADST_MIN to
 * GCOMMI_VEC_ADST_MAX bytes (in the L2):
 * copy_vec's loop with its stores 32-byte aligned (the first 32 bytes by one unaligned move, then
 * from dst's next aligned byte on with unaligned loads, the last 32 overlapping). Intel splits a
 * store that crosses a line, and packed blocks start anywhere in a line (lower_tri's rows). In
 * the L2, rep movsb per block, which copy_movsb's comment chose for these CPUs, leaves 10-15
 * points of memcpy: bench_pack_cpu_ceiling on the Emerald Rapids host of the GPU machine (machine
 * B, 2026-11-29) at 256 KiB, % of memcpy, pack / unpack: vector_bl256 gcomm 88 / 85 against 98 /
 * 100 for the plain 32-byte loop; lower_tri 76 / 77 against 58 / 94 (its packed rows' stores
 * cross lines). bench_pack_ab there, this loop against rep movsb, two runs: vector_bl256 at 64-512
 * KiB 1.07-1.14x, lower_tri at 128-512 KiB 1.08-1.13x (64 KiB 0.99-1.00x: rows under 1 KiB,
 * see indexed_adst); from 1 MiB, where the operation leaves the L2, 0.97-1.04x (rep movsb kept
 * there); in the L1 it lost (vector_bl256 at 16 KiB 0.72-0.75x), hence GCOMMI_VEC_ADST_MIN.
 * copy_vec_adst is the same through a pointer (c->mid). Blocks under GCOMMI_ADST_BLOCK_MIN bytes
 * keep vec_bytes' unaligned stores (see indexed_adst; c->mid only gets blocks of GCOMMI_MID_MIN
 * bytes and more). */
#define GCOMMI_ADST_BLOCK_MIN 256
__attribute__((target("avx2"), always_inline)) static inline void
vec_bytes_adst(char *dst, const char *src, size_t n)
{
    if (n < GCOMMI_ADST_BLOCK_MIN) {
        vec_bytes(dst, src, n);
        return;
    }
    /* Written out: the same copy through vec_bytes from dst's aligned byte on (GCC then emits
     * unaligned stores with indexed addresses, in the order 2, 1, 3, 4) ran at 0.55-0.68x of
     * this loop on machine B (64-512 KiB, bench_pack_ab, 2026-11-29). */
    move32_avx2(dst, src);
    size_t i = 32 - ((uintptr_t)dst & 31); /* 1-32: dst + i is 32-byte aligned */
    for (; i + 128 <= n; i += 128) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(src + i));
        const __m256i b = _mm256_loadu_si256((const __m256i *)(src + i + 32));
        const __m256i x = _mm256_loadu_si256((const __m256i *)(src + i + 64));
        const __m256i y = _mm256_loadu_si256((const __m256i *)(src + i + 96));
        _mm256_store_si256((__m256i *)(dst + i), a);
        _mm256_store_si256((__m256i *)(dst + i + 32), b);
        _mm256_store_si256((__m256i *)(dst + i + 64), x);
        _mm256_store_si256((__m256i *)(dst + i + 96), y);
    }
    for (; i + 32 <= n; i += 32)
        _mm256_store_si256((__m256i *)(dst + i), _mm256_loadu_si256((const __m256i *)(src + i)));
    if (i < n) move32_avx2(dst + n - 32, src + n - 32);
}
__attribute__((target("avx2"))) static void copy_vec_adst(char *dst, const char *src, size_t n)
{
    vec_bytes_adst(dst, src, n);
}

/* The blocks of an indexed node whose blocks are contiguous, on Intel in operations of
 * GCOMMI_VEC_ADST_MIN to GCOMMI_VEC_ADST_MAX bytes (c->adst_idx): every block by vec_bytes_adst
 * inlined, which stores blocks of GCOMMI_ADST_BLOCK_MIN bytes and more aligned and shorter ones
 * as copy_vec does. bench_pack_ab on machine B (2026-11-29), lower_tri, against
 * copy_vec_adst through a pointer from that size and libc's memcpy below it: 1.13-1.14x at 64
 * KiB, 1.08-1.09x at 128 KiB, 1.07-1.08x at 256 KiB, 1.04x at 512 KiB (1.04-1.12x with memcpy
 * for the short blocks). Aligned stores from GCOMMI_ADST_BLOCK_MIN bytes, not from GCOMMI_MID_MIN
 * as elsewhere: through copy_vec_adst's pointer, against libc's memcpy per block below 1 KiB,
 * lower_tri pack / unpack measured from 256 bytes 1.12-1.23x at 32-64 KiB, 1.06-1.11x at 128-256
 * KiB, 1.03x at 512 KiB, from 64 bytes 0.75-0.79x at 4-8 KiB. Returns the packed stream's next
 * byte. */
__attribute__((target("avx2"))) static char *indexed_adst(char *p, char *m, const int64_t *displs,
                                                        const int64_t *prefix, int64_t count,
                                                        int64_t elem, int pack)
{
    for (int64_t b = 0; b < count; b++) {
        size_t len = (size_t)((prefix[b + 1] - prefix[b]) * elem);
        char *t = m + displs[b];
        if (pack) vec_bytes_adst(p, t, len);
        else vec_bytes_adst(t, p, len);
        p += len;
    }
    return p;
}

/* Blocks that do not stream, when unpacking on Zen 5 (AVX-512): a block that starts a 64-byte
 * line of the typed buffer and is whole lines long moves with 64-byte loads and stores, any other
 * with rep movsb (copy_movsb). bench_pack_cpu on the Zen 5 VM, this choice against rep movsb for
 * every block in one binary, alternating, six rounds (2026-11-27): vector_bl256 (2 KiB blocks,
 * line-aligned) unpack at 4 MiB 1.02-1.07x MPI_Unpack against 0.96-1.05x (median 1.04 against
 * 0.99), at 1 MiB 1.04-1.05x against 1.02-1.07x; lower_tri (rows of any length, mostly not
 * line-aligned: rep movsb) unchanged. The 64-byte moves for every block lost lower_tri 0.02-0.05x
 * at 1-4 MiB (two rounds). */
__attribute__((target("avx512f"))) static void copy_zmm(char *dst, const char *src, size_t n)
{
    size_t i = 0;
    for (; i + 256 <= n; i += 256) {
        const __m512i a = _mm512_loadu_si512((const void *)(src + i));
        const __m512i b = _mm512_loadu_si512((const void *)(src + i + 64));
        const __m512i x = _mm512_loadu_si512((const void *)(src + i + 128));
        const __m512i y = _mm512_loadu_si512((const void *)(src + i + 192));
        _mm512_storeu_si512((void *)(dst + i), a);
        _mm512_storeu_si512((void *)(dst + i + 64), b);
        _mm512_storeu_si512((void *)(dst + i + 128), x);
        _mm512_storeu_si512((void *)(dst + i + 192), y);
    }
    for (; i < n; i += 64) /* n is a multiple of 64 */
        _mm512_storeu_si512((void *)(dst + i), _mm512_loadu_si512((const void *)(src + i)));
}

static void copy_unpack_lines(char *dst, const char *src, size_t n)
{
    if ((((uintptr_t)dst | n) & 63) == 0) copy_zmm(dst, src, n);
    else copy_movsb(dst, src, n);
}

/* 64 bytes from src (any alignment) to the 64-byte aligned dst with streaming stores. */
__attribute__((target("avx2"), always_inline)) static inline void stream_line(char *dst,
                                                                             const char *src)
{
    const __m256i x = _mm256_loadu_si256((const __m256i *)src);
    const __m256i y = _mm256_loadu_si256((const __m256i *)(src + 32));
    _mm256_stream_si256((__m256i *)dst, x);
    _mm256_stream_si256((__m256i *)(dst + 32), y);
}

/* Streaming (non-temporal) stores for operations larger than the caches: a normal store that
 * misses first reads the line it writes (read-for-ownership), so a large pack moves three bytes
 * per byte where memcpy's own large-copy path moves two. Measured on the CI-class EPYC (vector of
 * 2 KB blocks, 64 MB): per-block memcpy 79-83% of one memcpy, with these stores 96-97%.
 * Only whole 64-byte lines are streamed; the partial lines at either end of a block are written
 * by ordinary stores that stay inside the block. A line written both ways is read for ownership
 * by the ordinary store and then evicted by the streaming one, which happened at every row of a
 * lower_tri pack when blocks were only aligned to 32 bytes. */
__attribute__((target("avx2"))) static void copy_stream(char *dst, const char *src, size_t n)
{
    size_t head = (size_t)(-(uintptr_t)dst & 63);
    if (n < head + 64) {
        copy_vec(dst, src, n);
        return;
    }
    copy_vec(dst, src, head);
    size_t i = head;
    for (; i + 128 <= n; i += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(src + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(src + i + 32));
        __m256i x = _mm256_loadu_si256((const __m256i *)(src + i + 64));
        __m256i y = _mm256_loadu_si256((const __m256i *)(src + i + 96));
        _mm256_stream_si256((__m256i *)(dst + i), a);
        _mm256_stream_si256((__m256i *)(dst + i + 32), b);
        _mm256_stream_si256((__m256i *)(dst + i + 64), x);
        _mm256_stream_si256((__m256i *)(dst + i + 96), y);
    }
    if (i + 64 <= n) {
        stream_line(dst + i, src + i);
        i += 64;
    }
    copy_vec(dst + i, src + i, n - i);
}

/* n bytes, a multiple of 64, to a 64-byte aligned dst: 64-byte loads, streaming stores. */
__attribute__((target("avx512f"), always_inline)) static inline void
stream512_lines(char *dst, const char *src, size_t n)
{
    size_t i = 0;
    for (; i + 256 <= n; i += 256) {
        __m512i a = _mm512_loadu_si512((const void *)(src + i));
        __m512i b = _mm512_loadu_si512((const void *)(src + i + 64));
        __m512i x = _mm512_loadu_si512((const void *)(src + i + 128));
        __m512i y = _mm512_loadu_si512((const void *)(src + i + 192));
        _mm512_stream_si512((void *)(dst + i), a);
        _mm512_stream_si512((void *)(dst + i + 64), b);
        _mm512_stream_si512((void *)(dst + i + 128), x);
        _mm512_stream_si512((void *)(dst + i + 192), y);
    }
    for (; i < n; i += 64)
        _mm512_stream_si512((void *)(dst + i), _mm512_loadu_si512((const void *)(src + i)));
}

/* copy_stream with 64-byte registers: for packing on AMD where the source is aligned to the
 * destination modulo 64 (then no 64-byte load straddles two lines; else copy_stream), and for
 * every streaming pack off AMD (copy_stream_pack's comment).
 * bench_pack_cpu_ceiling measured streaming 64-byte stores 5-9 points of memcpy above 32-byte
 * ones for vector_bl256 at 16 MiB (94-100% against 88-91%), whose blocks are mutually aligned,
 * but 5-10 points below them for lower_tri (91% against 96% at 16 MiB), whose rows land at every
 * offset of the packed stream. Unpacking on AMD keeps 32-byte stores: scattered into blocks,
 * 64-byte ones measured up to 30 points slower on the EPYC (vector_bl256, 16 MiB: 118% of memcpy
 * against 154%). On the Xeon VM the other way: 64-byte streaming stores unpacked vector_bl256 at
 * 94% of memcpy and lower_tri at 95% (16 MiB) against 91% and 90% with 32-byte ones. */
__attribute__((target("avx512f"))) static void copy_stream512(char *dst, const char *src, size_t n)
{
    size_t head = (size_t)(-(uintptr_t)dst & 63);
    if (n < head + 64) {
        copy_vec(dst, src, n);
        return;
    }
    copy_vec(dst, src, head);
    size_t i = head + ((n - head) & ~(size_t)63);
    stream512_lines(dst + head, src + head, i - head);
    copy_vec(dst + i, src + i, n - i);
}

/* Packing with streaming stores on AMD: 64-byte registers where source and destination are
 * aligned alike modulo 64, else 32-byte ones (copy_stream512's comment). On the Xeon VM
 * (machine C, 2026-11-28, bench_pack_cpu_ceiling, three runs) 64-byte loads straddling lines cost
 * nothing there and the 64-byte stores won at every size: lower_tri, whose rows land at every
 * offset of the packed stream, 97% of memcpy at 256 MiB and 152% at 64 MiB against 84% and 125%
 * with 32-byte stores; select_copies takes copy_stream512 for every block there. */
static void copy_stream_pack(char *dst, const char *src, size_t n)
{
    if ((((uintptr_t)dst ^ (uintptr_t)src) & 63) == 0) copy_stream512(dst, src, n);
    else copy_stream(dst, src, n);
}

#define GCOMMI_STREAM_FENCE() _mm_sfence()
#else
#define GCOMMI_STREAM_FENCE() ((void)0)
#endif

#if defined(__x86_64__)
/* A streaming pack of count blocks of `size` bytes (a multiple of 64) at mem, mem + stride, ...
 * to a 64-byte aligned p (c->gather_ilv), GCOMMI_GATHER_WAYS blocks at a time, line by line: line
 * l of each block of the group, then line l + 64, ..., with line l of the next group's blocks
 * prefetched first. Copied one after the other, every block of vector_bl256 starts a 4 KiB page
 * on which the hardware prefetchers start over, and the core waits on one stream of misses at a
 * time; a group keeps eight streams in flight (glibc's own large copy interleaves four pages).
 * bench_pack_cpu, vector_bl256 pack, % of memcpy, alternating rounds in one build against one
 * block after the other with the next block prefetched (strided_stream512_pf, now gone): Zen 4 VM
 * (machine D, 2026-11-29) 16 / 64 / 256 MiB 60-75 / 71-84 / 65-78% -> 121 / 85-125 / 90-92%;
 * Xeon (machine B, pinned, 2026-11-29; no prefetch there before) 64 / 256 MiB 116-129 / 71-75% ->
 * 139-148 / 86-89%. A scratch program on machine D at 256 MiB: groups of 4, 8 and 16 blocks
 * 71-74, 73-76 and 87% without the prefetch of the next group, groups of 4 and 8 with it 91 and
 * 106% (one block after the other 57-60%); 8 ways with the prefetch also won for blocks of 1 KiB
 * every 2 KiB (80% against 57%), 2 KiB every 2.5 KiB (104 / 70%) and 16 KiB every 32 KiB
 * (130 / 114%). Blocks whose packed lines do not fall whole take gather_group (from 1 KiB).
 * Whole-line blocks take this loop from GCOMMI_GATHER_LINES_MIN bytes, although one short block
 * after the other streamed slower than ordinary stores (stream_min_block): eight at a time they
 * win. Alternating rounds in one build, x MPI_Pack, against rows_vec (ordinary stores, one row
 * after the other): machine D, 16 / 64 / 256 MiB, vector_bl16 (128-byte rows, five rounds)
 * 1.00-1.08 / 1.00-1.08 / 0.95-1.10x -> 0.92-1.18 / 1.04-1.10 / 0.97-1.06x (a small gain in
 * this VM's noise; 50-64% -> 51-70% of memcpy), subarray4d (256- and 512-byte
 * rows) 1.04-1.05 / 0.99-1.04 / 1.39-1.71x -> 1.33 / 1.25-1.30 / 1.38-1.51x; machine B, 64 / 256
 * MiB, vector_bl16 1.17-1.31 / 1.11-1.12x -> 1.74-1.79 / 1.43-1.74x, subarray4d 1.01-1.09 /
 * 1.55-1.57x -> 1.64-1.67 / 1.54-1.80x (2026-11-29). */
#define GCOMMI_GATHER_WAYS 8
#define GCOMMI_GATHER_LINES_MIN 128
__attribute__((target("avx2"))) static void gather_stream_ilv(char *p, const char *mem,
                                                             int64_t size, int64_t stride,
                                                             int64_t count)
{
    const int W = GCOMMI_GATHER_WAYS;
    int64_t b = 0;
    for (; b + W <= count; b += W, p += W * size, mem += W * stride) {
        const int ahead = b + 2 * W <= count;
        for (int64_t l = 0; l < size; l += 64) {
            if (ahead)
                for (int k = 0; k < W; k++) __builtin_prefetch(mem + (W + k) * stride + l, 0, 3);
            for (int k = 0; k < W; k++) stream_line(p + k * size + l, mem + k * stride + l);
        }
    }
    for (; b < count; b++, p += size, mem += stride)
        for (int64_t l = 0; l < size; l += 64) stream_line(p + l, mem + l);
}

/* One group of up to GCOMMI_GATHER_WAYS blocks of a streaming pack, any lengths and alignment:
 * the blocks are packed one after the other from p, their whole packed lines streamed as in
 * gather_stream_ilv (line l of every block, then line l + 64, ...) with the same lines of the next
 * group's blocks (next[0 .. nnext)) prefetched first. The partial lines at either end of a block
 * are written first, by ordinary stores: a line shared by two blocks is then completed at once
 * and never written both ways (copy_stream's comment). Returns p past the group. */
typedef struct {
    const char *src;
    size_t len;
} gather_block_t;
__attribute__((target("avx2"))) static char *gather_group(char *p, const gather_block_t *g, int w,
                                                         const char *const *next, int nnext)
{
    char *d[GCOMMI_GATHER_WAYS];
    const char *s[GCOMMI_GATHER_WAYS];
    size_t lines[GCOMMI_GATHER_WAYS], most = 0;
    for (int k = 0; k < w; k++) {
        const size_t len = g[k].len, head = (size_t)(-(uintptr_t)p & 63);
        const size_t n = len >= head + 64 ? (len - head) / 64 : 0;
        if (n == 0) {
            vec_bytes(p, g[k].src, len);
        } else {
            const size_t body = head + 64 * n;
            vec_bytes(p, g[k].src, head);
            vec_bytes(p + body, g[k].src + body, len - body);
        }
        d[k] = p + head;
        s[k] = g[k].src + head;
        lines[k] = n;
        if (n > most) most = n;
        p += len;
    }
    for (size_t l = 0; l < most; l++) {
        const size_t o = 64 * l;
        for (int k = 0; k < nnext; k++) __builtin_prefetch(next[k] + o, 0, 3);
        for (int k = 0; k < w; k++)
            if (l < lines[k]) stream_line(d[k] + o, s[k] + o);
    }
    return p;
}

/* Packs on Intel of 3/8 of the L2 to the L2 (ctx_t.split_l2): where the typed side's lines crowd
 * some of the L2's sets, only the packed lines that fall in those sets are streamed. A set is
 * picked by address bits 6 and up; bits 6-11, a line's place in its 4 KiB page, are the same in
 * virtual and physical addresses. vector_bl256's blocks (2 KiB at the start of every page) put
 * all their lines in the sets of the first 32 lines of a page, lower_tri's rows (at 1 MiB, a page
 * apart) three quarters of theirs; the packed stream spreads over every set. On the 2 MiB L2 of
 * Emerald Rapids (machine B), which holds memcpy's 2 MiB at 1 MiB, the typed lines and the packed
 * lines meant for the same sets do not fit there together; with those packed lines streamed, the
 * typed lines stay. bench_pack_cpu_ceiling there (2026-11-30, three runs), pack % of memcpy at 1
 * MiB: vector_bl256 every packed line streamed (gcomm then) 61, the crowded sets' lines 75, the
 * other lines 42, every other line 39; lower_tri 70 / 81 / 49 / 42; at 2 MiB, where memcpy runs
 * from the L3, streaming every line is better (99-108 against 89-97). crowded_mask takes the
 * split where the crowded typed lines fit their sets' share of the L2 and do not with the packed
 * lines of those sets, and only where one run of at most half the lines of a page holds at least
 * two thirds of the typed lines: a scattered choice streams every other line or so, as slow as the
 * 39-42 above. bench_pack_ab on machine B against the library without it (two rounds), pack:
 * vector_bl256 768 KiB 1.24-1.28x (it did not stream there), 1 MiB 1.17-1.18x; lower_tri 1 MiB
 * 1.13-1.15x, 768 KiB 0.98-1.00x (its rows do not crowd there: the mask's estimate); 512 KiB and
 * 1.5 MiB 1.00x; hvectors of 1-2 KiB rows 4096-6144 bytes apart, vector_bl16, subarray4d, struct
 * and the transpose at 768 KiB-1 MiB 1.00-1.05x. bench_pack_cpu at 1 MiB: vector_bl256 69.9%,
 * lower_tri 75.1% of memcpy (51-68 and 47-68 in the runs before). Not on AMD: on Zen 4 (1 MiB L2)
 * the ceiling's split measured 82 against gcomm's 91 for vector_bl256 at 1 MiB.
 * Difference array of 64 counts (plus base for every line of a page): the lines of [a, a + n). */
static inline void lines_add(int64_t diff[65], int64_t *base, uintptr_t a, size_t n)
{
    if (n == 0) return;
    const uint64_t nl = (uint64_t)(((a + n - 1) >> 6) - (a >> 6) + 1);
    const unsigned rem = (unsigned)(nl % 64), s = (unsigned)((a >> 6) & 63);
    *base += (int64_t)(nl / 64);
    if (rem == 0) return;
    diff[s]++;
    if (s + rem <= 64) {
        diff[s + rem]--;
    } else {
        diff[64]--;
        diff[0]++;
        diff[s + rem - 64]--;
    }
}

/* The crowded lines of a page (bit k: line k) from lines_add's counts, each count standing for
 * mult / per lines of blocks that pack to `packed` bytes, where streaming the packed lines of those
 * sets lets the typed lines of an operation of op bytes, if all of it were like these blocks, stay
 * in an L2 of l2 bytes: the typed lines there fit that share of the L2 and, with the packed lines
 * meant for the same sets (packed bytes spread over every set), do not. 0 otherwise, and when the
 * crowded lines are not one run of at most 32 lines holding at least two thirds of the lines
 * counted. op, not the blocks' own bytes: a range of an operation is judged as the operation. */
static uint64_t crowded_mask(const int64_t diff[65], int64_t base, int64_t mult, int64_t per,
                             int64_t packed, int64_t op, int64_t l2)
{
    if (packed <= 0) return 0;
    int64_t cnt[64], total = 0, run = 0, in = 0;
    for (int k = 0; k < 64; k++) {
        run += diff[k];
        cnt[k] = base + run;
        total += cnt[k];
    }
    uint64_t mask = 0;
    for (int k = 0; k < 64; k++)
        if (cnt[k] * 64 > total) {
            mask |= (uint64_t)1 << k;
            in += cnt[k];
        }
    const uint64_t before = mask << 1 | mask >> 63; /* bit k: line k - 1 crowded */
    const int lines = __builtin_popcountll(mask);
    if (__builtin_popcountll(mask & ~before) != 1 || lines > 32 || in * 3 < total * 2) return 0;
    /* op < l2 (select_copies), and the blocks' typed lines are within a few times their packed
     * bytes, which are within op: the products stay far below 2^63 */
    const int64_t share = l2 / 64 * lines, typed = in * 64 / per * mult * op / packed;
    return typed <= share && typed + op / 64 * lines > share ? mask : 0;
}

/* The masks below are estimated from at most GCOMMI_SPLIT_SAMPLES blocks, one from each of as many
 * equal stretches: counting every row's lines cost lower_tri's pack 6-10% where the rows turned
 * out not to crowd (bench_pack_ab on machine B, 2026-11-30, 512 KiB to 1.5 MiB, 362-627 rows; a
 * few ns a row), and hvectors of 2 KiB rows 6144 or 4160 bytes apart 2% at 1 MiB. The block taken
 * moves within its stretch from one stretch to the next (split_sample), so that blocks whose
 * places repeat with the stretch's period (rows at two places of a page by turns, a stride of a
 * page and 256 bytes sampled every 16 blocks) are not all seen at one place (test_dt_crowded_sets).
 * The mask chooses stores, not bytes: an estimate that errs costs time only. */
#define GCOMMI_SPLIT_SAMPLES 32

/* Sample i of n from count blocks (0 when there are none). */
static inline int64_t split_sample(int64_t i, int64_t n, int64_t count)
{
    const int64_t stretch = count / n;
    return stretch > 1 ? i * stretch + (i * 7) % stretch : i * stretch;
}

/* crowded_mask of count blocks of size bytes, stride apart from mem (one block stands for all when
 * the stride is a multiple of a page). */
static uint64_t crowded_strided(const char *mem, int64_t size, int64_t stride, int64_t count,
                                int64_t op, int64_t l2)
{
    int64_t diff[65] = {0}, base = 0;
    const int64_t n = (abs64(stride) & (GCOMMI_PAGE - 1)) == 0 ? 1
                      : count < GCOMMI_SPLIT_SAMPLES          ? count
                                                              : GCOMMI_SPLIT_SAMPLES;
    for (int64_t i = 0; i < n; i++)
        lines_add(diff, &base, (uintptr_t)(mem + split_sample(i, n, count) * stride), (size_t)size);
    return crowded_mask(diff, base, count, n, size * count, op, l2);
}

/* crowded_mask of an indexed node's contiguous blocks of elem-byte elements. */
static uint64_t crowded_indexed(const char *m, const int64_t *displs, const int64_t *prefix,
                                int64_t count, int64_t elem, int64_t op, int64_t l2)
{
    int64_t diff[65] = {0}, base = 0;
    const int64_t n = count < GCOMMI_SPLIT_SAMPLES ? count : GCOMMI_SPLIT_SAMPLES;
    for (int64_t i = 0; i < n; i++) {
        const int64_t b = split_sample(i, n, count);
        lines_add(diff, &base, (uintptr_t)(m + displs[b]),
                  (size_t)((prefix[b + 1] - prefix[b]) * elem));
    }
    return crowded_mask(diff, base, count, n, (prefix[count] - prefix[0]) * elem, op, l2);
}

/* n bytes from src to dst, the whole lines of dst whose place in their page is in mask written
 * with streaming stores, the others and the partial lines at either end with ordinary ones. */
__attribute__((target("avx2"))) static void copy_split(char *dst, const char *src, size_t n,
                                                      uint64_t mask)
{
    const size_t head = (size_t)(-(uintptr_t)dst & 63);
    if (n < head + 64) {
        vec_bytes(dst, src, n);
        return;
    }
    vec_bytes(dst, src, head);
    size_t i = head;
    for (; i + 64 <= n; i += 64) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(src + i));
        const __m256i b = _mm256_loadu_si256((const __m256i *)(src + i + 32));
        if ((mask >> (((uintptr_t)(dst + i) >> 6) & 63)) & 1) {
            _mm256_stream_si256((__m256i *)(dst + i), a);
            _mm256_stream_si256((__m256i *)(dst + i + 32), b);
        } else {
            _mm256_store_si256((__m256i *)(dst + i), a);
            _mm256_store_si256((__m256i *)(dst + i + 32), b);
        }
    }
    vec_bytes(dst + i, src + i, n - i);
}

/* count blocks of `size` bytes at mem, mem + stride, ... packed from p by gather_group: the
 * strided blocks whose packed lines gather_stream_ilv cannot take whole (a packed buffer from
 * malloc is 16 bytes past a page). vector_bl256 packed to a page + 16 on the Zen 4 VM (a scratch
 * driver, two alternating rounds, 2026-11-29), against one block after the other: 16 / 64 / 256
 * MiB 6.3-7.0 / 5.9-8.0 / 5.4-7.3 GB/s -> 8.9 / 7.1-8.4 / 7.3-8.9 GB/s. For whole lines
 * gather_stream_ilv measured 0-25 points of memcpy above this path (three of six pairs). */
static void gather_strided(char *p, const char *mem, int64_t size, int64_t stride, int64_t count)
{
    const int W = GCOMMI_GATHER_WAYS;
    gather_block_t g[GCOMMI_GATHER_WAYS];
    const char *next[GCOMMI_GATHER_WAYS];
    for (int64_t b = 0; b < count; b += W) {
        const int w = count - b < W ? (int)(count - b) : W;
        int nnext = 0;
        for (int k = 0; k < w; k++) {
            g[k].src = mem + (b + k) * stride;
            g[k].len = (size_t)size;
        }
        for (int64_t k = b + W; k < b + 2 * W && k < count; k++) next[nnext++] = mem + k * stride;
        p = gather_group(p, g, w, next, nnext);
    }
}

/* The blocks of an indexed node whose blocks are contiguous (elem bytes per element), packed
 * from p in a streaming pack (c->gather_ilv): runs of blocks of at least min_block bytes by
 * gather_group, shorter blocks by one memcpy each. Returns the packed stream's next byte.
 * lower_tri pack on the Zen 4 VM (bench_pack_cpu, three alternating rounds, 2026-11-29) against
 * one block after the other with the next one's first 2 KiB prefetched, % of memcpy: 16 / 64 /
 * 256 MiB 87-94 / 108-113 / 103-133% -> 142-153 / 142-153 / 127-149%. */
static char *gather_indexed(char *p, const char *m, const int64_t *displs, const int64_t *prefix,
                            int64_t count, int64_t elem, size_t min_block)
{
    const int W = GCOMMI_GATHER_WAYS;
    gather_block_t g[GCOMMI_GATHER_WAYS];
    const char *next[GCOMMI_GATHER_WAYS];
    int64_t b = 0;
    while (b < count) {
        int w = 0;
        for (; w < W && b + w < count; w++) {
            const size_t len = (size_t)((prefix[b + w + 1] - prefix[b + w]) * elem);
            if (len < min_block) break;
            g[w].src = m + displs[b + w];
            g[w].len = len;
        }
        if (w == 0) {
            const size_t len = (size_t)((prefix[b + 1] - prefix[b]) * elem);
            memcpy(p, m + displs[b], len);
            p += len;
            b++;
            continue;
        }
        int nnext = 0;
        for (int64_t k = b + w; k < b + w + W && k < count; k++) next[nnext++] = m + displs[k];
        p = gather_group(p, g, w, next, nnext);
        b += w;
    }
    return p;
}

/* Blocks of copy_vec in operations in the cache on Zen 4 (c->pf_line; a vector's blocks from
 * GCOMMI_PF_STRIDED_MIN bytes, c->pf_strided): the first line of the block GCOMMI_PF_LINE_AHEAD
 * ahead is prefetched, and copy_vec's loop is inlined. A block that starts a new 4 KiB page costs
 * more than its bytes: a scratch program on the Zen 4 VM copying 4 MiB in blocks of 2 KiB every 4
 * KiB (vector_bl256), 1 KiB every 2 KiB, 2 KiB every 6 KiB or 8 KiB (two pages touched per 4 KiB
 * copied) reached 63-78% of one memcpy, in blocks of 4 KiB every 8 KiB or without gaps (one page
 * per 4 KiB) 90-103%; with 2 MiB pages the first kind rose to 79-84%, so translating the pages
 * is part of that cost. One prefetch per block starts the
 * next blocks' page walks and first misses early: 72% -> 84-86% in that program; in gcomm the
 * figures of select_copies. Distances 1 to 32 blocks measured alike in separate runs; in one
 * process (bench_pack_ab, 2026-11-29) 1 measured as 2, and 4 and 8 cost vector_bl256's walk
 * (strided_vec_walk) 5-17% at 256 KiB-4 MiB. The whole block two ahead,
 * line by line from its start, lost (vector_bl256 and lower_tri at 4 MiB 72-77% of memcpy against
 * 74-85%, 2026-11-29); from its end down it wins for some vectors (strided_vec_walk). */
#define GCOMMI_PF_LINE_AHEAD 2

/* Prefetches the line before *q, if it is not below lo (the first line of the range: a range need
 * not start on a line). */
static inline void prefetch_down(const char **q, const char *lo, int pack)
{
    if (*q > lo) {
        *q -= 64;
        prefetch_line(*q < lo ? lo : *q, pack);
    }
}

/* copy_vec's loop (dst, src, n) that also prefetches the lines of [pa, pa + pn) from its end down,
 * two per 128 bytes copied, and those left after the copy. */
__attribute__((target("avx2"), always_inline)) static inline void
vec_bytes_pf_down(char *dst, const char *src, size_t n, const char *pa, size_t pn, int pack)
{
    const char *q = pa + pn;
    size_t i = 0;
    if (n >= 32) {
        for (; i + 128 <= n; i += 128) {
            prefetch_down(&q, pa, pack);
            prefetch_down(&q, pa, pack);
            move128_avx2(dst + i, src + i);
        }
        for (; i + 32 <= n; i += 32) move32_avx2(dst + i, src + i);
        if (i < n) move32_avx2(dst + n - 32, src + n - 32);
    } else if (n) {
        copy_small(dst, src, n);
    }
    while (q > pa) prefetch_down(&q, pa, pack);
}

/* The blocks of a vector, the first line of the block GCOMMI_PF_LINE_AHEAD ahead prefetched. A
 * pack stores blocks of GCOMMI_ADST_BLOCK_MIN bytes and more 32-byte aligned (vec_bytes_adst):
 * packed blocks whose length is not a multiple of 32 start anywhere in a line, and Zen 4 too pays
 * for stores that cross one. bench_pack_ab on machine D (2026-11-29), against vec_bytes' unaligned
 * stores, hvectors of rows R bytes S apart (--rows R:S), packs: 1032:2064 1.07x at 256 KiB,
 * 1.06-1.07x at 1-2 MiB; 1096:4096 1.05-1.07x; 1080:5000 1.04x; at 4-8 MiB, past the L2,
 * 0.96-1.01x (ties within the rounds' quartiles); unpacks unchanged. */
__attribute__((target("avx2"))) static void strided_vec_pf(char *p, char *mem, int64_t size,
                                                          int64_t stride, int64_t count, int pack)
{
    for (int64_t b = 0; b < count; b++, p += size, mem += stride) {
        if (b + GCOMMI_PF_LINE_AHEAD < count)
            prefetch_line(mem + GCOMMI_PF_LINE_AHEAD * stride, pack);
        if (pack) vec_bytes_adst(p, mem, (size_t)size);
        else vec_bytes(mem, p, (size_t)size);
    }
}

/* The blocks of a vector, the block GCOMMI_PF_LINE_AHEAD ahead prefetched whole, from its end down,
 * two lines per 128 bytes copied (a block across a page boundary: its first line, then its last
 * page). Read forward, a block that ends inside its 4 KiB page makes Zen 4's prefetchers fetch the
 * rest of the page, which the pack never reads: bench_prefetch_overrun (lines of each page cached
 * after one pass over 512 blocks from cold) found a forward copy of 2 KiB every 4 KiB fetching
 * lines 32-59 of every page, and none past the block when the block ahead had been prefetched from
 * its end down (the copy then hits lines already there). Taken for blocks of
 * GCOMMI_PF_WALK_BLOCK_MIN to _MAX bytes a page or more apart over at most GCOMMI_PF_WALK_SPAN_MAX
 * bytes (2048 pages), where it won. vector(n, bl, stride) of doubles
 * against strided_vec_pf in the same minutes, machine D, 2026-11-29, % of memcpy, pack / unpack,
 * two rounds:
 *   2 KiB every 4 KiB, 1 MiB: 84 / 79-82 -> 93 / 93-95; 2 MiB: 83 / 82 -> 92 / 93-94
 *   2 KiB every 8 KiB, 1 MiB: 84 / 83-86 -> 93-95 / 96-97; 2 MiB: 81-86 / 79 -> 86-87 / 88-89
 *   1.5 and 1.56 KiB every 4 KiB, 1-2 MiB: 82-88 / 79-86 -> 90-92 / 89-96
 *   2 KiB every 6 KiB: 90-92 / 89-90 -> 92-95 / 95-97; 3 KiB every 4 KiB: 92-94 / 92-96 -> 92-93 /
 *   95-97 (unpack)
 * and lost for 1 KiB every 4 KiB (pack up to 10 points at 2 MiB, though unpack won) and every
 * 8 KiB (pack and unpack up to 17 points), 3.75 KiB every 4 KiB (3-8 points), 4 KiB and more (2-6
 * points), blocks under a page apart (2 KiB every 3 KiB: 4-5 points), and over more than 8 MiB
 * (4 MiB packed, 2 KiB every 6 or 8 KiB: 2-7 points, where every page entered by a jump costs
 * 10-31 ns whatever the loop: bench_page_jump, bench_pack_cpu_ceiling --huge-pages), while 2 KiB
 * every 4 KiB at 4 MiB (8 MiB) gained 3-7 points, 7-11 on 2 MiB pages. Blocks exactly a page
 * apart keep winning to a 16 MiB span (GCOMMI_PF_WALK_SPAN_MAX_PAGE; bench_pack_ab, 2026-11-29,
 * 5-7 MiB packed: vector_bl256 1.04-1.29x, 1.5 KiB every 4 KiB 1.00-1.31x, 3 KiB 0.98-1.05x;
 * without it vector_bl256 packed at 0.92-0.97x MPI_Pack there), where 2 KiB every 6 or 8 KiB
 * lost 3-18% at 3-4 MiB (12-16 MiB span) and 2 KiB every 4160-5120 bytes measured 0.95-1.26x.
 * For lower_tri's rows (indexed_vec_pf) the same lost 2-8 points at 512 KiB-4 MiB pack (also
 * walking only rows of up to 1, 2 or 4 KiB, or only in operations of up to 1.5 MiB; for unpacks
 * alone, bench_pack_ab on machine D, 2026-11-30: 1.03-1.04x at 1 MiB, 0.91-0.93x at 4 MiB,
 * 0.97-1.00x at 256 KiB-2 MiB; again on 2026-11-30 with the pack's stores 32-byte aligned as
 * indexed_vec_pf has them: pack 0.94-0.98x at 256 KiB-4 MiB, unpack 1.03-1.05x at 1 MiB, where
 * the rows are exactly a page apart, 0.99-1.02x at 384 KiB-1.5 MiB otherwise; walking only the
 * rows of GCOMMI_PF_WALK_BLOCK_MIN to _MAX bytes, as for vectors: 0.95-1.00x at 256 KiB-4 MiB),
 * so indexed nodes keep the first line, but for the unpacks of rows a page apart, measured again
 * and taken in indexed_vec_unpack_walk. The copy is vec_bytes' loop written again with the
 * prefetches, not vec_bytes with an empty range: strided_vec_pf keeps its own loop untouched.
 * nt (unpacks of blocks that start on 64-byte lines and span the L2, ctx_t.walk_nt_span):
 * every odd block is written by copy_stream instead, and only the even ones walk the (even)
 * block two ahead; the caller fences. */
__attribute__((target("avx2"))) static void strided_vec_walk(char *p, char *mem, int64_t size,
                                                            int64_t stride, int64_t count, int pack,
                                                            int nt)
{
    for (int64_t b = 0; b < count; b++, p += size, mem += stride) {
        if (nt && (b & 1)) { /* an unpack's odd block: streamed, and not prefetched ahead */
            copy_stream(mem, p, (size_t)size);
            continue;
        }
        const char *pa = mem;
        size_t pn = 0;
        if (b + GCOMMI_PF_LINE_AHEAD < count) {
            pa = mem + GCOMMI_PF_LINE_AHEAD * stride;
            const char *end = pa + size;
            const char *last_page =
                (const char *)((uintptr_t)(end - 1) & ~(uintptr_t)(GCOMMI_PAGE - 1));
            if (last_page > pa) { /* across a page boundary: its first line, then its last page */
                prefetch_line(pa, pack);
                pa = last_page;
            }
            pn = (size_t)(end - pa);
        }
        if (pack) vec_bytes_pf_down(p, mem, (size_t)size, pa, pn, pack);
        else vec_bytes_pf_down(mem, p, (size_t)size, pa, pn, pack);
    }
}

/* The blocks of an indexed node whose blocks are contiguous, in operations in the cache on Zen 4
 * (c->pf_line): every block by copy_vec's loop inlined (copy_small below 32 bytes), not a libc
 * memcpy below 1 KiB and copy_vec through a pointer above, with the prefetch of strided_vec_pf.
 * bench_pack_cpu_ceiling on the Zen 4 VM, three runs of each, gcomm against blk_avx2_pfl (the same
 * loop written for the shape) in the same runs, lower_tri (rows of 8 bytes to 8 KiB), points of
 * memcpy under that loop: 1 MiB pack 0.6-2.5 -> 0.4-0.8, unpack 1.3-4.9 -> 0.3-1.1, 4 MiB pack
 * 1.3-3.5 -> 0.3-2.1, unpack 1.5-2.3 -> 0.4-1.6. A pack stores rows of GCOMMI_ADST_BLOCK_MIN bytes
 * and more 32-byte aligned, as strided_vec_pf does (lower_tri's packed rows start at every
 * multiple of 8 bytes): bench_pack_ab on machine D (2026-11-29), lower_tri pack 1.04-1.05x at
 * 256-512 KiB, 1.02-1.04x at 1 MiB (85 -> 89% of memcpy in bench_pack_cpu), 1.02x at 2 MiB,
 * 0.99-1.00x at 4-8 MiB; from 64 bytes instead of 256, 0.98-1.02x against it. Packs only since
 * 2026-11-30: unpacks take indexed_vec_unpack_walk, the same loop with the row ahead walked
 * whole where it starts a page after the row before. Returns the packed stream's next byte. */
__attribute__((target("avx2"))) static char *indexed_vec_pf(char *p, const char *m,
                                                          const int64_t *displs,
                                                          const int64_t *prefix, int64_t count,
                                                          int64_t elem)
{
    for (int64_t b = 0; b < count; b++) {
        size_t len = (size_t)((prefix[b + 1] - prefix[b]) * elem);
        if (b + GCOMMI_PF_LINE_AHEAD < count)
            prefetch_line(m + displs[b + GCOMMI_PF_LINE_AHEAD], 1);
        vec_bytes_adst(p, m + displs[b], len);
        p += len;
    }
    return p;
}
#define GCOMMI_HAVE_VEC_PF 1

/* The blocks of an affine indexed node (GCOMMI_DL_AFFINE) whose blocks are contiguous and start
 * exactly a page apart (lower_tri's rows at 1 MiB: a 512 x 512 matrix of doubles), packed in
 * operations in the cache on Zen 4 (c->pf_line): block b is len + b * dlen bytes at
 * m + b * GCOMMI_PAGE, copied by copy_vec's loop while the block GCOMMI_PF_LINE_AHEAD ahead is
 * prefetched whole, from its end down (vec_bytes_pf_down; its first line only when it is longer
 * than a page), as indexed_vec_unpack_walk does for unpacks. Every place and length is computed,
 * not read from the node's displs[] and prefix[]: with them read, the same walk packed no faster
 * than indexed_vec_pf's first line. Machine D (Zen 4), 2026-11-30, lower_tri at 1 MiB, % of
 * memcpy (docs/BENCHMARKS.md, session 48): in bench_pack_cpu_ceiling the walk with places computed
 * (blk_avx2_walk) packed at 90.4 over 24 runs, the same walk reading tables (tbl_walk) at 88.2
 * (87.6 with the tables' lines prefetched 32 rows ahead), indexed_vec_pf at 88.7; with this loop
 * the library, loaded as gcomm in eight alternating runs, 87.6 -> 90.0, and over 20 runs 0.28 +-
 * 0.07 points under blk_avx2_walk (1.64 before); bench_pack_cpu, 16 runs, 88.0 -> 89.3;
 * bench_pack_ab 1.000-1.017x. Walking every affine node's rows (any step) lost where the rows are
 * not a page apart: lower_tri at 768 KiB-4 MiB 0.92-0.97x (0.96-0.98x with only the first line
 * of rows longer than a page). Returns the packed stream's next byte. */
__attribute__((target("avx2"))) static char *indexed_affine_walk(char *p, const char *m,
                                                               int64_t len, int64_t dlen,
                                                               int64_t count)
{
    for (int64_t b = 0; b < count; b++, m += GCOMMI_PAGE, len += dlen) {
        const char *pa = m;
        size_t pn = 0;
        if (b + GCOMMI_PF_LINE_AHEAD < count) {
            pa = m + GCOMMI_PF_LINE_AHEAD * GCOMMI_PAGE;
            pn = (size_t)(len + GCOMMI_PF_LINE_AHEAD * dlen);
            if (pn > GCOMMI_PAGE) {
                prefetch_line(pa, 1);
                pn = 0;
            }
        }
        vec_bytes_pf_down(p, m, (size_t)len, pa, pn, 1);
        p += len;
    }
    return p;
}

/* indexed_vec_pf's unpack, but the row ahead that starts exactly a page after the row before it is
 * prefetched whole (the write hint of prefetch_line), from its end down, as strided_vec_walk does
 * for vectors' blocks a page apart (vec_bytes_pf_down). lower_tri at 1 MiB, whose rows are
 * exactly a page apart, bench_pack_cpu on machine D, 2026-11-30, three alternating rounds, % of
 * memcpy: 87.5-88.4 -> 90.7-92.0; bench_pack_ab 1.04-1.05x there, 0.98-1.04x at every other size
 * of lower_tri, subarray4d and struct from 64 KiB to 16 MiB; bench_pack_cpu_ceiling, three runs:
 * 92.4 against the computed walk's 94.7 and the walk reading tables' (tbl_walk) 93.1. Rows at
 * other distances keep the first line: walking every row ahead lost 0.91-0.93x at 4 MiB (rows 8
 * KiB apart) and 0.97-1.00x at 256 KiB-2 MiB. Packs keep indexed_vec_pf: at 1 MiB the same walk
 * with the aligned stores measured 87.0-87.7% of memcpy against 84.2-88.7% (three rounds), and 2
 * or 4 first lines of the row ahead, or the row three or four ahead, 0.98-1.00x; no loop over
 * lower_tri's addresses passed 89.8% there (gcomm 89.5, the computed walk 89.8, tbl_walk 87.7). */
__attribute__((target("avx2"))) static char *indexed_vec_unpack_walk(char *p, char *m,
                                                                    const int64_t *displs,
                                                                    const int64_t *prefix,
                                                                    int64_t count, int64_t elem)
{
    for (int64_t b = 0; b < count; b++) {
        const size_t len = (size_t)((prefix[b + 1] - prefix[b]) * elem);
        char *t = m + displs[b];
        const int64_t a = b + GCOMMI_PF_LINE_AHEAD;
        if (a < count && displs[a] - displs[a - 1] == GCOMMI_PAGE)
            vec_bytes_pf_down(t, p, len, m + displs[a],
                              (size_t)((prefix[a + 1] - prefix[a]) * elem), 0);
        else {
            if (a < count) prefetch_line(m + displs[a], 0);
            vec_bytes(t, p, len);
        }
        p += len;
    }
    return p;
}

/* Transposes four rows of four doubles in place (r[k] becomes column k). */
__attribute__((target("avx2"), always_inline)) static inline void transpose4_pd(__m256d *r)
{
    const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
    const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
    r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

/* A transposing pack's tile of 8 columns of 8-byte elements (8 packed streams, inst bytes apart):
 * 8 rows at a time, the 8 x 8 block transposed in registers and each stream's 64 bytes written at
 * once; the row pf ahead of each of the 8 prefetched first while pf rows remain; the last n2 % 8
 * rows element by element. m: the tile's first row (rows s2 bytes apart), p: its first stream.
 * - tile8_pack_nt, past the caches (packs that stream): streaming stores, so that no packed line
 *   is read for ownership; p and inst multiples of 32 (transpose8). A scratch program on machine
 *   D (2026-11-29, N x N doubles): 1.23-2.45x the 8-column loop of tile_8_8 at 8-64 MiB.
 * - tile8_pack_nt_l2, the same for rows a multiple of 4 KiB apart (N a multiple of 512), whose
 *   lines all fall in one set of the L1: the rows ahead are prefetched into the L2 only
 *   (prefetcht1), where the L1's 8 ways no longer hold them (figures in select_copies).
 * - tile8_pack, in the caches: ordinary stores, any alignment; in place of the 8-column loop of
 *   tile_8_8, whose 64 loads and 64 stores per 8 x 8 block become 16 and 16 (figures in
 *   select_copies). */
#define GCOMMI_TILE8_PACK(NAME, STORE, LOC)                                                     \
    __attribute__((target("avx2"))) static void NAME(const char *m, char *p, int64_t s2,       \
                                                     int64_t inst, int64_t n2, int64_t pf)      \
    {                                                                                           \
        int64_t j = 0;                                                                          \
        for (; j + 8 <= n2; j += 8, m += 8 * s2, p += 64) {                                     \
            if (pf && j + pf + 8 <= n2)                                                         \
                for (int r = 0; r < 8; r++) __builtin_prefetch(m + (pf + r) * s2, 0, LOC);      \
            __m256d lo[8], hi[8]; /* lo[r]: columns 0-3 of row r, hi[r]: columns 4-7 */        \
            for (int r = 0; r < 8; r++) {                                                       \
                lo[r] = _mm256_loadu_pd((const double *)(const void *)(m + r * s2));            \
                hi[r] = _mm256_loadu_pd((const double *)(const void *)(m + r * s2 + 32));       \
            }                                                                                   \
            transpose4_pd(lo);                                                                  \
            transpose4_pd(lo + 4);                                                              \
            transpose4_pd(hi);                                                                  \
            transpose4_pd(hi + 4);                                                              \
            for (int t = 0; t < 4; t++) { /* stream t: rows 0-3 in lo[t], 4-7 in lo[4 + t] */  \
                double *o = (double *)(void *)(p + t * inst);                                   \
                STORE(o, lo[t]);                                                                \
                STORE(o + 4, lo[4 + t]);                                                        \
                double *o2 = (double *)(void *)(p + (t + 4) * inst);                            \
                STORE(o2, hi[t]);                                                               \
                STORE(o2 + 4, hi[4 + t]);                                                       \
            }                                                                                   \
        }                                                                                       \
        for (; j < n2; j++, m += s2, p += 8)                                                    \
            for (int t = 0; t < 8; t++) memcpy(p + t * inst, m + t * 8, 8);                     \
    }
GCOMMI_TILE8_PACK(tile8_pack_nt, _mm256_stream_pd, 3)
GCOMMI_TILE8_PACK(tile8_pack_nt_l2, _mm256_stream_pd, 2)
GCOMMI_TILE8_PACK(tile8_pack, _mm256_storeu_pd, 3)
#undef GCOMMI_TILE8_PACK

/* A transposing unpack's tile of 8 columns of 8-byte elements (the mirror of tile8_pack): 8 rows
 * at a time, each packed stream's 64 bytes read as two 32-byte loads, the
 * 8 x 8 block transposed in registers and each matrix row's 64 bytes written as two 32-byte
 * stores; the row pf ahead of each of the 8 prefetched for writing first while pf rows remain; the
 * last n2 % 8 rows element by element. m: the tile's first row (rows s2 bytes apart), p: its first
 * stream (streams inst bytes apart); any alignment. Unpacks that stream take tile32_unpack_nt
 * instead where its alignment holds (transpose8; figures in select_copies). */
__attribute__((target("avx2"))) static void tile8_unpack(char *m, const char *p, int64_t s2,
                                                       int64_t inst, int64_t n2, int64_t pf)
{
    int64_t j = 0;
    for (; j + 8 <= n2; j += 8, m += 8 * s2, p += 64) {
        if (pf && j + pf + 8 <= n2)
            for (int r = 0; r < 8; r++) __builtin_prefetch(m + (pf + r) * s2, 1, 3);
        /* a[t]: stream t's rows 0-3 (t < 4: columns 0-3; then 4-7), b[t]: its rows 4-7 */
        __m256d a[8], b[8];
        for (int t = 0; t < 8; t++) {
            a[t] = _mm256_loadu_pd((const double *)(const void *)(p + t * inst));
            b[t] = _mm256_loadu_pd((const double *)(const void *)(p + t * inst + 32));
        }
        transpose4_pd(a);     /* a[k]: row k, columns 0-3 */
        transpose4_pd(a + 4); /* a[4 + k]: row k, columns 4-7 */
        transpose4_pd(b);
        transpose4_pd(b + 4);
        for (int k = 0; k < 4; k++) {
            double *o = (double *)(void *)(m + k * s2);
            _mm256_storeu_pd(o, a[k]);
            _mm256_storeu_pd(o + 4, a[4 + k]);
            double *o2 = (double *)(void *)(m + (k + 4) * s2);
            _mm256_storeu_pd(o2, b[k]);
            _mm256_storeu_pd(o2 + 4, b[4 + k]);
        }
    }
    for (; j < n2; j++, m += s2, p += 8)
        for (int t = 0; t < 8; t++) memcpy(m + t * 8, p + t * inst, 8);
}

/* Transposes eight rows of eight doubles in place (r[k] becomes column k). */
__attribute__((target("avx512f"), always_inline)) static inline void transpose8_pd(__m512d *r)
{
    __m512d t[8], u[8];
    for (int i = 0; i < 8; i += 2) { /* t[i]: columns 0, 2, 4, 6 of rows i, i+1; t[i+1]: 1, 3.. */
        t[i] = _mm512_unpacklo_pd(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_pd(r[i], r[i + 1]);
    }
    const __m512i lo = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
    const __m512i hi = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
    for (int i = 0; i < 8; i += 4) /* rows i..i+3 of columns (0, 4), (1, 5), (2, 6), (3, 7) */
        for (int k = 0; k < 2; k++) {
            u[i + k] = _mm512_permutex2var_pd(t[i + k], lo, t[i + k + 2]);
            u[i + k + 2] = _mm512_permutex2var_pd(t[i + k], hi, t[i + k + 2]);
        }
    const __m512i first = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0);
    const __m512i second = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
    for (int k = 0; k < 4; k++) {
        r[k] = _mm512_permutex2var_pd(u[k], first, u[k + 4]);
        r[k + 4] = _mm512_permutex2var_pd(u[k], second, u[k + 4]);
    }
}

/* tile8_pack_nt for packed streams that start on 8 bytes but not on 32 (an N x N matrix with N
 * not a multiple of 4; Zen 4 has AVX-512, which select_copies requires for c->tile8): stream t's
 * first h_t elements, up to its first 64-byte line, are stored one by one; from there each of
 * its lines takes the last 8 - h_t elements of one transposed 8 x 8 block and the first h_t of the
 * next (one permute of the two), written whole with a streaming store. The scratch program: N =
 * 1449, 1620 and 2897 1.18-1.62x the 8-column loop; for streams on 32 bytes the AVX2 kernel
 * above stays 12-17% faster. Needs n2 >= 16 (else element by element). */
__attribute__((target("avx512f"))) static void tile8_pack_nt_any(const char *m, char *p, int64_t s2,
                                                               int64_t inst, int64_t n2, int64_t pf)
{
    int64_t h[8];
    __m512i idx[8];
    for (int t = 0; t < 8; t++) {
        h[t] = (int64_t)(((64 - ((uintptr_t)(p + t * inst) & 63)) & 63) / 8);
        idx[t] = _mm512_add_epi64(_mm512_set1_epi64(h[t]),
                                  _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0));
    }
    int64_t k = 0; /* rows [0, k) of every stream are stored */
    if (n2 >= 16) {
        for (int t = 0; t < 8; t++) /* the heads */
            for (int64_t j = 0; j < h[t]; j++)
                memcpy(p + t * inst + j * 8, m + j * s2 + t * 8, 8);
        __m512d prev[8], cur[8];
        for (int r = 0; r < 8; r++)
            prev[r] = _mm512_loadu_pd((const double *)(const void *)(m + r * s2));
        transpose8_pd(prev);
        for (k = 8; k + 8 <= n2; k += 8) {
            const char *mb = m + k * s2;
            if (pf && k + pf + 8 <= n2)
                for (int r = 0; r < 8; r++) __builtin_prefetch(mb + (pf + r) * s2, 0, 3);
            for (int r = 0; r < 8; r++)
                cur[r] = _mm512_loadu_pd((const double *)(const void *)(mb + r * s2));
            transpose8_pd(cur);
            for (int t = 0; t < 8; t++) { /* stream t's line of rows [k - 8 + h_t, k + h_t) */
                _mm512_stream_pd((double *)(void *)(p + t * inst + (k - 8 + h[t]) * 8),
                                 _mm512_permutex2var_pd(prev[t], idx[t], cur[t]));
                prev[t] = cur[t];
            }
        }
        k -= 8; /* stream t has rows [0, k + h_t) */
    }
    for (int t = 0; t < 8; t++)
        for (int64_t j = n2 >= 16 ? k + h[t] : 0; j < n2; j++)
            memcpy(p + t * inst + j * 8, m + j * s2 + t * 8, 8);
}

/* The last r < 8 columns of a transpose of 8-byte elements (transpose8: count % 8 of a whole
 * operation, or every whole column of a range that holds fewer than 8), 8 rows at a time like
 * tile8_pack and tile8_unpack: the 8 rows' r elements by masked 64-byte loads (pack) or stores
 * (unpack), which leave the columns after the r untouched, transposed 8 x 8 in registers, and
 * each of the r packed streams' 64 bytes at once; the row pf ahead of each of the 8 prefetched
 * first while pf rows remain; the last n2 % 8 rows element by element. Before, these columns went
 * element by element, column by column, each column walking every row again: bench_pack_range on
 * machine D (2026-11-30), a 16 MiB transpose (1449 x 1449) in ranges of 64 KiB (about 5 columns
 * each), ranged time over the whole call's, pack / unpack: 2.49-3.08 / 2.02-3.29x -> 1.14 /
 * 1.36x (element by element row by row: 1.39 / 1.66x). Whole operations, bench_pack_ab against
 * that, two rounds: 16 KiB (N = 46, 6 columns left) 1.09-1.12x, 64 KiB-4 MiB 0.99-1.03x. A
 * range's two cut columns taken into the same pass over the rows (each row's mask also taking the
 * head column from row a on and the tail column up to row b) measured worse: 64 KiB ranges of 16
 * and 64 MiB, the ranged time against this, packs 0.8-1.0x, unpacks 0.65-0.8x. */
__attribute__((target("avx512f"))) static void tile8_rest(char *m, char *p, int64_t s2,
                                                        int64_t inst, int64_t n2, int r, int pack,
                                                        int64_t pf)
{
    const __mmask8 k = (__mmask8)((1u << r) - 1);
    int64_t j = 0;
    for (; j + 8 <= n2; j += 8, m += 8 * s2, p += 64) {
        if (pf && j + pf + 8 <= n2)
            for (int q = 0; q < 8; q++) prefetch_line(m + (pf + q) * s2, pack);
        __m512d v[8];
        if (pack) {
            for (int q = 0; q < 8; q++)
                v[q] = _mm512_maskz_loadu_pd(k, (const double *)(const void *)(m + q * s2));
            transpose8_pd(v); /* v[t]: column t of the 8 rows */
            for (int t = 0; t < r; t++) _mm512_storeu_pd((double *)(void *)(p + t * inst), v[t]);
        } else {
            for (int t = 0; t < 8; t++)
                v[t] = t < r ? _mm512_loadu_pd((const double *)(const void *)(p + t * inst))
                             : _mm512_setzero_pd();
            transpose8_pd(v); /* v[q]: row q's r elements, then zeros */
            for (int q = 0; q < 8; q++)
                _mm512_mask_storeu_pd((double *)(void *)(m + q * s2), k, v[q]);
        }
    }
    for (; j < n2; j++, m += s2, p += 8)
        for (int t = 0; t < r; t++) {
            if (pack) memcpy(p + t * inst, m + t * 8, 8);
            else memcpy(m + t * 8, p + t * inst, 8);
        }
}

/* Lines of each packed stream tile32_unpack_nt prefetches ahead. A first version of the kernel
 * (machine D, 2026-11-29, 16 and 64 MiB): 4 lines 1.09-1.16x against none, 16 lines 1.06-1.10x;
 * this one with 8 lines within 5% of 4. */
#define GCOMMI_TILE32_PF_AHEAD 4

/* A transposing unpack's strip of 32 columns of 8-byte elements past the caches, with streaming
 * stores that write every matrix line whole (AVX-512). A row's column 0 of the strip lies h_r
 * elements past a line (h_r = the row's address mod 64 / 8; the same for row r of every 8, since
 * 8 rows are a multiple of 64 bytes apart), so the strip writes, for row r, the 4 lines of
 * columns -h_r to 31 - h_r: each takes the last 8 - h_r elements of one transposed 8 x 8 block
 * and the first h_r of the next (one permute), the first line the last block of the strip before
 * (read again from its 8 streams). The strips thus tile each row in whole lines, and only the
 * lines at the matrix's ends are written in part. first: no strip before (the row's first 8 -
 * h_r columns with ordinary stores instead). m: the strip's first row (rows s2 bytes apart, s2 a
 * multiple of 8, m on 8 bytes), p: its first stream (streams inst bytes apart); 8 rows at a time,
 * the last n2 % 8 element by element; the caller fences and writes each row's columns from 32 -
 * h_r of the last strip. */
__attribute__((target("avx512f"))) static void tile32_unpack_nt(char *m, const char *p, int64_t s2,
                                                              int64_t inst, int64_t n2, int first)
{
    int h[8], skew = 0;
    __m512i idx[8];
    for (int r = 0; r < 8; r++) {
        h[r] = (int)(((uintptr_t)(m + r * s2) & 63) / 8);
        idx[r] = _mm512_add_epi64(_mm512_set1_epi64(8 - h[r]),
                                  _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0));
        skew |= h[r];
    }
    const int before = skew && !first; /* the block before is needed */
    int64_t j = 0;
    for (; j + 8 <= n2; j += 8, m += 8 * s2, p += 64) {
        if (j + 8 * GCOMMI_TILE32_PF_AHEAD < n2)
            for (int t = before ? -8 : 0; t < 32; t++)
                __builtin_prefetch(p + t * inst + 64 * GCOMMI_TILE32_PF_AHEAD, 0, 3);
        __m512d prev[8], cur[8];
        if (before) {
            for (int t = 0; t < 8; t++)
                prev[t] = _mm512_loadu_pd((const double *)(const void *)(p + (t - 8) * inst));
            transpose8_pd(prev); /* prev[r]: row r, columns -8 to -1 */
        }
        for (int g = 0; g < 4; g++) {
            for (int t = 0; t < 8; t++)
                cur[t] = _mm512_loadu_pd((const double *)(const void *)(p + (8 * g + t) * inst));
            transpose8_pd(cur);
            for (int r = 0; r < 8; r++) { /* the line of columns 8g - h_r to 8g + 7 - h_r */
                double *row = (double *)(void *)(m + r * s2);
                if (g == 0 && !before) prev[r] = cur[r]; /* h_r = 0 or first */
                if (g == 0 && first && h[r]) {
                    double e[8];
                    _mm512_storeu_pd(e, cur[r]);
                    for (int k = 0; k < 8 - h[r]; k++) row[k] = e[k];
                } else {
                    _mm512_stream_pd(row + 8 * g - h[r],
                                     _mm512_permutex2var_pd(prev[r], idx[r], cur[r]));
                }
                prev[r] = cur[r];
            }
        }
    }
    for (int r = 0; j < n2; j++, r++, m += s2, p += 8)
        for (int t = first ? 0 : -h[r]; t < 32 - h[r]; t++) memcpy(m + t * 8, p + t * inst, 8);
}
#define GCOMMI_HAVE_TILE8 1
#endif

#endif /* GCOMM_DATATYPE_PACK_HOST_LOOPS_H */
