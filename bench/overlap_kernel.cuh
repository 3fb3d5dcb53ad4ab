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
} kparams_t;

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
    if (threadIdx.x == 0) {
        unsigned sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        if (sm < OVERLAP_MAX_SM) atomicAdd(&clk->sm_ranks[sm], 1u);
    }

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
    const size_t nt = blockDim.x, cw = kp.chunk_words;

    /* every rank is running and has its window before the clock starts */
    err += gcomm_barrier(&ctx, GCOMM_COMM_WORLD) != GCOMM_SUCCESS;
    if (lrank == 0 && threadIdx.x == 0) clk->t0 = globaltimer_ns();
    /* --stagger-us: ranks start spread over one period in ring order, so that the ranks of one
     * SM (far apart on the ring) are in different phases of the iteration; the phase gradient
     * along the ring is small enough for every neighbour to keep up, and the schedule persists */
    if (kp.stagger_ns) {
        unsigned long long d = kp.stagger_ns * (unsigned long long)rank / (unsigned long long)size;
        unsigned long long s0 = globaltimer_ns();
        while (globaltimer_ns() - s0 < d) {
        }
        __syncthreads();
    }

    for (int it = 0; it < kp.iters; it++) {
        /* traced: when the rank's compute phase starts and when its last warp has finished it
         * (the barrier is on traced iterations only) */
        const int tk = it - kp.trace_from;
        const int traced = kp.trace_from >= 0 && tk >= 0 && tk < OVERLAP_TRACE_ITERS;
        unsigned long long *tr =
            trace + ((size_t)lrank * OVERLAP_TRACE_ITERS + (traced ? tk : 0)) * 2;
        if (traced && threadIdx.x == 0) tr[0] = globaltimer_ns();
        if (kp.do_compute) {
            if (kp.workload == WL_COMPUTE) {
                cout[e] = nr_sqrt(x, it, kp.nr_iters);
            } else {
                /* four 16-byte loads in flight per thread: the ranks of one SM alone must keep
                 * enough bytes in flight to cover the DRAM latency */
                const size_t c0 = (size_t)(it % kp.nchunks) * cw;
                bench_copy_words(src + c0, dst + c0, threadIdx.x, cw, nt);
            }
        }
        if (traced) {
            __syncthreads();
            if (threadIdx.x == 0) tr[1] = globaltimer_ns();
        }
        if (kp.do_exchange) {
            /* pack: the halo of this iteration (the put of the previous one has completed at the
             * origin, so the buffer is free); put_notify begins with a block barrier, so these
             * stores are in the buffer before it is copied */
            for (uint32_t w = threadIdx.x; w < (uint32_t)(h / 4); w += (uint32_t)nt)
                send[w] = halo_word(rank, it, w);
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
        overlap_body(param, cin, cout, msrc, mdst, halo, kp, clk, trace);                        \
    }
#define OVERLAP_PICK_BOUNDED(V, N)                                                               \
    if (bound == N) return gcomm_kernel(k_overlap_##V##_bounded##N);

/* Defines k_overlap_V, its bounded variants and overlap_kernel_V(bound): the kernel compiled for
 * `bound` ranks per SM (0: unbounded; NULL: no such bound). */
#define OVERLAP_KERNELS(V)                                                                       \
    __global__ void k_overlap_##V(gcomm_param_t param, const double *cin, double *cout,          \
                                  const uint4 *msrc, uint4 *mdst, char *halo, kparams_t kp,      \
                                  kclock_t *clk, unsigned long long *trace)                      \
    {                                                                                            \
        overlap_body(param, cin, cout, msrc, mdst, halo, kp, clk, trace);                        \
    }                                                                                            \
    OVERLAP_BOUNDS(OVERLAP_KERNEL_BOUNDED, V)                                                    \
    const void *overlap_kernel_##V(int bound)                                                    \
    {                                                                                            \
        if (bound == 0) return gcomm_kernel(k_overlap_##V);                                      \
        OVERLAP_BOUNDS(OVERLAP_PICK_BOUNDED, V) return NULL;                                     \
    }

const void *overlap_kernel_deep(int bound); /* bench_overlap.cu */
const void *overlap_kernel_lean(int bound); /* bench_overlap_lean.cu */

#endif /* BENCH_OVERLAP_KERNEL_CUH */
