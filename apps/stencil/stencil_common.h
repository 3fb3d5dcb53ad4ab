/* What the two drivers of the Fig. 2 program (stencil_dcuda.cu on GPUs, stencil_host.c on host
 * ranks) share: options and the serial reference, which its MPI-CUDA twin (stencil_mpicuda.cu)
 * also checks against. Host code; static inline, so that a program using only a part gets no
 * unused-function warning. */
#ifndef GCOMM_APPS_STENCIL_COMMON_H
#define GCOMM_APPS_STENCIL_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_util.h"

typedef struct {
    long ni, nj_per_rank, steps, blocks, threads, reps, check;
} options_t;

/* What differs between the programs' usage: how they are started, their rank-count option and
 * what it means (lines after the first indented to the help column). */
typedef struct {
    const char *launcher;   /* "" or "mpirun -n P " */
    const char *ranks_opt;  /* "--blocks-per-gpu", "--ranks", "--ranks-per-gpu" */
    const char *ranks_help; /* the option's help text */
    int ranks_required;     /* listed first in the synopsis, without brackets */
} stencil_prog_t;

static inline void stencil_usage(const char *prog, const stencil_prog_t *pg)
{
    if (pg->ranks_required)
        fprintf(stderr, "usage: %s%s %s N [--ni N] [--nj-per-rank N] [--steps N]\n", pg->launcher,
                prog, pg->ranks_opt);
    else
        fprintf(stderr, "usage: %s%s [--ni N] [--nj-per-rank N] [--steps N] [%s N]\n",
                pg->launcher, prog, pg->ranks_opt);
    fprintf(stderr,
            "          [--threads N] [--reps N] [--check 0|1]\n"
            "  %-16s %s\n"
            "  --ni             values per line, the paper's jstride (default 256)\n"
            "  --nj-per-rank    lines per rank (default 16)\n"
            "  --steps          iterations (default 100; at most 300 with --check 1)\n"
            "  --threads        threads per block (default 128; host ranks: 1)\n"
            "  --reps           timed launches after one warm-up, median reported (default 3)\n"
            "  --check          compare with the serial CPU reference (default 1)\n",
            pg->ranks_opt, pg->ranks_help);
}

/* Parses the options into *o (the rank count into o->blocks, 0 when not given). Returns -1 to
 * go on, else the exit code (0 after --help, 2 for a bad option); prints usage and complaints
 * only when `print` (one process of several that all parse the same). */
static inline int stencil_parse(int argc, char **argv, options_t *o, const stencil_prog_t *pg,
                                int print)
{
    o->ni = 256;
    o->nj_per_rank = 16;
    o->steps = 100;
    o->blocks = 0;
    o->threads = 128;
    o->reps = 3;
    o->check = 1;
    for (int i = 1; i < argc; i++) {
        if (app_opt_long(argc, argv, &i, "--ni", &o->ni) ||
            app_opt_long(argc, argv, &i, "--nj-per-rank", &o->nj_per_rank) ||
            app_opt_long(argc, argv, &i, "--steps", &o->steps) ||
            app_opt_long(argc, argv, &i, pg->ranks_opt, &o->blocks) ||
            app_opt_long(argc, argv, &i, "--threads", &o->threads) ||
            app_opt_long(argc, argv, &i, "--reps", &o->reps) ||
            app_opt_long(argc, argv, &i, "--check", &o->check))
            continue;
        if (print) stencil_usage(argv[0], pg);
        return strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
    const char *bad = NULL;
    if (o->ni < 2) bad = "--ni must be at least 2";
    else if (o->nj_per_rank < 1) bad = "--nj-per-rank must be at least 1";
    else if (o->steps < 0) bad = "--steps must not be negative";
    else if (o->check && o->steps > 300) bad = "--steps above 300 overflows doubles; use --check 0";
    else if (o->blocks < 0) bad = "the rank count must not be negative";
    else if (o->threads < 1 || o->threads > 1024) bad = "--threads must be 1..1024";
    else if (o->reps < 1) bad = "--reps must be at least 1";
    /* the kernel indexes a rank's window with int, as the figure does */
    else if ((double)o->ni * (double)(o->nj_per_rank + 2) > 2147483647.0)
        bad = "--ni * (--nj-per-rank + 2) must fit an int";
    if (bad) {
        if (print) fprintf(stderr, "%s\n", bad);
        return 2;
    }
    return -1;
}

/* The serial reference: the same flattened formula over the global array (nj + 2 lines, the
 * first and last fixed), steps times; returns the array holding the result. -4 * x is exact in
 * binary, so an FMA on either side rounds the same as a multiply and an add: the GPU result
 * should match bit for bit, and the check's tolerance only guards against a compiler
 * reassociating the sum. */
static inline double *stencil_reference(double *a, double *b, long ni, long nj, long steps)
{
    const long jstride = ni;
    for (long s = 0; s < steps; s++) {
        for (long idx = jstride; idx < jstride + nj * jstride; idx++)
            b[idx] = -4.0 * a[idx] + a[idx + 1] + a[idx - 1] + a[idx + jstride] + a[idx - jstride];
        double *t = a;
        a = b;
        b = t;
    }
    return a;
}

#endif /* GCOMM_APPS_STENCIL_COMMON_H */
