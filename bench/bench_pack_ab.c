/* bench_pack_ab: two builds of libgcomm against each other, in one process.
 *
 * A change to the CPU pack loops is judged by how much faster or slower it makes gcomm_pack and
 * gcomm_unpack. On a shared VM, two processes run minutes apart can differ by 10 points of memcpy
 * for the same code (docs/BENCHMARKS.md, machine D), which hides changes of a few percent. This
 * program loads two copies of the library with dlopen (RTLD_LOCAL: each resolves its own symbols),
 * builds the same datatype in each, and times their packs (then their unpacks) in interleaved
 * rounds with bench_measure (bench_util.h: random order per round, warm calls before every sample,
 * descheduled samples dropped), so that both see the same machine at the same moment. It reports,
 * per shape and size, the median and quartiles of the per-round ratios time(A) / time(B): above 1,
 * B is faster.
 *
 * Typical use: build the commit before a change in a second build folder and compare.
 *   git worktree add /tmp/prev HEAD~1 && cmake -S /tmp/prev -B /tmp/build-prev
 *       -DGCOMM_CUDA=OFF -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/build-prev -j
 *   build-bench/bench/bench_pack_ab --a /tmp/build-prev/src/libgcomm.so
 *       --b build-bench/src/libgcomm.so --shapes subarray4d --min-bytes 1M --max-bytes 4M
 *
 * Shapes: those of bench_pack_cpu (bench_shapes.h: the same geometry for a packed size, built by
 * the same code in each loaded copy) and, with --rows R[:S],..., hvectors of
 * R-byte rows S bytes apart (S defaults to 2R). After the timed rounds every B output is compared
 * byte for byte with A's (pack: the packed stream; unpack: the whole typed span, gaps included,
 * both poisoned alike first). Exit status 1 when they differ or a call fails. */
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_shapes.h"
#include "bench_util.h"
#include "gcomm/datatype.h"

/* The entry points of one copy of the library. */
typedef struct {
    const char *path;
    void *handle;
    bench_type_api_t api; /* the constructors the shapes are built with */
    int (*commit)(gcomm_datatype *);
    int (*pack)(const void *, size_t, gcomm_datatype, void *, size_t, size_t *);
    int (*unpack)(const void *, size_t, size_t *, void *, size_t, gcomm_datatype);
} lib_t;

static int load(lib_t *l, const char *path)
{
    memset(l, 0, sizeof *l);
    l->path = path;
    l->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!l->handle) {
        fprintf(stderr, "bench_pack_ab: %s\n", dlerror());
        return -1;
    }
#define SYM(field, name)                                                                      \
    do {                                                                                    \
        *(void **)&l->field = dlsym(l->handle, name);                                       \
        if (!l->field) {                                                                    \
            fprintf(stderr, "bench_pack_ab: %s has no %s\n", path, name);                   \
            return -1;                                                                      \
        }                                                                                   \
    } while (0)
    SYM(api.contiguous, "gcomm_type_contiguous");
    SYM(api.vector, "gcomm_type_vector");
    SYM(api.hvector, "gcomm_type_hvector");
    SYM(api.indexed, "gcomm_type_indexed");
    SYM(api.strct, "gcomm_type_struct");
    SYM(api.subarray, "gcomm_type_subarray");
    SYM(api.resized, "gcomm_type_resized");
    SYM(commit, "gcomm_type_commit");
    SYM(api.tfree, "gcomm_type_free");
    SYM(pack, "gcomm_pack");
    SYM(unpack, "gcomm_unpack");
    SYM(api.dbl, "gcommi_type_DOUBLE");
    SYM(api.i32, "gcommi_type_INT");
    SYM(api.chr, "gcommi_type_CHAR");
    SYM(api.byte, "gcommi_type_BYTE");
#undef SYM
    return 0;
}

/* One instance of a shape: its type in one library, the count and the sizes. */
typedef struct {
    gcomm_datatype t;
    size_t incount, packed, span;
} inst_t;

/* A shape of the table (bench_shapes.h) or, with sh NULL, rows of `row` bytes `stride` apart. */
typedef struct {
    char name[32];
    const bench_shape_t *sh;
    size_t row, stride;
} shape_t;

/* 0: built; 1: no geometry of this shape fits the size; -1: the type failed. */
static int build(const lib_t *l, const shape_t *shape, size_t target, inst_t *s)
{
    bench_geom_t g;
    int rc = shape->sh ? bench_shape_geom(shape->sh, target, &g)
                       : bench_shape_rows(shape->row, shape->stride, target, &g);
    if (rc != 0) return 1;
    if (bench_shape_type(&l->api, &g, &s->t) != 0) return -1;
    s->incount = g.incount;
    s->packed = g.packed;
    s->span = g.span;
    return 0;
}

