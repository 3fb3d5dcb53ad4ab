/* gcommi_typed_copy (include/gcomm/detail/typed_copy.h: the layout-to-layout copy the device API's
 * typed put/get run inside a thread block) on the CPU, with the work split over 1, 3, 32 and 128
 * emulated threads: typed -> contiguous equals gcomm_pack, contiguous -> typed equals gcomm_unpack
 * (gaps untouched), and typed -> another layout of the same signature equals unpack(pack). */
#include <stdlib.h>
#include <string.h>

#include "datatype/layout.h"
#include "gcomm/detail/typed_copy.h"
#include "testutil.h"

static gcommi_tview_t view(gcomm_datatype t)
{
    return gcommi_tview(gcommi_type_get_layout(t));
}

/* Every emulated thread's share, in an order that is not the threads' order. */
static void copy_all(const gcommi_tview_t *S, const char *s, const gcommi_tview_t *D, char *d,
                     int64_t bytes, int64_t nthreads)
{
    for (int64_t t = nthreads - 1; t >= 0; t--) gcommi_typed_copy(S, s, D, d, bytes, t, nthreads);
}

/* Buffer holding `count` instances of t, and the origin inside it (true lb may be negative). */
static int g_shift; /* origins this many bytes past an aligned address (narrows the words) */

static char *alloc_typed(gcomm_datatype t, size_t count, size_t *len, char **origin)
{
    ptrdiff_t lb, ext, tlb, text;
    gcomm_type_get_extent(t, &lb, &ext);
    gcomm_type_get_true_extent(t, &tlb, &text);
    *len = (size_t)(text + (ptrdiff_t)(count - 1) * (ext < 0 ? -ext : ext)) + 64;
    char *buf = malloc(*len);
    *origin = buf + 32 - tlb + (ext < 0 ? (ptrdiff_t)(count - 1) * -ext : 0) + g_shift;
    return buf;
}

static void check_type(const char *name, gcomm_datatype t, uint64_t *rng)
{
    static const int64_t threads[] = {1, 3, 32, 128};
    for (size_t count = 1; count <= 3; count++) {
        size_t size, len;
        gcomm_pack_size(count, t, &size);
        char *origin, *buf = alloc_typed(t, count, &len, &origin);
        gcommt_fill_random(buf, len, rng);
        char *ref = malloc(size + 1), *out = malloc(size + 1);
        size_t pos = 0;
        TEST_OK(gcomm_pack(origin, count, t, ref, size, &pos));
        gcomm_datatype bytes;
        gcomm_type_contiguous((int)size, GCOMM_BYTE, &bytes);
        gcomm_type_commit(&bytes);
        gcommi_tview_t T = view(t), B = view(bytes);
        for (size_t k = 0; k < sizeof(threads) / sizeof(threads[0]); k++) {
            memset(out, 0x5a, size + 1);
            copy_all(&T, origin, &B, out, (int64_t)size, threads[k]);
            TEST_CHECK(memcmp(out, ref, size) == 0 && (unsigned char)out[size] == 0x5a,
                       "%s x%zu, %lld threads: typed -> contiguous differs from gcomm_pack", name,
                       count, (long long)threads[k]);
            /* contiguous -> typed against gcomm_unpack, both into the same poisoned buffer */
            char *o2, *b2 = alloc_typed(t, count, &len, &o2), *o3, *b3 = alloc_typed(t, count, &len, &o3);
            memset(b2, 0x33, len);
            memset(b3, 0x33, len);
            pos = 0;
            TEST_OK(gcomm_unpack(ref, size, &pos, o3, count, t));
            copy_all(&B, ref, &T, o2, (int64_t)size, threads[k]);
            TEST_CHECK(memcmp(b2, b3, len) == 0,
                       "%s x%zu, %lld threads: contiguous -> typed differs from gcomm_unpack", name,
                       count, (long long)threads[k]);
            free(b2);
            free(b3);
        }
        gcomm_type_free(&bytes);
        free(ref);
        free(out);
        free(buf);
    }
}

