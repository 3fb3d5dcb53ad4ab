/* Overlap of computation and communication: the dCUDA paper's "overlap" micro-benchmark (Gysi,
 * Baer, Hoefler, SC'16, Section IV, Figs. 7 and 8) on gcomm.
 *
 * One kernel, launched with gcomm_launch on every GPU of the job (one process driving every GPU:
 * gcomm_init; or, under mpirun, one process per GPU: apps/app_job.h, e.g.
 * `GCOMM_FORCE_PROXY=1 mpirun -n 2 bench_overlap` for the exchange through the proxy), runs each
 * thread block as one rank; the ranks are over-decomposed (default: as many as are resident, at
 * most --ranks-per-sm per SM) so that while some ranks of an SM wait for their halos, the
 * hardware scheduler runs others' computation. Every iteration of every rank does
 *   1. a compute phase on the rank's own data, one of two workloads:
 *      compute  (compute-bound) Newton-Raphson iterations y <- (y + x / y) / 2 for sqrt(x), one
 *               element per thread (the paper: "128 divisions per rank" per iteration);
 *      memory   (memory-bound) a copy of one chunk of the rank's source array to a second array;
 *               the chunk moves on every iteration through a region per rank, so the data cycled
 *               through (--mem-bytes per GPU) is far larger than the L2 and comes from DRAM;
 *   2. an exchange phase: the rank put_notifies a halo of --halo-bytes to its left and right
 *      neighbour on a 1-D ring over all ranks of all GPUs (the ring crosses to the peer GPU at
 *      the GPUs' first and last ranks), then waits for its two notifications.
 * Runtime flags (kernel parameters, not template or compile-time switches, so that the code is
 * the same in every mode, as in the paper) skip either phase: mode "both" runs both, "compute"
 * only phase 1 (--no-exchange), "exchange" only phase 2 (--no-compute). With both phases on, two
 * more modes run the phases with one rank per SM ("compute_alone", "exchange_alone": the first
 * rank of each SM on a ring of its own; each rank records its %smid, and where two shared one
 * SM, e.g. under MPS, no bound is given): what a rank's phase takes when no rank of its SM
 * competes with it.
 *
 * Unless --nr-iters / --copy-bytes fix it, the amount of computation per iteration is calibrated
 * so that compute only takes about as long as exchange only: that is where overlap matters most.
 * --sweep runs one point per factor of that amount (default 0.25 .. 4), as the paper's Figs. 7
 * and 8 sweep it.
 *
 * Timing: in-kernel, %globaltimer read by each GPU's first rank after a gcomm_barrier(WORLD)
 * before the iteration loop and after one behind it (launch, setup and window creation are
 * excluded); the longest GPU's interval / iterations, 10000 of them by default: a ring of
 * thousands of ranks takes hundreds of iterations to settle into its wave (iteration starts
 * spread over milliseconds), and with 1000 the launch's time included that start (2x H100:
 * gcomm memory-bound 1.60 at 1000, 1.45 at 10000; docs/BENCHMARKS.md). Median over --repeats
 * launches after a warm-up launch; the three modes are timed in interleaved rounds (rotating
 * order) so that a disturbance hits all alike. Reported per point: ratio = both / max(compute, exchange)
 * (1.0: perfect overlap; (c + x) / max(c, x): none), and its dependency bound
 * max(1, (compute alone + exchange alone) / max(compute, exchange)): a rank's iteration k + 1
 * needs its neighbours' halos of iteration k, so along the ring each iteration holds one rank's
 * compute phase followed by one exchange, and neither is shorter than alone on its SM. Issue
 * targets: memory <= 1.10, compute <= 1.25; a miss is printed but does not change the exit code
 * (--quick runs are too short to judge performance).
 *
 * Verification, after the timed launches of each mode (all outputs are zeroed before every
 * launch, so a stale result cannot pass): the halos a sample of ranks received in the last
 * iteration equal the deterministic pattern their neighbours sent (a function of the sender's
 * rank and the iteration, never zero); the sqrt results of the sampled ranks equal the host's
 * nr_sqrt bit for bit (and are within 1e-6 relative of sqrt(x) once the step count converges);
 * the memory workload's last copied chunk equals its (random, never zero) source. Any
 * device-side gcomm error also fails the run.
 *
 * CSV (--csv FILE): workload,mode,ranks,threads,halo_bytes,iters,factor,amount,
 * median_us_per_iter,ratio,bound,phase_us,spread_us; factor is the point's multiple of the
 * calibrated computation (--sweep), amount its Newton-Raphson steps or bytes copied per rank and
 * iteration; the last four on the "both" row only (empty on the others): phase_us and
 * spread_us from the traced iterations of its last launch (OVERLAP_TRACE_ITERS iterations from
 * the middle: how long a rank's compute phase took inside the overlapped schedule, and over how
 * many us the ranks of the first GPU started an iteration; a barrier ends the compute phase of
 * those iterations so that its end is the last warp's).
 *
 * Registers bound how many ranks fit on an SM (overlap_kernel.cuh has the kernel): --lean runs
 * the kernel compiled with the device API's block copy keeping one 16-byte load per thread in
 * flight instead of eight (GCOMM_COPY_INFLIGHT=1: fewer registers, 96 instead of 122 on
 * 2026-11-28; the header line prints the count and the ranks per SM); --bounded [N] compiles
 * it with __launch_bounds__(128, N), N = 8 (default), 12 or 16: at most 64, 40 or 32
 * registers, the rest spilled.
 *
 * The floor (--exchange floor, one process driving every GPU): the same kernel with the exchange
 * written by hand instead of gcomm's put_notify / wait: each rank stores its halo straight into
 * its neighbours' windows (peer memory where the ring crosses GPUs) and raises one flag word per
 * neighbour with a release store, and waits by polling its own two flags (relaxed loads, one
 * acquire fence). No queue, matching, credits or checks, 64 registers (32 with --bounded 16, no
 * spills): what an exchange with the same data movement and ordering costs without any runtime,
 * and how the overlap behaves with as many ranks per SM as the hardware holds.
 *
 * Usage: bench_overlap [--iters N] [--halo-bytes N] [--threads N] [--ranks-per-sm N] [--lean]
 *                      [--bounded [N]] [--exchange gcomm|floor]
 *                      [--workload compute|memory|both] [--no-compute] [--no-exchange]
 *                      [--nr-iters N] [--copy-bytes N] [--mem-bytes N] [--repeats N]
 *                      [--sweep [F,F,...]] [--stagger-us X] [--quick] [--csv FILE]
 * Exit: 0 verified, 1 wrong result or error, 2 bad option, 77 no GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_job.h"
#include "bench_cuda.h"
#include "bench_util.h"
#include "gcomm/device.cuh"
#include "gcomm/gcomm.h"
#include "overlap_kernel.cuh"


static const char *const wl_name[2] = {"compute", "memory"};

/* --sweep without a list: from a quarter of the calibrated computation (exchange-dominated) to
 * four times it (compute-dominated), as the paper's Figs. 7 and 8 sweep it */
