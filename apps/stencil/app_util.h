/* Host helpers shared by the stencil mini-apps (stencil_dcuda, hdiff_gcomm and the MPI-CUDA
 * twins): error checks that stop the program with file:line, a monotonic clock, medians,
 * reproducible input values, option parsing and the result check against the reference. Host code only; the CUDA parts only in .cu files
 * (the host-rank programs are plain C). */
#ifndef GCOMM_APPS_STENCIL_APP_UTIL_H
#define GCOMM_APPS_STENCIL_APP_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CTest's skip code: a GPU app exits with it when the machine has no usable GPU. */
#define APP_SKIP 77

#ifdef __CUDACC__
#include <cuda_runtime.h>

/* Every CUDA call is checked: a failed one ends the program (exit 1) with what and where. */
#define CUDA_CHECK(call)                                                                       \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,               \
                    cudaGetErrorString(e_));                                                   \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)
#endif

/* Same for gcomm host calls; the detail string says which argument or rank was wrong. */
#define GCOMM_CHECK(call)                                                                      \
    do {                                                                                       \
        int rc_ = (call);                                                                      \
        if (rc_ != GCOMM_SUCCESS) {                                                            \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,          \
                    gcomm_error_string(rc_), gcomm_last_error_detail());                       \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static inline double app_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Median of n values (n >= 1); sorts v in place (n is a handful of repetitions). */
static inline double app_median(double *v, int n)
{
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && v[b - 1] > v[b]; b--) {
            double t = v[b];
            v[b] = v[b - 1];
            v[b - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Time per step of a program timed over reps + 1 runs of `steps` steps: the median of runs
 * 1..reps (run 0 is the warm-up) divided by steps; 0 when there are no steps. Sorts t[1..reps]. */
static inline double app_step_time(double *t, long reps, long steps)
{
    return steps ? app_median(t + 1, (int)reps) / (double)steps : 0.0;
}

/* Blocks for a grid-stride kernel over `work` items: one per `threads` items, at most 8 per SM
 * (enough to fill the GPU several times over; the kernel strides over the rest). */
static inline int app_grid(size_t work, long threads, int sms)
{
    size_t want = (work + (size_t)threads - 1) / (size_t)threads, cap = (size_t)sms * 8;
    return (int)(want < cap ? want : cap);
}

/* A value in [0, 1) that depends only on the key: every process and the CPU reference build the
 * same input from global indices, whatever the decomposition. Never exactly 0 (so a point the
 * computation forgot stands out less often as "correct by accident"). */
static inline double app_value01(uint64_t key)
{
    key += 0x9e3779b97f4a7c15ull;
    key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ull;
    key = (key ^ (key >> 27)) * 0x94d049bb133111ebull;
    key ^= key >> 31;
    return ((double)(key >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* The result check of every app: e[0] is the largest |got - want| so far (a NaN difference
 * counts as infinite, so a NaN never verifies), e[1] the largest |want|; both start at 0 and
 * combine across GPUs or processes by their maxima. */
static inline void app_err_add(double e[2], double got, double want)
{
    double d = fabs(got - want);
    if (!(d <= e[0])) e[0] = isnan(d) ? INFINITY : d;
    if (fabs(want) > e[1]) e[1] = fabs(want);
}

/* The largest error relative to the largest reference value (absolute when all are 0). */
static inline double app_err_rel(const double e[2])
{
    return e[1] > 0 ? e[0] / e[1] : e[0];
}

/* The "verified:" line the scripts parse; verified < 0: not checked. */
static inline void app_print_verified(int verified, double rel)
{
    if (verified < 0)
        printf("verified: not checked (--check 0)\n");
    else
        printf("verified: %s (max abs error %.3g relative to max |value|, tolerance 1e-12)\n",
               verified ? "yes" : "NO", rel);
}

/* "--name value": stores the value in *out and advances *i; 1 if argv[*i] was this option. */
static inline int app_opt_long(int argc, char **argv, int *i, const char *name, long *out)
{
    if (strcmp(argv[*i], name) != 0) return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "option %s needs a value\n", name);
        exit(2);
    }
    char *end = NULL;
    long v = strtol(argv[*i + 1], &end, 10);
    if (end == argv[*i + 1] || *end != '\0') {
        fprintf(stderr, "option %s: '%s' is not an integer\n", name, argv[*i + 1]);
        exit(2);
    }
    *out = v;
    (*i)++;
    return 1;
}

#ifdef __CUDACC__
/* Nonzero when the machine has at least one usable GPU. Checked before anything else touches
 * CUDA or gcomm, so a machine without a GPU or driver gets a clean skip (exit 77). */
static inline int app_have_gpu(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky "no driver" error */
        return 0;
    }
    return n > 0;
}
#endif

#endif /* GCOMM_APPS_STENCIL_APP_UTIL_H */
