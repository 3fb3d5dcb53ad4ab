/* CPU pack and unpack over a committed layout (layout.h).
 *
 * One traversal serves both directions (pack: typed memory -> packed stream; unpack: the reverse)
 * and any byte range of the packed stream: part_node() descends to the first byte of the range by
 * division and binary search (no walk from the start), copies whole children with the fast loops
 * of full_node()/full_vec(), and finishes with a partial child at the end. The fast loops are
 * specialised by shape: one memcpy for contiguous data, strided loops with fixed-size copies for
 * narrow vector blocks, one memcpy per block for indexed blocks of contiguous elements, and a tiled
 * loop for vectors of vectors whose outer stride is the small one (a transpose), which would
 * otherwise touch a new cache line and TLB page for every element. */
#include <stdint.h>
#include <string.h>

#include "datatype/pack_host.h"

typedef struct {
    const gcommi_dl_t *nodes;
    const int64_t *aux;
    char *packed; /* next byte of the packed stream */
    int pack;     /* 1: typed -> packed, 0: packed -> typed */
} ctx_t;

static inline void copy_bytes(ctx_t *c, char *mem, size_t n)
{
    if (c->pack) memcpy(c->packed, mem, n);
    else memcpy(mem, c->packed, n);
    c->packed += n;
}

/* count runs of SIZE bytes at mem, mem + stride, ...: fixed-size copies compile to plain moves. */
#define GCOMMI_STRIDED_COPY(SIZE)                                                              \
    static void strided_##SIZE(ctx_t *c, char *mem, int64_t stride, int64_t count)            \
    {                                                                                          \
        char *p = c->packed;                                                                   \
        if (c->pack)                                                                           \
            for (int64_t i = 0; i < count; i++, p += SIZE, mem += stride) memcpy(p, mem, SIZE); \
        else                                                                                   \
            for (int64_t i = 0; i < count; i++, p += SIZE, mem += stride) memcpy(mem, p, SIZE); \
        c->packed = p;                                                                         \
    }
GCOMMI_STRIDED_COPY(1)
GCOMMI_STRIDED_COPY(2)
GCOMMI_STRIDED_COPY(4)
GCOMMI_STRIDED_COPY(8)
GCOMMI_STRIDED_COPY(16)
GCOMMI_STRIDED_COPY(32)
#undef GCOMMI_STRIDED_COPY

/* Copies 1 <= n <= 64 bytes as two overlapping fixed-size moves (both inside [0, n)) instead of
 * a memcpy call per odd-sized element, e.g. a 17-byte struct. */
#define GCOMMI_COPY_PAIR(W)                                                                    \
    do {                                                                                       \
        char a_[W], b_[W];                                                                     \
        memcpy(a_, src, W);                                                                    \
        memcpy(b_, src + n - (W), W);                                                          \
        memcpy(dst, a_, W);                                                                    \
        memcpy(dst + n - (W), b_, W);                                                          \
    } while (0)
static inline void copy_small(char *dst, const char *src, size_t n)
{
    if (n >= 32) GCOMMI_COPY_PAIR(32);
    else if (n >= 16) GCOMMI_COPY_PAIR(16);
    else if (n >= 8) GCOMMI_COPY_PAIR(8);
    else if (n >= 4) GCOMMI_COPY_PAIR(4);
    else if (n >= 2) GCOMMI_COPY_PAIR(2);
    else *dst = *src;
}
#undef GCOMMI_COPY_PAIR

static void strided_any(ctx_t *c, char *mem, int64_t size, int64_t stride, int64_t count)
{
    if (stride == size) { /* abutting runs: one copy */
        copy_bytes(c, mem, (size_t)(size * count));
        return;
    }
    switch (size) {
    case 1: strided_1(c, mem, stride, count); return;
    case 2: strided_2(c, mem, stride, count); return;
    case 4: strided_4(c, mem, stride, count); return;
    case 8: strided_8(c, mem, stride, count); return;
    case 16: strided_16(c, mem, stride, count); return;
    case 32: strided_32(c, mem, stride, count); return;
    default:
        if (size <= 64) {
            char *p = c->packed;
            if (c->pack)
                for (int64_t i = 0; i < count; i++, p += size, mem += stride)
                    copy_small(p, mem, (size_t)size);
            else
                for (int64_t i = 0; i < count; i++, p += size, mem += stride)
                    copy_small(mem, p, (size_t)size);
            c->packed = p;
            return;
        }
        for (int64_t i = 0; i < count; i++, mem += stride) copy_bytes(c, mem, (size_t)size);
    }
}