/* What one timed call needs. */
typedef struct {
    const lib_t *lib;
    const inst_t *in;
    const unsigned char *src; /* typed input of the pack */
    unsigned char *out;       /* packed output of the pack */
    const unsigned char *packed_in; /* unpack input (A's packed stream) */
    unsigned char *dst;       /* typed output of the unpack */
} call_t;

static int op_pack(void *arg)
{
    const call_t *c = arg;
    size_t pos = 0;
    return c->lib->pack(c->src, c->in->incount, c->in->t, c->out, c->in->packed, &pos) != 0 ||
           pos != c->in->packed;
}

static int op_unpack(void *arg)
{
    const call_t *c = arg;
    size_t pos = 0;
    return c->lib->unpack(c->packed_in, c->in->packed, &pos, c->dst, c->in->incount,
                          c->in->t) != 0 ||
           pos != c->in->packed;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_pack_ab --a LIB --b LIB [--shapes a,b,...] [--rows R[:S],...]\n"
            "                     [--min-bytes N] [--max-bytes N] [--min-time S] [--csv FILE]\n"
            "  --a, --b LIB     the two builds of libgcomm.so (A: the reference)\n"
            "  --shapes LIST    subset of: vector_bl1 vector_bl16 vector_bl256 lower_tri\n"
            "                   subarray4d struct transpose (default: all, unless --rows)\n"
            "  --rows LIST      hvectors of R-byte rows S bytes apart (S default 2R)\n"
            "  --min-bytes N    smallest packed size (default 1M); sizes go up by 4x\n"
            "  --max-bytes N    largest packed size (default 16M)\n"
            "  --min-time S     timed seconds per library and measurement (default 0.3)\n"
            "  --csv FILE       CSV output (default stdout; the table then goes to stderr)\n"
            "A/B > 1: B is faster (median of the per-round ratios time(A) / time(B), [quartiles]).\n");
}

