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
 * Shapes: those of bench_pack_cpu (vector_bl1, vector_bl16, vector_bl256, lower_tri, subarray4d,
 * struct, transpose; the same geometry for a packed size) and, with --rows R[:S],..., hvectors of
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

#include "bench_util.h"
#include "gcomm/datatype.h"

/* The entry points of one copy of the library. */
typedef struct {
    const char *path;
    void *handle;
    int (*contiguous)(int, gcomm_datatype, gcomm_datatype *);
    int (*vector)(int, int, int, gcomm_datatype, gcomm_datatype *);
    int (*hvector)(int, int, ptrdiff_t, gcomm_datatype, gcomm_datatype *);
    int (*indexed)(int, const int *, const int *, gcomm_datatype, gcomm_datatype *);
    int (*strct)(int, const int *, const ptrdiff_t *, const gcomm_datatype *, gcomm_datatype *);
    int (*subarray)(int, const int *, const int *, const int *, int, gcomm_datatype,
                    gcomm_datatype *);
    int (*resized)(gcomm_datatype, ptrdiff_t, ptrdiff_t, gcomm_datatype *);
    int (*commit)(gcomm_datatype *);
    int (*tfree)(gcomm_datatype *);
    int (*pack)(const void *, size_t, gcomm_datatype, void *, size_t, size_t *);
    int (*unpack)(const void *, size_t, size_t *, void *, size_t, gcomm_datatype);
    gcomm_datatype dbl, i32, chr, byte;
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
    SYM(contiguous, "gcomm_type_contiguous");
    SYM(vector, "gcomm_type_vector");
    SYM(hvector, "gcomm_type_hvector");
    SYM(indexed, "gcomm_type_indexed");
    SYM(strct, "gcomm_type_struct");
    SYM(subarray, "gcomm_type_subarray");
    SYM(resized, "gcomm_type_resized");
    SYM(commit, "gcomm_type_commit");
    SYM(tfree, "gcomm_type_free");
    SYM(pack, "gcomm_pack");
    SYM(unpack, "gcomm_unpack");
    SYM(dbl, "gcommi_type_DOUBLE");
    SYM(i32, "gcommi_type_INT");
    SYM(chr, "gcommi_type_CHAR");
    SYM(byte, "gcommi_type_BYTE");
#undef SYM
    return 0;
}

/* One instance of a shape: its type in one library, the count and the sizes. */
typedef struct {
    gcomm_datatype t;
    size_t incount, packed, span;
    char desc[64];
} inst_t;

#define TRY(call)                                                                             \
    do {                                                                                    \
        if ((call) != 0) return -1;                                                         \
    } while (0)

/* Builders: param from the shape table; 1 when no geometry fits the size, -1 on failure. */
static int build_vector(const lib_t *l, int bl, size_t target, inst_t *s)
{
    size_t count = target / (8 * (size_t)bl);
    if (count == 0 || count > INT_MAX) return 1;
    TRY(l->vector((int)count, bl, 2 * bl, l->dbl, &s->t));
    s->incount = 1;
    s->packed = count * 8 * (size_t)bl;
    s->span = ((count - 1) * 2 * (size_t)bl + (size_t)bl) * 8;
    snprintf(s->desc, sizeof s->desc, "count=%zu bl=%d stride=%d", count, bl, 2 * bl);
    return 0;
}

static int build_lower_tri(const lib_t *l, int param, size_t target, inst_t *s)
{
    (void)param;
    size_t n = 1;
    while (8 * n * (n + 1) / 2 < target) n++;
    if (n > 46340) return 1;
    int *len = malloc(n * sizeof *len), *disp = malloc(n * sizeof *disp);
    int rc = -1;
    if (len && disp) {
        for (size_t i = 0; i < n; i++) {
            len[i] = (int)(i + 1);
            disp[i] = (int)(i * n);
        }
        rc = l->indexed((int)n, len, disp, l->dbl, &s->t) == 0 ? 0 : -1;
    }
    free(len);
    free(disp);
    s->incount = 1;
    s->packed = 8 * n * (n + 1) / 2;
    s->span = 8 * n * n;
    snprintf(s->desc, sizeof s->desc, "N=%zu", n);
    return rc;
}

static int build_subarray4d(const lib_t *l, int param, size_t target, inst_t *s)
{
    (void)param;
    int p = 0;
    while ((size_t)8 << p < target) p++;
    int sizes[4], subsizes[4], starts[4];
    size_t volume = 1, sub = 1;
    for (int d = 0; d < 4; d++) {
        int e = p / 4 + (d >= 4 - p % 4 ? 1 : 0);
        subsizes[d] = 1 << e;
        sizes[d] = 2 * subsizes[d];
        starts[d] = subsizes[d] / 2;
        volume *= (size_t)sizes[d];
        sub *= (size_t)subsizes[d];
    }
    TRY(l->subarray(4, sizes, subsizes, starts, GCOMM_ORDER_C, l->dbl, &s->t));
    s->incount = 1;
    s->packed = 8 * sub;
    s->span = 8 * volume;
    snprintf(s->desc, sizeof s->desc, "%dx%dx%dx%d of %dx%dx%dx%d", subsizes[0], subsizes[1],
             subsizes[2], subsizes[3], sizes[0], sizes[1], sizes[2], sizes[3]);
    return 0;
}

