/* Which indexed nodes commit marks GCOMMI_DL_AFFINE (include/gcomm/detail/layout.h): blocks whose
 * displacements and lengths both step evenly, as a triangular matrix's rows, and no others. The
 * host engine computes such blocks' places and lengths instead of reading them (pack_host.c,
 * indexed_affine_walk), so a wrong mark would pack the wrong bytes: test_dt_vector_blocks checks
 * those packs byte by byte; this test checks the mark itself on the root node. */
#include <stddef.h>
#include <stdio.h>

#include "datatype/layout.h"
#include "gcomm/datatype.h"
#include "testutil.h"

/* The root node of an hindexed of doubles with n blocks (lens[], displs[] in bytes): its kind and
 * whether it is marked affine (flags), or -1 and 0 when the type cannot be built. */
static int root_of(int n, const int *lens, const ptrdiff_t *displs, int *affine)
{
    gcomm_datatype t = GCOMM_DATATYPE_NULL;
    int kind = -1;
    *affine = 0;
    TEST_OK(gcomm_type_hindexed(n, lens, displs, GCOMM_DOUBLE, &t));
    TEST_OK(gcomm_type_commit(&t));
    const gcommi_layout_t *L = gcommi_type_get_layout(t);
    TEST_CHECK(L != NULL, "no layout after commit");
    if (L) {
        kind = L->nodes[0].kind;
        *affine = (L->nodes[0].flags & GCOMMI_DL_AFFINE) != 0;
    }
    gcomm_type_free(&t);
    return kind;
}

static void expect(const char *what, int n, const int *lens, const ptrdiff_t *displs, int kind,
                   int affine)
{
    int got_affine;
    const int got = root_of(n, lens, displs, &got_affine);
    TEST_CHECK(got == kind && got_affine == affine, "%s: root kind %d affine %d, expected %d %d",
               what, got, got_affine, kind, affine);
}

int main(void)
{
    enum { N = 64 };
    int lens[N];
    ptrdiff_t displs[N];
    /* lower triangle of a 64 x 64 matrix of doubles: row i has i + 1 elements at 8 * 64 i */
    for (int i = 0; i < N; i++) lens[i] = i + 1, displs[i] = (ptrdiff_t)i * 8 * N;
    expect("lower triangle", N, lens, displs, GCOMMI_DL_IDX, 1);
    /* upper triangle: row i has N - i elements from the diagonal (displacements step by N + 1) */
    for (int i = 0; i < N; i++) lens[i] = N - i, displs[i] = (ptrdiff_t)i * 8 * (N + 1);
    expect("upper triangle", N, lens, displs, GCOMMI_DL_IDX, 1);
    /* rows that descend in memory as they grow (negative step) */
    for (int i = 0; i < N; i++) lens[i] = 2 + 3 * i, displs[i] = (ptrdiff_t)(N - i) * 8 * 4 * N;
    expect("descending rows", N, lens, displs, GCOMMI_DL_IDX, 1);
    /* three blocks are the fewest marked */
    for (int i = 0; i < 3; i++) lens[i] = 1 + i, displs[i] = (ptrdiff_t)i * 800;
    expect("three rows", 3, lens, displs, GCOMMI_DL_IDX, 1);
    expect("two rows", 2, lens, displs, GCOMMI_DL_IDX, 0);
    /* one row off its place, one length off its step, lengths that grow unevenly */
    for (int i = 0; i < N; i++) lens[i] = i + 1, displs[i] = (ptrdiff_t)i * 8 * N;
    displs[N / 2] += 8;
    expect("a row moved", N, lens, displs, GCOMMI_DL_IDX, 0);
    displs[N / 2] -= 8;
    lens[N - 1] += 1;
    expect("a row longer", N, lens, displs, GCOMMI_DL_IDX, 0);
    for (int i = 0; i < N; i++) lens[i] = 1 + i * i, displs[i] = (ptrdiff_t)i * 8 * N * N;
    expect("lengths growing unevenly", N, lens, displs, GCOMMI_DL_IDX, 0);
    /* equal lengths at an even step are a vector, not an indexed node */
    for (int i = 0; i < N; i++) lens[i] = 4, displs[i] = (ptrdiff_t)i * 8 * N;
    expect("equal rows", N, lens, displs, GCOMMI_DL_VEC, 0);
    return gcommt_finish("test_dt_layout_affine");
}