int main(int argc, char **argv)
{
    const char *pa = NULL, *pb = NULL, *shape_list = NULL, *rows_list = NULL, *csv_path = NULL;
    size_t min_bytes = (size_t)1 << 20, max_bytes = (size_t)16 << 20;
    double min_time = 0.3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--a") == 0 && v) pa = argv[++i];
        else if (strcmp(a, "--b") == 0 && v) pb = argv[++i];
        else if (strcmp(a, "--shapes") == 0 && v) shape_list = argv[++i];
        else if (strcmp(a, "--rows") == 0 && v) rows_list = argv[++i];
        else if (strcmp(a, "--csv") == 0 && v) csv_path = argv[++i];
        else if (strcmp(a, "--min-bytes") == 0 && v && bench_parse_size(v, &min_bytes) == 0) i++;
        else if (strcmp(a, "--max-bytes") == 0 && v && bench_parse_size(v, &max_bytes) == 0) i++;
        else if (strcmp(a, "--min-time") == 0 && v && atof(v) > 0) min_time = atof(argv[++i]);
        else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "bench_pack_ab: bad argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!pa || !pb || min_bytes == 0 || max_bytes < min_bytes) {
        usage(stderr);
        return 2;
    }

    shape_t shapes[16 + 32];
    int nshapes = 0, nrows = 0;
    for (int s = 0; s < bench_nshapes && s < 16; s++)
        if ((shape_list && bench_list_has(shape_list, bench_shapes[s].name)) ||
            (!shape_list && !rows_list)) {
            shapes[nshapes] = (shape_t){"", &bench_shapes[s], 0, 0};
            snprintf(shapes[nshapes++].name, sizeof shapes[0].name, "%s", bench_shapes[s].name);
        }
    for (const char *p = rows_list; p && *p;) {
        char *end;
        long r = strtol(p, &end, 10), st = 2 * r;
        if (*end == ':') st = strtol(end + 1, &end, 10);
        if (r <= 0 || r > INT_MAX || st < r || (*end && *end != ',') || nrows == 32) {
            fprintf(stderr, "bench_pack_ab: bad --rows entry at '%s' (at most 32)\n", p);
            return 2;
        }
        shape_t sh = {"", NULL, (size_t)r, (size_t)st};
        snprintf(sh.name, sizeof sh.name, "rows%ld:%ld", r, st);
        shapes[nshapes++] = sh;
        nrows++;
        p = *end ? end + 1 : end;
    }
    if (nshapes == 0) {
        fprintf(stderr, "bench_pack_ab: no shape selected\n");
        return 2;
    }

    lib_t la, lb;
    if (load(&la, pa) || load(&lb, pb)) return 1;

    FILE *csv = stdout, *tab = stderr;
    if (csv_path) {
        csv = fopen(csv_path, "w");
        if (!csv) {
            perror(csv_path);
            return 1;
        }
        tab = stdout;
    }
    /* Two paths of one file load one copy (same handle): the run then times a build against
     * itself, which is what the CTest smoke run does. */
    fprintf(tab, "# A = %s\n# B = %s%s\n", pa, pb,
            la.handle == lb.handle ? " (the same loaded copy as A)" : "");
    fprintf(tab, "%-16s %10s %-6s %9s %9s  %s\n", "shape", "bytes", "op", "A GB/s", "B GB/s",
            "A/B time [q1-q3]");
    fprintf(csv, "shape,bytes,op,a_s,b_s,a_over_b,a_over_b_p25,a_over_b_p75,pairs\n");

    bench_opts_t opts = BENCH_OPTS_DEFAULT;
    opts.min_time_s = min_time;
    opts.min_runs = 11;
    opts.warm_calls = 5;
    opts.warm_max_s = 0.05;
    int failures = 0;
    for (int s = 0; s < nshapes; s++)
        for (size_t target = min_bytes; target <= max_bytes; target *= 4) {
            inst_t ia = {0}, ib = {0};
            int ra = build(&la, &shapes[s], target, &ia);
            int rb = build(&lb, &shapes[s], target, &ib);
            if (ra == 1 || rb == 1) continue;
            if (ra || rb || la.commit(&ia.t) || lb.commit(&ib.t) || ia.packed != ib.packed) {
                fprintf(stderr, "bench_pack_ab: %s at %zu: building the type failed\n",
                        shapes[s].name, target);
                failures++;
                continue;
            }
            unsigned char *src = bench_alloc(ia.span), *outa = bench_alloc(ia.packed),
                          *outb = bench_alloc(ia.packed), *dsta = bench_alloc(ia.span),
                          *dstb = bench_alloc(ia.span);
            if (!src || !outa || !outb || !dsta || !dstb) {
                fprintf(stderr, "bench_pack_ab: out of memory at %zu bytes\n", target);
                return 1;
            }
            bench_fill_random(src, ia.span, 0x9e3779b97f4a7c15ull ^ target);
            memset(outa, 0, ia.packed);
            memset(outb, 0, ia.packed);
            memcpy(dsta, src, ia.span);
            memcpy(dstb, src, ia.span);
            /* Timed calls of A and B write the same buffers: buffers of their own would put
             * their outputs on different physical pages, which past the caches can favour one of
             * two identical builds by 20% (measured: 256-byte rows unpacked at 16 MiB). The check
             * below writes separate ones. */
            call_t ca = {&la, &ia, src, outa, outa, dsta}, cb = {&lb, &ib, src, outa, outa, dsta};
            for (int unpack = 0; unpack < 2; unpack++) {
                bench_op_t ops[2] = {{"A", unpack ? op_unpack : op_pack, NULL, &ca},
                                     {"B", unpack ? op_unpack : op_pack, NULL, &cb}};
                bench_result_t res[2];
                if (unpack && op_pack(&ca)) { /* the unpacks read A's packed stream */
                    failures++;
                    continue;
                }
                if (bench_measure(ops, 2, &opts, res) != 0) {
                    failures++;
                    continue;
                }
                /* B's ratio against A (reference op 0): time(A) / time(B) */
                fprintf(tab, "%-16s %10zu %-6s %9.2f %9.2f  %.3f [%.3f-%.3f]\n", shapes[s].name,
                        ia.packed, unpack ? "unpack" : "pack",
                        bench_gbps(ia.packed, res[0].median_s),
                        bench_gbps(ia.packed, res[1].median_s), res[1].ratio_median,
                        res[1].ratio_p25, res[1].ratio_p75);
                fprintf(csv, "%s,%zu,%s,%.6e,%.6e,%.4f,%.4f,%.4f,%ld\n", shapes[s].name,
                        ia.packed, unpack ? "unpack" : "pack", res[0].median_s, res[1].median_s,
                        res[1].ratio_median, res[1].ratio_p25, res[1].ratio_p75,
                        res[1].ratio_pairs);
            }
            /* Check B against A: one more call of each on poisoned outputs of their own. */
            cb.out = outb;
            cb.dst = dstb;
            memset(outa, 0xA5, ia.packed);
            memset(outb, 0x5A, ia.packed);
            if (op_pack(&ca) || op_pack(&cb) || memcmp(outa, outb, ia.packed) != 0) {
                fprintf(stderr, "bench_pack_ab: %s at %zu: B's pack differs from A's\n",
                        shapes[s].name, ia.packed);
                failures++;
            }
            memset(dsta, 0xA5, ia.span);
            memset(dstb, 0xA5, ia.span);
            if (op_unpack(&ca) || op_unpack(&cb) || memcmp(dsta, dstb, ia.span) != 0) {
                fprintf(stderr, "bench_pack_ab: %s at %zu: B's unpack differs from A's\n",
                        shapes[s].name, ia.packed);
                failures++;
            }
            la.api.tfree(&ia.t);
            lb.api.tfree(&ib.t);
            free(src);
            free(outa);
            free(outb);
            free(dsta);
            free(dstb);
        }
    if (csv != stdout) fclose(csv);
    fprintf(tab, "%s\n", failures ? "FAILED: B differs from A or a call failed" : "B equals A");
    return failures ? 1 : 0;
}
