/* Benchmark helpers: see bench_util.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime, posix_memalign under -std=c11 (the build defines it too) */
#endif
#include "bench_util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double bench_gbps(size_t bytes, double seconds)
{
    return seconds > 0.0 ? (double)bytes / seconds * 1e-9 : 0.0;
}

static double thread_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds for reps calls of op, or < 0 on error. *clean is set to 0 when the calling thread was
 * not on a CPU for at least 95% of that time (descheduled by a neighbour: the sample says nothing
 * about the operation). Operations that time themselves are always clean. */
static double op_time(const bench_op_t *op, long reps, int *clean)
{
    *clean = 1;
    if (op->run)
        return op->run(op->arg, reps);
    double c0 = thread_cpu_now(), t0 = bench_now();
    for (long i = 0; i < reps; i++)
        if (op->call(op->arg) != 0)
            return -1.0;
    double t = bench_now() - t0, c = thread_cpu_now() - c0;
    *clean = c >= 0.95 * t;
    return t;
}

/* Calls per sample so that one sample lasts about batch_s. Doubles reps until a batch takes at
 * least half of batch_s (these batches are warm-up too), then scales. *call_s: seconds per call
 * in the last batch. */
static long op_calibrate(const bench_op_t *op, double batch_s, double *call_s)
{
    long reps = 1;
    int clean;
    for (;;) {
        double t = op_time(op, reps, &clean);
        if (t < 0.0)
            return -1;
        if (t >= 0.5 * batch_s || reps >= (1L << 30)) {
            *call_s = t / (double)reps;
            long r = (long)((double)reps * batch_s / (t > 0.0 ? t : 1e-9));
            return r < 1 ? 1 : r;
        }
        reps *= 2;
    }
}

typedef struct {
    double *v;     /* seconds per call of every sample */
    char *clean;   /* per sample: thread stayed on a CPU */
    long n, cap, nclean;
    double total_s, clean_s;
    long reps, warm_reps;
    int done;
} op_state_t;

