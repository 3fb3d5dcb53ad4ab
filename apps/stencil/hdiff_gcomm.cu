/* hdiff_gcomm: the dCUDA paper's stencil mini-app (COSMO horizontal diffusion, four dependent
 * stencils per iteration; the mathematics and the exchange pattern are in hdiff_common.h) written
 * the dCUDA way on gcomm: ONE kernel runs every iteration; every thread block is a rank that owns
 * a slab of j-lines (all i, all k) and exchanges its halos with its j-neighbours by notified puts
 * from device code. The MPI-CUDA twin is hdiff_mpicuda.cu; both verify against the same serial
 * reference.
 *
 * Decomposition: 1-D in j over all ranks of all GPUs. GPU g holds the global lines
 * g*nj .. (g+1)*nj - 1 (nj = --nj, per GPU) in arrays allocated on it, with one halo line on each
 * side of every k-level; its ranks split those lines as evenly as possible (--nj need not be a
 * multiple of the rank count). Each rank uses pointers shifted to its first halo line, so its
 * part of every array starts at its left halo line of level 0, and its window spans up to its
 * right halo line of the last level. As in the paper ("the windows of neighboring shared memory
 * ranks overlap and data movements only take place between distributed memory ranks"), windows
 * of ranks of one GPU overlap: a rank's halo line IS the neighbour's boundary line, and a put
 * between them has source == target, so gcomm copies nothing and only notifies. Between GPUs
 * (and across the periodic seam), the put copies the line into the neighbour GPU's halo line.
 *
 * A halo is nk lines (one per k-level, the layout is i, j, k). By default (--halo typed) it moves
 * as ONE typed notified put: a vector datatype of nk blocks of ni doubles, one plane apart, which
 * the calling block copies through the GPU datatype engine (or, to another node, the proxy moves
 * as its nk lines at once) and whose notification follows the data. --halo lines is the paper's
 * dCUDA variant ("26 separate 1kB messages (one per vertical layer)"): one gcomm_put per line,
 * then one flush and ONE notification for the whole halo. Either way one notification per halo
 * (rather than one per level) also keeps two neighbours that send each other many levels from
 * filling each other's notification lanes while neither is waiting.
 *
 * Why it is race-free without barriers (every hazard is ordered by a notification the writer
 * waited for): a rank starts iteration t+1 only after its neighbours' out halos of iteration t
 * arrived, i.e. after both neighbours finished phase 3 of t, so its writes of t+1 (its own lap,
 * fly and out lines, which are its neighbours' halo lines, and its puts into their halos) cannot
 * overtake a neighbour still reading them in iteration t. The in/out arrays alternate (the out
 * window of t is the in window of t+1), like the paper's Fig. 2 program.
 *
 * Under mpirun every process drives one GPU of the job (app_job.h: gcomm_init_mpi), e.g.
 * `GCOMM_FORCE_PROXY=1 mpirun -n 2 hdiff_gcomm` runs the halo exchange between the processes'
 * GPUs through the proxy; the figures and the verification cover the whole job.
 *
 * Usage: hdiff_gcomm [--ni N] [--nj N] [--nk N] [--steps N] [--blocks-per-gpu N] [--threads N]
 *                    [--reps N] [--check 0|1] [--halo typed|lines]
 *                    (defaults: the paper's 128 x 320 x 26 per GPU, typed halos)
 * Exit: 0 verified (or --check 0), 1 wrong result or error, 77 no GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel is capped at 64 registers (HD_MIN_RANKS_PER_SM, below), far under the device API's
 * count: with the polling loops' drain inlined it spills less than around its out-of-line call
 * (H100, 2026-11-27: 107.5 against 116.7 us per iteration at nj 320, rank_impl.h). */
#define GCOMM_POLL_INLINE 1
#include "gcomm/device.cuh"
#include "gcomm/gcomm.h"

#include "app_job.h"
#include "app_util.h"
#include "hdiff_common.h"