#define OVERLAP_MAX_POINTS 32
static const double default_sweep[] = {0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0};
static const char *const mode_name[NMODES] = {"both", "compute", "exchange", "compute_alone",
                                               "exchange_alone"};

/* this compilation's kernels: the device API as configured by default (eight 16-byte loads in
 * flight per thread in a block copy) */
OVERLAP_KERNELS(deep)
/* --exchange floor: the same benchmark with the exchange written by hand (overlap_kernel.cuh) */
OVERLAP_KERNELS(floor)

/* Random 16-byte words with no zero byte, for the memory workload's source (made on the GPU: it
 * is hundreds of MB per GPU). */
__global__ void k_fill_random(uint4 *p, size_t words, uint32_t seed)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < words;
         i += (size_t)gridDim.x * blockDim.x) {
        uint4 v;
        v.x = halo_word((int)seed, (int)(i >> 32), (uint32_t)(4 * i)) | 0x01010101u;
        v.y = halo_word((int)seed, (int)(i >> 32), (uint32_t)(4 * i + 1)) | 0x01010101u;
        v.z = halo_word((int)seed, (int)(i >> 32), (uint32_t)(4 * i + 2)) | 0x01010101u;
        v.w = halo_word((int)seed, (int)(i >> 32), (uint32_t)(4 * i + 3)) | 0x01010101u;
        p[i] = v;
    }
}

/* ---- host ---- */

typedef struct {
    const app_job_t *job; /* the processes (one without mpirun) */
    int root;             /* this process prints and writes the CSV */
    int ngpus, dev[GCOMM_MAX_GPUS]; /* this process's GPUs, job GPUs job->first + g */
    int blocks;      /* ranks per GPU */
    int ranks;       /* ranks of the job (all GPUs) */
    int threads;     /* per rank */
    const void *kernel; /* k_overlap_deep or _lean (--lean), or _boundedN (--bounded N) */
    int sms;         /* SMs of the smallest GPU */
    int iters, repeats;
    size_t halo_bytes;
    size_t mem_bytes;     /* per GPU, each of msrc and mdst */
    size_t region_words;  /* per rank, memory workload */
    double *cin[GCOMM_MAX_GPUS], *cout[GCOMM_MAX_GPUS];
    uint4 *msrc[GCOMM_MAX_GPUS], *mdst[GCOMM_MAX_GPUS];
    char *halo[GCOMM_MAX_GPUS];
    uint32_t *flag[GCOMM_MAX_GPUS]; /* --exchange floor: FLOOR_FLAG_WORDS(blocks) per GPU */
    int floor;                      /* --exchange floor */
    kclock_t *clk[GCOMM_MAX_GPUS];
    unsigned long long *trace[GCOMM_MAX_GPUS]; /* blocks x OVERLAP_TRACE_ITERS x 2 */
    double *hin[GCOMM_MAX_GPUS]; /* host copy of cin */
    FILE *csv;
    int failed; /* a verification failed */
    unsigned long long stagger_ns;
} bench_t;

/* The same bench with one rank per SM (the "alone" modes): the first `sms` ranks of each GPU,
 * on a ring of their own. */
static bench_t alone_view(const bench_t *b)
{
    bench_t a = *b;
    a.blocks = b->sms < b->blocks ? b->sms : b->blocks;
    a.ranks = a.blocks * b->job->ngpus;
    /* the memory workload cycles through as many bytes as with every rank (from DRAM, not L2) */
    const size_t t = (size_t)b->threads;
    a.region_words = b->region_words * (size_t)b->blocks / (size_t)a.blocks / t * t;
    return a;
}

static int mode_alone(int m)
{
    return m == MODE_COMPUTE_ALONE || m == MODE_EXCHANGE_ALONE;
}

static kparams_t make_params(const bench_t *b, int workload, int mode, int nr_iters,
                             size_t chunk_words)
{
    kparams_t kp;
    memset(&kp, 0, sizeof(kp));
    kp.workload = workload;
    kp.do_compute = mode != MODE_EXCHANGE && mode != MODE_EXCHANGE_ALONE;
    kp.do_exchange = mode != MODE_COMPUTE && mode != MODE_COMPUTE_ALONE;
    kp.iters = b->iters;
    kp.nr_iters = nr_iters;
    kp.region_words = b->region_words;
    kp.chunk_words = chunk_words;
    kp.nchunks = (int)(b->region_words / chunk_words);
    kp.halo_bytes = b->halo_bytes;
    kp.stagger_ns = b->stagger_ns;
    /* a few iterations from the middle of the launch, past the start's transient */
    kp.trace_from = b->iters > 2 * OVERLAP_TRACE_ITERS ? b->iters / 2 : -1;
    if (b->floor) {
        kp.floor_ngpus = b->ngpus;
        for (int g = 0; g < b->ngpus; g++) {
            kp.floor_halo[g] = b->halo[g];
            kp.floor_flag[g] = b->flag[g];
        }
    }
    return kp;
}

/* Zeroes what the launch writes (windows, sqrt results, copy destination, trace), so that what
 * the verification finds was written by the launch that follows. Untimed. */
static void poison(const bench_t *b, int workload)
{
    for (int g = 0; g < b->ngpus; g++) {
        CK(cudaSetDevice(b->dev[g]));
        CK(cudaMemset(b->halo[g], 0, (size_t)b->blocks * 2 * b->halo_bytes));
        if (workload == WL_COMPUTE)
            CK(cudaMemset(b->cout[g], 0, (size_t)b->blocks * b->threads * sizeof(double)));
        else
            CK(cudaMemset(b->mdst[g], 0, b->region_words * 16 * (size_t)b->blocks));
        CK(cudaMemset(b->clk[g], 0, sizeof(kclock_t)));
        CK(cudaMemset(b->trace[g], 0,
                      (size_t)b->blocks * OVERLAP_TRACE_ITERS * 2 * sizeof(unsigned long long)));
    }
    /* gcomm_launch runs on its own streams: the memsets must be done first */
    for (int g = 0; g < b->ngpus; g++) {
        CK(cudaSetDevice(b->dev[g]));
        CK(cudaDeviceSynchronize());
    }
}

