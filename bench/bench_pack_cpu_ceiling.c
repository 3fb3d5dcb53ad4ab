/* bench_pack_cpu_ceiling: the CPU ceiling of the access patterns behind issue 2's memcpy targets.
 *
 * Issue 2 asks gcomm_pack/gcomm_unpack to reach 90% of one memcpy of the packed byte count for
 * `vector_bl256` and `lower_tri`. This benchmark answers whether any CPU loop can: it times
 * ideal hand-written loops for exactly these access patterns, with the geometry of
 * bench_pack_cpu.c, against that memcpy and against gcomm, interleaved in one bench_measure call
 * on the same buffers (bench_util.h: warm-up, medians, descheduled samples dropped).
 *
 *   vector_bl256  vector(count, 256, 512) of doubles: blocks of 2048 bytes, 4096 bytes apart,
 *                 count = bytes / 2048
 *   lower_tri     indexed: row i of an N x N matrix of doubles has i+1 elements at i*N, N the
 *                 smallest with 8 N (N+1) / 2 >= bytes
 *   vector_bl16   vector(count, 16, 32) of doubles: rows of 128 bytes, 256 bytes apart (no
 *                 memcpy target; its pack ties with MPI_Pack past the caches, and rd_only bounds
 *                 it there)
 *
 * All are "block i: len0 + i*inc bytes at i*stride", which the loops compute inline (no block
 * table, no datatype): they are what a pack engine could at best compile to. Loops (per block):
 *   blk_memcpy      libc memcpy per block (what gcomm and MPI do below their streaming sizes)
 *   blk_movsb       rep movsb per block
 *   blk_avx2        32-byte unaligned loads and stores
 *   blk_avx2_nt     32-byte loads, streaming (non-temporal) stores of whole 64-byte lines
 *   blk_avx512      64-byte unaligned loads and stores
 *   blk_avx512_nt   64-byte loads, streaming stores of whole 64-byte lines
 *   blk_avx2_pf     blk_avx2 plus software prefetch of the strided side, --pf-ahead bytes
 *                   ahead: the hardware prefetchers learn a stream anew at every block
 *   blk_avx2_nt_pf, blk_avx512_nt_pf   the streaming loops with that prefetch
 *   blk_avx2_pfn, blk_avx2_nt_pfn, blk_avx512_nt_pfn   pack only: before each block, prefetch
 *                   the first --pf-next bytes of the next block (what gcomm does from 8 MiB)
 *   blk_avx2_nt_desc   blk_avx2_nt with each block copied from its end down (a forward read's
 *                   prefetch runs on into the gap after a block, a descending one stops at the
 *                   block's start, here a page boundary: rd_only_desc below reads that way)
 *   blk_avx2_nt_descpf pack only: blk_avx2_nt_desc prefetching the last --pf-next bytes of the
 *                   next block before each block
 *   rd_only, rd_only_desc, wr_only   bounds: the read or the write half of the copy alone
 *   blk_avx2_pfl    blk_avx2 prefetching the first line of the block two ahead (what gcomm
 *                   does on Zen 4 in the cache)
 *   blk_avx2_walk   blk_avx2 prefetching the whole block two ahead from its end down while it
 *                   copies (what gcomm does on Zen 4 in the cache for vector blocks of 1.5-3 KiB)
 *   blk_aln, blk_aln_walk   every load and store a whole aligned 64-byte line (valignq joins
 *                   the two source lines a packed line straddles), without or with the walk:
 *                   what loads and stores that split lines cost
 *   gapless         bound: blk_avx2 with the typed side's blocks abutting (the gaps' cost)
 *   paired          bound: blk_avx2 with the blocks two to a page (what a page costs)
 *   paired_pfl, paired_walk   bounds: paired with the prefetches of blk_avx2_pfl, blk_avx2_walk
 *   ilv8_nt         pack only: the blocks eight at a time, line by line, the next eight's lines
 *                   prefetched (--ilv-ahead groups ahead), whole lines streamed (what gcomm
 *                   does past the caches)
 *   rd_ilv8         bound: the read half alone in that order (rd_only reads block by block
 *                   and bounds only loops that copy one block after the other)
 *   ilv8_nt_desc, rd_ilv8_desc   ilv8_nt and rd_ilv8 with each group's lines taken from the
 *                   blocks' last down (past the caches, what a forward stream's prefetch past
 *                   each block's end costs); the unpack is blk_avx2_nt_desc's
 *   ilv2, ilv4      the blocks two or four at a time, 128 bytes of each in turn, ordinary
 *                   stores (in the cache: more prefetch streams at once than one block gives)
 *   blk_avx2_desc   every block copied from its end down, ordinary stores
 *   blk_avx2_descpfl   blk_avx2_desc prefetching the last line of the block two ahead
 *   blk_avx2_dir    each block upward or downward, whichever keeps its loads clear of the
 *                   stores just made at the same address modulo 4 KiB (cp_avx2_dir)
 *   tbl_walk        blk_avx2_walk with each block's place and length read from tables (as
 *                   gcomm's indexed loop reads them) instead of computed
 *   tbl_walk_pf     tbl_walk with the tables' lines prefetched 32 rows ahead (is it their
 *                   latency that the tables cost?)
 *   split_nt        packed lines that share cache sets with the shape's lines streamed (pack),
 *                   every other block streamed (unpack): what the sets cost (cp_split_nt)
 *   split_inv, split_odd   pack: split_nt streaming the packed lines outside those sets, or
 *                   every other packed line (the sets picked or the share streamed?)
 * --huge-pages puts every buffer (memcpy's too) on transparent huge pages: what the loops lose to
 * the 4 KiB pages they touch. --pad B moves the blocks B bytes further apart (gcomm's type too).
 * `memcpy` is one memcpy of the packed byte count (the ceiling), `gcomm` is gcomm_pack or
 * gcomm_unpack of the same type; --loops picks a subset (memcpy is always timed). After the timed
 * runs every loop's output is compared byte for byte with the reference (pack: the packed stream
 * and the guard after it; unpack: every block and every byte between and after the blocks, which
 * must keep their sentinel). Exit status 1 when a check fails.
 *
 * Every sample follows at least --warm-calls untimed calls of the same loop (up to 50 ms), so
 * that each loop is timed from the cache state it leaves itself, whatever ran before it: near the
 * L3 size a pack with streaming stores needs about 10 calls to get there after a memcpy. The
 * percentages are medians of the per-round ratios memcpy time / loop time (bench_util.h), which
 * a change of the machine's memory bandwidth during the measurement moves less than the ratio of
 * two medians; the CSV has their quartiles. --repeat R repeats the whole sweep (new buffers each
 * time) and prints, per row, the median and the range over the R runs of each percentage. */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_shapes.h"
#include "bench_util.h"
#include "gcomm/datatype.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "bench_move_avx2.h"
#define CEIL_X86 1
#else
#define CEIL_X86 0
#endif

#define GUARD 64      /* bytes after each buffer that no loop may write */
#define SENTINEL 0xA5 /* fill of destinations and guards before a check */

/* Block i of the typed buffer: len0 + i * inc bytes at offset i * stride. */
typedef struct {
    size_t nblocks, stride, len0, inc;
    size_t packed; /* sum of the block lengths */
    size_t span;   /* bytes of the typed buffer (end of the last block) */
    char desc[96];
    bench_geom_t shape; /* the shape's geometry, as bench_pack_cpu builds it (bench_shapes.h) */
} geom_t;

/* vector_bl256 (blocks of 2 KiB 4 KiB apart), lower_tri (rows of 8 bytes to 8 N bytes, 8 N
 * apart) and vector_bl16 (rows of 128 bytes 256 apart: the shape whose pack ties with MPI_Pack
 * past the caches), each as a list of blocks. 0: built; 1: no geometry fits the size. */
static const char *const shapes[] = {"vector_bl256", "lower_tri", "vector_bl16"};

static int shape_geom(const char *name, size_t target, size_t pad, geom_t *g)
{
    const bench_shape_t *sh = bench_shape_find(name);
    if (!sh || bench_shape_geom(sh, target, &g->shape) != 0 ||
        bench_shape_pad(&g->shape, pad / 8) != 0)
        return 1;
    const bench_geom_t *b = &g->shape;
    if (b->kind == BENCH_SHAPE_VECTOR) {
        g->nblocks = b->n;
        g->stride = 8 * b->stride;
        g->len0 = 8 * b->block;
        g->inc = 0;
    } else if (b->kind == BENCH_SHAPE_LOWER_TRI) {
        g->nblocks = b->n;
        g->stride = 8 * b->stride;
        g->len0 = 8;
        g->inc = 8;
    } else {
        return 1;
    }
    g->packed = b->packed;
    g->span = b->span;
    snprintf(g->desc, sizeof g->desc, "%s", b->desc);
    return 0;
}

/* The shape as a gcomm datatype (not committed). */
static int shape_type(const geom_t *g, gcomm_datatype *t)
{
    const bench_type_api_t api = bench_type_api_linked();
    return bench_shape_type(&api, &g->shape, t);
}

enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

/* Buffers of one (shape, size), shared by every operation of a measurement (as in
 * bench_pack_cpu.c: where pages sit in the caches favours no one). */
typedef struct {
    const geom_t *g;
    gcomm_datatype type;
    unsigned char *src; /* typed input of pack */
    unsigned char *out; /* packed stream: output of pack, input of unpack */
    unsigned char *dst; /* typed output of unpack */
    unsigned char *ref; /* the reference packed stream */
    size_t pf_ahead;    /* prefetch distance of the _pf loops, packed bytes */
    int pf_hint;        /* locality of the reading prefetches: 0 nta, 1 t2, 2 t1, 3 t0 */
    size_t pf_next;     /* bytes of the next block the _pfn loops prefetch */
    size_t ilv_ahead;   /* the ilv8 loops prefetch the group this many groups ahead */
    uint64_t crowded;   /* bit k: the typed side's blocks hold more of their lines at offsets
                           [64 k, 64 k + 64) of a 4 KiB page than the average (split_nt) */
} bufs_t;

/* ---- the per-block copy kernels ------------------------------------------------------------ */

#define INLINE static inline __attribute__((always_inline))

INLINE void cp_memcpy(char *d, const char *s, size_t n) { memcpy(d, s, n); }

