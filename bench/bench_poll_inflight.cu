/* Does a waiting thread see a notification sooner with several polls in flight? (issue 4)
 *
 * gcomm's wait polls with one load in flight: it issues a load of the lane's head, waits for it,
 * looks, and issues the next. If a notification that lands between two polls waited on average
 * half a poll's round trip for the next one, K loads in flight, issued `gap` cycles apart, would
 * cut that wait K-fold. This ping-pong measures it on the pattern of an inline notification: one
 * thread per side stores a counter with a relaxed store and the other polls it with relaxed loads
 * (no fence on either side), with K = 1..4 loads of the flag in flight, started `gap` cycles
 * apart and each reissued as soon as it has been looked at. Same GPU (two blocks) and, with two
 * GPUs, between them (each side polls its own GPU's memory; scope sys). It also prints the
 * round trip of one poll (dependent loads, in cycles). One-way latency = run time / (2 iters);
 * the value each side waits for is the round number, so a run that ends has seen every one.
 * Usage: bench_poll_inflight [--iters N] [--repeats N] [--csv FILE] */
#include <stdlib.h>
#include <string.h>

#include "bench_cuda.h"
#include "bench_util.h"

static __device__ __forceinline__ unsigned ld_relaxed(const unsigned *p, int sys)
{
    unsigned v;
    if (sys) asm volatile("ld.relaxed.sys.u32 %0, [%1];" : "=r"(v) : "l"(p));
    else asm volatile("ld.relaxed.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}

static __device__ __forceinline__ void st_relaxed(unsigned *p, unsigned v, int sys)
{
    if (sys) asm volatile("st.relaxed.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
    else asm volatile("st.relaxed.gpu.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

static __device__ __forceinline__ void spin_cycles(long long c)
{
    const long long t = clock64();
    while (clock64() - t < c) {}
}

/* Returns once the flag at p reads i, polling with K loads in flight. */
template <int K>
static __device__ __forceinline__ void wait_for(const unsigned *p, unsigned i, int sys,
                                                long long gap)
{
    unsigned v[K];
#pragma unroll
    for (int j = 0; j < K; j++) {
        v[j] = ld_relaxed(p, sys);
        if (j + 1 < K) spin_cycles(gap);
    }
    for (;;) {
#pragma unroll
        for (int j = 0; j < K; j++) {
            if (v[j] == i) return;
            v[j] = ld_relaxed(p, sys);
        }
    }
}

/* Thread 0 of each side; on one GPU block 1 is the other side. */
template <int K>
__global__ void k_pingpong(unsigned *mine, unsigned *theirs, int iters, int first, int sys,
                           long long gap, unsigned long long *ns, long long *rt)
{
    if (threadIdx.x != 0) return;
    if (blockIdx.x == 1) {
        unsigned *t = mine;
        mine = theirs;
        theirs = t;
        first = !first;
    }
    /* one poll's round trip: 64 dependent loads of a word nobody writes */
    long long c0 = clock64();
    unsigned acc = 0;
    for (int j = 0; j < 64; j++) acc += ld_relaxed(mine + 64 + (acc & 1), sys);
    long long c1 = clock64();
    unsigned long long t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (unsigned i = 1; i <= (unsigned)iters; i++) {
        if (first) {
            st_relaxed(theirs, i, sys);
            wait_for<K>(mine, i, sys, gap);
        } else {
            wait_for<K>(mine, i, sys, gap);
            st_relaxed(theirs, i, sys);
        }
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    if (first && blockIdx.x == 0) {
        *ns = t1 - t0;
        *rt = (c1 - c0) / 64 + (acc == 0xffffffffu); /* acc keeps the loads */
    }
}

typedef void (*kernel_t)(unsigned *, unsigned *, int, int, int, long long, unsigned long long *,
                         long long *);

int main(int argc, char **argv)
{
    int iters = 20000, repeats = 5;
    const char *csv_path = NULL;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--iters") && a + 1 < argc) iters = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--repeats") && a + 1 < argc) repeats = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--csv") && a + 1 < argc) csv_path = argv[++a];
        else {
            fprintf(stderr, "usage: bench_poll_inflight [--iters N] [--repeats N] [--csv FILE]\n");
            return 2;
        }
    }
    if (iters < 1 || repeats < 1 || repeats > 64) {
        fprintf(stderr, "bench_poll_inflight: --iters >= 1, --repeats 1..64\n");
        return 2;
    }
    int ngpus = 0;
    if (cudaGetDeviceCount(&ngpus) != cudaSuccess || ngpus < 1) {
        printf("bench_poll_inflight: no GPU, skipped\n");
        return 77;
    }
    const int nsides = ngpus > 1 ? 2 : 1;
    unsigned *flag[2] = {NULL, NULL};
    unsigned long long *ns;
    long long *rt;
    CK(cudaHostAlloc((void **)&ns, sizeof *ns, cudaHostAllocMapped));
    CK(cudaHostAlloc((void **)&rt, sizeof *rt, cudaHostAllocMapped));
    for (int g = 0; g < nsides; g++) {
        CK(cudaSetDevice(g));
        CK(cudaMalloc((void **)&flag[g], 4096));
    }
    if (nsides == 2) {
        for (int g = 0; g < 2; g++) {
            CK(cudaSetDevice(g));
            cudaError_t e = cudaDeviceEnablePeerAccess(1 - g, 0);
            if (e == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
            else CK(e);
        }
    }
    FILE *csv = csv_path ? fopen(csv_path, "w") : NULL;
    if (csv_path && !csv) {
        perror(csv_path);
        return 1;
    }
    if (csv) fprintf(csv, "mode,polls,gap_cycles,poll_rt_cycles,median_us,min_us,max_us\n");
    const kernel_t kernels[4] = {k_pingpong<1>, k_pingpong<2>, k_pingpong<3>, k_pingpong<4>};
    const long long gaps[] = {0, 100, 200, 300, 500};
    printf("%-5s %5s %9s %13s %10s  (one-way, median of %d runs of %d round trips)\n", "mode",
           "polls", "gap_cyc", "poll_rt_cyc", "us", repeats, iters);
    for (int mode = 0; mode < nsides; mode++) {
        for (int k = 1; k <= 4; k++) {
            for (size_t gi = 0; gi < sizeof gaps / sizeof gaps[0]; gi++) {
                if (k == 1 && gi > 0) break; /* one load in flight has no gap */
                double us[64];
                long long rt0 = 0;
                for (int r = 0; r < repeats; r++) {
                    for (int g = 0; g < nsides; g++) {
                        CK(cudaSetDevice(g));
                        CK(cudaMemset(flag[g], 0, 4096));
                        CK(cudaDeviceSynchronize());
                    }
                    if (mode == 0) { /* same GPU: the two flags 2 KiB apart */
                        CK(cudaSetDevice(0));
                        kernels[k - 1]<<<2, 32>>>(flag[0], flag[0] + 512, iters, 1, 0, gaps[gi],
                                                  ns, rt);
                        CK(cudaGetLastError());
                        CK(cudaDeviceSynchronize());
                    } else { /* one block per GPU, both running at once */
                        CK(cudaSetDevice(0));
                        kernels[k - 1]<<<1, 32>>>(flag[0], flag[1], iters, 1, 1, gaps[gi], ns, rt);
                        CK(cudaGetLastError());
                        CK(cudaSetDevice(1));
                        kernels[k - 1]<<<1, 32>>>(flag[1], flag[0], iters, 0, 1, gaps[gi], ns, rt);
                        CK(cudaGetLastError());
                        CK(cudaDeviceSynchronize());
                        CK(cudaSetDevice(0));
                        CK(cudaDeviceSynchronize());
                    }
                    us[r] = (double)*ns / 1e3 / (2.0 * iters);
                    if (r == 0) rt0 = *rt;
                }
                double lo = us[0], hi = us[0];
                for (int r = 1; r < repeats; r++) {
                    lo = us[r] < lo ? us[r] : lo;
                    hi = us[r] > hi ? us[r] : hi;
                }
                const double med = bench_median(us, (size_t)repeats);
                printf("%-5s %5d %9lld %13lld %10.3f\n", mode ? "peer" : "same", k, gaps[gi], rt0,
                       med);
                if (csv)
                    fprintf(csv, "%s,%d,%lld,%lld,%.4f,%.4f,%.4f\n", mode ? "peer" : "same", k,
                            gaps[gi], rt0, med, lo, hi);
            }
        }
    }
    if (csv) fclose(csv);
    return 0;
}
