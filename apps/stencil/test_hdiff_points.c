/* The point walk of the horizontal diffusion kernels (hd_walk_t in hdiff_common.h) against the
 * direct form below, for every point a thread of a block or a grid visits: layouts of one to many
 * lines, steps below a line, of whole lines, of several levels, and steps that do not divide a
 * line. CPU only (the functions are GCOMM_HD). Built with OpenMP, it also checks that the serial
 * reference gives the same bits on every core as on one (the GPU variants are checked against
 * it bit for bit). */
#include <stdio.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "hdiff_common.h"

/* The reference: own point e of a part with own lines 1 .. nj, by the definition (i fastest,
 * then the part's lines, then levels). */
static size_t own_point(hd_layout_t L, long nj, size_t e, int *i)
{
    *i = (int)(e % (size_t)L.ni);
    const size_t row = e / (size_t)L.ni;
    return hd_at(L, *i, 1 + (long)(row % (size_t)nj), (int)(row / (size_t)nj));
}

static long check(int ni, long nj, int nk, size_t step)
{
    hd_layout_t L;
    L.ni = ni;
    L.nk = nk;
    L.lines = nj + 2;
    const size_t own = (size_t)ni * (size_t)nj * (size_t)nk;
    const hd_step_t s = hd_step_make(L, nj, step);
    long bad = 0;
    for (size_t t = 0; t < step && t < own; t++) { /* every thread of the block or grid */
        size_t e = t, visits = 0;
        hd_walk_t w;
        for (w = hd_walk_begin(L, nj, t, step, s); w.e < w.own; hd_walk_next(L, &w), e += step) {
            int i;
            size_t c = own_point(L, nj, e, &i);
            visits++;
            if (w.e != e || c != w.q.c || i != w.q.i) {
                if (bad++ < 5)
                    fprintf(stderr, "ni %d nj %ld nk %d step %zu: point %zu at %zu (i %d), walk "
                            "says %zu at %zu (i %d)\n", ni, nj, nk, step, e, c, i, w.e, w.q.c,
                            w.q.i);
            }
        }
        if (w.own != own || visits != (own - t + step - 1) / step) {
            if (bad++ < 5)
                fprintf(stderr, "ni %d nj %ld nk %d step %zu: thread %zu visited %zu points of "
                        "%zu\n", ni, nj, nk, step, t, visits, w.own);
        }
    }
    return bad;
}

int main(void)
{
    const int nis[] = {1, 7, 32, 128};
    const long njs[] = {1, 2, 3, 5, 64};
    const int nks[] = {1, 4, 26};
    const size_t steps[] = {1, 5, 64, 100, 128, 512, 1000, 4096, 100003};
    long bad = 0, cases = 0;
    for (unsigned a = 0; a < sizeof(nis) / sizeof(nis[0]); a++)
        for (unsigned b = 0; b < sizeof(njs) / sizeof(njs[0]); b++)
            for (unsigned c = 0; c < sizeof(nks) / sizeof(nks[0]); c++)
                for (unsigned d = 0; d < sizeof(steps) / sizeof(steps[0]); d++) {
                    bad += check(nis[a], njs[b], nks[c], steps[d]);
                    cases++;
                }
    printf("test_hdiff_points: %ld layouts x steps, %ld points walked wrong\n", cases, bad);
#ifdef _OPENMP
    /* an uneven domain (lines not a multiple of the threads), enough steps for the limiter */
    hd_layout_t L1, Ln;
    omp_set_num_threads(1);
    double *one = hd_reference_result(37, 45, 3, 9, &L1);
    omp_set_num_threads(omp_get_num_procs() > 1 ? omp_get_num_procs() : 4);
    double *many = hd_reference_result(37, 45, 3, 9, &Ln);
    const size_t n = hd_plane(L1) * (size_t)L1.nk;
    const int same = one && many && memcmp(one, many, n * sizeof(double)) == 0;
    printf("test_hdiff_points: reference on 1 and %d threads: %s\n", omp_get_max_threads(),
           same ? "same bits" : "DIFFERENT");
    free(one);
    free(many);
    if (!same) bad++;
#endif
    return bad ? 1 : 0;
}
