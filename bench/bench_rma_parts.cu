/* Where the latency of a notified put goes (issue 4): a ping-pong between two blocks of one GPU
 * (or of two GPUs with --peer) built up one ingredient of gcomm_put_notify + gcomm_wait at a time,
 * then the real calls, all in the same run. Each row adds to the one above:
 *
 *   flag       thread 0 stores a counter with st.release, the other polls it with ld.acquire
 *   relaxed    polls with ld.relaxed and acquires with one fence on a hit (as the lanes do)
 *   barriers   + the block barriers of the API (4 around a put, 2 around a wait)
 *   payload    + an 8-byte payload stored by the block before the release, checked by the receiver
 *   entry      + the notification as a 64-bit ring entry (seq | source | tag) instead of a counter
 *   reserve    + the slot reserved with an atomic add on a tail counter (its value is the seq)
 *   credit     + the credit word loaded (relaxed) at reservation
 *   origin     + the payload loaded from the sender's memory (a put reads its origin buffer)
 *   gcomm      gcomm_put_notify(8 B) + gcomm_wait_notifications through gcomm_launch
 *
 * Then designs the library does not use, each on its own (its "added" is against flag), to
 * measure what a redesign could reach:
 *
 *   acqfence   relaxed, but the hit is acquired with fence.acquire (PTX 8.6: an acquire-only
 *              fence) instead of fence.acq_rel
 *   ll         barriers, and the 8-byte payload travels inside the notification: two 8-byte
 *              words, each {4 payload bytes, 32-bit seq}, written with relaxed stores and no
 *              fence, polled with relaxed loads until both carry the seq (NCCL's LL protocol;
 *              each word is single-copy atomic, so the payload is whole once both match)
 *   llreserve  ll + the slot reserved with an atomic add on a tail counter (a shared lane)
 *
 * One-way latency = median over --repeats launches of (round trip / 2), after a warm-up launch.
 * Usage: bench_rma_parts [--peer] [--iters N] [--repeats N] [--threads N] [--csv FILE] */
#include <stdlib.h>
#include <string.h>

#include "bench_cuda.h"
#include "bench_util.h"

/* the kernel's results: time, put cycles, and bench_rma_prof's counters */
#define NS_WORDS 22

#ifdef BENCH_PROFILE
/* bench_rma_prof: thread 0 of block 0 accumulates the cycles between the numbered points of the
 * put path (GCOMMI_PROF_MARK in rank_impl.h: 0-6 gcomm_put_notify, 8-13 the wait, 12 the poll
 * until a hit, 13 taking it); 15 marks the kernel's own loop. */
#define PROF_N 20 /* at most NS_WORDS - 2 */
static __device__ __forceinline__ unsigned long long *prof_acc(void)
{
    __shared__ unsigned long long acc[PROF_N];
    return acc;
}
/* (host-and-device like the rank library that calls it; it counts on the device only) */
static __host__ __device__ __forceinline__ void prof_mark(int k)
{
#if defined(__CUDA_ARCH__)
    __shared__ long long last;
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        long long now = clock64();
        prof_acc()[k] += (unsigned long long)(now - last);
        last = now;
    }
#else
    (void)k;
#endif
}
#define GCOMMI_PROF_MARK(k) prof_mark(k)
#endif

#include "gcomm/device.cuh"
#include "gcomm/gcomm.h"


enum { L_FLAG, L_RELAXED, L_BARRIERS, L_PAYLOAD, L_ENTRY, L_RESERVE, L_CREDIT, L_ORIGIN,
       L_ACQFENCE, L_LL, L_LLRESERVE, L_NLEVELS };
#define L_NSTACKED L_ACQFENCE /* the levels before it add to each other; the others stand alone */
static const char *level_name[L_NLEVELS] = {"flag",   "relaxed",  "barriers", "payload",
                                            "entry",  "reserve",  "credit",   "origin",
                                            "acqfence", "ll", "llreserve"};

