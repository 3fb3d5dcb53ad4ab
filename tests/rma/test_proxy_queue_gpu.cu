/* The proxy's command ring (include/gcomm/detail/proxy_queue.h) with GPU producers: the device
 * half of the proxy path of issue 5 on real hardware. Thread blocks (thread 0 of each) post
 * commands into a ring in mapped pinned host memory — reservation counter in the GPU's memory,
 * credit word in host memory — and a host thread consumes them the way the proxy does. Checks:
 * every record seen exactly once, intact, in per-block order, with the payload the block wrote
 * into host memory before publishing visible; credits hold the producers back (a ring much smaller
 * than the traffic). Then the latency of one command GPU -> host and one answer host -> GPU
 * (a block posts, the host echoes through a mapped flag), the round trip a proxied operation adds.
 *
 * Usage: test_proxy_queue_gpu [commands per block] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gcomm/detail/atomic.h"
#include "gcomm/detail/proxy_queue.h"
#include "testutil.h"
#include "../gpu/gpu_testutil.h" /* CUDA_OK */


#define DEPTH 64
#define BLOCKS 96
#define PAYLOAD_WORDS 4 /* per command, written by the block into host memory before the post */

__host__ __device__ static inline uint64_t word_of(int source, uint32_t id, int k)
{
    uint64_t x = ((uint64_t)source << 40) ^ ((uint64_t)id << 8) ^ (uint64_t)k;
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 29) ^ 1;
}

/* Thread 0 of every block posts `n` commands; the record carries (source, id) and points at the
 * block's payload slot for that id, which the block fills first. */
__global__ void k_produce(gcommi_pq_t q, uint64_t *payload, uint32_t n, unsigned *errs)
{
    if (threadIdx.x != 0) return;
    const int src = blockIdx.x;
    for (uint32_t id = 1; id <= n; id++) {
        uint64_t *p = payload + ((size_t)src * n + (id - 1)) * PAYLOAD_WORDS;
        for (int k = 0; k < PAYLOAD_WORDS; k++) p[k] = word_of(src, id, k);
        uint32_t slot = gcommi_pq_reserve(&q);
        unsigned long long spins = 0;
        while (!gcommi_pq_has_credit(&q, slot))
            if (++spins > (1ull << 34)) { /* the consumer is gone: give up, counted */
                atomicAdd(errs, 1u);
                return;
            }
        gcommi_pq_cmd_t c;
        memset(&c, 0, sizeof(c));
        c.op = GCOMMI_PQ_PUT;
        c.source = src;
        c.target = (int32_t)(id * 7 + src);
        c.tag = (int32_t)(id & 0xfffff);
        c.id = id;
        c.offset = (uint64_t)id << 20;
        c.bytes = PAYLOAD_WORDS * 8;
        c.u.origin = (uint64_t)(uintptr_t)p;
        gcommi_pq_publish(&q, slot, &c);
    }
}

