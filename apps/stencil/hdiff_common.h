/* The horizontal diffusion mini-app's mathematics, written once for the GPU kernels of both
 * variants (hdiff_gcomm, hdiff_mpicuda) and the serial CPU reference.
 *
 * What it computes: the simplified horizontal diffusion of the COSMO atmospheric model that the
 * dCUDA paper's stencil mini-app runs (Gysi et al., SC'16, Section V "Stencil Program", which cites
 * the version of Gysi, Grosser, Hoefler, "MODESTO", ICS'15; the same four stencils are the
 * "horizontal diffusion" example of STELLA and GridTools). Four dependent stencils per iteration
 * on a 3-D field (i, j, k), each k-level independently:
 *
 *   lap(i,j) = 4 in(i,j) - (in(i+1,j) + in(i-1,j) + in(i,j+1) + in(i,j-1))      laplacian
 *   flx(i,j) = lap(i+1,j) - lap(i,j),  set to 0 where flx(i,j) * (in(i+1,j) - in(i,j)) > 0
 *   fly(i,j) = lap(i,j+1) - lap(i,j),  set to 0 where fly(i,j) * (in(i,j+1) - in(i,j)) > 0
 *   out(i,j) = in(i,j) - coeff(i,j) * (flx(i,j) - flx(i-1,j) + fly(i,j) - fly(i,j-1))
 *
 * (the flux limiter keeps the fourth-order diffusion from creating new extrema). The stencils read
 * between two and four neighbours in the ij-plane, as the paper says. out becomes the next
 * iteration's in.
 *
 * Boundaries (the paper does not say; our choice): periodic in i and in j, so every rank has two
 * neighbours and the work is perfectly balanced, as the paper's evaluation assumes. Periodicity in
 * i is index arithmetic inside a line (i is never decomposed); periodicity in j goes through the
 * halo exchange (the last rank's right neighbour is rank 0).
 *
 * Layout (COSMO's): i fastest, then j, then k, so one j-line of one k-level is contiguous (ni
 * values) and a j-halo is nk such lines, one per k-level. An array of a GPU or a rank holds
 * `lines` j-lines per k-level: its own lines 1..nj and one halo line on each side (0 and nj+1).
 *
 * Decomposition in j with three halo exchanges per iteration (the paper: "three compute phases
 * each of them followed by a halo exchange ... four one-point halos per loop iteration"):
 *   phase 1  lap on own lines      -> lap halo: own first line to the left neighbour's right halo
 *                                     (fly(j) reads lap(j+1))
 *   phase 2  flx, fly on own lines -> fly halo: own last line to the right neighbour's left halo
 *                                     (out(j) reads fly(j-1); flx needs no j-halo)
 *   phase 3  out on own lines      -> out halo, both sides: it is the next iteration's input halo
 *                                     (lap reads in(j-1) and in(j+1), fly reads in(j+1))
 * that is lap, fly and two out lines: the paper's four one-line halos.
 *
 * Bitwise reproducibility: the kernels and the reference must agree to the last bit, because the
 * limiter compares signs of differences of nearly equal values (the field smooths out) and a
 * one-ulp difference can flip it. So the arithmetic uses hd_add/hd_sub/hd_mul, which on the GPU
 * are the _rn intrinsics the compiler never fuses into an FMA; the host side is built with
 * -ffp-contract=off (apps/stencil/CMakeLists.txt). */
#ifndef GCOMM_APPS_STENCIL_HDIFF_COMMON_H
#define GCOMM_APPS_STENCIL_HDIFF_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gcomm/detail/hd.h"

/* The diffusion coefficient lies in [HD_COEFF_MIN, HD_COEFF_MIN + HD_COEFF_SPAN): the scheme is
 * stable for coeff * 64 < 2 (64 bounds the fourth-order operator's eigenvalues). */
#define HD_COEFF_MIN 0.005
#define HD_COEFF_SPAN 0.020

