/* bench_copy_cpu: gcomm_copy between two layouts of a matrix on the host, against MPI.
 *
 * A layout change (a transpose, rows into columns) is one gcomm_copy; with MPI it is an MPI_Pack
 * from the source type and an MPI_Unpack into the destination type through a buffer of the
 * packed bytes (what a program does without a copy call, and what MPI_Sendrecv to itself does
 * inside). For N x N doubles this program times, in interleaved rounds (bench_measure):
 *   gcomm    gcomm_copy(src, srccount, srctype, dst, dstcount, dsttype)
 *   MPI      MPI_Pack of the source, then MPI_Unpack into the destination
 *   memcpy   one memcpy of the packed byte count (the ceiling)
 * for four copies between the layouts
 *   C  the contiguous array of N * N doubles,
 *   P  the rows of a matrix whose rows are 8 doubles longer (vector(N, N, N + 8)),
 *   T  the columns of that padded matrix (contiguous(N, resized(vector(N, 1, N + 8), 8))):
 * C -> T and T -> C (gcomm_copy unpacks from or packs into the contiguous side without a bounce
 * buffer), P -> T and T -> P (through its bounce buffer in chunks of whole columns). After the
 * timed rounds gcomm's destination is compared byte for byte with MPI's, both poisoned alike
 * before (the padding must keep its bytes). Exit status 1 when one differs or a call fails.
 *
 *   bench_copy_cpu [--sides N,N,...] [--min-time S] [--csv FILE] [--quick] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "bench_util.h"
#include "gcomm/datatype.h"
#include "gcomm/status.h"

#define PAD 8

typedef struct {
    const char *name;
    gcomm_datatype g;
    MPI_Datatype m;
    int count;
    size_t span; /* bytes the layout covers */
} layout_t;

typedef struct {
    const layout_t *src, *dst;
    char *in, *out, *buf; /* source, destination, MPI's packed buffer */
    size_t bytes;
} copy_t;

static int op_gcomm(void *arg)
{
    copy_t *c = arg;
    return gcomm_copy(c->in, (size_t)c->src->count, c->src->g, c->out, (size_t)c->dst->count,
                      c->dst->g, NULL) != GCOMM_SUCCESS;
}

static int op_mpi(void *arg)
{
    copy_t *c = arg;
    int pos = 0;
    if (MPI_Pack(c->in, c->src->count, c->src->m, c->buf, (int)c->bytes, &pos, MPI_COMM_SELF))
        return 1;
    pos = 0;
    return MPI_Unpack(c->buf, (int)c->bytes, &pos, c->out, c->dst->count, c->dst->m,
                      MPI_COMM_SELF) != MPI_SUCCESS;
}

static int op_memcpy(void *arg)
{
    copy_t *c = arg;
    memcpy(c->buf, c->in, c->bytes);
    return 0;
}

/* The three layouts of an n x n matrix; 0 on success. */
static int make_layouts(int n, layout_t *l)
{
    gcomm_datatype col, colx;
    MPI_Datatype mcol, mcolx;
    const size_t padded = ((size_t)(n - 1) * (size_t)(n + PAD) + (size_t)n) * 8;
    l[0] = (layout_t){"C", GCOMM_DOUBLE, MPI_DOUBLE, n * n, (size_t)n * (size_t)n * 8};
    l[1] = (layout_t){"P", GCOMM_DATATYPE_NULL, MPI_DATATYPE_NULL, 1, padded};
    l[2] = (layout_t){"T", GCOMM_DATATYPE_NULL, MPI_DATATYPE_NULL, 1, padded};
    if (gcomm_type_vector(n, n, n + PAD, GCOMM_DOUBLE, &l[1].g) ||
        gcomm_type_commit(&l[1].g) || gcomm_type_vector(n, 1, n + PAD, GCOMM_DOUBLE, &col) ||
        gcomm_type_resized(col, 0, 8, &colx) || gcomm_type_contiguous(n, colx, &l[2].g) ||
        gcomm_type_commit(&l[2].g))
        return -1;
    gcomm_type_free(&colx);
    gcomm_type_free(&col);
    MPI_Type_vector(n, n, n + PAD, MPI_DOUBLE, &l[1].m);
    MPI_Type_commit(&l[1].m);
    MPI_Type_vector(n, 1, n + PAD, MPI_DOUBLE, &mcol);
    MPI_Type_create_resized(mcol, 0, 8, &mcolx);
    MPI_Type_contiguous(n, mcolx, &l[2].m);
    MPI_Type_commit(&l[2].m);
    MPI_Type_free(&mcolx);
    MPI_Type_free(&mcol);
    return 0;
}

static void free_layouts(layout_t *l)
{
    for (int i = 1; i < 3; i++) {
        gcomm_type_free(&l[i].g);
        MPI_Type_free(&l[i].m);
    }
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_copy_cpu [--sides N,N,...] [--min-time S] [--csv FILE] [--quick]\n"
            "  --sides LIST   matrix sides (default 362,1449,2897: 1, 16 and 64 MiB)\n"
            "  --min-time S   timed seconds per operation and measurement (default 0.2)\n"
            "  --quick        smoke run: sides 181,362, 0.02 s per measurement\n"
            "  --csv FILE     CSV output (default stdout; the table then goes to stderr)\n");
}

