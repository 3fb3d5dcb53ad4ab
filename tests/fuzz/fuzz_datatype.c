/* Fuzzes the datatype engine: constructors (bad arguments included), commit, free, queries, and
 * pack / unpack / pack_range / unpack_range / copy on host memory, checking invariants.
 *
 * The input is a little program: a sequence of operations on a pool of type handles, each
 * operation decoding its arguments from the following bytes (missing bytes read as 0). Checked:
 *   - every constructor either succeeds or returns a known GCOMM_ERR_* code with a detail string,
 *     leaving *newtype unchanged on error; it must fail when a count is negative, an array is NULL
 *     with a nonzero count, an old type is NULL, or the result's size overflows 63 bits;
 *   - on success the size is what the arguments say (count x blocklength x old size, etc.);
 *   - commit of a live type succeeds, or is refused with GCOMM_ERR_UNSUPPORTED where the type's
 *     normal form would pass the engine's node limit, leaving the handle and the type uncommitted;
 *   - queries on a live type succeed; on NULL they fail and leave the outputs unchanged;
 *   - pack of an uncommitted type fails with GCOMM_ERR_NOT_COMMITTED;
 *   - pack writes exactly gcomm_type_size * count bytes at *position, all taken from the type map;
 *     a buffer one byte short gives GCOMM_ERR_TRUNCATE and writes nothing;
 *   - pack_range pieces concatenate to the whole pack; ranges past the end fail;
 *   - unpack of the pack writes only bytes of the type map (each with the value pack read there),
 *     and packing again reproduces the stream; unpack_range in pieces and gcomm_copy give the same
 *     memory; for a type map without overlaps, unpack then pack of any stream is the identity;
 *   - everything is freed (LeakSanitizer checks the library's reference counting).
 * Types whose memory span or packed size exceeds a limit are not packed.
 *
 * Built two ways (tests/fuzz/CMakeLists.txt): fuzz_datatype, a libFuzzer target (clang,
 * -fsanitize=fuzzer,address,undefined); and with GCOMM_FUZZ_STANDALONE a plain program that runs
 * the files named on its command line, or -runs=N random inputs from -seed=S. With FUZZ_TRACE=1 in
 * the environment both print every call they make (to read what a crashing input does). */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcomm/gcomm.h"

#define NSLOTS 8
#define MAX_OPS 48
#define MAX_ARRAY 4096        /* longest array argument built */
#define MAX_DIMS 12           /* subarray / darray arrays longer than this are passed NULL */
#define MAX_SPAN (1 << 20)    /* memory a packed type may touch */
#define MAX_PACKED (1 << 18)  /* bytes a pack may produce */
#define MAX_ADDR (1ll << 24)  /* |offset| of the touched memory from the buffer pointer */
#define MAX_PACK_TESTS 6      /* per input */
#define MAX_PIECES 48
#define MAX_MATCH_ELEMS (1 << 16) /* gcomm_type_match only on types of at most this many elements */

typedef __int128 wide_t;
#define WIDE_BIG ((wide_t)1 << 100) /* saturation: anything this large has overflowed */
#define SIZE_LIMIT ((wide_t)INT64_MAX)

#define FAIL(...)                                                                              \
    do {                                                                                       \
        fprintf(stderr, "fuzz_datatype: invariant violated at %s:%d: ", __FILE__, __LINE__);  \
        fprintf(stderr, __VA_ARGS__);                                                          \
        fprintf(stderr, "\n");                                                                 \
        abort();                                                                               \
    } while (0)

/* What the inputs reached (printed by the standalone driver). */
static long stat_created, stat_refused, stat_packed, stat_skipped, stat_commit_refused;

/* ---- input decoding ------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p;
    size_t n;
} rd_t;

static uint8_t rd_u8(rd_t *r)
{
    if (r->n == 0) return 0;
    r->n--;
    return *r->p++;
}

static uint64_t rd_u64(rd_t *r, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)rd_u8(r) << (8 * i);
    return v;
}

/* An int, mostly small, sometimes negative or extreme. */
static int rd_int(rd_t *r)
{
    uint8_t k = rd_u8(r);
    switch (k & 15) {
    case 0: case 1: case 2: case 3: case 4: case 5: return (k >> 4) & 7;
    case 6: case 7: return (k >> 4);
    case 8: return -(int)((k >> 4) & 7) - 1;
    case 9: return (int)(rd_u64(r, 2) & 1023);
    case 10: {
        static const int extreme[] = {INT_MAX, INT_MIN, INT_MAX - 1, 1 << 30, -(1 << 30),
                                      65536,   1 << 20, 46341,       1 << 16, 3037000500 / 2};
        return extreme[(k >> 4) % 10];
    }
    case 11: return (int)(uint32_t)rd_u64(r, 4);
    case 12: return 1;
    default: return (k >> 4) & 3;
    }
}

/* A byte offset or stride, mostly small multiples of 1, 4 or 8, sometimes extreme. */
static ptrdiff_t rd_disp(rd_t *r)
{
    uint8_t k = rd_u8(r);
    switch (k & 7) {
    case 0: case 1: return (ptrdiff_t)((k >> 3) & 15) * 8;
    case 2: return (ptrdiff_t)((k >> 3) & 31) - 8;
    case 3: return -(ptrdiff_t)((k >> 3) & 15) * 4;
    case 4: {
        static const ptrdiff_t extreme[] = {PTRDIFF_MAX, PTRDIFF_MIN, PTRDIFF_MAX / 2,
                                            (ptrdiff_t)1 << 40, -((ptrdiff_t)1 << 40),
                                            (ptrdiff_t)1 << 31, 4096, -4096};
        return extreme[(k >> 3) % 8];
    }
    case 5: return (ptrdiff_t)(int64_t)rd_u64(r, 8);
    default: return (ptrdiff_t)(int16_t)rd_u64(r, 2);
    }
}