#if CEIL_X86
INLINE void cp_movsb(char *d, const char *s, size_t n)
{
    __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

/* n < 32 bytes as two overlapping fixed-size moves (no libc call for a variable size). */
#define CP_PAIR(W)                                                                           \
    do {                                                                                     \
        char a_[W], b_[W];                                                                   \
        memcpy(a_, s, W);                                                                    \
        memcpy(b_, s + n - (W), W);                                                          \
        memcpy(d, a_, W);                                                                    \
        memcpy(d + n - (W), b_, W);                                                          \
    } while (0)
INLINE void cp_small(char *d, const char *s, size_t n)
{
    if (n >= 16) CP_PAIR(16);
    else if (n >= 8) CP_PAIR(8);
    else if (n >= 4) CP_PAIR(4);
    else if (n >= 2) CP_PAIR(2);
    else if (n == 1) *d = *s;
}
#undef CP_PAIR

#define TGT_AVX2 __attribute__((target("avx2,prfchw")))
#define TGT_AVX512 __attribute__((target("avx512f,avx2,prfchw")))

/* Unaligned 32-byte moves, 4 per iteration; the last partial vector overlaps the one before. */
INLINE TGT_AVX2 void cp_avx2(char *d, const char *s, size_t n)
{
    if (n < 32) {
        cp_small(d, s, n);
        return;
    }
    size_t i = 0;
    for (; i + 128 <= n; i += 128) bench_move128_avx2(d + i, s + i);
    for (; i + 32 <= n; i += 32)
        _mm256_storeu_si256((__m256i *)(d + i), _mm256_loadu_si256((const __m256i *)(s + i)));
    if (i < n)
        _mm256_storeu_si256((__m256i *)(d + n - 32),
                            _mm256_loadu_si256((const __m256i *)(s + n - 32)));
}

/* Streaming stores write whole 64-byte lines only: the partial lines at the head and the tail of
 * a block are written by ordinary stores that touch no byte outside the block. A line written
 * both ways would be read for ownership by the ordinary store and then evicted by the streaming
 * one (this mix cost a third of the bandwidth in a first version of these loops). */
INLINE TGT_AVX2 void cp_avx2_nt(char *d, const char *s, size_t n)
{
    size_t head = (size_t)(-(uintptr_t)d & 63);
    if (n < head + 64) {
        cp_avx2(d, s, n);
        return;
    }
    cp_avx2(d, s, head);
    size_t i = head;
    for (; i + 128 <= n; i += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + i + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(s + i + 64));
        __m256i e = _mm256_loadu_si256((const __m256i *)(s + i + 96));
        _mm256_stream_si256((__m256i *)(d + i), a);
        _mm256_stream_si256((__m256i *)(d + i + 32), b);
        _mm256_stream_si256((__m256i *)(d + i + 64), c);
        _mm256_stream_si256((__m256i *)(d + i + 96), e);
    }
    if (i + 64 <= n) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + i + 32));
        _mm256_stream_si256((__m256i *)(d + i), a);
        _mm256_stream_si256((__m256i *)(d + i + 32), b);
        i += 64;
    }
    cp_avx2(d + i, s + i, n - i);
}

/* cp_avx2_nt from the block's end down: the same lines, the same stores, in descending
 * order. Read forward, the hardware prefetchers run on past a block's end into the gap before
 * the next one (for vector_bl256 the second half of every 4 KiB page), fetching lines that
 * nobody reads; read from its end down, a block's prefetch stops at its start, which is a page
 * boundary there, where prefetchers stop (rd_only_desc against rd_only measures the effect on
 * the read alone). */
INLINE TGT_AVX2 void cp_avx2_nt_desc(char *d, const char *s, size_t n)
{
    size_t head = (size_t)(-(uintptr_t)d & 63);
    if (n < head + 64) {
        cp_avx2(d, s, n);
        return;
    }
    size_t i = head + (n - head) / 64 * 64; /* [head, i): whole lines of d */
    cp_avx2(d + i, s + i, n - i);
    for (; i >= head + 128; i -= 128) {
        __m256i e = _mm256_loadu_si256((const __m256i *)(s + i - 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(s + i - 64));
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + i - 96));
        __m256i a = _mm256_loadu_si256((const __m256i *)(s + i - 128));
        _mm256_stream_si256((__m256i *)(d + i - 32), e);
        _mm256_stream_si256((__m256i *)(d + i - 64), c);
        _mm256_stream_si256((__m256i *)(d + i - 96), b);
        _mm256_stream_si256((__m256i *)(d + i - 128), a);
    }
    if (i >= head + 64) {
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + i - 32));
        __m256i a = _mm256_loadu_si256((const __m256i *)(s + i - 64));
        _mm256_stream_si256((__m256i *)(d + i - 32), b);
        _mm256_stream_si256((__m256i *)(d + i - 64), a);
    }
    cp_avx2(d, s, head);
}

INLINE TGT_AVX512 void cp_avx512(char *d, const char *s, size_t n)
{
    if (n < 64) {
        cp_avx2(d, s, n);
        return;
    }
    size_t i = 0;
    for (; i + 256 <= n; i += 256) {
        __m512i a = _mm512_loadu_si512((const void *)(s + i));
        __m512i b = _mm512_loadu_si512((const void *)(s + i + 64));
        __m512i c = _mm512_loadu_si512((const void *)(s + i + 128));
        __m512i e = _mm512_loadu_si512((const void *)(s + i + 192));
        _mm512_storeu_si512((void *)(d + i), a);
        _mm512_storeu_si512((void *)(d + i + 64), b);
        _mm512_storeu_si512((void *)(d + i + 128), c);
        _mm512_storeu_si512((void *)(d + i + 192), e);
    }
    for (; i + 64 <= n; i += 64)
        _mm512_storeu_si512((void *)(d + i), _mm512_loadu_si512((const void *)(s + i)));
    if (i < n)
        _mm512_storeu_si512((void *)(d + n - 64), _mm512_loadu_si512((const void *)(s + n - 64)));
}

INLINE TGT_AVX512 void cp_avx512_nt(char *d, const char *s, size_t n)
{
    size_t head = (size_t)(-(uintptr_t)d & 63);
    if (n < head + 64) {
        cp_avx512(d, s, n);
        return;
    }
    cp_avx512(d, s, head);
    size_t i = head;
    for (; i + 256 <= n; i += 256) {
        __m512i a = _mm512_loadu_si512((const void *)(s + i));
        __m512i b = _mm512_loadu_si512((const void *)(s + i + 64));
        __m512i c = _mm512_loadu_si512((const void *)(s + i + 128));
        __m512i e = _mm512_loadu_si512((const void *)(s + i + 192));
        _mm512_stream_si512((void *)(d + i), a);
        _mm512_stream_si512((void *)(d + i + 64), b);
        _mm512_stream_si512((void *)(d + i + 128), c);
        _mm512_stream_si512((void *)(d + i + 192), e);
    }
    for (; i + 64 <= n; i += 64)
        _mm512_stream_si512((void *)(d + i), _mm512_loadu_si512((const void *)(s + i)));
    cp_avx512(d + i, s + i, n - i);
}

/* Software prefetch of the strided (typed) side: a cursor that walks the cache lines of the
 * blocks ahead of the copy. The hardware stream prefetchers learn a stream anew at every block
 * (vector_bl256 starts a new 4 KiB page at each block), so the first lines of every block would
 * otherwise be fetched on demand. Pack reads the typed side (prefetch for reading); unpack writes
 * it (prefetchw: the read-for-ownership starts early). */
typedef struct {
    size_t j;         /* block of the next line to prefetch */
    size_t jlen;      /* its length */
    uintptr_t line;   /* address of the next line to prefetch */
    uintptr_t end;    /* end of block j */
    size_t pos;       /* packed position (approximate) of that line */
} pf_t;

INLINE void pf_start(pf_t *f, const geom_t *g, const char *typed)
{
    f->j = 0;
    f->jlen = g->len0;
    f->line = (uintptr_t)typed & ~(uintptr_t)63;
    f->end = (uintptr_t)typed + g->len0;
    f->pos = 0;
}

/* Prefetches lines until the cursor is `upto` packed bytes into the stream. write: prefetchw;
 * else the locality hint (0 prefetchnta ... 3 prefetcht0). */
INLINE TGT_AVX2 void pf_until(pf_t *f, const geom_t *g, const char *typed, size_t upto, int write,
                              int hint)
{
    while (f->pos < upto && f->j < g->nblocks) {
        if (write)
            __builtin_prefetch((const void *)f->line, 1, 3);
        else if (hint == 3)
            __builtin_prefetch((const void *)f->line, 0, 3);
        else if (hint == 2)
            __builtin_prefetch((const void *)f->line, 0, 2);
        else if (hint == 1)
            __builtin_prefetch((const void *)f->line, 0, 1);
        else
            __builtin_prefetch((const void *)f->line, 0, 0);
        f->line += 64;
        f->pos += 64;
        if (f->line >= f->end) { /* next block */
            f->j++;
            f->jlen += g->inc;
            uintptr_t start = (uintptr_t)typed + f->j * g->stride;
            f->line = start & ~(uintptr_t)63;
            f->end = start + f->jlen;
        }
    }
}
#endif /* CEIL_X86 */

/* ---- the loops: one pack and one unpack function per kernel, the kernel inlined ------------- */

/* Block i of the typed side sits at typed + PLACE (PLACE may use i, at: the packed bytes before
 * block i, prev: the length of block i - 1; the shape itself is i * g->stride), BEFORE(typed, i,
 * rw) runs before it is copied (rw: 0 when packing, 1 when unpacking; PLACE and BEFORE may use the
 * geometry g), COPY(dst, src, n) copies it, and FENCE orders streaming stores before the
 * operation returns (they are weakly ordered). */
#define DEFINE_BLOCK_LOOPS(NAME, ATTR, COPY, FENCE, PLACE, BEFORE)                            \
    ATTR static int op_##NAME##_pack(void *arg)                                             \
    {                                                                                       \
        const bufs_t *b = arg;                                                              \
        const geom_t *g = b->g;                                                             \
        const char *typed = (const char *)b->src;                                           \
        char *p = (char *)b->out;                                                           \
        size_t len = g->len0, prev = 0, at = 0;                                             \
        for (size_t i = 0; i < g->nblocks; i++, at += len, prev = len, len += g->inc) {     \
            BEFORE(typed, i, 0);                                                            \
            COPY(p + at, typed + (PLACE), len);                                             \
        }                                                                                   \
        (void)prev;                                                                         \
        FENCE;                                                                              \
        return 0;                                                                           \
    }                                                                                       \
    ATTR static int op_##NAME##_unpack(void *arg)                                           \
    {                                                                                       \
        const bufs_t *b = arg;                                                              \
        const geom_t *g = b->g;                                                             \
        char *typed = (char *)b->dst;                                                       \
        const char *p = (const char *)b->out;                                               \
        size_t len = g->len0, prev = 0, at = 0;                                             \
        for (size_t i = 0; i < g->nblocks; i++, at += len, prev = len, len += g->inc) {     \
            BEFORE(typed, i, 1);                                                            \
            COPY(typed + (PLACE), p + at, len);                                             \
        }                                                                                   \
        (void)prev;                                                                         \
        FENCE;                                                                              \
        return 0;                                                                           \
    }
#define NOTHING_BEFORE(typed, i, rw) ((void)0)
/* The shape's own blocks. */
#define DEFINE_LOOPS(NAME, ATTR, COPY, FENCE)                                                 \
    DEFINE_BLOCK_LOOPS(NAME, ATTR, COPY, FENCE, i * g->stride, NOTHING_BEFORE)

/* The prefetching loops copy in chunks of at most PF_CHUNK bytes so that prefetches are issued
 * while a long block (lower_tri rows reach 64 KiB) is copied, not all before it. Chunks end on a
 * 64-byte line of the destination, so that the streaming kernels never write one line partly in
 * two chunks (with ordinary stores in both). */
