/* stencil_mpicuda: the MPI-CUDA twin of stencil_dcuda (the dCUDA paper's Fig. 2 2-D stencil),
 * built as the paper's evaluation builds its MPI-CUDA variants ("The main loops of the MPI-CUDA
 * variants run on the host, invoke kernels, and communicate using two-sided MPI"): the same
 * global domain, input, boundary lines, operator (with Fig. 2's flattened idx +- 1) and steps as
 * stencil_dcuda (see stencil_dcuda.cu), but one MPI process per GPU, one kernel launch per step,
 * and the halo lines exchanged between the kernels by the host.
 *
 * Domain: with P processes and R ranks per GPU, NJ = P * R * nj_per_rank lines of ni values
 * plus the fixed boundary lines j = -1 and j = NJ, exactly the array stencil_dcuda builds for P
 * GPUs of R ranks each. Process p owns the R * nj_per_rank lines from p * R * nj_per_rank on, plus
 * one halo line on each side (the boundary line at the two ends). R is not decided here:
 * stencil_dcuda by default takes as many ranks as its kernel has resident at once, which depends
 * on that kernel's registers (gcomm code this program does not link), so --ranks-per-gpu must be
 * given, and a weak-scaling comparison passes the count stencil_dcuda printed.
 *
 * The MPI here (Open MPI 4.1 of the GPU machine) is not CUDA-aware, so a halo line goes through
 * pinned host memory: after the step's kernel, the two boundary lines are copied to the host,
 * MPI_Sendrecv shifts them to the left and right neighbours (MPI_PROC_NULL at the ends, whose
 * fixed boundary line is never overwritten), and the received lines are copied into the halo
 * lines of the array the next step reads.
 *
 * Timing as hdiff_mpicuda: the iteration time is the host's wall time of the whole loop (between
 * MPI barriers, after the GPU has finished), divided by steps, the slowest process's; the halo
 * exchange time is measured in the same run, from the end of the step's kernel (synchronised)
 * to the end of the host-to-device copies. Its share is what the dCUDA variant can hide.
 *
 * Usage: mpirun -n P stencil_mpicuda --ranks-per-gpu R [--ni N] [--nj-per-rank N] [--steps N]
 *                                    [--threads N] [--reps N] [--check 0|1]
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
#include "stencil_common.h"


#define TAG_TO_LEFT 21
#define TAG_TO_RIGHT 22

/* One step over this GPU's own lines (1..nj of the local array), grid-stride over the flattened
 * interior: the formula and its operand order are Fig. 2's, so the result matches stencil_dcuda
 * and the reference bit for bit (stencil_common.h says why). */
__global__ void k_step(const double *in, double *out, size_t jstride, size_t first, size_t end)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t idx = first + blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < end;
         idx += stride)
        out[idx] = -4.0 * in[idx] + in[idx + 1] + in[idx - 1] + in[idx + jstride] +
                   in[idx - jstride];
}

/* ---- halo exchange through host memory ---- */

typedef struct {
    int left, right;  /* neighbour processes, MPI_PROC_NULL at the ends */
    int ni;           /* values per line (the MPI count) */
    long nj;          /* own lines */
    double *send[2];  /* pinned, one line each: [0] to the left, [1] to the right */
    double *recv[2];  /* pinned: [0] from the left, [1] from the right */
    double seconds;   /* accumulated exchange time */
} halo_t;

/* Lines 1 and nj of arr go to the left and right neighbours, whose lines come back into the
 * halo lines 0 and nj+1. An end process neither copies nor overwrites its boundary line. */