/* Tags say which halo of the target the data lands in (with two ranks, or one, the left and
 * right neighbour are the same rank and only the tag tells the two out halos apart). */
#define TAG_FROM_LEFT 1  /* fills the target's left halo line (0) */
#define TAG_FROM_RIGHT 2 /* fills the target's right halo line (nj + 1) */

typedef struct {
    unsigned long long start, end;
} hd_clock_t;

static __device__ __forceinline__ unsigned long long globaltimer_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* First own line (in the GPU's numbering, 0-based, halo excluded) of local rank r of n. */
static __device__ __forceinline__ long part_first(int r, int n, long nj_gpu)
{
    return (long)r * nj_gpu / n;
}

/* Sends line src_line of every level of src (this rank's part of an array) to line target_line
 * of the target's part of window win, with one notification `tag` after the data. Block-
 * collective. typed: the nk lines as one instance of halo_t, one typed notified put; otherwise
 * one put per line, then a flush (the data visible at the target) and the notification. */
static __device__ int halo_put(gcomm_context_t *ctx, gcomm_win_t win, int target, long target_line,
                               const double *src, long src_line, hd_layout_t L, int tag,
                               gcomm_device_type_t halo_t, int typed)
{
    if (typed) {
        const size_t at = hd_at(L, 0, target_line, 0) * sizeof(double);
        return gcomm_put_typed_notify(ctx, win, target, at, 1, halo_t,
                                      src + hd_at(L, 0, src_line, 0), 1, halo_t, tag);
    }
    const size_t line_bytes = (size_t)L.ni * sizeof(double);
    for (int k = 0; k < L.nk; k++) {
        int rc = gcomm_put(ctx, win, target, hd_at(L, 0, target_line, k) * sizeof(double),
                           line_bytes, src + hd_at(L, 0, src_line, k));
        if (rc != GCOMM_SUCCESS) return rc;
    }
    int rc = gcomm_win_flush(ctx, win);
    if (rc != GCOMM_SUCCESS) return rc;
    return gcomm_notify(ctx, win, target, tag);
}

/* Threads per rank: the kernel is built for at most 512 and two ranks per SM, which caps it at 64
 * registers per thread. Without the bound the inlined device API (matching, typed copies) would
 * let the compiler take ~220 registers, so that only 256 threads fit on an SM and the stencil
 * loops, latency-bound, ran at an eighth of the occupancy (H100, 2026-11-24: 1280 lines per GPU,
 * 386 us/iteration at 128 threads and 217 registers, 231 us at 512 threads and 64 registers;
 * the spills the cap causes are in the communication calls, which it barely slows).
 * A second kernel is bounded to three ranks per SM (40 registers): more threads for the stencil
 * loops, more spills in the calls. On 2x H200 (2026-11-28, 128 x nj x 26 per GPU) it won where
 * a rank owns many lines (nj 5120: 536-539 against 563-564 us per iteration, 19 lines per rank
 * at two per SM) and lost where the calls weigh more (nj 2560: 321 against 314 us; 320: 109
 * against 96); --ranks-per-sm 0 (the default) takes it from HD_RPS3_LINES lines per rank on. */
#define HD_THREADS_MAX 512
#define HD_RPS3_LINES 16

/* The whole mini-app: `steps` iterations of the four stencils and three halo exchanges.
 * L is the layout of the GPU's arrays (L.lines = nj per GPU + 2). */
static __device__ __forceinline__ void
hdiff_body(gcomm_param_t param, double *in, double *out, double *lap, double *flx, double *fly,
           const double *coeff, hd_layout_t L, int steps, hd_clock_t *clk,
           gcomm_device_type_t halo_t, int typed)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int rank, size, lrank, lsize;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_size(&ctx, GCOMM_COMM_WORLD, &size);
    gcomm_comm_rank(&ctx, GCOMM_COMM_DEVICE, &lrank);
    gcomm_comm_size(&ctx, GCOMM_COMM_DEVICE, &lsize);

    /* This rank's lines, and the left neighbour's count (it decides where that neighbour's right
     * halo line is). Every GPU is split the same way, so the left neighbour across a GPU
     * boundary (or the periodic seam) is local rank lsize - 1 of its GPU. */
    const long nj_gpu = L.lines - 2;
    const long first = part_first(lrank, lsize, nj_gpu);
    const long nj = part_first(lrank + 1, lsize, nj_gpu) - first;
    const int lprev = (lrank + lsize - 1) % lsize;
    const long nj_left = part_first(lprev + 1, lsize, nj_gpu) - part_first(lprev, lsize, nj_gpu);
    const int left = (rank + size - 1) % size, right = (rank + 1) % size;

    /* Rank-local pointers: line 0 is this rank's left halo line (the GPU's line `first`). */
    const size_t shift = (size_t)first * (size_t)L.ni;
    in += shift;
    out += shift;
    lap += shift;
    flx += shift;
    fly += shift;
    coeff += shift;

    /* Windows on the arrays whose halos are exchanged: from the left halo line of level 0 to the
     * right halo line of the last level. flx needs none (i is not decomposed). */
    const size_t wbytes = (hd_at(L, 0, nj + 1, L.nk - 1) + (size_t)L.ni) * sizeof(double);
    gcomm_win_t win, wout, wlap, wfly;
    gcomm_win_create(&ctx, GCOMM_COMM_WORLD, in, wbytes, &win);
    gcomm_win_create(&ctx, GCOMM_COMM_WORLD, out, wbytes, &wout);
    gcomm_win_create(&ctx, GCOMM_COMM_WORLD, lap, wbytes, &wlap);
    gcomm_win_create(&ctx, GCOMM_COMM_WORLD, fly, wbytes, &wfly);

    const hd_step_t step = hd_step_make(L, nj, blockDim.x); /* the block's walk over its points */

    /* The clock covers the iterations only: every rank has started and created its windows. */
    gcomm_barrier(&ctx, GCOMM_COMM_WORLD);
    if (lrank == 0 && threadIdx.x == 0) clk->start = globaltimer_ns();

    for (int s = 0; s < steps; s++) {
        /* phase 1: laplacian; reads in on lines 0 .. nj+1 (own and input halos) */
        for (hd_walk_t w = hd_walk_begin(L, nj, threadIdx.x, blockDim.x, step); w.e < w.own;
             hd_walk_next(L, &w))
            lap[w.q.c] = hd_lap(in, w.q.c, w.q.i, L.ni);
        __syncthreads(); /* the puts copy lines other threads wrote */
        if (halo_put(&ctx, wlap, left, nj_left + 1, lap, 1, L, TAG_FROM_RIGHT, halo_t, typed) !=
            GCOMM_SUCCESS)
            break;
        if (gcomm_wait_notifications(&ctx, wlap, right, TAG_FROM_RIGHT, 1) != GCOMM_SUCCESS) break;

        /* phase 2: fluxes; fly reads lap and in on line nj+1 (just received / input halo) */
        for (hd_walk_t w = hd_walk_begin(L, nj, threadIdx.x, blockDim.x, step); w.e < w.own;
             hd_walk_next(L, &w)) {
            flx[w.q.c] = hd_flx(in, lap, w.q.c, w.q.i, L.ni);
            fly[w.q.c] = hd_fly(in, lap, w.q.c, L.ni);
        }
        __syncthreads();
        if (halo_put(&ctx, wfly, right, 0, fly, nj, L, TAG_FROM_LEFT, halo_t, typed) !=
            GCOMM_SUCCESS)
            break;
        if (gcomm_wait_notifications(&ctx, wfly, left, TAG_FROM_LEFT, 1) != GCOMM_SUCCESS) break;

        /* phase 3: output; reads fly on line 0 (just received) */
        for (hd_walk_t w = hd_walk_begin(L, nj, threadIdx.x, blockDim.x, step); w.e < w.own;
             hd_walk_next(L, &w))
            out[w.q.c] = hd_out(in, coeff, flx, fly, w.q.c, w.q.i, L.ni);
        __syncthreads();
        /* out's boundary lines are the next iteration's input halos of both neighbours */
        if (halo_put(&ctx, wout, left, nj_left + 1, out, 1, L, TAG_FROM_RIGHT, halo_t, typed) !=
            GCOMM_SUCCESS)
            break;
        if (halo_put(&ctx, wout, right, 0, out, nj, L, TAG_FROM_LEFT, halo_t, typed) !=
            GCOMM_SUCCESS)
            break;
        if (gcomm_wait_notifications(&ctx, wout, right, TAG_FROM_RIGHT, 1) != GCOMM_SUCCESS) break;
        if (gcomm_wait_notifications(&ctx, wout, left, TAG_FROM_LEFT, 1) != GCOMM_SUCCESS) break;

        double *t = in;
        in = out;
        out = t;
        gcomm_win_t w = win;
        win = wout;
        wout = w;
    }
    /* (after an error every rank leaves the loop: the launch is stopped and waits return the
     * error; gcomm_launch reports the cause with rank, window and offset) */

    gcomm_barrier(&ctx, GCOMM_COMM_WORLD);
    if (lrank == 0 && threadIdx.x == 0) clk->end = globaltimer_ns();

    gcomm_win_free(&ctx, &wfly);
    gcomm_win_free(&ctx, &wlap);
    gcomm_win_free(&ctx, &wout);
    gcomm_win_free(&ctx, &win);
    gcomm_finish(&ctx);
}