/* What one side of the ping-pong owns: the word it polls (its "ring"), its payload slot, and
 * (reserve/credit) a tail counter and a credit word in its own memory. */
typedef struct {
    uint64_t ring[16];
    uint64_t payload[16];
    uint64_t origin[16];
    unsigned tail[32];
    unsigned consumed[32];
} side_t;

static __device__ __forceinline__ uint64_t ld_acq64(const uint64_t *p, int sys)
{
    unsigned long long v;
    if (sys) asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    else asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

static __device__ __forceinline__ void fence_acquire(int sys)
{
    if (sys) asm volatile("fence.acquire.sys;" ::: "memory");
    else asm volatile("fence.acquire.gpu;" ::: "memory");
}

static __device__ __forceinline__ void st_relaxed64(uint64_t *p, uint64_t v, int sys)
{
    if (sys) asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
    else asm volatile("st.relaxed.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/* An LL message (levels ll, llreserve): 8 payload bytes in two words, each with the seq on top. */
static __device__ __forceinline__ void ll_send(side_t *me, side_t *peer, unsigned i, int reserve,
                                               int sys)
{
    const int t0 = threadIdx.x == 0;
    __syncthreads();
    unsigned seq = i;
    if (reserve && t0) seq = gcommi_fetch_add_gpu(&me->tail[0], 1) + 1;
    __syncthreads();
    if (t0) {
        const uint64_t pay = 0x1234500000000ull + i + me->origin[0];
        st_relaxed64(&peer->ring[0], (uint64_t)seq << 32 | (uint32_t)pay, sys);
        st_relaxed64(&peer->ring[1], (uint64_t)seq << 32 | (uint32_t)(pay >> 32), sys);
    }
    /* the last two of the four barriers a put has (level barriers and above), so that ll and
     * llreserve differ from those levels by the fences alone */
    __syncthreads();
    __syncthreads();
}

static __device__ __forceinline__ void ll_recv(side_t *me, unsigned i, int sys, unsigned *errors)
{
    const int t0 = threadIdx.x == 0;
    __syncthreads();
    if (t0) {
        uint64_t w0, w1;
        do {
            w0 = gcommi_ld_relaxed64(&me->ring[0], sys);
            w1 = gcommi_ld_relaxed64(&me->ring[1], sys);
        } while ((unsigned)(w0 >> 32) != i || (unsigned)(w1 >> 32) != i);
        if (((w1 << 32) | (uint32_t)w0) != 0x1234500000000ull + i) (*errors)++;
    }
    __syncthreads();
}

/* The sender's half of one message at `level`: i is the message number (from 1). */
static __device__ __forceinline__ void send(int level, side_t *me, side_t *peer, unsigned i,
                                            int sys, unsigned long long *check)
{
    const int t0 = threadIdx.x == 0;
    if (level == L_LL || level == L_LLRESERVE) {
        ll_send(me, peer, i, level == L_LLRESERVE, sys);
        return;
    }
    if (level == L_ACQFENCE) level = L_RELAXED; /* the sender is relaxed's */
    if (level >= L_BARRIERS) __syncthreads();
    unsigned long long seq = i;
    unsigned seen = 0;
    if (level >= L_RESERVE && t0) seq = gcommi_fetch_add_gpu(&me->tail[0], 1) + 1;
    if (level >= L_CREDIT && t0) seen = gcommi_ld_relaxed(&me->consumed[0], 0);
    if (level >= L_BARRIERS) __syncthreads();
    if (level >= L_PAYLOAD && t0)
        peer->payload[0] = 0x1234500000000ull + i + (level >= L_ORIGIN ? me->origin[0] : 0);
    if (level >= L_BARRIERS) __syncthreads();
    if (t0) {
        unsigned long long w = level >= L_ENTRY ? (seq << 48) | (1ull << 20) | 7ull : i;
        /* the credit check of a real publish: consumes the loaded word (never true here) */
        if (level >= L_CREDIT && (unsigned)(seq - seen) >= 0x80000000u) w = 0;
        gcommi_st_release64(&peer->ring[0], w, sys);
    }
    if (level >= L_BARRIERS) __syncthreads();
    (void)check;
}

static __device__ __forceinline__ void recv(int level, side_t *me, unsigned i, int sys,
                                            unsigned *errors)
{
    const int t0 = threadIdx.x == 0;
    if (level == L_LL || level == L_LLRESERVE) {
        ll_recv(me, i, sys, errors);
        return;
    }
    if (level == L_ACQFENCE) {
        if (t0) {
            while (gcommi_ld_relaxed64(&me->ring[0], sys) != i) {}
            fence_acquire(sys);
        }
        return;
    }
    if (level >= L_BARRIERS) __syncthreads();
    if (t0) {
        unsigned long long want = level >= L_ENTRY ? (unsigned long long)i : i;
        if (level == L_FLAG) {
            while (ld_acq64(&me->ring[0], sys) != want) {}
        } else {
            for (;;) {
                unsigned long long w = gcommi_ld_relaxed64(&me->ring[0], sys);
                if ((level >= L_ENTRY ? w >> 48 : w) == want) break;
            }
            gcommi_fence(sys);
        }
        if (level >= L_PAYLOAD && me->payload[0] != 0x1234500000000ull + i) (*errors)++;
    }
    if (level >= L_BARRIERS) __syncthreads();
}

/* Block 0 (side a) starts; block 1 (side b) answers. On two GPUs each kernel has one block and
 * `first` says which side it plays. */
__global__ void k_parts(int level, side_t *a, side_t *b, int iters, int first, int sys,
                        unsigned long long *ns, unsigned *errors)
{
    int me_first = gridDim.x == 2 ? blockIdx.x == 0 : first;
    side_t *me = me_first ? a : b, *peer = me_first ? b : a;
    unsigned err = 0;
    unsigned long long t0 = 0, t1 = 0, put_cycles = 0;
    for (int i = 0; i <= iters; i++) { /* message 1 is untimed: both sides are running */
        if (i == 1) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        unsigned m = (unsigned)i + 1;
        if (me_first) {
            long long c0 = clock64();
            send(level, me, peer, m, sys, NULL);
            if (i > 0) put_cycles += clock64() - c0;
            recv(level, me, m, sys, &err);
        } else {
            recv(level, me, m, sys, &err);
            send(level, me, peer, m, sys, NULL);
        }
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    if (threadIdx.x == 0) {
        if (err) atomicAdd(errors, err);
        if (me_first) {
            ns[0] = t1 - t0;
            ns[1] = put_cycles;
        }
    }
}

/* The real thing: ranks 0 and 1 (same GPU) or 0 and 2 (two GPUs, 2 blocks each). */
__global__ void k_gcomm(gcomm_param_t param, char *buf, int iters, int peer_rank,
                        unsigned long long *ns, unsigned *errors)
{
    __shared__ gcomm_context_t ctx;
    gcomm_init(param, &ctx);
    int rank, lrank;
    gcomm_comm_rank(&ctx, GCOMM_COMM_WORLD, &rank);
    gcomm_comm_rank(&ctx, GCOMM_COMM_DEVICE, &lrank);
    char *mine = buf + (size_t)lrank * 256;
    gcomm_win_t win;
    unsigned err = gcomm_win_create(&ctx, GCOMM_COMM_WORLD, mine, 8, &win) != GCOMM_SUCCESS;
#ifdef BENCH_PROFILE
    if (threadIdx.x < PROF_N) prof_acc()[threadIdx.x] = 0;
    __syncthreads();
#endif
    unsigned long long t0 = 0, t1 = 0, put_cycles = 0;
    if (rank == 0 || rank == peer_rank) {
        int other = rank == 0 ? peer_rank : 0;
        for (int i = -1; i < iters; i++) {
            if (i == 0) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
            if (rank == 0) {
#ifdef BENCH_PROFILE
                if (i == 0)
                    for (int k = 0; k < PROF_N; k++) prof_acc()[k] = 0; /* thread 0 only */
                prof_mark(15);
#endif
                long long c0 = clock64();
                err += gcomm_put_notify(&ctx, win, other, 0, 8, mine + 128, 0) != GCOMM_SUCCESS;
                if (i >= 0) put_cycles += clock64() - c0;
                err += gcomm_wait_notifications(&ctx, win, other, 0, 1) != GCOMM_SUCCESS;
            } else {
                err += gcomm_wait_notifications(&ctx, win, other, 0, 1) != GCOMM_SUCCESS;
                err += gcomm_put_notify(&ctx, win, other, 0, 8, mine + 128, 0) != GCOMM_SUCCESS;
            }
        }
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    }
    gcomm_barrier(&ctx, GCOMM_COMM_WORLD);
    gcomm_win_free(&ctx, &win);
    if (threadIdx.x == 0 && err) atomicAdd(errors, err);
    if (threadIdx.x == 0 && rank == 0) {
        ns[0] = t1 - t0;
        ns[1] = put_cycles;
#ifdef BENCH_PROFILE
        for (int k = 0; k < PROF_N; k++) ns[2 + k] = prof_acc()[k];
#endif
    }
}

int main(int argc, char **argv)
{
    int peer = 0, iters = 20000, repeats = 7, threads = 128;
    const char *csv_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--peer")) peer = 1;
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv_path = argv[++i];
        else {
            fprintf(stderr, "usage: bench_rma_parts [--peer] [--iters N] [--repeats N] "
                            "[--threads N] [--csv FILE]\n");
            return 2;
        }
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < (peer ? 2 : 1)) {
        printf("bench_rma_parts: needs %d GPU(s), skipped\n", peer ? 2 : 1);
        return 77;
    }
    if (peer) {
        CK(cudaSetDevice(0));
        CK(cudaDeviceEnablePeerAccess(1, 0));
        CK(cudaSetDevice(1));
        CK(cudaDeviceEnablePeerAccess(0, 0));
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    FILE *csv = csv_path ? fopen(csv_path, "w") : NULL;
    if (csv) fprintf(csv, "gpu,path,level,threads,oneway_us\n");
    const char *path = peer ? "peer" : "same";
    printf("bench_rma_parts: %s, %s GPU, %d threads per block, %d round trips, median of %d\n",
           prop.name, path, threads, iters, repeats);
    printf("%-10s %12s %12s %14s\n", "level", "one-way us", "added us", "put cycles");

    side_t *a, *b;
    unsigned long long *ns;
    unsigned *errors;
    CK(cudaSetDevice(0));
    CK(cudaMalloc(&a, sizeof(side_t)));
    CK(cudaHostAlloc((void **)&ns, NS_WORDS * sizeof(*ns), cudaHostAllocMapped | cudaHostAllocPortable));
    CK(cudaHostAlloc((void **)&errors, sizeof(*errors), cudaHostAllocMapped | cudaHostAllocPortable));
    if (peer) {
        CK(cudaSetDevice(1));
        CK(cudaMalloc(&b, sizeof(side_t)));
    } else {
        CK(cudaMalloc(&b, sizeof(side_t)));
    }
    *errors = 0;
    double *v = (double *)malloc(sizeof(double) * (size_t)repeats), prev = 0, flag = 0, stacked = 0;
    double *pc = (double *)malloc(sizeof(double) * (size_t)repeats);
    for (int level = 0; level < L_NLEVELS; level++) {
        for (int r = -1; r < repeats; r++) {
            CK(cudaSetDevice(0));
            CK(cudaMemset(a, 0, sizeof(side_t)));
            CK(cudaMemset(b, 0, sizeof(side_t)));
            CK(cudaDeviceSynchronize());
            if (peer) {
                CK(cudaSetDevice(1));
                k_parts<<<1, threads>>>(level, a, b, iters, 0, 1, ns, errors);
                CK(cudaGetLastError());
                CK(cudaSetDevice(0));
                k_parts<<<1, threads>>>(level, a, b, iters, 1, 1, ns, errors);
            } else {
                k_parts<<<2, threads>>>(level, a, b, iters, 0, 0, ns, errors);
            }
            CK(cudaGetLastError());
            for (int g = 0; g < (peer ? 2 : 1); g++) {
                CK(cudaSetDevice(g));
                CK(cudaDeviceSynchronize());
            }
            if (r >= 0) {
                v[r] = (double)ns[0] * 1e-3 / (2.0 * iters);
                pc[r] = (double)ns[1] / iters;
            }
        }
        double m = bench_median(v, (size_t)repeats);
        if (level == 0) flag = m;
        if (level == L_NSTACKED) {
            stacked = prev;
            printf("designs not in the library (added: against flag)\n");
        }
        printf("%-10s %12.3f %12.3f %14.0f\n", level_name[level], m,
               level == 0 ? 0.0 : level < L_NSTACKED ? m - prev : m - flag,
               bench_median(pc, (size_t)repeats));
        if (csv) fprintf(csv, "%s,%s,%s,%d,%.4f\n", prop.name, path, level_name[level], threads, m);
        prev = m;
    }
    prev = stacked; /* gcomm's row adds to the stacked levels */

    /* the real calls */
    if (gcomm_init() != GCOMM_SUCCESS) {
        fprintf(stderr, "gcomm_init: %s\n", gcomm_last_error_detail());
        return 1;
    }
    int ngpus = 0, dev[GCOMM_MAX_GPUS];
    gcomm_local_devices(&ngpus, dev);
    char *buf[GCOMM_MAX_GPUS];
    for (int g = 0; g < ngpus; g++) {
        CK(cudaSetDevice(dev[g]));
        if (gcomm_malloc(4096, (void **)&buf[g]) != GCOMM_SUCCESS) return 1;
        CK(cudaMemset(buf[g], 1, 4096));
    }
    int peer_rank = peer ? 2 : 1, blocks = 2;
    void *args[GCOMM_MAX_GPUS][6];
    gcomm_launch_t l;
    memset(&l, 0, sizeof(l));
    l.kernel = gcomm_kernel(k_gcomm);
    l.blocks_per_gpu = blocks;
    l.threads_per_block = threads;
    for (int g = 0; g < ngpus; g++) {
        args[g][0] = NULL;
        args[g][1] = &buf[g];
        args[g][2] = &iters;
        args[g][3] = &peer_rank;
        args[g][4] = &ns;
        args[g][5] = &errors;
        l.args[g] = args[g];
    }
    if (peer && ngpus < 2) {
        printf("gcomm: needs 2 GPUs in the job for --peer\n");
    } else {
        for (int r = -1; r < repeats; r++) {
            if (gcomm_launch(&l) != GCOMM_SUCCESS) {
                fprintf(stderr, "gcomm_launch: %s\n", gcomm_last_error_detail());
                return 1;
            }
            if (r >= 0) {
                v[r] = (double)ns[0] * 1e-3 / (2.0 * iters);
                pc[r] = (double)ns[1] / iters;
            }
        }
        double m = bench_median(v, (size_t)repeats);
        printf("%-10s %12.3f %12.3f %14.0f\n", "gcomm", m, m - prev, bench_median(pc, (size_t)repeats));
#ifdef BENCH_PROFILE
        printf("put path of the last launch, cycles per call between marks (rank_impl.h):");
        for (int k = 0; k < PROF_N; k++)
            if (ns[2 + k]) printf(" %d:%.0f", k, (double)ns[2 + k] / iters);
        printf("\n");
#endif
        if (csv) fprintf(csv, "%s,%s,%s,%d,%.4f\n", prop.name, path, "gcomm", threads, m);
    }
    printf("verified: %s (%u bad payloads or failed calls)\n", *errors ? "NO" : "yes", *errors);
    for (int g = 0; g < ngpus; g++) gcomm_free(buf[g]);
    gcomm_finalize();
    if (csv) fclose(csv);
    free(v);
    return *errors ? 1 : 0;
}