static int state_push(op_state_t *s, double v, int clean)
{
    if (s->n == s->cap) {
        long cap = s->cap ? 2 * s->cap : 64;
        double *nv = realloc(s->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return -1;
        s->v = nv;
        char *nc = realloc(s->clean, (size_t)cap);
        if (!nc)
            return -1;
        s->clean = nc;
        s->cap = cap;
    }
    s->v[s->n] = v;
    s->clean[s->n] = (char)clean;
    s->n++;
    return 0;
}

int bench_measure(const bench_op_t *ops, int nops, const bench_opts_t *opts,
                  bench_result_t *results)
{
    bench_opts_t o = BENCH_OPTS_DEFAULT;
    if (opts)
        o = *opts;
    if (o.min_runs < 1)
        o.min_runs = 1;
    if (o.warmup < 1)
        o.warmup = 1;
    op_state_t *st = calloc((size_t)nops, sizeof *st);
    if (!st)
        return -1;
    int rc = 0, clean;
    for (int i = 0; i < nops && rc == 0; i++) {
        double call_s = 0.0;
        if (op_time(&ops[i], o.warmup, &clean) < 0.0 ||
            (st[i].reps = op_calibrate(&ops[i], o.batch_s, &call_s)) < 0) {
            fprintf(stderr, "bench: operation '%s' failed\n", ops[i].name);
            rc = -1;
        }
        if (o.warm_s > 0.0 && o.batch_s > 0.0) {
            st[i].warm_reps = (long)((double)st[i].reps * o.warm_s / o.batch_s + 0.5);
            if (st[i].warm_reps < 1)
                st[i].warm_reps = 1;
        }
        long calls = o.warm_calls;
        if (o.warm_max_s > 0.0 && call_s > 0.0 && (double)calls * call_s > o.warm_max_s)
            calls = (long)(o.warm_max_s / call_s);
        if (st[i].warm_reps < calls)
            st[i].warm_reps = calls;
    }
    int left = rc == 0 ? nops : 0;
    int order[64];
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < nops && i < 64; i++)
        order[i] = i;
    while (left > 0) {
        /* a new order every round (Fisher-Yates), so that each operation follows each other one
         * equally often: what the previous operation left in the caches is no one's advantage */
        for (int k = (nops < 64 ? nops : 64) - 1; k > 0; k--) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            int j = (int)(rng % (uint64_t)(k + 1)), x = order[k];
            order[k] = order[j];
            order[j] = x;
        }
        for (int k = 0; k < nops && left > 0; k++) {
            int i = nops <= 64 ? order[k] : k;
            op_state_t *s = &st[i];
            if (s->done)
                continue;
            double t = 0.0;
            if (s->warm_reps > 0)
                t = op_time(&ops[i], s->warm_reps, &clean);
            if (t >= 0.0)
                t = op_time(&ops[i], s->reps, &clean);
            if (t < 0.0) {
                fprintf(stderr, "bench: operation '%s' failed\n", ops[i].name);
                rc = -1;
                left = 0;
                break;
            }
            if (state_push(s, t / (double)s->reps, clean) != 0) {
                rc = -1;
                left = 0;
                break;
            }
            s->total_s += t;
            if (clean) {
                s->nclean++;
                s->clean_s += t;
            }
            if ((s->nclean >= o.min_runs && s->clean_s >= o.min_time_s) ||
                (s->n >= 3 && s->total_s >= o.max_time_s)) {
                s->done = 1;
                left--;
            }
        }
    }
    /* Paired ratios against the reference operation. Every operation takes one sample per round
     * until it is done, so sample k of any operation is from round k. */
    int ref = o.ratio_ref >= 0 && o.ratio_ref < nops ? o.ratio_ref : 0;
    double *ratios = NULL;
    if (rc == 0) {
        long most = 0;
        for (int i = 0; i < nops; i++)
            most = st[i].n > most ? st[i].n : most;
        ratios = malloc((size_t)(most ? most : 1) * sizeof *ratios);
        if (!ratios)
            rc = -1;
    }
    for (int i = 0; i < nops && rc == 0; i++) {
        const op_state_t *r = &st[ref], *s = &st[i];
        long m = 0;
        for (long k = 0; k < s->n && k < r->n; k++)
            if (s->clean[k] && r->clean[k] && s->v[k] > 0.0 && r->v[k] > 0.0)
                ratios[m++] = r->v[k] / s->v[k];
        /* an odd count (the last pair dropped) and quartiles by rank, the same number of ranks
         * from either end: then the figures of the inverse ratios are exactly the inverses */
        if (m > 1 && m % 2 == 0)
            m--;
        bench_result_t *res = &results[i];
        res->ratio_pairs = m;
        res->ratio_median = bench_median(ratios, (size_t)m); /* sorts */
        long q = (m - 1) / 4;
        res->ratio_p25 = m ? ratios[q] : 0.0;
        res->ratio_p75 = m ? ratios[m - 1 - q] : 0.0;
    }
    free(ratios);
    for (int i = 0; i < nops; i++) {
        op_state_t *s = &st[i];
        if (rc == 0) {
            /* the median of the clean samples; of all of them when fewer than 3 are clean */
            long m = 0;
            for (long k = 0; k < s->n; k++)
                if (s->clean[k] || s->nclean < 3)
                    s->v[m++] = s->v[k];
            bench_result_t *r = &results[i];
            r->samples = m;
            r->discarded = s->n - m;
            r->reps = s->reps;
            r->median_s = bench_median(s->v, (size_t)m); /* sorts */
            r->min_s = s->v[0];
            r->max_s = s->v[m - 1];
        }
        free(s->v);
        free(s->clean);
    }
    free(st);
    return rc;
}

int bench_parse_size_list(const char *prog, const char *what, const char *list, size_t *out,
                          int max)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    int n = 0;
    for (char *tok = strtok(buf, ","); tok && n < max; tok = strtok(NULL, ",")) {
        if (bench_parse_size(tok, &out[n]) != 0 || out[n] == 0) {
            fprintf(stderr, "%s: bad %s '%s'\n", prog, what, tok);
            return -1;
        }
        n++;
    }
    return n;
}

int bench_parse_size(const char *s, size_t *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
        return -1;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case '\0': break;
    default: return -1;
    }
    if (*end == 'i' || *end == 'I')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || (shift && v > (~0ull >> shift)))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

