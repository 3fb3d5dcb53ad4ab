/* bench_pack_range: what splitting a pack or unpack into ranges of the packed stream costs.
 *
 * gcomm_pack_range / gcomm_unpack_range move bytes [offset, offset + bytes) of the packed stream
 * (the unit of pipelining: a send overlaps the pack of the next range). The engine descends to a
 * range's first byte by division and binary search, so a range's cost must not grow with its
 * offset, and splitting an operation into ranges should cost little more than the descent per
 * range. For each shape of issue 2 (bench_shapes.h) at one packed size and each range size R,
 * this program times, in interleaved rounds (bench_measure):
 *   whole    the whole stream in one call (gcomm_pack / gcomm_unpack): the reference;
 *   ranged   the same stream as consecutive ranges of R bytes, one call each;
 *   memcpy   memcpy of the packed bytes in pieces of R bytes (what a contiguous type would cost);
 *   first    one range of R bytes at offset 0;
 *   last     one range of R bytes ending at the stream's end.
 * It reports ranged / whole, the time per range beyond the whole call's ((ranged - whole) /
 * ranges), and last / first, which stays near 1 when the descent does not depend on the offset
 * (for shapes whose bytes are alike along the stream: the vectors, the struct, the subarray; the
 * rows of lower_tri grow along it, and the transpose's ranges cross a different number of
 * columns). After the timed rounds the ranged output is compared byte for byte with the whole
 * call's (pack: the packed stream; unpack: the typed span, gaps included, both poisoned alike),
 * and the first and last ranges with the same bytes of the whole stream. Exit status 1 when any
 * differs or a call fails.
 *
 *   bench_pack_range [--shapes a,b] [--bytes N] [--ranges R,R,...] [--min-time S] [--csv FILE]
 *                    [--quick] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_shapes.h"
#include "bench_util.h"
#include "gcomm/datatype.h"
#include "gcomm/status.h"

/* One shape at one size, and the buffers every operation of a measurement shares. */
typedef struct {
    gcomm_datatype type;
    size_t incount, packed, span, range;
    char *typed;     /* the typed data (random, never zero) */
    char *typed_out; /* unpack target */
    char *whole;     /* packed stream of one call */
    char *ranged;    /* packed stream written range by range (and the memcpy's target) */
    char *scratch;   /* the first / last range alone */
    int pack;        /* 1: pack, 0: unpack */
    int failed;
} run_t;

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

static int do_range(run_t *r, size_t off, size_t n, char *buf)
{
    const int rc = r->pack ? gcomm_pack_range(r->typed, r->incount, r->type, off, n, buf)
                           : gcomm_unpack_range(buf, off, n, r->typed_out, r->incount, r->type);
    if (rc != GCOMM_SUCCESS && !r->failed) {
        fprintf(stderr, "bench_pack_range: range [%zu, %zu): %s (%s)\n", off, off + n,
                gcomm_error_string(rc), gcomm_last_error_detail());
        r->failed = 1;
    }
    return rc != GCOMM_SUCCESS;
}

static int op_whole(void *arg)
{
    run_t *r = arg;
    size_t pos = 0;
    const int rc = r->pack ? gcomm_pack(r->typed, r->incount, r->type, r->whole, r->packed, &pos)
                           : gcomm_unpack(r->whole, r->packed, &pos, r->typed_out, r->incount,
                                          r->type);
    return rc != GCOMM_SUCCESS || pos != r->packed;
}

static int op_ranged(void *arg)
{
    run_t *r = arg;
    for (size_t off = 0; off < r->packed; off += r->range) {
        const size_t n = min_size(r->range, r->packed - off);
        if (do_range(r, off, n, (r->pack ? r->ranged : r->whole) + off)) return 1;
    }
    return 0;
}

static int op_memcpy(void *arg)
{
    run_t *r = arg;
    for (size_t off = 0; off < r->packed; off += r->range)
        memcpy(r->ranged + off, r->whole + off, min_size(r->range, r->packed - off));
    return 0;
}

static int op_first(void *arg)
{
    run_t *r = arg;
    return do_range(r, 0, r->range, r->pack ? r->scratch : r->whole);
}

static int op_last(void *arg)
{
    run_t *r = arg;
    const size_t off = r->packed - r->range;
    return do_range(r, off, r->range, r->pack ? r->scratch : r->whole + off);
}