/* One block: post a command, wait until the host echoes its id into `echo`, `n` times. */
__global__ void k_pingpong(gcommi_pq_t q, uint32_t *echo, uint32_t n, unsigned long long *ns)
{
    if (threadIdx.x != 0) return;
    unsigned long long t0 = 0, t1;
    for (uint32_t id = 1; id <= n; id++) {
        if (id == 2) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        uint32_t slot = gcommi_pq_reserve(&q);
        while (!gcommi_pq_has_credit(&q, slot)) {
        }
        gcommi_pq_cmd_t c;
        memset(&c, 0, sizeof(c));
        c.op = GCOMMI_PQ_NOTIFY;
        c.id = id;
        gcommi_pq_publish(&q, slot, &c);
        while (gcommi_ld_acquire_sys(echo) != id) {
        }
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    *ns = t1 - t0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The host side: a ring in mapped pinned memory (ring, credit word), the reservation counter in
 * device memory, as a GPU's producers would have it. */
typedef struct {
    gcommi_pq_t q;     /* host view (ring, consumed) with the device tail */
    gcommi_pq_t dq;    /* device view */
    gcommi_pq_cmd_t *ring;
    uint32_t *consumed;
    uint32_t *tail_dev;
} ring_t;

static void ring_make(ring_t *r)
{
    CUDA_OK(cudaHostAlloc((void **)&r->ring, DEPTH * sizeof(gcommi_pq_cmd_t), cudaHostAllocMapped));
    CUDA_OK(cudaHostAlloc((void **)&r->consumed, 64, cudaHostAllocMapped));
    CUDA_OK(cudaMalloc((void **)&r->tail_dev, 64));
    CUDA_OK(cudaMemset(r->tail_dev, 0, 64));
    uint32_t tail_host = 0;
    r->q.ring = r->ring;
    r->q.tail = &tail_host; /* only for the init below */
    r->q.consumed = r->consumed;
    r->q.depth = DEPTH;
    r->q.sys = 0;
    gcommi_pq_init(&r->q, 0);
    r->q.tail = NULL; /* the host never reserves */
    r->dq = r->q;
    CUDA_OK(cudaHostGetDevicePointer((void **)&r->dq.ring, r->ring, 0));
    CUDA_OK(cudaHostGetDevicePointer((void **)&r->dq.consumed, r->consumed, 0));
    r->dq.tail = r->tail_dev;
}

static void ring_free(ring_t *r)
{
    cudaFreeHost(r->ring);
    cudaFreeHost(r->consumed);
    cudaFree(r->tail_dev);
}

int main(int argc, char **argv)
{
    uint32_t n = argc > 1 ? (uint32_t)atol(argv[1]) : 4000;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("test_proxy_queue_gpu: no GPU, skipped\n");
        return GCOMM_TEST_SKIP;
    }
    ring_t r;
    ring_make(&r);
    uint64_t *payload, *dpayload;
    size_t pbytes = (size_t)BLOCKS * n * PAYLOAD_WORDS * 8;
    CUDA_OK(cudaHostAlloc((void **)&payload, pbytes, cudaHostAllocMapped));
    memset(payload, 0, pbytes);
    CUDA_OK(cudaHostGetDevicePointer((void **)&dpayload, payload, 0));
    unsigned *errs;
    CUDA_OK(cudaMallocManaged(&errs, sizeof(unsigned)));
    *errs = 0;

    /* many producers, one consumer */
    uint32_t *next_id = (uint32_t *)calloc(BLOCKS, sizeof(uint32_t));
    long bad = 0, seen = 0, total = (long)BLOCKS * n;
    double t0 = now_s();
    k_produce<<<BLOCKS, 32>>>(r.dq, dpayload, n, errs);
    CUDA_OK(cudaGetLastError());
    uint32_t next = 0, returned = 0;
    double deadline = now_s() + 60;
    while (seen < total && now_s() < deadline) {
        gcommi_pq_cmd_t c;
        int got = 0;
        while (gcommi_pq_poll(&r.q, next, &c)) {
            got = 1;
            next++;
            seen++;
            int s = c.source;
            if (s < 0 || s >= BLOCKS || c.id != next_id[s] + 1 || c.op != GCOMMI_PQ_PUT ||
                c.target != (int32_t)(c.id * 7 + s) || c.tag != (int32_t)(c.id & 0xfffff) ||
                c.offset != (uint64_t)c.id << 20 || c.bytes != PAYLOAD_WORDS * 8) {
                if (bad++ < 5)
                    fprintf(stderr, "record %u: source %d id %u (expected %u) op %u\n", next - 1,
                            s, c.id, s >= 0 && s < BLOCKS ? next_id[s] + 1 : 0, c.op);
                continue;
            }
            next_id[s] = c.id;
            /* the payload the block wrote before publishing, through the host's address */
            const uint64_t *p = payload + ((size_t)s * n + (c.id - 1)) * PAYLOAD_WORDS;
            for (int k = 0; k < PAYLOAD_WORDS; k++)
                if (p[k] != word_of(s, c.id, k) && bad++ < 5)
                    fprintf(stderr, "payload of source %d id %u word %d not visible\n", s, c.id, k);
            if (gcommi_pq_credit_due(next, returned, DEPTH, 0)) {
                gcommi_pq_return_credit(&r.q, next);
                returned = next;
            }
        }
        if (!got && next != returned) { /* idle: return what is due */
            gcommi_pq_return_credit(&r.q, next);
            returned = next;
        }
    }
    CUDA_OK(cudaDeviceSynchronize());
    double dt = now_s() - t0;
    TEST_CHECK(seen == total, "saw %ld of %ld commands", seen, total);
    TEST_CHECK(bad == 0, "%ld bad records or payloads", bad);
    TEST_CHECK(*errs == 0, "%u producers gave up waiting for credit", *errs);
    long complete = 0;
    for (int s = 0; s < BLOCKS; s++) complete += next_id[s] == n;
    TEST_CHECK(complete == BLOCKS, "%ld of %d producers complete", complete, BLOCKS);
    printf("ring     %d blocks x %u commands through a %d-deep ring in pinned host memory: %s "
           "(%.3f s, %.2f M commands/s)\n",
           BLOCKS, n, DEPTH, (seen == total && bad == 0) ? "ok" : "FAILED", dt, seen / dt * 1e-6);
    ring_free(&r);

    /* latency: GPU posts, host echoes */
    ring_make(&r);
    uint32_t *echo, *decho;
    CUDA_OK(cudaHostAlloc((void **)&echo, 64, cudaHostAllocMapped));
    *echo = 0;
    CUDA_OK(cudaHostGetDevicePointer((void **)&decho, echo, 0));
    unsigned long long *ns;
    CUDA_OK(cudaMallocManaged(&ns, sizeof(*ns)));
    const uint32_t rounds = 20000;
    k_pingpong<<<1, 32>>>(r.dq, decho, rounds, ns);
    CUDA_OK(cudaGetLastError());
    next = 0;
    returned = 0;
    deadline = now_s() + 60;
    while (next < rounds && now_s() < deadline) {
        gcommi_pq_cmd_t c;
        if (!gcommi_pq_poll(&r.q, next, &c)) continue;
        next++;
        gcommi_st_release_sys(echo, c.id);
        if (gcommi_pq_credit_due(next, returned, DEPTH, 0)) {
            gcommi_pq_return_credit(&r.q, next);
            returned = next;
        }
    }
    CUDA_OK(cudaDeviceSynchronize());
    TEST_CHECK(next == rounds, "echoed %u of %u", next, rounds);
    printf("latency  command GPU -> host thread -> answer to the GPU: %.2f us round trip "
           "(mean of %u)\n", (double)*ns * 1e-3 / (rounds - 1), rounds - 1);
    ring_free(&r);
    cudaFreeHost(echo);
    cudaFree(ns);
    cudaFreeHost(payload);
    cudaFree(errs);
    free(next_id);
    return gcommt_finish("test_proxy_queue_gpu");
}
