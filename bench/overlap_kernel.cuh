/* The kernel of bench_overlap (the dCUDA overlap benchmark; bench_overlap.cu has the host side
 * and the description), in a header so that it can be compiled twice: as it is
 * (bench_overlap.cu) and with the device API's block copy keeping one 16-byte load per thread in
 * flight instead of eight (bench_overlap_lean.cu, GCOMM_COPY_INFLIGHT=1): 64 registers a thread
 * instead of 96, so 8 ranks of 128 threads fit on an SM without spilling (--lean). */
#ifndef BENCH_OVERLAP_KERNEL_CUH
#define BENCH_OVERLAP_KERNEL_CUH

#include <stdint.h>

#include "bench_cuda.h"
#include "gcomm/device.cuh"
#include "gcomm/gcomm.h" /* GCOMM_MAX_GPUS */

enum { WL_COMPUTE = 0, WL_MEMORY = 1 };
/* The modes of a launch: both phases, one of them, or one of them with a single rank per SM
 * ("alone": what a rank's phase takes when no other rank of its SM competes for it; the
 * dependency bound of the overlap is built from these two). */
enum {
    MODE_BOTH = 0,
    MODE_COMPUTE = 1,
    MODE_EXCHANGE = 2,
    MODE_COMPUTE_ALONE = 3,
    MODE_EXCHANGE_ALONE = 4,
    NMODES = 5
};

/* Newton-Raphson iterations per element: any count from 1 (the result is compared exactly with
 * the host's nr_sqrt, so a count too small to converge is still checked); 48 or more converge to
 * double precision from every start (about 12 halvings from 4 x 1024, then quadratic steps). */
#define NR_MIN 1
#define NR_CONVERGED 48
#define NR_MAX (1 << 20)

/* SM ids counted by kclock_t (H100 and H200: 132; %smid stays below %nsmid) */
#define OVERLAP_MAX_SM 256
/* Iterations traced per launch (kparams_t.trace_from): each rank's compute start and end. */
#define OVERLAP_TRACE_ITERS 8

/* The compute-bound workload of one element in iteration `it`: `nr` Newton-Raphson steps towards
 * sqrt(x). The start depends on the iteration so that nothing in the loop is invariant (the
 * compiler cannot compute it once). Written once for the kernel and for the host's check: the
 * operations are IEEE (a correctly rounded division, no contraction possible in 0.5 * (a + b)),
 * so both produce the same bits. */
static __host__ __device__ inline double nr_sqrt(double x, int it, int nr)
{
    double y = x * (double)(1 + (it & 3));
    for (int k = 0; k < nr; k++) y = 0.5 * (y + x / y);
    return y;
}

/* Everything the kernel needs besides the per-GPU pointers (passed by value, same on every GPU). */
typedef struct {
    int workload;       /* WL_COMPUTE or WL_MEMORY */
    int do_compute;     /* 0: skip phase 1 (--no-compute) */
    int do_exchange;    /* 0: skip phase 2 (--no-exchange) */
    int iters;
    int nr_iters;       /* Newton-Raphson iterations per element per iteration */
    int nchunks;        /* chunks in a rank's memory region */
    size_t region_words; /* 16-byte words of the memory workload per rank */
    size_t chunk_words;  /* 16-byte words copied per rank per iteration */
    size_t halo_bytes;
    unsigned long long stagger_ns; /* rank r starts r / size of this later (--stagger-us) */
    int trace_from; /* first traced iteration (-1: none) */
    /* --exchange floor only (one process driving every GPU, peer access on): every GPU's halo
     * buffer and flag words, as this GPU addresses them */
    int floor_ngpus;
    char *floor_halo[GCOMM_MAX_GPUS];
    uint32_t *floor_flag[GCOMM_MAX_GPUS];
} kparams_t;

/* The floor's flag words per GPU: a line of barrier counters (used on the first GPU), then a
 * line per rank ([0] from the left neighbour, [1] from the right one): no two ranks poll one
 * line. */
#define FLOOR_LINE_WORDS 32
#define FLOOR_FLAG_WORDS(ranks_per_gpu) ((size_t)(1 + (ranks_per_gpu)) * FLOOR_LINE_WORDS)

