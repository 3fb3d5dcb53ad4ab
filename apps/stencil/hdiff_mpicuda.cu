/* hdiff_mpicuda: the MPI-CUDA twin of hdiff_gcomm, as the dCUDA paper's evaluation builds it
 * ("The main loops of the MPI-CUDA variants run on the host, invoke kernels, and communicate
 * using two-sided MPI ... Otherwise, the implementation variants share the entire application
 * logic"): the same four stencils, layout, decomposition in j and three halo exchanges per
 * iteration (hdiff_common.h), but one MPI process per GPU, one kernel launch per compute phase,
 * and the halos exchanged between the kernels by the host.
 *
 * The MPI here (Open MPI 4.1 of the GPU machine) is not CUDA-aware, so a halo goes through host
 * memory: cudaMemcpy2D gathers the halo's nk lines (one per k-level, a plane apart) into one
 * contiguous pinned buffer, MPI_Sendrecv moves it as ONE message (the paper: "the MPI-CUDA variant
 * additionally copies the data to a continuous communication buffer that allows to wrap the
 * entire halo exchange in a single message"), and cudaMemcpy2D scatters the received buffer into
 * the halo line of every level.
 *
 * Timing: the iteration time is the host's wall time of the whole loop (between MPI barriers,
 * after the GPU has finished), divided by steps, the slowest process's. The halo-exchange time is
 * measured in the same run: each phase's kernel is synchronised first (the exchange's
 * device-to-host copy would wait for it anyway), then the clock runs over the copies and the
 * MPI_Sendrecv. Its share of the iteration is what the dCUDA variant can hide.
 *
 * Usage: mpirun -n P hdiff_mpicuda [--ni N] [--nj N] [--nk N] [--steps N] [--threads N]
 *                                   [--reps N] [--check 0|1]     (--nj per process = per GPU)
 * Process p uses GPU (its rank on the node) mod (the node's GPUs).
 * Exit: 0 verified (or --check 0), 1 wrong result or error, 77 no GPU (on any process). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "app_util.h"
#include "app_mpi.h"
#include "hdiff_common.h"


#define TAG_LAP 11
#define TAG_FLY 12
#define TAG_OUT_TO_LEFT 13
#define TAG_OUT_TO_RIGHT 14

/* ---- the three compute phases: one kernel each, grid-stride over this GPU's own points ---- */

/* A grid-stride walk over the GPU's own points (hd_walk_t: no division per point). */
static __device__ hd_walk_t walk_begin(hd_layout_t L)
{
    const long nj = L.lines - 2;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    return hd_walk_begin(L, nj, blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride,
                         hd_step_make(L, nj, stride));
}

__global__ void k_lap(const double *in, double *lap, hd_layout_t L)
{
    for (hd_walk_t w = walk_begin(L); w.e < w.own; hd_walk_next(L, &w))
        lap[w.q.c] = hd_lap(in, w.q.c, w.q.i, L.ni);
}

__global__ void k_flux(const double *in, const double *lap, double *flx, double *fly, hd_layout_t L)
{
    for (hd_walk_t w = walk_begin(L); w.e < w.own; hd_walk_next(L, &w)) {
        flx[w.q.c] = hd_flx(in, lap, w.q.c, w.q.i, L.ni);
        fly[w.q.c] = hd_fly(in, lap, w.q.c, L.ni);
    }
}

__global__ void k_out(const double *in, const double *coeff, const double *flx, const double *fly,
                      double *out, hd_layout_t L)
{
    for (hd_walk_t w = walk_begin(L); w.e < w.own; hd_walk_next(L, &w))
        out[w.q.c] = hd_out(in, coeff, flx, fly, w.q.c, w.q.i, L.ni);
}

/* ---- halo exchange through host memory ---- */

typedef struct {
    hd_layout_t L;
    int left, right;
    double *send, *recv; /* pinned, ni * nk values each */
    double seconds;      /* accumulated exchange time */
} halo_t;

/* Sends line send_line (all levels) of the device array to `dest` and receives line recv_line
 * from `source`, as one message each way. */
static void exchange_line(halo_t *h, double *arr, long send_line, int dest, long recv_line,
                          int source, int tag)
{
    const size_t line = (size_t)h->L.ni * sizeof(double), pitch = hd_plane(h->L) * sizeof(double);
    const int count = h->L.ni * h->L.nk;
    CUDA_CHECK(cudaMemcpy2D(h->send, line, arr + hd_at(h->L, 0, send_line, 0), pitch, line,
                            (size_t)h->L.nk, cudaMemcpyDeviceToHost));
    MPI_CHECK(MPI_Sendrecv(h->send, count, MPI_DOUBLE, dest, tag, h->recv, count, MPI_DOUBLE,
                           source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CUDA_CHECK(cudaMemcpy2D(arr + hd_at(h->L, 0, recv_line, 0), pitch, h->recv, line, line,
                            (size_t)h->L.nk, cudaMemcpyHostToDevice));
}

/* ---- host ---- */

typedef struct {
    long ni, nj, nk, steps, threads, reps, check;
} options_t;

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: mpirun -n P %s [--ni N] [--nj N] [--nk N] [--steps N] [--threads N]\n"
            "          [--reps N] [--check 0|1]\n"
            "  --ni, --nj, --nk  domain per process/GPU (default 128 x 320 x 26, the paper's)\n"
            "  --steps           iterations (default 100)\n"
            "  --threads         threads per block of the stencil kernels (default 256)\n"
            "  --reps            timed runs after one warm-up, the median is reported (default 3)\n"
            "  --check           compare with the serial CPU reference (default 1)\n",
            prog);
}

