/* Commit: normalises a datatype into its layout (layout.h).
 *
 * Two steps. First the block lists of the type tree are turned into an intermediate tree (IR) of
 * RUN/VEC/IDX/SEQ nodes, simplifying bottom-up as each node is made: empty parts vanish, a vector
 * of one child is the child, a vector whose stride equals its child's size is one longer run,
 * nested vectors whose outer stride spans the inner one become one vector, abutting indexed blocks
 * and struct members merge, and indexed/struct shapes with a regular spacing become vectors.
 * Second, the IR is flattened in preorder into one position-independent allocation. */
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/error.h"
#include "datatype/type.h"

typedef struct ir ir_t;
struct ir {
    int kind;
    int64_t disp, size, unit;
    int64_t count;  /* VEC children, IDX blocks, SEQ members */
    int64_t stride; /* VEC stride, IDX child extent */
    ir_t *child;    /* VEC, IDX */
    int64_t *bdisp; /* IDX block displacements */
    int64_t *blen;  /* IDX children per block */
    int affine;     /* IDX: the blocks step evenly (GCOMMI_DL_AFFINE) */
    ir_t **members; /* SEQ */
};

/* Displacements add up along the tree in an order whose partial sums need not be in range (a
 * member at INT64_MIN whose child's part starts at -32 and holds its data at +2^31): they are
 * added modulo 2^64, which gives every displacement that is in range exactly, and the data's
 * are (type creation refuses true bounds that overflow). Equal-spacing tests stay exact too. */
static int64_t disp_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t disp_sub(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a - (uint64_t)b);
}

static void ir_free(ir_t *n)
{
    if (!n) return;
    ir_free(n->child);
    for (int64_t i = 0; n->members && i < n->count; i++) ir_free(n->members[i]);
    free(n->members);
    free(n->bdisp);
    free(n->blen);
    free(n);
}

/* A type tree is a DAG (a struct may use one child in many members, that child again, ...) while
 * the IR is a tree, so a small type can expand exponentially. Building stops at
 * GCOMM_TYPE_MAX_NODES nodes (4M by default: a flattened layout of about 300 MB) and the commit is
 * refused instead of running for hours. */
static _Thread_local int64_t gcommi_ir_nodes, gcommi_ir_max_nodes;

static ir_t *ir_new(int kind, int64_t disp, int64_t size, int64_t unit)
{
    if (++gcommi_ir_nodes > gcommi_ir_max_nodes) return NULL;
    ir_t *n = calloc(1, sizeof(*n));
    if (!n) return NULL;
    n->kind = kind;
    n->disp = disp;
    n->size = size;
    n->unit = unit;
    n->count = 1;
    return n;
}

/* The IR builders below take ownership of their node arguments and return NULL either for an
 * empty result or on allocation failure; *oom tells the two apart. */

/* count children spaced by stride, at disp. */
static ir_t *ir_vec(int64_t count, int64_t stride, ir_t *child, int64_t disp, int *oom)
{
    if (!child || count == 0) {
        ir_free(child);
        return NULL;
    }
    if (count == 1) {
        child->disp = disp_add(child->disp, disp);
        return child;
    }
    if (child->kind == GCOMMI_DL_RUN && child->size == stride) {
        child->size *= count;
        child->disp = disp_add(child->disp, disp);
        return child;
    }
    int64_t span;
    if (child->kind == GCOMMI_DL_VEC &&
        !__builtin_mul_overflow(child->count, child->stride, &span) && stride == span) {
        child->count *= count;
        child->size *= count;
        child->disp = disp_add(child->disp, disp);
        return child;
    }
    ir_t *n = ir_new(GCOMMI_DL_VEC, disp, count * child->size, child->unit);
    if (!n) {
        ir_free(child);
        *oom = 1;
        return NULL;
    }
    n->count = count;
    n->stride = stride;
    n->child = child;
    return n;
}