static void exchange(halo_t *h, double *arr)
{
    const size_t line = (size_t)h->ni * sizeof(double);
    double *first = arr + h->ni, *last = arr + (size_t)h->nj * h->ni;
    double *halo_l = arr, *halo_r = arr + (size_t)(h->nj + 1) * h->ni;
    if (h->left != MPI_PROC_NULL)
        CUDA_CHECK(cudaMemcpyAsync(h->send[0], first, line, cudaMemcpyDeviceToHost, 0));
    if (h->right != MPI_PROC_NULL)
        CUDA_CHECK(cudaMemcpyAsync(h->send[1], last, line, cudaMemcpyDeviceToHost, 0));
    CUDA_CHECK(cudaStreamSynchronize(0));
    MPI_CHECK(MPI_Sendrecv(h->send[0], h->ni, MPI_DOUBLE, h->left, TAG_TO_LEFT, h->recv[1], h->ni,
                           MPI_DOUBLE, h->right, TAG_TO_LEFT, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_CHECK(MPI_Sendrecv(h->send[1], h->ni, MPI_DOUBLE, h->right, TAG_TO_RIGHT, h->recv[0],
                           h->ni, MPI_DOUBLE, h->left, TAG_TO_RIGHT, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
    if (h->left != MPI_PROC_NULL)
        CUDA_CHECK(cudaMemcpyAsync(halo_l, h->recv[0], line, cudaMemcpyHostToDevice, 0));
    if (h->right != MPI_PROC_NULL)
        CUDA_CHECK(cudaMemcpyAsync(halo_r, h->recv[1], line, cudaMemcpyHostToDevice, 0));
    /* the exchange ends when the halo lines are on the GPU (the next kernel would wait anyway) */
    CUDA_CHECK(cudaStreamSynchronize(0));
}

/* ---- host ---- */

/* The twin's rank count, --ranks-per-gpu, is stencil_dcuda's; 0 (not given) is refused in
 * main, after the GPU check, so that a machine without GPU still skips. */
static const stencil_prog_t twin_prog = {
    "mpirun -n P ", "--ranks-per-gpu",
    "stencil_dcuda's ranks (blocks) per GPU, whose lines this\n"
    "                   process owns (required: pass the count stencil_dcuda prints)",
    1};

int main(int argc, char **argv)
{
    MPI_CHECK(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    options_t o;
    int prc = stencil_parse(argc, argv, &o, &twin_prog, rank == 0);
    /* a process's lines are one MPI message when the result is gathered */
    if (prc < 0 && (double)o.ni * (double)o.nj_per_rank * (double)o.blocks > 2147483647.0) {
        if (rank == 0)
            fprintf(stderr, "--ni * --nj-per-rank * --ranks-per-gpu must fit an int (MPI count)\n");
        prc = 2;
    }
    if (prc >= 0) {
        MPI_CHECK(MPI_Finalize());
        return prc;
    }

    if (!app_mpi_all_have_gpu(rank, "stencil_mpicuda")) {
        MPI_CHECK(MPI_Finalize());
        return APP_SKIP;
    }
    if (o.blocks == 0) {
        if (rank == 0)
            fprintf(stderr, "stencil_mpicuda: --ranks-per-gpu N is required: stencil_dcuda's "
                            "ranks per GPU (it prints \"G GPU(s) x N ranks\"), whose lines each "
                            "process owns\n");
        MPI_CHECK(MPI_Finalize());
        return 2;
    }
    int sms = 0;
    app_mpi_bind_gpu(rank, &sms);

    const long jstride = o.ni;
    const long nj_gpu = o.blocks * o.nj_per_rank; /* own lines, as stencil_dcuda's per GPU */
    const long nj = nj_gpu * size;                 /* global interior lines */
    const size_t gpu_elems = (size_t)(nj_gpu + 2) * jstride;
    const size_t gpu_bytes = gpu_elems * sizeof(double);
    const size_t glob_elems = (size_t)(nj + 2) * jstride;
    if (rank == 0)
        printf("stencil_mpicuda (dCUDA Fig. 2 stencil, MPI-CUDA, host-staged halos): %d "
               "process(es) x 1 GPU, the lines of %ld ranks per GPU; global %ld x %ld values "
               "(ni x nj, %ld lines per rank, %ld per GPU), %ld steps\n",
               size, o.blocks, o.ni, nj, o.nj_per_rank, nj_gpu, o.steps);

    /* Input: this process's slice of stencil_dcuda's global array (boundary lines included),
     * from global indices only; both arrays start from it, so the boundary lines at the ends
     * hold their fixed values in either and the halo lines of the first "in" are the
     * neighbours' lines. */
    double *h_in = (double *)malloc(gpu_bytes);
    if (h_in == NULL) {
        fprintf(stderr, "stencil_mpicuda: out of host memory (%zu bytes)\n", gpu_bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const size_t offset = (size_t)rank * nj_gpu * jstride;
    for (size_t e = 0; e < gpu_elems; e++) h_in[e] = app_value01(offset + e);
    double *in, *out;
    CUDA_CHECK(cudaMalloc((void **)&in, gpu_bytes));
    CUDA_CHECK(cudaMalloc((void **)&out, gpu_bytes));

    halo_t h;
    h.left = rank > 0 ? rank - 1 : MPI_PROC_NULL; /* not periodic: Fig. 2's lsend / rsend */
    h.right = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
    h.ni = (int)o.ni;
    h.nj = nj_gpu;
    for (int s = 0; s < 2; s++) {
        CUDA_CHECK(cudaMallocHost((void **)&h.send[s], (size_t)o.ni * sizeof(double)));
        CUDA_CHECK(cudaMallocHost((void **)&h.recv[s], (size_t)o.ni * sizeof(double)));
    }

    const size_t first = (size_t)jstride, end = (size_t)(nj_gpu + 1) * jstride;
    const int grid = app_grid(end - first, o.threads, sms);
    const int threads = (int)o.threads;

    const int total = (int)o.reps + 1;
    double *t_iter = (double *)malloc(sizeof(double) * total);
    double *t_halo = (double *)malloc(sizeof(double) * total);
    if (t_iter == NULL || t_halo == NULL) {
        fprintf(stderr, "stencil_mpicuda: out of host memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double *a = in, *b = out;
    for (int r = 0; r < total; r++) {
        /* each run from the same input (the warm-up run included) */
        a = in;
        b = out;
        CUDA_CHECK(cudaMemcpy(a, h_in, gpu_bytes, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(b, h_in, gpu_bytes, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaDeviceSynchronize());
        h.seconds = 0;
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        double t0 = app_now();
        for (long s = 0; s < o.steps; s++) {
            k_step<<<grid, threads>>>(a, b, (size_t)jstride, first, end);
            CUDA_CHECK(cudaGetLastError());
            CUDA_CHECK(cudaDeviceSynchronize());
            double th = app_now();
            exchange(&h, b);
            h.seconds += app_now() - th;
            double *t = a; /* Fig. 2's swap: the next step reads what this one wrote */
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
    /* stencil_dcuda's figure: every interior value of in read once and of out written once */
    double bytes_it = 2.0 * (double)nj * (double)o.ni * sizeof(double);

    /* Verification on the last run's result (a: the newest values): process 0 gathers every
     * process's own lines into the global array and runs stencil_dcuda's serial reference. */
    int verified = -1;
    double rel = 0;
    if (o.check) {
        const int count = (int)(nj_gpu * jstride);
        double *got = (double *)malloc(gpu_bytes);
        double *all_got = NULL, *ra = NULL, *rb = NULL;
        if (rank == 0) {
            all_got = (double *)malloc(glob_elems * sizeof(double));
            ra = (double *)malloc(glob_elems * sizeof(double));
            rb = (double *)malloc(glob_elems * sizeof(double));
        }
        if (got == NULL || (rank == 0 && (all_got == NULL || ra == NULL || rb == NULL))) {
            fprintf(stderr, "stencil_mpicuda: out of host memory for the reference\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        CUDA_CHECK(cudaMemcpy(got, a, gpu_bytes, cudaMemcpyDeviceToHost));
        MPI_CHECK(MPI_Gather(got + jstride, count, MPI_DOUBLE,
                             rank == 0 ? all_got + jstride : NULL, count, MPI_DOUBLE, 0,
                             MPI_COMM_WORLD));
        if (rank == 0) {
            for (size_t e = 0; e < glob_elems; e++) ra[e] = rb[e] = app_value01(e);
            const double *ref = stencil_reference(ra, rb, o.ni, nj, o.steps);
            double err[2] = {0, 0};
            for (size_t e = (size_t)jstride; e < (size_t)(nj + 1) * jstride; e++)
                app_err_add(err, all_got[e], ref[e]);
            rel = app_err_rel(err);
            verified = rel < 1e-12;
        }
        MPI_CHECK(MPI_Bcast(&verified, 1, MPI_INT, 0, MPI_COMM_WORLD)); /* every exit code */
        free(got);
        free(all_got);
        free(ra);
        free(rb);
    }

    if (rank == 0) {
        printf("time per iteration: %.3f us (host loop, slowest process, median of %ld)\n",
               iter * 1e6, o.reps);
        printf("halo exchange per iteration: %.3f us, %.1f%% of the iteration (2 halo lines: D2H "
               "copy, MPI_Sendrecv, H2D copy)\n",
               halo * 1e6, iter > 0 ? 100.0 * halo / iter : 0.0);
        printf("effective memory bandwidth: %.1f GB/s (%.3g bytes read + written per iteration, "
               "host loop time)\n",
               iter > 0 ? bytes_it / iter * 1e-9 : 0.0, bytes_it);
        app_print_verified(verified, rel);
    }

    for (int s = 0; s < 2; s++) {
        CUDA_CHECK(cudaFreeHost(h.send[s]));
        CUDA_CHECK(cudaFreeHost(h.recv[s]));
    }
    CUDA_CHECK(cudaFree(in));
    CUDA_CHECK(cudaFree(out));
    free(h_in);
    free(t_iter);
    free(t_halo);
    MPI_CHECK(MPI_Finalize());
    return verified == 0 ? 1 : 0;
}