#define PF_CHUNK 1024
INLINE size_t pf_chunk(const char *dst, size_t left)
{
    size_t lim = PF_CHUNK - ((uintptr_t)dst & 63);
    return left < lim ? left : lim;
}
#define DEFINE_PF_LOOPS(NAME, ATTR, COPY, FENCE)                                              \
    ATTR static int op_##NAME##_pack(void *arg)                                             \
    {                                                                                       \
        const bufs_t *b = arg;                                                              \
        const geom_t *g = b->g;                                                             \
        const char *typed = (const char *)b->src, *t = typed;                               \
        char *p = (char *)b->out;                                                           \
        size_t len = g->len0, pos = 0;                                                      \
        pf_t f;                                                                             \
        pf_start(&f, g, typed);                                                             \
        for (size_t i = 0; i < g->nblocks; i++, t += g->stride, len += g->inc) {            \
            for (size_t o = 0, n; o < len; o += n) {                                        \
                n = pf_chunk(p + pos, len - o);                                             \
                pf_until(&f, g, typed, pos + n + b->pf_ahead, 0, b->pf_hint);               \
                COPY(p + pos, t + o, n);                                                    \
                pos += n;                                                                   \
            }                                                                               \
        }                                                                                   \
        FENCE;                                                                              \
        return 0;                                                                           \
    }                                                                                       \
    ATTR static int op_##NAME##_unpack(void *arg)                                           \
    {                                                                                       \
        const bufs_t *b = arg;                                                              \
        const geom_t *g = b->g;                                                             \
        char *typed = (char *)b->dst, *t = typed;                                           \
        const char *p = (const char *)b->out;                                               \
        size_t len = g->len0, pos = 0;                                                      \
        pf_t f;                                                                             \
        pf_start(&f, g, typed);                                                             \
        for (size_t i = 0; i < g->nblocks; i++, t += g->stride, len += g->inc) {            \
            for (size_t o = 0, n; o < len; o += n) {                                        \
                n = pf_chunk(t + o, len - o);                                               \
                pf_until(&f, g, typed, pos + n + b->pf_ahead, 1, 3);                        \
                COPY(t + o, p + pos, n);                                                    \
                pos += n;                                                                   \
            }                                                                               \
        }                                                                                   \
        FENCE;                                                                              \
        return 0;                                                                           \
    }

/* The _pfn loops (pack only): before copying block i, prefetch (prefetcht0) the first pf_next
 * bytes of block i + 1, so that its first lines are on their way while block i is copied: the
 * hardware prefetchers start over at every block and would fetch them on demand. Unpack is the
 * plain loop (its strided side is written, not read). */
INLINE TGT_AVX2 void pf_block(const char *s, size_t n)
{
    for (size_t o = 0; o < n; o += 64)
        _mm_prefetch(s + o, _MM_HINT_T0);
}
#define DEFINE_PFN_LOOPS(NAME, ATTR, COPY, FENCE)                                             \
    ATTR static int op_##NAME##_pack(void *arg)                                             \
    {                                                                                       \
        const bufs_t *b = arg;                                                              \
        const geom_t *g = b->g;                                                             \
        const char *t = (const char *)b->src;                                               \
        char *p = (char *)b->out;                                                           \
        size_t len = g->len0;                                                               \
        for (size_t i = 0; i < g->nblocks; i++, t += g->stride, p += len, len += g->inc) {  \
            if (i + 1 < g->nblocks)                                                         \
                pf_block(t + g->stride, len + g->inc < b->pf_next ? len + g->inc : b->pf_next); \
            COPY(p, t, len);                                                                \
        }                                                                                   \
        FENCE;                                                                              \
        return 0;                                                                           \
    }                                                                                       \
    ATTR static int op_##NAME##_unpack(void *arg)                                           \
    {                                                                                       \
        const bufs_t *b = arg;                                                              \
        const geom_t *g = b->g;                                                             \
        char *t = (char *)b->dst;                                                           \
        const char *p = (const char *)b->out;                                               \
        size_t len = g->len0;                                                               \
        for (size_t i = 0; i < g->nblocks; i++, t += g->stride, p += len, len += g->inc)    \
            COPY(t, p, len);                                                                \
        FENCE;                                                                              \
        return 0;                                                                           \
    }

#define NO_FENCE ((void)0)
DEFINE_LOOPS(blk_memcpy, , cp_memcpy, NO_FENCE)
#if CEIL_X86
#define SFENCE _mm_sfence()
DEFINE_LOOPS(blk_movsb, , cp_movsb, NO_FENCE)
DEFINE_LOOPS(blk_avx2, TGT_AVX2, cp_avx2, NO_FENCE)
DEFINE_LOOPS(blk_avx2_nt, TGT_AVX2, cp_avx2_nt, SFENCE)
DEFINE_LOOPS(blk_avx512, TGT_AVX512, cp_avx512, NO_FENCE)
DEFINE_LOOPS(blk_avx512_nt, TGT_AVX512, cp_avx512_nt, SFENCE)
DEFINE_PF_LOOPS(blk_avx2_pf, TGT_AVX2, cp_avx2, NO_FENCE)
DEFINE_PF_LOOPS(blk_avx2_nt_pf, TGT_AVX2, cp_avx2_nt, SFENCE)
DEFINE_PF_LOOPS(blk_avx512_nt_pf, TGT_AVX512, cp_avx512_nt, SFENCE)
DEFINE_PFN_LOOPS(blk_avx2_pfn, TGT_AVX2, cp_avx2, NO_FENCE)
DEFINE_PFN_LOOPS(blk_avx2_nt_pfn, TGT_AVX2, cp_avx2_nt, SFENCE)
DEFINE_PFN_LOOPS(blk_avx512_nt_pfn, TGT_AVX512, cp_avx512_nt, SFENCE)
DEFINE_LOOPS(blk_avx2_nt_desc, TGT_AVX2, cp_avx2_nt_desc, SFENCE)

/* blk_avx2_nt_desc, prefetching the last --pf-next bytes of the next block (where its copy
 * starts) before each block */
TGT_AVX2 static int op_blk_avx2_nt_descpf_pack(void *arg)
{
    const bufs_t *b = arg;
    const geom_t *g = b->g;
    const char *t = (const char *)b->src;
    char *p = (char *)b->out;
    size_t len = g->len0;
    for (size_t i = 0; i < g->nblocks; i++, t += g->stride, p += len, len += g->inc) {
        if (i + 1 < g->nblocks) {
            size_t next = len + g->inc, n = next < b->pf_next ? next : b->pf_next;
            pf_block(t + g->stride + next - n, n);
        }
        cp_avx2_nt_desc(p, t, len);
    }
    SFENCE;
    return 0;
}
#define op_blk_avx2_nt_descpf_unpack op_blk_avx2_nt_desc_unpack

/* ---- bounds: each half of the copy alone -------------------------------------------------------
 * rd_only loads exactly the bytes the operation reads, block by block in the same order (32-byte
 * loads), and writes nothing; rd_only_desc the same, each block from its end; wr_only writes
 * exactly the bytes the operation writes, block by block, as blk_avx2_nt does (streaming stores
 * of whole lines, ordinary ones for the partial lines at the ends), and reads nothing. A loop
 * that copies the blocks has to do both, over the same memory system, so its time is at least
 * the longer of the two. Their output is not checked (there is none, or it is a constant). */
static volatile uint64_t bound_sink;

INLINE TGT_AVX2 __m256i rd_block(const char *s, size_t n, __m256i acc)
{
    size_t i = 0;
    if (n >= 32) {
        __m256i a = acc, b = _mm256_setzero_si256(), c = b, e = b;
        for (; i + 128 <= n; i += 128) {
            a = _mm256_xor_si256(a, _mm256_loadu_si256((const __m256i *)(s + i)));
            b = _mm256_xor_si256(b, _mm256_loadu_si256((const __m256i *)(s + i + 32)));
            c = _mm256_xor_si256(c, _mm256_loadu_si256((const __m256i *)(s + i + 64)));
            e = _mm256_xor_si256(e, _mm256_loadu_si256((const __m256i *)(s + i + 96)));
        }
        for (; i + 32 <= n; i += 32)
            a = _mm256_xor_si256(a, _mm256_loadu_si256((const __m256i *)(s + i)));
        if (i < n)
            b = _mm256_xor_si256(b, _mm256_loadu_si256((const __m256i *)(s + n - 32)));
        return _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, e));
    }
    uint64_t w = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        w ^= x;
    }
    for (; i < n; i++)
        w ^= (unsigned char)s[i];
    return _mm256_xor_si256(acc, _mm256_set1_epi64x((long long)w));
}

INLINE TGT_AVX2 __m256i rd_block_desc(const char *s, size_t n, __m256i acc)
{
    if (n < 128)
        return rd_block(s, n, acc);
    __m256i a = acc, b = _mm256_setzero_si256(), c = b, e = b;
    size_t i = n;
    for (; i >= 128; i -= 128) {
        a = _mm256_xor_si256(a, _mm256_loadu_si256((const __m256i *)(s + i - 32)));
        b = _mm256_xor_si256(b, _mm256_loadu_si256((const __m256i *)(s + i - 64)));
        c = _mm256_xor_si256(c, _mm256_loadu_si256((const __m256i *)(s + i - 96)));
        e = _mm256_xor_si256(e, _mm256_loadu_si256((const __m256i *)(s + i - 128)));
    }
    a = rd_block(s, i, a);
    return _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, e));
}

INLINE TGT_AVX2 void bound_sink_set(__m256i acc)
{
    bound_sink = (uint64_t)_mm256_extract_epi64(acc, 0) ^ (uint64_t)_mm256_extract_epi64(acc, 3);
}

/* Writes n bytes of the pattern v at d as cp_avx2_nt writes a block. */
INLINE TGT_AVX2 void wr_small(char *d, size_t n, __m256i v)
{
    unsigned char tmp[32];
    _mm256_storeu_si256((__m256i *)tmp, v);
    for (size_t i = 0; i < n; i += 32)
        memcpy(d + i, tmp, n - i < 32 ? n - i : 32);
}

INLINE TGT_AVX2 void wr_block_nt(char *d, size_t n, __m256i v)
{
    size_t head = (size_t)(-(uintptr_t)d & 63);
    if (n < head + 64) {
        wr_small(d, n, v);
        return;
    }
    wr_small(d, head, v);
    size_t i = head;
    for (; i + 64 <= n; i += 64) {
        _mm256_stream_si256((__m256i *)(d + i), v);
        _mm256_stream_si256((__m256i *)(d + i + 32), v);
    }
    wr_small(d + i, n - i, v);
}

#define DEFINE_RD_LOOPS(NAME, RD)                                                             \
    TGT_AVX2 static int op_##NAME##_pack(void *arg)                                         \
    {                                                                                       \
        const bufs_t *b = arg;                                                              \
        const geom_t *g = b->g;                                                             \
        const char *t = (const char *)b->src;                                               \
        size_t len = g->len0;                                                               \
        __m256i acc = _mm256_setzero_si256();                                               \
        for (size_t i = 0; i < g->nblocks; i++, t += g->stride, len += g->inc)              \
            acc = RD(t, len, acc);                                                          \
        bound_sink_set(acc);                                                                \
        return 0;                                                                           \
    }                                                                                       \
    TGT_AVX2 static int op_##NAME##_unpack(void *arg)                                       \
    {                                                                                       \
        const bufs_t *b = arg;                                                              \
        const geom_t *g = b->g;                                                             \
        const char *p = (const char *)b->out;                                               \
        size_t len = g->len0;                                                               \
        __m256i acc = _mm256_setzero_si256();                                               \
        for (size_t i = 0; i < g->nblocks; i++, p += len, len += g->inc)                    \
            acc = RD(p, len, acc);                                                          \
        bound_sink_set(acc);                                                                \
        return 0;                                                                           \
    }
DEFINE_RD_LOOPS(rd_only, rd_block)
DEFINE_RD_LOOPS(rd_only_desc, rd_block_desc)