/* The outputs after the timed rounds: 0 when every one equals the whole call's. */
static int verify(run_t *r)
{
    int bad = 0;
    if (r->pack) {
        memset(r->whole, 0, r->packed);
        memset(r->ranged, 0, r->packed);
        bad |= op_whole(r) | op_ranged(r);
        bad |= memcmp(r->whole, r->ranged, r->packed) != 0;
        bad |= op_first(r) || memcmp(r->scratch, r->whole, r->range) != 0;
        bad |= op_last(r) || memcmp(r->scratch, r->whole + r->packed - r->range, r->range) != 0;
    } else { /* r->whole: the packed stream of one call, packed by main before the timing */
        char *expect = malloc(r->span);
        if (!expect) return 1;
        memset(r->typed_out, 0, r->span);
        bad |= op_whole(r);
        memcpy(expect, r->typed_out, r->span);
        memset(r->typed_out, 0, r->span);
        bad |= op_ranged(r) || memcmp(r->typed_out, expect, r->span) != 0;
        /* first and last alone, into a span of zeros: each byte they write is the whole call's
         * (the typed data has no zero byte), and they write exactly their 2 x range bytes */
        memset(r->typed_out, 0, r->span);
        bad |= op_first(r) || op_last(r);
        size_t written = 0;
        for (size_t i = 0; i < r->span; i++) {
            written += r->typed_out[i] != 0;
            bad |= r->typed_out[i] != 0 && r->typed_out[i] != expect[i];
        }
        bad |= written != min_size(2 * r->range, r->packed);
        free(expect);
    }
    return bad;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_pack_range [--shapes a,b,...] [--bytes N] [--ranges R,R,...]\n"
            "                        [--min-time S] [--csv FILE] [--quick]\n"
            "  --shapes LIST   subset of: vector_bl1 vector_bl16 vector_bl256 lower_tri\n"
            "                  subarray4d struct transpose (default: all)\n"
            "  --bytes N       packed size of each operation (default 16M; K/M/G suffixes)\n"
            "  --ranges LIST   range sizes (default 256,4K,64K,1M; those below N)\n"
            "  --min-time S    timed seconds per operation and measurement (default 0.2)\n"
            "  --quick         smoke run: 1M, ranges 4K and 64K, 0.02 s per measurement\n"
            "  --csv FILE      CSV output (default stdout; the table then goes to stderr)\n");
}