/* One launch; returns microseconds per iteration (the longest GPU's in-kernel interval), adds
 * the ranks' failed gcomm calls to *errors and, with per_sm, stores the most ranks that ran on
 * one SM. */
static double launch_once(const bench_t *b, const kparams_t *kp, unsigned *errors, int *per_sm)
{
    void *argv[GCOMM_MAX_GPUS][9];
    gcomm_launch_t l;
    memset(&l, 0, sizeof(l));
    l.kernel = b->kernel;
    l.blocks_per_gpu = b->blocks;
    l.threads_per_block = b->threads;
    kparams_t p = *kp;
    /* the launch reads the arguments through these pointers: they must stay valid until it
     * returns, hence locals of this function */
    double *cin[GCOMM_MAX_GPUS], *cout[GCOMM_MAX_GPUS];
    uint4 *msrc[GCOMM_MAX_GPUS], *mdst[GCOMM_MAX_GPUS];
    char *halo[GCOMM_MAX_GPUS];
    kclock_t *clk[GCOMM_MAX_GPUS];
    unsigned long long *trace[GCOMM_MAX_GPUS];
    for (int g = 0; g < b->ngpus; g++) {
        trace[g] = b->trace[g];
        cin[g] = b->cin[g];
        cout[g] = b->cout[g];
        msrc[g] = b->msrc[g];
        mdst[g] = b->mdst[g];
        halo[g] = b->halo[g];
        clk[g] = b->clk[g];
        argv[g][0] = NULL; /* gcomm fills the gcomm_param_t */
        argv[g][1] = &cin[g];
        argv[g][2] = &cout[g];
        argv[g][3] = &msrc[g];
        argv[g][4] = &mdst[g];
        argv[g][5] = &halo[g];
        argv[g][6] = &p;
        argv[g][7] = &clk[g];
        argv[g][8] = &trace[g];
        l.args[g] = argv[g];
    }
    /* the floor's flags and barrier counters count from zero in every launch (gcomm resets its
     * own queues at each launch) */
    for (int g = 0; b->floor && g < b->ngpus; g++) {
        CK(cudaSetDevice(b->dev[g]));
        CK(cudaMemset(b->flag[g], 0, FLOOR_FLAG_WORDS(b->blocks) * 4));
        CK(cudaDeviceSynchronize());
    }
    GK(gcomm_launch(&l));
    double worst = 0;
    unsigned errs = 0, most = 0;
    for (int g = 0; g < b->ngpus; g++) {
        kclock_t c;
        CK(cudaSetDevice(b->dev[g]));
        CK(cudaMemcpy(&c, b->clk[g], sizeof(c), cudaMemcpyDeviceToHost));
        errs += c.errors;
        double us = 1e-3 * (double)(c.t1 - c.t0);
        if (us > worst) worst = us;
        for (int k = 0; k < OVERLAP_MAX_SM; k++)
            if (c.sm_ranks[k] > most) most = c.sm_ranks[k];
    }
    /* the job's figures: the slowest GPU of any process, the errors of all of them */
    *errors += (unsigned)app_job_sum_long(b->job, errs);
    if (per_sm) *per_sm = (int)app_job_max(b->job, (double)most);
    return app_job_max(b->job, worst) / (double)kp->iters;
}

/* World rank r lives on job GPU r / blocks as block r % blocks; this process checks those on its
 * GPUs (local index r / blocks - first), the verify_* results are then combined over the job. */
static int local_gpu_of(const bench_t *b, int r)
{
    int g = r / b->blocks - b->job->first;
    return g >= 0 && g < b->ngpus ? g : -1;
}

static int job_ok(const bench_t *b, int ok)
{
    return !app_job_any(b->job, !ok);
}

static int sample_ranks(const bench_t *b, int *out)
{
    int cand[6] = {0, 1, b->blocks - 1, b->blocks, b->ranks / 2 + 1, b->ranks - 1};
    int n = 0;
    for (int i = 0; i < 6; i++) {
        int r = cand[i], dup = 0;
        if (r < 0 || r >= b->ranks) continue;
        for (int k = 0; k < n; k++) dup |= out[k] == r;
        if (!dup) out[n++] = r;
    }
    return n;
}

/* The last iteration's halos of the sampled ranks: [0, h) from the left neighbour, [h, 2h) from
 * the right one. Returns 1 when all match. */
static int verify_halos(const bench_t *b)
{
    int rs[6], n = sample_ranks(b, rs), ok = 1;
    const size_t h = b->halo_bytes, words = h / 4;
    uint32_t *got = (uint32_t *)malloc(2 * h);
    if (got == NULL) {
        fprintf(stderr, "bench_overlap: out of host memory\n");
        exit(1);
    }
    for (int k = 0; k < n && ok; k++) {
        int r = rs[k], g = local_gpu_of(b, r), lr = r % b->blocks;
        if (g < 0) continue;
        int left = (r + b->ranks - 1) % b->ranks, right = (r + 1) % b->ranks;
        CK(cudaSetDevice(b->dev[g]));
        CK(cudaMemcpy(got, b->halo[g] + (size_t)lr * 2 * h, 2 * h, cudaMemcpyDeviceToHost));
        for (size_t w = 0; w < words && ok; w++) {
            uint32_t want_l = halo_word(left, b->iters - 1, (uint32_t)w);
            uint32_t want_r = halo_word(right, b->iters - 1, (uint32_t)w);
            if (got[w] != want_l || got[words + w] != want_r) {
                fprintf(stderr, "bench_overlap: rank %d halo word %zu: got %08x/%08x, want "
                                "%08x/%08x (from ranks %d/%d)\n",
                        r, w, got[w], got[words + w], want_l, want_r, left, right);
                ok = 0;
            }
        }
    }
    free(got);
    return job_ok(b, ok);
}

/* The sampled ranks' sqrt results: the bits the host's nr_sqrt gives for the last iteration
 * (and, with enough steps to converge, within 1e-6 relative of sqrt). */