/* Per GPU, written by the GPU's first rank (times) and by every rank (errors). */
typedef struct {
    unsigned long long t0, t1; /* globaltimer after the opening and the closing barrier */
    unsigned errors;           /* gcomm calls that failed, over all ranks of the GPU */
    unsigned sm_ranks[OVERLAP_MAX_SM]; /* ranks that ran on each SM (the "alone" modes need 1) */
} kclock_t;

/* The halo word w that `rank` sends in iteration `it`: a hash, so that a halo from the wrong
 * sender, iteration or offset cannot match; never zero, so that a halo that never arrived (the
 * windows are zeroed before each launch) cannot either. */
static __host__ __device__ inline uint32_t halo_word(int rank, int it, uint32_t w)
{
    uint32_t h = (uint32_t)rank * 0x9E3779B1u ^ (uint32_t)it * 0x85EBCA77u ^ w * 0xC2B2AE3Du;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    h *= 0x297A2D39u;
    h ^= h >> 15;
    return h ? h : 1u;
}

static __device__ __forceinline__ unsigned long long globaltimer_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Counts the calling rank on its SM (the "alone" modes need one rank per SM). */
static __device__ __forceinline__ void overlap_record_sm(kclock_t *clk)
{
    if (threadIdx.x == 0) {
        unsigned sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        if (sm < OVERLAP_MAX_SM) atomicAdd(&clk->sm_ranks[sm], 1u);
    }
}

/* --stagger-us: ranks start spread over one period in ring order, so that the ranks of one SM
 * (far apart on the ring) are in different phases of the iteration; the phase gradient along
 * the ring is small enough for every neighbour to keep up, and the schedule persists */
static __device__ __forceinline__ void overlap_stagger(const kparams_t *kp, int rank, int size)
{
    if (kp->stagger_ns) {
        unsigned long long d = kp->stagger_ns * (unsigned long long)rank / (unsigned long long)size;
        unsigned long long s0 = globaltimer_ns();
        while (globaltimer_ns() - s0 < d) {
        }
        __syncthreads();
    }
}

/* Phase 1 of iteration `it`, traced on the traced iterations: when the rank's compute phase
 * starts and when its last warp has finished it (the barrier is on traced iterations only). */
static __device__ __forceinline__ void overlap_compute(const kparams_t *kp, int it, double x,
                                                       double *out, const uint4 *src, uint4 *dst,
                                                       int lrank, unsigned long long *trace)
{
    const int tk = it - kp->trace_from;
    const int traced = kp->trace_from >= 0 && tk >= 0 && tk < OVERLAP_TRACE_ITERS;
    unsigned long long *tr = trace + ((size_t)lrank * OVERLAP_TRACE_ITERS + (traced ? tk : 0)) * 2;
    if (traced && threadIdx.x == 0) tr[0] = globaltimer_ns();
    if (kp->do_compute) {
        if (kp->workload == WL_COMPUTE) {
            *out = nr_sqrt(x, it, kp->nr_iters);
        } else {
            /* four 16-byte loads in flight per thread: the ranks of one SM alone must keep
             * enough bytes in flight to cover the DRAM latency */
            const size_t cw = kp->chunk_words, c0 = (size_t)(it % kp->nchunks) * cw;
            bench_copy_words(src + c0, dst + c0, threadIdx.x, cw, blockDim.x);
        }
    }
    if (traced) {
        __syncthreads();
        if (threadIdx.x == 0) tr[1] = globaltimer_ns();
    }
}

/* The halo this rank sends in iteration `it`, into its send buffer (h / 4 words). */
static __device__ __forceinline__ void overlap_pack(uint32_t *send, size_t h, int rank, int it)
{
    for (uint32_t w = threadIdx.x; w < (uint32_t)(h / 4); w += blockDim.x)
        send[w] = halo_word(rank, it, w);
}

/* The benchmark kernel. Per GPU: cin/cout hold ranks x blockDim doubles (compute workload),
 * msrc/mdst ranks x region_words 16-byte words (memory workload), halo ranks x 2 halo_bytes of
 * windows ([0, h) from the left neighbour, [h, 2h) from the right) followed by ranks x halo_bytes
 * of send buffers; trace ranks x OVERLAP_TRACE_ITERS x 2 timestamps (compute start, end). */
