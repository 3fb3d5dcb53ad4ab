/* Type signatures: the sequence of basic types of a type, compared lazily. A run iterator walks
 * the block lists (type.h) with an explicit stack and emits (basic type, count) runs; a subtree
 * whose elements all share one basic type is emitted as one run without being walked, so the
 * common homogeneous types cost O(1) and mixed ones O(number of runs). */
#include <stdlib.h>

#include "common/error.h"
#include "datatype/type.h"

typedef struct {
    gcomm_datatype t;
    int64_t b; /* current block */
    int64_t j; /* instances of the block's child already done */
} sig_frame_t;

typedef struct {
    sig_frame_t *stack;
    int sp;            /* top of stack, -1 when empty */
    gcomm_datatype root;
    uint64_t roots;    /* root instances not started yet */
} sig_iter_t;

static int sig_iter_init(sig_iter_t *it, gcomm_datatype root, size_t count)
{
    it->stack = malloc((size_t)(root->depth + 1) * sizeof(sig_frame_t));
    if (!it->stack) return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "cannot allocate a signature walk");
    it->sp = -1;
    it->root = root;
    it->roots = count;
    return GCOMM_SUCCESS;
}

/* Next run of elements: returns 0 at the end. */
static int sig_iter_next(sig_iter_t *it, int *id, uint64_t *n)
{
    for (;;) {
        if (it->sp < 0) {
            gcomm_datatype r = it->root;
            if (it->roots == 0 || r->nelems == 0) return 0;
            if (r->homog_id >= 0) { /* every remaining root instance at once */
                *id = r->homog_id;
                *n = it->roots * (uint64_t)r->nelems;
                it->roots = 0;
                return 1;
            }
            it->roots--;
            it->stack[++it->sp] = (sig_frame_t){r, 0, 0};
        }
        sig_frame_t *f = &it->stack[it->sp];
        if (f->b >= f->t->nblocks) {
            it->sp--;
            continue;
        }
        int64_t len = gcommi_blk_len(f->t, f->b);
        gcomm_datatype c = gcommi_blk_type(f->t, f->b);
        if (f->j >= len || c->nelems == 0) {
            f->b++;
            f->j = 0;
            continue;
        }
        if (c->homog_id >= 0) { /* the rest of this block in one run */
            *id = c->homog_id;
            *n = (uint64_t)(len - f->j) * (uint64_t)c->nelems;
            f->j = len;
            return 1;
        }
        f->j++;
        it->stack[++it->sp] = (sig_frame_t){c, 0, 0};
    }
}

int gcomm_type_match(gcomm_datatype sendtype, size_t sendcount, gcomm_datatype recvtype,
                     size_t recvcount, int *match)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(gcommi_type_check(sendtype, "sendtype"));
    GCOMMI_CHECK(gcommi_type_check(recvtype, "recvtype"));
    if (!match) return GCOMMI_ERROR(GCOMM_ERR_ARG, "match is NULL");

    /* Both homogeneous: compare the type and the element counts. */
    if (sendtype->homog_id >= 0 && recvtype->homog_id >= 0) {
        unsigned __int128 ns = (unsigned __int128)sendcount * (uint64_t)sendtype->nelems;
        unsigned __int128 nr = (unsigned __int128)recvcount * (uint64_t)recvtype->nelems;
        *match = ns == 0 || (sendtype->homog_id == recvtype->homog_id && ns <= nr);
        return GCOMM_SUCCESS;
    }

    sig_iter_t s, r;
    GCOMMI_CHECK(sig_iter_init(&s, sendtype, sendcount));
    int rc = sig_iter_init(&r, recvtype, recvcount);
    if (rc) {
        free(s.stack);
        return rc;
    }
    int result = 1, sid = 0, rid = 0;
    uint64_t sn = 0, rn = 0;
    for (;;) {
        if (sn == 0 && !sig_iter_next(&s, &sid, &sn)) break; /* send exhausted: a prefix */
        if (rn == 0 && !sig_iter_next(&r, &rid, &rn)) {       /* receive too short */
            result = 0;
            break;
        }
        if (sid != rid) {
            result = 0;
            break;
        }
        uint64_t take = sn < rn ? sn : rn;
        sn -= take;
        rn -= take;
    }
    free(s.stack);
    free(r.stack);
    *match = result;
    return GCOMM_SUCCESS;
}