/* Tile height of the transposing loop: outer rows handled together, so that each cache line read
 * from memory serves TILE packed streams. Measured on the CI-class EPYC (transpose of 4096^2
 * doubles): 4 -> 4.4 GB/s, 8 -> 5.2, 16 -> 3.1, 32 -> 1.3: more streams than 8, all a row of the
 * matrix apart, start evicting each other from the L1 sets. */
#define GCOMMI_TILE 8

/* count instances of a VEC-of-RUN child (inner count n2, stride s2, element size sz) spaced by the
 * small outer stride s1: walk tiles of outer rows, each tile column by column. */
static void transpose_tiles(ctx_t *c, char *mem, int64_t s1, int64_t count, int64_t n2, int64_t s2,
                            int64_t sz)
{
    char *packed = c->packed;
    int64_t inst = n2 * sz; /* packed bytes of one outer instance */
    for (int64_t i0 = 0; i0 < count; i0 += GCOMMI_TILE) {
        int64_t tile = count - i0 < GCOMMI_TILE ? count - i0 : GCOMMI_TILE;
        char *row = mem + i0 * s1;
        char *out = packed + i0 * inst;
        for (int64_t j = 0; j < n2; j++, row += s2, out += sz) {
            char *m = row, *p = out;
            if (sz == 8) {
                if (c->pack)
                    for (int64_t t = 0; t < tile; t++, m += s1, p += inst) memcpy(p, m, 8);
                else
                    for (int64_t t = 0; t < tile; t++, m += s1, p += inst) memcpy(m, p, 8);
            } else if (sz == 4) {
                if (c->pack)
                    for (int64_t t = 0; t < tile; t++, m += s1, p += inst) memcpy(p, m, 4);
                else
                    for (int64_t t = 0; t < tile; t++, m += s1, p += inst) memcpy(m, p, 4);
            } else {
                for (int64_t t = 0; t < tile; t++, m += s1, p += inst) {
                    if (c->pack) memcpy(p, m, (size_t)sz);
                    else memcpy(m, p, (size_t)sz);
                }
            }
        }
    }
    c->packed = packed + count * inst;
}

static void full_node(ctx_t *c, const gcommi_dl_t *n, char *origin);

static int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

/* count whole instances of node ch whose origins are base, base + stride, ... */
static void full_vec(ctx_t *c, const gcommi_dl_t *ch, char *base, int64_t stride, int64_t count)
{
    if (ch->kind == GCOMMI_DL_RUN) {
        strided_any(c, base + ch->disp, ch->size, stride, count);
        return;
    }
    if (ch->kind == GCOMMI_DL_VEC) {
        const gcommi_dl_t *g = &c->nodes[ch->child];
        if (g->kind == GCOMMI_DL_RUN && g->size <= 16 && count >= 2 && ch->count >= 16 &&
            abs64(stride) <= 64 && abs64(ch->stride) > 256) {
            transpose_tiles(c, base + ch->disp + g->disp, stride, count, ch->count, ch->stride,
                            g->size);
            return;
        }
        for (int64_t i = 0; i < count; i++, base += stride)
            full_vec(c, g, base + ch->disp, ch->stride, ch->count);
        return;
    }
    for (int64_t i = 0; i < count; i++, base += stride) full_node(c, ch, base);
}

