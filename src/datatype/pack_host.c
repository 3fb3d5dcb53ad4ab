/* CPU pack and unpack over a committed layout (layout.h).
 *
 * One traversal serves both directions (pack: typed memory -> packed stream; unpack: the reverse)
 * and any byte range of the packed stream: part_node() descends to the first byte of the range by
 * division and binary search (no walk from the start), copies whole children with the fast loops
 * of full_node()/full_vec(), and finishes with a partial child at the end. The fast loops are
 * specialised by shape: one memcpy for contiguous data, strided loops with fixed-size copies for
 * narrow vector blocks, one copy per block for wider vector blocks and indexed blocks of
 * contiguous elements (memcpy below 1 KiB, copy_vec or rep movsb from 1 KiB by CPU, streaming
 * stores in operations larger than the caches, vector blocks gathered eight at a time), and a
 * tiled loop for vectors of vectors whose outer stride is the small one (a transpose), which would
 * otherwise touch a new cache line and TLB page for every element. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "datatype/pack_host.h"

/* Operations of at least stream_min() bytes write large blocks with streaming stores (x86 with
 * AVX2): past the last-level cache the output will not be read from cache anyway. */
#define GCOMMI_STREAM_MIN_FLOOR ((size_t)8 << 20)

typedef void (*copy_fn_t)(char *dst, const char *src, size_t n);

typedef struct {
    const gcommi_dl_t *nodes;
    const int64_t *aux;
    char *packed; /* next byte of the packed stream */
    int pack;     /* 1: typed -> packed, 0: packed -> typed */
    copy_fn_t mid; /* copy of blocks of GCOMMI_MID_MIN bytes or more that do not stream */
    copy_fn_t big; /* streaming copy of blocks of at least stream_min_block() bytes */
    int streams;   /* big uses streaming stores: fence before returning */
    int tile;      /* rows of a transposing tile (transpose_tiles) */
    int tile_nt;   /* transpose_tiles unpacking 4- and 8-byte elements: streaming stores */
    int tile_aliased; /* tile rows when the packed streams are 4 KiB multiples apart; 0: tile */
    int64_t rows_vec_max; /* strided rows of 96 bytes to this, multiples of 32: rows_vec(); 0: never */
    int rows_zmm;         /* a pack: 128-byte rows go to rows_zmm128() instead of rows_vec() */
    int gather_ilv;       /* a streaming pack: blocks GCOMMI_GATHER_WAYS at a time (whole
                             lines from GCOMMI_GATHER_LINES_MIN bytes: gather_stream_ilv; others
                             from stream_min_block(): gather_group) */
    int pf_line;          /* blocks by copy_vec: prefetch the block GCOMMI_PF_LINE_AHEAD ahead,
                             its first line or, for the vectors strided_vec_walk takes, all of it
                             from its end down; rows by rows_vec: the first line of the row
                             GCOMMI_ROWS_PF_AHEAD ahead */
} ctx_t;

/* Tile height of the transposing loop (c->tile): outer rows handled together, so that each cache
 * line read from memory serves that many packed streams. Measured on the EPYC of machine A
 * (transpose of 4096^2 doubles): 4 -> 4.4 GB/s, 8 -> 5.2, 16 -> 3.1, 32 -> 1.3: more streams
 * than 8, all a row of the matrix apart, start evicting each other from the L1 sets. On the Xeon
 * of machine C, bench_pack_cpu transpose (x MPI_Pack, two runs each) with 8 / 16: unpack 4 MiB
 * 1.73-1.77 / 2.09-2.10, 16 MiB 2.64-3.83 / 3.69-4.56, pack 4 MiB 3.24-3.26 / 3.43-3.53, pack
 * 64 MiB 4.12-4.20 / 3.35-3.36: 16 there, 8 on AMD. */
#define GCOMMI_TILE_AMD 8
#define GCOMMI_TILE_OTHER 16
#define GCOMMI_TILE_WIDE_MIN ((size_t)32 << 20) /* Zen 4: select_copies */
#define GCOMMI_TILE_WIDE_PACK 32 /* Zen 4, packing GCOMMI_TILE_WIDE_MIN to _PACK_MAX bytes */
#define GCOMMI_TILE_WIDE_PACK_MAX ((size_t)128 << 20)
/* Zen 4, operations in the cache: a vector's blocks of _BLOCK_MIN to _BLOCK_MAX bytes, a page or
 * more apart, spanning at most _SPAN_MAX bytes, prefetch the block ahead whole from its end down
 * (strided_vec_walk). */
#define GCOMMI_PF_WALK_SPAN_MAX ((int64_t)8 << 20)
#define GCOMMI_PF_WALK_BLOCK_MIN 1536
#define GCOMMI_PF_WALK_BLOCK_MAX 3072
#define GCOMMI_PAGE 4096 /* where the hardware prefetchers stop */

static void copy_plain(char *dst, const char *src, size_t n) { memcpy(dst, src, n); }

static int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

/* Copies 1 <= n <= 64 bytes as two overlapping fixed-size moves (both inside [0, n)) instead of
 * a memcpy call per odd-sized element, e.g. a 17-byte struct. */
#define GCOMMI_COPY_PAIR(W)                                                                    \
    do {                                                                                       \
        char a_[W], b_[W];                                                                     \
        memcpy(a_, src, W);                                                                    \
        memcpy(b_, src + n - (W), W);                                                          \
        memcpy(dst, a_, W);                                                                    \
        memcpy(dst + n - (W), b_, W);                                                          \
    } while (0)