int main(void)
{
    uint64_t rng = gcommt_seed(5);
    gcomm_datatype t[12];
    const char *names[12];
    int n = 0;
    int bl[3] = {2, 1, 3}, di[3] = {0, 5, 9};
    ptrdiff_t hd[3] = {0, 12, 40};
    gcomm_datatype mem[3] = {GCOMM_DOUBLE, GCOMM_INT, GCOMM_CHAR};
    int sizes[3] = {6, 5, 7}, sub[3] = {3, 2, 4}, st[3] = {1, 2, 3};
    names[n] = "contiguous";
    gcomm_type_contiguous(10, GCOMM_DOUBLE, &t[n++]);
    names[n] = "vector bl 3";
    gcomm_type_vector(5, 3, 7, GCOMM_DOUBLE, &t[n++]);
    names[n] = "hvector stride 12";
    gcomm_type_hvector(6, 1, 12, GCOMM_DOUBLE, &t[n++]); /* 8-byte runs at 4-aligned offsets */
    names[n] = "negative stride";
    gcomm_type_vector(4, 2, -5, GCOMM_INT, &t[n++]);
    names[n] = "indexed";
    gcomm_type_indexed(3, bl, di, GCOMM_FLOAT, &t[n++]);
    names[n] = "struct d,i,c";
    gcomm_type_struct(3, bl, hd, mem, &t[n++]);
    names[n] = "subarray C";
    gcomm_type_subarray(3, sizes, sub, st, GCOMM_ORDER_C, GCOMM_INT16, &t[n++]);
    names[n] = "subarray Fortran";
    gcomm_type_subarray(3, sizes, sub, st, GCOMM_ORDER_FORTRAN, GCOMM_DOUBLE, &t[n++]);
    gcomm_datatype inner;
    gcomm_type_vector(3, 1, 4, GCOMM_DOUBLE, &inner);
    names[n] = "vector of vectors";
    gcomm_type_hvector(4, 2, 8, inner, &t[n++]); /* a transpose-like nest */
    names[n] = "resized struct";
    gcomm_datatype s;
    gcomm_type_struct(3, bl, hd, mem, &s);
    gcomm_type_resized(s, -8, 64, &t[n++]);
    for (int i = 0; i < n; i++) TEST_OK(gcomm_type_commit(&t[i]));
    for (g_shift = 0; g_shift <= 4; g_shift += 2) /* aligned, then 2- and 4-byte origins */
        for (int i = 0; i < n; i++) check_type(names[i], t[i], &rng);
    g_shift = 0;
    /* between two layouts of one signature: a vector into a subarray of the same doubles */
    gcomm_datatype a, b;
    gcomm_type_vector(6, 2, 5, GCOMM_DOUBLE, &a);
    int sz2[2] = {8, 4}, sb2[2] = {6, 2}, st2[2] = {1, 1};
    gcomm_type_subarray(2, sz2, sb2, st2, GCOMM_ORDER_C, GCOMM_DOUBLE, &b);
    gcomm_type_commit(&a);
    gcomm_type_commit(&b);
    size_t len, size;
    char *oa, *ba = alloc_typed(a, 1, &len, &oa), *ob, *bb = alloc_typed(b, 1, &len, &ob);
    char *oc, *bc = alloc_typed(b, 1, &len, &oc);
    gcommt_fill_random(ba, len, &rng);
    memset(bb, 0x11, len);
    memset(bc, 0x11, len);
    gcomm_pack_size(1, a, &size);
    char *packed = malloc(size);
    size_t pos = 0;
    gcomm_pack(oa, 1, a, packed, size, &pos);
    pos = 0;
    gcomm_unpack(packed, size, &pos, oc, 1, b);
    gcommi_tview_t A = view(a), B = view(b);
    copy_all(&A, oa, &B, ob, (int64_t)size, 32);
    TEST_CHECK(memcmp(bb, bc, len) == 0, "vector -> subarray differs from unpack(pack)");
    free(packed);
    free(ba);
    free(bb);
    free(bc);
    for (int i = 0; i < n; i++) gcomm_type_free(&t[i]);
    gcomm_type_free(&inner);
    gcomm_type_free(&s);
    gcomm_type_free(&a);
    gcomm_type_free(&b);
    return gcommt_finish("test_dt_typed_copy");
}
