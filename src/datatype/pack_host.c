/* CPU pack and unpack over a committed layout (layout.h).
 *
 * One traversal serves both directions (pack: typed memory -> packed stream; unpack: the reverse)
 * and any byte range of the packed stream: part_node() descends to the first byte of the range by
 * division and binary search (no walk from the start), copies whole children with the fast loops
 * of full_node()/full_vec(), and finishes with a partial child at the end. The fast loops are
 * specialised by shape: one memcpy for contiguous data, strided loops with fixed-size copies for
 * narrow vector blocks (byte compress and expand on CPUs with AVX-512 VBMI2 for elements of under
 * 64 bytes at most 64 apart, as in arrays of structs; a two-source permute for 4- and 8-byte
 * elements every other one, with AVX-512), one copy per block for wider vector blocks and
 * indexed blocks of contiguous elements (memcpy below 1 KiB, copy_vec or rep movsb from 1 KiB by
 * CPU, streaming stores in operations larger than the caches, vector blocks gathered eight at a
 * time), and a tiled loop for vectors of vectors whose outer stride is the small one (a
 * transpose), which would otherwise touch a new cache line and TLB page for every element. The
 * loops themselves are in pack_host_loops.h, and the choice among them for an operation (by CPU
 * and size) in pack_host_select.h. */
#include <stdint.h>
#include <string.h>

#include "datatype/pack_host.h"
#include "datatype/pack_host_loops.h"
#include "datatype/pack_host_select.h"

/* The copy for a block of n bytes. */
static inline copy_fn_t copy_for(const ctx_t *c, size_t n)
{
    if (c->streams && n >= stream_min_block(c)) return c->big;
    return n >= GCOMMI_MID_MIN ? c->mid : copy_plain;
}

/* Whether the split's mask (ctx_t.split_l2) is known for the blocks keyed (a, b, n, off), a
 * key that fixes every block's place in its page: the first blocks an operation meets are judged
 * (0: the caller computes c->split_mask), the same blocks met again, such as an inner vector at
 * the same place of its pages in every instance of its parent, reuse the mask (1), and other
 * blocks end the split for the rest of the operation (-1). Judged on every visit, a vector of 2
 * hvectors of 1 KiB rows a page apart, 448 KiB, packed 2.8x slower under GCOMM_PACK_CPU=intel on
 * machine D (29.2 against 10.5 us; about 85 ns a visit), and the crowding that matters is the
 * operation's, which an instance at another place in its pages does not tell. */
static int split_known(ctx_t *c, int64_t a, int64_t b, int64_t n, int64_t off)
{
    const int64_t key[4] = {a, b, n, off};
    if (c->split_key[3] < 0) {
        memcpy(c->split_key, key, sizeof key);
        return 0;
    }
    if (memcmp(c->split_key, key, sizeof key) == 0) return 1;
    c->split_l2 = 0;
    return -1;
}

static inline void copy_bytes(ctx_t *c, char *mem, size_t n)
{
    copy_fn_t f = copy_for(c, n);
    if (c->pack) f(c->packed, mem, n);
    else f(mem, c->packed, n);
    c->packed += n;
}

/* GCC: unroll the loop after it four times. clang unrolls these loops by itself (a count of
 * four forced on it unpacked bytes 6-18% slower). */
#if defined(__GNUC__) && !defined(__clang__)
#define GCOMMI_UNROLL4 _Pragma("GCC unroll 4")
#else
#define GCOMMI_UNROLL4
#endif

/* clang: leave the loop after it rolled (GCC leaves these loops as they are). clang 14 unrolls
 * - the transposing tile's loop of a run-time count (transpose_tiles) by four and spills its
 *   pointers, also where the fixed loops are not taken (unpacks that stream: 1.5x faster at
 *   16 MiB without the unrolling);
 * - a vector's loop of one memcpy call per block (full_vec) by two and keeps its pointers on the
 *   stack across the calls: subarray4d's 256-byte rows at 1 MiB 1.04-1.06x faster rolled
 *   (bench_pack_ab, machine D, 2026-11-29). */
#if defined(__clang__)
#define GCOMMI_NO_UNROLL _Pragma("clang loop unroll(disable)")
#else
#define GCOMMI_NO_UNROLL
#endif

