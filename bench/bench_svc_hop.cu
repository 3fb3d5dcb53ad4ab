/* The service block's hop (include/gcomm/detail/svc.h, issue 5), alone: what a delivery from the
 * proxy thread into a rank of the GPU costs, by the ways the design could take, in one process
 * (no MPI, no second process, no MPS) so that only the GPU <-> host path is in the figure.
 *
 * One "rank" block posts a command into a proxy ring (proxy_queue.h, as ranks do) and waits for
 * the answer; a host thread, playing the proxy, takes the command and answers by one of:
 *
 *   flag      an 8-byte store into mapped host memory that the rank polls (ld.acquire.sys): what
 *             the proxy did before the service block, a wait polling across PCIe;
 *   twostep   a 64-byte record whose sequence word is stored last; a service block polls the
 *             sequence word (ld.acquire.sys) and then reads the record (four 16-byte .cv loads),
 *             then stores the notification into the rank's lane word in GPU memory (the first
 *             service block, commit 67c9964);
 *   llthread  a 128-byte record every 8-byte word of which carries the sequence number (NCCL's LL
 *             protocol), read by one thread with eight 16-byte .cv loads and taken when every
 *             word carries the flag;
 *   ll        the library's record and loop (gcommi_svc_rec_write / gcommi_svc_loop): the same
 *             record read by the lanes of a warp, one 16-byte load each (one request);
 *   ll8       the same with an 8-byte payload the block stores before the notification (the rank
 *             checks it: random, new every round);
 * and, for the leg from the rank to the proxy (answered by `flag`):
 *   nofence   the command's fields and its sequence word stored without the release's fence (not
 *             a correct publication: what the system-scope fence costs);
 *   cmdll     a 128-byte command (60 bytes of it as a real command's) every 8-byte word of which
 *             carries the sequence number, stored without a fence, the host taking it once every
 *             word carries it;
 *   cmdllf    the same after a system-scope fence (acq_rel): a correct release of everything the
 *             rank wrote before, where the fence does not wait for the command's own stores.
 *
 * Throughput (records/s, the best of --launches): the host posts 200,000 records back to back
 * into the 1024-deep ring as its credit allows, for each service loop.
 *
 * Round trip = rank's post -> host -> answer seen by the rank, timed by the rank with %globaltimer
 * over batches of 50 rounds; each variant runs --launches launches of --rounds rounds (default
 * 5 x 4000) in interleaved order after a warm-up launch; the figure is the median batch (10th and
 * 90th percentile beside it). The difference to `flag` is what the service hop costs beyond a
 * direct store (the rank's poll of GPU memory replaces its poll across PCIe).
 *
 * Usage: bench_svc_hop [--rounds N] [--launches N] [--svc-lanes N] [--csv FILE]; --svc-lanes runs
 * the library's loop with fewer than 32 threads (a service block of that size). Exit 77 without a GPU, 1 when a
 * check fails (an answer or payload not as posted, a kernel that did not end). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_cuda.h"
#include "bench_util.h"
#include "gcomm/detail/atomic.h"
#include "gcomm/detail/proxy_queue.h"
#include "gcomm/detail/svc.h"

#define DEPTH 64  /* command ring */
#define BATCH 50  /* rounds per timed batch */

enum { M_FLAG, M_TWOSTEP, M_LLTHREAD, M_LL, M_LL8, M_NOFENCE, M_CMDLL, M_CMDLLF, M_COUNT };
static const char *mode_name[M_COUNT] = {"flag",    "twostep", "llthread", "ll",
                                         "ll8",     "nofence", "cmdll",    "cmdllf"};

/* the first service block's record (seq stored last), for the comparison */
typedef struct {
    uint64_t dst, at, entry;
    uint32_t bytes, seq;
    uint64_t data[4];
} twostep_rec_t;