TGT_AVX2 static int op_wr_only_pack(void *arg)
{
    const bufs_t *b = arg;
    const geom_t *g = b->g;
    char *p = (char *)b->out;
    size_t len = g->len0;
    __m256i v = _mm256_set1_epi8(0x5a);
    for (size_t i = 0; i < g->nblocks; i++, p += len, len += g->inc)
        wr_block_nt(p, len, v);
    _mm_sfence();
    return 0;
}

TGT_AVX2 static int op_wr_only_unpack(void *arg)
{
    const bufs_t *b = arg;
    const geom_t *g = b->g;
    char *t = (char *)b->dst;
    size_t len = g->len0;
    __m256i v = _mm256_set1_epi8(0x5a);
    for (size_t i = 0; i < g->nblocks; i++, t += g->stride, len += g->inc)
        wr_block_nt(t, len, v);
    _mm_sfence();
    return 0;
}

/* blk_avx2_pfl: blk_avx2 prefetching, before block i, the first line of block i + PFL_AHEAD (for
 * reading when packing, for writing when unpacking): what gcomm does on Zen 4 in operations in
 * the cache (pack_host.c, strided_vec_pf). */
#define PFL_AHEAD 2
#define PREFETCH_LINE_AHEAD(typed, i, rw)                                                     \
    do {                                                                                    \
        if ((i) + PFL_AHEAD < g->nblocks)                                                   \
            __builtin_prefetch((typed) + ((i) + PFL_AHEAD) * g->stride, rw, 3);             \
    } while (0)
DEFINE_BLOCK_LOOPS(blk_avx2_pfl, TGT_AVX2, cp_avx2, NO_FENCE, i * g->stride, PREFETCH_LINE_AHEAD)

/* gapless: blk_avx2 with the typed side's blocks abutting (each block where the previous one
 * ended, not g->stride after it): the same loop, the same block lengths and the same bytes moved,
 * only without the shape's gaps. What it gains over blk_avx2 is what the gaps themselves cost
 * the memory system (a new page and a new prefetch stream at every block, lines fetched past a
 * block's end), which no loop over the shape's addresses avoids. Output not checked: it lands
 * elsewhere than the shape's blocks. */
DEFINE_BLOCK_LOOPS(gapless, TGT_AVX2, cp_avx2, NO_FENCE, at, NOTHING_BEFORE)

/* paired: blk_avx2 with the typed side's blocks two to a page: blocks 2j and 2j + 1 abut, block
 * 2j where the shape has it (2j strides in). The same loop, the same block lengths, the same bytes
 * and the same fraction of the span left in gaps as the shape, but half the pages (vector_bl256:
 * 4 KiB copied from every other 4 KiB page instead of 2 KiB from every page). What it gains over
 * blk_avx2 is what touching a page costs beyond its bytes (its translation, a prefetch stream
 * started over). Pairs stay inside the span (a block is at most one stride long). Output not
 * checked: it lands elsewhere than the shape's blocks. */
#define PAIRED_PLACE ((i & ~(size_t)1) * g->stride + (i & 1 ? prev : 0))
DEFINE_BLOCK_LOOPS(paired, TGT_AVX2, cp_avx2, NO_FENCE, PAIRED_PLACE, NOTHING_BEFORE)

/* One line of a walk down [pa, q): the line below q, for reading when rw is 0, for writing when 1
 * (q, pa and rw are the walking copy's locals). */
#define WALK_ONE                                                                              \
    do {                                                                                    \
        if (q > pa) {                                                                       \
            q -= 64;                                                                        \
            if (rw) __builtin_prefetch(q < pa ? pa : q, 1, 3);                              \
            else __builtin_prefetch(q < pa ? pa : q, 0, 3);                                 \
        }                                                                                   \
    } while (0)
/* cp_avx2 that also prefetches the lines of [pa, pa + pn) from its end down, two per 128 bytes
 * copied and the rest after the copy (for reading when rw is 0, for writing when 1). */
INLINE TGT_AVX2 void cp_avx2_walk(char *d, const char *s, size_t n, const char *pa, size_t pn,
                                  int rw)
{
    const char *q = pa + pn;
    size_t i = 0;
    if (n >= 32) {
        for (; i + 128 <= n; i += 128) {
            WALK_ONE;
            WALK_ONE;
            cp_avx2(d + i, s + i, 128);
        }
        if (i < n) cp_avx2(d + i, s + i, n - i);
    } else {
        cp_small(d, s, n);
    }
    while (q > pa) WALK_ONE;
}

/* blk_avx2_walk: blk_avx2 prefetching, while it copies block i, the whole block i + PFL_AHEAD from
 * its end down (what gcomm does on Zen 4 in the cache for vector blocks of 1.5-3 KiB a page or
 * more apart, pack_host.c strided_vec_walk; written here without its page-boundary case). BEFORE
 * only names the direction for the copy. */
#define WALK_RW(typed, i, rw) const int walk_rw = (rw)
#define BLK_LEN(j) (g->len0 + (j) * g->inc)
#define SHAPE_PLACE_OF(j) ((j) * g->stride)
/* WALK_FN (a walking copy: cp_avx2_walk, cp_aln_walk) of block i, walking block i + PFL_AHEAD. */
#define WALK_AHEAD_BY(WALK_FN, PLACE_OF, d_, s_, n_)                                          \
    WALK_FN(d_, s_, n_, i + PFL_AHEAD < g->nblocks ? typed + PLACE_OF(i + PFL_AHEAD) : typed, \
            i + PFL_AHEAD < g->nblocks ? BLK_LEN(i + PFL_AHEAD) : 0, walk_rw)
#define WALK_AHEAD(PLACE_OF, d_, s_, n_) WALK_AHEAD_BY(cp_avx2_walk, PLACE_OF, d_, s_, n_)
#define COPY_WALK(d_, s_, n_) WALK_AHEAD(SHAPE_PLACE_OF, d_, s_, n_)
DEFINE_BLOCK_LOOPS(blk_avx2_walk, TGT_AVX2, COPY_WALK, NO_FENCE, i * g->stride, WALK_RW)

/* cp_aln: every source and destination access a whole aligned 64-byte line. Stores go to dst's
 * aligned lines; each is assembled from the two aligned source lines it straddles by valignq
 * (dst and src a multiple of 8 bytes apart, else cp_avx2), so that no load or store splits a line
 * (lower_tri's packed rows start at every multiple of 8 bytes while its rows start on pages). The
 * head and the tail are unaligned 64-byte moves. With pa/pn, the walk of cp_avx2_walk, one line
 * per 64 bytes copied. */
#define ALN_CASE(SH)                                                                          \
    case SH:                                                                                \
        for (; i + 64 <= n; i += 64, a += 64) {                                             \
            const __m512i nx = _mm512_load_si512((const void *)(a + 64));                   \
            _mm512_store_si512((void *)(d + i), _mm512_alignr_epi64(nx, pv, SH));           \
            pv = nx;                                                                        \
            WALK_ONE;                                                                       \
        }                                                                                   \
        break;
INLINE TGT_AVX512 void cp_aln_walk(char *d, const char *s, size_t n, const char *pa, size_t pn,
                                   int rw)
{
    const char *q = pa + pn;
    if (n < 128 || (((uintptr_t)d - (uintptr_t)s) & 7)) {
        cp_avx2(d, s, n);
        while (q > pa) WALK_ONE;
        return;
    }
    _mm512_storeu_si512((void *)d, _mm512_loadu_si512((const void *)s));
    size_t i = 64 - ((uintptr_t)d & 63);
    const char *a = (const char *)((uintptr_t)(s + i) & ~(uintptr_t)63);
    const unsigned sh = (unsigned)(((uintptr_t)(s + i) & 63) / 8);
    __m512i pv = _mm512_load_si512((const void *)a);
    switch (sh) {
    case 0:
        for (; i + 64 <= n; i += 64) {
            _mm512_store_si512((void *)(d + i), _mm512_load_si512((const void *)(s + i)));
            WALK_ONE;
        }
        break;
        ALN_CASE(1) ALN_CASE(2) ALN_CASE(3) ALN_CASE(4) ALN_CASE(5) ALN_CASE(6) ALN_CASE(7)
    }
    if (i < n)
        _mm512_storeu_si512((void *)(d + n - 64), _mm512_loadu_si512((const void *)(s + n - 64)));
    while (q > pa) WALK_ONE;
}
#undef ALN_CASE
INLINE TGT_AVX512 void cp_aln(char *d, const char *s, size_t n)
{
    cp_aln_walk(d, s, n, s, 0, 0);
}
DEFINE_LOOPS(blk_aln, TGT_AVX512, cp_aln, NO_FENCE)
#define COPY_ALN_WALK(d_, s_, n_) WALK_AHEAD_BY(cp_aln_walk, SHAPE_PLACE_OF, d_, s_, n_)
DEFINE_BLOCK_LOOPS(blk_aln_walk, TGT_AVX512, COPY_ALN_WALK, NO_FENCE, i * g->stride, WALK_RW)

/* cp_avx2 from the block's end down, ordinary stores: the descending order of cp_avx2_nt_desc
 * (a stream the prefetchers follow down stops at the block's start, a page boundary for
 * vector_bl256) without its streaming stores, which lose in the cache. */
INLINE TGT_AVX2 void cp_avx2_desc(char *d, const char *s, size_t n)
{
    if (n < 128) {
        cp_avx2(d, s, n);
        return;
    }
    size_t i = n;
    for (; i >= 128; i -= 128) bench_move128_avx2(d + i - 128, s + i - 128);
    if (i) cp_avx2(d, s, i < 32 ? 32 : i); /* the head: overlapping the moves above is harmless */
}

/* blk_avx2_desc: every block by cp_avx2_desc. blk_avx2_descpfl: the same, prefetching before
 * block i the last line of block i + PFL_AHEAD (where its copy starts), so that the hardware's
 * descending stream, not one software prefetch per line, fetches the rest of it. */
DEFINE_LOOPS(blk_avx2_desc, TGT_AVX2, cp_avx2_desc, NO_FENCE)

/* blk_avx2_dir: each block copied upward, or from its end down when its destination lies less
 * than DIR_WINDOW bytes above its source modulo 4 KiB. The cores compare a load with the stores
 * still in flight by address bits 0-11 only; copied upward, a block whose destination is d bytes
 * above its source (mod 4 KiB) issues loads that match stores made d bytes earlier in the copy
 * and wait for them (4 KiB aliasing). lower_tri's rows start on 4 KiB multiples while their
 * packed places move by 8 (i + 1) bytes, so rows land at every distance; vector_bl256's blocks
 * are at 0 or 2 KiB. Copied downward, the matching stores would have to lie d bytes below. */
#define DIR_WINDOW 2048
INLINE TGT_AVX2 void cp_avx2_dir(char *d, const char *s, size_t n)
{
    size_t delta = (size_t)((uintptr_t)d - (uintptr_t)s) & 4095;
    if (delta != 0 && delta < DIR_WINDOW)
        cp_avx2_desc(d, s, n);
    else
        cp_avx2(d, s, n);
}
DEFINE_LOOPS(blk_avx2_dir, TGT_AVX2, cp_avx2_dir, NO_FENCE)
#define PREFETCH_LAST_LINE_AHEAD(typed, i, rw)                                                \
    do {                                                                                    \
        if ((i) + PFL_AHEAD < g->nblocks)                                                   \
            __builtin_prefetch((typed) + ((i) + PFL_AHEAD) * g->stride +                    \
                                   BLK_LEN((i) + PFL_AHEAD) - 1,                            \
                               rw, 3);                                                      \
    } while (0)