__global__ void __launch_bounds__(HD_THREADS_MAX, 2)
hdiff_kernel(gcomm_param_t param, double *in, double *out, double *lap, double *flx, double *fly,
             const double *coeff, hd_layout_t L, int steps, hd_clock_t *clk,
             gcomm_device_type_t halo_t, int typed)
{
    hdiff_body(param, in, out, lap, flx, fly, coeff, L, steps, clk, halo_t, typed);
}

__global__ void __launch_bounds__(HD_THREADS_MAX, 3)
hdiff_kernel_rps3(gcomm_param_t param, double *in, double *out, double *lap, double *flx,
                  double *fly, const double *coeff, hd_layout_t L, int steps, hd_clock_t *clk,
                  gcomm_device_type_t halo_t, int typed)
{
    hdiff_body(param, in, out, lap, flx, fly, coeff, L, steps, clk, halo_t, typed);
}

/* ---- host ---- */

typedef struct {
    long ni, nj, nk, steps, blocks, threads, reps, check;
    long rps; /* --ranks-per-sm: 0 (choose), 2 or 3 */
    int typed; /* --halo typed (1) or lines (0) */
} options_t;

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--ni N] [--nj N] [--nk N] [--steps N] [--blocks-per-gpu N] [--threads N]\n"
            "          [--ranks-per-sm 0|2|3] [--reps N] [--check 0|1] [--halo typed|lines]\n"
            "  --ni, --nj, --nk  domain per GPU (default 128 x 320 x 26, the paper's); j is split\n"
            "  --steps           iterations (default 100)\n"
            "  --blocks-per-gpu  ranks per GPU; 0: as many as are resident, at most nj\n"
            "                    (default 0)\n"
            "  --threads         threads per block, at most 512 (default 512)\n"
            "  --ranks-per-sm    the kernel bounded to 2 (64 registers) or 3 (40) ranks of 512\n"
            "                    threads per SM; 0: 3 where a rank would own >= 16 lines at 2 per\n"
            "                    SM, else 2 (default 0)\n"
            "  --reps            timed launches after one warm-up, median reported (default 3)\n"
            "  --check           compare with the serial CPU reference (default 1)\n"
            "  --halo            typed: one typed notified put per halo (default); lines: the\n"
            "                    paper's variant, one put per k-level, a flush and a notify\n",
            prog);
}

