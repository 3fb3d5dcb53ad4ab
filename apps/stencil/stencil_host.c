/* stencil_host: the dCUDA paper's Fig. 2 stencil program (stencil_fig2.h, the same rank body
 * stencil_dcuda runs as GPU thread blocks) on host ranks: gcomm_launch_host runs every rank as a
 * thread of this process. The domain and decomposition are stencil_dcuda's, with this process's
 * ranks in the role of one GPU: one array with their lines back to back and a halo line on each
 * side, windows that overlap (a put between two ranks copies nothing and only notifies). What
 * `make run` runs on a machine without a GPU; the result is checked against the serial
 * reference.
 *
 * Usage: stencil_host [--ni N] [--nj-per-rank N] [--steps N] [--ranks N] [--reps N] [--check 0|1]
 * Exit: 0 verified (or --check 0), 1 wrong result or error. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcomm/gcomm.h"
#include "gcomm/rank.h"

#include "app_util.h"
#include "stencil_common.h"
#include "stencil_fig2.h"

typedef struct {
    double *in, *out;
    int jstride, len, steps;
    stencil_clock_t clk;
} host_args_t;

static void stencil_rank(gcomm_param_t param, void *arg)
{
    host_args_t *a = (host_args_t *)arg;
    stencil_fig2(param, a->in, a->out, a->jstride, a->len, a->steps, &a->clk);
}

int main(int argc, char **argv)
{
    options_t o;
    const stencil_prog_t pg = {"", "--ranks", "host ranks (default 8)", 0};
    int prc = stencil_parse(argc, argv, &o, &pg, 1);
    if (prc >= 0) return prc;
    if (o.blocks == 0) o.blocks = 8;
    GCOMM_CHECK(gcomm_init());
    const int ranks = (int)o.blocks, jstride = (int)o.ni, len = (int)(o.nj_per_rank * o.ni);
    const long nj = (long)ranks * o.nj_per_rank;
    const size_t elems = (size_t)(nj + 2) * jstride;
    printf("stencil_host (dCUDA Fig. 2 on gcomm host ranks, no GPU used): %d host ranks of one "
           "thread; global %ld x %ld values (ni x nj, %ld lines per rank), %ld steps\n",
           ranks, o.ni, nj, o.nj_per_rank, o.steps);
    double *init = (double *)malloc(elems * sizeof(double));
    double *a = (double *)malloc(elems * sizeof(double));
    double *b = (double *)malloc(elems * sizeof(double));
    double *t = (double *)malloc(sizeof(double) * (size_t)(o.reps + 1));
    if (!init || !a || !b || !t) {
        fprintf(stderr, "stencil_host: out of memory (%zu bytes)\n", 3 * elems * sizeof(double));
        return 1;
    }
    for (size_t e = 0; e < elems; e++) init[e] = app_value01(e);
    host_args_t args = {a, b, jstride, len, (int)o.steps, {0, 0}};
    /* one warm-up launch, then o.reps timed ones from the same input */
    for (int r = 0; r <= o.reps; r++) {
        memcpy(a, init, elems * sizeof(double));
        memcpy(b, init, elems * sizeof(double));
        GCOMM_CHECK(gcomm_launch_host(stencil_rank, ranks, &args));
        t[r] = 1e-9 * (double)(args.clk.end - args.clk.start);
    }
    double it = app_step_time(t, o.reps, o.steps);
    int verified = -1;
    double rel = 0;
    if (o.check) {
        double *ra = (double *)malloc(elems * sizeof(double));
        double *rb = (double *)malloc(elems * sizeof(double));
        if (!ra || !rb) {
            fprintf(stderr, "stencil_host: out of memory for the reference\n");
            return 1;
        }
        memcpy(ra, init, elems * sizeof(double));
        memcpy(rb, init, elems * sizeof(double));
        const double *want = stencil_reference(ra, rb, o.ni, nj, o.steps);
        const double *got = (o.steps % 2) ? b : a;
        double err[2] = {0, 0};
        for (size_t e = (size_t)jstride; e < (size_t)(nj + 1) * jstride; e++)
            app_err_add(err, got[e], want[e]);
        rel = app_err_rel(err);
        verified = rel < 1e-12;
        free(ra);
        free(rb);
    }
    printf("time per iteration: %.3f us (between world barriers, median of %ld)\n", it * 1e6,
           o.reps);
    app_print_verified(verified, rel);
    GCOMM_CHECK(gcomm_finalize());
    free(init);
    free(a);
    free(b);
    free(t);
    return verified == 0 ? 1 : 0;
}