static int verify_sqrt(const bench_t *b, int nr)
{
    int rs[6], n = sample_ranks(b, rs), ok = 1;
    double *got = (double *)malloc(sizeof(double) * (size_t)b->threads);
    if (got == NULL) {
        fprintf(stderr, "bench_overlap: out of host memory\n");
        exit(1);
    }
    for (int k = 0; k < n && ok; k++) {
        int g = local_gpu_of(b, rs[k]), lr = rs[k] % b->blocks;
        if (g < 0) continue;
        size_t base = (size_t)lr * b->threads;
        CK(cudaSetDevice(b->dev[g]));
        CK(cudaMemcpy(got, b->cout[g] + base, sizeof(double) * (size_t)b->threads,
                      cudaMemcpyDeviceToHost));
        for (int t = 0; t < b->threads && ok; t++) {
            const double x = b->hin[g][base + (size_t)t];
            const double want = nr_sqrt(x, b->iters - 1, nr);
            const double rel = fabs(got[t] - sqrt(x)) / sqrt(x);
            if (got[t] != want || (nr >= NR_CONVERGED && !(rel <= 1e-6))) {
                fprintf(stderr, "bench_overlap: rank %d element %d: %d Newton steps for "
                                "sqrt(%.17g) give %.17g, got %.17g\n",
                        rs[k], t, nr, x, want, got[t]);
                ok = 0;
            }
        }
    }
    free(got);
    return job_ok(b, ok);
}