/* Arithmetic that is rounded the same way on host and GPU (no contraction into FMA). */
GCOMM_HD_INLINE double hd_add(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}

GCOMM_HD_INLINE double hd_sub(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dsub_rn(a, b);
#else
    return a - b;
#endif
}

GCOMM_HD_INLINE double hd_mul(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

/* One array: ni values per line, `lines` lines per k-level (halos included), nk levels. */
typedef struct {
    int ni, nk;
    long lines;
} hd_layout_t;

GCOMM_HD_INLINE size_t hd_plane(hd_layout_t L)
{
    return (size_t)L.lines * (size_t)L.ni;
}

/* Index of (i, line jl, level k). */
GCOMM_HD_INLINE size_t hd_at(hd_layout_t L, int i, long jl, int k)
{
    return ((size_t)k * (size_t)L.lines + (size_t)jl) * (size_t)L.ni + (size_t)i;
}

/* Walking the own points e = start, start + stride, ... (0 <= e < ni * nj * nk) of a part with
 * own lines first .. first + nj - 1, i fastest so that consecutive threads touch consecutive
 * addresses, without the three divisions per point that locating e takes (a stencil loop at
 * partial occupancy is latency-bound, and they sit on its critical path): the stride is split
 * once into whole levels, lines and points (hd_step_make), and each advance adds them with one
 * carry per digit. Tests: test_hdiff_points, against the divisions. */
typedef struct {
    size_t c; /* index, as hd_at */
    int i, k;
    long jl;
} hd_pt_t;

typedef struct {
    int di, dk; /* points within a line, levels */
    long dj;    /* lines (< nj) */
} hd_step_t;

GCOMM_HD_INLINE hd_step_t hd_step_make(hd_layout_t L, long nj, size_t stride)
{
    hd_step_t s;
    size_t rows = stride / (size_t)L.ni;
    s.di = (int)(stride - rows * (size_t)L.ni);
    s.dj = (long)(rows % (size_t)nj);
    s.dk = (int)(rows / (size_t)nj);
    return s;
}

/* Own point e, located with the divisions. */
GCOMM_HD_INLINE void hd_pt_first(hd_layout_t L, long first, long nj, size_t e, hd_pt_t *p)
{
    const size_t row = e / (size_t)L.ni;
    p->i = (int)(e - row * (size_t)L.ni);
    p->jl = first + (long)(row % (size_t)nj);
    p->k = (int)(row / (size_t)nj);
    p->c = hd_at(L, p->i, p->jl, p->k);
}

/* The same as an index and its i (the serial reference's form). */
GCOMM_HD_INLINE size_t hd_own_point(hd_layout_t L, long first, long nj, size_t e, int *i)
{
    hd_pt_t p;
    hd_pt_first(L, first, nj, e, &p);
    *i = p.i;
    return p.c;
}

GCOMM_HD_INLINE void hd_pt_next(hd_layout_t L, long first, long nj, hd_step_t s, hd_pt_t *p)
{
    p->i += s.di;
    long dj = s.dj;
    if (p->i >= L.ni) {
        p->i -= L.ni;
        dj++;
    }
    p->jl += dj;
    p->k += s.dk;
    if (p->jl >= first + nj) {
        p->jl -= nj;
        p->k++;
    }
    p->c = hd_at(L, p->i, p->jl, p->k);
}

/* One thread's walk over the own points of a part whose own lines are 1 .. nj (the layout's
 * halo lines 0 and nj + 1 around them): `step` is hd_step_make(L, nj, stride), made once by the
 * caller where the walk repeats. for (hd_walk_t w = hd_walk_begin(...); w.e < w.own;
 * hd_walk_next(L, &w)) visits w.q. */
typedef struct {
    hd_pt_t q;
    hd_step_t step;
    size_t e, own, stride;
    long nj;
} hd_walk_t;

GCOMM_HD_INLINE hd_walk_t hd_walk_begin(hd_layout_t L, long nj, size_t start, size_t stride,
                                        hd_step_t step)
{
    hd_walk_t w;
    w.nj = nj;
    w.own = (size_t)L.ni * (size_t)nj * (size_t)L.nk;
    w.e = start;
    w.stride = stride;
    w.step = step;
    hd_pt_first(L, 1, nj, start, &w.q);
    return w;
}

GCOMM_HD_INLINE void hd_walk_next(hd_layout_t L, hd_walk_t *w)
{
    w->e += w->stride;
    hd_pt_next(L, 1, w->nj, w->step, &w->q);
}

/* Offsets of the periodic neighbours i+1 and i-1 within a line. */
GCOMM_HD_INLINE ptrdiff_t hd_ip(int i, int ni)
{
    return i + 1 < ni ? 1 : -(ptrdiff_t)(ni - 1);
}

GCOMM_HD_INLINE ptrdiff_t hd_im(int i, int ni)
{
    return i > 0 ? -1 : (ptrdiff_t)(ni - 1);
}

/* The four stencils at point c (index), i its i-position; js = ni is the j-stride. */
GCOMM_HD_INLINE double hd_lap(const double *in, size_t c, int i, int ni)
{
    const ptrdiff_t js = ni;
    double s = hd_add(hd_add(hd_add(in[c + hd_ip(i, ni)], in[c + hd_im(i, ni)]), in[c + js]),
                      in[c - js]);
    return hd_sub(hd_mul(4.0, in[c]), s);
}

GCOMM_HD_INLINE double hd_flx(const double *in, const double *lap, size_t c, int i, int ni)
{
    const ptrdiff_t ip = hd_ip(i, ni);
    double f = hd_sub(lap[c + ip], lap[c]);
    return hd_mul(f, hd_sub(in[c + ip], in[c])) > 0.0 ? 0.0 : f;
}

GCOMM_HD_INLINE double hd_fly(const double *in, const double *lap, size_t c, int ni)
{
    const ptrdiff_t js = ni;
    double f = hd_sub(lap[c + js], lap[c]);
    return hd_mul(f, hd_sub(in[c + js], in[c])) > 0.0 ? 0.0 : f;
}

GCOMM_HD_INLINE double hd_out(const double *in, const double *coeff, const double *flx,
                              const double *fly, size_t c, int i, int ni)
{
    const ptrdiff_t js = ni;
    double div = hd_sub(hd_add(hd_sub(flx[c], flx[c + hd_im(i, ni)]), fly[c]), fly[c - js]);
    return hd_sub(in[c], hd_mul(coeff[c], div));
}

/* ---- host: input and the serial reference ---- */

/* The reference's point loops run on every core when the program is built with OpenMP
 * (apps/stencil/CMakeLists.txt): each point is computed alone, so the result is the same bits
 * as one thread's. At 128 x 10240 x 26 points and 100 steps one core took ~70 s, longer than a
 * timed sweep allows. */
#ifdef _OPENMP
#define HD_OMP_FOR _Pragma("omp parallel for schedule(static)")
#else
#define HD_OMP_FOR
#endif

/* Global input values from global indices only (any decomposition builds the same field). */
static inline double hd_input_value(long gj, int i, int k, int ni, long nj_global, uint64_t salt)
{
    uint64_t key = (((uint64_t)k * (uint64_t)nj_global + (uint64_t)gj) * (uint64_t)ni +
                    (uint64_t)i) * 2u + salt;
    key += 0x9e3779b97f4a7c15ull;
    key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ull;
    key = (key ^ (key >> 27)) * 0x94d049bb133111ebull;
    key ^= key >> 31;
    return ((double)(key >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Fills in (and coeff) of a part that owns global lines first_global .. first_global + nj - 1,
 * halo lines included (taken periodically from the global field of nj_global lines). */
static inline void hd_fill(hd_layout_t L, long first_global, long nj, long nj_global, double *in,
                           double *coeff)
{
    HD_OMP_FOR
    for (int k = 0; k < L.nk; k++)
        for (long jl = 0; jl < nj + 2; jl++) {
            long gj = ((first_global + jl - 1) % nj_global + nj_global) % nj_global;
            for (int i = 0; i < L.ni; i++) {
                size_t c = hd_at(L, i, jl, k);
                in[c] = hd_input_value(gj, i, k, L.ni, nj_global, 0);
                coeff[c] = HD_COEFF_MIN +
                           HD_COEFF_SPAN * hd_input_value(gj, i, k, L.ni, nj_global, 1);
            }
        }
}

/* Copies line `from` onto line `to` on every level (the periodic halo of the whole domain). */
static inline void hd_copy_line(hd_layout_t L, double *a, long from, long to)
{
    for (int k = 0; k < L.nk; k++)
        memcpy(a + hd_at(L, 0, to, k), a + hd_at(L, 0, from, k), (size_t)L.ni * sizeof(double));
}

/* The serial reference on the whole domain (L.lines = nj + 2): the same phases and halo updates
 * as the distributed variants, in the same order. Returns the array holding the result (in or
 * out, depending on the parity of steps). */
static inline double *hd_reference(hd_layout_t L, long nj, long steps, double *in, double *out,
                                   double *lap, double *flx, double *fly, const double *coeff)
{
    const size_t own = (size_t)L.ni * (size_t)nj * (size_t)L.nk;
    for (long s = 0; s < steps; s++) {
        HD_OMP_FOR
        for (size_t e = 0; e < own; e++) {
            int i;
            size_t c = hd_own_point(L, 1, nj, e, &i);
            lap[c] = hd_lap(in, c, i, L.ni);
        }
        hd_copy_line(L, lap, 1, nj + 1);
        HD_OMP_FOR
        for (size_t e = 0; e < own; e++) {
            int i;
            size_t c = hd_own_point(L, 1, nj, e, &i);
            flx[c] = hd_flx(in, lap, c, i, L.ni);
            fly[c] = hd_fly(in, lap, c, L.ni);
        }
        hd_copy_line(L, fly, nj, 0);
        HD_OMP_FOR
        for (size_t e = 0; e < own; e++) {
            int i;
            size_t c = hd_own_point(L, 1, nj, e, &i);
            out[c] = hd_out(in, coeff, flx, fly, c, i, L.ni);
        }
        hd_copy_line(L, out, nj, 0);
        hd_copy_line(L, out, 1, nj + 1);
        double *t = in;
        in = out;
        out = t;
    }
    return in;
}

/* The reference result for the whole domain (ni x nj_global x nk, the input hd_fill gives every
 * part): a malloc'd array in the layout {ni, nk, nj_global + 2} (free it), or NULL when the host
 * has not enough memory. */
static inline double *hd_reference_result(int ni, long nj_global, int nk, long steps,
                                          hd_layout_t *layout)
{
    hd_layout_t L;
    L.ni = ni;
    L.nk = nk;
    L.lines = nj_global + 2;
    const size_t n = hd_plane(L) * (size_t)nk;
    double *f[6]; /* in, out, lap, flx, fly, coeff */
    int ok = 1;
    for (int a = 0; a < 6; a++) ok &= (f[a] = (double *)calloc(n, sizeof(double))) != NULL;
    double *result = NULL;
    if (ok) {
        hd_fill(L, 0, nj_global, nj_global, f[0], f[5]);
        result = hd_reference(L, nj_global, steps, f[0], f[1], f[2], f[3], f[4], f[5]);
    }
    for (int a = 0; a < 6; a++)
        if (f[a] != result) free(f[a]);
    *layout = L;
    return result;
}

#endif /* GCOMM_APPS_STENCIL_HDIFF_COMMON_H */