static inline void copy_small(char *dst, const char *src, size_t n)
{
    if (n >= 32) GCOMMI_COPY_PAIR(32);
    else if (n >= 16) GCOMMI_COPY_PAIR(16);
    else if (n >= 8) GCOMMI_COPY_PAIR(8);
    else if (n >= 4) GCOMMI_COPY_PAIR(4);
    else if (n >= 2) GCOMMI_COPY_PAIR(2);
    else *dst = *src;
}
#undef GCOMMI_COPY_PAIR

#if defined(__x86_64__)
#include <cpuid.h>
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

/* A line of a block ahead: to be read when packing, written when unpacking. */
static inline void prefetch_line(const char *a, int pack)
{
    if (pack) __builtin_prefetch(a, 0, 3);
    else __builtin_prefetch(a, 1, 3);
}

/* A pack of 128-byte rows past the cache on Zen 5 (c->rows_zmm): two 64-byte moves per row, as
 * glibc's memcpy makes them there, instead of four 32-byte ones. bench_pack_cpu, the Zen 5 VM,
 * this loop against rows_vec in the same binary, alternating, two rounds (2026-11-27): vector_bl16
 * pack 0.97-1.04x -> 1.13-1.27x MPI_Pack at 16 MiB and 0.94-1.05x -> 1.07-1.13x at 64 MiB, but
 * 1.03-1.06x -> 0.97-1.02x at 4 MiB, in the cache (hence only from stream_min(1)); the same moves
 * for every row of 128-512 bytes, unpack too, packed subarray4d's 256- and 512-byte rows at
 * 0.73-0.84x at 16-64 MiB. */
__attribute__((target("avx512f"))) static void rows_zmm128(char *p, const char *mem, int64_t stride,
                                                          int64_t count)
{
    for (int64_t r = 0; r < count; r++, p += 128, mem += stride) {
        const __m512i a = _mm512_loadu_si512((const void *)mem);
        const __m512i b = _mm512_loadu_si512((const void *)(mem + 64));
        _mm512_storeu_si512((void *)p, a);
        _mm512_storeu_si512((void *)(p + 64), b);
    }
}

/* count rows of `size` bytes (a multiple of 32, 96 to 992) at mem, mem + stride, ... to or from
 * the packed stream p, in one call: 32-byte moves, no libc call and size dispatch per row. On the
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
 * ahead > 0 (c->pf_line: Zen 4, operations in the cache): the first line of the row `ahead` rows
 * on is prefetched (GCOMMI_ROWS_PF_AHEAD). bench_pack_cpu on machine D (2026-11-29, this against
 * no prefetch in one build, three alternating rounds), vector_bl16 (128-byte rows 256 bytes
 * apart), x MPI_Pack / % of memcpy: 1 MiB pack 0.96-1.04x / 83-85% -> 1.13-1.16x / 97-98%, unpack
 * 0.98-1.01x / 79-80% -> 1.16-1.25x / 96-98%; 4 MiB pack 1.03-1.05x / 68-72% -> 1.09-1.14x /
 * 75-78%, unpack 1.03-1.09x / 65-69% -> 1.17-1.25x / 77-78%; 64 KiB unchanged. Distances of 8
 * to 32 rows measured alike from 1 MiB, 2 and 4 lower in some rounds; 8 was the best at 256 KiB
 * (unpack 89-90% -> 97%). The same for subarray4d's 256-byte rows (rows_vec_max raised on Zen 4
 * in the cache) gained at 4 MiB (1.03-1.04x -> 1.14-1.15x pack) but not at 64 KiB-1 MiB
 * (0.83-1.12x against 0.88-1.15x), and the prefetch in their memcpy per row lost 0.03-0.06x at
 * 1 MiB (docs/BENCHMARKS.md, session 32): below GCOMMI_ROWS_WIDE_MIN those rows keep one memcpy
 * each, without it; from there they come here (select_copies). */
__attribute__((target("avx2"))) static void rows_vec(char *p, char *mem, int64_t size,
                                                     int64_t stride, int64_t count, int pack,
                                                     int64_t ahead)
{
    for (int64_t r = 0; r < count; r++, p += size, mem += stride) {
        char *d = pack ? p : mem;
        const char *s = pack ? mem : p;
        int64_t i = 0;
        if (ahead && r + ahead < count) prefetch_line(mem + ahead * stride, pack);
        for (; i + 128 <= size; i += 128) move128_avx2(d + i, s + i);
        for (; i < size; i += 32) move32_avx2(d + i, s + i);
    }
}
#define GCOMMI_HAVE_ROWS_VEC 1
#define GCOMMI_ROWS_PF_AHEAD 8
#define GCOMMI_ROWS_VEC_MAX_AMD 128
#define GCOMMI_ROWS_VEC_MAX_OTHER 992 /* below GCOMMI_MID_MIN */
/* Zen 4: operations from this size take rows up to GCOMMI_ROWS_VEC_MAX_OTHER (select_copies):
 * twice its 1 MiB L2, where the rows a pack reads no longer stay in it between calls. */
#define GCOMMI_ROWS_WIDE_MIN ((size_t)2 << 20)

/* Blocks that do not stream, when unpacking: rep movsb. Scattering into blocks,
 * bench_pack_cpu_ceiling measured rep movsb per block at 94-110% of one memcpy (vector_bl256 and
 * lower_tri, 1-4 MiB) and copy_vec 3-12 points lower: with copy_vec, gcomm_unpack of lower_tri at
 * 4 MiB fell to 0.92x MPI_Unpack, whose libc memcpy turns to rep movsb for rows above 2 KiB. */