/* The sampled ranks' last copied chunk equals its source. */
static int verify_copy(const bench_t *b, const kparams_t *kp)
{
    int rs[6], n = sample_ranks(b, rs), ok = 1;
    const size_t bytes = kp->chunk_words * 16;
    unsigned char *s = (unsigned char *)malloc(bytes), *d = (unsigned char *)malloc(bytes);
    if (s == NULL || d == NULL) {
        fprintf(stderr, "bench_overlap: out of host memory\n");
        exit(1);
    }
    const size_t chunk = (size_t)((b->iters - 1) % kp->nchunks);
    for (int k = 0; k < n && ok; k++) {
        int g = local_gpu_of(b, rs[k]), lr = rs[k] % b->blocks;
        if (g < 0) continue;
        size_t off = (size_t)lr * b->region_words + chunk * kp->chunk_words;
        CK(cudaSetDevice(b->dev[g]));
        CK(cudaMemcpy(s, b->msrc[g] + off, bytes, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(d, b->mdst[g] + off, bytes, cudaMemcpyDeviceToHost));
        /* the source has no zero byte, the destination was zeroed: a zero is a missed store */
        if (memcmp(s, d, bytes) != 0 || memchr(d, 0, bytes) != NULL) {
            fprintf(stderr, "bench_overlap: rank %d: copied chunk %zu differs from its source\n",
                    rs[k], chunk);
            ok = 0;
        }
    }
    free(s);
    free(d);
    return job_ok(b, ok);
}

/* Median of `repeats` launches' time per iteration (after a warm-up launch); used for the
 * calibration, whose launches are not verified, so a device-side error ends the run here. */
static double median_of(const bench_t *b, const kparams_t *kp, int repeats)
{
    double v[64];
    unsigned errors = 0;
    if (repeats > 64) repeats = 64;
    for (int r = -1; r < repeats; r++) {
        double us = launch_once(b, kp, &errors, NULL);
        if (r >= 0) v[r] = us;
    }
    if (errors) {
        fprintf(stderr, "bench_overlap: %u failed gcomm calls in the ranks\n", errors);
        exit(1);
    }
    return bench_median(v, (size_t)repeats);
}

/* Picks the amount of computation (Newton-Raphson iterations, or 16-byte words copied per rank)
 * for which compute only takes about as long as exchange only (tx us per iteration): a few
 * proportional corrections; the time is close to linear in the amount once it is well above the
 * loop's fixed cost. */
static void calibrate(const bench_t *b, int workload, double tx, int *nr_iters, size_t *chunk_words)
{
    const size_t min_words = (size_t)b->threads; /* one word per thread */
    for (int round = 0; round < 4; round++) {
        kparams_t kp = make_params(b, workload, MODE_COMPUTE, *nr_iters, *chunk_words);
        double tc = median_of(b, &kp, 1);
        if (b->root)
            printf("  calibrating %s: %s %zu -> compute only %.2f us/iter (exchange only %.2f)\n",
               wl_name[workload], workload == WL_COMPUTE ? "nr_iters" : "copy_bytes",
               workload == WL_COMPUTE ? (size_t)*nr_iters : *chunk_words * 16, tc, tx);
        if (tc <= 0) break;
        double f = tx / tc;
        if (f > 0.95 && f < 1.05) break;
        if (f > 16) f = 16; /* a coarse first guess must not overshoot wildly */
        if (workload == WL_COMPUTE) {
            double n = (double)*nr_iters * f;
            int nn = n < NR_MIN ? NR_MIN : n > NR_MAX ? NR_MAX : (int)n;
            if (nn == *nr_iters) break;
            *nr_iters = nn;
        } else {
            double w = (double)*chunk_words * f;
            size_t nw = w < (double)min_words ? min_words
                        : w > (double)b->region_words ? b->region_words : (size_t)w;
            nw = nw / min_words * min_words; /* whole rows of the block */
            if (nw == *chunk_words) break;
            *chunk_words = nw;
        }
    }
}

/* The amount of computation `factor` times the calibrated one (whole rows of the block for the
 * copy, within the region). */
static void scale_amount(const bench_t *b, int workload, double factor, int *nr_iters,
                         size_t *chunk_words)
{
    if (workload == WL_COMPUTE) {
        double n = (double)*nr_iters * factor + 0.5;
        *nr_iters = n < NR_MIN ? NR_MIN : n > NR_MAX ? NR_MAX : (int)n;
    } else {
        const size_t t = (size_t)b->threads;
        double w = (double)*chunk_words * factor;
        size_t nw = (size_t)(w / (double)t + 0.5) * t;
        if (nw < t) nw = t;
        if (nw > b->region_words) nw = b->region_words / t * t;
        *chunk_words = nw;
    }
}

/* What the traced iterations of the last launch show, over the ranks of this process's first GPU:
 * how long a rank's compute phase took inside the schedule (beside however many of its SM's ranks
 * computed at the same time), the period, and how far apart the ranks started an iteration (a
 * spread small against the period: the ranks run in lockstep). Returns 0 when nothing was
 * traced. */
typedef struct {
    double phase_us, period_us, spread_us;
} trace_stats_t;

static int trace_stats(const bench_t *b, const kparams_t *kp, trace_stats_t *ts)
{
    if (kp->trace_from < 0 || b->ngpus == 0) return 0;
    const size_t n = (size_t)b->blocks * OVERLAP_TRACE_ITERS * 2;
    unsigned long long *t = (unsigned long long *)malloc(n * sizeof(*t));
    if (t == NULL) {
        fprintf(stderr, "bench_overlap: out of host memory\n");
        exit(1);
    }
    CK(cudaSetDevice(b->dev[0]));
    CK(cudaMemcpy(t, b->trace[0], n * sizeof(*t), cudaMemcpyDeviceToHost));
    /* the buffer was zeroed before the launch: a rank that did not trace every iteration (it
     * stopped on an error, which the run reports) leaves nothing to average */
    for (size_t k = 0; k < n; k += 2)
        if (t[k] == 0 || t[k + 1] < t[k]) {
            free(t);
            return 0;
        }
    double phase = 0, period = 0, spread = 0;
    for (int k = 0; k < OVERLAP_TRACE_ITERS; k++) {
        unsigned long long lo = ~0ull, hi = 0;
        for (int r = 0; r < b->blocks; r++) {
            const unsigned long long *e = t + ((size_t)r * OVERLAP_TRACE_ITERS + k) * 2;
            phase += (double)(e[1] - e[0]);
            if (k + 1 < OVERLAP_TRACE_ITERS) period += (double)(e[2] - e[0]);
            if (e[0] < lo) lo = e[0];
            if (e[0] > hi) hi = e[0];
        }
        spread += (double)(hi - lo);
    }
    free(t);
    ts->phase_us = 1e-3 * phase / ((double)b->blocks * OVERLAP_TRACE_ITERS);
    ts->period_us = 1e-3 * period / ((double)b->blocks * (OVERLAP_TRACE_ITERS - 1));
    ts->spread_us = 1e-3 * spread / OVERLAP_TRACE_ITERS;
    return 1;
}

/* A CSV row; ratio, bound and the trace (ts) on the "both" row only. */
static void row(const bench_t *b, int ranks, int workload, int mode, double factor, long amount,
                double us, double ratio, double bound, const trace_stats_t *ts)
{
    if (b->csv == NULL || !b->root) return;
    fprintf(b->csv, "%s,%s,%d,%d,%zu,%d,%g,%ld,%.3f,", wl_name[workload], mode_name[mode], ranks,
            b->threads, b->halo_bytes, b->iters, factor, amount, us);
    if (ratio > 0) fprintf(b->csv, "%.4f,%.4f,", ratio, bound);
    else fprintf(b->csv, ",,");
    if (ts) fprintf(b->csv, "%.3f,%.3f", ts->phase_us, ts->spread_us);
    else fprintf(b->csv, ",");
    fprintf(b->csv, "\n");
}

/* One point of a workload: the enabled modes in interleaved rounds, verified, printed. The ratio
 * both / max(compute, exchange) comes with its dependency bound: a rank's halo for iteration k + 1
 * waits for its neighbours' iteration k, so along the ring every iteration carries one rank's
 * compute and one exchange, and neither can take less than it takes alone on its SM: the period
 * is at least compute alone + exchange alone, whatever the runtime does (over-decomposition can
 * only hide what the SM's other ranks would have added to them). */
static void bench_point(bench_t *b, int workload, const int enabled[NMODES], int nr_iters,
                        size_t chunk_words, double factor)
{
    const bench_t alone = alone_view(b);
    double v[NMODES][64], med[NMODES] = {0, 0, 0, 0, 0};
    int ok[NMODES] = {1, 1, 1, 1, 1}, per_sm[NMODES] = {0, 0, 0, 0, 0}, traced = 0;
    trace_stats_t ts;
    unsigned errors[NMODES] = {0, 0, 0, 0, 0};
    for (int r = -1; r < b->repeats; r++) { /* round -1 is the warm-up */
        for (int k = 0; k < NMODES; k++) {
            int m = (k + r + 1) % NMODES; /* rotate the order: no mode always runs first */
            if (!enabled[m]) continue;
            const bench_t *bm = mode_alone(m) ? &alone : b;
            kparams_t kp = make_params(bm, workload, m, nr_iters, chunk_words);
            poison(bm, workload);
            int most = 0;
            double us = launch_once(bm, &kp, &errors[m], &most);
            if (most > per_sm[m]) per_sm[m] = most;
            if (r >= 0) v[m][r] = us;
            if (r == b->repeats - 1) { /* after the timed launches, on the last one's output */
                if (kp.do_exchange) ok[m] &= verify_halos(bm);
                if (kp.do_compute)
                    ok[m] &= workload == WL_COMPUTE ? verify_sqrt(bm, nr_iters)
                                                    : verify_copy(bm, &kp);
                if (m == MODE_BOTH) traced = trace_stats(bm, &kp, &ts);
            }
        }
    }
    for (int m = 0; m < NMODES; m++)
        if (enabled[m]) med[m] = bench_median(v[m], (size_t)b->repeats);
    double ratio = 0, bound = 0, mx = 0;
    if (enabled[MODE_BOTH] && enabled[MODE_COMPUTE] && enabled[MODE_EXCHANGE]) {
        mx = med[MODE_COMPUTE] > med[MODE_EXCHANGE] ? med[MODE_COMPUTE] : med[MODE_EXCHANGE];
        ratio = mx > 0 ? med[MODE_BOTH] / mx : 0;
        /* the bound needs the alone modes to have had their SMs to themselves (under MPS another
         * process's ranks may share them, and then a process's own ranks may double up) */
        if (enabled[MODE_COMPUTE_ALONE] && enabled[MODE_EXCHANGE_ALONE] && mx > 0 &&
            per_sm[MODE_COMPUTE_ALONE] == 1 && per_sm[MODE_EXCHANGE_ALONE] == 1) {
            double dep = med[MODE_COMPUTE_ALONE] + med[MODE_EXCHANGE_ALONE];
            bound = (dep > mx ? dep : mx) / mx;
        }
    }
    const long amount = workload == WL_COMPUTE ? (long)nr_iters : (long)(chunk_words * 16);
    for (int m = 0; m < NMODES; m++) {
        if (!enabled[m]) continue;
        int good = ok[m] && errors[m] == 0;
        if (!good) b->failed = 1;
        if (mode_alone(m) && per_sm[m] != 1 && b->root)
            printf("  note: %s ran up to %d ranks on one SM: no dependency bound\n", mode_name[m],
                   per_sm[m]);
        char param[32];
        if (m == MODE_EXCHANGE || m == MODE_EXCHANGE_ALONE) snprintf(param, sizeof(param), "-");
        else if (workload == WL_COMPUTE) snprintf(param, sizeof(param), "nr=%d", nr_iters);
        else snprintf(param, sizeof(param), "copy=%zuB", chunk_words * 16);
        char rs[16] = "", bs[16] = "";
        if (m == MODE_BOTH && ratio > 0) snprintf(rs, sizeof(rs), "%.3f", ratio);
        if (m == MODE_BOTH && bound > 0) snprintf(bs, sizeof(bs), "%.3f", bound);
        const int ranks = mode_alone(m) ? alone.ranks : b->ranks;
        if (b->root)
            printf("%-8s %-14s %6d %7d %9zu %6d %-14s %12.3f %7s %7s  %s\n", wl_name[workload],
                   mode_name[m], ranks, b->threads, b->halo_bytes, b->iters, param, med[m], rs,
                   bs, good ? "yes" : "NO");
        if (errors[m]) fprintf(stderr, "bench_overlap: %u failed gcomm calls\n", errors[m]);
        row(b, ranks, workload, m, factor, amount, med[m], m == MODE_BOTH ? ratio : 0, bound,
            m == MODE_BOTH && traced ? &ts : NULL);
    }
    if (ratio > 0 && b->root) {
        double target = workload == WL_MEMORY ? 1.10 : 1.25;
        printf("  %s x%.2f: ratio both/max = %.3f (target <= %.2f: %s); no overlap at all would "
               "be %.3f (sum/max)",
               wl_name[workload], factor, ratio, target, ratio <= target ? "met" : "MISSED",
               (med[MODE_COMPUTE] + med[MODE_EXCHANGE]) / mx);
        if (bound > 0)
            printf("; dependency bound %.3f (compute alone %.2f + exchange alone %.2f us)", bound,
                   med[MODE_COMPUTE_ALONE], med[MODE_EXCHANGE_ALONE]);
        printf("\n");
        if (traced)
            printf("  %s x%.2f, both, %d traced iterations: a rank computes %.2f us (compute "
                   "only %.2f, alone %.2f), period %.2f us, iteration starts spread over %.2f us\n",
                   wl_name[workload], factor, OVERLAP_TRACE_ITERS, ts.phase_us,
                   med[MODE_COMPUTE], med[MODE_COMPUTE_ALONE], ts.period_us, ts.spread_us);
    }
}

/* One workload: calibrate (unless fixed), then one point per factor of the calibrated amount. */
static void bench_workload(bench_t *b, int workload, const int enabled[NMODES], int nr_fixed,
                           size_t copy_fixed, const double *factors, int nfactors)
{
    int nr_iters = nr_fixed ? nr_fixed : 64;
    size_t chunk_words = copy_fixed ? copy_fixed / 16 : (size_t)16384 / 16;
    if (chunk_words < (size_t)b->threads) chunk_words = (size_t)b->threads;
    if (chunk_words > b->region_words) chunk_words = b->region_words;
    chunk_words = chunk_words / (size_t)b->threads * (size_t)b->threads;

    if (workload == WL_MEMORY) {
        /* the source: random bytes, never zero */
        for (int g = 0; g < b->ngpus; g++) {
            CK(cudaSetDevice(b->dev[g]));
            k_fill_random<<<8 * b->sms, 256>>>(b->msrc[g], b->region_words * (size_t)b->blocks,
                                               (uint32_t)(12345 + g));
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
        }
    }
    /* Calibration needs exchange only (which does not depend on the amount of computation) and
     * a mode with computation to calibrate; skipped when either is disabled or fixed. */
    int fixed = workload == WL_COMPUTE ? nr_fixed != 0 : copy_fixed != 0;
    if (!fixed && enabled[MODE_EXCHANGE] && (enabled[MODE_COMPUTE] || enabled[MODE_BOTH])) {
        kparams_t kx = make_params(b, workload, MODE_EXCHANGE, nr_iters, chunk_words);
        double tx = median_of(b, &kx, 3);
        calibrate(b, workload, tx, &nr_iters, &chunk_words);
    }
    for (int i = 0; i < nfactors; i++) {
        int nr = nr_iters;
        size_t cw = chunk_words;
        scale_amount(b, workload, factors[i], &nr, &cw);
        bench_point(b, workload, enabled, nr, cw, factors[i]);
    }
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_overlap [--iters N] [--halo-bytes N] [--threads N] [--ranks-per-sm N]\n"
            "                     [--workload compute|memory|both] [--no-compute] [--no-exchange]\n"
            "                     [--nr-iters N] [--copy-bytes N] [--mem-bytes N] [--repeats N]\n"
            "                     [--sweep [F,F,...]] [--stagger-us X] [--quick] [--csv FILE]\n"
            "  --iters         iterations per launch (default 10000; --quick 200)\n"
            "  --halo-bytes    halo sent to each neighbour per iteration, multiple of 16 (default 1K)\n"
            "  --threads       threads per rank, a multiple of 32 (default 128)\n"
            "  --ranks-per-sm  ranks per SM at most (default 4; fewer if fewer are resident)\n"
            "  --lean          the kernel compiled with GCOMM_COPY_INFLIGHT=1 (fewer registers: more ranks per SM)\n"
            "  --bounded [N]   the kernel compiled for N = 8 (default), 12 or 16 ranks of <= 128 threads\n"
            "                  per SM (at most 64, 40 or 32 registers)\n"
            "  --exchange      gcomm (default) or floor: the exchange written by hand (halo stores\n"
            "                  into the neighbours' windows, one flag per neighbour; one process)\n"
            "  --workload      compute, memory or both (default both)\n"
            "  --no-compute    skip the compute phase: measure exchange only\n"
            "  --no-exchange   skip the exchange phase: measure compute only\n"
            "                  (neither: all three modes, and the ratio)\n"
            "  --nr-iters      Newton-Raphson iterations per element (default: calibrated)\n"
            "  --copy-bytes    bytes copied per rank per iteration (default: calibrated)\n"
            "  --mem-bytes     memory workload array per GPU, each of two (default 512M; --quick 256M)\n"
            "  --repeats       timed launches after a warm-up, median reported (5..64, default 7; --quick 5)\n"
            "  --sweep         one point per factor of the calibrated computation\n"
            "                  (without a list: 0.25,0.5,0.75,1,1.25,1.5,2,3,4)\n"
            "  --stagger-us    rank r starts X * r / ranks us after the clock (default 0: together)\n"
            "  --csv           write workload,mode,ranks,threads,halo_bytes,iters,factor,amount,\n"
            "                  median_us_per_iter,ratio,bound,phase_us,spread_us\n");
}