/* Returns 0, or the exit code when the options are bad (every process parses the same). */
static int parse(int argc, char **argv, options_t *o, int root)
{
    o->ni = 128;
    o->nj = 320;
    o->nk = 26;
    o->steps = 100;
    o->threads = 256;
    o->reps = 3;
    o->check = 1;
    for (int i = 1; i < argc; i++) {
        if (app_opt_long(argc, argv, &i, "--ni", &o->ni) ||
            app_opt_long(argc, argv, &i, "--nj", &o->nj) ||
            app_opt_long(argc, argv, &i, "--nk", &o->nk) ||
            app_opt_long(argc, argv, &i, "--steps", &o->steps) ||
            app_opt_long(argc, argv, &i, "--threads", &o->threads) ||
            app_opt_long(argc, argv, &i, "--reps", &o->reps) ||
            app_opt_long(argc, argv, &i, "--check", &o->check))
            continue;
        if (root) usage(argv[0]);
        return strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
    const char *bad = NULL;
    if (o->ni < 2) bad = "--ni must be at least 2";
    else if (o->nj < 1) bad = "--nj must be at least 1";
    else if (o->nk < 1) bad = "--nk must be at least 1";
    else if ((double)o->ni * (double)o->nk > 2147483647.0)
        bad = "--ni * --nk must fit an int (MPI count)";
    else if (o->steps < 0) bad = "--steps must not be negative";
    else if (o->threads < 1 || o->threads > 1024) bad = "--threads must be 1..1024";
    else if (o->reps < 1) bad = "--reps must be at least 1";
    if (bad) {
        if (root) fprintf(stderr, "%s\n", bad);
        return 2;
    }
    return -1;
}

int main(int argc, char **argv)
{
    MPI_CHECK(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    options_t o;
    int prc = parse(argc, argv, &o, rank == 0);
    if (prc >= 0) {
        MPI_CHECK(MPI_Finalize());
        return prc;
    }

    if (!app_mpi_all_have_gpu(rank, "hdiff_mpicuda")) {
        MPI_CHECK(MPI_Finalize());
        return APP_SKIP;
    }
    int sms = 0;
    app_mpi_bind_gpu(rank, &sms);

    const long nj_global = o.nj * size;
    hd_layout_t L; /* this process's arrays: own lines 1..nj, halos 0 and nj+1 */
    L.ni = (int)o.ni;
    L.nk = (int)o.nk;
    L.lines = o.nj + 2;
    const size_t elems = hd_plane(L) * (size_t)o.nk, bytes = elems * sizeof(double);
    if (rank == 0)
        printf("hdiff_mpicuda (horizontal diffusion, MPI-CUDA, host-staged halos): %d "
               "process(es) x 1 GPU; domain %ld x %ld x %ld (ni x nj x nk, %ld x %ld x %ld per "
               "GPU), %ld steps\n",
               size, o.ni, nj_global, o.nk, o.ni, o.nj, o.nk, o.steps);

    double *in, *out, *lap, *flx, *fly, *coeff;
    CUDA_CHECK(cudaMalloc((void **)&in, bytes));
    CUDA_CHECK(cudaMalloc((void **)&out, bytes));
    CUDA_CHECK(cudaMalloc((void **)&lap, bytes));
    CUDA_CHECK(cudaMalloc((void **)&flx, bytes));
    CUDA_CHECK(cudaMalloc((void **)&fly, bytes));
    CUDA_CHECK(cudaMalloc((void **)&coeff, bytes));
    double *h_in = (double *)malloc(bytes), *h_coeff = (double *)malloc(bytes);
    if (h_in == NULL || h_coeff == NULL) {
        fprintf(stderr, "hdiff_mpicuda: out of host memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    hd_fill(L, (long)rank * o.nj, o.nj, nj_global, h_in, h_coeff);
    CUDA_CHECK(cudaMemcpy(coeff, h_coeff, bytes, cudaMemcpyHostToDevice));

    halo_t h;
    h.L = L;
    h.left = (rank + size - 1) % size; /* periodic in j, as hdiff_gcomm */
    h.right = (rank + 1) % size;
    CUDA_CHECK(cudaMallocHost((void **)&h.send, (size_t)L.ni * L.nk * sizeof(double)));
    CUDA_CHECK(cudaMallocHost((void **)&h.recv, (size_t)L.ni * L.nk * sizeof(double)));

    const size_t own = (size_t)L.ni * (size_t)o.nj * (size_t)L.nk;
    const int grid = app_grid(own, o.threads, sms);
    const int threads = (int)o.threads;

    const int total = (int)o.reps + 1;
    double *t_iter = (double *)malloc(sizeof(double) * total);
    double *t_halo = (double *)malloc(sizeof(double) * total);
    if (t_iter == NULL || t_halo == NULL) {
        fprintf(stderr, "hdiff_mpicuda: out of host memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double *a = in, *b = out;
    for (int r = 0; r < total; r++) {
        /* each run from the same input (the warm-up run included) */
        a = in;
        b = out;
        CUDA_CHECK(cudaMemcpy(a, h_in, bytes, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(b, h_in, bytes, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(lap, 0, bytes));
        CUDA_CHECK(cudaMemset(fly, 0, bytes));
        CUDA_CHECK(cudaDeviceSynchronize());
        h.seconds = 0;
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        double t0 = app_now();
        for (long s = 0; s < o.steps; s++) {
            k_lap<<<grid, threads>>>(a, lap, L);
            CUDA_CHECK(cudaGetLastError());
            CUDA_CHECK(cudaDeviceSynchronize());
            double th = app_now();
            exchange_line(&h, lap, 1, h.left, o.nj + 1, h.right, TAG_LAP);
            h.seconds += app_now() - th;

            k_flux<<<grid, threads>>>(a, lap, flx, fly, L);
            CUDA_CHECK(cudaGetLastError());
            CUDA_CHECK(cudaDeviceSynchronize());
            th = app_now();
            exchange_line(&h, fly, o.nj, h.right, 0, h.left, TAG_FLY);
            h.seconds += app_now() - th;

            k_out<<<grid, threads>>>(a, coeff, flx, fly, b, L);
            CUDA_CHECK(cudaGetLastError());
            CUDA_CHECK(cudaDeviceSynchronize());
            th = app_now();
            exchange_line(&h, b, 1, h.left, o.nj + 1, h.right, TAG_OUT_TO_LEFT);
            exchange_line(&h, b, o.nj, h.right, 0, h.left, TAG_OUT_TO_RIGHT);
            h.seconds += app_now() - th;

            double *t = a;
            a = b;
            b = t;
        }
        CUDA_CHECK(cudaDeviceSynchronize());
        double local[2] = {app_now() - t0, h.seconds}, worst[2];
        MPI_CHECK(MPI_Allreduce(local, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        t_iter[r] = worst[0];
        t_halo[r] = worst[1];
    }
    double iter = app_step_time(t_iter, o.reps, o.steps);
    double halo = app_step_time(t_halo, o.reps, o.steps);

    /* Verification: every process runs the (deterministic) reference of the whole domain and
     * checks its own lines; the worst relative error of all processes decides. */
    int verified = -1;
    double rel = 0;
    if (o.check) {
        hd_layout_t G; /* the whole domain */
        double *ref = hd_reference_result(L.ni, nj_global, L.nk, o.steps, &G);
        double *got = (double *)malloc(bytes);
        if (ref == NULL || got == NULL) {
            fprintf(stderr, "hdiff_mpicuda: out of host memory for the reference\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        CUDA_CHECK(cudaMemcpy(got, a, bytes, cudaMemcpyDeviceToHost)); /* a: the newest values */
        double e[2] = {0, 0}, all_e[2]; /* max abs error, max |reference| */
        for (int k = 0; k < L.nk; k++)
            for (long jl = 1; jl <= o.nj; jl++)
                for (int i = 0; i < L.ni; i++)
                    app_err_add(e, got[hd_at(L, i, jl, k)],
                                ref[hd_at(G, i, (long)rank * o.nj + jl, k)]);
        MPI_CHECK(MPI_Allreduce(e, all_e, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        rel = app_err_rel(all_e);
        verified = rel < 1e-12;
        free(ref);
        free(got);
    }

    if (rank == 0) {
        printf("time per iteration: %.3f us (host loop, slowest process, median of %ld)\n",
               iter * 1e6, o.reps);
        printf("halo exchange per iteration: %.3f us, %.1f%% of the iteration (4 halos: D2H copy, "
               "MPI_Sendrecv, H2D copy)\n",
               halo * 1e6, iter > 0 ? 100.0 * halo / iter : 0.0);
        app_print_verified(verified, rel);
    }

    CUDA_CHECK(cudaFreeHost(h.send));
    CUDA_CHECK(cudaFreeHost(h.recv));
    CUDA_CHECK(cudaFree(in));
    CUDA_CHECK(cudaFree(out));
    CUDA_CHECK(cudaFree(lap));
    CUDA_CHECK(cudaFree(flx));
    CUDA_CHECK(cudaFree(fly));
    CUDA_CHECK(cudaFree(coeff));
    free(h_in);
    free(h_coeff);
    free(t_iter);
    free(t_halo);
    MPI_CHECK(MPI_Finalize());
    return verified == 0 ? 1 : 0;
}