static void copy_movsb(char *dst, const char *src, size_t n)
{
    __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
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

/* Unpacking on the Xeon while the typed side may stay in the cache (below stream_min(1)): rows
 * of 4 KiB and more by rep movsb, whose fast-string stores write whole lines without reading
 * them (lower_tri, 16 MiB: 97% of memcpy against 93% streamed, 1.00x MPI_Unpack against 0.96x),
 * shorter blocks by 64-byte streaming stores (vector_bl256's 2 KiB blocks: 95% against 74%).
 * Larger unpacks stream every block (lower_tri at 64 MiB: 1.4-1.7x MPI_Unpack against 1.0x). */
static void copy_stream_unpack_long_movsb(char *dst, const char *src, size_t n)
{
    if (n >= 4096) copy_movsb(dst, src, n);
    else copy_stream512(dst, src, n);
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

/* The size of the level-3 cache that CPU 0 uses, in bytes, as the kernel reports it (sysfs); else
 * glibc's sysconf; 0 when neither knows. sysfs first: on a Zen 5 VM (2026-11-26) sysfs and lscpu
 * read the 32 MiB L3 of the core's CCX while sysconf read 384 MiB (every CCX of the package), and
 * the threshold below taken from 384 MiB (24 MiB) left a 16 MiB pack unstreamed at 63% of memcpy
 * where streaming stores reach 110% (bench_pack_cpu_ceiling). */
static long l3_bytes(void)
{
    for (int i = 0; i < 8; i++) {
        char path[96], buf[32];
        int level = 0;
        long kib = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f) break;
        if (fscanf(f, "%d", &level) != 1) level = 0;
        fclose(f);
        if (level != 3) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        f = fopen(path, "r");
        if (!f) break;
        if (fgets(buf, sizeof buf, f) && sscanf(buf, "%ldK", &kib) == 1 && kib > 0) {
            fclose(f);
            return kib * 1024;
        }
        fclose(f);
        break;
    }
    long llc = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
    llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    return llc > 0 ? llc : 0;
}

/* The smallest operation that streams: GCOMM_PACK_STREAM_MIN when set; else 8 MiB for an unpack
 * and max(8 MiB, level-3 cache / 16) for a pack. bench_pack_cpu_ceiling measured where
 * streaming starts to pay: from 16 MiB on an EPYC with a 32 MiB L3 (8 MiB, the floor, is the rule
 * there); on a Xeon VM whose L3 reads 480 MiB, streaming cost a pack of vector_bl256 6 points of
 * memcpy at 16 MiB, where the packed stream stays in that cache, and gained 20-35 at 64 MiB,
 * where even memcpy runs at DRAM speed (30 MiB, the rule there). An unpack scatters into a span
 * larger than the packed bytes, whose partly written lines streaming saves reading: at 16 MiB on
 * that Xeon it streamed to 91-93% of memcpy, and reached 80-87% without. */
static size_t stream_min(int pack)
{
    static size_t cached[2]; /* unpack, pack; 0 until first asked */
    size_t v = __atomic_load_n(&cached[pack != 0], __ATOMIC_RELAXED);
    if (v) return v;
    v = gcommi_config()->pack_stream_min;
    if (v == 0 && !pack) v = GCOMMI_STREAM_MIN_FLOOR;
    if (v == 0) {
        const long llc = l3_bytes();
        v = llc > 0 && (size_t)llc / 16 > GCOMMI_STREAM_MIN_FLOOR ? (size_t)llc / 16
                                                                 : GCOMMI_STREAM_MIN_FLOOR;
    }
    __atomic_store_n(&cached[pack != 0], v, __ATOMIC_RELAXED);
    return v;
}

/* The CPU family as cpuid leaf 1 reports it (base family plus extended family): 0x19 for Zen 3
 * and Zen 4, 0x1a for Zen 5. */
static unsigned cpu_family(void)
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    unsigned base = (eax >> 8) & 0xf;
    return base == 0xf ? base + ((eax >> 20) & 0xff) : base;
}

/* Sets the copies of an operation of `bytes` bytes in c. Blocks that do not stream: copy_vec when
 * packing on AMD and when unpacking on Zen 4, copy_unpack_lines when unpacking on other AMD with
 * AVX-512 (Zen 5), rep movsb otherwise. On the EPYC copy_vec packed 5-10 points of memcpy above
 * rep movsb (copy_vec's comment); on the Xeon VM rep movsb, which its glibc also takes from 2112
 * bytes, packed lower_tri 5-7 points above copy_vec at 1-16 MiB (94 against 87 at 4 MiB) and
 * copy_vec left gcomm_pack at 0.89-0.94x MPI_Pack there. On the Zen 4 VM (machine D, 2026-11-28,
 * bench_pack_cpu, two alternating rounds) rep movsb is slow for blocks that do not start a line:
 * unpacking lower_tri at 1-4 MiB with copy_unpack_lines reached 76-79% of memcpy (1.01-1.05x
 * MPI_Unpack), with copy_vec 84-86% (1.08-1.18x); vector_bl256 (line-aligned blocks) the same
 * within noise. */
