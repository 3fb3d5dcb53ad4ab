/* halo_demo: the six halo faces of a 3-D stencil grid, packed and unpacked by gcomm's datatype
 * engine, checked against plain loops.
 *
 * The grid is n^3 interior doubles with a halo of h cells on every side (C order). Each face
 * exchange of a stencil code moves an h x n x n slab of the interior next to a face (the send
 * face) into the halo on the opposite side of the neighbour (the receive face). Here the grid is
 * its own neighbour (periodic boundaries, one process): the six send faces of array A are packed
 * with gcomm_pack (and again in pipelined chunks with gcomm_pack_range), the packed streams are
 * compared with what plain loops produce, and then unpacked into the receive faces of a second
 * array B with gcomm_unpack (and gcomm_unpack_range in chunks into a third, C). B must then hold
 * A's periodic halo and be unchanged everywhere else.
 *
 * This runs on the host (malloc'd memory, the CPU engine) and then, in a CUDA build on a machine
 * with a usable GPU, again with every array in GPU memory (cudaMalloc: gcomm's GPU kernels),
 * checked against the same reference. It says which of the two ran, and why the GPU did not.
 *
 * Usage: halo_demo [-n N] [-H HALO] [-c CHUNK_BYTES] [-r REPS] [--host-only]
 * Exit status: 0 verified, 1 verification failed, 2 bad arguments or a gcomm error. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gcomm/gcomm.h"

#ifdef HALO_DEMO_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define CHECK_GCOMM(call)                                                                      \
    do {                                                                                       \
        int rc_ = (call);                                                                      \
        if (rc_ != GCOMM_SUCCESS) {                                                            \
            fprintf(stderr, "halo_demo: %s failed: %s (%s)\n", #call, gcomm_error_string(rc_), \
                    gcomm_last_error_detail());                                                \
            exit(2);                                                                           \
        }                                                                                      \
    } while (0)

typedef struct {
    const char *name;
    int sizes[3], subsizes[3];
    int send_starts[3]; /* interior slab next to the face */
    int recv_starts[3]; /* halo on the opposite side (where the periodic neighbour puts it) */
    gcomm_datatype send_type, recv_type;
    size_t bytes;
} face_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static size_t idx3(const int sizes[3], int i, int j, int k)
{
    return ((size_t)i * (size_t)sizes[1] + (size_t)j) * (size_t)sizes[2] + (size_t)k;
}

/* The reference: the subarray's elements in C order, with plain loops. */
static void ref_pack(const double *a, const face_t *f, const int starts[3], double *out)
{
    size_t p = 0;
    for (int i = starts[0]; i < starts[0] + f->subsizes[0]; i++)
        for (int j = starts[1]; j < starts[1] + f->subsizes[1]; j++)
            for (int k = starts[2]; k < starts[2] + f->subsizes[2]; k++)
                out[p++] = a[idx3(f->sizes, i, j, k)];
}

static void ref_unpack(const double *in, const face_t *f, const int starts[3], double *a)
{
    size_t p = 0;
    for (int i = starts[0]; i < starts[0] + f->subsizes[0]; i++)
        for (int j = starts[1]; j < starts[1] + f->subsizes[1]; j++)
            for (int k = starts[2]; k < starts[2] + f->subsizes[2]; k++)
                a[idx3(f->sizes, i, j, k)] = in[p++];
}

/* The same exchange with every array in GPU memory. Returns 1 verified, 0 failed, -1 not run
 * (why says why). a, b0: the host arrays before any unpack; ref, b_ref: the expected results. */
