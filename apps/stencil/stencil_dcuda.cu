/* stencil_dcuda: the two-dimensional stencil program of the dCUDA paper (Gysi, Baer, Hoefler,
 * "dCUDA: Hardware Supported Overlap of Computation and Communication", SC'16, Section II-C,
 * Fig. 2) ported line by line to gcomm (dcuda_X -> gcomm_X, the context passed as &ctx, window
 * sizes and offsets in bytes), inside the complete program the paper leaves out ("boilerplate
 * initialization logic that performs the input/output and the domain decomposition").
 *
 * Domain: a global array of NJ lines (the j-dimension) of jstride = ni values (the i-dimension),
 * plus one fixed boundary line on each side (j = -1 and j = NJ); flattened,
 * idx = (j+1)*jstride + i.
 * One step computes, for every interior point,
 *     out[idx] = -4 in[idx] + in[idx+1] + in[idx-1] + in[idx+jstride] + in[idx-jstride]
 * exactly as Fig. 2 writes it: idx +- 1 are flattened neighbours, so i = 0 and i = ni-1 reach into
 * the previous and next line (the paper's simplification, kept so the port stays line by line).
 *
 * Decomposition (1-D in j, as in the paper): every rank (thread block) of every GPU owns
 * nj_per_rank consecutive lines, len = nj_per_rank * jstride values. GPU g holds one contiguous
 * array (gcomm_malloc on that GPU) with its ranks' lines plus one halo line on each side; rank b of
 * the GPU gets the rank-local pointer base + b * len, so its window [0, len + 2 jstride) covers its
 * lines and one line of each neighbour. Those windows overlap between ranks of one GPU, exactly as
 * Fig. 3 draws them ("the windows of shared memory ranks overlap and the windows of distributed
 * memory ranks allocate additional halo cells"): a put between two ranks of one GPU has the same
 * source and target address and gcomm copies nothing (it only notifies), while a put across GPUs
 * copies the boundary line into the neighbour GPU's halo line.
 *
 * The values grow like 8^steps at worst (the operator's largest eigenvalue magnitude is 8), so
 * --steps is limited to 300 when the result is checked (8^300 ~ 1e271 still fits a double).
 *
 * Usage: stencil_dcuda [--ni N] [--nj-per-rank N] [--steps N] [--blocks-per-gpu N]
 *                      [--threads N] [--reps N] [--check 0|1]
 * Exit: 0 verified (or --check 0), 1 wrong result or error, 77 no GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcomm/device.cuh"
#include "gcomm/gcomm.h"

#include "app_util.h"
#include "stencil_common.h"
#include "stencil_fig2.h"

/* The paper's program (stencil_fig2.h) as a kernel: every thread block is one rank. */
__global__ void stencil_kernel(gcomm_param_t param, double *in, double *out, int jstride, int len,
                               int steps, stencil_clock_t *clk)
{
    stencil_fig2(param, in, out, jstride, len, steps, clk);
}

/* ---- host ---- */