/* Same shape (ignoring the top-level displacement). */
static int ir_same_shape(const ir_t *a, const ir_t *b)
{
    if (a->kind != b->kind || a->size != b->size || a->count != b->count) return 0;
    switch (a->kind) {
    case GCOMMI_DL_RUN: return 1;
    case GCOMMI_DL_VEC:
        return a->stride == b->stride && a->child->disp == b->child->disp &&
               ir_same_shape(a->child, b->child);
    case GCOMMI_DL_IDX:
        return a->stride == b->stride && a->child->disp == b->child->disp &&
               ir_same_shape(a->child, b->child) &&
               !memcmp(a->bdisp, b->bdisp, (size_t)a->count * sizeof(int64_t)) &&
               !memcmp(a->blen, b->blen, (size_t)a->count * sizeof(int64_t));
    default:
        for (int64_t i = 0; i < a->count; i++)
            if (a->members[i]->disp != b->members[i]->disp ||
                !ir_same_shape(a->members[i], b->members[i]))
                return 0;
        return 1;
    }
}

/* Whether m >= 2 blocks step evenly: each block's displacement and length differ from the block
 * before's by what the second block's differ from the first's. Displacement differences wrap
 * (disp_sub): the blocks' places are then bdisp[0] + b * step in the same wrapping arithmetic. */
static int idx_even_steps(const int64_t *bdisp, const int64_t *blen, int64_t m)
{
    const int64_t dd = disp_sub(bdisp[1], bdisp[0]), dl = blen[1] - blen[0];
    for (int64_t b = 2; b < m; b++)
        if (disp_sub(bdisp[b], bdisp[b - 1]) != dd || blen[b] - blen[b - 1] != dl) return 0;
    return 1;
}

/* Blocks of children of one shape: block b holds blen[b] children spaced by ext at bdisp[b].
 * Takes ownership of bdisp, blen and child. */
static ir_t *ir_idx(int64_t nb, int64_t *bdisp, int64_t *blen, ir_t *child, int64_t ext,
                    int64_t disp, int *oom)
{
    int64_t m = 0;
    if (child) {
        for (int64_t b = 0; b < nb; b++) {
            if (blen[b] == 0) continue;
            int64_t end;
            if (m > 0 && !__builtin_mul_overflow(blen[m - 1], ext, &end) &&
                !__builtin_add_overflow(end, bdisp[m - 1], &end) && bdisp[b] == end) {
                blen[m - 1] += blen[b];
                continue;
            }
            bdisp[m] = bdisp[b];
            blen[m] = blen[b];
            m++;
        }
    }
    if (m == 0) {
        free(bdisp);
        free(blen);
        ir_free(child);
        return NULL;
    }
    if (m == 1) {
        int64_t d = bdisp[0], l = blen[0];
        free(bdisp);
        free(blen);
        return ir_vec(l, ext, child, disp_add(disp, d), oom);
    }
    /* equal lengths at an even step: a vector; changing ones from 3 blocks: an affine IDX */
    const int even = idx_even_steps(bdisp, blen, m);
    if (even && blen[1] == blen[0]) {
        int64_t d0 = bdisp[0], step = disp_sub(bdisp[1], bdisp[0]), l = blen[0];
        free(bdisp);
        free(blen);
        ir_t *block = ir_vec(l, ext, child, 0, oom);
        return ir_vec(m, step, block, disp_add(disp, d0), oom);
    }
    int64_t total = 0;
    for (int64_t b = 0; b < m; b++) total += blen[b];
    ir_t *n = ir_new(GCOMMI_DL_IDX, disp, total * child->size, child->unit);
    if (!n) {
        free(bdisp);
        free(blen);
        ir_free(child);
        *oom = 1;
        return NULL;
    }
    n->count = m;
    n->stride = ext;
    n->child = child;
    n->bdisp = bdisp;
    n->blen = blen;
    n->affine = even && m >= 3;
    return n;
}