static int run_gpu(const face_t *faces, int s, const double *a, const double *b0,
                   const double *ref, const double *b_ref, size_t face_bytes, int chunk, int reps,
                   char *why, size_t whylen)
{
#ifndef HALO_DEMO_HAVE_CUDA
    (void)faces, (void)s, (void)a, (void)b0, (void)ref, (void)b_ref, (void)face_bytes;
    (void)chunk, (void)reps;
    snprintf(why, whylen, "this build has no CUDA (no CUDA compiler at configure time)");
    return -1;
#else
    int ngpus = 0;
    cudaError_t err = cudaGetDeviceCount(&ngpus);
    if (err != cudaSuccess || ngpus == 0) {
        int driver = 0;
        cudaDriverGetVersion(&driver);
        snprintf(why, whylen, "no usable GPU here (%s)",
                 err != cudaSuccess ? (driver ? cudaGetErrorString(err) : "no NVIDIA driver")
                                    : "no device");
        return -1;
    }
    struct cudaDeviceProp prop;
    if (cudaSetDevice(0) != cudaSuccess || cudaGetDeviceProperties(&prop, 0) != cudaSuccess)
        snprintf(prop.name, sizeof(prop.name), "?");
    const size_t total = (size_t)s * s * s, abytes = total * sizeof(double);
    const size_t all_bytes = 6 * face_bytes;
    double *a_d = NULL, *b_d = NULL, *c_d = NULL;
    unsigned char *packed_d = NULL, *chunked_d = NULL;
    unsigned char *packed = malloc(all_bytes), *chunked = malloc(all_bytes);
    double *b = malloc(abytes), *c = malloc(abytes), *times = malloc((size_t)reps * sizeof(double));
    int ok = -1;
#define CUDA_TRY(call)                                                                         \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "halo_demo: %s failed: %s\n", #call, cudaGetErrorString(e_));      \
            ok = 0;                                                                            \
            goto done;                                                                         \
        }                                                                                      \
    } while (0)
    if (!packed || !chunked || !b || !c || !times) {
        fprintf(stderr, "halo_demo: out of memory\n");
        ok = 0;
        goto done;
    }
    CUDA_TRY(cudaMalloc((void **)&a_d, abytes));
    CUDA_TRY(cudaMalloc((void **)&b_d, abytes));
    CUDA_TRY(cudaMalloc((void **)&c_d, abytes));
    CUDA_TRY(cudaMalloc((void **)&packed_d, all_bytes));
    CUDA_TRY(cudaMalloc((void **)&chunked_d, all_bytes));
    CUDA_TRY(cudaMemcpy(a_d, a, abytes, cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(b_d, b0, abytes, cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(c_d, b0, abytes, cudaMemcpyHostToDevice));

    /* Pack the six faces device -> device (one warm-up, then timed: launch and completion). */
    for (int r = -1; r < reps; r++) {
        double t0 = now_s();
        size_t pos = 0;
        for (int f = 0; f < 6; f++)
            CHECK_GCOMM(gcomm_pack(a_d, 1, faces[f].send_type, packed_d, all_bytes, &pos));
        if (r >= 0) times[r] = now_s() - t0;
    }
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    /* Pipelined chunks, then unpack whole faces into B and chunks into C, all on the GPU. */
    for (int f = 0; f < 6; f++)
        for (size_t off = 0; off < face_bytes; off += (size_t)chunk) {
            size_t len = face_bytes - off < (size_t)chunk ? face_bytes - off : (size_t)chunk;
            CHECK_GCOMM(gcomm_pack_range(a_d, 1, faces[f].send_type, off, len,
                                         chunked_d + (size_t)f * face_bytes + off));
        }
    size_t pos = 0;
    for (int f = 0; f < 6; f++) {
        CHECK_GCOMM(gcomm_unpack(packed_d, all_bytes, &pos, b_d, 1, faces[f].recv_type));
        for (size_t off = 0; off < face_bytes; off += (size_t)chunk) {
            size_t len = face_bytes - off < (size_t)chunk ? face_bytes - off : (size_t)chunk;
            CHECK_GCOMM(gcomm_unpack_range(packed_d + (size_t)f * face_bytes + off, off, len, c_d,
                                           1, faces[f].recv_type));
        }
    }
    CUDA_TRY(cudaDeviceSynchronize());
    CUDA_TRY(cudaMemcpy(packed, packed_d, all_bytes, cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(chunked, chunked_d, all_bytes, cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(b, b_d, abytes, cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(c, c_d, abytes, cudaMemcpyDeviceToHost));
    int pack_ok = memcmp(packed, ref, all_bytes) == 0;
    int chunk_ok = memcmp(chunked, ref, all_bytes) == 0;
    int unpack_ok = memcmp(b, b_ref, abytes) == 0;
    int unpack_chunk_ok = memcmp(c, b_ref, abytes) == 0;
    ok = pack_ok && chunk_ok && unpack_ok && unpack_chunk_ok;
    double t = times[reps / 2];
    printf("GPU 0 (%s), device memory: gcomm_pack, 6 faces: median %.1f us over %d runs "
           "(%.2f GB/s, launch and completion included)\n",
           prop.name, t * 1e6, reps, (double)all_bytes / t / 1e9);
    printf("verified on the GPU: gcomm_pack %s, gcomm_pack_range %s, gcomm_unpack %s, "
           "gcomm_unpack_range %s\n",
           pack_ok ? "yes" : "NO", chunk_ok ? "yes" : "NO", unpack_ok ? "yes" : "NO",
           unpack_chunk_ok ? "yes" : "NO");
    snprintf(why, whylen, "GPU 0 (%.200s)", prop.name);
done:
#undef CUDA_TRY
    cudaFree(a_d);
    cudaFree(b_d);
    cudaFree(c_d);
    cudaFree(packed_d);
    cudaFree(chunked_d);
    free(packed);
    free(chunked);
    free(b);
    free(c);
    free(times);
    return ok;
#endif
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    int n = 64, h = 2, chunk = 16384, reps = 20, host_only = 0;
    for (int i = 1; i < argc; i++) {
        int *dst = NULL, lo = 1, hi = 1024;
        if (strcmp(argv[i], "--host-only") == 0) {
            host_only = 1;
            continue;
        }
        if (strcmp(argv[i], "-n") == 0) dst = &n;
        else if (strcmp(argv[i], "-H") == 0) dst = &h;
        else if (strcmp(argv[i], "-c") == 0) dst = &chunk, hi = 1 << 30;
        else if (strcmp(argv[i], "-r") == 0) dst = &reps, hi = 100000;
        if (!dst || i + 1 >= argc || parse_int(argv[i + 1], lo, hi, dst) != 0) {
            fprintf(stderr, "usage: %s [-n N] [-H HALO] [-c CHUNK_BYTES] [-r REPS] [--host-only]\n",
                    argv[0]);
            return 2;
        }
        i++;
    }
    if (h > n) {
        fprintf(stderr, "halo_demo: the halo (%d) must not be wider than the interior (%d)\n", h, n);
        return 2;
    }
    const int s = n + 2 * h;
    const size_t total = (size_t)s * s * s;
    printf("halo_demo: %d^3 doubles with a halo of %d (array %d^3, %.1f MiB), gcomm %d.%d.%d\n", n,
           h, s, (double)(total * sizeof(double)) / (1 << 20), GCOMM_VERSION_MAJOR,
           GCOMM_VERSION_MINOR, GCOMM_VERSION_PATCH);

    /* The six faces: dimension d, low (side 0) or high (side 1). */
    face_t faces[6];
    static const char *const names[6] = {"-x", "+x", "-y", "+y", "-z", "+z"};
    for (int d = 0; d < 3; d++)
        for (int side = 0; side < 2; side++) {
            face_t *f = &faces[2 * d + side];
            f->name = names[2 * d + side];
            for (int e = 0; e < 3; e++) {
                f->sizes[e] = s;
                f->subsizes[e] = e == d ? h : n;
                f->send_starts[e] = f->recv_starts[e] = h;
            }
            f->send_starts[d] = side == 0 ? h : n;    /* first / last h interior layers */
            f->recv_starts[d] = side == 0 ? n + h : 0; /* the opposite halo */
            CHECK_GCOMM(gcomm_type_subarray(3, f->sizes, f->subsizes, f->send_starts,
                                            GCOMM_ORDER_C, GCOMM_DOUBLE, &f->send_type));
            CHECK_GCOMM(gcomm_type_subarray(3, f->sizes, f->subsizes, f->recv_starts,
                                            GCOMM_ORDER_C, GCOMM_DOUBLE, &f->recv_type));
            CHECK_GCOMM(gcomm_type_commit(&f->send_type));
            CHECK_GCOMM(gcomm_type_commit(&f->recv_type));
            size_t size;
            CHECK_GCOMM(gcomm_type_size(f->send_type, &size));
            CHECK_GCOMM(gcomm_pack_size(1, f->send_type, &f->bytes));
            if (size != f->bytes || size != (size_t)h * n * n * sizeof(double)) {
                fprintf(stderr, "halo_demo: face %s: type size %zu, pack size %zu, expected %zu\n",
                        f->name, size, f->bytes, (size_t)h * n * n * sizeof(double));
                return 1;
            }
        }

    double *a = malloc(total * sizeof(double));
    double *b = malloc(total * sizeof(double));
    double *c = malloc(total * sizeof(double));
    double *b_ref = malloc(total * sizeof(double));
    double *b0 = malloc(total * sizeof(double));
    size_t face_bytes = faces[0].bytes, all_bytes = 6 * face_bytes;
    unsigned char *packed = malloc(all_bytes), *chunked = malloc(all_bytes);
    double *ref = malloc(all_bytes);
    if (!a || !b || !c || !b_ref || !b0 || !packed || !chunked || !ref) {
        fprintf(stderr, "halo_demo: out of memory\n");
        return 2;
    }
    /* Values that name their cell (never zero), and a distinct sentinel in B and C. */
    for (int i = 0; i < s; i++)
        for (int j = 0; j < s; j++)
            for (int k = 0; k < s; k++) {
                int sz[3] = {s, s, s};
                size_t x = idx3(sz, i, j, k);
                a[x] = 1e6 * i + 1e3 * j + k + 0.25;
                b[x] = c[x] = b_ref[x] = b0[x] = -1.0 - (double)x;
            }

    int ok = 1;
    /* 1. Pack all six send faces into one buffer (MPI_Pack position semantics); time it. */
    double *times = malloc((size_t)reps * sizeof(double));
    double *ref_times = malloc((size_t)reps * sizeof(double));
    if (!times || !ref_times) return 2;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        size_t pos = 0;
        for (int f = 0; f < 6; f++)
            CHECK_GCOMM(gcomm_pack(a, 1, faces[f].send_type, packed, all_bytes, &pos));
        times[r] = now_s() - t0;
        if (pos != all_bytes) {
            fprintf(stderr, "halo_demo: position %zu after packing, expected %zu\n", pos, all_bytes);
            ok = 0;
        }
        t0 = now_s();
        for (int f = 0; f < 6; f++)
            ref_pack(a, &faces[f], faces[f].send_starts, ref + (size_t)f * face_bytes / sizeof(double));
        ref_times[r] = now_s() - t0;
    }
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    qsort(ref_times, (size_t)reps, sizeof(double), cmp_double);
    int pack_ok = memcmp(packed, ref, all_bytes) == 0;
    ok &= pack_ok;

    /* 2. The same stream in pipelined chunks: bytes [off, off + chunk) of each face at a time. */
    size_t nchunks = 0;
    for (int f = 0; f < 6; f++)
        for (size_t off = 0; off < face_bytes; off += (size_t)chunk, nchunks++) {
            size_t len = face_bytes - off < (size_t)chunk ? face_bytes - off : (size_t)chunk;
            CHECK_GCOMM(gcomm_pack_range(a, 1, faces[f].send_type, off, len,
                                         chunked + (size_t)f * face_bytes + off));
        }
    int chunk_ok = memcmp(chunked, ref, all_bytes) == 0;
    ok &= chunk_ok;

    /* 3. Unpack into the opposite halos of B (whole faces) and of C (in chunks), and compare both
     *    with plain loops applied to a copy of B: the halos must match, the rest must not move. */
    size_t pos = 0;
    for (int f = 0; f < 6; f++) {
        CHECK_GCOMM(gcomm_unpack(packed, all_bytes, &pos, b, 1, faces[f].recv_type));
        for (size_t off = 0; off < face_bytes; off += (size_t)chunk) {
            size_t len = face_bytes - off < (size_t)chunk ? face_bytes - off : (size_t)chunk;
            CHECK_GCOMM(gcomm_unpack_range(packed + (size_t)f * face_bytes + off, off, len, c, 1,
                                           faces[f].recv_type));
        }
        ref_unpack(ref + (size_t)f * face_bytes / sizeof(double), &faces[f], faces[f].recv_starts,
                   b_ref);
    }
    int unpack_ok = pos == all_bytes && memcmp(b, b_ref, total * sizeof(double)) == 0;
    int unpack_chunk_ok = memcmp(c, b_ref, total * sizeof(double)) == 0;
    ok &= unpack_ok & unpack_chunk_ok;
    /* Spot-check the periodic meaning too: the +x halo holds the first interior layers. */
    {
        int sz[3] = {s, s, s};
        if (b[idx3(sz, n + h, h, h)] != a[idx3(sz, h, h, h)]) ok = unpack_ok = 0;
        if (b[idx3(sz, 0, h + 1, h + 2)] != a[idx3(sz, n, h + 1, h + 2)]) ok = unpack_ok = 0;
    }

    printf("faces (gcomm_type_subarray of the %d^3 array, C order); periodic boundaries in one "
           "process, so each send face lands in the halo on the opposite side:\n", s);
    for (int f = 0; f < 6; f++)
        printf("  %s: %d x %d x %d doubles = %zu bytes, send from [%d,%d,%d], receive into [%d,%d,%d]\n",
               faces[f].name, faces[f].subsizes[0], faces[f].subsizes[1], faces[f].subsizes[2],
               faces[f].bytes, faces[f].send_starts[0], faces[f].send_starts[1],
               faces[f].send_starts[2], faces[f].recv_starts[0], faces[f].recv_starts[1],
               faces[f].recv_starts[2]);
    double t = times[reps / 2], tr = ref_times[reps / 2];
    printf("host, malloc'd memory: gcomm_pack, 6 faces, %zu bytes: median %.1f us over %d runs "
           "(%.2f GB/s); plain loops "
           "%.1f us (%.2f GB/s)\n",
           all_bytes, t * 1e6, reps, (double)all_bytes / t / 1e9, tr * 1e6,
           (double)all_bytes / tr / 1e9);
    printf("verified on the host: gcomm_pack %s, gcomm_pack_range in %zu chunks of %d bytes %s, "
           "gcomm_unpack %s, "
           "gcomm_unpack_range %s\n",
           pack_ok ? "yes" : "NO", nchunks, chunk, chunk_ok ? "yes" : "NO", unpack_ok ? "yes" : "NO",
           unpack_chunk_ok ? "yes" : "NO");
    char where[256];
    int gpu = -1;
    if (host_only) snprintf(where, sizeof(where), "--host-only was given");
    else gpu = run_gpu(faces, s, a, b0, ref, b_ref, face_bytes, chunk, reps, where, sizeof(where));
    if (gpu == 0) ok = 0;
    if (gpu < 0) printf("ran on the host only: %s; the GPU path was not run\n", where);
    else printf("ran on the host and on %s\n", where);
    printf("halo_demo: %s\n", ok ? "verified" : "VERIFICATION FAILED");

    for (int f = 0; f < 6; f++) {
        CHECK_GCOMM(gcomm_type_free(&faces[f].send_type));
        CHECK_GCOMM(gcomm_type_free(&faces[f].recv_type));
    }
    free(times);
    free(ref_times);
    free(a);
    free(b);
    free(c);
    free(b_ref);
    free(b0);
    free(packed);
    free(chunked);
    free(ref);
    return ok ? 0 : 1;
}