typedef struct {
    gcommi_pq_t q;          /* device view of the command ring */
    uint64_t *flag;         /* M_FLAG: mapped host word */
    void *ring;             /* service ring (mapped host memory), records of the mode's kind */
    gcommi_svc_ctl_t *ctl;  /* mapped host */
    uint64_t *lane;         /* GPU memory: the rank's notification word */
    uint64_t *dst;          /* GPU memory: the payload's place */
    uint32_t rounds;
    int mode;
    int svc_lanes; /* ll, ll8: threads of the service warp (a block of fewer than 32 threads) */
    unsigned long long *batch_ns; /* rounds / BATCH entries */
    unsigned *errs;
} hop_args_t;

__host__ __device__ static inline uint64_t payload_of(uint32_t launch, uint32_t id)
{
    uint64_t x = ((uint64_t)launch << 32) ^ id ^ 0x5bd1e995ull;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    return x ^ (x >> 29) ^ 1;
}

__device__ static uint64_t now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ static void twostep_loop(twostep_rec_t *ring, gcommi_svc_ctl_t *ctl)
{
    uint32_t pos = 0, idle = 0;
    for (;;) {
        twostep_rec_t *r = &ring[pos & (GCOMMI_SVC_DEPTH - 1)];
        if (gcommi_ld_acquire_sys(&r->seq) == pos + 1) {
            uint64_t w[8];
#pragma unroll
            for (int k = 0; k < 4; k++)
                asm volatile("ld.global.cv.v2.u64 {%0, %1}, [%2];"
                             : "=l"(w[2 * k]), "=l"(w[2 * k + 1])
                             : "l"((const uint64_t *)r + 2 * k) : "memory");
            if ((uint32_t)w[3]) *(uint64_t *)(uintptr_t)w[0] = w[4];
            if (w[1]) gcommi_st_release64((uint64_t *)(uintptr_t)w[1], w[2], 0);
            pos++;
            idle = 0;
            gcommi_st_release_sys(&ctl->done, pos);
            continue;
        }
        if ((++idle & 63u) == 0 && gcommi_ld_relaxed_sys(&ctl->stop)) return;
    }
}

/* The LL record read by one thread: eight loads, then the decision. */
__device__ static void llthread_loop(gcommi_svc_rec_t *ring, gcommi_svc_ctl_t *ctl)
{
    uint32_t pos = 0, idle = 0;
    for (;;) {
        const gcommi_svc_rec_t *r = &ring[pos & (GCOMMI_SVC_DEPTH - 1)];
        uint64_t x[GCOMMI_SVC_WORDS];
#pragma unroll
        for (int k = 0; k < GCOMMI_SVC_WORDS / 2; k++)
            asm volatile("ld.global.cv.v2.u64 {%0, %1}, [%2];"
                         : "=l"(x[2 * k]), "=l"(x[2 * k + 1]) : "l"(r->w + 2 * k) : "memory");
        gcommi_svc_item_t it;
        if (gcommi_svc_rec_decode(x, pos + 1, &it)) {
            if (it.bytes) gcommi_svc_store_payload(&it);
            if (it.at) gcommi_st_release64((uint64_t *)(uintptr_t)it.at, it.entry, 0);
            pos++;
            idle = 0;
            gcommi_st_release_sys(&ctl->done, pos);
            continue;
        }
        if ((++idle & 63u) == 0 && gcommi_ld_relaxed_sys(&ctl->stop)) return;
    }
}

/* The command of `cmdll`: sixteen words, (flag << 32) | 4 bytes; only the id matters here. */
typedef struct {
    uint64_t w[16];
} cmdll_t;