/* ---- the handle pool ------------------------------------------------------------------------ */

typedef struct {
    gcomm_datatype t;
    int committed; /* 1 yes, 0 no, -1 unknown (a dup of a committed type) */
} slot_t;

static const gcomm_datatype predefined[] = {
#define PREDEF(name, size, align) GCOMM_##name,
    GCOMM_BASIC_TYPE_LIST(PREDEF)
#undef PREDEF
};
#define NPREDEF (sizeof(predefined) / sizeof(predefined[0]))

typedef struct {
    slot_t slot[NSLOTS];
    int pack_tests;
    uint64_t rng;
} state_t;

/* ---- tracing (FUZZ_TRACE=1) ----------------------------------------------------------------- */

static int trace_on = -1;
static const state_t *trace_state;

static void tracef(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void tracef(const char *fmt, ...)
{
    if (trace_on < 0) trace_on = getenv("FUZZ_TRACE") != NULL;
    if (!trace_on) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* A type's name for the trace: GCOMM_INT, slot3 or NULL (in one of 4 rotating buffers). */
static const char *tname(gcomm_datatype t)
{
    static const char *const names[] = {
#define PREDEF_NAME(name, size, align) "GCOMM_" #name,
        GCOMM_BASIC_TYPE_LIST(PREDEF_NAME)
#undef PREDEF_NAME
    };
    static char buf[4][24];
    static int next;
    char *b = buf[next++ % 4];
    if (!t) return "NULL";
    for (size_t i = 0; i < NPREDEF; i++)
        if (predefined[i] == t) return names[i];
    for (int i = 0; trace_state && i < NSLOTS; i++)
        if (trace_state->slot[i].t == t) {
            snprintf(b, sizeof(buf[0]), "slot%d", i);
            return b;
        }
    return "(type)";
}

/* The first entries of an array argument, e.g. "[3,-1,7,...]" or "NULL". */
static const char *tarr(const int *ai, const ptrdiff_t *ap, int n)
{
    static char buf[4][96];
    static int next;
    char *b = buf[next++ % 4];
    if (!ai && !ap) return "NULL";
    int len = snprintf(b, sizeof(buf[0]), "[");
    for (int i = 0; i < n && i < 4; i++)
        len += snprintf(b + len, sizeof(buf[0]) - (size_t)len, "%s%lld", i ? "," : "",
                        ai ? (long long)ai[i] : (long long)ap[i]);
    snprintf(b + len, sizeof(buf[0]) - (size_t)len, "%s]", n > 4 ? ",..." : "");
    return b;
}

static int is_predefined(gcomm_datatype t)
{
    for (size_t i = 0; i < NPREDEF; i++)
        if (predefined[i] == t) return 1;
    return 0;
}

/* A type argument: a predefined type, a pool slot (possibly empty, i.e. NULL). */
static gcomm_datatype rd_type(rd_t *r, const state_t *st, int *committed)
{
    uint8_t k = rd_u8(r);
    if (k & 0x80) {
        if (committed) *committed = 1;
        return predefined[(k & 0x7f) % NPREDEF];
    }
    const slot_t *s = &st->slot[k % NSLOTS];
    if (committed) *committed = s->committed;
    return s->t;
}

static void slot_release(slot_t *s)
{
    if (s->t && !is_predefined(s->t)) {
        gcomm_datatype t = s->t;
        int rc = gcomm_type_free(&t);
        if (rc != GCOMM_SUCCESS) FAIL("gcomm_type_free of a live type: %s", gcomm_error_string(rc));
        if (t != GCOMM_DATATYPE_NULL) FAIL("gcomm_type_free did not set the handle to NULL");
    }
    s->t = GCOMM_DATATYPE_NULL;
    s->committed = 0;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void fill_nonzero(unsigned char *p, size_t n, uint64_t *rng)
{
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(1 + rng_next(rng) % 255);
}

/* ---- checks shared by all calls ------------------------------------------------------------- */

static void check_error(int rc, const char *what)
{
    if (rc == GCOMM_SUCCESS) return;
    if (strcmp(gcomm_error_string(rc), "unknown status") == 0)
        FAIL("%s returned %d, not a GCOMM_ERR_* code", what, rc);
    const char *d = gcomm_last_error_detail();
    if (!d || !d[0]) FAIL("%s returned %s without a detail", what, gcomm_error_string(rc));
}

static wide_t sat(wide_t v) { return v > WIDE_BIG ? WIDE_BIG : v < -WIDE_BIG ? -WIDE_BIG : v; }

static wide_t type_size_of(gcomm_datatype t)
{
    size_t s = 0;
    if (!t) return -1;
    int rc = gcomm_type_size(t, &s);
    if (rc != GCOMM_SUCCESS) FAIL("gcomm_type_size of a live type failed: %s", gcomm_error_string(rc));
    return (wide_t)s;
}

/* The one way a commit of a valid type may fail: its normalised form would exceed the engine's
 * node limit (GCOMM_ERR_UNSUPPORTED, src/datatype/commit.c), as a struct whose members are
 * differently shaped instances of one type at many levels does (its normal form is a tree, the
 * type a DAG: 6 members over 9 levels make 6^9 nodes; tests/fuzz/regressions/commit-node-limit).
 * The handle must then be unchanged and the type stay uncommitted (the slot keeps committed = 0,
 * so a pack of it must fail with GCOMM_ERR_NOT_COMMITTED). Returns 1 for such a refusal. */
static int commit_refused(int rc, gcomm_datatype before, gcomm_datatype after)
{
    if (rc != GCOMM_ERR_UNSUPPORTED || !before) return 0;
    check_error(rc, "gcomm_type_commit");
    const char *d = gcomm_last_error_detail();
    if (!d || !strstr(d, "GCOMM_TYPE_MAX_NODES")) /* no other refusal of a valid type */
        FAIL("commit refused, but not at the node limit: %s", d ? d : "(no detail)");
    if (after != before) FAIL("a refused commit changed the handle");
    tracef("  -> commit refused: %s", d);
    stat_commit_refused++;
    return 1;
}

/* expect: the size the arguments imply (-1: no expectation), or -2 when the arguments are
 * invalid and the call must fail. */
static void finish_constructor(state_t *st, rd_t *r, const char *what, int rc,
                               gcomm_datatype result, gcomm_datatype sentinel, int null_out,
                               wide_t expect, int committed_after)
{
    check_error(rc, what);
    tracef("  -> %s%s%s", gcomm_error_string(rc), rc ? ": " : "", rc ? gcomm_last_error_detail() : "");
    if (rc == GCOMM_SUCCESS) stat_created++;
    else stat_refused++;
    if (null_out) {
        if (rc == GCOMM_SUCCESS) FAIL("%s succeeded with newtype == NULL", what);
        return;
    }
    if (expect > SIZE_LIMIT) expect = -2;
    if (rc != GCOMM_SUCCESS) {
        if (result != sentinel) FAIL("%s failed (%s) but changed *newtype", what, gcomm_error_string(rc));
        return;
    }
    if (expect == -2) FAIL("%s succeeded on invalid arguments", what);
    if (!result || result == sentinel || is_predefined(result))
        FAIL("%s succeeded without a new handle", what);
    wide_t size = type_size_of(result);
    if (expect >= 0 && size != expect)
        FAIL("%s: size %lld, the arguments imply %lld", what, (long long)size, (long long)expect);
    uint8_t k = rd_u8(r);
    slot_t *s = &st->slot[k % NSLOTS];
    slot_release(s);
    s->t = result;
    s->committed = committed_after;
    tracef("  stored in slot%d%s", (int)(s - st->slot), (k & 0x80) ? ", committed" : "");
    if (k & 0x80) { /* commit right away */
        gcomm_datatype before = s->t;
        rc = gcomm_type_commit(&s->t);
        if (commit_refused(rc, before, s->t)) return;
        if (rc != GCOMM_SUCCESS) FAIL("commit of a new %s type: %s (%s)", what,
                                      gcomm_error_string(rc), gcomm_last_error_detail());
        s->committed = 1;
    }
}

/* ---- constructors --------------------------------------------------------------------------- */

static int *rd_int_array(rd_t *r, int count, int force_null)
{
    if (force_null || count <= 0 || count > MAX_ARRAY) return NULL;
    int *a = malloc((size_t)count * sizeof(int));
    /* A few values from the input, then repeated (the input is short). */
    int period = 1 + rd_u8(r) % 16;
    for (int i = 0; i < count; i++) a[i] = i < period ? rd_int(r) : a[i % period];
    return a;
}

static ptrdiff_t *rd_disp_array(rd_t *r, int count, int force_null)
{
    if (force_null || count <= 0 || count > MAX_ARRAY) return NULL;
    ptrdiff_t *a = malloc((size_t)count * sizeof(ptrdiff_t));
    int period = 1 + rd_u8(r) % 16;
    for (int i = 0; i < count; i++) a[i] = i < period ? rd_disp(r) : a[i % period];
    return a;
}

/* Sum of blocklengths (saturated); -2 when one is negative. */
static wide_t sum_blocks(const int *bl, int count)
{
    wide_t sum = 0;
    for (int i = 0; i < count; i++) {
        if (bl[i] < 0) return -2;
        sum = sat(sum + bl[i]);
    }
    return sum;
}

static void op_constructor(state_t *st, rd_t *r, int which)
{
    uint8_t flags = rd_u8(r);
    int null_out = (flags & 7) == 7;       /* newtype == NULL */
    int null_arrays = (flags & 0x38) == 0x38; /* arrays NULL whatever the count */
    static char sentinel_obj;
    gcomm_datatype sentinel = (gcomm_datatype)(void *)&sentinel_obj, result = sentinel;
    gcomm_datatype *out = null_out ? NULL : &result;
    int old_committed = 0;
    gcomm_datatype old = rd_type(r, st, &old_committed);
    wide_t oldsize = old ? type_size_of(old) : -2;
    wide_t expect = -1;
    int rc, committed_after = 0;
    const char *what = "?";

    switch (which) {
    case 0: {
        int count = rd_int(r);
        what = "gcomm_type_contiguous";
        tracef("%s(%d, %s)", what, count, tname(old));
        rc = gcomm_type_contiguous(count, old, out);
        expect = (count < 0 || oldsize < 0) ? -2 : sat((wide_t)count * oldsize);
        break;
    }
    case 1:
    case 2: {
        int count = rd_int(r), bl = rd_int(r);
        if (which == 1) {
            int stride = rd_int(r);
            what = "gcomm_type_vector";
            tracef("%s(%d, %d, %d, %s)", what, count, bl, stride, tname(old));
            rc = gcomm_type_vector(count, bl, stride, old, out);
        } else {
            ptrdiff_t stride = rd_disp(r);
            what = "gcomm_type_hvector";
            tracef("%s(%d, %d, %td, %s)", what, count, bl, stride, tname(old));
            rc = gcomm_type_hvector(count, bl, stride, old, out);
        }
        expect = (count < 0 || bl < 0 || oldsize < 0) ? -2 : sat(sat((wide_t)count * bl) * oldsize);
        break;
    }
    case 3:
    case 4: {
        int count = rd_int(r);
        int *bl = rd_int_array(r, count, null_arrays);
        int *di = which == 3 ? rd_int_array(r, count, null_arrays) : NULL;
        ptrdiff_t *hd = which == 4 ? rd_disp_array(r, count, null_arrays) : NULL;
        if (count > MAX_ARRAY && !null_arrays) { /* too long to build: skip the call */
            free(bl), free(di), free(hd);
            return;
        }
        if (which == 3) {
            what = "gcomm_type_indexed";
            tracef("%s(%d, %s, %s, %s)", what, count, tarr(bl, NULL, count), tarr(di, NULL, count),
                   tname(old));
            rc = gcomm_type_indexed(count, bl, di, old, out);
        } else {
            what = "gcomm_type_hindexed";
            tracef("%s(%d, %s, %s, %s)", what, count, tarr(bl, NULL, count), tarr(NULL, hd, count),
                   tname(old));
            rc = gcomm_type_hindexed(count, bl, hd, old, out);
        }
        if (count < 0 || oldsize < 0 || (count > 0 && (!bl || (!di && !hd)))) expect = -2;
        else if (count == 0) expect = 0;
        else {
            wide_t sum = sum_blocks(bl, count);
            expect = sum < 0 ? -2 : sat(sum * oldsize);
        }
        free(bl), free(di), free(hd);
        break;
    }
    case 5:
    case 6: {
        int count = rd_int(r), bl = rd_int(r);
        int *di = which == 5 ? rd_int_array(r, count, null_arrays) : NULL;
        ptrdiff_t *hd = which == 6 ? rd_disp_array(r, count, null_arrays) : NULL;
        if (count > MAX_ARRAY && !null_arrays) {
            free(di), free(hd);
            return;
        }
        if (which == 5) {
            what = "gcomm_type_indexed_block";
            tracef("%s(%d, %d, %s, %s)", what, count, bl, tarr(di, NULL, count), tname(old));
            rc = gcomm_type_indexed_block(count, bl, di, old, out);
        } else {
            what = "gcomm_type_hindexed_block";
            tracef("%s(%d, %d, %s, %s)", what, count, bl, tarr(NULL, hd, count), tname(old));
            rc = gcomm_type_hindexed_block(count, bl, hd, old, out);
        }
        if (count < 0 || oldsize < 0 || (count > 0 && !di && !hd) || bl < 0) expect = -2;
        else expect = sat(sat((wide_t)count * bl) * oldsize);
        free(di), free(hd);
        break;
    }
    case 7: {
        int count = rd_int(r);
        if (count > 64) count = count % 64; /* the types array is built from the pool */
        int *bl = rd_int_array(r, count, null_arrays);
        ptrdiff_t *hd = rd_disp_array(r, count, null_arrays);
        gcomm_datatype *types = NULL;
        wide_t sum = 0;
        if (count > 0 && !null_arrays) {
            types = malloc((size_t)count * sizeof(*types));
            types[0] = old;
            for (int i = 1; i < count; i++) types[i] = rd_type(r, st, NULL);
        }
        what = "gcomm_type_struct";
        tracef("%s(%d, %s, %s, [%s%s])", what, count, tarr(bl, NULL, count), tarr(NULL, hd, count),
               types ? tname(types[0]) : "NULL", count > 1 ? ",..." : "");
        rc = gcomm_type_struct(count, bl, hd, types, out);
        if (count < 0 || (count > 0 && (!bl || !hd || !types))) expect = -2;
        for (int i = 0; i < count && expect != -2; i++) {
            if (bl[i] < 0 || !types[i]) expect = -2;
            else sum = sat(sum + sat((wide_t)bl[i] * type_size_of(types[i])));
        }
        if (expect != -2) expect = sum;
        free(bl), free(hd), free(types);
        break;
    }
    case 8: {
        int ndims = rd_int(r);
        int n = ndims > 0 && ndims <= MAX_DIMS && !null_arrays ? ndims : 0;
        int sizes[MAX_DIMS], subsizes[MAX_DIMS], starts[MAX_DIMS];
        for (int i = 0; i < n; i++) {
            sizes[i] = rd_int(r);
            subsizes[i] = rd_int(r);
            starts[i] = rd_int(r);
        }
        uint8_t o = rd_u8(r);
        int order = o < 120 ? GCOMM_ORDER_C : o < 240 ? GCOMM_ORDER_FORTRAN : (int)o;
        what = "gcomm_type_subarray";
        tracef("%s(%d, sizes %s, subsizes %s, starts %s, order %d, %s)", what, ndims,
               n ? tarr(sizes, NULL, n) : "NULL", n ? tarr(subsizes, NULL, n) : "NULL",
               n ? tarr(starts, NULL, n) : "NULL", order, tname(old));
        rc = gcomm_type_subarray(ndims, n ? sizes : NULL, n ? subsizes : NULL, n ? starts : NULL,
                                 order, old, out);
        if (ndims < 0 || oldsize < 0 || (ndims > 0 && n == 0) ||
            (order != GCOMM_ORDER_C && order != GCOMM_ORDER_FORTRAN))
            expect = -2;
        else if (ndims > 0) {
            expect = oldsize;
            for (int i = 0; i < n; i++) {
                if (starts[i] < 0 || subsizes[i] < 1 || sizes[i] < 1 ||
                    (wide_t)starts[i] + subsizes[i] > sizes[i])
                    expect = -2;
                if (expect != -2) expect = sat(expect * subsizes[i]);
            }
        }
        break;
    }
    case 9: {
        int size = rd_int(r), rank = rd_int(r), ndims = rd_int(r);
        int n = ndims > 0 && ndims <= MAX_DIMS && !null_arrays ? ndims : 0;
        int gsizes[MAX_DIMS], distribs[MAX_DIMS], dargs[MAX_DIMS], psizes[MAX_DIMS];
        static const int dist[] = {GCOMM_DISTRIBUTE_BLOCK, GCOMM_DISTRIBUTE_CYCLIC,
                                   GCOMM_DISTRIBUTE_NONE, 0};
        for (int i = 0; i < n; i++) {
            gsizes[i] = rd_int(r);
            distribs[i] = dist[rd_u8(r) % 4];
            uint8_t d = rd_u8(r);
            dargs[i] = d < 128 ? GCOMM_DISTRIBUTE_DFLT_DARG : rd_int(r);
            psizes[i] = rd_int(r);
        }
        int order = rd_u8(r) < 128 ? GCOMM_ORDER_C : GCOMM_ORDER_FORTRAN;
        what = "gcomm_type_darray";
        tracef("%s(size %d, rank %d, ndims %d, gsizes %s, distribs %s, dargs %s, psizes %s, %s)",
               what, size, rank, ndims, n ? tarr(gsizes, NULL, n) : "NULL",
               n ? tarr(distribs, NULL, n) : "NULL", n ? tarr(dargs, NULL, n) : "NULL",
               n ? tarr(psizes, NULL, n) : "NULL", tname(old));
        rc = gcomm_type_darray(size, rank, ndims, n ? gsizes : NULL, n ? distribs : NULL,
                               n ? dargs : NULL, n ? psizes : NULL, order, old, out);
        if (size < 1 || rank < 0 || rank >= size || ndims < 0 || oldsize < 0 ||
            (ndims > 0 && n == 0))
            expect = -2;
        break;
    }
    case 10: {
        ptrdiff_t lb = rd_disp(r), extent = rd_disp(r);
        what = "gcomm_type_resized";
        tracef("%s(%s, lb %td, extent %td)", what, tname(old), lb, extent);
        rc = gcomm_type_resized(old, lb, extent, out);
        expect = oldsize < 0 ? -2 : oldsize;
        break;
    }
    default: {
        what = "gcomm_type_dup";
        tracef("%s(%s)", what, tname(old));
        rc = gcomm_type_dup(old, out);
        expect = oldsize < 0 ? -2 : oldsize;
        committed_after = old_committed ? -1 : 0;
        break;
    }
    }
    finish_constructor(st, r, what, rc, result, sentinel, null_out, expect, committed_after);
}

/* ---- commit, free, queries ------------------------------------------------------------------ */

static void op_commit(state_t *st, rd_t *r)
{
    uint8_t k = rd_u8(r);
    if (k & 0x80) { /* a predefined type: committed already, commit is a no-op */
        gcomm_datatype t = predefined[k % NPREDEF];
        int rc = gcomm_type_commit(&t);
        if (rc != GCOMM_SUCCESS || t != predefined[k % NPREDEF])
            FAIL("commit of a predefined type: %s", gcomm_error_string(rc));
        return;
    }
    slot_t *s = &st->slot[k % NSLOTS];
    gcomm_datatype before = s->t;
    tracef("gcomm_type_commit(slot%d = %s)", k % NSLOTS, tname(s->t));
    int rc = gcomm_type_commit(&s->t);
    check_error(rc, "gcomm_type_commit");
    if (commit_refused(rc, before, s->t)) return; /* s->committed stays as it was */
    if (!before) {
        if (rc == GCOMM_SUCCESS) FAIL("commit of NULL succeeded");
        if (s->t != GCOMM_DATATYPE_NULL) FAIL("failed commit changed the handle");
        return;
    }
    if (rc != GCOMM_SUCCESS)
        FAIL("commit of a live type: %s (%s)", gcomm_error_string(rc), gcomm_last_error_detail());
    s->committed = 1;
}

static void op_free(state_t *st, rd_t *r)
{
    uint8_t k = rd_u8(r);
    if (k & 0x80) { /* freeing a predefined type is an error and leaves it alone */
        gcomm_datatype t = predefined[k % NPREDEF];
        int rc = gcomm_type_free(&t);
        check_error(rc, "gcomm_type_free");
        if (rc == GCOMM_SUCCESS || t != predefined[k % NPREDEF])
            FAIL("free of a predefined type: rc %d, handle %s", rc,
                 t == predefined[k % NPREDEF] ? "kept" : "changed");
        return;
    }
    slot_t *s = &st->slot[k % NSLOTS];
    tracef("gcomm_type_free(slot%d = %s)", k % NSLOTS, tname(s->t));
    if (!s->t) {
        gcomm_datatype t = GCOMM_DATATYPE_NULL;
        int rc = gcomm_type_free(&t);
        check_error(rc, "gcomm_type_free");
        if (rc == GCOMM_SUCCESS) FAIL("free of NULL succeeded");
        rc = gcomm_type_free(NULL);
        if (rc == GCOMM_SUCCESS) FAIL("free(NULL pointer) succeeded");
        return;
    }
    slot_release(s);
}

static void op_queries(state_t *st, rd_t *r)
{
    gcomm_datatype t = rd_type(r, st, NULL);
    tracef("queries on %s", tname(t));
    const size_t ssent = (size_t)0x5eed5eed;
    const ptrdiff_t psent = (ptrdiff_t)-0x5eed;
    size_t size = ssent, elems = ssent, psize = ssent;
    ptrdiff_t lb = psent, ext = psent, tlb = psent, text = psent;
    int rc[5];
    rc[0] = gcomm_type_size(t, &size);
    rc[1] = gcomm_type_get_extent(t, &lb, &ext);
    rc[2] = gcomm_type_get_true_extent(t, &tlb, &text);
    rc[3] = gcomm_type_get_elements(t, &elems);
    rc[4] = gcomm_pack_size((size_t)rd_u8(r), t, &psize);
    for (int i = 0; i < 5; i++) check_error(rc[i], "a query");
    if (!t) {
        for (int i = 0; i < 5; i++)
            if (rc[i] == GCOMM_SUCCESS) FAIL("query %d on NULL succeeded", i);
        if (size != ssent || elems != ssent || psize != ssent || lb != psent || ext != psent ||
            tlb != psent || text != psent)
            FAIL("a failing query changed its outputs");
        return;
    }
    for (int i = 0; i < 4; i++)
        if (rc[i] != GCOMM_SUCCESS) FAIL("query %d on a live type: %s", i, gcomm_error_string(rc[i]));
    if ((size == 0) != (elems == 0) || elems > size)
        FAIL("size %zu but %zu elements", size, elems);
    if (size > 0 && text < 1) FAIL("size %zu but true extent %td", size, text);
    /* NULL output pointers are refused, not dereferenced. */
    if (gcomm_type_size(t, NULL) == GCOMM_SUCCESS) FAIL("gcomm_type_size(t, NULL) succeeded");
    if (gcomm_type_get_extent(t, NULL, &ext) == GCOMM_SUCCESS) FAIL("get_extent(NULL lb) succeeded");
    /* Every type matches itself. (Signature matching may walk every element: only for types
     * of a bounded number of elements.) */
    gcomm_datatype u = rd_type(r, st, NULL);
    size_t uelems = 0;
    if (elems > MAX_MATCH_ELEMS || (u && (gcomm_type_get_elements(u, &uelems) != GCOMM_SUCCESS ||
                                          uelems > MAX_MATCH_ELEMS)))
        return;
    int match = -7;
    int mrc = gcomm_type_match(t, 2, t, 2, &match);
    if (mrc != GCOMM_SUCCESS || match != 1) FAIL("type does not match itself: rc %d, match %d", mrc, match);
    if (u) {
        match = -7;
        mrc = gcomm_type_match(t, 1, u, 1, &match);
        check_error(mrc, "gcomm_type_match");
        if (mrc == GCOMM_SUCCESS && match != 0 && match != 1) FAIL("match = %d", match);
        if (mrc == GCOMM_SUCCESS && match == 1 && type_size_of(t) > type_size_of(u))
            FAIL("a larger signature is a prefix of a smaller one");
    }
}

/* ---- pack / unpack -------------------------------------------------------------------------- */

static void expect_untouched(const unsigned char *p, size_t n, unsigned char v, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v) FAIL("%s wrote byte %zu", what, i);
}

static size_t count_nonzero(const unsigned char *p, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += p[i] != 0;
    return c;
}

static void op_pack(state_t *st, rd_t *r)
{
    if (st->pack_tests >= MAX_PACK_TESTS) return;
    st->pack_tests++;
    int committed = 0;
    gcomm_datatype t = rd_type(r, st, &committed);
    size_t count = rd_u8(r) % 5;
    size_t pos0 = rd_u8(r) % 8, slack = rd_u8(r) % 4;
    int rc;
    tracef("pack tests: %zu x %s (committed %d) at position %zu", count, tname(t), committed, pos0);
    if (!t) {
        size_t pos = pos0;
        unsigned char out[16] = {0};
        rc = gcomm_pack(out, 1, t, out, sizeof(out), &pos);
        check_error(rc, "gcomm_pack");
        if (rc == GCOMM_SUCCESS || pos != pos0) FAIL("pack of NULL type: rc %d", rc);
        return;
    }
    size_t size;
    ptrdiff_t lb, extent, tlb, text;
    if (gcomm_type_size(t, &size) || gcomm_type_get_extent(t, &lb, &extent) ||
        gcomm_type_get_true_extent(t, &tlb, &text))
        FAIL("queries of a live type failed");
    wide_t packed = (wide_t)size * (wide_t)count;
    size_t psize = 0;
    rc = gcomm_pack_size(count, t, &psize);
    check_error(rc, "gcomm_pack_size");
    if (packed <= SIZE_LIMIT && (rc != GCOMM_SUCCESS || psize != (size_t)packed))
        FAIL("gcomm_pack_size %zu x %zu = %zu (rc %d)", count, size, psize, rc);
    /* The memory count instances touch: [lo, hi) relative to the buffer pointer. */
    wide_t lo = 0, hi = 0;
    if (packed > 0) {
        wide_t last = (wide_t)extent * (wide_t)(count - 1);
        lo = (wide_t)tlb + (last < 0 ? last : 0);
        hi = (wide_t)tlb + text + (last > 0 ? last : 0);
    }
    if (packed > MAX_PACKED || hi - lo > MAX_SPAN || lo < -MAX_ADDR || hi > MAX_ADDR) {
        stat_skipped++;
        return;
    }
    const size_t n = (size_t)packed, span = (size_t)(hi - lo);
    if (hi < lo) FAIL("negative span");

    unsigned char *src = malloc(span ? span : 1);
    unsigned char *base = src - (ptrdiff_t)lo;
    fill_nonzero(src, span, &st->rng);
    const size_t outsize = pos0 + n + slack;
    unsigned char *out = calloc(outsize ? outsize : 1, 1);
    size_t pos = pos0;

    if (committed == 0) { /* uncommitted: refused, nothing written */
        rc = gcomm_pack(base, count, t, out, outsize, &pos);
        if (rc != GCOMM_ERR_NOT_COMMITTED || pos != pos0)
            FAIL("pack of an uncommitted type: rc %d (%s)", rc, gcomm_error_string(rc));
        expect_untouched(out, outsize, 0, "failed pack");
        free(src), free(out);
        return;
    }
    rc = gcomm_pack(base, count, t, out, outsize, &pos);
    if (rc == GCOMM_ERR_NOT_COMMITTED && committed == -1) { /* a dup: not committed after all */
        free(src), free(out);
        return;
    }
    if (rc != GCOMM_SUCCESS)
        FAIL("pack: %s (%s)", gcomm_error_string(rc), gcomm_last_error_detail());
    if (pos != pos0 + n) FAIL("pack: position %zu, expected %zu", pos, pos0 + n);
    stat_packed++;
    expect_untouched(out, pos0, 0, "pack (before position)");
    expect_untouched(out + pos0 + n, slack, 0, "pack (past the packed size)");
    if (count_nonzero(out + pos0, n) != n) FAIL("pack left bytes of its output unwritten");
    const unsigned char *P = out + pos0;

    /* One byte short: truncation, nothing written, position kept. */
    if (n > 0) {
        unsigned char *o2 = calloc(pos0 + n, 1);
        pos = pos0;
        rc = gcomm_pack(base, count, t, o2, pos0 + n - 1, &pos);
        if (rc != GCOMM_ERR_TRUNCATE || pos != pos0) FAIL("short pack: rc %d, pos %zu", rc, pos);
        expect_untouched(o2, pos0 + n, 0, "truncated pack");
        free(o2);
    }
    /* The asynchronous form on host memory (NULL stream: the default stream). */
    {
        unsigned char *o3 = malloc(n ? n : 1);
        size_t p3 = 0;
        rc = gcomm_pack_async(base, count, t, o3, n, &p3, NULL);
        if (rc != GCOMM_SUCCESS || p3 != n || memcmp(o3, P, n) != 0)
            FAIL("pack_async differs from pack (rc %d)", rc);
        free(o3);
    }
    /* pack_range pieces concatenate to the whole stream. */
    for (size_t off = 0, pieces = 0; off < n; pieces++) {
        size_t len = n - off;
        if (pieces < MAX_PIECES) len = 1 + (size_t)rd_u64(r, 2) % len;
        unsigned char *piece = malloc(len);
        rc = gcomm_pack_range(base, count, t, off, len, piece);
        if (rc != GCOMM_SUCCESS) FAIL("pack_range(%zu, %zu) of %zu: %s", off, len, n, gcomm_error_string(rc));
        if (memcmp(piece, P + off, len) != 0) FAIL("pack_range(%zu, %zu) differs from pack", off, len);
        free(piece);
        off += len;
    }
    {
        unsigned char guard[4] = {0};
        rc = gcomm_pack_range(base, count, t, n, 1, guard);
        check_error(rc, "gcomm_pack_range");
        if (rc == GCOMM_SUCCESS) FAIL("pack_range past the end succeeded");
        rc = gcomm_pack_range(base, count, t, SIZE_MAX, 2, guard);
        if (rc == GCOMM_SUCCESS) FAIL("pack_range with offset + bytes overflowing succeeded");
        expect_untouched(guard, sizeof(guard), 0, "failed pack_range");
    }

    /* Unpack the stream into zeroed memory: only type-map bytes change, each to the value that
     * pack read there; packing that memory gives the stream again. */
    unsigned char *d1 = calloc(span ? span : 1, 1), *d1base = d1 - (ptrdiff_t)lo;
    pos = pos0;
    rc = gcomm_unpack(out, pos0 + n, &pos, d1base, count, t);
    if (rc != GCOMM_SUCCESS) FAIL("unpack: %s (%s)", gcomm_error_string(rc), gcomm_last_error_detail());
    if (pos != pos0 + n) FAIL("unpack: position %zu, expected %zu", pos, pos0 + n);
    for (size_t i = 0; i < span; i++)
        if (d1[i] != 0 && d1[i] != src[i]) FAIL("unpack wrote byte %zu outside the type map", i);
    size_t distinct = count_nonzero(d1, span);
    if (distinct > n) FAIL("unpack changed %zu bytes for %zu packed", distinct, n);
    {
        unsigned char *again = malloc(n ? n : 1);
        size_t p2 = 0;
        rc = gcomm_pack(d1base, count, t, again, n, &p2);
        if (rc != GCOMM_SUCCESS || memcmp(again, P, n) != 0) FAIL("pack(unpack(pack)) differs");
        free(again);
    }
    /* One byte short: truncation, nothing written. */
    if (n > 0) {
        unsigned char *d2 = calloc(span ? span : 1, 1);
        pos = pos0;
        rc = gcomm_unpack(out, pos0 + n - 1, &pos, d2 - (ptrdiff_t)lo, count, t);
        if (rc != GCOMM_ERR_TRUNCATE || pos != pos0) FAIL("short unpack: rc %d", rc);
        expect_untouched(d2, span, 0, "truncated unpack");
        free(d2);
    }
    /* unpack_range in pieces, and gcomm_copy, reach the same memory. */
    {
        unsigned char *d3 = calloc(span ? span : 1, 1);
        for (size_t off = 0, pieces = 0; off < n; pieces++) {
            size_t len = n - off;
            if (pieces < MAX_PIECES) len = 1 + (size_t)rd_u64(r, 2) % len;
            rc = gcomm_unpack_range(P + off, off, len, d3 - (ptrdiff_t)lo, count, t);
            if (rc != GCOMM_SUCCESS) FAIL("unpack_range(%zu, %zu): %s", off, len, gcomm_error_string(rc));
            off += len;
        }
        if (memcmp(d3, d1, span) != 0) FAIL("unpack_range pieces differ from unpack");
        memset(d3, 0, span);
        rc = gcomm_copy(base, count, t, d3 - (ptrdiff_t)lo, count, t, NULL);
        if (rc != GCOMM_SUCCESS) FAIL("gcomm_copy to the same type: %s", gcomm_error_string(rc));
        if (memcmp(d3, d1, span) != 0) FAIL("gcomm_copy differs from unpack(pack)");
        free(d3);
    }
    /* Without overlaps in the type map (every packed byte went to its own place), unpack then
     * pack is the identity for any stream. */
    if (distinct == n && n > 0) {
        unsigned char *q = malloc(n), *q2 = malloc(n), *d4 = calloc(span, 1);
        fill_nonzero(q, n, &st->rng);
        pos = 0;
        rc = gcomm_unpack(q, n, &pos, d4 - (ptrdiff_t)lo, count, t);
        size_t p4 = 0;
        if (rc == GCOMM_SUCCESS) rc = gcomm_pack(d4 - (ptrdiff_t)lo, count, t, q2, n, &p4);
        if (rc != GCOMM_SUCCESS || memcmp(q, q2, n) != 0) FAIL("pack(unpack(stream)) differs");
        free(q), free(q2), free(d4);
    }
    free(d1);
    free(src);
    free(out);
}

/* ---- driver --------------------------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Commits refused at a node limit that is quick to reach: at the default (4M nodes) one such
 * input takes seconds under the sanitizers, at 64K a few milliseconds. Before gcomm reads its
 * configuration; a limit set by the caller stays. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("GCOMM_TYPE_MAX_NODES", "65536", 0);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    state_t st;
    memset(&st, 0, sizeof(st));
    st.rng = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < size; i++) st.rng = (st.rng ^ data[i]) * 0x100000001b3ull;
    if (!st.rng) st.rng = 1;
    rd_t r = {data, size};
    trace_state = &st;
    for (int ops = 0; ops < MAX_OPS && r.n > 0; ops++) {
        uint8_t op = rd_u8(&r) % 20;
        if (op <= 11) op_constructor(&st, &r, op);
        else if (op <= 13) op_commit(&st, &r);
        else if (op == 14) op_free(&st, &r);
        else if (op <= 17) op_pack(&st, &r);
        else op_queries(&st, &r);
    }
    for (int i = 0; i < NSLOTS; i++) slot_release(&st.slot[i]);
    trace_state = NULL; /* st dies here */
    return 0;
}

#ifdef GCOMM_FUZZ_STANDALONE
/* Replays files, or runs random inputs: fuzz_datatype_replay [-runs=N] [-seed=S] [file...] */
int main(int argc, char **argv)
{
    long runs = 2000;
    uint64_t seed = 1;
    int files = 0;
    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "-runs=", 6) == 0) runs = atol(argv[i] + 6);
        else if (strncmp(argv[i], "-seed=", 6) == 0) seed = strtoull(argv[i] + 6, NULL, 0);
        else {
            FILE *f = fopen(argv[i], "rb");
            if (!f) {
                perror(argv[i]);
                return 2;
            }
            static uint8_t buf[1 << 20];
            size_t n = fread(buf, 1, sizeof(buf), f);
            fclose(f);
            LLVMFuzzerTestOneInput(buf, n);
            files++;
        }
    }
    if (files) {
        printf("fuzz_datatype_replay: %d inputs replayed, no invariant violated (%ld types created, "
               "%ld refused, %ld commits refused at the node limit, %ld packed, %ld too large to "
               "pack)\n",
               files, stat_created, stat_refused, stat_commit_refused, stat_packed, stat_skipped);
        return 0;
    }
    uint64_t rng = seed ? seed : 1;
    uint8_t buf[1024];
    for (long i = 0; i < runs; i++) {
        size_t n = rng_next(&rng) % sizeof(buf);
        for (size_t j = 0; j < n; j++) buf[j] = (uint8_t)rng_next(&rng);
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("fuzz_datatype_replay: %ld random inputs (seed %llu), no invariant violated (%ld types "
           "created, %ld refused, %ld commits refused at the node limit, %ld packed, %ld too large to "
           "pack)\n",
           runs, (unsigned long long)seed, stat_created, stat_refused, stat_commit_refused,
           stat_packed, stat_skipped);
    return 0;
}
#endif
