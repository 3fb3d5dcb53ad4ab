/* The CPU engine's choice of loops for one operation (select_copies) and the operation's context
 * (ctx_t): which copy a block of a given size gets, from which size an operation streams, the tile
 * height of a transpose, and which prefetching loops run, by CPU family and operation size, each
 * rule with the measurement that set it (docs/BENCHMARKS.md has the runs).
 *
 * Private to pack_host.c, which includes it once, after pack_host_loops.h. */
#ifndef GCOMM_DATATYPE_PACK_HOST_SELECT_H
#define GCOMM_DATATYPE_PACK_HOST_SELECT_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "datatype/layout.h"
#include "datatype/pack_host_loops.h"

/* Operations of at least stream_min() bytes write large blocks with streaming stores (x86 with
 * AVX2): past the last-level cache the output will not be read from cache anyway. */
#define GCOMMI_STREAM_MIN_FLOOR ((size_t)8 << 20)

enum { GCOMMI_COMPRESS_NARROW = 1, GCOMMI_COMPRESS_WIDE = 2 }; /* ctx_t.compress */

typedef struct {
    const gcommi_dl_t *nodes;
    const int64_t *aux;
    char *packed; /* next byte of the packed stream */
    int pack;     /* 1: typed -> packed, 0: packed -> typed */
    copy_fn_t mid; /* copy of blocks of GCOMMI_MID_MIN bytes or more that do not stream */
    copy_fn_t big; /* streaming copy of blocks of at least stream_min_block() bytes */
    int streams;   /* big uses streaming stores: fence before returning */
    int fence;     /* a loop used streaming stores where streams is 0: fence before returning */
    int tile;      /* rows of a transposing tile (transpose_tiles) */
    int tile_nt;   /* transpose_tiles unpacking 4- and 8-byte elements: streaming stores */
    int tile8;     /* transpose_tiles of 8-byte elements: 8 x 8 blocks in registers (transpose8) */
    int tile32_nt; /* transpose8 unpacking: strips of 32 columns in whole lines, streamed */
    int tile_aliased; /* tile rows when the packed streams are 4 KiB multiples apart; 0: tile */
    int tile_fixed_ok; /* transpose_tiles may take the fixed loops of whole tiles (tile_fixed) */
    int64_t tile_pf;  /* transpose_tiles: prefetch the tile's row this many rows ahead; 0: none */
    int64_t rows_vec_max; /* strided rows of 96 bytes to this, multiples of 32 (others with
                             rows_odd): rows_vec(); 0: never */
    int rows_zmm;         /* a pack: rows of a multiple of 64 bytes up to this go to rows_zmm()
                             instead of rows_vec(); 0: none */
    int gather_ilv;       /* a streaming pack: blocks GCOMMI_GATHER_WAYS at a time (whole
                             lines from GCOMMI_GATHER_LINES_MIN bytes: gather_stream_ilv; others
                             from stream_min_block(): gather_group) */
    int small_over;       /* elements of 3 to 64 bytes: pack_small_over(), unpack_small_exact() */
    int compress;         /* elements of fewer than 64 bytes at most 64 apart: pack_compress(),
                             unpack_expand(), GCOMMI_COMPRESS_NARROW or _WIDE (compress_fits) */
    int compress_exact;   /* pack_compress stores just each chunk's packed bytes (masked) */
    int pairs;            /* 4- and 8-byte elements every other one: pack_pairs(), unpack_pairs() */
    int rows_odd;         /* rows_vec also takes rows of 129 to rows_vec_max bytes that are
                             not multiples of 32 (its last move overlaps the one before) */
    int unroll_unpack;    /* unpacks of strided 4- to 32-byte runs unrolled (strided_SIZE) */
    int adst_idx;         /* indexed nodes' contiguous blocks by indexed_adst (Intel, with
                             copy_vec_adst as mid) */
    int pf_line;          /* indexed nodes' blocks by indexed_vec_pf, the first line of the
                             block GCOMMI_PF_LINE_AHEAD ahead prefetched */
    int pf_strided;       /* the same for a vector's blocks by copy_vec (the first line, or for
                             the vectors strided_vec_walk takes all of the block from its end
                             down), and rows by rows_vec the first line of the row
                             GCOMMI_ROWS_PF_AHEAD ahead: from GCOMMI_PF_STRIDED_MIN bytes */
    int64_t walk_nt_span; /* unpacks by strided_vec_walk whose blocks span at least this many
                             bytes write every other block with streaming stores; 0: never */
    int64_t split_l2;     /* a pack on Intel smaller than the L2 (its size here; 0: none):
                             vectors' blocks of GCOMMI_SPLIT_BLOCK_MIN bytes and more and indexed
                             nodes' rows that crowd the sets of a run of lines of a page stream
                             only the packed lines of those sets (copy_split, crowded_mask) */
    int64_t split_op;     /* the bytes of the operation select_copies was given */
    int64_t split_key[4]; /* the blocks the split was judged for (split_known); [3] < 0: none */
    uint64_t split_mask;  /* their crowded lines (crowded_mask) */
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
/* Zen 4: transpose_tiles prefetches the tile's row this many rows ahead (c->tile_pf) in packs
 * below GCOMMI_TILE_WIDE_MIN and in unpacks that stream up to half the L3 (select_copies). In
 * bench_pack_ab against no prefetch (machine D, 2026-11-29), packs at 1.25-21 MiB: 24 rows ahead
 * 1.01-1.58x, 32 1.02-1.67x, 64 1.03-1.75x, 128 0.99-1.43x. */
#define GCOMMI_TILE_PF_AHEAD 64
/* Zen 4: operations from this size (twice its 1 MiB L2) take rows up to GCOMMI_ROWS_VEC_MAX_OTHER
 * through rows_vec; measured to gain at 2 and 4 MiB and to lose at 1 MiB (select_copies). */
#define GCOMMI_ROWS_WIDE_MIN ((size_t)2 << 20)
/* Unpacks of strided 4- to 32-byte runs below this size have their loop unrolled four times by
 * GCC, as packs always do (strided_SIZE in pack_host.c). bench_pack_ab on machine D (2026-11-29),
 * unrolled against rolled: 4- and 8-byte runs two apart 1.23-1.53x at 256 KiB-1 MiB, 0.94-1.42x
 * at 4 MiB, 0.95-0.98x at 16-64 MiB; three apart 0.98-1.38x at 1 MiB, 0.90-0.95x at 4 MiB. */
#define GCOMMI_UNROLL_UNPACK_MAX ((size_t)2 << 20)
/* Intel with AVX2: operations from GCOMMI_VEC_ADST_MIN to below GCOMMI_VEC_ADST_MAX bytes copy
 * blocks that do not stream with copy_vec_adst, others with rep movsb (figures at
 * copy_vec_adst): in the L1, rep movsb is faster (vector_bl256 at 16 KiB, 0.72-0.75x with
 * copy_vec_adst), and from 1 MiB, out of the L2, they tie. */
#define GCOMMI_VEC_ADST_MIN ((size_t)64 << 10)
#define GCOMMI_VEC_ADST_MAX ((size_t)1 << 20)
/* Intel: operations of at most this many bytes copy blocks of GCOMMI_MID_MIN bytes and more with
 * libc's memcpy, not rep movsb, whose start-up a block of 1-2 KiB pays while the data sits in the
 * L1. bench_pack_ab on Emerald Rapids (machine B, 2026-11-30), memcpy against rep movsb in
 * operations below 32 KiB: 3-8 KiB 1.19-1.74x (vector_bl256, hvectors of 1, 1.5 and 2 KiB rows
 * twice or 2.7 times their length apart; 4 KiB rows, lower_tri and subarray4d even), but 16 KiB
 * 0.68-0.95x (1.5 KiB rows even), where a shape of half density (48 KiB with the packed bytes)
 * fills the 48 KiB L1 and rep movsb moves lines from the L2 faster, and 32 KiB even. copy_vec
 * instead of memcpy: 1.04-1.55x at 3-8 KiB. */
#define GCOMMI_L1_OPS_MAX ((size_t)8 << 10)
/* Zen 4: operations of at least this many bytes (its L1d's size) prefetch ahead in vectors' blocks
 * and rows (c->pf_strided: strided_vec_pf, strided_vec_walk, rows_vec's row ahead); smaller ones,
 * whose lines the warm L1 holds, copy without. bench_pack_ab on machine D (2026-11-30, two to four
 * rounds), without against with below 32 KiB: vector_bl16 (128-byte rows) 2-8 KiB 1.03-1.14x
 * (1.06-1.12x at 8 KiB in four rounds; one unpack at 2 KiB 0.90-0.96x), vector_bl256 4-16 KiB
 * 1.01-1.06x, subarray4d even; 32-256 KiB without: 0.97-1.04x, even, so the prefetch stays there
 * (it gained vector_bl16 at 256 KiB-4 MiB: rows_vec). Session 41 had measured the rows' prefetch
 * alone below 32 KiB at 0.97-1.03x. Indexed nodes keep their loop (indexed_vec_pf), which without
 * its prefetch falls back to a memcpy per row: lower_tri 1-16 KiB 0.57-0.88x. */
#define GCOMMI_PF_STRIDED_MIN ((size_t)32 << 10)

#if defined(__x86_64__)
#include <cpuid.h>

/* The size of the level-2 or level-3 cache that CPU 0 uses, in bytes, as the kernel reports it
 * (sysfs; for level 2 its data or unified cache); else glibc's sysconf; 0 when neither knows.
 * sysfs first: on a Zen 5 VM (2026-11-26) sysfs and lscpu read the 32 MiB L3 of the core's CCX
 * while sysconf read 384 MiB (every CCX of the package), and the threshold below taken from 384
 * MiB (24 MiB) left a 16 MiB pack unstreamed at 63% of memcpy where streaming stores reach 110%
 * (bench_pack_cpu_ceiling). Read once per process, by cpu_profile_init. */
static long cache_bytes_read(int want)
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
        if (level != want) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        f = fopen(path, "r");
        if (f && fgets(buf, sizeof buf, f) && strncmp(buf, "Instruction", 11) == 0) {
            fclose(f);
            continue;
        }
        if (f) fclose(f);
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
    long bytes = 0;
#if defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
    bytes = sysconf(want == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
#endif
    return bytes > 0 ? bytes : 0;
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

/* What select_copies asks of the CPU, as one word of flags (cpu_flags_read; kept in the profile,
 * cpu_profile). */
enum {
    GCOMMI_CPU_KNOWN = 1,
    GCOMMI_CPU_AVX2 = 2,
    GCOMMI_CPU_AVX512 = 4,
    GCOMMI_CPU_AMD = 8,
    GCOMMI_CPU_ZEN4 = 16, /* AMD family 0x19 with AVX-512: Zen 3 has no AVX-512 */
    GCOMMI_CPU_VBMI2 = 32 /* AVX-512 VBMI and VBMI2 (byte permute, compress and expand) */
};

/* The flags of the CPU family GCOMM_PACK_CPU names instead of those found (`found`): so that one
 * machine tests the loops every family gets (ctest runs the datatype tests under each), and so
 * that loops can be compared. A family whose instructions this CPU lacks is refused. */
static int cpu_flags_chosen(int found)
{
    const char *want = gcommi_config()->pack_cpu;
    if (!want || !want[0] || strcmp(want, "auto") == 0) return found;
    /* The families with AVX-512 take its VBMI2 extension with it where this CPU has it. */
    const int avx2 = found & GCOMMI_CPU_AVX2,
              avx512_bits = found & (GCOMMI_CPU_AVX512 | GCOMMI_CPU_VBMI2);
    int v = 0;
    if (strcmp(want, "generic") == 0) v = GCOMMI_CPU_KNOWN;
    else if (strcmp(want, "intel") == 0 && avx2) v = GCOMMI_CPU_KNOWN | avx2 | avx512_bits;
    else if (strcmp(want, "amd") == 0 && avx2)
        v = GCOMMI_CPU_KNOWN | avx2 | avx512_bits | GCOMMI_CPU_AMD;
    else if (strcmp(want, "zen4") == 0 && avx2 && avx512_bits)
        v = GCOMMI_CPU_KNOWN | avx2 | avx512_bits | GCOMMI_CPU_AMD | GCOMMI_CPU_ZEN4;
    if (v) return v;
    GCOMM_LOG_WARN("datatype",
                   "GCOMM_PACK_CPU=%s is not auto, zen4, amd, intel or generic, or needs "
                   "instructions this CPU lacks (AVX2: %s, AVX-512: %s); using auto",
                   want, avx2 ? "yes" : "no", avx512_bits ? "yes" : "no");
    return found;
}

static int cpu_flags_read(void)
{
    int v = GCOMMI_CPU_KNOWN;
    if (__builtin_cpu_supports("avx2")) v |= GCOMMI_CPU_AVX2;
    if (__builtin_cpu_supports("avx512f")) v |= GCOMMI_CPU_AVX512;
    if ((v & GCOMMI_CPU_AVX512) && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vbmi2"))
        v |= GCOMMI_CPU_VBMI2;
    if (__builtin_cpu_is("amd")) v |= GCOMMI_CPU_AMD;
    if ((v & GCOMMI_CPU_AMD) && (v & GCOMMI_CPU_AVX512) && cpu_family() == 0x19)
        v |= GCOMMI_CPU_ZEN4;
    v = cpu_flags_chosen(v);
    GCOMM_LOG_INFO("datatype",
                   "CPU engine: %s loops (AVX2 %s, AVX-512 %s, VBMI2 %s; GCOMM_PACK_CPU=%s)",
                   (v & GCOMMI_CPU_ZEN4)  ? "zen4"
                   : (v & GCOMMI_CPU_AMD) ? "amd"
                   : (v & GCOMMI_CPU_AVX2) ? "intel"
                                           : "generic",
                   (v & GCOMMI_CPU_AVX2) ? "yes" : "no", (v & GCOMMI_CPU_AVX512) ? "yes" : "no",
                   (v & GCOMMI_CPU_VBMI2) ? "yes" : "no",
                   gcommi_config()->pack_cpu ? gcommi_config()->pack_cpu : "auto");
    return v;
}

/* The smallest operation that streams: GCOMM_PACK_STREAM_MIN when set; else, on Intel with AVX2,
 * half the core's L2 (an operation that big touches at least the L2's size in packed and typed
 * lines; GCOMMI_STREAM_MIN_INTEL when sysfs and sysconf do not tell), for packs and unpacks
 * alike; elsewhere 8 MiB for an unpack and max(8 MiB, level-3 cache / 16) for a pack.
 * bench_pack_cpu_ceiling measured where streaming starts to pay: from 16 MiB on an EPYC with a
 * 32 MiB L3 (8 MiB, the floor, is the rule there); on a Xeon VM whose L3 reads 480 MiB, streaming
 * cost a pack of vector_bl256 6 points of memcpy at 16 MiB, where the packed stream stays in that
 * cache, and gained 20-35 at 64 MiB, where even memcpy runs at DRAM speed (30 MiB, the rule
 * there). An unpack scatters into a span larger than the packed bytes, whose partly written lines
 * streaming saves reading: at 16 MiB on that Xeon it streamed to 91-93% of memcpy, and reached
 * 80-87% without. With the 64-byte streaming stores of later sessions the Xeons stream from past
 * their L2: there one core reads and writes the L3 at about the speed of memory (memcpy of 4 MiB
 * at 12 GB/s on the Emerald Rapids host of machine B, 2 MiB L2, an L3 that reads 300 MiB, against
 * 29 GB/s at 1 MiB), and streaming stores write faster. bench_pack_cpu there (2026-11-29), the rule
 * before (18.75 MiB for a pack) against streaming from 1 MiB, x MPI_Pack / % of memcpy at 4 and 16
 * MiB: vector_bl256 pack 1.00-1.03x / 83% -> 1.21-1.28x / 102-105%, unpack 0.99-1.37x / 85-112%
 * -> 1.31-1.34x / 113%; lower_tri pack 1.00x / 91-94% -> 1.16-1.17x / 107-109%, unpack 1.00-1.03x
 * -> 1.30x / 121-123%; vector_bl16 and subarray4d 0.96-1.19x -> 1.16-1.61x (and 1.71-2.96x ->
 * 1.58-2.05x for the unpacks of 16 MiB that streamed already); at 1 MiB (half that L2) 0.98-1.24x
 * -> 1.03-1.78x, where memcpy's 2 MiB stay in the L2 (lower_tri 48 / 55% -> 44 / 48% of memcpy,
 * the others 31-56% -> 42-60%); streaming from 4 MiB instead, 4-16 MiB 1.10-1.64x. Machine C (a
 * Xeon VM) had measured 103-104% of memcpy at 4-16 MiB with GCOMM_PACK_STREAM_MIN=1M. */
#define GCOMMI_STREAM_MIN_INTEL ((size_t)1 << 20)
static size_t stream_min(int pack, int cpu, long l2, long l3)
{
    size_t v = gcommi_config()->pack_stream_min;
    const char *why = "GCOMM_PACK_STREAM_MIN";
    if (v == 0 && (cpu & GCOMMI_CPU_AVX2) && !(cpu & GCOMMI_CPU_AMD)) {
        v = l2 > 0 ? (size_t)l2 / 2 : GCOMMI_STREAM_MIN_INTEL;
        why = l2 > 0 ? "Intel: half the L2" : "Intel: the L2's size unknown";
    }
    if (v == 0 && !pack) {
        v = GCOMMI_STREAM_MIN_FLOOR;
        why = "an unpack off Intel";
    }
    if (v == 0) {
        v = l3 > 0 && (size_t)l3 / 16 > GCOMMI_STREAM_MIN_FLOOR ? (size_t)l3 / 16
                                                               : GCOMMI_STREAM_MIN_FLOOR;
        why = "a pack off Intel: max(8 MiB, L3 / 16)";
    }
    GCOMM_LOG_INFO("datatype",
                   "CPU engine: %s operations of %zu bytes and more use streaming stores (%s; "
                   "L2 %ld, L3 %ld bytes as read)",
                   pack ? "pack" : "unpack", v, why, l2, l3);
    return v;
}

/* What select_copies reads of the machine, read once per process: the CPU family's flags, the
 * streaming thresholds of packs and unpacks and the L3's size. select_copies runs on every
 * operation; asking for these through functions of their own, each an out-of-line call and an
 * atomic load, up to seven times per operation, took 4% of a 1 KiB pack's samples (perf,
 * machine D, 2026-11-30). Threads pack at once (test_dt_threads): pthread_once makes the first
 * ones wait for one complete profile (ThreadSanitizer models it), the flag spares later calls
 * the call into libc, as gcommi_gpu_count does. */
typedef struct {
    int cpu;              /* cpu_flags_read() */
    size_t stream_min[2]; /* unpack, pack */
    int64_t walk_nt_span; /* ctx_t.walk_nt_span of Zen 4's unpacks: the L2's size, or 0 when it
                             is unknown or GCOMM_PACK_STREAM_MIN is set (then no unpack below
                             that size streams) */
    long l2, l3;          /* bytes; 0: unknown */
} cpu_profile_t;
static cpu_profile_t cpu_profile_data;
static int cpu_profile_ready;
static pthread_once_t cpu_profile_once = PTHREAD_ONCE_INIT;

static void cpu_profile_init(void)
{
    const int cpu = cpu_flags_read();
    const long l2 = cache_bytes_read(2), l3 = cache_bytes_read(3);
    cpu_profile_data.cpu = cpu;
    cpu_profile_data.stream_min[0] = stream_min(0, cpu, l2, l3);
    cpu_profile_data.stream_min[1] = stream_min(1, cpu, l2, l3);
    cpu_profile_data.walk_nt_span =
        l2 > 0 && gcommi_config()->pack_stream_min == 0 ? (int64_t)l2 : 0;
    cpu_profile_data.l2 = l2;
    cpu_profile_data.l3 = l3;
    __atomic_store_n(&cpu_profile_ready, 1, __ATOMIC_RELEASE);
}
static inline const cpu_profile_t *cpu_profile(void)
{
    if (__builtin_expect(!__atomic_load_n(&cpu_profile_ready, __ATOMIC_ACQUIRE), 0))
        pthread_once(&cpu_profile_once, cpu_profile_init);
    return &cpu_profile_data;
}

/* Sets the copies of an operation of `bytes` bytes in c: every field of c but nodes, aux, packed
 * and pack, which gcommi_host_copy sets (it does not zero c first). range: the call copies a range
 * of such an operation, not all of it. Blocks that do not stream:
 * copy_vec when packing on AMD and when unpacking on Zen 4, copy_unpack_lines when unpacking on
 * other AMD with AVX-512 (Zen 5), copy_vec_adst on Intel in operations of GCOMMI_VEC_ADST_MIN to
 * GCOMMI_VEC_ADST_MAX bytes, rep movsb otherwise. On the EPYC copy_vec packed 5-10 points of
 * memcpy above rep movsb (copy_vec's comment); on the Xeon VM rep movsb, which its glibc also
 * takes from 2112 bytes, packed lower_tri 5-7 points above copy_vec at 1-16 MiB (94 against 87
 * at 4 MiB) and copy_vec left gcomm_pack at 0.89-0.94x MPI_Pack there. On the Zen 4 VM (machine
 * D, 2026-11-28, bench_pack_cpu, two alternating rounds) rep movsb is slow for blocks that do not
 * start a line: unpacking lower_tri at 1-4 MiB with copy_unpack_lines reached 76-79% of memcpy
 * (1.01-1.05x MPI_Unpack), with copy_vec 84-86% (1.08-1.18x); vector_bl256 (line-aligned blocks)
 * the same within noise. */
static void select_copies(ctx_t *c, size_t bytes, int range)
{
    const cpu_profile_t *pr = cpu_profile();
    const int cpu = pr->cpu;
    const int avx2 = !!(cpu & GCOMMI_CPU_AVX2), avx512 = !!(cpu & GCOMMI_CPU_AVX512),
              amd = !!(cpu & GCOMMI_CPU_AMD), zen4 = !!(cpu & GCOMMI_CPU_ZEN4);
    c->mid = !avx2                               ? copy_plain
             : (c->pack && amd) || zen4            ? copy_vec
             : avx512 && amd                       ? copy_unpack_lines
             : !amd && bytes <= GCOMMI_L1_OPS_MAX ? copy_plain
             : !amd && bytes >= GCOMMI_VEC_ADST_MIN && bytes < GCOMMI_VEC_ADST_MAX
                 ? copy_vec_adst
                 : copy_movsb;
    c->streams = avx2 && bytes >= pr->stream_min[c->pack != 0];
    /* Unpacks on the Xeons once kept rows of 4 KiB and more on rep movsb below the pack's
     * streaming size, which lay higher (lower_tri at 16 MiB on machine C: 97% of memcpy against
     * 93% streamed); now that packs and unpacks stream from the same size there, and streaming
     * measured better on machine B (lower_tri unpack at 4-16 MiB 121-123% of memcpy), that case
     * is gone, and so is its loop. */
    c->big = !c->streams ? c->mid
           : avx512 && c->pack ? (amd ? copy_stream_pack : copy_stream512)
           : avx512 && !amd ? copy_stream512 /* unpack, Xeon */
           : copy_stream;
    c->tile = amd ? GCOMMI_TILE_AMD : GCOMMI_TILE_OTHER;
    c->rows_vec_max = !avx2 ? 0 : amd ? GCOMMI_ROWS_VEC_MAX_AMD : GCOMMI_ROWS_VEC_MAX_OTHER;
    c->rows_zmm = !(avx512 && c->pack) ? 0
                  : amd ? (bytes >= pr->stream_min[1] ? 128 : 0)
                  : !c->streams ? GCOMMI_ROWS_VEC_MAX_OTHER
                                : 0;
    /* Zen 4 executes a 64-byte move as two 32-byte halves and walks pages differently from Zen 5.
     * bench_pack_cpu on the Zen 4 VM (machine D, 2026-11-28, alternating rounds, x MPI_Pack):
     * - packs from stream_min(1): 128-byte rows by rows_vec instead of rows_zmm (vector_bl16
     *   0.91-0.98x -> 1.00-1.07x at 16-256 MiB) and rows of up to 992 bytes by rows_vec instead of
     *   one memcpy each (subarray4d's 256- and 512-byte rows 0.88-0.95x -> 1.01-1.11x at 16-64
     *   MiB); so do packs and unpacks from GCOMMI_ROWS_WIDE_MIN, where rows_vec also prefetches
     *   the row ahead (c->pf_line): subarray4d (256-byte rows), three alternating rounds on
     *   2026-11-29, pack / unpack at 4 MiB 1.00-1.02 / 0.98x -> 1.13-1.16 / 1.18-1.22x, at 2 MiB
     *   1.01-1.04 / 0.97-0.99x -> 1.05-1.08 / 1.02-1.09x; at 1 MiB it lost (unpack 0.99-1.01x ->
     *   0.93-1.00x), and smaller operations keep the AMD rows (one memcpy each); there rows of
     *   129-992 bytes that are not multiples of 32 take rows_vec too (c->rows_odd; in-process
     *   A/B of hvectors of rows two rows apart, 41 alternating rounds, 2026-11-29, speed with /
     *   without at 2.5 / 4 / 6 MiB: 136-byte rows pack 1.06 / 1.07 / 1.06x, unpack 1.10 / 1.14 /
     *   1.17x; 360-byte 1.14 / 1.25 / 1.40x and 1.19 / 1.38 / 1.55x; 520-byte 1.10 / 1.14 /
     *   1.30x and 1.13 / 1.17 / 1.56x; 200-byte 0.99-1.15x; rows the rule leaves alone (100,
     *   256 and 1000 bytes, and every row at 1 and 16 MiB) 0.94-1.06x; 100-byte rows through
     *   rows_vec lost 8-18% at 256 KiB-2 MiB, so rows of up to 128 bytes keep multiples of 32);
     * - elements of 3 to 64 bytes (arrays of structs) packed with one wide move each that runs on
     *   into the next elements' packed bytes, and unpacked with two exact moves chosen once per
     *   call (c->small_over: pack_small_over, unpack_small_exact; their comments have the
     *   figures: 1.2-3x for most sizes, the benchmark's struct pack 1.23-1.27x);
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
     * - transposes: the tile's row GCOMMI_TILE_PF_AHEAD rows ahead prefetched (c->tile_pf). Each
     *   row of a tile is one line on another page, which the hardware prefetchers do not fetch
     *   ahead; once the matrix leaves the L2 every row waited for its line: the transpose packed
     *   at 1.2-1.8x MPI_Pack at 8-10 MiB (5-6x at 6 MiB, 2.4x at 16 MiB), below the 2x the
     *   benchmark's powers of four had shown. With the prefetch, packs below GCOMMI_TILE_WIDE_MIN
     *   (from there tiles of 32 rows, where it lost 4-11% at 32-48 MiB): 1.42-1.75x faster at
     *   8-16 MiB, 1.13-1.26x at 20-28 MiB, 1.02-1.07x in the cache; bench_pack_cpu at 8-12 MiB
     *   2.1-4.3x MPI_Pack. Unpacks, with the write hint (prefetch_line: prefetcht0 as built):
     *   1.18-1.33x at 8-18 MiB, where they stream,
     *   but 0.74-0.78x at 20 and 28 MiB and 0.87-0.93x at 2 MiB, so only unpacks that stream
     *   and fit twice in the L3 (the matrix and the packed stream) take it: the transpose's
     *   unpack at 10 MiB 1.83x -> 2.5x MPI_Pack;
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
    c->adst_idx = c->mid == copy_vec_adst && !c->streams;
    /* Transposes (transpose_tiles): on AMD, unpacks that stream keep the general loop, where the
     * fixed loop unpacked 10-18% slower (GCC 12, 12-20 MiB, four runs). On Intel the fixed loop
     * always: once unpacks streamed from half the L2 there, the transpose's unpack on machine B
     * fell to 1.72x MPI_Pack at 64 MiB; bench_pack_ab there (2026-11-29), fixed against general
     * for unpacks that stream: 1 MiB 1.72x, 4 and 16 MiB 1.03x, 64 MiB 1.21x, 256 MiB 1.32x. */
    c->tile_fixed_ok = c->pack || !c->streams || !amd;
    c->pf_line = 0;
    c->pf_strided = 0;
    c->walk_nt_span = 0;
    c->fence = 0;
    c->unroll_unpack = bytes < GCOMMI_UNROLL_UNPACK_MAX;
    c->rows_odd = 0;
    c->small_over = 0;
    c->compress = !(cpu & GCOMMI_CPU_VBMI2) ? 0
                  : amd                     ? GCOMMI_COMPRESS_NARROW
                                            : GCOMMI_COMPRESS_WIDE;
    c->compress_exact = amd || c->streams;
    c->pairs = avx512 && !c->streams;
    c->tile_nt = 0;
    c->tile8 = 0;
    c->tile32_nt = 0;
    c->tile_aliased = 0;
    c->tile_pf = 0;
    c->gather_ilv = c->streams && c->pack;
    /* copy_split's comment has the figures; from 3/8 of the L2, where they gained (below,
     * vector_bl256's and lower_tri's lines fit the L2 with the packed ones, and computing the
     * mask cost 1-3% at half that: 512 KiB on machine B). Not when GCOMM_PACK_STREAM_MIN is set:
     * the user who sets it asks for streaming stores from there and for none below. */
    c->split_l2 = avx2 && c->pack && !amd && pr->l2 > 0 && bytes < (size_t)pr->l2 &&
                          bytes >= (size_t)pr->l2 / 8 * 3 && gcommi_config()->pack_stream_min == 0
                      ? (int64_t)pr->l2
                      : 0;
    c->split_op = (int64_t)bytes;
    c->split_key[3] = -1;
    if (zen4) {
        c->pf_line = !c->streams;
        c->pf_strided = c->pf_line && bytes >= GCOMMI_PF_STRIDED_MIN;
        /* Unpacks whose blocks span the L2 or more: their lines cannot stay in it, and every
         * other block streamed (strided_vec_walk) sends half of them to memory without a read
         * for ownership, beside the L3 traffic of the other half. bench_pack_ab on machine D
         * (2026-11-30), against all blocks by ordinary stores, vector_bl256 unpack: 1 MiB 1.08x,
         * 1.5-3 MiB 1.09-1.10x, 4 MiB 1.13x, 5-6 MiB 1.10-1.11x (span 2-12 MiB); 512 KiB and
         * 768 KiB (span 1-1.5 MiB) 1.03-1.05x; but 64 KiB 0.85x and 256 KiB 0.92x, whose
         * blocks stay in the L2 between calls. hvectors of R-byte rows S apart, 1 / 4 MiB:
         * 3072:4096 1.08 / 1.08x, 2040:4096 1.03 / 1.12x, 1536:4096 1.02 / 0.98x, 1600:4096
         * 1.02 / 1.01x. bench_pack_cpu, three alternating rounds, vector_bl256 unpack % of
         * memcpy: 1 MiB 89.2-90.7 -> 98.2-99.6, 4 MiB 77.0-77.9 -> 87.0-88.0. The ceiling
         * benchmark's split_nt, the same over vector_bl256, had shown 93-98% at 1.5-6 MiB
         * against gcomm's 79-93%. Packs lost with it (split_nt 64-86%). Only blocks that start
         * on 64-byte lines (the first, and the stride a multiple of 64; pack_host.c): blocks
         * that start inside a line lost, 1 MiB of 2048:4104 0.70x, 1600:4100 0.84x, 2048:4128
         * 0.93x (and rows of lower_tri streamed alike 0.64-0.82x where they start inside a line,
         * 1.00-1.07x where they start on one), and now keep ordinary stores (0.99-1.00x). */
        if (!c->pack) c->walk_nt_span = pr->walk_nt_span;
        if (c->pack && bytes >= pr->stream_min[1]) c->rows_zmm = 0;
        if (bytes >= GCOMMI_ROWS_WIDE_MIN || (c->pack && bytes >= pr->stream_min[1]))
            c->rows_vec_max = GCOMMI_ROWS_VEC_MAX_OTHER;
        c->rows_odd = !c->streams && bytes >= GCOMMI_ROWS_WIDE_MIN;
        c->small_over = 1;
        if (c->pack ? bytes < GCOMMI_TILE_WIDE_MIN
                    : c->streams && pr->l3 > 0 && bytes <= (size_t)pr->l3 / 2)
            c->tile_pf = GCOMMI_TILE_PF_AHEAD;
        /* Unpacks take the wide tiles and their streaming stores from half the L3, where the
         * matrix and the packed stream no longer fit in it together (at most from
         * GCOMMI_TILE_WIDE_MIN): bench_pack_ab against wide tiles from 32 MiB only (machine D,
         * 2026-11-29, two rounds), transpose unpack 15 MiB 1.00x, 16 MiB 1.00-1.09x, 17 MiB
         * 1.05-1.23x, 20 MiB 1.21-1.68x, 24 MiB 1.57-1.70x, 28 MiB 1.63-1.85x; from 8 or 12 MiB
         * instead, 8-15 MiB measured 0.48-1.16x, mostly lost, where the unpack can still run from
         * the L3. Packs keep 32 MiB: from 12 MiB their wide tiles lost 12-30% at 20-28 MiB. */
        const long l3 = pr->l3;
        const size_t wide_unpack = l3 > 0 && (size_t)l3 / 2 < GCOMMI_TILE_WIDE_MIN
                                       ? (size_t)l3 / 2
                                       : GCOMMI_TILE_WIDE_MIN;
        if (bytes >= (c->pack ? GCOMMI_TILE_WIDE_MIN : wide_unpack)) {
            c->tile = c->pack && bytes <= GCOMMI_TILE_WIDE_PACK_MAX ? GCOMMI_TILE_WIDE_PACK
                                                                    : GCOMMI_TILE_OTHER;
            c->tile_nt = !c->pack && c->streams;
            c->tile_aliased = c->pack ? 4 : 0;
        }
        /* Doubles of a transpose 8 x 8 through registers (transpose8), each 8 x 8 block 16 loads
         * and 16 stores of 32 bytes instead of 64 of 8:
         * - packs that stream write each packed stream's 64-byte lines whole with streaming
         *   stores (tile8_pack_nt where the streams start on 32 bytes, tile8_pack_nt_any where
         *   on 8), the rows GCOMMI_TILE_PF_AHEAD ahead prefetched. bench_pack_ab against the
         *   tiles of 8 or 32 columns (machine D, 2026-11-29), N x N doubles: N = 1044-1620
         *   (8.7-21 MiB) 1.31-1.88x, 1916 1.39-1.40x, 2000 1.71x, 2896 2.33x, 4000 2.05x; then
         *   the odd N of bench_pack_cpu at 10-256 MiB 1.22-2.69x; the prefetch beyond 32 MiB
         *   1.00-1.33x against none. Streams a multiple of 4 KiB apart (N = 1024, 2048, 4096:
         *   8, 32, 128 MiB) prefetch into the L2 only (tile8_pack_nt_l2): against the tiles of 8
         *   and 4 rows they had kept, 2.21-3.41x (1.39-2.57x with the L1 prefetch of the others,
         *   which with the L2's lost 15-26% at 10-50 MiB);
         * - the other packs (tile8_pack) and the unpacks that do not take the wide tiles
         *   (tile8_unpack), ordinary stores, against tile_8_8 and transpose_tiles' loop
         *   (bench_pack_ab, machine D, 2026-11-29, the benchmark's transpose): packs 1.26-1.45x
         *   faster at 16 KiB-1 MiB, 1.17x at 4 MiB, 2.12x at 6 MiB, 1.20-1.50x for N = 512
         *   (2 MiB, streams 4 KiB apart); unpacks 1.23-1.87x at 16 KiB-5 MiB, 1.00x at 2 MiB;
         * - unpacks that stream, strips of 32 columns written in whole lines with streaming
         *   stores (tile32_unpack_nt): against the wide tiles' 8-byte streaming stores, which
         *   leave two lines of every row and strip partly written, 1.10-1.68x at 16-256 MiB (N
         *   odd), 1.01-1.06x for N = 2048 and 4096; against tile8_unpack at 8-14 MiB 0.99-1.11x
         *   (tile8_unpack had measured 2.04x at 8 MiB and 1.30x at 12 MiB against the tiles).
         *   The same strips with the partial lines at both ends stored in place measured
         *   0.45-0.93x: those lines, read for ownership twice, cost more than the strip's first
         *   block read again. Not in ranges, which take the 8-column loop (bench_pack_range,
         *   16 MiB transpose unpacked in ranges of 1 MiB, two rounds, 2026-11-30: 1.61-1.67x the
         *   whole call's time with the strips, 1.06-1.25x with the 8-column loop; 64 MiB
         *   1.02-1.45x against 1.22-1.43x): the strips finish each call's last columns (up to 31)
         *   element by element, row by row. */
        c->tile8 = 1;
        c->tile32_nt = !c->pack && c->streams && !range;
    }
}
#else
static void select_copies(ctx_t *c, size_t bytes, int range)
{
    (void)bytes;
    (void)range;
    c->mid = c->big = copy_plain;
    c->streams = 0;
    c->tile = GCOMMI_TILE_AMD;
    c->tile_nt = 0;
    c->tile8 = 0;
    c->tile32_nt = 0;
    c->tile_aliased = 0;
    c->tile_fixed_ok = 1;
    c->tile_pf = 0;
    c->rows_vec_max = 0;
    c->rows_zmm = 0;
    c->adst_idx = 0;
    c->pf_line = 0;
    c->pf_strided = 0;
    c->walk_nt_span = 0;
    c->fence = 0;
    c->unroll_unpack = bytes < GCOMMI_UNROLL_UNPACK_MAX;
    c->rows_odd = 0;
    c->small_over = 0;
    c->compress = 0;
    c->compress_exact = 0;
    c->pairs = 0;
    c->gather_ilv = 0;
    c->split_l2 = 0;
    c->split_op = (int64_t)bytes;
    c->split_key[3] = -1;
}
#endif

/* Smallest block that takes the streaming path. Packing writes one contiguous stream, where
 * streaming blocks shorter than 1 KB measured slower (vector of 128-byte blocks, 64 MB: 0.83x
 * MPI_Pack against 0.98x plain; again on the Zen 5 VM, 2026-11-26, with whole aligned lines
 * streamed by a rows loop: 0.71-0.74x against 0.92-0.96x at 64-256 MiB); unpacking scatters into
 * blocks whose lines are written whole, where streaming pays from 128 bytes (1.6x MPI_Unpack
 * against 1.0x). Packs of whole-line blocks gathered eight at a time stream from 128 bytes
 * (GCOMMI_GATHER_LINES_MIN). */
static inline size_t stream_min_block(const ctx_t *c) { return c->pack ? 1024 : 128; }

/* A vector's blocks from this size on may take copy_split (ctx_t.split_l2), as blocks from
 * stream_min_block() take the streaming copy. */
#define GCOMMI_SPLIT_BLOCK_MIN 1024

/* Blocks from this size on that do not stream use c->mid. Shorter ones keep libc's memcpy: with
 * copy_vec from 65 bytes on, vector_bl16 (128-byte blocks) and subarray4d (512-byte rows) fell to
 * 0.6-0.9x MPI_Pack at 1-16 MiB, against 1.0x with memcpy. */
#define GCOMMI_MID_MIN 1024

#endif /* GCOMM_DATATYPE_PACK_HOST_SELECT_H */
