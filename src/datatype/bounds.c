/* MPI bounds with Open MPI's exact arithmetic (see bounds.h for why). Overflow of any 63-bit
 * quantity is recorded in the accumulator instead of wrapping silently; constructors turn it into
 * GCOMM_ERR_OVERFLOW. */
#include "datatype/bounds.h"

static int64_t add64(gcommi_bounds_t *acc, int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) {
        acc->overflow = 1;
        return 0;
    }
    return r;
}

static int64_t sub64(gcommi_bounds_t *acc, int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) {
        acc->overflow = 1;
        return 0;
    }
    return r;
}

static int64_t mul64(gcommi_bounds_t *acc, int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        acc->overflow = 1;
        return 0;
    }
    return r;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

void gcommi_bounds_init(gcommi_bounds_t *acc)
{
    *acc = (gcommi_bounds_t){0};
    acc->lb = acc->true_lb = INT64_MAX;
    acc->ub = acc->true_ub = INT64_MIN;
    acc->align = 1;
}

void gcommi_bounds_basic(gcommi_bounds_t *b, int64_t size, int32_t align)
{
    *b = (gcommi_bounds_t){.size = size, .lb = 0, .ub = size, .true_lb = 0, .true_ub = size,
                           .align = align, .touched = 1};
}

void gcommi_bounds_add(gcommi_bounds_t *acc, const gcommi_bounds_t *child, int64_t count,
                       int64_t disp, int64_t extent)
{
    if (count == 0) return; /* MPI: a zero count adds no entries and leaves the bounds alone */
    acc->overflow |= child->overflow;

    /* Bounds of the count instances taken together. */
    int64_t last = add64(acc, disp, mul64(acc, extent, count - 1));
    int64_t lo = min64(disp, last), hi = max64(disp, last);
    int64_t lb = add64(acc, lo, child->lb);
    int64_t ub = add64(acc, hi, child->ub);
    const int64_t block_lb = lb, block_ub = ub;

    /* Sticky markers: an explicit bound on one side only wins; otherwise take the extreme. */
    if (acc->user_lb != child->user_lb) {
        if (acc->user_lb) lb = acc->lb;
        acc->user_lb = 1;
    } else {
        lb = min64(acc->lb, lb);
    }
    if (acc->user_ub != child->user_ub) {
        if (acc->user_ub) ub = acc->ub;
        acc->user_ub = 1;
    } else {
        ub = max64(acc->ub, ub);
    }
    acc->lb = lb;
    acc->ub = ub;
    if (child->align > acc->align) acc->align = child->align;

    /* MPI's epsilon: round the extent up to a multiple of the alignment, after every add. */
    int64_t span;
    if (__builtin_sub_overflow(acc->ub, acc->lb, &span)) acc->overflow = 1;
    else if (!acc->user_ub && span % acc->align != 0)
        acc->ub = add64(acc, acc->ub, acc->align - span % acc->align);
    acc->touched = 1;
    if (child->size == 0) return; /* markers only: no data, true bounds unchanged */
    /* Only now: an empty child's true bounds may be an unfinished accumulator's sentinels. */
    int64_t true_lb = sub64(acc, block_lb, sub64(acc, child->lb, child->true_lb));
    int64_t true_ub = sub64(acc, block_ub, sub64(acc, child->ub, child->true_ub));
    if (true_lb > true_ub) {
        int64_t t = true_lb;
        true_lb = true_ub;
        true_ub = t;
    }

    acc->size = add64(acc, acc->size, mul64(acc, count, child->size));
    acc->true_lb = min64(acc->true_lb, true_lb);
    acc->true_ub = max64(acc->true_ub, true_ub);
}

void gcommi_bounds_finish(gcommi_bounds_t *acc)
{
    if (!acc->touched) {
        acc->lb = acc->ub = 0;
        acc->user_lb = acc->user_ub = 0;
    }
    if (acc->size == 0) acc->true_lb = acc->true_ub = 0;
    /* Extents must stay representable too. */
    int64_t span;
    if (__builtin_sub_overflow(acc->ub, acc->lb, &span) ||
        __builtin_sub_overflow(acc->true_ub, acc->true_lb, &span))
        acc->overflow = 1;
}

void gcommi_bounds_resize(gcommi_bounds_t *b, int64_t lb, int64_t extent)
{
    b->lb = lb;
    if (__builtin_add_overflow(lb, extent, &b->ub)) b->overflow = 1;
    b->user_lb = b->user_ub = 1;
    b->touched = 1;
}
