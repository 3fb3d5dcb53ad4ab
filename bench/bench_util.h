/* Benchmark helpers shared by the gcomm benchmarks: timing with warm-up and medians, random
 * (never zero) data, size parsing, CSV output and a short human table.
 *
 * Measurement model (SPEC "Performance"): every operation is warmed up, then timed in batches
 * until it has at least min_runs samples and min_time_s of timed work; the figure reported is the
 * median sample (seconds per call). The operations compared in one measurement (e.g. gcomm, MPI,
 * memcpy) are timed in interleaved rounds, so that a noisy neighbour on a shared machine slows
 * them all alike instead of whichever happened to run at that moment. Each round runs them in a
 * new random order, and before each sample the operation runs untimed for about a batch
 * (warm_s): near the L3 size a pack needs 5 to 8 calls to win its working set back from what
 * ran before (a 4 MiB memcpy slowed the next MPI_Pack of a 4 MiB subarray from 36 to 24 GB/s),
 * and in a fixed order the operation always timed right after memcpy lost up to 40% against an
 * identical one. Near the last-level cache size 1 ms is only one or two calls, too few (a 16 MiB
 * pack with streaming stores needs about 10 calls to get its source back into the L3 after a
 * memcpy): warm_calls sets a minimum number of calls. Besides each operation's median, the
 * ratios of its samples to the reference operation's sample of the same round are summarised
 * (median and quartiles): a machine whose memory bandwidth moves during the measurement moves
 * both samples of a round alike.
 *
 * A host-timed sample during which the thread was not on a CPU for >= 95% of the wall time (a
 * neighbour took the core) is discarded and replaced by another one; when fewer than 3 clean
 * samples come within max_time_s, all samples count.
 *
 * An operation is timed by the host clock (set `call`), or times itself (set `run`, e.g. with
 * CUDA events around `reps` launches), so GPU benchmarks reuse the same driver. */
#ifndef GCOMM_BENCH_UTIL_H
#define GCOMM_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One operation to time. Exactly one of call / run is set. */
typedef struct {
    const char *name;
    /* Does the operation once; returns 0 on success (anything else aborts the measurement). */
    int (*call)(void *arg);
    /* Does the operation reps times and returns the elapsed seconds, or < 0 on error. */
    double (*run)(void *arg, long reps);
    void *arg;
} bench_op_t;

typedef struct {
    double min_time_s; /* timed work per operation, at least (default 0.2 s) */
    int min_runs;      /* samples per operation, at least (default 5) */
    double batch_s;    /* calls are batched so one sample lasts about this long (default 1 ms) */
    int warmup;        /* untimed calls before calibration (default 1, at least 1) */
    double max_time_s; /* stop adding samples after this much timed work per operation (at
                          least 3 samples), clean or not (default 10 s) */
    double warm_s;     /* untimed calls for about this long (at least one) before every sample,
                          so that it starts from the caches as the operation itself leaves them,
                          not as the operation timed before it did; 0: none (default 1 ms) */
    int warm_calls;    /* and at least this many untimed calls before every sample, as far as
                          they take at most warm_max_s (default 0 calls): near the last-level
                          cache size an operation needs several calls, not 1 ms, to win its
                          working set back (a 16 MiB pack with streaming stores after a memcpy:
                          about 10 calls, 7 ms) */
    double warm_max_s; /* cap on the time of those warm_calls; 0: none (default 0) */
    int ratio_ref;     /* the operation the per-round ratios are relative to (default 0) */
} bench_opts_t;

#define BENCH_OPTS_DEFAULT {0.2, 5, 1e-3, 1, 10.0, 1e-3, 0, 0.0, 0}

typedef struct {
    double median_s; /* seconds per call, median over samples */
    double min_s;    /* fastest sample, seconds per call */
    double max_s;    /* slowest sample, seconds per call */
    long samples;    /* number of samples the median is over */
    long discarded;  /* samples dropped because the thread was descheduled during them */
    long reps;       /* calls per sample */
    /* Paired ratios: in every round where both this operation's and the reference operation's
     * (opts.ratio_ref) samples are clean, reference time / this time (> 1: this one is faster);
     * their median and quartiles, over an odd number of rounds and by rank (so 1 / ratio_median
     * is exactly the median of the inverse ratios, 1 / ratio_p75 their first quartile; with fewer
     * than 5 pairs the "quartiles" are the extremes). Samples of one round are
     * taken close together, so a change of the machine's speed during the measurement (a
     * neighbour's memory traffic) moves both. 0 when no round has both samples clean. */
    double ratio_median, ratio_p25, ratio_p75;
    long ratio_pairs; /* rounds the ratios are over */
} bench_result_t;

/* Times nops operations in interleaved rounds. Returns 0, or -1 when an operation failed (its
 * name is printed to stderr). */
int bench_measure(const bench_op_t *ops, int nops, const bench_opts_t *opts,
                  bench_result_t *results);

/* Monotonic wall clock in seconds. */
double bench_now(void);
/* Median of n values (sorts v in place). */
double bench_median(double *v, size_t n);
/* GB/s (10^9 bytes per second) for bytes moved in seconds. */
double bench_gbps(size_t bytes, double seconds);

/* Nonzero when `name` is one of the comma-separated names of `list` (NULL list: every name). */
int bench_list_has(const char *list, const char *name);

/* Parses "1048576", "1K", "16M", "2G" (binary multiples; "KB"/"MiB" suffixes accepted).
 * Returns 0 and sets *out, or -1. */
int bench_parse_size(const char *s, size_t *out);
/* Parses a comma-separated list of sizes (bench_parse_size, each nonzero) into out[0 .. max).
 * Returns how many, or -1 after printing "<prog>: bad <what> '<item>'" to stderr. */
int bench_parse_size_list(const char *prog, const char *what, const char *list, size_t *out,
                          int max);
/* Formats bytes as "1K", "4M", ... when a power-of-two multiple, otherwise as a number. */
const char *bench_format_size(size_t bytes, char *buf, size_t buflen);

/* Fills n bytes with pseudo-random bytes, none of them zero (xorshift64*, seeded). */
void bench_fill_random(void *buf, size_t n, uint64_t seed);
/* Page-aligned allocation (posix_memalign); NULL on failure. Free with free(). After
 * bench_set_huge_pages(1): 2 MiB-aligned, whole 2 MiB pages, advised as transparent huge pages
 * (madvise(MADV_HUGEPAGE); the kernel may still back them with 4 KiB pages). */
void *bench_alloc(size_t n);
void bench_set_huge_pages(int on);
int bench_huge_pages(void); /* what bench_set_huge_pages last set */
/* Bytes of this process's anonymous memory on transparent huge pages (/proc/self/smaps_rollup;
 * 0 where unknown). */
size_t bench_huge_page_bytes(void);
/* Index of the first byte in [0, n) that is not equal to value, or n. */
size_t bench_find_not(const void *buf, size_t n, unsigned char value);

/* CSV output: path "-" or NULL writes to stdout. Writes the header line (columns joined by ','). */
FILE *bench_csv_open(const char *path, const char *const *columns, int ncolumns);
void bench_csv_close(FILE *f);

/* A one-line description of the machine for result headers: CPU model, cores, date (UTC). */
void bench_print_environment(FILE *f, int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif /* GCOMM_BENCH_UTIL_H */