/* count runs of SIZE bytes at mem, mem + stride, ...: fixed-size copies compile to plain moves.
 * Packs, unpacks of 1- and 2-byte runs, and unpacks below GCOMMI_UNROLL_UNPACK_MAX bytes
 * (c->unroll_unpack) have their loop unrolled four times by GCC (clang's build unrolls them by
 * itself, and packed vector_bl1 1.3x faster than GCC's). bench_pack_ab on machine D (Zen 4,
 * 2026-11-29), against the loop as it was, 256 KiB-4 MiB: doubles 16 bytes apart pack
 * 1.17-1.32x and unpack 1.24-1.29x below 2 MiB, 4- and 8-byte runs three apart pack 1.09-1.38x
 * at 1-4 MiB, bytes three apart pack 2.9-3.3x and unpack 1.5-1.6x (to 16 MiB); 16-byte runs
 * 1.00x. Unpacks of 4- and 8-byte runs lost 5-10% at 4 MiB unrolled (writing 4 of every 12
 * bytes) and 2-5% from 16 MiB: from 2 MiB they keep the plain loop. */
#define GCOMMI_STRIDED_COPY(SIZE)                                                              \
    static void strided_##SIZE(ctx_t *c, char *mem, int64_t stride, int64_t count)            \
    {                                                                                          \
        char *p = c->packed;                                                                   \
        if (c->pack) {                                                                         \
            GCOMMI_UNROLL4                                                                     \
            for (int64_t i = 0; i < count; i++) memcpy(p + i * SIZE, mem + i * stride, SIZE);  \
        } else if (SIZE <= 2 || c->unroll_unpack) {                                            \
            GCOMMI_UNROLL4                                                                     \
            for (int64_t i = 0; i < count; i++) memcpy(mem + i * stride, p + i * SIZE, SIZE);  \
        } else {                                                                               \
            for (int64_t i = 0; i < count; i++) memcpy(mem + i * stride, p + i * SIZE, SIZE);  \
        }                                                                                      \
        c->packed = p + count * SIZE;                                                          \
    }
GCOMMI_STRIDED_COPY(1)
GCOMMI_STRIDED_COPY(2)
GCOMMI_STRIDED_COPY(4)
GCOMMI_STRIDED_COPY(8)
GCOMMI_STRIDED_COPY(16)
GCOMMI_STRIDED_COPY(32)
#undef GCOMMI_STRIDED_COPY

#ifdef GCOMMI_HAVE_COMPRESS
/* Elements that pack_compress() and unpack_expand() take (c->compress, select_copies): those of
 * at least eight to a 64-byte chunk, and those whose size is not a power of two (no fixed-size
 * loop of their own, strided_SIZE), up to 64 bytes apart on Intel and 16 on AMD, where Zen 4
 * executes a 512-bit compress in two halves. bench_pack_ab against the loops before (2026-11-30,
 * 16 KiB-16 MiB, docs/BENCHMARKS.md), speed on Intel (machine B; before: copy_small per element)
 * and on Zen 4 (machine D; before: pack_small_over, unpack_small_exact): 3-byte elements 4 apart
 * 6-27x / 2.3-5.7x, 5 / 8 2.5-13x / 1.2-2.8x, 12 / 16 1.3-3.3x / 1.1-1.4x, 1 / 8 1.1-1.5x on
 * Zen 4, the struct {double, int, int, char} (17 / 24) 1.07-1.97x on Intel (on Zen 4 0.97x packing
 * in the cache, so left out there), 20 / 24 1.0-2.1x, 33 / 36 1.7-4.3x, 63 / 64 1.3-3.1x; left
 * out everywhere, measured slower with it: 4 / 16 0.7-0.75x, 2 / 16 0.7-0.85x, 16 / 24 0.6-0.85x,
 * 8 / 16 (vector_bl1) unpack 0.75-1.0x. On AMD, with the byte permute for packs (pack_compress),
 * elements of more than half their stride up to 24 bytes apart take them too in runs of
 * GCOMMI_COMPRESS_AMD_WIDE_COUNT elements and more (Zen 4, against the rule of 16 apart, 16
 * KiB-16 MiB: the struct 1.03-1.10x pack and 1.12-1.24x unpack, 20 / 24 0.97-1.22x, 18 / 20
 * 1.07-1.48x; without the floor on the count mostly 0.46-0.98x at 1-4 KiB, where the period's
 * masks cost; up to 36 apart, 12 / 24 unpacked 0.88-0.94x and 24 / 32 and 17 / 32 0.75-0.99x). */