/* Members of different shapes, in order (a struct). Takes ownership of members[]. */
static ir_t *ir_seq(int64_t nm, ir_t **members, int64_t disp, int *oom)
{
    int64_t m = 0;
    for (int64_t i = 0; i < nm; i++) {
        ir_t *x = members[i];
        if (!x) continue;
        ir_t *prev = m > 0 ? members[m - 1] : NULL;
        if (prev && prev->kind == GCOMMI_DL_RUN && x->kind == GCOMMI_DL_RUN &&
            x->disp == disp_add(prev->disp, prev->size)) {
            prev->size += x->size;
            prev->unit = gcommi_gcd64(prev->unit, x->unit);
            ir_free(x);
            continue;
        }
        members[m++] = x;
    }
    if (m == 0) {
        free(members);
        return NULL;
    }
    if (m == 1) {
        ir_t *x = members[0];
        free(members);
        x->disp = disp_add(x->disp, disp);
        return x;
    }

    /* All members of one shape: blocks over that shape (regular spacing becomes a vector). */
    int all_runs = 1;
    for (int64_t i = 0; i < m && all_runs; i++) all_runs = members[i]->kind == GCOMMI_DL_RUN;
    int same = !all_runs; /* runs are better described as byte blocks (dense, see below) */
    for (int64_t i = 1; i < m && same; i++) same = ir_same_shape(members[0], members[i]);
    if (same || all_runs) {
        int64_t *bdisp = malloc((size_t)m * sizeof(int64_t));
        int64_t *blen = malloc((size_t)m * sizeof(int64_t));
        int64_t unit = members[0]->unit;
        for (int64_t i = 1; i < m; i++) unit = gcommi_gcd64(unit, members[i]->unit);
        ir_t *child = same ? members[0] : ir_new(GCOMMI_DL_RUN, 0, unit, unit);
        if (!bdisp || !blen || !child) {
            free(bdisp);
            free(blen);
            if (!same) ir_free(child);
            for (int64_t i = 0; i < m; i++) ir_free(members[i]);
            free(members);
            *oom = 1;
            return NULL;
        }
        for (int64_t i = 0; i < m; i++) {
            bdisp[i] = disp_sub(members[i]->disp, same ? members[0]->disp : 0);
            blen[i] = same ? 1 : members[i]->size / unit;
        }
        int64_t base = same ? members[0]->disp : 0;
        for (int64_t i = same ? 1 : 0; i < m; i++) ir_free(members[i]);
        free(members);
        if (same) child->disp = 0;
        /* Same-shape children: extent 0 never merges distinct blocks (block length 1 each). */
        return ir_idx(m, bdisp, blen, child, same ? 0 : unit, disp_add(disp, base), oom);
    }

    ir_t *n = ir_new(GCOMMI_DL_SEQ, disp, 0, members[0]->unit);
    if (!n) {
        for (int64_t i = 0; i < m; i++) ir_free(members[i]);
        free(members);
        *oom = 1;
        return NULL;
    }
    for (int64_t i = 0; i < m; i++) {
        n->size += members[i]->size;
        n->unit = gcommi_gcd64(n->unit, members[i]->unit);
    }
    n->count = m;
    n->members = members;
    return n;
}

static ir_t *ir_of_blocks(gcomm_datatype t, gcomm_datatype child, int *oom);

/* The type whose layout t has: t without its dups (a dup has its original's type map, bounds and
 * extent), so that struct members that are dups of one type count as one type below. */
static gcomm_datatype ir_layout_type(gcomm_datatype t)
{
    while (!t->predefined && t->combiner == GCOMMI_COMBINER_DUP) t = t->child;
    return t;
}