/* --sweep LIST: factors of the calibrated amount of computation, e.g. 0.5,1,2 */
static int parse_factors(const char *s, double *out, int *n)
{
    *n = 0;
    while (*s) {
        char *end;
        double f = strtod(s, &end);
        if (end == s || !(f > 0 && f <= 64) || *n == OVERLAP_MAX_POINTS) return -1;
        out[(*n)++] = f;
        if (*end == ',') end++;
        else if (*end != '\0') return -1;
        s = end;
    }
    return *n == 0 ? -1 : 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    bench_t b;
    memset(&b, 0, sizeof(b));
    int quick = 0, iters = 0, repeats = 0, rps = 4, nr_fixed = 0, no_compute = 0, no_exchange = 0;
    int bounded = 0, lean = 0, floor_x = 0;
    int wl_mask = 3; /* bit 0 compute, bit 1 memory */
    /* the amounts of computation, as factors of the calibrated one (--sweep) */
    double factors[OVERLAP_MAX_POINTS] = {1.0};
    int nfactors = 1;
    size_t copy_fixed = 0, mem_bytes = 0;
    const char *csv = NULL;
    /* 128 threads: the paper's "128 divisions per rank"; and the kernel needs about 120
     * registers per thread, so 4 ranks of 128 threads fit an SM where only 2 of 256 would */
    b.threads = 128;
    b.halo_bytes = 1024;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--quick")) quick = 1;
        else if (!strcmp(a, "--no-compute")) no_compute = 1;
        else if (!strcmp(a, "--no-exchange")) no_exchange = 1;
        else if (!strcmp(a, "--lean")) lean = 1;
        else if (!strcmp(a, "--bounded")) {
            /* an optional N: --bounded alone is --bounded 8 */
            bounded = 8;
            if (v && v[0] >= '0' && v[0] <= '9') {
                bad = parse_int(v, 1, 64, &bounded) || overlap_kernel_deep(bounded) == NULL;
                i++;
            }
        }
        else if (!strcmp(a, "--sweep")) {
            /* an optional list: --sweep alone is the default sweep */
            if (v && ((v[0] >= '0' && v[0] <= '9') || v[0] == '.')) {
                bad = parse_factors(v, factors, &nfactors);
                i++;
            } else {
                nfactors = (int)(sizeof(default_sweep) / sizeof(default_sweep[0]));
                memcpy(factors, default_sweep, sizeof(default_sweep));
            }
        }
        else if (v == NULL) bad = 1;
        else if (!strcmp(a, "--iters")) bad = parse_int(v, 1, 1 << 30, &iters), i++;
        else if (!strcmp(a, "--repeats")) bad = parse_int(v, 5, 64, &repeats), i++;
        else if (!strcmp(a, "--threads")) bad = parse_int(v, 32, 1024, &b.threads), i++;
        else if (!strcmp(a, "--ranks-per-sm")) bad = parse_int(v, 1, 64, &rps), i++;
        else if (!strcmp(a, "--nr-iters")) bad = parse_int(v, NR_MIN, NR_MAX, &nr_fixed), i++;
        else if (!strcmp(a, "--halo-bytes")) bad = bench_parse_size(v, &b.halo_bytes), i++;
        else if (!strcmp(a, "--copy-bytes")) bad = bench_parse_size(v, &copy_fixed), i++;
        else if (!strcmp(a, "--mem-bytes")) bad = bench_parse_size(v, &mem_bytes), i++;
        else if (!strcmp(a, "--csv")) csv = v, i++;
        else if (!strcmp(a, "--exchange")) {
            floor_x = !strcmp(v, "floor");
            bad = !floor_x && strcmp(v, "gcomm") != 0;
            i++;
        }
        else if (!strcmp(a, "--stagger-us")) {
            char *end;
            double us = strtod(v, &end);
            bad = *v == '\0' || *end != '\0' || !(us >= 0 && us <= 1e6);
            b.stagger_ns = (unsigned long long)(us * 1e3);
            i++;
        }
        else if (!strcmp(a, "--workload")) {
            wl_mask = !strcmp(v, "compute") ? 1 : !strcmp(v, "memory") ? 2 : !strcmp(v, "both") ? 3 : 0;
            bad = wl_mask == 0;
            i++;
        } else bad = 1;
        if (bad) {
            fprintf(stderr, "bench_overlap: bad option or value: %s%s%s\n", a, v ? " " : "", v ? v : "");
            usage();
            return 2;
        }
    }
    const char *why = NULL;
    if (b.threads % 32) why = "--threads must be a multiple of 32";
    else if (b.halo_bytes < 16 || b.halo_bytes % 16 || b.halo_bytes > (64u << 20))
        why = "--halo-bytes must be a multiple of 16, 16 .. 64M";
    else if (copy_fixed && copy_fixed % 16) why = "--copy-bytes must be a multiple of 16";
    else if (no_compute && no_exchange) why = "--no-compute and --no-exchange leave nothing to time";
    if (why) {
        fprintf(stderr, "bench_overlap: %s\n", why);
        return 2;
    }
    b.iters = iters ? iters : quick ? 200 : 10000;
    b.repeats = repeats ? repeats : quick ? 5 : 7;
    b.mem_bytes = mem_bytes ? mem_bytes : quick ? (256u << 20) : (512u << 20);
    int enabled[NMODES];
    enabled[MODE_BOTH] = !no_compute && !no_exchange;
    enabled[MODE_COMPUTE] = !no_compute;   /* compute only: needs the compute phase */
    enabled[MODE_EXCHANGE] = !no_exchange; /* exchange only: needs the exchange phase */
    /* the phases alone on their SMs: for the dependency bound of the ratio */
    enabled[MODE_COMPUTE_ALONE] = enabled[MODE_BOTH];
    enabled[MODE_EXCHANGE_ALONE] = enabled[MODE_BOTH];

    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        (void)cudaGetLastError();
        printf("bench_overlap: no GPU (cudaGetDeviceCount), skipped\n");
        return 77;
    }
    app_job_t job;
    GK(app_job_init(&argc, &argv, &job));
    b.job = &job;
    b.root = job.rank == 0;
    b.ngpus = job.nlocal;
    memcpy(b.dev, job.dev, sizeof(b.dev));
    if (app_job_any(&job, b.ngpus == 0)) {
        if (b.root) printf("bench_overlap: a process drives no GPU, skipped\n");
        GK(app_job_finalize(&job));
        return 77;
    }
    if (bounded && b.threads > OVERLAP_BOUNDED_THREADS) {
        fprintf(stderr, "bench_overlap: --bounded runs ranks of at most %d threads\n",
                OVERLAP_BOUNDED_THREADS);
        return 2;
    }
    if (floor_x && (job.size > 1 || lean)) {
        fprintf(stderr, "bench_overlap: --exchange floor needs one process driving every GPU "
                        "(and has no --lean build)\n");
        return 2;
    }
    /* the floor's ranks store into the peer GPUs' windows and flags directly: gcomm_init (in
     * app_job_init) has enabled peer access between this process's GPUs, or failed */
    b.floor = floor_x;
    const void *kernel = floor_x ? overlap_kernel_floor(bounded)
                         : lean  ? overlap_kernel_lean(bounded)
                                 : overlap_kernel_deep(bounded);
    if (kernel == NULL) {
        fprintf(stderr, "bench_overlap: the CUDA runtime does not know the kernel\n");
        return 1;
    }
    b.kernel = kernel;

    /* Ranks per GPU: at most rps per SM, and no more than are resident at once on the smallest
     * GPU (the ranks wait for each other, so all must run at once). Several per SM is the point:
     * an SM whose ranks all wait for halos at the same moment has nothing to overlap with. */
    b.blocks = 1 << 30;
    b.sms = 1 << 30;
    for (int g = 0; g < b.ngpus; g++) {
        int mb = 0, sms = 0;
        GK(gcomm_launch_max_blocks(kernel, b.threads, 0, g, &mb));
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, b.dev[g]));
        if (mb < b.blocks) b.blocks = mb;
        if (sms < b.sms) b.sms = sms;
    }
    if ((long)rps * b.sms < b.blocks) b.blocks = rps * b.sms;
    b.blocks = (int)app_job_min_long(&job, b.blocks); /* every GPU of the job runs as many */
    if (b.blocks < 1) {
        fprintf(stderr, "bench_overlap: no rank of %d threads fits a GPU\n", b.threads);
        return 1;
    }
    b.ranks = b.blocks * job.ngpus;
    b.region_words = b.mem_bytes / 16 / (size_t)b.blocks / (size_t)b.threads * (size_t)b.threads;
    if (b.region_words < (size_t)b.threads) b.region_words = (size_t)b.threads;

    /* Per GPU: sqrt input (random in [1, 1024), kept on the host for the check) and output, the
     * memory workload's two arrays, the windows and send buffers (gcomm memory: the peer GPU's
     * ranks write into the windows), the clock. */
    const size_t nc = (size_t)b.blocks * b.threads;
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (int g = 0; g < b.ngpus; g++) {
        CK(cudaSetDevice(b.dev[g]));
        b.hin[g] = (double *)malloc(nc * sizeof(double));
        if (b.hin[g] == NULL) {
            fprintf(stderr, "bench_overlap: out of host memory\n");
            return 1;
        }
        for (size_t e = 0; e < nc; e++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            b.hin[g][e] = 1.0 + 1023.0 * (double)(s >> 11) * (1.0 / 9007199254740992.0);
        }
        CK(cudaMalloc((void **)&b.cin[g], nc * sizeof(double)));
        CK(cudaMalloc((void **)&b.cout[g], nc * sizeof(double)));
        CK(cudaMemcpy(b.cin[g], b.hin[g], nc * sizeof(double), cudaMemcpyHostToDevice));
        CK(cudaMalloc((void **)&b.msrc[g], b.region_words * 16 * (size_t)b.blocks));
        CK(cudaMalloc((void **)&b.mdst[g], b.region_words * 16 * (size_t)b.blocks));
        GK(gcomm_malloc((size_t)b.blocks * 3 * b.halo_bytes, (void **)&b.halo[g]));
        if (b.floor) CK(cudaMalloc((void **)&b.flag[g], FLOOR_FLAG_WORDS(b.blocks) * 4));
        CK(cudaMalloc((void **)&b.clk[g], sizeof(kclock_t)));
        CK(cudaMalloc((void **)&b.trace[g],
                      (size_t)b.blocks * OVERLAP_TRACE_ITERS * 2 * sizeof(unsigned long long)));
    }
    if (csv && b.root) {
        b.csv = fopen(csv, "w");
        if (b.csv == NULL) {
            perror(csv);
            return 1;
        }
        fprintf(b.csv, "workload,mode,ranks,threads,halo_bytes,iters,factor,amount,"
                       "median_us_per_iter,ratio,bound,phase_us,spread_us\n");
    }

    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, b.dev[0]));
    if (b.root) {
        bench_print_environment(stdout, argc, argv);
        printf("bench_overlap: %d x %s (%d SMs)%s, %d ranks per GPU (%.2f per SM) of %d threads, "
               "%d ranks on a ring, halo %zu B each way, %d iterations, median of %d launches\n",
               job.ngpus, prop.name, b.sms, job.mpi ? ", one process per GPU" : "", b.blocks,
               (double)b.blocks / b.sms, b.threads, b.ranks, b.halo_bytes, b.iters, b.repeats);
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, b.kernel));
        printf("bench_overlap: kernel %s", b.floor ? "floor (exchange written by hand)"
                                           : lean  ? "lean (GCOMM_COPY_INFLIGHT=1)"
                                                   : "default");
        if (bounded)
            printf(", bounded (__launch_bounds__(%d, %d))", OVERLAP_BOUNDED_THREADS, bounded);
        printf(": %d registers, %zu bytes of local memory per thread\n", fa.numRegs,
               (size_t)fa.localSizeBytes);
        if (b.blocks < 2 * b.sms)
            printf("bench_overlap: note: fewer than 2 ranks per SM: little room for overlap\n");
        printf("%-8s %-14s %6s %7s %9s %6s %-14s %12s %7s %7s  %s\n", "workload", "mode",
               "ranks", "threads", "halo_B", "iters", "param", "us_per_iter", "ratio", "bound",
               "verified");
    }
    double t0 = bench_now();
    for (int w = 0; w < 2; w++)
        if (wl_mask & (1 << w))
            bench_workload(&b, w, enabled, nr_fixed, copy_fixed, factors, nfactors);
    b.failed = app_job_any(&job, b.failed);
    if (b.root)
        printf("bench_overlap: %.1f s, %s\n", bench_now() - t0,
               b.failed ? "VERIFICATION FAILED" : "all verified");

    if (b.csv && fclose(b.csv) != 0) {
        perror(csv);
        return 1;
    }
    for (int g = 0; g < b.ngpus; g++) {
        CK(cudaSetDevice(b.dev[g]));
        CK(cudaFree(b.cin[g]));
        CK(cudaFree(b.cout[g]));
        CK(cudaFree(b.msrc[g]));
        CK(cudaFree(b.mdst[g]));
        GK(gcomm_free(b.halo[g]));
        if (b.floor) CK(cudaFree(b.flag[g]));
        CK(cudaFree(b.clk[g]));
        CK(cudaFree(b.trace[g]));
        free(b.hin[g]);
    }
    GK(app_job_finalize(&job));
    return b.failed ? 1 : 0;
}