static void select_copies(ctx_t *c, size_t bytes)
{
    static int avx2 = -1, avx512 = -1, amd = -1, zen4 = -1;
    if (avx2 < 0) avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
    if (avx512 < 0) avx512 = __builtin_cpu_supports("avx512f") ? 1 : 0;
    if (amd < 0) amd = __builtin_cpu_is("amd") ? 1 : 0;
    if (zen4 < 0) zen4 = amd && avx512 && cpu_family() == 0x19; /* Zen 3 has no AVX-512 */
    c->mid = !avx2                    ? copy_plain
             : (c->pack && amd) || zen4 ? copy_vec
             : avx512 && amd            ? copy_unpack_lines
                                        : copy_movsb;
    c->streams = avx2 && bytes >= stream_min(c->pack);
    c->big = !c->streams ? c->mid
           : avx512 && c->pack ? (amd ? copy_stream_pack : copy_stream512)
           : avx512 && !amd ? (bytes < stream_min(1) ? copy_stream_unpack_long_movsb
                                                     : copy_stream512) /* unpack, Xeon */
           : copy_stream;
    c->tile = amd ? GCOMMI_TILE_AMD : GCOMMI_TILE_OTHER;
    c->rows_vec_max = !avx2 ? 0 : amd ? GCOMMI_ROWS_VEC_MAX_AMD : GCOMMI_ROWS_VEC_MAX_OTHER;
    c->rows_zmm = avx512 && amd && c->pack && bytes >= stream_min(1);
    /* Zen 4 executes a 64-byte move as two 32-byte halves and walks pages differently from Zen 5.
     * bench_pack_cpu on the Zen 4 VM (machine D, 2026-11-28, alternating rounds, x MPI_Pack):
     * - packs from stream_min(1): 128-byte rows by rows_vec instead of rows_zmm128 (vector_bl16
     *   0.91-0.98x -> 1.00-1.07x at 16-256 MiB) and rows of up to 992 bytes by rows_vec instead of
     *   one memcpy each (subarray4d's 256- and 512-byte rows 0.88-0.95x -> 1.01-1.11x at 16-64
     *   MiB); so do packs and unpacks from GCOMMI_ROWS_WIDE_MIN, where rows_vec also prefetches
     *   the row ahead (c->pf_line): subarray4d (256-byte rows), three alternating rounds on
     *   2026-11-29, pack / unpack at 4 MiB 1.00-1.02 / 0.98x -> 1.13-1.16 / 1.18-1.22x, at 2 MiB
     *   1.01-1.04 / 0.97-0.99x -> 1.05-1.08 / 1.02-1.09x; at 1 MiB it lost (unpack 0.99-1.01x ->
     *   0.93-1.00x), and smaller operations keep the AMD rows (one memcpy each);
     * - transposing tiles of 16 rows from GCOMMI_TILE_WIDE_MIN bytes: at 64 / 256 MiB pack 2.68 /
     *   2.76x and unpack 2.68 / 3.03x MPI_Pack against 1.61 / 1.79x and 2.38 / 2.56x with 8, but
     *   at 16 MiB 1.65 / 2.15x against 2.34 / 2.84x (a column walk of a 16 MiB matrix touches
     *   1449 pages, of a 64 MiB one 2897, near the 3072 entries of Zen 4's L2 TLB: beyond, a wider
     *   tile uses each page walk for two lines); from the same size to GCOMMI_TILE_WIDE_PACK_MAX a
     *   pack takes tiles of 32 rows (each row of the matrix visited for 256 bytes; at 256 MiB they
     *   lost, and in one whole run fell to 1.32x) and an unpack keeps 16 and writes the
     *   matrix with streaming stores (tile_nt: its lines need not be read first). Alternating
     *   rounds against the tiles of 16 without streaming stores, pack / unpack: 40 MiB 1.52-1.72 /
     *   1.64-1.91x -> 1.97-2.25 / 2.71-2.74x, 64 MiB 1.99-2.22 / 1.95-2.33x -> 2.45-2.82 /
     *   3.38-4.29x, 128 MiB (N = 4096) 1.26-1.36 / 2.14x -> 1.46-1.97 / 3.87-4.58x, 256 MiB
     *   1.90-2.92 / 2.29-2.66x -> 1.38-3.05 / 2.99-4.83x (the pack worse there); tiles of 64 for
     *   the pack 1.48-2.71x, of 32 for the unpack 2.08-2.87x; streaming stores at 16 MiB, in the
     *   L3, 1.55-2.63x against 2.38-2.44x. When the packed streams are a multiple of 4 KiB apart
     *   (tile_aliased), a pack takes tiles of 4 rows: 128 MiB (N = 4096) 1.59-1.85x with 32,
     *   1.66-1.73x with 8, 2.17-2.22x with 4; 32 MiB (N = 2048) 1.80-1.88 / 1.22-1.67 /
     *   1.81-2.09x;
     * - blocks of 1 KiB and more in operations that do not stream (copy_vec) with the first line of
     *   the block GCOMMI_PF_LINE_AHEAD ahead prefetched (strided_vec_pf; indexed_vec_pf, which
     *   also copies the shorter blocks of indexed nodes), two sets of three alternating rounds:
     *   vector_bl256 at 4 MiB pack 0.88-0.95x -> 1.01-1.04x and unpack 0.97-0.99x -> 1.04-1.10x,
     *   lower_tri at 4 MiB pack 1.09-1.14x -> 1.17-1.21x (75-82% -> 81-85% of memcpy) and unpack
     *   1.06-1.10x -> 1.13-1.16x; 1 MiB unchanged. A vector's blocks of 1.5-3 KiB a page or more
     *   apart, over at most GCOMMI_PF_WALK_SPAN_MAX bytes, prefetch the block ahead whole, from
     *   its end down (strided_vec_walk: vector_bl256 at 1 MiB 86-91% -> 92-95% of memcpy), and
     *   rows of up to 128 bytes (rows_vec) prefetch the row GCOMMI_ROWS_PF_AHEAD ahead (vector_bl16
     *   at 1-4 MiB 0.96-1.09x -> 1.09-1.25x MPI_Pack). */
    c->pf_line = 0;
    c->tile_nt = 0;
    c->tile_aliased = 0;
    c->gather_ilv = c->streams && c->pack;
    if (zen4) {
        c->pf_line = !c->streams;
        if (c->pack && bytes >= stream_min(1)) c->rows_zmm = 0;
        if (bytes >= GCOMMI_ROWS_WIDE_MIN || (c->pack && bytes >= stream_min(1)))
            c->rows_vec_max = GCOMMI_ROWS_VEC_MAX_OTHER;
        if (bytes >= GCOMMI_TILE_WIDE_MIN) {
            c->tile = c->pack && bytes <= GCOMMI_TILE_WIDE_PACK_MAX ? GCOMMI_TILE_WIDE_PACK
                                                                    : GCOMMI_TILE_OTHER;
            c->tile_nt = !c->pack && c->streams;
            c->tile_aliased = c->pack ? 4 : 0;
        }
    }
}
#define GCOMMI_STREAM_FENCE() _mm_sfence()
#else
static void select_copies(ctx_t *c, size_t bytes)
{
    (void)bytes;
    c->mid = c->big = copy_plain;
    c->streams = 0;
    c->tile = GCOMMI_TILE_AMD;
    c->tile_nt = 0;
    c->tile_aliased = 0;
    c->rows_vec_max = 0;
    c->rows_zmm = 0;
    c->pf_line = 0;
    c->gather_ilv = 0;
}
#define GCOMMI_STREAM_FENCE() ((void)0)
#endif

