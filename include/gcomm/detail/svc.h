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
 * the producer of the lanes from remote GPUs); the service only stores. Records are published
 * like proxy commands: every field first, then `seq` = position + 1 with a release store; the
 * proxy writes record i + depth only once `done` has passed i.
 *
 * The block ends when the host sets `stop` (after every rank of the GPU has called gcomm_finish
 * and the proxies have met in their stop, so that no record can come any more). The ranks count
 * themselves out in the control block; the last one writes the proxy ring's final reservation
 * count and `ranks_done` here, which the host polls instead of waiting for the kernel's end. */
#ifndef GCOMM_DETAIL_SVC_H
#define GCOMM_DETAIL_SVC_H

#include <stddef.h>
#include <stdint.h>

#include "gcomm/detail/atomic.h"
#include "gcomm/detail/hd.h"

#define GCOMMI_SVC_DATA 32    /* payload bytes a record carries */
#define GCOMMI_SVC_DEPTH 1024 /* records per ring (a power of two) */

typedef struct {
    uint64_t dst;      /* where the payload goes (this GPU's memory), when bytes > 0 */
    uint64_t entry_at; /* the lane slot to publish into (this GPU's memory), or 0 */
    uint64_t entry;    /* the notification word */
    uint32_t bytes;    /* payload bytes, 0 .. GCOMMI_SVC_DATA */
    uint32_t seq;      /* position + 1, stored last (release) */
    uint64_t data[GCOMMI_SVC_DATA / 8];
} gcommi_svc_rec_t;

/* The service loop reads a record as eight 64-bit words in this order (bytes in the low half of
 * the fourth): 64 bytes, the payload at byte 32 (works in C and C++, as proxy_queue.h's). */
typedef char gcommi_svc_rec_layout_check[sizeof(gcommi_svc_rec_t) == 64 &&
                                         offsetof(gcommi_svc_rec_t, bytes) == 24 &&
                                         offsetof(gcommi_svc_rec_t, data) == 32 ? 1 : -1];

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

#if defined(__CUDA_ARCH__)
/* Thread 0 of the service block: carries out records until told to stop. The ring is host memory
 * that the proxy rewrites every lap: its loads are system-scope or bypass the caches (.cv). */
static __device__ __forceinline__ void gcommi_svc_loop(gcommi_svc_rec_t *ring, uint32_t depth,
                                                       gcommi_svc_ctl_t *ctl)
{
    uint32_t pos = 0, idle = 0;
    for (;;) {
        gcommi_svc_rec_t *r = &ring[pos & (depth - 1)];
        if (gcommi_ld_acquire_sys(&r->seq) == pos + 1) {
            /* the rest with four weak 16-byte loads that skip the caches (.cv): they overlap in
             * one PCIe round trip, where strong (.sys) loads of host memory may go one by one.
             * Ordered after the acquire above. */
            uint64_t w[8];
#pragma unroll
            for (int k = 0; k < 4; k++)
                asm volatile("ld.global.cv.v2.u64 {%0, %1}, [%2];"
                             : "=l"(w[2 * k]), "=l"(w[2 * k + 1])
                             : "l"((const uint64_t *)r + 2 * k) : "memory");
            const uint64_t dst = w[0], at = w[1], e = w[2];
            const uint32_t bytes = (uint32_t)w[3];
            const uint64_t *d = w + 4;
            if (bytes) {
                const unsigned char *s = (const unsigned char *)d;
                unsigned char *o = (unsigned char *)(uintptr_t)dst;
                if ((dst & 7u) == 0 && (bytes & 7u) == 0)
                    for (uint32_t k = 0; k < bytes / 8; k++) ((uint64_t *)o)[k] = d[k];
                else
                    for (uint32_t k = 0; k < bytes && k < GCOMMI_SVC_DATA; k++) o[k] = s[k];
            }
            /* the consumer is a rank of this GPU: GPU scope orders the payload before it */
            if (at) gcommi_st_release64((uint64_t *)(uintptr_t)at, e, 0);
            pos++;
            idle = 0;
            /* at once: the proxy's ring credit, and its fence before a barrier or a get */
            gcommi_st_release_sys(&ctl->done, pos);
            continue;
        }
        if ((++idle & 63u) == 0 && gcommi_ld_relaxed_sys(&ctl->stop)) return;
    }
}
#endif

#endif /* GCOMM_DETAIL_SVC_H */