DEFINE_BLOCK_LOOPS(blk_avx2_descpfl, TGT_AVX2, cp_avx2_desc, NO_FENCE, i * g->stride,
                   PREFETCH_LAST_LINE_AHEAD)

/* tbl_walk: blk_avx2_walk reading each block's place and length from tables, as gcomm's indexed
 * loop does (displacements in bytes, prefix sums of the lengths in 8-byte elements), instead of
 * computing them: what the tables cost the walk. The tables are built once per geometry. */
static int64_t *tbl_disp, *tbl_pre;
static size_t tbl_n, tbl_stride, tbl_len0, tbl_inc;
static void tbl_make(const geom_t *g)
{
    if (tbl_disp && tbl_n == g->nblocks && tbl_stride == g->stride && tbl_len0 == g->len0 &&
        tbl_inc == g->inc)
        return;
    free(tbl_disp);
    free(tbl_pre);
    tbl_disp = malloc(g->nblocks * sizeof *tbl_disp);
    tbl_pre = malloc((g->nblocks + 1) * sizeof *tbl_pre);
    if (!tbl_disp || !tbl_pre) abort();
    tbl_pre[0] = 0;
    for (size_t i = 0; i < g->nblocks; i++) {
        tbl_disp[i] = (int64_t)(i * g->stride);
        tbl_pre[i + 1] = tbl_pre[i] + (int64_t)((g->len0 + i * g->inc) / 8);
    }
    tbl_n = g->nblocks, tbl_stride = g->stride, tbl_len0 = g->len0, tbl_inc = g->inc;
}
#define TBL_WALK_LOOP(TYPED_T, BUF, RW, COPY_ARGS) TBL_WALK_LOOP_PF(TYPED_T, BUF, RW, COPY_ARGS, 0)
/* TBL_PF: the tables' lines TBL_PF_AHEAD rows ahead prefetched, one line of each per 8 rows. */
#define TBL_PF_AHEAD 32
#define TBL_WALK_LOOP_PF(TYPED_T, BUF, RW, COPY_ARGS, TBL_PF)                                 \
    const bufs_t *b = arg;                                                                  \
    const geom_t *g = b->g;                                                                 \
    tbl_make(g);                                                                            \
    TYPED_T *typed = (TYPED_T *)b->BUF;                                                     \
    char *pk = (char *)b->out;                                                              \
    const int64_t *displs = tbl_disp, *prefix = tbl_pre;                                    \
    const int64_t count = (int64_t)g->nblocks;                                              \
    for (int64_t i = 0; i < count; i++) {                                                   \
        if (TBL_PF && (i & 7) == 0 && i + TBL_PF_AHEAD < count) {                           \
            __builtin_prefetch(displs + i + TBL_PF_AHEAD, 0, 3);                            \
            __builtin_prefetch(prefix + i + TBL_PF_AHEAD, 0, 3);                            \
        }                                                                                   \
        size_t len = (size_t)((prefix[i + 1] - prefix[i]) * 8);                             \
        const char *pa = (const char *)typed;                                               \
        size_t pn = 0;                                                                      \
        if (i + PFL_AHEAD < count) {                                                        \
            pa = (const char *)typed + displs[i + PFL_AHEAD];                               \
            pn = (size_t)((prefix[i + PFL_AHEAD + 1] - prefix[i + PFL_AHEAD]) * 8);         \
        }                                                                                   \
        cp_avx2_walk COPY_ARGS;                                                             \
        pk += len;                                                                          \
    }                                                                                       \
    return 0;
TGT_AVX2 static int op_tbl_walk_pack(void *arg)
{
    TBL_WALK_LOOP(const char, src, 0, (pk, typed + displs[i], len, pa, pn, 0))
}
TGT_AVX2 static int op_tbl_walk_unpack(void *arg)
{
    TBL_WALK_LOOP(char, dst, 1, (typed + displs[i], pk, len, pa, pn, 1))
}
/* tbl_walk_pf: tbl_walk with the tables' lines prefetched TBL_PF_AHEAD rows ahead (each
 * operation reads them anew from past the L2, after the shape's lines have pushed them out). */
TGT_AVX2 static int op_tbl_walk_pf_pack(void *arg)
{
    TBL_WALK_LOOP_PF(const char, src, 0, (pk, typed + displs[i], len, pa, pn, 0), 1)
}
TGT_AVX2 static int op_tbl_walk_pf_unpack(void *arg)
{
    TBL_WALK_LOOP_PF(char, dst, 1, (typed + displs[i], pk, len, pa, pn, 1), 1)
}

/* paired_pfl and paired_walk: paired with the prefetches of blk_avx2_pfl and blk_avx2_walk (of
 * block i + PFL_AHEAD where paired places it): the bound with the prefetches that raise the
 * shape's own loop, so that the bound is not held lower by a plain loop's misses. */
#define PAIRED_PLACE_OF(j) (((j) & ~(size_t)1) * g->stride + ((j) & 1 ? BLK_LEN((j) - 1) : 0))
#define PREFETCH_LINE_AHEAD_PAIRED(typed, i, rw)                                              \
    do {                                                                                    \
        if ((i) + PFL_AHEAD < g->nblocks)                                                   \
            __builtin_prefetch((typed) + PAIRED_PLACE_OF((i) + PFL_AHEAD), rw, 3);          \
    } while (0)
DEFINE_BLOCK_LOOPS(paired_pfl, TGT_AVX2, cp_avx2, NO_FENCE, PAIRED_PLACE,
                   PREFETCH_LINE_AHEAD_PAIRED)
#define COPY_WALK_PAIRED(d_, s_, n_) WALK_AHEAD(PAIRED_PLACE_OF, d_, s_, n_)
DEFINE_BLOCK_LOOPS(paired_walk, TGT_AVX2, COPY_WALK_PAIRED, NO_FENCE, PAIRED_PLACE, WALK_RW)

/* ---- blocks in groups of ILV_WAYS, line by line ------------------------------------------------
 * ilv8_nt (pack only; its unpack is blk_avx2_nt's): the blocks ILV_WAYS at a time, line l of each
 * block of the group, then line l + 64, ..., line l of the next group's blocks prefetched first,
 * whole packed lines by streaming stores and the partial lines at a block's ends by ordinary
 * stores before them (what gcomm_pack does past the caches, pack_host.c gather_group). rd_ilv8:
 * the read half alone in that order (the strided blocks when packing, the packed ones when
 * unpacking): rd_only reads one block after the other and bounds only loops that do. */
#define ILV_WAYS 8
typedef struct {
    const char *s[ILV_WAYS]; /* the group's blocks */
    size_t n[ILV_WAYS];      /* their lengths */
    size_t at[ILV_WAYS];     /* their packed offsets */
    const char *next[ILV_WAYS];
    size_t w, nnext, most;
} ilv_group_t;

/* Group of blocks i.. of the typed side at t (strided: 1) or of the packed stream at t (0); at:
 * packed offset of block i; len: its length. */
INLINE void ilv_group(const geom_t *g, const char *t, int strided, size_t i, size_t at,
                      size_t len, size_t ahead, ilv_group_t *q)
{
    q->w = g->nblocks - i < ILV_WAYS ? g->nblocks - i : ILV_WAYS;
    q->most = 0;
    for (size_t k = 0; k < q->w; k++, at += len, len += g->inc) {
        q->s[k] = t + (strided ? (i + k) * g->stride : at);
        q->n[k] = len;
        q->at[k] = at;
        if (len > q->most) q->most = len;
    }
    q->nnext = 0;
    const size_t first = i + q->w + (ahead - 1) * ILV_WAYS; /* the prefetched group's first */
    for (size_t k = i + q->w; k < first + ILV_WAYS && k < g->nblocks; k++, at += len,
                len += g->inc)
        if (k >= first) q->next[q->nnext++] = t + (strided ? k * g->stride : at);
}

/* ilv8_nt (desc 0) and ilv8_nt_desc (desc 1): within a group the lines go from the blocks' first
 * up, or from their last down (a descending stream's hardware prefetch stops at the block's start,
 * here a page boundary, instead of running on into the gap after the block). */
INLINE TGT_AVX2 int ilv8_nt_pack(const bufs_t *b, int desc)
{
    const geom_t *g = b->g;
    char *p = (char *)b->out;
    size_t len = g->len0, at = 0;
    ilv_group_t q;
    for (size_t i = 0; i < g->nblocks; i += q.w) {
        ilv_group(g, (const char *)b->src, 1, i, at, len, b->ilv_ahead, &q);
        size_t head[ILV_WAYS], lines[ILV_WAYS], most = 0;
        for (size_t k = 0; k < q.w; k++) {
            char *d = p + q.at[k];
            head[k] = (size_t)(-(uintptr_t)d & 63);
            lines[k] = q.n[k] >= head[k] + 64 ? (q.n[k] - head[k]) / 64 : 0;
            if (!lines[k]) head[k] = q.n[k];
            if (lines[k] > most) most = lines[k];
            const size_t body = head[k] + 64 * lines[k];
            cp_avx2(d, q.s[k], head[k]);
            cp_avx2(d + body, q.s[k] + body, q.n[k] - body);
        }
        for (size_t l = 0; l < most; l++) {
            const size_t o = 64 * (desc ? most - 1 - l : l);
            for (size_t k = 0; k < q.nnext; k++) __builtin_prefetch(q.next[k] + o, 0, 3);
            for (size_t k = 0; k < q.w; k++)
                if (o < 64 * lines[k]) {
                    const char *s = q.s[k] + head[k] + o;
                    char *d = p + q.at[k] + head[k] + o;
                    __m256i x = _mm256_loadu_si256((const __m256i *)s);
                    __m256i y = _mm256_loadu_si256((const __m256i *)(s + 32));
                    _mm256_stream_si256((__m256i *)d, x);
                    _mm256_stream_si256((__m256i *)(d + 32), y);
                }
        }
        at = q.at[q.w - 1] + q.n[q.w - 1];
        len = q.n[q.w - 1] + g->inc;
    }
    _mm_sfence();
    return 0;
}
TGT_AVX2 static int op_ilv8_nt_pack(void *arg) { return ilv8_nt_pack(arg, 0); }
TGT_AVX2 static int op_ilv8_nt_desc_pack(void *arg) { return ilv8_nt_pack(arg, 1); }
#define op_ilv8_nt_desc_unpack op_blk_avx2_nt_desc_unpack
#define op_ilv8_nt_unpack op_blk_avx2_nt_unpack