/* Smallest block that takes the streaming path. Packing writes one contiguous stream, where
 * streaming blocks shorter than 1 KB measured slower (vector of 128-byte blocks, 64 MB: 0.83x
 * MPI_Pack against 0.98x plain; again on the Zen 5 VM, 2026-11-26, with whole aligned lines
 * streamed by a rows loop: 0.71-0.74x against 0.92-0.96x at 64-256 MiB); unpacking scatters into
 * blocks whose lines are written whole, where streaming pays from 128 bytes (1.6x MPI_Unpack
 * against 1.0x). Packs of whole-line blocks gathered eight at a time stream from 128 bytes
 * (GCOMMI_GATHER_LINES_MIN). */
static inline size_t stream_min_block(const ctx_t *c) { return c->pack ? 1024 : 128; }

/* Blocks from this size on that do not stream use c->mid. Shorter ones keep libc's memcpy: with
 * copy_vec from 65 bytes on, vector_bl16 (128-byte blocks) and subarray4d (512-byte rows) fell to
 * 0.6-0.9x MPI_Pack at 1-16 MiB, against 1.0x with memcpy. */
#define GCOMMI_MID_MIN 1024

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
__attribute__((target("avx2"))) static void gather_stream_ilv(char *p, const char *mem, int64_t size,
                                                             int64_t stride, int64_t count)
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