int main(int argc, char **argv)
{
    options_t o;
    const stencil_prog_t pg = {"", "--blocks-per-gpu",
                               "ranks per GPU (default 0: as many as are resident at once)", 0};
    int prc = stencil_parse(argc, argv, &o, &pg, 1);
    if (prc >= 0) return prc;
    if (!app_have_gpu()) {
        printf("stencil_dcuda: no usable GPU (cudaGetDeviceCount), skipped\n");
        return APP_SKIP;
    }
    GCOMM_CHECK(gcomm_init());
    int ngpus = 0, dev[GCOMM_MAX_GPUS];
    GCOMM_CHECK(gcomm_local_devices(&ngpus, dev));
    if (ngpus == 0) {
        printf("stencil_dcuda: gcomm drives no GPU, skipped\n");
        GCOMM_CHECK(gcomm_finalize());
        return APP_SKIP;
    }
    const void *kernel = gcomm_kernel(stencil_kernel);
    if (kernel == NULL) {
        fprintf(stderr, "stencil_dcuda: the CUDA runtime does not know the kernel\n");
        return 1;
    }

    /* Ranks per GPU: all must be resident at once (they wait for each other), so 0 asks gcomm
     * for the most that fit on the smallest GPU: the paper's over-decomposition, which lets the
     * scheduler run some ranks' computation while others wait for their halos. */
    int blocks = (int)o.blocks;
    if (blocks == 0) {
        blocks = 1 << 30;
        for (int g = 0; g < ngpus; g++) {
            int b = 0;
            GCOMM_CHECK(gcomm_launch_max_blocks(kernel, (int)o.threads, 0, g, &b));
            if (b < blocks) blocks = b;
        }
    }
    const int jstride = (int)o.ni, len = (int)(o.nj_per_rank * o.ni);
    const long nj_gpu = (long)blocks * o.nj_per_rank; /* interior lines per GPU */
    const long nj = nj_gpu * ngpus;                    /* global interior lines */
    const size_t gpu_elems = (size_t)(nj_gpu + 2) * jstride;
    const size_t gpu_bytes = gpu_elems * sizeof(double);
    const size_t glob_elems = (size_t)(nj + 2) * jstride;

    printf("stencil_dcuda (dCUDA Fig. 2 on gcomm): %d GPU(s) x %d ranks of %ld threads, "
           "%ld ranks; global %ld x %ld values (ni x nj, %ld lines per rank), %ld steps\n",
           ngpus, blocks, o.threads, (long)blocks * ngpus, o.ni, nj, o.nj_per_rank, o.steps);

    /* Input: the global array, boundary lines included, from global indices only. */
    double *init = (double *)malloc(glob_elems * sizeof(double));
    if (init == NULL) {
        fprintf(stderr, "stencil_dcuda: out of host memory (%zu bytes)\n", glob_elems * 8);
        return 1;
    }
    for (size_t e = 0; e < glob_elems; e++) init[e] = app_value01(e);

    /* Per GPU: two arrays (the paper's in and out) with the GPU's lines and one halo line on each
     * side, and the clock. Both arrays start as the same slice of the global input: the
     * boundary lines are never written (in either array) and the halo lines of "in" must hold
     * the neighbours' lines for the first step. */
    double *a[GCOMM_MAX_GPUS], *b[GCOMM_MAX_GPUS];
    stencil_clock_t *clk[GCOMM_MAX_GPUS];
    for (int g = 0; g < ngpus; g++) {
        CUDA_CHECK(cudaSetDevice(dev[g]));
        GCOMM_CHECK(gcomm_malloc(gpu_bytes, (void **)&a[g]));
        GCOMM_CHECK(gcomm_malloc(gpu_bytes, (void **)&b[g]));
        CUDA_CHECK(cudaMalloc((void **)&clk[g], sizeof(stencil_clock_t)));
    }

    void *argv_g[GCOMM_MAX_GPUS][7];
    int steps = (int)o.steps;
    gcomm_launch_t l;
    memset(&l, 0, sizeof(l));
    l.kernel = kernel;
    l.blocks_per_gpu = blocks;
    l.threads_per_block = (int)o.threads;
    for (int g = 0; g < ngpus; g++) {
        argv_g[g][0] = NULL; /* gcomm fills the gcomm_param_t */
        argv_g[g][1] = &a[g];
        argv_g[g][2] = &b[g];
        argv_g[g][3] = (void *)&jstride;
        argv_g[g][4] = (void *)&len;
        argv_g[g][5] = &steps;
        argv_g[g][6] = &clk[g];
        l.args[g] = argv_g[g];
    }

    /* One warm-up launch (module loading, first-touch of the runtime's queues), then o.reps
     * timed launches, each from the same input. Two figures per launch:
     * - in-kernel (the main one): the longest of the GPUs' globaltimer intervals between a world
     *   barrier before the step loop and one after it. It is the time the steps take once every
     *   rank is running, which is what the paper's per-iteration figures measure; it leaves out
     *   the launch, gcomm_init, window creation and teardown, which a real code pays once.
     * - host: the wall time of the gcomm_launch call, nothing subtracted: the kernel launch on
     *   every GPU, the runtime's setup and teardown and the steps, divided by steps (an upper
     *   bound that approaches the in-kernel figure as steps grows). */
    const int total = (int)o.reps + 1;
    double *t_kernel = (double *)malloc(sizeof(double) * total);
    double *t_host = (double *)malloc(sizeof(double) * total);
    if (t_kernel == NULL || t_host == NULL) {
        fprintf(stderr, "stencil_dcuda: out of host memory\n");
        return 1;
    }
    for (int r = 0; r < total; r++) {
        for (int g = 0; g < ngpus; g++) {
            const double *slice = init + (size_t)g * nj_gpu * jstride;
            CUDA_CHECK(cudaSetDevice(dev[g]));
            CUDA_CHECK(cudaMemcpy(a[g], slice, gpu_bytes, cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(b[g], slice, gpu_bytes, cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemset(clk[g], 0, sizeof(stencil_clock_t)));
        }
        for (int g = 0; g < ngpus; g++) {
            CUDA_CHECK(cudaSetDevice(dev[g]));
            CUDA_CHECK(cudaDeviceSynchronize());
        }
        double t0 = app_now();
        int rc = gcomm_launch(&l);
        t_host[r] = app_now() - t0;
        if (rc != GCOMM_SUCCESS) {
            fprintf(stderr, "stencil_dcuda: gcomm_launch failed: %s (%s)\n",
                    gcomm_error_string(rc), gcomm_last_error_detail());
            return 1;
        }
        double worst = 0;
        for (int g = 0; g < ngpus; g++) {
            stencil_clock_t c;
            CUDA_CHECK(cudaSetDevice(dev[g]));
            CUDA_CHECK(cudaMemcpy(&c, clk[g], sizeof(c), cudaMemcpyDeviceToHost));
            double dt = 1e-9 * (double)(c.end - c.start);
            if (dt > worst) worst = dt;
        }
        t_kernel[r] = worst;
    }
    double kernel_it = app_step_time(t_kernel, o.reps, o.steps);
    double host_it = app_step_time(t_host, o.reps, o.steps);
    /* Compulsory traffic: every interior value of in read once and of out written once per
     * step (the neighbours come from cache); the halo copies are negligible next to it. */
    double bytes_it = 2.0 * (double)nj * (double)o.ni * sizeof(double);

    /* Verification after the timed runs, on the last run's result. After the loop the figure's
     * "in" holds the newest values: array a after an even number of steps, b after an odd one. */
    int verified = -1;
    double rel = 0;
    if (o.check) {
        double *ra = (double *)malloc(glob_elems * sizeof(double));
        double *rb = (double *)malloc(glob_elems * sizeof(double));
        double *got = (double *)malloc(gpu_elems * sizeof(double));
        if (ra == NULL || rb == NULL || got == NULL) {
            fprintf(stderr, "stencil_dcuda: out of host memory for the reference\n");
            return 1;
        }
        memcpy(ra, init, glob_elems * sizeof(double));
        memcpy(rb, init, glob_elems * sizeof(double));
        const double *ref = stencil_reference(ra, rb, o.ni, nj, o.steps);
        double err[2] = {0, 0};
        for (int g = 0; g < ngpus; g++) {
            CUDA_CHECK(cudaSetDevice(dev[g]));
            CUDA_CHECK(cudaMemcpy(got, (o.steps % 2) ? b[g] : a[g], gpu_bytes,
                                  cudaMemcpyDeviceToHost));
            const double *want = ref + (size_t)g * nj_gpu * jstride;
            for (size_t e = (size_t)jstride; e < (size_t)(nj_gpu + 1) * jstride; e++)
                app_err_add(err, got[e], want[e]);
        }
        rel = app_err_rel(err);
        verified = rel < 1e-12;
        free(ra);
        free(rb);
        free(got);
    }

    printf("time per iteration: %.3f us in-kernel (between world barriers, median of %ld), "
           "%.3f us host (whole gcomm_launch / steps)\n",
           kernel_it * 1e6, o.reps, host_it * 1e6);
    printf("effective memory bandwidth: %.1f GB/s (%.3g bytes read + written per iteration, "
           "in-kernel time)\n",
           kernel_it > 0 ? bytes_it / kernel_it * 1e-9 : 0.0, bytes_it);
    app_print_verified(verified, rel);

    for (int g = 0; g < ngpus; g++) {
        CUDA_CHECK(cudaSetDevice(dev[g]));
        GCOMM_CHECK(gcomm_free(a[g]));
        GCOMM_CHECK(gcomm_free(b[g]));
        CUDA_CHECK(cudaFree(clk[g]));
    }
    GCOMM_CHECK(gcomm_finalize());
    free(init);
    free(t_kernel);
    free(t_host);
    return verified == 0 ? 1 : 0;
}