INLINE TGT_AVX2 int rd_ilv8(const geom_t *g, const char *t, int strided, int desc, size_t ahead)
{
    size_t len = g->len0, at = 0;
    __m256i acc = _mm256_setzero_si256();
    ilv_group_t q;
    for (size_t i = 0; i < g->nblocks; i += q.w) {
        ilv_group(g, t, strided, i, at, len, ahead, &q);
        const size_t nl = (q.most + 63) / 64;
        for (size_t l = 0; l < nl; l++) {
            const size_t o = 64 * (desc ? nl - 1 - l : l);
            for (size_t k = 0; k < q.nnext; k++) __builtin_prefetch(q.next[k] + o, 0, 3);
            for (size_t k = 0; k < q.w; k++)
                if (o < q.n[k]) acc = rd_block(q.s[k] + o, q.n[k] - o < 64 ? q.n[k] - o : 64, acc);
        }
        at = q.at[q.w - 1] + q.n[q.w - 1];
        len = q.n[q.w - 1] + g->inc;
    }
    bound_sink_set(acc);
    return 0;
}
/* rd_ilv8's pack reads the strided source, its unpack the packed stream; DESC: rd_ilv8's desc. */
#define DEFINE_RD_ILV8_OPS(NAME, DESC)                                                          \
    TGT_AVX2 static int op_##NAME##_pack(void *arg)                                           \
    {                                                                                         \
        const bufs_t *b = arg;                                                                \
        return rd_ilv8(b->g, (const char *)b->src, 1, DESC, b->ilv_ahead);                    \
    }                                                                                         \
    TGT_AVX2 static int op_##NAME##_unpack(void *arg)                                         \
    {                                                                                         \
        const bufs_t *b = arg;                                                                \
        return rd_ilv8(b->g, (const char *)b->out, 0, DESC, b->ilv_ahead);                    \
    }
DEFINE_RD_ILV8_OPS(rd_ilv8, 0)
DEFINE_RD_ILV8_OPS(rd_ilv8_desc, 1)

/* ilv2 and ilv4: W blocks at a time, 128 bytes of each in turn, by ordinary stores, and the
 * bytes of each block past its last whole 128 by cp_avx2 after the group; pack and unpack the
 * same way. One block at a time gives the hardware prefetchers one stream, which starts over at
 * every block (a new page for vector_bl256 and lower_tri); W blocks keep W streams going. On
 * machine D (2026-11-29) they stayed 5-15 points of memcpy below blk_avx2_pfl at 1-4 MiB. */
#define ILV_MAX 4
INLINE TGT_AVX2 void ilv_copy(const geom_t *g, char *typed, char *packed, int pack, size_t W)
{
    size_t len = g->len0, at = 0;
    for (size_t i = 0; i < g->nblocks; i += W) {
        const size_t w = g->nblocks - i < W ? g->nblocks - i : W;
        char *d[ILV_MAX];
        const char *s[ILV_MAX];
        size_t n[ILV_MAX], most = 0;
        for (size_t k = 0; k < w; k++, at += len, len += g->inc) {
            char *t = typed + (i + k) * g->stride;
            d[k] = pack ? packed + at : t;
            s[k] = pack ? t : packed + at;
            n[k] = len;
            if (len > most) most = len;
        }
        for (size_t o = 0; o + 128 <= most; o += 128)
            for (size_t k = 0; k < w; k++)
                if (o + 128 <= n[k]) bench_move128_avx2(d[k] + o, s[k] + o);
        for (size_t k = 0; k < w; k++) {
            const size_t done = n[k] / 128 * 128;
            cp_avx2(d[k] + done, s[k] + done, n[k] - done);
        }
    }
}
#define DEFINE_ILV_LOOPS(NAME, W)                                                             \
    TGT_AVX2 static int op_##NAME##_pack(void *arg)                                         \
    {                                                                                       \
        const bufs_t *b = arg;                                                              \
        ilv_copy(b->g, (char *)b->src, (char *)b->out, 1, W);                               \
        return 0;                                                                           \
    }                                                                                       \
    TGT_AVX2 static int op_##NAME##_unpack(void *arg)                                       \
    {                                                                                       \
        const bufs_t *b = arg;                                                              \
        ilv_copy(b->g, (char *)b->dst, (char *)b->out, 0, W);                               \
        return 0;                                                                           \
    }
DEFINE_ILV_LOOPS(ilv2, 2)
DEFINE_ILV_LOOPS(ilv4, 4)

/* split_nt: what the L2's sets cost. A cache set is chosen by address bits 6 and up; bits 6-11
 * are a line's place in its 4 KiB page, the same in virtual and physical addresses. vector_bl256's
 * blocks (2 KiB at the start of every page) put all their lines in the sets of the page's first
 * half, lower_tri's rows (from the start of every row) most of theirs in the first lines of a
 * page; the packed stream spreads over every set. Where memcpy's source and destination fit the
 * L2 together (1 MiB on a 2 MiB L2), the shape's lines and the packed lines meant for those sets
 * do not. The pack writes the packed lines that fall in the crowded sets (b->crowded) with
 * streaming stores, so that only the shape's lines compete there; the unpack writes every other
 * block with streaming stores, which halves the typed lines kept in those sets. --pad moves the
 * blocks off the 4 KiB multiples, which tests the premise: on the Emerald Rapids host of machine
 * B (2026-11-29) no loop over vector_bl256 at 1 MiB came within 20 points of gapless with 64
 * bytes of pad either, and this loop, the best there at 66-83% of memcpy, gains by streaming
 * half the output, not by the sets it picks (docs/BENCHMARKS.md, session 39). */
INLINE TGT_AVX2 void cp_split_nt(char *d, const char *s, size_t n, uint64_t crowded)
{
    size_t head = (size_t)(-(uintptr_t)d & 63);
    if (n < head + 64) {
        cp_avx2(d, s, n);
        return;
    }
    cp_avx2(d, s, head);
    size_t i = head;
    for (; i + 64 <= n; i += 64) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i c = _mm256_loadu_si256((const __m256i *)(s + i + 32));
        if ((crowded >> (((uintptr_t)(d + i) >> 6) & 63)) & 1) {
            _mm256_stream_si256((__m256i *)(d + i), a);
            _mm256_stream_si256((__m256i *)(d + i + 32), c);
        } else {
            _mm256_store_si256((__m256i *)(d + i), a);
            _mm256_store_si256((__m256i *)(d + i + 32), c);
        }
    }
    cp_avx2(d + i, s + i, n - i);
}

/* The packs of split_nt, of split_inv (the other packed lines streamed: those outside the crowded
 * sets) and of split_odd (every other packed line streamed: the odd lines of a page, half of every
 * group of sets, whatever the shape's lines): whether the sets picked or the share streamed is
 * what counts. The two others' unpacks are split_nt's. */
#define DEFINE_SPLIT_MASK(NAME, MASK)                                                         \
    TGT_AVX2 static int op_##NAME##_pack(void *arg)                                          \
    {                                                                                       \
        const bufs_t *b = arg;                                                              \
        const geom_t *g = b->g;                                                             \
        const char *typed = (const char *)b->src;                                           \
        char *p = (char *)b->out;                                                           \
        size_t len = g->len0;                                                               \
        for (size_t i = 0; i < g->nblocks; i++, p += len, len += g->inc)                    \
            cp_split_nt(p, typed + i * g->stride, len, (MASK));                             \
        _mm_sfence();                                                                       \
        return 0;                                                                           \
    }
DEFINE_SPLIT_MASK(split_nt, b->crowded)
DEFINE_SPLIT_MASK(split_inv, ~b->crowded)
DEFINE_SPLIT_MASK(split_odd, 0xaaaaaaaaaaaaaaaaull)

TGT_AVX2 static int op_split_nt_unpack(void *arg)
{
    const bufs_t *b = arg;
    const geom_t *g = b->g;
    char *typed = (char *)b->dst;
    const char *p = (const char *)b->out;
    size_t len = g->len0;
    for (size_t i = 0; i < g->nblocks; i++, p += len, len += g->inc) {
        if (i & 1)
            cp_avx2_nt(typed + i * g->stride, p, len);
        else
            cp_avx2(typed + i * g->stride, p, len);
    }
    _mm_sfence();
    return 0;
}
#endif

/* The ceiling: one memcpy of the packed byte count, in the operation's direction. */
static int op_memcpy_pack(void *arg)
{
    const bufs_t *b = arg;
    memcpy(b->out, b->src, b->g->packed);
    return 0;
}

static int op_memcpy_unpack(void *arg)
{
    const bufs_t *b = arg;
    memcpy(b->dst, b->out, b->g->packed);
    return 0;
}

static int op_gcomm_pack(void *arg)
{
    const bufs_t *b = arg;
    size_t pos = 0;
    return gcomm_pack(b->src, 1, b->type, b->out, b->g->packed, &pos) != GCOMM_SUCCESS ||
           pos != b->g->packed;
}

static int op_gcomm_unpack(void *arg)
{
    const bufs_t *b = arg;
    size_t pos = 0;
    return gcomm_unpack(b->out, b->g->packed, &pos, b->dst, 1, b->type) != GCOMM_SUCCESS ||
           pos != b->g->packed;
}

typedef struct {
    const char *name;
    int (*pack)(void *);
    int (*unpack)(void *);
    const char *needs; /* CPU feature for __builtin_cpu_supports, or NULL */
    int bound;         /* a bound (half of a copy): no output to check */
} variant_t;

/* memcpy first: every percentage is against it. */
static const variant_t variants[] = {
    {"memcpy", op_memcpy_pack, op_memcpy_unpack, NULL, 0},
    {"gcomm", op_gcomm_pack, op_gcomm_unpack, NULL, 0},
    {"blk_memcpy", op_blk_memcpy_pack, op_blk_memcpy_unpack, NULL, 0},
#if CEIL_X86
    {"blk_movsb", op_blk_movsb_pack, op_blk_movsb_unpack, NULL, 0},
    {"blk_avx2", op_blk_avx2_pack, op_blk_avx2_unpack, "avx2", 0},
    {"blk_avx2_nt", op_blk_avx2_nt_pack, op_blk_avx2_nt_unpack, "avx2", 0},
    {"blk_avx512", op_blk_avx512_pack, op_blk_avx512_unpack, "avx512f", 0},
    {"blk_avx512_nt", op_blk_avx512_nt_pack, op_blk_avx512_nt_unpack, "avx512f", 0},
    {"blk_avx2_pf", op_blk_avx2_pf_pack, op_blk_avx2_pf_unpack, "avx2", 0},
    {"blk_avx2_nt_pf", op_blk_avx2_nt_pf_pack, op_blk_avx2_nt_pf_unpack, "avx2", 0},
    {"blk_avx512_nt_pf", op_blk_avx512_nt_pf_pack, op_blk_avx512_nt_pf_unpack, "avx512f", 0},
    {"blk_avx2_pfn", op_blk_avx2_pfn_pack, op_blk_avx2_pfn_unpack, "avx2", 0},
    {"blk_avx2_nt_pfn", op_blk_avx2_nt_pfn_pack, op_blk_avx2_nt_pfn_unpack, "avx2", 0},
    {"blk_avx512_nt_pfn", op_blk_avx512_nt_pfn_pack, op_blk_avx512_nt_pfn_unpack, "avx512f", 0},
    {"blk_avx2_nt_desc", op_blk_avx2_nt_desc_pack, op_blk_avx2_nt_desc_unpack, "avx2", 0},
    {"blk_avx2_nt_descpf", op_blk_avx2_nt_descpf_pack, op_blk_avx2_nt_descpf_unpack, "avx2", 0},
    {"blk_avx2_pfl", op_blk_avx2_pfl_pack, op_blk_avx2_pfl_unpack, "avx2", 0},
    {"rd_only", op_rd_only_pack, op_rd_only_unpack, "avx2", 1},
    {"rd_only_desc", op_rd_only_desc_pack, op_rd_only_desc_unpack, "avx2", 1},
    {"wr_only", op_wr_only_pack, op_wr_only_unpack, "avx2", 1},
    {"gapless", op_gapless_pack, op_gapless_unpack, "avx2", 1},
    {"paired", op_paired_pack, op_paired_unpack, "avx2", 1},
    {"blk_avx2_walk", op_blk_avx2_walk_pack, op_blk_avx2_walk_unpack, "avx2", 0},
    {"blk_aln", op_blk_aln_pack, op_blk_aln_unpack, "avx512f", 0},
    {"blk_aln_walk", op_blk_aln_walk_pack, op_blk_aln_walk_unpack, "avx512f", 0},
    {"blk_avx2_desc", op_blk_avx2_desc_pack, op_blk_avx2_desc_unpack, "avx2", 0},
    {"blk_avx2_dir", op_blk_avx2_dir_pack, op_blk_avx2_dir_unpack, "avx2", 0},
    {"blk_avx2_descpfl", op_blk_avx2_descpfl_pack, op_blk_avx2_descpfl_unpack, "avx2", 0},
    {"tbl_walk", op_tbl_walk_pack, op_tbl_walk_unpack, "avx2", 0},
    {"tbl_walk_pf", op_tbl_walk_pf_pack, op_tbl_walk_pf_unpack, "avx2", 0},
    {"paired_pfl", op_paired_pfl_pack, op_paired_pfl_unpack, "avx2", 1},
    {"paired_walk", op_paired_walk_pack, op_paired_walk_unpack, "avx2", 1},
    {"ilv8_nt", op_ilv8_nt_pack, op_ilv8_nt_unpack, "avx2", 0},
    {"rd_ilv8", op_rd_ilv8_pack, op_rd_ilv8_unpack, "avx2", 1},
    {"ilv8_nt_desc", op_ilv8_nt_desc_pack, op_ilv8_nt_desc_unpack, "avx2", 0},
    {"rd_ilv8_desc", op_rd_ilv8_desc_pack, op_rd_ilv8_desc_unpack, "avx2", 1},
    {"ilv2", op_ilv2_pack, op_ilv2_unpack, "avx2", 0},
    {"ilv4", op_ilv4_pack, op_ilv4_unpack, "avx2", 0},
    {"split_nt", op_split_nt_pack, op_split_nt_unpack, "avx2", 0},
    {"split_inv", op_split_inv_pack, op_split_nt_unpack, "avx2", 0},
    {"split_odd", op_split_odd_pack, op_split_nt_unpack, "avx2", 0},
#endif
};
enum { NVARIANTS = sizeof variants / sizeof variants[0] };

