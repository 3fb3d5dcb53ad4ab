/* The service block of a GPU in a job over the proxy (issue 5).
 *
 * The proxy thread cannot store into GPU memory: every payload and notification it delivers into
 * a GPU would cost a copy-engine copy and the CUDA calls around it (~7 us for 8 bytes, measured),
 * and lanes in host memory would make every wait poll across PCIe. So in a job that reaches GPUs
 * of other nodes, gcomm_launch adds one block to the grid (block index nlocal, after the ranks):
 * it does not become a rank; gcomm_rank_init runs the loop below in it and never returns. The
 * proxy thread writes *delivery records* into a ring in mapped pinned host memory; the service
 * block polls the ring and carries each record out with stores from the GPU:
 *
 *   1. up to GCOMMI_SVC_DATA payload bytes into a window (a small put's data);
 *   2. one notification word into a lane slot of a rank of this GPU, with a release store, so
 *      that the payload before it is visible to the rank that sees the notification;
 *   3. the count of records carried out into `done`, with a system-scope release, so
 *      that the proxy knows the data is in place before it acknowledges the put to its origin.
 *
 * The proxy does all addressing, window checks, lane reservations and credit waits itself (it is
 * the producer of the lanes from remote GPUs); the service only stores. A record is sixteen 8-byte
 * words, each carrying 4 bytes of the record and, in its upper half, the record's sequence number
 * (position + 1), as NCCL's LL protocol does: an 8-byte store of the host and an 8-byte load of the
 * GPU are single-copy atomic, so a word whose flag matches holds this record's value, and the
 * block reads a record and learns that it is complete in one PCIe round trip (a sequence word
 * stored last, then the record read after it, took two: bench/bench_svc_hop.cu, 7.7 us round
 * trip against 5.5 us on one H100). The proxy
 * writes record i + depth only once `done` has passed i.
 *
 * The block ends when the host sets `stop` (after every rank of the GPU has called gcomm_finish
 * and the proxies have met in their stop, so that no record can come any more). The ranks count
 * themselves out in the control block; the last one writes the proxy ring's final reservation
 * count and `ranks_done` here, which the host polls instead of waiting for the kernel's end. */
#ifndef GCOMM_DETAIL_SVC_H
#define GCOMM_DETAIL_SVC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gcomm/detail/atomic.h"
#include "gcomm/detail/hd.h"
#include "gcomm/detail/rank_prims.h"

#define GCOMMI_SVC_DATA 32    /* payload bytes a record carries */
#define GCOMMI_SVC_DEPTH 1024 /* records per ring (a power of two) */
#define GCOMMI_SVC_WORDS 16   /* 8-byte words of a record: 4 bytes of it + the flag each */

/* The record's content, 4 bytes per word: the payload's address (this GPU's memory) when bytes >
 * 0, the lane slot to publish into (this GPU's memory) or 0, the notification word, the payload's
 * length (0 .. GCOMMI_SVC_DATA), and the payload in words GCOMMI_SVC_W_DATA onwards. */
enum {
    GCOMMI_SVC_W_DST = 0,   /* low half, then high half */
    GCOMMI_SVC_W_AT = 2,
    GCOMMI_SVC_W_ENTRY = 4,
    GCOMMI_SVC_W_BYTES = 6, /* word 7 is unused */
    GCOMMI_SVC_W_DATA = 8
};

typedef struct {
    uint64_t w[GCOMMI_SVC_WORDS]; /* (flag << 32) | 4 bytes of the record */
} gcommi_svc_rec_t;

/* 128 bytes: the payload's 32 bytes fit in words 8..15 (works in C and C++, as proxy_queue.h's). */
typedef char gcommi_svc_rec_layout_check[sizeof(gcommi_svc_rec_t) == 128 &&
                                         GCOMMI_SVC_W_DATA + GCOMMI_SVC_DATA / 4 ==
                                             GCOMMI_SVC_WORDS ? 1 : -1];

/* The proxy's side: writes record `pos` (flag pos + 1) with one 8-byte store per word, in any
 * order; the block takes it once every word carries the flag. `data` holds `bytes` bytes. */
static inline void gcommi_svc_rec_write(gcommi_svc_rec_t *r, uint32_t pos, uint64_t dst,
                                        uint64_t at, uint64_t entry, const void *data,
                                        uint32_t bytes)
{
    uint32_t v[GCOMMI_SVC_WORDS] = {(uint32_t)dst,   (uint32_t)(dst >> 32), (uint32_t)at,
                                    (uint32_t)(at >> 32), (uint32_t)entry,
                                    (uint32_t)(entry >> 32), bytes, 0};
    if (bytes) memcpy(v + GCOMMI_SVC_W_DATA, data, bytes);
    const uint64_t flag = (uint64_t)(pos + 1) << 32;
    for (int k = 0; k < GCOMMI_SVC_WORDS; k++)
        __atomic_store_n(&r->w[k], flag | v[k], __ATOMIC_RELAXED);
}

/* Host words shared by the proxy, the launch and the service block (mapped pinned memory), each
 * on its own line. */
typedef struct {
    uint32_t done;       /* service -> proxy: records carried out */
    uint32_t pad0[15];
    uint32_t stop;       /* launch -> service: no more records; end */
    uint32_t pad1[15];
    uint32_t ranks_done; /* last rank -> launch: every rank of the GPU has finished */
    uint32_t final_tail; /* ... and this many commands were reserved in the proxy ring */
    uint32_t pad2[14];
} gcommi_svc_ctl_t;