const char *bench_format_size(size_t bytes, char *buf, size_t buflen)
{
    static const char suffix[] = "KMGT";
    int k = -1;
    size_t v = bytes;
    while (v >= 1024 && v % 1024 == 0 && k < 3) {
        v /= 1024;
        k++;
    }
    if (k < 0)
        snprintf(buf, buflen, "%zu", bytes);
    else
        snprintf(buf, buflen, "%zu%c", v, suffix[k]);
    return buf;
}

void bench_fill_random(void *buf, size_t n, uint64_t seed)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t x = seed ? seed : 0x9e3779b97f4a7c15ull;
    unsigned char *p = buf;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t w = x * 0x2545f4914f6cdd1dull;
        if ((w - ones) & ~w & highs) /* some byte is zero: make it 1 */
            for (int b = 0; b < 64; b += 8)
                if (((w >> b) & 0xff) == 0)
                    w |= 1ull << b;
        memcpy(p + i, &w, 8);
    }
    for (; i < n; i++) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        unsigned char c = (unsigned char)((x * 0x2545f4914f6cdd1dull) >> 56);
        p[i] = c ? c : 1;
    }
}

static int huge_pages;
void bench_set_huge_pages(int on) { huge_pages = on; }
int bench_huge_pages(void) { return huge_pages; }

void *bench_alloc(size_t n)
{
    void *p = NULL;
    long page = sysconf(_SC_PAGESIZE);
    size_t align = page > 0 ? (size_t)page : 4096;
    if (huge_pages) { /* whole 2 MiB pages, so that the kernel can back all of it */
        align = (size_t)2 << 20;
        n = (n + align - 1) & ~(align - 1);
    }
    if (posix_memalign(&p, align, n ? n : 1) != 0)
        return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (huge_pages) (void)madvise(p, n, MADV_HUGEPAGE);
#endif
    return p;
}

size_t bench_huge_page_bytes(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f) return 0;
    char line[256];
    size_t kib = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "AnonHugePages:", 14) == 0) kib = (size_t)strtoull(line + 14, NULL, 10);
    fclose(f);
    return kib << 10;
}

size_t bench_find_not(const void *buf, size_t n, unsigned char value)
{
    const unsigned char *p = buf;
    unsigned char ref[4096];
    memset(ref, value, sizeof ref);
    size_t i = 0;
    while (i < n) {
        size_t chunk = n - i < sizeof ref ? n - i : sizeof ref;
        if (memcmp(p + i, ref, chunk) != 0)
            break;
        i += chunk;
    }
    for (; i < n; i++)
        if (p[i] != value)
            return i;
    return n;
}

FILE *bench_csv_open(const char *path, const char *const *columns, int ncolumns)
{
    FILE *f = (!path || strcmp(path, "-") == 0) ? stdout : fopen(path, "w");
    if (!f)
        return NULL;
    for (int i = 0; i < ncolumns; i++)
        fprintf(f, "%s%s", i ? "," : "", columns[i]);
    fputc('\n', f);
    return f;
}

void bench_csv_close(FILE *f)
{
    if (f && f != stdout)
        fclose(f);
    else if (f)
        fflush(f);
}

void bench_print_environment(FILE *f, int argc, char **argv)
{
    char model[256] = "unknown CPU";
    FILE *ci = fopen("/proc/cpuinfo", "r");
    if (ci) {
        char line[512];
        while (fgets(line, sizeof line, ci)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *c = strchr(line, ':');
                if (c) {
                    c++;
                    while (*c == ' ' || *c == '\t')
                        c++;
                    c[strcspn(c, "\n")] = '\0';
                    snprintf(model, sizeof model, "%s", c);
                }
                break;
            }
        }
        fclose(ci);
    }
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    char load[64] = "?";
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fgets(load, sizeof load, la))
            load[strcspn(load, "\n")] = '\0';
        fclose(la);
    }
    fprintf(f, "# %s, %ld online CPUs, %s, load average %s\n# command:", model,
            sysconf(_SC_NPROCESSORS_ONLN), date, load);
    for (int i = 0; i < argc; i++)
        fprintf(f, " %s", argv[i]);
    fputc('\n', f);
}

int bench_list_has(const char *list, const char *name)
{
    if (!list) return 1;
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == len && strncmp(p, name, l) == 0) return 1;
        p += l + (e ? 1 : 0);
    }
    return 0;
}