/* Block 1 of both kernels: the service of the mode, if it has one. */
__device__ static void service(const hop_args_t *a)
{
    const int mode = a->mode;
    if (mode == M_FLAG || mode == M_NOFENCE || mode == M_CMDLL || mode == M_CMDLLF) return;
    if (mode == M_LL || mode == M_LL8) {
        if ((int)threadIdx.x < a->svc_lanes)
            gcommi_svc_loop((gcommi_svc_rec_t *)a->ring, GCOMMI_SVC_DEPTH, a->ctl, a->svc_lanes);
    } else if (threadIdx.x == 0) {
        if (mode == M_TWOSTEP) twostep_loop((twostep_rec_t *)a->ring, a->ctl);
        else llthread_loop((gcommi_svc_rec_t *)a->ring, a->ctl);
    }
}

/* Throughput: the host posts `rounds` records back to back (as fast as the ring's credit lets
 * it); block 0 waits until the last one's notification is in its lane word. */
__global__ void k_stream(hop_args_t a)
{
    if (blockIdx.x == 1) {
        service(&a);
        return;
    }
    if (threadIdx.x == 0)
        while (gcommi_ld_acquire64(a.lane, 0) != a.rounds) {
        }
}

/* Block 0: the rank (thread 0); block 1: the service (thread 0, or warp 0 for ll / ll8). */
__global__ void k_hop(hop_args_t a, uint32_t launch)
{
    const int mode = a.mode;
    if (blockIdx.x == 1) {
        service(&a);
        return;
    }
    if (threadIdx.x != 0) return;
    uint64_t t0 = now_ns();
    for (uint32_t id = 1; id <= a.rounds; id++) {
        const uint32_t slot = gcommi_pq_reserve(&a.q);
        while (!gcommi_pq_has_credit(&a.q, slot)) {
        }
        if (mode == M_CMDLL || mode == M_CMDLLF) {
            if (mode == M_CMDLLF) gcommi_fence_sys();
            cmdll_t *r = (cmdll_t *)a.q.ring + (slot & (DEPTH - 1));
            const uint64_t f = (uint64_t)(slot + 1) << 32;
            /* id, op in words 0, 1; the rest as a real command would fill them */
            asm volatile("st.relaxed.sys.v2.u64 [%0], {%1, %2};" ::"l"(r->w), "l"(f | id),
                         "l"(f | GCOMMI_PQ_NOTIFY) : "memory");
#pragma unroll
            for (int k = 2; k < 16; k += 2)
                asm volatile("st.relaxed.sys.v2.u64 [%0], {%1, %2};" ::"l"(r->w + k), "l"(f),
                             "l"(f) : "memory");
        } else {
            gcommi_pq_cmd_t c;
            memset(&c, 0, sizeof(c));
            c.op = GCOMMI_PQ_NOTIFY;
            c.id = id;
            if (mode == M_NOFENCE) {
                gcommi_pq_cmd_t *r = &a.q.ring[slot & (DEPTH - 1)];
                r->op = c.op;
                r->id = c.id;
                gcommi_st_relaxed_sys(&r->seq, slot + 1);
            } else {
                gcommi_pq_publish(&a.q, slot, &c);
            }
        }
        if (mode == M_FLAG || mode == M_NOFENCE || mode == M_CMDLL || mode == M_CMDLLF) {
            while (gcommi_ld_acquire64(a.flag, 1) != id) {
            }
        } else {
            while (gcommi_ld_acquire64(a.lane, 0) != id) {
            }
            if (mode == M_LL8 && *(volatile uint64_t *)a.dst != payload_of(launch, id))
                atomicAdd(a.errs, 1u);
        }
        if (id % BATCH == 0) {
            const uint64_t t1 = now_ns();
            a.batch_ns[id / BATCH - 1] = t1 - t0;
            t0 = t1;
        }
    }
}

/* The service side of a launch of `mode`: the rings and words it uses, `rounds` deliveries. */
static hop_args_t hop_args_make(int mode, uint32_t rounds, int svc_lanes, void *sring,
                                gcommi_svc_ctl_t *ctl, uint64_t *dmem)
{
    hop_args_t a;
    memset(&a, 0, sizeof(a));
    a.ring = sring;
    a.ctl = ctl;
    a.lane = dmem;
    a.dst = dmem + 8;
    a.rounds = rounds;
    a.mode = mode;
    a.svc_lanes = svc_lanes;
    return a;
}