/* IR of one instance of type t (NULL when it holds no data or on allocation failure). */
static ir_t *ir_of_type(gcomm_datatype t, int *oom)
{
    if (*oom || t->bounds.size == 0) return NULL; /* after a failure, stop walking */
    if (t->predefined) {
        ir_t *n = ir_new(GCOMMI_DL_RUN, 0, t->bounds.size, t->bounds.size);
        if (!n) *oom = 1;
        return n;
    }
    switch (t->combiner) {
    case GCOMMI_COMBINER_RESIZED:
    case GCOMMI_COMBINER_DUP: return ir_of_type(t->child, oom);
    case GCOMMI_COMBINER_CONTIGUOUS:
        return ir_vec(t->blocklen, gcommi_type_extent(t->child), ir_of_type(t->child, oom), 0, oom);
    case GCOMMI_COMBINER_VECTOR: {
        int64_t ext = gcommi_type_extent(t->child);
        ir_t *block = ir_vec(t->blocklen, ext, ir_of_type(t->child, oom), 0, oom);
        return ir_vec(t->nblocks, t->stride, block, 0, oom);
    }
    case GCOMMI_COMBINER_INDEXED:
        return ir_of_blocks(t, t->child, oom);
    default: { /* GCOMMI_COMBINER_STRUCT */
        /* Members all of one type (dups of it included) are blocks over one child: its IR is
         * built once. Members of different types are built one by one, so a struct that mixes
         * types at every level of a nesting grows its IR exponentially, up to the node limit. */
        int64_t b = 1;
        gcomm_datatype first = t->nblocks > 0 ? ir_layout_type(t->types[0]) : NULL;
        while (b < t->nblocks && ir_layout_type(t->types[b]) == first) b++;
        if (t->nblocks > 0 && b == t->nblocks) return ir_of_blocks(t, first, oom);
        ir_t **members = calloc(t->nblocks > 0 ? (size_t)t->nblocks : 1, sizeof(ir_t *));
        if (!members) {
            *oom = 1;
            return NULL;
        }
        for (b = 0; b < t->nblocks; b++) {
            gcomm_datatype c = t->types[b];
            members[b] = ir_vec(t->blocklens[b], gcommi_type_extent(c), ir_of_type(c, oom),
                                t->displs[b], oom);
        }
        return ir_seq(t->nblocks, members, 0, oom);
    }
    }
}

/* IR of a type whose blocks (t->displs, t->blocklens) all hold instances of `child`. */
static ir_t *ir_of_blocks(gcomm_datatype t, gcomm_datatype child, int *oom)
{
    int64_t nb = t->nblocks;
    int64_t *bdisp = malloc((size_t)(nb ? nb : 1) * sizeof(int64_t));
    int64_t *blen = malloc((size_t)(nb ? nb : 1) * sizeof(int64_t));
    if (!bdisp || !blen) {
        free(bdisp);
        free(blen);
        *oom = 1;
        return NULL;
    }
    memcpy(bdisp, t->displs, (size_t)nb * sizeof(int64_t));
    memcpy(blen, t->blocklens, (size_t)nb * sizeof(int64_t));
    return ir_idx(nb, bdisp, blen, ir_of_type(child, oom), gcommi_type_extent(child), 0, oom);
}

/* ---- flattening ------------------------------------------------------------------------------- */