typedef struct {
    double d;
    int i, j;
    char c;
} elem_t;

static int build_struct(const lib_t *l, int param, size_t target, inst_t *s)
{
    (void)param;
    const size_t elem_packed = sizeof(double) + 2 * sizeof(int) + 1;
    size_t count = (target + elem_packed - 1) / elem_packed;
    if (count > INT_MAX) return 1;
    int len[4] = {1, 1, 1, 1};
    ptrdiff_t disp[4] = {offsetof(elem_t, d), offsetof(elem_t, i), offsetof(elem_t, j),
                         offsetof(elem_t, c)};
    gcomm_datatype types[4] = {l->dbl, l->i32, l->i32, l->chr};
    gcomm_datatype raw;
    TRY(l->strct(4, len, disp, types, &raw));
    TRY(l->resized(raw, 0, sizeof(elem_t), &s->t));
    TRY(l->tfree(&raw));
    s->incount = count;
    s->packed = count * elem_packed;
    s->span = count * sizeof(elem_t);
    snprintf(s->desc, sizeof s->desc, "%zu x {d,i,i,c}", count);
    return 0;
}

static int build_transpose(const lib_t *l, int param, size_t target, inst_t *s)
{
    (void)param;
    size_t n = 1;
    while (8 * n * n < target) n++;
    if (n > 46340) return 1;
    gcomm_datatype col, col8;
    TRY(l->vector((int)n, 1, (int)n, l->dbl, &col));
    TRY(l->resized(col, 0, 8, &col8));
    TRY(l->contiguous((int)n, col8, &s->t));
    TRY(l->tfree(&col));
    TRY(l->tfree(&col8));
    s->incount = 1;
    s->packed = 8 * n * n;
    s->span = 8 * n * n;
    snprintf(s->desc, sizeof s->desc, "N=%zu", n);
    return 0;
}

/* --rows R:S: hvector of R-byte rows S bytes apart (param R, stride in rows_stride). */
static long rows_stride[64];
static int build_rows(const lib_t *l, int param, size_t target, inst_t *s)
{
    const long r = rows_stride[param * 2], st = rows_stride[param * 2 + 1];
    size_t count = target / (size_t)r;
    if (count == 0 || count > INT_MAX) return 1;
    TRY(l->hvector((int)count, (int)r, (ptrdiff_t)st, l->byte, &s->t));
    s->incount = 1;
    s->packed = count * (size_t)r;
    s->span = (count - 1) * (size_t)st + (size_t)r;
    snprintf(s->desc, sizeof s->desc, "%zu rows of %ld bytes, %ld apart", count, r, st);
    return 0;
}

typedef struct {
    char name[32];
    int param;
    int (*build)(const lib_t *, int, size_t, inst_t *);
} shape_t;

static const shape_t builtin[] = {
    {"vector_bl1", 1, build_vector},     {"vector_bl16", 16, build_vector},
    {"vector_bl256", 256, build_vector}, {"lower_tri", 0, build_lower_tri},
    {"subarray4d", 0, build_subarray4d}, {"struct", 0, build_struct},
    {"transpose", 0, build_transpose},
};
enum { NBUILTIN = sizeof builtin / sizeof builtin[0] };

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

    shape_t shapes[NBUILTIN + 32];
    int nshapes = 0;
    for (int s = 0; s < NBUILTIN; s++)
        if ((shape_list && bench_list_has(shape_list, builtin[s].name)) ||
            (!shape_list && !rows_list))
            shapes[nshapes++] = builtin[s];
    int nrows = 0;
    for (const char *p = rows_list; p && *p;) {
        char *end;
        long r = strtol(p, &end, 10), st = 2 * r;
        if (*end == ':') st = strtol(end + 1, &end, 10);
        if (r <= 0 || r > INT_MAX || st < r || (*end && *end != ',') || nrows == 32) {
            fprintf(stderr, "bench_pack_ab: bad --rows entry at '%s' (at most 32)\n", p);
            return 2;
        }
        rows_stride[2 * nrows] = r;
        rows_stride[2 * nrows + 1] = st;
        shape_t sh = {"", nrows++, build_rows};
        snprintf(sh.name, sizeof sh.name, "rows%ld:%ld", r, st);
        shapes[nshapes++] = sh;
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
            int ra = shapes[s].build(&la, shapes[s].param, target, &ia);
            int rb = shapes[s].build(&lb, shapes[s].param, target, &ib);
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
            la.tfree(&ia.t);
            lb.tfree(&ib.t);
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