static void parse(int argc, char **argv, options_t *o)
{
    o->ni = 128;
    o->nj = 320;
    o->nk = 26;
    o->steps = 100;
    o->blocks = 0;
    o->rps = 0;
    o->threads = HD_THREADS_MAX;
    o->reps = 3;
    o->check = 1;
    o->typed = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--halo") == 0 && i + 1 < argc &&
            (strcmp(argv[i + 1], "typed") == 0 || strcmp(argv[i + 1], "lines") == 0)) {
            o->typed = strcmp(argv[++i], "typed") == 0;
            continue;
        }
        if (app_opt_long(argc, argv, &i, "--ni", &o->ni) ||
            app_opt_long(argc, argv, &i, "--nj", &o->nj) ||
            app_opt_long(argc, argv, &i, "--nk", &o->nk) ||
            app_opt_long(argc, argv, &i, "--steps", &o->steps) ||
            app_opt_long(argc, argv, &i, "--blocks-per-gpu", &o->blocks) ||
            app_opt_long(argc, argv, &i, "--threads", &o->threads) ||
            app_opt_long(argc, argv, &i, "--ranks-per-sm", &o->rps) ||
            app_opt_long(argc, argv, &i, "--reps", &o->reps) ||
            app_opt_long(argc, argv, &i, "--check", &o->check))
            continue;
        usage(argv[0]);
        exit(strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0 ? 0 : 2);
    }
    const char *bad = NULL;
    if (o->ni < 2 || o->ni > (1 << 30)) bad = "--ni must be 2 .. 2^30";
    else if (o->nj < 1) bad = "--nj must be at least 1";
    else if (o->nk < 1 || o->nk > (1 << 30)) bad = "--nk must be 1 .. 2^30";
    else if (o->steps < 0 || o->steps > 2147483647L) bad = "--steps must be 0 .. INT_MAX";
    else if (o->blocks < 0) bad = "--blocks-per-gpu must not be negative";
    else if (o->blocks > o->nj)
        bad = "--blocks-per-gpu must not exceed --nj (a rank owns >= 1 line)";
    else if (o->threads < 1 || o->threads > HD_THREADS_MAX) bad = "--threads must be 1..512";
    else if (o->rps != 0 && o->rps != 2 && o->rps != 3) bad = "--ranks-per-sm must be 0, 2 or 3";
    else if (o->reps < 1) bad = "--reps must be at least 1";
    if (bad) {
        fprintf(stderr, "%s\n", bad);
        exit(2);
    }
}

