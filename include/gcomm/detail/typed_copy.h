/* Moving the packed stream of one datatype layout into another, split over the threads of a
 * caller (a thread block of the device API's typed put/get; threads or a loop on the host). Every
 * word is located independently in both layouts (gcommi_dl_locate), so any thread can take any
 * word: thread `tid` of `nthreads` takes words tid, tid + nthreads, ... Written once for host and
 * device, tested on the CPU against gcomm_pack/gcomm_unpack (tests/datatype/test_dt_typed_copy.c). */
#ifndef GCOMM_DETAIL_TYPED_COPY_H
#define GCOMM_DETAIL_TYPED_COPY_H

#include <stdint.h>

#include "gcomm/detail/hd.h"
#include "gcomm/detail/layout.h"

/* What a copy needs of a committed type: its layout (in memory the caller can read) and shape. */
typedef struct {
    const gcommi_dl_t *nodes;
    const int64_t *aux;
    int64_t size;   /* packed bytes of one instance */
    int64_t extent; /* distance between instances */
    int64_t align;  /* power of two <= 16 dividing every offset and length of a word-by-word
                       traversal (gcommi_layout_gcd): the widest access that stays aligned */
} gcommi_tview_t;

/* The view of a layout (computes the alignment: O(nodes + indexed blocks); make it once). */
GCOMM_HD_INLINE gcommi_tview_t gcommi_tview(const gcommi_layout_t *l)
{
    gcommi_tview_t v;
    v.nodes = l->nodes;
    v.aux = l->aux;
    v.size = l->size;
    v.extent = l->extent;
    v.align = gcommi_pow2_align(gcommi_layout_gcd(l));
    return v;
}

/* Memory offset of packed byte K of a sequence of instances (instance K / size), and in
 * *contig how many bytes from there on are contiguous in memory within that instance's run. */
GCOMM_HD_INLINE int64_t gcommi_tview_locate(const gcommi_tview_t *t, int64_t K, int64_t *contig)
{
    int64_t i = K / t->size;
    return i * t->extent + gcommi_dl_locate(t->nodes, t->aux, 0, K - i * t->size, contig);
}

/* Memory offset of packed byte K of a sequence of instances. */
GCOMM_HD_INLINE int64_t gcommi_tview_offset(const gcommi_tview_t *t, int64_t K)
{
    int64_t contig;
    return gcommi_tview_locate(t, K, &contig);
}

/* Copies packed bytes [0, bytes) from layout S at s to layout D at d; this caller's share only.
 * Words are the smaller of the two alignments (so a word never straddles runs and every access is
 * aligned relative to the origins), narrowed further until the origins are aligned to them. */
GCOMM_HD_INLINE void gcommi_typed_copy(const gcommi_tview_t *S, const char *s,
                                       const gcommi_tview_t *D, char *d, int64_t bytes,
                                       int64_t tid, int64_t nthreads)
{
    if (bytes <= 0 || S->size <= 0 || D->size <= 0) return;
    int64_t w = S->align < D->align ? S->align : D->align;
    while (w > 1 && (bytes % w || (((uintptr_t)s | (uintptr_t)d) & (uintptr_t)(w - 1)))) w >>= 1;
    for (int64_t K = tid * w; K < bytes; K += nthreads * w) {
        const char *from = s + gcommi_tview_offset(S, K);
        char *to = d + gcommi_tview_offset(D, K);
        switch (w) {
        case 16:
            ((uint64_t *)to)[0] = ((const uint64_t *)from)[0];
            ((uint64_t *)to)[1] = ((const uint64_t *)from)[1];
            break;
        case 8: *(uint64_t *)to = *(const uint64_t *)from; break;
        case 4: *(uint32_t *)to = *(const uint32_t *)from; break;
        case 2: *(uint16_t *)to = *(const uint16_t *)from; break;
        default: *to = *from; break;
        }
    }
}

#endif /* GCOMM_DETAIL_TYPED_COPY_H */