static int variant_usable(const variant_t *v)
{
#if CEIL_X86
    if (v->needs && strcmp(v->needs, "avx2") == 0)
        return __builtin_cpu_supports("avx2");
    if (v->needs && strcmp(v->needs, "avx512f") == 0)
        return __builtin_cpu_supports("avx512f");
#endif
    return v->needs == NULL;
}

/* ---- checks --------------------------------------------------------------------------------- */

/* The reference packed stream, by the plainest loop there is (byte by byte). */
static void reference_pack(const geom_t *g, const unsigned char *src, unsigned char *ref)
{
    size_t len = g->len0, pos = 0;
    for (size_t i = 0; i < g->nblocks; i++, len += g->inc)
        for (size_t k = 0; k < len; k++)
            ref[pos++] = src[i * g->stride + k];
}

/* Pack: out holds the reference stream and the guard after it is untouched. */
static int check_pack(const char *what, const bufs_t *b)
{
    size_t n = b->g->packed;
    if (memcmp(b->out, b->ref, n) != 0) {
        size_t i = 0;
        while (b->out[i] == b->ref[i])
            i++;
        fprintf(stderr, "FAIL %s: packed byte %zu differs from the reference\n", what, i);
        return 1;
    }
    if (bench_find_not(b->out + n, GUARD, SENTINEL) != GUARD) {
        fprintf(stderr, "FAIL %s: wrote past the packed size\n", what);
        return 1;
    }
    return 0;
}

/* Unpack into a sentinel-filled dst: every block holds its packed bytes, every byte between the
 * blocks and after the last one (up to the guard's end) still holds the sentinel. */
static int check_unpack(const char *what, const bufs_t *b)
{
    const geom_t *g = b->g;
    size_t len = g->len0, pos = 0, at = 0; /* at: first typed byte not yet checked */
    for (size_t i = 0; i < g->nblocks; i++, len += g->inc) {
        size_t off = i * g->stride;
        if (bench_find_not(b->dst + at, off - at, SENTINEL) != off - at) {
            fprintf(stderr, "FAIL %s: wrote a byte before block %zu, outside the type\n", what, i);
            return 1;
        }
        if (memcmp(b->dst + off, b->ref + pos, len) != 0) {
            fprintf(stderr, "FAIL %s: block %zu differs from the packed stream\n", what, i);
            return 1;
        }
        pos += len;
        at = off + len;
    }
    size_t tail = g->span + GUARD - at;
    if (bench_find_not(b->dst + at, tail, SENTINEL) != tail) {
        fprintf(stderr, "FAIL %s: wrote past the last block\n", what);
        return 1;
    }
    return 0;
}

/* Runs op once into sentinel-filled memory and checks what it wrote; 0 when correct. */
static int check_op(const char *shape, int unpack, const bench_op_t *op, const bufs_t *b)
{
    char what[96];
    snprintf(what, sizeof what, "%s %zu %s %s", shape, b->g->packed, unpack ? "unpack" : "pack",
             op->name);
    if (unpack) {
        memset(b->dst, SENTINEL, b->g->span + GUARD);
        return op->call((void *)b) != 0 || check_unpack(what, b) != 0;
    }
    memset(b->out, SENTINEL, b->g->packed + GUARD);
    return op->call((void *)b) != 0 || check_pack(what, b) != 0;
}

/* ---- driver --------------------------------------------------------------------------------- */

typedef struct {
    const char *shape;
    size_t bytes;
    int unpack;
    double s[NVARIANTS];   /* median seconds per call; 0: not run */
    double pct[NVARIANTS]; /* % of memcpy: median of the per-round paired ratios */
    double p25[NVARIANTS], p75[NVARIANTS]; /* their quartiles */
} row_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_pack_cpu_ceiling [--csv FILE] [--min-bytes N] [--max-bytes N]\n"
            "                              [--shapes a,b] [--repeat R] [--min-time S]\n"
            "                              [--pf-ahead BYTES] [--pf-hint H] [--loops a,b]\n"
            "                              [--warm-calls N] [--huge-pages] [--quick]\n"
            "  --csv FILE       CSV output, one line per (run, shape, size, op, loop)\n"
            "  --min-bytes N    smallest packed size (default 1K); sizes go up by 4x\n"
            "  --max-bytes N    largest packed size (default 256M; K/M/G suffixes)\n"
            "  --shapes LIST    subset of: vector_bl256 lower_tri vector_bl16\n"
            "  --repeat R       runs of the whole sweep (default 1); R > 1 adds a summary\n"
            "                   table: median and range over the runs of each %% of memcpy\n"
            "  --min-time S     timed seconds per loop and measurement (default 0.2)\n"
            "  --pf-ahead B     prefetch distance of the _pf loops in packed bytes (default 4096)\n"
            "  --pf-hint H      locality of their reading prefetches: nta, t2, t1, t0 (default t0)\n"
            "  --pf-next B      bytes of the next block the _pfn loops prefetch (default 2048)\n"
            "  --ilv-ahead G    the ilv8 loops prefetch the group G groups ahead (default 1)\n"
            "  --loops LIST     loops to time besides memcpy (default all)\n"
            "  --warm-calls N   untimed calls before every sample, at least (as far as they take\n"
            "                   <= 50 ms; default 10)\n"
            "  --huge-pages     every buffer on transparent huge pages (madvise), memcpy's too:\n"
            "                   what the loops lose to 4 KiB pages\n"
            "  --pad B          blocks (vector) or rows (lower_tri) B more bytes apart than the\n"
            "                   shape has them, B a multiple of 8 (default 0): off the 4 KiB\n"
            "                   multiples, their lines spread over every set of a cache\n"
            "  --quick          smoke run: up to 1M, 0.02 s per measurement\n"
            "loops:");
    for (int v = 0; v < NVARIANTS; v++)
        fprintf(f, " %s", variants[v].name);
    fputc('\n', f);
}

static void print_header(FILE *tab)
{
    fprintf(tab, "%-12s %10s %-6s %8s", "shape", "bytes", "op", "memcpy");
    for (int v = 1; v < NVARIANTS; v++)
        fprintf(tab, " %*s", (int)(strlen(variants[v].name) > 6 ? strlen(variants[v].name) : 6),
                variants[v].name);
    fputc('\n', tab);
}

/* memcpy in GB/s, every other loop in % of memcpy (higher is faster). */
static void print_row(FILE *tab, const row_t *r)
{
    fprintf(tab, "%-12s %10zu %-6s %8.2f", r->shape, r->bytes, r->unpack ? "unpack" : "pack",
            bench_gbps(r->bytes, r->s[0]));
    for (int v = 1; v < NVARIANTS; v++) {
        int w = (int)(strlen(variants[v].name) > 6 ? strlen(variants[v].name) : 6);
        if (r->s[v] > 0.0)
            fprintf(tab, " %*.1f", w, r->pct[v]);
        else
            fprintf(tab, " %*s", w, "n/a");
    }
    fputc('\n', tab);
    fflush(tab);
}

/* Builds, times and checks one (shape, size) in both directions; appends up to two rows.
 * Returns the number of failed checks, -1 on error, -2 when the shape has no such size. */
typedef struct {
    bench_opts_t opts;
    size_t pf_ahead;
    int pf_hint;
    size_t pf_next;
    size_t ilv_ahead;
    const char *loops; /* names of the loops to time besides memcpy; NULL: all */
    size_t pad;        /* bytes added to the stride of the blocks (--pad) */
} settings_t;

/* The groups of 64-byte lines, by place in a 4 KiB page, that hold more than their share of the
 * lines the blocks of g at typed touch (bufs_t.crowded). */
static uint64_t crowded_lines(const geom_t *g, const unsigned char *typed)
{
    size_t count[64] = {0}, total = 0, len = g->len0;
    for (size_t i = 0; i < g->nblocks; i++, len += g->inc) {
        uintptr_t a = (uintptr_t)typed + i * g->stride, e = a + len;
        for (uintptr_t l = a & ~(uintptr_t)63; l < e; l += 64, total++)
            count[(l >> 6) & 63]++;
    }
    uint64_t mask = 0;
    for (int k = 0; k < 64; k++)
        if (count[k] * 64 > total)
            mask |= (uint64_t)1 << k;
    return mask;
}