/* The proxy's record `pos` for a service mode: notification `entry` into the rank's lane, and in
 * ll8 the 8-byte payload d for a->dst; in the record form the mode's loop reads. */
static void post_record(const hop_args_t *a, uint32_t pos, uint64_t entry, uint64_t d)
{
    const uint32_t slot = pos & (GCOMMI_SVC_DEPTH - 1);
    if (a->mode == M_TWOSTEP) {
        twostep_rec_t *t = (twostep_rec_t *)a->ring + slot;
        t->dst = 0;
        t->at = (uint64_t)(uintptr_t)a->lane;
        t->entry = entry;
        t->bytes = 0;
        __atomic_store_n(&t->seq, pos + 1, __ATOMIC_RELEASE);
    } else {
        gcommi_svc_rec_write((gcommi_svc_rec_t *)a->ring + slot, pos, (uint64_t)(uintptr_t)a->dst,
                             (uint64_t)(uintptr_t)a->lane, entry, &d, a->mode == M_LL8 ? 8 : 0);
    }
}

static int cmp_u64(const void *x, const void *y)
{
    const unsigned long long a = *(const unsigned long long *)x, b = *(const unsigned long long *)y;
    return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
    uint32_t rounds = 4000;
    int launches = 5, svc_lanes = 32;
    const char *csv = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = (uint32_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--launches") && i + 1 < argc) launches = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
        else if (!strcmp(argv[i], "--svc-lanes") && i + 1 < argc) svc_lanes = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_svc_hop [--rounds N] [--launches N] [--svc-lanes 1..32] "
                            "[--csv FILE]\n");
            return 2;
        }
    }
    rounds -= rounds % BATCH;
    if (rounds < BATCH || launches < 1 || svc_lanes < 1 || svc_lanes > 32) {
        fprintf(stderr, "bench_svc_hop: --rounds >= %d, --launches >= 1, --svc-lanes 1..32\n",
                BATCH);
        return 2;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("bench_svc_hop: no GPU, skipped\n");
        return 77;
    }
    bench_print_environment(stdout, argc, argv);

    /* command ring: records and credit in mapped host memory, reservations in GPU memory */
    gcommi_pq_cmd_t *cring;
    uint32_t *consumed, *tail_dev, tail_host = 0;
    CK(cudaHostAlloc((void **)&cring, DEPTH * sizeof(cmdll_t), cudaHostAllocMapped)); /* either */
    CK(cudaHostAlloc((void **)&consumed, 64, cudaHostAllocMapped));
    CK(cudaMalloc((void **)&tail_dev, 64));
    /* service ring, big enough for either record; control words; the flag */
    const size_t ring_bytes = GCOMMI_SVC_DEPTH * sizeof(gcommi_svc_rec_t);
    void *sring;
    gcommi_svc_ctl_t *ctl;
    uint64_t *flag;
    CK(cudaHostAlloc(&sring, ring_bytes, cudaHostAllocMapped));
    CK(cudaHostAlloc((void **)&ctl, sizeof(*ctl), cudaHostAllocMapped));
    CK(cudaHostAlloc((void **)&flag, 64, cudaHostAllocMapped));
    uint64_t *dmem;
    unsigned long long *batch_ns;
    unsigned *errs;
    CK(cudaMalloc((void **)&dmem, 256));
    CK(cudaMallocManaged((void **)&batch_ns, (rounds / BATCH) * sizeof(*batch_ns)));
    CK(cudaMallocManaged((void **)&errs, sizeof(*errs)));

    const uint32_t nb = rounds / BATCH;
    unsigned long long *all[M_COUNT];
    for (int m = 0; m < M_COUNT; m++)
        all[m] = (unsigned long long *)calloc((size_t)nb * launches, sizeof(unsigned long long));
    int failed = 0;
    srand(12345);
    /* launch 0 of every mode is the warm-up; then rounds of all modes in a random order */
    for (int l = 0; l <= launches && !failed; l++) {
        int order[M_COUNT];
        for (int m = 0; m < M_COUNT; m++) order[m] = m;
        for (int m = M_COUNT - 1; m > 0; m--) {
            int j = rand() % (m + 1), t = order[m];
            order[m] = order[j];
            order[j] = t;
        }
        for (int oi = 0; oi < M_COUNT && !failed; oi++) {
            const int mode = order[oi];
            const uint32_t launch = (uint32_t)(l * M_COUNT + mode + 1);
            memset(cring, 0, DEPTH * sizeof(cmdll_t));
            memset(sring, 0, ring_bytes);
            memset(ctl, 0, sizeof(*ctl));
            *flag = 0;
            *consumed = 0;
            CK(cudaMemset(tail_dev, 0, 64));
            CK(cudaMemset(dmem, 0, 256));
            *errs = 0;
            gcommi_pq_t hq = {cring, &tail_host, consumed, DEPTH, 0};
            gcommi_pq_init(&hq, 0);
            if (mode == M_CMDLL || mode == M_CMDLLF) memset(cring, 0, DEPTH * sizeof(cmdll_t));
            hop_args_t a = hop_args_make(mode, rounds, svc_lanes, sring, ctl, dmem);
            a.q = hq;
            a.q.tail = tail_dev;
            a.flag = flag;
            a.batch_ns = batch_ns;
            a.errs = errs;
            CK(cudaDeviceSynchronize());
            k_hop<<<2, 64>>>(a, launch);
            CK(cudaGetLastError());
            /* the proxy's part */
            uint32_t next = 0, returned = 0, cmd_bad = 0;
            const double deadline = bench_now() + 30;
            while (next < rounds && bench_now() < deadline) {
                gcommi_pq_cmd_t c;
                if (mode == M_CMDLL || mode == M_CMDLLF) {
                    const cmdll_t *r = (const cmdll_t *)cring + (next & (DEPTH - 1));
                    int ok = 1;
                    for (int k = 0; k < 16; k++)
                        ok &= (uint32_t)(__atomic_load_n(&r->w[k], __ATOMIC_RELAXED) >> 32) ==
                              next + 1;
                    if (!ok) continue;
                    c.id = (uint32_t)__atomic_load_n(&r->w[0], __ATOMIC_RELAXED);
                } else if (!gcommi_pq_poll(&hq, next, &c)) {
                    continue;
                }
                const uint32_t pos = next++;
                if (c.id != pos + 1 && mode != M_NOFENCE) cmd_bad++; /* nofence may read it stale */
                const uint64_t id = pos + 1;
                if (mode == M_FLAG || mode == M_NOFENCE || mode == M_CMDLL || mode == M_CMDLLF)
                    __atomic_store_n(flag, id, __ATOMIC_RELEASE);
                else
                    post_record(&a, pos, id, payload_of(launch, (uint32_t)id));
                if (gcommi_pq_credit_due(next, returned, DEPTH, 0)) {
                    gcommi_pq_return_credit(&hq, next);
                    returned = next;
                }
            }
            __atomic_store_n(&ctl->stop, 1u, __ATOMIC_RELEASE);
            CK(cudaDeviceSynchronize());
            const int svc = mode == M_TWOSTEP || mode == M_LLTHREAD || mode == M_LL || mode == M_LL8;
            const uint32_t seen = svc ? __atomic_load_n(&ctl->done, __ATOMIC_ACQUIRE) : rounds;
            if (next != rounds || seen != rounds || *errs || cmd_bad) {
                fprintf(stderr, "bench_svc_hop: %s launch %d: %u of %u commands served (%u with "
                        "a wrong id), %u records carried out, %u payloads wrong\n",
                        mode_name[mode], l, next, rounds, cmd_bad, seen, *errs);
                failed = 1;
            }
            if (l > 0)
                memcpy(all[mode] + (size_t)(l - 1) * nb, batch_ns, nb * sizeof(*batch_ns));
        }
    }
    /* throughput of the service loops: records per second, best of --launches */
    double rate[M_COUNT] = {0};
    const int stream_modes[] = {M_TWOSTEP, M_LLTHREAD, M_LL, M_LL8};
    const uint32_t nstream = 200000;
    for (int l = 0; l < launches && !failed; l++)
        for (int si = 0; si < 4 && !failed; si++) {
            const int mode = stream_modes[si];
            memset(sring, 0, ring_bytes);
            memset(ctl, 0, sizeof(*ctl));
            CK(cudaMemset(dmem, 0, 256));
            const hop_args_t a = hop_args_make(mode, nstream, svc_lanes, sring, ctl, dmem);
            CK(cudaDeviceSynchronize());
            k_stream<<<2, 64>>>(a);
            CK(cudaGetLastError());
            const double t0 = bench_now(), deadline = t0 + 30;
            uint32_t pos = 0;
            for (; pos < nstream && bench_now() < deadline; pos++) {
                while (pos - __atomic_load_n(&ctl->done, __ATOMIC_ACQUIRE) >= GCOMMI_SVC_DEPTH) {
                }
                post_record(&a, pos, pos + 1, payload_of(0, pos));
            }
            while (__atomic_load_n(&ctl->done, __ATOMIC_ACQUIRE) != pos && bench_now() < deadline) {
            }
            const double dt = bench_now() - t0;
            __atomic_store_n(&ctl->stop, 1u, __ATOMIC_RELEASE);
            CK(cudaDeviceSynchronize());
            if (pos != nstream || __atomic_load_n(&ctl->done, __ATOMIC_ACQUIRE) != nstream) {
                fprintf(stderr, "bench_svc_hop: stream %s: %u of %u records carried out\n",
                        mode_name[mode], __atomic_load_n(&ctl->done, __ATOMIC_ACQUIRE), nstream);
                failed = 1;
            }
            if (nstream / dt > rate[mode]) rate[mode] = nstream / dt;
        }
    FILE *f = csv ? fopen(csv, "w") : NULL;
    if (csv && !f) {
        perror(csv);
        return 1;
    }
    if (f) fprintf(f, "mode,rounds,launches,rtt_us_median,rtt_us_p10,rtt_us_p90,records_per_s\n");
    printf("\n%-8s %12s %9s %9s %12s %12s\n", "mode", "round trip", "p10", "p90", "vs flag",
           "records/s");
    double flag_us = 0;
    for (int m = 0; m < M_COUNT && !failed; m++) {
        const size_t n = (size_t)nb * launches;
        qsort(all[m], n, sizeof(unsigned long long), cmp_u64);
        const double med = all[m][n / 2] * 1e-3 / BATCH, p10 = all[m][n / 10] * 1e-3 / BATCH,
                     p90 = all[m][n * 9 / 10] * 1e-3 / BATCH;
        if (m == M_FLAG) flag_us = med;
        printf("%-8s %9.2f us %6.2f us %6.2f us %+9.2f us", mode_name[m], med, p10, p90,
               med - flag_us);
        if (rate[m] > 0) printf(" %10.2f M\n", rate[m] * 1e-6);
        else printf(" %12s\n", "-");
        if (f) fprintf(f, "%s,%u,%d,%.3f,%.3f,%.3f,%.0f\n", mode_name[m], rounds, launches, med,
                       p10, p90, rate[m]);
    }
    if (f) bench_csv_close(f);
    printf("%s\n", failed ? "bench_svc_hop: FAILED" : "bench_svc_hop: all answers and payloads "
           "checked");
    return failed;
}