static void ir_measure(const ir_t *n, int32_t *nnodes, int64_t *naux, int32_t *depth)
{
    int32_t d = 0;
    (*nnodes)++;
    if (n->kind == GCOMMI_DL_VEC || n->kind == GCOMMI_DL_IDX) {
        ir_measure(n->child, nnodes, naux, &d);
        if (n->kind == GCOMMI_DL_IDX) *naux += 2 * n->count + 1;
    } else if (n->kind == GCOMMI_DL_SEQ) {
        *naux += 2 * n->count + 1;
        for (int64_t i = 0; i < n->count; i++) {
            int32_t dm = 0;
            ir_measure(n->members[i], nnodes, naux, &dm);
            if (dm > d) d = dm;
        }
    }
    *depth = d + 1;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* Writes n at *next_node and its subtree after it; returns its index. Accumulates nruns. */
static int32_t ir_emit(const ir_t *n, gcommi_layout_t *L, int32_t *next_node, int64_t *next_aux,
                       int64_t *nruns)
{
    int32_t idx = (*next_node)++;
    gcommi_dl_t *d = &L->nodes[idx];
    *d = (gcommi_dl_t){.kind = n->kind, .child = -1, .count = n->count, .disp = n->disp,
                       .size = n->size, .stride = n->stride, .child_size = n->size,
                       .unit = n->unit, .aux = -1};
    int64_t runs = 1;
    if (n->kind == GCOMMI_DL_VEC) {
        int64_t child_runs = 0;
        int32_t c = ir_emit(n->child, L, next_node, next_aux, &child_runs);
        d = &L->nodes[idx];
        d->child = c;
        d->child_size = n->child->size;
        runs = sat_mul(n->count, child_runs);
    } else if (n->kind == GCOMMI_DL_IDX) {
        int64_t *displs = L->aux + *next_aux, *prefix = displs + n->count;
        d->aux = *next_aux;
        *next_aux += 2 * n->count + 1;
        prefix[0] = 0;
        for (int64_t b = 0; b < n->count; b++) {
            displs[b] = n->bdisp[b];
            prefix[b + 1] = prefix[b] + n->blen[b];
        }
        if (n->affine) d->flags |= GCOMMI_DL_AFFINE;
        int64_t child_runs = 0;
        int32_t c = ir_emit(n->child, L, next_node, next_aux, &child_runs);
        d = &L->nodes[idx];
        d->child = c;
        d->child_size = n->child->size;
        int dense = n->child->kind == GCOMMI_DL_RUN && n->child->disp == 0 &&
                    n->child->size == n->stride;
        runs = dense ? n->count : sat_mul(prefix[n->count], child_runs);
    } else if (n->kind == GCOMMI_DL_SEQ) {
        int64_t base = *next_aux;
        d->aux = base;
        *next_aux += 2 * n->count + 1;
        int64_t *prefix = L->aux + base, *member = prefix + n->count + 1;
        prefix[0] = 0;
        runs = 0;
        for (int64_t i = 0; i < n->count; i++) {
            int64_t member_runs = 0;
            member[i] = ir_emit(n->members[i], L, next_node, next_aux, &member_runs);
            prefix[i + 1] = prefix[i] + n->members[i]->size;
            runs = runs + member_runs < runs ? INT64_MAX : runs + member_runs;
        }
    }
    *nruns = runs;
    return idx;
}

int gcommi_layout_build(gcomm_datatype type, gcommi_layout_t **layout)
{
    int oom = 0;
    gcommi_ir_nodes = 0;
    const size_t max_nodes = gcommi_config()->type_max_nodes;
    gcommi_ir_max_nodes =
        max_nodes == 0 || max_nodes > (size_t)INT64_MAX ? INT64_MAX : (int64_t)max_nodes;
    ir_t *root = ir_of_type(type, &oom);
    int too_big = gcommi_ir_nodes > gcommi_ir_max_nodes;
    if (oom) {
        ir_free(root);
        if (too_big)
            return GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED,
                                "the normalised form of the type exceeds %lld nodes (a struct "
                                "that reuses differently shaped children at many levels; "
                                "GCOMM_TYPE_MAX_NODES)",
                                (long long)gcommi_ir_max_nodes);
        return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "cannot allocate the normalised form of the type");
    }
    if (!root) { /* no data: a single empty run */
        root = ir_new(GCOMMI_DL_RUN, 0, 0, 1);
        if (!root) return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "cannot allocate a layout");
    }
    int32_t nnodes = 0, depth = 0;
    int64_t naux = 0;
    ir_measure(root, &nnodes, &naux, &depth);
    size_t bytes = sizeof(gcommi_layout_t) + (size_t)nnodes * sizeof(gcommi_dl_t) +
                   (size_t)naux * sizeof(int64_t);
    gcommi_layout_t *L = calloc(1, bytes);
    if (!L) {
        ir_free(root);
        return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "cannot allocate a layout of %zu bytes", bytes);
    }
    L->version = GCOMMI_LAYOUT_VERSION;
    L->nnodes = nnodes;
    L->depth = depth;
    L->naux = naux;
    L->size = type->bounds.size;
    L->extent = gcommi_type_extent(type);
    L->nodes = (gcommi_dl_t *)(L + 1);
    L->aux = (int64_t *)(L->nodes + nnodes);
    int32_t next_node = 0;
    int64_t next_aux = 0;
    ir_emit(root, L, &next_node, &next_aux, &L->nruns);
    if (L->size == 0) L->nruns = 0;
    ir_free(root);
    *layout = L;
    return GCOMM_SUCCESS;
}

void gcommi_layout_free(gcommi_layout_t *layout)
{
    /* Predefined layouts are static; derived ones are one allocation. */
    free(layout);
}