static __device__ __forceinline__ void overlap_body(gcomm_param_t param, const double *cin,
                                                    double *cout, const uint4 *msrc, uint4 *mdst,
                                                    char *halo, kparams_t kp, kclock_t *clk,
                                                    unsigned long long *trace)
{
    __shared__ gcomm_context_t ctx;
    unsigned err = gcomm_init(param, &ctx) != GCOMM_SUCCESS;
    int rank = 0, size = 1, lrank = 0, lsize = 1;
    err += gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank) != GCOMM_SUCCESS;
    err += gcomm_comm_size(&ctx, GCOMM_COMM_WORLD, &size) != GCOMM_SUCCESS;
    err += gcomm_comm_rank(&ctx, GCOMM_COMM_DEVICE, &lrank) != GCOMM_SUCCESS;
    err += gcomm_comm_size(&ctx, GCOMM_COMM_DEVICE, &lsize) != GCOMM_SUCCESS;
    overlap_record_sm(clk);

    const size_t h = kp.halo_bytes;
    char *recv = halo + (size_t)lrank * 2 * h;
    uint32_t *send = (uint32_t *)(halo + (size_t)lsize * 2 * h + (size_t)lrank * h);
    gcomm_win_t win = GCOMM_WIN_NULL;
    err += gcomm_win_create(&ctx, GCOMM_COMM_WORLD, recv, 2 * h, &win) != GCOMM_SUCCESS;
    const int left = (rank + size - 1) % size, right = (rank + 1) % size;

    const size_t e = (size_t)lrank * blockDim.x + threadIdx.x; /* this thread's sqrt element */
    const double x = cin[e];
    const uint4 *src = msrc + (size_t)lrank * kp.region_words;
    uint4 *dst = mdst + (size_t)lrank * kp.region_words;

    /* every rank is running and has its window before the clock starts */
    err += gcomm_barrier(&ctx, GCOMM_COMM_WORLD) != GCOMM_SUCCESS;
    if (lrank == 0 && threadIdx.x == 0) clk->t0 = globaltimer_ns();
    overlap_stagger(&kp, rank, size);

    for (int it = 0; it < kp.iters; it++) {
        overlap_compute(&kp, it, x, &cout[e], src, dst, lrank, trace);
        if (kp.do_exchange) {
            /* pack: the halo of this iteration (the put of the previous one has completed at the
             * origin, so the buffer is free); put_notify begins with a block barrier, so these
             * stores are in the buffer before it is copied */
            overlap_pack(send, h, rank, it);
            /* The tag is the iteration's parity: a neighbour can be at most one iteration ahead
             * (it needs this rank's halo of the iteration before), so two notifications of this
             * parity from any source are exactly this iteration's left and right halos. */
            const int tag = it & 1;
            int rc = gcomm_put_notify(&ctx, win, left, h, h, send, tag);   /* its right slot */
            if (rc == GCOMM_SUCCESS) rc = gcomm_put_notify(&ctx, win, right, 0, h, send, tag);
            if (rc == GCOMM_SUCCESS)
                rc = gcomm_wait_notifications(&ctx, win, GCOMM_ANY_SOURCE, tag, 2);
            /* after an error anywhere every wait fails and gcomm_launch reports the cause */
            if (rc != GCOMM_SUCCESS) {
                err++;
                break;
            }
        }
    }

    /* the clock stops when the last rank has finished its last iteration */
    err += gcomm_barrier(&ctx, GCOMM_COMM_WORLD) != GCOMM_SUCCESS;
    if (lrank == 0 && threadIdx.x == 0) clk->t1 = globaltimer_ns();
    err += gcomm_win_free(&ctx, &win) != GCOMM_SUCCESS;
    err += gcomm_finish(&ctx) != GCOMM_SUCCESS;
    /* every thread of the block sees the same results (collective calls): count them once */
    if (threadIdx.x == 0 && err) atomicAdd(&clk->errors, err);
}

/* ---- the floor: the same benchmark with a hand-written exchange (--exchange floor) ----
 * The exchange with its runtime taken away: the ranks pack their halo as gcomm's exchange does,
 * copy it straight into the neighbours' windows (peer memory over NVLink where the ring crosses
 * GPUs) and raise one flag word per neighbour with a release store; a rank waits by polling its
 * own two flags. No queue, no matching, no credits, no argument checks: the same data movement
 * and ordering guarantees as a notified put, and nothing else. Only for one process driving
 * every GPU (the host enables peer access and passes every GPU's pointers in kparams_t). */