/* Blocks of copy_vec in operations in the cache on Zen 4 (c->pf_line): the first line of the
 * block GCOMMI_PF_LINE_AHEAD ahead is prefetched, and copy_vec's loop is inlined. A block that
 * starts a new 4 KiB page costs more than its bytes: a scratch program on the Zen 4 VM copying
 * 4 MiB in blocks of 2 KiB every 4 KiB (vector_bl256), 1 KiB every 2 KiB, 2 KiB every 6 KiB or
 * 8 KiB (two pages touched per 4 KiB copied) reached 63-78% of one memcpy, in blocks of 4 KiB
 * every 8 KiB or without gaps (one page per 4 KiB) 90-103%; with 2 MiB pages the first kind rose
 * to 79-84%, so translating the pages is part of that cost. One prefetch per block starts the
 * next blocks' page walks and first misses early: 72% -> 84-86% in that program; in gcomm the
 * figures of select_copies. Distances 1 to 32 blocks measured alike. The whole block two ahead,
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

/* The blocks of a vector, the first line of the block GCOMMI_PF_LINE_AHEAD ahead prefetched. */
__attribute__((target("avx2"))) static void strided_vec_pf(char *p, char *mem, int64_t size,
                                                          int64_t stride, int64_t count, int pack)
{
    for (int64_t b = 0; b < count; b++, p += size, mem += stride) {
        if (b + GCOMMI_PF_LINE_AHEAD < count)
            prefetch_line(mem + GCOMMI_PF_LINE_AHEAD * stride, pack);
        if (pack) vec_bytes(p, mem, (size_t)size);
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
 * every 4 KiB at 4 MiB (8 MiB) gained 3-7 points, 7-11 on 2 MiB pages. For lower_tri's rows
 * (indexed_vec_pf) the same lost 2-8 points at 512 KiB-4 MiB pack (also walking only rows of up
 * to 1, 2 or 4 KiB, or only in operations of up to 1.5 MiB), so indexed nodes keep the first
 * line. The copy is vec_bytes' loop written again with the prefetches, not vec_bytes with an
 * empty range: strided_vec_pf keeps its own loop untouched. */
__attribute__((target("avx2"))) static void strided_vec_walk(char *p, char *mem, int64_t size,
                                                            int64_t stride, int64_t count, int pack)
{
    for (int64_t b = 0; b < count; b++, p += size, mem += stride) {
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
 * bench_pack_cpu_ceiling on the Zen 4 VM, three runs of each, gcomm against blk_avx2_pfl (the
 * same loop written for the shape) in the same runs, lower_tri (rows of 8 bytes to 8 KiB), points
 * of memcpy under that loop: 1 MiB pack 0.6-2.5 -> 0.4-0.8, unpack 1.3-4.9 -> 0.3-1.1, 4 MiB pack
 * 1.3-3.5 -> 0.3-2.1, unpack 1.5-2.3 -> 0.4-1.6. Returns the packed stream's next byte. */
__attribute__((target("avx2"))) static char *indexed_vec_pf(char *p, char *m, const int64_t *displs,
                                                          const int64_t *prefix, int64_t count,
                                                          int64_t elem, int pack)
{
    for (int64_t b = 0; b < count; b++) {
        size_t len = (size_t)((prefix[b + 1] - prefix[b]) * elem);
        char *t = m + displs[b];
        if (b + GCOMMI_PF_LINE_AHEAD < count)
            prefetch_line(m + displs[b + GCOMMI_PF_LINE_AHEAD], pack);
        if (pack) vec_bytes(p, t, len);
        else vec_bytes(t, p, len);
        p += len;
    }
    return p;
}
#define GCOMMI_HAVE_VEC_PF 1
#endif

/* The copy for a block of n bytes. */
static inline copy_fn_t copy_for(const ctx_t *c, size_t n)
{
    if (c->streams && n >= stream_min_block(c)) return c->big;
    return n >= GCOMMI_MID_MIN ? c->mid : copy_plain;
}

static inline void copy_bytes(ctx_t *c, char *mem, size_t n)
{
    copy_fn_t f = copy_for(c, n);
    if (c->pack) f(c->packed, mem, n);
    else f(mem, c->packed, n);
    c->packed += n;
}

/* count runs of SIZE bytes at mem, mem + stride, ...: fixed-size copies compile to plain moves. */
#define GCOMMI_STRIDED_COPY(SIZE)                                                              \
    static void strided_##SIZE(ctx_t *c, char *mem, int64_t stride, int64_t count)            \
    {                                                                                          \
        char *p = c->packed;                                                                   \
        if (c->pack)                                                                           \
            for (int64_t i = 0; i < count; i++) memcpy(p + i * SIZE, mem + i * stride, SIZE);  \
        else                                                                                   \
            for (int64_t i = 0; i < count; i++) memcpy(mem + i * stride, p + i * SIZE, SIZE);  \
        c->packed = p + count * SIZE;                                                          \
    }
GCOMMI_STRIDED_COPY(1)
GCOMMI_STRIDED_COPY(2)
GCOMMI_STRIDED_COPY(4)
GCOMMI_STRIDED_COPY(8)
GCOMMI_STRIDED_COPY(16)
GCOMMI_STRIDED_COPY(32)
#undef GCOMMI_STRIDED_COPY

static void strided_any(ctx_t *c, char *mem, int64_t size, int64_t stride, int64_t count)
{
    if (stride == size) { /* abutting runs: one copy */
        copy_bytes(c, mem, (size_t)(size * count));
        return;
    }
    switch (size) {
    case 1: strided_1(c, mem, stride, count); return;
    case 2: strided_2(c, mem, stride, count); return;
    case 4: strided_4(c, mem, stride, count); return;
    case 8: strided_8(c, mem, stride, count); return;
    case 16: strided_16(c, mem, stride, count); return;
    case 32: strided_32(c, mem, stride, count); return;
    default:
        if (size <= 64) {
            char *p = c->packed;
            if (c->pack)
                for (int64_t i = 0; i < count; i++)
                    copy_small(p + i * size, mem + i * stride, (size_t)size);
            else
                for (int64_t i = 0; i < count; i++)
                    copy_small(mem + i * stride, p + i * size, (size_t)size);
            c->packed = p + count * size;
            return;
        }
        /* Pointer and direction kept in locals: the per-block bookkeeping through ctx costs
         * 5-10% against MPI_Pack at DRAM sizes (vector of 128-byte blocks). */
        char *p = c->packed;
        copy_fn_t f = copy_for(c, (size_t)size);
#if defined(__x86_64__)
        if (c->gather_ilv && size >= GCOMMI_GATHER_LINES_MIN &&
            ((((uintptr_t)p) | (uint64_t)size) & 63) == 0) {
            gather_stream_ilv(p, mem, size, stride, count);
            c->packed = p + count * size;
            return;
        }
#endif
#ifdef GCOMMI_HAVE_ROWS_VEC
        if (f == copy_plain && size % 32 == 0 && size <= c->rows_vec_max) {
            if (c->rows_zmm && size == 128) rows_zmm128(p, mem, stride, count); /* a pack */
            else rows_vec(p, mem, size, stride, count, c->pack,
                          c->pf_line ? GCOMMI_ROWS_PF_AHEAD : 0);
            c->packed = p + count * size;
            return;
        }
#endif
#ifdef GCOMMI_HAVE_VEC_PF
        if (c->pf_line && f == copy_vec) {
            const int64_t astride = abs64(stride);
            if (size >= GCOMMI_PF_WALK_BLOCK_MIN && size <= GCOMMI_PF_WALK_BLOCK_MAX &&
                astride >= GCOMMI_PAGE && count > 0 && astride <= GCOMMI_PF_WALK_SPAN_MAX / count)
                strided_vec_walk(p, mem, size, stride, count, c->pack);
            else
                strided_vec_pf(p, mem, size, stride, count, c->pack);
            c->packed = p + count * size;
            return;
        }
#endif
#if defined(__x86_64__)
        if (c->gather_ilv && f == c->big) { /* blocks of 1 KiB and more, not whole lines */
            gather_strided(p, mem, size, stride, count);
            c->packed = p + count * size;
            return;
        }
#endif
        if (f == copy_plain) { /* a direct memcpy call, not one through a pointer as well */
            if (c->pack)
                for (int64_t i = 0; i < count; i++) memcpy(p + i * size, mem + i * stride, (size_t)size);
            else
                for (int64_t i = 0; i < count; i++) memcpy(mem + i * stride, p + i * size, (size_t)size);
        } else if (c->pack) {
            for (int64_t i = 0; i < count; i++) f(p + i * size, mem + i * stride, (size_t)size);
        } else {
            for (int64_t i = 0; i < count; i++) f(mem + i * stride, p + i * size, (size_t)size);
        }
        c->packed = p + count * size;
    }
}


/* One 8- or 4-byte element stored with a streaming store (movnti), for transpose_tiles (c->tile_nt,
 * x86 only: select_copies sets it on Zen 4). */
static inline void store_nt(char *dst, const char *src, int64_t sz)
{
#if defined(__x86_64__)
    if (sz == 8) {
        long long v;
        memcpy(&v, src, 8);
        _mm_stream_si64((long long *)(void *)dst, v);
    } else {
        int v;
        memcpy(&v, src, 4);
        _mm_stream_si32((int *)(void *)dst, v);
    }
#else
    memcpy(dst, src, (size_t)sz);
#endif
}

/* count instances of a VEC-of-RUN child (inner count n2, stride s2, element size sz) spaced by the
 * small outer stride s1: walk tiles of outer rows, each tile column by column. */
static void transpose_tiles(ctx_t *c, char *mem, int64_t s1, int64_t count, int64_t n2, int64_t s2,
                            int64_t sz)
{
    char *packed = c->packed;
    int64_t inst = n2 * sz; /* packed bytes of one outer instance */
    /* Packed streams a multiple of 4 KiB apart (a matrix whose side is a multiple of 512
     * doubles) all fall in the same sets of the L1: fewer of them (c->tile_aliased). */
    const int64_t T = c->tile_aliased && inst % 4096 == 0 ? c->tile_aliased : c->tile;
    /* streaming stores only for naturally aligned elements */
    const int nt = c->tile_nt && (sz == 8 || sz == 4) &&
                   (((uintptr_t)mem | (uint64_t)s1 | (uint64_t)s2) & (uint64_t)(sz - 1)) == 0;
    for (int64_t i0 = 0; i0 < count; i0 += T) {
        int64_t tile = count - i0 < T ? count - i0 : T;
        for (int64_t j = 0; j < n2; j++) {
            char *m = mem + i0 * s1 + j * s2, *p = packed + i0 * inst + j * sz;
            if (nt) { /* an unpack (select_copies) */
                for (int64_t t = 0; t < tile; t++) store_nt(m + t * s1, p + t * inst, sz);
            } else if (sz == 8) {
                if (c->pack)
                    for (int64_t t = 0; t < tile; t++) memcpy(p + t * inst, m + t * s1, 8);
                else
                    for (int64_t t = 0; t < tile; t++) memcpy(m + t * s1, p + t * inst, 8);
            } else if (sz == 4) {
                if (c->pack)
                    for (int64_t t = 0; t < tile; t++) memcpy(p + t * inst, m + t * s1, 4);
                else
                    for (int64_t t = 0; t < tile; t++) memcpy(m + t * s1, p + t * inst, 4);
            } else {
                for (int64_t t = 0; t < tile; t++) {
                    if (c->pack) memcpy(p + t * inst, m + t * s1, (size_t)sz);
                    else memcpy(m + t * s1, p + t * inst, (size_t)sz);
                }
            }
        }
    }
    c->packed = packed + count * inst;
}

static void full_node(ctx_t *c, const gcommi_dl_t *n, char *origin);

/* count whole instances of node ch whose origins are base, base + stride, ... */
static void full_vec(ctx_t *c, const gcommi_dl_t *ch, char *base, int64_t stride, int64_t count)
{
    if (ch->kind == GCOMMI_DL_RUN) {
        strided_any(c, base + ch->disp, ch->size, stride, count);
        return;
    }
    if (ch->kind == GCOMMI_DL_VEC) {
        const gcommi_dl_t *g = &c->nodes[ch->child];
        if (g->kind == GCOMMI_DL_RUN && g->size <= 16 && count >= 2 && ch->count >= 16 &&
            abs64(stride) <= 64 && abs64(ch->stride) > 256) {
            transpose_tiles(c, base + ch->disp + g->disp, stride, count, ch->count, ch->stride,
                            g->size);
            return;
        }
        for (int64_t i = 0; i < count; i++)
            full_vec(c, g, base + i * stride + ch->disp, ch->stride, ch->count);
        return;
    }
    for (int64_t i = 0; i < count; i++) full_node(c, ch, base + i * stride);
}

/* One whole instance of node n with origin at `origin`. */
static void full_node(ctx_t *c, const gcommi_dl_t *n, char *origin)
{
    char *base = origin + n->disp;
    switch (n->kind) {
    case GCOMMI_DL_RUN: copy_bytes(c, base, (size_t)n->size); return;
    case GCOMMI_DL_VEC: full_vec(c, &c->nodes[n->child], base, n->stride, n->count); return;
    case GCOMMI_DL_IDX: {
        const gcommi_dl_t *ch = &c->nodes[n->child];
        const int64_t *displs = c->aux + n->aux, *prefix = displs + n->count;
        if (ch->kind == GCOMMI_DL_RUN && ch->size == n->stride) { /* blocks are contiguous */
            char *p = c->packed, *m = base + ch->disp;
#ifdef GCOMMI_HAVE_VEC_PF
            if (c->pf_line) {
                c->packed = indexed_vec_pf(p, m, displs, prefix, n->count, ch->size, c->pack);
                return;
            }
#endif
#if defined(__x86_64__)
            if (c->gather_ilv) {
                c->packed = gather_indexed(p, m, displs, prefix, n->count, ch->size,
                                           stream_min_block(c));
                return;
            }
#endif
            for (int64_t b = 0; b < n->count; b++) {
                size_t len = (size_t)((prefix[b + 1] - prefix[b]) * ch->size);
                char *dst = c->pack ? p : m + displs[b];
                const char *src = c->pack ? m + displs[b] : p;
                copy_fn_t f = copy_for(c, len);
                if (f == copy_plain) memcpy(dst, src, len);
                else f(dst, src, len);
                p += len;
            }
            c->packed = p;
            return;
        }
        for (int64_t b = 0; b < n->count; b++)
            full_vec(c, ch, base + displs[b], n->stride, prefix[b + 1] - prefix[b]);
        return;
    }
    default: { /* GCOMMI_DL_SEQ */
        const int64_t *member = c->aux + n->aux + n->count + 1;
        for (int64_t m = 0; m < n->count; m++) full_node(c, &c->nodes[member[m]], base);
        return;
    }
    }
}

static void part_node(ctx_t *c, const gcommi_dl_t *n, char *origin, int64_t skip, int64_t len);

/* Packed bytes [skip, skip + len) of the children of ch whose origins are base, base + stride, ...
 * (used for VEC nodes, IDX blocks and the instances of the root). */
static void part_vec(ctx_t *c, const gcommi_dl_t *ch, char *base, int64_t stride, int64_t skip,
                     int64_t len)
{
    int64_t cs = ch->size;
    int64_t i = skip / cs, off = skip % cs;
    if (off) {
        int64_t take = cs - off < len ? cs - off : len;
        part_node(c, ch, base + i * stride, off, take);
        len -= take;
        i++;
    }
    int64_t full = len / cs;
    if (full) {
        full_vec(c, ch, base + i * stride, stride, full);
        i += full;
        len -= full * cs;
    }
    if (len) part_node(c, ch, base + i * stride, 0, len);
}

static void part_node(ctx_t *c, const gcommi_dl_t *n, char *origin, int64_t skip, int64_t len)
{
    if (skip == 0 && len == n->size) {
        full_node(c, n, origin);
        return;
    }
    char *base = origin + n->disp;
    switch (n->kind) {
    case GCOMMI_DL_RUN: copy_bytes(c, base + skip, (size_t)len); return;
    case GCOMMI_DL_VEC: part_vec(c, &c->nodes[n->child], base, n->stride, skip, len); return;
    case GCOMMI_DL_IDX: {
        const gcommi_dl_t *ch = &c->nodes[n->child];
        const int64_t *displs = c->aux + n->aux, *prefix = displs + n->count;
        int64_t cs = ch->size;
        int64_t item = skip / cs;
        int64_t b = gcommi_dl_find_block(prefix, n->count, item);
        /* Relative to block b, the range starts at item - prefix[b] children plus skip % cs. */
        int64_t rel = skip - prefix[b] * cs;
        while (len > 0) {
            int64_t block_bytes = (prefix[b + 1] - prefix[b]) * cs;
            int64_t take = block_bytes - rel < len ? block_bytes - rel : len;
            part_vec(c, ch, base + displs[b], n->stride, rel, take);
            len -= take;
            rel = 0;
            b++;
        }
        return;
    }
    default: { /* GCOMMI_DL_SEQ */
        const int64_t *prefix = c->aux + n->aux, *member = prefix + n->count + 1;
        int64_t m = gcommi_dl_find_block(prefix, n->count, skip);
        int64_t rel = skip - prefix[m];
        while (len > 0) {
            int64_t msize = prefix[m + 1] - prefix[m];
            int64_t take = msize - rel < len ? msize - rel : len;
            part_node(c, &c->nodes[member[m]], base, rel, take);
            len -= take;
            rel = 0;
            m++;
        }
        return;
    }
    }
}

void gcommi_host_copy(const gcommi_layout_t *L, char *typed, size_t offset, size_t bytes,
                      char *packed, int pack)
{
    if (bytes == 0 || L->size == 0) return;
    ctx_t c = {.nodes = L->nodes, .aux = L->aux, .packed = packed, .pack = pack};
    select_copies(&c, bytes);
    const gcommi_dl_t *root = &L->nodes[0];
    if (root->kind == GCOMMI_DL_RUN && root->size == L->extent) { /* contiguous: libc's memcpy */
        char *t = typed + root->disp + offset;
        memcpy(pack ? packed : t, pack ? t : packed, bytes);
        return;
    } else {
        part_vec(&c, root, typed, L->extent, (int64_t)offset, (int64_t)bytes);
    }
    if (c.streams) GCOMMI_STREAM_FENCE(); /* streaming stores are weakly ordered */
}