int main(int argc, char **argv)
{
    const char *shapes = NULL, *csv_path = NULL, *ranges_arg = "256,4K,64K,1M";
    size_t bytes = (size_t)16 << 20;
    double min_time = -1.0;
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            quick = 1;
        } else if (strcmp(a, "--shapes") == 0 && v) {
            shapes = v;
            i++;
        } else if (strcmp(a, "--bytes") == 0 && v && bench_parse_size(v, &bytes) == 0) {
            i++;
        } else if (strcmp(a, "--ranges") == 0 && v) {
            ranges_arg = v;
            i++;
        } else if (strcmp(a, "--min-time") == 0 && v) {
            min_time = atof(v);
            i++;
        } else if (strcmp(a, "--csv") == 0 && v) {
            csv_path = v;
            i++;
        } else {
            usage();
            return 2;
        }
    }
    if (quick) {
        bytes = (size_t)1 << 20;
        ranges_arg = "4K,64K";
    }
    size_t ranges[16];
    const int nranges = bench_parse_size_list("bench_pack_range", "range size", ranges_arg, ranges,
                                              16);
    if (nranges < 0) return 2;
    bench_opts_t opts = BENCH_OPTS_DEFAULT;
    opts.min_time_s = min_time >= 0.0 ? min_time : quick ? 0.02 : 0.2;
    opts.warm_calls = quick ? 1 : 5;
    opts.warm_max_s = 0.05;

    FILE *tab = csv_path ? stdout : stderr;
    bench_print_environment(tab, argc, argv);
    static const char *const columns[] = {
        "shape",         "bytes",          "range",        "op",          "whole_s",
        "ranged_s",      "memcpy_s",       "first_s",      "last_s",      "ranged_over_whole",
        "ns_per_range",  "last_over_first"};
    FILE *csv = bench_csv_open(csv_path, columns, (int)(sizeof columns / sizeof *columns));
    if (!csv) return 1;
    fprintf(tab, "ranged: the stream in ranges of R bytes, one call each; per range: (ranged - "
                 "whole) / ranges; last/first: one range at the end against one at offset 0\n");
    fprintf(tab, "%-12s %9s %7s %-6s %10s %10s %10s %9s %9s %8s %9s %9s\n", "shape", "bytes",
            "range", "op", "whole us", "ranged us", "memcpy us", "first ns", "last ns",
            "rng/whl", "ns/range", "last/1st");
    const bench_type_api_t api = bench_type_api_linked();
    int failures = 0;
    for (int s = 0; s < bench_nshapes; s++) {
        const bench_shape_t *sh = &bench_shapes[s];
        if (!bench_list_has(shapes, sh->name)) continue;
        bench_geom_t g;
        if (bench_shape_geom(sh, bytes, &g) != 0) continue;
        run_t r = {0};
        r.incount = g.incount;
        r.packed = g.packed;
        r.span = g.span;
        if (bench_shape_type(&api, &g, &r.type) != 0 || gcomm_type_commit(&r.type) != 0) {
            fprintf(stderr, "bench_pack_range: %s: type: %s\n", sh->name,
                    gcomm_last_error_detail());
            return 1;
        }
        r.typed = bench_alloc(r.span);
        r.typed_out = bench_alloc(r.span);
        r.whole = bench_alloc(r.packed);
        r.ranged = bench_alloc(r.packed);
        r.scratch = bench_alloc(r.packed);
        if (!r.typed || !r.typed_out || !r.whole || !r.ranged || !r.scratch) {
            fprintf(stderr, "bench_pack_range: out of memory\n");
            return 1;
        }
        bench_fill_random(r.typed, r.span, 0x5eed + (uint64_t)s);
        memset(r.typed_out, 0, r.span);
        for (int k = 0; k < nranges; k++) {
            r.range = ranges[k];
            if (r.range >= r.packed) continue;
            for (int pack = 1; pack >= 0; pack--) {
                r.pack = pack;
                r.failed = 0;
                if (!pack) { /* unpack from the packed stream of the whole call */
                    size_t pos = 0;
                    if (gcomm_pack(r.typed, r.incount, r.type, r.whole, r.packed, &pos) != 0)
                        return 1;
                }
                const bench_op_t ops[] = {{"whole", op_whole, NULL, &r},
                                          {"ranged", op_ranged, NULL, &r},
                                          {"memcpy", op_memcpy, NULL, &r},
                                          {"first", op_first, NULL, &r},
                                          {"last", op_last, NULL, &r}};
                bench_result_t res[5];
                if (bench_measure(ops, 5, &opts, res) != 0 || r.failed) {
                    failures++;
                    continue;
                }
                const int bad = verify(&r);
                failures += bad;
                const double nr = (double)((r.packed + r.range - 1) / r.range);
                const double per = (res[1].median_s - res[0].median_s) / nr * 1e9;
                const double lf = res[4].median_s / res[3].median_s;
                char rb[32];
                fprintf(tab, "%-12s %9zu %7s %-6s %10.1f %10.1f %10.1f %9.0f %9.0f %7.3fx %9.1f "
                             "%8.3fx%s\n",
                        sh->name, r.packed, bench_format_size(r.range, rb, sizeof rb),
                        pack ? "pack" : "unpack", res[0].median_s * 1e6, res[1].median_s * 1e6,
                        res[2].median_s * 1e6, res[3].median_s * 1e9, res[4].median_s * 1e9,
                        res[1].median_s / res[0].median_s, per, lf,
                        bad ? "  OUTPUT DIFFERS" : "");
                fprintf(csv, "%s,%zu,%zu,%s,%.6e,%.6e,%.6e,%.6e,%.6e,%.4f,%.2f,%.4f\n", sh->name,
                        r.packed, r.range, pack ? "pack" : "unpack", res[0].median_s,
                        res[1].median_s, res[2].median_s, res[3].median_s, res[4].median_s,
                        res[1].median_s / res[0].median_s, per, lf);
                fflush(csv);
            }
        }
        gcomm_type_free(&r.type);
        free(r.typed);
        free(r.typed_out);
        free(r.whole);
        free(r.ranged);
        free(r.scratch);
    }
    bench_csv_close(csv);
    fprintf(tab, "%s\n",
            failures ? "FAILED: an output differs or a call failed" : "all outputs checked");
    return failures ? 1 : 0;
}