/* Polls `*p` until it reaches `want`; 0, or 1 after 5 s (the neighbour never came: the launch
 * reports an error instead of hanging). Relaxed loads, and one acquire fence once the value is
 * there: an acquire load per poll invalidates the SM's L1 each time (CCTL.IVALL), under the
 * feet of the SM's other ranks. */
static __device__ __forceinline__ int floor_poll(const uint32_t *p, uint32_t want, int sys)
{
    unsigned long long t0 = 0;
    for (unsigned n = 0; gcommi_ld_relaxed(p, sys) < want; n++)
        if ((n & 1023u) == 1023u) {
            unsigned long long t = globaltimer_ns();
            if (t0 == 0) t0 = t;
            else if (t - t0 > 5000000000ull) return 1;
        }
    gcommi_fence_acquire(sys);
    return 0;
}

/* Every rank of every GPU: thread 0 counts itself in `c` (on the first GPU) and waits for all;
 * returns the block-wide number of failures (0 or 1). */
static __device__ __forceinline__ int floor_barrier(uint32_t *c, uint32_t total)
{
    __shared__ int failed;
    __syncthreads();
    if (threadIdx.x == 0) {
        gcommi_fetch_add_sys(c, 1u);
        failed = floor_poll(c, total, 1);
    }
    __syncthreads();
    return failed;
}

/* Where global rank q lives: its window (2 h bytes; win may be NULL) and its two flag words. */
static __device__ __forceinline__ void floor_peer(const kparams_t *kp, int q, int blocks,
                                                  size_t h, uint4 **win, uint32_t **flag)
{
    const int g = q / blocks, l = q % blocks;
    if (win) *win = (uint4 *)(kp->floor_halo[g] + (size_t)l * 2 * h);
    *flag = kp->floor_flag[g] + (size_t)(1 + l) * FLOOR_LINE_WORDS;
}

/* The kernel body with the floor's exchange; the same parameters as overlap_body's (the gcomm
 * parameter unused: gcomm_launch only places the ranks), so that OVERLAP_KERNELS makes its
 * kernels too. */
static __device__ __forceinline__ void overlap_floor_body(gcomm_param_t param, const double *cin,
                                                          double *cout, const uint4 *msrc,
                                                          uint4 *mdst, char *halo, kparams_t kp,
                                                          kclock_t *clk, unsigned long long *trace)
{
    __shared__ int failed;
    (void)param;
    int gpu = 0; /* this GPU: the one whose halo buffer this launch was given */
    for (int g = 0; g < kp.floor_ngpus; g++)
        if (kp.floor_halo[g] == halo) gpu = g;
    const int lrank = blockIdx.x, blocks = gridDim.x;
    const int size = blocks * kp.floor_ngpus, rank = gpu * blocks + lrank;
    const int left = (rank + size - 1) % size, right = (rank + 1) % size;
    overlap_record_sm(clk);

    const size_t h = kp.halo_bytes, hw = h / 16;
    uint32_t *send = (uint32_t *)(halo + (size_t)blocks * 2 * h + (size_t)lrank * h);
    uint4 *lwin, *rwin;
    uint32_t *lflag, *rflag, *flag;
    floor_peer(&kp, left, blocks, h, &lwin, &lflag);
    floor_peer(&kp, right, blocks, h, &rwin, &rflag);
    floor_peer(&kp, rank, blocks, h, NULL, &flag);
    /* system scope only where the neighbour is on another GPU */
    const int lsys = left / blocks != gpu, rsys = right / blocks != gpu;

    const size_t e = (size_t)lrank * blockDim.x + threadIdx.x;
    const double x = cin[e];
    const uint4 *src = msrc + (size_t)lrank * kp.region_words;
    uint4 *dst = mdst + (size_t)lrank * kp.region_words;
    uint32_t *bar = kp.floor_flag[0];
    unsigned err = floor_barrier(&bar[0], (uint32_t)size);
    if (lrank == 0 && threadIdx.x == 0) clk->t0 = globaltimer_ns();
    overlap_stagger(&kp, rank, size);

    for (int it = 0; it < kp.iters && !err; it++) {
        overlap_compute(&kp, it, x, &cout[e], src, dst, lrank, trace);
        if (kp.do_exchange) {
            overlap_pack(send, h, rank, it);
            __syncthreads();
            /* into the left neighbour's right slot and the right neighbour's left slot */
            for (size_t i = threadIdx.x; i < hw; i += blockDim.x) {
                const uint4 v = ((const uint4 *)send)[i];
                lwin[hw + i] = v;
                rwin[i] = v;
            }
            __syncthreads();
            if (threadIdx.x == 0) {
                /* the barrier ordered every thread's stores before thread 0's releases */
                gcommi_st_release(&lflag[1], (uint32_t)it + 1, lsys);
                gcommi_st_release(&rflag[0], (uint32_t)it + 1, rsys);
                failed = floor_poll(&flag[0], (uint32_t)it + 1, lsys) ||
                         floor_poll(&flag[1], (uint32_t)it + 1, rsys);
            }
            __syncthreads();
            err += failed;
        }
    }
    err += floor_barrier(&bar[1], (uint32_t)size);
    if (lrank == 0 && threadIdx.x == 0) clk->t1 = globaltimer_ns();
    if (threadIdx.x == 0 && err) atomicAdd(&clk->errors, err);
}