#define GCOMMI_COMPRESS_AMD_WIDE_COUNT 512
static inline int compress_fits(const ctx_t *c, int64_t size, int64_t stride, int64_t count)
{
    if (!c->compress || size >= 64 || stride <= size || stride > 64) return 0;
    if (stride <= 8) return 1;
    if ((size & (size - 1)) == 0) return 0;
    if (c->compress == GCOMMI_COMPRESS_WIDE || stride <= 16) return 1;
    return stride <= 24 && 2 * size > stride && count >= GCOMMI_COMPRESS_AMD_WIDE_COUNT;
}

/* Moves past the first `done` of *count elements, which a loop has copied; 1 when none is left. */
static inline int skip_done(ctx_t *c, char **mem, int64_t *count, int64_t size, int64_t stride,
                            int64_t done)
{
    c->packed += done * size;
    *mem += done * stride;
    *count -= done;
    return *count == 0;
}
#endif

static void strided_any(ctx_t *c, char *mem, int64_t size, int64_t stride, int64_t count)
{
    if (stride == size) { /* abutting runs: one copy */
        copy_bytes(c, mem, (size_t)(size * count));
        return;
    }
#ifdef GCOMMI_HAVE_COMPRESS
    /* Each takes the elements it can from the first on; the rest go on to the loops below. */
    if (c->pairs && (size == 4 || size == 8) && stride == 2 * size) {
        const int64_t done = c->pack ? pack_pairs(c->packed, mem, size, count)
                                     : unpack_pairs(c->packed, mem, size, count);
        if (skip_done(c, &mem, &count, size, stride, done)) return;
    }
    if (compress_fits(c, size, stride, count)) {
        compress_plan_t pl;
        const int64_t n =
            compress_plan(size, stride, &pl) ? compress_periods(&pl, size, stride, count) : 0;
        if (n > 0) { /* the elements of n periods */
            if (c->pack) pack_compress(c->packed, mem, &pl, n, c->compress_exact);
            else unpack_expand(c->packed, mem, &pl, n);
            if (skip_done(c, &mem, &count, size, stride, n * pl.elems)) return;
        }
    }
#endif
    switch (size) {
    case 1: strided_1(c, mem, stride, count); return;
    case 2: strided_2(c, mem, stride, count); return;
    case 4: strided_4(c, mem, stride, count); return;
    case 8: strided_8(c, mem, stride, count); return;
    case 16: strided_16(c, mem, stride, count); return;
    case 32: strided_32(c, mem, stride, count); return;
    default:
#ifdef GCOMMI_HAVE_SMALL_OVER
        /* packs that stream keep copy_small for 33-64 bytes: 63-byte elements 72 apart packed
         * 4-10% slower with the wide moves at 64-256 MiB (33-48 bytes: 1.00-1.18x) */
        if (c->small_over && size <= (c->pack && c->streams ? 32 : 64) && stride >= size) {
            if (c->pack) pack_small_over(c->packed, mem, size, stride, count);
            else unpack_small_exact(c->packed, mem, size, stride, count, c->streams);
            c->packed += count * size;
            return;
        }
#endif
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
        if (c->split_l2 && size >= GCOMMI_SPLIT_BLOCK_MIN) {
            const int known = split_known(c, stride, size, count,
                                          (int64_t)((uintptr_t)mem & (GCOMMI_PAGE - 1)));
            if (known == 0)
                c->split_mask = crowded_strided(mem, size, stride, count, c->split_op, c->split_l2);
            if (known >= 0 && c->split_mask) {
                c->fence = 1;
                for (int64_t i = 0; i < count; i++)
                    copy_split(p + i * size, mem + i * stride, (size_t)size, c->split_mask);
                c->packed = p + count * size;
                return;
            }
        }
        if (c->gather_ilv && size >= GCOMMI_GATHER_LINES_MIN &&
            ((((uintptr_t)p) | (uint64_t)size) & 63) == 0) {
            gather_stream_ilv(p, mem, size, stride, count);
            c->packed = p + count * size;
            return;
        }
#endif
#ifdef GCOMMI_HAVE_ROWS_VEC
        if (f == copy_plain && size <= c->rows_vec_max && size >= 96 &&
            (size % 32 == 0 || (c->rows_odd && size > 128))) {
            if (size % 64 == 0 && size <= c->rows_zmm) rows_zmm(p, mem, size, stride, count);
            else rows_vec(p, mem, size, stride, count, c->pack,
                          c->pf_strided ? GCOMMI_ROWS_PF_AHEAD : 0);
            c->packed = p + count * size;
            return;
        }
#endif
#ifdef GCOMMI_HAVE_VEC_PF
        if (c->pf_strided && f == copy_vec) {
            const int64_t astride = abs64(stride);
            const int64_t span_max = astride == GCOMMI_PAGE ? GCOMMI_PF_WALK_SPAN_MAX_PAGE
                                                            : GCOMMI_PF_WALK_SPAN_MAX;
            if (size >= GCOMMI_PF_WALK_BLOCK_MIN && size <= GCOMMI_PF_WALK_BLOCK_MAX &&
                astride >= GCOMMI_PAGE && count > 0 && astride <= span_max / count) {
                const int nt = c->walk_nt_span > 0 && astride * count >= c->walk_nt_span &&
                               (((uintptr_t)mem | (uintptr_t)astride) & 63) == 0;
                strided_vec_walk(p, mem, size, stride, count, c->pack, nt);
                c->fence |= nt;
            } else
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
                GCOMMI_NO_UNROLL
                for (int64_t i = 0; i < count; i++)
                    memcpy(p + i * size, mem + i * stride, (size_t)size);
            else
                GCOMMI_NO_UNROLL
                for (int64_t i = 0; i < count; i++)
                    memcpy(mem + i * stride, p + i * size, (size_t)size);
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

/* A whole tile of T outer rows of SZ-byte elements that abut (outer stride SZ: the T elements of
 * a column are T * SZ contiguous bytes), ordinary stores, column by column: T and the offsets in
 * the typed buffer constants, so that each column is T loads and T stores without a loop.
 * bench_pack_ab on machine D (Zen 4, 2026-11-29), the benchmark's transpose (doubles, T = 8),
 * against the loop below for every tile: GCC 12's build 1.35-1.70x faster at 256 KiB-4 MiB and
 * 1.01-1.12x at 16-64 MiB; clang 14's 2.06-2.50x and 1.01-1.50x. With the tile height and the
 * outer stride as run-time values clang unrolls that loop by four and reloads its pointers from
 * the stack for every column, and packed the transpose at 2.7-2.9x MPI_Pack in the cache and
 * 0.94x at 16 MiB (GCC's build 4.3-4.7x and 2.4x); with these loops both builds pack it at
 * 5.8-7.4x in the cache and 2.3-3.1x at 16 MiB. pf > 0 (packs): each row's line pf rows ahead
 * is prefetched first, while pf rows remain (c->tile_pf, select_copies; the unpacks that
 * prefetch stream, and those take the loop of transpose_tiles). */
#define GCOMMI_TILE_FIXED(T, SZ)                                                                \
    static void tile_##T##_##SZ(char *m, char *p, int64_t s2, int64_t inst, int64_t n2,        \
                                int pack, int64_t pf)                                           \
    {                                                                                           \
        int64_t j = 0;                                                                          \
        if (pack) {                                                                             \
            for (; j + pf < n2 && pf; j++, m += s2, p += SZ) {                                  \
                __builtin_prefetch(m + pf * s2, 0, 3);                                          \
                for (int t = 0; t < T; t++) memcpy(p + t * inst, m + t * SZ, SZ);               \
            }                                                                                   \
            for (; j < n2; j++, m += s2, p += SZ)                                               \
                for (int t = 0; t < T; t++) memcpy(p + t * inst, m + t * SZ, SZ);               \
        } else {                                                                                \
            for (; j < n2; j++, m += s2, p += SZ)                                               \
                for (int t = 0; t < T; t++) memcpy(m + t * SZ, p + t * inst, SZ);               \
        }                                                                                       \
    }
#define GCOMMI_TILE_HEIGHTS(X, SZ) X(4, SZ) X(8, SZ) X(16, SZ) X(32, SZ)
GCOMMI_TILE_HEIGHTS(GCOMMI_TILE_FIXED, 8)
GCOMMI_TILE_HEIGHTS(GCOMMI_TILE_FIXED, 4)
#undef GCOMMI_TILE_FIXED

/* The fixed loop for T abutting rows of sz-byte elements, or NULL. */
typedef void (*tile_fn_t)(char *, char *, int64_t, int64_t, int64_t, int, int64_t);
static tile_fn_t tile_fixed(int64_t T, int64_t sz)
{
#define GCOMMI_TILE_CASE(T_, SZ)                                                                \
    if (T == T_ && sz == SZ) return tile_##T_##_##SZ;
    GCOMMI_TILE_HEIGHTS(GCOMMI_TILE_CASE, 8)
    GCOMMI_TILE_HEIGHTS(GCOMMI_TILE_CASE, 4)
#undef GCOMMI_TILE_CASE
    return NULL;
}

#ifdef GCOMMI_HAVE_TILE8
/* transpose_tiles for 8-byte elements that abut (outer stride 8) when c->tile8: tiles of 8 columns
 * transposed 8 x 8 in registers (pack_host_loops.h); the last count % 8 columns by tile8_rest.
 * Packs that stream write whole lines of the packed streams with streaming stores: tile8_pack_nt
 * for streams on 32 bytes, tile8_pack_nt_l2 for those a multiple of 4 KiB apart, tile8_pack_nt_any
 * for streams on 8 bytes but not 32 (streams a multiple of 4 KiB apart and not on 32 bytes return
 * 0 here and keep transpose_tiles' loop). Unpacks that stream (c->tile32_nt) write strips of 32
 * columns in whole matrix lines (tile32_unpack_nt), then each row's last columns, from where its
 * last strip stopped, element by element. The rest take tile8_pack or tile8_unpack, ordinary
 * stores. Returns 1 when done. */
static int transpose8(ctx_t *c, char *mem, int64_t count, int64_t n2, int64_t s2)
{
    char *packed = c->packed;
    const int64_t inst = n2 * 8; /* packed bytes of one column */
    const int nt = c->pack && c->streams;
    const int on32 = (((uintptr_t)packed | (uint64_t)inst) & 31) == 0;
    const int aliased = inst % 4096 == 0;
    if (nt && (aliased ? !on32 : (((uintptr_t)packed | (uint64_t)inst) & 7) != 0)) return 0;
    int64_t i = 0;
    if (c->tile32_nt && count >= 32 && ((uintptr_t)mem & 7) == 0 && s2 % 8 == 0) {
        for (; i + 32 <= count; i += 32)
            tile32_unpack_nt(mem + i * 8, packed + i * inst, s2, inst, n2, i == 0);
        _mm_sfence();
        /* each row's columns from the last strip's 32 - h_r on */
        for (int64_t j = 0; j < n2; j++) {
            const int64_t h = (int64_t)(((uintptr_t)(mem + j * s2) & 63) / 8);
            for (int64_t k = i - h; k < count; k++)
                memcpy(mem + j * s2 + k * 8, packed + k * inst + j * 8, 8);
        }
        c->packed = packed + count * inst;
        return 1;
    }
    for (; i + 8 <= count; i += 8) {
        char *m = mem + i * 8, *p = packed + i * inst;
        if (!c->pack) tile8_unpack(m, p, s2, inst, n2, c->tile_pf);
        else if (!nt) tile8_pack(m, p, s2, inst, n2, c->tile_pf);
        else if (aliased) tile8_pack_nt_l2(m, p, s2, inst, n2, GCOMMI_TILE_PF_AHEAD);
        else if (on32) tile8_pack_nt(m, p, s2, inst, n2, GCOMMI_TILE_PF_AHEAD);
        else tile8_pack_nt_any(m, p, s2, inst, n2, GCOMMI_TILE_PF_AHEAD);
    }
    if (nt) _mm_sfence();
    if (i < count)
        tile8_rest(mem + i * 8, packed + i * inst, s2, inst, n2, (int)(count - i), c->pack,
                   nt ? GCOMMI_TILE_PF_AHEAD : c->tile_pf);
    c->packed = packed + count * inst;
    return 1;
}
#endif

/* count instances of a VEC-of-RUN child (inner count n2, stride s2, element size sz) spaced by the
 * small outer stride s1: walk tiles of outer rows, each tile column by column (whole tiles of
 * abutting 4- and 8-byte elements by the fixed loops above). */
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
    /* c->tile_fixed_ok: select_copies (on AMD, unpacks that stream keep the loop below) */
    const tile_fn_t fixed = nt || s1 != sz || !c->tile_fixed_ok ? NULL : tile_fixed(T, sz);
#ifdef GCOMMI_HAVE_TILE8
    if (c->tile8 && sz == 8 && s1 == 8 && transpose8(c, mem, count, n2, s2)) return;
#endif
    for (int64_t i0 = 0; i0 < count; i0 += T) {
        int64_t tile = count - i0 < T ? count - i0 : T;
        if (fixed && tile == T) {
            fixed(mem + i0 * s1, packed + i0 * inst, s2, inst, n2, c->pack, c->tile_pf);
            continue;
        }
        for (int64_t j = 0; j < n2; j++) {
            char *m = mem + i0 * s1 + j * s2, *p = packed + i0 * inst + j * sz;
            if (c->tile_pf && j + c->tile_pf < n2) prefetch_line(m + c->tile_pf * s2, c->pack);
            if (nt) { /* an unpack (select_copies) */
                for (int64_t t = 0; t < tile; t++) store_nt(m + t * s1, p + t * inst, sz);
            } else if (sz == 8) {
                if (c->pack)
                    for (int64_t t = 0; t < tile; t++) memcpy(p + t * inst, m + t * s1, 8);
                else {
                    GCOMMI_NO_UNROLL
                    for (int64_t t = 0; t < tile; t++) memcpy(m + t * s1, p + t * inst, 8);
                }
            } else if (sz == 4) {
                if (c->pack)
                    for (int64_t t = 0; t < tile; t++) memcpy(p + t * inst, m + t * s1, 4);
                else {
                    GCOMMI_NO_UNROLL
                    for (int64_t t = 0; t < tile; t++) memcpy(m + t * s1, p + t * inst, 4);
                }
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

/* Whole blocks [b0, b1) of IDX node n whose origin is base (all of them for full_node, those
 * inside a range for part_node): blocks of contiguous elements by the CPU's indexed loop, others
 * child by child. A range of an indexed type takes the same loops as the whole operation: before,
 * each block of a range went through part_vec on its own (bench_pack_range, lower_tri at 1 MiB in
 * ranges of 64 KiB on machine D, 2026-11-30: 1.17-1.19x the whole operation's time, 250-290 ns
 * more per range). */
static void idx_blocks(ctx_t *c, const gcommi_dl_t *n, char *base, int64_t b0, int64_t b1)
{
    const gcommi_dl_t *ch = &c->nodes[n->child];
    const int64_t *displs = c->aux + n->aux + b0, *prefix = c->aux + n->aux + n->count + b0;
    const int64_t count = b1 - b0;
    if (ch->kind == GCOMMI_DL_RUN && ch->size == n->stride) { /* blocks are contiguous */
        char *p = c->packed, *m = base + ch->disp;
#ifdef GCOMMI_HAVE_VEC_PF
        if (c->pf_line) {
            /* the node's first blocks give the steps (wrapping, as commit took them) */
            const int64_t *d0 = c->aux + n->aux, *p0 = d0 + n->count;
            if (c->pack && (n->flags & GCOMMI_DL_AFFINE) && count > 0 &&
                (uint64_t)d0[1] - (uint64_t)d0[0] == GCOMMI_PAGE) {
                const int64_t dlen = (p0[2] - 2 * p0[1] + p0[0]) * ch->size;
                c->packed = indexed_affine_walk(p, m + displs[0], (prefix[1] - prefix[0]) * ch->size,
                                                dlen, count);
                return;
            }
            c->packed = c->pack ? indexed_vec_pf(p, m, displs, prefix, count, ch->size)
                                : indexed_vec_unpack_walk(p, m, displs, prefix, count, ch->size);
            return;
        }
#endif
#if defined(__x86_64__)
        /* Rows of GCOMMI_SPLIT_BLOCK_MIN / 2 bytes on average and more: counting their lines
         * (crowded_indexed) costs a small part of copying them. */
        if (c->split_l2 && (prefix[count] - prefix[0]) * ch->size >=
                               count * (GCOMMI_SPLIT_BLOCK_MIN / 2)) {
            /* a negative element size: no key of a vector's blocks (sizes above 0) matches */
            const int known = split_known(c, (int64_t)(intptr_t)displs, -ch->size, count,
                                          (int64_t)((uintptr_t)m & (GCOMMI_PAGE - 1)));
            if (known == 0)
                c->split_mask = crowded_indexed(m, displs, prefix, count, ch->size, c->split_op,
                                                c->split_l2);
            if (known >= 0 && c->split_mask) {
                c->fence = 1;
                for (int64_t b = 0; b < count; b++) {
                    const size_t len = (size_t)((prefix[b + 1] - prefix[b]) * ch->size);
                    copy_split(p, m + displs[b], len, c->split_mask);
                    p += len;
                }
                c->packed = p;
                return;
            }
        }
        if (c->adst_idx) {
            c->packed = indexed_adst(p, m, displs, prefix, count, ch->size, c->pack);
            return;
        }
        if (c->gather_ilv) {
            c->packed = gather_indexed(p, m, displs, prefix, count, ch->size,
                                       stream_min_block(c));
            return;
        }
#endif
        for (int64_t b = 0; b < count; b++) {
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
    for (int64_t b = 0; b < count; b++)
        full_vec(c, ch, base + displs[b], n->stride, prefix[b + 1] - prefix[b]);
}

/* One whole instance of node n with origin at `origin`. */
static void full_node(ctx_t *c, const gcommi_dl_t *n, char *origin)
{
    char *base = origin + n->disp;
    switch (n->kind) {
    case GCOMMI_DL_RUN: copy_bytes(c, base, (size_t)n->size); return;
    case GCOMMI_DL_VEC: full_vec(c, &c->nodes[n->child], base, n->stride, n->count); return;
    case GCOMMI_DL_IDX: idx_blocks(c, n, base, 0, n->count); return;
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
    const int64_t cs = ch->size;
    /* Whole operations start at 0 and most are one instance: no 64-bit division (a 1 KiB pack
     * spent 5% of its time in part_vec's on Zen 4, perf, 2026-11-30). */
    int64_t i = 0, off = 0;
    if (skip) {
        i = skip / cs;
        off = skip % cs;
    }
    if (off) {
        int64_t take = cs - off < len ? cs - off : len;
        part_node(c, ch, base + i * stride, off, take);
        len -= take;
        i++;
    }
    const int64_t full = len == cs ? 1 : len < cs ? 0 : len / cs;
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
            if (rel == 0 && block_bytes <= len) { /* blocks b .. e - 1 whole: full_node's loops */
                const int64_t item_end = prefix[b] + len / cs;
                int64_t e = gcommi_dl_find_block(prefix, n->count, item_end);
                if (prefix[e + 1] <= item_end) e++; /* e, the last block, whole too */
                idx_blocks(c, n, base, b, e);
                len -= (prefix[e] - prefix[b]) * cs;
                b = e;
                continue;
            }
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

/* Ranges of at least this many bytes take the loops of the operation they are part of
 * (gcommi_host_copy's op_bytes); shorter ones those of their own size, for which a fence per call
 * and partial lines make streaming stores cost more than they save. bench_pack_range on machine D
 * (2026-11-30, 16 MiB operations, one call per range, the time against one call for the whole):
 * with each range's own loops, ranges of 64 KiB 1.35-3.10x and of 1 MiB 1.3-3.6x for vector_bl16,
 * vector_bl256, lower_tri and subarray4d (no streaming stores, no blocks gathered eight at a time
 * past the caches); with the operation's, 1.00-1.20x and 0.97-1.02x; ranges of 4 KiB 1.4-2.8x
 * against 1.2-4.4x; ranges of 256 bytes 2.6-19x against 1.4-11x. */
#define GCOMMI_RANGE_AS_OP_MIN ((size_t)4 << 10)

void gcommi_host_copy(const gcommi_layout_t *L, char *typed, size_t offset, size_t bytes,
                      char *packed, int pack, size_t op_bytes)
{
    if (bytes == 0 || L->size == 0) return;
    char *flat = gcommi_host_contiguous(L, typed);
    if (flat) { /* contiguous: libc's memcpy */
        memcpy(pack ? packed : flat + offset, pack ? flat + offset : packed, bytes);
        return;
    }
    /* Not `ctx_t c = {...}`: zeroing the rest first, GCC emitted rep stos, whose start-up took 41%
     * of this function's samples in a 1 KiB pack on Zen 4 (perf, machine D, 2026-11-30);
     * select_copies sets every other field. */
    ctx_t c;
    c.nodes = L->nodes;
    c.aux = L->aux;
    c.packed = packed;
    c.pack = pack;
    const int part = op_bytes > bytes; /* a range of a larger operation */
    select_copies(&c, bytes >= GCOMMI_RANGE_AS_OP_MIN && part ? op_bytes : bytes, part);
    part_vec(&c, &L->nodes[0], typed, L->extent, (int64_t)offset, (int64_t)bytes);
    if (c.streams || c.fence) GCOMMI_STREAM_FENCE(); /* streaming stores are weakly ordered */
}