int main(int argc, char **argv)
{
    const char *csv_path = NULL, *sides_arg = "362,1449,2897";
    double min_time = -1.0;
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            quick = 1;
        } else if (strcmp(a, "--sides") == 0 && v) {
            sides_arg = v;
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
    if (quick) sides_arg = "181,362";
    size_t sides[16];
    const int nsides = bench_parse_size_list("bench_copy_cpu", "side", sides_arg, sides, 16);
    if (nsides < 0) return 2;
    for (int s = 0; s < nsides; s++)
        if (sides[s] < 2 || sides[s] > 20000) {
            fprintf(stderr, "bench_copy_cpu: bad side %zu (2 to 20000)\n", sides[s]);
            return 2;
        }
    MPI_Init(&argc, &argv);
    bench_opts_t opts = BENCH_OPTS_DEFAULT;
    opts.min_time_s = min_time >= 0.0 ? min_time : quick ? 0.02 : 0.2;
    opts.warm_calls = quick ? 1 : 5;
    opts.warm_max_s = 0.05;

    FILE *tab = csv_path ? stdout : stderr;
    bench_print_environment(tab, argc, argv);
    static const char *const columns[] = {"copy",   "n",         "bytes",          "gcomm_s",
                                          "mpi_s",  "memcpy_s",  "speedup_vs_mpi", "speedup_p25",
                                          "speedup_p75", "frac_of_memcpy"};
    FILE *csv = bench_csv_open(csv_path, columns, (int)(sizeof columns / sizeof *columns));
    if (!csv) return 1;
    fprintf(tab, "%-6s %6s %10s %10s %10s %10s %7s %13s %7s\n", "copy", "n", "bytes", "gcomm us",
            "MPI us", "memcpy us", "x MPI", "[q1-q3]", "% mcpy");
    static const int pairs[4][2] = {{0, 2}, {2, 0}, {1, 2}, {2, 1}};
    int failures = 0;
    for (int s = 0; s < nsides; s++) {
        const int n = (int)sides[s];
        layout_t l[3];
        if (make_layouts(n, l) != 0) {
            fprintf(stderr, "bench_copy_cpu: types: %s\n", gcomm_last_error_detail());
            return 1;
        }
        const size_t bytes = (size_t)n * (size_t)n * 8, span = l[1].span;
        char *in = bench_alloc(span), *out = bench_alloc(span), *ref = bench_alloc(span),
             *buf = bench_alloc(bytes);
        if (!in || !out || !ref || !buf) {
            fprintf(stderr, "bench_copy_cpu: out of memory\n");
            return 1;
        }
        bench_fill_random(in, span, 0xc0b1 + (uint64_t)n);
        for (int p = 0; p < 4; p++) {
            copy_t c = {&l[pairs[p][0]], &l[pairs[p][1]], in, out, buf, bytes};
            bench_op_t ops[3] = {{"gcomm_copy", op_gcomm, NULL, &c},
                                 {"MPI_Pack+Unpack", op_mpi, NULL, &c},
                                 {"memcpy", op_memcpy, NULL, &c}};
            bench_result_t res[3];
            opts.ratio_ref = 1; /* gcomm's speed-up over MPI, per round */
            if (bench_measure(ops, 3, &opts, res) != 0) {
                fprintf(stderr, "bench_copy_cpu: %s -> %s: %s\n", c.src->name, c.dst->name,
                        gcomm_last_error_detail());
                failures++;
                continue;
            }
            /* the outputs: gcomm's and MPI's into buffers poisoned alike */
            memset(out, 0x5a, span);
            memset(ref, 0x5a, span);
            const int bad_g = op_gcomm(&c);
            c.out = ref;
            const int bad_m = op_mpi(&c);
            if (bad_g || bad_m || memcmp(out, ref, c.dst->span) != 0) {
                fprintf(stderr, "FAIL %s -> %s, n = %d: gcomm_copy's output differs from MPI's\n",
                        c.src->name, c.dst->name, n);
                failures++;
            }
            char name[8];
            snprintf(name, sizeof name, "%s>%s", c.src->name, c.dst->name);
            fprintf(csv, "%s,%d,%zu,%.6e,%.6e,%.6e,%.4f,%.4f,%.4f,%.4f\n", name, n, bytes,
                    res[0].median_s, res[1].median_s, res[2].median_s, res[0].ratio_median,
                    res[0].ratio_p25, res[0].ratio_p75, res[2].median_s / res[0].median_s);
            fflush(csv);
            if (csv != tab)
                fprintf(tab, "%-6s %6d %10zu %10.1f %10.1f %10.1f %6.2fx [%5.2f-%5.2f] %6.1f\n",
                        name, n, bytes, res[0].median_s * 1e6, res[1].median_s * 1e6,
                        res[2].median_s * 1e6, res[0].ratio_median, res[0].ratio_p25,
                        res[0].ratio_p75, 100.0 * res[2].median_s / res[0].median_s);
        }
        free(in);
        free(out);
        free(ref);
        free(buf);
        free_layouts(l);
    }
    fprintf(tab, "%s\n", failures ? "FAILED" : "all outputs checked equal to MPI's");
    bench_csv_close(csv);
    MPI_Finalize();
    return failures ? 1 : 0;
}