/* The kernels of one compilation: unbounded, and compiled with __launch_bounds__(128, N) for N
 * ranks of up to 128 threads per SM (at most 64 / 40 / 32 registers a thread for N = 8 / 12 /
 * 16, the rest spilled): over-decomposition is what overlaps, and registers bound it. */
#define OVERLAP_BOUNDED_THREADS 128
/* M(V, N) for every bound N, kernels of compilation V */
#define OVERLAP_BOUNDS(M, V) M(V, 8) M(V, 12) M(V, 16)

#define OVERLAP_KERNEL_BOUNDED(V, N)                                                             \
    __global__ void __launch_bounds__(OVERLAP_BOUNDED_THREADS, N)                                \
        k_overlap_##V##_bounded##N(gcomm_param_t param, const double *cin, double *cout,         \
                                   const uint4 *msrc, uint4 *mdst, char *halo, kparams_t kp,     \
                                   kclock_t *clk, unsigned long long *trace)                     \
    {                                                                                            \
        OVERLAP_BODY_##V(param, cin, cout, msrc, mdst, halo, kp, clk, trace);                    \
    }
#define OVERLAP_PICK_BOUNDED(V, N)                                                               \
    if (bound == N) return gcomm_kernel(k_overlap_##V##_bounded##N);

/* Defines k_overlap_V, its bounded variants and overlap_kernel_V(bound): the kernel compiled for
 * `bound` ranks per SM (0: unbounded; NULL: no such bound), with the body OVERLAP_BODY_V. */
#define OVERLAP_BODY_deep overlap_body
#define OVERLAP_BODY_lean overlap_body
#define OVERLAP_BODY_floor overlap_floor_body
#define OVERLAP_KERNELS(V)                                                                       \
    __global__ void k_overlap_##V(gcomm_param_t param, const double *cin, double *cout,          \
                                  const uint4 *msrc, uint4 *mdst, char *halo, kparams_t kp,      \
                                  kclock_t *clk, unsigned long long *trace)                      \
    {                                                                                            \
        OVERLAP_BODY_##V(param, cin, cout, msrc, mdst, halo, kp, clk, trace);                    \
    }                                                                                            \
    OVERLAP_BOUNDS(OVERLAP_KERNEL_BOUNDED, V)                                                    \
    const void *overlap_kernel_##V(int bound)                                                    \
    {                                                                                            \
        if (bound == 0) return gcomm_kernel(k_overlap_##V);                                      \
        OVERLAP_BOUNDS(OVERLAP_PICK_BOUNDED, V) return NULL;                                     \
    }

const void *overlap_kernel_deep(int bound);  /* bench_overlap.cu */
const void *overlap_kernel_floor(int bound); /* bench_overlap.cu */
const void *overlap_kernel_lean(int bound); /* bench_overlap_lean.cu */

#endif /* BENCH_OVERLAP_KERNEL_CUH */