/* One whole instance of node n with origin at `origin`. */
static void full_node(ctx_t *c, const gcommi_dl_t *n, char *origin)
{
    char *base = origin + n->disp;
    switch (n->kind) {
    case GCOMMI_DL_RUN: copy_bytes(c, base, (size_t)n->size); return;
    case GCOMMI_DL_VEC: full_vec(c, &c->nodes[n->child], base, n->stride, n->count); return;
    case GCOMMI_DL_IDX: {
        const gcommi_dl_t *ch = &c->nodes[n->child];
        const int64_t *displs = c->aux + n->aux, *prefix = displs + n->count;
        if (ch->kind == GCOMMI_DL_RUN && ch->size == n->stride) { /* blocks are contiguous */
            for (int64_t b = 0; b < n->count; b++)
                copy_bytes(c, base + displs[b] + ch->disp,
                           (size_t)((prefix[b + 1] - prefix[b]) * ch->size));
            return;
        }
        for (int64_t b = 0; b < n->count; b++)
            full_vec(c, ch, base + displs[b], n->stride, prefix[b + 1] - prefix[b]);
        return;
    }
    default: { /* GCOMMI_DL_SEQ */
        const int64_t *member = c->aux + n->aux + n->count + 1;
        for (int64_t m = 0; m < n->count; m++) full_node(c, &c->nodes[member[m]], base);
        return;
    }
    }
}

static void part_node(ctx_t *c, const gcommi_dl_t *n, char *origin, int64_t skip, int64_t len);

/* Packed bytes [skip, skip + len) of the children of ch whose origins are base, base + stride, ...
 * (used for VEC nodes, IDX blocks and the instances of the root). */
static void part_vec(ctx_t *c, const gcommi_dl_t *ch, char *base, int64_t stride, int64_t skip,
                     int64_t len)
{
    int64_t cs = ch->size;
    int64_t i = skip / cs, off = skip % cs;
    if (off) {
        int64_t take = cs - off < len ? cs - off : len;
        part_node(c, ch, base + i * stride, off, take);
        len -= take;
        i++;
    }
    int64_t full = len / cs;
    if (full) {
        full_vec(c, ch, base + i * stride, stride, full);
        i += full;
        len -= full * cs;
    }
    if (len) part_node(c, ch, base + i * stride, 0, len);
}

static void part_node(ctx_t *c, const gcommi_dl_t *n, char *origin, int64_t skip, int64_t len)
{
    if (skip == 0 && len == n->size) {
        full_node(c, n, origin);
        return;
    }
    char *base = origin + n->disp;
    switch (n->kind) {
    case GCOMMI_DL_RUN: copy_bytes(c, base + skip, (size_t)len); return;
    case GCOMMI_DL_VEC: part_vec(c, &c->nodes[n->child], base, n->stride, skip, len); return;
    case GCOMMI_DL_IDX: {
        const gcommi_dl_t *ch = &c->nodes[n->child];
        const int64_t *displs = c->aux + n->aux, *prefix = displs + n->count;
        int64_t cs = ch->size;
        int64_t item = skip / cs;
        int64_t b = gcommi_dl_find_block(prefix, n->count, item);
        /* Relative to block b, the range starts at item - prefix[b] children plus skip % cs. */
        int64_t rel = skip - prefix[b] * cs;
        while (len > 0) {
            int64_t block_bytes = (prefix[b + 1] - prefix[b]) * cs;
            int64_t take = block_bytes - rel < len ? block_bytes - rel : len;
            part_vec(c, ch, base + displs[b], n->stride, rel, take);
            len -= take;
            rel = 0;
            b++;
        }
        return;
    }
    default: { /* GCOMMI_DL_SEQ */
        const int64_t *prefix = c->aux + n->aux, *member = prefix + n->count + 1;
        int64_t m = gcommi_dl_find_block(prefix, n->count, skip);
        int64_t rel = skip - prefix[m];
        while (len > 0) {
            int64_t msize = prefix[m + 1] - prefix[m];
            int64_t take = msize - rel < len ? msize - rel : len;
            part_node(c, &c->nodes[member[m]], base, rel, take);
            len -= take;
            rel = 0;
            m++;
        }
        return;
    }
    }
}

void gcommi_host_copy(const gcommi_layout_t *L, char *typed, size_t offset, size_t bytes,
                      char *packed, int pack)
{
    if (bytes == 0 || L->size == 0) return;
    ctx_t c = {.nodes = L->nodes, .aux = L->aux, .packed = packed, .pack = pack};
    const gcommi_dl_t *root = &L->nodes[0];
    if (root->kind == GCOMMI_DL_RUN && root->size == L->extent) { /* contiguous instances */
        copy_bytes(&c, typed + root->disp + offset, bytes);
    } else {
        part_vec(&c, root, typed, L->extent, (int64_t)offset, (int64_t)bytes);
    }
}