/* How many ranks of `kernel` are resident at once on the smallest GPU of the job (collective over
 * the job's processes: every GPU of the job runs as many). */
static int resident_ranks(const void *kernel, int threads, app_job_t *job)
{
    int least = 1 << 30;
    for (int g = 0; g < job->nlocal; g++) {
        int b = 0;
        GCOMM_CHECK(gcomm_launch_max_blocks(kernel, threads, 0, g, &b));
        if (b < least) least = b;
    }
    return (int)app_job_min_long(job, least);
}

int main(int argc, char **argv)
{
    options_t o;
    parse(argc, argv, &o);
    if (!app_have_gpu()) {
        printf("hdiff_gcomm: no usable GPU (cudaGetDeviceCount), skipped\n");
        return APP_SKIP;
    }
    app_job_t job;
    GCOMM_CHECK(app_job_init(&argc, &argv, &job));
    const int ngpus = job.nlocal, *dev = job.dev, root = job.rank == 0;
    if (app_job_any(&job, ngpus == 0)) {
        if (root) printf("hdiff_gcomm: a process drives no GPU, skipped\n");
        GCOMM_CHECK(app_job_finalize(&job));
        return APP_SKIP;
    }
    const void *kernel2 = gcomm_kernel(hdiff_kernel), *kernel3 = gcomm_kernel(hdiff_kernel_rps3);
    if (kernel2 == NULL || kernel3 == NULL) {
        fprintf(stderr, "hdiff_gcomm: the CUDA runtime does not know the kernel\n");
        return 1;
    }
    /* --ranks-per-sm 0: the three-rank kernel where a rank would own HD_RPS3_LINES lines or more
     * at two per SM (where the stencil loops outweigh the calls' spills). Every process of the
     * job takes the same branches (same options), so the collective in resident_ranks matches. */
    const long rps = o.rps ? o.rps
                     : o.nj >= (long)HD_RPS3_LINES * resident_ranks(kernel2, (int)o.threads, &job)
                         ? 3
                         : 2;
    const void *kernel = rps == 3 ? kernel3 : kernel2;
    /* 0: as many ranks as are resident at once on the smallest GPU (they wait for each other),
     * but at least one line each. */
    int blocks = (int)o.blocks;
    if (blocks == 0) {
        blocks = resident_ranks(kernel, (int)o.threads, &job);
        if (blocks > o.nj) blocks = (int)o.nj;
    }

    const long nj_global = o.nj * job.ngpus;
    hd_layout_t Lg; /* one GPU's arrays */
    Lg.ni = (int)o.ni;
    Lg.nk = (int)o.nk;
    Lg.lines = o.nj + 2;
    const size_t gpu_elems = hd_plane(Lg) * (size_t)o.nk, gpu_bytes = gpu_elems * sizeof(double);
    if (root)
        printf("hdiff_gcomm (horizontal diffusion, one kernel, notified puts): %d GPU(s) x %d "
               "ranks of %ld threads (kernel for %ld per SM)%s; domain %ld x %ld x %ld (ni x nj x "
               "nk, %ld x %ld x %ld per GPU), %ld steps, %s\n",
               job.ngpus, blocks, o.threads, rps, job.mpi ? ", one process per GPU" : "", o.ni,
               nj_global, o.nk, o.ni, o.nj, o.nk, o.steps,
               o.typed ? "one typed put per halo" : "one put per halo line");

    /* Per GPU: in/out (alternating), lap and fly have windows, so they come from gcomm_malloc;
     * flx (never exchanged) and coeff (read only) are plain device memory. */
    double *a[GCOMM_MAX_GPUS], *b[GCOMM_MAX_GPUS], *lap[GCOMM_MAX_GPUS], *fly[GCOMM_MAX_GPUS];
    double *flx[GCOMM_MAX_GPUS], *coeff[GCOMM_MAX_GPUS];
    hd_clock_t *clk[GCOMM_MAX_GPUS];
    /* the input of every GPU, kept on the host to restart each timed run from it */
    double *h_in[GCOMM_MAX_GPUS], *h_coeff = (double *)malloc(gpu_bytes);
    double *h_out = (double *)malloc(gpu_bytes);
    int short_of_memory = h_coeff == NULL || h_out == NULL;
    for (int g = 0; g < ngpus; g++)
        short_of_memory |= (h_in[g] = (double *)malloc(gpu_bytes)) == NULL;
    if (short_of_memory) {
        fprintf(stderr, "hdiff_gcomm: out of host memory\n");
        return 1;
    }
    for (int g = 0; g < ngpus; g++) {
        CUDA_CHECK(cudaSetDevice(dev[g]));
        GCOMM_CHECK(gcomm_malloc(gpu_bytes, (void **)&a[g]));
        GCOMM_CHECK(gcomm_malloc(gpu_bytes, (void **)&b[g]));
        GCOMM_CHECK(gcomm_malloc(gpu_bytes, (void **)&lap[g]));
        GCOMM_CHECK(gcomm_malloc(gpu_bytes, (void **)&fly[g]));
        CUDA_CHECK(cudaMalloc((void **)&flx[g], gpu_bytes));
        CUDA_CHECK(cudaMalloc((void **)&coeff[g], gpu_bytes));
        CUDA_CHECK(cudaMalloc((void **)&clk[g], sizeof(hd_clock_t)));
        hd_fill(Lg, (long)(job.first + g) * o.nj, o.nj, nj_global, h_in[g], h_coeff);
        CUDA_CHECK(cudaMemcpy(coeff[g], h_coeff, gpu_bytes, cudaMemcpyHostToDevice));
    }

    /* a halo: line j of every level, i.e. nk blocks of ni doubles one plane apart */
    if (hd_plane(Lg) > 2147483647u) {
        fprintf(stderr, "hdiff_gcomm: a plane of %zu doubles is too large for a datatype stride\n",
                hd_plane(Lg));
        return 1;
    }
    gcomm_datatype halo_type;
    gcomm_device_type_t halo_t[GCOMM_MAX_GPUS];
    GCOMM_CHECK(gcomm_type_vector((int)o.nk, (int)o.ni, (int)hd_plane(Lg), GCOMM_DOUBLE,
                                  &halo_type));
    GCOMM_CHECK(gcomm_type_commit(&halo_type));
    for (int g = 0; g < ngpus; g++) GCOMM_CHECK(gcomm_type_device(halo_type, dev[g], &halo_t[g]));
    int steps = (int)o.steps;
    void *argv_g[GCOMM_MAX_GPUS][12];
    gcomm_launch_t l;
    memset(&l, 0, sizeof(l));
    l.kernel = kernel;
    l.blocks_per_gpu = blocks;
    l.threads_per_block = (int)o.threads;
    for (int g = 0; g < ngpus; g++) {
        argv_g[g][0] = NULL; /* gcomm fills the gcomm_param_t */
        argv_g[g][1] = &a[g];
        argv_g[g][2] = &b[g];
        argv_g[g][3] = &lap[g];
        argv_g[g][4] = &flx[g];
        argv_g[g][5] = &fly[g];
        argv_g[g][6] = &coeff[g];
        argv_g[g][7] = &Lg;
        argv_g[g][8] = &steps;
        argv_g[g][9] = &clk[g];
        argv_g[g][10] = &halo_t[g];
        argv_g[g][11] = &o.typed;
        l.args[g] = argv_g[g];
    }

    /* One warm-up launch, then o.reps timed ones, each from the same input. The main figure is
     * in-kernel: the longest of the GPUs' globaltimer intervals between a world barrier before
     * the iterations and one after them, i.e. the iterations alone once every rank runs (what
     * the MPI-CUDA twin's host loop measures too). The host figure is the whole gcomm_launch
     * call (launch, runtime setup and teardown included) divided by steps. */
    const int total = (int)o.reps + 1;
    double *t_kernel = (double *)malloc(sizeof(double) * total);
    double *t_host = (double *)malloc(sizeof(double) * total);
    if (t_kernel == NULL || t_host == NULL) {
        fprintf(stderr, "hdiff_gcomm: out of host memory\n");
        return 1;
    }
    for (int r = 0; r < total; r++) {
        for (int g = 0; g < ngpus; g++) {
            CUDA_CHECK(cudaSetDevice(dev[g]));
            CUDA_CHECK(cudaMemcpy(a[g], h_in[g], gpu_bytes, cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(b[g], h_in[g], gpu_bytes, cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemset(lap[g], 0, gpu_bytes));
            CUDA_CHECK(cudaMemset(fly[g], 0, gpu_bytes));
            CUDA_CHECK(cudaMemset(clk[g], 0, sizeof(hd_clock_t)));
            CUDA_CHECK(cudaDeviceSynchronize());
        }
        double t0 = app_now();
        int rc = gcomm_launch(&l);
        t_host[r] = app_now() - t0;
        if (rc != GCOMM_SUCCESS) {
            fprintf(stderr, "hdiff_gcomm: gcomm_launch failed: %s (%s)\n", gcomm_error_string(rc),
                    gcomm_last_error_detail());
            return 1; /* (every process's launch fails alike) */
        }
        double worst = 0;
        for (int g = 0; g < ngpus; g++) {
            hd_clock_t c;
            CUDA_CHECK(cudaSetDevice(dev[g]));
            CUDA_CHECK(cudaMemcpy(&c, clk[g], sizeof(c), cudaMemcpyDeviceToHost));
            double dt = 1e-9 * (double)(c.end - c.start);
            if (dt > worst) worst = dt;
        }
        t_kernel[r] = app_job_max(&job, worst);
        t_host[r] = app_job_max(&job, t_host[r]);
    }
    double kernel_it = app_step_time(t_kernel, o.reps, o.steps);
    double host_it = app_step_time(t_host, o.reps, o.steps);
    /* Compulsory traffic per point and iteration: lap (read in, write lap), fluxes (read in,
     * lap; write flx, fly), out (read in, coeff, flx, fly; write out): 11 arrays of doubles. */
    double bytes_it = 11.0 * sizeof(double) * (double)o.ni * (double)nj_global * (double)o.nk;

    int verified = -1;
    double rel = 0;
    if (o.check) {
        hd_layout_t L; /* the whole domain */
        double *ref = hd_reference_result(Lg.ni, nj_global, Lg.nk, o.steps, &L);
        if (ref == NULL) {
            fprintf(stderr, "hdiff_gcomm: out of host memory for the reference\n");
            return 1;
        }
        double err[2] = {0, 0};
        for (int g = 0; g < ngpus; g++) {
            CUDA_CHECK(cudaSetDevice(dev[g]));
            /* the newest values: a after an even number of steps, b after an odd one */
            CUDA_CHECK(cudaMemcpy(h_out, (o.steps % 2) ? b[g] : a[g], gpu_bytes,
                                  cudaMemcpyDeviceToHost));
            for (int k = 0; k < Lg.nk; k++)
                for (long jl = 1; jl <= o.nj; jl++)
                    for (int i = 0; i < Lg.ni; i++)
                        app_err_add(err, h_out[hd_at(Lg, i, jl, k)],
                                    ref[hd_at(L, i, (long)(job.first + g) * o.nj + jl, k)]);
        }
        err[0] = app_job_max(&job, err[0]);
        err[1] = app_job_max(&job, err[1]);
        rel = app_err_rel(err);
        verified = rel < 1e-12;
        free(ref);
    }

    if (root) {
        printf("time per iteration: %.3f us in-kernel (between world barriers, median of %ld), "
               "%.3f us host (whole gcomm_launch / steps)\n",
               kernel_it * 1e6, o.reps, host_it * 1e6);
        printf("effective memory bandwidth: %.1f GB/s (11 array accesses per point and "
               "iteration, in-kernel time)\n",
               kernel_it > 0 ? bytes_it / kernel_it * 1e-9 : 0.0);
        app_print_verified(verified, rel);
    }

    for (int g = 0; g < ngpus; g++) {
        CUDA_CHECK(cudaSetDevice(dev[g]));
        GCOMM_CHECK(gcomm_free(a[g]));
        GCOMM_CHECK(gcomm_free(b[g]));
        GCOMM_CHECK(gcomm_free(lap[g]));
        GCOMM_CHECK(gcomm_free(fly[g]));
        CUDA_CHECK(cudaFree(flx[g]));
        CUDA_CHECK(cudaFree(coeff[g]));
        CUDA_CHECK(cudaFree(clk[g]));
    }
    GCOMM_CHECK(gcomm_type_free(&halo_type));
    GCOMM_CHECK(app_job_finalize(&job));
    for (int g = 0; g < ngpus; g++) free(h_in[g]);
    free(h_coeff);
    free(h_out);
    free(t_kernel);
    free(t_host);
    return verified == 0 ? 1 : 0;
}