static int run_one(const char *name, size_t target, const settings_t *set, int run, FILE *csv,
                   FILE *tab, row_t *rows, int *nrows)
{
    geom_t g;
    if (shape_geom(name, target, set->pad, &g) != 0)
        return -2;
    bufs_t b = {.g = &g, .type = GCOMM_DATATYPE_NULL, .pf_ahead = set->pf_ahead,
                .pf_hint = set->pf_hint, .pf_next = set->pf_next, .ilv_ahead = set->ilv_ahead};
    int rc = 0, bad = 0;
    if (shape_type(&g, &b.type) != GCOMM_SUCCESS || gcomm_type_commit(&b.type) != GCOMM_SUCCESS) {
        fprintf(stderr, "%s %zu: gcomm type: %s\n", name, g.packed, gcomm_last_error_detail());
        rc = -1;
        goto out;
    }
    b.src = bench_alloc(g.span + GUARD);
    b.dst = bench_alloc(g.span + GUARD);
    b.out = bench_alloc(g.packed + GUARD);
    b.ref = bench_alloc(g.packed + GUARD);
    if (!b.src || !b.dst || !b.out || !b.ref) {
        fprintf(stderr, "%s %zu: out of memory (span %zu bytes)\n", name, g.packed, g.span);
        rc = -1;
        goto out;
    }
    bench_fill_random(b.src, g.span + GUARD, 0x1234567ull * (uint64_t)(target + 1));
    memset(b.dst, SENTINEL, g.span + GUARD);
    memset(b.out, SENTINEL, g.packed + GUARD);
    reference_pack(&g, b.src, b.ref);
    b.crowded = crowded_lines(&g, b.src);
    if (bench_huge_pages())
        fprintf(tab, "# %s %zu: the process holds %zu MiB on huge pages\n", name, g.packed,
                bench_huge_page_bytes() >> 20);

    for (int dir = 0; dir < 2; dir++) {
        bench_op_t ops[NVARIANTS];
        int idx[NVARIANTS], nops = 0;
        for (int v = 0; v < NVARIANTS; v++) {
            if (!variant_usable(&variants[v]) ||
                (v != 0 && !bench_list_has(set->loops, variants[v].name)))
                continue;
            ops[nops] = (bench_op_t){variants[v].name, dir ? variants[v].unpack : variants[v].pack,
                                     NULL, &b};
            idx[nops++] = v;
        }
        if (dir) /* unpack reads the reference stream */
            memcpy(b.out, b.ref, g.packed);
        bench_result_t res[NVARIANTS];
        if (bench_measure(ops, nops, &set->opts, res) != 0) {
            fprintf(stderr, "%s %zu: %s failed: %s\n", name, g.packed, dir ? "unpack" : "pack",
                    gcomm_last_error_detail());
            rc = -1;
            goto out;
        }
        row_t *r = &rows[(*nrows)++];
        *r = (row_t){name, g.packed, dir, {0}, {0}, {0}, {0}};
        for (int k = 0; k < nops; k++) {
            r->s[idx[k]] = res[k].median_s;
            r->pct[idx[k]] = 100.0 * res[k].ratio_median; /* ops[0] is memcpy */
            r->p25[idx[k]] = 100.0 * res[k].ratio_p25;
            r->p75[idx[k]] = 100.0 * res[k].ratio_p75;
            /* each loop once more on fresh sentinels, then its output is checked (not the
             * ceiling: it copies contiguous bytes, not the type) */
            if (idx[k] != 0 && !variants[idx[k]].bound && check_op(name, dir, &ops[k], &b) != 0)
                bad++;
            if (csv)
                fprintf(csv, "%d,%s,%zu,%s,%s,%.6e,%.6e,%.6e,%ld,%.4f,%.4f,%.4f,%.4f,%ld\n", run,
                        name, g.packed, dir ? "unpack" : "pack", ops[k].name,
                        res[k].median_s, res[k].min_s, res[k].max_s, res[k].samples,
                        bench_gbps(g.packed, res[k].median_s), res[k].ratio_median,
                        res[k].ratio_p25, res[k].ratio_p75, res[k].ratio_pairs);
        }
        if (csv)
            fflush(csv);
        print_row(tab, r);
    }
    rc = bad;
out:
    free(b.src);
    free(b.dst);
    free(b.out);
    free(b.ref);
    if (b.type != GCOMM_DATATYPE_NULL)
        gcomm_type_free(&b.type);
    return rc;
}

/* R > 1 runs: per (shape, size, op) row, memcpy's median GB/s and each loop's median and range
 * (min-max) of % of memcpy over the runs. rows holds nruns sweeps of nper rows each. */
static void print_summary(FILE *tab, const row_t *rows, int nper, int nruns)
{
    fprintf(tab, "\nsummary over %d runs: memcpy GB/s and %% of memcpy, median [min-max]\n", nruns);
    print_header(tab);
    double *v = malloc((size_t)nruns * sizeof *v);
    if (!v)
        return;
    for (int k = 0; k < nper; k++) {
        const row_t *r = &rows[k];
        for (int x = 0; x < nruns; x++)
            v[x] = bench_gbps(r->bytes, rows[x * nper + k].s[0]);
        fprintf(tab, "%-12s %10zu %-6s %8.2f", r->shape, r->bytes, r->unpack ? "unpack" : "pack",
                bench_median(v, (size_t)nruns));
        for (int c = 1; c < NVARIANTS; c++) {
            int w = (int)(strlen(variants[c].name) > 6 ? strlen(variants[c].name) : 6);
            if (r->s[c] <= 0.0) {
                fprintf(tab, " %*s", w, "n/a");
                continue;
            }
            for (int x = 0; x < nruns; x++)
                v[x] = rows[x * nper + k].pct[c];
            double med = bench_median(v, (size_t)nruns); /* sorts: v[0] min, v[n-1] max */
            char cell[48];
            snprintf(cell, sizeof cell, "%.0f[%.0f-%.0f]", med, v[0], v[nruns - 1]);
            fprintf(tab, " %*s", w, cell);
        }
        fputc('\n', tab);
    }
    free(v);
}

int main(int argc, char **argv)
{
    const char *csv_path = NULL, *shape_list = NULL;
    size_t max_bytes = (size_t)256 << 20, min_bytes = 1024;
    int quick = 0, repeat = 1, warm_calls = 10;
    double min_time = -1.0;
    settings_t set = {
        .pf_ahead = 4096, .pf_hint = 3, .pf_next = 2048, .ilv_ahead = 1, .loops = NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            quick = 1;
        } else if (strcmp(a, "--csv") == 0 && v) {
            csv_path = v;
            i++;
        } else if (strcmp(a, "--max-bytes") == 0 && v && bench_parse_size(v, &max_bytes) == 0) {
            i++;
        } else if (strcmp(a, "--min-bytes") == 0 && v && bench_parse_size(v, &min_bytes) == 0 &&
                   min_bytes > 0) {
            i++;
        } else if (strcmp(a, "--pf-ahead") == 0 && v && bench_parse_size(v, &set.pf_ahead) == 0) {
            i++;
        } else if (strcmp(a, "--pf-hint") == 0 && v &&
                   (strcmp(v, "nta") == 0 || strcmp(v, "t2") == 0 || strcmp(v, "t1") == 0 ||
                    strcmp(v, "t0") == 0)) {
            set.pf_hint = v[0] == 'n' ? 0 : 3 - (v[1] - '0');
            i++;
        } else if (strcmp(a, "--pf-next") == 0 && v && bench_parse_size(v, &set.pf_next) == 0) {
            i++;
        } else if (strcmp(a, "--ilv-ahead") == 0 && v && atoi(v) >= 1) {
            set.ilv_ahead = (size_t)atoi(v);
            i++;
        } else if (strcmp(a, "--loops") == 0 && v) {
            set.loops = v;
            i++;
        } else if (strcmp(a, "--warm-calls") == 0 && v && atoi(v) >= 0) {
            warm_calls = atoi(v);
            i++;
        } else if (strcmp(a, "--min-time") == 0 && v) {
            min_time = atof(v);
            i++;
        } else if (strcmp(a, "--huge-pages") == 0) {
            bench_set_huge_pages(1);
        } else if (strcmp(a, "--pad") == 0 && v && bench_parse_size(v, &set.pad) == 0 &&
                   set.pad % 8 == 0) {
            i++;
        } else if (strcmp(a, "--repeat") == 0 && v && atoi(v) >= 1) {
            repeat = atoi(v);
            i++;
        } else if (strcmp(a, "--shapes") == 0 && v) {
            shape_list = v;
            i++;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "bench_pack_cpu_ceiling: bad argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (quick && max_bytes > ((size_t)1 << 20))
        max_bytes = (size_t)1 << 20;
    if (set.loops) {
        for (const char *p = set.loops; *p;) {
            const char *e = strchr(p, ',');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            int found = 0;
            for (int v = 1; v < NVARIANTS; v++)
                found |= strlen(variants[v].name) == l && strncmp(p, variants[v].name, l) == 0;
            if (!found) {
                fprintf(stderr, "bench_pack_cpu_ceiling: unknown loop '%.*s'\n", (int)l, p);
                usage(stderr);
                return 2;
            }
            p += l + (e ? 1 : 0);
        }
    }
    bench_opts_t opts = BENCH_OPTS_DEFAULT;
    opts.min_time_s = min_time >= 0.0 ? min_time : quick ? 0.02 : 0.2;
    opts.warm_calls = quick ? 1 : warm_calls;
    opts.warm_max_s = 0.05;
    opts.ratio_ref = 0; /* memcpy */
    if (quick)
        opts.max_time_s = 2.0;
    set.opts = opts;

    FILE *tab = stdout, *csv = NULL;
    if (csv_path) {
        static const char *const cols[] = {"run",   "shape", "bytes",   "op",
                                           "loop",  "median_s", "min_s", "max_s",
                                           "samples", "GBps", "frac_of_memcpy",
                                           "frac_p25", "frac_p75", "pairs"};
        csv = bench_csv_open(csv_path, cols, (int)(sizeof cols / sizeof cols[0]));
        if (!csv) {
            perror(csv_path);
            return 2;
        }
    }
    bench_print_environment(tab, argc, argv);
    fprintf(tab, "# median of >= %d samples and >= %.2f s per loop, >= %d untimed calls before each;"
                 " memcpy in GB/s (packed bytes), every other column in %% of memcpy (median of the"
                 " per-round ratios); prefetch %zu bytes ahead, hint %s; %s pages; blocks %zu bytes"
                 " further apart than the shape's\n",
            opts.min_runs, opts.min_time_s, opts.warm_calls, set.pf_ahead,
            (const char *[]){"nta", "t2", "t1", "t0"}[set.pf_hint],
            bench_huge_pages() ? "2 MiB (transparent huge)" : "4 KiB", set.pad);

    int nsizes = 0;
    for (size_t t = min_bytes; t <= max_bytes; t *= 4)
        nsizes++;
    int nper_max = 2 * NSHAPES * nsizes;
    row_t *rows = calloc((size_t)(repeat * nper_max + 1), sizeof *rows);
    int nrows = 0, failures = 0, errors = 0, nper = 0;
    for (int run = 0; run < repeat && rows; run++) {
        if (repeat > 1)
            fprintf(tab, "\nrun %d of %d\n", run + 1, repeat);
        print_header(tab);
        int before = nrows;
        for (int s = 0; s < NSHAPES; s++) {
            if (!bench_list_has(shape_list, shapes[s]))
                continue;
            for (size_t t = min_bytes; t <= max_bytes; t *= 4) {
                int rc = run_one(shapes[s], t, &set, run, csv, tab, rows, &nrows);
                if (rc == -1)
                    errors++;
                else if (rc > 0)
                    failures += rc;
            }
        }
        if (run == 0)
            nper = nrows - before;
        else if (nrows - before != nper) /* a size failed in one run only: no summary */
            errors++;
    }
    if (!rows)
        errors++;
    else if (repeat > 1 && errors == 0 && nper > 0)
        print_summary(tab, rows, nper, repeat);
    fprintf(tab, "%d rows, %d check failures, %d errors\n", nrows, failures, errors);
    free(rows);
    if (csv)
        bench_csv_close(csv);
    return failures || errors ? 1 : 0;
}