/* A record as the block read it: what to store. */
typedef struct {
    uint64_t dst, at, entry;
    uint32_t bytes;
    uint32_t data[GCOMMI_SVC_DATA / 4];
} gcommi_svc_item_t;

/* Decodes the sixteen words x of a record read from the ring: nonzero when every word carries
 * `flag` (the whole record is there), with its content in *it (shared by the block and the CPU
 * tests). A length above GCOMMI_SVC_DATA, which the proxy never writes, is cut to it. */
GCOMM_HD_INLINE int gcommi_svc_rec_decode(const uint64_t x[GCOMMI_SVC_WORDS], uint32_t flag,
                                          gcommi_svc_item_t *it)
{
    int ok = 1;
    for (int k = 0; k < GCOMMI_SVC_WORDS; k++) ok &= (uint32_t)(x[k] >> 32) == flag;
#define GCOMMI_SVC_U64(w) ((uint32_t)x[w] | (uint64_t)(uint32_t)x[(w) + 1] << 32)
    it->dst = GCOMMI_SVC_U64(GCOMMI_SVC_W_DST);
    it->at = GCOMMI_SVC_U64(GCOMMI_SVC_W_AT);
    it->entry = GCOMMI_SVC_U64(GCOMMI_SVC_W_ENTRY);
#undef GCOMMI_SVC_U64
    const uint32_t bytes = (uint32_t)x[GCOMMI_SVC_W_BYTES];
    it->bytes = bytes < GCOMMI_SVC_DATA ? bytes : GCOMMI_SVC_DATA;
    for (int k = 0; k < GCOMMI_SVC_DATA / 4; k++) it->data[k] = (uint32_t)x[GCOMMI_SVC_W_DATA + k];
    return ok;
}

/* Stores a record's payload at its address: 4-byte stores where address and length allow, else
 * byte by byte (the payload's byte k is byte k % 4 of data[k / 4]: both ends little-endian). */
GCOMM_HD_INLINE void gcommi_svc_store_payload(const gcommi_svc_item_t *it)
{
    unsigned char *o = (unsigned char *)(uintptr_t)it->dst;
    if ((it->dst & 3u) == 0 && (it->bytes & 3u) == 0)
        for (uint32_t k = 0; k < it->bytes / 4; k++) ((uint32_t *)o)[k] = it->data[k];
    else
        for (uint32_t k = 0; k < it->bytes; k++)
            o[k] = (unsigned char)(it->data[k / 4] >> (8 * (k % 4)));
}

#if defined(__CUDACC__)
/* The first warp of the service block (its `nlanes` = min(32, block size) threads, all calling):
 * carries out records until told to stop. The lanes read a record together, one 16-byte load of
 * the eight each (lane k: chunks k, k + nlanes, ...) that skips the caches (.cv): a warp's loads
 * of one 128-byte line go across PCIe as one request, where one thread's eight loads go one after
 * the other (one H100, bench_svc_hop: 5.5 us round trip against 10.4 us; against 4.4 us for a
 * store the rank polls across PCIe itself). Lane 0 decodes and stores. */
static __device__ __forceinline__ void gcommi_svc_loop(gcommi_svc_rec_t *ring, uint32_t depth,
                                                       gcommi_svc_ctl_t *ctl, int nlanes)
{
    __shared__ uint64_t x[GCOMMI_SVC_WORDS];
    const int lane = gcommi_tid();
    const unsigned mask = nlanes >= 32 ? 0xffffffffu : (1u << nlanes) - 1u;
    uint32_t pos = 0, idle = 0;
    for (;;) {
        const gcommi_svc_rec_t *r = &ring[pos & (depth - 1)];
        int ok = 1;
        for (int k = lane; k < GCOMMI_SVC_WORDS / 2; k += nlanes) {
            uint64_t a, b;
            asm volatile("ld.global.cv.v2.u64 {%0, %1}, [%2];"
                         : "=l"(a), "=l"(b) : "l"(r->w + 2 * k) : "memory");
            ok &= (uint32_t)(a >> 32) == pos + 1 && (uint32_t)(b >> 32) == pos + 1;
            x[2 * k] = a;
            x[2 * k + 1] = b;
        }
        if (__all_sync(mask, ok)) {
            __syncwarp(mask); /* x complete */
            if (lane == 0) {
                gcommi_svc_item_t it;
                gcommi_svc_rec_decode(x, pos + 1, &it);
                if (it.bytes) gcommi_svc_store_payload(&it);
                /* the consumer is a rank of this GPU: GPU scope orders the payload before it */
                if (it.at) gcommi_st_release64((uint64_t *)(uintptr_t)it.at, it.entry, 0);
                /* at once: the proxy's ring credit, and its fence before a barrier or a get */
                gcommi_st_release_sys(&ctl->done, pos + 1);
            }
            __syncwarp(mask); /* lane 0 is done with x */
            pos++;
            idle = 0;
            continue;
        }
        if ((++idle & 63u) == 0) {
            const uint32_t stop = lane == 0 ? gcommi_ld_relaxed_sys(&ctl->stop) : 0;
            if (__shfl_sync(mask, stop, 0)) return;
        }
    }
}
#endif

#endif /* GCOMM_DETAIL_SVC_H */
